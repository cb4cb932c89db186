"""Second validation layer: meaning. Builds the IR while collecting problems.

The checks live in :mod:`mapc.spec.checks` (one module per spec section, functions
over an explicit context); this module keeps the entry point and the names other
modules import from here.
"""

from __future__ import annotations

from pathlib import Path

from mapc.spec import ir
from mapc.spec.checks.build import build_spec
from mapc.spec.checks.context import Context
from mapc.spec.checks.exprs import EXPRESSION_MIN_COST, MAX_EXPRESSION_CHARS, MAX_SPEC_EXPRESSION_CHARS
from mapc.spec.checks.names import path_problem, tag_problem, task_id_problem
from mapc.spec.checks.values import iter_exprs
from mapc.spec.loader import LoadedSpec

__all__ = ["Builder", "EXPRESSION_MIN_COST", "MAX_EXPRESSION_CHARS", "MAX_SPEC_EXPRESSION_CHARS", "iter_exprs",
           "path_problem", "tag_problem", "task_id_problem"]


class Builder:
    """Turns schema-valid spec data into :class:`ir.Spec`, collecting diagnostics in ``diags``."""

    def __init__(self, spec: LoadedSpec, base_dir: Path):
        self.context = Context(spec, base_dir)
        self.diags = self.context.diags

    def build(self, tolerant: bool = False) -> ir.Spec | None:
        """Build the IR. ``tolerant`` (after schema errors) only collects what it can."""
        return build_spec(self.context, tolerant)
