"""Lower the records part of the IR to plain Python mapping functions.

The output reads like the spec: one function per level (run, case, group,
trajectory, events), loops where the spec says ``each``, an if/elif chain for
the event rules, and a comment naming the spec path (and line) above each
piece. Records are handed to an ``emit`` callable as soon as they are built,
so a JSONL source streams with flat memory.

Ids that the spec does not give natively are derived from the source
location (``evt@L12.3`` = line 12, element 3): stable, unique by
construction, and cheap.
"""

from __future__ import annotations

from pathlib import Path

import dataclasses
import json
import keyword
import re

from mapc.codegen.expressions import ExprTable, prefixes, template_key
from mapc.codegen.pysrc import Writer, docstring_text, identifier, literal
from mapc.expressions import compile_expression
from mapc.spec import ir
from mapc.spec.semantic import iter_exprs
from mapc.analysis.streaming import stream_plan

_ID_PREFIX = {"run": "run", "case": "case", "group": "group", "trajectory": "traj", "events": "evt"}
_NEXT = {"run": "case", "case": "group", "group": "trajectory", "trajectory": "events"}
_STATUSES = ("running", "completed", "failed", "cancelled")  # coerce_status's (mapping_rt.STATUSES)
#: generated code that may raise (an expression function, a JMESPath ordering comparison)
_RAISES = re.compile(r"\b(x_\w+|_jp_[lg][te])\(")

# Where semantic fields land in a canonical event when the rule gives no explicit layout.
_MESSAGE_LAYOUT = (
    ("role", "role"),
    ("content", "content"),
    ("reasoning", "reasoning"),
    ("model", "model"),
    ("tool_calls", "tool_calls"),
    ("tool_call_id", "tool_call_id"),
    ("name", "tool_name"),
)


def _without_unused_scope(function: str) -> str:
    """A level function without its ``s = dict(scope)`` when nothing reads ``s``."""
    import ast

    tree = ast.parse(function)
    if any(isinstance(n, ast.Name) and n.id == "s" and isinstance(n.ctx, ast.Load) for n in ast.walk(tree)):
        return function
    return function.replace("\n    s = dict(scope)\n", "\n", 1)


def _path_of_signal(signals: str, name: str) -> tuple:
    """The spec path of signal ``name`` in the signals mapping at ``signals`` (a spec path)."""
    from mapc.codegen.places import _path_of

    return _path_of(signals) + (name,)


def _where(path: tuple) -> str:
    return ir.Expr("", path, None).where


def json_path_step(each: ir.Expr, where: str) -> str:
    """The JSON path step an `each` takes from its parent element: `.steps`, `` for `@`, or
    `.(records.events.each)` (the elements that spec node computes) when it is not a field path."""
    from mapc.expressions.paths import plain_path

    if each.text.strip() == "@":
        return ""
    names = plain_path(each.compiled.ast)
    return "." + ".".join(names) if names else f".({where})"


