"""What a spec reads from its source: field paths from the document root.

Each expression knows the field paths it reads relative to its own ``@``
(``CompiledExpression.field_paths``). This module walks the spec the way the
generated code does (levels, loops, ``as`` and ``let`` variables, event rules,
signals, artifacts, the probe) and anchors those paths at the document (json)
or at each line (jsonl), so ``mapc review`` can say what a mapping touches and
``mapc drift`` can look the paths up in a sample's profile.

A loop over a computed value (``parse_json(x)``, ``values(m)``) makes the paths
read inside it a best guess: they are marked ``exact=False``.

:func:`rule_reads` gives, per event rule, the fields it reads from the element it takes
(relative to that element, as the rule's expressions write them), which of them are
mapped or only tested, and their alternatives (``a || b``: ``b`` present, ``a`` may be
absent); ``mapc drift`` checks them on the elements each rule takes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mapc.expressions.paths import field_paths
from mapc.core.fieldpath import join, render, segments, within
from mapc.spec import ir

#: Functions whose result elements are elements of their array arguments.
_PASS_THROUGH = frozenset({"concat", "sort_by", "sort", "reverse", "not_null", "to_array"})
#: Variables bound to records mapc built, or to data that is not the source.
#: Read as fields by JMESPath, written by specs for their values (`parent || null`).
_WORDS = frozenset({"null", "true", "false"})
_NOT_SOURCE = frozenset({"source", "tables", "run", "case", "group", "trajectory", "event", "task",
                         "index", "ordinal", "carry", "merged"})


@dataclass(frozen=True)
class Read:
    path: str  # e.g. 'samples[].messages[].role', 'attributes."gen_ai.system"' (mapc.core.fieldpath); "" the root
    where: str  # the spec path of the expression, e.g. "records.case.id"
    source: str  # "trace", or "sibling:<name>" for a sibling file
    exact: bool = True
    #: the paths as the expression writes them (``text``, ``$step.text``), and the expression
    fields: tuple[str, ...] = field(default=(), compare=False)
    expr: Any = field(default=None, compare=False, repr=False)  # ir.Expr; None for probe.require


@dataclass(frozen=True)
class Base:
    """What ``@`` may be: paths from the root (several for ``concat(a, b)``)."""

    paths: tuple[str, ...]
    exact: bool = True


ROOT = Base(("",))


def _split_var(path: str) -> tuple[str, str]:
    body = path[1:]
    for i, ch in enumerate(body):
        if ch in ".[":
            return body[:i], body[i + 1:] if ch == "." else body[i:]
    return body, ""


class _Walker:
    def __init__(self, spec: ir.Spec):
        self.spec = spec
        self.found: dict[tuple[str, str, str], bool] = {}
        self.written: dict[tuple[str, str, str], set[str]] = {}
        self.exprs: dict[str, ir.Expr] = {}
        self.events_base: Base | None = None

    def add(self, path: str, where: str, source: str, exact: bool, written: str | None = None) -> None:
        key = (path, where, source)
        self.found[key] = self.found.get(key, True) and exact
        if written is not None:
            self.written.setdefault(key, set()).add(written)

    # -- expressions --------------------------------------------------------------
    def resolve(self, fp: str, base: Base | None, env: dict[str, Base]) -> tuple[str, Base | None, str]:
        """(relative path, base it is relative to, source) for one field path."""
        if fp.startswith("$"):
            name, rest = _split_var(fp)
            if name == "siblings":
                segs = segments(rest)
                sib = segs[0] if segs else ""
                return render(segs[1:]), ROOT, f"sibling:{sib}" if sib else "sibling:*"
            if name == "root":
                return rest, ROOT if base is not None else None, "trace"
            if name in env and name not in _NOT_SOURCE:
                return rest, env[name], "trace"
            return rest, None, "trace"
        return fp, base, "trace"

    def expr(self, e: ir.Expr | None, base: Base | None, env: dict[str, Base]) -> None:
        if e is None:
            return
        self.exprs[e.where] = e
        for fp in e.compiled.field_paths:
            if fp in _WORDS:
                continue  # `x || null`: the null value, as specs write it, not a field named null
            rel, b, source = self.resolve(fp, base, env)
            if b is None:
                continue
            for p in b.paths:
                self.add(join(p, rel), e.where, source, b.exact, fp)

    def value(self, v, base: Base | None, env: dict[str, Base]) -> None:
        if isinstance(v, ir.Expr):
            self.expr(v, base, env)
        elif isinstance(v, ir.ObjectTemplate):
            for _, item in v.items:
                self.value(item, base, env)
        elif isinstance(v, ir.ArrayTemplate):
            for item in v.items:
                self.value(item, base, env)

    def own(self, e: ir.Expr, base: Base | None, env: dict[str, Base], *, elements: bool) -> Base | None:
        """What ``e`` evaluates to (its elements, when ``elements``), as paths."""
        if base is None and not any(fp.startswith("$") for fp in e.compiled.field_paths):
            return None
        text = e.text.strip()
        if text == "@":
            if base is None:
                return None
            return Base(tuple(join(p, "[]") for p in base.paths), base.exact) if elements else base
        paths: list[str] = []
        exact = base.exact if base else True
        for fp in e.compiled.field_paths:
            rel, b, source = self.resolve(fp, base, env)
            if b is None or source != "trace":
                continue
            exact = exact and b.exact
            paths += [join(p, rel) for p in b.paths]
        if not paths:
            return None
        minimal = tuple(sorted(p for p in set(paths)
                               if not any(q != p and within(p, q) for q in paths)))
        plain = e.compiled.path is not None or text.startswith("$")
        exact = exact and (plain or set(e.compiled.functions) <= _PASS_THROUGH) and not e.compiled.builds_values
        if elements:  # a projection's paths already name its elements; a plain array does not
            minimal = tuple(p if "[]" in p and not plain else p + "[]" for p in minimal)
        return Base(minimal, exact)

    # -- structure ---------------------------------------------------------------------
    def scope(self, scope: ir.Scope, base: Base | None, env: dict[str, Base], *, line_level: bool) -> Base | None:
        for i, loop in enumerate(scope.loops):
            self.expr(loop.each, base, env)
            if line_level and i == 0:
                base = ROOT  # jsonl: each line is the element
            else:
                base = self.own(loop.each, base, env, elements=True)
            if loop.as_name:
                env[loop.as_name] = base or Base((), False)
            self.stream(loop, base, env)
        self.expr(scope.where, base, env)
        for name, v in scope.lets:
            self.value(v, base, env)
            own = self.own(v, base, env, elements=False) if isinstance(v, ir.Expr) else None
            env[name] = own or Base((), False)
        self.expr(scope.ordinal_by, base, env)
        return base

    def stream(self, loop: ir.Loop, base: Base | None, env: dict[str, Base]) -> None:
        """What a loop's `merge` and `carry` read of each element (merged fields are read as
        the rules read them: they are the element's own)."""
        if loop.merge is not None:
            self.expr(loop.merge.by, base, env)
            self.expr(loop.merge.when, base, env)
            self.expr(loop.merge.until, base, env)
            for keys, _ in loop.merge.fields if base is not None else ():
                where = ir.Expr("", loop.merge.path + ("fields", render(keys)), None).where
                for p in base.paths:
                    self.add(join(p, render(keys)), where, "trace", base.exact)
        for c in loop.carry:
            self.value(c.value, base, env)
            self.expr(c.when, base, env)

    def loops(self, loops, base: Base | None, env: dict[str, Base]) -> tuple[Base | None, dict[str, Base]]:
        """A signal's or artifact's own loops: the element they end on, and their variables."""
        local = dict(env)
        for loop in loops:
            self.expr(loop.each, base, local)
            base = self.own(loop.each, base, local, elements=True)
            if loop.as_name:
                local[loop.as_name] = base or Base((), False)
        return base, local

    def signals(self, signals, base: Base | None, env: dict[str, Base]) -> None:
        for sig in signals:
            b, local = self.loops(sig.loops, base, env)
            self.expr(sig.when, b, local)
            for v in (sig.name, sig.value, sig.unit, sig.metadata, _value_or_none(sig.event_id)):
                self.value(v, b, local)

    def artifacts(self, artifacts, base: Base | None, env: dict[str, Base]) -> None:
        for art in artifacts:
            b, local = self.loops(art.loops, base, env)
            self.expr(art.when, b, local)
            for _, v in art.fields:
                self.value(v, b, local)
            self.value(_value_or_none(art.event_id), b, local)

    def walk(self) -> list[Read]:
        spec = self.spec
        jsonl = spec.source.streams_lines
        probe = spec.source.probe
        for keys in probe.require:
            self.add(render(keys), "source.probe.require", "trace", True)
        self.expr(probe.when, ROOT, {})
        base: Base | None = None if jsonl else ROOT
        env: dict[str, Base] = {}
        for lv in spec.levels:
            base = self.scope(lv.scope, base, env, line_level=jsonl and spec.line_level == lv.name)
            self.value(lv.id, base, env)
            for _, v in lv.fields:
                self.value(v, base, env)
            self.value(lv.final_output, base, env)
            self.signals(lv.signals, base, env)
            self.artifacts(lv.artifacts, base, env)
        ev = spec.events
        base = self.events_base = self.scope(ev.scope, base, env, line_level=jsonl and spec.line_level == "events")
        if not isinstance(ev.parent, str):
            self.value(ev.parent, base, env)
        for rule in ev.rules:
            self.expr(rule.when, base, env)
            for t in rule.emits:
                self.expr(t.when, base, env)
                for v in (t.id, t.timestamp, None if isinstance(t.parent, str) else t.parent):
                    self.value(v, base, env)
                for _, v in t.semantic + t.canonical:
                    self.value(v, base, env)
                self.signals(t.signals, base, env)
                self.artifacts(t.artifacts, base, env)
                if t.subtrajectory is not None:
                    self.value(t.subtrajectory.path, base, env)
        return sorted((Read(p, w, s, exact, tuple(sorted(self.written.get((p, w, s), ()))), self.exprs.get(w))
                       for (p, w, s), exact in self.found.items()),
                      key=lambda r: (r.source != "trace", r.source, r.path, r.where))


