"""The level functions: ``map_source`` (and ``map_child_source`` for a subtrajectory's
file), then one ``level_<name>`` per level the spec declares (run, case, group,
trajectory), each building its record and calling the level below."""

from __future__ import annotations

from mapc.codegen.mapping.fields import _ID_PREFIX, _STATUSES, _constant_text, _short, _without_unused_scope
from mapc.codegen.mapping.frame import Frame
from mapc.codegen.pysrc import Writer, docstring_text, literal
from mapc.spec import ir


class Levels:
    """The generator's level writers (a part of :class:`MappingGenerator`)."""

    def _next_level(self, w: Writer, after: str, el: str, scope: str, parent: str, loc: str,
                    carrying: bool = False) -> Frame:
        """Call the level below ``after``: the records of levels the spec leaves out come from
        ``default_record`` in line, then the first declared level (or the events) is called;
        returns the frame that level starts from (what this one proved of ``el``)."""
        names = [lv.name for lv in self.spec.levels] + ["events"]
        left_out = []
        for below in names[names.index(after) + 1 if after else 0:]:
            if below == "events" or self.spec.level(below).declared:
                break
            left_out.append(below)
        if len(left_out) == 1:
            w.comment(f"records.{left_out[0]}: not in the spec, the default")
            w.line(f"rec = default_record(state, {literal(left_out[0])}, {parent}, {loc}, {scope})")
            parent = "rec"
        elif left_out:
            w.comment(f"records.{', '.join(left_out)}: not in the spec, the defaults")
            kinds = literal(tuple(left_out))
            args = f", {parent}, {loc}" if parent != "None" or loc != '""' else ""
            w.line(f"rec = default_records(state, {scope}, {kinds}{args})")
            parent = "rec"
        w.line(f"level_{below}(state, emit, {el}, {scope}, {parent}, {loc}, srcloc)")
        return Frame(known_object=el in self.x.known_dicts, carrying=carrying)

    def _map_source(self) -> Frame:
        """``map_source``; returns the frame the first level starts from."""
        w = Writer()
        w.line("def map_source(source, state, emit):")
        with w.indent():
            w.line('"""Map one source trace to canonical records, passing each to ``emit``."""')
            if not self.spec.source.siblings:
                w.line("scope, srcloc = state.begin(source, emit, TABLES)")
            else:  # (a sibling file is read with state.src set)
                w.line("state.src, state.emit = source, emit")
                siblings = ", ".join(
                    f"{literal(name)}: source.sibling(state, {literal(cands)})" for name, cands in self.spec.source.siblings
                )
                w.line(f'scope = {{"source": source.info, "tables": TABLES, "siblings": {{{siblings}}}, "root": None}}')
                w.line('srcloc = {"path": source.rel}')
            doc = self._document(w, "source")
            below = self._next_level(w, "", doc, "scope", "None", '""')
            if any(sig.total for rule in self.spec.events.rules for t in rule.emits for sig in t.signals):
                w.comment("signals with `total: true`: one per trajectory, after every event")
                w.line("emit_totals(state)")
            self.x.known_dicts.clear()
        self.functions += [self.x.take(), w.text()]
        return below

    def _document(self, w: Writer, src: str) -> str:
        """Read the document of the source ``src`` (json; a jsonl or csv source is read line by
        line at its line level): the variable that holds it, ``None`` for lines."""
        if self.jsonl:  # lines are read one at a time at the level with `each: "@"`
            return "None"
        if self.stream is None:
            w.line(f"doc = {src}.document(state)")
        else:
            p = self.stream
            w.comment(f"{p.where} (each {p.text}): the array is read one element at a time, "
                      "after the rest of the document")
            w.line(f"doc = {src}.streamed_document(state, {literal(p.key)}, {literal(p.needed)})")
        w.line(f"require_fields(doc, REQUIRED, FORMAT, {self._required_at()})  # source.probe.require")
        w.line('scope["root"] = doc')
        if any(self.spec.source.probe.require):
            self.x.known_dicts.add("doc")  # the required fields are there: an object
        return "doc"

    def _map_child_source(self) -> None:
        """``map_child_source``: a subtrajectory's file (``state.src`` while the runtime's
        ``map_subtrajectory`` maps it), read as ``map_source`` reads the source, mapped from the
        trajectory level down (the spec has one trajectory per source: no level above loops)."""
        w = Writer()
        w.line("def map_child_source(state, emit, scope, parent, location):")
        with w.indent():
            wheres = ", ".join(ir.Expr("", s.at, None).where for s in self.spec.subtrajectories)
            w.docstring(f"A subtrajectory's file ({docstring_text(wheres)}): mapped as the source is, "
                        "from records.trajectory down, as a child of the trajectory that named it.")
            w.line('srcloc = {"path": state.src.rel}')
            doc = self._document(w, "state.src")
            self._next_level(w, "group", doc, "scope", "parent", "location")
            self.x.known_dicts.clear()
        self.functions += [self.x.take(), w.text()]

    def _level(self, lv: ir.Level, above: Frame) -> Frame:
        """``level_<name>``, from the frame the level above handed down; returns the frame of
        the level below."""
        w = Writer()
        name = lv.name
        w.line(f"def level_{name}(state, emit, element, scope, parent, location, srcloc):")
        w.level += 1
        self.x.known_dicts.clear()
        self.x.aliases.clear()
        if above.known_object:
            self.x.known_dicts.add("element")  # the level above proved it an object
        what = f"{name} per element of `{_short(lv.scope.loops[0].each.text)}`" if lv.scope.loops else f"one {name}"
        w.docstring(f"records.{name}{self._spec_line(lv.path)}: {docstring_text(what)}.")
        w.line("s = dict(scope)")
        frame = self._open_loops(w, lv.scope, name, above)
        el, loc = frame.el, frame.loc
        self._alias(w, name, el)
        self._scope_body(w, lv.scope, name, el, looped=frame.looped)
        where = f"records.{name}"
        if lv.id is not None:
            native = f"coerce_id(state, {self.x.value(lv.id, el, 's')}, {literal(where + '.id')})"
        else:
            native = None
        # the id: the spec's, else the runtime's default (level_record), except a case's or a
        # group's inside a loop, named after its element (`case@3`) as a trajectory's is
        if lv.scope.loops and name in ("case", "group"):
            default = f'"{_ID_PREFIX[name]}@" + {loc}'  # inside a loop: never empty
            native = f"{native} or {default}" if native else default
        parent_arg = "None" if name == "run" else "parent"
        w.line(f"rec = level_record(state, {literal(name)}, {parent_arg}, {loc}"
               + (f", {native})" if native else ")"))
        if name in self.used_vars:
            w.line(f"s[{literal(name)}] = rec")
        fields = dict(lv.fields)
        order = {
            "run": ("name", "started_at", "metadata"),
            "case": ("name", "input", "metadata"),
            "group": ("name", "metadata"),
            "trajectory": ("parent", "branch_id", "status", "termination", "metadata"),
        }[name]
        for key in order:
            if key not in fields:
                continue
            src = self.x.value(fields[key], el, "s")
            fwhere = literal(f"{where}.{key}")
            text = _constant_text(fields[key])
            if key in ("name", "termination") and text is not None or key == "status" and text in _STATUSES:
                w.line(f"rec[{literal(key)}] = {literal(text)}  # a constant: nothing to check")
            elif key == "started_at":
                self._put(w, "rec", "started_at", self._time(fields[key], src, fwhere))
            elif key == "name" or key == "termination":
                self._put(w, "rec", key, f"coerce_text(state, {src}, {fwhere})")
            elif key == "metadata":
                self._put(w, "rec", key, self._object(fields[key], src, fwhere))
            elif key == "status":
                self._put(w, "rec", key, f"coerce_status(state, {src}, {fwhere})")
            elif key == "branch_id":
                self._put(w, "rec", key, f"coerce_id(state, {src}, {fwhere})")
            elif key == "parent":
                w.line(f"v = coerce_id(state, {src}, {fwhere})")
                w.line('if v is not None and state.is_level(v, "trajectory", parent["id"]) and v != rec["id"]:')
                with w.indent():
                    w.line('rec["parent_id"] = v')
                w.line("elif v is not None:")
                with w.indent():
                    w.line(f'state.warn({fwhere}, f"{{v!r}} is not an earlier trajectory of this group; dropped")')
            else:  # input: any JSON
                self._put(w, "rec", key, src)
        parent_id = 'parent["id"]' if name != "run" else "None"
        w.line(f'if state.level("{name}", rec, {parent_id}):')
        with w.indent():
            w.line("emit(rec)")
        if name == "trajectory":
            if lv.final_output is not None and not self.semantics:
                line = self._spec_line(lv.path + ("final_output",))
                w.comment(f"records.trajectory.final_output{line}: no code: only semantic views read it")
            elif lv.final_output is not None:
                w.line("if state.sem is not None:")
                with w.indent():
                    w.line(f'state.final_outputs[rec["id"]] = {self.x.value(lv.final_output, el, "s")}')
            below = Frame(known_object=el in self.x.known_dicts, carrying=frame.carrying)
            w.line(f"level_events(state, emit, {el}, s, rec, {loc}, srcloc)")
            self._children(w, lv.signals, lv.artifacts, frame, rec="rec", event=False,
                           where=f"records.{name}.signals")
        else:
            below = self._next_level(w, name, el, "s", "rec", loc, frame.carrying)
        self.functions += [self.x.take(), _without_unused_scope(w.text())]
        return below

