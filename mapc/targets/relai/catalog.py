"""What a spec says to RELAI: the catalog, the runner's task file, the runtime manifest.

Pure functions of the IR (no disk access), so the same catalog is written by
``mapc build`` and checked by the target's spec checks with spec positions.
Each task gets one task-specific tag derived from its id (``request/create``
becomes ``request.create``, as in RELAI's own example), then its own tags,
then the suite tags.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass

from mapc.core.diagnostics import Diagnostic
from mapc.spec import ir
from mapc.spec.semantic import tag_problem

CATALOG_SCHEMA = "relai.custom_adapter.v1"
MANIFEST_SCHEMA = "relai.runtime_manifest.v1"
MANIFEST_PATH = ".relai/runtime-manifest.json"
DEFAULT_RANGE = (0.0, 1.0)
INPUT_SUMMARY_CHARS = 300


def adapter_dir(name: str) -> str:
    """Where RELAI looks for adapter ``name``, relative to the project root."""
    return f".relai/custom-adaptor/{name}"


def runner_argv(name: str) -> list[str]:
    return ["python3", f"{adapter_dir(name)}/run.py"]


@dataclass(frozen=True)
class TaskEntry:
    """A spec task with the tags the catalog gives it."""

    task: ir.Task
    index: int
    task_tag: str
    tags: tuple[str, ...]


def task_path(spec: ir.Spec, index: int, *rest) -> tuple:
    """Spec path of task ``index`` (inline list or ``items``), or of ``tasks.from``."""
    if spec.locate is None:
        return ("tasks", "items", index, *rest)
    if spec.locate(("tasks", "from")) != spec.locate(("tasks",)):
        return ("tasks", "from")
    items = ("tasks", "items", index)
    if spec.locate(items) != spec.locate(("tasks",)):
        return items + rest
    return ("tasks", index, *rest)


def base_tag(task_id: str, prefix: str) -> str:
    """The task-specific tag for ``task_id``: `/` becomes `.`, other characters RELAI
    does not allow in tags become `-`; an id without letters gets a `task-` prefix."""
    tag = re.sub(r"[^A-Za-z0-9._-]+", "-", task_id.replace("/", "."))
    tag = re.sub(r"-{2,}", "-", tag).strip("-")
    if prefix:
        joiner = "" if prefix.endswith((".", "-", "_")) else "."
        return prefix + joiner + tag if tag else prefix
    if not re.search(r"[A-Za-z]", tag):
        return f"task-{tag}" if tag else "task"
    return tag


def task_entries(spec: ir.Spec) -> tuple[list[TaskEntry], list[Diagnostic]]:
    """Every task with its catalog tags; diagnostics for tags RELAI would reject.

    A derived tag that another task already uses (as its own tag, a suite tag
    or another derived tag) is made unique with `-2`, `-3`, ... and a warning,
    because a task-specific tag that selects two tasks is not task-specific.
    """
    diags: list[Diagnostic] = []
    if spec.tasks is None:
        return [], diags
    prefix = spec.target_option("relai", "task_tag_prefix", "") or ""
    if prefix:
        problem = tag_problem(base_tag("x", prefix))
        if problem:
            diags.append(spec.diag("invalid_tag", ("targets", "relai", "task_tag_prefix"),
                                   f"task_tag_prefix {prefix!r} cannot start a tag: {problem}",
                                   hint="e.g. task_tag_prefix: airline"))
            return [], diags
    own = Counter(tag for task in spec.tasks.items for tag in set(task.tags))
    suite = set(spec.tasks.suite_tags)
    derived: set[str] = set()

    def taken(tag: str, task: ir.Task) -> bool:  # used by anything but this task's own tags
        return tag in suite or tag in derived or own[tag] > (1 if tag in task.tags else 0)

    entries = []
    for index, task in enumerate(spec.tasks.items):
        tag = base_tag(task.id, prefix)
        if taken(tag, task):
            n = 2
            while taken(f"{tag}-{n}", task):
                n += 1
            diags.append(spec.diag(
                "duplicate_tag", task_path(spec, index, "id"),
                f"task {task.id!r}: its task-specific tag {tag!r} is already used; it gets {tag}-{n}",
                hint="give tasks ids that differ in letters and digits, or set targets.relai.task_tag_prefix",
                severity="warning"))
            tag = f"{tag}-{n}"
        problem = tag_problem(tag)
        if problem:
            diags.append(spec.diag("invalid_tag", task_path(spec, index, "id"),
                                   f"task {task.id!r}: derived tag {tag!r}: {problem}"))
            continue
        derived.add(tag)
        tags = [tag]
        for extra in task.tags + spec.tasks.suite_tags:
            if extra not in tags:
                tags.append(extra)
        entries.append(TaskEntry(task, index, tag, tuple(tags)))
    return entries, diags


def evaluator_entry(ev: ir.Evaluator) -> dict:
    """A catalog evaluator: range fields only when not the 0-1 default (both or neither)."""
    out: dict = {"id": ev.id, "description": ev.description}
    if (ev.low, ev.high) != DEFAULT_RANGE:
        out["min_score"] = _number(ev.low)
        out["max_score"] = _number(ev.high)
    return out


def _number(x: float) -> int | float:
    return int(x) if float(x).is_integer() else x


def input_summary(task: ir.Task) -> str | None:
    """A one-line summary of a text task input (other inputs have none)."""
    if not isinstance(task.input, str) or not task.input.strip():
        return None
    text = " ".join(task.input.split())
    return text if len(text) <= INPUT_SUMMARY_CHARS else text[: INPUT_SUMMARY_CHARS - 1] + "…"


def task_metadata(task: ir.Task) -> dict | None:
    meta = dict(task.metadata or {})
    if task.split and "split" not in meta:
        meta["split"] = task.split
    return meta or None


def prepare_argv(spec: ir.Spec) -> list[str] | None:
    """``agent.prepare`` for the catalog. RELAI runs it from the project root, so
    ``{project_root}`` becomes ``.`` (also right inside an optimizer worktree)."""
    if spec.agent is None or spec.agent.prepare is None:
        return None
    return [arg.replace("{project_root}", ".").replace("{{", "{").replace("}}", "}") for arg in spec.agent.prepare]


def catalog(spec: ir.Spec, entries: list[TaskEntry]) -> dict:
    out: dict = {"schema_version": CATALOG_SCHEMA}
    prepare = prepare_argv(spec)
    if prepare:
        out["prepare"] = prepare
    out["runner"] = runner_argv(spec.name)
    evaluators = [evaluator_entry(ev) for ev in spec.evaluators]
    tasks = []
    for e in entries:
        item: dict = {"id": e.task.id, "tags": list(e.tags)}
        if e.task.description:
            item["description"] = e.task.description
        summary = input_summary(e.task)
        if summary:
            item["input_summary"] = summary
        item["evaluators"] = evaluators
        meta = task_metadata(e.task)
        if meta:
            item["metadata"] = meta
        tasks.append(item)
    out["tasks"] = tasks
    return out


def task_lines(entries: list[TaskEntry]) -> str:
    """The runner's task file: one JSON object per task (what ``task`` is in evaluators)."""
    lines = []
    for e in entries:
        t = e.task
        row = {"id": t.id, "description": t.description, "input": t.input, "target": t.target,
               "tags": list(e.tags), "split": t.split, "metadata": t.metadata}
        lines.append(json.dumps(row, ensure_ascii=False, sort_keys=True, allow_nan=False))
    return "\n".join(lines) + "\n"


