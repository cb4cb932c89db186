"""RELAI's runner-result rules (``relai.custom_run.v1``) and the task score.

A result is checked against the task's catalog entry: the requested id,
ATIF-valid steps, one in-range evaluation with feedback per declared
evaluator (for a completed run), the failure/evaluation_errors pairing, and
that no sensitive value appears anywhere in it.
"""

from __future__ import annotations

from typing import Any

from mapc.targets.atif_rules import step_problems
from mapc.targets.relai.validator.catalog import Findings, is_number, task_evaluators

RESULT_SCHEMA = "relai.custom_run.v1"
#: Fields holding free-form data (their keys are data too).
FREE_FORM = ("arguments", "extra", "metadata")
#: Fields whose values the contract fixes (ids, versions, sources): not free text.
STRUCTURAL = ("schema_version", "task_id", "evaluator_id", "source", "kind", "timestamp")


def is_failure(result: dict) -> bool:
    return result.get("failure") is not None


def check_result(result: dict, task_id: str, task: dict, f: Findings, *,
                 secrets: dict[str, str] | None = None) -> None:
    """Every result rule; ``task`` is the catalog entry, ``secrets`` sensitive name -> value."""
    if result.get("schema_version") != RESULT_SCHEMA:
        f.error("schema_version", "schema_version", f"must be {RESULT_SCHEMA!r}, got {result.get('schema_version')!r}")
    if result.get("task_id") != task_id:
        f.error("task_id_mismatch", "task_id", f"must be the requested id {task_id!r}, got {result.get('task_id')!r}")
    failed = is_failure(result)
    if "failure" in result and result["failure"] is not None and not isinstance(result["failure"], dict):
        f.error("failure_invalid", "failure", "must be an object (or absent/null for a completed run)")
    _check_trace(result, failed, f)
    if not failed:
        output = result.get("final_output")
        if output is None:
            f.warn("final_output_missing", "final_output", "a completed run should report the agent's final answer")
        elif not isinstance(output, str):
            f.warn("final_output_type", "final_output", "the final answer is usually text (a string)")
    _check_evaluations(result, task, failed, f)
    _check_errors(result, failed, f)
    for name, value in sorted((secrets or {}).items()):
        if value and _contains(result, value):
            f.error("secret_leak", "", f"the value of sensitive variable {name} appears in the result",
                    hint="RELAI redacts trajectories, not final_output or feedback: keep secrets out of the result")


def _contains(value: Any, secret: str, data: bool = False) -> bool:
    """Whether ``secret`` occurs in a text of ``value`` (not in ids, versions or sources the
    contract fixes; inside free-form data such as tool arguments, in keys and numbers too)."""
    if isinstance(value, str):
        return secret in value
    if isinstance(value, dict):
        return any((data and secret in str(k)) or _contains(v, secret, data or k in FREE_FORM)
                   for k, v in value.items() if data or k not in STRUCTURAL)
    if isinstance(value, list):
        return any(_contains(v, secret, data) for v in value)
    if data and isinstance(value, (int, float)) and not isinstance(value, bool):
        return secret in str(value)
    return False


def _check_trace(result: dict, failed: bool, f: Findings) -> None:
    trace = result.get("trace")
    if trace is None:
        if not failed:
            f.error("trace_missing", "trace", "a completed run needs `trace` with `steps` (an array of ATIF steps)")
        return
    if not isinstance(trace, dict):
        f.error("trace_invalid", "trace", "must be an object with `steps`")
        return
    for path, message in step_problems(trace.get("steps")):
        f.error("atif_step", path, message)


