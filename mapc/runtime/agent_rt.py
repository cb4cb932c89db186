"""Runtime units for running the agent under test and finding its trace.

Shared by the RELAI runner and the cap-evolve adapter. The agent command is an
argv list (never a shell), placeholders are filled by plain substitution (no
``str.format`` attribute access), only the last 64 KiB of its stdout and
stderr are kept (in memory, never on disk), and when it ends or times out
every process it started is ended: its process group, and any process that
left the group (``setsid``) but still carries the run's marker in its
environment. The trace it leaves is mapped within bounds (size, records, time).

"""

import json
import os
import selectors
import signal
import subprocess
import tempfile
import time

from .mapping_rt import MappingError, contained


MAX_CAPTURE = 64 * 1024


#: Environment variable that marks every process of one agent run (found again in /proc).
AGENT_RUN_MARKER = "MAPC_AGENT_RUN"


#: Bounds on the trace a runner maps, in memory: each can be raised through its variable.
RUNNER_LIMITS = {
    "MAPC_MAX_TRACE_MB": 32,
    "MAPC_MAX_TRACE_RECORDS": 100000,
    "MAPC_MAX_MAPPING_SECONDS": 60,
}


def fill_placeholders(template, values):
    """Replace ``{name}`` with ``values[name]``; ``{{`` and ``}}`` are literal braces."""
    out = []
    i = 0
    while i < len(template):
        ch = template[i]
        if ch == "{" and template.startswith("{{", i):
            out.append("{")
            i += 2
        elif ch == "}" and template.startswith("}}", i):
            out.append("}")
            i += 2
        elif ch == "{":
            end = template.find("}", i)
            name = template[i + 1 : end] if end > i else ""
            if end < 0 or name not in values:
                raise ValueError(f"unknown placeholder in {template!r}")
            out.append(str(values[name]))
            i = end + 1
        else:
            out.append(ch)
            i += 1
    return "".join(out)


class CaptureTail:
    """The last ``MAX_CAPTURE`` bytes of a stream, and how many bytes it carried."""

    def __init__(self):
        self.data = b""
        self.total = 0

    def add(self, chunk):
        self.total += len(chunk)
        self.data = (self.data + chunk)[-MAX_CAPTURE:]

    def text(self):
        return ("..." if self.total > MAX_CAPTURE else "") + self.data.decode("utf-8", "replace")


def capture_ready(sel, tails, timeout):
    """Read what is ready within ``timeout`` seconds; a stream at its end is unregistered."""
    for key, _ in sel.select(timeout):
        chunk = os.read(key.fd, 65536)
        if chunk:
            tails[key.data].add(chunk)
        else:
            sel.unregister(key.fileobj)


def agent_exited(proc):
    """True once the agent has exited; it is left unreaped, so its process group stays ours."""
    if not hasattr(os, "waitid"):  # macOS before Python 3.13: poll() reaps it
        return proc.poll() is not None
    try:
        return os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def marked_processes(marker):
    """Process ids whose environment carries ``marker`` (Linux /proc; elsewhere none)."""
    needle = f"\0{AGENT_RUN_MARKER}={marker}\0".encode()
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    found = []
    for name in names:
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as fh:
                environ = b"\0" + fh.read() + b"\0"
        except OSError:
            continue
        if needle in environ:
            found.append(int(name))
    return found


def end_agent_processes(proc, marker):
    """SIGKILL the agent's process group and every process carrying its marker, then reap it."""
    for _ in range(5):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        left = marked_processes(marker)
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        if not left:
            break
    proc.wait()


def run_command(argv, *, cwd, timeout, env_extra=None):
    """Run ``argv`` without a shell. Returns a dict with ``status``:

    ``ok`` (exit 0), ``failed`` (nonzero exit), ``timeout`` (killed after
    ``timeout`` seconds), or ``not_found`` (the program could not be started);
    plus ``returncode``, ``stdout`` and ``stderr`` (tails, at most 64 KiB each)
    and a one-line ``message``. Whatever happens, no process it started
    outlives it.
    """
    marker = f"{os.getpid()}-{os.urandom(8).hex()}"
    env = dict(os.environ)
    env.update(env_extra or {})
    env[AGENT_RUN_MARKER] = marker
    try:
        proc = subprocess.Popen(
            list(argv),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            start_new_session=True,
        )
    except OSError as exc:
        return {
            "status": "not_found",
            "returncode": None,
            "stdout": "",
            "stderr": "",
            "message": f"cannot start {argv[0]!r}: {exc.strerror or exc}",
        }
    tails = {"stdout": CaptureTail(), "stderr": CaptureTail()}
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ, "stdout")
        sel.register(proc.stderr, selectors.EVENT_READ, "stderr")
        try:
            while not agent_exited(proc) and time.monotonic() < deadline:
                if sel.get_map():
                    capture_ready(sel, tails, min(0.1, max(0.0, deadline - time.monotonic())))
                else:
                    time.sleep(min(0.05, max(0.0, deadline - time.monotonic())))
            timed_out = not agent_exited(proc)
        finally:
            end_agent_processes(proc, marker)
            drain_until = time.monotonic() + 1.0
            while sel.get_map() and time.monotonic() < drain_until:
                capture_ready(sel, tails, 0.1)
            proc.stdout.close()
            proc.stderr.close()
    result = {
        "status": "ok" if proc.returncode == 0 else "failed",
        "returncode": proc.returncode,
        "stdout": tails["stdout"].text(),
        "stderr": tails["stderr"].text(),
        "message": "",
    }
    if timed_out:
        result.update(status="timeout", returncode=None)
        result["message"] = f"the agent did not finish within {timeout:g} s and was stopped"
    elif proc.returncode != 0:
        last = [ln for ln in result["stderr"].splitlines() if ln.strip()]
        detail = f": {last[-1].strip()[:300]}" if last else ""
        result["message"] = f"the agent exited with status {proc.returncode}{detail}"
    return result


