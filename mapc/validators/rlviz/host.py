"""Run an adapter plugin the way RLViz runs it.

Each execution gets a fresh private copy of the plugin directory (a new path
every time, so an adapter that echoes its location is caught as
nondeterministic), a request file written 0600 and deleted afterwards, stdin
from /dev/null, the caller's environment plus ``PYTHONDONTWRITEBYTECODE=1``,
its own process group, and RLViz's limits: 10 s, 32 MiB of stdout and 1 MiB
of stderr. Exceeding a limit kills the whole process group.
"""

from __future__ import annotations

import datetime
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from mapc.validators.rlviz.digest import plugin_files
from mapc.validators.rlviz.manifest import API_VERSION, Manifest

TIMEOUT_S = 10.0
MAX_STDOUT = 32 << 20
MAX_STDERR = 1 << 20


class HostError(Exception):
    """The plugin could not be run, or its run broke a process limit or failed."""


@dataclass
class RunResult:
    stdout: bytes
    stderr: str


def go_time(ns: int) -> str:
    """A UTC time (nanoseconds since the epoch) as Go's RFC3339Nano prints it."""
    seconds, nanos = divmod(ns, 1_000_000_000)
    dt = datetime.datetime.fromtimestamp(seconds, tz=datetime.timezone.utc)
    frac = f".{nanos:09d}".rstrip("0") if nanos else ""
    return dt.strftime("%Y-%m-%dT%H:%M:%S") + frac + "Z"


def new_request(operation: str, source: str | os.PathLike, root: str | os.PathLike | None = None) -> dict:
    """The request RLViz sends for ``source`` (resolved; root defaults to its folder)."""
    path = os.path.realpath(os.path.abspath(source))
    if not os.path.exists(path):
        raise HostError(f"resolve source: {source}: no such file or directory")
    if os.path.isdir(path):
        kind = "directory"
    elif os.path.isfile(path):
        kind = "file"
    else:
        raise HostError("source must be a regular file or directory")
    if root is None:
        root = path if kind == "directory" else os.path.dirname(path)
    root = os.path.realpath(os.path.abspath(root))
    if os.path.commonpath([root, path]) != root:
        raise HostError(f"source {path} escapes root {root}")
    info = os.stat(path)
    src: dict = {"path": path, "root": root, "kind": kind}
    if info.st_size:
        src["size_bytes"] = info.st_size  # Go omits a zero size
    src["modified_at"] = go_time(info.st_mtime_ns)
    return {"api_version": API_VERSION, "operation": operation, "source": src, "limits": {}}


def snapshot(root: str | os.PathLike) -> str:
    """A private copy of the plugin's files in a new temporary directory."""
    dest = tempfile.mkdtemp(prefix="mapc-rlviz-plugin-")
    try:
        for rel, src in plugin_files(root).items():
            target = Path(dest, *rel.split("/"))
            target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            shutil.copyfile(src, target)
            os.chmod(target, os.stat(src).st_mode & 0o777)
    except BaseException:
        shutil.rmtree(dest, ignore_errors=True)
        raise
    return dest


def _write_request(request: dict) -> str:
    fd, path = tempfile.mkstemp(prefix="rlviz-request-", suffix=".json")
    try:
        os.fchmod(fd, 0o600)
        data = json.dumps(request, ensure_ascii=False, separators=(",", ":")) + "\n"
        os.write(fd, data.encode("utf-8"))
    finally:
        os.close(fd)
    return path


class _Drain(threading.Thread):
    """Reads a pipe into a bounded buffer; past the limit it flags and stops keeping data."""

    def __init__(self, pipe, limit: int, on_exceed):
        super().__init__(daemon=True)
        self.pipe, self.limit, self.on_exceed = pipe, limit, on_exceed
        self.chunks: list[bytes] = []
        self.size = 0
        self.exceeded = False

    def run(self) -> None:
        for chunk in iter(lambda: self.pipe.read(1 << 16), b""):
            room = self.limit - self.size
            if len(chunk) > room:
                chunk = chunk[:max(room, 0)]
                if not self.exceeded:
                    self.exceeded = True
                    self.on_exceed()
            self.chunks.append(chunk)
            self.size += len(chunk)

    def data(self) -> bytes:
        return b"".join(self.chunks)


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_plugin(root: str | os.PathLike, manifest: Manifest, request: dict, *,
               timeout: float = TIMEOUT_S, max_stdout: int = MAX_STDOUT, max_stderr: int = MAX_STDERR) -> RunResult:
    """Execute one operation of the plugin in a fresh snapshot; raises :class:`HostError` on failure."""
    op = request["operation"]
    where = snapshot(root)
    request_path = _write_request(request)
    try:
        program = manifest.command[0]
        if os.sep in program and not os.path.isabs(program):
            program = os.path.join(where, program)
        argv = [program, *manifest.command[1:], op, "--request", request_path]
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
        try:
            proc = subprocess.Popen(argv, cwd=where, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, start_new_session=True)
        except OSError as exc:
            raise HostError(f"start adapter {manifest.name}: {exc.strerror or exc}") from None
        out = _Drain(proc.stdout, max_stdout, lambda: _kill_group(proc))
        err = _Drain(proc.stderr, max_stderr, lambda: _kill_group(proc))
        out.start()
        err.start()
        timed_out = False
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
        _kill_group(proc)  # also ends anything the adapter left running
        proc.wait()
        out.join()
        err.join()
        stderr = err.data().decode("utf-8", "replace")
        if timed_out:
            raise HostError(f"adapter {manifest.name} timed out after {timeout:g}s")
        if out.exceeded:
            raise HostError(f"adapter stdout exceeded {max_stdout} bytes")
        if err.exceeded:
            raise HostError(f"adapter stderr exceeded {max_stderr} bytes")
        if proc.returncode != 0:
            status = f"exit status {proc.returncode}" if proc.returncode > 0 else f"signal: {-proc.returncode}"
            detail = stderr.strip()
            raise HostError(f"adapter {manifest.name} {op} failed: {status}" + (f": {detail}" if detail else ""))
        return RunResult(out.data(), stderr)
    finally:
        try:
            os.unlink(request_path)
        except OSError:
            pass
        shutil.rmtree(where, ignore_errors=True)