def spec_reads(spec: ir.Spec) -> list[Read]:
    """Every source field path ``spec`` reads, with the spec path that reads it."""
    return _Walker(spec).walk()


def read_paths(reads: list[Read], source: str = "trace") -> dict[str, list[str]]:
    """path -> spec paths reading it (one source), in path order."""
    out: dict[str, list[str]] = {}
    for r in reads:
        if r.source == source:
            out.setdefault(r.path, []).append(r.where)
    return out


def events_anchor(spec: ir.Spec) -> Base | None:
    """Where the elements the event rules take are, as paths from the root (None: unknown)."""
    walker = _Walker(spec)
    walker.walk()
    return walker.events_base


@dataclass(frozen=True)
class RuleRead:
    """A field one event rule reads from the element it takes."""

    rule: int
    path: str  # relative to the element ("" the element itself)
    where: str  # the spec path of the expression
    mapped: bool  # its value goes into a record; False: only tested (`when`, `x != null`, `a || b`)
    whole: bool  # mapped whole (`data: data`, `data: "@"`): what it holds is carried along
    alternatives: frozenset[str]  # fields whose presence makes this one optional (`a || b`)
    guarded: bool = False  # read by (or under) a `when` of an event, signal or artifact: read only if it holds
    expr: Any = field(default=None, compare=False, repr=False)  # the ir.Expr that reads it


