"""`records.events`: the stream's scope, its rules (reachable, named once), each rule's
emitted event templates, and the subtrajectories they map."""

from __future__ import annotations

import dataclasses

from mapc.core.diagnostics import format_path
from mapc.spec import ir
from mapc.spec.checks.context import Context
from mapc.spec.checks.exprs import compile_expr
from mapc.spec.checks.scopes import build_scope
from mapc.spec.checks.signals import build_artifacts, build_signals
from mapc.spec.checks.values import build_value


def build_event_template(ctx: Context, data: dict, path: tuple, variables: set, *, kind: str,
                         when_key: bool) -> ir.EventTemplate:
    """One event an event rule emits: its `when`, semantic and canonical fields, signals, artifacts."""
    when = compile_expr(ctx, data["when"], path + ("when",), variables) if (when_key and "when" in data) else None
    sem = []
    for key in ir.SEMANTIC_FIELDS:
        if key in data:
            v = build_value(ctx, data[key], path + (key,), variables)
            if v is not None:
                sem.append((key, v))
    can = []
    for key in ir.CANONICAL_EVENT_FIELDS:
        if key in data:
            v = build_value(ctx, data[key], path + (key,), variables)
            if v is not None:
                can.append((key, v))
    id_v = build_value(ctx, data["id"], path + ("id",), variables) if "id" in data else None
    ts = build_value(ctx, data["timestamp"], path + ("timestamp",), variables) if "timestamp" in data else None
    parent = event_parent(ctx, data, path, variables)
    with_event = set(variables) | {"event"}
    sigs = build_signals(ctx, data.get("signals"), path + ("signals",), with_event)
    arts = build_artifacts(ctx, data.get("artifacts"), path + ("artifacts",), with_event)
    sub = build_subtrajectory(ctx, data["subtrajectory"], path + ("subtrajectory",), variables) \
        if "subtrajectory" in data else None
    return ir.EventTemplate(kind, when, id_v, ts, parent, data.get("raw"), tuple(sem), tuple(can), sigs, arts, path,
                            sub)


def build_subtrajectory(ctx: Context, data: dict, path: tuple, variables: set) -> ir.Subtrajectory | None:
    """`subtrajectory: {path: ...}` of an event rule (D109)."""
    e = compile_expr(ctx, data["path"], path + ("path",), variables)
    return ir.Subtrajectory(e, path) if e is not None else None


def check_subtrajectories(ctx: Context, levels, events: ir.Events) -> None:
    """A subtrajectory's file is mapped as one trajectory with the spec's trajectory level:
    no level down to the trajectory may loop (one trajectory per source)."""
    subs = [t.subtrajectory for r in events.rules for t in r.emits if t.subtrajectory is not None]
    for lv in levels if subs else ():
        if lv is not None and lv.scope.loops:
            each = lv.scope.loops[0].each
            ctx.error("subtrajectory_loop", each.path,
                      f"records.{lv.name} loops (`each: {each.text}`), but `subtrajectory` at "
                      f"{format_path(subs[0].at)} maps a file as one trajectory: a spec with "
                      "`subtrajectory` needs one trajectory per source",
                      hint=f"remove `each` from records.{lv.name} (a trajectory then covers the whole "
                      "source, as a session log's does), or drop `subtrajectory`")


def event_parent(ctx: Context, data: dict, path: tuple, variables: set):
    """`parent` of an event: `previous`, or a value giving the parent's id."""
    if "parent" not in data:
        return None
    if data["parent"] == "previous":
        return "previous"
    return build_value(ctx, data["parent"], path + ("parent",), variables) or None


def _event_defaults(ctx: Context, rule: ir.Rule, default_id: ir.Value | None, timestamp: ir.Value | None) -> ir.Rule:
    """``rule`` with ``events.id`` and ``events.timestamp`` for the events that give none.
    The id goes only to a rule's one event: a rule that emits several from one element
    keeps derived ids for those without their own (one id for two events would rename the
    second ``id~2``), with a warning that says so."""
    emits = list(rule.emits)
    if timestamp is not None:
        emits = [t if t.timestamp is not None else dataclasses.replace(t, timestamp=timestamp) for t in emits]
    lacking = [t for t in emits if t.id is None]
    if default_id is not None and lacking and len(emits) == 1:
        emits = [dataclasses.replace(emits[0], id=default_id)]
    elif default_id is not None and lacking:
        ctx.error("event_id_not_applied", rule.path + ("emit",),
                  f"records.events.id is not used here: this rule emits {len(emits)} events from one element "
                  f"and one id for all would rename the others `id~2`; {len(lacking)} of them without `id` "
                  "get derived ids", severity="warning", key=True,
                  hint="give each emitted event its own `id` (e.g. `id: \"join('-', [span_id, 'tool'])\"`)")
    return dataclasses.replace(rule, emits=tuple(emits))


