"""The content digest RLViz binds plugin trust to.

SHA-256 over every regular file under the plugin root, in sorted order of
their slash-separated relative names, each contributing ``"<len>:<name>:"``
followed by its bytes. ``.git`` folders and ``.DS_Store`` files are skipped;
``__pycache__`` is included (interpreters may execute it). Executables that
the manifest command resolves to outside the plugin (the ``python3`` on PATH)
are hashed too, under ``@command/<index>/<resolved path>``, so a changed
interpreter also invalidates trust.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path


class DigestError(ValueError):
    """The plugin tree cannot be hashed (escaping symlink, special file, missing command)."""


def _within(root: str, path: str) -> bool:
    return os.path.commonpath([root, path]) == root


def plugin_files(root: str | os.PathLike) -> dict[str, str]:
    """Relative name -> file to read, for every file the digest (and a snapshot) covers."""
    root = os.path.realpath(root)
    files: dict[str, str] = {}
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != ".git")
        for d in dirs:
            if os.path.islink(os.path.join(folder, d)):
                raise DigestError(f"symlinked plugin directories are not supported: {os.path.join(folder, d)}")
        for name in sorted(names):
            if name == ".DS_Store":
                continue
            path = os.path.join(folder, name)
            resolved = path
            if os.path.islink(path):
                resolved = os.path.realpath(path)
                if not _within(root, resolved):
                    raise DigestError(f"plugin symlink {path} escapes plugin root")
                if not os.path.isfile(resolved):
                    raise DigestError(f"plugin symlink target is not a regular file: {path}")
            elif not os.path.isfile(path):
                raise DigestError(f"plugin contains unsupported non-regular file: {path}")
            files[Path(os.path.relpath(path, root)).as_posix()] = resolved
    return files


def content_digest(root: str | os.PathLike, command: tuple[str, ...] | list[str]) -> str:
    """RLViz's plugin digest (hex SHA-256) of ``root`` run with ``command``."""
    root = os.path.realpath(root)
    files = plugin_files(root)
    if not command:
        raise DigestError("plugin command is empty")
    for index, arg in enumerate(command):
        candidate = arg
        if index == 0 and os.sep not in arg:
            found = shutil.which(arg)
            if found is None:
                raise DigestError(f"locate plugin executable {arg!r}: not found on PATH")
            candidate = found
        elif not os.path.isabs(candidate):
            candidate = os.path.join(root, candidate)
        if not os.path.isfile(candidate):
            continue
        resolved = os.path.realpath(candidate)
        if _within(root, resolved):
            continue
        files[f"@command/{index}/{Path(resolved).as_posix()}"] = resolved
    h = hashlib.sha256()
    for name in sorted(files):
        h.update(f"{len(name.encode())}:{name}:".encode())
        with open(files[name], "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()
