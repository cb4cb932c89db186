"""Hostile YAML specs (tests/cases/hostile_specs/): located diagnostics, never a traceback.

Each case folder holds ``spec.yaml`` (or ``make.py`` whose ``make(path)`` writes a
spec too large or too deep to commit) and ``expected.json``: the set of diagnostic
codes the spec gets (empty for a spec that is valid after all). Alias bombs,
nesting past the YAML parser's recursion limit, huge scalars, tabs, control and
zero-width characters, other encodings, PyYAML's python tags, merge-key bombs, several
documents, keys that are not strings, and specs of the wrong shape everywhere.

Every case goes through ``mapc.spec.load_spec`` and ``mapc check --json`` (in
process): the codes match, every diagnostic has a code, a message, a line and a
column, the command exits 0 or 1 with JSON, and no python tag ever runs.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

from mapc.spec import load_spec
from security_support import CASES, check_diagnostics

HOSTILE = CASES / "hostile_specs"
#: Diagnostics of a spec past one of mapc's limits.
LIMITS = ("spec_too_large", "spec_too_deep", "too_many_errors", "expressions_too_large", "expression_too_long",
          "file_too_large")
CASE_DIRS = sorted(p for p in HOSTILE.iterdir() if (p / "expected.json").is_file())


def test_there_are_enough_cases():
    assert len(CASE_DIRS) >= 20
    for case in CASE_DIRS:
        assert (case / "spec.yaml").is_file() != (case / "make.py").is_file(), case.name


def _spec(case: Path, tmp_path: Path) -> Path:
    path = tmp_path / "spec.yaml"
    maker = case / "make.py"
    if maker.is_file():
        spec = importlib.util.spec_from_file_location(f"hostile_spec_{case.name.replace('-', '_')}", maker)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        module.make(path)
    else:
        shutil.copyfile(case / "spec.yaml", path)
    return path


@pytest.mark.parametrize("case", CASE_DIRS, ids=[c.name for c in CASE_DIRS])
def test_hostile_spec(case, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from mapc.cli import app

    expected = json.loads((case / "expected.json").read_text(encoding="utf-8"))
    path = _spec(case, tmp_path)
    monkeypatch.chdir(tmp_path)  # a python tag that ran would leave PWNED-BY-SPEC here
    spec, diags = load_spec(path)
    check_diagnostics(diags, spec_file=str(path))
    for d in diags:
        assert d.line is not None and d.column is not None, d.to_dict()
        if d.code in LIMITS:  # which limit, where it was reached, and what to do
            assert d.hint and any(ch.isdigit() for ch in d.message), d.to_dict()
            # (nesting is found while parsing, before there are paths; a file's size before parsing)
            assert d.path or d.code == "spec_too_deep" or "bytes" in d.message, d.to_dict()
    assert sorted({d.code for d in diags.errors}) == sorted(expected["codes"]), [d.format() for d in diags]
    assert (spec is not None) == (not expected["codes"])
    result = CliRunner().invoke(app, ["check", "--json", str(path)])
    assert result.exit_code == (1 if expected["codes"] else 0), result.output[-2000:]
    payload = json.loads(result.stdout)
    assert payload.get("code") != "internal"
    assert sorted({d["code"] for d in payload["diagnostics"] if d["severity"] == "error"}) == sorted(expected["codes"])
    assert not list(tmp_path.glob("PWNED*")) and not list(Path.cwd().glob("PWNED*"))
