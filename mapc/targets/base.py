"""What every target is: the :class:`Target` base class a host's folder subclasses, and the
:class:`ValidationReport` its validator returns. The registry of targets by name is the
package (:mod:`mapc.targets`); the interface is documented in ``docs/targets.md``."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mapc.core.diagnostics import Diagnostic
from mapc.spec import ir

_ENVIRONMENTS: dict[str, Any] = {}  # template folder -> its Jinja environment


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
    #: The folder of this target's Jinja templates (default: ``templates/`` beside the module
    #: that defines the target's class, e.g. ``mapc/targets/rlviz/templates/``).
    templates: Path | None = None
    #: Packages of the host its generated code may import (``mapc review`` allows them), e.g.
    #: cap-evolve's ``cap_evolve``; the standard library modules its templates import are allowed.
    host_packages: frozenset[str] = frozenset()
    #: Where the target comes from: ``built-in``, or the distribution that installed it.
    origin: str = "built-in"

    def template_folder(self) -> Path:
        if self.templates is not None:
            return Path(self.templates)
        return Path(sys.modules[type(self).__module__].__file__).resolve().parent / "templates"

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
        """The runtime module every build for this target writes (``mapc.core.runtime_files.SharedRuntime``)."""
        from mapc.core.runtime_files import shared_runtime

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

        Raise ``mapc.pipeline.output.OutputConflict`` rather than replace a file the user
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
