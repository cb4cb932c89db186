"""Where mapc's bundled library specs live: ``specs/``.

In a built wheel they are packaged as ``mapc/_specs`` (see pyproject.toml); in a source
checkout (editable install) they are the top-level ``specs/`` folder next to ``mapc/``.
Templates are package data beside the code that renders them (``mapc/targets/<name>/templates/``,
``mapc/tools/templates/``), found from ``__file__``.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parents[1]  # mapc/


def _find(installed: str, checkout: str) -> Path:
    inside = _PACKAGE / installed
    if inside.is_dir():
        return inside
    beside = _PACKAGE.parent / checkout
    if beside.is_dir():
        return beside
    raise FileNotFoundError(f"mapc data folder {checkout!r} is missing from this installation")


def specs_dir() -> Path:
    return _find("_specs", "specs")
