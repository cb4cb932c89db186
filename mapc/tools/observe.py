"""What a spec does with one trace, rule by rule: the elements each event rule takes, and
what the records of each spec node hold.

``mapc drift`` compares this between a spec's fixtures and a new sample. The trace is
mapped by the program ``mapc run`` runs (same records, same errors). Its events level is
watched as it runs: before each call, the spec's own loops, ``where``, ``let`` and rule
tests are evaluated on the same elements with the same scope (the compiled expressions,
the runtime's truthiness), so each element is filed under the first rule whose ``when``
holds, or under ``None`` when none does (the element maps to nothing). Records are
attributed to the spec node that emitted them (:class:`mapc.spectest.origins.Origins`, as
``mapc test`` does) and only counted: per node, how many records hold each field.

Elements are kept (for profiling) up to :data:`MAX_KEPT` per rule; counts go on.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from mapc.runtime.jmespath_rt import jp_truthy as truthy
from mapc.runtime.mapping_rt import json_type
from mapc.spec import ir

MAX_KEPT = 2000  # elements kept per rule and trace
_PROGRAM = "mapc_observe"
_FILE = f"<{_PROGRAM}>"
#: an id the runtime made up (``evt@L3.1``, ``traj@x.jsonl``): not the source's own
_DEFAULT_ID = re.compile(r"^(?:evt|traj|case|group|run)@")
#: record members that are links and bookkeeping, not mapped content
_LINKS = frozenset({"record_type", "id", "run_id", "case_id", "group_id", "trajectory_id", "event_id",
                    "sequence", "source"})
NO_RULE = None  # the key of elements no rule takes


@dataclass
class Taken:
    """The elements one rule took (or that no rule took), and the scope each was taken in."""

    count: int = 0
    kept: list = field(default_factory=list)
    scopes: list = field(default_factory=list)


@dataclass
class Output:
    """The records one spec node emitted: how many, and how many hold each field (a member
    that is not null, ``""``, ``[]`` or ``{}``; members of objects one level down, signals and
    artifacts as ``signal:NAME`` / ``artifact:NAME``, a native id as ``id``)."""

    count: int = 0
    fields: dict[str, int] = field(default_factory=dict)
    types: dict[str, set] = field(default_factory=dict)  # field -> the JSON types of its values

    def add(self, name: str, value=None) -> None:
        self.fields[name] = self.fields.get(name, 0) + 1
        if value is not None:
            self.types.setdefault(name, set()).add(json_type(value))


@dataclass
class Observation:
    trace: str
    error: str | None = None
    rules: dict[int | None, Taken] = field(default_factory=dict)
    outputs: dict[str, Output] = field(default_factory=dict)
    #: a rule test could not be evaluated (the mapping itself fails there too)
    selection_error: str | None = None
    #: the sibling files (``source.siblings``) found beside the trace
    siblings: set[str] = field(default_factory=set)

    def taken(self, rule: int | None) -> Taken:
        return self.rules.get(rule) or Taken()


class Observer:
    """One spec's mapping program, compiled once, observing trace after trace."""

    def __init__(self, spec: ir.Spec):
        from mapc.pipeline.build import mapping_source
        from mapc.codegen.program import IN_PROCESS, load_module
        from mapc.spectest.origins import Origins
        from mapc.analysis.streaming import stream_plan

        self.spec = spec
        plan = stream_plan(spec).plan
        self.stream = plan if plan is not None and plan.level == "events" else None
        text = mapping_source(spec)
        self.ns = load_module(text, _PROGRAM, IN_PROCESS)  # mapc's runtime modules, as `mapc run`
        self.origins = Origins(text)
        self._current: Observation | None = None
        original = self.ns["level_events"]

        def level_events(st, emit, cur, scope, *rest):
            self._select(st, cur, scope)
            return original(st, emit, cur, scope, *rest)

        self.ns["level_events"] = level_events

    def observe(self, trace: str | Path) -> Observation:
        """Map ``trace``; a failure is the observation's one-line ``error``."""
        ns = self.ns
        obs = self._current = Observation(str(trace))
        self._ordinals: dict[str, int] = {}
        owners: dict[str, str] = {}  # event id -> the rule that emitted it (for its signals)
        getframe = sys._getframe

        def emit(record):
            frame = getframe(1)
            while frame.f_code.co_filename != _FILE and frame.f_back is not None:
                frame = frame.f_back
            self._count(obs, record, frame.f_code.co_name, frame.f_lineno, owners)

        st = ns["MapState"]()
        try:
            src = ns["SourceFile"](str(trace), None, ns["MAX_BYTES"], ns["MAX_LINE_BYTES"])
            ns["map_source"](src, st, emit)
            quiet = ns["MapState"]()
            obs.siblings = {name for name, names in self.spec.source.siblings
                            if src.sibling(quiet, names) is not None}
        except Exception as exc:  # the one line an adapter would print
            obs.error = ns["one_line"](exc)
        self._current = None
        return obs

    # -- records ------------------------------------------------------------------------------
    def _count(self, obs: Observation, rec: dict, function: str, line: int, owners: dict) -> None:
        kind = rec.get("record_type")
        if kind == "event":
            node = self.origins.of("event", function, line) or "records.events"
            owners[rec.get("id")] = node
        elif kind in ("signal", "artifact"):
            owner = owners.get(rec.get("event_id")) if rec.get("event_id") else "records.trajectory"
            out = obs.outputs.setdefault(owner or "records.events", Output())
            out.add(f"{kind}:{rec.get('name')}", rec.get("value"))
            return
        else:
            node = f"records.{kind}"
        out = obs.outputs.setdefault(node, Output())
        out.count += 1
        if isinstance(rec.get("id"), str) and not _DEFAULT_ID.match(rec["id"]):
            out.add("id")
        for key, value in rec.items():
            if key in _LINKS or not _has(value):
                continue
            out.add(key, value)
            if isinstance(value, dict):
                for sub, inner in value.items():
                    if _has(inner):
                        out.add(f"{key}.{sub}", inner)

    # -- rule selection -----------------------------------------------------------------------
    def _select(self, st, cur, scope) -> None:
        obs = self._current
        if obs is None or obs.selection_error:
            return
        try:
            for rule, element, s in self._elements(st, cur, scope):
                taken = obs.rules.setdefault(rule, Taken())
                taken.count += 1
                if len(taken.kept) < MAX_KEPT:
                    taken.kept.append(element)
                    taken.scopes.append(dict(s))
        except Exception as exc:  # the mapping fails on it too, and says where
            obs.selection_error = f"{type(exc).__name__}: {exc}"

    def _elements(self, st, cur, scope):
        """``(rule index or None, element, scope)`` for each element of one ``level_events`` call."""
        spec, ns = self.spec, self.ns
        ev = spec.events
        loops = list(ev.scope.loops)
        s = dict(scope)
        if spec.source.streams_lines and spec.line_level == "events" and loops:
            first = loops.pop(0)
            quiet = ns["MapState"]()  # the lines are read again: their warnings are not counted twice
            invalid = ns.get("INVALID_LINES", "error")
            if spec.source.container == "csv":
                rows = ns["csv_rows"](st.src, quiet, ns["CSV_COLUMNS"], ns["CSV_DELIMITER"], invalid)
            else:
                rows = st.src.lines(quiet, invalid)
            for index, (_, line, srcloc) in enumerate(rows):
                s["index"] = index
                if first.as_name:
                    s[first.as_name], s[first.as_name + "_index"] = line, index
                s["root"], s["source"] = line, {**st.src.info, **srcloc}
                yield from self._take(loops, line, s)
        elif self.stream is not None and _streamed(cur):
            # a large document streams its array to the mapping, once: its elements are read
            # again here by a reader of their own, one at a time, as the mapping reads them
            plan = self.stream
            again = st.src.streamed_document(ns["MapState"](), plan.key, plan.needed)
            for i, item in enumerate(ns["streamed_elements"](again, plan.key, plan.mode) or ()):
                _bind(loops[0], s, i, item)
                yield from self._take(loops[1:], item, s)
        else:
            yield from self._take(loops, cur, s)

    def _take(self, loops, el, s):
        if loops:
            loop, rest = loops[0], loops[1:]
            value = loop.each.compiled.evaluate(el, s)
            for i, item in enumerate(value if isinstance(value, list) else ()):
                _bind(loop, s, i, item)
                yield from self._take(rest, item, s)
            return
        scope = self.spec.events.scope
        if scope.where is not None and not truthy(scope.where.compiled.evaluate(el, s)):
            return
        for name, v in scope.lets:
            s[name] = value_of(v, el, s)
        if scope.ordinal_by is not None:  # as MapState.ordinal counts, per value of the key
            key = json.dumps(scope.ordinal_by.compiled.evaluate(el, s), sort_keys=True)
            s["ordinal"] = self._ordinals.get(key, 0)
            self._ordinals[key] = s["ordinal"] + 1
        for i, rule in enumerate(self.spec.events.rules):
            if rule.when is None or truthy(rule.when.compiled.evaluate(el, s)):
                yield i, el, s
                return
        yield NO_RULE, el, s