def _check_evaluations(result: dict, task: dict, failed: bool, f: Findings) -> None:
    declared = {e["id"]: e for e in task_evaluators(task)}
    evaluations = result.get("evaluations")
    if evaluations is None:
        evaluations = []
        if not failed:
            f.error("evaluations_missing", "evaluations", "a completed run must score every declared evaluator")
    elif not isinstance(evaluations, list):
        f.error("evaluations_invalid", "evaluations", "must be an array")
        return
    scored: dict[str, int] = {}
    for i, ev in enumerate(evaluations):
        p = f"evaluations[{i}]"
        if not isinstance(ev, dict):
            f.error("evaluation_invalid", p, "an evaluation must be an object")
            continue
        eid = ev.get("evaluator_id")
        meta = declared.get(eid) if isinstance(eid, str) else None
        if meta is None:
            known = ", ".join(sorted(declared)) or "none"
            f.error("unknown_evaluator", f"{p}.evaluator_id", f"{eid!r} is not an evaluator of this task (declared: {known})")
        elif eid in scored:
            f.error("duplicate_evaluation", f"{p}.evaluator_id", f"{eid!r} is already scored by evaluations[{scored[eid]}]")
        else:
            scored[eid] = i
        feedback = ev.get("feedback")
        if not isinstance(feedback, str) or not feedback.strip():
            f.error("feedback_empty", f"{p}.feedback", "every evaluation needs nonempty feedback")
        score = ev.get("score")
        if not is_number(score):
            f.error("score_invalid", f"{p}.score", f"must be a finite number, got {score!r}")
            continue
        if meta is None:
            continue
        lo, hi = meta["min_score"], meta["max_score"]
        for key, expected in (("min_score", lo), ("max_score", hi)):
            if key in ev and ev[key] != expected:
                f.error("range_mismatch", f"{p}.{key}", f"is {ev[key]!r} but the catalog declares {expected!r}")
        if not lo <= score <= hi:
            f.error("score_out_of_range", f"{p}.score", f"{score} is outside the declared range [{lo}, {hi}]")
    if not failed:
        missing = [eid for eid in declared if eid not in scored]
        if missing:
            f.error("evaluations_incomplete", "evaluations",
                    f"a completed run must score every declared evaluator exactly once; missing: {', '.join(missing)}",
                    hint="or report a `failure` with `evaluation_errors` naming the evaluators that could not score")


def _check_errors(result: dict, failed: bool, f: Findings) -> None:
    errors = result.get("evaluation_errors")
    if errors is None:
        return
    if not isinstance(errors, list):
        f.error("evaluation_errors_invalid", "evaluation_errors", "must be an array")
        return
    if not failed:
        if errors:
            f.error("errors_without_failure", "evaluation_errors",
                    "evaluation_errors without a `failure` object are invalid",
                    hint='add "failure": {"kind": "evaluation", "message": "..."}')
        else:
            f.warn("errors_without_failure", "evaluation_errors", "an empty evaluation_errors list without `failure`")
    for i, err in enumerate(errors):
        p = f"evaluation_errors[{i}]"
        if not isinstance(err, dict):
            f.error("evaluation_error_invalid", p, "must be an object with evaluator_id and message")
            continue
        for key in ("evaluator_id", "message"):
            if not isinstance(err.get(key), str) or not err[key].strip():
                f.error("evaluation_error_invalid", f"{p}.{key}", "must be a nonempty string")


def task_score(result: dict | None, task: dict) -> float:
    """The score RELAI optimizes: each score normalized to 0-1 by its declared
    range, averaged; a failed task (or a task without a result) scores 0."""
    if result is None or is_failure(result):
        return 0.0
    ranges = {e["id"]: (e["min_score"], e["max_score"]) for e in task_evaluators(task)}
    values = []
    for ev in result.get("evaluations") or []:
        if isinstance(ev, dict) and ev.get("evaluator_id") in ranges and is_number(ev.get("score")):
            lo, hi = ranges[ev["evaluator_id"]]
            values.append((ev["score"] - lo) / (hi - lo))
    return sum(values) / len(values) if values else 0.0


def describe_failure(result: dict) -> str:
    failure = result.get("failure")
    if isinstance(failure, dict):
        kind = failure.get("kind")
        message = failure.get("message")
        text = ": ".join(str(x) for x in (kind, message) if x)
        return text or "failure reported"
    return "failure reported"


def evaluation_summary(result: dict[str, Any]) -> list[dict]:
    """``[{evaluator_id, score}]`` for the report."""
    out = []
    for ev in result.get("evaluations") or []:
        if isinstance(ev, dict):
            out.append({"evaluator_id": ev.get("evaluator_id"), "score": ev.get("score")})
    return out