def build_rule(ctx: Context, data: dict, path: tuple, variables: set) -> ir.Rule | None:
    """One event rule: `skip`, `emit: [...]`, or the single-event shorthand with `kind`."""
    when = compile_expr(ctx, data["when"], path + ("when",), variables) if "when" in data else None
    for key in ("before", "after", "remove"):
        if key in data:
            ctx.error("invalid_key", path + (key,), f"`{key}` places a rule among the rules of the spec "
                      "this one extends, and this spec extends none", key=True,
                      hint="add `extends:`, or remove the key and write the rules in the order they apply")
    extra = [k for k in data if k not in ("when", "skip", "emit", "name", "before", "after", "remove")]
    if data.get("skip"):
        if extra or "emit" in data:
            ctx.error("conflicting_keys", path, "a `skip: true` rule takes only `when`",
                      hint="remove " + ", ".join(f"`{k}`" for k in (extra + (["emit"] if "emit" in data else []))))
        return ir.Rule(when, True, (), path)
    if "emit" in data:
        if extra:
            ctx.error("conflicting_keys", path + (extra[0],),
                      "with `emit`, put the event fields inside each emitted event", key=True)
        emits = tuple(
            build_event_template(ctx, e, path + ("emit", i), variables, kind=e["kind"], when_key=True)
            for i, e in enumerate(data["emit"])
        )
        return ir.Rule(when, False, emits, path)
    if "kind" not in data:
        ctx.error("missing_key", path, "a rule needs `kind` (or `skip: true`, or `emit: [...]`)",
                  hint="kinds: message, generation, tool, observation, environment_action, state, "
                  "reward, grader, artifact, error, log", key=bool(path))
        return None
    tmpl = build_event_template(ctx, data, path, variables, kind=data["kind"], when_key=False)
    return ir.Rule(when, False, (tmpl,), path)


def build_events(ctx: Context, records: dict, variables: set) -> ir.Events:
    """`records.events`: its scope and rules, warning of rules a catch-all before them hides."""
    path = ("records", "events")
    data = records.get("events")
    if data is None:
        ctx.error("missing_key", ("records",), "records need `events` (how source elements become events)",
                  hint='e.g. events: {each: messages, kind: message, role: role, content: content}')
        return ir.Events(ir.Scope((), None, (), None), None, False, (), path)
    scope = build_scope(ctx, data, path, variables)
    parent = event_parent(ctx, data, path, variables)
    level_keys = ("each", "as", "where", "let", "ordinal_by", "parent", "raw", "rules", "merge", "carry")
    if "rules" in data:  # `id`, `timestamp` beside `rules`: for every event without its own
        level_keys += ("id", "timestamp")
    rule_keys = [k for k in data if k not in level_keys]
    rules = []
    events_id = events_ts = None
    if "rules" in data and "id" in data:
        events_id = build_value(ctx, data["id"], path + ("id",), variables)
    if "rules" in data and "timestamp" in data:
        events_ts = build_value(ctx, data["timestamp"], path + ("timestamp",), variables)
    if "rules" in data:
        if rule_keys:
            ctx.error("conflicting_keys", path + (rule_keys[0],),
                      f"`{rule_keys[0]}` belongs inside a rule when `rules` is given", key=True,
                      hint="move it into the rule(s), or drop `rules` for the single-rule shorthand")
        unconditional_at = None
        names: dict[str, int] = {}
        for i, rd in enumerate(data["rules"]):
            rpath = path + ("rules", i)
            if isinstance(rd.get("name"), str):
                if rd["name"] in names:
                    ctx.error("duplicate_id", rpath + ("name",), f"rule name {rd['name']!r} is already "
                              f"used by rules[{names[rd['name']]}]", hint="give each rule its own name")
                names.setdefault(rd["name"], i)
            if unconditional_at is not None:
                ctx.error("unreachable_rule", rpath,
                          f"this rule can never match: rules[{unconditional_at}] has no `when` and matches everything",
                          hint=_unreachable_hint(ctx, data["rules"][unconditional_at], rpath,
                                                 path + ("rules", unconditional_at)),
                          severity="warning")
            r = build_rule(ctx, rd, rpath, variables)
            if r is not None:
                rules.append(_event_defaults(ctx, r, events_id, events_ts))
            if "when" not in rd and unconditional_at is None:
                unconditional_at = i
    else:
        r = build_rule(ctx, {k: data[k] for k in rule_keys}, path, variables)
        if r is not None:
            rules.append(r)
    return ir.Events(scope, parent, bool(data.get("raw", False)), tuple(rules), path)


def _unreachable_hint(ctx: Context, catch_all: dict, rpath: tuple, cpath: tuple) -> str:
    """How to make a rule after a catch-all reachable (`before:` when the catch-all is inherited)."""
    hint = "move the catch-all rule last, or give it a `when`"
    if ctx.spec.mark(rpath).file != ctx.spec.mark(cpath).file and isinstance(catch_all.get("name"), str):
        hint += f"; to add a rule to inherited ones, write `before: {catch_all['name']}` in it"
    return hint
