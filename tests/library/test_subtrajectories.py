"""`subtrajectory` (issue 27 item 5, D109): a file a trace names becomes a child trajectory.

The case directories under tests/cases/language (subtrajectory-present, -missing, -nested) are
checked against their expected records by test_language.py; here each one's purpose is pinned
(the link both ways, the warning, the depth bound), the generated RLViz adapter is run under the
real RLViz validator (the plugin is given the session file; the subagent's file lies inside the
source root RLViz sets, the session's folder), RELAI and cap-evolve get the session's trajectory
(its subagent's is no task's answer; RELAI's observation names it in ATIF's
`subagent_trajectory_ref`), and the real Claude Code transcript's subagent is mapped as the
ground truth (tests/data/corpus/session_truth.json) says it is.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import hosts
import mapc

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "tests" / "cases" / "language"
CORPUS = ROOT / "tests" / "data" / "corpus"
TRANSCRIPT = CORPUS / "claude-code-transcript" / "ca4291e5-5178-4fdb-972b-f6b4d6c26a65.jsonl"
AGENT = "a90795522da6172b3"
SPAWNING_CALL = "call_function_h5ily07rg46d_1"


def _records(case: str) -> list[dict]:
    (expected,) = (CASES / case).glob("*.expected.ndjson")
    return [json.loads(line) for line in expected.read_text().splitlines() if line.strip()]


def _of(records: list[dict], kind: str) -> list[dict]:
    return [r for r in records if r["record_type"] == kind]


def test_a_subtrajectory_is_a_child_trajectory_linked_both_ways():
    records = _records("subtrajectory-present")
    session, child = _of(records, "trajectory")
    assert session["id"] == "session" and child["id"] == "agent-a1"  # `$source.stem` of each file
    assert child["group_id"] == session["group_id"] and child["parent_id"] == "session"
    assert child["metadata"] == {"spawned_by": {"event_id": "r1", "tool_call_id": "call-1"}}
    events = {e["id"]: e for e in _of(records, "event")}
    assert events["r1"]["metadata"] == {"subtrajectory_id": "agent-a1"}
    # the child's records come before the event that names it: the file is mapped first
    order = [r["id"] for r in records if r["record_type"] in ("trajectory", "event")]
    assert order == ["session", "u1", "a1", "agent-a1", "s1", "s2", "s3", "s4", "r1", "a2"]
    assert [e["sequence"] for e in events.values() if e["trajectory_id"] == "agent-a1"] == [0, 1, 2, 3]
    assert [e["sequence"] for e in events.values() if e["trajectory_id"] == "session"] == [0, 1, 2, 3]
    # `$source` and each event's `source` are the child's file, relative to the source root
    assert {e["source"]["path"] for e in events.values() if e["trajectory_id"] == "agent-a1"} == {
        "session/subagents/agent-a1.jsonl"}
    child_file = (CASES / "subtrajectory-present" / "session" / "subagents" / "agent-a1.jsonl").read_bytes()
    s3 = events["s3"]["source"]
    assert json.loads(child_file[s3["byte_offset"]:s3["byte_offset"] + s3["byte_length"]])["uuid"] == "s3"


def test_a_missing_subtrajectory_is_a_warning_naming_the_rule_and_the_file():
    case = CASES / "subtrajectory-missing"
    result = mapc.run(case / "spec.yaml", case / "session.jsonl")
    assert result.ok and result.warning_messages == [
        "line 3: records.events.rules[0].subtrajectory (spec.yaml:21): subtrajectory "
        "'session/subagents/agent-gone.jsonl' is missing; not mapped"]
    assert [t["id"] for t in _of(result.records, "trajectory")] == ["session"]
    assert all("metadata" not in e for e in _of(result.records, "event"))  # no link to name


def test_subtrajectories_nest_four_deep_and_the_bound_warns_once():
    records = _records("subtrajectory-nested")
    trajectories = _of(records, "trajectory")
    assert [(t["id"], t.get("parent_id")) for t in trajectories] == [
        ("main", None), ("a1", "main"), ("a2", "a1"), ("a3", "a2"), ("a4", "a3")]
    # derived event ids of each file are its own (`sub<N>/L<line>`): unique across the stream
    ids = [e["id"] for e in _of(records, "event")]
    assert len(ids) == len(set(ids)) and "evt@sub4/L1" in ids and "evt@L1" in ids
    case = CASES / "subtrajectory-nested"
    result = mapc.run(case / "spec.yaml", case / "main.jsonl")
    assert result.warning_messages == [
        "main/a1/a2/a3/a4.jsonl, line 2: records.events.rules[0].subtrajectory (spec.yaml:19): "
        "'a4/a5.jsonl' would nest subtrajectories deeper than 4; not mapped, nor any other past this bound"]


def test_a_child_trajectory_id_already_used_is_renamed(tmp_path):
    """Two files with the same stem (and so the same `$source.stem` id): the second is a new
    trajectory `~2`, never the first one's."""
    case = CASES / "subtrajectory-present"
    shutil.copytree(case, tmp_path / "case")
    folder = tmp_path / "case"
    (folder / "session" / "subagents" / "agent-a1.jsonl").write_text(
        '{"type":"user","uuid":"s1","message":{"role":"user","content":"look"}}\n'
        '{"type":"user","uuid":"s9","message":{"role":"user","content":[{"type":"tool_result",'
        '"tool_use_id":"c9","content":"x"}]},"toolUseResult":{"agentId":"a1"}}\n')
    deeper = folder / "session" / "subagents" / "agent-a1" / "subagents"  # beside the child's file
    deeper.mkdir(parents=True)
    (deeper / "agent-a1.jsonl").write_text(
        '{"type":"user","uuid":"t1","message":{"role":"user","content":"deeper"}}\n')
    result = mapc.run(folder / "spec.yaml", folder / "session.jsonl")
    assert result.ok, result.error
    assert [(t["id"], t.get("parent_id")) for t in _of(result.records, "trajectory")] == [
        ("session", None), ("agent-a1", "session"), ("agent-a1~2", "agent-a1")]
    assert result.warning_messages == [  # at the file whose trajectory it is
        "session/subagents/agent-a1/subagents/agent-a1.jsonl: records.events.rules[0].subtrajectory "
        "(spec.yaml:22): trajectory id 'agent-a1' is already used; renamed 'agent-a1~2'"]


