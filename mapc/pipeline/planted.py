"""Code in an output folder that mapc did not write: modules an adapter or its host could import.

Python puts a script's folder first on ``sys.path``, so a ``json.py`` beside
``adapter.py`` was imported instead of the standard library's ``json`` (and
``mapc build``'s own validation ran it). A build keeps the files it did not
generate (they are the user's), so ``mapc build --check``, ``mapc review`` and the
validation of a build look for such code in the folders mapc owns: a file Python
can import (source, bytecode, an extension module), or a symbolic link to a folder
(a package), that the build does not write. Only folders Python can import
through (names that are identifiers) are looked into; ``__pycache__`` too, since
bytecode there can stand in for a source beside it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

#: What Python's import system loads (extension modules end in ``.so``, ``.pyd`` on Windows).
MODULE_SUFFIXES = (".py", ".pyw", ".pyc", ".pyo", ".so", ".pyd")
#: At most this many are reported: a folder of thousands is somebody's project, said already.
LIMIT = 500


def is_module(name: str) -> bool:
    return name.endswith(MODULE_SUFFIXES)


def foreign_code(root: Path, owned: Iterable[str], ours: Iterable[str]) -> list[str]:
    """Paths (relative to ``root``) of importable code in the folders ``owned`` (relative to
    ``root``; ``""`` is all of it) that is not among ``ours`` (what the build writes or the
    lock lists). Nothing is followed through a symbolic link or read."""
    from mapc.pipeline.output import OutputConflict, safe_relpath

    ours = set(ours)
    found: list[str] = []
    for folder in owned:
        try:
            if folder:
                safe_relpath(folder)
        except OutputConflict:
            continue  # an owned folder outside the output: not looked at
        base = root / folder if folder else root
        if folder in ours or os.path.islink(base) or not base.is_dir():
            continue  # a single file (RELAI's runtime manifest), or not a folder
        for dirpath, dirs, names in os.walk(base):
            links = [d for d in dirs if os.path.islink(os.path.join(dirpath, d))]
            dirs[:] = sorted(d for d in dirs if d.isidentifier() and d not in links)
            for name in sorted(n for n in names if is_module(n)) + sorted(d for d in links if d.isidentifier()):
                rel = Path(dirpath, name).relative_to(root).as_posix()
                if rel not in ours:
                    found.append(rel)
            if len(found) >= LIMIT:
                return found[:LIMIT]
    return found


def describe(rel: str) -> str:
    """Why ``rel`` (found by :func:`foreign_code`) matters, in one clause."""
    name = rel.rsplit("/", 1)[-1]
    module = name.split(".", 1)[0]
    if "/__pycache__/" in f"/{rel}":
        return "bytecode mapc did not write: Python loads it in place of the source beside it"
    if not is_module(name):
        return f"a symbolic link to a folder, mapc did not write it: Python imports it as the package {module!r}"
    return (f"Python code mapc did not generate: the adapter (or its host) can import it as {module!r}, "
            "e.g. in place of a standard library module of that name")
