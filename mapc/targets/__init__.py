"""Targets: one module per host, discovered automatically.

A target module in this package defines ``TARGET``, an instance of a
:class:`Target` subclass. Adding a target means adding a module here and a
template folder under ``templates/``; nothing else changes.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mapc.diagnostics import Diagnostic
from mapc.spec import ir


@dataclass
class ValidationReport:
    """What a built-in validator found. ``payload`` is the target's JSON report."""

    ok: bool
    payload: dict[str, Any]
    text: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    #: one row per source or case validated: source, records, warnings, ok (the summary table)
    items: list[dict[str, Any]] = field(default_factory=list)


class Target:
    """Base class for targets. Subclasses set ``name`` and implement the hooks."""

    name: str = ""
    description: str = ""

    def check(self, spec: ir.Spec) -> list[Diagnostic]:
        """Spec requirements of this host (e.g. fixtures, tasks, naming rules)."""
        return []

    def render(self, spec: ir.Spec, program, out_dir: Path) -> dict[str, bytes]:
        """Generated files: path relative to the output directory -> content."""
        raise NotImplementedError

    def owned_roots(self, spec: ir.Spec) -> list[str]:
        """Sub-paths of the output directory that mapc owns entirely (swapped atomically).

        The default is the whole output directory (``""``). A target that writes
        into a user's project (RELAI) returns only its own folders.
        """
        return [""]

    def reconcile(self, spec: ir.Spec, out_dir: Path, files: dict[str, bytes], *, force: bool) -> dict[str, bytes]:
        """Adjust ``files`` to what already exists in ``out_dir``, just before writing.

        Raise ``mapc.output.OutputConflict`` rather than replace a file the user
        owns; return the files to write (e.g. merged with a user's file when
        ``force``). The default writes ``files`` as rendered.
        """
        return files

    def validate_build(self, spec: ir.Spec, out_dir: Path) -> ValidationReport | None:
        """Run the built-in validator right after a build (e.g. on the spec's fixtures)."""
        return None

    def validate(self, out_dir: Path, sources: list[Path], options: dict[str, Any]) -> ValidationReport:
        """``mapc validate --target NAME``."""
        raise NotImplementedError


def _discover() -> dict[str, Target]:
    found: dict[str, Target] = {}
    package = Path(__file__).resolve().parent
    for info in sorted(pkgutil.iter_modules([str(package)]), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        target = getattr(module, "TARGET", None)
        if isinstance(target, Target) and target.name:
            found[target.name] = target
    return found


_TARGETS: dict[str, Target] | None = None


def targets() -> dict[str, Target]:
    global _TARGETS
    if _TARGETS is None:
        _TARGETS = _discover()
    return _TARGETS


def get_target(name: str) -> Target | None:
    return targets().get(name)
