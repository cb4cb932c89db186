"""Runtime units for RELAI custom-adapter runners (the generated ``run.py``).

RELAI appends ``--task-id ID --output PATH`` to the catalog's runner argv. The
runner runs (or replays) the agent for that task, maps the trace with the
spec, turns the trajectory into ATIF steps, scores every evaluator and writes
one ``relai.custom_run.v1`` JSON object. Whatever goes wrong with the task,
the agent or the grading becomes a result with ``failure`` (exit 0); only a
result that cannot be written at all makes the runner exit nonzero.

"""

import json
import math
import os
import stat
import sys
import tempfile

from .agent_rt import bounded_mapping, load_tasks, run_agent
from .atif_steps_rt import atif_text, atif_steps
from .eval_rt import is_subtrajectory, evaluate_trace
from .mapping_rt import one_line


RELAI_RESULT_SCHEMA = "relai.custom_run.v1"


#: Replacement text for sensitive values (the first one no secret occurs in).
REDACTION_MARKERS = ("[REDACTED]", "********", "########")


#: Result fields holding free-form data, whose keys and numbers are redacted too.
RELAI_FREE_FORM = ("arguments", "extra", "metadata")


#: Result fields whose values the contract fixes: never redacted.
RELAI_STRUCTURAL = ("schema_version", "task_id", "evaluator_id", "source", "kind", "timestamp")


def relai_result(task_id, steps=(), final_output="", evaluations=()):
    """A ``relai.custom_run.v1`` result."""
    return {
        "schema_version": RELAI_RESULT_SCHEMA,
        "task_id": task_id,
        "trace": {"steps": list(steps)},
        "final_output": final_output,
        "evaluations": list(evaluations),
    }


def relai_failure(task_id, kind, message, result=None):
    """A result that RELAI counts as failed: ``failure`` says what went wrong."""
    result = result if result is not None else relai_result(task_id)
    result["failure"] = {"kind": kind, "message": message}
    return result


def relai_evaluation(evaluation):
    """An evaluation as RELAI reads it: range fields only when not the 0-1
    default (like the catalog)."""
    out = {"evaluator_id": evaluation["evaluator_id"], "score": evaluation["score"]}
    low, high = evaluation["min_score"], evaluation["max_score"]
    if (low, high) != (0, 1):
        out["min_score"] = int(low) if float(low).is_integer() else low
        out["max_score"] = int(high) if float(high).is_integer() else high
    out["feedback"] = evaluation["feedback"]
    return out


def relai_final_output(value):
    """The agent's final answer as text ("" when the trace has none)."""
    if value is None:
        return ""
    return value if isinstance(value, str) else atif_text(value)


def relai_task_mismatch(records, entry, task_id, shared):
    """Why the picked trajectory is not the task's, or None.

    A trace made for this task (an agent run, or a replay path naming
    ``{task_id}``) with one trajectory answers the task whatever its ids; a
    trace holding several trajectories, or one recorded file ``shared`` by
    every task, must hold a trajectory whose trajectory or case id is the task
    id, or another task's run would be scored.
    """
    trajectories = [r for r in records if r.get("record_type") == "trajectory"
                    and not is_subtrajectory(r)]
    if len(trajectories) <= 1 and not shared:
        return None
    rec = entry["record"]
    groups = {r["id"]: r.get("case_id") for r in records if r.get("record_type") == "group"}
    if task_id in (rec["id"], groups.get(rec.get("group_id"))):
        return None
    return (
        f"the trace holds {len(trajectories)} trajectory(ies) "
        f"and none has the task id {task_id!r} "
        "as its case or trajectory id (map records.case.id to the task id)"
    )


def relai_missing_requirements(requirements, environ, project_root):
    """Unmet runtime requirements, by name and reason (never a value)."""
    problems = []
    for item in requirements.get("env", ()):
        if item["required"] and not environ.get(item["name"]):
            problems.append(f"environment variable {item['name']} is not set ({item['reason']})")
    for item in requirements.get("files", ()):
        value = environ.get(item["path_env"])
        if not item["required"]:
            continue
        if not value:
            problems.append(
                f"environment variable {item['path_env']} must name a file ({item['reason']})"
            )
        elif not os.path.isfile(os.path.join(project_root, value)):
            problems.append(
                f"the file named by {item['path_env']} does not exist ({item['reason']})"
            )
    return problems


def relai_run_task(task_id, program, environ, log):
    """Run one task end to end and return its result; mapping warnings go to ``log``."""
    from .stream import SourceFile

    root = program["project_root"]
    tasks = load_tasks(program["tasks_file"])
    task = next((t for t in tasks if t["id"] == task_id), None)
    if task is None:
        return relai_failure(
            task_id,
            "unknown_task",
            f"task {task_id!r} is not in this adapter's catalog ({len(tasks)} tasks)",
        )
    missing = relai_missing_requirements(program["requirements"], environ, root)
    if missing:
        return relai_failure(task_id, "requirements", "; ".join(missing))
    try:
        trace, reason = run_agent(program["agent"], task, project_root=root)
    except (OSError, ValueError) as exc:  # e.g. the trace folder cannot be created
        trace, reason = None, f"cannot run the agent: {exc}"
    if reason:
        return relai_failure(task_id, "agent", reason)
    rel = os.path.relpath(trace, root)
    try:
        src = SourceFile(trace, root, program["max_bytes"], program["max_line_bytes"])
        records, st, entry, scope, evaluations, errors = evaluate_trace(
            bounded_mapping(program["map_source"]),
            src,
            task,
            program["functions"],
            program["evaluators"],
            program["tables"],
        )
    except Exception as exc:  # the trace does not fit the spec: a failed task, not a crash
        return relai_failure(task_id, "mapping", f"cannot map the trace {rel}: {one_line(exc)}")
    log.extend(st.messages)
    if st.warnings > len(st.messages):
        log.append(f"... and {st.warnings - len(st.messages)} more warnings")
    replay = program["agent"].get("replay")
    shared = bool(replay) and "{task_id}" not in replay
    mismatch = relai_task_mismatch(records, entry, task_id, shared)
    if mismatch:
        return relai_failure(task_id, "mapping", f"{rel}: {mismatch}")
    notes = []
    steps = atif_steps(entry["events"], st.sem, notes)
    log.extend(notes)
    result = relai_result(
        task_id,
        steps,
        relai_final_output(scope["output"]),
        [relai_evaluation(e) for e in evaluations],
    )
    if errors:
        names = ", ".join(e["evaluator_id"] for e in errors)
        relai_failure(
            task_id, "evaluation", f"{len(errors)} evaluator(s) could not score: {names}", result
        )
        result["evaluation_errors"] = errors
    return result


