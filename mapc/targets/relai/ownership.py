"""What mapc may write into a user's project for the relai target.

A RELAI project belongs to its user. mapc owns exactly two things there: the
adapter folder it generated (recognised by the mark in its ``run.py``) and
its entries in ``.relai/runtime-manifest.json``. The manifest is shared by
every adapter and by Harbor runs, so an existing one is never replaced unless
this adapter's last build wrote it as it is now (its lock says so):

- it already declares everything the spec requires: it is left untouched;
- otherwise the build stops, unless ``--force``: then the spec's entries are
  merged in (added, or replacing the entry of the same name) and every other
  entry and field is kept.

An adapter folder of the same name that mapc did not generate is replaced
only with ``--force``.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from mapc.core.errors import OutputConflict
from mapc.targets.relai.catalog import MANIFEST_PATH, adapter_dir, json_text

_MARK_BYTES = 8192


def generated_by_mapc(folder: Path, mark: str) -> bool:
    """Whether ``folder`` is an adapter folder mapc generated (or is empty)."""
    if not any(folder.iterdir()):
        return True
    from mapc.core import safeio

    try:
        fd = safeio.open_beneath(folder, "run.py")  # never a symlink, a FIFO or a device
    except (OSError, safeio.UnsafePath):
        return False
    with os.fdopen(fd, "rb") as fh:
        head = fh.read(_MARK_BYTES)
    return mark.encode() in head


def reconcile_project(name: str, root: Path, files: dict[str, bytes], *, force: bool, mark: str) -> dict[str, bytes]:
    """``files`` adjusted to the project: raises OutputConflict rather than replace
    what the user owns; merges the runtime manifest when ``force``."""
    files = dict(files)
    rel = adapter_dir(name)
    folder = root / rel
    if folder.exists() or folder.is_symlink():
        if not folder.is_dir() or folder.is_symlink():
            raise OutputConflict(f"{folder} exists and is not a folder; mapc will not replace it",
                                 hint="move it away, or give the spec another `name`")
        if not force and not generated_by_mapc(folder, mark):
            raise OutputConflict(
                f"{folder} holds a RELAI adapter that mapc did not generate; mapc will not overwrite it",
                hint="give the spec another `name`, or pass --force to replace that adapter folder")
    if MANIFEST_PATH in files:
        files = _reconcile_manifest(root, files, force=force, last_written=_last_written(folder, MANIFEST_PATH))
    return files


def _last_written(folder: Path, rel: str) -> str | None:
    """SHA-256 of ``rel`` as this adapter's previous build wrote it (from its lock), if any."""
    from mapc.core.lockfile import LOCK_NAME, LockError, read_lock

    try:
        lock = read_lock(folder / LOCK_NAME)
    except (LockError, OSError):
        return None
    return lock.files.get(rel) if lock is not None else None


def _reconcile_manifest(root: Path, files: dict[str, bytes], *, force: bool,
                        last_written: str | None = None) -> dict[str, bytes]:
    from mapc.core import safeio

    path = root / MANIFEST_PATH
    if not path.exists() and not path.is_symlink():
        return files
    current = safeio.try_read_beneath(root, MANIFEST_PATH)
    if current is not None:
        if current == files[MANIFEST_PATH] or hashlib.sha256(current).hexdigest() == last_written:
            return files  # mapc's own manifest, unchanged since it wrote it: replace freely
    ours = json.loads(files[MANIFEST_PATH])
    try:
        if current is None:
            raise ValueError("it is not a regular file")
        theirs = json.loads(current.decode("utf-8"))
        if not isinstance(theirs, dict):
            raise ValueError("it does not hold a JSON object")
        for key in ("env", "files"):
            if not isinstance(theirs.get(key, []), list):
                raise ValueError(f"its `{key}` is not an array")
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise OutputConflict(f"{path} exists but cannot be merged: {exc}",
                             hint="fix or remove that file, then build again") from None
    missing = _missing_entries(ours, theirs)
    if not missing:
        del files[MANIFEST_PATH]  # the user's manifest already says everything: leave it alone
        return files
    if not force:
        raise OutputConflict(
            f"{path} already exists and does not declare what this spec requires "
            f"({', '.join(missing)}); mapc will not overwrite it",
            hint="pass --force to merge: every entry already there is kept, the spec's entries are "
                 "added (or replace the entry of the same name)")
    files[MANIFEST_PATH] = json_text(merge_manifests(theirs, ours))
    return files


def _key(section: str) -> str:
    return "name" if section == "env" else "path_env"


def _missing_entries(ours: dict, theirs: dict) -> list[str]:
    """Our entries the existing manifest lacks or declares differently (by name)."""
    missing = []
    if theirs.get("schema_version") != ours["schema_version"]:
        missing.append(f"schema_version {ours['schema_version']}")
    for section in ("env", "files"):
        key = _key(section)
        have = {e.get(key): e for e in theirs.get(section, []) if isinstance(e, dict)}
        for entry in ours[section]:
            if have.get(entry[key]) != entry:
                missing.append(entry[key])
    return missing


def merge_manifests(theirs: dict, ours: dict) -> dict:
    """The user's manifest with the spec's entries added or updated by name."""
    merged = dict(theirs)
    merged["schema_version"] = ours["schema_version"]
    for section in ("env", "files"):
        key = _key(section)
        entries = [dict(e) if isinstance(e, dict) else e for e in theirs.get(section, [])]
        index = {e.get(key): i for i, e in enumerate(entries) if isinstance(e, dict)}
        for entry in ours[section]:
            if entry[key] in index:
                entries[index[entry[key]]] = entry
            else:
                entries.append(entry)
        merged[section] = entries
    return merged
