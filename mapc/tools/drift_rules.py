"""``mapc drift`` rule by rule: the elements each event rule takes, and what it maps them to.

For each rule, the elements it takes in the fixtures and in the new sample
(:mod:`mapc.tools.observe`) are profiled (:func:`mapc.analysis.profile.profile_elements`) and the
fields the rule reads from them (:func:`mapc.analysis.reads.rule_reads`) compared: a field the
fixtures' elements held and the new ones do not is *missing* (breaking) unless an
alternative the rule reads holds (``a || b``), or its absence could be chance (an
optional field, rare in the fixtures, in a small sample); a rename is suggested only
when a field appeared in the same rule's elements with the same type and similar values.
Fields the new elements hold that the fixtures' did not are *new* (additive), also when
the rule maps a parent of theirs whole. The values of the fields the rules test
(``type == 'x'``) are compared: a new value is a new event type, reported with the rule
that now takes it; a value gone while one with the same fields appeared is a rename
(breaking). What the rules' records hold is :mod:`mapc.tools.drift_outputs`'s; when an absence is
chance and when a field is a rename, :mod:`mapc.analysis.drift_evidence`'s.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from mapc.analysis.drift_evidence import SIMILAR_FIELDS, present, rename_of, significant, types_at
from mapc.core.fieldpath import render, segments, within
from mapc.tools.observe import NO_RULE, Observation
from mapc.analysis.profile import Profile, profile_elements
from mapc.analysis.reads import RuleRead
from mapc.runtime.mapping_rt import json_type

#: Distinct values a tested field may have in the fixtures and still be a kind of element (a
#: session log has a dozen event types or more: Copilot CLI 14); past it, free text.
MAX_KINDS = 64


@dataclass(frozen=True)
class Finding:
    kind: str  # missing | not_seen | alternative | type_changed | type_added | new_field | new_value
    #          | value_renamed | unmatched | blanked | thinned | no_output | never_seen
    severity: str  # breaking | additive | note
    place: str  # the spec node it is about (records.events.rules[2]) or "source"
    path: str  # the field (relative to the rule's elements, or to a record)
    message: str
    read_by: tuple[str, ...] = ()
    renamed_to: str | None = None

    @property
    def breaking(self) -> bool:
        return self.severity == "breaking"


@dataclass
class RuleSummary:
    place: str  # records.events.rules[2], or "no rule" for the elements no rule takes
    test: str  # its `when`, or what it takes without one
    kinds: tuple[str, ...]
    fixtures: int  # elements the fixtures' mapping gave it
    sample: int  # elements the new sample's mapping gave it

    def to_dict(self) -> dict:
        return {"rule": self.place, "takes": self.test, "kinds": list(self.kinds),
                "elements": {"fixtures": self.fixtures, "sample": self.sample}}


def rule_place(index: int | None, spec=None) -> str:
    """The spec path of rule ``index`` (``records.events`` for the one rule of a spec without
    ``rules``), or "no rule"."""
    if index is NO_RULE:
        return "no rule"
    if spec is not None:
        from mapc.core.diagnostics import format_path

        return format_path(spec.events.rules[index].path)
    return f"records.events.rules[{index}]"


# -- rule by rule ---------------------------------------------------------------------------
@dataclass
class _Rule:
    index: int
    place: str
    reads: dict[str, list[RuleRead]] = field(default_factory=dict)
    base: Profile | None = None
    new: Profile | None = None
    base_n: int = 0  # the elements it took, all of them (the profiles hold the first MAX_KEPT)
    new_n: int = 0
    #: the elements kept, with the scope each was taken in: (elements, scopes)
    base_kept: tuple = ((), ())
    new_kept: tuple = ((), ())


def compare_rules(spec, fixtures: list[Observation], sample: Observation, reads: list[RuleRead],
                  tests: dict[str, dict[str, int]]) -> tuple[list[Finding], list[RuleSummary], list[_Rule]]:
    """Findings, per-rule element counts and the rules' profiles; ``tests``: the fields rules
    test, each value's rule."""
    findings: list[Finding] = []
    summaries: list[RuleSummary] = []
    baseline = bool(fixtures)
    rules = [_Rule(i, rule_place(i, spec)) for i in range(len(spec.events.rules))]
    for r in reads:
        rules[r.rule].reads.setdefault(r.path, []).append(r)
    for rule, ir_rule in zip(rules, spec.events.rules):
        base_el = [e for o in fixtures for e in o.taken(rule.index).kept]
        rule.base_n = sum(o.taken(rule.index).count for o in fixtures)
        rule.new_n = sample.taken(rule.index).count
        summaries.append(RuleSummary(rule.place, _test_text(ir_rule, len(rules) == 1),
                                     tuple(t.kind for t in ir_rule.emits), rule.base_n, rule.new_n))
        rule.base = profile_elements(base_el) if base_el else None
        if rule.new_n == 0:
            continue
        rule.base_kept = (base_el, [s for o in fixtures for s in o.taken(rule.index).scopes])
        rule.new_kept = (sample.taken(rule.index).kept, sample.taken(rule.index).scopes)
        rule.base = rule.base or profile_elements(())
        rule.new = profile_elements(rule.new_kept[0])
        findings += _rule_fields(rule, baseline)
    base_none = sum(o.taken(NO_RULE).count for o in fixtures)
    summaries.append(RuleSummary("no rule", "elements no rule takes (they map to nothing)", (),
                                 base_none, sample.taken(NO_RULE).count))
    if baseline:
        findings += _values(spec, fixtures, sample, tests)
        findings += _moved(spec, rules, fixtures, sample)
        findings += _gone_rules(spec, rules, fixtures, sample, findings)
    return findings, summaries, rules


