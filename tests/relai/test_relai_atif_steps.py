"""ATIF steps from canonical events (runtime units of generated runners, run in-process).

Every converted trajectory is checked twice: with the `atif` package (what RELAI
builds from trace.steps) and with mapc's own stdlib step rules.
"""

from __future__ import annotations

import pytest

from relai_support import atif_trajectory
from mapc.core import runtime_files as runtime
from mapc.targets.atif_rules import step_problems

RT = runtime.namespace()
atif_steps = RT["atif_steps"]
atif_arguments = RT["atif_arguments"]


def convert(*events: dict) -> list[dict]:
    """Events given as semantic views; ids and timestamps are filled in."""
    canonical, sem = [], {}
    for n, info in enumerate(events):
        eid = f"evt@{n}"
        canonical.append({"id": eid, "timestamp": f"2025-01-01T00:00:{n:02d}Z"})
        sem[eid] = info
    steps = atif_steps(canonical, sem)
    assert step_problems(steps) == []
    atif_trajectory(steps)
    return steps


def test_chat_roles_become_step_sources_numbered_from_one():
    steps = convert(
        {"kind": "message", "role": "system", "content": "be brief"},
        {"kind": "message", "role": "user", "content": [{"type": "text", "text": "hi"}]},
        {"kind": "generation", "role": "assistant", "content": "hello", "model": "m1", "reasoning": "greet"},
    )
    assert [(s["step_id"], s["source"], s["message"]) for s in steps] == [
        (1, "system", "be brief"), (2, "user", "hi"), (3, "agent", "hello")]
    assert steps[2]["model_name"] == "m1" and steps[2]["reasoning_content"] == "greet"
    assert steps[0]["timestamp"] == "2025-01-01T00:00:00Z"
    assert steps[1]["extra"] == {"event_id": "evt@1"}


def test_agent_only_fields_stay_off_user_and_system_steps():
    steps = convert(
        {"kind": "message", "role": "user", "content": "x", "model": "m", "reasoning": "r",
         "tool_calls": [{"id": "c", "name": "f", "arguments": {}}]},
    )
    assert set(steps[0]) == {"step_id", "timestamp", "source", "message", "extra"}


def test_tool_results_attach_to_the_step_whose_call_they_answer():
    steps = convert(
        {"kind": "generation", "role": "assistant", "content": "",
         "tool_calls": [{"id": "a", "name": "search", "arguments": '{"q": "x"}'},
                        {"id": "b", "name": "open", "arguments": {"url": "u"}}]},
        {"kind": "generation", "role": "assistant", "content": "still thinking"},
        {"kind": "observation", "role": "tool", "tool_call_id": "b", "content": "page"},
        {"kind": "message", "role": "tool", "tool_call_id": "a", "content": {"hits": 1}},
    )
    assert len(steps) == 2
    first = steps[0]
    assert [c["arguments"] for c in first["tool_calls"]] == [{"q": "x"}, {"url": "u"}]
    assert first["observation"]["results"] == [
        {"source_call_id": "b", "content": "page"}, {"source_call_id": "a", "content": '{"hits": 1}'}]
    assert "observation" not in steps[1]


def test_unmatched_tool_result_keeps_its_id_as_extra_not_as_source_call_id():
    steps = convert(
        {"kind": "generation", "role": "assistant", "content": "calling"},
        {"kind": "observation", "role": "tool", "tool_call_id": "ghost", "content": "out"},
    )
    result = steps[0]["observation"]["results"][0]
    assert "source_call_id" not in result and result["extra"] == {"tool_call_id": "ghost"}


def test_tool_result_before_any_agent_turn_becomes_a_system_observation():
    steps = convert({"kind": "observation", "content": "environment ready"})
    assert steps[0]["source"] == "system" and steps[0]["message"] == ""
    assert steps[0]["observation"]["results"] == [{"content": "environment ready"}]


