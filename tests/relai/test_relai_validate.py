"""`mapc validate --target relai`: runs prepare and the runner the way RELAI does, checks
every result, and reports each task's normalized averaged score."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mapc.targets.relai.validator.suite import validate_project
from relai_support import replay_project  # noqa: F401 (a fixture)

GOOD_RESULT = {
    "schema_version": "relai.custom_run.v1",
    "task_id": "TASK",
    "trace": {"steps": [{"step_id": 1, "source": "agent", "message": "done"}]},
    "final_output": "done",
    "evaluations": [{"evaluator_id": "correctness", "score": 1, "feedback": "fine"}],
}


def mapc(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mapc.cli", *args], capture_output=True, text=True,
                          timeout=120, cwd=cwd)


def handmade(project: Path, runner_body: str, *, prepare: str | None = None, tasks=("a", "b"),
             manifest: dict | None = None) -> Path:
    """A hand-written adapter `hand` whose runner is ``runner_body`` (Python)."""
    folder = project / ".relai/custom-adaptor/hand"
    folder.mkdir(parents=True)
    header = textwrap.dedent("""\
        import json, os, sys
        args = sys.argv[1:]
        task_id = args[args.index("--task-id") + 1]
        output = args[args.index("--output") + 1]
        GOOD = %s
        def write(result):
            open(output, "w", encoding="utf-8").write(json.dumps(result))
        def good():
            r = json.loads(json.dumps(GOOD))
            r["task_id"] = task_id
            return r
        """) % json.dumps(GOOD_RESULT)
    (folder / "run.py").write_text(header + textwrap.dedent(runner_body), encoding="utf-8")
    catalog = {
        "schema_version": "relai.custom_adapter.v1",
        "runner": ["python3", ".relai/custom-adaptor/hand/run.py"],
        "tasks": [{"id": t, "tags": [f"t.{t}"], "evaluators": [{"id": "correctness", "description": "ok"}]}
                  for t in tasks],
    }
    if prepare is not None:
        (folder / "prepare.py").write_text(textwrap.dedent(prepare), encoding="utf-8")
        catalog["prepare"] = ["python3", ".relai/custom-adaptor/hand/prepare.py"]
    (folder / "catalog.json").write_text(json.dumps(catalog), encoding="utf-8")
    if manifest is not None:
        (project / ".relai/runtime-manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return project


def tasks_of(payload: dict) -> dict[str, dict]:
    return {t["selector"]: t for a in payload["adapters"] for t in a["tasks"]}


def test_cli_suite_report_with_normalized_scores(replay_project):
    proc = mapc("validate", "--target", "relai", str(replay_project))
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert "chat-demo::request/create  completed score 0.900  correct 1/1, quality 4/5" in proc.stdout
    assert "chat-demo::request/update  completed score 0.200  correct 0/1, quality 2/5" in proc.stdout
    assert "mean normalized score 0.550" in proc.stdout
    payload = json.loads(mapc("validate", "--target", "relai", str(replay_project), "--json").stdout)
    assert payload["ok"] is True
    assert {k: v["score"] for k, v in tasks_of(payload).items()} == {
        "chat-demo::request/create": 0.9, "chat-demo::request/update": 0.2}
    assert payload["summary"] == {"adapters": 1, "tasks": 2, "completed": 2, "failed": 0, "invalid": 0,
                                  "mean_score": 0.55}


@pytest.mark.parametrize("selectors, expected", [
    (["request/create"], ["chat-demo::request/create"]),
    (["chat-demo::request/update"], ["chat-demo::request/update"]),
    (["chat-demo::*"], ["chat-demo::request/create", "chat-demo::request/update"]),
])
def test_task_selection(replay_project, selectors, expected):
    payload = validate_project(replay_project, selectors)
    assert sorted(tasks_of(payload)) == expected and payload["ok"]


def test_unknown_selectors_are_reported(replay_project):
    payload = validate_project(replay_project, ["nope::x", "chat-demo::request/delete"])
    codes = [p["code"] for p in payload["problems"]] + [p["code"] for a in payload["adapters"] for p in a["problems"]]
    assert codes == ["unknown_selector", "unknown_task"] and not payload["ok"]


def test_a_failed_task_is_reported_and_fails_the_suite(replay_project):
    (replay_project / "traces/request/update.json").unlink()
    proc = mapc("validate", "--target", "relai", str(replay_project))
    assert proc.returncode == 1
    assert "chat-demo::request/update  failed    score 0 (scored as failed)  agent: no recorded trace" in proc.stderr
    assert "1 task(s) failed; the adapters follow RELAI's contract" in proc.stderr


def test_runner_gets_appended_arguments_from_the_project_root(tmp_path):
    project = handmade(tmp_path, """\
        open("seen.json", "w").write(json.dumps(sys.argv))  # relative: lands in the cwd
        write(good())
        """)
    payload = validate_project(project, ["hand::a"])
    assert payload["ok"], payload
    argv = json.loads((project / "seen.json").read_text())
    assert argv[0] == ".relai/custom-adaptor/hand/run.py"
    assert argv[1:3] == ["--task-id", "a"] and argv[3] == "--output" and len(argv) == 5
    assert not Path(argv[4]).is_relative_to(project)  # results are written outside the project
    assert tasks_of(payload)["hand::a"]["score"] == 1.0


def test_runner_that_exits_nonzero_is_a_task_failure_without_a_result(tmp_path):
    project = handmade(tmp_path, 'sys.stderr.write("boom\\n"); sys.exit(4)\n')
    payload = validate_project(project)
    task = tasks_of(payload)["hand::a"]
    assert task["status"] == "failed" and task["detail"] == "the runner exited with status 4: boom"
    assert task["problems"] == [] and not payload["ok"]


def test_runner_that_exits_zero_without_a_result_breaks_the_contract(tmp_path):
    payload = validate_project(handmade(tmp_path, "pass\n"))
    task = tasks_of(payload)["hand::a"]
    assert task["status"] == "invalid" and [p["code"] for p in task["problems"]] == ["result_missing"]


@pytest.mark.parametrize("body, code", [
    ('open(output, "w").write("not json")', "result_unreadable"),
    ('r = good(); r["task_id"] = "other"; write(r)', "task_id_mismatch"),
    ('r = good(); r["evaluations"] = []; write(r)', "evaluations_incomplete"),
    ('r = good(); r["trace"]["steps"][0]["source"] = "assistant"; write(r)', "atif_step"),
    ('r = good(); r["evaluation_errors"] = [{"evaluator_id": "x", "message": "y"}]; write(r)', "errors_without_failure"),
])
def test_invalid_results_are_reported_by_rule(tmp_path, body, code):
    payload = validate_project(handmade(tmp_path, body + "\n", tasks=("a",)))
    task = tasks_of(payload)["hand::a"]
    assert task["status"] == "invalid" and code in [p["code"] for p in task["problems"]]
    assert task["problems"][0]["file"] == "result of hand::a"


def test_prepare_runs_once_from_the_project_root_before_the_tasks(tmp_path):
    prepare = """\
        import os
        with open("prepared.txt", "a") as fh:
            fh.write("x")
        """
    runner = 'assert open("prepared.txt").read() == "x"; write(good())\n'
    project = handmade(tmp_path, runner, prepare=prepare)
    payload = validate_project(project)
    assert payload["ok"], payload
    assert payload["adapters"][0]["prepare"] == "ok"
    assert (project / "prepared.txt").read_text() == "x"


def test_failing_prepare_fails_every_selected_task(tmp_path):
    project = handmade(tmp_path, "write(good())\n", prepare="raise SystemExit('no compiler')\n")
    payload = validate_project(project)
    assert payload["adapters"][0]["prepare"] == "failed: prepare exited with status 1: no compiler"
    assert {t["status"] for t in payload["adapters"][0]["tasks"]} == {"failed"}


MANIFEST = {"schema_version": "relai.runtime_manifest.v1",
            "env": [{"name": "HAND_KEY", "required": True, "sensitive": True, "reason": "model access"}],
            "files": []}


def test_missing_requirements_stop_before_any_command(tmp_path, monkeypatch):
    monkeypatch.delenv("HAND_KEY", raising=False)
    project = handmade(tmp_path, 'open("ran.txt", "w").write("x"); write(good())\n', manifest=MANIFEST)
    proc = mapc("validate", "--target", "relai", str(project))
    assert proc.returncode == 1
    assert "requirement_missing" in proc.stderr and "HAND_KEY" in proc.stderr
    assert not (project / "ran.txt").exists()


def test_simulator_env_reaches_the_runner_and_secrets_must_not_leak(tmp_path, monkeypatch):
    monkeypatch.delenv("HAND_KEY", raising=False)
    project = handmade(tmp_path, 'r = good(); r["final_output"] = os.environ["HAND_KEY"]; write(r)\n',
                       manifest=MANIFEST, tasks=("a",))
    (project / ".relai/simulator.env").write_text("HAND_KEY=sk-hand-987\n")
    payload = validate_project(project)
    task = tasks_of(payload)["hand::a"]
    assert [p["code"] for p in task["problems"]] == ["secret_leak"]
    assert "sk-hand-987" not in json.dumps(payload)


def test_bad_catalog_is_reported_and_nothing_runs(tmp_path):
    project = handmade(tmp_path, 'open("ran.txt", "w").write("x")\n')
    catalog = project / ".relai/custom-adaptor/hand/catalog.json"
    data = json.loads(catalog.read_text())
    data["tasks"][0]["tags"] = []
    catalog.write_text(json.dumps(data))
    payload = validate_project(project)
    assert [p["code"] for p in payload["adapters"][0]["problems"]] == ["task_tags"]
    assert payload["adapters"][0]["problems"][0]["path"] == "tasks[0].tags"
    assert not (project / "ran.txt").exists() and not payload["ok"]


def test_no_adapter_and_extra_arguments_are_clear_errors(tmp_path):
    proc = mapc("validate", "--target", "relai", str(tmp_path))
    assert proc.returncode == 1 and "no RELAI custom adapter" in proc.stderr
    (tmp_path / "trace.json").write_text("{}")
    proc = mapc("validate", "--target", "relai", str(tmp_path), str(tmp_path / "trace.json"))
    assert proc.returncode == 2 and "takes the project root only" in proc.stderr  # a usage error (D98)
    assert "Traceback" not in proc.stderr


def test_build_runs_the_catalog_checks_only(replay_project):
    proc = mapc("build", str(replay_project.parent / "project-spec/spec.yaml"), "--target", "relai",
                "-o", str(replay_project), "--json")
    payload = json.loads(proc.stdout)
    assert proc.returncode == 0 and payload["validation"]["ran_tasks"] is False
    assert payload["validation"]["adapters"][0]["tasks"] == []