def rule_reads(spec: ir.Spec) -> list[RuleRead]:
    """Per event rule, the fields it reads from its element: the rule's and its templates'
    ``when`` (tested), their fields, and the signals and artifacts they carry (for one with
    loops, only what its first ``each`` reads of the element). Reads through variables
    (``$step.x``) are not the element's: :func:`spec_reads` has them."""
    out: list[RuleRead] = []
    for i, rule in enumerate(spec.events.rules):
        out += _element_reads(i, rule.when, True, False)
        for t in rule.emits:
            guarded = t.when is not None
            out += _element_reads(i, t.when, True, True)
            values = [t.id, t.timestamp, None if isinstance(t.parent, str) else t.parent]
            values += [v for _, v in t.semantic + t.canonical]
            out += [r for e in _exprs(values) for r in _element_reads(i, e, False, guarded)]
            for child in t.signals + t.artifacts:
                if child.loops:
                    out += _element_reads(i, child.loops[0].each, False, guarded)
                    continue
                out += _element_reads(i, child.when, True, True)
                values = (child.name, child.value, child.unit, child.metadata) if isinstance(child, ir.SignalSpec) \
                    else tuple(v for _, v in child.fields)
                out += [r for e in _exprs([*values, _value_or_none(child.event_id)])
                        for r in _element_reads(i, e, False, guarded or child.when is not None)]
    return out