def held_by_absent_rules(path: str, rules: list[_Rule]) -> str | None:
    """When the elements that hold ``path`` (relative to an element) in the fixtures belong
    to rules that take nothing in the new sample: which rules (the absence is explained)."""
    holders = [r for r in rules if r.base is not None and present(r.base, path)]
    if holders and not any(r.new_n for r in holders):
        return ", ".join(r.place for r in holders)
    return None


def _test_text(rule, alone: bool = False) -> str:
    if alone and rule.when is None:
        return "every element"
    if rule.when is not None:
        return f"when {rule.when.text}" + (", skipped" if rule.skip else "")
    return "every element no rule before it takes" + (", skipped" if rule.skip else "")


def _rule_fields(rule: _Rule, baseline: bool) -> list[Finding]:
    out: list[Finding] = []
    place = rule.place
    used: set[str] = set()
    for path, reads in sorted(rule.reads.items()):
        where = tuple(sorted({r.where for r in reads}))
        now = present(rule.new, path)
        before = present(rule.base, path) if baseline else None
        alternatives = frozenset.intersection(*(r.alternatives for r in reads))
        if now == 0:
            held = [a for a in sorted(alternatives) if present(rule.new, a)]
            if not baseline:
                out += _missing_without_baseline(rule, path, where, held, any(r.mapped for r in reads))
            elif before == 0:
                if not any(present(rule.base, a) for a in alternatives) and not held:
                    out.append(Finding("never_seen", "note", place, path or "@", "neither the fixtures' elements "
                                       "of this rule nor the new sample's have it (an optional field, or a typo)",
                                       where))
            elif held and _keeps_kind(reads, rule):
                out.append(Finding("alternative", "note", place, path, f"the new sample's elements have "
                                   f"{held[0]} instead, which the rule reads as its alternative, and what it maps "
                                   f"keeps its kind ({now} of {rule.new.records} hold {path}, the fixtures' "
                                   f"{before} of {rule.base.records})", where))
            elif held:
                out.append(Finding("missing", "breaking", place, path, f"the new sample's elements have {held[0]} "
                                   f"instead, which the rule reads as its alternative, but what it maps changed "
                                   f"kind or is gone ({now} of {rule.new.records} hold {path}, the fixtures' "
                                   f"{before} of {rule.base.records})", where))
            else:
                renamed = rename_of(path, rule.base, rule.new, exclude=rule.reads)
                counts = (f"the fixtures' elements of this rule held it ({before} of {rule.base.records}), "
                          f"none of the new sample's {rule.new.records} does")
                if not renamed and all(r.guarded for r in reads):
                    out.append(Finding("not_seen", "note", place, path, counts + "; it is read only where a `when` "
                                       "holds, which expects it may be absent", where))
                elif renamed or significant(before, rule.base.records, rule.new.records):
                    used.add(renamed or "")
                    hint = f"; renamed to {renamed}? (it appeared, same type, similar values)" if renamed else ""
                    out.append(Finding("missing", "breaking", place, path, counts + hint, where, renamed))
                else:
                    out.append(Finding("not_seen", "note", place, path, counts + ": an optional field, absent "
                                       "by chance in a small sample, or removed", where))
            continue
        if not baseline or not before:
            continue
        old, new = types_at(rule.base, path), types_at(rule.new, path)
        if old and new and old.isdisjoint(new):
            was = f"was {'/'.join(sorted(old))}, is now {'/'.join(sorted(new))}"
            if _keeps_kind(reads, rule):
                out.append(Finding("type_changed", "additive", place, path, f"{was}; what the rule maps from it "
                                   "keeps its kind (its expressions take either)", where))
            else:
                out.append(Finding("type_changed", "breaking", place, path, was, where))
        elif old and new - old:
            out.append(Finding("type_added", "additive", place, path,
                               f"now also {'/'.join(sorted(new - old))} (was {'/'.join(sorted(old))})", where))
    if baseline and rule.base_n:
        out += _new_fields(rule, place, used)
    elif not baseline:
        out += _unread_fields(rule)
    return out


