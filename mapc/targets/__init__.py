"""Targets: one module per host, discovered automatically.

A target module in this package defines ``TARGET``, an instance of a
:class:`Target` subclass. Adding a target means adding a module here and a
template folder under ``templates/``; nothing else changes.

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
import pkgutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mapc.diagnostics import Diagnostic
from mapc.targets._installed import ENTRY_POINT_GROUP, entry_points, load
from mapc.spec import ir


_ENVIRONMENTS: dict[str, Any] = {}  # template folder -> its Jinja environment


def render_template(name: str, **context: Any) -> str:
    """``mapc.codegen.templating.render_template``, imported when a target first renders: the
    targets are loaded for every command, Jinja only for those that build (``mapc run``
    keeps its memory for the mapping)."""
    from mapc.codegen.templating import render_template as render

    return render(name, **context)


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
    #: The folder of this target's Jinja templates (default: mapc's ``templates/<name>/``).
    templates: Path | None = None
    #: Where the target comes from: ``built-in``, or the distribution that installed it.
    origin: str = "built-in"

    def template_folder(self) -> Path:
        from mapc.resources import templates_dir

        return Path(self.templates) if self.templates is not None else templates_dir() / self.name

    def render_template(self, template: str, /, **context: Any) -> str:
        """Render ``template`` from :meth:`template_folder` with mapc's escaping filters."""
        folder = str(self.template_folder())
        if folder not in _ENVIRONMENTS:
            from mapc.codegen.templating import environment

            _ENVIRONMENTS[folder] = environment(folder)
        return _ENVIRONMENTS[folder].get_template(template).render(**context)

    #: Runtime modules (``mapc/runtime/*.py``) this target's runtime holds besides the core.
    runtime_modules: tuple[str, ...] = ()
    #: Whether the host reads events' semantic views (``MapState(semantics=True)``: role,
    #: content... of each event, a trajectory's ``final_output``); if not, no code computes them.
    semantic_views: bool = True

    def raw_events(self, spec: ir.Spec) -> bool:
        """Whether this target's options (the spec's ``targets.<name>``) copy every source
        element into its event's `raw`; the code generator takes it as a parameter."""
        return False

    def shared_runtime(self):
        """The runtime module every build for this target writes (``mapc.runtime_files.SharedRuntime``)."""
        from mapc.runtime_files import shared_runtime

        return shared_runtime(self.name, self.runtime_modules)

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

    def ownable_roots(self, spec: ir.Spec) -> list[str]:
        """Everything the target may have owned in an earlier build of this spec: stale files
        are removed only there, whatever a (possibly tampered) lock lists."""
        return self.owned_roots(spec)

    def reconcile(self, spec: ir.Spec, out_dir: Path, files: dict[str, bytes], *, force: bool) -> dict[str, bytes]:
        """Adjust ``files`` to what already exists in ``out_dir``, just before writing.

        Raise ``mapc.output.OutputConflict`` rather than replace a file the user
        owns; return the files to write (e.g. merged with a user's file when
        ``force``). The default writes ``files`` as rendered.
        """
        return files

    def output_problems(self, spec: ir.Spec, out_dir: Path) -> list[Diagnostic]:
        """What in ``out_dir`` would make the built output fail its host (e.g. recorded traces
        the spec replays that are not there), checked before a validating build writes."""
        return []

    def validate_build(self, spec: ir.Spec, out_dir: Path) -> ValidationReport | None:
        """Run the built-in validator right after a build (e.g. on the spec's fixtures)."""
        return None

    def validate(self, out_dir: Path, sources: list[Path], options: dict[str, Any]) -> ValidationReport:
        """``mapc validate --target NAME``."""
        raise NotImplementedError


_BUILTIN: dict[str, Target] | None = None
_INSTALLED: dict[str, tuple[Target | None, str | None]] = {}  # name -> (target, problem), once loaded


def builtin_targets() -> dict[str, Target]:
    """The targets of this package (mapc's own): no installed package is imported."""
    global _BUILTIN
    if _BUILTIN is None:
        found: dict[str, Target] = {}
        package = Path(__file__).resolve().parent
        for info in sorted(pkgutil.iter_modules([str(package)]), key=lambda m: m.name):
            if info.name.startswith("_"):
                continue
            module = importlib.import_module(f"{__name__}.{info.name}")
            target = getattr(module, "TARGET", None)
            if isinstance(target, Target) and target.name:
                found[target.name] = target
        _BUILTIN = found
    return _BUILTIN


def target_names() -> list[str]:
    """Every target name, built-in or declared by an installed package, sorted; from package
    metadata alone, so listing names imports nothing."""
    return sorted(set(builtin_targets()) | set(entry_points()[0]))


def _installed_target(name: str) -> tuple[Target | None, str | None]:
    """Load the installed package target ``name`` (once; isolated, see ``_installed``)."""
    if name not in _INSTALLED:
        declared, unreadable = entry_points()
        if name in declared:
            _INSTALLED[name] = load(declared[name], builtin=name in builtin_targets())
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
    if name in builtin_targets():
        return load(declared[name], builtin=True)[1] if name in declared else None
    return _installed_target(name)[1]


def get_target(name: str) -> Target | None:
    """The target ``name``: a built-in one, else the installed package's, loading that package
    alone."""
    builtin = builtin_targets().get(name)
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