def requirements(spec: ir.Spec) -> dict:
    """The spec's runtime requirements as the runner checks them (names and reasons)."""
    agent = spec.agent
    if agent is None:
        return {"env": [], "files": []}
    return {
        "env": [{"name": e.name, "required": e.required, "reason": e.reason} for e in agent.requires_env],
        "files": [{"path_env": f.path_env, "required": f.required, "reason": f.reason} for f in agent.requires_files],
    }


def sensitive_names(spec: ir.Spec) -> list[str]:
    if spec.agent is None:
        return []
    return [e.name for e in spec.agent.requires_env if e.sensitive]


def runtime_manifest(spec: ir.Spec) -> dict | None:
    """``.relai/runtime-manifest.json`` when the spec declares requirements: names,
    flags and reasons only, never values."""
    agent = spec.agent
    if agent is None or not (agent.requires_env or agent.requires_files):
        return None
    return {
        "schema_version": MANIFEST_SCHEMA,
        "env": [{"name": e.name, "required": e.required, "sensitive": e.sensitive, "reason": e.reason}
                for e in agent.requires_env],
        "files": [{"path_env": f.path_env, "required": f.required, "reason": f.reason}
                  for f in agent.requires_files],
    }


def json_text(data) -> bytes:
    """Stable, readable JSON file content."""
    return (json.dumps(data, ensure_ascii=False, indent=2, allow_nan=False) + "\n").encode("utf-8")
