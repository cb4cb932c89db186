"""Whether a folder a target owns as a whole may become that target's build output.

A target that owns a folder (RLViz's plugin folder, cap-evolve's output) replaces
it as a whole, and its host reads every file in it: RLViz digests the whole plugin
folder. Building into the spec's own folder, a folder above it, or a folder of
somebody's files kept those files but made them part of the plugin. So:

- the spec's folder and the folders above it are never an output (not even with
  ``--force``): :func:`refuse_spec_folder`;
- any other folder must be new, empty, a previous output of the same target (its
  ``mapc.lock.json`` says so), or hold only files the build writes with the same
  bytes; otherwise only ``--force`` takes it over: :func:`refuse_foreign_folder`.
"""

from __future__ import annotations

import os
from pathlib import Path

from mapc.pipeline.output import OutputConflict, Plan


def folder_hint(suggestion: str) -> str:
    return (f"build into a folder of its own, new or empty, e.g. `-o {suggestion}` (mapc replaces the "
            "folders it owns as a whole, and the host reads every file in them)")


def refuse_spec_folder(folder: Path, *, spec_file: str, target: str, shown_as: str, suggestion: str) -> None:
    """Raise :class:`OutputConflict` when ``folder`` is the spec's folder or one above it."""
    real = Path(os.path.realpath(folder))
    spec_folder = Path(os.path.realpath(spec_file)).parent
    if real != spec_folder and real not in spec_folder.parents:
        return
    where = "the spec's own folder" if real == spec_folder else f"a folder above the spec ({spec_folder})"
    raise OutputConflict(f"mapc will not build the {target} output into {shown_as}: it is {where}, so the "
                         "spec, its fixtures and every other file there would become part of the output",
                         folder_hint(suggestion))


def refuse_foreign_folder(plan: Plan, root: str, *, target: str, lock_target: str | None, force: bool,
                          shown_as: str, suggestion: str) -> None:
    """Raise :class:`OutputConflict` when the owned folder ``root`` of ``plan`` holds files the
    build does not write and is not a previous ``target`` output (``lock_target``: the target
    its lock names, None without a readable lock). Files in the way that the plan already
    refuses whatever ``--force`` says are left to that refusal."""
    if force or lock_target == target or any(not c.forceable for c in plan.conflicts):
        return
    if lock_target is not None:
        raise OutputConflict(f"{shown_as} holds a previous mapc {lock_target} output, not a {target} one; "
                             f"mapc will not turn it into a {target} output", folder_hint(suggestion)
                             + "; or pass --force to replace it")
    inside = [c for c in plan.conflicts if not root or c.path == root or c.path.startswith(root + "/")]
    kept = plan.carried.get(root, [])
    if not inside and not kept:
        return
    found = [c.message for c in inside]
    more = plan.carry.get(root, 0) - len(kept)
    if kept:
        found.append("it holds " + ", ".join(kept) + (f" and {more} more" if more > 0 else "")
                     + " (mapc did not generate " + ("it" if len(kept) + more == 1 else "them") + ")")
    raise OutputConflict(f"{shown_as} is not empty and is not a previous mapc {target} output (it has no "
                         f"mapc.lock.json): {'; '.join(found)}; mapc will not make these files part of the "
                         f"{target} output", folder_hint(suggestion) + "; or pass --force to take this "
                         "folder over (files in the way are overwritten, the others kept in the output)")