def _unread_fields(rule: _Rule) -> list[Finding]:
    """No fixtures: the fields of the rule's elements that it does not read (nor maps whole)."""
    reads = [(segments(p), any(r.whole for r in rs)) for p, rs in rule.reads.items()]

    def covered(path: str) -> bool:
        segs = segments(path)
        return any(segs == r[:len(segs)] or whole and segs[:len(r)] == r for r, whole in reads)

    unread = {p for p, s in rule.new.fields.items() if p and s.present and not covered(p)}
    return [Finding("unmapped", "note", rule.place, p, f"the rule does not read it "
                    f"({'/'.join(sorted(rule.new.fields[p].types))})")
            for p in sorted(unread) if render(segments(p)[:-1]) not in unread]


@dataclass
class _Values:
    """What an expression gives on some elements: the values that hold something (not
    null, ``""``, ``[]`` or ``{}``), the JSON types of all that are not null, failures."""

    count: int = 0
    errors: int = 0
    types: set = field(default_factory=set)
    held: list = field(default_factory=list)


def _values_of(expr, kept) -> _Values:
    out = _Values()
    for element, scope in zip(*kept):
        out.count += 1
        try:
            value = expr.compiled.evaluate(element, scope)
        except Exception:  # noqa: BLE001 - the mapping fails on it too; counted, not raised
            out.errors += 1
            continue
        if value is not None:
            out.types.add(json_type(value))
            if value not in ("", [], {}):
                out.held.append(value)
    return out


def _keeps_kind(reads, rule: _Rule) -> bool:
    """Whether every expression that maps the field (tests aside) gives what it gave on the
    fixtures' elements, in kind: values still there, of a JSON type they had, and inside
    them (objects, arrays) the members every value had, of the types they had; no new
    failure."""
    for r in reads:
        if r.expr is None or r.where.endswith(".when"):
            continue
        before, after = _values_of(r.expr, rule.base_kept), _values_of(r.expr, rule.new_kept)
        if after.errors and not before.errors or before.types and after.types and before.types.isdisjoint(after.types):
            return False
        if before.held and not after.held and significant(len(before.held), before.count, after.count):
            return False
        if before.held and after.held and not _same_members(profile_elements(before.held),
                                                            profile_elements(after.held)):
            return False
    return True


