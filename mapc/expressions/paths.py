"""Static facts about an expression: the source fields it reads, whether it is a
plain field chain, and whether it is a constant.

Field paths are written relative to ``@`` with ``.`` between fields (a name that is
not an identifier quoted: ``attributes."gen_ai.system"``, :mod:`mapc.core.fieldpath`) and ``[]``
for "any element of an array" (indexes, slices, projections, filters and
flattening all read array elements), e.g. ``messages[].role``; ``.*`` stands
for "any value of an object".  Paths read through a variable start with
``$name``.  Only the paths whose values are *used* are reported: ``a.b.c``
reads ``a.b.c``, not ``a`` and ``a.b``.
"""

from __future__ import annotations

from mapc.core.fieldpath import child

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


def reads_root_as_object(ast: dict) -> bool:
    """Whether the value (or error) for any root that is not an object is the value for ``{}``:
    the root is read only through its fields (``a.b``, ``items(a)``, ``a || `{}` ``), or as
    a whole only where a field of it was truthy (``a && [a, @]``). A generated adapter may
    then pass the root's object alias (``{}`` for a non-object) to a function compiled for an
    object root, whose field reads need no guard."""
    def ok(node: dict, proven: bool) -> bool:
        kind, children = node["type"], node.get("children", [])
        if kind in ("field", "literal", "variable", "expref"):
            return True  # (an &expr's body is applied to other values)
        if kind in ("current", "identity", "index", "slice"):
            return proven  # a non-object root itself, or indexed: only where it is an object
        if kind in ("multi_select_list", "multi_select_dict"):
            # null for a null root, a list or object for `{}`: only where it is an object
            return proven and all(ok(c, proven) for c in children)
        if kind in ("subexpression", "index_expression", "pipe", "flatten", "projection",
                    "value_projection", "filter_projection"):
            return ok(children[0], proven)  # the other children apply to what it gives
        if kind == "and_expression":
            left, right = children
            # the right side runs only when the left was truthy: `a.b` truthy, the root is an object
            return ok(left, proven) and ok(right, proven or chain_steps(left)[0]["type"] == "field")
        if kind in ("comparator", "or_expression", "not_expression", "function_expression",
                    "key_val_pair"):
            return all(ok(c, proven) for c in children)
        return False

    return ok(ast, False)


#: the nodes of a field chain (``a``, ``a.b[0].c``)
CHAIN_TYPES = ("field", "subexpression", "index_expression")


def chain_key(node: dict) -> str | None:
    """A field chain (``a``, ``a.b[0].c``) as text, the same for the same chain; else None."""
    if node["type"] not in CHAIN_TYPES:
        return None
    parts = []
    steps = chain_steps(node)
    for step in steps[1:] if steps[0]["type"] in ("current", "identity") else steps:
        if step["type"] not in ("field", "index"):
            return None
        parts.append(step["value"])
    return repr(parts)


def chain_steps(node: dict) -> list[dict]:
    """The steps of a chain such as ``x.a.b[0].c``, in order: nested subexpressions and index
    expressions (``subexpression[index_expression[...], field]``) flattened."""
    steps: list[dict] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if n["type"] in ("subexpression", "index_expression"):
            stack.extend(reversed(n["children"]))
        else:
            steps.append(n)
    return steps


def root_fields(ast: dict) -> dict[str, int]:
    """How many times each field chain of the root is read (by ``chain_key``; chains of
    elements and of other values are not counted): a compiler holds a value read more than
    once in a variable."""
    counts: dict[str, int] = {}

    def visit(node: dict) -> None:
        kind, children = node["type"], node.get("children", [])
        key = chain_key(node)
        if key is not None:
            counts[key] = counts.get(key, 0) + 1
        elif kind in ("subexpression", "index_expression", "pipe", "flatten", "projection",
                      "value_projection", "filter_projection"):
            visit(children[0])  # the other children apply to what it gives
        elif kind != "expref":
            for child in children:
                visit(child)

    visit(ast)
    return counts