JSON_SPEC = """\
mapc: 1
name: json-helpers
source: {format: demo-run, container: json, probe: {require: [steps]}}
records:
  trajectory: {id: "id || $source.stem"}
  events:
    each: steps
    rules:
      - when: helper
        kind: observation
        result: text
        subtrajectory: {path: helper}
      - kind: message
        content: text
"""


def test_a_json_document_names_its_subtrajectory(tmp_path):
    """A JSON document's subtrajectory is a document read as the source is (its trajectory level
    sees the child's document); derived event ids are the child's own (`sub1.0`)."""
    (tmp_path / "spec.yaml").write_text(JSON_SPEC)
    (tmp_path / "run1").mkdir()
    (tmp_path / "main.json").write_text(
        '{"id": "main", "steps": [{"text": "a"}, {"text": "b", "helper": "run1/h.json"}]}')
    (tmp_path / "run1" / "h.json").write_text('{"id": "helper-1", "steps": [{"text": "h1"}, {"text": "h2"}]}')
    result = mapc.run(tmp_path / "spec.yaml", tmp_path / "main.json")
    assert result.ok and result.warnings == 0, (result.error, result.warning_messages)
    assert [(r["id"], r.get("trajectory_id"), r.get("metadata")) for r in result.records
            if r["record_type"] in ("trajectory", "event")] == [
        ("main", None, None), ("evt@0", "main", None),
        ("helper-1", None, {"spawned_by": {"event_id": "evt@1"}}),
        ("evt@sub1.0", "helper-1", None), ("evt@sub1.1", "helper-1", None),
        ("evt@1", "main", {"subtrajectory_id": "helper-1"})]


EMIT_SPEC = """\
mapc: 1
name: emitted-subtrajectory
source: {format: demo, container: jsonl, probe: {require: [type]}}
records:
  trajectory: {id: $source.stem}
  events:
    each: "@"
    raw: true
    rules:
      - when: "type == 'agent'"
        emit:
          - {kind: tool, tool_name: "'Agent'", tool_call_id: call}
          - kind: observation
            tool_call_id: call
            result: text
            metadata: meta
            subtrajectory: {path: file}
      - kind: message
        content: text
"""


def test_an_emitted_event_spawns_and_its_link_leaves_the_source_element_alone(tmp_path):
    """`subtrajectory` on an `emit` entry; the rule's metadata is the line's own object (also in
    `raw`): the link goes into a copy, so `raw` stays the line as it was."""
    (tmp_path / "spec.yaml").write_text(EMIT_SPEC)
    (tmp_path / "s").mkdir()
    line = {"type": "agent", "call": "k1", "text": "done", "file": "s/a.jsonl", "meta": {"m": 1}}
    (tmp_path / "main.jsonl").write_text(json.dumps(line) + "\n")
    (tmp_path / "s" / "a.jsonl").write_text('{"type": "say", "text": "hi"}\n')
    result = mapc.run(tmp_path / "spec.yaml", tmp_path / "main.jsonl")
    assert result.ok and result.warnings == 0, (result.error, result.warning_messages)
    call, child_event, spawning = _of(result.records, "event")
    assert (call["kind"], child_event["trajectory_id"], spawning["kind"]) == ("tool", "a", "observation")
    assert spawning["metadata"] == {"m": 1, "subtrajectory_id": "a"}
    assert spawning["raw"] == line and call["raw"] == line