def _bind(loop, s: dict, index: int, item) -> None:
    """The variables a loop sets for one element, as the generated code sets them."""
    s["index"] = index
    if loop.as_name:
        s[loop.as_name], s[loop.as_name + "_index"] = item, index


def _streamed(value) -> bool:
    """Whether ``value`` (a document) holds an array the runtime streams (``StreamedArray``)."""
    return isinstance(value, dict) and any(type(v).__name__ == "StreamedArray" for v in value.values())


def value_of(v, el, s):
    """A spec value (expression, literal, object or array template) on element ``el``."""
    if isinstance(v, ir.Expr):
        return v.compiled.evaluate(el, s)
    if isinstance(v, ir.Literal):
        return v.value
    if isinstance(v, ir.ObjectTemplate):
        out = {}
        for k, item in v.items:
            value = value_of(item, el, s)
            if value is not None or k in v.keep:
                out[k] = value
        return out
    if isinstance(v, ir.ArrayTemplate):
        return [value_of(item, el, s) for item in v.items]
    return None


def _has(value) -> bool:
    return value is not None and value != "" and value != [] and value != {}


def observe(spec: ir.Spec, traces) -> list[Observation]:
    """One :class:`Observation` per trace, in order."""
    observer = Observer(spec)
    return [observer.observe(t) for t in traces]
