"""The loops of a level function: `each` over lines, rows or elements, `merge` and `carry`
(issue 27), the element's object alias, and the level's `where`, `let` and `ordinal_by`."""

from __future__ import annotations

import json
import keyword

from mapc.codegen.mapping.fields import _short, _where, json_path_step
from mapc.codegen.mapping.frame import Frame
from mapc.codegen.pysrc import Writer, identifier, literal
from mapc.spec import ir


class Loops:
    """The generator's loop writers (a part of :class:`MappingGenerator`)."""

    def _open_loops(self, w: Writer, scope: ir.Scope, name: str, frame: Frame) -> Frame:
        """Write the loop headers of a level; returns the frame inside them (its element and
        location variables, its depth, whether a loop carries values)."""
        el, loc = frame.el, frame.loc
        carrying = frame.carrying
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
                rows = "csv_rows(state.src, state, CSV_COLUMNS, CSV_DELIMITER, INVALID_LINES)"
            else:
                w.comment(f"each line of the jsonl source ({level})")
                rows = "state.src.lines(state, INVALID_LINES)"
            rows, carrying = self._stream_loop(w, lines, rows, 0, carrying, line_loop=True)
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
                w.line('s["source"] = {**state.src.info, **srcloc}')
            self._stream_element(w, lines, "el0", 0)
            if self.spec.subtrajectories:  # a subtrajectory's lines: `sub1/L3` (map_subtrajectory)
                w.line('loc0 = f"{location}/L{line}" if location else f"L{line}"')
            else:
                w.line('loc0 = f"L{line}"')
            el, loc = "el0", "loc0"
            depth = 1
        for k, lp in enumerate(loops):
            i, e, newloc = f"i{depth}", f"el{depth}", f"loc{depth}"
            where = _where(lp.path)
            self.loops.setdefault(f"level_{name}", []).append((i, json_path_step(lp.each, where)))
            w.comment(f"{where} (line {lp.each.line}): each {lp.each.text}")
            elements = f"iterate(state, {self.x.call(lp.each, el, 's')}, {literal(where)})"
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
                items, carrying = self._stream_loop(w, lp, elements, depth, carrying)
                w.line(f"for {i}, {e} in {items}:")
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
        return frame.but(el=el, loc=loc, depth=depth, carrying=carrying)

    # -- event streams: merge, carry (issue 27) ----------------------------------------------
    def _stream_loop(self, w: Writer, lp: ir.Loop, items: str, depth: int, carrying: bool,
                     line_loop: bool = False) -> tuple[str, bool]:
        """Before a loop with `merge` or `carry`: the merging of its elements and the carried
        values' start; returns what the loop iterates (``items`` as it is, or merged), and
        whether a loop so far carries values (``carrying``: one above did)."""
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
                "state", key_of, "s", literal(where), literal(m.fields)] + ([str(m.open)] if m.open != 1 else [])
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
            outer = '**s["carry"], ' if carrying else ""
            w.comment(f"{where}: $carry starts empty for each element above this loop")
            w.line(f"carry{depth} = {{{outer}{names}}}")
            carrying = True
        return items, carrying

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
            alias = "obj" + el[2:] if el[2:].isdigit() else "obj"  # el0: obj0
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
            w.line(f's["ordinal"] = state.ordinal({literal(name)}, {self.x.call(scope.ordinal_by, el, "s")})')