def test_the_real_rlviz_accepts_subtrajectories(tmp_path):
    """The plugin is given the session file; RLViz sets the source root to its folder, where the
    subagent's file is: the real validator decides (records count the child's)."""
    rlviz = hosts.require_rlviz()
    for case, source, records in (("subtrajectory-present", "session.jsonl", 13),
                                  ("subtrajectory-nested", "main.jsonl", 18)):
        out = tmp_path / case
        mapc.build(CASES / case / "spec.yaml", "rlviz", out, validate=False, test=False)
        for where in (CASES / case / source, out / "testdata" / source):  # testdata holds the children too
            proc = subprocess.run([str(rlviz), "--json", str(out), str(where)], capture_output=True, text=True,
                                  timeout=120)
            assert proc.returncode == 0, proc.stderr
            assert json.loads(proc.stdout)["records"] == records, (case, where)
        report = mapc.validate("rlviz", out, [CASES / case / source], options={"strict": True})
        assert report.ok, report.text


def _scored_project(tmp_path: Path) -> Path:
    """subtrajectory-present with a task replaying the session (and its subagent's file)."""
    case = CASES / "subtrajectory-present"
    project = tmp_path / "project"
    shutil.copytree(case, project, ignore=shutil.ignore_patterns("*.expected.ndjson"))
    shutil.copytree(case / "session", project / "traces" / "session")
    shutil.copy(case / "session.jsonl", project / "traces" / "session.jsonl")
    spec = (case / "spec.yaml").read_text() + """\
evaluators:
  - id: answered
    description: The agent gave an answer
    score: "output != null && output != ''"
tasks:
  - {id: session, input: "Find the bug"}
agent:
  replay: "traces/{task_id}.jsonl"
"""
    (project / "spec.yaml").write_text(spec)
    return project


