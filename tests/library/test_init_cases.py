"""`mapc init` case directories (tests/cases/init/<case>/): a sample a user could hold and
`case.json`: why, the sample, the arguments after `--from SAMPLE`, and what the unedited draft
must do. Each case runs `mapc init` as a user would, in a copy of its folder, then:

- the spec loads (`mapc check`) and no expected records exist yet (issue 30: the draft's
  records are saved only when the user accepts them);
- every command init prints as "next" runs as printed and succeeds (`mapc run`, `mapc test
  --update`, `mapc build --target rlviz`), and the real RLViz validator accepts the plugin when
  it is available;
- the records `mapc run` prints meet the case's `expect`: event kinds (exactly), calls and
  results paired by id, trajectory totals, trajectory ids, generation models, signals per name
  on events, files written, text the spec holds, what init's notes say.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

import hosts

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "tests" / "cases" / "init"
NAMES = sorted(p.name for p in CASES.iterdir() if (p / "case.json").is_file())


def _mapc(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mapc.cli", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


def measure(records: list[dict]) -> dict:
    """What the records say, in the terms of a case's `expect` (and of the ground truth)."""
    events = [r for r in records if r["record_type"] == "event"]
    generations = [e for e in events if e["kind"] == "generation"]
    calls = [c["id"] for e in generations for c in (e.get("output") or {}).get("tool_calls") or []]
    calls += [e["input"]["id"] for e in events if e["kind"] == "tool" and (e.get("input") or {}).get("id")]
    results = [(e.get("output") or {}).get("tool_call_id") for e in events if e["kind"] == "observation"]
    signals = [r for r in records if r["record_type"] == "signal"]
    return {
        "kinds": dict(Counter(e["kind"] for e in events)),
        "calls": len(calls),
        "results": len(results),
        "paired": len([r for r in results if r in set(calls)]),
        "totals": {s["name"]: s["value"] for s in signals if not s.get("event_id")},
        "event_signals": dict(Counter(s["name"] for s in signals if s.get("event_id"))),
        "trajectories": [r["id"] for r in records if r["record_type"] == "trajectory"],
        "models": [(e.get("output") or {}).get("model") for e in generations],
    }


@pytest.mark.parametrize("name", NAMES)
def test_init_case(name, tmp_path):
    case = json.loads((CASES / name / "case.json").read_text(encoding="utf-8"))
    work = tmp_path / name
    shutil.copytree(CASES / name, work, ignore=shutil.ignore_patterns("case.json"))
    made = _mapc(["init", "--from", case["sample"], *case["init"], "--json"], work)
    assert made.returncode == 0, made.stderr + made.stdout
    payload = json.loads(made.stdout)
    spec = work / payload["out"]
    assert not list(work.rglob("*.expected.ndjson")), "init saves no records before the user accepts them"
    checked = _mapc(["check", str(spec)], work)
    assert checked.returncode == 0, checked.stderr
    expect = case["expect"]
    for text in expect.get("spec_contains", ()):
        assert text in spec.read_text(encoding="utf-8"), spec.read_text(encoding="utf-8")
    for text in expect.get("notes_contain", ()):  # what init says it recognised or drafted
        assert any(text in note for note in payload["notes"]), payload["notes"]
    for rel in expect.get("files", ()):
        assert (work / rel).is_file(), rel
    printed = {}
    for command in payload["next"]:  # as printed, from where init ran
        argv = shlex.split(command)
        assert argv[0] == "mapc"
        ran = _mapc(argv[1:], work)
        assert ran.returncode == 0, (command, ran.stderr)
        printed[argv[1]] = ran
    assert set(printed) == {"run", "test", "build"}
    records = [json.loads(line) for line in printed["run"].stdout.splitlines()]
    got = measure(records)
    for key, want in expect.items():
        if key in got:
            assert got[key] == want, (key, got)
    rlviz = hosts.require_rlviz()  # last: the plugin the printed build wrote, under the real validator
    sample = spec.parent / payload["fixture"]
    proc = subprocess.run([str(rlviz), "--json", str(work / "out"), str(sample)], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["records"] == len([r for r in records if r["record_type"] != "complete"]), report
    assert report["warnings"] == 0, report
