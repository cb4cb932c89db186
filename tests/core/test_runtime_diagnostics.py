"""Runtime diagnostics point at the spec: source place, spec path and line, what failed, the fix.

Each case under tests/cases/runtime_errors holds a spec (and the base it extends), a trace
(`input.*`) and `expected.json`: the one-line error (or null) and the warnings that
`mapc run` reports. The same lines must come out of the generated RLViz adapter's stderr,
run as RLViz runs it. Regenerate after an intended wording change with
MAPC_UPDATE_GOLDENS=1 and review the diff.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import mapc
from golden import assert_golden

CASES = Path(__file__).resolve().parents[1] / "cases" / "runtime_errors"
CASE_DIRS = sorted(p for p in CASES.iterdir() if (p / "spec.yaml").is_file())
INTERNAL_NAME = re.compile(r"\b(?:x|level)_[a-z0-9_]+")
SPEC_LINE = re.compile(r"\(\S+\.yaml:\d+\)")


def _input(case: Path) -> Path:
    (path,) = case.glob("input.*")
    return path


def _expected(case: Path) -> dict:
    return json.loads((case / "expected.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("case", CASE_DIRS, ids=[p.name for p in CASE_DIRS])
def test_mapc_run_reports_the_expected_diagnostics(case: Path):
    result = mapc.run(case / "spec.yaml", _input(case))
    got = {"error": result.error, "warnings": result.warning_messages}
    assert_golden(case / "expected.json", json.dumps(got, indent=2, ensure_ascii=False) + "\n")
    for line in [result.error or ""] + result.warning_messages:
        assert not INTERNAL_NAME.search(line), line
    assert result.error is not None or result.warning_messages, "a case must report something"
    assert all(SPEC_LINE.search(w) for w in result.warning_messages)


@pytest.fixture(scope="module")
def adapters(tmp_path_factory) -> dict[str, Path]:
    """One RLViz adapter per case (built once; not validated: the traces are broken on purpose)."""
    root = tmp_path_factory.mktemp("runtime-errors")
    built = {}
    for case in CASE_DIRS:
        mapc.build(case / "spec.yaml", "rlviz", root / case.name, validate=False, test=False)
        built[case.name] = root / case.name
    return built


@pytest.mark.parametrize("case", CASE_DIRS, ids=[p.name for p in CASE_DIRS])
def test_generated_adapter_prints_the_same_lines(case: Path, adapters, tmp_path):
    source = os.path.realpath(_input(case))
    request = tmp_path / "request.json"
    request.write_text(json.dumps({
        "api_version": "rlviz.dev/v1alpha1", "operation": "stream",
        "source": {"path": source, "root": os.path.dirname(source), "kind": "file"}, "limits": {},
    }), encoding="utf-8")
    run = subprocess.run([sys.executable, "-I", "-S", str(adapters[case.name] / "adapter.py"), "stream",
                          "--request", str(request)], capture_output=True, text=True, timeout=60)
    expected = _expected(case)
    want = [f"warning: {w}" for w in expected["warnings"]]
    if expected["error"] is not None:
        want.append(f"error: {expected['error']}")
    assert run.stderr.splitlines() == want
    assert run.returncode == (1 if expected["error"] else 0)
