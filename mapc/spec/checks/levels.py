"""The record levels (run, case, group, trajectory): scope, id, fields, signals, artifacts."""

from __future__ import annotations

import re

from mapc.spec import ir
from mapc.spec.checks.context import Context
from mapc.spec.checks.scopes import build_scope
from mapc.spec.checks.signals import build_artifacts, build_signals
from mapc.spec.checks.values import build_value
from mapc.spec.schema_check import suggest


def build_level(ctx: Context, name: str, records: dict, variables: set) -> ir.Level:
    """One record level (run, case, group, trajectory): scope, id, the fields its records have."""
    path = ("records", name)
    data = records.get(name) or {}
    scope = build_scope(ctx, data, path, variables)
    id_v = build_value(ctx, data["id"], path + ("id",), variables) if "id" in data else None
    own = set(variables) | {name}
    fields = []
    allowed = {
        "run": ("name", "started_at", "metadata"),
        "case": ("name", "input", "metadata"),
        "group": ("name", "metadata"),
        "trajectory": ("status", "termination", "parent", "branch_id", "metadata"),
    }[name]
    if name == "trajectory" and "name" in data:
        ctx.error("invalid_key", path + ("name",), "trajectory records have no `name` in the canonical schema",
                  hint="put it in metadata, e.g. `metadata: {name: ...}`", key=True)
    for key in allowed:
        if key in data:
            v = build_value(ctx, data[key], path + (key,), own)
            if v is not None:
                fields.append((key, v))
    if isinstance(data.get("status"), str) and name == "trajectory":
        _check_status_literal(ctx, data["status"], path + ("status",))
    sigs = build_signals(ctx, data.get("signals"), path + ("signals",), own)
    arts = build_artifacts(ctx, data.get("artifacts"), path + ("artifacts",), own)
    final = build_value(ctx, data["final_output"], path + ("final_output",), own) if "final_output" in data else None
    variables.add(name)
    return ir.Level(name, scope, id_v, tuple(fields), sigs, arts, final, name in records, path)


def _check_status_literal(ctx: Context, text: str, path: tuple) -> None:
    """A literal `status` must be one the canonical schema knows."""
    m = re.fullmatch(r"'([^']*)'", text.strip())
    if m and m.group(1) not in ("running", "completed", "failed", "cancelled"):
        ctx.error("invalid_value", path, f"status {m.group(1)!r} is not one of running, completed, failed, cancelled",
                  hint=suggest(m.group(1), ["running", "completed", "failed", "cancelled"]))
