"""Event streams on a loop (issue 27): `merge` (elements joined by a key or in runs) and
`carry` (a value kept from one element to the next, read as ``$carry.<name>``)."""

from __future__ import annotations

import re

from mapc.expressions import ExpressionError, compile_expression
from mapc.spec import ir
from mapc.spec.checks.context import Context
from mapc.spec.checks.exprs import compile_expr


def build_merge(ctx: Context, data: dict | None, path: tuple, variables: set,
                as_name: str | None = None) -> ir.Merge | None:
    """`merge` of a loop. Its `by` and `when` read the element as it comes (`@`) and the
    variables of the levels above: not this loop's own (they name the merged element)."""
    if data is None:
        return None
    outer = set(variables) - {"index"}
    own = {f"${name}" for name in (as_name, f"{as_name}_index") if as_name} | {"$index"}
    for key in ("by", "when", "until"):
        used = sorted(own & set(re.findall(r"\$\w+", data.get(key) or "")))
        if used:
            ctx.error("unknown_variable", path + (key,), f"merge.{key} is read on each element as it comes, "
                      f"before the loop names it: {used[0]} is not set yet",
                      hint="read the element with `@`: e.g. `message.id`, not `$line.message.id`")
            variables.add("merged")
            return None
    if not _merge_mode(ctx, data, path):
        variables.add("merged")
        return None
    by = compile_expr(ctx, data["by"], path + ("by",), outer) if "by" in data else None
    when = compile_expr(ctx, data["when"], path + ("when",), outer) if "when" in data else None
    until = compile_expr(ctx, data["until"], path + ("until",), outer) if "until" in data else None
    fields, seen = [], {}
    for text, strategy in (data.get("fields") or {}).items():
        fpath = path + ("fields", text)
        keys = _merge_field(ctx, text, fpath)
        if keys is None:
            continue
        clash = next((other for other, k in seen.items()
                      if k[:len(keys)] == keys or keys[:len(k)] == k), None)
        if clash is not None:
            ctx.error("conflicting_keys", fpath, f"`{text}` and `{clash}` overlap: one is inside the other, "
                      "so the merged element cannot take both", key=True,
                      hint="merge the outer field only, or name only fields that do not contain each other")
            continue
        seen[text] = keys
        fields.append((keys, strategy))
    variables.add("merged")
    if by is None if "by" in data else when is None:  # an expression that did not compile (reported)
        return None
    return ir.Merge(by, when, tuple(fields), int(data.get("open", 1)), path, until)


def _merge_mode(ctx: Context, data: dict, path: tuple) -> bool:
    """`merge` groups by a key (`by`) or runs of consecutive elements (`when`, `until`):
    false, with an error, when it says neither or mixes the two."""
    if "by" not in data and "when" not in data:
        ctx.error("missing_key", path, "merge needs `by` (the key lines share) or `when` (which "
                  "consecutive lines form one element)", key=bool(path),
                  hint="e.g. `by: message.id`, or `when: \"type == 'response_item'\"` for runs of lines "
                  "with no shared id")
        return False
    clash = "until" if "by" in data and "until" in data else "open" if "by" not in data and "open" in data else None
    if clash == "until":
        ctx.error("conflicting_keys", path + ("until",), "merge.until ends a run of consecutive elements "
                  "(a merge without `by`); with `by`, lines merge by their key wherever they are", key=True,
                  hint="remove `until`, or remove `by` to merge runs of consecutive elements")
    elif clash == "open":
        ctx.error("conflicting_keys", path + ("open",), "merge.open counts the keys open at once: a merge "
                  "without `by` has one run open at a time", key=True, hint="remove `open`, or give `by`")
    return clash is None


def _merge_field(ctx: Context, text: str, path: tuple) -> tuple[str, ...] | None:
    """The keys of a `merge.fields` key: a plain field path (`message.usage`,
    `attributes."gen_ai.usage"`), or None with an error at the key."""
    try:
        keys = compile_expression(text).path
    except ExpressionError as exc:
        keys, why = None, exc.message
    else:
        why = "it is not a plain field path"
    if keys is None or not all(isinstance(k, str) for k in keys):
        ctx.error("invalid_merge_field", path, f"`{text}` cannot be merged: {why}", key=True,
                  hint="name a field by its path, as expressions write it: `message.content`, "
                  "`attributes.\"gen_ai.usage\"` (no index, filter, function or variable)")
        return None
    return tuple(keys)


def build_carry(ctx: Context, data: dict | None, path: tuple, variables: set) -> tuple[ir.CarryValue, ...]:
    """`carry` of a loop: each name's value (and its `when`) read on the element, after
    `merge` and `as`; then $carry.<name> is in scope for the level and below."""
    if data is None:
        return ()
    out = []
    before = set(variables) - {"carry"}  # a carried value is read from the element, not $carry
    for name, spec in data.items():
        npath = path + (name,)
        if name in ctx.carry_names:
            first = ctx.spec.mark(ctx.carry_names[name])
            ctx.error("duplicate_name", npath, f"$carry.{name} is already carried (line {first.line})",
                      key=True, hint="give each carried value its own name")
            continue
        long = isinstance(spec, dict)
        texts = {"value": spec["value"] if long else spec, "when": spec.get("when") if long else None}
        reads = [k for k, text in texts.items() if text and re.search(r"\$carry\b", text)]
        if reads:
            at = npath + ((reads[0],) if long else ())
            ctx.error("unknown_variable", at, f"$carry.{name} is read from the element: $carry is not set "
                      "while `carry` is computed", hint="read the element's own field (e.g. `cwd`, "
                      "`payload.model`); its latest non-null value is kept for you")
            ctx.carry_names[name] = npath
            continue
        value = compile_expr(ctx, texts["value"], npath + (("value",) if long else ()), before)
        when = compile_expr(ctx, spec["when"], npath + ("when",), before) if long and "when" in spec else None
        ctx.carry_names[name] = npath
        if value is not None:
            out.append(ir.CarryValue(name, value, when, npath))
    variables.add("carry")
    return tuple(out)
