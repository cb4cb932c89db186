"""Run an adapter plugin the way RLViz runs it (``internal/plugins/host.go``).

Each execution gets a fresh private copy of the plugin directory (a new path
every time, so an adapter that echoes its location is caught as
nondeterministic), a request file written 0600 and deleted afterwards, stdin
from /dev/null, the caller's environment plus ``PYTHONDONTWRITEBYTECODE=1``,
and its own process group. RLViz's limits: 10 s per process (less when the
30 s budget of the whole validation runs out first), 32 MiB of stdout, 1 MiB
of stderr. Like Go's ``exec.Cmd`` with ``WaitDelay``, the output is read until
it closes, not just until the adapter exits: a child that keeps writing is
waited for, at most one second after the adapter's exit, and then the run
fails ("WaitDelay expired"). On a timeout the whole process group is killed.
"""

from __future__ import annotations

import datetime
import json
import os
import selectors
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from typing import Mapping

from mapc.core.scratch import scratch
from mapc.targets.rlviz.validator.digest import plugin_files
from mapc.targets.rlviz.validator.gojson import go_utf8
from mapc.targets.rlviz.validator.manifest import API_VERSION, Manifest

TIMEOUT_S = 10.0
TOTAL_S = 30.0
WAIT_DELAY_S = 1.0
MAX_STDOUT = 32 << 20
MAX_STDERR = 1 << 20


class HostError(Exception):
    """The plugin could not be run, or its run broke a process limit or failed."""


@dataclass(frozen=True)
class Limits:
    """RLViz's process limits (tests shrink them)."""

    timeout: float = TIMEOUT_S
    total: float = TOTAL_S
    wait_delay: float = WAIT_DELAY_S
    max_stdout: int = MAX_STDOUT
    max_stderr: int = MAX_STDERR


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
    absolute = os.path.abspath(source)
    try:
        path = os.path.realpath(absolute, strict=True)
        info = os.stat(path)
    except (OSError, ValueError) as exc:
        raise HostError(f"resolve source: {getattr(exc, 'strerror', None) or exc}: {absolute}") from None
    if os.path.isdir(path):
        kind = "directory"
    elif os.path.isfile(path):
        kind = "file"
    else:
        raise HostError("source must be a regular file or directory")
    if root is None:
        root = path if kind == "directory" else os.path.dirname(path)
    try:
        root = os.path.realpath(os.path.abspath(root), strict=True)
    except OSError as exc:
        raise HostError(f"resolve root: {exc.strerror or exc}") from None
    if not (path == root or path.startswith(root.rstrip("/") + "/")):
        raise HostError(f"source {path} escapes root {root}")
    src: dict = {"path": path, "root": root, "kind": kind}
    if info.st_size:
        src["size_bytes"] = info.st_size  # Go omits a zero size
    src["modified_at"] = go_time(info.st_mtime_ns)
    return {"api_version": API_VERSION, "operation": operation, "source": src, "limits": {}}


def request_bytes(request: dict) -> bytes:
    """The request as Go's encoder writes it (no HTML escaping; U+2028/2029 escaped; bad bytes as U+FFFD)."""
    text = json.dumps(request, ensure_ascii=False, separators=(",", ":"))
    text = text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return go_utf8(text.encode("utf-8", "surrogateescape")).encode() + b"\n"


def snapshot(root: str | os.PathLike, dest: str | None = None) -> str:
    """A private copy of the plugin's files in a new temporary directory (RLViz's snapshotPlugin),
    or in the new folder ``dest`` (inside a :func:`mapc.core.scratch.scratch` folder, swept after a kill)."""
    if dest is None:
        dest = tempfile.mkdtemp(prefix="rlviz-plugin-")
    else:
        os.mkdir(dest, 0o700)
    try:
        for folder in _folders(root):
            os.mkdir(os.path.join(dest, folder), 0o700)
        for rel, src in plugin_files(root).items():
            mode = os.stat(src).st_mode & 0o777
            fd = os.open(os.path.join(dest, *rel.split("/")), os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
            with os.fdopen(fd, "wb") as out, open(src, "rb") as data:
                shutil.copyfileobj(data, out, 1 << 20)
    except BaseException:
        shutil.rmtree(dest, ignore_errors=True)
        raise
    return dest


def _folders(root: str | os.PathLike) -> list[str]:
    """The plugin's folders, parents first (empty ones too, as RLViz copies them), ``.git`` skipped."""
    root = os.path.realpath(root)
    out = []
    for folder, dirs, _ in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != ".git" and not os.path.islink(os.path.join(folder, d)))
        out += [os.path.relpath(os.path.join(folder, d), root) for d in dirs]
    return out


def _write_request(request: dict, directory: str) -> str:
    """The request file, in ``directory``: beside the plugin copy, in its private scratch folder,
    so that a run killed before it removes the file leaves nothing the next run does not sweep."""
    fd, path = tempfile.mkstemp(prefix="rlviz-request-", suffix=".json", dir=directory)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, request_bytes(request))
    finally:
        os.close(fd)
    return path


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


class _Output:
    """A bounded buffer like RLViz's: past the limit it keeps nothing more and flags the excess."""

    def __init__(self, limit: int):
        self.limit, self.chunks, self.size, self.exceeded = limit, [], 0, False

    def add(self, chunk: bytes) -> None:
        room = self.limit - self.size
        if len(chunk) > room:
            chunk = chunk[:max(room, 0)]
            self.exceeded = True
        self.chunks.append(chunk)
        self.size += len(chunk)

    def data(self) -> bytes:
        return b"".join(self.chunks)