def relai_secrets(names, environ):
    """Nonempty values of the sensitive variables, longest first."""
    values = {environ.get(name) for name in names}
    return sorted((v for v in values if v), key=lambda v: (-len(v), v))


def relai_redact(value, secrets, marker, data=False):
    """A copy of a result with every secret replaced in its strings.

    Inside free-form ``data`` (tool arguments, ``extra``) keys and numbers are
    redacted too; the result's own keys, numbers and identifiers (schema
    version, requested task id, evaluator ids, step sources, timestamps) stay
    as the contract needs them. Non-finite numbers become null and characters
    UTF-8 cannot encode are replaced.
    """
    if isinstance(value, str):
        for secret in secrets:
            if secret in value:
                value = value.replace(secret, marker)
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:  # lone surrogates from \\ud800-style escapes
            value = value.encode("utf-8", "replace").decode("utf-8")
        return value
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if not data and k in RELAI_STRUCTURAL:
                out[k] = v
                continue
            key = relai_redact(str(k), secrets, marker) if data else k
            out[key] = relai_redact(v, secrets, marker, data or k in RELAI_FREE_FORM)
        return out
    if isinstance(value, (list, tuple)):
        return [relai_redact(v, secrets, marker, data) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if data and isinstance(value, (int, float)) and not isinstance(value, bool):
        if any(secret in json.dumps(value) for secret in secrets):
            return marker
    return value


def relai_marker(secrets):
    for marker in REDACTION_MARKERS:
        if not any(secret in marker for secret in secrets):
            return marker
    return ""


def relai_output_problem(path):
    """Why the result cannot go to ``path``, or None: only a new path or a regular file is
    replaced, never a named pipe, device, folder or symbolic link."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:  # nothing there (or no way there: writing says why)
        return None
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISFIFO(mode):
        kind = "a named pipe"
    elif stat.S_ISDIR(mode):
        kind = "a folder"
    elif stat.S_ISLNK(mode):
        kind = "a symbolic link"
    else:
        kind = "a device or socket"
    return f"it is {kind}, not a regular file (give --output a new path or a regular file)"


def relai_write_result(path, result):
    """Write the result as UTF-8 JSON atomically: RELAI never reads half a file."""
    text = json.dumps(result, ensure_ascii=False, indent=2, allow_nan=False) + "\n"
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".relai-result-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        problem = relai_output_problem(path)
        if problem:
            raise ValueError(problem)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def relai_parse_args(argv):
    """RELAI's appended ``--task-id ID --output PATH`` (``--name=value`` too).

    Returns ``(task_id, output, problems)``.
    """
    values = {}
    problems = []
    i = 0
    while i < len(argv):
        name, eq, value = argv[i].partition("=")
        i += 1
        if name not in ("--task-id", "--output"):
            problems.append(f"unknown argument {argv[i - 1]!r}")
            continue
        if not eq:
            if i >= len(argv):
                problems.append(f"{name} needs a value")
                break
            value = argv[i]
            i += 1
        values[name] = value
    if "--task-id" not in values:
        problems.append("missing --task-id ID")
    return values.get("--task-id", ""), values.get("--output"), problems


def relai_main(argv, program):
    """The runner: one task in, one result file out. Exit 0 whenever a result was written."""
    task_id, output, problems = relai_parse_args(argv)
    if not output:
        sys.stderr.write("error: usage: run.py --task-id ID --output PATH (RELAI appends both)\n")
        return 2
    problem = relai_output_problem(output)
    if problem:  # refused before the agent runs: nothing is replaced
        sys.stderr.write(f"error: cannot write the result to {output}: {problem}\n")
        return 1
    secrets = relai_secrets(program["sensitive_env"], os.environ)
    marker = relai_marker(secrets)
    log = []
    try:
        if problems:
            result = relai_failure(task_id, "usage", "; ".join(problems))
        else:
            result = relai_run_task(task_id, program, os.environ, log)
    except Exception as exc:  # an adapter bug still yields a result RELAI can show
        result = relai_failure(task_id, "internal", one_line(exc))
    for message in log:
        sys.stderr.write("warning: " + relai_redact(message, secrets, marker) + "\n")
    try:
        relai_write_result(output, relai_redact(result, secrets, marker))
    except (OSError, ValueError) as exc:
        message = relai_redact(
            f"error: cannot write the result to {output}: {exc}", secrets, marker
        )
        sys.stderr.write(message + "\n")
        return 1
    return 0