def test_single_tool_events_are_calls_of_the_current_agent_turn():
    steps = convert(
        {"kind": "generation", "role": "assistant", "content": "let me look"},
        {"kind": "tool", "tool_name": "ls", "arguments": "-la", "result": "a b", "tool_call_id": 7},
        {"kind": "message", "role": "user", "content": "thanks"},
        {"kind": "tool", "tool_name": "cat", "arguments": None},
    )
    assert [s["source"] for s in steps] == ["agent", "user", "agent"]
    call = steps[0]["tool_calls"][0]
    assert call == {"tool_call_id": "7", "function_name": "ls", "arguments": {"input": "-la"}}
    assert steps[0]["observation"]["results"] == [{"source_call_id": "7", "content": "a b"}]
    assert steps[2]["tool_calls"][0]["arguments"] == {} and steps[2]["message"] == ""
    assert steps[2]["tool_calls"][0]["tool_call_id"].startswith("call_")


def test_tool_event_answering_an_announced_call_is_not_duplicated():
    steps = convert(
        {"kind": "generation", "role": "assistant", "tool_calls": [{"id": "c1", "name": "f", "arguments": {}}]},
        {"kind": "tool", "tool_call_id": "c1", "tool_name": "f", "result": "done"},
    )
    assert len(steps[0]["tool_calls"]) == 1
    assert steps[0]["observation"]["results"] == [{"source_call_id": "c1", "content": "done"}]


def test_repeated_call_ids_match_the_latest_call():
    steps = convert(
        {"kind": "generation", "role": "assistant", "tool_calls": [{"id": "x", "name": "f", "arguments": {"n": 1}}]},
        {"kind": "observation", "role": "tool", "tool_call_id": "x", "content": "one"},
        {"kind": "generation", "role": "assistant", "tool_calls": [{"id": "x", "name": "f", "arguments": {"n": 2}}]},
        {"kind": "observation", "role": "tool", "tool_call_id": "x", "content": "two"},
    )
    assert [s["observation"]["results"][0]["content"] for s in steps] == ["one", "two"]


def test_openai_shaped_calls_and_missing_ids_are_accepted():
    steps = convert(
        {"kind": "generation", "role": "assistant",
         "tool_calls": [{"id": "o1", "type": "function", "function": {"name": "f", "arguments": "[1, 2]"}},
                        {"function_name": "g"}, "not-a-call"]},
    )
    calls = steps[0]["tool_calls"]
    assert calls[0] == {"tool_call_id": "o1", "function_name": "f", "arguments": {"input": [1, 2]}}
    assert calls[1]["function_name"] == "g" and calls[1]["arguments"] == {}
    assert calls[2]["arguments"] == {"input": "not-a-call"}
    assert len({c["tool_call_id"] for c in calls}) == 3


@pytest.mark.parametrize("kind", ["state", "reward", "grader", "artifact", "log"])
def test_non_conversation_events_are_not_steps(kind):
    assert convert({"kind": kind, "content": "x"}) == []


def test_error_events_are_system_steps_and_environment_actions_agent_steps():
    steps = convert({"kind": "error", "content": "sandbox crashed"},
                    {"kind": "environment_action", "content": "hit"})
    assert [(s["source"], s["message"]) for s in steps] == [("system", "sandbox crashed"), ("agent", "hit")]


def test_events_without_semantic_fields_are_skipped():
    assert atif_steps([{"id": "e1"}], {}) == []
    assert atif_steps([{"id": "e1"}], None) == []


@pytest.mark.parametrize("value, expected", [
    ({"a": 1}, {"a": 1}),
    ('{"a": 1}', {"a": 1}),
    ("plain text", {"input": "plain text"}),
    ("[1]", {"input": [1]}),
    ("  ", {}),
    (None, {}),
    (3, {"input": 3}),
])
def test_arguments_are_always_an_object(value, expected):
    assert atif_arguments(value) == expected
