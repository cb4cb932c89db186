"""Variants of a library format's real fixture, each with the verdict `mapc drift` must give.

For a spec, its first fixture is mapped with the spec's own rule selection (mapc.tools.observe);
the elements each rule takes are found again in the parsed fixture (by their JSON text),
and edited in place there, so an edit reaches exactly the elements of one rule. The
variants, and why each verdict is the right one:

- ``unchanged``: the fixture itself -> ``none``.
- ``rename`` / ``remove``: a field one rule maps, held by every element that rule takes in
  every fixture, renamed (``<name>_v2``) or deleted in those elements; ``retype``: such a
  field's value turned into another JSON type (a text into an object, a number or a
  boolean into a text). The verdict comes from the mapping itself, not from drift: the
  variant's records are compared with the fixture's; if they differ, ``breaking`` (what
  the rule maps changed), else ``additive`` (a change the spec's expressions absorb, as
  ``to_string(id)`` does a number that became a text).
- ``new-field``: a field no element has, added to the elements of the rule that takes the
  most (and of a rule without ``when``, a catch-all, when there is one) -> ``additive``.
- ``new-type``: an element of a rule that tests a field against a text, copied beside it
  with a value of that field no fixture has -> ``additive`` (a new event type).
- ``renamed-type``: that field's value changed on every element of that value -> ``breaking``
  (the rule for the old value takes nothing; the elements go elsewhere).
- ``alternative``: a field a rule reads as one of several alternatives (``a || b``) renamed
  to the alternative, which none of its elements holds -> ``none`` (the rule maps the same).

A variant a format cannot have (no rule tests a text, no alternative) is left out and
named in :attr:`Variants.missing`, with the reason.
"""

from __future__ import annotations

import copy
import csv
import io
import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from mapc.core.fieldpath import segments
from mapc.tools.observe import NO_RULE, Observer
from mapc.analysis.profile import profile_elements
from mapc.analysis.reads import rule_reads, rule_tests
from mapc.spectest.execute import Executor

NEW_FIELD = "drift_probe_field"
NEW_VALUE = "drift_probe_type"


@dataclass
class Variant:
    name: str
    verdict: str  # none | additive | breaking
    text: str  # the variant trace
    what: str  # the edit, for a failure message


@dataclass
class Variants:
    spec: Path
    fixture: Path
    items: list[Variant] = field(default_factory=list)
    missing: dict[str, str] = field(default_factory=dict)  # variant -> why this format has none


def _key(value) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


class _Trace:
    """The fixture parsed, with the nodes each rule takes found in it."""

    def __init__(self, path: Path, container: str, taken: dict):
        self.container = container
        text = path.read_text(encoding="utf-8")
        if container == "jsonl":
            self.roots = [json.loads(line) for line in text.splitlines() if line.strip()]
        elif container == "csv":
            self.roots = list(csv.DictReader(io.StringIO(text)))
            self.header = list(self.roots[0]) if self.roots else []
        else:
            self.roots = [json.loads(text)]
        wanted = {_key(e): rule for rule, t in taken.items() for e in t.kept}
        self.nodes: dict = {}  # rule -> the objects it takes, in the parsed trace
        self.parents: dict[int, tuple[list, int]] = {}  # id(node) -> (its list, index)
        if container == "csv":  # rows are typed by the spec: a rule that takes every row takes these
            self.nodes = {rule: list(self.roots) for rule, t in taken.items()
                          if t.count == len(self.roots) and rule is not NO_RULE}
            return
        self._find(self.roots, wanted, None, 0)

    def _find(self, node, wanted, parent, index) -> None:
        if isinstance(node, (dict, list)):
            rule = wanted.get(_key(node), "no")
            if rule != "no":
                self.nodes.setdefault(rule, []).append(node)
                if parent is not None:
                    self.parents[id(node)] = (parent, index)
            children = node.values() if isinstance(node, dict) else node
            for i, child in enumerate(children):
                self._find(child, wanted, node if isinstance(node, list) else None, i)

    def text(self) -> str:
        if self.container == "jsonl":
            return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in self.roots)
        if self.container == "csv":
            out = io.StringIO()
            header = list(dict.fromkeys(k for r in self.roots for k in r))
            writer = csv.DictWriter(out, fieldnames=header, lineterminator="\n")
            writer.writeheader()
            writer.writerows(self.roots)
            return out.getvalue()
        return json.dumps(self.roots[0], ensure_ascii=False)


def _edit(node, segs: tuple, fn) -> bool:
    """Apply ``fn(obj, key)`` to the member at ``segs`` of ``node``; whether it was there."""
    if not isinstance(node, dict) or not segs or segs[0] not in node:
        return False
    if len(segs) == 1:
        fn(node, segs[0])
        return True
    return _edit(node[segs[0]], segs[1:], fn)


def _rename(to: str):
    def fn(obj, key):
        obj[to] = obj.pop(key)
    return fn


