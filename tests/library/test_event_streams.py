"""Event streams (issue 27): `merge`, `carry`, counters and pairing by id.

The case directories under tests/cases/language (merge-*, carry-*, counters-*, pairing-*) are
checked with `mapc test` by test_language.py; the assertions here pin what each is for, so a
regenerated expected file cannot quietly accept a regression. Then the real Claude Code
transcript of the corpus, mapped with a spec that merges, against the ground truth computed
from the file alone (tests/data/corpus/session_truth.json), and the runtime units alone.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

import hosts
import mapc
from mapc.core import runtime_files as runtime
from shared_paths import CORPUS

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "tests" / "cases" / "language"
TRANSCRIPT = CORPUS / "claude-code-transcript" / "ca4291e5-5178-4fdb-972b-f6b4d6c26a65.jsonl"
SUBAGENT = TRANSCRIPT.with_suffix("") / "subagents" / "agent-a90795522da6172b3.jsonl"
TRUTH = {t["file"]: t for t in json.loads((CORPUS / "session_truth.json").read_text(encoding="utf-8"))}
RT = runtime.namespace()


def _run(case: str, source: str):
    result = mapc.run(CASES / case / "spec.yaml", CASES / case / source)
    assert result.ok, result.error
    return result


def _kind(records, kind):
    return [r for r in records if r["record_type"] == kind]


# -- merge -----------------------------------------------------------------------------------
def test_lines_that_share_a_key_are_one_generation_at_the_first_line():
    result = _run("merge-consecutive", "session.jsonl")
    events = _kind(result.records, "event")
    assert [(e["id"], e["kind"]) for e in events] == [
        ("evt@L1", "message"), ("evt@L2", "generation"), ("evt@L5", "observation"), ("evt@L6", "generation")]
    first = events[1]
    # content parts concatenated in line order: thinking, text and the call, each from its line
    assert first["output"]["reasoning"] == "I should list them."
    assert first["output"]["content"] == "Listing the folder."
    assert first["output"]["tool_calls"] == [{"id": "toolu_1", "name": "Bash", "arguments": {"command": "ls"}}]
    assert first["metadata"] == {"lines": 3, "first_line": 2, "last_line": 4}
    assert first["timestamp"] == "2026-04-13T04:01:55.100Z"  # the first line's
    # the usage once, the last line's (the first says 0 output tokens)
    signals = {(s["event_id"], s["name"]): s["value"] for s in _kind(result.records, "signal")}
    assert signals == {("evt@L2", "output_tokens"): 31, ("evt@L6", "output_tokens"): 12}
    # the source spans the lines: from the first line's start to the end of the last
    data = (CASES / "merge-consecutive" / "session.jsonl").read_bytes()
    lines = data.splitlines(keepends=True)
    src = first["source"]
    assert src["line"] == 2 and src["byte_offset"] == len(lines[0])
    assert data[src["byte_offset"]:src["byte_offset"] + src["byte_length"]] == b"".join(lines[1:4]).rstrip(b"\n")
    assert result.warnings == 0


def test_a_line_between_the_lines_of_a_key_waits_and_a_key_again_is_another_element():
    result = _run("merge-non-consecutive", "stream.jsonl")
    events = _kind(result.records, "event")
    assert [(e["id"], e.get("output", e.get("data"))) for e in events] == [
        ("evt@L1", {"role": "assistant", "content": "The answer is 42."}),
        ("evt@L2", {"content": "42", "tool_call_id": "c1"}),
        ("evt@L4", {"role": "assistant", "content": "Anything else?"}),
        ("evt@L5", {"role": "assistant", "content": " (late)"}),
        ("evt@L6", {"text": "done"}),
    ]
    assert [e["sequence"] for e in events] == [0, 1, 2, 3, 4]
    assert result.warning_messages == [
        "line 5: records.events.merge (spec.yaml:16): merge_key_again: key 'r1' (lines 1-3) comes again after "
        "another key closed it; this element starts another one; hint: raise merge.open when keys interleave"]


def test_every_merge_strategy():
    (merged, alone) = _kind(_run("merge-strategies", "lines.jsonl").records, "event")
    data = merged["data"]
    assert data["model"] == "demo-model"  # first non-null
    assert data["status"] == "running"  # last non-null
    assert data["text"] == "Hello!"  # texts joined
    assert [p.get("text", p.get("id")) for p in data["parts"]] == ["a", "c1", "b", "c"]  # an object is one item
    assert data["tags"] == ["x", ["y", "z"]]  # collected, the null left out
    assert data["usage"] == {"input": 30, "output": 10, "detail": {"cached": 15, "audio": 1}, "tier": "free"}
    assert (data["score"], data["low"]) == (0.9, 3)
    assert data["extra"] == "first line"  # not merged: the first line's
    assert alone["data"] == {"id": "m2", "text": "standalone", "usage": {"input": 1, "output": 1}}


def test_open_groups_of_interleaved_keys():
    events = _kind(_run("merge-open-interleaved", "spans.jsonl").records, "event")
    assert [(e["id"], e["data"].get("span"), e["data"].get("messages", e["data"].get("tick"))) for e in events] == [
        ("evt@L1", "A", ["a1", "a2"]), ("evt@L2", "B", ["b1", "b2", "b3"]), ("evt@L3", None, 1),
        ("evt@L6", "C", ["c1"]), ("evt@L7", None, 2)]


def test_holding_too_much_back_closes_a_group_early_with_a_warning():
    result = _run("merge-split-warning", "long.jsonl")
    assert [(e["id"], e["output"]["content"]) for e in _kind(result.records, "event")] == [
        ("evt@L1", "Working on it"), ("evt@L10003", " - done"), ("evt@L10004", "Next.")]
    (warning,) = result.warning_messages
    assert warning.startswith("line 10003: records.events.merge (spec.yaml:15): merge_split: key 'r1' (line 1) "
                              "was closed early, holding more than 10,000 lines or 16 MiB (behind it or in it)")


# -- carry ----------------------------------------------------------------------------------
def test_carried_values_start_empty_for_each_element_above():
    events = _kind(_run("carry-context", "episodes.jsonl").records, "event")
    seen = [(e["trajectory_id"], e["data"]["content"], e["data"].get("model"), e.get("metadata")) for e in events]
    assert seen == [
        ("e1", "look around", "model-a", {"phase": "setup"}),
        ("e1", "open the door", "model-a", {"phase": "solve"}),  # its own null model keeps the last
        ("e1", "walk through", "model-a", {"phase": "solve", "checkpoint": "checkpoint 1"}),
        ("e2", "wake up", None, {}),  # nothing of e1
        ("e2", "stretch", "model-b", {}),
    ]


# -- counters ---------------------------------------------------------------------------------
def test_cumulative_counters_become_increases_and_totals_one_signal():
    result = _run("counters-tokens", "rollout.jsonl")
    signals = [(s.get("event_id"), s["name"], s["value"], s.get("unit")) for s in _kind(result.records, "signal")]
    assert signals == [
        ("evt@L5", "input_tokens", 100, None),  # the first value
        # line 6 repeats line 5: no signal
        ("evt@L10", "input_tokens", 150, None),
        ("evt@L11", "input_tokens", 40, None),  # a reset: the value itself
        ("evt@L12", "input_tokens", 50, None),
        (None, "calls", 2, None),  # totals, after every event
        (None, "input_total", 340, "tokens"),
    ]
    assert [r["record_type"] for r in result.records[-3:]] == ["signal", "signal", "complete"]
    assert [m.split(": ", 2)[2] for m in result.warning_messages] == [
        "the counter went down from 250 to 40: a reset; counted from 0"] * 2
    models = [e["data"]["model"] for e in _kind(result.records, "event") if e["kind"] == "log"]
    assert models == ["model-a", "model-a", "model-b", "model-b", "model-b"]  # carried from turn_context


# -- pairing ----------------------------------------------------------------------------------
PAIRS = {"c1": "contents of a", "c2": "contents of b", "c3": "contents of c", "c4": "d is fine"}


def _pairing_views():
    """The pairing case mapped with semantic views (what RELAI and cap-evolve build from)."""
    from mapc.pipeline.build import mapping_namespace
    from mapc.spec import load_spec

    spec, diags = load_spec(CASES / "pairing-by-id" / "spec.yaml")
    assert spec is not None, [d.format() for d in diags]
    ns = mapping_namespace(spec, semantics=True)
    src = ns["SourceFile"](str(CASES / "pairing-by-id" / "session-1.jsonl"))
    records, st = ns["collect_records"](ns["map_source"], src)
    return records, st


def test_results_pair_with_parallel_calls_on_rlviz_records():
    events = _kind(_run("pairing-by-id", "session-1.jsonl").records, "event")
    calls = {c["id"]: e["id"] for e in events if e["kind"] == "generation" for c in e["output"].get("tool_calls", [])}
    assert calls == {"c1": "a1", "c2": "a1", "c3": "a1", "c4": "a5"}  # three parallel calls in one response
    results = [(e["id"], e["output"]["tool_call_id"]) for e in events if e["kind"] == "observation"]
    assert results == [("u1", "c3"), ("u2", "c2"), ("u3", "c1"), ("u4", "c4"), ("u5", "c9")]
    position = {e["id"]: e["sequence"] for e in events}
    for rid, cid in results[:4]:  # each after the event that made its call
        assert position[calls[cid]] < position[rid]
    assert "c9" not in calls


def test_relai_steps_put_each_result_on_the_step_of_its_call_and_warn_of_an_unpaired_one():
    records, st = _pairing_views()
    events = _kind(records, "event")
    notes = []
    steps = RT["atif_steps"](events, st.sem, notes)
    agent = [s for s in steps if s["source"] == "agent"]
    assert [[c["tool_call_id"] for c in s.get("tool_calls", [])] for s in agent] == [["c1", "c2", "c3"], ["c4"], []]
    on_first = [(r["source_call_id"], r["content"]) for r in agent[0]["observation"]["results"]]
    assert on_first == [("c3", "contents of c"), ("c2", "contents of b"), ("c1", "contents of a")]
    second = agent[1]["observation"]["results"]
    assert second[0] == {"source_call_id": "c4", "content": "d is fine"}
    assert second[1]["extra"] == {"tool_call_id": "c9"} and "source_call_id" not in second[1]
    assert notes == ["event 'u5': the tool result for call 'c9' answers no call an earlier event made; kept on the "
                     "step before it, as extra.tool_call_id; hint: check the spec's tool_calls ids and tool_call_id, "
                     "and the trace"]


def test_capevolve_tool_calls_get_their_results_and_warn_of_an_unpaired_one():
    records, st = _pairing_views()
    notes = []
    calls = RT["capevolve_tool_calls"](_kind(records, "event"), st.sem, notes)
    assert [(c["id"], c["result"]) for c in calls] == sorted(PAIRS.items())
    assert len(notes) == 1 and "'c9'" in notes[0] and notes[0].endswith(
        "left out of tool_calls; hint: check the spec's tool_calls ids and tool_call_id, and the trace")


def test_generated_relai_runner_and_capevolve_adapter_pair_results(tmp_path):
    """The same, from the generated programs run as their hosts run them."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "relai"))
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "capevolve"))
    from capevolve_support import build_adapter, drive
    from relai_support import build_project, read_result, run_runner

    case = CASES / "pairing-by-id"
    project = tmp_path / "relai"
    project.mkdir()
    shutil.copy(case / "session-1.jsonl", project / "session-1.jsonl")
    built = build_project(case / "spec.yaml", project)
    assert built.ok, [d.format() for d in built.diagnostics]
    proc = run_runner(project, "pairing-by-id", "session-1", tmp_path / "result.json")
    assert proc.returncode == 0, proc.stderr
    steps = read_result(tmp_path / "result.json")["trace"]["steps"]
    by_call = {r["source_call_id"]: s["step_id"] for s in steps for r in s.get("observation", {}).get("results", [])
               if "source_call_id" in r}
    made = {c["tool_call_id"]: s["step_id"] for s in steps for c in s.get("tool_calls", [])}
    assert by_call == made and set(made) == set(PAIRS)
    assert "the tool result for call 'c9' answers no call" in proc.stderr

    adapters = tmp_path / "cap" / "adapters"
    build_adapter(case / "spec.yaml", adapters)
    work = tmp_path / "cap" / "work"  # (the recorded trace is copied next to the adapter)
    work.mkdir()
    (rollout,) = drive(adapters, [{"op": "run", "task": "session-1"}], cwd=work)[0]
    assert rollout.get("error") is None, rollout
    assert [(c["id"], c["result"]) for c in rollout["tool_calls"]] == sorted(PAIRS.items())
    assert len(rollout["metadata"]["pairing_warnings"]) == 1


