"""Golden files: compare output with a checked-in file, or rewrite it on request.

Update every golden file with one command:

    MAPC_UPDATE_GOLDENS=1 python -m pytest tests

A failing comparison prints that command.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

UPDATE_COMMAND = "MAPC_UPDATE_GOLDENS=1 python -m pytest tests"


def updating() -> bool:
    return os.environ.get("MAPC_UPDATE_GOLDENS") == "1"


def assert_golden(path: Path, actual: str) -> None:
    """Assert ``actual`` equals the text in ``path`` (or write it when updating)."""
    path = Path(path)
    if updating():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8")
        return
    if not path.exists():
        raise AssertionError(f"golden file {path} is missing; create it with:\n  {UPDATE_COMMAND}")
    expected = path.read_text(encoding="utf-8")
    if expected != actual:
        diff = "".join(
            difflib.unified_diff(
                expected.splitlines(keepends=True),
                actual.splitlines(keepends=True),
                fromfile=f"{path} (golden)",
                tofile="actual",
                n=2,
            )
        )
        raise AssertionError(
            f"output differs from golden file {path}:\n{diff[:4000]}\n"
            f"If the change is intended, update the golden files with:\n  {UPDATE_COMMAND}"
        )
