"""mapc validate --target cap-evolve: cap-evolve's gate, emulated, and the checks beyond it.

``gate_cases/<name>/adapter.py`` are hand-written adapters that each break one
rule (``expected.json`` says cap-evolve check's verdict and which problems the
gate must report); the generated example must pass everything. The verdicts are
held to the real cap-evolve's by tests/conformance/test_capevolve_differential.py.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from capevolve_support import ROOT, STANDIN
from mapc.targets.capevolve.validator import validate_adapter_dir

GATE_CASES = Path(__file__).resolve().parent / "gate_cases"
CASE_DIRS = sorted(p for p in GATE_CASES.iterdir() if (p / "adapter.py").is_file())


def mapc(*args, env=None, cwd=None):
    return subprocess.run([sys.executable, "-m", "mapc.cli", *map(str, args)], cwd=cwd or ROOT, env=env,
                          capture_output=True, timeout=120)


@pytest.mark.parametrize("case", CASE_DIRS, ids=[p.name for p in CASE_DIRS])
def test_gate_case(case):
    expected = json.loads((case / "expected.json").read_text())
    report = validate_adapter_dir(case)
    payload = report.payload
    assert report.ok is expected["ok"] and payload["ok"] is expected["ok"], report.text
    assert payload["cap-evolve check"]["ok"] is expected["check_ok"], report.text
    assert report.text.splitlines()[1].startswith("cap-evolve check: ")  # its verdict comes first
    for text in expected["problems_contain"]:
        assert any(text in p for p in payload["problems"]), (text, payload["problems"])
    if "stubs" in expected:
        assert payload["stubs"] == expected["stubs"]
    assert payload["host"]["kind"] == "stand-in"
    assert not list(case.glob("__pycache__"))  # the validator leaves no bytecode behind


def test_the_example_passes_every_check(example_adapter):
    report = validate_adapter_dir(example_adapter)
    assert report.ok, report.text
    check = report.payload["cap-evolve check"]
    assert check["ok"] and check["completed"] and check["problems"] == [] and check["stubs"] == []
    assert "tasks('val') -> 2 task(s)" in check["notes"]
    names = {c["name"] for c in report.payload["checks"]}
    assert {"tasks('all') works", "run_target on an unknown task returns an errored Rollout",
            "a replayed task runs and scores", "an errored rollout scores 0.0 with the reason",
            "a task the adapter does not know scores 0.0",
            "feedback withholds the gold target, even when the output repeats it",
            "replay feedback withholds the task's gold target", "metrics catalog follows cap-evolve's rules",
            "nothing printed to stdout", "scores identical across hash seeds"} <= names
    assert all(c["ok"] and not c["contract"] for c in report.payload["checks"])
    lines = report.text.splitlines()
    assert "mapc's stand-in cap_evolve" in lines[0] and lines[1] == "cap-evolve check: ok"
    assert "beyond cap-evolve check (mapc's own checks):" in lines


def test_cli_validate_json_and_exit_codes(example_adapter, tmp_path):
    ok = mapc("validate", "--target", "cap-evolve", example_adapter, "--json")
    assert ok.returncode == 0, ok.stderr.decode()
    payload = json.loads(ok.stdout)
    assert payload["ok"] is True and payload["host"]["kind"] == "stand-in"

    bad = mapc("validate", "--target", "cap-evolve", GATE_CASES / "stub-score")
    assert bad.returncode == 1 and b"cap-evolve check: FAIL: unimplemented adapter methods: score" in bad.stderr

    (tmp_path / "trace.json").write_text("{}")
    usage = mapc("validate", "--target", "cap-evolve", example_adapter, tmp_path / "trace.json")
    assert usage.returncode == 2 and b"takes no source traces" in usage.stderr

    empty = tmp_path / "empty"
    empty.mkdir()
    missing = mapc("validate", "--target", "cap-evolve", empty, "--json")
    assert missing.returncode == 1
    assert "no adapter.py in" in json.loads(missing.stdout)["problems"][0]
    assert json.loads(missing.stdout)["diagnostics"][0]["code"] == "missing_adapter"
    nothing = mapc("validate", "--target", "cap-evolve", tmp_path / "nothing", "--json")  # not there: usage (D98)
    assert nothing.returncode == 2 and json.loads(nothing.stdout)["diagnostics"][0]["code"] == "usage"
    assert b"Traceback" not in missing.stderr + usage.stderr + bad.stderr


def test_a_cap_evolve_project_folder_is_accepted(example_adapter, tmp_path):
    project = tmp_path / ".capevolve" / "project"
    shutil.copytree(example_adapter, project / "adapters")
    report = validate_adapter_dir(project)
    assert report.ok, report.text and report.payload["adapter"].endswith("adapters/adapter.py")


def _installed_host(site: Path, check_ok: bool) -> dict:
    """A cap_evolve 'installed' on PYTHONPATH: the stand-in with a check module of its own."""
    shutil.copytree(STANDIN / "cap_evolve", site / "cap_evolve")
    (site / "cap_evolve" / "check.py").write_text(
        "from types import SimpleNamespace\n"
        "def run_check(project_dir):\n"
        "    assert (project_dir / 'adapters' / 'adapter.py').is_file()\n"
        f"    ok = {check_ok!r}\n"
        "    problems = [] if ok else ['installed check says no']\n"
        "    return SimpleNamespace(ok=ok, to_dict=lambda: {'ok': ok, 'stubs': [], 'problems': problems,\n"
        "                                                   'notes': ['ran']})\n"
    )
    return dict(os.environ, PYTHONPATH=str(site))


@pytest.mark.parametrize("check_ok", [True, False])
def test_an_installed_cap_evolve_is_used_for_the_check(example_adapter, tmp_path, check_ok):
    env = _installed_host(tmp_path / "site", check_ok)
    proc = mapc("validate", "--target", "cap-evolve", example_adapter, "--json", env=env)
    payload = json.loads(proc.stdout)
    assert payload["host"] == {"kind": "installed", "path": str(tmp_path / "site" / "cap_evolve")}
    assert payload["cap-evolve check"]["ok"] is check_ok and payload["notes"][0] == "ran"
    assert proc.returncode == (0 if check_ok else 1)
    if not check_ok:
        assert payload["problems"] == ["cap-evolve check: installed check says no"]


def test_capevolve_core_names_the_installed_cap_evolve(example_adapter, tmp_path):
    core = tmp_path / "core"
    _installed_host(core, False)
    proc = mapc("validate", "--target", "cap-evolve", example_adapter, "--json",
                env=dict(os.environ, CAPEVOLVE_CORE=str(core)))
    payload = json.loads(proc.stdout)
    assert payload["host"] == {"kind": "installed", "path": str(core / "cap_evolve")}
    assert payload["problems"] == ["cap-evolve check: installed check says no"]
