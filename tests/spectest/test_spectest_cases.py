"""`mapc test` on copied examples with a deliberate change: readable, spec-located differences.

Each folder under tests/cases/spectest holds `case.json`: the example to copy, text
appended to its spec first (`before`, e.g. `tests:` entries), whether to write the
expected files then (`update`), and the edits that break it; `expected.txt` is the
report `mapc test spec.yaml` prints (golden; MAPC_UPDATE_GOLDENS=1 rewrites it).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from golden import assert_golden
from mapc.spectest import run_tests
from mapc.spectest.report import format_report
from spectest_support import CASES, copy_example, edit

SPECTEST_CASES = sorted(p for p in CASES.iterdir() if (p / "case.json").is_file())


def test_there_are_spectest_cases():
    assert len(SPECTEST_CASES) >= 6


@pytest.mark.parametrize("case", SPECTEST_CASES, ids=[p.name for p in SPECTEST_CASES])
def test_spectest_cases(case: Path, tmp_path: Path, monkeypatch):
    about = json.loads((case / "case.json").read_text(encoding="utf-8"))
    spec = copy_example(tmp_path, about["example"])
    monkeypatch.chdir(spec.parent)
    if about.get("before"):
        spec.write_text(spec.read_text(encoding="utf-8") + about["before"], encoding="utf-8")
    if about.get("update"):
        assert run_tests("spec.yaml", update=True).ok
    assert run_tests("spec.yaml").ok, "the copy passes before the edits"
    for e in about["edits"]:
        edit(spec, e["old"], e["new"])
    report = run_tests("spec.yaml")
    assert report.ran and not report.ok
    text = format_report(report, "spec.yaml")
    assert "spec.yaml:" in text  # every difference names its spec line
    assert_golden(case / "expected.txt", text)