def _same_members(before: Profile, after: Profile) -> bool:
    """No member every value had before is gone from all values now, none changed type."""
    for path, shape in before.fields.items():
        now = after.fields.get(path)
        if shape.present == before.records and not (now and now.present) \
                and significant(shape.present, before.records, after.records):
            return False
        old, new = set(shape.types) - {"null"}, set(now.types) - {"null"} if now else set()
        if old and new and old.isdisjoint(new):
            return False
    return True


def _missing_without_baseline(rule: _Rule, path, where, held, mapped) -> list[Finding]:
    """No fixtures: a mapped field is missing when the object that would hold it is there."""
    place = rule.place
    if held or not mapped:
        return []
    up = render(segments(path)[:-1])
    holder = present(rule.new, up) if up else rule.new_n
    if holder and (not up or "object" in types_at(rule.new, up)):
        return [Finding("missing", "breaking", place, path, f"none of the new sample's {rule.new_n} elements of "
                        "this rule has it (no fixtures to compare with)", where)]
    return [Finding("not_seen", "note", place, path, f"none of the new sample's {rule.new_n} elements of this "
                    "rule has it (no fixtures to compare with)", where)]


def _new_fields(rule: _Rule, place: str, used: set[str]) -> list[Finding]:
    known = {segments(p) for p in rule.base.fields}
    fresh = {p for p, s in rule.new.fields.items() if s.present and segments(p) not in known}
    top = sorted(p for p in fresh if render(segments(p)[:-1]) not in fresh or not p)
    wholes = sorted({(p, r.where) for p, rs in rule.reads.items() for r in rs if r.whole})
    out = []
    for p in top:
        if p in used or p in rule.reads:
            continue
        shape = rule.new.fields[p]
        carried = next((w for q, w in wholes if within(p, q) or q == ""), None)
        how = f"carried along whole by {carried}, read by nothing else" if carried else "the rule does not read it"
        out.append(Finding("new_field", "additive", place, p, f"new in {shape.present} of the new sample's "
                           f"{rule.new.records} elements of this rule ({'/'.join(sorted(shape.types))}); {how}"))
    return out


# -- the values rules test -----------------------------------------------------------------------
def _value(element, path: str):
    value = element
    for key in segments(path):
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def _values(spec, fixtures: list[Observation], sample: Observation,
            tests: dict[str, dict[str, int]]) -> list[Finding]:
    """New values of the fields the rules test (``type == 'x'``), and the rule taking them."""
    out = []
    for path, tested in sorted(tests.items()):
        before: Counter = Counter()
        base_groups: dict[str, list] = {}
        for o in fixtures:
            for rule, taken in o.rules.items():
                for e in taken.kept:
                    v = _value(e, path)
                    if isinstance(v, str):
                        before[v] += 1
                        base_groups.setdefault(v, []).append(e)
        after: Counter = Counter()
        takers: dict[str, Counter] = {}
        groups: dict[str, list] = {}
        for rule, taken in sample.rules.items():
            for e in taken.kept:
                v = _value(e, path)
                if isinstance(v, str):
                    after[v] += 1
                    takers.setdefault(v, Counter())[rule] += 1
                    groups.setdefault(v, []).append(e)
        if len(before) > MAX_KINDS:
            continue  # free text more than a kind of element
        gone = [v for v in before if v not in after and v in tested]
        for value in sorted(v for v in after if v not in before):
            taker, n = takers[value].most_common(1)[0]
            test = f"{path} == {value!r}"
            if value in tested and taker == tested[value]:
                out.append(Finding("new_value", "note", rule_place(taker, spec), test, f"a value no fixture has "
                                   f"({after[value]} element(s)), taken by the rule that tests for it"))
                continue
            twin = _renamed_value(value, groups[value], gone, base_groups)
            if twin is not None and taker != tested[twin]:
                gone.remove(twin)
                old_rule = rule_place(tested[twin], spec)
                out.append(Finding("value_renamed", "breaking", old_rule, path, f"{path} {twin!r} is gone "
                                   f"({before[twin]} in the fixtures, taken by {old_rule}) and {value!r} appeared "
                                   f"({after[value]}) with the same fields, {_taken_by(spec, taker, path, tested)}: "
                                   f"renamed? the rule for {twin!r} no longer takes them", (old_rule,), value))
                continue
            out.append(Finding("new_value", "additive", rule_place(taker, spec), test,
                               f"a new value ({after[value]} element(s); the fixtures have "
                               f"{', '.join(repr(v) for v in sorted(before)[:6]) or 'none'}"
                               f"{', ...' if len(before) > 6 else ''}): "
                               f"{_taken_by(spec, taker, path, tested)}", ()))
    return out


