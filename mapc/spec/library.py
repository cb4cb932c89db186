"""The bundled spec library: ready specs for well-known trace formats.

Library specs live in ``specs/<name>.yaml`` (``mapc/_specs`` in a wheel), each
with a small synthetic fixture under ``specs/fixtures/<name>/``. A project
builds on one with ``extends: <name>``; ``mapc specs`` lists them and
``mapc init --from SAMPLE`` asks each one's probe whether it recognises a
sample (:mod:`mapc.tools.init_match`: probing compiles the specs, a pipeline step).
"""

from __future__ import annotations

from pathlib import Path


def library_specs() -> dict[str, Path]:
    """Bundled library specs: name -> file, sorted by name."""
    from mapc.core.resources import specs_dir

    try:
        folder = specs_dir()
    except FileNotFoundError:
        return {}
    return {p.stem: p for p in sorted(folder.glob("*.yaml")) if p.is_file()}


def catalog() -> list[dict]:
    """One entry per library spec: name, format id, container, one-line description, file."""
    from mapc.spec.loader import load_file

    out = []
    for name, path in library_specs().items():
        loaded, _ = load_file(path)
        data = loaded.data if isinstance(loaded.data, dict) else {}
        source = data.get("source") if isinstance(data.get("source"), dict) else {}
        description = " ".join(str(data.get("description", "")).split())
        out.append({
            "name": name,
            "format": source.get("format", ""),
            "container": source.get("container", ""),
            "summary": summary(description),
            "description": description,
            "path": str(path),
        })
    return out


def summary(description: str, width: int = 72) -> str:
    """The first clause of a description (up to its first colon), cut to ``width``."""
    head = description.split(": ", 1)[0].strip() or description
    return head if len(head) <= width else head[: width - 3].rstrip() + "..."
