"""Every bad spec under tests/cases/bad_specs gets exactly the diagnostics in its expected.json.

Each case directory holds `spec.yaml` and `expected.json` (a list of diagnostics:
code, severity, line, column, spec path, message, hint). Regenerate expected
files after an intended wording change with MAPC_UPDATE_GOLDENS=1 and review the diff.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from golden import assert_golden
from mapc.spec import load_spec

CASES = Path(__file__).resolve().parents[1] / "cases" / "bad_specs"
CASE_DIRS = sorted(p for p in CASES.iterdir() if (p / "spec.yaml").is_file())


def _diagnostics(case: Path) -> list[dict]:
    _, diags = load_spec(case / "spec.yaml")
    out = []
    for d in diags:
        item = d.to_dict()
        item["file"] = Path(item["file"]).name if "file" in item else None
        if item.get("hint") and str(case) in item["hint"]:
            item["hint"] = item["hint"].replace(str(case), "<case>")
        out.append(item)
    return out


def test_there_are_enough_cases():
    assert len(CASE_DIRS) >= 25


@pytest.mark.parametrize("case", CASE_DIRS, ids=[p.name for p in CASE_DIRS])
def test_bad_spec_diagnostics(case: Path):
    actual = _diagnostics(case)
    assert actual, "a bad spec must produce at least one diagnostic"
    for d in actual:
        assert d["line"] >= 1 and d["column"] >= 1, f"diagnostic without a position: {d}"
        assert d["message"], d
    assert_golden(case / "expected.json", json.dumps(actual, indent=2, ensure_ascii=False) + "\n")


@pytest.mark.parametrize("name", ["unknown-function", "many-errors-at-once", "unreachable-rule", "yaml-indentation"])
def test_check_cli_reports_the_same_diagnostics(name: str):
    case = CASES / name
    proc = subprocess.run(
        [sys.executable, "-m", "mapc.cli", "check", "--json", "spec.yaml"],
        cwd=case, capture_output=True, text=True, timeout=60,
    )
    payload = json.loads(proc.stdout)
    expected = json.loads((case / "expected.json").read_text())
    has_error = any(d["severity"] == "error" for d in expected)
    assert proc.returncode == (1 if has_error else 0), proc.stderr
    assert payload["ok"] is (not has_error)
    got = [(d["code"], d["line"], d["column"], d.get("path")) for d in payload["diagnostics"]]
    want = [(d["code"], d["line"], d["column"], d.get("path")) for d in expected]
    assert got == want
    assert "Traceback" not in proc.stderr