def _exprs(values):
    for v in values:
        if isinstance(v, ir.Expr):
            yield v
        elif isinstance(v, ir.ObjectTemplate):
            yield from _exprs(item for _, item in v.items)
        elif isinstance(v, ir.ArrayTemplate):
            yield from _exprs(v.items)


def _element_reads(rule: int, e: ir.Expr | None, looks: bool, guarded: bool) -> list[RuleRead]:
    if e is None:
        return []
    c = e.compiled
    if e.text.strip() == "@" and not looks:
        return [RuleRead(rule, "", e.where, True, True, frozenset(), guarded, e)]
    tested = set(c.tested_paths)
    alternatives = alternatives_of(c.ast)
    whole = not looks and c.path is not None
    return [RuleRead(rule, fp, e.where, not looks and fp not in tested, whole, alternatives.get(fp, frozenset()),
                     guarded, e) for fp in c.field_paths if not fp.startswith("$") and fp not in _WORDS]


#: Node types whose children are read in the same context (``@``) as the node itself.
_SAME_CONTEXT = frozenset({"and_expression", "or_expression", "not_expression", "comparator",
                           "function_expression", "multi_select_list", "multi_select_dict", "key_val_pair"})
#: Functions whose value is the first of their arguments that is not null: alternatives.
_FIRST_OF = frozenset({"coalesce", "not_null"})


def alternatives_of(ast: dict) -> dict[str, frozenset[str]]:
    """Field path -> the paths of the other alternatives it sits among (``a || b``,
    ``coalesce(a, b)``, ``not_null(a, b)``), for alternatives read on ``@`` itself (a
    variable or a literal is no alternative field)."""
    out: dict[str, frozenset[str]] = {}

    def branches(node: dict) -> list[dict]:
        if node["type"] == "or_expression":
            return [b for child in node["children"] for b in branches(child)]
        if node["type"] == "function_expression" and node["value"] in _FIRST_OF:
            return [b for child in node["children"] if child["type"] != "expref" for b in branches(child)]
        return [node]

    def visit(node: dict) -> None:
        found = branches(node)
        if len(found) > 1:
            paths = [{p for p in field_paths(b) if p and not p.startswith("$") and p not in _WORDS} for b in found]
            for k, own in enumerate(paths):
                others = set().union(*paths[:k], *paths[k + 1:]) - own
                for p in own if others else ():
                    out[p] = out.get(p, frozenset()) | others
        for n in found:
            if n["type"] in _SAME_CONTEXT:
                for child in n.get("children", []):
                    if isinstance(child, dict) and child["type"] != "expref":
                        visit(child)

    visit(ast)
    return out


def string_tests(ast: dict) -> list[tuple[str, str]]:
    """``(field path, text)`` for each test of a field against a text in a condition
    (``type == 'x'``, ``'x' == type``, ``contains(['x', 'y'], type)``), through ``&&``,
    ``||`` and ``!``."""
    from mapc.expressions.paths import plain_path, string_test

    kind = ast["type"]
    if kind in ("and_expression", "or_expression", "not_expression"):
        return [t for child in ast["children"] for t in string_tests(child)]
    test = string_test(ast)
    if test is not None:
        return [(render(test[0]), test[1])]
    if kind == "function_expression" and ast["value"] == "contains" and len(ast["children"]) == 2:
        options, subject = ast["children"]
        names = plain_path(subject)
        if names is not None and options["type"] == "literal" and isinstance(options["value"], list):
            return [(render(names), v) for v in options["value"] if isinstance(v, str)]
        if names is not None and options["type"] == "multi_select_list":
            return [(render(names), c["value"]) for c in options["children"]
                    if c["type"] == "literal" and isinstance(c["value"], str)]
    return []


def rule_tests(spec: ir.Spec) -> dict[str, dict[str, int]]:
    """The fields the event rules test against texts, and for each text the first rule
    that tests it: ``{"type": {"message": 0, "tool": 1}}``."""
    out: dict[str, dict[str, int]] = {}
    for i, rule in enumerate(spec.events.rules):
        if rule.when is None:
            continue
        for path, text in string_tests(rule.when.compiled.ast):
            if not path.startswith("$"):
                out.setdefault(path, {}).setdefault(text, i)
    return out


def _value_or_none(v):
    """A signal's or artifact's `event_id` as a value (the keyword `last` reads nothing)."""
    return None if isinstance(v, str) else v
