"""mapc's stdlib ATIF step rules agree with the `atif` package on what is invalid."""

from __future__ import annotations

import copy

import pydantic
import pytest

from relai_support import atif_trajectory
from mapc.targets.atif_rules import step_problems

VALID = [
    {"step_id": 1, "source": "system", "message": "rules"},
    {"step_id": 2, "source": "user", "message": [{"type": "text", "text": "hi"}], "timestamp": "2025-01-01T00:00:00Z"},
    {"step_id": 3, "source": "agent", "message": "", "model_name": "m", "reasoning_content": "r",
     "tool_calls": [{"tool_call_id": "c", "function_name": "f", "arguments": {}}],
     "observation": {"results": [{"source_call_id": "c", "content": "out"}, {"content": None}]},
     "metrics": {"prompt_tokens": 3, "cost_usd": 0.1}, "extra": {"k": 1}, "llm_call_count": 1},
]

BAD = {
    "step_id_not_sequential": (1, "step_id", 5),
    "step_id_zero": (0, "step_id", 0),
    "unknown_source": (1, "source", "tool"),
    "missing_message": (0, "message", None),
    "message_not_text": (0, "message", {"text": "x"}),
    "model_name_on_user_step": (1, "model_name", "m"),
    "tool_calls_on_system_step": (0, "tool_calls", [{"tool_call_id": "c", "function_name": "f", "arguments": {}}]),
    "metrics_on_user_step": (1, "metrics", {"prompt_tokens": 1}),
    "reasoning_on_system_step": (0, "reasoning_content", "r"),
    "arguments_as_string": (2, "tool_calls", [{"tool_call_id": "c", "function_name": "f", "arguments": "{}"}]),
    "tool_call_without_id": (2, "tool_calls", [{"function_name": "f", "arguments": {}}]),
    "observation_names_unknown_call": (2, "observation", {"results": [{"source_call_id": "zzz", "content": "x"}]}),
    "observation_without_results": (2, "observation", {}),
    "unknown_step_field": (0, "role", "system"),
    "bad_timestamp": (0, "timestamp", "yesterday"),
    "text_part_without_text": (1, "message", [{"type": "text"}]),
    "image_part_without_source": (1, "message", [{"type": "image"}]),
    "negative_llm_call_count": (2, "llm_call_count", -1),
    "metrics_with_zero_llm_calls": (2, "llm_call_count", 0),
    "extra_not_an_object": (0, "extra", [1]),
}


def test_the_valid_steps_are_valid_for_both():
    atif_trajectory(copy.deepcopy(VALID))
    assert step_problems(copy.deepcopy(VALID)) == []


@pytest.mark.parametrize("name", sorted(BAD))
def test_each_broken_rule_is_rejected_by_both(name):
    index, key, value = BAD[name]
    steps = copy.deepcopy(VALID)
    if value is None:
        del steps[index][key]
    else:
        steps[index][key] = value
    with pytest.raises(pydantic.ValidationError):
        atif_trajectory(steps)
    problems = step_problems(steps)
    assert problems, f"mapc accepted a step the atif package rejects ({name})"
    assert all(path.startswith(f"trace.steps[{index}]") for path, _ in problems), problems


def test_steps_must_be_an_array_of_objects():
    assert step_problems({"step_id": 1}) == [("trace.steps", "must be an array of ATIF steps")]
    assert step_problems(["x"])[0][0] == "trace.steps[0]"


def test_stricter_than_pydantic_coercion():
    # pydantic would coerce "1" to 1; a strict reader (and mapc) does not
    steps = [{"step_id": "1", "source": "user", "message": "x"}]
    assert step_problems(steps)
