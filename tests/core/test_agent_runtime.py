"""Running the agent under test: argv only, placeholders, timeouts, trace location."""

from __future__ import annotations

import sys
import time

import pytest

from mapc.runtime import agent_rt as rt


def test_placeholders_are_substituted_without_format_features():
    values = {"task_id": "a/1", "seed": 3}
    assert rt.fill_placeholders("--task={task_id} s{seed} {{lit}}", values) == "--task=a/1 s3 {lit}"
    for bad in ("{task_id.__class__}", "{nope}", "{task_id", "{0}"):
        with pytest.raises(ValueError):
            rt.fill_placeholders(bad, values)


def test_inside_rejects_escapes(tmp_path):
    assert rt.inside(tmp_path, "runs/a.json") == str(tmp_path / "runs" / "a.json")
    assert rt.inside(tmp_path, "../x") is None
    assert rt.inside(tmp_path, "/etc/passwd") is None


def test_run_command_statuses(tmp_path):
    ok = rt.run_command([sys.executable, "-c", "print('hi')"], cwd=tmp_path, timeout=30)
    assert ok["status"] == "ok" and ok["stdout"].strip() == "hi"
    bad = rt.run_command([sys.executable, "-c", "import sys; sys.stderr.write('boom\\n'); sys.exit(3)"],
                         cwd=tmp_path, timeout=30)
    assert bad["status"] == "failed" and bad["returncode"] == 3 and "boom" in bad["message"]
    missing = rt.run_command(["definitely-not-a-program-xyz"], cwd=tmp_path, timeout=30)
    assert missing["status"] == "not_found"
    start = time.monotonic()
    slow = rt.run_command([sys.executable, "-c", "import time; time.sleep(30)"], cwd=tmp_path, timeout=0.5)
    assert slow["status"] == "timeout" and time.monotonic() - start < 20


def test_shell_metacharacters_are_plain_arguments(tmp_path):
    out = rt.run_command([sys.executable, "-c", "import sys; print(sys.argv[1])", "$(touch pwned); `x`"],
                         cwd=tmp_path, timeout=30)
    assert out["stdout"].strip() == "$(touch pwned); `x`"
    assert not (tmp_path / "pwned").exists()


def test_output_capture_is_bounded(tmp_path):
    out = rt.run_command([sys.executable, "-c", "print('x' * 500000)"], cwd=tmp_path, timeout=30)
    assert len(out["stdout"]) <= rt.MAX_CAPTURE + 3


AGENT = {
    "command": [sys.executable, "agent.py", "{task_id}", "{trace}", "{seed}", "{input_file}"],
    "trace": "runs/{task_id}.jsonl",
    "replay": None,
    "timeout": 30,
    "env": {"MODE": "t-{task_id}"},
    "seed_env": "AGENT_SEED",
}
SCRIPT = """
import json, os, sys
task, trace, seed, input_file = sys.argv[1:5]
data = json.load(open(input_file))
with open(trace, "w") as fh:
    fh.write(json.dumps({"task": task, "seed": seed, "env_seed": os.environ["AGENT_SEED"],
                         "mode": os.environ["MODE"], "input": data, "cwd": os.getcwd()}) + "\\n")
"""


def test_run_agent_runs_the_command_and_finds_the_trace(tmp_path):
    (tmp_path / "agent.py").write_text(SCRIPT)
    trace, err = rt.run_agent(AGENT, {"id": "t1", "input": {"q": 1}}, project_root=str(tmp_path), seed=7)
    assert err is None
    import json

    row = json.loads(open(trace).read())
    assert row == {"task": "t1", "seed": "7", "env_seed": "7", "mode": "t-t1", "input": {"q": 1},
                   "cwd": str(tmp_path)}


def test_run_agent_reports_infrastructure_failures(tmp_path):
    (tmp_path / "agent.py").write_text("pass\n")  # leaves no trace
    trace, err = rt.run_agent(AGENT, {"id": "t1"}, project_root=str(tmp_path))
    assert trace is None and "left no trace" in err
    # a stale trace from an earlier run is not taken for a new one
    (tmp_path / "runs").mkdir(exist_ok=True)
    (tmp_path / "runs" / "t1.jsonl").write_text("{}\n")
    trace, err = rt.run_agent(AGENT, {"id": "t1"}, project_root=str(tmp_path))
    assert trace is None and "did not write a new trace" in err
    escaping = dict(AGENT, trace="../{task_id}.jsonl")
    trace, err = rt.run_agent(escaping, {"id": "t1"}, project_root=str(tmp_path))
    assert trace is None and "leaves the project" in err


def test_replay(tmp_path):
    (tmp_path / "rec").mkdir()
    (tmp_path / "rec" / "t1.json").write_text("{}")
    agent = {"replay": "rec/{task_id}.json"}
    assert rt.run_agent(agent, {"id": "t1"}, project_root=str(tmp_path)) == (str(tmp_path / "rec" / "t1.json"), None)
    trace, err = rt.run_agent(agent, {"id": "t2"}, project_root=str(tmp_path))
    assert trace is None and "no recorded trace" in err
