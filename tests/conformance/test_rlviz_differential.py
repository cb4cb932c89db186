"""Differential suite: mapc's RLViz validator against the real one, on plugin mutants.

Every mutant of ``rlviz_mutants.table`` (one labelled defect each, or a clean
control) is judged by the real ``rlviz-validate`` and by mapc's validator, in
parallel. The real verdict must be the one the table expects (so no mutation
silently stops taking effect), and mapc's must equal it: pass or fail, the
phase and kind of a failure, the whole report of a pass; what only RLViz's
published schemas forbid passes with a "beyond RLViz" warning. Run with ``-s``
(and ``-n 0``) to see the agreement table; ``python -m
tests.conformance.rlviz_mutants`` prints it without pytest.
"""

from __future__ import annotations

import collections

import pytest

from rlviz_mutants import CATEGORIES, agree, agreement_table, build_base, fast_python_env, judge
from rlviz_mutants.table import MUTANTS


@pytest.fixture(scope="session")
def differential(real_rlviz, tmp_path_factory):
    env = fast_python_env()
    work = tmp_path_factory.mktemp("rlviz-mutants")
    base = build_base(work, env)
    results = judge(MUTANTS, base, real_rlviz, work, env)
    print("\n" + agreement_table(MUTANTS, results))
    return results


def test_the_corpus_is_broad():
    names = [m.name for m in MUTANTS]
    assert len(names) == len(set(names)), "mutant names are unique"
    assert len(MUTANTS) >= 150
    by_category = collections.Counter(m.category for m in MUTANTS)
    assert set(by_category) == set(CATEGORIES) and min(by_category.values()) >= 4, by_category
    for m in MUTANTS:
        assert m.expect == "pass" or m.expect.startswith("fail"), m.name
        assert (m.category == "control") == (m.defect == ""), f"{m.name}: label the one defect (controls have none)"
    assert sum(m.expect == "pass" for m in MUTANTS) >= 40 and sum(m.expect != "pass" for m in MUTANTS) >= 100


def test_the_real_rlviz_gives_each_mutant_its_expected_verdict(differential):
    wrong = {m.name: (m.expect, differential[m.name][0].label(), differential[m.name][0].report.get("error"))
             for m in MUTANTS if differential[m.name][0].label() != m.expect}
    assert not wrong, wrong


def test_mapc_agrees_with_the_real_rlviz_on_every_mutant(differential):
    disagreements = {m.name: (differential[m.name][0].label(), differential[m.name][1].label(),
                              differential[m.name][0].report, differential[m.name][1].report)
                     for m in MUTANTS if not agree(*differential[m.name])}
    assert not disagreements, agreement_table(MUTANTS, differential)


#: What RLViz accepts but its published schemas forbid (#12: timestamps, id length, status values,
#: null optional fields, a complete without warnings): mapc passes them, as RLViz does, with a warning.
SCHEMA_ONLY = ("stream-timestamp-not-rfc3339", "stream-id-600-characters", "stream-trajectory-status-other",
               "stream-null-timestamp", "stream-complete-without-warnings")


def test_what_only_rlviz_schemas_forbid_passes_with_a_beyond_rlviz_warning(differential):
    assert set(SCHEMA_ONLY) <= {m.name for m in MUTANTS}
    flagged = {name: (differential[name][0].ok, differential[name][1].ok, differential[name][1].beyond)
               for name in SCHEMA_ONLY}
    assert all(real and mine and beyond >= 1 for real, mine, beyond in flagged.values()), flagged
    built = differential["control-built-plugin"][1]
    assert built.ok and built.beyond == 0, "mapc's own plugin meets RLViz's schemas"