# -- the real Claude Code transcript against its ground truth ------------------------------------


@pytest.fixture(scope="module")
def claude_code_spec() -> Path:
    """A spec for Claude Code transcripts with `merge` and totals (not yet a library spec); its
    fixture is the transcript's first 24 lines."""
    spec = ROOT / "tests" / "cases" / "recipes" / "claude-code-transcript" / "spec.yaml"
    lines = TRANSCRIPT.read_bytes().splitlines(keepends=True)
    assert (spec.parent / "transcript-head.jsonl").read_bytes() == b"".join(lines[:24])
    return spec


@pytest.mark.parametrize("trace", [TRANSCRIPT, SUBAGENT], ids=["main", "subagent"])
def test_claude_code_transcript_matches_its_ground_truth(claude_code_spec, trace):
    rel = trace.relative_to(CORPUS).as_posix()
    truth = TRUTH[rel] if rel in TRUTH else next(
        s for t in TRUTH.values() for s in t.get("subagents", ()) if s["file"] == rel)
    result = mapc.run(claude_code_spec, trace)
    assert result.ok and result.warnings == 0, (result.error, result.warning_messages)
    events = _kind(result.records, "event")
    generations = [e for e in events if e["kind"] == "generation"]
    assert len(generations) == truth["model_responses"]  # one per distinct message.id (34 in the main file)
    calls = [c["id"] for e in generations for c in e["output"].get("tool_calls", [])]
    assert len(calls) == len(set(calls)) == truth["tool_calls"]
    results = [e["output"]["tool_call_id"] for e in events if e["kind"] == "observation"]
    assert sorted(results) == sorted(calls) and len(results) == truth["pairs"]  # every result paired
    assert len([e for e in events if e["kind"] == "message"]) == truth["user_prompts"]
    totals = {s["name"]: s["value"] for s in _kind(result.records, "signal")}
    assert totals == {"input_tokens": truth["tokens"]["input"], "output_tokens": truth["tokens"]["output"],
                      "cache_read_tokens": truth["tokens"]["cache_read"],
                      "cache_write_tokens": truth["tokens"]["cache_creation"]}
    if trace == TRANSCRIPT:  # the numbers SESSIONS.md gives, and Harbor's result.json
        assert (len(generations), totals["output_tokens"], totals["cache_read_tokens"]) == (34, 9310, 736296)