def _renamed_value(value, elements, gone, base_groups) -> str | None:
    new = profile_elements(elements)
    fits = []
    for old in gone:
        before = profile_elements(base_groups[old])
        a, b = set(before.fields), set(new.fields)
        if a and len(a & b) >= SIMILAR_FIELDS * len(a | b):
            fits.append(old)
    return fits[0] if len(fits) == 1 else None


def _taken_by(spec, taker, path: str, tested: dict[str, int]) -> str:
    if taker is NO_RULE:
        return "no rule takes them: they map to nothing"
    rule = spec.events.rules[taker]
    kinds = "/".join(t.kind for t in rule.emits) or "nothing"
    own = sorted(v for v, i in tested.items() if i != taker)
    if rule.skip:
        return f"taken by {rule_place(taker, spec)}, which skips them"
    if rule.when is None or path not in _tested_fields(rule):
        sibling = (f"; the other values of {path} ({', '.join(map(repr, own[:4]))}{', ...' if len(own) > 4 else ''}) "
                   "have rules of their own") if own else ""
        return (f"taken by {rule_place(taker, spec)}, the rule for the elements no rule before it takes, "
                f"as {kinds}{sibling}: add a rule if they are more than that")
    return f"taken by {rule_place(taker, spec)} (when {rule.when.text}) as {kinds}"


def _tested_fields(rule) -> set[str]:
    from mapc.analysis.reads import string_tests

    return {p for p, _ in string_tests(rule.when.compiled.ast)} if rule.when is not None else set()


def _members(element) -> frozenset | None:
    """An object element's members and their JSON types."""
    if not isinstance(element, dict):
        return None
    return frozenset((k, json_type(v)) for k, v in element.items())


def _alike(a: frozenset, b: frozenset) -> float:
    return len(a & b) / len(a | b) if a | b else 1.0


