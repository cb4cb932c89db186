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


def spec_places(spec: ir.Spec, tables: list[ExprTable], code: str) -> dict[str, str | tuple]:
    """Every spec path ``code`` names -> file:line; every expression function -> (spec path,
    file:line) and, when a field argument's type can be fixed, the fixes per function."""
    from mapc.spec.fixture_check import argument_hints

    places: dict[str, str | tuple] = {}
    for table in tables:
        for name, expr in table.functions.items():
            fixes = argument_hints(expr)
            at = _at(expr.file, expr.line)
            places[name] = (expr.where, at, dict(sorted(fixes.items()))) if fixes else (expr.where, at)
    for where in sorted(set(_WHERE.findall(code))):
        mark = spec.locate(_path_of(where)) if spec.locate else None
        if mark is not None and mark.line:
            places[where] = _at(mark.file, mark.line)
    return places


def places_source(places: dict[str, str | tuple], loops: dict[str, list[tuple[str, str]]]) -> str:
    """The two tables as module constants (sorted: same spec, same bytes)."""
    w = Writer()
    w.comment("for diagnostics: spec path -> file:line; expression -> (spec path, file:line, fixes)")
    w.line("SPEC_PLACES = {")
    with w.indent():
        for key in sorted(places):
            w.line(f"{literal(key)}: {literal(places[key])},")
    w.line("}")
    w.comment("for diagnostics: each level's loops as (index variable, JSON path step)")
    w.line(f"SPEC_LOOPS = {literal({k: tuple(v) for k, v in sorted(loops.items())})}")
    return w.text()
