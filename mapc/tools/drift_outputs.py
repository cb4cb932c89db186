"""``mapc drift`` on what the records hold: per spec node (a rule, an `emit`, a level), the
record fields every fixture record held that no new record holds (*blanked*), or whose JSON
type changed (*retyped*), and nodes that emit nothing now. Signals named by a constant,
without `when` or loops, count as fields of their owner; the others come and go with the
data. Fields fed by a sibling file the new sample lacks are not compared.
"""

from __future__ import annotations

from mapc.analysis.drift_evidence import significant
from mapc.tools.drift_rules import Finding, RuleSummary
from mapc.tools.observe import Observation, Output
from mapc.spec import ir


def conditional_outputs(spec) -> tuple[set[str], dict[str, set[str]]]:
    """The event templates that emit only where their `when` holds (spec paths), and per node
    the signals every record of it carries: named by a constant, without `when` or loops
    (the others come and go with the data)."""
    from mapc.core.diagnostics import format_path

    guarded: set[str] = set()
    steady: dict[str, set[str]] = {}

    def signals(node: str, sigs) -> None:
        for sig in sigs:
            name = sig.name.value if isinstance(sig.name, ir.Literal) else \
                sig.name.compiled.constant[1] if isinstance(sig.name, ir.Expr) and sig.name.compiled.constant[0] \
                else None
            if isinstance(name, str) and sig.when is None and not sig.loops:
                steady.setdefault(node, set()).add(f"signal:{name}")

    for lv in spec.levels:
        signals(f"records.{lv.name}", lv.signals)
    for rule in spec.events.rules:
        for t in rule.emits:
            node = format_path(t.path)
            if t.when is not None:
                guarded.add(node)
            signals(format_path(rule.path), t.signals)
    return guarded, steady


def compare_outputs(fixtures: list[Observation], sample: Observation, rules: list[RuleSummary],
                    fed: dict[str, set[tuple[str, str]]], spec) -> list[Finding]:
    """Per spec node, the record fields the fixtures' records held and the new ones do not;
    ``fed``: per sibling file, the (node, field) it feeds, not compared when the sample has
    no such sibling beside it."""
    out = []
    guarded, steady = conditional_outputs(spec)
    skip: set[tuple[str, str]] = set()
    for name, fields in sorted(fed.items()):
        if name not in sample.siblings and any(name in o.siblings for o in fixtures):
            skip |= fields
            out.append(Finding("sibling", "note", "source.siblings", name, "no such file beside the new sample "
                               "(the fixtures have one): what the spec reads from it is not compared"))
    taking = {s.place: s.sample for s in rules}
    base: dict[str, Output] = {}
    for o in fixtures:
        for node, got in o.outputs.items():
            acc = base.setdefault(node, Output())
            acc.count += got.count
            for f, n in got.fields.items():
                acc.fields[f] = acc.fields.get(f, 0) + n
            for f, kinds in got.types.items():
                acc.types.setdefault(f, set()).update(kinds)
    for node, before in sorted(base.items()):
        now = sample.outputs.get(node, Output())
        owner = node.split(".emit[")[0]
        if before.count and not now.count:
            if owner in taking and taking[owner]:
                out.append(Finding("no_output", "note" if node in guarded else "breaking", owner,
                                   "", f"takes {taking[owner]} of the new sample's elements but emits no record "
                                   f"(the fixtures: {before.count} from {node})"))
            elif owner not in taking and not sample.error:
                out.append(Finding("no_output", "breaking", node, "", f"the fixtures map to {before.count} "
                                   "record(s) here, the new sample to none"))
            continue
        for name, held in sorted(before.fields.items()):
            if (owner, name) in skip:
                continue
            has = now.fields.get(name, 0)
            kept = (f"{held} of the fixtures' {before.count} record(s) held it, "
                    f"{has} of the new sample's {now.count}")
            dynamic = name.startswith("signal:") and name not in steady.get(owner, ())
            if has == 0 and significant(held, before.count, now.count) and not dynamic:
                out.append(Finding("blanked", "breaking", owner, name, f"mapped to nothing now: {kept}"))
            elif has == 0:
                out.append(Finding("thinned", "note", owner, name, f"mapped to nothing now, which may be chance "
                                   f"(few records): {kept}"))
            elif before.types.get(name) and now.types.get(name) and before.types[name].isdisjoint(now.types[name]):
                out.append(Finding("retyped", "breaking", owner, name, f"was {'/'.join(sorted(before.types[name]))} "
                                   f"in the fixtures' records, is {'/'.join(sorted(now.types[name]))} now"))
    return out
