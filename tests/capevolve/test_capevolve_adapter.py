"""Generated cap-evolve adapters, imported and exercised for real in a fresh process.

Each test builds a spec from ``adapters/<case>/`` and drives the adapter the
way cap-evolve's harness does (``live()``, ``run_target``, ``score``), with
mapc's stand-in ``cap_evolve`` on the path and nothing else of mapc.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from capevolve_support import ADAPTERS, build_adapter, drive, host_env


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    """toy-calc built, plus a project folder holding the agent and two candidates."""
    base = tmp_path_factory.mktemp("toy")
    build_adapter(ADAPTERS / "toy-calc" / "spec.yaml", base / "adapters")
    project = base / "project"
    project.mkdir()
    shutil.copy(ADAPTERS / "toy-calc" / "agent.py", project / "agent.py")
    (project / "careful").mkdir()
    (project / "careful" / "prompt.txt").write_text("Always use the calculator. [CALC]\n")
    (project / "sloppy").mkdir()
    (project / "sloppy" / "prompt.txt").write_text("Answer quickly.\n")
    return base / "adapters", project


def test_tasks_honour_the_spec_splits(toy):
    adapters, project = toy
    results, proc = drive(adapters, [
        {"op": "tasks", "split": "all"}, {"op": "tasks", "split": "val"}, {"op": "tasks", "split": "val"},
        {"op": "tasks", "split": "train"}, {"op": "tasks", "split": "test"}, {"op": "tasks", "split": "dev"},
    ], cwd=project)
    all_, val, val2, train, test, dev = results
    assert [t["id"] for t in all_] == ["add-small", "add-big", "crash", "hang", "no-trace"]
    assert [t["id"] for t in val] == ["add-small", "add-big"] and val == val2
    assert [t["id"] for t in train] == ["crash", "hang"] and [t["id"] for t in test] == ["no-trace"]
    assert val[0] == {"id": "add-small", "input": {"expr": "2+3"}, "target": 5, "metadata": {"split": "val"}}
    assert "unknown split 'dev'" in dev["raised"]
    assert proc.stdout == b""


def test_a_good_candidate_runs_and_scores_with_seed_and_candidate_passed(toy):
    adapters, project = toy
    results, proc = drive(adapters, [
        {"op": "run", "task": "add-small", "ctx": "careful", "seed": 3},
        {"op": "score", "task": "add-small"},
        {"op": "score", "task": "add-small"},
    ], cwd=project)
    rollout, score, again = results
    assert rollout["error"] is None and rollout["output"] == "5"
    assert rollout["tool_calls"] == [{"id": "c1", "name": "calc", "arguments": {"expr": "2+3"}, "result": "5"}]
    assert rollout["cost_usd"] == 0.01 and rollout["tokens"] == 103
    assert rollout["metadata"]["seed"] == 3 and rollout["metadata"]["trace"] == "runs/add-small-3.jsonl"
    signals = {s["name"]: s["value"] for s in rollout["trace"]["signals"]}
    assert signals["seed"] == 3 and signals["seed_env"] == 3  # {seed} and agent.seed_env
    result_event = [e for e in rollout["trace"]["events"] if e["kind"] == "reward"][0]
    assert result_event["data"]["candidate_env"] == str((project / "careful").resolve())  # made absolute
    assert (project / "runs" / "add-small-3.jsonl").is_file()  # the trace lives in the project root
    assert score["reward"] == 1.0 and score == again
    assert score["metrics"] == [
        {"name": "reward", "value": 1.0, "primary": True, "direction": "higher"},
        {"name": "exact", "value": 1.0, "primary": False, "direction": "higher"},
        {"name": "used_calculator", "value": 1.0, "primary": False, "direction": "higher"},
        {"name": "cost_usd", "value": 0.01, "primary": False, "direction": "lower"},
        {"name": "tokens", "value": 103, "primary": False, "direction": "lower"},
    ]
    assert "Correct." in score["feedback"]
    assert proc.stdout == b""  # the agent's chatter stays in the agent's captured output


def test_a_task_the_adapter_does_not_know_scores_zero_with_the_reason(toy):
    """A perfect rollout scored under a task id missing from tasks.jsonl: reward 0, not 1.0."""
    adapters, project = toy
    results, _ = drive(adapters, [
        {"op": "run", "task": "add-small", "ctx": "careful"},
        {"op": "score", "task": "add-small"},
        {"op": "score", "task": "add-huge", "target": 5},
    ], cwd=project)
    _, known, unknown = results
    assert known["reward"] == 1.0
    assert unknown["reward"] == 0.0 and unknown["metrics"][0] == {
        "name": "reward", "value": 0.0, "primary": True, "direction": "higher"}
    assert unknown["feedback"] == ("Not scored (reward 0): unknown task 'add-huge': it is not among "
                                   "this adapter's 5 tasks.")


def test_a_bad_candidate_scores_low_and_the_feedback_withholds_the_answer(toy):
    adapters, project = toy
    results, _ = drive(adapters, [
        {"op": "run", "task": "add-big", "ctx": "sloppy", "seed": 0},
        {"op": "score", "task": "add-big"},
    ], cwd=project)
    rollout, score = results
    assert rollout["error"] is None and rollout["output"] == "I think 40+2 is about a hundred"
    assert rollout["tool_calls"] == []
    assert score["reward"] == 0.0
    # the template says "expected answer was {$task.target}": scrubbed
    assert "the expected answer was [withheld]." in score["feedback"]
    assert not re.search(r"(?<![\w.])42(?![\w]|\.\d)", score["feedback"])
    assert "I think 40+2 is about a hundred" in score["feedback"]


@pytest.mark.parametrize("task, reason", [
    ("crash", "the agent exited with status 3: agent: simulated crash"),
    ("hang", "the agent did not finish within 1 s and was stopped"),
    ("no-trace", "the agent finished but left no trace at runs/no-trace-0.jsonl"),
    ("__probe__", "unknown task '__probe__': it is not among this adapter's 5 tasks"),
])
def test_infrastructure_failures_become_rollout_errors(toy, task, reason):
    adapters, project = toy
    results, proc = drive(adapters, [
        {"op": "run", "task": task, "ctx": "careful"},
        {"op": "score", "task": task},
    ], cwd=project)
    rollout, score = results
    assert rollout["error"] == reason
    assert rollout["output"] is None and rollout["trace"] is None
    assert score["reward"] == 0.0 and reason in score["feedback"]
    assert score["metrics"] == [{"name": "reward", "value": 0.0, "primary": True, "direction": "higher"}]
    assert proc.stdout == b""


def test_a_stale_trace_is_not_scored(toy):
    adapters, project = toy
    (project / "runs").mkdir(exist_ok=True)
    (project / "runs" / "no-trace-7.jsonl").write_text('{"role": "assistant", "content": "2"}\n')
    results, _ = drive(adapters, [{"op": "run", "task": "no-trace", "ctx": "careful", "seed": 7}], cwd=project)
    assert results[0]["error"] == "the agent finished but did not write a new trace at runs/no-trace-7.jsonl"


def test_project_root_and_data_dir_can_be_set(toy, tmp_path):
    adapters, project = toy
    moved = tmp_path / "data"
    shutil.copytree(adapters, moved)
    (adapters / "tasks.jsonl").rename(adapters / "tasks.jsonl.away")
    try:
        env = host_env(TOY_CALC_PROJECT_ROOT=str(project), TOY_CALC_DATA_DIR=str(moved))
        results, _ = drive(adapters, [{"op": "run", "task": "add-small", "ctx": str(project / "careful"), "seed": 1}],
                           cwd=tmp_path, env=env)
    finally:
        (adapters / "tasks.jsonl.away").rename(adapters / "tasks.jsonl")
    assert results[0]["error"] is None and results[0]["output"] == "5"


def test_run_target_without_the_tasks_file_reports_an_error_instead_of_raising(toy, tmp_path):
    adapters, _ = toy
    bare = tmp_path / "adapters"
    bare.mkdir()
    shutil.copy(adapters / "adapter.py", bare / "adapter.py")
    shutil.copytree(adapters / "mapc_runtime", bare / "mapc_runtime")
    results, _ = drive(bare, [
        {"op": "run", "task": "add-small", "target": 5},
        {"op": "score", "task": "add-small", "target": 5, "rollout": {"task_id": "add-small", "output": "5"}},
        {"op": "tasks", "split": "val"},
    ], cwd=tmp_path)
    rollout, score, tasks = results
    assert rollout["error"].startswith("adapter error: ") and "tasks.jsonl" in rollout["error"]
    assert score["reward"] == 0.5  # scoring needs only the task and the rollout: exact 1, no calculator 0
    assert "tasks.jsonl" in tasks["raised"]  # tasks() may raise: cap-evolve check reports it


@pytest.fixture(scope="module")
def replay(tmp_path_factory):
    out = tmp_path_factory.mktemp("replay") / "adapters"
    result = build_adapter(ADAPTERS / "replay-seeds" / "spec.yaml", out)
    return out, result


def test_recorded_traces_are_copied_per_task_and_seed(replay):
    out, result = replay
    copied = sorted(p.relative_to(out).as_posix() for p in (out / "traces").rglob("*") if p.is_file())
    assert copied == ["traces/q1/trial-0.jsonl", "traces/q1/trial-1.jsonl", "traces/q2/trial-0.jsonl"]
    assert [(d.code, d.severity) for d in result.diagnostics] == [("missing_trace", "warning")]
    assert "'replay': 'traces/{task_id}/trial-{seed}.jsonl'" in (out / "adapter.py").read_text()


def test_trial_seed_k_replays_the_trace_recorded_for_seed_k(replay, tmp_path):
    out, _ = replay
    results, _ = drive(out, [
        {"op": "run", "task": "q1", "seed": 0}, {"op": "score", "task": "q1"},
        {"op": "run", "task": "q1", "seed": 1}, {"op": "score", "task": "q1"},
        {"op": "run", "task": "q1", "seed": 2},
        {"op": "run", "task": "q3", "seed": 0},
    ], cwd=tmp_path)
    r0, s0, r1, s1, r2, r3 = results
    assert (r0["output"], s0["reward"]) == ("6", 0.0)
    assert (r1["output"], s1["reward"]) == ("5", 1.0)
    assert r2["error"] == "no recorded trace for task 'q1' at traces/q1/trial-2.jsonl"
    assert r3["error"] == "no recorded trace for task 'q3' at traces/q3/trial-0.jsonl"


def test_shared_results_file_walks_the_tasks_trials(example_adapter, tmp_path):
    results, _ = drive(example_adapter, [
        {"op": "run", "task": "airline-1", "seed": 0}, {"op": "run", "task": "airline-1", "seed": 1},
        {"op": "run", "task": "airline-1", "seed": 2}, {"op": "run", "task": "airline-6", "seed": 1},
    ], cwd=tmp_path)
    assert [r["metadata"]["trajectory_id"] for r in results] == [
        "airline-1-trial-0", "airline-1-trial-1", "airline-1-trial-0", "airline-6-trial-1"]
    assert all(r["error"] is None for r in results)


def test_example_rollouts_and_scores(example_adapter, tmp_path):
    results, proc = drive(example_adapter, [
        {"op": "run", "task": "airline-6", "seed": 1, "as": "failed"},
        {"op": "score", "task": "airline-6", "rollout": "failed"},
        {"op": "run", "task": "airline-1", "seed": 1, "as": "solved"},
        {"op": "score", "task": "airline-1", "rollout": "solved"},
    ], cwd=tmp_path)
    failed, failed_score, solved, solved_score = results
    assert [c["name"] for c in failed["tool_calls"]] == [
        "get_user_details", "get_reservation_details", "search_onestop_flight", "think",
        "update_reservation_flights"]
    assert failed["cost_usd"] == 0.0022625
    # weighted: (3 * 0 + 1 * 1 + 1 * (1 - 10/30)) / 5
    assert failed_score["reward"] == pytest.approx((0 + 1 + (1 - 10 / 30)) / 5)
    feedback = failed_score["feedback"]
    assert "tau-bench judged the episode a failure" in feedback
    # the agent's last message is echoed, but every gold leaf in it is withheld
    for gold in ("M05KNL", "HAT110", "economy", "2024-05-24"):
        assert gold not in feedback
    assert "HAT132" in feedback  # the flight it wrongly booked is not gold: it stays
    assert solved_score["reward"] == pytest.approx((3 + 1 + (1 - 10 / 30)) / 5)
    assert json.loads(json.dumps(failed))["trace"]["format"] == "tau-bench-historical"
    assert proc.stdout == b""


@pytest.mark.parametrize("variable, value, reason", [
    ("MAPC_MAX_TRACE_MB", "0.00005", "it has 74 bytes, more than the 5e-05 MB a runner maps "
                                     "(raise MAPC_MAX_TRACE_MB to map it)"),
    ("MAPC_MAX_TRACE_RECORDS", "2", "it holds more than 2 records, the most a runner maps "
                                    "(raise MAPC_MAX_TRACE_RECORDS to map it)"),
    ("MAPC_MAX_MAPPING_SECONDS", "1e-9", "mapping it took more than 1e-09 s (raise MAPC_MAX_MAPPING_SECONDS to allow more)"),
])
def test_run_target_maps_a_trace_within_bounds(replay, tmp_path, variable, value, reason):
    """run_target keeps a whole trace in memory: past a bound it is an errored rollout, not 4 GB."""
    out, _ = replay
    results, _ = drive(out, [{"op": "run", "task": "q1", "seed": 0}, {"op": "score", "task": "q1"}],
                       cwd=tmp_path, env=host_env(**{variable: value}))
    rollout, score = results
    assert rollout["error"] == f"cannot map the trace traces/q1/trial-0.jsonl: {reason}" and rollout["trace"] is None
    assert score["reward"] == 0.0 and reason in score["feedback"]
