"""Spec places for runtime diagnostics: what the generated code names, with its file and line.

A failing expression or a warning at run time is reported with its spec path and the line of
the spec file that wrote it (`records.events.rules[0].content (spec.yaml:31)`), where the
source was (`line 3, $.steps[2]`) and a fix when one is known. The generated module carries
two tables for that, read off the failing frames by the runtime (``failure_place``):
``SPEC_PLACES`` (a spec path the code names -> its file:line; an expression function -> its
spec path, file:line and the fixes per called function for a null or a wrongly typed field)
and ``SPEC_LOOPS`` (level function -> its loops as index variable and JSON path step).
"""

from __future__ import annotations

import re
from pathlib import Path

from mapc.codegen.expressions import ExprTable
from mapc.codegen.pysrc import Writer, literal
from mapc.spec import ir

#: Spec paths generated code passes to runtime helpers (`coerce_id(st, v, 'records.case.id')`).
_WHERE = re.compile(r"'((?:records|source|evaluators|usage)(?:\.[A-Za-z0-9_$@-]+|\[\d+\])+)'")
_STEP = re.compile(r"\.([^.\[\]]+)|\[(\d+)\]")


def _path_of(where: str) -> tuple:
    """``records.events.rules[2].id`` -> ``('records', 'events', 'rules', 2, 'id')``."""
    return tuple(name if name else int(index) for name, index in _STEP.findall("." + where))


def _at(file: str, line: int) -> str:
    """``spec.yaml:31``: the file's name (never a machine path in generated code)."""
    return f"{Path(file).name}:{line}" if file and line else ""


def spec_places(spec: ir.Spec, tables: list[ExprTable], code: str, derived=(),
                stems=()) -> dict[str, str | tuple]:
    """Every spec path ``code`` names (less ``stems``, named only for the runtime to derive
    places from: an ``events.put`` call's rule; plus those places, ``derived``) or an
    expression was written at -> file:line; an expression function -> (spec path,
    file:line[, fixes]) only when the runtime cannot find that from its name (it is named after
    its spec path, ``x_records_case_id``)."""
    from mapc.runtime.mapping_rt import _identifier
    from mapc.analysis.fixture_check import argument_hints

    places: dict[str, str | tuple] = {}
    named = (set(_WHERE.findall(code)) - set(stems)) | set(derived)
    # a table of signals names their mapping (`records.trajectory.signals`); the runtime
    # looks up each signal's own place (`records.trajectory.signals.reward`)
    named |= {where for where in _signal_places(spec) if where.rpartition(".")[0] in named}
    for where in sorted(w for w in named if not w.endswith(".signals")):  # looked up by name
        mark = spec.locate(_path_of(where)) if spec.locate else None
        if mark is not None and mark.line:
            places[where] = _at(mark.file, mark.line)
    functions: dict[str, tuple] = {}
    for table in tables:
        for name, expr in table.functions.items():
            fixes = argument_hints(expr)
            at = _at(expr.file, expr.line)
            functions[name] = (expr.where, at, dict(sorted(fixes.items()))) if fixes else (expr.where, at)
    for name, place in functions.items():
        where, at = place[0], place[1]
        if len(place) == 2 and at and name == "x_" + _identifier(where) and places.get(where, at) == at:
            places[where] = at  # found through the name
        else:
            places[name] = place
    return places


def _signal_places(spec: ir.Spec) -> list[str]:
    """The spec path of every signal of a signals mapping (``records.trajectory.signals.cost``)."""
    signals = [sig for lv in spec.levels for sig in lv.signals]
    signals += [sig for rule in spec.events.rules for t in rule.emits for sig in t.signals]
    return [ir.Expr("", sig.path, None).where for sig in signals if isinstance(sig.path[-1], str)]


def places_source(
    places: dict[str, str | tuple], loops: dict[str, list[tuple[str, str]]], spec_file: str
) -> str:
    """The tables as module constants (sorted: same spec, same bytes), several entries a line;
    a place in ``SPEC_FILE`` is its line number. ``SPEC_FILE`` is the file most places are in:
    ``spec_file``, or the spec it extends when that holds more of them."""
    files = [v.rpartition(":")[0] for v in places.values() if isinstance(v, str)]
    if files:
        spec_file = max(sorted(set(files)), key=lambda f: (files.count(f), f == spec_file))
    w = Writer()
    w.comment("for diagnostics: spec path (or x_ function not named after one) -> line in SPEC_FILE")
    w.line(f"SPEC_FILE = {literal(spec_file)}")
    prefix = spec_file + ":"
    entries = []
    for key in sorted(places):
        value = places[key]
        if isinstance(value, str) and value.startswith(prefix) and value[len(prefix):].isdigit():
            value = int(value[len(prefix):])
        entries.append(f"{literal(key)}: {literal(value)},")
    _packed(w, "SPEC_PLACES", entries)
    if loops:
        w.comment("for diagnostics: each level's loops as (index variable, JSON path step)")
        _packed(w, "SPEC_LOOPS", [f"{literal(k)}: {literal(tuple(v))}," for k, v in sorted(loops.items())])
    return w.text()


def _packed(w: Writer, name: str, entries: list[str]) -> None:
    """``NAME = {...}`` with as many entries on a line as fit in 99 columns."""
    if not entries:
        w.line(f"{name} = {{}}")
        return
    if len(name) + 4 + len(" ".join(entries)) - 1 <= 99:
        w.line(f"{name} = {{{' '.join(entries)[:-1]}}}")
        return
    w.line(f"{name} = {{")
    line = ""
    for entry in entries:
        if line and len(line) + 1 + len(entry) > 95:
            w.line("    " + line)
            line = ""
        line = f"{line} {entry}" if line else entry
    if line:
        w.line("    " + line)
    w.line("}")
