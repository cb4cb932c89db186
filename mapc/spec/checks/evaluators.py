"""`evaluators`: ids, ranges, one primary, score expressions and feedback templates."""

from __future__ import annotations

import math
from typing import Any

from mapc.spec import ir
from mapc.spec.checks.context import Context
from mapc.spec.checks.exprs import build_template, compile_expr
from mapc.spec.checks.names import _CONTROL_RE


def build_feedback(ctx: Context, data: Any, path: tuple, variables) -> tuple[ir.FeedbackRule, ...]:
    """An evaluator's `feedback`: one template, or rules of `when` and `text`."""
    if data is None:
        return ()
    rules = [(None, data, path)] if isinstance(data, str) else [
        (r.get("when"), r["text"], path + (i,)) for i, r in enumerate(data)
    ]
    out = []
    for when_text, text, rpath in rules:
        tpath = rpath if isinstance(data, str) else rpath + ("text",)
        when = compile_expr(ctx, when_text, rpath + ("when",), variables) if when_text else None
        parts = build_template(ctx, text, tpath, variables)
        if parts is not None:
            out.append(ir.FeedbackRule(when, parts, rpath))
    return tuple(out)


def build_evaluators(ctx: Context, data: list) -> tuple[ir.Evaluator, ...]:
    """`evaluators`: unique ids, finite ranges, at most one primary (the first, when none is)."""
    out = []
    seen: dict[str, int] = {}
    variables = {"task", "tables"}
    primaries = []
    for i, ev in enumerate(data or []):
        path = ("evaluators", i)
        if ev["id"] in seen:
            ctx.error("duplicate_id", path + ("id",),
                      f"evaluator id {ev['id']!r} is already used by evaluators[{seen[ev['id']]}]")
        seen.setdefault(ev["id"], i)
        if _CONTROL_RE.search(ev["id"]) or ev["id"] != ev["id"].strip():
            ctx.error("invalid_name", path + ("id",),
                      "evaluator ids must not contain control characters or surrounding spaces")
        lo, hi = ev.get("range", [0, 1])
        if not (math.isfinite(lo) and math.isfinite(hi)) or lo >= hi:
            ctx.error("invalid_range", path + ("range",), f"range [{lo}, {hi}] must be finite with min < max",
                      hint="e.g. range: [0, 5]")
        if ev.get("primary"):
            primaries.append(i)
        score = compile_expr(ctx, ev["score"], path + ("score",), variables)
        fb = build_feedback(ctx, ev.get("feedback"), path + ("feedback",), variables)
        if score is None:
            continue
        out.append(ir.Evaluator(
            id=ev["id"], description=ev["description"], low=float(lo), high=float(hi), score=score,
            feedback=fb, primary=bool(ev.get("primary")), direction=ev.get("direction", "higher"),
            weight=float(ev.get("weight", 1.0)), path=path,
        ))
    if len(primaries) > 1:
        ctx.error("multiple_primary", ("evaluators", primaries[1], "primary"),
                  f"evaluators[{primaries[0]}] is already primary", hint="mark exactly one evaluator primary")
    if out and not any(e.primary for e in out):
        first = out[0]
        out[0] = ir.Evaluator(**{**first.__dict__, "primary": True})
    return tuple(out)
