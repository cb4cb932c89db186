"""Writing generated files to disk without ever leaving a half-written output.

Minimal version: every file is written to a temporary name in its final
folder and moved into place with ``os.replace``, so each file is either the
old or the new version. Paths are checked to stay inside the output folder.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path, PurePosixPath


class OutputConflict(Exception):
    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.hint = hint


def safe_relpath(rel: str) -> PurePosixPath:
    p = PurePosixPath(rel)
    if p.is_absolute() or any(part in ("", "..") for part in p.parts) or not p.parts:
        raise OutputConflict(f"refusing to write outside the output folder: {rel!r}")
    return p


def atomic_write(path: Path, data: bytes, mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".mapc-tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_output(out_dir: Path, files: dict[str, bytes], *, roots: list[str] | None = None,
                 force: bool = False) -> None:
    out_dir = Path(out_dir)
    for rel in sorted(files):
        p = safe_relpath(rel)
        mode = 0o755 if rel.endswith((".py",)) and files[rel].startswith(b"#!") else 0o644
        atomic_write(out_dir.joinpath(*p.parts), files[rel], mode)
