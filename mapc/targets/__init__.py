"""Targets by name: the built-in ones, listed below and each imported only when asked for,
and those of installed packages.

A built-in target is a folder ``mapc/targets/<name>/`` whose ``__init__.py`` defines
``TARGET``, an instance of a :class:`~mapc.targets.base.Target` subclass; the folder also
holds its Jinja templates (``templates/``), its validator (``validator/``) and its host
rules. Adding one means adding that folder, its runtime module (``mapc/runtime/``) and its
name to :data:`BUILTIN`; no target imports another (what they share is in this package's
own modules: ``base``, ``testdata``, ``atif_rules``).

Targets also come from other installed packages, through the ``mapc.targets``
entry-point group (name: the target's name; value: a module defining ``TARGET``,
or the ``Target`` object or class itself), so a host can ship its target without
forking mapc. Built-in targets keep their names; a package target is imported only
when a command names it, and one that cannot be loaded (an exception, ``sys.exit``, a
hang) is reported in one line when it is asked for, and never stops the others
(``_installed``). The interface is documented in ``docs/targets.md``.
"""

from __future__ import annotations

import importlib

from mapc.core.diagnostics import Diagnostic
from mapc.spec import ir
from mapc.targets._installed import ENTRY_POINT_GROUP, entry_points, load
from mapc.targets.base import Target, ValidationReport

__all__ = ["BUILTIN", "Target", "ValidationReport", "get_target", "target_names", "targets", "target_problem",
           "target_problems", "check_target_options"]

#: The built-in targets: name -> the folder (module) under ``mapc/targets/`` that defines it.
BUILTIN = {"rlviz": "rlviz", "relai": "relai", "cap-evolve": "capevolve", "atif": "atif"}

_LOADED: dict[str, Target] = {}  # built-in targets imported so far
_INSTALLED: dict[str, tuple[Target | None, str | None]] = {}  # name -> (target, problem), once loaded


def builtin_target(name: str) -> Target | None:
    """The built-in target ``name``, importing its folder alone (None if there is none)."""
    if name not in BUILTIN:
        return None
    if name not in _LOADED:
        module = importlib.import_module(f"{__name__}.{BUILTIN[name]}")  # by name, like sqlglot's dialects
        _LOADED[name] = module.TARGET
    return _LOADED[name]


def builtin_targets() -> dict[str, Target]:
    """The targets of this package (mapc's own): no installed package is imported."""
    return {name: builtin_target(name) for name in sorted(BUILTIN)}


def target_names() -> list[str]:
    """Every target name, built-in or declared by an installed package, sorted; from package
    metadata alone, so listing names imports nothing."""
    return sorted(set(BUILTIN) | set(entry_points()[0]))


def _installed_target(name: str) -> tuple[Target | None, str | None]:
    """Load the installed package target ``name`` (once; isolated, see ``_installed``)."""
    if name not in _INSTALLED:
        declared, unreadable = entry_points()
        if name in declared:
            _INSTALLED[name] = load(declared[name], builtin=name in BUILTIN)
        else:
            _INSTALLED[name] = (None, unreadable and f"target {name!r}: {unreadable}")
    return _INSTALLED[name]


def targets() -> dict[str, Target]:
    """Every usable target by name: built-in ones and those of installed packages (this loads
    every installed one: commands that use one target call :func:`get_target`)."""
    found = dict(builtin_targets())
    for name in target_names():
        if name not in found:
            target, _ = _installed_target(name)
            if target is not None:
                found[name] = target
    return found


def target_problems() -> dict[str, str]:
    """Targets of installed packages that could not be used: name -> one line saying why,
    naming the distribution and the entry point."""
    declared, unreadable = entry_points()
    problems = {ENTRY_POINT_GROUP: unreadable} if unreadable else {}
    for name in declared:
        problem = target_problem(name)
        if problem:
            problems[name] = problem
    return problems


def target_problem(name: str) -> str | None:
    """Why the target ``name`` of an installed package cannot be used (None if it can, or if
    no package declares it)."""
    declared = entry_points()[0]
    if name in BUILTIN:
        return load(declared[name], builtin=True)[1] if name in declared else None
    return _installed_target(name)[1]


def get_target(name: str) -> Target | None:
    """The target ``name``: a built-in one, else the installed package's, loading that package
    alone."""
    builtin = builtin_target(name)
    return builtin if builtin is not None else _installed_target(name)[0]


def check_target_options(spec: ir.Spec) -> list[Diagnostic]:
    """A warning for each ``targets:`` entry no installed target has (a typo, or a missing package)."""
    if not spec.targets:
        return []
    from mapc.spec.schema_check import suggest

    known = target_names()
    out = []
    for name, _ in spec.targets:
        if name in known:
            continue
        hint = suggest(name, known) or "install the package that provides it, or remove the entry"
        out.append(spec.diag("unknown_target", ("targets", name),
                             f"no installed target is named {name!r} (targets: {', '.join(sorted(known))})",
                             hint=hint, severity="warning", key=True))
    return out
