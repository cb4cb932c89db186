"""The capevolve_rt runtime units: tasks, picking a trajectory, tool calls, usage, scoring, gold scrubbing.

The units run here exactly as generated adapters carry them: all runtime
units executed into one namespace (``mapc.runtime.namespace``).
"""

from __future__ import annotations

import json
import math
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mapc.core import runtime_files as runtime

RT = runtime.namespace()

TABLE = [
    {"id": "right", "description": "Right answer", "min": 0.0, "max": 1.0, "primary": True,
     "direction": "higher", "weight": 3.0},
    {"id": "turns", "description": "Turns taken", "min": 0.0, "max": 10.0, "primary": False,
     "direction": "lower", "weight": 1.0},
]


def evaluation(eid, score, low=0.0, high=1.0, feedback="fine"):
    return {"evaluator_id": eid, "score": score, "feedback": feedback, "min_score": low, "max_score": high}


# --- tasks -----------------------------------------------------------------------------------


def test_split_without_assignments_is_the_full_set_for_every_split():
    rows = [{"id": "a"}, {"id": "b"}]
    for split in ("train", "val", "test", "all"):
        assert RT["capevolve_split"](rows, split) == rows
    with pytest.raises(ValueError, match="unknown split 'dev'"):
        RT["capevolve_split"](rows, "dev")


def test_split_with_assignments_filters_and_all_is_everything():
    rows = [{"id": "a", "split": "train"}, {"id": "b", "split": "val"}, {"id": "c", "split": "val"}]
    assert [r["id"] for r in RT["capevolve_split"](rows, "val")] == ["b", "c"]
    assert RT["capevolve_split"](rows, "test") == []
    assert [r["id"] for r in RT["capevolve_split"](rows, "all")] == ["a", "b", "c"]


def test_task_fields_are_fresh_copies_with_tags_in_metadata():
    row = {"id": "a", "input": {"q": [1]}, "target": {"x": 1}, "metadata": {"level": 2, "tags": ["own"]},
           "tags": ["t"], "description": "d"}
    first = RT["capevolve_task_fields"](row)
    assert first == {"id": "a", "input": {"q": [1]}, "target": {"x": 1},
                     "metadata": {"level": 2, "tags": ["own"], "description": "d"}}  # the user's key wins
    first["input"]["q"].append(2)
    first["metadata"]["level"] = 9
    assert RT["capevolve_task_fields"](row)["input"] == {"q": [1]} and row["metadata"]["level"] == 2


def test_task_scope_takes_input_and_target_from_the_task_given():
    row = {"id": "a", "input": "old", "target": "old", "tags": ["x"], "split": "val"}
    assert RT["capevolve_task_scope"](row, "a", "new in", "new target") == {
        "id": "a", "input": "new in", "target": "new target", "metadata": {}, "tags": ["x"],
        "split": "val", "description": None}
    assert RT["capevolve_task_scope"](None, "zz", 1, 2)["tags"] == []


# --- run_target pieces -----------------------------------------------------------------------


def entry(tid, group):
    return {"record": {"record_type": "trajectory", "id": tid, "group_id": group}, "events": [], "signals": [],
            "artifacts": []}


def test_pick_matches_the_task_and_walks_its_trials_by_seed():
    records = [{"record_type": "group", "id": "g1", "case_id": "task-1"},
               {"record_type": "group", "id": "g2", "case_id": "task-2"}]
    entries = [entry("t1a", "g1"), entry("t2a", "g2"), entry("t1b", "g1")]
    pick = RT["capevolve_pick"]
    assert [pick(entries, records, "task-1", seed)[0]["record"]["id"] for seed in range(4)] == ["t1a", "t1b"] * 2
    assert pick(entries, records, "t2a", 5)[0]["record"]["id"] == "t2a"  # a trajectory id also matches
    assert pick(entries[:1], records, "anything", 3)[0]["record"]["id"] == "t1a"  # one trajectory answers any task
    none, why = pick(entries, records, "task-9", 0)
    assert none is None and "holds 3 trajectories and none has the task id 'task-9'" in why
    assert pick([], records, "x", 0) == (None, "the trace holds no trajectory")