def _short(text: str, limit: int = 32) -> str:
    """An expression cut short for a docstring line (the full text is in the comments)."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _constant(v) -> tuple[bool, object]:
    """``(True, value)`` when a value template is known at build time (a literal)."""
    if isinstance(v, ir.Literal):
        return True, v.value
    if isinstance(v, ir.Expr) and v.compiled.constant[0]:
        return True, v.compiled.constant[1]
    return False, None


def _constant_text(v) -> str | None:
    """The text of a constant nonempty string (it needs no coercion at run time), else None."""
    known, value = _constant(v)
    return value if known and isinstance(value, str) and value else None


class MappingGenerator:
    """Generates ``map_source`` and the level functions for one spec."""

    def __init__(self, spec: ir.Spec, exprs: ExprTable, semantics: bool = True):
        self.spec = spec
        self.x = exprs
        #: write what only a semantic view reads (each event's view, a trajectory's
        #: final_output): hosts that build conversations from events (RELAI, cap-evolve)
        self.semantics = semantics
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
        #: levels whose `cur` the level above proved to be an object (its required-field test)
        self._dict_cur: set[str] = set()
        self._carry_outer = False  # a loop above (or outside) the one being written carries values
        self._matched: tuple | None = None  # the field the current rule's condition tested
        self._event_tid = "tid"  # level_events' trajectory id: a variable, or `traj["id"]`
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

    # -- entry ----------------------------------------------------------------
    def generate(self) -> str:
        """``map_source`` and the level functions in spec order, each after the compiled
        expressions it is the first to use."""
        self._map_source()
        for lv in self.spec.levels:
            if lv.declared:
                self._level(lv)
        self._events()
        if self.spec.subtrajectories:
            self._map_child_source()
        return "\n\n\n".join(f.strip("\n") for f in self.functions if f.strip()) + "\n"

    def _spec_line(self, path: tuple) -> str:
        """`` (line N)`` for a spec path, when the spec says where it is."""
        mark = self.spec.locate(tuple(path), key=True) if self.spec.locate else None
        return f" (line {mark.line})" if mark is not None and mark.line else ""

    def _next_level(self, w: Writer, after: str, el: str, scope: str, parent: str, loc: str) -> None:
        """Call the level below ``after``: the records of levels the spec leaves out come from
        ``default_record`` in line, then the first declared level (or the events) is called."""
        names = [lv.name for lv in self.spec.levels] + ["events"]
        left_out = []
        for below in names[names.index(after) + 1 if after else 0:]:
            if below == "events" or self.spec.level(below).declared:
                break
            left_out.append(below)
        if len(left_out) == 1:
            w.comment(f"records.{left_out[0]}: not in the spec, the default")
            w.line(f"rec = default_record(st, {literal(left_out[0])}, {parent}, {loc}, {scope})")
            parent = "rec"
        elif left_out:
            w.comment(f"records.{', '.join(left_out)}: not in the spec, the defaults")
            kinds = literal(tuple(left_out))
            args = f", {parent}, {loc}" if parent != "None" or loc != '""' else ""
            w.line(f"rec = default_records(st, {scope}, {kinds}{args})")
            parent = "rec"
        if el in self.x.known_dicts:
            self._dict_cur.add(below)
        w.line(f"level_{below}(st, emit, {el}, {scope}, {parent}, {loc}, srcloc)")

    def _map_source(self) -> None:
        w = Writer()
        w.line("def map_source(src, st, emit):")
        with w.indent():
            w.line('"""Map one source trace to canonical records, passing each to ``emit``."""')
            if not self.spec.source.siblings:
                w.line("scope, srcloc = st.begin(src, emit, TABLES)")
            else:  # (a sibling file is read with st.src set)
                w.line("st.src, st.emit = src, emit")
                siblings = ", ".join(
                    f"{literal(name)}: src.sibling(st, {literal(cands)})" for name, cands in self.spec.source.siblings
                )
                w.line(f'scope = {{"source": src.info, "tables": TABLES, "siblings": {{{siblings}}}, "root": None}}')
                w.line('srcloc = {"path": src.rel}')
            doc = self._document(w, "src")
            self._next_level(w, "", doc, "scope", "None", '""')
            if any(sig.total for rule in self.spec.events.rules for t in rule.emits for sig in t.signals):
                w.comment("signals with `total: true`: one per trajectory, after every event")
                w.line("emit_totals(st)")
            self.x.known_dicts.clear()
        self.functions += [self.x.take(), w.text()]

    def _document(self, w: Writer, src: str) -> str:
        """Read the document of the source ``src`` (json; a jsonl or csv source is read line by
        line at its line level): the variable that holds it, ``None`` for lines."""
        if self.jsonl:  # lines are read one at a time at the level with `each: "@"`
            return "None"
        if self.stream is None:
            w.line(f"doc = {src}.document(st)")
        else:
            p = self.stream
            w.comment(f"{p.where} (each {p.text}): the array is read one element at a time, "
                      "after the rest of the document")
            w.line(f"doc = {src}.streamed_document(st, {literal(p.key)}, {literal(p.needed)})")
        w.line(f"require_fields(doc, REQUIRED, FORMAT, {self._required_at()})  # source.probe.require")
        w.line('scope["root"] = doc')
        if any(self.spec.source.probe.require):
            self.x.known_dicts.add("doc")  # the required fields are there: an object
        return "doc"

    def _map_child_source(self) -> None:
        """``map_child_source``: a subtrajectory's file (``st.src`` while the runtime's
        ``map_subtrajectory`` maps it), read as ``map_source`` reads the source, mapped from the
        trajectory level down (the spec has one trajectory per source: no level above loops)."""
        w = Writer()
        w.line("def map_child_source(st, emit, scope, parent, loc):")
        with w.indent():
            wheres = ", ".join(ir.Expr("", s.at, None).where for s in self.spec.subtrajectories)
            w.docstring(f"A subtrajectory's file ({docstring_text(wheres)}): mapped as the source is, "
                        "from records.trajectory down, as a child of the trajectory that named it.")
            w.line('srcloc = {"path": st.src.rel}')
            doc = self._document(w, "st.src")
            self._next_level(w, "group", doc, "scope", "parent", "loc")
            self.x.known_dicts.clear()
        self.functions += [self.x.take(), w.text()]

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

    # -- loops ------------------------------------------------------------------
    def _open_loops(self, w: Writer, scope: ir.Scope, name: str, cur: str) -> tuple[str, str, int]:
        """Write the loop headers of a level; returns (element var, loc var, depth)."""
        el, loc = cur, "loc"
        depth = 0
        loops = list(scope.loops)
        if self.jsonl and self.spec.line_level == name and loops:
            lines, loops = loops[0], loops[1:]
            # `as` on the line loop names the line, and `<as>_index` its number among the lines
            as_index = bool(lines.as_name) and f"{lines.as_name}_index" in self.used_vars
            uses_index = "index" in self.used_vars or as_index
            if uses_index:
                w.line("line_index = -1")
            level = "records." + ("events" if name == "events" else name) + ".each"
            if self.spec.source.container == "csv":
                w.comment(f"each row of the csv source, an object keyed by the header ({level})")
                rows = "csv_rows(st.src, st, CSV_COLUMNS, CSV_DELIMITER, INVALID_LINES)"
            else:
                w.comment(f"each line of the jsonl source ({level})")
                rows = "st.src.lines(st, INVALID_LINES)"
            rows = self._stream_loop(w, lines, rows, 0, line_loop=True)
            w.line(f"for line, el0, srcloc in {rows}:")
            w.level += 1
            if uses_index:
                w.line("line_index += 1")
            required = self.spec.source.probe.require
            if required and all(required):
                # the REQUIRED test written out: no call per line
                tests = ["not isinstance(el0, dict)"] + [
                    f"el0.get({literal(p[0])}) is None" if len(p) == 1 else f"not has_path(el0, {literal(tuple(p))})"
                    for p in required
                ]
                test = f"if {' or '.join(tests)}:"
                if 4 * w.level + len(test) + 24 > 99:
                    w.comment("source.probe.require")
                    w.line(test)
                else:
                    w.line(test + "  # source.probe.require")
                with w.indent():
                    w.line(f"require_fields(el0, REQUIRED, FORMAT, {self._required_at()}, line)")
                self.x.known_dicts.add("el0")  # below this test every line is an object
            elif required:
                w.line(f"require_fields(el0, REQUIRED, FORMAT, {self._required_at()}, line)")
            if "index" in self.used_vars:
                w.line('s["index"] = line_index')
            if lines.as_name:
                w.line(f"s[{literal(lines.as_name)}] = el0")
            if as_index:
                w.line(f"s[{literal(lines.as_name + '_index')}] = line_index")
            if "root" in self.used_vars:
                w.line('s["root"] = el0')
            if self.uses_source_var:
                w.line('s["source"] = {**st.src.info, **srcloc}')
            self._stream_element(w, lines, "el0", 0)
            if self.spec.subtrajectories:  # a subtrajectory's lines: `sub1/L3` (map_subtrajectory)
                w.line('loc0 = f"{loc}/L{line}" if loc else f"L{line}"')
            else:
                w.line('loc0 = f"L{line}"')
            el, loc = "el0", "loc0"
            depth = 1
        for k, lp in enumerate(loops):
            i, e, newloc = f"i{depth}", f"el{depth}", f"loc{depth}"
            where = _where(lp.path)
            self.loops.setdefault(f"level_{name}", []).append((i, json_path_step(lp.each, where)))
            w.comment(f"{where} (line {lp.each.line}): each {lp.each.text}")
            elements = f"iterate(st, {self.x.call(lp.each, el, 's')}, {literal(where)})"
            if self.stream is not None and self.stream.level == name and k == 0:
                w.comment("one element at a time from the file (map_source); a small document: parsed whole")
                streamed = f"streamed_elements({el}, {literal(self.stream.key)}, {self.stream.mode})"
                w.line(f"elements = {streamed} or {elements}")
                elements = "elements"
            elif (4 * w.level + len(f"for {i}, {e} in enumerate({elements}):") > 99
                  and 4 * w.level + len(f"elements = {elements}") <= 99):
                w.line(f"elements = {elements}")  # the loop on one line
                elements = "elements"
            if lp.merge is not None or lp.carry:
                w.line(f"for {i}, {e} in {self._stream_loop(w, lp, elements, depth)}:")
            else:
                w.line(f"for {i}, {e} in enumerate({elements}):")
            w.level += 1
            if "index" in self.used_vars:
                w.line(f's["index"] = {i}')
            if lp.as_name:
                w.line(f"s[{literal(lp.as_name)}] = {e}")
                w.line(f"s[{literal(lp.as_name + '_index')}] = {i}")
            self._stream_element(w, lp, e, depth)
            w.line(f'{newloc} = f"{{{loc}}}.{{{i}}}" if {loc} else str({i})')
            el, loc = e, newloc
            depth += 1
        return el, loc, depth

    # -- event streams: merge, carry (issue 27) ----------------------------------------------
    def _stream_loop(self, w: Writer, lp: ir.Loop, items: str, depth: int, line_loop: bool = False) -> str:
        """Before a loop with `merge` or `carry`: the merging of its elements and the carried
        values' start; returns what the loop iterates (``items`` as it is, or merged)."""
        if lp.merge is not None:
            m = lp.merge
            where = _where(m.path)
            key_of = self._merge_key(m, line_loop)
            how = ", ".join(f"{'.'.join(json.dumps(k) if not k.isidentifier() else k for k in keys)} {strategy}"
                            for keys, strategy in m.fields)
            what = (f"elements that share `{_short(m.by.text, 40)}`" if m.by is not None
                    else f"each run of consecutive elements where `{_short(m.when.text, 40)}`")
            w.comment(f"{where} (line {(m.by or m.when).line}): {what} are one element"
                      + (f"; {_short(how, 60)}" if how else ""))
            self._call(w, f"merged{depth} = MergedElements", [
                "st", key_of, "s", literal(where), literal(m.fields)] + ([str(m.open)] if m.open != 1 else [])
                + (["runs=True"] if m.by is None else []))
            if line_loop:
                w.line(f"rows = {items}")
                items = f"merged{depth}.lines(rows)"
            else:
                items = f"merged{depth}.elements({items})"
        elif not line_loop:
            items = f"enumerate({items})"
        if lp.carry:
            where = _where(lp.carry[0].path[:-1])
            names = ", ".join(f"{literal(c.name)}: None" for c in lp.carry)
            outer = '**s["carry"], ' if self._carry_outer else ""
            w.comment(f"{where}: $carry starts empty for each element above this loop")
            w.line(f"carry{depth} = {{{outer}{names}}}")
            self._carry_outer = True
        return items

    def _merge_key(self, m: ir.Merge, line_loop: bool) -> str:
        """The function giving an element's merge key (None: it stands alone), written above the
        level function; on a line loop it checks `source.probe.require` of every line first."""
        name = "key_of_" + identifier(*m.path[:-1])
        w = Writer()
        when = f", when {m.when.text}" if m.when is not None else ""
        until = f", until {_short(m.until.text, 60)}" if m.until is not None else ""
        by = f"by {m.by.text}" if m.by is not None else "runs"
        w.comment(f"{_where(m.path)} (line {(m.by or m.when).line}): {by}{when}{until}")
        w.line(f"def {name}(el, s, at):")
        known, aliases = set(self.x.known_dicts), dict(self.x.aliases)
        self.x.known_dicts.clear()
        self.x.aliases.clear()
        with w.indent():
            if m.by is not None:
                w.line('"""The `merge` key of element ``el`` (line or index ``at``); None: it stands alone."""')
            else:
                w.line('"""True: ``el`` (line or index ``at``) joins the run; False: it ends the run."""')
            required = self.spec.source.probe.require
            if line_loop and required:
                w.line(f"require_fields(el, REQUIRED, FORMAT, {self._required_at()}, at)  # source.probe.require")
                self.x.known_dicts.add("el")
            if m.by is None:  # runs: True joins the run; False ends it (the element stands alone)
                self._merge_run(w, m)
            else:
                if m.when is not None:
                    test = self._test(m.when, "el")
                    w.line(f"if not {test}:" if test.startswith("truthy(") else f"if not ({test}):")
                    with w.indent():
                        w.line("return None")
                w.line(f"return {self.x.call(m.by, 'el', 's')}")
        self.x.known_dicts, self.x.aliases = known, aliases
        self.functions += [self.x.take(), w.text()]
        return name

    def _merge_run(self, w: Writer, m: ir.Merge) -> None:
        """The body of a run's key function: `when` joins, then `until` (or anything else) ends."""
        test = self._test(m.when, "el")
        w.line(f"if {test}:")
        with w.indent():
            w.line("return True")
        if m.until is None:
            w.line("return False")
            return
        w.line(f"if {self._test(m.until, 'el')}:")
        with w.indent():
            w.line("return False")
        w.line("return None  # it waits behind the run")

    def _stream_element(self, w: Writer, lp: ir.Loop, el: str, depth: int) -> None:
        """In a loop with `merge` or `carry`, for each element: ``$merged``, then the carried
        values (before `where`, `let` and the rules: the element sees its own)."""
        if lp.merge is not None and "merged" in self.used_vars:
            w.line(f's["merged"] = merged{depth}.info()')
        if not lp.carry:
            return
        w.comment(f"{_where(lp.carry[0].path[:-1])}: each name's latest non-null value, this element's included")
        values = []
        for c in lp.carry:
            value = self.x.value(c.value, el, "s")
            if c.when is not None:
                value = f"{value} if {self._test(c.when, el)} else None"
            values.append((c.name, value))
        if all(not keyword.iskeyword(name) for name, _ in values):
            args = [f"{name}={value}" for name, value in values]
        else:  # a name Python reserves (`class`): the values as a mapping
            args = ["**{" + ", ".join(f"{literal(name)}: {value}" for name, value in values) + "}"]
        self._call(w, f's["carry"] = carry{depth} = carried', [f"carry{depth}"] + args)

    def _alias(self, w: Writer, name: str, el: str) -> None:
        """``obj = el if isinstance(el, dict) else {}`` once, when the level reads two or more
        fields of its element: each read is then ``obj.get(...)``, one test instead of many."""
        if el in self.x.known_dicts:
            return
        reads = self._field_reads(self._exprs({name}), el)
        if name == "events" and self._tested_field(self.spec.events.rules) is not None:
            reads += 1
        if reads >= 2:
            alias = "obj" + el[2:] if el.startswith("el") else "obj"
            w.line(f"{alias} = {el} if isinstance({el}, dict) else {{}}")
            self.x.aliases[el] = alias

    def _scope_body(self, w: Writer, scope: ir.Scope, name: str, el: str, looped: bool) -> None:
        if scope.where is not None:
            w.comment(f"{_where(scope.where.path)}: {scope.where.text}")
            test = self._test(scope.where, el)
            w.line(f"if not {test}:" if test.startswith("truthy(") else f"if not ({test}):")
            with w.indent():
                w.line("continue" if looped else "return")
        for let_name, val in scope.lets:
            w.line(f"s[{literal(let_name)}] = {self.x.value(val, el, 's')}")
        if scope.ordinal_by is not None:
            w.line(f's["ordinal"] = st.ordinal({literal(name)}, {self.x.call(scope.ordinal_by, el, "s")})')

    # -- levels -------------------------------------------------------------------
    def _level(self, lv: ir.Level) -> None:
        w = Writer()
        name = lv.name
        w.line(f"def level_{name}(st, emit, cur, scope, parent, loc, srcloc):")
        w.level += 1
        self.x.known_dicts.clear()
        self.x.aliases.clear()
        if name in self._dict_cur:
            self.x.known_dicts.add("cur")  # the level above proved it an object
        what = f"{name} per element of `{_short(lv.scope.loops[0].each.text)}`" if lv.scope.loops else f"one {name}"
        w.docstring(f"records.{name}{self._spec_line(lv.path)}: {docstring_text(what)}.")
        w.line("s = dict(scope)")
        el, loc, depth = self._open_loops(w, lv.scope, name, "cur")
        self._alias(w, name, el)
        self._scope_body(w, lv.scope, name, el, looped=depth > 0)
        where = f"records.{name}"
        if lv.id is not None:
            native = f"coerce_id(st, {self.x.value(lv.id, el, 's')}, {literal(where + '.id')})"
        else:
            native = None
        # the id: the spec's, else the runtime's default (level_record), except a case's or a
        # group's inside a loop, named after its element (`case@3`) as a trajectory's is
        if lv.scope.loops and name in ("case", "group"):
            default = f'"{_ID_PREFIX[name]}@" + {loc}'  # inside a loop: never empty
            native = f"{native} or {default}" if native else default
        parent_arg = "None" if name == "run" else "parent"
        w.line(f"rec = level_record(st, {literal(name)}, {parent_arg}, {loc}"
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
                self._put(w, "rec", key, f"coerce_text(st, {src}, {fwhere})")
            elif key == "metadata":
                self._put(w, "rec", key, self._object(fields[key], src, fwhere))
            elif key == "status":
                self._put(w, "rec", key, f"coerce_status(st, {src}, {fwhere})")
            elif key == "branch_id":
                self._put(w, "rec", key, f"coerce_id(st, {src}, {fwhere})")
            elif key == "parent":
                w.line(f"v = coerce_id(st, {src}, {fwhere})")
                w.line('if v is not None and st.is_level(v, "trajectory", parent["id"]) and v != rec["id"]:')
                with w.indent():
                    w.line('rec["parent_id"] = v')
                w.line("elif v is not None:")
                with w.indent():
                    w.line(f'st.warn({fwhere}, f"{{v!r}} is not an earlier trajectory of this group; dropped")')
            else:  # input: any JSON
                self._put(w, "rec", key, src)
        parent_id = 'parent["id"]' if name != "run" else "None"
        w.line(f'if st.level("{name}", rec, {parent_id}):')
        with w.indent():
            w.line("emit(rec)")
        if name == "trajectory":
            if lv.final_output is not None and self.semantics:
                w.line("if st.sem is not None:")
                with w.indent():
                    w.line(f'st.final_outputs[rec["id"]] = {self.x.value(lv.final_output, el, "s")}')
            if el in self.x.known_dicts:
                self._dict_cur.add("events")
            w.line(f"level_events(st, emit, {el}, s, rec, {loc}, srcloc)")
            self._children(w, lv.signals, lv.artifacts, rec="rec", event=False, el=el,
                           where=f"records.{name}.signals")
        else:
            self._next_level(w, name, el, "s", "rec", loc)
        self.functions += [self.x.take(), _without_unused_scope(w.text())]

    @staticmethod
    def _object(v: ir.Value, src: str, where: str) -> str:
        """An object field: ``coerce_object``, unless an object template made it (always one)."""
        return src if isinstance(v, ir.ObjectTemplate) else f"coerce_object(st, {src}, {where})"

    @staticmethod
    def _time(v: ir.Value, src: str, where: str) -> str:
        """A date-time field: ``coerce_time``, unless ``iso8601()`` made it (always RFC 3339 or null)."""
        if isinstance(v, ir.Expr) and v.compiled.outer_function == "iso8601":
            return src
        return f"coerce_time(st, {src}, {where})"

    @staticmethod
    def _put(w: Writer, rec: str, key: str, src: str) -> None:
        """An optional field: set unless its value is null (the runtime's ``put``); an object
        template's value (``compact(...)``) is never null."""
        if src.startswith("compact(") and src.endswith(")"):
            w.line(f"{rec}[{literal(key)}] = {src}")
        else:
            w.line(f"put({rec}, {literal(key)}, {src})")

    # -- signals & artifacts --------------------------------------------------------
    def _children(self, w: Writer, signals, artifacts, *, rec: str, event: bool, el: str, where: str,
                  eid: str = "") -> None:
        """The signals and artifacts of a trajectory or event record (the variable ``rec``; an
        event's id is in the variable ``eid``)."""
        # An event's signals with distinct literal names get ``<event id>:<name>`` directly
        # (_direct_signals). Anything dynamic (or a trajectory, which may repeat) goes through
        # st.child_id().
        direct = event and self._direct_signals(signals, artifacts)
        owner = f'{rec}["id"]'
        tid = self._event_tid if event else owner
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
            w.line(f"{helper}(st, {rec}, sig_name, v, {literal(where)}, unit)")

    def _signal_call(self, w: Writer, sig: ir.SignalSpec, *, rec: str, el: str, direct: bool) -> None:
        """A signal of the usual shape: one call of the runtime's ``put_signal`` (``event_signal``
        for an event's signals with distinct literal names)."""
        where = _where(sig.path)
        text = _constant_text(sig.name)
        if text is not None:
            name = literal(text)
        else:
            name = f"coerce_nonempty_text(st, {self.x.value(sig.name, el, 's')}, {literal(where + '.name')})"
        unit = _constant_text(sig.unit)
        extra = f", {literal(unit)}" if unit is not None else ""
        helper = "event_signal" if direct else "put_signal"
        value = self.x.value(sig.value, el, "s")
        if text is not None and sig.path[-1] == text:
            where = _where(sig.path[:-1])  # the signals mapping: the runtime adds the name
        head, tail = f"{helper}(st, {rec}, {name}, ", f", {literal(where)}{extra})"
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
            trial.line(f"n = coerce_nonempty_text(st, {name}, {literal(where + '.name')})")
            name = "n"
        elif text is None:
            places.append(where + ".name")
        args = ["st", rec, name, value, literal(where)]
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
            w.line(f"for {e} in iterate(st, {self.x.call(lp.each, el, 's')}, {literal(_where(lp.path))}):")
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
            w.line(f"n = coerce_nonempty_text(st, {self.x.value(sig.name, el, 's')}, {literal(where + '.name')})")
            name = "n"
        w.line(f"v = coerce_scalar(st, {self.x.value(sig.value, el, 's')}, {literal(where + '.value')})")
        cond = "v is not None" + (" and n is not None" if name == "n" else "")
        w.line(f"if {cond}:")
        with w.indent():
            ev = f', "event_id": {event}' if event else ""
            sid = f"{owner} + {literal(':' + sig.name.value)}" if direct else f"st.child_id({owner}, {name})"
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
                self._put(w, "sig", "unit", f"coerce_nonempty_text(st, {self.x.value(sig.unit, el, 's')}, {literal(where + '.unit')})")
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
            w.line(f"n = coerce_nonempty_text(st, {self.x.value(sig.name, sel, 's')}, {literal(where + '.name')})")
            name = "n"
        value = self.x.value(sig.value, sel, "s")
        value_at = literal(_where(sig.value.path) if sig.value.path != sig.path else where)
        unit = _constant_text(sig.unit)
        if sig.total:
            extra = [literal(unit)] if unit is not None else []
            self._call(w, "count_total", ["st", tid, name, value, value_at, str(cumulative)] + extra)
        else:
            self._call(w, "v = counted_value", ["st", tid, name, value, value_at, str(cumulative)])
            w.line("if v is not None:" if text is not None else "if v is not None and n is not None:")
            with w.indent():
                if direct and sig.metadata is None and (sig.unit is None or unit is not None):
                    extra = f", {literal(unit)}" if unit is not None else ""
                    w.line(f"event_signal(st, {tid}, {eid}, {name}, v, {literal(where)}{extra})")
                else:
                    args = ["st", rec, name, "v", literal(where)]
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
            w.line(f"e = st.last.get({tid})  # event_id: last")
            return
        w.line(f"e = owning_event(st, {tid}, {self.x.value(event_id, el, 's')}, "
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
        w.line(f"body = {coerce}(st, {src}, {literal(where + '.' + content_key)})" if coerce else f"body = {src}")
        w.line(f"mt = coerce_nonempty_text(st, {self.x.value(f['media_type'], el, 's')}, {literal(where + '.media_type')})")
        w.line("if body is not None and mt is not None:")
        with w.indent():
            ev = f', "event_id": {event}' if event else ""
            w.line(f'art = {{"record_type": "artifact", "id": st.child_id({owner}, "artifact"), "trajectory_id": {tid}{ev}}}')
            if art.event_id is not None:  # a trajectory's artifact that names its event
                self._owning_event(w, art.event_id, el, tid, where)
                w.line("if e is not None:")
                with w.indent():
                    w.line('art["event_id"] = e')
            if "name" in f:
                self._put(w, "art", "name", f"coerce_text(st, {self.x.value(f['name'], el, 's')}, {literal(where + '.name')})")
            w.line('art["media_type"] = mt')
            w.line(f"art[{literal(content_key)}] = body")
            if "sha256" in f:
                self._put(w, "art", "sha256", f"coerce_sha256(st, {self.x.value(f['sha256'], el, 's')}, {literal(where + '.sha256')})")
            if "metadata" in f:
                self._put(w, "art", "metadata", self._object(f["metadata"], self.x.value(f["metadata"], el, "s"), literal(where + ".metadata")))
            w.line("emit(art)")
        w.level = start

    # -- events -------------------------------------------------------------------
    def _events(self) -> None:
        ev = self.spec.events
        w = Writer()
        w.line("def level_events(st, emit, cur, scope, traj, loc, srcloc):")
        w.level += 1
        self.x.known_dicts.clear()
        self.x.aliases.clear()
        if "events" in self._dict_cur:
            self.x.known_dicts.add("cur")  # the level above proved it an object
        what = f"one event per element of `{_short(ev.scope.loops[0].each.text)}`" if ev.scope.loops else "one event"
        w.docstring(f"records.events: {docstring_text(what)}, mapped by the first matching rule.")
        templates = [t for rule in ev.rules for t in rule.emits]
        tid = 'traj["id"]'
        if not all(self._fusable(t) for t in templates):
            w.line('tid = traj["id"]')
            tid = "tid"
        self._event_tid = tid
        options = "".join((", remember=True" if self.remembers_events else "",
                           ", previous=True" if ev.parent == "previous" else
                           ", last=True" if self.tracks_last else ""))
        w.comment("this trajectory's events: the sequence number and last event so far")
        w.line(f"events = TrajectoryEvents(st, {tid}, srcloc{options})")
        w.line("s = dict(scope)")
        body_level = w.level
        el, loc, depth = self._open_loops(w, ev.scope, "events", "cur")
        if self.jsonl and self.spec.line_level == "events" and ev.scope.loops:
            w.line("events.srcloc = srcloc")
        self._alias(w, "events", el)
        self._scope_body(w, ev.scope, "events", el, looped=depth > 0)
        tested = self._tested_field(ev.rules)
        if tested is not None:
            path = ".".join(json.dumps(k) for k in tested)
            w.line(f"tested = {self.x.assume_dicts(compile_expression(path).inline_source(el, 's'))}")
        first = True
        for rule in ev.rules:
            where = _where(rule.path)
            self._matched = None
            if rule.when is not None:
                kw = "if" if first else "elif"
                w.comment(f"{where} (line {rule.when.line}): when {rule.when.text}")
                test = rule.when.compiled.string_test
                if tested is not None and test is not None and test[0] == tested:
                    w.line(f"{kw} tested == {literal(test[1])}:")
                    self._matched = tested  # the element is an object, and `tested` holds that field
                else:
                    w.line(f"{kw} {self._test(rule.when, el)}:")
            elif first:
                w.comment(f"{where}: every element")
                w.line("if True:")
            else:
                w.comment(f"{where}: every other element")
                w.line("else:")
            known = set(self.x.known_dicts)
            if self._matched is not None:
                self.x.known_dicts.add(el)
            with w.indent():
                if rule.skip:
                    w.line("continue  # skip: true" if depth > 0 else "pass  # skip: true")
                else:
                    for k, tmpl in enumerate(rule.emits):
                        suffix = f".{k}" if len(rule.emits) > 1 else ""
                        self._event(w, tmpl, el, loc, suffix, looped=depth > 0)
            self.x.known_dicts.intersection_update(known)
            self._matched = None
            first = False
            if rule.when is None:
                break
        if depth == 0 and first:
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

    def _event(self, w: Writer, t: ir.EventTemplate, el: str, loc: str, suffix: str, looped: bool) -> None:
        if t.when is not None:
            w.line(f"if {self._test(t.when, el)}:")
            w.level += 1
        start = w.level
        location = loc if looped else f"loc_text({loc})"  # inside a loop the location is never empty
        default_id = f'"evt@" + {location}' + (f" + {literal(suffix)}" if suffix else "")
        if self._fusable(t):
            self._fused_event(w, t, el, default_id)
        else:
            self._event_record(w, t, el, default_id)
        w.level = start
        if t.when is not None:
            w.level -= 1

    def _raw(self, t: ir.EventTemplate) -> bool:
        """Whether a rule's event carries its source element (`raw`: the rule's, the events',
        or the RLViz target's option)."""
        return t.raw if t.raw is not None else self.spec.events.raw or bool(self.spec.target_option("rlviz", "raw", False))

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

    def _fused_event(self, w: Writer, t: ir.EventTemplate, el: str, default_id: str) -> None:
        """One ``events.put`` call (records_rt's ``TrajectoryEvents``): the leading fields,
        then the rule's, by name; ``events.put_full`` for a rule with fields ``put`` does not
        take (`branch_id`, `alignment_key`, `state_hash`, `context`, `raw`, `metadata` from
        an expression: D86).

        Expressions are evaluated in the spec's order (id, timestamp, parent, branch_id,
        alignment_key, state_hash, fields, context, metadata, signals); the call checks the
        timestamp, parent and the fields ``put_full`` takes, in that order (D83: an element
        whose later expression fails reports that failure, not also their warnings)."""
        where = _where(t.path)
        idsrc = self._event_id(w, t, el, default_id)
        can = dict(t.canonical)
        sem = dict(t.semantic)
        values = [(key, self._field_value(sem[key], el)) for key, _ in t.semantic]
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
            self._call(w, "semantic_view", [f"st, {var}, {literal(t.kind)}"] + [f"{k}={k}" for k, _ in t.semantic])
        if later:
            self._children(w, later, (), rec="ev", event=True, el=el, where=where + ".signals", eid=var)

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

    @staticmethod
    def _call(w: Writer, head: str, args: list[str]) -> None:
        """``head(args...)``: on one line when it fits, else the arguments filled into lines
        (an argument longer than a line on a line of its own, as the formatter would)."""
        one = f"{head}({', '.join(args)})"
        if 4 * w.level + len(one) <= 99:
            w.line(one)
            return
        w.line(f"{head}(")
        width = 99 - 4 * (w.level + 1)
        line = ""
        with w.indent():
            for arg in args:
                piece = f"{arg},"
                if line and len(line) + 1 + len(piece) > width:
                    w.line(line)
                    line = ""
                line = f"{line} {piece}" if line else piece
            if line:
                w.line(line)
        w.line(")")

    def _fused_fields(self, level: int, values: list[tuple[str, str]], layout: dict, canonical: dict,
                      inline: bool, first: list[tuple[str, str]]) -> tuple[list[str], list[str]] | None:
        """``(lines, keyword arguments)`` of an event's input, output and data as
        :meth:`_fields` lays them out: semantic fields in variables of their name first (after
        the variables ``first``), or (``inline``) in their place; None when they cannot be: a
        semantic view reads them, or two values may raise (their order is the spec's)."""
        risky = [k for k, v in values if _RAISES.search(v)]
        if inline and (self.semantics or len(risky) > 1 or not values):
            return None
        w = Writer(level)
        if not inline:
            self._assign(w, first + values)
        src = {k: (v if inline else k) for k, v in values}
        args = []
        for key in ("input", "output", "data"):
            if key in canonical:
                args.append(f"{key}={canonical[key]}")
            elif isinstance(layout.get(key), str):
                args.append(f"{key}={src[layout[key]]}")
            elif key in layout:
                members = ", ".join(f"{name}={src[var]}" for name, var in layout[key])
                args.append(f"{key}=nonempty({members})")
        return w.lines, args

    def _event_id(self, w: Writer, t: ir.EventTemplate, el: str, default_id: str) -> str:
        """The source of the event's id: ``eid``, set from the rule's own `id` (or
        records.events.id for every rule) when there is one, else the derived ``default_id``."""
        if t.id is None:
            return default_id
        id_where = _where(t.id.path)
        w.line(f"eid = native_event_id(st, {self.x.value(t.id, el, 's')}, {default_id}, {literal(id_where)})")
        return "eid"

    def _event_record(self, w: Writer, t: ir.EventTemplate, el: str, default_id: str) -> None:
        """An event built as a record and finished by ``emit_event``: the rules
        :meth:`_fusable` leaves out."""
        where = _where(t.path)
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
            w.line(f"parent = event_parent(st, tid, {self.x.value(parent, el, 's')}, {literal(_where(parent.path))})")
            parent_src = "parent"
        w.line(f"ev = event_record(tid, events.seq, {idsrc}, {literal(t.kind)}, {timestamp}, {parent_src})")
        w.line("events.seq += 1")
        can = dict(t.canonical)
        sem = dict(t.semantic)
        for key in ("branch_id",):
            if key in can:
                self._put(w, "ev", key, f"coerce_id(st, {self.x.value(can[key], el, 's')}, {literal(where + '.' + key)})")
        for key in ("alignment_key", "state_hash"):
            if key in can:
                self._put(w, "ev", key, f"coerce_nonempty_text(st, {self.x.value(can[key], el, 's')}, {literal(where + '.' + key)})")
        values = [(key, self._field_value(sem[key], el)) for key, _ in t.semantic]
        layout = self._layout(t.kind, sem)
        made = {k: self.x.value(can[k], el, "s") for k in ("input", "output", "data") if k in can}
        w.lines += self._fields(w.level, values, layout, made)
        if "context" in can:
            self._put(w, "ev", "context", self._object(can["context"], self.x.value(can["context"], el, "s"), literal(where + ".context")))
        raw = self._raw(t)
        args = "st, ev, srcloc"
        if raw or "metadata" in can or t.subtrajectory is not None:
            w.line('ev["source"] = srcloc')
            if raw:
                w.line(f'ev["raw"] = {el}')
            if "metadata" in can:
                self._put(w, "ev", "metadata", self._object(can["metadata"], self.x.value(can["metadata"], el, "s"), literal(where + ".metadata")))
            if t.subtrajectory is not None:
                self._subtrajectory(w, t, el)
            args = "st, ev, None"
        if self.remembers_events:
            args += ", True"
        elif args.endswith("None"):
            args = "st, ev"
        var = "events.prev"
        w.line(f"{var} = emit_event({args})")
        if (t.semantic or t.subtrajectory) and self.semantics:  # a view of its own (emit_event's: the kind)
            fields = "".join(f", {k}={k}" for k, _ in t.semantic) + (", subtrajectory=sub" if t.subtrajectory else "")
            w.line(f"semantic_view(st, {var}, {literal(t.kind)}{fields})")
        if t.signals or t.artifacts:
            if "event" in self.used_vars:
                w.line('s["event"] = ev')
            self._children(w, t.signals, t.artifacts, rec="ev", event=True, el=el, where=_where(t.path) + ".signals",
                           eid=var)

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
        self._call(w, "sub = map_subtrajectory" if self.semantics else "map_subtrajectory", ["st", "emit", "map_child_source", path, "ev", "traj", call_id,
                                                   "scope", literal(where)])

    def _fields(self, level: int, values: list[tuple[str, str]], layout: dict, canonical: dict) -> list[str]:
        """An event's input, output and data (``canonical``: those the rule gives as such): each
        semantic field in a variable of its name (a semantic view reads them too), then the
        record's fields built from them. Without semantic views, a variable read once is
        written in its place when that takes fewer lines and at most one value may raise (an
        expression function): the order of failures cannot change."""

        def write(inline: set) -> list[str]:
            w = Writer(level)
            self._assign(w, [(k, v) for k, v in values if k not in inline])
            src = dict(values)
            for key in ("input", "output", "data"):
                if key in canonical:
                    self._put(w, "ev", key, canonical[key])
                elif isinstance(layout.get(key), str):
                    var = layout[key]
                    self._put(w, "ev", key, src[var] if var in inline else var)
                elif key in layout:
                    members = ", ".join(f"{literal(name)}: {src[var] if var in inline else var}"
                                        for name, var in layout[key])
                    w.line(f"put_object(ev, {literal(key)}, {{{members}}})")
            return w.lines

        plain = write(set())
        if self.semantics:
            return plain
        reads = [var for key in ("input", "output", "data") if key not in canonical and key in layout
                 for var in ((layout[key],) if isinstance(layout[key], str) else [v for _, v in layout[key]])]
        once = {var for var in reads if reads.count(var) == 1}
        risky = [k for k, v in values if _RAISES.search(v)]
        if len(risky) > 1:
            return plain
        inlined = write(once)
        return inlined if len(inlined) < len(plain) else plain

    def _field_value(self, v: ir.Value, el: str) -> str:
        """A rule's field: ``tested`` when it is the field the rule's condition read."""
        if self._matched is not None and isinstance(v, ir.Expr) and v.compiled.path == self._matched:
            return "tested"
        return self.x.value(v, el, "s")

    @staticmethod
    def _assign(w: Writer, pairs: list[tuple[str, str]]) -> None:
        """``a, b = x, y``: variables assigned in order, several on a line while it stays short."""
        width = 99 - 4 * w.level
        group: list[tuple[str, str]] = []

        def flush():
            if group:
                w.line(f"{', '.join(n for n, _ in group)} = {', '.join(v for _, v in group)}")
                group.clear()

        for name, value in pairs:
            names = ", ".join(n for n, _ in group + [(name, value)])
            values = ", ".join(v for _, v in group + [(name, value)])
            if group and len(f"{names} = {values}") > width:
                flush()
            group.append((name, value))
        flush()

    @staticmethod
    def _layout(kind: str, sem: dict) -> dict[str, str | tuple]:
        """Canonical input/output/data built from semantic fields, by kind.

        A value is a variable name, or ``((member, variable), ...)`` for an
        object whose null members are left out.
        """
        if not sem:
            return {}

        def obj(pairs):
            present = tuple((k, field) for k, field in pairs if field in sem)
            return present or None

        out: dict[str, str | tuple | None] = {}
        if kind == "message":
            out["input"] = obj(_MESSAGE_LAYOUT)
        elif kind == "generation":
            out["output"] = obj(_MESSAGE_LAYOUT)
        elif kind == "tool":
            out["input"] = obj((("name", "tool_name"), ("arguments", "arguments"), ("id", "tool_call_id")))
            if "result" in sem:
                out["output"] = "result"
            elif "content" in sem:
                out["output"] = "content"
        elif kind == "observation":
            content = "result" if "result" in sem else "content"
            out["output"] = obj((("content", content), ("tool_call_id", "tool_call_id"), ("name", "tool_name"), ("role", "role")))
        else:
            out["data"] = obj(tuple((k, k) for k in sem))
        return {k: v for k, v in out.items() if v is not None}


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
