"""Compile generated Python as ``python -W error`` does (used by the build tests of every area).

An invalid escape such as ``\\q`` in a string or docstring is only a warning
(DeprecationWarning, SyntaxWarning from Python 3.12): the file runs, noisily, on every
start, and ``python -W error`` refuses it. Generated files must compile cleanly.
"""

from __future__ import annotations

import warnings
from pathlib import Path


def compile_strictly(source: str, name: str = "<generated>"):
    """``compile`` with every warning an error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return compile(source, name, "exec")


def compile_folder_strictly(folder: Path) -> list[str]:
    """Every ``.py`` file under ``folder`` compiled strictly; returns their relative paths."""
    seen = []
    for path in sorted(Path(folder).rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        compile_strictly(path.read_text(encoding="utf-8"), str(path))
        seen.append(path.relative_to(folder).as_posix())
    return seen