def test_tool_calls_come_from_turns_tool_events_and_results():
    events = [{"id": e} for e in ("e1", "e2", "e3", "e4", "e5")]
    sem = {
        "e1": {"kind": "generation", "role": "assistant",
               "tool_calls": [{"id": "c1", "name": "search", "arguments": {"q": "x"}}, "junk"]},
        "e2": {"kind": "observation", "tool_call_id": "c1", "content": [{"type": "text", "text": "found"}]},
        "e3": {"kind": "tool", "tool_name": "calc", "arguments": {"e": "1+1"}, "tool_call_id": "c2",
               "result": {"value": 2}},
        "e4": {"kind": "observation", "tool_call_id": "unknown", "content": "ignored"},
        "e5": {"kind": "message", "role": "user", "content": "x" * 5000, "tool_call_id": "c1"},
    }
    calls = RT["capevolve_tool_calls"](events, sem)
    assert calls[0] == {"id": "c1", "name": "search", "arguments": {"q": "x"}, "result": "x" * 997 + "..."}
    assert calls[1] == {"id": "c2", "name": "calc", "arguments": {"e": "1+1"}, "result": '{"value": 2}'}
    assert len(calls) == 2
    assert RT["capevolve_tool_calls"](events, None) == []


def test_usage_is_a_finite_nonnegative_number_or_zero_with_a_note():
    scope = {"signals": {"cost": 0.25, "tokens": 12.6, "bad": "lots"}}
    fns = {"cost_usd": lambda s, v: s["signals"]["cost"], "tokens": lambda s, v: s["signals"]["tokens"]}
    assert RT["capevolve_usage"](fns, scope, {}) == (0.25, 13, [])
    bad = {"cost_usd": lambda s, v: s["signals"]["bad"], "tokens": lambda s, v: 1 / 0}
    cost, tokens, notes = RT["capevolve_usage"](bad, scope, {})
    assert (cost, tokens) == (0.0, 0)
    assert "usage.cost_usd gave string 'lots'" in notes[0] and "usage.tokens failed: division by zero" in notes[1]
    assert RT["capevolve_usage"]({"cost_usd": lambda s, v: math.inf}, scope, {})[0] == 0.0
    assert RT["capevolve_usage"]({}, scope, {}) == (0.0, 0, [])


def test_error_rollouts_are_one_bounded_line():
    fields = RT["capevolve_error_rollout"]("t", "line one\nline two " + "x" * 1000)
    assert fields["task_id"] == "t" and "\n" not in fields["error"] and len(fields["error"]) == 500


def test_candidate_is_made_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    from pathlib import Path

    assert RT["capevolve_candidate"](Path("cand")) == str(tmp_path / "cand")
    assert RT["capevolve_candidate"](None) == str(tmp_path)
    assert RT["capevolve_candidate"](object.__new__(object)).startswith("<object")


def test_the_rollout_scope_equals_the_scope_run_target_evaluated(tmp_path):
    """score() rebuilds the evaluation scope from Rollout.trace: it must be the same object."""
    from mapc.pipeline.build import mapping_namespace
    from mapc.spec import load_spec

    from capevolve_support import EXAMPLE

    spec, _ = load_spec(EXAMPLE / "spec.yaml")
    ns = mapping_namespace(spec)
    src = ns["SourceFile"](str(EXAMPLE / "recorded" / "gpt-4o-airline.truncated.json"), None,
                           ns["MAX_BYTES"], ns["MAX_LINE_BYTES"])
    records, state = RT["collect_records"](ns["map_source"], src)
    entries = RT["group_trajectories"](records)
    task = {"id": "airline-6", "target": {"actions": []}}
    for e in entries:
        scope = RT["evaluation_scope"](e, state, task)
        trace = json.loads(json.dumps(RT["capevolve_trace"](e, "fmt")))  # through JSON, as cap-evolve saves it
        assert RT["capevolve_scope"](scope["output"], trace, task) == scope


# --- scoring ----------------------------------------------------------------------------------


@pytest.mark.parametrize("how, expected", [
    ("mean", (1 + 0.8) / 2), ("primary", 1.0), ("min", 0.8), ("weighted", (3 * 1 + 1 * 0.8) / 4)])
def test_reward_inverts_lower_is_better_and_combines(how, expected):
    evals = [evaluation("right", 1.0), evaluation("turns", 2, 0.0, 10.0)]
    assert RT["capevolve_reward"](evals, [], TABLE, how) == pytest.approx(expected)


def test_an_evaluator_that_could_not_score_counts_as_its_worst():
    errors = [{"evaluator_id": "turns", "message": "score expression gave null"}]
    assert RT["capevolve_reward"]([evaluation("right", 1.0)], errors, TABLE, "mean") == pytest.approx(0.5)
    assert RT["capevolve_reward"]([], errors, TABLE, "primary") == 0.0
    assert RT["capevolve_reward"]([], [], TABLE, "mean") == 0.0


