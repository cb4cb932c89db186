"""`tasks`: inline or from a file (each row mapped by the task expressions), with ids and
tags RELAI can select."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from mapc.core import safeio
from mapc.core.diagnostics import Diagnostic
from mapc.spec import ir
from mapc.spec.checks.context import Context
from mapc.spec.checks.exprs import compile_expr
from mapc.spec.checks.files import input_file
from mapc.spec.checks.names import tag_problem, task_id_problem

#: A tasks file is read whole, like a sibling file of a trace.
MAX_TASKS_BYTES = 64 << 20
_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89abAB]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def build_tasks(ctx: Context, data: Any) -> ir.Tasks | None:
    """`tasks`: inline `items` or `from` a file; ids unique, suite tags RELAI accepts."""
    if data is None:
        return None
    path = ("tasks",)
    items_path = path if isinstance(data, list) else path + ("items",)
    if isinstance(data, list):
        data = {"items": data}
    suite = tuple(data.get("suite_tags") or [])
    for i, tag in enumerate(suite):
        p = tag_problem(tag)
        if p:
            ctx.error("invalid_tag", path + ("suite_tags", i), f"tag {tag!r}: {p}")
    if "items" in data and "from" in data:
        ctx.error("conflicting_keys", path + ("from",), "give tasks inline (`items`) or from a file (`from`), not both",
                  key=True)
        return None
    items: list[ir.Task] = []
    if "items" in data:
        for i, t in enumerate(data["items"]):
            items.append(_build_task(ctx, t, items_path + (i,), literal=True))
    elif "from" in data:
        items = _tasks_from_file(ctx, data, path)
    else:
        ctx.error("missing_key", path, "tasks need `items` (inline) or `from` (a tasks file)",
                  hint='e.g. `items: [{id: t1, input: "..."}]` or `from: tasks.jsonl` (one task per line)')
        return None
    seen: dict[str, int] = {}
    for i, t in enumerate(items):
        if t is None:
            continue
        if t.id in seen:
            ctx.error("duplicate_id", path, f"task id {t.id!r} appears twice (tasks {seen[t.id]} and {i})")
        seen.setdefault(t.id, i)
    if not items:
        ctx.error("empty_value", path, "no tasks")
    return ir.Tasks(tuple(t for t in items if t is not None), suite, path)


def _build_task(ctx: Context, t: dict, path: tuple, literal: bool, file_mark=None) -> ir.Task | None:
    """One task, its id and tags checked; errors at the file row (``file_mark``) for a tasks file."""
    tid = t.get("id")
    if isinstance(tid, int) and not isinstance(tid, bool):
        tid = str(tid)

    def err(code, sub, msg, hint=None):
        if file_mark:
            ctx.diags.append(Diagnostic(code=code, message=msg, hint=hint, **file_mark))
        else:
            ctx.error(code, path + (sub if isinstance(sub, tuple) else (sub,)), msg, hint=hint)

    if not isinstance(tid, str):
        err("invalid_task_id", "id", f"task id must be a string, got {type(tid).__name__}")
        return None
    problem = task_id_problem(tid)
    if problem:
        err("invalid_task_id", "id", f"task id {tid!r} {problem}",
            hint="RELAI selects tasks as ADAPTER::ID, so ids must stay selector-safe")
        return None
    tags = t.get("tags") or []
    if not isinstance(tags, list) or not all(isinstance(x, str) for x in tags):
        err("invalid_tag", "tags", "tags must be a list of strings")
        tags = []
    for j, tag in enumerate(tags):
        p = tag_problem(tag)
        if p:
            err("invalid_tag", ("tags", j), f"tag {tag!r}: {p}")
    split = t.get("split")
    if split is not None and split not in ("train", "val", "test"):
        err("invalid_value", "split", f"split {split!r} is not one of train, val, test")
        split = None
    desc = t.get("description")
    if desc is not None and not isinstance(desc, str):
        desc = json.dumps(desc, ensure_ascii=False)
    meta = t.get("metadata")
    if meta is not None and not isinstance(meta, dict):
        err("wrong_type", "metadata", "task metadata must be an object")
        meta = None
    return ir.Task(tid, desc, t.get("input"), t.get("target"), tuple(tags), split, meta)


def _tasks_from_file(ctx: Context, data: dict, path: tuple) -> list[ir.Task]:
    """The rows of a tasks file (JSON array or .jsonl), each mapped by the task expressions."""
    rel = data["from"]
    f = input_file(ctx, rel, path + ("from",), "tasks file")
    if f is None:
        return []
    exprs = {}
    for key, default in (("id", "id"), ("input", "input"), ("target", "target"), ("tags", "tags"),
                         ("description", "description"), ("split", "split"), ("metadata", "metadata")):
        e = compile_expr(ctx, data.get(key, default), path + (key,), {"tables"})
        if e is None:
            return []
        exprs[key] = e
    read = _read_rows(ctx, f, rel, path)
    if read is None:
        return []
    text, rows = read
    out = []
    scope = {"tables": dict(ctx.tables)}  # once: copying the tables per row was rows x tables
    escapes = _ESCAPED_SURROGATE.search(text) is not None
    for idx, (line, row) in enumerate(rows):
        if escapes and _SURROGATE.search(json.dumps(row, ensure_ascii=False)):
            # JSON can escape half a character (\ud800); no file, catalog or trace could hold it
            ctx.diags.append(Diagnostic(
                code="invalid_character", message=f"{rel}: a lone surrogate (\\ud800-\\udfff) is not a "
                "character", file=str(f), line=line or 1, column=1, path=f"tasks.from[{idx}]",
                hint="write the character itself, or both halves of its surrogate pair"))
            continue
        t = {}
        for key, e in exprs.items():
            try:
                t[key] = e.compiled(row, scope)
            except Exception as exc:  # a runtime type error in a task expression
                ctx.diags.append(Diagnostic(code="task_expression", message=f"{key}: {exc}", file=str(f),
                                            line=line, path=f"tasks.from[{idx}]"))
        fm = {"file": str(f), "line": line, "path": f"tasks.from[{idx}]"}
        out.append(_build_task(ctx, t, path, literal=False, file_mark=fm))
    return out


def _read_rows(ctx: Context, f: Path, rel: str, path: tuple) -> tuple[str, list[tuple[int | None, Any]]] | None:
    """A tasks file's text and rows (with their line numbers for .jsonl), or None (reported)."""
    try:
        if f.stat().st_size > MAX_TASKS_BYTES:
            ctx.error("file_too_large", path + ("from",), f"{rel} is larger than {MAX_TASKS_BYTES} bytes",
                      hint="a tasks file lists tasks; keep their data in files the tasks name")
            return None
        text = safeio.read_contained(f, [f.parent], MAX_TASKS_BYTES).decode("utf-8")
    except (OSError, UnicodeDecodeError, safeio.UnsafePath) as exc:
        ctx.error("unreadable", path + ("from",), f"cannot read {rel}: {exc}")
        return None
    rows: list[tuple[int | None, Any]] = []
    try:
        if f.suffix == ".jsonl":
            for n, line in enumerate(text.splitlines(), 1):
                if line.strip():
                    rows.append((n, json.loads(line)))
        else:
            doc = json.loads(text)
            if not isinstance(doc, list):
                ctx.error("wrong_type", path + ("from",), f"{rel} must hold a JSON array of tasks (or use .jsonl)")
                return None
            rows = [(None, x) for x in doc]
    except json.JSONDecodeError as exc:
        ctx.diags.append(Diagnostic(code="invalid_json", message=f"{rel}: {exc.msg}", file=str(f),
                                    line=exc.lineno if f.suffix != ".jsonl" else n, column=exc.colno,
                                    path="tasks.from"))
        return None
    return text, rows
