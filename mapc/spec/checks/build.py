"""The semantic pass over a whole spec: each section checked in turn, then the IR.

Runs only on data that passed the JSON Schema, so shapes are known here; what
is checked is what a schema cannot say: expressions compile (errors pointed at
the column inside the expression), variables are in scope, ids are unique,
ranges make sense, names follow each host's rules, placeholders exist, files
referenced by the spec exist, and rules are reachable. One module per section
(:mod:`.source`, :mod:`.levels`, :mod:`.events`, :mod:`.signals`, ...), each a set
of functions over the pass's :class:`~mapc.spec.checks.context.Context`.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from mapc.core.diagnostics import TooManyErrors
from mapc.spec import ir
from mapc.spec.checks.agent import build_agent
from mapc.spec.checks.context import Context
from mapc.spec.checks.evaluators import build_evaluators
from mapc.spec.checks.events import build_events, check_subtrajectories
from mapc.spec.checks.exprs import compile_expr
from mapc.spec.checks.files import build_fixtures
from mapc.spec.checks.levels import build_level
from mapc.spec.checks.signals import check_totals
from mapc.spec.checks.source import build_source, find_line_level
from mapc.spec.checks.spec_tests import build_tests
from mapc.spec.checks.tasks import build_tasks
from mapc.spec.checks.values import BASE_VARIABLES, LEVELS, finite, unused_tags


def build_spec(ctx: Context, tolerant: bool = False) -> ir.Spec | None:
    """Build the IR. ``tolerant`` (after schema errors) only collects what it can."""
    try:
        return _build(ctx, tolerant)
    except TooManyErrors:  # enough to report; the rest would cost time, not help
        return None


def section(ctx: Context, fn, default=None):
    """Run one part of the build; in tolerant mode a shape error skips just that part."""
    if not ctx.tolerant:
        return fn()
    try:
        return fn()
    except TooManyErrors:
        raise
    except Exception:  # data the schema already rejected; its diagnostics are reported
        return default


def _build(ctx: Context, tolerant: bool) -> ir.Spec | None:
    """Each section in turn (in tolerant mode a section that fails is skipped), then the IR."""
    ctx.tolerant = tolerant
    data = ctx.spec.data
    finite(ctx, data, ())
    ctx.tables = data.get("tables") if isinstance(data.get("tables"), dict) else {}
    source = section(ctx, lambda: build_source(ctx, data["source"]))
    records = data.get("records") if isinstance(data.get("records"), dict) else {}
    if "records" not in data:
        ctx.error("missing_key", (), "missing required key 'records'",
                  hint="records say how source values become run/case/group/trajectory/events")
    variables = set(BASE_VARIABLES)
    levels = [section(ctx, lambda n=name: build_level(ctx, n, records, variables)) for name in LEVELS]
    events = section(ctx, lambda: build_events(ctx, records, variables)) if "records" in data else None
    # without events (no `records`, or they did not compile) that is the error to report, not this one
    line_level = section(ctx, lambda: find_line_level(ctx, source, levels, events)) if events is not None else None
    section(ctx, lambda: check_totals(ctx, levels, events))
    if events is not None:
        section(ctx, lambda: check_subtrajectories(ctx, levels, events))
    evaluators = section(ctx, lambda: build_evaluators(ctx, data.get("evaluators")), ())
    usage = _usage(ctx, data)
    tasks = section(ctx, lambda: build_tasks(ctx, data.get("tasks")))
    agent = section(ctx, lambda: build_agent(ctx, data.get("agent")))
    fixtures = section(ctx, lambda: build_fixtures(ctx, data.get("fixtures")), ())
    tests = section(ctx, lambda: build_tests(ctx, data.get("tests"), tasks, agent, evaluators), ())
    unused_tags(ctx)
    if tolerant or any(d.is_error for d in ctx.diags) or events is None:
        return None
    return ir.Spec(
        name=data["name"],
        version=data.get("version", "0.1.0"),
        description=data.get("description", ""),
        source=source,
        tables=tuple(ctx.tables.items()),
        levels=tuple(levels),
        events=events,
        line_level=line_level,
        evaluators=evaluators,
        combine=(data.get("reward") or {}).get("combine", "mean"),
        usage=tuple(usage),
        tasks=tasks,
        agent=agent,
        fixtures=fixtures,
        targets=tuple(sorted((data.get("targets") or {}).items())),
        file=ctx.spec.file,
        files=tuple(sorted(ctx.spec.texts)),
        # tests check the output, they do not shape it: a build is current whatever they say
        digest=_digest(_digested(ctx, data), ctx.referenced_files),
        inputs=tuple(str(f) for f in ctx.referenced_files),
        locate=ctx.spec.mark,
        locate_in=ctx.spec.expression_mark,
        tests=tests,
    )


def _usage(ctx: Context, data: dict) -> list[tuple[str, ir.Expr]]:
    """`usage`: the cost and token expressions, read with the task and the tables."""
    usage = []
    usage_data = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    for key in ("cost_usd", "tokens"):
        if key in usage_data:
            e = section(ctx, lambda k=key: compile_expr(ctx, data["usage"][k], ("usage", k), {"task", "tables"}))
            if e is not None:
                usage.append((key, e))
    return usage


def _digested(ctx: Context, data: dict) -> dict:
    """What the digest covers: the spec without its tests, plus the tags that shape the output."""
    out = {k: v for k, v in data.items() if k != "tests"}
    tags = sorted((list(p), t) for p, t in ctx.spec.tags.items() if t == "!keep_nulls")
    if tags:  # only then: the digests of specs without tags stay as they were
        out["\0tags"] = tags
    return out


def _digest(data: Any, extra_files: list[Path]) -> str:
    """SHA-256 of the spec data and of the files it reads: what a build's freshness depends on."""
    h = hashlib.sha256()
    h.update(json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str).encode())
    hashed: dict[Path, bytes] = {}  # a file named twice is read once
    for f in extra_files:
        if f not in hashed:
            try:
                with open(f, "rb") as stream:  # in chunks: a fixture may be large
                    hashed[f] = hashlib.file_digest(stream, "sha256").hexdigest().encode()
            except OSError:
                hashed[f] = b""
        if hashed[f]:
            h.update(b"\0" + f.name.encode() + b"\0" + hashed[f])
    return h.hexdigest()