def test_metrics_catalog_follows_the_rules_and_avoids_name_clashes():
    table = TABLE + [{"id": "reward", "description": "R", "min": 0.0, "max": 5.0, "primary": False,
                      "direction": "higher", "weight": 1.0},
                     {"id": "cost_usd", "description": "C", "min": 0.0, "max": 5.0, "primary": False,
                      "direction": "lower", "weight": 1.0}]
    evals = [evaluation("right", 1.0), evaluation("turns", 4, 0.0, 10.0), evaluation("reward", 2, 0.0, 5.0),
             evaluation("cost_usd", 3, 0.0, 5.0)]
    metrics = RT["capevolve_metrics"](0.7, evals, table, [("cost_usd", 0.5), ("tokens", 10), ("x", math.nan)])
    assert [(m["name"], m["value"], m["primary"], m["direction"]) for m in metrics] == [
        ("reward", 0.7, True, "higher"), ("right", 1.0, False, "higher"), ("turns", 4, False, "lower"),
        ("reward (evaluator)", 2, False, "higher"), ("cost_usd", 3, False, "lower"),
        ("cost_usd (usage)", 0.5, False, "lower"), ("tokens", 10, False, "lower")]
    same = RT["capevolve_metrics"](1.0, [evaluation("reward", 1.0)], table, [])
    assert [m["name"] for m in same] == ["reward"]  # an evaluator named reward equal to it is not repeated


def test_feedback_explains_each_evaluator_and_what_was_missing():
    evals = [evaluation("right", 0.0, feedback="Answer was Paris, expected Paris.")]
    errors = [{"evaluator_id": "turns", "message": "score expression gave null (is the data it reads missing?)"}]
    text = RT["capevolve_feedback"](0.0, evals, errors, TABLE, "weighted", False, "Paris")
    assert text.splitlines() == [
        "Reward 0.00: the weighted mean of 2 evaluator score(s), each scaled to 0-1 by its range "
        "(lower-is-better scores inverted).",
        "This rollout has no trace, only its output: evaluators that read the trace's signals or events had "
        "nothing to read.",
        "- right (Right answer): 0.00 on a 0.00 to 1.00 scale. Answer was [withheld], expected [withheld].",
        "- turns (Turns taken; lower is better): not scored (score expression gave null (is the data it reads "
        "missing?)); counted as its worst score.",
    ]


def test_fallback_feedback_is_not_repeated():
    evals, _ = RT["score_evaluators"]((lambda s, v: (0.5, None),), TABLE[:1], {}, {})
    text = RT["capevolve_feedback"](0.5, evals, [], TABLE[:1], "mean", True, None)
    assert text.splitlines()[-1] == "- right (Right answer): 0.50 on a 0.00 to 1.00 scale."


def test_score_of_an_errored_rollout_is_zero_with_the_reason():
    fields = RT["capevolve_score"]("t", {"error": "the agent exited with status 3: Paris"}, {"target": "Paris"}, {})
    assert fields["reward"] == 0.0 and fields["metrics"][0]["value"] == 0.0
    assert fields["feedback"].endswith("not because of the answer: the agent exited with status 3: [withheld]")


def test_scoring_failure_is_zero_with_the_reason():
    fields = RT["capevolve_scoring_failure"]("t", KeyError("Paris"), "Paris")
    assert fields["reward"] == 0.0 and "[withheld]" in fields["feedback"] and "Paris" not in fields["feedback"]


# --- gold scrubbing ---------------------------------------------------------------------------


@pytest.mark.parametrize("target, text, expected", [
    ("Paris", "It is paris, PARIS or Paris!", "It is [withheld], [withheld] or [withheld]!"),
    ("Paris", "Parisian Paris-based", "Parisian [withheld]-based"),
    ("New  York", "new\nyork city", "[withheld] city"),
    (42, "42, 420, 4.2, 42.0, 1.42 and 42.", "[withheld], 420, 4.2, [withheld], 1.42 and [withheld]."),
    (0, "Reward 0.00: 0-1 10", "Reward [withheld]: [withheld]-1 10"),
    (3.14159, "pi is 3.142 or 3.14159", "pi is [withheld] or [withheld]"),
    (2.0, "2 or 2.0 or 2.05", "[withheld] or [withheld] or 2.05"),
    (True, "it is true", "it is [withheld]"),
    ({"id": "Z7GOZK", "ok": True, "n": [7]}, "Z7GOZK ok true 7 17", "[withheld] ok true [withheld] 17"),
    ({"a": "x"}, 'target {"a": "x"}; x', "target [withheld]; [withheld]"),
    (0.5, "0.5 0.50 .5 10.5", "[withheld] [withheld] .5 10.5"),
    (None, "None null", "None null"),
    ("", "empty", "empty"),
    ("a.b", "a.b or axb", "[withheld] or axb"),
])
def test_scrub_gold(target, text, expected):
    assert RT["capevolve_scrub_gold"](text, target) == expected


