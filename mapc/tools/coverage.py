"""What a spec covers of its fixtures: the elements each event rule takes, and the source
fields it reads and ignores, per value of the field the rules test.

``mapc check``, ``mapc test`` and ``mapc report`` map the fixtures with the spec's own
program, filing each element under the first rule that takes it (:mod:`mapc.tools.observe`, as
``mapc drift`` does), and compare the fields those elements hold
(:func:`mapc.analysis.profile.profile_elements`) with the fields the rules read
(:func:`mapc.analysis.reads.rule_reads`). An element is *read* where a rule tested on it (the
``when`` of its rule and of every rule before) or its rule's events read it, or hold it
whole (``data: data``). A rule that takes no element of any fixture is a warning
(``rule_never_matches``) with the values the fixtures do hold and, when an earlier rule
takes the elements it tests for, that rule.

The discriminating field is the one the rules test against most texts
(:func:`mapc.analysis.reads.rule_tests`: ``type == 'message'``); without one, fields are listed
per rule. Counts are exact; field lists come from the elements :mod:`mapc.tools.observe` keeps
(``MAX_KEPT`` per rule and fixture).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from mapc.core.diagnostics import WARNING, Diagnostic
from mapc.core.fieldpath import render, segments
from mapc.tools.observe import NO_RULE, Observation, Observer
from mapc.analysis.profile import profile_elements
from mapc.analysis.reads import rule_reads, rule_tests, string_tests
from mapc.spec import ir

MAX_FIXTURES = 8  # as mapc.analysis.fixture_check reads them
MAX_BYTES = 64 << 20  # a fixture mapped for coverage and traps (a fixture is a small sample)
MAX_VALUES = 50  # values of the discriminating field listed; the rest are counted together
OTHER = "(other values)"
ABSENT = "(absent)"


@dataclass
class Coverage:
    fixtures: list[str]
    elements: int
    rules: list[dict]  # {rule, place, when, kinds, matched}
    unmatched: int  # elements no rule takes
    discriminator: str | None
    fields: list[dict] = field(default_factory=list)  # {value, rules, elements, read, ignored}
    errors: list[str] = field(default_factory=list)  # a fixture the mapping fails on

    def to_dict(self) -> dict:
        return {"fixtures": self.fixtures, "elements": self.elements, "rules": self.rules,
                "unmatched": self.unmatched, "discriminator": self.discriminator, "fields": self.fields,
                "errors": self.errors}


def observe_fixtures(spec: ir.Spec) -> list[Observation]:
    """The spec's fixtures mapped and watched, one observation each (at most MAX_FIXTURES; one
    past MAX_BYTES is not mapped: its observation holds only that as its error)."""
    if not spec.fixtures:
        return []
    observer = Observer(spec)
    out = []
    for fx in spec.fixtures[:MAX_FIXTURES]:
        path = Path(fx.resolved)
        try:
            big = path.stat().st_size > MAX_BYTES
        except OSError:
            big = False  # the mapping says what is wrong with it
        out.append(Observation(str(path), error=f"larger than {MAX_BYTES >> 20} MiB, not mapped by `check`")
                   if big else observer.observe(path))
    return out


def coverage(spec: ir.Spec, observed: list[Observation]) -> Coverage | None:
    """What the rules take of the fixtures ``observed``; None without fixtures."""
    if not observed:
        return None
    rules = spec.events.rules
    counts = {i: sum(o.taken(i).count for o in observed) for i in [*range(len(rules)), NO_RULE]}
    table = [{"rule": i, "place": f"records.events.rules[{i}]", "when": r.when.text if r.when else None,
              "kinds": list(dict.fromkeys(t.kind for t in r.emits)), "matched": counts[i]}
             for i, r in enumerate(rules)]
    disc = _discriminator(rule_tests(spec), observed)
    out = Coverage([Path(o.trace).name for o in observed], sum(counts.values()), table, counts[NO_RULE], disc,
                   errors=[f"{Path(o.trace).name}: {o.error}" for o in observed if o.error])
    out.fields = _fields(spec, observed, disc)
    return out


def _discriminator(tests: dict[str, dict[str, int]], observed: list[Observation]) -> str | None:
    """The field the rules test against most texts, of those the fixture elements hold."""
    from mapc.expressions import compile_expression

    for path in sorted(tests, key=lambda p: -len(tests[p])):
        read = compile_expression(path).evaluate
        if any(isinstance(read(el, None), str) for o in observed for t in o.rules.values() for el in t.kept):
            return path
    return None


def _fields(spec: ir.Spec, observed: list[Observation], disc: str | None) -> list[dict]:
    from mapc.expressions import compile_expression

    reads = rule_reads(spec)
    value_of = compile_expression(disc).evaluate if disc else None
    groups: dict[str, dict[int | None, list]] = {}
    for o in observed:
        for rule, taken in o.rules.items():
            for el in taken.kept:
                key = _value(value_of(el, None)) if value_of else _rule_name(rule)
                groups.setdefault(key, {}).setdefault(rule, []).append(el)
    if len(groups) > MAX_VALUES:
        keep = sorted(groups, key=lambda k: -sum(map(len, groups[k].values())))[:MAX_VALUES]
        rest: dict[int | None, list] = {}
        for k in set(groups) - set(keep):
            for rule, els in groups.pop(k).items():
                rest.setdefault(rule, []).extend(els)
        groups[OTHER] = rest
    rows = []
    for value, by_rule in groups.items():
        read: set[str] = set()
        ignored: set[str] = set()
        for rule, elements in by_rule.items():
            r_read, r_ignored = _split(elements, rule, reads, len(spec.events.rules))
            read |= r_read
            ignored |= r_ignored
        rows.append({"value": value, "rules": sorted((r for r in by_rule if r is not None)),
                     "no_rule": NO_RULE in by_rule, "elements": sum(map(len, by_rule.values())),
                     "read": sorted(read), "ignored": sorted(ignored - read)})
    return sorted(rows, key=lambda r: (r["rules"][:1] or [len(spec.events.rules)], r["value"]))


def _split(elements: list, rule: int | None, reads, n_rules: int) -> tuple[set[str], set[str]]:
    """(fields read, topmost fields ignored) of the elements one rule takes."""
    tested_up_to = n_rules if rule is None else rule + 1  # every `when` up to the rule's own
    mine = [(segments(r.path), r.whole) for r in reads
            if (r.rule == rule and r.path) or (r.rule < tested_up_to and r.where.endswith(".when")
                                                and r.where.count(".") == 3 and r.path)]
    whole_element = any(r.rule == rule and r.path == "" and r.whole for r in reads)
    prof = profile_elements(elements)
    if whole_element:
        return {"@"}, set()
    read, ignored = set(), set()
    for path in prof.fields:
        segs = segments(path)
        if not segs:
            continue
        if any(_same(r, segs) for r, _ in mine):
            read.add(path)
        elif not _covered(segs, mine) and set(prof.fields[path].types) - {"null"}:
            ignored.add(path)
    read = {p for p in read if not (p.endswith("[]") and p[:-2] in read)}
    # only the topmost ignored paths (a field's own fields are ignored with it)
    return read, {p for p in ignored if render(segments(p)[:-1]) not in ignored}


def _same(pattern: tuple, segs: tuple) -> bool:
    """``segs`` is the read ``pattern`` (``*`` any name), or an element of it (``tags[]`` of
    ``join(',', tags)``: a function given an array reads its elements)."""
    while segs and segs[-1] == "[]" and len(segs) > len(pattern):
        segs = segs[:-1]
    return len(pattern) == len(segs) and all(p == q or p == "*" for p, q in zip(pattern, segs))


def _covered(segs: tuple, reads: list[tuple[tuple, bool]]) -> bool:
    """Read there, on the way to a read, or inside a value read whole."""
    if not segs:
        return True
    for r, whole in reads:
        if len(segs) <= len(r) and _same(r[:len(segs)], segs):
            return True
        if whole and len(segs) > len(r) and _same(r, segs[:len(r)]):
            return True
    return False


def _value(v) -> str:
    if v is None:
        return ABSENT
    return v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)[:60]


def _rule_name(rule: int | None) -> str:
    return "no rule" if rule is None else f"rules[{rule}]"


def coverage_diagnostics(spec: ir.Spec, cov: Coverage | None) -> list[Diagnostic]:
    """``rule_never_matches`` for each rule that takes no fixture element."""
    from mapc.analysis.fixture_check import typo_of

    if cov is None or cov.errors:
        return []  # a fixture the mapping fails on: its later elements were never filed
    held = {row["value"]: row["rules"] for row in cov.fields} if cov.discriminator else {}
    out = []
    for row in cov.rules:
        if row["matched"]:
            continue
        i = row["rule"]
        rule = spec.events.rules[i]
        wanted = [v for p, v in string_tests(rule.when.compiled.ast) if p == cov.discriminator] \
            if cov.discriminator and rule.when is not None else []
        earlier = sorted({r for v in wanted for r in held.get(v, []) if r < i})
        values = [v for v in held if v not in (OTHER, ABSENT)]
        if earlier:
            hint = (f"rules[{earlier[0]}] takes the elements with {cov.discriminator} "
                    f"{', '.join(repr(v) for v in wanted if v in held)} first (first match wins): move this rule above it, "
                    "or narrow that rule's `when`")
        elif cov.discriminator and any(typo_of(v, values) for v in wanted):
            v = next(v for v in wanted if typo_of(v, values))
            hint = f"did you mean {typo_of(v, values)[0]!r}? the fixtures have no `{cov.discriminator}` {v!r}"
        elif wanted:
            listed = ", ".join(values[:12]) + (", ..." if len(values) > 12 else "")
            hint = (f"the fixtures' `{cov.discriminator}` values: {listed}; fix the `when`, or add a fixture with the "
                    "lines this rule is for")
        else:
            hint = "fix the `when`, or add a fixture with the elements this rule is for"
        when = f" (`{row['when']}`)" if row["when"] else ""
        d = spec.diag("rule_never_matches", rule.path + (("when",) if rule.when else ()),
                      f"rules[{i}]{when} takes none of the {cov.elements} element(s) of the fixtures "
                      f"({', '.join(cov.fixtures)}), so nothing tests what it maps", hint=hint, severity=WARNING)
        if d.file and spec.file and Path(d.file).resolve() != Path(spec.file).resolve():
            continue  # a rule of a spec this one extends (a library's): its other formats' lines, not a mistake here
        out.append(d)
    return out


def analyse_fixtures(spec: ir.Spec, known=()) -> tuple[Coverage | None, list[Diagnostic]]:
    """Coverage and the warnings of the fixtures' values (traps, rules that never match),
    from one mapping of the fixtures: what `mapc check`, `test` and `report` add. A null
    argument where ``known`` (the fixture checks) already has a type mismatch is not said twice."""
    from mapc.tools.traps import check_traps

    observed = observe_fixtures(spec)
    cov = coverage(spec, observed)
    said = {(d.file, d.line, d.column) for d in known if d.code == "type_mismatch"}
    traps = [d for d in check_traps(spec, observed) if not (d.code == "null_argument" and (d.file, d.line, d.column)
                                                            in said)]
    return cov, traps + coverage_diagnostics(spec, cov)


def format_coverage(cov: Coverage | None) -> str:
    """The text `mapc check` and `mapc test` print: one line per rule, then per value."""
    if cov is None:
        return ""
    lines = [f"coverage: {cov.elements} element(s) in {', '.join(cov.fixtures)}"]
    lines += [f"  not all counted: {e}" for e in cov.errors]
    for row in cov.rules:
        when = row["when"] or "(no when)"
        never = "  <- never matches" if not row["matched"] and not cov.errors else ""
        lines.append(f"  rules[{row['rule']}] {when} -> {'/'.join(row['kinds']) or '(skip)'}: "
                     f"{row['matched']}{never}")
    if cov.unmatched:
        lines.append(f"  no rule: {cov.unmatched} (mapped to nothing)")
    by = f"`{cov.discriminator}`" if cov.discriminator else "rule"
    if cov.fields:
        lines.append(f"  fields per {by}:")
    for row in cov.fields:
        taken = ", ".join(f"rules[{r}]" for r in row["rules"]) + (" + no rule" if row["no_rule"] and row["rules"]
                                                                 else "no rule" if row["no_rule"] else "")
        head = f"{cov.discriminator}={row['value']}" if cov.discriminator else row["value"]
        lines.append(f"    {head} ({row['elements']}, {taken}): reads {_list(row['read'])}; "
                     f"ignores {_list(row['ignored'])}")
    return "\n".join(lines) + "\n"


def _list(paths: list[str], limit: int = 12) -> str:
    if not paths:
        return "nothing"
    return ", ".join(paths[:limit]) + (f", ... ({len(paths) - limit} more)" if len(paths) > limit else "")


__all__ = ["Coverage", "coverage", "coverage_diagnostics", "format_coverage", "observe_fixtures", "analyse_fixtures"]
