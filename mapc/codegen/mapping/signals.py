"""Signals and artifacts of a trajectory or an event: the simplest shapes as one call each
(or a table and one call in a loop), the others checked one field at a time."""

from __future__ import annotations

from mapc.codegen.mapping.fields import _RAISES, _constant_text, _path_of_signal, _where
from mapc.codegen.mapping.frame import Frame
from mapc.codegen.pysrc import Writer, literal
from mapc.spec import ir
from mapc.spec.semantic import iter_exprs


class Signals:
    """The generator's signal and artifact writers (a part of :class:`MappingGenerator`)."""

    def _children(self, w: Writer, signals, artifacts, frame: Frame, *, rec: str, event: bool,
                  where: str, eid: str = "") -> None:
        """The signals and artifacts of a trajectory or event record (the variable ``rec``; an
        event's id is in the variable ``eid``) on the frame's element."""
        # An event's signals with distinct literal names get ``<event id>:<name>`` directly
        # (_direct_signals). Anything dynamic (or a trajectory, which may repeat) goes through
        # st.child_id().
        direct = event and self._direct_signals(signals, artifacts)
        owner = f'{rec}["id"]'
        el = frame.el
        tid = frame.tid if event else owner
        signal_rec = f"{tid}, {eid}" if direct else rec  # event_signal's (trajectory id, event id)
        if signals:
            lines = sorted({s.value.line for s in signals if isinstance(s.value, ir.Expr) and s.value.line})
            w.comment(where + (f" (line {lines[0]})" if lines else ""))
        table: list[tuple[ir.SignalSpec, str, bool]] = []  # consecutive signals a table can hold
        for sig in signals:
            if sig.counter != "per_step" or sig.total:  # in spec order, after the table so far
                self._signal_table(w, table, rec=signal_rec, el=el, direct=direct, where=where)
                table = []
                self._counter_signal(w, sig, rec=rec, el=el, direct=direct, tid=tid, eid=eid)
                continue
            entry = self._signal_entry(sig, el, where, w.level + 1)
            if entry is not None and not (table and entry[1]):  # a value that may raise: first
                table.append((sig, *entry))
                continue
            self._signal_table(w, table, rec=signal_rec, el=el, direct=direct, where=where)
            if entry is not None:
                table = [(sig, *entry)]
                continue
            table = []
            usual = sig.metadata is None and getattr(sig, "event_id", None) is None
            if usual and (sig.unit is None or _constant_text(sig.unit) is not None):
                start = w.level
                sel, _ = self._child_loops(w, sig.loops, el, (sig.name, sig.value, sig.when))
                if sig.when is not None:
                    w.line(f"if {self._test(sig.when, sel)}:")
                    w.level += 1
                self._signal_call(w, sig, rec=signal_rec, el=sel, direct=direct)
                w.level = start
            elif not self._signal_with(w, sig, rec=rec, el=el, direct=direct):
                self._signal(w, sig, owner=owner, event=owner if event else None, el=el, tid=tid,
                             direct=direct)
        self._signal_table(w, table, rec=signal_rec, el=el, direct=direct, where=where)
        for art in artifacts:
            self._artifact(w, art, owner=owner, event=owner if event else None, el=el, tid=tid)

    def _signal_entry(self, sig: ir.SignalSpec, el: str, where: str, level: int) -> tuple[str, bool] | None:
        """``(table line, may raise)`` of a signal of the simplest shape (literal name and unit,
        no loop, condition, metadata or event), when its line fits, else None."""
        name, unit = _constant_text(sig.name), _constant_text(sig.unit)
        if (name is None or sig.unit is not None and unit is None or sig.loops or sig.when is not None
                or sig.counter != "per_step" or sig.total
                or sig.metadata is not None or getattr(sig, "event_id", None) is not None
                or sig.path != _path_of_signal(where, name)):
            return None
        value = self.x.value(sig.value, el, "s")
        entry = f"({literal(name)}, {value}, {literal(unit)}),"
        if 4 * level + len(entry) > 99:
            return None
        return entry, bool(_RAISES.search(value))

    def _signal_table(self, w: Writer, table: list, *, rec: str, el: str, direct: bool, where: str) -> None:
        """Signals of the simplest shape: one call each, or a table of name, value and unit
        and one call in a loop when that is shorter (three or more)."""
        plain = Writer(w.level)
        for sig, _, _ in table:
            self._signal_call(plain, sig, rec=rec, el=el, direct=direct)
        if len(table) < 3 or len(table) + 3 >= len(plain.lines):
            w.lines += plain.lines
            return
        helper = "event_signal" if direct else "put_signal"
        w.line("for sig_name, v, unit in (")
        with w.indent():
            for _, entry, _ in table:
                w.line(entry)
        w.line("):")
        with w.indent():
            w.line(f"{helper}(state, {rec}, sig_name, v, {literal(where)}, unit)")

    def _signal_call(self, w: Writer, sig: ir.SignalSpec, *, rec: str, el: str, direct: bool) -> None:
        """A signal of the usual shape: one call of the runtime's ``put_signal`` (``event_signal``
        for an event's signals with distinct literal names)."""
        where = _where(sig.path)
        text = _constant_text(sig.name)
        if text is not None:
            name = literal(text)
        else:
            name = f"coerce_nonempty_text(state, {self.x.value(sig.name, el, 's')}, {literal(where + '.name')})"
        unit = _constant_text(sig.unit)
        extra = f", {literal(unit)}" if unit is not None else ""
        helper = "event_signal" if direct else "put_signal"
        value = self.x.value(sig.value, el, "s")
        if text is not None and sig.path[-1] == text:
            where = _where(sig.path[:-1])  # the signals mapping: the runtime adds the name
        head, tail = f"{helper}(state, {rec}, {name}, ", f", {literal(where)}{extra})"
        if len(head + value + tail) + 4 * w.level > 99 and text is not None:
            w.line(f"v = {value}")  # a long value on a line of its own keeps the call on one line
            value = "v"
        w.line(head + value + tail)

    def _signal_with(self, w: Writer, sig: ir.SignalSpec, *, rec: str, el: str, direct: bool) -> bool:
        """A signal with metadata or a computed unit: one call of the runtime's
        ``put_signal_with`` in its loops and condition, which checks the name, the value, and
        only when the signal is emitted the unit and the metadata, as :meth:`_signal` does.

        The call evaluates the unit's and the metadata's code before it knows whether the
        signal is emitted, so only when that code cannot raise (no expression function, no
        ordering comparison) and warns of nothing (the runtime checks them); else False,
        nothing written. A name is checked in the call (before the value's code runs) when
        that code may raise, else by the runtime."""
        where = _where(sig.path)
        trial = Writer(w.level)
        uses = (sig.name, sig.value, sig.unit, sig.metadata, sig.when)
        sel, _ = self._child_loops(trial, sig.loops, el, uses)
        if sig.when is not None:
            trial.line(f"if {self._test(sig.when, sel)}:")
            trial.level += 1
        text = _constant_text(sig.name)
        name = literal(text) if text is not None else self.x.value(sig.name, sel, "s")
        value = self.x.value(sig.value, sel, "s")
        unit = _constant_text(sig.unit)
        unit = literal(unit) if unit is not None else self.x.value(sig.unit, sel, "s")
        metadata = self.x.value(sig.metadata, sel, "s")
        if _RAISES.search(unit) or _RAISES.search(metadata):  # evaluated before the signal
            return False  # is known to be emitted: only code that cannot raise (_signal's)
        places = [where + ".value"]
        if text is None and _RAISES.search(value):  # its warning before the value's failure
            trial.line(f"n = coerce_nonempty_text(state, {name}, {literal(where + '.name')})")
            name = "n"
        elif text is None:
            places.append(where + ".name")
        args = ["state", rec, name, value, literal(where)]
        if sig.unit is not None:
            args.append(unit)
            if _constant_text(sig.unit) is None:
                places.append(where + ".unit")
        if sig.metadata is not None:
            args.append(f"metadata={metadata}")
            if not isinstance(sig.metadata, ir.ObjectTemplate):
                places.append(where + ".metadata")
        if direct:
            args.append("numbered=False")
        event_id = getattr(sig, "event_id", None)  # a trajectory's signal naming its event
        if event_id == "last":
            args.append("last=True")
        elif event_id is not None:
            src = self.x.value(event_id, sel, "s")
            # code that may raise runs only for a signal emitted, as the name and value allow
            args.append(f"event_id=lambda: {src}" if _RAISES.search(src) else f"event_id={src}")
            places.append(where + ".event_id")
        self.runtime_places.update(places)
        self.rule_places.add(where)  # named for the runtime to derive the places above
        self._call(trial, "put_signal_with", args)
        w.lines += trial.lines
        return True

    def _child_loops(self, w: Writer, loops, as_el: str, uses=()) -> tuple[str, int]:
        """Open ``loops`` (a signal's or artifact's ``each``); the innermost element gets an
        object alias when ``uses`` (the values evaluated on it) read two or more of its fields."""
        el = as_el
        opened = 0
        for k, lp in enumerate(loops):
            e = f"c{k}"
            w.line(f"for {e} in iterate(state, {self.x.call(lp.each, el, 's')}, {literal(_where(lp.path))}):")
            w.level += 1
            self.x.aliases.pop(e, None)  # (another loop's element had the name)
            if lp.as_name:
                w.line(f"s[{literal(lp.as_name)}] = {e}")
            el = e
            opened += 1
        if opened:
            exprs = [x for v in uses if v is not None for x in iter_exprs(v)]
            if self._field_reads(exprs, el) >= 2:
                w.line(f"o{el[1:]} = {el} if isinstance({el}, dict) else {{}}")
                self.x.aliases[el] = f"o{el[1:]}"
        return el, opened

    @staticmethod
    def _field_reads(exprs, el: str) -> int:
        """Fields of ``el`` the expressions read in line, plus their functions that read it
        only as an object (each given its alias, ``ExprTable.call``)."""
        reads = 0
        for e in exprs:
            inline = e.compiled.inline_source(el, "s")
            reads += inline.count(f"{el}.get(") if inline is not None else e.compiled.reads_root_as_object
        return reads

    def _signal(self, w: Writer, sig: ir.SignalSpec, *, owner, event, el, tid, direct=False) -> None:
        where = _where(sig.path)
        w.comment(where)
        start = w.level
        el, _ = self._child_loops(w, sig.loops, el, (sig.name, sig.value, sig.unit, sig.metadata, sig.when))
        if sig.when is not None:
            w.line(f"if {self._test(sig.when, el)}:")
            w.level += 1
        if isinstance(sig.name, ir.Literal) and isinstance(sig.name.value, str) and sig.name.value:
            name = literal(sig.name.value)
        else:
            w.line(f"n = coerce_nonempty_text(state, {self.x.value(sig.name, el, 's')}, {literal(where + '.name')})")
            name = "n"
        w.line(f"v = coerce_scalar(state, {self.x.value(sig.value, el, 's')}, {literal(where + '.value')})")
        cond = "v is not None" + (" and n is not None" if name == "n" else "")
        w.line(f"if {cond}:")
        with w.indent():
            ev = f', "event_id": {event}' if event else ""
            sid = f"{owner} + {literal(':' + sig.name.value)}" if direct else f"state.child_id({owner}, {name})"
            if sig.event_id is not None:  # a trajectory's signal that names its event
                self._owning_event(w, sig.event_id, el, tid, where)
                w.line(f'sig = {{"record_type": "signal", "id": {sid}, "trajectory_id": {tid}}}')
                w.line("if e is not None:")
                with w.indent():
                    w.line('sig["event_id"] = e')
                w.line(f'sig["name"] = {name}')
                w.line('sig["value"] = v')
            else:
                w.line(
                    f'sig = {{"record_type": "signal", "id": {sid}, '
                    f'"trajectory_id": {tid}{ev}, "name": {name}, "value": v}}'
                )
            unit = _constant_text(sig.unit)
            if unit is not None:
                w.line(f'sig["unit"] = {literal(unit)}')
            elif sig.unit is not None:
                self._put(w, "sig", "unit", f"coerce_nonempty_text(state, {self.x.value(sig.unit, el, 's')}, {literal(where + '.unit')})")
            if sig.metadata is not None:
                self._put(w, "sig", "metadata", self._object(sig.metadata, self.x.value(sig.metadata, el, 's'), literal(where + '.metadata')))
            w.line("emit(sig)")
        w.level = start

    def _counter_signal(self, w: Writer, sig: ir.SignalSpec, *, rec: str, el: str, direct: bool, tid: str,
                        eid: str) -> None:
        """An event's signal with `counter: cumulative` or `total: true`: its value as the
        runtime counts it (``counted_value``), emitted when not null; a total is only added up
        (``count_total``; ``emit_totals`` writes it at the end)."""
        where = _where(sig.path)
        cumulative = sig.counter == "cumulative"
        w.comment(where + ": " + ", ".join(filter(None, [
            "a running total: its increase since the last" if cumulative else "",
            "summed into one signal of the trajectory" if sig.total else ""])))
        start = w.level
        sel, _ = self._child_loops(w, sig.loops, el, (sig.name, sig.value, sig.unit, sig.metadata, sig.when))
        if sig.when is not None:
            w.line(f"if {self._test(sig.when, sel)}:")
            w.level += 1
        text = _constant_text(sig.name)
        if text is not None:
            name = literal(text)
        else:
            w.line(f"n = coerce_nonempty_text(state, {self.x.value(sig.name, sel, 's')}, {literal(where + '.name')})")
            name = "n"
        value = self.x.value(sig.value, sel, "s")
        value_at = literal(_where(sig.value.path) if sig.value.path != sig.path else where)
        unit = _constant_text(sig.unit)
        if sig.total:
            extra = [literal(unit)] if unit is not None else []
            self._call(w, "count_total", ["state", tid, name, value, value_at, str(cumulative)] + extra)
        else:
            self._call(w, "v = counted_value", ["state", tid, name, value, value_at, str(cumulative)])
            w.line("if v is not None:" if text is not None else "if v is not None and n is not None:")
            with w.indent():
                if direct and sig.metadata is None and (sig.unit is None or unit is not None):
                    extra = f", {literal(unit)}" if unit is not None else ""
                    w.line(f"event_signal(state, {tid}, {eid}, {name}, v, {literal(where)}{extra})")
                else:
                    args = ["state", rec, name, "v", literal(where)]
                    if sig.unit is not None:
                        args.append(literal(unit) if unit is not None else self.x.value(sig.unit, sel, "s"))
                    if sig.metadata is not None:
                        args.append(f"metadata={self.x.value(sig.metadata, sel, 's')}")
                    if direct:
                        args.append("numbered=False")
                    self._call(w, "put_signal_with", args)
        w.level = start

    def _owning_event(self, w: Writer, event_id, el: str, tid: str, where: str) -> None:
        """``e``: the event a trajectory's signal or artifact names (`event_id`), or None (the
        runtime's ``owning_event`` checks it)."""
        if event_id == "last":
            w.line(f"e = state.last.get({tid})  # event_id: last")
            return
        w.line(f"e = owning_event(state, {tid}, {self.x.value(event_id, el, 's')}, "
               f"{literal(where + '.event_id')})")

    def _artifact(self, w: Writer, art: ir.ArtifactSpec, *, owner, event, el, tid) -> None:
        where = _where(art.path)
        w.comment(where)
        start = w.level
        el, _ = self._child_loops(w, art.loops, el, [v for _, v in art.fields] + [art.when])
        if art.when is not None:
            w.line(f"if {self._test(art.when, el)}:")
            w.level += 1
        f = dict(art.fields)
        content_key = next(k for k in ("text", "json", "path") if k in f)
        coerce = {"text": "coerce_nonempty_text", "path": "coerce_artifact_path"}.get(content_key)
        src = self.x.value(f[content_key], el, "s")
        w.line(f"body = {coerce}(state, {src}, {literal(where + '.' + content_key)})" if coerce else f"body = {src}")
        w.line(f"mt = coerce_nonempty_text(state, {self.x.value(f['media_type'], el, 's')}, {literal(where + '.media_type')})")
        w.line("if body is not None and mt is not None:")
        with w.indent():
            ev = f', "event_id": {event}' if event else ""
            w.line(f'art = {{"record_type": "artifact", "id": state.child_id({owner}, "artifact"), "trajectory_id": {tid}{ev}}}')
            if art.event_id is not None:  # a trajectory's artifact that names its event
                self._owning_event(w, art.event_id, el, tid, where)
                w.line("if e is not None:")
                with w.indent():
                    w.line('art["event_id"] = e')
            if "name" in f:
                self._put(w, "art", "name", f"coerce_text(state, {self.x.value(f['name'], el, 's')}, {literal(where + '.name')})")
            w.line('art["media_type"] = mt')
            w.line(f"art[{literal(content_key)}] = body")
            if "sha256" in f:
                self._put(w, "art", "sha256", f"coerce_sha256(state, {self.x.value(f['sha256'], el, 's')}, {literal(where + '.sha256')})")
            if "metadata" in f:
                self._put(w, "art", "metadata", self._object(f["metadata"], self.x.value(f["metadata"], el, "s"), literal(where + ".metadata")))
            w.line("emit(art)")
        w.level = start