def runner_limit(name):
    """One of ``RUNNER_LIMITS``: the positive number in the environment variable ``name``,
    else the default."""
    try:
        value = float(os.environ[name])
    except (KeyError, ValueError):
        return RUNNER_LIMITS[name]
    return value if value > 0 else RUNNER_LIMITS[name]


def bounded_mapping(map_source):
    """``map_source`` within a runner's bounds: a runner keeps every record in memory, so it
    refuses a source over ``MAPC_MAX_TRACE_MB`` and stops with a MappingError past
    ``MAPC_MAX_TRACE_RECORDS`` records or ``MAPC_MAX_MAPPING_SECONDS`` seconds."""
    max_mb = runner_limit("MAPC_MAX_TRACE_MB")
    max_records = runner_limit("MAPC_MAX_TRACE_RECORDS")
    seconds = runner_limit("MAPC_MAX_MAPPING_SECONDS")

    def run(src, st, emit):
        size = os.path.getsize(src.path)
        if size > max_mb * 1e6:
            raise MappingError(
                f"it has {size:,} bytes, more than the {max_mb:g} MB a runner maps "
                "(raise MAPC_MAX_TRACE_MB to map it)"
            )
        deadline = time.monotonic() + seconds
        count = 0

        def bounded_emit(record):
            nonlocal count
            count += 1
            if count > max_records:
                raise MappingError(
                    f"it holds more than {max_records:g} records, the most a runner maps "
                    "(raise MAPC_MAX_TRACE_RECORDS to map it)"
                )
            if time.monotonic() > deadline:
                raise MappingError(
                    f"mapping it took more than {seconds:g} s "
                    "(raise MAPC_MAX_MAPPING_SECONDS to allow more)"
                )
            emit(record)

        return map_source(src, st, bounded_emit)

    return run


def write_input_file(directory, task_input):
    """Write a task's input as JSON for the ``{input_file}`` placeholder."""
    fd, path = tempfile.mkstemp(prefix="task-input-", suffix=".json", dir=directory)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(task_input, fh, ensure_ascii=False)
    return path


def load_tasks(path):
    """Tasks written next to the generated code as JSON Lines (one task per line)."""
    tasks = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                tasks.append(json.loads(line))
    return tasks


def run_agent(agent, task, *, project_root, seed=0, candidate="."):
    """Run the spec's agent for ``task`` (or locate its recorded trace).

    ``agent`` is the AGENT constant of a generated file. Returns
    ``(trace_path, None)`` on success or ``(None, reason)`` for an
    infrastructure failure (timeout, crash, missing trace, bad path).
    """
    values = {
        "task_id": task["id"],
        "seed": seed,
        "candidate": candidate,
        "project_root": project_root,
    }
    if agent.get("replay"):
        rel = fill_placeholders(agent["replay"], values)
        try:
            path = contained(project_root, rel, "trace", "the project")
        except MappingError as exc:
            return None, str(exc)
        if not os.path.isfile(path):
            return None, f"no recorded trace for task {task['id']!r} at {rel}"
        return path, None
    rel = fill_placeholders(agent["trace"], values)
    try:
        trace = contained(project_root, rel, "trace", "the project")
    except MappingError as exc:
        return None, str(exc)
    values["trace"] = trace
    with tempfile.TemporaryDirectory(prefix="mapc-agent-") as tmp:
        values["input_file"] = write_input_file(tmp, task.get("input"))
        argv = [fill_placeholders(a, values) for a in agent["command"]]
        env = {k: fill_placeholders(v, values) for k, v in agent.get("env", {}).items()}
        if agent.get("seed_env"):
            env[agent["seed_env"]] = str(seed)
        os.makedirs(os.path.dirname(trace), exist_ok=True)
        before = _stamp(trace)  # a trace left by an earlier run must not be scored
        result = run_command(argv, cwd=project_root, timeout=agent["timeout"], env_extra=env)
    if result["status"] != "ok":
        return None, result["message"]
    try:  # the agent may have left a symlink (at the trace or on its way) that leads out
        trace = contained(project_root, rel, "trace", "the project")
    except MappingError as exc:
        return None, str(exc)
    if not os.path.isfile(trace):
        return None, f"the agent finished but left no trace at {rel}"
    if before is not None and _stamp(trace) == before:
        return None, f"the agent finished but did not write a new trace at {rel}"
    return trace, None


def _stamp(path):
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)