def test_relai_names_the_subtrajectory_on_the_spawning_observation(tmp_path):
    from mapc.targets.relai.validator.catalog import Findings
    from mapc.targets.relai.validator.result import check_result

    project = _scored_project(tmp_path)
    built = mapc.build(project / "spec.yaml", "relai", project)
    assert built.ok, [d.format() for d in built.diagnostics]
    runner = next((project / ".relai" / "custom-adaptor").iterdir()) / "run.py"
    output = tmp_path / "result.json"
    proc = subprocess.run([sys.executable, str(runner.relative_to(project)), "--task-id", "session", "--output",
                           str(output)], cwd=project, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    result = json.loads(output.read_text())
    assert "failure" not in result, result.get("failure")  # two trajectories, the session answers
    steps = result["trace"]["steps"]
    results = [r for s in steps for r in s.get("observation", {}).get("results", [])]
    assert [r.get("subagent_trajectory_ref") for r in results] == [[{"trajectory_id": "agent-a1"}]]
    assert results[0]["source_call_id"] == "call-1"
    assert [s["source"] for s in steps] == ["user", "agent", "agent"]  # the session's, not the subagent's
    findings = Findings("result.json")
    check_result(result, "session", {"id": "session", "evaluators": [{"id": "answered"}]}, findings)
    assert findings.ok, [d.format() for d in findings.items]
    import atif  # the ATIF package agrees that the reference is valid

    atif.Trajectory(schema_version="ATIF-v1.8", agent={"name": "mapc-test", "version": "1"}, steps=steps)


def test_cap_evolve_scores_the_session_not_its_subagent(tmp_path):
    sys.path.insert(0, str(ROOT / "tests" / "capevolve"))
    from capevolve_support import build_adapter, drive

    project = _scored_project(tmp_path)
    out = project / "cap-evolve"
    build_adapter(project / "spec.yaml", out)
    shutil.copytree(project / "traces", out / "traces", dirs_exist_ok=True)
    results, proc = drive(out, [{"op": "run", "task": "session", "ctx": ".", "seed": 0, "as": "r"},
                                {"op": "score", "task": "session", "rollout": "r"}], cwd=project)
    rollout, score = results
    assert rollout.get("error") is None, rollout
    assert rollout["metadata"]["trajectory_id"] == "session" and "mapping_warnings" not in rollout["metadata"]
    assert {e["trajectory_id"] for e in rollout["trace"]["events"]} == {"session"}
    assert score["reward"] == 1.0


# --- the real Claude Code transcript -----------------------------------------------------------
#: A spec a user could write from the docs for the on-disk transcript, one event per line (no
#: `merge`: the lines of one response are separate generation events here).
TRANSCRIPT_SPEC = """\
mapc: 1
name: claude-code-session-lines
source:
  format: claude-code-transcript
  container: jsonl
  probe: {require: [type]}
records:
  trajectory: {id: $source.stem}
  events:
    each: "@"
    id: uuid
    timestamp: timestamp
    rules:
      - name: agent-result
        when: "type == 'user' && toolUseResult.agentId"
        kind: observation
        tool_call_id: "message.content[0].tool_use_id"
        result: "message.content[0].content"
        subtrajectory:
          path: "join('', [$source.stem, '/subagents/agent-', toolUseResult.agentId, '.jsonl'])"
      - name: tool-result
        when: "type == 'user' && type(message.content) == 'array'"
        kind: observation
        tool_call_id: "message.content[0].tool_use_id"
        result: "message.content[0].content"
      - name: prompt
        when: "type == 'user'"
        kind: message
        role: "'user'"
        content: message.content
      - name: response-line
        when: "type == 'assistant'"
        kind: generation
        role: "'assistant'"
        model: message.model
        content: "join('', message.content[?type == 'text'].text)"
        tool_calls: "message.content[?type == 'tool_use'].{id: id, name: name, arguments: input}"
        metadata: {message_id: message.id}
      - kind: log
        data: {type: type}
fixtures: [sample.jsonl]
"""


def _truth() -> tuple[dict, dict]:
    truth = json.loads((CORPUS / "session_truth.json").read_text())
    main = next(t for t in truth if t["file"] == "claude-code-transcript/" + TRANSCRIPT.name)
    return main, main["subagents"][0]


def test_the_real_transcripts_subagent_is_one_child_trajectory(tmp_path):
    main_truth, truth = _truth()
    assert truth["agent_id"] == AGENT and truth["spawned_by_call"] == SPAWNING_CALL
    spec = tmp_path / "spec.yaml"
    spec.write_text(TRANSCRIPT_SPEC)
    (tmp_path / "sample.jsonl").write_text('{"type":"user","uuid":"u1","message":{"content":"hi"}}\n')
    result = mapc.run(spec, TRANSCRIPT)
    assert result.ok and result.warnings == 0, (result.error, result.warning_messages)
    session, child = _of(result.records, "trajectory")
    assert child["id"] == f"agent-{AGENT}" and child["parent_id"] == session["id"] == TRANSCRIPT.stem
    events = _of(result.records, "event")
    spawning = [e for e in events if e.get("metadata", {}).get("subtrajectory_id")]
    assert [(e["trajectory_id"], e["output"]["tool_call_id"], e["metadata"]["subtrajectory_id"])
            for e in spawning] == [(session["id"], SPAWNING_CALL, child["id"])]
    assert child["metadata"]["spawned_by"] == {"event_id": spawning[0]["id"], "tool_call_id": SPAWNING_CALL}
    mine = [e for e in events if e["trajectory_id"] == child["id"]]
    assert len(mine) == truth["lines"] == 55
    lines = [e for e in mine if e["kind"] == "generation"]
    assert len(lines) == truth["assistant_lines"] == 33  # the 6 responses' lines, one event each
    assert len({e["metadata"]["message_id"] for e in lines}) == truth["model_responses"] == 6
    calls = [c["id"] for e in lines for c in e["output"].get("tool_calls", [])]
    results = [e["output"]["tool_call_id"] for e in mine if e["kind"] == "observation"]
    assert len(calls) == len(set(calls)) == truth["tool_calls"] == 21
    assert len(results) == truth["tool_results"] == 21 and set(results) == set(calls)  # every result paired
    assert sum(e["kind"] == "message" for e in mine) == truth["user_prompts"] == 1
    assert {e["source"]["path"] for e in mine} == {f"{TRANSCRIPT.stem}/subagents/agent-{AGENT}.jsonl"}
    # the session's own lines are all there too, and no subagent line among them
    assert sum(e["trajectory_id"] == session["id"] for e in events) == main_truth["lines"] == 136


def test_the_real_rlviz_accepts_the_real_transcript_with_its_subagent(tmp_path):
    rlviz = hosts.require_rlviz()
    spec = tmp_path / "spec.yaml"
    spec.write_text(TRANSCRIPT_SPEC)
    (tmp_path / "sample.jsonl").write_text('{"type":"user","uuid":"u1","message":{"content":"hi"}}\n')
    out = tmp_path / "plugin"
    mapc.build(spec, "rlviz", out, validate=False, test=False)
    proc = subprocess.run([str(rlviz), "--json", str(out), str(TRANSCRIPT)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    expected = mapc.run(spec, TRANSCRIPT)
    assert report["records"] == len(expected.records) - 1 and report["warnings"] == 0  # less `complete`
    assert report["deterministic"] is True
