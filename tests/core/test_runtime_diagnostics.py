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


def test_signals_with_unit_and_metadata_keep_their_records():
    """The records of the case `signals-with-unit-and-metadata` (runtime's put_signal_with):
    ids numbered per owner (``acc~2``), an event's own ``<event id>:<name>``, key order,
    a unit or metadata left out when it is not text or an object."""
    case = CASES / "signals-with-unit-and-metadata"
    result = mapc.run(case / "spec.yaml", _input(case))
    signals = [line for line in result.ndjson.decode().splitlines() if '"signal"' in line]
    assert signals == [
        '{"record_type":"signal","id":"evt@0.0:score","trajectory_id":"r1","event_id":"evt@0.0",'
        '"name":"score","value":1,"unit":"7"}',
        '{"record_type":"signal","id":"evt@0.0:pass","trajectory_id":"r1","event_id":"evt@0.0",'
        '"name":"pass","value":"yes","metadata":{"by":"j1"}}',
        '{"record_type":"signal","id":"evt@0.2:len","trajectory_id":"r1","event_id":"evt@0.2",'
        '"name":"len","value":true,"unit":"bool","metadata":{"note":"n"}}',
        '{"record_type":"signal","id":"evt@0.2:len~2","trajectory_id":"r1","event_id":"evt@0.2",'
        '"name":"len","value":false,"unit":"bool","metadata":{}}',
        '{"record_type":"signal","id":"r1:acc","trajectory_id":"r1","name":"acc","value":0.5}',
        '{"record_type":"signal","id":"r1:acc~2","trajectory_id":"r1","name":"acc","value":2,'
        '"metadata":{"k":1}}',
        '{"record_type":"signal","id":"r1:grade.null","trajectory_id":"r1","name":"grade.null",'
        '"value":1,"metadata":{}}',
        '{"record_type":"signal","id":"r1:grade.acc","trajectory_id":"r1","name":"grade.acc",'
        '"value":0.5,"metadata":{"grader":"g"}}',
        '{"record_type":"signal","id":"r1:cost","trajectory_id":"r1","name":"cost","value":3}',
    ]


SIGNAL_VALUE_FAILS = """\
mapc: 1
name: signal-name-before-value
source: {format: demo-graded-runs, container: json, probe: {require: [runs]}}
records:
  trajectory:
    each: runs
    id: id
    signals:
      - each: grades
        name: "'len'"
        value: value
        metadata: {length: "length(grader)"}
      - each: grades
        name: name
        value: "abs(value || `0`)"
        metadata: {grader: grader}
  events: {each: steps, kind: message, content: text}
"""


def test_signal_name_is_warned_before_its_value_fails(tmp_path):
    """A computed name is checked before a value that may fail is evaluated (the generated
    code checks it, not the runtime after the value); metadata that may fail is evaluated
    only for a signal emitted (``length(7)`` would fail)."""
    (tmp_path / "spec.yaml").write_text(SIGNAL_VALUE_FAILS, encoding="utf-8")
    (tmp_path / "in.json").write_text(json.dumps({"runs": [{"id": "r1", "steps": [], "grades": [
        {"name": "a", "value": -1, "grader": "g"},
        {"name": "b", "value": None, "grader": 7},
        {"name": {"x": 1}, "value": "high", "grader": "g"},
    ]}]}), encoding="utf-8")
    result = mapc.run(tmp_path / "spec.yaml", tmp_path / "in.json")
    assert result.warning_messages == [
        "$.runs[0]: records.trajectory.signals[1].name (spec.yaml:14): expected a string, "
        "got object; omitted"]
    assert result.error == (
        "$.runs[0]: records.trajectory.signals[1].value (spec.yaml:15) cannot be evaluated: "
        "abs() argument must be a number, got string")


def test_an_event_id_that_may_fail_is_computed_only_for_a_signal_emitted(tmp_path):
    """A trajectory's signal naming its event (`event_id`): an expression that may raise is
    passed as a function, called after the name and value are checked; an id the trajectory
    lacks is dropped with a warning at its place."""
    (tmp_path / "spec.yaml").write_text(
        "mapc: 1\nname: owned\nsource: {format: demo, container: json, probe: {require: [runs]}}\n"
        "records:\n  trajectory:\n    each: runs\n    id: id\n    signals:\n"
        "      - each: grades\n        name: name\n        value: value\n"
        "        event_id: \"join('-', ['s', step])\"\n"
        "  events: {each: steps, id: \"join('-', ['s', id])\", kind: log, data: \"@\"}\n"
        "fixtures: [in.json]\n",
        encoding="utf-8")
    (tmp_path / "in.json").write_text(json.dumps({"runs": [{"id": "r1", "steps": [{"id": "1"}], "grades": [
        {"name": "a", "value": 1, "step": "1"},
        {"name": "b", "value": None, "step": 7},  # null value: its event_id (join of 7) never runs
        {"name": "c", "value": 2, "step": "9"},
    ]}]}), encoding="utf-8")
    result = mapc.run(tmp_path / "spec.yaml", tmp_path / "in.json")
    assert result.error is None
    assert result.warning_messages == [
        "$.runs[0]: records.trajectory.signals[0].event_id (spec.yaml:12): 's-9' is not an event "
        "of this trajectory; event_id dropped"]
    signals = {r["name"]: r.get("event_id") for r in result.records if r["record_type"] == "signal"}
    assert signals == {"a": "s-1", "c": None}
    mapc.build(tmp_path / "spec.yaml", "rlviz", tmp_path / "out", validate=False, test=False)
    code = (tmp_path / "out" / "adapter.py").read_text(encoding="utf-8")
    assert "event_id=lambda: x_records_trajectory_signals_0_event_id(" in code


def test_the_events_timestamp_beside_rules_warns_at_its_own_place(tmp_path):
    (tmp_path / "spec.yaml").write_text(
        "mapc: 1\nname: times\nsource: {format: demo, container: jsonl, probe: {require: [steps]}}\n"
        "records:\n  trajectory: {each: \"@\", id: id}\n  events:\n    each: steps\n"
        "    timestamp: at\n    rules:\n      - {when: \"type == 'a'\", kind: message, content: text}\n"
        "      - {kind: log, data: \"@\"}\nfixtures: [in.jsonl]\n", encoding="utf-8")
    (tmp_path / "in.jsonl").write_text(json.dumps({"id": "t1", "steps": [
        {"type": "a", "text": "hi", "at": "2026-01-01T00:00:00Z"}, {"type": "b", "at": "soon"}]}) + "\n",
        encoding="utf-8")
    result = mapc.run(tmp_path / "spec.yaml", tmp_path / "in.jsonl")
    assert result.warning_messages == [
        "line 1, $.steps[1]: records.events.timestamp (spec.yaml:8): not an RFC 3339 date-time "
        "(string); omitted (convert with iso8601())"]
    events = [r for r in result.records if r["record_type"] == "event"]
    assert [e.get("timestamp") for e in events] == ["2026-01-01T00:00:00Z", None]
    mapc.build(tmp_path / "spec.yaml", "rlviz", tmp_path / "out", validate=False, test=False)
    assert "rfc3339=events.time(" in (tmp_path / "out" / "adapter.py").read_text(encoding="utf-8")
