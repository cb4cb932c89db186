"""Value templates (a string is an expression, a mapping an object, a list an array),
the `!keep_nulls` tag, finite numbers, and the `as`/`let` names a spec binds."""

from __future__ import annotations

import math
from typing import Any

from mapc.spec import ir
from mapc.spec.checks.context import Context
from mapc.spec.checks.exprs import compile_expr

LEVELS = ("run", "case", "group", "trajectory")
#: Variables every records expression may use.
BASE_VARIABLES = frozenset({"source", "tables", "siblings", "root"})
RESERVED = frozenset(
    BASE_VARIABLES
    | set(LEVELS)
    | {"event", "index", "ordinal", "task", "score", "signals", "output", "events", "carry", "merged"}
)
_FINITE_HINT = "use a finite number or null (YAML reads .nan and .inf as NaN and infinity)"


def build_value(ctx: Context, data: Any, path: tuple, variables) -> ir.Value | None:
    """A value template: a string is an expression, a mapping an object, a list an array."""
    if isinstance(data, str):
        return compile_expr(ctx, data, path, variables)
    if isinstance(data, dict):
        items, keep = [], []
        keep_all = tagged(ctx, path, "!keep_nulls")
        for k, v in data.items():
            val = build_value(ctx, v, path + (k,), variables)
            if val is not None:
                items.append((k, val))
                if keep_all or not isinstance(v, dict) and tagged(ctx, path + (k,), "!keep_nulls"):
                    keep.append(k)
        return ir.ObjectTemplate(tuple(items), path, tuple(keep))
    if isinstance(data, list):
        vals = [build_value(ctx, v, path + (i,), variables) for i, v in enumerate(data)]
        return ir.ArrayTemplate(tuple(v for v in vals if v is not None), path)
    if isinstance(data, float) and not math.isfinite(data):
        ctx.error("invalid_value", path, "non-finite numbers cannot appear in JSON output", hint=_FINITE_HINT)
        return None
    return ir.Literal(data, path)


def tagged(ctx: Context, path: tuple, tag: str) -> bool:
    """Whether the node at ``path`` carries ``tag``; a tag read here counts as used."""
    if ctx.spec.tags.get(path) != tag:
        return False
    ctx.used_tags.add(path)
    return True


def unused_tags(ctx: Context) -> None:
    """`!keep_nulls` where no object is built: it would do nothing, so say so."""
    for path, tag in ctx.spec.tags.items():
        if tag == "!keep_nulls" and path not in ctx.used_tags:
            ctx.error("misplaced_tag", path, "`!keep_nulls` keeps the null members of an object built "
                      "from a mapping; here it has no effect",
                      hint="tag a mapping (`output: !keep_nulls {result: result}`) or one member of it "
                      "(`{result: !keep_nulls result}`)")


def finite(ctx: Context, data: Any, path: tuple) -> None:
    """Every number of the spec is finite: NaN and infinity have no JSON or Python literal."""
    if isinstance(data, float) and not math.isfinite(data):
        if not (len(path) == 4 and path[0] == "evaluators" and path[2] == "range"):  # invalid_range says it
            ctx.error("invalid_value", path, "non-finite numbers cannot appear in JSON output", hint=_FINITE_HINT)
    elif isinstance(data, dict):
        for k, v in data.items():
            finite(ctx, v, path + (k,))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            finite(ctx, v, path + (i,))


def bind(ctx: Context, name: str, path: tuple, variables: set) -> None:
    """Bind the `as`/`let` name ``name`` in ``variables``: not built in, and bound once per spec."""
    if name in RESERVED:
        ctx.error("reserved_name", path, f"${name} is a built-in variable and cannot be rebound",
                  hint=f"pick another name, e.g. {name}_item")
        return
    if name in ctx.bound:
        first = ctx.spec.mark(ctx.bound[name])
        ctx.error("duplicate_name", path, f"${name} is already bound (line {first.line})",
                  hint="give each `as`/`let` name its own identifier")
        return
    ctx.bound[name] = path
    variables.add(name)


def iter_exprs(value) -> list[ir.Expr]:
    """Every expression inside a value template."""
    if isinstance(value, ir.Expr):
        return [value]
    if isinstance(value, ir.ObjectTemplate):
        return [e for _, v in value.items for e in iter_exprs(v)]
    if isinstance(value, ir.ArrayTemplate):
        return [e for v in value.items for e in iter_exprs(v)]
    return []