def _retype(obj, key) -> None:
    v = obj[key]
    obj[key] = {"value": v} if isinstance(v, str) else str(v).lower() if isinstance(v, bool) else str(v)


def derive(spec_path: Path) -> Variants:
    """The variants of ``spec_path``'s first fixture."""
    from mapc.pipeline.build import load_checked

    spec, diags = load_checked(spec_path, None)
    assert spec is not None, [d.format() for d in diags]
    fixture = Path(spec.fixtures[0].resolved)
    out = Variants(spec_path, fixture)
    observer = Observer(spec)
    executor = Executor(spec)
    every = [observer.observe(Path(f.resolved)) for f in spec.fixtures]
    records = _records(executor, fixture.read_text(encoding="utf-8"), fixture.name)

    def effect(text: str) -> str:
        """The verdict of a change to a field the spec maps: does the mapping change?"""
        return "breaking" if _records(executor, text, fixture.name) != records else "additive"

    first = every[0]
    container = spec.source.container
    reads = rule_reads(spec)

    def fresh() -> _Trace:
        return _Trace(fixture, container, first.rules)

    out.items.append(Variant("unchanged", "none", fixture.read_text(encoding="utf-8"), "the fixture itself"))
    held = _held_by_every_element(every, reads)
    field_choice = _field_to_edit(held, reads, fresh())
    if field_choice is None:
        out.missing.update(dict.fromkeys(("rename", "remove", "retype"),
                                         "no field a rule maps is held by every element it takes"))
    else:
        rule, path, scalar = field_choice
        segs = segments(path)
        for name, fn in (("rename", _rename(segs[-1] + "_v2")), ("remove", lambda o, k: o.pop(k))):
            trace = fresh()
            assert _apply(trace, rule, segs, fn), (name, path)
            text = trace.text()
            out.items.append(Variant(name, effect(text), text, f"{name} {path} in the elements of rule {rule}"))
        retype = scalar or _field_to_edit(held, reads, fresh(), scalar_only=True)
        if retype is None:
            out.missing["retype"] = "no scalar field a rule maps is held by every element it takes"
        else:
            rule_t, path_t = (rule, path) if scalar else retype[:2]
            trace = fresh()
            assert _apply(trace, rule_t, segments(path_t), _retype), ("retype", path_t)
            if len(trace.nodes.get(rule_t, ())) < len(first.taken(rule_t).kept):
                # elements merged from several lines (`merge`) are not lines of the file: only the
                # one-line ones were found and retyped, so the field would have two types, not a new one
                out.missing["retype"] = f"rule {rule_t}'s elements are merged from several lines"
            else:
                text = trace.text()
                out.items.append(Variant("retype", effect(text), text, f"retype {path_t} in rule {rule_t}"))
    out.items += _new_fields(fresh, first, spec)
    out.items += _types(fresh, first, spec, out, lambda text: _observed(observer, text, fixture.name))
    alt = _alternative(first, reads, fresh())
    if alt is None:
        out.missing["alternative"] = "no rule reads a field as one of several alternatives held this way"
    else:
        rule, path, to = alt
        trace = fresh()
        assert sum(_move(n, segments(path), segments(to)) for n in trace.nodes[rule]), ("alternative", path)
        out.items.append(Variant("alternative", "none", trace.text(), f"rename {path} to its alternative {to}"))
    return out


def _records(executor: Executor, text: str, name: str) -> list:
    """The records the spec maps a trace with ``text`` to (where in the file left out)."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder, name)
        path.write_text(text, encoding="utf-8")
        run = executor.map(path)
    return [{k: v for k, v in r.items() if k != "source"} for r in run.records] + [run.error]


def _apply(trace: _Trace, rule, segs, fn) -> int:
    return sum(_edit(node, segs, fn) for node in trace.nodes.get(rule, ()))


def _held_by_every_element(every, reads) -> list[tuple[int, str, bool]]:
    """(rule, path, scalar) of mapped reads without alternatives that every element the rule
    takes in every fixture holds."""
    out = []
    for r in reads:
        if not r.mapped or r.alternatives or not r.path or "[]" in r.path or "*" in r.path:
            continue
        kept = [e for o in every for e in o.taken(r.rule).kept]
        if not kept or not all(isinstance(e, dict) for e in kept):
            continue
        prof = profile_elements(kept)
        shape = prof.fields.get(r.path)
        if shape is None or shape.present != prof.records:
            continue
        scalar = set(shape.types) <= {"string", "number", "boolean"} and len(shape.types) == 1
        out.append((r.rule, r.path, scalar))
    return sorted(set(out))


def _field_to_edit(held, reads, trace: _Trace, scalar_only: bool = False):
    for rule, path, scalar in held:
        if scalar_only and not scalar:
            continue
        if trace.nodes.get(rule):
            return rule, path, scalar
    return None


def _new_fields(fresh, first, spec) -> list[Variant]:
    out = []
    sizes = sorted(((t.count, r) for r, t in first.rules.items() if r is not NO_RULE), reverse=True)
    rules = [r for _, r in sizes[:1]]
    catch_all = [i for i, rule in enumerate(spec.events.rules) if rule.when is None and not rule.skip
                 and first.taken(i).count]
    rules += [r for r in catch_all if r not in rules]
    for rule in rules:
        trace = fresh()
        nodes = [n for n in trace.nodes.get(rule, ()) if isinstance(n, dict)]
        if not nodes:
            continue
        for n in nodes:
            n[NEW_FIELD] = "a value no fixture has"
        name = "new-field" if rule == rules[0] else "new-field-catch-all"
        out.append(Variant(name, "additive", trace.text(), f"add {NEW_FIELD} to the elements of rule {rule}"))
    return out


def _observed(observer: Observer, text: str, name: str):
    """The spec's observation of a trace with ``text``."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder, name)
        path.write_text(text, encoding="utf-8")
        return observer.observe(path)


