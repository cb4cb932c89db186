"""The drift corpus: for every spec with fixtures (each library format in specs/, and the
hand-made formats of tests/cases/drift), variants of its real fixture derived by
drift_variants.py, each with the verdict `mapc drift` must give. Zero false "no drift",
zero false alarms: every verdict must be the expected one.

A new library spec (the session logs of tests/data/corpus/, once theirs exist) is picked up
by the glob below with no change here.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from regen.drift_variants import Variants, derive
from mapc.tools.drift import drift, format_drift
from regen.helpers import CASES, ROOT

LIBRARY = sorted((ROOT / "specs").glob("*.yaml"))
HAND_MADE = sorted(p for p in (CASES / "drift").glob("*/spec.yaml")
                   if "fixtures:" in p.read_text(encoding="utf-8"))
SPECS = LIBRARY + HAND_MADE
_DERIVED: dict[Path, Variants] = {}


def _variants(spec: Path) -> Variants:
    if spec not in _DERIVED:
        _DERIVED[spec] = derive(spec)
    return _DERIVED[spec]


def _name(spec: Path) -> str:
    return spec.stem if spec.parent.name == "specs" else spec.parent.name


def test_every_library_format_is_in_the_corpus():
    assert len(LIBRARY) >= 16 and len(HAND_MADE) >= 3


def _siblings(fixture: Path, folder: Path) -> None:
    """The folders beside a fixture (a session's `<stem>/subagents/`, which its `subtrajectory`
    maps) come along with each variant, as `mapc build` copies them into testdata/."""
    for entry in fixture.parent.iterdir():
        if entry.is_dir():
            shutil.copytree(entry, folder / entry.name)


@pytest.mark.parametrize("spec", SPECS, ids=[_name(s) for s in SPECS])
def test_drift_gives_each_variant_its_verdict(spec: Path, tmp_path: Path):
    variants = _variants(spec)
    wrong = []
    for variant in variants.items:
        sample = tmp_path / variant.name / variants.fixture.name
        sample.parent.mkdir()
        sample.write_text(variant.text, encoding="utf-8")
        _siblings(variants.fixture, sample.parent)
        report, diags = drift(spec, sample)
        assert report is not None, [d.format() for d in diags]
        if report.verdict != variant.verdict:
            wrong.append(f"{variant.name} ({variant.what}): expected {variant.verdict}, got {report.verdict}\n"
                         + format_drift(report))
    assert not wrong, "\n".join(wrong)
    names = {v.name for v in variants.items}
    assert "unchanged" in names
    if spec in LIBRARY:  # every real format gets a breaking and an additive change at least
        assert {v.verdict for v in variants.items} >= {"none", "additive", "breaking"}, (names, variants.missing)


def test_the_corpus_has_every_kind_of_variant():
    kinds = {v.name: v.verdict for spec in SPECS for v in _variants(spec).items}
    assert set(kinds) >= {"unchanged", "rename", "remove", "retype", "new-field", "new-field-catch-all",
                          "new-type", "renamed-type", "alternative"}
    counts = {}
    for spec in SPECS:
        for v in _variants(spec).items:
            counts[v.verdict] = counts.get(v.verdict, 0) + 1
    assert counts["breaking"] >= 40 and counts["additive"] >= 25 and counts["none"] >= len(SPECS), counts


def test_an_alternative_renamed_to_the_other_maps_the_same(tmp_path: Path):
    """The verdict of the `alternative` variants is `none` because the records do not change:
    checked on the mapping itself, not on drift."""
    from regen.drift_variants import _records
    from mapc.pipeline.build import load_checked
    from mapc.spectest.execute import Executor

    checked = 0
    for spec in SPECS:
        variants = _variants(spec)
        for v in variants.items:
            if v.name in ("alternative", "unchanged"):
                loaded, _ = load_checked(spec, None)
                ex = Executor(loaded)
                before = _records(ex, variants.fixture.read_text(encoding="utf-8"), variants.fixture.name)
                assert _records(ex, v.text, variants.fixture.name) == before, (spec, v.name)
                checked += v.name == "alternative"
    assert checked >= 1
