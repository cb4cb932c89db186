"""Is a build output current? ``mapc build --check`` and ``--diff``.

The build is rendered in memory exactly as ``mapc build`` would write it and
compared with the disk, file by file. A file that differs is explained with
the previous lock: edited by hand (its bytes are not what mapc wrote), or
stale because the spec changed, or because the templates or mapc changed
(the file is exactly what mapc wrote, but mapc would now write other bytes).
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass
from pathlib import Path

from mapc.pipeline import provenance

#: status -> what it means, in the order the statuses are explained in the docs.
STATUSES = {
    "current": "up to date",
    "spec_changed": "stale: the spec changed since mapc generated it",
    "generator_changed": "stale: mapc or its templates changed since mapc generated it",
    "moved": "stale: the spec or the output folder moved (its header names the old paths)",
    "edited": "edited by hand since mapc generated it",
    "not_generated": "exists, but mapc did not generate it",
    "missing": "not there: a build would create it",
    "extra": "generated before, but the spec no longer produces it: a build would remove it",
    "blocked": "a build would stop here",
}


@dataclass(frozen=True)
class FileStatus:
    path: str
    status: str
    message: str

    def to_dict(self) -> dict:
        return {"path": self.path, "status": self.status, "message": self.message}


@dataclass
class Freshness:
    files: list[FileStatus]
    diff: str = ""

    @property
    def current(self) -> bool:
        return all(f.status == "current" for f in self.files)


def _stale_reason(old: provenance.Lock | None, new: provenance.Origin) -> tuple[str, str]:
    if old is None:
        return "not_generated", STATUSES["not_generated"]
    causes = []
    if old.spec_sha256 != new.spec_sha256:
        causes.append("the spec changed")
    if old.templates_sha256 != new.templates_sha256:
        causes.append(f"the {new.target} templates changed")
    if old.mapc_version != new.mapc_version:
        causes.append(f"mapc {old.mapc_version} -> {new.mapc_version}")
    if old.spec != new.spec:
        causes.append(f"the spec moved ({old.spec} -> {new.spec})")
    elif old.regenerate != new.regenerate:
        causes.append("the output folder moved")
    if not causes:
        return "generator_changed", "stale: mapc now generates other bytes (a development build of mapc?)"
    if old.spec_sha256 != new.spec_sha256:
        status = "spec_changed"
    elif old.templates_sha256 != new.templates_sha256 or old.mapc_version != new.mapc_version:
        status = "generator_changed"
    else:
        status = "moved"
    return status, "stale: " + "; ".join(causes)


def _read(out: Path, rel: str) -> bytes | None:
    """``out/rel`` when it is a regular file reached without a symlink; never a special file."""
    from mapc.core import safeio

    return safeio.try_read_beneath(out, rel)


def check_output(out: Path, files: dict[str, bytes], rendered: set[str], lock_rel: str,
                 origin: provenance.Origin, *, with_diff: bool = False, ownable: list[str] | None = None,
                 owned: list[str] | None = None) -> Freshness:
    """Compare what a build would write (``files``) with ``out``. Files are read only below
    ``out`` and never through a symlink; ``ownable``: where a build may remove stale files;
    ``owned``: the folders the target owns, where code mapc did not write is reported
    (:mod:`mapc.pipeline.planted`)."""
    out = Path(out)
    try:
        old = provenance.load_lock(out, lock_rel)
        lock_error = None
    except (provenance.LockError, OSError) as exc:
        old, lock_error = None, str(exc)
    previous = dict(old.files) if old else {}
    stale = _stale_reason(old, origin)
    statuses: list[FileStatus] = []
    diffs: list[str] = []
    for rel in sorted(files):
        disk = _read(out, rel)
        new = files[rel]
        if disk == new:
            statuses.append(FileStatus(rel, "current", STATUSES["current"]))
            continue
        if disk is None:
            exists = os.path.lexists(out / rel)
            status = FileStatus(rel, "not_generated" if exists else "missing",
                                "exists but is not a regular file" if exists else STATUSES["missing"])
        elif rel == lock_rel:
            status = (FileStatus(rel, "edited", f"unreadable lock: {lock_error}") if lock_error
                      else FileStatus(rel, *stale))
        elif rel in previous and provenance.sha256(disk) == previous[rel]:
            status = FileStatus(rel, *stale)
        elif rel in previous:
            status = FileStatus(rel, "edited", STATUSES["edited"])
        else:
            status = FileStatus(rel, "not_generated", STATUSES["not_generated"])
        statuses.append(status)
        if with_diff:
            diffs.append(_diff(rel, disk, new))
    for rel in sorted(set(previous) - set(rendered)):
        inside = ownable is None or any(r == "" or rel == r or rel.startswith(r + "/") for r in ownable)
        disk = _read(out, rel) if _safe(rel) and inside else None
        if disk is None:
            continue
        edited = provenance.sha256(disk) != previous[rel]
        statuses.append(FileStatus(rel, "extra", STATUSES["extra"] + (" (and edited by hand)" if edited else "")))
        if with_diff:
            diffs.append(_diff(rel, disk, None))
    if owned is not None:
        from mapc.pipeline import planted

        for rel in planted.foreign_code(out, owned, set(files) | set(previous)):
            statuses.append(FileStatus(rel, "not_generated", planted.describe(rel) + "; remove it"))
    return Freshness(statuses, "".join(diffs))


def _safe(rel: str) -> bool:
    from mapc.pipeline.output import OutputConflict, safe_relpath

    try:
        safe_relpath(rel)
        return True
    except OutputConflict:
        return False


def _diff(rel: str, old: bytes | None, new: bytes | None) -> str:
    a = f"a/{rel}" if old is not None else "/dev/null"
    b = f"b/{rel}" if new is not None else "/dev/null"
    try:
        old_text = (old or b"").decode("utf-8")
        new_text = (new or b"").decode("utf-8")
    except UnicodeDecodeError:
        return f"Binary files {a} and {b} differ\n"
    lines = difflib.unified_diff(old_text.splitlines(keepends=True), new_text.splitlines(keepends=True), a, b)
    out = []
    for line in lines:
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def check_build(spec_path: str | Path, target_name: str, out_dir: str | Path, *, with_diff: bool = False):
    """``mapc build --check``: ``(Freshness, diagnostics)``; Freshness is None when the
    spec has errors (then nothing can be compared)."""
    from mapc.pipeline.build import load_checked, output_files, resolve_target, sweep_scratch
    from mapc.pipeline.output import OutputConflict

    target = resolve_target(target_name)
    spec, diags = load_checked(spec_path, target)
    if spec is None:
        return None, diags
    out = Path(out_dir)
    if os.path.lexists(out) and not out.is_dir():
        return Freshness([FileStatus(str(out_dir), "blocked", "the output exists and is not a folder")]), diags
    try:
        output = output_files(spec, target, out)
    except OutputConflict as exc:
        return Freshness([FileStatus("", "blocked", f"a build would stop: {exc}")]), diags
    sweep_scratch(Path(os.path.abspath(out)), output.roots)  # what a killed build left: not the output's
    return check_output(out, output.files, output.rendered, output.lock, output.origin, with_diff=with_diff,
                        ownable=target.ownable_roots(spec), owned=output.roots), diags