def _types(fresh, first, spec, variants: Variants, observed) -> list[Variant]:
    """A new value of a field the rules test (a copied element), and a renamed one."""
    before = sum(t.count for t in first.rules.values())
    computed = False
    for path, values in sorted(rule_tests(spec).items()):
        for value, rule in sorted(values.items(), key=lambda kv: kv[1]):
            if spec.events.rules[rule].skip:
                continue
            segs = segments(path)
            new_type = _new_type(fresh, rule, segs, value, before, observed)
            if new_type is None:
                computed = True  # the loop computes its elements (`merge_by`, `map(&get(...))`)
                continue
            # the value renamed on every element that holds it
            trace = fresh()
            for n in trace.nodes.get(rule, ()):
                if _get(n, segs) == value:
                    _edit(n, segs, lambda o, k: o.__setitem__(k, value + "_v2"))
            renamed = Variant("renamed-type", "breaking", trace.text(), f"{path} {value!r} -> {value + '_v2'!r}")
            left = [e for t in observed(renamed.text).rules.values() for e in t.kept if _get(e, segs) == value]
            assert not left, f"{len(left)} element(s) still hold {path} == {value!r}"
            return [new_type, renamed]
    variants.missing["new-type"] = variants.missing["renamed-type"] = (
        "the events loop computes its elements: a copied element is not one of them" if computed
        else "no rule that maps elements tests a field against a text")
    return []


def _new_type(fresh, rule, segs, value, before, observed) -> Variant | None:
    """One element of ``rule`` copied beside itself with ``segs`` set to a value no fixture
    has (its ``id`` changed too, for a loop that merges elements by id), if one such copy
    is one more element for the events loop."""
    for k in range(5):
        for new_id in (False, True):
            trace = fresh()
            nodes = [n for n in trace.nodes.get(rule, ()) if _get(n, segs) == value and id(n) in trace.parents]
            if len(nodes) <= k or trace.parents[id(nodes[k])][0] is trace.roots and trace.container != "jsonl":
                return None  # not an element of an array (the document itself): nowhere to add one
            twin = copy.deepcopy(nodes[k])
            _edit(twin, segs, lambda o, key: o.__setitem__(key, NEW_VALUE))
            if new_id and isinstance(twin.get("id"), str):
                twin["id"] += "-" + NEW_VALUE
            parent, index = trace.parents[id(nodes[k])]
            parent.insert(index + 1, twin)
            if sum(t.count for t in observed(trace.text()).rules.values()) == before + 1:
                return Variant("new-type", "additive", trace.text(), f"copy an element of rule {rule} with "
                               f"{'.'.join(segs)} == {NEW_VALUE!r}")
    return None


def _get(node, segs):
    for key in segs:
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    return node


def _alternative(first, reads, trace: _Trace):
    """(rule, path, alternative): a field every element of a rule holds, mapped as one of
    several alternatives (``a || b``) none of those elements holds."""
    for r in reads:
        if r.where.endswith(".when") or not r.alternatives or not _plain(r.path):
            continue
        nodes = [n for n in trace.nodes.get(r.rule, ()) if isinstance(n, dict)]
        for alt in sorted(r.alternatives):
            if _plain(alt) and nodes and all(_get(n, segments(r.path)) is not None
                                             and _get(n, segments(alt)) is None for n in nodes):
                return r.rule, r.path, alt
    return None


def _plain(path: str) -> bool:
    return bool(path) and "[]" not in segments(path) and "*" not in segments(path)


def _move(node, frm: tuple, to: tuple) -> bool:
    """Move the value at ``frm`` to ``to`` (objects on the way made as needed)."""
    value = _get(node, frm)
    if value is None or not _edit(node, frm, lambda o, k: o.pop(k)):
        return False
    for key in to[:-1]:
        node = node.setdefault(key, {})
    node[to[-1]] = value
    return True
