"""RELAI's catalog rules (``relai.custom_adapter.v1``), one finding per broken rule.

Findings are ``Diagnostic``s whose ``file`` is the catalog and whose ``path``
is the JSON path of the offending value (``tasks[2].evaluators[0].min_score``).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from mapc.core.diagnostics import WARNING, Diagnostic
from mapc.spec.semantic import tag_problem, task_id_problem

CATALOG_SCHEMA = "relai.custom_adapter.v1"
ADAPTER_NAME = re.compile(r"^[a-z0-9_-]+$")
MAX_JSON_BYTES = 16 << 20
LEGACY_EVALUATOR = {"id": "custom-grade", "min_score": 0, "max_score": 1}
TOP_FIELDS = frozenset({"schema_version", "prepare", "runner", "tasks"})
TASK_FIELDS = frozenset({"id", "tags", "description", "input_summary", "metadata", "agent_target",
                         "evaluators", "evaluator_description"})
EVALUATOR_FIELDS = frozenset({"id", "description", "min_score", "max_score"})


class Findings:
    """Diagnostics about one file."""

    def __init__(self, file: str):
        self.file = file
        self.items: list[Diagnostic] = []

    def error(self, code: str, path: str, message: str, hint: str | None = None) -> None:
        self.items.append(Diagnostic(code=code, message=message, file=self.file, path=path or None, hint=hint))

    def warn(self, code: str, path: str, message: str, hint: str | None = None) -> None:
        self.items.append(Diagnostic(code=code, message=message, severity=WARNING, file=self.file,
                                     path=path or None, hint=hint))

    @property
    def ok(self) -> bool:
        return not any(d.is_error for d in self.items)


def read_json_object(path: Path, findings: Findings, what: str) -> dict | None:
    """A UTF-8 JSON object from ``path`` (bounded), or None with a finding."""
    try:
        size = path.stat().st_size
        if size > MAX_JSON_BYTES:
            findings.error(f"{what}_too_large", "", f"{size} bytes; at most {MAX_JSON_BYTES} are read")
            return None
        text = path.read_bytes().decode("utf-8")
    except OSError as exc:
        findings.error(f"{what}_unreadable", "", f"cannot read: {exc.strerror or exc}")
        return None
    except UnicodeDecodeError as exc:
        findings.error(f"{what}_unreadable", "", f"not UTF-8 (byte {exc.start})")
        return None
    try:
        data = json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        findings.error(f"{what}_unreadable", "", f"not valid JSON: {exc}")
        return None
    if not isinstance(data, dict):
        findings.error(f"{what}_unreadable", "", "must hold one JSON object")
        return None
    return data


def _reject_constant(name: str):
    raise ValueError(f"{name} is not JSON")


def is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _argv(value: Any, path: str, f: Findings, *, required: bool) -> None:
    if value is None:
        if required:
            f.error("runner_missing", path, "the catalog needs `runner`: the argv RELAI runs for each task",
                    hint='e.g. "runner": ["python3", ".relai/custom-adaptor/NAME/run.py"]')
        return
    if not isinstance(value, list) or not value:
        f.error(f"{path}_invalid", path, "must be a nonempty array of strings (an argv; no shell)")
        return
    for i, arg in enumerate(value):
        if not isinstance(arg, str) or not arg:
            f.error(f"{path}_invalid", f"{path}[{i}]", "every argument must be a nonempty string")


def check_adapter_name(name: str, f: Findings) -> None:
    if not ADAPTER_NAME.match(name):
        f.error("adapter_name", "", f"adapter folder name {name!r} must use lowercase ASCII letters, digits, `-` or `_`")


def check_catalog(data: dict, f: Findings) -> None:
    """Every catalog rule of RELAI's contract."""
    if data.get("schema_version") != CATALOG_SCHEMA:
        f.error("schema_version", "schema_version", f"must be {CATALOG_SCHEMA!r}, got {data.get('schema_version')!r}")
    for key in sorted(set(data) - TOP_FIELDS):
        f.warn("unknown_field", key, f"RELAI's catalog has no field {key!r}")
    _argv(data.get("runner"), "runner", f, required=True)
    if "prepare" in data:
        _argv(data["prepare"], "prepare", f, required=False)
    tasks = data.get("tasks")
    if not isinstance(tasks, list):
        f.error("tasks_missing", "tasks", "the catalog needs a `tasks` array")
        return
    if not tasks:
        f.error("tasks_empty", "tasks", "the catalog declares no tasks")
    seen: dict[str, int] = {}
    for i, task in enumerate(tasks):
        p = f"tasks[{i}]"
        if not isinstance(task, dict):
            f.error("task_invalid", p, "a task must be an object")
            continue
        tid = task.get("id")
        if not isinstance(tid, str):
            f.error("task_id", f"{p}.id", "every task needs a string `id`")
        else:
            problem = task_id_problem(tid)
            if problem:
                f.error("task_id", f"{p}.id", f"task id {tid!r} {problem}")
            if tid in seen:
                f.error("duplicate_task_id", f"{p}.id", f"task id {tid!r} is already used by tasks[{seen[tid]}]")
            seen.setdefault(tid, i)
        _check_tags(task.get("tags"), f"{p}.tags", f)
        for key in ("description", "input_summary", "agent_target", "evaluator_description"):
            if key in task and not isinstance(task[key], str):
                f.error("task_field", f"{p}.{key}", "must be a string")
        if "metadata" in task and not isinstance(task["metadata"], dict):
            f.error("task_field", f"{p}.metadata", "must be an object")
        for key in sorted(set(task) - TASK_FIELDS):
            f.warn("unknown_field", f"{p}.{key}", f"RELAI's tasks have no field {key!r}")
        if "evaluators" in task:
            _check_evaluators(task["evaluators"], f"{p}.evaluators", f)


