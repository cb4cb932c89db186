"""Editor support for spec files: the schema file and the modeline that points at it.

yaml-language-server (VS Code's YAML extension, and most editors' YAML support)
completes and checks a YAML file against the JSON Schema named in its first-line
comment ``# yaml-language-server: $schema=PATH``, a path relative to the file.
mapc writes that schema into the project (``.mapc/spec.schema.json`` by default)
rather than naming a URL, so completion works offline and always matches the
installed mapc.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from mapc.spec.schema import modeline, schema_json

#: Where a project keeps the schema of its specs, relative to the project root.
PROJECT_SCHEMA = Path(".mapc") / "spec.schema.json"

__all__ = ["PROJECT_SCHEMA", "SchemaFileError", "modeline", "schema_location", "write_schema"]


class SchemaFileError(ValueError):
    """The schema file cannot be written (a one-line reason)."""


def schema_location(spec_dir: str | Path, cwd: str | Path | None = None) -> Path:
    """Where the schema for a spec in ``spec_dir`` lives: one per project.

    The project root is the current folder when the spec is inside it, else the
    spec's own folder. An existing ``.mapc/spec.schema.json`` between the spec's
    folder and that root is reused (the nearest one), so every spec of a project
    shares one schema.
    """
    spec_dir = Path(os.path.abspath(spec_dir))
    root = Path(os.path.abspath(cwd if cwd is not None else os.getcwd()))
    if root != spec_dir and root not in spec_dir.parents:
        root = spec_dir
    folder = spec_dir
    while True:
        if (folder / PROJECT_SCHEMA).is_file():
            return folder / PROJECT_SCHEMA
        if folder == root:
            return root / PROJECT_SCHEMA
        folder = folder.parent


def _is_mapc_schema(path: Path) -> bool:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    return isinstance(data, dict) and data.get("title") == "mapc spec"


def write_schema(path: str | Path, *, force: bool = False) -> str:
    """Write the spec schema to ``path``: ``"written"``, or ``"current"`` when it already was.

    An older mapc schema there is replaced (it is mapc's file); any other file is
    left alone unless ``force``. The write is atomic.
    """
    from mapc.core import safeio

    path = Path(path)
    text = schema_json()
    if path.is_dir():
        raise SchemaFileError(f"{path} is a directory; give a file name such as {path / 'spec.schema.json'}")
    if path.exists():
        try:
            if path.read_text(encoding="utf-8") == text:
                return "current"
        except (OSError, UnicodeDecodeError):
            pass
        if not force and not _is_mapc_schema(path):
            raise SchemaFileError(f"{path} exists and is not a mapc spec schema; choose another name "
                                  "or pass --force to overwrite it")
    try:
        safeio.write_text_atomic(text, path)
    except OSError as exc:
        raise SchemaFileError(f"cannot write {path}: {exc.strerror or exc}") from None
    return "written"
