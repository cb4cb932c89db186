"""The RELAI runner's bounds: what it maps in memory, and where it writes its result.

A trace is mapped whole (every record in memory), so a runner refuses a trace past
``MAPC_MAX_TRACE_MB``, stops mapping past ``MAPC_MAX_TRACE_RECORDS`` records or
``MAPC_MAX_MAPPING_SECONDS``, each with a result whose failure says which bound and how to
raise it. ``--output`` replaces only a regular file or creates a new one: a named pipe,
folder or symbolic link there is refused, left as it was.
"""

from __future__ import annotations

import os
import stat

import pytest

from relai_support import read_result, replay_project, run_runner  # noqa: F401 - replay_project is a fixture

ADAPTER = "chat-demo"


@pytest.mark.parametrize("variable, value, message", [
    ("MAPC_MAX_TRACE_MB", "0.0001", "bytes, more than the 0.0001 MB a runner maps (raise MAPC_MAX_TRACE_MB to map it)"),
    ("MAPC_MAX_TRACE_RECORDS", "2", "it holds more than 2 records, the most a runner maps "
                                    "(raise MAPC_MAX_TRACE_RECORDS to map it)"),
    ("MAPC_MAX_MAPPING_SECONDS", "1e-9", "mapping it took more than 1e-09 s (raise MAPC_MAX_MAPPING_SECONDS to allow more)"),
])
def test_a_trace_past_a_bound_is_a_failure_result(replay_project, tmp_path, variable, value, message):
    out = tmp_path / "result.json"
    proc = run_runner(replay_project, ADAPTER, "request/create", out, env={variable: value})
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    failure = read_result(out)["failure"]
    assert failure["kind"] == "mapping" and failure["message"].endswith(message), failure
    assert failure["message"].startswith("cannot map the trace traces/request/create.json: ")


def test_the_bounds_leave_an_ordinary_trace_alone(replay_project, tmp_path):
    out = tmp_path / "result.json"
    proc = run_runner(replay_project, ADAPTER, "request/create", out,
                      env={"MAPC_MAX_TRACE_MB": "not a number", "MAPC_MAX_TRACE_RECORDS": "-1"})
    assert proc.returncode == 0 and "failure" not in read_result(out), proc.stderr


def _fifo(path):
    os.mkfifo(path)


def _folder(path):
    path.mkdir()


def _symlink(path):
    (path.parent / "elsewhere.json").write_text("keep me")
    path.symlink_to(path.parent / "elsewhere.json")


@pytest.mark.parametrize("make, kind", [(_fifo, "a named pipe"), (_folder, "a folder"), (_symlink, "a symbolic link")])
def test_output_that_is_not_a_regular_file_is_refused(replay_project, tmp_path, make, kind):
    out = tmp_path / "result.json"
    make(out)
    before = os.lstat(out)
    proc = run_runner(replay_project, ADAPTER, "request/create", out)
    assert proc.returncode == 1 and proc.stderr == (
        f"error: cannot write the result to {out}: it is {kind}, not a regular file "
        "(give --output a new path or a regular file)\n")
    after = os.lstat(out)
    assert stat.S_IFMT(after.st_mode) == stat.S_IFMT(before.st_mode) and after.st_ino == before.st_ino
    if kind == "a symbolic link":
        assert (tmp_path / "elsewhere.json").read_text() == "keep me"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".relai-result-")] == []


def test_an_existing_regular_file_is_replaced(replay_project, tmp_path):
    out = tmp_path / "result.json"
    out.write_text("old result")
    proc = run_runner(replay_project, ADAPTER, "request/create", out)
    assert proc.returncode == 0 and read_result(out)["task_id"] == "request/create"


def test_a_device_as_output_is_refused(replay_project):
    """A device is not replaced by a regular file (running as root, the old runner did)."""
    proc = run_runner(replay_project, ADAPTER, "request/create", "/dev/null")
    assert proc.returncode == 1 and proc.stderr == (
        "error: cannot write the result to /dev/null: it is a device or socket, not a regular "
        "file (give --output a new path or a regular file)\n")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
