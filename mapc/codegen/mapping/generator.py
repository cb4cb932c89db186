"""The mapping generator: what holds for the whole spec (which expressions read which
variables, what the events remember, the streaming plan), and ``generate``, which writes
``map_source`` and each level function in spec order."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from mapc.codegen.expressions import ExprTable, prefixes, template_key
from mapc.codegen.mapping.events import Events
from mapc.codegen.mapping.fields import _NEXT, Fields
from mapc.codegen.mapping.levels import Levels
from mapc.codegen.mapping.loops import Loops
from mapc.codegen.mapping.signals import Signals
from mapc.codegen.pysrc import literal
from mapc.spec import ir
from mapc.spec.semantic import iter_exprs
from mapc.analysis.streaming import stream_plan


class MappingGenerator(Levels, Loops, Events, Signals, Fields):
    """Generates ``map_source`` and the level functions for one spec.

    Its parts are split along the spec's seams (levels.py, loops.py, events.py,
    signals.py, fields.py); what holds for the whole spec is set here, and what the code
    being written knows (its element, what was proved of it, the rule's tested field)
    travels in a :class:`Frame` from call to call.
    """

    def __init__(self, spec: ir.Spec, exprs: ExprTable, semantics: bool = True, raw_events: bool = False):
        self.spec = spec
        self.x = exprs
        #: write what only a semantic view reads (each event's view, a trajectory's
        #: final_output): hosts that build conversations from events
        self.semantics = semantics
        #: every event carries its source element in `raw` (a target's option, which the
        #: target passes in: :meth:`mapc.targets.Target.raw_events`)
        self.raw_events = raw_events
        self.jsonl = spec.source.streams_lines  # jsonl or csv: one value per line / row
        self.uses_previous = self._any_parent(lambda p: p == "previous")
        self.uses_native_parent = self._any_parent(lambda p: p is not None and p != "previous")
        # trajectory signals and artifacts that name their event (`event_id`)
        owned = [c.event_id for c in self._trajectory_children() if c.event_id is not None]
        #: the previous event is kept per trajectory (`parent: previous`, `event_id: last`)
        self.tracks_last = self.uses_previous or "last" in owned
        #: every event id is remembered per trajectory (native parents, `event_id` expressions)
        self.remembers_events = self.uses_native_parent or any(e != "last" for e in owned)
        self.uses_source_var = any("source" in e.compiled.variables for e in self._exprs(self._line_levels()))
        #: variables some expression reads: the scope only gets those written per element
        self.used_vars = {v for e in self._exprs(set(_NEXT) | {"events"}) for v in e.compiled.variables}
        #: the document's array read one element at a time, if the spec allows it
        self.stream = stream_plan(spec).plan
        self.functions: list[str] = []
        #: spec places the runtime derives from a place the code names (``events.put``'s rule
        #: and ``<rule>.timestamp``), for the diagnostics table
        self.runtime_places: set[str] = set()
        #: places named only for the runtime to derive others from (none warns there): the
        #: rules `events.put` is given, the signals `put_signal_with` is given
        self.rule_places: set[str] = set()
        #: level function -> its loops as (index variable, JSON path step), for diagnostics
        self.loops: dict[str, list[tuple[str, str]]] = {}
        exprs.locate = spec.locate
        exprs.repeated = _repeated_templates((spec.levels, spec.events))

    # -- analysis ------------------------------------------------------------
    def _templates(self):
        for rule in self.spec.events.rules:
            yield from rule.emits

    def _trajectory_children(self):
        lv = self.spec.level("trajectory")
        return list(lv.signals) + list(lv.artifacts)

    def _any_parent(self, pred) -> bool:
        ev = self.spec.events
        return any(pred(t.parent if t.parent is not None else ev.parent) for t in self._templates())

    def _line_levels(self) -> set[str]:
        """The jsonl line level and the levels below it (they see each line's ``$source``)."""
        names = [lv.name for lv in self.spec.levels] + ["events"]
        return set(names[names.index(self.spec.line_level):]) if self.spec.line_level in names else set()

    def _exprs(self, levels: set[str]):
        """Every expression evaluated at ``levels`` (level names, ``events`` included)."""
        values = []
        for lv in self.spec.levels:
            if lv.name not in levels:
                continue
            values += [lv.id, lv.final_output] + [v for _, v in lv.fields] + [v for _, v in lv.scope.lets]
            values += _loop_values(lv.scope.loops) + [lv.scope.where, lv.scope.ordinal_by]
            for sig in lv.signals:
                values += [sig.name, sig.value, sig.unit, sig.metadata, sig.when] + [lp.each for lp in sig.loops]
                values += [sig.event_id] if not isinstance(sig.event_id, str) else []
            for art in lv.artifacts:
                values += [v for _, v in art.fields] + [art.when] + [lp.each for lp in art.loops]
                values += [art.event_id] if not isinstance(art.event_id, str) else []
        ev = self.spec.events
        if "events" not in levels:
            return [e for v in values if v is not None for e in iter_exprs(v)]
        values += _loop_values(ev.scope.loops) + [ev.scope.where, ev.scope.ordinal_by]
        values += [v for _, v in ev.scope.lets]
        if not isinstance(ev.parent, str):
            values.append(ev.parent)
        for rule in ev.rules:
            values.append(rule.when)
            for t in rule.emits:
                values += [t.when, t.id, t.timestamp] + [v for _, v in t.semantic + t.canonical]
                if not isinstance(t.parent, str):
                    values.append(t.parent)
                for sig in t.signals:
                    values += [sig.name, sig.value, sig.unit, sig.metadata, sig.when] + [lp.each for lp in sig.loops]
                for art in t.artifacts:
                    values += [v for _, v in art.fields] + [art.when] + [lp.each for lp in art.loops]
                if t.subtrajectory is not None:
                    values.append(t.subtrajectory.path)
        return [e for v in values if v is not None for e in iter_exprs(v)]

    def generate(self) -> str:
        """``map_source`` and the level functions in spec order, each after the compiled
        expressions it is the first to use."""
        frame = self._map_source()
        for lv in self.spec.levels:
            if lv.declared:
                frame = self._level(lv, frame)
        self._events(frame)
        if self.spec.subtrajectories:
            self._map_child_source()
        return "\n\n\n".join(f.strip("\n") for f in self.functions if f.strip()) + "\n"

    def _spec_line(self, path: tuple) -> str:
        """`` (line N)`` for a spec path, when the spec says where it is."""
        mark = self.spec.locate(tuple(path), key=True) if self.spec.locate else None
        return f" (line {mark.line})" if mark is not None and mark.line else ""


    def _test(self, e: ir.Expr, el: str) -> str:
        """A Python condition for a spec condition: JMESPath truthiness of ``e``.

        ``truthy()`` is left out when the value is always true, false or null
        (a comparison, ``!``, ``contains()``...): Python's truthiness is the same.
        """
        src = self.x.call(e, el, "s")
        return src if e.compiled.boolean else f"truthy({src})"

    def _required_at(self) -> str:
        """The literal ``'spec.yaml:6'``: where ``source.probe.require`` is ('' if unknown)."""
        mark = self.spec.locate(("source", "probe", "require")) if self.spec.locate else None
        return literal(f"{Path(mark.file).name}:{mark.line}" if mark and mark.line else "")



def _loop_values(loops) -> list:
    """The expressions of a level's loops: `each`, and `merge`'s and `carry`'s."""
    values = []
    for lp in loops:
        values.append(lp.each)
        if lp.merge is not None:
            values += [e for e in (lp.merge.by, lp.merge.when, lp.merge.until) if e is not None]
        for c in lp.carry:
            values += [c.value, c.when]
    return values


def _repeated_templates(node) -> dict[tuple, int]:
    """The object templates (:func:`template_key`) written at two or more places of ``node``,
    with how many."""
    counts: dict[tuple, int] = {}
    firsts: dict[tuple, ir.ObjectTemplate] = {}

    def walk(n) -> None:
        if isinstance(n, ir.ObjectTemplate):
            key = template_key(n)
            counts[key] = counts.get(key, 0) + 1
            firsts.setdefault(key, n)
            for _, x in n.items:
                walk(x)
        elif dataclasses.is_dataclass(n) and not isinstance(n, type):
            for f in dataclasses.fields(n):
                walk(getattr(n, f.name))
        elif isinstance(n, (tuple, list)):
            for x in n:
                walk(x)
        elif isinstance(n, dict):
            for x in n.values():
                walk(x)

    walk(node)
    # a template that begins with another's members (`<<: *common` and keys of its own) uses it
    templates = list(firsts.values())
    for t in templates:
        for key in prefixes(t, templates):
            counts[key] += counts[template_key(t)]
    return {k: c for k, c in counts.items() if c > 1}