def _moved(spec, rules: list[_Rule], fixtures, sample: Observation) -> list[Finding]:
    """Elements of a shape no fixture element has, most like those one rule takes in the
    fixtures but now taken by another (or none) because a field its test reads is gone or
    retyped in them: the field (breaking), with a rename when the evidence is there."""
    shapes = {r.index: {_members(e) for o in fixtures for e in o.taken(r.index).kept} - {None} for r in rules}
    shapes[NO_RULE] = {_members(e) for o in fixtures for e in o.taken(NO_RULE).kept} - {None}
    known = set().union(*shapes.values())
    groups: dict[tuple, list] = {}
    for now, taken in sample.rules.items():
        for e in taken.kept:
            s = _members(e)
            if s is None or s in known:
                continue
            like = sorted(((max(_alike(s, b) for b in bs), i) for i, bs in shapes.items()
                           if bs and i is not NO_RULE), reverse=True)
            if not like or like[0][0] < 0.5 or len(like) > 1 and like[1][0] == like[0][0] or like[0][1] == now:
                continue
            if now in shapes and shapes[now] and max(_alike(s, b) for b in shapes[now]) >= like[0][0]:
                continue
            groups.setdefault((like[0][1], now), []).append(e)
    out = []
    for (was, now), elements in sorted(groups.items(), key=lambda kv: str(kv[0])):
        rule = rules[was]
        before = profile_elements(e for o in fixtures for e in o.taken(was).kept)
        moved = profile_elements(elements)
        taker = rule_place(now, spec)
        kinds = "/".join(t.kind for t in spec.events.rules[now].emits) if now is not NO_RULE else ""
        where = f"{taker}{f' (as {kinds})' if kinds else ''}" if now is not NO_RULE else "no rule (they map to nothing)"
        for path, reads in sorted(rule.reads.items()):
            tests = tuple(sorted({r.where for r in reads if r.where.endswith(".when")}))
            if not tests or not path or present(before, path) < before.records:
                continue
            head = (f"{len(elements)} element(s) of the new sample are like those {rule.place} takes in the "
                    f"fixtures, but go to {where}: ")
            if not present(moved, path):
                renamed = rename_of(path, before, moved)
                hint = f"; renamed to {renamed}? (it appeared, same type, similar values)" if renamed else ""
                out.append(Finding("missing", "breaking", rule.place, path, f"{head}they lack this field, which "
                                   f"its test reads (every element it took in the fixtures held it){hint}",
                                   tests, renamed))
            elif types_at(before, path).isdisjoint(types_at(moved, path)):
                out.append(Finding("type_changed", "breaking", rule.place, path, f"{head}this field its test reads "
                                   f"was {'/'.join(sorted(types_at(before, path)))}, is "
                                   f"{'/'.join(sorted(types_at(moved, path)))} in them", tests))
    return out


def _gone_rules(spec, rules: list[_Rule], fixtures, sample: Observation, found: list[Finding]) -> list[Finding]:
    """Rules that took elements in the fixtures and take none now: the fields their tests read
    that no new element holds (breaking: nothing can match), else a note."""
    out = []
    renamed = {f.place for f in found if f.kind in ("value_renamed", "missing", "type_changed")}
    every_new = [e for taken in sample.rules.values() for e in taken.kept]
    if not every_new:
        if any(r.base_n for r in rules):
            out.append(Finding("unmatched", "note", "records.events", "", "the events loop finds no element in the "
                               "new sample (the fixtures': "
                               f"{sum(r.base_n for r in rules) + sum(o.taken(NO_RULE).count for o in fixtures)})"))
        return out
    everything_new = profile_elements(every_new)
    everything_old = profile_elements(e for o in fixtures for t in o.rules.values() for e in t.kept)
    reported: set[str] = set()
    for rule in rules:
        if rule.base_n == 0 or rule.new_n or rule.place in renamed:
            continue
        place = rule.place
        tested = sorted(p for p, rs in rule.reads.items() if any(r.where.endswith(".when") for r in rs) and p)
        base_el = profile_elements(e for o in fixtures for e in o.taken(rule.index).kept)
        lost = [p for p in tested if present(base_el, p) == base_el.records and not present(everything_new, p)]
        for p in lost:
            if p in reported:
                continue
            reported.add(p)
            renamed_to = rename_of(p, everything_old, everything_new)
            hint = f"; renamed to {renamed_to}? (it appeared, same type, similar values)" if renamed_to else ""
            out.append(Finding("missing", "breaking", place, p, f"every element this rule took in the fixtures "
                               f"held it ({rule.base_n}); no element of the new sample does, so the rule matches "
                               f"nothing{hint}", tuple(sorted({r.where for r in rule.reads[p]})), renamed_to))
        if not lost:
            out.append(Finding("unmatched", "note", place, "", f"takes none of the new sample's elements (the "
                               f"fixtures': {rule.base_n}); {_test_text(spec.events.rules[rule.index])}: "
                               "holds for none"))
    return out


