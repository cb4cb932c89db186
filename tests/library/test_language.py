"""Language features a user writes: rules merged by name, `!override`, `!keep_nulls`, `event_id`.

Each feature is a case directory under tests/cases/language: a spec (and the base it
extends), a fixture and the records it must produce (`<fixture>.expected.ndjson`),
checked with `mapc test` in-process (the program `mapc run` and the adapters run).
The assertions below pin what the feature is for, so a regenerated expected file
cannot quietly accept a regression.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

import hosts
import mapc

from mapc.core.diagnostics import Diagnostics
from mapc.spec.compose import resolve_extends
from mapc.spec.loader import load_file
from mapc.spectest import run_tests

CASES = Path(__file__).resolve().parents[1] / "cases" / "language"
CASE_DIRS = sorted(p for p in CASES.iterdir() if (p / "spec.yaml").is_file())


def _records(case: str) -> list[dict]:
    (expected,) = (CASES / case).glob("*.expected.ndjson")
    return [json.loads(line) for line in expected.read_text().splitlines() if line.strip()]


def _merged(case: str) -> dict:
    loaded, found = load_file(CASES / case / "spec.yaml")
    diags = Diagnostics()
    diags.extend(found)
    merged = resolve_extends(loaded, diags)
    assert diags.ok, [d.format() for d in diags]
    return merged


@pytest.mark.parametrize("case", CASE_DIRS, ids=[p.name for p in CASE_DIRS])
def test_case_meets_its_expected_records(case: Path):
    report = run_tests(case / "spec.yaml")
    assert report.ran, [d.message for d in report.diagnostics]
    failed = {r.case.name: (r.status, r.message) for r in report.failed}
    assert report.results and not failed, failed


def test_rules_merge_by_name():
    merged = _merged("rules-by-name")
    rules = merged.data["records"]["events"]["rules"]
    # moved (note before message), changed in place (tool), inserted (reward before other), removed (other)
    assert [r["name"] for r in rules] == ["note", "message", "tool", "reward"]
    tool = rules[2]
    assert tool == {"name": "tool", "when": "type == 'tool'", "kind": "tool", "tool_name": "name",
                    "output": "result", "id": "call_id"}
    assert "role" not in rules[1]  # `!override`: the inherited rule is replaced, not merged
    assert not any(k in r for r in rules for k in ("before", "after", "remove"))
    # each merged node keeps the file it came from
    assert Path(merged.mark(("records", "events", "rules", 2, "tool_name")).file).name == "base.yaml"
    assert Path(merged.mark(("records", "events", "rules", 2, "id")).file).name == "spec.yaml"
    assert Path(merged.mark(("records", "events", "rules", 3, "kind")).file).name == "spec.yaml"
    events = [r for r in _records("rules-by-name") if r["record_type"] == "event"]
    assert [(e["kind"], e["id"]) for e in events] == [
        ("message", "evt@L1.0"), ("tool", "c1"), ("log", "evt@L1.2"), ("reward", "evt@L1.3")]
    assert events[0]["input"] == {"content": "HI"}  # no inherited role


def test_override_replaces_an_inherited_mapping():
    (traj,) = [r for r in _records("override-wholesale") if r["record_type"] == "trajectory"]
    (event,) = [r for r in _records("override-wholesale") if r["record_type"] == "event"]
    assert traj["metadata"] == {"model": "m", "seed": 7}  # merged
    assert event["metadata"] == {"duration": 12}  # replaced


def test_keep_nulls_on_a_mapping_and_on_one_member():
    events = [r for r in _records("keep-nulls") if r["record_type"] == "event"]
    assert [e["output"] for e in events] == [{"result": "a b", "error": None},
                                            {"result": None, "error": "no such file"}]
    assert [e["metadata"] for e in events] == [{"exit": 0}, {"exit": None, "note": "retried"}]


def test_trajectory_signals_and_artifacts_name_their_event():
    records = _records("signal-event-id")
    owned = {(r["trajectory_id"], r.get("name", r["record_type"])): r.get("event_id")
             for r in records if r["record_type"] in ("signal", "artifact")}
    assert owned == {("e1", "reward"): "s2", ("e1", "judge"): "s1", ("e1", "artifact"): "s1",
                     ("e2", "reward"): "s3", ("e2", "judge"): None, ("e2", "artifact"): None}
    case = CASES / "signal-event-id"
    result = mapc.run(case / "spec.yaml", case / "episodes.jsonl")
    assert result.ok and result.warnings == 2, result.warning_messages  # the unknown event 's9'
    assert all("'s9' is not an event of this trajectory" in m for m in result.warning_messages)


def test_real_rlviz_accepts_signals_that_name_their_event(tmp_path):
    """RLViz checks that a signal's event exists and came before it: the real validator decides."""
    rlviz = hosts.require_rlviz()
    case = CASES / "signal-event-id"
    # built without mapc's own checks: the real RLViz below is the judge
    mapc.build(case / "spec.yaml", "rlviz", tmp_path / "plugin", validate=False, test=False)
    proc = subprocess.run([str(rlviz), "--json", str(tmp_path / "plugin"), str(case / "episodes.jsonl")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["records"] == 14



def test_events_id_parent_and_timestamp_beside_rules_apply_to_every_rule_without_its_own():
    events = [r for r in _records("events-id-for-every-rule") if r["record_type"] == "event"]
    assert [(e["id"], e.get("parent_id")) for e in events] == [
        ("s1", None), ("s2", "s1"), ("s3-tool", "s2"), ("s4", None)]  # the tool rule's own id wins
    assert [e["timestamp"] for e in events] == [
        "2024-12-01T16:20:00Z", "2024-12-01T16:20:00.250000Z", "2024-12-01T16:20:00.500000Z",
        "2024-12-01T16:20:00.750000Z"]
    case = CASES / "events-id-for-every-rule"
    result = mapc.run(case / "spec.yaml", case / "spans.jsonl")
    spec_lines = (case / "spec.yaml").read_text().splitlines()
    line = next(i for i, text in enumerate(spec_lines, 1) if text.strip().startswith("parent:"))
    # the parent s9 is not in the trace: the warning names the `parent` field, not the rule
    assert result.ok and result.warning_messages == [
        f"line 4: records.events.parent (spec.yaml:{line}): parent 's9' is not an earlier event of this "
        "trajectory; dropped"], result.warning_messages


def test_arithmetic_maps_latency_and_skips_what_a_span_lacks():
    signals = {(r["event_id"], r["name"]): r["value"] for r in _records("arithmetic-latency")
               if r["record_type"] == "signal"}
    # nanoseconds, then ISO text through epoch(); the span without an end gets no latency, and
    # 7 + null is null: no total for it either
    assert signals == {("evt@L1", "latency"): 1.25, ("evt@L1", "total_tokens"): 151,
                       ("evt@L2", "latency"): 0.25}


def test_a_repeated_metadata_block_is_one_function_each_rule_calls(tmp_path):
    events = [r for r in _records("repeated-metadata") if r["record_type"] == "event"]
    # each event has its own element's values, nulls dropped
    assert [set(e["metadata"]) for e in events] == [
        {"source_format", "provenance", "span", "started", "pending"},
        {"source_format", "provenance", "span", "completed", "took"},
        {"source_format", "span"},
        {"source_format", "provenance", "pending"},
    ]
    assert events[1]["metadata"]["took"] == 1.25 and events[3]["metadata"]["pending"] is True
    mapc.build(CASES / "repeated-metadata" / "spec.yaml", "rlviz", tmp_path / "out",
               validate=False, test=False)
    code = (tmp_path / "out" / "adapter.py").read_text(encoding="utf-8")
    assert code.count("def x_records_events_rules_0_metadata(data, scope):") == 1
    assert code.count("metadata=x_records_events_rules_0_metadata(el0, s)") == 3
    assert code.count('provenance="source_native"') == 1  # the block is written once


def test_merge_keys_give_a_mapping_the_keys_of_another(tmp_path):
    case = CASES / "merge-keys"
    result = mapc.run(case / "spec.yaml", case / "steps.jsonl")
    events = [r for r in result.records if r["record_type"] == "event"]
    # in order: the merged keys first, a key written again in its merged place
    assert [list(e["metadata"].items()) for e in events] == [
        [("source", "demo"), ("span", "s1"), ("took", 0.5)],
        [("source", "demo"), ("span", "s2"), ("tool_type", "shell")],
        [("source", "retry"), ("took", 3), ("attempt", 2)],
        [("source", "demo"), ("span", "s4")],
    ]
    merged = _merged("merge-keys")
    # a merged key keeps the mark of the block it was written in (diagnostics name that line)
    assert merged.mark(("records", "events", "rules", 1, "metadata", "span")).line == 18
    assert merged.mark(("records", "events", "rules", 1, "metadata", "tool_type")).line == 25
    mapc.build(case / "spec.yaml", "rlviz", tmp_path / "out", validate=False, test=False)
    code = (tmp_path / "out" / "adapter.py").read_text(encoding="utf-8")
    # the tool rule extends the shared block: its function, then its own key
    assert '**x_records_events_rules_0_metadata(el0, s), tool_type=el0.get("kind")' in code


def test_checked_fields_and_raw_are_one_call_with_the_records_order(tmp_path):
    """`raw`, `alignment_key`, `branch_id`, `state_hash`, `context` and an expression's
    `metadata` go to one `events.put_full` call (D86); the events keep the key order they were
    built in before (the writer's text and the record's: event_record's fields, then
    branch_id, alignment_key, state_hash, the rule's fields, context, source, raw, metadata)."""
    case = CASES / "checked-fields-and-raw"
    result = mapc.run(case / "spec.yaml", case / "steps.jsonl")
    assert result.ok and result.warning_messages == []
    events = [json.loads(line) for line in result.ndjson.splitlines() if b'"record_type":"event"' in line]
    lead = ["record_type", "id", "trajectory_id", "sequence", "kind"]
    assert [list(e) for e in events] == [
        lead + ["alignment_key", "input", "source"],
        lead + ["timestamp", "parent_id", "alignment_key", "input", "output", "context", "source", "raw",
                "metadata"],
        lead + ["parent_id", "branch_id", "state_hash", "data", "context", "source", "metadata"],
        lead + ["timestamp", "parent_id", "alignment_key", "input", "context", "source", "raw", "metadata"],
        lead + ["parent_id", "data", "source"],
    ]
    assert events[1]["raw"]["span_id"] == "s1" and events[2]["branch_id"] == "2"  # coerce_id's text
    mapc.build(case / "spec.yaml", "rlviz", tmp_path / "out", validate=False, test=False)
    code = (tmp_path / "out" / "adapter.py").read_text(encoding="utf-8")
    assert code.count("events.put_full(") == 3 and code.count("events.put(") == 1
    assert "event_record(" not in code and "emit_event(" not in code and "coerce_" not in code


def test_issue27_defect1_as_on_the_jsonl_line_loop_names_the_line():
    """`events: {each: "@", as: ln, ...}` on a jsonl source: `$ln` is the line and `$ln_index`
    its number, at the level and inside a signal's own loop below it (it bound nothing)."""
    case = CASES / "as-names-the-line"
    result = mapc.run(case / "spec.yaml", case / "lines.jsonl")
    assert result.ok and result.warnings == 0, result.warning_messages
    events = [r for r in result.records if r["record_type"] == "event"]
    assert [e["data"] for e in events] == [{"x": 1, "line": 0}, {"x": "two", "line": 1}, {"x": 3, "line": 2}]
    signals = [(r["event_id"], r["name"], r["value"]) for r in result.records if r["record_type"] == "signal"]
    assert signals == [("evt@L1", "part.a", 5), ("evt@L3", "part.c", 7), ("evt@L3", "part.c", 8)]
    assert result.records[:-1] == _records("as-names-the-line")  # (less the `complete` record)


def test_issue27_defect2_a_signal_with_when_on_an_event_rule():
    """A signal's `when:` on an event rule, in the mapping form, the list form and on an `emit`
    entry: emitted where it holds, nothing else (it was `internal error (NameError)`)."""
    case = CASES / "signal-when-on-an-event"
    result = mapc.run(case / "spec.yaml", case / "scores.jsonl")
    assert result.ok and result.warnings == 0, (result.error, result.warning_messages)
    signals = [(r["event_id"], r["name"], r["value"], r.get("unit")) for r in result.records
               if r["record_type"] == "signal"]
    assert signals == [("s1", "v", 1, None), ("g1", "v", 0.5, "points"), ("p1-b", "v", 2, None)]
    assert len([r for r in result.records if r["record_type"] == "event"]) == 8
