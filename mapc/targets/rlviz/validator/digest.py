"""The content digest RLViz binds plugin trust to (``internal/plugins/digest.go``).

SHA-256 over every regular file under the plugin root, in sorted order of
their slash-separated relative names (compared as bytes, as Go compares
strings), each contributing ``"<len>:<name>:"`` followed by its bytes.
``.git`` folders and ``.DS_Store`` files are skipped; ``__pycache__`` is
included (interpreters may execute it). A symlink is followed only to a
regular file inside the root (a ``.git`` symlink too: only real ``.git``
folders are skipped). Executables that the manifest command resolves to
outside the plugin (the ``python3`` on PATH) are hashed too, under
``@command/<index>/<resolved path>``, so a changed interpreter also
invalidates trust.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from typing import Mapping


class DigestError(ValueError):
    """The plugin tree cannot be hashed (escaping symlink, special file, missing command)."""


def _within(root: str, path: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def plugin_files(root: str | os.PathLike) -> dict[str, str]:
    """Relative name -> file to read, for every file the digest (and a snapshot) covers."""
    root = os.path.realpath(root)
    files: dict[str, str] = {}
    for folder, dirs, names in os.walk(root):
        kept = []
        for d in sorted(dirs):
            path = os.path.join(folder, d)
            if os.path.islink(path):  # a symlink, even one named .git, is not a folder to RLViz
                target = os.path.realpath(path)
                if not _within(root, target):
                    raise DigestError(f"plugin symlink {path} escapes plugin root")
                raise DigestError(f"symlinked plugin directories are not supported: {path}")
            if d != ".git":
                kept.append(d)
        dirs[:] = kept
        for name in sorted(names):
            if name == ".DS_Store":
                continue
            path = os.path.join(folder, name)
            resolved = path
            if os.path.islink(path):
                try:
                    resolved = os.path.realpath(path, strict=True)
                except OSError as exc:
                    raise DigestError(f"plugin symlink {path}: {exc.strerror or exc}") from None
                if not _within(root, resolved):
                    raise DigestError(f"plugin symlink {path} escapes plugin root")
                if not os.path.isfile(resolved):
                    raise DigestError(f"plugin symlink target is not a regular file: {path}")
            elif not os.path.isfile(path):
                raise DigestError(f"plugin contains unsupported non-regular file: {path}")
            files[os.path.relpath(path, root)] = resolved
    return files


def content_digest(root: str | os.PathLike, command: tuple[str, ...] | list[str],
                   env: Mapping[str, str] | None = None) -> str:
    """RLViz's plugin digest (hex SHA-256) of ``root`` run with ``command`` (``env``: whose PATH)."""
    root = os.path.realpath(root)
    files = plugin_files(root)
    if not command:
        raise DigestError("plugin command is empty")
    path_var = (os.environ if env is None else env).get("PATH", os.defpath)
    for index, arg in enumerate(command):
        candidate = arg
        if index == 0 and "/" not in arg:
            found = shutil.which(arg, path=path_var)
            if found is None:
                raise DigestError(f'locate plugin executable "{arg}": executable file not found in $PATH')
            candidate = found
        elif not os.path.isabs(candidate):
            candidate = os.path.join(root, candidate)
        if not os.path.isfile(candidate):
            continue
        resolved = os.path.realpath(candidate)
        if _within(root, resolved):
            continue
        files[f"@command/{index}/{resolved}"] = resolved
    h = hashlib.sha256()
    for name in sorted(files, key=os.fsencode):
        encoded = os.fsencode(name)
        h.update(b"%d:%s:" % (len(encoded), encoded))
        with open(files[name], "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()
