"""Code generation: checked JMESPath AST -> Python source (the driver: see the modules below).

The generated function mirrors the reference interpreter node by node, but as
straight-line Python: field chains become ``dict.get`` calls guarded by
``isinstance``, projections and filters become ``for`` loops (or list
comprehensions when simple), comparisons with literals are inlined, and only
the remaining operations call ``jp_*`` runtime units.

Everything taken from the expression text (field names, string literals,
JSON literals) is embedded with :func:`literal_source`, which is built on
``repr()``, so no expression can inject code.

The work is split along its seams: :mod:`.pyexpr` (the :class:`Expr` values and
literal source), :mod:`.emitter` (statements, temporaries, memoized values),
:mod:`.compile_paths`, :mod:`.compile_projections` (with comprehension emission),
:mod:`.compile_logic`, :mod:`.compile_calls` (the node compilers, one mixin each),
:mod:`.layout` and :mod:`.shapes` (pure helpers over text and syntax trees), and
:mod:`.inline` (one-expression forms).
"""

from __future__ import annotations

import ast
import functools

from .compile_calls import CallsMixin
from .compile_logic import LogicMixin
from .compile_paths import PathsMixin
from .compile_projections import ProjectionsMixin
from .emitter import Emitter
from .inline import MAX_INLINE_DEPTH, InlineCompiler
from .layout import _renumber
from .pyexpr import Expr, literal_source, string_source, truth

__all__ = ["Expr", "FunctionCompiler", "InlineCompiler", "MAX_INLINE_DEPTH", "_renumber", "helpers_in",
           "literal_source", "string_source", "truth"]


@functools.lru_cache(maxsize=1)
def _runtime_units() -> frozenset[str]:
    from mapc.core import runtime_files

    return frozenset(runtime_files.unit_names())


def helpers_in(source: str) -> tuple[str, ...]:
    """The runtime units referenced by a piece of Python source, sorted."""
    names = {n.id for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name)}
    return tuple(sorted(names & _runtime_units()))


class FunctionCompiler(PathsMixin, ProjectionsMixin, LogicMixin, CallsMixin, Emitter):
    """Compiles one checked AST into the body of ``def <name>(data, scope)``."""
