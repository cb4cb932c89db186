"""The state one pass over a spec shares: the explicit context every check function takes.

:mod:`mapc.spec.semantic` was one ``Builder`` class whose 57 methods shared its
attributes; the checks are now functions over this object, so what a check reads
and writes is named in one place: the spec (data and positions), where relative
paths resolve, the diagnostics found so far, and the few spec-wide tables (names
bound, carried values, tags used, files read, the expression budget spent).
Everything narrower (the variables in scope, the path of the rule at hand) is an
argument of the function that needs it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mapc.core.diagnostics import Diagnostic, Findings
from mapc.spec.loader import LoadedSpec


class Context:
    """One semantic pass over ``spec``: what it found, and the spec-wide tables it keeps."""

    def __init__(self, spec: LoadedSpec, base_dir: Path):
        self.spec = spec
        self.base_dir = base_dir
        self.diags: list[Diagnostic] = Findings()  # stops the build past MAX_REPORTED errors
        self.bound: dict[str, tuple] = {}  # user variable name -> path where bound
        self.expression_chars = 0  # toward MAX_SPEC_EXPRESSION_CHARS
        self.referenced_files: list[Path] = []
        self.used_tags: set[tuple] = set()
        self.carry_names: dict[str, tuple] = {}  # $carry.<name> in scope -> where declared
        self.tables: dict[str, Any] = {}  # the spec's `tables` (tasks files are mapped with them)
        self.tolerant = False  # after schema errors: collect what can be, skip what cannot

    def dir_of(self, path: tuple) -> Path:
        """Folder that relative paths at ``path`` resolve against: that of the file that
        wrote them (a spec built with `extends` mixes files), else the spec's folder."""
        written = self.spec.mark(path).file
        if written != self.spec.file and Path(written).is_file():
            return Path(written).resolve().parent
        return self.base_dir

    def error(self, code: str, path: tuple, message: str, *, hint: str | None = None,
              key: bool = False, severity: str = "error") -> None:
        self.diags.append(self.spec.diag(code, path, message, hint=hint, key=key, severity=severity))
