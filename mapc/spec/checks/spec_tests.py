"""`tests:` written in the spec file: a trace to map, or a task whose recorded trace is
scored; their files stay inside the spec's folder."""

from __future__ import annotations

from pathlib import Path

from mapc.spec import ir
from mapc.spec.checks.context import Context
from mapc.spec.checks.names import path_problem


def build_tests(ctx: Context, data: list | None, tasks: ir.Tasks | None, agent: ir.Agent | None,
                evaluators) -> tuple[ir.SpecTest, ...]:
    """`tests:` entries written in the spec file itself: a base spec's tests map with the base's
    rules, so an extending spec does not inherit them. Paths stay inside the spec's folder."""
    if not data or ctx.spec.mark(("tests",)).file != ctx.spec.file:
        return ()
    task_ids = {t.id for t in tasks.items} if tasks else set()
    out = []
    for i, t in enumerate(data):
        path = ("tests", i)
        if ("source" in t) == ("task" in t):
            ctx.error("invalid_value", path, "a test gives `source` (a trace to map) or `task` (a task "
                      "whose recorded trace is scored), exactly one of them")
            continue
        if "expected" in t and "expect" in t:
            ctx.error("conflicting_keys", path + ("expect",), "give `expected` (a file of expected "
                      "output) or `expect` (a partial expectation), not both", key=True)
            continue
        for key in ("source", "trace", "expected"):
            if key in t and _test_path(ctx, t[key], path + (key,), must_exist=key != "expected") is None:
                break
        else:
            case = _build_test_case(ctx, t, path, task_ids, agent, evaluators)
            if case is not None:
                out.append(case)
    return tuple(out)


def _build_test_case(ctx: Context, t: dict, path: tuple, task_ids: set, agent: ir.Agent | None,
                     evaluators) -> ir.SpecTest | None:
    """One test: a `source` to map, or a `task` whose recorded trace (given or replayed) is scored."""
    expect = t.get("expect")
    if "source" in t:
        if "trace" in t:
            ctx.error("invalid_value", path + ("trace",), "`trace` belongs to a task test; this test maps "
                      "`source`", key=True)
            return None
        resolved = _test_path(ctx, t["source"], path + ("source",), must_exist=True)
        return ir.SpecTest(t.get("name") or t["source"], t["source"], str(resolved), None,
                           t.get("expected"), expect, path)
    task = str(t["task"])
    if task not in task_ids:
        known = ", ".join(sorted(task_ids)[:8]) or "none: the spec has no tasks"
        ctx.error("unknown_task", path + ("task",), f"no task {task!r} in `tasks` (known: {known})")
        return None
    if not evaluators:
        ctx.error("missing_key", path + ("task",), "a task test scores the trace, but the spec has no "
                  "`evaluators`", hint="add evaluators, or test the records with `source:`")
        return None
    trace = t.get("trace")
    if trace is None:
        if agent is None or not agent.replay:
            ctx.error("missing_key", path, "which recorded trace should be scored? give `trace:` (the spec's "
                      "agent replays none)", hint='e.g. `trace: traces/t1.jsonl` (relative to the spec), '
                      'or give the agent `replay: "traces/{task_id}.jsonl"`')
            return None
        from mapc.runtime.agent_rt import fill_placeholders

        try:
            trace = fill_placeholders(agent.replay, {"task_id": task, "seed": 0})
        except ValueError:
            trace = agent.replay
    resolved = _test_path(ctx, trace, path + (("trace",) if "trace" in t else ("task",)), must_exist=True,
                          what=None if "trace" in t else "agent.replay for this task")
    if resolved is None:
        return None
    return ir.SpecTest(t.get("name") or f"task {task}", None, str(resolved), task, t.get("expected"),
                       expect, path)


def _test_path(ctx: Context, rel: str, path: tuple, *, must_exist: bool, what: str | None = None) -> Path | None:
    """A test's file, resolved inside the spec's folder (None, with a diagnostic, when it is not)."""
    problem = path_problem(rel)
    if problem:
        ctx.error("invalid_value", path, f"the path {problem}")
        return None
    folder = ctx.base_dir.resolve()
    p = (folder / rel).resolve()
    label = f"{rel} ({what})" if what else rel
    if p != folder and folder not in p.parents:
        ctx.error("invalid_value", path, f"{label} is outside the spec's folder",
                  hint="test files live in the spec's folder or below it")
        return None
    if must_exist and not p.is_file():
        ctx.error("missing_file", path, f"test trace not found: {label}",
                  hint=f"paths are relative to the spec's folder ({ctx.base_dir})")
        return None
    return p
