"""Comparisons and boolean operators: inlined where Python's operators mean JMESPath's."""

from __future__ import annotations

from .layout import _TEMP
from .paths import chain_steps as _chain_steps
from .pyexpr import _ORDERING, AND, CMP, COND, NOT, OR, Expr, _call, _name, truth


class LogicMixin:
    """Node compilers of :class:`~mapc.expressions.compiler.FunctionCompiler` (see :mod:`.emitter`)."""

    def _comparator(self, node, cur):
        op = node["value"]
        left, right = self.operands(self.compile_all(node["children"], cur))
        if op in ("eq", "ne"):
            return self._equality(left, right, negate=op == "ne")
        symbol, helper = _ORDERING[op]
        return _call(self.use_helper(helper), [left.src, right.src], boolean=True)

    def _equality(self, left: Expr, right: Expr, negate: bool) -> Expr:
        if left.const is not None and right.const is None:
            left, right = right, left
        if right.const is None or left.const is not None:
            e = _call(self.use_helper("jp_eq"), [left.src, right.src], pure=left.pure and
                      right.pure, boolean=True, nonnull=True)
            if negate:
                return Expr(f"not {e.src}", NOT, pure=e.pure, boolean=True, nonnull=True)
            return e
        value = right.const[0]
        flags = dict(pure=left.pure, boolean=True, nonnull=True)
        operand = left.paren(CMP)
        if value is None or value is True or value is False:
            return Expr(f"{operand} is {'not ' if negate else ''}{value!r}", CMP, **flags)
        if isinstance(value, (int, float)) and value in (0, 1):
            # 0 and 1 equal False and True in Python, never in JMESPath.
            if not left.simple:
                left = self.bind(left)
            excluded = "False" if value == 0 else "True"
            if negate:
                return Expr(f"{left.src} != {right.src} or {left.src} is {excluded}", OR,
                            **flags)
            return Expr(f"{left.src} == {right.src} and {left.src} is not {excluded}", AND,
                        **flags)
        return Expr(f"{operand} {'!=' if negate else '=='} {right.paren(CMP)}", CMP, **flags)

    def _and_expression(self, node, cur):
        return self._logical(node, cur, is_or=False)

    def _or_expression(self, node, cur):
        return self._logical(node, cur, is_or=True)

    def _logical(self, node, cur, is_or: bool) -> Expr:
        left_node, right_node = node["children"]
        left = self.compile(left_node, cur)
        level, word = (OR, "or") if is_or else (AND, "and")
        if not left.boolean and not left.simple and right_node["type"] in ("literal", "variable"):
            # `a || {}`: the right side cannot raise and costs nothing: one call, no temporary
            right = self.compile(right_node, cur)
            helper = self.use_helper("jp_or" if is_or else "jp_and")
            return _call(helper, [left.src, right.src], pure=left.pure and right.pure,
                         boolean=left.boolean and right.boolean)
        # a temporary that holds the left value only (none of the values memoized): it is
        # given the right side's value in the block below (no `v2 = out1` first)
        fresh = left.name and _TEMP.fullmatch(left.src) and left.src not in self._memo.values()
        if not left.boolean and not left.simple:
            left = self.bind(left)  # the right side reuses it (`parent_id && [..., parent_id]`)
            fresh = True
        # `a.b && <right>`: the right side runs only when a field of `cur` was truthy, so `cur`
        # is an object there (its field reads need no guard, a multiselect of it no null test)
        proves = not is_or and _chain_steps(left_node)[0]["type"] == "field"
        dicts, nonnull = ({cur} - self._dicts, {cur} - self._nonnull) if proves else (set(), set())
        self._dicts |= dicts
        self._nonnull |= nonnull
        try:
            with self.capture() as right_lines:
                right = self.compile(right_node, cur)
        finally:
            self._dicts -= dicts
            self._nonnull -= nonnull
        if left.boolean and not right_lines:
            # For True/False/None, Python's and/or are JMESPath's.
            return Expr(f"{left.paren(level)} {word} {right.paren(level)}", level,
                        pure=left.pure and right.pure, boolean=right.boolean,
                        nonnull=left.nonnull and right.nonnull)
        if not right_lines:
            if not left.simple:
                left = self.bind(left)
            test = truth(left).paren(COND)
            first, second = (left, right) if is_or else (right, left)
            return Expr(f"{first.paren(COND + 1)} if {test} else {second.paren(COND)}", COND,
                        pure=left.pure and right.pure,
                        boolean=left.boolean and right.boolean)
        if fresh:
            var = left.src  # bound above, for this value only: the right side's in the block
        else:
            var = self.new("v")
            self.emit_statement(f"{var} = ", left)
        test = truth(_name(var, boolean=left.boolean))
        self.emit(f"if not {test.paren(NOT)}:" if is_or else f"if {test.src}:")
        with self.indented():
            self.splice(right_lines)
            self.emit_statement(f"{var} = ", right)
        return _name(var, boolean=left.boolean and right.boolean)

    def _not_expression(self, node, cur):
        e = self.truth(self.compile(node["children"][0], cur))
        return Expr(f"not {e.paren(NOT)}", NOT, pure=e.pure, boolean=True, nonnull=True)
