"""Where mapc's bundled data lives: templates/ and specs/.

In a built wheel they are packaged as ``mapc/_templates`` and ``mapc/_specs``
(see pyproject.toml); in a source checkout (editable install) they are the
top-level ``templates/`` and ``specs/`` folders next to ``mapc/``.
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


def templates_dir() -> Path:
    return _find("_templates", "templates")


def specs_dir() -> Path:
    return _find("_specs", "specs")
