"""Function calls and ``&expr`` arguments (local functions hoisted before the body)."""

from __future__ import annotations

from .functions import BOOLEAN_FUNCTIONS, FUNCTIONS, NON_NULL_FUNCTIONS
from .pyexpr import _call, _name


class CallsMixin:
    """Node compilers of :class:`~mapc.expressions.compiler.FunctionCompiler` (see :mod:`.emitter`)."""

    def _expref(self, node, cur):
        """An ``&expr`` argument: a local function hoisted to the top of the body."""
        name = self.new("expr")
        saved, self._nonnull = self._nonnull, set()  # "value" is a new variable here
        memo, self._memo = self._memo, {}  # a function of its own, defined before the body
        try:
            with self.capture() as lines:
                body = self.compile(node["children"][0], "value")
                self.emit_statement("return ", body)
        finally:
            self._nonnull, self._memo = saved, memo
        self._prelude.append((0, f"def {name}(value):"))
        self._prelude.extend((depth + 1, line) for depth, line in lines)
        self._prelude.append((0, ""))
        return _name(name)

    def _function_expression(self, node, cur):
        name = node["value"]
        sig = FUNCTIONS[name]
        args = self.operands(self.compile_all(node["children"], cur))
        return _call(
            self.use_helper(sig.helper),
            [a.src for a in args],
            boolean=name in BOOLEAN_FUNCTIONS,
            nonnull=name in NON_NULL_FUNCTIONS,
        )


#: Functions that never raise, whatever their arguments: called in line (no function of
