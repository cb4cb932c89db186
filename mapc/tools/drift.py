"""``mapc drift SPEC NEW_SAMPLE``: has the source moved away from the spec, and does it matter?

The spec's fixtures are the baseline, the traces it was written against. Both they and
the new sample are mapped by the spec's own program, watching which elements each event
rule takes (:mod:`mapc.tools.observe`); :mod:`mapc.tools.drift_rules` compares, rule by rule, the
fields each rule reads from its elements, the fields they hold that it does not read, the
values of the fields the rules test (a new event type, and the rule that now takes it),
and what the records of each rule hold. What the spec reads outside the rules (levels,
the events loop, reads through variables) is compared on the whole trace's profile
(:mod:`mapc.analysis.profile`), here. The probe is run on the sample too.

Each finding is *breaking* (the adapters built from the spec would now map the sample
wrongly or not at all: a field the mapping needs is gone or retyped, a rule's records
lost a field every fixture record had, an event type renamed, the probe or the mapping
fails), *additive* (the sample holds more than the spec maps: new fields, new event
types, new types beside the old) or a *note* (what may be chance: an optional field not
seen, a rule that took nothing). The verdict is the worst of them: ``breaking``,
``additive`` or ``none``. Paths read through computed values are never printed: where a
path cannot be known, the records the mapping makes are compared instead.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from mapc.analysis.drift_evidence import rename_of, significant
from mapc.tools.drift_outputs import compare_outputs
from mapc.tools.drift_rules import Finding, RuleSummary, compare_rules, held_by_absent_rules
from mapc.core.fieldpath import render as _join
from mapc.core.fieldpath import segments
from mapc.analysis.profile import (FieldShape, Fingerprint, PathIndex, Profile, ProfileError, _matches, _variants,
                                   profile)
from mapc.analysis.reads import alternatives_of, events_anchor, rule_reads, rule_tests, spec_reads

MAX_SHOWN = 5  # findings of one kind shown per rule (the JSON has them all)
MAX_ITEMS = 1000  # findings kept in a report


@dataclass
class DriftReport:
    spec: str
    sample: str
    container: str
    records: int
    baseline: list[str]
    items: list[Finding] = field(default_factory=list)
    rules: list[RuleSummary] = field(default_factory=list)

    @property
    def breaking(self) -> bool:
        return any(i.severity == "breaking" for i in self.items)

    @property
    def verdict(self) -> str:
        if self.breaking:
            return "breaking"
        return "additive" if any(i.severity == "additive" for i in self.items) else "none"

    def to_dict(self) -> dict:
        return {"ok": not self.breaking, "verdict": self.verdict, "breaking": self.breaking,
                "spec": self.spec, "sample": self.sample, "container": self.container, "records": self.records,
                "baseline": self.baseline, "rules": [r.to_dict() for r in self.rules],
                "items": [item_dict(i) for i in self.items]}


def item_dict(i: Finding) -> dict:
    out = {"kind": i.kind, "severity": i.severity, "breaking": i.breaking, "place": i.place, "path": i.path,
           "message": i.message, "read_by": list(i.read_by)}
    if i.renamed_to:
        out["renamed_to"] = i.renamed_to
    return out


#: Spec keys whose expressions look at a value without mapping it (a loop, a test).
_LOOKS_ONLY = (".each", ".when", ".where", ".ordinal_by", "source.probe.require", "source.probe.when")


def _covered(path: str, reads: list[tuple[tuple[str, ...], bool]]) -> bool:
    """Whether ``reads`` touch ``path``: read itself, on the way to a read, or inside a value
    the spec maps whole (``input: input``; not a loop's array, whose fields are read one by one)."""
    segs = segments(path)
    for r, whole in reads:
        if len(segs) <= len(r):
            if _matches(r[:len(segs)], segs):
                return True
        elif whole and _matches(r, segs[:len(r)]):
            return True
    return False


# -- the comparison ---------------------------------------------------------------------------
def drift(spec_path: str | Path, sample: str | Path):
    """``(DriftReport, diagnostics)``; the report is None when the spec has errors.

    Raises ProfileError/OSError when the sample cannot be read.
    """
    from mapc.tools.observe import Observer
    from mapc.spec import load_spec

    spec, diags = load_spec(spec_path)
    if spec is None:
        return None, diags
    container = spec.source.container
    new = profile(sample, container=container, fingerprints=True)
    fixtures = [Path(fx.resolved) for fx in spec.fixtures]
    baseline = [profile(f, container=container, fingerprints=True) for f in fixtures]
    report = DriftReport(str(spec_path), str(sample), container, new.records, [f.name for f in fixtures])
    observer = Observer(spec)
    base_obs = [observer.observe(f) for f in fixtures]
    new_obs = observer.observe(sample)
    items = _probe(observer.ns, Path(sample))
    if new_obs.error:
        items.append(Finding("mapping_error", "breaking", "source", "", f"mapping the sample fails: {new_obs.error}"))
    for name, obs in [(f.name, o) for f, o in zip(fixtures, base_obs)] + [(Path(sample).name, new_obs)]:
        if obs.selection_error and not obs.error:
            items.append(Finding("incomplete", "note", "records.events", "", f"{name}: which rule takes each "
                                 f"element could not be followed past {obs.selection_error}; the rules are "
                                 "compared on the elements before it"))
    by_rule = rule_reads(spec)
    found, report.rules, rules = compare_rules(spec, base_obs, new_obs, by_rule, rule_tests(spec))
    if baseline:
        found += compare_outputs(base_obs, new_obs, report.rules, _sibling_fed(spec), spec)
    items += found
    items += _absorbed(_source_fields(spec, new, baseline, by_rule, rules), found)
    items += _new_source_fields(spec, new, baseline, [i for i in items if i.kind == "new_field"],
                                {i.renamed_to for i in items if i.renamed_to})
    report.items = _ordered(items)[:MAX_ITEMS]
    return report, diags


_SEMANTIC_AT = ("input.", "output.")  # where an event record holds a rule's role, content, ...


def _sibling_fed(spec) -> dict[str, set[tuple[str, str]]]:
    """Per sibling file, the record fields (spec node, field) expressions reading it feed."""
    out: dict[str, set[tuple[str, str]]] = {}
    for r in spec_reads(spec):
        if not r.source.startswith("sibling:"):
            continue
        node, _, rest = r.where.partition(".signals")
        if rest:
            name = rest.lstrip(".").split(".")[0]
            fields = {f"signal:{name}"}
        else:
            parts = r.where.split(".")
            cut = 3 if parts[1] == "events" and len(parts) > 2 and parts[2].startswith("rules[") else 2
            node, rest = ".".join(parts[:cut]), ".".join(parts[cut:])
            fields = {rest, rest.split(".")[0]} | {k + rest for k in _SEMANTIC_AT}
        out.setdefault(r.source[len("sibling:"):], set()).update((node, f) for f in fields)
    return out


def _probe(ns: dict, sample: Path) -> list[Finding]:
    verdict = ns["probe"](str(sample))
    if verdict.get("supported"):
        return []
    return [Finding("probe", "breaking", "source.probe", "", f"the probe no longer recognises the sample: "
                    f"{verdict.get('reason')}", ("source.probe",))]


_SEVERITY = {"breaking": 0, "additive": 1, "note": 2}


def _ordered(items: list[Finding]) -> list[Finding]:
    """The source first, then rule by rule in spec order; breaking before additive before notes."""
    def key(i: Finding):
        rule = i.place.startswith("records.events.rules[")
        number = int(i.place.split("[")[1].split("]")[0]) if rule else -1
        return rule, number, i.place, _SEVERITY[i.severity], i.kind, i.path

    return sorted(items, key=key)


# -- what the spec reads outside its rules --------------------------------------------------
def merged(profiles: list[Profile]) -> Profile:
    """One profile of several (the fixtures): types, presence and fingerprints together."""
    fields: dict[str, FieldShape] = {}
    for prof in profiles:
        for p, s in prof.fields.items():
            acc = fields.setdefault(p, FieldShape())
            for t, n in s.types.items():
                acc.types[t] = acc.types.get(t, 0) + n
            acc.present += s.present
            if s.fingerprint is not None:
                acc.fingerprint = acc.fingerprint or Fingerprint()
                acc.fingerprint.merge(s.fingerprint)
    return Profile("merged", sum(p.records for p in profiles), dict(sorted(fields.items())), 0)


def _outside_rules(spec, rule_level) -> list:
    """The spec's reads the rules do not make of their own elements (those are compared rule by rule)."""
    own = {(r.where, r.path) for r in rule_level}
    return [r for r in spec_reads(spec) if r.source == "trace"
            and not (r.fields and all((r.where, w) in own for w in r.fields))]


def _source_fields(spec, new: Profile, baseline: list[Profile], rule_level, rules) -> list[Finding]:
    reads = _outside_rules(spec, rule_level)
    anchor = events_anchor(spec)
    anchors = [segments(a) for a in anchor.paths] if anchor is not None and anchor.exact else []
    by_path: dict[str, list] = {}
    for r in reads:
        by_path.setdefault(r.path, []).append(r)
    new_ix = PathIndex(new)
    base_ix = [PathIndex(b) for b in baseline]
    base_all = merged(baseline) if baseline else None
    out = []
    for path, rs in by_path.items():
        if not all(r.exact for r in rs):
            continue  # read through a computed value: the records are compared instead
        where = tuple(sorted({r.where for r in rs}))
        shown = path or "@"
        now = new_ix.lookup(path)
        seen = [b.lookup(path) for b in base_ix]
        before = set().union(*(s[1] for s in seen if s)) if any(seen) else None
        if now is None:
            holders = _in_absent_elements(path, anchors, rules) if before is not None else None
            if holders:
                out.append(Finding("not_seen", "note", "source", shown, f"in the fixtures only elements taken "
                                   f"by {holders} hold it, and the new sample has none of those", where))
                continue
            out += _absent(path, shown, rs, where, new_ix, base_ix, before, new, base_all)
            continue
        if before is None:
            continue
        old_types, new_types = before - {"null"}, now[1] - {"null"}
        if old_types and new_types and old_types.isdisjoint(new_types):
            out.append(Finding("type_changed", "breaking", "source", shown, f"was {'/'.join(sorted(old_types))}, "
                               f"is now {'/'.join(sorted(new_types))}", where))
        elif old_types and new_types - old_types:
            out.append(Finding("type_added", "additive", "source", shown, f"now also "
                               f"{'/'.join(sorted(new_types - old_types))} (was {'/'.join(sorted(old_types))})", where))
    return out


#: reads whose values shape what is mapped, not what a record holds: a change shows in no field
_STRUCTURAL = (".each", ".where", "source.probe.require", "source.probe.when")


def _absorbed(items: list[Finding], outputs: list[Finding]) -> list[Finding]:
    """A type change outside the rules is additive when the records of the spec nodes that
    read the field hold what they held, in kind (no field blanked or retyped, no record
    lost): the expressions take either type (``to_string(id)``)."""
    changed = {f.place for f in outputs if f.kind in ("blanked", "retyped", "no_output")}
    out = []
    for i in items:
        nodes = {".".join(w.split(".")[:2]) if not w.startswith("records.events.rules[") else w.split("]")[0] + "]"
                 for w in i.read_by}
        if i.kind == "type_changed" and i.breaking and not any(w.endswith(_STRUCTURAL) for w in i.read_by) \
                and not nodes & changed:
            i = Finding(i.kind, "additive", i.place, i.path, f"{i.message}; the records of "
                        f"{', '.join(sorted(nodes))} hold what they held, in kind (its expressions take either)",
                        i.read_by)
        out.append(i)
    return out


def _in_absent_elements(path: str, anchors, rules) -> str | None:
    """For a path inside the elements the rules take (read through a variable or a table):
    the rules whose fixture elements hold it, when they take none of the new sample's."""
    for variant in _variants(segments(path), len(segments(path))):
        for a in anchors:
            held = len(variant) > len(a) and variant[:len(a)] == a and \
                held_by_absent_rules(_join(variant[len(a):]), rules)
            if held:
                return held
    return None


def _absent(path, shown, rs, where, new_ix, base_ix, before, new: Profile, base_all) -> list[Finding]:
    if base_ix and before is None:
        return [Finding("never_seen", "note", "source", shown, "neither the fixtures nor the new sample have it "
                        "(an optional field, or a typo: `mapc check` points at those)", where)]
    held = _alternative_held(path, rs, new_ix)
    if held:
        return [Finding("alternative", "note", "source", shown, f"the new sample has {held} instead, which the "
                        "spec reads as its alternative", where)]
    tested = all(r.expr is not None and any(w in r.expr.compiled.tested_paths for w in r.fields) for r in rs)
    parent = new_ix.nearest_ancestor(path)
    if parent is not None and "object" not in parent[1]:
        was: set[str] = set()
        for b in base_ix:
            hit = b.lookup(parent[0])
            was |= hit[1] if hit else set()
        if not base_ix or parent[1] - {"null"} <= was - {"null"}:
            return [Finding("not_seen", "note", "source", shown, f"not in the sample: {parent[0] or 'its parent'} "
                            f"is {'/'.join(sorted(parent[1]))} there, as in the fixtures, never an object "
                            "with this field", where)]
    if tested and base_ix:
        return [Finding("not_seen", "note", "source", shown, "not in the new sample (the fixtures have it); "
                        "read only in tests, which expect it may be absent", where)]
    if not base_ix:
        return [Finding("missing", "breaking", "source", shown, "missing from the new sample", where)]
    renamed = rename_of(path, base_all, new)
    held, of = _frequency(base_all, path)
    now_of = _frequency(new, path)[1]
    counts = f"the fixtures hold it ({held} of {of}), the new sample none of {now_of}"
    if not renamed and not significant(held, of, now_of):
        return [Finding("not_seen", "note", "source", shown, f"{counts}: an optional field, absent by chance in "
                        "a small sample, or removed", where)]
    hint = f"; renamed to {renamed}? (it appeared, same type, similar values)" if renamed else ""
    return [Finding("missing", "breaking", "source", shown, f"missing from the new sample: {counts}{hint}",
                    where, renamed)]


def _frequency(prof: Profile, path: str) -> tuple[int, int]:
    """(how many of the objects that could hold ``path`` do, how many there are): the
    elements of its innermost array, or the documents (lines)."""
    segs = segments(path)
    cut = max((i for i, s in enumerate(segs) if s == "[]"), default=-1) + 1
    unit = PathIndex(prof).lookup(_join(segs[:cut])) if cut else None
    units = sum(prof.fields[unit[0]].types.values()) if unit else prof.records
    found = PathIndex(prof).lookup(path)
    shape = prof.fields.get(found[0]) if found else None
    held = sum(n for kind, n in shape.types.items() if kind != "null") if shape else 0
    return min(held, units), units


def _alternative_held(path: str, rs, new_ix: PathIndex) -> str | None:
    """The alternative (``a || b``) every read of ``path`` has and the sample holds, if any."""
    held = None
    for r in rs:
        found = None
        for w in r.fields:
            if r.expr is None or not path.endswith(w.lstrip("@")):
                continue
            prefix = path[:len(path) - len(w)]
            for alt in sorted(alternatives_of(r.expr.compiled.ast).get(w, ())):
                anchored = prefix + alt if prefix.endswith((".", "]")) or not prefix else f"{prefix}.{alt}"
                if not alt.startswith("$") and new_ix.lookup(anchored):
                    found = anchored
                    break
        if found is None:
            return None
        held = held or found
    return held


def _new_source_fields(spec, new: Profile, baseline: list[Profile], in_rules: list[Finding],
                       renames: set[str]) -> list[Finding]:
    """Fields new since the fixtures outside the rules' elements (those are the rules'), or,
    without fixtures, the fields the spec does not read."""
    reads = spec_reads(spec)
    cover = [(segments(r.path), not r.where.endswith(_LOOKS_ONLY)) for r in reads if r.source == "trace"]
    known: set[tuple[str, ...]] = set()
    for b in baseline:
        known |= {segments(p) for p in b.fields}
    anchor = events_anchor(spec)
    inside = [segments(a) for a in anchor.paths] if anchor is not None and anchor.exact else []
    rule_new = {segments(i.path) for i in in_rules}
    fresh = {p for p in new.fields if p and (not baseline or segments(p) not in known)
             and not any(segments(p)[:len(a)] == a for a in inside)}
    if not baseline:
        fresh = {p for p in fresh if not _covered(p, cover)}
    # the topmost new paths, less those the rules report as new in their elements
    top = sorted(p for p in fresh if _join(segments(p)[:-1]) not in fresh
                 and not any(segments(p)[-len(r):] == r for r in rule_new if r))
    out = []
    for p in top:
        types = "/".join(sorted(new.fields[p].types))
        if not baseline:
            out.append(Finding("unmapped", "note", "source", p, f"the spec does not read it ({types})"))
            continue
        if p in renames or any(segments(r.path) == segments(p) for r in reads):
            continue  # reported as a rename, or a field the spec reads, in no fixture until now
        how = "carried along whole by the spec, read by nothing else" if _covered(p, cover) \
            else "the spec does not read it"
        out.append(Finding("new_field", "additive", "source", p, f"new since the fixtures ({types}); {how}"))
    return out


# -- the text report ----------------------------------------------------------------------------
_HEADS = {"breaking": "BREAKING", "additive": "additive", "note": "note"}


def format_drift(r: DriftReport) -> str:
    unit = {"jsonl": "line(s)", "csv": "row(s)"}.get(r.container, "document")
    base = f"baseline: fixtures {', '.join(r.baseline)}" if r.baseline else "no fixtures: no baseline to compare with"
    lines = [f"mapc drift: {r.spec} vs {r.sample} ({r.records} {unit}; {base})"]
    summaries = {s.place: s for s in r.rules}
    places: dict[str, list[Finding]] = {}
    unseen = [i for i in r.items if i.kind == "never_seen"]  # not drift: one line for them all
    for i in r.items:
        if i.kind != "never_seen":
            places.setdefault(i.place, []).append(i)
    for place, items in places.items():
        lines += ["", _place_line(place, summaries.get(place))]
        shown: dict[tuple[str, str], int] = {}
        for i in items:
            n = shown[(i.severity, i.kind)] = shown.get((i.severity, i.kind), 0) + 1
            if n <= MAX_SHOWN:
                by = f"  [{', '.join(i.read_by[:3])}{', ...' if len(i.read_by) > 3 else ''}]" if i.read_by else ""
                path = f"{i.path}: " if i.path else ""
                lines.append(f"  {_HEADS[i.severity]:<9}{i.kind:<14}{path}{i.message}{by}")
        for (severity, kind), n in shown.items():
            if n > MAX_SHOWN:
                lines.append(f"  {'':<9}{'':<14}... and {n - MAX_SHOWN} more {kind} ({severity}; --json lists all)")
    if unseen:
        named = ", ".join(f"{i.path} ({'source' if i.place == 'source' else i.place})" for i in unseen[:MAX_SHOWN])
        more = f" and {len(unseen) - MAX_SHOWN} more" if len(unseen) > MAX_SHOWN else ""
        lines += ["", f"read, but in neither the fixtures nor the new sample ({len(unseen)}; optional fields, or "
                      f"typos: `mapc check` points at those): {named}{more}"]
    counts = {s: sum(i.severity == s for i in r.items) for s in ("breaking", "additive", "note")}
    tally = f"{counts['breaking']} breaking, {counts['additive']} additive, {counts['note']} note(s)"
    lines.append("")
    if r.verdict == "breaking":
        lines.append(f"verdict: BREAKING ({tally}): adapters built from this spec would map the new traces wrongly; "
                     "update the spec, then `mapc build --check`")
    elif r.verdict == "additive":
        lines.append(f"verdict: additive ({tally}): the new traces hold more than the spec maps; what it maps "
                     "is unchanged")
    else:
        compared = sum(1 for s in r.rules if s.sample and s.place != "no rule")
        lines.append(f"verdict: no drift ({tally}): the {compared} rule(s) that take elements of the new sample "
                     "map them as they map the fixtures'" if r.baseline else f"verdict: no drift ({tally})")
    return "\n".join(lines) + "\n"


def _place_line(place: str, summary: RuleSummary | None) -> str:
    if summary is None:
        return place if place != "source" else "source (what the spec reads outside its event rules)"
    kinds = f" -> {'/'.join(summary.kinds)}" if summary.kinds else ""
    return (f"{place} ({summary.test}){kinds}: {summary.fixtures} element(s) in the fixtures, "
            f"{summary.sample} in the new sample")


__all__ = ["drift", "format_drift", "DriftReport", "Finding", "ProfileError", "segments"]
