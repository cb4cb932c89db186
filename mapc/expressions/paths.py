"""Static facts about an expression: the source fields it reads, whether it is a
plain field chain, and whether it is a constant.

Field paths are written relative to ``@`` with ``.`` between fields (a name that is
not an identifier quoted: ``attributes."gen_ai.system"``, :mod:`mapc.fieldpath`) and ``[]``
for "any element of an array" (indexes, slices, projections, filters and
flattening all read array elements), e.g. ``messages[].role``; ``.*`` stands
for "any value of an object".  Paths read through a variable start with
``$name``.  Only the paths whose values are *used* are reported: ``a.b.c``
reads ``a.b.c``, not ``a`` and ``a.b``.
"""

from __future__ import annotations

from mapc.fieldpath import child

#: Functions whose &expr argument is applied to the elements of this argument.
_EXPREF_ARRAY_ARG = {"map": 1}


def _join(base: str | None, name: str) -> str | None:
    if base is None:
        return None
    return child(base, name)


#: Functions whose arguments are looked at, not mapped: a missing field is an answer.
_TESTING_FUNCTIONS = frozenset({"type", "not_null", "contains", "starts_with", "ends_with"})


class _PathCollector:
    def __init__(self) -> None:
        self.paths: set[str] = set()
        self.mapped: set[str] = set()  # read outside any test or alternative
        self.tests = 0  # depth of tests (comparisons, `!`, `&&`, `||`, filters) around the node

    def consume(self, path: str | None) -> None:
        if path:  # "" is @ itself and None is a computed value
            self.paths.add(path)
            if not self.tests:
                self.mapped.add(path)

    def tested(self, node: dict, ctx: str | None) -> None:
        """Visit ``node`` as a test or an alternative: its paths may be absent by design."""
        self.tests += 1
        self.consume(self.visit(node, ctx))
        self.tests -= 1

    def visit(self, node: dict, ctx: str | None) -> str | None:
        """Record what ``node`` reads when applied to ``ctx``; return its own path."""
        kind = node["type"]
        children = node.get("children", [])
        if kind == "field":
            return _join(ctx, node["value"])
        if kind == "variable":
            return f"${node['value']}"
        if kind in ("current", "identity"):
            return ctx
        if kind == "literal":
            return None
        if kind == "index":
            return None if ctx is None else ctx + "[]"
        if kind == "slice":
            return ctx
        if kind in ("subexpression", "index_expression", "pipe"):
            path = ctx
            for child in children:
                path = self.visit(child, path)
            return path
        if kind == "flatten":
            return self.visit(children[0], ctx)
        if kind in ("projection", "filter_projection", "value_projection"):
            base = self.visit(children[0], ctx)
            suffix = ".*" if kind == "value_projection" else "[]"
            element = None if base is None else (base + suffix).lstrip(".")
            if kind == "filter_projection":
                self.tested(children[2], element)
            return self.visit(children[1], element)
        if kind in ("multi_select_list", "multi_select_dict"):
            for child in children:
                self.consume(self.visit(child, ctx))
            return None
        if kind == "key_val_pair":
            return self.visit(children[0], ctx)
        if kind in ("comparator", "and_expression", "or_expression", "not_expression"):
            for child in children:
                self.tested(child, ctx)
            return None
        if kind == "function_expression":
            array_arg = _EXPREF_ARRAY_ARG.get(node["value"], 0)
            testing = node["value"] in _TESTING_FUNCTIONS
            self.tests += testing
            arg_paths = [
                None if child["type"] == "expref" else self.visit(child, ctx)
                for child in children
            ]
            for path in arg_paths:
                self.consume(path)
            self.tests -= testing
            for child in children:
                if child["type"] == "expref":
                    base = arg_paths[array_arg] if array_arg < len(arg_paths) else None
                    element = None if base is None else base + "[]"
                    self.consume(self.visit(child["children"][0], element))
            return None
        if kind == "expref":
            self.consume(self.visit(children[0], None))
            return None
        raise ValueError(f"unknown node type {kind!r}")


def field_paths(node: dict) -> tuple[str, ...]:
    collector = _PathCollector()
    collector.consume(collector.visit(node, ""))
    return tuple(sorted(collector.paths))


def tested_paths(node: dict) -> tuple[str, ...]:
    """The field paths read only in tests or alternatives (``x == 'a'``, ``a || b``,
    ``[?x]``, ``type(x)``): paths whose absence the expression expects."""
    collector = _PathCollector()
    collector.consume(collector.visit(node, ""))
    return tuple(sorted(collector.paths - collector.mapped))


def builds_values(node: dict) -> bool:
    """Whether the expression builds lists or objects (``[a, b]``, ``{x: a}``): its value
    is then not an element of the arrays it reads."""
    if node["type"] in ("multi_select_list", "multi_select_dict"):
        return True
    return any(builds_values(c) for c in node.get("children", []) if isinstance(c, dict))


def plain_path(node: dict) -> tuple[str, ...] | None:
    """Field names if the expression is exactly a chain like ``a.b."c.d"``."""
    if node["type"] == "field":
        return (node["value"],)
    if node["type"] == "subexpression":
        names: list[str] = []
        for child in node["children"]:
            sub = plain_path(child)
            if sub is None:
                return None
            names.extend(sub)
        return tuple(names)
    return None


def string_test(node: dict) -> tuple[tuple[str, ...], str] | None:
    """``(field names, text)`` if the expression is exactly ``a.b == 'text'`` (or ``'text' == a.b``).

    Such a test is true exactly when the field holds that string, so generated
    code may read the field once and compare it with ``==`` to several texts.
    """
    if node["type"] != "comparator" or node["value"] != "eq":
        return None
    left, right = node["children"]
    for field, other in ((left, right), (right, left)):
        path = plain_path(field)
        if path is not None and other["type"] == "literal" and isinstance(other["value"], str):
            return path, other["value"]
    return None


def outer_function(node: dict) -> str | None:
    """The function whose result is the expression's value (``iso8601(ts)``), if any."""
    return node["value"] if node["type"] == "function_expression" else None


def _uses_variables(node: dict) -> bool:
    if node["type"] == "variable":
        return True
    return any(_uses_variables(c) for c in node.get("children", []) if isinstance(c, dict))


def is_constant(node: dict) -> bool:
    """Whether the value cannot depend on the data or the scope (it may still raise)."""
    kind = node["type"]
    children = [c for c in node.get("children", []) if isinstance(c, dict)]
    if kind == "literal":
        return True
    if kind in ("subexpression", "index_expression", "pipe"):
        return is_constant(children[0]) and not any(_uses_variables(c) for c in children[1:])
    if kind in ("projection", "value_projection", "filter_projection", "flatten"):
        return is_constant(children[0]) and not any(_uses_variables(c) for c in children[1:])
    if kind == "function_expression":
        return all(
            not _uses_variables(c) if c["type"] == "expref" else is_constant(c) for c in children
        )
    if kind in ("comparator", "and_expression", "or_expression", "not_expression"):
        return all(is_constant(c) for c in children)
    return False
