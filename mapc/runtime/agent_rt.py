"""Runtime units for running the agent under test and finding its trace.

Shared by the RELAI runner and the cap-evolve adapter. The agent command is an
argv list (never a shell), placeholders are filled by plain substitution (no
``str.format`` attribute access), output is captured to temporary files and
read back bounded, and a timeout kills the whole process group.
"""

import json
import os
import signal
import subprocess
import tempfile

MAX_CAPTURE = 64 * 1024


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


def inside(base, path):
    """``path`` resolved, if it stays inside ``base``; else None."""
    base = os.path.realpath(base)
    full = os.path.realpath(os.path.join(base, path))
    if os.path.commonpath([base, full]) != base:
        return None
    return full


def _tail(fh):
    fh.seek(0, os.SEEK_END)
    size = fh.tell()
    fh.seek(max(0, size - MAX_CAPTURE))
    data = fh.read().decode("utf-8", "replace")
    return ("..." if size > MAX_CAPTURE else "") + data


def run_command(argv, *, cwd, timeout, env_extra=None):
    """Run ``argv`` without a shell. Returns a dict with ``status``:

    ``ok`` (exit 0), ``failed`` (nonzero exit), ``timeout`` (killed after
    ``timeout`` seconds), or ``not_found`` (the program could not be started);
    plus ``returncode``, ``stdout`` and ``stderr`` (tails, at most 64 KiB each)
    and a one-line ``message``.
    """
    env = dict(os.environ)
    env.update(env_extra or {})
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            proc = subprocess.Popen(
                list(argv),
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
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
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
            proc.wait()
            return {
                "status": "timeout",
                "returncode": None,
                "stdout": _tail(out),
                "stderr": _tail(err),
                "message": f"the agent did not finish within {timeout:g} s and was stopped",
            }
        result = {
            "status": "ok" if code == 0 else "failed",
            "returncode": code,
            "stdout": _tail(out),
            "stderr": _tail(err),
            "message": "",
        }
        if code != 0:
            last = [ln for ln in result["stderr"].splitlines() if ln.strip()]
            detail = f": {last[-1].strip()[:300]}" if last else ""
            result["message"] = f"the agent exited with status {code}{detail}"
        return result


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
        path = inside(project_root, rel)
        if path is None:
            return None, f"recorded trace path {rel!r} leaves the project"
        if not os.path.isfile(path):
            return None, f"no recorded trace for task {task['id']!r} at {rel}"
        return path, None
    rel = fill_placeholders(agent["trace"], values)
    trace = inside(project_root, rel)
    if trace is None:
        return None, f"trace path {rel!r} leaves the project"
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
