"""Running the agent under test: argv only, placeholders, timeouts, trace location."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mapc.core import runtime_files as runtime
from mapc.runtime import agent_rt as rt
from mapc.runtime import mapping_rt

#: run_agent with the core units it uses (``contained``, ``MappingError``), as adapters carry it
run_agent = runtime.namespace(["run_agent"])["run_agent"]


def test_placeholders_are_substituted_without_format_features():
    values = {"task_id": "a/1", "seed": 3}
    assert rt.fill_placeholders("--task={task_id} s{seed} {{lit}}", values) == "--task=a/1 s3 {lit}"
    for bad in ("{task_id.__class__}", "{nope}", "{task_id", "{0}"):
        with pytest.raises(ValueError):
            rt.fill_placeholders(bad, values)


def test_contained_rejects_escapes(tmp_path):
    contained = mapping_rt.contained
    assert contained(tmp_path, "runs/a.json") == str(tmp_path / "runs" / "a.json")
    assert contained(tmp_path, "runs/../b.json") == str(tmp_path / "b.json")
    (tmp_path / "out").symlink_to(tmp_path.parent)
    for escape in ("../x", "/etc/passwd", "out/x", str(tmp_path / "out" / "x")):
        with pytest.raises(mapping_rt.MappingError) as caught:
            contained(tmp_path, escape, "trace", "the project")
        assert str(caught.value) == (f"trace {escape!r} leads outside the project (through a symlink, '..' or "
                                     "an absolute path); refused")


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
    trace, err = run_agent(AGENT, {"id": "t1", "input": {"q": 1}}, project_root=str(tmp_path), seed=7)
    assert err is None
    row = json.loads(open(trace).read())
    assert row == {"task": "t1", "seed": "7", "env_seed": "7", "mode": "t-t1", "input": {"q": 1},
                   "cwd": str(tmp_path)}


def test_run_agent_reports_infrastructure_failures(tmp_path):
    (tmp_path / "agent.py").write_text("pass\n")  # leaves no trace
    trace, err = run_agent(AGENT, {"id": "t1"}, project_root=str(tmp_path))
    assert trace is None and "left no trace" in err
    # a stale trace from an earlier run is not taken for a new one
    (tmp_path / "runs").mkdir(exist_ok=True)
    (tmp_path / "runs" / "t1.jsonl").write_text("{}\n")
    trace, err = run_agent(AGENT, {"id": "t1"}, project_root=str(tmp_path))
    assert trace is None and "did not write a new trace" in err
    escaping = dict(AGENT, trace="../{task_id}.jsonl")
    trace, err = run_agent(escaping, {"id": "t1"}, project_root=str(tmp_path))
    assert trace is None and "leads outside the project" in err


def test_replay(tmp_path):
    (tmp_path / "rec").mkdir()
    (tmp_path / "rec" / "t1.json").write_text("{}")
    agent = {"replay": "rec/{task_id}.json"}
    assert run_agent(agent, {"id": "t1"}, project_root=str(tmp_path)) == (str(tmp_path / "rec" / "t1.json"), None)
    trace, err = run_agent(agent, {"id": "t2"}, project_root=str(tmp_path))
    assert trace is None and "no recorded trace" in err


# -- every process the agent started ends with it; its output never goes to disk ---------------

# The agent starts a grandchild that leaves the agent's session and process group (setsid), waits
# until it has, writes its pid, then exits or sleeps past the timeout.
SETSID_AGENT = r"""
import os, subprocess, sys, time
ready = sys.argv[1] + ".ready"
child = subprocess.Popen([sys.executable, "-c",
                          "import os, sys, time; os.setsid(); open(sys.argv[1], 'w').close(); time.sleep(120)", ready])
while not os.path.exists(ready):
    time.sleep(0.01)
open(sys.argv[1], "w").write(str(child.pid))
if sys.argv[2] == "sleep":
    time.sleep(120)
"""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="finding escaped processes needs /proc (Linux)")
@pytest.mark.parametrize("mode, status", [("sleep", "timeout"), ("exit", "ok")])
def test_a_setsid_grandchild_does_not_outlive_the_run(tmp_path, mode, status):
    (tmp_path / "agent.py").write_text(SETSID_AGENT)
    pid_file = tmp_path / "grandchild.pid"
    out = rt.run_command([sys.executable, "agent.py", str(pid_file), mode], cwd=tmp_path, timeout=5)
    pid = int(pid_file.read_text())
    try:
        assert out["status"] == status, out
        deadline = time.monotonic() + 10
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(pid), f"grandchild {pid} outlived the run"
    finally:
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)


FLOOD = "import sys\nfor _ in range(320):\n    sys.stdout.write('x' * 65536)\nsys.stdout.write('END')\n"
UNDER_FILE_SIZE_LIMIT = r"""
import json, resource, sys
resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))  # no file of this process tree past 1 MiB
from mapc.runtime import agent_rt as rt
r = rt.run_command([sys.executable, "-c", sys.argv[1]], cwd=sys.argv[2], timeout=120)
print(json.dumps({"status": r["status"], "stdout": r["stdout"], "message": r["message"]}))
"""


def test_agent_output_is_kept_as_a_bounded_tail_never_on_disk(tmp_path):
    """20 MiB on stdout: only its last 64 KiB are kept, in memory (a file would hit the 1 MiB limit)."""
    proc = subprocess.run([sys.executable, "-c", UNDER_FILE_SIZE_LIMIT, FLOOD, str(tmp_path)],
                          capture_output=True, text=True, timeout=180)
    out = json.loads(proc.stdout)
    assert out["status"] == "ok", out["message"]
    assert out["stdout"].startswith("...") and out["stdout"].endswith("END")
    assert len(out["stdout"]) == rt.MAX_CAPTURE + 3