def test_real_rlviz_accepts_the_merged_claude_code_transcript(claude_code_spec, tmp_path):
    rlviz = hosts.require_rlviz()
    mapc.build(claude_code_spec, "rlviz", tmp_path / "plugin", validate=False, test=False)
    proc = subprocess.run([str(rlviz), "--json", str(tmp_path / "plugin"), str(TRANSCRIPT)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    # run, case, group, trajectory, 34 + 1 + 39 events, 4 totals
    assert report["records"] == 4 + 74 + 4 and report["warnings"] == 0, report


# -- the runtime units alone ---------------------------------------------------------------------
class _State:
    """What MergedElements needs of a MapState: warnings and the line's kept JSON text."""

    def __init__(self):
        self.warnings, self.messages, self.source_text = 0, [], (None, None)


def _merge(items, fields=(), most=1, key="k"):
    merged = RT["MergedElements"](_State(), lambda el, s, at: el.get(key), {}, "records.events.merge",
                                  tuple(fields), most)
    return [el for _, el in merged.elements(items)], merged


def test_one_key_on_every_line_is_not_one_element_of_the_whole_file():
    """What one group gathers is bounded as what is held behind it is: a key shared by every
    line (`by: sessionId`) closes after 10,000 lines, with merge_split when it comes again."""
    bound = RT["MERGE_HELD_LINES"]
    out, merged = _merge([{"k": "s", "n": n} for n in range(bound + 5)], [(("n",), "collect")])
    assert [len(el["n"]) for el in out] == [bound + 1, 4]
    assert merged.st.warnings == 1 and "merge_split: key 's' (elements 0-10000)" in merged.st.messages[0]


def _runs(items, fields=((("n",), "collect"),)):
    """A merge without `by` over ``items``: `j` joins the run, `e` ends it, anything else waits."""
    key_of = {"j": True, "e": False}
    merged = RT["MergedElements"](_State(), lambda el, s, at: key_of.get(el["t"]), {}, "records.events.merge",
                                  tuple(fields), runs=True)
    return [(pos, el) for pos, el in merged.elements(items)], merged


def test_runs_of_consecutive_elements_end_where_until_holds_and_the_rest_waits():
    items = [{"t": t, "n": n} for n, t in enumerate(["w", "j", "w", "j", "j", "e", "j", "e", "e", "j"])]
    out, merged = _runs(items)
    assert [(pos, el["t"], el["n"]) for pos, el in out] == [
        (0, "w", 0),                 # nothing open: straight through
        (1, "j", [1, 3, 4]),         # a run, at its first element
        (2, "w", 2),                 # waited behind it
        (5, "e", 5),                 # ended it, alone
        (6, "j", [6]), (7, "e", 7), (8, "e", 8), (9, "j", [9])]
    assert merged.st.warnings == 0 and merged.info()["key"] == 9  # a run's key: its first position


def test_a_run_longer_than_the_bound_goes_on_as_another_element_with_a_warning():
    bound = RT["MERGE_HELD_LINES"]
    out, merged = _runs([{"t": "j", "n": n} for n in range(bound + 5)])
    assert [len(el["n"]) for _, el in out] == [bound + 1, 4]
    assert merged.st.warnings == 1 and "merge_split: key 0 (elements 0-10000)" in merged.st.messages[0]


def test_merge_and_carry_on_any_loop(tmp_path):
    """Beside `each` over an array, on an item of a list of loops, and on CSV rows."""
    (tmp_path / "doc.json").write_text(json.dumps({"turns": [
        {"model": "m1", "chunks": [{"id": "a", "t": "x"}, {"id": "a", "t": "y"}, {"id": "b", "t": "z"}]},
        {"chunks": [{"id": "a", "t": "w"}]}]}))
    (tmp_path / "array.yaml").write_text("""\
mapc: 1
name: array-merge
source: {format: demo, container: json, probe: {require: [turns]}}
records:
  events:
    each:
      - {each: turns, as: turn, carry: {model: model}}
      - {each: chunks, merge: {by: id, fields: {t: concat}}}
    kind: log
    data: {t: t, model: $carry.model, first: $merged.first_line, lines: $merged.lines}
""")
    result = mapc.run(tmp_path / "array.yaml", tmp_path / "doc.json")
    assert result.ok, result.error
    assert [(e["id"], e["data"]) for e in _kind(result.records, "event")] == [
        ("evt@0.0", {"t": "xy", "model": "m1", "first": 0, "lines": 2}),
        ("evt@0.2", {"t": "z", "model": "m1", "first": 2, "lines": 1}),
        ("evt@1.0", {"t": "w", "model": "m1", "first": 0, "lines": 1}),  # carried from the turn before
    ]
    (tmp_path / "rows.csv").write_text("turn,text,tokens\n1,Hel,3\n1,lo,4\n2,Bye,1\n")
    (tmp_path / "csv.yaml").write_text("""\
mapc: 1
name: csv-merge
source: {format: demo-rows, container: csv, columns: {tokens: number}, probe: {require: [turn]}}
records:
  events:
    each: "@"
    merge: {by: turn, fields: {text: concat, tokens: sum}}
    kind: log
    data: {text: text, tokens: tokens, span: "[$source.line, $source.byte_offset, $source.byte_length]"}
""")
    result = mapc.run(tmp_path / "csv.yaml", tmp_path / "rows.csv")
    assert result.ok, result.error
    assert [e["data"] for e in _kind(result.records, "event")] == [
        {"text": "Hello", "tokens": 7, "span": [2, 17, 14]}, {"text": "Bye", "tokens": 1, "span": [4, 32, 7]}]
    assert (tmp_path / "rows.csv").read_bytes()[17:17 + 14] == b"1,Hel,3\n1,lo,4"  # rows 2 and 3


def test_carried_names_python_reserves_are_data(tmp_path):
    """A carried name is any identifier (`class`, `carry`, `None`): never code."""
    (tmp_path / "t.jsonl").write_text('{"class": "a", "carry": 1}\n{"None": true}\n')
    (tmp_path / "spec.yaml").write_text("""\
mapc: 1
name: carry-names
source: {format: demo, container: jsonl, probe: {when: "type(@) == 'object'"}}
records:
  events:
    each: "@"
    carry: {class: '"class"', carry: carry, None: '"None"'}
    kind: log
    data: "$carry"
""")
    result = mapc.run(tmp_path / "spec.yaml", tmp_path / "t.jsonl")
    assert result.ok, result.error
    assert [e["data"] for e in _kind(result.records, "event")] == [
        {"class": "a", "carry": 1, "None": None}, {"class": "a", "carry": 1, "None": True}]


def test_a_merged_element_never_changes_the_objects_it_came_from():
    first = {"k": "a", "m": {"parts": [1], "usage": {"n": 1}}, "keep": {"x": 1}}
    second = {"k": "a", "m": {"parts": [2], "usage": {"n": 2}}}
    before = json.dumps([first, second], sort_keys=True)
    (out,), _ = _merge([first, second], [(("m", "parts"), "concat"), (("m", "usage"), "sum")])
    assert out["m"] == {"parts": [1, 2], "usage": {"n": 3}}
    assert json.dumps([first, second], sort_keys=True) == before
    assert out["keep"] is first["keep"]  # what is not merged is shared, not copied


def test_keys_merge_as_json_compares_them():
    items = [{"k": 1, "v": "int"}, {"k": True, "v": "bool"}, {"k": 1.0, "v": "float"},
             {"k": {"b": 1, "a": 2}, "v": "object"}, {"k": {"a": 2, "b": 1}, "v": "same object"}]
    out, _ = _merge(items, [(("v",), "collect")], most=8)
    assert [el["v"] for el in out] == [["int", "float"], ["bool"], ["object", "same object"]]


def test_closed_keys_are_remembered_within_a_bound():
    bound = RT["MERGE_RECENT_KEYS"]
    items = [{"k": n} for n in range(bound + 10)] + [{"k": 0}, {"k": bound + 9}]
    _, merged = _merge(items)
    assert len(merged.recent) <= bound
    # the oldest closed key is forgotten (no warning); the newest is not
    assert merged.st.warnings == 1 and "key 11" not in merged.st.messages[0]


def test_the_fallback_call_ids_are_found_in_linear_probes():
    """A call without an id gets call_N, N past the calls so far and free; with ids such as
    call_K taken above that, searching from (calls so far) each time tested every taken id again
    (8,000 calls: 9.95 s against 0.48 s for 2,000). The numbering is the old one."""
    atif_add_call, calls_cls = RT["atif_add_call"], RT.get("AtifCalls", dict)  # (dict: before the fix)

    class Counting(calls_cls):
        probes = 0

        def __contains__(self, key):
            self.probes += 1
            return super().__contains__(key)

    def old_numbering(calls):
        seen, ids = {}, []
        for call in calls:
            n = len(seen) + 1
            while f"call_{n}" in seen:
                n += 1
            cid = call.get("id") or f"call_{n}"
            seen[cid] = 1
            ids.append(cid)
        return ids

    for size in (2000, 8000):
        # explicit ids call_2N .. call_N+1 (taken, above the count), then calls without ids
        calls = [{"id": f"call_{2 * size - k}", "name": "f"} for k in range(size)] + [{"name": "g"}] * size
        seen = Counting()
        ids = [atif_add_call({}, call, seen) for call in calls]
        assert ids == old_numbering(calls)
        assert seen.probes <= 4 * len(calls), (size, seen.probes)


def test_a_spec_without_merge_or_counters_never_imports_their_part(tmp_path):
    plain, merging = tmp_path / "plain", tmp_path / "merging"
    mapc.build(CASES / "signal-when-on-an-event" / "spec.yaml", "rlviz", plain, validate=False, test=False)
    mapc.build(CASES / "merge-consecutive" / "spec.yaml", "rlviz", merging, validate=False, test=False)
    entry = (plain / "adapter.py").read_text()
    assert "MergedElements" not in entry and "sessions_rt" not in entry
    assert "from mapc_runtime.sessions_rt import MergedElements" in (merging / "adapter.py").read_text()
    # the merge code is a module of its own, which sessions_rt's MergedElements imports on its
    # first call; the counters stay in sessions_rt
    merge = (plain / "mapc_runtime" / "merge.py").read_text()
    sessions = (plain / "mapc_runtime" / "sessions_rt.py").read_text()
    assert "class MergedElements" in merge and "def count_total" not in merge
    assert "def count_total" in sessions and "    from .merge import MergedElements as merged" in sessions


def test_the_session_log_recipes_of_the_reference_map_the_corpus(tmp_path):
    """docs/spec-reference.md's "Agent session logs" examples, as written there, on the corpus."""
    import re

    text = (ROOT / "docs" / "spec-reference.md").read_text(encoding="utf-8").split("### Agent session logs", 1)[1]
    claude, codex = re.findall(r"```yaml\n(.*?)```", text, re.S)
    for name, fmt, body in (("claude", "claude-code-transcript", claude), ("codex", "codex-rollout", codex)):
        (tmp_path / f"{name}.yaml").write_text(
            f"mapc: 1\nname: {name}\nsource: {{format: {fmt}, container: jsonl, probe: {{require: [type]}}}}\n"
            + body, encoding="utf-8")
    result = mapc.run(tmp_path / "claude.yaml", TRANSCRIPT)
    assert result.ok and result.warnings == 0, result.error
    generations = [e for e in _kind(result.records, "event") if e["kind"] == "generation"]
    totals = {s["name"]: s["value"] for s in _kind(result.records, "signal")}
    assert (len(generations), totals) == (34, {"output_tokens": 9310, "cache_read_tokens": 736296})
    rollout = CORPUS / "codex-rollout" / "atif-make" / "codex-rollout.jsonl"
    truth = TRUTH["codex-rollout/atif-make/codex-rollout.jsonl"]["tokens"]
    result = mapc.run(tmp_path / "codex.yaml", rollout)
    assert result.ok and result.warnings == 0, result.error
    totals = {s["name"]: s["value"] for s in _kind(result.records, "signal")}
    assert totals == {"input_tokens": truth["input"], "output_tokens": truth["output"]} == {
        "input_tokens": 400, "output_tokens": 40}
    kinds = [e["kind"] for e in _kind(result.records, "event")]
    assert kinds.count("tool") == kinds.count("observation") == 1
