"""Single Python expressions for simple syntax trees, written in line in generated code."""

from __future__ import annotations

import re

from .functions import FUNCTIONS, NON_NULL_FUNCTIONS
from .paths import chain_steps as _chain_steps
from .pyexpr import _ORDERING, AND, ATOM, CMP, COND, NOT, OR, Expr, _literal, literal_source, string_source, truth

_INLINE_FUNCTIONS = frozenset({"to_string", "type", "not_null", "to_number", "coalesce", "to_array",
                               "get", "parse_json"})
#: ``iso8601(value[, unit])`` never raises when the unit is left out or one of these literals
_ISO8601_UNITS = ("s", "ms", "us", "ns")
#: a field read's guard, left out when a line's length is judged: the generated code drops it
#: for a variable known to hold an object (``ExprTable.assume_dicts``)
_DICT_GUARD = re.compile(r" if isinstance\((\w+), dict\) else None")



MAX_INLINE_DEPTH = 32


class InlineCompiler:
    """Single Python expressions for simple ASTs (or None when not simple).

    Handles field chains, literals, variables, ``@``, and comparisons, ``!``,
    ``&&`` and ``||`` of those.  ``pure`` operands are evaluated eagerly where
    the reference would short-circuit; that is only done when it cannot change
    the result (they cannot raise).
    """

    def __init__(self, data_var: str, scope_var: str) -> None:
        self.data = data_var
        self.scope = scope_var
        self.helpers: set[str] = set()
        self.depth = 0

    def compile(self, node: dict) -> Expr | None:
        """The node as one expression, or None: also when it nests more than
        :data:`MAX_INLINE_DEPTH` levels (``a || b || ...`` nests a call a term, and Python
        refuses 200 nested parentheses; the statements of the function form do not nest)."""
        if self.depth >= MAX_INLINE_DEPTH:
            return None
        self.depth += 1
        try:
            return self._compile(node)
        finally:
            self.depth -= 1

    def _compile(self, node: dict) -> Expr | None:
        kind = node["type"]
        if kind == "literal":
            return _literal(node["value"])
        if kind in ("current", "identity"):
            return Expr(self.data, ATOM, simple=True, pure=True)
        if kind == "variable":
            return Expr(f"{self.scope}.get({string_source(node['value'])})", ATOM, pure=True)
        if kind in ("field", "subexpression", "index_expression"):
            return self._path(node)
        if kind == "comparator":
            return self._comparator(node)
        if kind == "not_expression":
            e = self.compile(node["children"][0])
            if e is None:
                return None
            t = self._truth(e)
            return Expr(f"not {t.paren(NOT)}", NOT, pure=e.pure, boolean=True, nonnull=True)
        if kind in ("and_expression", "or_expression"):
            return self._logical(node, kind == "or_expression")
        if kind in ("multi_select_dict", "multi_select_list"):
            return self._multi_select(node, kind == "multi_select_dict")
        if kind == "function_expression" and self._never_raises(node):
            args = [self.compile(child) for child in node["children"]]
            if any(a is None for a in args):
                return None
            helper = FUNCTIONS[node["value"]].helper
            src = f"{helper}({', '.join(a.src for a in args)})"
            # a long call in a longer statement: a function of its own (counted without the
            # guards of field reads, which are dropped when the value is known to be an object)
            if len(_DICT_GUARD.sub("", src)) > 60 or len(src) > 76:
                return None
            self.helpers.add(helper)
            return Expr(src, ATOM,
                        pure=all(a.pure for a in args), nonnull=node["value"] in NON_NULL_FUNCTIONS)
        return None

    def _multi_select(self, node: dict, is_dict: bool) -> Expr | None:
        """``{a: x, b: y}`` / ``[x, y]`` of the current value: a display, null for a null value
        (the guard goes where the value is known to be an object: ``ExprTable.assume_dicts``)."""
        children = [c["children"][0] for c in node["children"]] if is_dict else node["children"]
        parts = [self.compile(child) for child in children]
        if any(p is None for p in parts):
            return None
        if is_dict:
            items = [f"{literal_source(c['value'])}: {p.src}" for c, p in zip(node["children"], parts)]
            display = "{" + ", ".join(items) + "}"
        else:
            display = "[" + ", ".join(p.src for p in parts) + "]"
        if len(_DICT_GUARD.sub("", display)) > 120:
            return None  # a function of its own reads better
        return Expr(f"{display} if {self.data} is not None else None", COND,
                    pure=all(p.pure for p in parts))

    @staticmethod
    def _never_raises(node: dict) -> bool:
        """A call of a function that cannot raise with these arguments (see _INLINE_FUNCTIONS)."""
        name, args = node["value"], node["children"]
        if name == "iso8601":
            return len(args) == 1 or args[1]["type"] == "literal" and args[1]["value"] in _ISO8601_UNITS
        return name in _INLINE_FUNCTIONS

    def _truth(self, e: Expr) -> Expr:
        t = truth(e)
        if "jp_truthy(" in t.src and not e.boolean:
            self.helpers.add("jp_truthy")
        return t

    def _path(self, node: dict) -> Expr | None:
        flat = _chain_steps(node)
        base = self.data
        if flat and flat[0]["type"] == "variable":
            base = f"{self.scope}.get({string_source(flat[0]['value'])})"
            flat = flat[1:]
        elif flat and flat[0]["type"] in ("current", "identity"):
            flat = flat[1:]
        if any(n["type"] not in ("field", "index") for n in flat):
            return None
        keys = [n["value"] for n in flat]
        if not keys:
            return Expr(base, ATOM, simple=base == self.data, pure=True)
        if len(keys) == 1 and base == self.data and isinstance(keys[0], str):
            return Expr(
                f"{base}.get({literal_source(keys[0])}) if isinstance({base}, dict) else None",
                COND, pure=True)
        self.helpers.add("jp_path")
        tup = "(" + ", ".join(literal_source(k) for k in keys) + ("," if len(keys) == 1 else "") + ")"
        return Expr(f"jp_path({base}, {tup})", ATOM, pure=True)

    def _comparator(self, node: dict) -> Expr | None:
        left = self.compile(node["children"][0])
        right = self.compile(node["children"][1])
        if left is None or right is None:
            return None
        op = node["value"]
        if op in ("eq", "ne"):
            if left.const is not None and right.const is None:
                left, right = right, left
            if right.const is not None and left.const is None:
                value = right.const[0]
                negate = op == "ne"
                flags = dict(pure=left.pure, boolean=True, nonnull=True)
                if value is None or value is True or value is False:
                    return Expr(f"{left.paren(CMP)} is {'not ' if negate else ''}{value!r}",
                                CMP, **flags)
                if not (isinstance(value, (int, float)) and value in (0, 1)):
                    return Expr(f"{left.paren(CMP)} {'!=' if negate else '=='} "
                                f"{right.paren(CMP)}", CMP, **flags)
            self.helpers.add("jp_eq")
            e = Expr(f"jp_eq({left.src}, {right.src})", ATOM, pure=left.pure and right.pure,
                     boolean=True, nonnull=True)
            if op == "ne":
                return Expr(f"not {e.src}", NOT, pure=e.pure, boolean=True, nonnull=True)
            return e
        helper = _ORDERING[op][1]
        self.helpers.add(helper)
        return Expr(f"{helper}({left.src}, {right.src})", ATOM, pure=False, boolean=True)

    def _logical(self, node: dict, is_or: bool) -> Expr | None:
        left = self.compile(node["children"][0])
        right = self.compile(node["children"][1])
        if left is None or right is None:
            return None
        level, word = (OR, "or") if is_or else (AND, "and")
        if left.boolean:
            return Expr(f"{left.paren(level)} {word} {right.paren(level)}", level,
                        pure=left.pure and right.pure, boolean=right.boolean)
        if not right.pure:
            return None
        if left.simple:
            test = self._truth(left).paren(COND)
            first, second = (left, right) if is_or else (right, left)
            return Expr(f"{first.paren(COND + 1)} if {test} else {second.paren(COND)}", COND,
                        pure=left.pure, boolean=left.boolean and right.boolean)
        helper = "jp_or" if is_or else "jp_and"
        self.helpers.add(helper)
        return Expr(f"{helper}({left.src}, {right.src})", ATOM, pure=left.pure)