def test_gold_forms_include_json_of_structured_targets():
    forms = RT["capevolve_gold_forms"]({"k": [1, "two"]})
    assert '{"k": [1, "two"]}' in forms and '{"k":[1,"two"]}' in forms and "two" in forms and "1" in forms
    assert forms == sorted(forms, key=lambda f: (-len(f), f))


def _leaks(feedback: str, target) -> list[str]:
    """Independent check: leaf texts of the target found as whole tokens in ``feedback``."""
    found = []
    stack = [target]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
        elif isinstance(value, (str, int, float)) and not isinstance(value, bool):
            text = " ".join(str(value).split())
            if text and re.search(r"(?<![\w.])" + re.escape(text).replace(r"\ ", r"\s+") + r"(?![\w]|\.\d)",
                                  feedback, re.IGNORECASE):
                found.append(text)
    return found


distinctive_text = st.from_regex(r"[A-Za-z][A-Za-z0-9]{4,11}[0-9]", fullmatch=True)
distinctive_number = st.one_of(st.integers(min_value=10_000, max_value=10**9),
                               st.floats(min_value=1000.5, max_value=1e6).map(lambda x: round(x, 3)))
distinctive_leaf = st.one_of(distinctive_text, distinctive_number)
distinctive_target = st.recursive(
    distinctive_leaf,
    lambda inner: st.one_of(st.lists(inner, min_size=1, max_size=3),
                            st.dictionaries(st.sampled_from(["answer", "id", "items"]), inner, min_size=1)),
    max_leaves=6,
)


@settings(max_examples=150, deadline=None)
@given(target=distinctive_target, before=st.text(max_size=20), after=st.text(max_size=20))
def test_feedback_never_contains_the_gold_target(target, before, after):
    """Whatever the target (text, number, nested) and whatever echoes it, feedback withholds it."""
    echoed = before + (target if isinstance(target, str) else json.dumps(target)) + after
    table = [{"id": "echo", "description": "Echoes output and target", "min": 0.0, "max": 1.0,
              "primary": True, "direction": "higher", "weight": 1.0}]

    def echo(scope, variables):
        return 0, f"output {RT['template_text'](scope['output'])}; expected {RT['template_text'](scope['task']['target'])}"

    program = {"functions": (echo,), "evaluators": table, "combine": "mean", "usage": {}, "tables": {}}
    task = RT["capevolve_task_scope"](None, "t", None, target)
    fields = RT["capevolve_score"]("t", {"output": echoed, "trace": None}, task, program)
    assert _leaks(fields["feedback"], target) == []
    errored = RT["capevolve_score"]("t", {"error": f"crashed on {echoed}"}, task, program)
    assert _leaks(errored["feedback"], target) == []


@settings(max_examples=100, deadline=None)
@given(target=st.one_of(st.integers(min_value=0, max_value=12), st.sampled_from(["A", "b", "yes", "no", "0"])),
       before=st.sampled_from(["", "The answer is ", "x "]))
def test_short_targets_are_withheld_from_data_but_not_from_the_frame(target, before):
    """A target like 0 or A may equal text of the feedback's own frame; the data never shows it."""
    table = [{"id": "echo", "description": "Echoes the output", "min": 0.0, "max": 10.0,
              "primary": True, "direction": "higher", "weight": 1.0}]
    program = {"functions": (lambda s, v: (1, f"said {s['output']}"),), "evaluators": table, "combine": "mean",
               "usage": {}, "tables": {}}
    output = f"{before}{target}"
    real = RT["capevolve_score"]("t", {"output": output}, RT["capevolve_task_scope"](None, "t", None, target), program)
    other = RT["capevolve_score"]("t", {"output": output}, RT["capevolve_task_scope"](None, "t", None, "zzqx"), program)
    assert real["feedback"].endswith("said " + before + "[withheld]")
    frame = lambda text: text.rsplit("said ", 1)[0]  # noqa: E731
    assert frame(real["feedback"]) == frame(other["feedback"])
