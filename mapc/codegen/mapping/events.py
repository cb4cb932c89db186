"""``level_events``: the event rules as an if/elif chain, each rule's events written as one
``events.put`` call when the runtime's ``TrajectoryEvents`` can take them (fused), else as
a record finished by ``emit_event``."""

from __future__ import annotations

import json

from mapc.codegen.mapping.fields import _RAISES, _constant_text, _short, _where, _without_unused_scope
from mapc.codegen.mapping.frame import Frame
from mapc.codegen.pysrc import Writer, docstring_text, literal
from mapc.expressions import compile_expression
from mapc.spec import ir


class Events:
    """The generator's event writers (a part of :class:`MappingGenerator`)."""

    def _events(self, above: Frame) -> None:
        """``level_events``: the rules as an if/elif chain, each rule on a frame of its own."""
        ev = self.spec.events
        w = Writer()
        w.line("def level_events(state, emit, element, scope, trajectory, location, srcloc):")
        w.level += 1
        self.x.known_dicts.clear()
        self.x.aliases.clear()
        if above.known_object:
            self.x.known_dicts.add("element")  # the level above proved it an object
        what = f"one event per element of `{_short(ev.scope.loops[0].each.text)}`" if ev.scope.loops else "one event"
        w.docstring(f"records.events: {docstring_text(what)}, mapped by the first matching rule.")
        templates = [t for rule in ev.rules for t in rule.emits]
        tid = 'trajectory["id"]'
        if not all(self._fusable(t) for t in templates):
            w.line('tid = trajectory["id"]')
            tid = "tid"
        options = "".join((", remember=True" if self.remembers_events else "",
                           ", previous=True" if ev.parent == "previous" else
                           ", last=True" if self.tracks_last else ""))
        w.comment("this trajectory's events: the sequence number and last event so far")
        w.line(f"events = TrajectoryEvents(state, {tid}, srcloc{options})")
        w.line("s = dict(scope)")
        body_level = w.level
        frame = self._open_loops(w, ev.scope, "events", above.but(tid=tid))
        el = frame.el
        if self.jsonl and self.spec.line_level == "events" and ev.scope.loops:
            w.line("events.srcloc = srcloc")
        self._alias(w, "events", el)
        self._scope_body(w, ev.scope, "events", el, looped=frame.looped)
        tested = self._tested_field(ev.rules)
        if tested is not None:
            path = ".".join(json.dumps(k) for k in tested)
            w.line(f"tested = {self.x.assume_dicts(compile_expression(path).inline_source(el, 's'))}")
        first = True
        for rule in ev.rules:
            where = _where(rule.path)
            rule_frame = frame
            if rule.when is not None:
                kw = "if" if first else "elif"
                w.comment(f"{where} (line {rule.when.line}): when {rule.when.text}")
                test = rule.when.compiled.string_test
                if tested is not None and test is not None and test[0] == tested:
                    w.line(f"{kw} tested == {literal(test[1])}:")
                    rule_frame = frame.but(matched=tested)  # an object; `tested` holds that field
                else:
                    w.line(f"{kw} {self._test(rule.when, el)}:")
            elif first:
                w.comment(f"{where}: every element")
                w.line("if True:")
            else:
                w.comment(f"{where}: every other element")
                w.line("else:")
            known = set(self.x.known_dicts)
            if rule_frame.matched is not None:
                self.x.known_dicts.add(el)
            with w.indent():
                if rule.skip:
                    w.line("continue  # skip: true" if frame.looped else "pass  # skip: true")
                else:
                    for k, tmpl in enumerate(rule.emits):
                        suffix = f".{k}" if len(rule.emits) > 1 else ""
                        self._event(w, tmpl, rule_frame, suffix)
            self.x.known_dicts.intersection_update(known)
            first = False
            if rule.when is None:
                break  # the rules after it are an error (unreachable_rule)
        if not frame.looped and first:
            w.line("pass")
        w.level = body_level
        w.line("events.close()")
        self.functions += [self.x.take(), _without_unused_scope(w.text())]

    @staticmethod
    def _tested_field(rules) -> tuple | None:
        """The field that two or more reachable rules compare with a text (``type == 'tool'``)."""
        counts: dict[tuple, int] = {}
        for rule in rules:
            if rule.when is None:
                break  # the rules after it never run
            test = rule.when.compiled.string_test
            if test is not None:
                counts[test[0]] = counts.get(test[0], 0) + 1
        best = max(counts.items(), key=lambda kv: kv[1], default=(None, 0))
        return best[0] if best[1] >= 2 else None

    def _event(self, w: Writer, t: ir.EventTemplate, frame: Frame, suffix: str) -> None:
        """One event a rule emits (``suffix``: its place among the rule's `emit`s)."""
        el, loc = frame.el, frame.loc
        if t.when is not None:
            w.line(f"if {self._test(t.when, el)}:")
            w.level += 1
        start = w.level
        location = loc if frame.looped else f"loc_text({loc})"  # inside a loop the location is never empty
        default_id = f'"evt@" + {location}' + (f" + {literal(suffix)}" if suffix else "")
        if self._fusable(t):
            self._fused_event(w, t, frame, default_id)
        else:
            self._event_record(w, t, frame, default_id)
        w.level = start
        if t.when is not None:
            w.level -= 1

    def _raw(self, t: ir.EventTemplate) -> bool:
        """Whether a rule's event carries its source element (`raw`: the rule's, the events',
        or the target's option, ``raw_events``)."""
        return t.raw if t.raw is not None else self.spec.events.raw or self.raw_events

    def _checked(self, t: ir.EventTemplate) -> list[str]:
        """The fields of a rule that ``events.put_full`` checks (at ``<rule>.<name>``)."""
        can = dict(t.canonical)
        checked = [k for k in ("branch_id", "alignment_key", "state_hash", "context") if k in can]
        if "metadata" in can and not isinstance(can["metadata"], ir.ObjectTemplate):
            checked.append("metadata")
        return checked

    def _fusable(self, t: ir.EventTemplate) -> bool:
        """Whether one ``events.put`` or ``events.put_full`` call (:meth:`_fused_event`) takes
        a rule's event: all but artifacts, signals of other shapes and an event that
        expressions read (``$event``), which :meth:`_event_record` writes as before."""
        if t.artifacts or t.subtrajectory is not None or "event" in self.used_vars:
            return False
        return self._direct_signals(t.signals) and all(
            s.metadata is None and s.event_id is None and (s.unit is None or _constant_text(s.unit) is not None)
            for s in t.signals
        )

    @staticmethod
    def _direct_signals(signals, artifacts=()) -> bool:
        """An event's signals with distinct literal names (no loops) get ``<event id>:<name>``
        directly: unique by construction, so no bookkeeping per signal."""
        names = [_constant_text(sig.name) for sig in signals]
        return (
            all(n is not None for n in names)
            and not any(sig.loops for sig in signals)
            and len(set(names)) == len(names)
            and not (artifacts and "artifact" in names)
        )

    def _fused_event(self, w: Writer, t: ir.EventTemplate, frame: Frame, default_id: str) -> None:
        """One ``events.put`` call (records_rt's ``TrajectoryEvents``): the leading fields,
        then the rule's, by name; ``events.put_full`` for a rule with fields ``put`` does not
        take (`branch_id`, `alignment_key`, `state_hash`, `context`, `raw`, `metadata` from
        an expression: D86).

        Expressions are evaluated in the spec's order (id, timestamp, parent, branch_id,
        alignment_key, state_hash, fields, context, metadata, signals); the call checks the
        timestamp, parent and the fields ``put_full`` takes, in that order (D83: an element
        whose later expression fails reports that failure, not also their warnings)."""
        where, el = _where(t.path), frame.el
        idsrc = self._event_id(w, t, el, default_id)
        can = dict(t.canonical)
        sem = dict(t.semantic)
        values = [(key, self._field_value(sem[key], frame)) for key, _ in t.semantic]
        layout = self._layout(t.kind, sem)
        made = {k: self.x.value(can[k], el, "s") for k in ("input", "output", "data") if k in can}
        checked = self._checked(t)
        self.runtime_places.update(f"{where}.{k}" for k in checked)
        raw = self._raw(t)
        put = "events.put_full" if checked or raw else "events.put"
        after = [f"context={self.x.value(can['context'], el, 's')}"] if "context" in can else []
        if raw:
            after.append(f"raw={el}")
        if "metadata" in can:
            after.append(f"metadata={self.x.value(can['metadata'], el, 's')}")
        signals = self._fused_signals(t, el)
        at = signals is not None or bool(checked)
        if signals is not None:
            after.append(f"signals=({signals})")
            self.runtime_places.add(where + ".signals")
        args = []  # the leading fields as keyword arguments
        if t.timestamp is not None:
            src = self.x.value(t.timestamp, el, "s")
            ts_where = _where(t.timestamp.path)
            if self._time(t.timestamp, src, "") == src:
                args.append(f"rfc3339={src}")  # iso8601(): RFC 3339 or null already
            elif ts_where == where + ".timestamp":
                args.append(f"timestamp={src}")
                self.runtime_places.add(ts_where)
                at = True
            elif ts_where == "records.events.timestamp":  # checked here, at its own place
                args.append(f"rfc3339=events.time({src})")
                self.runtime_places.add(ts_where)
            else:
                args.append(f"rfc3339={self._time(t.timestamp, src, literal(ts_where))}")
        parent = t.parent if t.parent is not None else self.spec.events.parent
        previous = self.spec.events.parent == "previous"  # every rule's, unless it says
        if parent == "previous":
            args += [] if previous else ["parent_id=events.prev"]
        elif parent is not None and not (isinstance(parent, ir.Literal) and parent.value is None):
            src = self.x.value(parent, el, "s")
            if _where(parent.path) == where + ".parent":
                args.append(f"parent={src}")
                at = True
            else:
                args.append(f"events_parent={src}")
            self.runtime_places.add(_where(parent.path))
        elif previous:
            args.append("parent_id=None")
        args += [f"{k}={self.x.value(can[k], el, 's')}" for k in ("branch_id", "alignment_key", "state_hash")
                 if k in can]
        later = t.signals if signals is None else ()
        var = "eid" if (later or t.semantic and self.semantics) else ""
        lead = [f"{idsrc}, {literal(t.kind)}"] + ([literal(where)] if at else [])
        if at:
            self.rule_places.add(where)
        # with the semantic fields in variables first, a timestamp or parent that may raise or
        # is checked here goes in a variable before them
        first, moved = [], list(args)
        if any(_RAISES.search(v) for _, v in values):
            for k, arg in enumerate(args):
                key, src = arg.split("=", 1)
                if _RAISES.search(src) or src.startswith("coerce_time("):
                    var_name = {"timestamp": "ts", "rfc3339": "ts", "parent": "parent",
                                "events_parent": "parent", "parent_id": "parent"}.get(key, key)
                    first.append((var_name, src))
                    moved[k] = f"{key}={var_name}"
        best = None
        for inline in (False, True):  # the semantic fields in variables first, or in their place
            fields = self._fused_fields(w.level, values, layout, made, inline, first)
            if fields is None:
                continue
            trial = Writer(w.level)
            trial.lines += fields[0]
            call = lead + (args if inline else moved) + fields[1] + after
            self._call(trial, f"{var} = {put}" if var else put, call)
            if best is None or len(trial.lines) <= len(best):
                best = trial.lines
        w.lines += best
        if t.semantic and self.semantics:  # a view of its own (put's is the kind alone)
            self._call(w, "semantic_view", [f"state, {var}, {literal(t.kind)}"] + [f"{k}={k}" for k, _ in t.semantic])
        if later:
            self._children(w, later, (), frame, rec="ev", event=True, where=where + ".signals", eid=var)

    def _fused_signals(self, t: ir.EventTemplate, el: str) -> str | None:
        """The ``signals`` argument of ``events.put``: ``(name, value, unit),`` of each signal,
        when all are of the simplest shape (``signals: {name: value}``, no condition); else None."""
        where = t.path + ("signals",)
        entries = []
        for sig in t.signals:
            name, unit = _constant_text(sig.name), _constant_text(sig.unit)
            if sig.when is not None or sig.path != where + (name,) or sig.counter != "per_step" or sig.total:
                return None
            entries.append(f"({literal(name)}, {self.x.value(sig.value, el, 's')}, {literal(unit)})")
        return "".join(f"{e}, " for e in entries)[:-1] if entries else None


    def _event_id(self, w: Writer, t: ir.EventTemplate, el: str, default_id: str) -> str:
        """The source of the event's id: ``eid``, set from the rule's own `id` (or
        records.events.id for every rule) when there is one, else the derived ``default_id``."""
        if t.id is None:
            return default_id
        id_where = _where(t.id.path)
        w.line(f"eid = native_event_id(state, {self.x.value(t.id, el, 's')}, {default_id}, {literal(id_where)})")
        return "eid"

    def _event_record(self, w: Writer, t: ir.EventTemplate, frame: Frame, default_id: str) -> None:
        """An event built as a record and finished by ``emit_event``: the rules
        :meth:`_fusable` leaves out."""
        where, el = _where(t.path), frame.el
        idsrc = self._event_id(w, t, el, default_id)
        timestamp = "None"
        if t.timestamp is not None:
            src = self.x.value(t.timestamp, el, "s")
            timestamp = self._time(t.timestamp, src, literal(_where(t.timestamp.path)))
            if timestamp != src or len(timestamp) > 20:
                w.line(f"ts = {timestamp}")
                timestamp = "ts"
        parent = t.parent if t.parent is not None else self.spec.events.parent
        parent_src = "None"
        if parent == "previous":
            parent_src = "events.prev"
        elif parent is not None and not (isinstance(parent, ir.Literal) and parent.value is None):
            w.line(f"parent = event_parent(state, tid, {self.x.value(parent, el, 's')}, {literal(_where(parent.path))})")
            parent_src = "parent"
        w.line(f"ev = event_record(tid, events.seq, {idsrc}, {literal(t.kind)}, {timestamp}, {parent_src})")
        w.line("events.seq += 1")
        can = dict(t.canonical)
        sem = dict(t.semantic)
        for key in ("branch_id",):
            if key in can:
                self._put(w, "ev", key, f"coerce_id(state, {self.x.value(can[key], el, 's')}, {literal(where + '.' + key)})")
        for key in ("alignment_key", "state_hash"):
            if key in can:
                self._put(w, "ev", key, f"coerce_nonempty_text(state, {self.x.value(can[key], el, 's')}, {literal(where + '.' + key)})")
        values = [(key, self._field_value(sem[key], frame)) for key, _ in t.semantic]
        layout = self._layout(t.kind, sem)
        made = {k: self.x.value(can[k], el, "s") for k in ("input", "output", "data") if k in can}
        w.lines += self._fields(w.level, values, layout, made)
        if "context" in can:
            self._put(w, "ev", "context", self._object(can["context"], self.x.value(can["context"], el, "s"), literal(where + ".context")))
        raw = self._raw(t)
        args = "state, ev, srcloc"
        if raw or "metadata" in can or t.subtrajectory is not None:
            w.line('ev["source"] = srcloc')
            if raw:
                w.line(f'ev["raw"] = {el}')
            if "metadata" in can:
                self._put(w, "ev", "metadata", self._object(can["metadata"], self.x.value(can["metadata"], el, "s"), literal(where + ".metadata")))
            if t.subtrajectory is not None:
                self._subtrajectory(w, t, el)
            args = "state, ev, None"
        if self.remembers_events:
            args += ", True"
        elif args.endswith("None"):
            args = "state, ev"
        var = "events.prev"
        w.line(f"{var} = emit_event({args})")
        if (t.semantic or t.subtrajectory) and self.semantics:  # a view of its own (emit_event's: the kind)
            fields = "".join(f", {k}={k}" for k, _ in t.semantic) + (", subtrajectory=sub" if t.subtrajectory else "")
            w.line(f"semantic_view(state, {var}, {literal(t.kind)}{fields})")
        if t.signals or t.artifacts:
            if "event" in self.used_vars:
                w.line('s["event"] = ev')
            self._children(w, t.signals, t.artifacts, frame, rec="ev", event=True,
                           where=_where(t.path) + ".signals", eid=var)

    def _subtrajectory(self, w: Writer, t: ir.EventTemplate, el: str) -> None:
        """``sub = map_subtrajectory(...)``: the file the rule's `subtrajectory` names, mapped as
        a child trajectory before the event (which then names it in ``metadata``), D109."""
        sub = t.subtrajectory
        where = _where(sub.at)
        w.comment(f"{where} (line {sub.path.line}): its file, a child trajectory, first")
        sem = dict(t.semantic)
        call_id = "None"
        if "tool_call_id" in sem:  # a variable with semantic views; else (maybe in line) again
            call_id = "tool_call_id" if self.semantics else self.x.value(sem["tool_call_id"], el, "s")
        path = self.x.value(sub.path, el, "s")
        self._call(w, "sub = map_subtrajectory" if self.semantics else "map_subtrajectory", ["state", "emit", "map_child_source", path, "ev", "trajectory", call_id,
                                                   "scope", literal(where)])

