"""Recorded traces a relai build replays must be in the project it builds into.

``agent.replay`` names each task's trace relative to the project root (the ``-o``
folder), which is where RELAI's runner looks. A build into a project without them
passed silently, and every task then failed in ``mapc validate``; the build now warns first
(a warning, not an error: a project may get its recorded traces after the adapter is built).
"""

from __future__ import annotations

import os
from pathlib import Path

from mapc.core.diagnostics import Diagnostic
from mapc.runtime.agent_rt import fill_placeholders
from mapc.runtime.mapping_rt import MappingError, contained
from mapc.spec import ir

#: Missing traces named in the message; the rest are counted.
SHOWN = 3


def missing_replays(spec: ir.Spec, project: Path) -> list[Diagnostic]:
    """One warning when recorded traces of ``spec``'s tasks are not under ``project``."""
    agent, tasks = spec.agent, spec.tasks
    if agent is None or not agent.replay or tasks is None or not tasks.items:
        return []
    missing: dict[str, str] = {}  # path -> first task needing it
    for task in tasks.items:
        try:  # {seed} and {candidate} are known only when RELAI runs the task
            rel = fill_placeholders(agent.replay, {"task_id": task.id, "project_root": str(project)})
        except ValueError:
            return []
        try:
            path = contained(project, rel)
        except MappingError:  # a path that leads out fails at run time, with its reason
            continue
        if not os.path.isfile(path):
            missing.setdefault(rel, task.id)
    if not missing:
        return []
    rels = list(missing)
    named = ", ".join(f"{rel} (task {missing[rel]!r})" for rel in rels[:SHOWN])
    more = f" and {len(rels) - SHOWN} more" if len(rels) > SHOWN else ""
    where = _folder_holding(spec, rels[0])
    fix = (f"build into the project that holds them: `-o {where}`" if where is not None
           else f"put the recorded traces there (e.g. {project / rels[0]})")
    return [spec.diag("missing_replay_trace", ("agent", "replay"),
                      f"{'a recorded trace' if len(rels) == 1 else f'{len(rels)} recorded traces'} that "
                      f"agent.replay names {'is' if len(rels) == 1 else 'are'} not in the project {project} "
                      f"(-o): {named}{more}; every task replaying {'it' if len(rels) == 1 else 'them'} "
                      "would fail",
                      hint=f"{fix}; paths in agent.replay are relative to the project root (the -o folder), "
                           "not to the spec", severity="warning")]


def _folder_holding(spec: ir.Spec, rel: str) -> str | None:
    """The spec's folder or one of its subfolders if it holds ``rel``: the project meant."""
    folder = Path(spec.file).resolve().parent
    try:
        candidates = [folder] + sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))
    except OSError:
        return None
    for candidate in candidates:
        try:
            if os.path.isfile(contained(candidate, rel)):
                return os.path.relpath(candidate)
        except MappingError:
            continue
    return None
