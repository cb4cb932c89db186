"""Signals and artifacts of a level or an event rule, and the totals rule across rules."""

from __future__ import annotations

from typing import Any

from mapc.core.diagnostics import format_path
from mapc.spec import ir
from mapc.spec.checks.context import Context
from mapc.spec.checks.exprs import compile_expr
from mapc.spec.checks.scopes import build_loops
from mapc.spec.checks.values import bind, build_value


def build_signals(ctx: Context, data: Any, path: tuple, variables: set) -> tuple[ir.SignalSpec, ...]:
    """`signals`: a mapping `name: value` (or `name: {value: ...}`), or a list with `name`."""
    if data is None:
        return ()
    out = []
    if isinstance(data, dict):
        for name, spec in data.items():
            spath = path + (name,)
            if isinstance(spec, dict):
                out.append(_build_signal(ctx, dict(spec, name=None), spath, variables, literal_name=name))
            else:
                out.append(_build_signal(ctx, {"value": spec}, spath, variables, literal_name=name,
                                         value_path=spath))
    else:
        for i, spec in enumerate(data):
            out.append(_build_signal(ctx, spec, path + (i,), variables))
    return tuple(s for s in out if s is not None)


def _build_signal(ctx: Context, spec: dict, path: tuple, variables: set, literal_name: str | None = None,
                  value_path: tuple | None = None):
    """One signal, its loops and `when` in a scope of its own; None when a part did not compile."""
    local = set(variables)
    loops = build_loops(ctx, spec.get("each"), path + ("each",), local)
    if spec.get("as"):
        name = spec["as"]
        bind(ctx, name, path + ("as",), local)
        loops = tuple(ir.Loop(lp.each, name, lp.path) for lp in loops)
    when = compile_expr(ctx, spec["when"], path + ("when",), local) if "when" in spec else None
    if literal_name is not None:
        name_v: ir.Value | None = ir.Literal(literal_name, path)
    elif "name" in spec:
        name_v = build_value(ctx, spec["name"], path + ("name",), local)
    else:
        ctx.error("missing_key", path, "a signal in list form needs `name`",
                  hint="e.g. `name: \"'reward'\"` (a literal needs quotes) or a mapping `reward: expr`")
        return None
    # the shorthand `name: expr` has its value at the signal's own path
    value = build_value(ctx, spec["value"], value_path or path + ("value",), local)
    unit = build_value(ctx, spec["unit"], path + ("unit",), local) if "unit" in spec else None
    meta = build_value(ctx, spec["metadata"], path + ("metadata",), local) if "metadata" in spec else None
    event_id = owning_event(ctx, spec, path, local)
    counter, total = signal_counter(ctx, spec, path, local, unit, meta)
    if name_v is None or value is None:
        return None
    return ir.SignalSpec(name_v, value, unit, meta, loops, when, path, event_id, counter, total)


def signal_counter(ctx: Context, spec: dict, path: tuple, variables: set, unit, meta) -> tuple[str, bool]:
    """`counter` and `total` of a signal: an event rule's only (a trajectory's signal is one
    value already); a total's unit is one text and it has no metadata (one record per
    trajectory sums the events')."""
    counter, total = spec.get("counter", "per_step"), bool(spec.get("total", False))
    if "counter" not in spec and "total" not in spec:
        return counter, total
    if "event" not in variables:
        key = "counter" if "counter" in spec else "total"
        ctx.error("invalid_key", path + (key,), f"`{key}` belongs to an event rule's signal: a trajectory's "
                  "signal is one value per trajectory already", key=True,
                  hint="declare the signal on the event rule whose elements carry the value "
                  "(`signals:` of a rule with `when:`); `total: true` there gives one signal on the trajectory")
        return "per_step", False
    if total and unit is not None and not (isinstance(unit, ir.Literal) or
                                           isinstance(unit, ir.Expr) and unit.compiled.constant[0]):
        ctx.error("invalid_value", path + ("unit",), "a total is one signal: its unit must be a literal",
                  hint="write the unit as text, e.g. `unit: \"'tokens'\"`")
    if total and meta is not None:
        ctx.error("invalid_key", path + ("metadata",), "a total is one signal summing the events': it "
                  "has no metadata of its own", key=True, hint="remove `metadata`, or drop `total: true`")
    return counter, total


def check_totals(ctx: Context, levels, events) -> None:
    """Totals of one name are one signal on the trajectory: every rule's must count the same
    way, and no trajectory signal may have that name (their ids would be the same)."""
    totals: dict[str, ir.SignalSpec] = {}
    for rule in events.rules if events is not None else ():
        for t in rule.emits:
            for sig in t.signals:
                name = sig.name.value if isinstance(sig.name, ir.Literal) else None
                if not sig.total or not isinstance(name, str):
                    continue
                first = totals.setdefault(name, sig)
                if first.counter != sig.counter:
                    ctx.error("conflicting_keys", sig.path, f"the total `{name}` is counted `{first.counter}` "
                              f"at {format_path(first.path)} and `{sig.counter}` here; a total is one sum",
                              hint="give both the same `counter`, or give the totals different names")
    for lv in levels:
        for sig in lv.signals if lv is not None and lv.name == "trajectory" else ():
            if isinstance(sig.name, ir.Literal) and sig.name.value in totals:
                ctx.error("duplicate_id", sig.path, f"the trajectory already gets a signal `{sig.name.value}`: "
                          f"the total of {format_path(totals[sig.name.value].path)}",
                          hint="rename one of them")


def owning_event(ctx: Context, spec: dict, path: tuple, variables: set):
    """`event_id` of a trajectory's signal or artifact: `last`, or a value giving an event id."""
    if "event_id" not in spec:
        return None
    if "event" in variables:  # declared on an event rule
        ctx.error("invalid_key", path + ("event_id",), "a signal or artifact declared on an event rule "
                  "belongs to that event already", key=True,
                  hint="remove `event_id`; it names an event from the trajectory's signals and artifacts")
        return None
    if spec["event_id"] == "last":
        return "last"
    return build_value(ctx, spec["event_id"], path + ("event_id",), variables)


def build_artifacts(ctx: Context, data: Any, path: tuple, variables: set) -> tuple[ir.ArtifactSpec, ...]:
    """`artifacts`: each with exactly one of `text`, `json` or `path`."""
    out = []
    for i, spec in enumerate(data or []):
        apath = path + (i,)
        local = set(variables)
        loops = build_loops(ctx, spec.get("each"), apath + ("each",), local)
        if spec.get("as"):
            bind(ctx, spec["as"], apath + ("as",), local)
            loops = tuple(ir.Loop(lp.each, spec["as"], lp.path) for lp in loops)
        when = compile_expr(ctx, spec["when"], apath + ("when",), local) if "when" in spec else None
        contents = [k for k in ("text", "json", "path") if k in spec]
        if len(contents) != 1:
            ctx.error("artifact_content", apath,
                      "an artifact needs exactly one of `text`, `json` or `path`"
                      + (f" (found {', '.join(contents)})" if contents else ""))
            continue
        fields = []
        for k in ("name", "media_type", "text", "json", "path", "sha256", "metadata"):
            if k in spec:
                v = build_value(ctx, spec[k], apath + (k,), local)
                if v is not None:
                    fields.append((k, v))
        out.append(ir.ArtifactSpec(tuple(fields), loops, when, apath, owning_event(ctx, spec, apath, local)))
    return tuple(out)
