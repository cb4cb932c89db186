"""Scoring a mapped trajectory: scope, range checks, reward combination."""

from __future__ import annotations

import math

import pytest

from mapc.runtime import eval_rt as rt

TABLE = [
    {"id": "a", "description": "A", "min": 0.0, "max": 1.0, "primary": True, "direction": "higher", "weight": 1.0},
    {"id": "b", "description": "B", "min": 0.0, "max": 5.0, "primary": False, "direction": "higher", "weight": 3.0},
]


def test_scores_are_checked_against_their_range():
    fns = (lambda s, v: (s["x"], None), lambda s, v: (s["y"], "fine"))
    evals, errors = rt.score_evaluators(fns, TABLE, {"x": True, "y": 4}, {})
    assert [e["score"] for e in evals] == [1.0, 4]
    assert evals[0]["feedback"]  # a default feedback is never empty
    for bad in (None, 6, math.nan, "high"):
        evals, errors = rt.score_evaluators(fns, TABLE, {"x": 0, "y": bad}, {})
        assert [e["evaluator_id"] for e in errors] == ["b"] and len(evals) == 1


def test_an_evaluator_that_raises_becomes_an_error():
    def boom(scope, variables):
        raise TypeError("bad type")

    evals, errors = rt.score_evaluators((boom,), TABLE[:1], {}, {})
    assert evals == [] and "bad type" in errors[0]["message"]


@pytest.mark.parametrize("how, expected", [("mean", (1 + 0.2) / 2), ("primary", 1.0), ("min", 0.2),
                                           ("weighted", (1 * 1 + 0.2 * 3) / 4)])
def test_combine_rewards(how, expected):
    evals = [{"evaluator_id": "a", "score": 1, "min_score": 0, "max_score": 1},
             {"evaluator_id": "b", "score": 1, "min_score": 0, "max_score": 5}]
    assert rt.combine_rewards(evals, TABLE, how) == pytest.approx(expected)


def test_content_text_and_default_final_output():
    assert rt.content_text([{"type": "text", "text": "a"}, {"text": "b"}, "c"]) == "a\nb\nc"
    events = [{"id": "e1"}, {"id": "e2"}, {"id": "e3"}]
    sem = {"e1": {"kind": "message", "role": "user", "content": "q"},
           "e2": {"kind": "generation", "content": "answer"},
           "e3": {"kind": "observation", "content": "tool out"}}
    assert rt.default_final_output(events, sem) == "answer"


def test_group_and_pick_trajectories():
    records = [
        {"record_type": "group", "id": "g1", "case_id": "task-1"},
        {"record_type": "trajectory", "id": "t1", "group_id": "g1"},
        {"record_type": "group", "id": "g2", "case_id": "task-2"},
        {"record_type": "trajectory", "id": "t2", "group_id": "g2"},
        {"record_type": "event", "id": "e", "trajectory_id": "t2"},
        {"record_type": "signal", "id": "s", "trajectory_id": "t2", "name": "reward", "value": 1},
    ]
    entries = rt.group_trajectories(records)
    assert [len(e["events"]) for e in entries] == [0, 1]
    assert rt.pick_trajectory(entries, records, "task-2")["record"]["id"] == "t2"
    assert rt.pick_trajectory(entries, records, "other")["record"]["id"] == "t1"
