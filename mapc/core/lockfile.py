"""Reading ``mapc.lock.json``: the record a build leaves of the files it wrote (their SHA-256),
its spec, templates and runtime. Low in the layers because a target reads it too (RELAI's
manifest is replaced only if the last build wrote it as it is now); writing a lock is the
pipeline's (:mod:`mapc.pipeline.provenance`)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

LOCK_NAME = "mapc.lock.json"
LOCK_FORMAT = 1


class LockError(ValueError):
    """A ``mapc.lock.json`` that cannot be read as a mapc lock."""


@dataclass(frozen=True)
class Lock:
    """A parsed ``mapc.lock.json``; ``files`` maps output-relative paths to SHA-256."""

    mapc_version: str
    target: str
    spec: str
    spec_sha256: str
    templates_sha256: str
    output: str  # the output folder, relative to the lock's folder
    owned: tuple[str, ...]
    regenerate: str
    files: dict[str, str]
    #: the shared runtime module as the lock records it: {"path", "sha256"}; None before D63
    runtime: dict[str, str] | None = None


def parse_lock(data: bytes) -> Lock:
    try:
        raw = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise LockError(f"not JSON ({exc})") from None
    except RecursionError:
        raise LockError("not a mapc lock (JSON nested too deeply)") from None
    if not isinstance(raw, dict) or raw.get("mapc_lock") != LOCK_FORMAT:
        raise LockError(f"not a mapc lock (format {LOCK_FORMAT})")
    strings = ("mapc_version", "target", "spec", "spec_sha256", "templates_sha256", "output", "regenerate")
    for key in strings:
        if not isinstance(raw.get(key), str):
            raise LockError(f"`{key}` must be a string")
    files, owned = raw.get("files"), raw.get("owned")
    if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
        raise LockError("`files` must map paths to SHA-256 digests")
    if not isinstance(owned, list) or not all(isinstance(v, str) for v in owned):
        raise LockError("`owned` must be a list of paths")
    runtime = raw.get("runtime")
    if runtime is not None and not (isinstance(runtime, dict) and isinstance(runtime.get("path"), str)
                                    and isinstance(runtime.get("sha256"), str)):
        raise LockError("`runtime` must hold the runtime module's `path` and `sha256`")
    return Lock(*(raw[k] for k in strings[:5]), output=raw["output"], owned=tuple(owned),
                regenerate=raw["regenerate"], files=dict(files),
                runtime={"path": runtime["path"], "sha256": runtime["sha256"]} if runtime else None)


#: A lock lists one line per generated file; anything larger is not a lock mapc wrote.
MAX_LOCK_BYTES = 64 << 20


def lock_data(out: Path, lock_rel: str) -> bytes | None:
    """The bytes of the lock ``out/lock_rel``, reached without following a symlink; None when
    there is none. Raises LockError when it is not a regular file (or too large)."""
    from mapc.core import safeio

    try:
        return safeio.read_beneath(out, lock_rel, MAX_LOCK_BYTES)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        return None
    except safeio.UnsafePath as exc:
        raise LockError(str(exc)) from None


def load_lock(out: Path, lock_rel: str) -> Lock | None:
    """The lock of the build in ``out``; None when there is none. Raises LockError (or
    OSError) when it cannot be read as a lock."""
    data = lock_data(out, lock_rel)
    return None if data is None else parse_lock(data)


def read_lock(path: Path) -> Lock | None:
    """The lock at ``path`` (its last component never a symlink); None when there is none."""
    path = Path(path)
    return load_lock(path.parent, path.name)
