"""Projections, filters and multiselects: loops, or list comprehensions when they fit."""

from __future__ import annotations

import re
from dataclasses import replace

from .layout import _append_last, _conjuncts, _split_or
from .pyexpr import _ONE_LINE, AND, CMP, COND, LINE_LENGTH, OR, Expr, _call, _display, _name, literal_source
from .shapes import _proves_object, _without_object


class ProjectionsMixin:
    """Node compilers of :class:`~mapc.expressions.compiler.FunctionCompiler` (see :mod:`.emitter`)."""

    def _project(self, base: Expr, right: dict, is_object: bool,
                 condition: dict | None = None, pick: int | None = None) -> Expr | None:
        """Shared code for ``[*]``, ``.*``, ``[]`` and ``[?...]`` projections.

        ``pick`` (0 or -1, a filter piped into ``[0]`` or ``[-1]``): the first or last element
        only, found with ``next()``; None when that cannot be written exactly (then the caller
        compiles the whole list and indexes it)."""
        if not is_object and condition is None and right["type"] == "field" and pick is None:
            # the commonest projection, `items[*].name`: one runtime call (a long base first
            # in a variable of its own, so that a call around it still fits on a line)
            if len(base.src) > 60:
                base = self.bind(base)
            return _call(self.use_helper("jp_pluck"), [base.src, literal_source(right["value"])],
                         pure=base.pure)
        b = self.bind(base).src
        kind = "dict" if is_object else "list"
        source = f"{b}.values()" if is_object else b
        item = self.new("item")
        # an element that passed `field == 'text'` is an object: its fields are read directly
        without = _without_object(condition) if condition is not None else None
        proven = condition is not None and (_proves_object(condition) or without is False)
        # `[*].{a: x, b: y}`: a multiselect of a null element is null, which is left out, so
        # only the other elements are mapped (one test instead of two)
        skip_null = (condition is None and not proven
                     and right["type"] in ("multi_select_list", "multi_select_dict"))
        with self._block():  # the condition's values are known in the body, in the loop only
            test, cond_lines = self._filter_test(condition, item, proven, without)
            if proven:
                self._dicts.add(item)
            if proven or skip_null:
                self._nonnull.add(item)
            try:
                with self.capture() as body_lines:
                    r = self.compile(right, item)
            finally:
                self._dicts.discard(item)
                self._nonnull.discard(item)
        if skip_null:
            test = Expr(f"{item} is not None", CMP, pure=True, boolean=True, nonnull=True)
            r = replace(r, nonnull=True)
        if not cond_lines and not body_lines:
            # one expression per element: a list comprehension (or a generator for `next()`)
            keep = [test.paren(AND)] if test is not None else []
            if r.name and r.src == item and not proven and not skip_null:
                keep.append(f"{item} is not None")
                value = item
            elif r.nonnull:
                value = r.src
            else:
                value = self.new("v")
                keep.append(f"({value} := {r.src}) is not None")
            pure = r.pure and (test is None or test.pure)
            if pick is not None and not pure:
                return None  # elements after the picked one must still be evaluated
            if test is not None and test.prec == AND:
                keep[:1] = _conjuncts(test.src)  # one line each where they do not fit on one
            comp = self._comprehension(value, item, f"reversed({b})" if pick == -1 else source,
                                       keep, b, kind, pick, pure)
            if comp is not None or pick is not None:
                return comp
        elif pick is not None:
            return None
        elif not cond_lines and r.nonnull and r.name:
            # `[*].{a: x, b: y}`: the element's display is the comprehension's value
            comp = self._display_comprehension(body_lines, r.src, item, source, test, b, kind)
            if comp is not None:
                return comp
        return self._project_loop(b, kind, source, item, test, cond_lines, body_lines, r)

    def _project_loop(self, b: str, kind: str, source: str, item: str, test: Expr | None, cond_lines,
                      body_lines, r: Expr) -> Expr:
        """The projection as statements: ``for item in source`` appending each non-null value
        (after the filter's ``test`` and the ``cond_lines`` it needs), null when ``b`` is no ``kind``."""
        out = self.new("out")
        self.emit(f"if isinstance({b}, {kind}):")
        with self.indented():
            self.emit(f"{out} = []")
            self.emit(f"for {item} in {source}:")
            with self.indented():
                if test is not None:
                    self.splice(cond_lines)
                    self.emit(f"if {test.src}:")
                    self._depth += 1
                appended = _append_last(body_lines, r.src, out) if r.nonnull and r.name else None
                self.splice(appended or body_lines)
                if appended:
                    pass  # the value's own statement appends it
                elif r.nonnull:
                    self.emit(f"{out}.append({r.src})")
                else:
                    rn = self.bind(r)
                    self.emit(f"if {rn.src} is not None:")
                    with self.indented():
                        self.emit(f"{out}.append({rn.src})")
                if test is not None:
                    self._depth -= 1
        self.emit("else:")
        with self.indented():
            self.emit(f"{out} = None")
        return _name(out)

    def _filter_test(self, condition: dict | None, item: str, proven: bool, without):
        """A filter's test of ``item`` and the statements it needs first (captured).

        When the condition holds only for an object (``role == 'user' && ...``), it is
        written ``isinstance(item, dict) and <test with item read as a dict>`` when that needs
        no statements; when it reads only fields of the element, its value for an element
        that is not an object is known (``without``), and the test is written the same way:
        exactly the same truth for every element, in one expression."""
        if condition is None:
            return None, []
        if proven or without is not None:
            self._dicts.add(item)
            self._nonnull.add(item)
            try:
                with self._block(), self.capture(keep=True) as lines:
                    test = self.truth(self.compile(condition, item))
            finally:
                self._dicts.discard(item)
                self._nonnull.discard(item)
            if not lines and (proven or not without):
                return Expr(f"isinstance({item}, dict) and {test.paren(AND)}", AND,
                            pure=test.pure, boolean=True, nonnull=True), []
            if not lines:
                return Expr(f"not isinstance({item}, dict) or {test.paren(OR)}", OR,
                            pure=test.pure, boolean=True, nonnull=True), []
        with self.capture(keep=True) as lines:
            test = self.truth(self.compile(condition, item))
        return test, lines

    def _display_comprehension(self, lines, var: str, item: str, source: str,
                               test: Expr | None, b: str, kind: str) -> Expr | None:
        """``[{...} for item in source if test]`` when ``lines`` are one statement
        ``var = {...}`` (a display, written one member a line) and nothing else; else None."""
        head = f"{var} = "
        if not lines or lines[0][0] != 0 or not lines[0][1].startswith(head):
            return None
        first = lines[0][1][len(head):]
        if len(lines) == 1:
            keep = [test.paren(AND)] if test is not None else []
            return self._comprehension(first, item, source, keep, b, kind, None, False)
        close = lines[-1][1]
        if first not in ("{", "[") or lines[-1][0] != 0 or close != {"{": "}", "[": "]"}[first]:
            return None
        middle = lines[1:-1]
        name = re.compile(rf"(?<![\w.]){re.escape(var)}(?!\w)")
        if any(depth < 1 or name.search(text) for depth, text in middle):
            return None
        tail = f"{close} for {item} in {source}" + (f" if {test.src}" if test is not None else "")
        tail += f"] if isinstance({b}, {kind}) else None"
        if 4 * (self._depth + 3) + len(tail) > LINE_LENGTH:
            return None
        out = self.new("out")
        self.emit(f"{out} = [{first}")
        self.splice(middle)
        self.emit(tail)
        return _name(out)

    def _comprehension(self, value: str, item: str, source: str, keep: list[str], b: str,
                       kind: str, pick: int | None, pure: bool) -> Expr | None:
        """``[value for item in source if keep...]`` (``next((...), None)`` when picking one
        element) when ``b`` is a ``kind``, else None: on one line when it fits, else with the
        tests on lines of their own (joined where they fit); None when a test is too long."""
        guard = f" if isinstance({b}, {kind}) else None"
        loop = f"{value} for {item} in {source}"
        test = f" if {' and '.join(keep)}" if keep else ""
        open_, close = ("next((", "), None)") if pick is not None else ("[", "]")
        one_line = open_ + loop + test + close + guard
        if value == item and pick is None and len(one_line) <= 80:
            return Expr(one_line, COND, pure=pure)  # the elements themselves, as before
        var = self.new("v" if pick is not None else "out")
        if len(var) + 3 + len(one_line) <= _ONE_LINE:  # (captured lines may be spliced deeper)
            self.emit(f"{var} = {one_line}")
            return _name(var)
        room = LINE_LENGTH - 4 * (self._depth + 4)  # (the lines may be spliced two deeper)
        lines = [loop]
        for i, part in enumerate(keep):
            word = "if " if i == 0 else "and "
            if i > 0 and len(lines[-1]) + 1 + len(word) + len(part) <= room:
                lines[-1] += f" {word}{part}"
            else:
                lines.append(word + part)
        # the tests only: the loop line is no expression (``[a, b] for item in v`` would
        # tokenize unbalanced)
        lines = lines[:1] + [piece for line in lines[1:] for piece in _split_or(line, room)]
        if any(len(line) > room for line in lines) or len(close + guard) > room:
            return None
        self.emit(f"{var} = {open_}")
        with self.indented():
            for line in lines:
                self.emit(line)
        self.emit(close + guard)
        return _name(var)

    def _projection(self, node, cur):
        left, right = node["children"]
        return self._project(self.compile(left, cur), right, is_object=False)

    def _value_projection(self, node, cur):
        left, right = node["children"]
        return self._project(self.compile(left, cur), right, is_object=True)

    def _filter_projection(self, node, cur):
        left, right, condition = node["children"]
        return self._project(self.compile(left, cur), right, is_object=False,
                             condition=condition)

    def _multi_select(self, values: list[dict], cur: str, build) -> Expr:
        if cur in self._nonnull:  # nested in a multiselect of the same value
            display = build(self.compile_all(values, cur))
            return self.bind(display) if len(display.src) > 60 else display
        self._nonnull.add(cur)
        try:
            with self.capture() as lines:
                parts = self.compile_all(values, cur)
        finally:
            self._nonnull.discard(cur)
        display = build(parts)
        if not lines and len(display.src) <= 45:
            pure = all(p.pure for p in parts)
            return Expr(f"{display.src} if {cur} is not None else None", COND, pure=pure)
        out = self.new("v")
        if not lines:
            line = f"{out} = {display.src} if {cur} is not None else None"
            if len(line) <= _ONE_LINE:  # (captured lines may be spliced deeper)
                self.emit(line)
                return _name(out)
            open_, items, close = display.parts
            if len(", ".join(items)) <= LINE_LENGTH - 4 * (self._depth + 4):
                # its members on one line of their own: three lines, not an if/else of five
                self.emit(f"{out} = None if {cur} is None else {open_}")
                with self.indented():
                    self.emit(", ".join(items))
                self.emit(close)
                return _name(out)
        self.emit(f"if {cur} is None:")
        with self.indented():
            self.emit(f"{out} = None")
        self.emit("else:")
        with self.indented():
            self.splice(lines)
            self.emit_statement(f"{out} = ", display)
        return _name(out)

    def _multi_select_list(self, node, cur):
        return self._multi_select(
            node["children"], cur, lambda parts: _display("[", [p.src for p in parts], "]")
        )

    def _multi_select_dict(self, node, cur):
        keys = [literal_source(child["value"]) for child in node["children"]]
        values = [child["children"][0] for child in node["children"]]
        return self._multi_select(
            values,
            cur,
            lambda parts: _display("{", [f"{k}: {p.src}" for k, p in zip(keys, parts)], "}"),
        )