def execute(where: str, manifest: Manifest, request: dict, *, deadline: float | None = None,
            limits: Limits = Limits(), env: Mapping[str, str] | None = None) -> RunResult:
    """Run one operation of the plugin copy in ``where``; raises :class:`HostError` on failure.

    ``deadline`` (``time.monotonic()``) is the end of the whole validation's budget.
    """
    op = request["operation"]
    start = time.monotonic()
    run_deadline = start + limits.timeout
    if deadline is not None:
        run_deadline = min(run_deadline, deadline)
    timeout_text = f"{limits.timeout:g}s"
    if time.monotonic() >= run_deadline:
        raise HostError(f"adapter {manifest.name} timed out after {timeout_text}: context deadline exceeded")
    request_path = _write_request(request, os.path.dirname(os.path.abspath(where)))
    try:
        program = manifest.command[0]
        if "/" in program and not os.path.isabs(program):
            program = os.path.join(where, program)
        argv = [program, *manifest.command[1:], op, "--request", request_path]
        child_env = dict(os.environ if env is None else env, PYTHONDONTWRITEBYTECODE="1")
        try:
            proc = subprocess.Popen(argv, cwd=where, env=child_env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, process_group=0)
        except OSError as exc:
            raise HostError(f"adapter {manifest.name} {op} failed: fork/exec {program}: "
                            f"{(exc.strerror or str(exc)).lower()}") from None
        out, err = _Output(limits.max_stdout), _Output(limits.max_stderr)
        status = _pump(proc, out, err, run_deadline, limits.wait_delay)
        stderr = err.data().decode("utf-8", "replace")
        if status == "timeout" or time.monotonic() > run_deadline:
            reason = "context deadline exceeded"
            raise HostError(f"adapter {manifest.name} timed out after {timeout_text}: {reason}")
        if out.exceeded:
            raise HostError(f"adapter stdout exceeded {limits.max_stdout} bytes")
        if err.exceeded:
            raise HostError(f"adapter stderr exceeded {limits.max_stderr} bytes")
        if proc.returncode != 0 or status == "wait-delay":
            if proc.returncode > 0:
                why = f"exit status {proc.returncode}"
            elif proc.returncode < 0:
                why = f"signal: {(signal.strsignal(-proc.returncode) or str(-proc.returncode)).lower()}"
            else:
                why = "exec: WaitDelay expired before I/O complete"
            detail = stderr.strip()
            raise HostError(f"adapter {manifest.name} {op} failed: {why}" + (f": {detail}" if detail else ""))
        return RunResult(out.data(), stderr)
    finally:
        try:
            os.unlink(request_path)
        except OSError:
            pass


def _pump(proc: subprocess.Popen, out: _Output, err: _Output, run_deadline: float, wait_delay: float) -> str:
    """Read both pipes until they close; returns "ok", "timeout" or "wait-delay".

    A flood past a limit kills the process group at once (RLViz would let it
    run to its timeout and fail the same way). After the process exits, pipes a
    child still holds are read for ``wait_delay`` more seconds.
    """
    sel = selectors.DefaultSelector()
    sinks = {proc.stdout: out, proc.stderr: err}
    for pipe in sinks:
        os.set_blocking(pipe.fileno(), False)
        sel.register(pipe, selectors.EVENT_READ)
    exited_at = None
    status = "ok"
    try:
        while sel.get_map():
            now = time.monotonic()
            if exited_at is None and proc.poll() is not None:
                exited_at = now
            if exited_at is None and now >= run_deadline:
                _kill_group(proc)
                proc.wait()
                exited_at, status = time.monotonic(), "timeout"
            if exited_at is not None and now >= exited_at + wait_delay:
                if status == "ok":
                    status = "wait-delay"
                break
            limit = run_deadline if exited_at is None else exited_at + wait_delay
            for key, _ in sel.select(min(max(limit - now, 0), 0.05 if exited_at is None else 1.0)):
                try:
                    chunk = os.read(key.fd, 1 << 16)
                except BlockingIOError:
                    continue
                if not chunk:
                    sel.unregister(key.fileobj)
                    continue
                sink = sinks[key.fileobj]
                sink.add(chunk)
                if sink.exceeded:
                    _kill_group(proc)
        if proc.poll() is None:
            try:
                proc.wait(timeout=max(run_deadline - time.monotonic(), 0))
            except subprocess.TimeoutExpired:
                status = "timeout"
    finally:
        sel.close()
        _kill_group(proc)  # what the adapter left running ends with it
        proc.wait()
        for pipe in sinks:
            pipe.close()
    return status


def run_plugin(root: str | os.PathLike, manifest: Manifest, request: dict, *, timeout: float = TIMEOUT_S,
               max_stdout: int = MAX_STDOUT, max_stderr: int = MAX_STDERR,
               env: Mapping[str, str] | None = None) -> RunResult:
    """Execute one operation of the plugin in a fresh snapshot; raises :class:`HostError` on failure."""
    with scratch("rlviz-plugin", near=root) as private:  # removed by the next run even after a kill -9
        where = snapshot(root, os.path.join(private, "plugin"))
        limits = Limits(timeout=timeout, max_stdout=max_stdout, max_stderr=max_stderr)
        return execute(where, manifest, request, limits=limits, env=env)
