"""The recipes of docs/spec-reference.md ("Recipes for real formats") as case directories.

Each recipe is a folder under tests/cases/recipes: a spec, a fixture and the records it
must produce (``<fixture>.expected.ndjson``), checked with `mapc test` in-process (the
program `mapc run` and the adapters run). The assertions below pin what each recipe is
for, so a regenerated expected file cannot quietly accept a regression.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

import hosts
import mapc
from mapc.spectest import run_tests

CASES = Path(__file__).resolve().parents[1] / "cases" / "recipes"
CASE_DIRS = sorted(p for p in CASES.iterdir() if (p / "spec.yaml").is_file())
DOC = Path(__file__).resolve().parents[2] / "docs" / "spec-reference.md"


def _records(case: str, kind: str | None = None) -> list[dict]:
    (expected,) = (CASES / case).glob("*.expected.ndjson")
    records = [json.loads(line) for line in expected.read_text().splitlines() if line.strip()]
    return [r for r in records if kind is None or r["record_type"] == kind]


@pytest.mark.parametrize("case", CASE_DIRS, ids=[p.name for p in CASE_DIRS])
def test_recipe_meets_its_expected_records(case: Path):
    report = run_tests(case / "spec.yaml")
    assert report.ran, [d.message for d in report.diagnostics]
    failed = {r.case.name: (r.status, r.message) for r in report.failed}
    assert report.results and not failed, failed
    assert f"tests/cases/recipes/{case.name}" in DOC.read_text(encoding="utf-8"), "the reference links it"


def test_a_final_reward_event_follows_the_steps():
    for tid in ("e1", "e2"):
        events = [e for e in _records("final-reward-event", "event") if e["trajectory_id"] == tid]
        assert [e["kind"] for e in events[:-1]] == ["generation"] * (len(events) - 1)
        assert events[-1]["kind"] == "reward" and events[-1]["parent_id"] == events[-2]["id"]
    assert [e["data"] for e in _records("final-reward-event", "event") if e["kind"] == "reward"] == [
        {"reward": 1}, {"reward": 0}]


def test_subagent_trajectories_get_ids_that_cannot_collide():
    trajs = _records("subagent-trajectories", "trajectory")
    ids = [t["id"] for t in trajs]
    assert ids[0] == "s-main" and len(set(ids)) == 3  # two helpers share a session id
    assert [t.get("parent_id") for t in trajs] == [None, "s-main", "s-main"]
    events = _records("subagent-trajectories", "event")
    assert len({e["id"] for e in events}) == len(events) == 7  # step ids repeat across trajectories
    assert all(e["id"].startswith(e["trajectory_id"] + "#") for e in events)


def test_tool_results_point_at_their_call():
    events = {e["id"]: e for e in _records("tool-results", "event")}
    results = [e for e in events.values() if e["kind"] == "observation"]
    assert len(results) == 2
    for r in results:  # answered out of order: linked by id, not by position
        call = events[r["parent_id"]]
        assert call["kind"] == "tool" and r["output"]["tool_call_id"] == call["id"]
    assert [r["parent_id"] for r in results] == ["c2", "c1"]


def test_the_source_field_per_container():
    def sources(case):
        return [e["source"] for e in _records(case, "event")]

    assert sources("source-json") == [{"path": "chat.json"}] * 2
    jsonl = (CASES / "source-jsonl" / "chat.jsonl").read_bytes()
    for s in sources("source-jsonl"):
        assert json.loads(jsonl[s["byte_offset"]:s["byte_offset"] + s["byte_length"]])
    table = (CASES / "source-csv" / "chat.csv").read_bytes()
    csv_sources = sources("source-csv")
    assert [s["line"] for s in csv_sources] == [2, 3, 5]  # a quoted cell spans lines 3-4
    assert table[csv_sources[1]["byte_offset"]:][:csv_sources[1]["byte_length"]] == b'assistant,"Hello,\nworld"'
    assert sources("source-csv-gzip") == [{"path": "chat.csv.gz", "line": n} for n in (2, 3, 5)]


def test_otel_genai_spans_read_dotted_attributes_and_span_ids():
    """Attribute keys with dots read through quoted paths; `id`, `parent` and `timestamp` beside
    the rules give every span's event its span id, parent span and start time."""
    records = _records("otel-genai-spans")
    events = [(e["id"], e["kind"], e.get("parent_id")) for e in records if e["record_type"] == "event"]
    assert events == [
        ("a1b2c3d4e5f60718", "state", None),  # the root span: parent_span_id "" is no parent
        ("b1b2c3d4e5f60718-user", "message", "a1b2c3d4e5f60718"),
        ("b1b2c3d4e5f60718", "generation", "a1b2c3d4e5f60718"),
        ("c1b2c3d4e5f60718", "tool", "b1b2c3d4e5f60718"),
        ("d1b2c3d4e5f60718", "generation", "a1b2c3d4e5f60718"),
        ("e1b2c3d4e5f60718", "state", None),
        ("f1b2c3d4e5f60718-user", "message", "e1b2c3d4e5f60718"),
        ("f1b2c3d4e5f60718", "generation", "e1b2c3d4e5f60718")]
    signals = [(s["name"], s["value"]) for s in records if s["record_type"] == "signal"]
    assert [v for n, v in signals if n.endswith("_tokens")] == [57, 19, 96, 24, 41, 30]
    assert [v for n, v in signals if n == "score"] == [1.0, 0.0]
    tool = next(e for e in records if e.get("kind") == "tool")
    assert tool["input"] == {"name": "get_weather", "id": "call_1"} and tool["output"] == "18°C, cloudy"
    assert tool["timestamp"] == "2024-12-01T16:20:00.910000Z"  # the span's start, from events.timestamp
    case = CASES / "otel-genai-spans"
    result = mapc.run(case / "spec.yaml", case / "spans.jsonl")  # an empty parent id is no warning
    assert result.ok and result.warnings == 0, result.warning_messages


def test_otel_genai_spans_pass_the_real_hosts(tmp_path):
    """The recipe built for RLViz and cap-evolve, judged by the real RLViz and `cap-evolve check`."""
    rlviz, capevolve = hosts.require_rlviz(), hosts.require_capevolve()
    case = CASES / "otel-genai-spans"
    mapc.build(case / "spec.yaml", "rlviz", tmp_path / "plugin", validate=False, test=False)
    proc = subprocess.run([str(rlviz), "--json", str(tmp_path / "plugin"), str(case / "spans.jsonl")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["records"] == len(_records("otel-genai-spans"))
    mapc.build(case / "spec.yaml", "cap-evolve", tmp_path / "cap", validate=False, test=False)
    proc = subprocess.run(["bash", str(capevolve / "check.sh"), str(tmp_path / "cap" / "adapter.py"),
                           str(tmp_path / "cap")], capture_output=True, text=True, timeout=300)
    verdict = json.loads(proc.stdout.strip().splitlines()[-1])
    assert proc.returncode == 0 and verdict["ok"], proc.stdout[-2000:] + proc.stderr[-2000:]
