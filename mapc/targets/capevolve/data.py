"""The data files a cap-evolve adapter folder carries: tasks, splits, recorded traces.

cap-evolve loads ``PROJECT/adapters/adapter.py`` and the adapter finds its data
next to itself, so everything it reads must travel inside the folder:
``tasks.jsonl`` (the spec's tasks), ``splits.json`` (when the spec assigns
splits: cap-evolve's ``split_ids_file``) and, for a replay agent, the recorded
traces under ``traces/`` with the replay template rewritten to point there.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from mapc.runtime.agent_rt import fill_placeholders
from mapc.spec import ir

TRACES_DIR = "traces"
#: Placeholders a recorded trace path may use: the task, and the trial's seed.
REPLAY_PLACEHOLDERS = ("task_id", "seed")
#: Files looked at when a replay template has `{seed}` (a bound on the folder walk).
MAX_SCANNED_FILES = 100_000
#: cap-evolve writes rollouts/<split>/<task_id>__<tag>__t<k>.json: ids must be file names.
MAX_TASK_ID_BYTES = 200


def task_rows(spec: ir.Spec) -> list[dict]:
    """One ``tasks.jsonl`` row per task: id, input, target, then what the spec gave."""
    rows = []
    suite = list(spec.tasks.suite_tags) if spec.tasks else []
    for t in spec.tasks.items if spec.tasks else ():
        row = {"id": t.id, "input": t.input, "target": t.target}
        tags = list(dict.fromkeys(list(t.tags) + suite))
        if t.metadata:
            row["metadata"] = t.metadata
        if tags:
            row["tags"] = tags
        if t.split:
            row["split"] = t.split
        if t.description:
            row["description"] = t.description
        rows.append(row)
    return rows


def tasks_jsonl(rows: list[dict]) -> bytes:
    """JSON Lines; values YAML reads as dates become their ISO text."""
    lines = [json.dumps(row, ensure_ascii=False, allow_nan=False, default=_plain) for row in rows]
    return ("\n".join(lines) + "\n").encode("utf-8")


def _plain(value):
    if hasattr(value, "isoformat"):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON")


def splits_json(rows: list[dict]) -> bytes | None:
    """cap-evolve's ``split_ids_file`` when the spec assigns splits, else None."""
    if not any(row.get("split") for row in rows):
        return None
    doc = {name: [r["id"] for r in rows if r.get("split") == name] for name in ("train", "val", "test")}
    return (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def task_id_file_problem(task_id: str) -> str | None:
    """Why cap-evolve cannot use ``task_id`` as part of a file name, or None."""
    if "/" in task_id:
        return "contains `/`"
    if len(task_id.encode("utf-8")) > MAX_TASK_ID_BYTES:
        return f"is longer than {MAX_TASK_ID_BYTES} bytes"
    return None


# --- recorded traces -------------------------------------------------------------------


def _first_placeholder(template: str) -> int:
    """Index of the first ``{name}`` (``{{`` is a literal brace), or the length."""
    i = 0
    while i < len(template):
        if template.startswith("{{", i) or template.startswith("}}", i):
            i += 2
        elif template[i] == "{":
            return i
        else:
            i += 1
    return len(template)


def _unescape(text: str) -> str:
    return text.replace("{{", "{").replace("}}", "}")


@dataclass
class ReplayPlan:
    """Where the recorded traces come from and where they go inside the adapter folder."""

    template: str  # the rewritten replay template, relative to the adapter folder
    base: Path  # the folder the traces are copied from
    base_text: str  # that folder as the spec wrote it (relative to the spec's folder)
    files: dict[str, Path] = field(default_factory=dict)  # "traces/..." -> source file
    missing: list[str] = field(default_factory=list)  # task ids without a recorded trace
    problem: str | None = None  # why the template cannot be laid out


def replay_plan(spec: ir.Spec, cwd: Path | None = None) -> ReplayPlan | None:
    """The traces a replay agent needs, or None when the agent runs a command.

    Recorded traces are looked up relative to the spec's folder, then relative
    to the current directory (the project root, which is what RELAI and
    ``agent.trace`` read paths against); the first folder holding any of them
    is used. The part of the template before its first placeholder names a
    folder (the base); the rest is kept, under ``traces/``, so file names (and
    the sibling files and ``$source`` values the mapping may read) stay as
    recorded.
    """
    agent = spec.agent
    if agent is None or not agent.replay:
        return None
    template = agent.replay.replace("\\", "/")
    cut = _first_placeholder(template)
    fixed = template[:cut]
    base_text = fixed.rsplit("/", 1)[0] if "/" in fixed else ""
    rest = template[len(base_text) + 1 :] if base_text else template
    roots = list(dict.fromkeys([Path(spec.file).resolve().parent, (cwd or Path.cwd()).resolve()]))
    plans = [_plan_from(spec, root, base_text, rest) for root in roots]
    for plan in plans:
        if plan.problem or plan.files:
            return plan
    return plans[0]


def _plan_from(spec: ir.Spec, root: Path, base_text: str, rest: str) -> ReplayPlan:
    from mapc.core import safeio

    base = (root / _unescape(base_text)).resolve()
    plan = ReplayPlan(template=f"{TRACES_DIR}/{rest}", base=base, base_text=_unescape(base_text) or ".")
    parts = PurePosixPath(rest).parts
    if not rest or rest.startswith("/") or ".." in parts or "." in parts:
        plan.problem = "after its first placeholder the path must go down, without `.` or `..`"
        return plan
    roots = safeio.input_roots(root)
    if not any(safeio.within(base, os.path.realpath(r)) for r in roots):
        plan.problem = (f"the recorded traces' folder {plan.base_text} is outside the spec's folder and the "
                        f"current folder; {safeio.outside_hint(root)}")
        return plan
    rows = task_rows(spec)
    if "{seed}" in _placeholder_free(rest):
        found = _scan(base, rest, rows)
    else:
        found = {}
        for row in rows:
            rel = fill_placeholders(rest, {"task_id": row["id"]})
            found[row["id"]] = [rel] if os.path.lexists(base / rel) else []
    for row in rows:
        rels = found.get(row["id"]) or []
        if not rels:
            plan.missing.append(row["id"])
        for rel in rels:
            try:
                path = safeio.contained_file(base / rel, roots)
            except FileNotFoundError:
                plan.missing.append(row["id"])
                continue
            except (OSError, safeio.UnsafePath) as exc:
                plan.problem = f"the recorded trace {plan.base_text}/{rel} {exc}; {safeio.outside_hint(root)}"
                return plan
            plan.files[f"{TRACES_DIR}/{rel}"] = path
            for name, sibling in _siblings(base / rel, spec.source.siblings, roots):
                plan.files.setdefault(f"{TRACES_DIR}/{PurePosixPath(rel).parent / name}", sibling)
    return plan


def _placeholder_free(template: str) -> str:
    """The template with literal braces removed, so ``{seed}`` tests are exact."""
    return template.replace("{{", "").replace("}}", "")


def _scan(base: Path, rest: str, rows: list[dict]) -> dict[str, list[str]]:
    """Recorded traces for a template with ``{seed}``: every file whose path fits, per task."""
    pieces = []
    i = 0
    while i < len(rest):
        if rest.startswith("{{", i) or rest.startswith("}}", i):
            pieces.append(re.escape(rest[i]))
            i += 2
        elif rest[i] == "{":
            end = rest.index("}", i)
            pieces.append("(?P<seed>[0-9]+)" if rest[i + 1 : end] == "seed" else "(?P<task_id>.+?)")
            i = end + 1
        else:
            pieces.append(re.escape(rest[i]))
            i += 1
    pattern = re.compile("".join(pieces))
    ids = {row["id"] for row in rows}
    found: dict[str, list[str]] = {}
    seen = 0
    for folder, dirs, names in os.walk(base):
        dirs.sort()
        for name in sorted(names):
            seen += 1
            if seen > MAX_SCANNED_FILES:
                return found
            rel = (Path(folder) / name).relative_to(base).as_posix()
            m = pattern.fullmatch(rel)
            if m is None:
                continue
            task_id = m.groupdict().get("task_id")
            if task_id is None:
                for tid in ids:
                    found.setdefault(tid, []).append(rel)
            elif task_id in ids:
                found.setdefault(task_id, []).append(rel)
    return found


def _siblings(trace: Path, siblings, roots) -> list[tuple[str, Path]]:
    """The sibling files the mapping reads next to ``trace`` (first existing candidate each,
    a regular file inside ``roots``)."""
    from mapc.core import safeio

    out = []
    for _, candidates in siblings:
        for template in candidates:
            name = template.replace("{stem}", trace.stem).replace("{name}", trace.name)
            if "/" in name or "\\" in name or name in (".", ".."):
                continue
            try:
                out.append((name, safeio.contained_file(trace.parent / name, roots)))
                break
            except (OSError, safeio.UnsafePath):
                continue
    return out


def read_trace(path: Path) -> bytes:
    """A recorded trace or sibling planned by :func:`replay_plan`, read without following links."""
    from mapc.core import safeio

    return safeio.read_contained(path, [path.parent])
