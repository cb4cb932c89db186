"""Partial expectations (``tests: [{expect: ...}]``): only what is named is checked.

Records: ``counts`` (records per type), ``kinds`` (event kinds in stream order, for
the whole trace or per trajectory id), ``records`` (record id -> fields, a field may
be a dotted path, a key with dots in it quoted), ``warnings``. Evaluations: ``scores``, ``feedback``, ``reward``,
``metrics``, ``output``. Numbers compare with a relative tolerance of 1e-9, so a
hand-written 0.3333333333 matches a computed third.
"""

from __future__ import annotations

import math

from mapc.core.fieldpath import segments
from mapc.spectest.compare import MISSING, FieldChange

_REL_TOL = 1e-9


def same(expected, actual) -> bool:
    if isinstance(expected, bool) or isinstance(actual, bool):
        return expected == actual and type(expected) is type(actual)
    if isinstance(expected, (int, float)) and isinstance(actual, (int, float)):
        return math.isclose(expected, actual, rel_tol=_REL_TOL, abs_tol=1e-12)
    if isinstance(expected, dict) and isinstance(actual, dict):
        return expected.keys() == actual.keys() and all(same(v, actual[k]) for k, v in expected.items())
    if isinstance(expected, list) and isinstance(actual, list):
        return len(expected) == len(actual) and all(same(e, a) for e, a in zip(expected, actual))
    return expected == actual


def _get(value, dotted: str):
    """The value at ``dotted`` (``output.role``, ``tool_calls.0.name``; a key with dots quoted,
    ``data."gen_ai.system"``), or MISSING."""
    for part in segments(dotted):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return MISSING
    return value


def _change(name: str, expected, actual, record=None) -> FieldChange:
    change = "removed" if actual is MISSING else "changed"
    return FieldChange(name, change, expected, None if actual is MISSING else actual, record=record)


def check_records(expect: dict, records: list[dict], warnings: int) -> list[FieldChange]:
    """What the records do not meet; each item names the expectation (``counts.event``)."""
    out: list[FieldChange] = []
    counts: dict[str, int] = {}
    for r in records:
        counts[r.get("record_type")] = counts.get(r.get("record_type"), 0) + 1
    for rt, n in (expect.get("counts") or {}).items():
        if counts.get(rt, 0) != n:
            out.append(_change(f"counts.{rt}", n, counts.get(rt, 0)))
    kinds = expect.get("kinds")
    events = [r for r in records if r.get("record_type") == "event"]
    if isinstance(kinds, list):
        actual = [e.get("kind") for e in events]
        if actual != kinds:
            out.append(_change("kinds", kinds, actual))
    elif isinstance(kinds, dict):
        for tid, wanted in kinds.items():
            actual = [e.get("kind") for e in events if e.get("trajectory_id") == tid]
            if actual != wanted:
                out.append(_change(f"kinds[{tid}]", wanted, actual))
    by_id: dict[str, dict] = {}
    for r in records:
        by_id.setdefault(r.get("id"), r)
    for rid, fields in (expect.get("records") or {}).items():
        rec = by_id.get(rid)
        if rec is None:
            out.append(_change(f"records[{rid}]", fields, MISSING))
            continue
        for name, value in fields.items():
            actual = _get(rec, name)
            if actual is MISSING or not same(value, actual):
                change = _change(f"records[{rid}].{name}", value, actual, rec)
                change.path = segments(name)
                out.append(change)
    if "warnings" in expect and expect["warnings"] != warnings:
        out.append(_change("warnings", expect["warnings"], warnings))
    return out


def check_evaluation(expect: dict, result: dict) -> list[FieldChange]:
    out: list[FieldChange] = []
    for key in ("scores", "feedback", "metrics"):
        for name, value in (expect.get(key) or {}).items():
            actual = (result.get(key) or {}).get(name, MISSING)
            if actual is MISSING or not same(value, actual):
                change = _change(f"{key}.{name}", value, actual)
                change.path = (key, name)
                out.append(change)
    for key in ("reward", "output"):
        if key in expect and not same(expect[key], result.get(key, MISSING)):
            change = _change(key, expect[key], result.get(key, MISSING))
            change.path = (key,)
            out.append(change)
    return out
