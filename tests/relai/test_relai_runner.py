"""Generated RELAI runners, executed as RELAI runs them: replayed traces, a tiny fake agent
command, and every way a task can fail while the runner still writes a valid result."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from relai_support import (  # replay_project is a fixture
    atif_trajectory, build_project, catalog_task, chat_trace, read_result, replay_project, run_runner, spec_text,
    write_json,
)
from mapc.targets.relai.validator.catalog import Findings
from mapc.targets.relai.validator.result import check_result

ADAPTER = "chat-demo"

# The agent under test: argv [task_id, trace path, input file]; its behaviour comes from the
# environment RELAI passes through (FAKE_AGENT), so one script covers every outcome.
FAKE_AGENT = r'''
import json, os, sys, time
task_id, trace, input_file = sys.argv[1:4]
mode = os.environ.get("FAKE_AGENT", "ok")
if mode == "sleep":
    time.sleep(30)
if mode == "crash":
    sys.stderr.write("traceback noise\nRuntimeError: the model endpoint refused the request\n")
    sys.exit(3)
if mode == "no-trace":
    sys.exit(0)
task_input = json.load(open(input_file))
secret = os.environ.get("DEMO_API_KEY", "")
answer = "created" if mode != "wrong" else "deleted"
doc = {
    "answer": answer, "reward": 1 if mode != "wrong" else 0, "quality": 7 if mode == "overrate" else 3,
    "messages": [
        {"role": "user", "content": task_input},
        {"role": "assistant", "content": "cwd=" + os.getcwd() + " task=" + os.environ["TASK_FROM_SPEC"]
         + (" key=" + secret if mode == "leak" else "")},
    ],
}
with open(trace, "w") as fh:
    fh.write("{not json" if mode == "bad-json" else json.dumps(doc))
'''

AGENT_SPEC = """\
agent:
  command: [python3, agent.py, "{task_id}", "{trace}", "{input_file}"]
  trace: "runs/{task_id}.json"
  timeout: TIMEOUT
  env: {TASK_FROM_SPEC: "{task_id}"}
  requires:
    env:
      - {name: DEMO_API_KEY, required: false, sensitive: true, reason: the agent's model API key}
"""


def agent_project(tmp_path: Path, timeout: float = 30, extra_requires: str = "") -> Path:
    project = tmp_path / "project"
    project.mkdir()
    (project / "agent.py").write_text(FAKE_AGENT, encoding="utf-8")
    agent = AGENT_SPEC.replace("TIMEOUT", str(timeout)) + extra_requires
    result = build_project(spec_text(agent), project)
    assert result.ok, [d.format() for d in result.diagnostics]
    return project


def run(project: Path, task_id: str, tmp_path: Path, **env) -> tuple[dict, object]:
    out = tmp_path / "out" / "result.json"
    proc = run_runner(project, ADAPTER, task_id, out, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    return read_result(out), proc


def assert_valid(project: Path, result: dict, task_id: str, secrets: dict | None = None) -> None:
    """The result passes every RELAI result rule and its steps form an ATIF trajectory."""
    f = Findings("result")
    check_result(result, task_id, catalog_task(project, ADAPTER, task_id), f, secrets=secrets)
    assert [d.format() for d in f.items if d.is_error] == []
    atif_trajectory(result["trace"]["steps"])


# --- replay ---------------------------------------------------------------------------------


def test_replayed_trace_becomes_a_complete_scored_result(replay_project, tmp_path):
    result, _ = run(replay_project, "request/create", tmp_path)
    assert_valid(replay_project, result, "request/create")
    assert "failure" not in result
    assert result["final_output"] == "created"
    steps = result["trace"]["steps"]
    assert [s["source"] for s in steps] == ["system", "user", "agent", "agent"]
    call_step = steps[2]
    assert call_step["model_name"] == "demo-model" and call_step["reasoning_content"] == "I should call create."
    assert call_step["tool_calls"] == [{"tool_call_id": "call_a", "function_name": "create", "arguments": {"name": "item"}}]
    assert call_step["observation"] == {"results": [{"source_call_id": "call_a", "content": "ok"}]}
    assert result["evaluations"] == [
        {"evaluator_id": "correct", "score": 1, "feedback": "correct answer"},
        {"evaluator_id": "quality", "score": 4, "min_score": 0, "max_score": 5,
         "feedback": "Answer quality from 0 to 5: 4 (range 0 to 5)"},
    ]


def test_feedback_templates_see_the_final_output(replay_project, tmp_path):
    result, _ = run(replay_project, "request/update", tmp_path)
    assert_valid(replay_project, result, "request/update")
    assert result["evaluations"][0] == {"evaluator_id": "correct", "score": 0, "feedback": "wrong answer: updated"}


def test_missing_recorded_trace_is_a_failure_result(replay_project, tmp_path):
    (replay_project / "traces/request/update.json").unlink()
    result, _ = run(replay_project, "request/update", tmp_path)
    assert_valid(replay_project, result, "request/update")
    assert result["failure"]["kind"] == "agent"
    assert "no recorded trace" in result["failure"]["message"]


def test_unknown_task_id_still_gets_a_result(replay_project, tmp_path):
    result, _ = run(replay_project, "request/delete", tmp_path)
    assert result["task_id"] == "request/delete"
    assert result["failure"] == {"kind": "unknown_task",
                                 "message": "task 'request/delete' is not in this adapter's catalog (2 tasks)"}


def test_a_trace_that_does_not_fit_the_spec_is_a_mapping_failure(replay_project, tmp_path):
    (replay_project / "traces/request/create.json").write_text("{broken", encoding="utf-8")
    result, _ = run(replay_project, "request/create", tmp_path)
    assert_valid(replay_project, result, "request/create")
    assert result["failure"]["kind"] == "mapping"
    assert "traces/request/create.json" in result["failure"]["message"]


def test_a_shared_trace_must_hold_the_tasks_own_run(tmp_path):
    project = tmp_path / "project"
    runs = {"runs": [dict(chat_trace(), task="request/create"), dict(chat_trace("updated", 0, 1), task="other")]}
    write_json(project / "traces/all.json", runs)
    spec = spec_text('agent:\n  replay: "traces/all.json"\n', replace={
        "probe: {require: [messages]}": "probe: {require: [runs]}",
        "records:\n  trajectory:": "records:\n  case:\n    each: runs\n    as: item\n    id: task\n  trajectory:",
        "final_output: answer": "final_output: $item.answer",
        "reward: reward": "reward: $item.reward",
        "quality: quality": "quality: $item.quality",
        "each: messages": "each: $item.messages",
    })
    assert build_project(spec, project).ok
    result, _ = run(project, "request/create", tmp_path)
    assert "failure" not in result and result["final_output"] == "created", result.get("failure")
    other, _ = run(project, "request/update", tmp_path)
    assert other["failure"]["kind"] == "mapping"
    assert "none has the task id 'request/update'" in other["failure"]["message"]
    # a shared recorded file with one run only: still never scored for another task
    write_json(project / "traces/all.json", {"runs": runs["runs"][1:]})
    alone, _ = run(project, "request/create", tmp_path)
    assert alone["failure"]["kind"] == "mapping", alone


def test_a_per_task_trace_answers_its_task_whatever_its_ids(replay_project, tmp_path):
    # traces/{task_id}.json holds one trajectory with a derived id: it is that task's run
    result, _ = run(replay_project, "request/update", tmp_path)
    assert "failure" not in result


# --- a failing grader --------------------------------------------------------------------------


def test_a_grader_that_cannot_score_yields_failure_and_evaluation_errors(replay_project, tmp_path):
    trace = chat_trace(quality=9)  # outside the declared 0..5 range
    write_json(replay_project / "traces/request/create.json", trace)
    result, _ = run(replay_project, "request/create", tmp_path)
    assert_valid(replay_project, result, "request/create")
    assert result["failure"]["kind"] == "evaluation"
    assert result["evaluation_errors"] == [{"evaluator_id": "quality", "message": "score 9 is outside [0.0, 5.0]"}]
    assert [e["evaluator_id"] for e in result["evaluations"]] == ["correct"]  # kept as evidence


def test_a_missing_score_names_the_evaluator(replay_project, tmp_path):
    trace = chat_trace()
    del trace["reward"]
    write_json(replay_project / "traces/request/create.json", trace)
    result, _ = run(replay_project, "request/create", tmp_path)
    assert_valid(replay_project, result, "request/create")
    assert [e["evaluator_id"] for e in result["evaluation_errors"]] == ["correct"]
    assert "null" in result["evaluation_errors"][0]["message"]


# --- a fake agent command ----------------------------------------------------------------------


def test_agent_command_runs_from_the_project_root_with_the_environment(tmp_path):
    project = agent_project(tmp_path)
    result, _ = run(project, "request/create", tmp_path, FAKE_AGENT="ok")
    assert_valid(project, result, "request/create")
    assert "failure" not in result
    steps = result["trace"]["steps"]
    assert steps[0] == {"step_id": 1, "source": "user", "message": "Create the item", "extra": {"event_id": "evt@0"}}
    assert steps[1]["message"] == f"cwd={os.path.realpath(project)} task=request/create"
    assert (project / "runs/request/create.json").is_file()


def test_agent_timeout_yields_a_valid_failure_result(tmp_path):
    project = agent_project(tmp_path, timeout=1)
    result, _ = run(project, "request/create", tmp_path, FAKE_AGENT="sleep")
    assert_valid(project, result, "request/create")
    assert result["failure"] == {"kind": "agent", "message": "the agent did not finish within 1 s and was stopped"}
    assert result["evaluations"] == []


def test_agent_crash_reports_its_last_stderr_line(tmp_path):
    project = agent_project(tmp_path)
    result, _ = run(project, "request/create", tmp_path, FAKE_AGENT="crash")
    assert_valid(project, result, "request/create")
    assert result["failure"]["message"] == (
        "the agent exited with status 3: RuntimeError: the model endpoint refused the request")


def test_agent_that_leaves_no_trace(tmp_path):
    project = agent_project(tmp_path)
    result, _ = run(project, "request/create", tmp_path, FAKE_AGENT="no-trace")
    assert result["failure"]["message"] == "the agent finished but left no trace at runs/request/create.json"


def test_an_old_trace_is_never_scored_as_a_new_run(tmp_path):
    project = agent_project(tmp_path)
    first, _ = run(project, "request/create", tmp_path, FAKE_AGENT="ok")
    assert "failure" not in first
    again, _ = run(project, "request/create", tmp_path, FAKE_AGENT="no-trace")
    assert "did not write a new trace" in again["failure"]["message"]


def test_sensitive_values_never_appear_in_the_result(tmp_path):
    project = agent_project(tmp_path)
    secret = "sk-demo-4f9a1c2b"
    out = tmp_path / "result.json"
    proc = run_runner(project, ADAPTER, "request/create", out, env={"FAKE_AGENT": "leak", "DEMO_API_KEY": secret})
    assert proc.returncode == 0, proc.stderr
    raw = out.read_text(encoding="utf-8")
    assert secret not in raw and "[REDACTED]" in raw
    result = json.loads(raw)
    assert_valid(project, result, "request/create", secrets={"DEMO_API_KEY": secret})
    assert secret not in proc.stderr


def test_missing_required_variable_is_a_requirements_failure(tmp_path):
    extra = "      - {name: DEMO_REGION, required: true, reason: where the agent runs}\n"
    project = agent_project(tmp_path, extra_requires=extra)
    env = {k: v for k, v in os.environ.items() if k != "DEMO_REGION"}
    out = tmp_path / "r.json"
    proc = run_runner(project, ADAPTER, "request/create", out, env={"FAKE_AGENT": "ok", "DEMO_REGION": ""})
    assert proc.returncode == 0 and env is not None
    result = read_result(out)
    assert result["failure"] == {"kind": "requirements",
                                 "message": "environment variable DEMO_REGION is not set (where the agent runs)"}
    assert not (project / "runs").exists()  # the agent never ran
    ok, _ = run(project, "request/create", tmp_path, FAKE_AGENT="ok", DEMO_REGION="eu")
    assert "failure" not in ok


# --- arguments and writing ----------------------------------------------------------------------


def test_arguments_in_equals_form_and_nested_output_folders(replay_project, tmp_path):
    out = tmp_path / "deep" / "er" / "r.json"
    proc = run_runner(replay_project, ADAPTER, "", out,
                      extra_args=["--task-id=request/create", f"--output={out}"])
    assert proc.returncode == 0, proc.stderr
    assert read_result(out)["task_id"] == "request/create"
    assert [p.name for p in out.parent.iterdir()] == ["r.json"]  # no temporary file left behind


def test_bad_arguments_with_an_output_path_still_write_a_result(replay_project, tmp_path):
    out = tmp_path / "r.json"
    proc = run_runner(replay_project, ADAPTER, "", out, extra_args=["--output", str(out), "--verbose"])
    assert proc.returncode == 0
    failure = read_result(out)["failure"]
    assert failure["kind"] == "usage" and "unknown argument '--verbose'" in failure["message"]
    assert "missing --task-id ID" in failure["message"]


def test_exit_nonzero_only_when_no_result_can_be_written(replay_project, tmp_path):
    no_output = run_runner(replay_project, ADAPTER, "", tmp_path, extra_args=["--task-id", "request/create"])
    assert no_output.returncode == 2 and "usage" in no_output.stderr
    blocked = tmp_path / "a-file"
    blocked.write_text("x")
    proc = run_runner(replay_project, ADAPTER, "request/create", blocked / "r.json")
    assert proc.returncode == 1
    assert "cannot write the result" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("task_id", ["request/create", "request/update"])
def test_runner_output_is_deterministic(replay_project, tmp_path, task_id):
    a = tmp_path / "a.json"
    b = tmp_path / "b.json"
    assert run_runner(replay_project, ADAPTER, task_id, a, env={"PYTHONHASHSEED": "1"}).returncode == 0
    assert run_runner(replay_project, ADAPTER, task_id, b, env={"PYTHONHASHSEED": "2"}).returncode == 0
    assert a.read_bytes() == b.read_bytes()


def test_a_short_secret_is_redacted_from_text_but_never_breaks_the_result(tmp_path):
    project = agent_project(tmp_path)
    out = tmp_path / "result.json"
    proc = run_runner(project, ADAPTER, "request/create", out, env={"FAKE_AGENT": "leak", "DEMO_API_KEY": "e"})
    assert proc.returncode == 0, proc.stderr
    result = read_result(out)
    assert_valid(project, result, "request/create", secrets={"DEMO_API_KEY": "e"})
    assert "e" not in result["final_output"] and "e" not in result["trace"]["steps"][1]["message"]