def _check_tags(tags: Any, path: str, f: Findings) -> None:
    if not isinstance(tags, list) or not tags:
        f.error("task_tags", path, "every task needs at least one tag",
                hint="give each task one task-specific tag (e.g. request.create) plus shared suite tags")
        return
    for j, tag in enumerate(tags):
        if not isinstance(tag, str):
            f.error("task_tag", f"{path}[{j}]", "a tag must be a string")
            continue
        problem = tag_problem(tag)
        if problem:
            f.error("task_tag", f"{path}[{j}]", f"tag {tag!r}: {problem}")


def _check_evaluators(evaluators: Any, path: str, f: Findings) -> None:
    if not isinstance(evaluators, list):
        f.error("evaluators_invalid", path, "must be an array of evaluators")
        return
    if not evaluators:
        f.warn("evaluators_empty", path, "an empty evaluators list declares no checks",
               hint="list the evaluators, or omit the field for the legacy `custom-grade` evaluator")
    seen: dict[str, int] = {}
    for k, ev in enumerate(evaluators):
        p = f"{path}[{k}]"
        if not isinstance(ev, dict):
            f.error("evaluator_invalid", p, "an evaluator must be an object")
            continue
        eid = ev.get("id")
        if not isinstance(eid, str) or not eid:
            f.error("evaluator_id", f"{p}.id", "every evaluator needs a nonempty string `id`")
        elif eid in seen:
            f.error("duplicate_evaluator_id", f"{p}.id", f"evaluator id {eid!r} is already used by {path}[{seen[eid]}]")
        else:
            seen[eid] = k
        desc = ev.get("description")
        if not isinstance(desc, str) or not desc.strip():
            f.error("evaluator_description", f"{p}.description", "every evaluator needs a nonempty description")
        has_min, has_max = "min_score" in ev, "max_score" in ev
        if has_min != has_max:
            f.error("evaluator_range", p, "declare both min_score and max_score, or neither (then 0 to 1)")
        elif has_min:
            lo, hi = ev["min_score"], ev["max_score"]
            if not is_number(lo) or not is_number(hi):
                f.error("evaluator_range", p, f"min_score and max_score must be finite numbers, got {lo!r} and {hi!r}")
            elif not lo < hi:
                f.error("evaluator_range", p, f"min_score ({lo}) must be less than max_score ({hi})")
        for key in sorted(set(ev) - EVALUATOR_FIELDS):
            f.warn("unknown_field", f"{p}.{key}", f"RELAI's evaluators have no field {key!r}")


def task_evaluators(task: dict) -> list[dict]:
    """The evaluators a task's results are scored against (with their ranges).

    Without an ``evaluators`` list, the legacy single ``custom-grade`` (0-1).
    """
    evaluators = task.get("evaluators")
    if not isinstance(evaluators, list):
        return [dict(LEGACY_EVALUATOR, description=task.get("evaluator_description") or "custom grade")]
    out = []
    for ev in evaluators:
        if isinstance(ev, dict) and isinstance(ev.get("id"), str):
            lo, hi = ev.get("min_score", 0), ev.get("max_score", 1)
            out.append({"id": ev["id"], "description": ev.get("description", ""), "min_score": lo, "max_score": hi})
    return out
