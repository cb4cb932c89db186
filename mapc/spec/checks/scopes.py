"""The scope of a level or event stream: its loops (`each`, `as`, `merge`, `carry`),
`where`, `let` and `ordinal_by`; each adds the variables it binds to ``variables``."""

from __future__ import annotations

import dataclasses
from typing import Any

from mapc.spec import ir
from mapc.spec.checks.context import Context
from mapc.spec.checks.exprs import compile_expr
from mapc.spec.checks.streams import build_carry, build_merge
from mapc.spec.checks.values import bind, build_value


def build_loops(ctx: Context, data: Any, path: tuple, variables: set) -> tuple[ir.Loop, ...]:
    """A level's `each`: one expression or a list of loops, each binding its `as` names."""
    if data is None:
        return ()
    items = [{"each": data}] if isinstance(data, str) else data
    out = []
    for i, item in enumerate(items):
        lpath = path if isinstance(data, str) else path + (i,)
        epath = lpath if isinstance(data, str) else lpath + ("each",)
        e = compile_expr(ctx, item["each"], epath, variables)
        merge = build_merge(ctx, item.get("merge"), lpath + ("merge",), variables, item.get("as"))
        name = item.get("as")
        if name:
            bind(ctx, name, lpath + ("as",), variables)
            variables.add(f"{name}_index")
        variables.add("index")
        carry = build_carry(ctx, item.get("carry"), lpath + ("carry",), variables)
        if e is not None:
            out.append(ir.Loop(e, name, lpath, merge, carry))
    return tuple(out)


def build_scope(ctx: Context, data: dict, path: tuple, variables: set) -> ir.Scope:
    """A level's loops, `where`, `let` and `ordinal_by`; adds what they bind to ``variables``."""
    loops = build_loops(ctx, data.get("each"), path + ("each",), variables)
    loops = level_stream(ctx, data, path, loops, variables, "merge")
    if data.get("as") and isinstance(data.get("each"), str):
        name = data["as"]
        bind(ctx, name, path + ("as",), variables)
        variables.add(f"{name}_index")
        loops = tuple(dataclasses.replace(lp, as_name=name) for lp in loops)
    elif data.get("as"):
        ctx.error("invalid_value", path + ("as",), "`as` needs a single `each` expression",
                  hint="with a list of loops, put `as` inside each loop")
    loops = level_stream(ctx, data, path, loops, variables, "carry")
    where = compile_expr(ctx, data["where"], path + ("where",), variables) if "where" in data else None
    lets = []
    for name, val in (data.get("let") or {}).items():
        v = build_value(ctx, val, path + ("let", name), variables)
        bind(ctx, name, path + ("let", name), variables)
        if v is not None:
            lets.append((name, v))
    ordinal = None
    if "ordinal_by" in data:
        ordinal = compile_expr(ctx, data["ordinal_by"], path + ("ordinal_by",), variables)
        variables.add("ordinal")
    return ir.Scope(loops, where, tuple(lets), ordinal)


def level_stream(ctx: Context, data: dict, path: tuple, loops: tuple, variables: set, key: str) -> tuple:
    """``loops`` with the level's `merge` (before `as` binds the element) or `carry` (after)
    on its loop: the one `each` beside them; with a list of loops, each item says its own."""
    if key not in data:
        return loops
    each = data.get("each")
    if not isinstance(each, str):
        where = "a list of loops: write it inside the loop item it belongs to" if each else "no loop"
        ctx.error("misplaced_key", path + (key,), f"`{key}` belongs to a loop, and this level has {where}",
                  key=True, hint=f"e.g. `each: [{{each: turns}}, {{each: \"@\", {key}: ...}}]`" if each
                  else f"give the level `each:` (a jsonl source: `each: \"@\"`), or move `{key}` to the "
                  "level that loops over the elements")
        return loops
    if not loops:  # the loop did not compile (reported)
        return loops
    if key == "merge":
        merge = build_merge(ctx, data["merge"], path + ("merge",), variables, data.get("as"))
        return (dataclasses.replace(loops[0], merge=merge),)
    carry = build_carry(ctx, data["carry"], path + ("carry",), variables)
    return (dataclasses.replace(loops[0], carry=carry),)
