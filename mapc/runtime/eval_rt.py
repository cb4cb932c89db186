"""Runtime units for scoring mapped traces (RELAI runners, cap-evolve adapters).

A trace is mapped into canonical records; :func:`group_trajectories` puts each
trajectory's events and signals together; :func:`evaluation_scope` builds the
object evaluator expressions see; :func:`score_evaluators` runs the generated
evaluator functions and checks every score against its declared range.

"""

import math

from .mapping_rt import MappingError


def group_trajectories(records):
    """Trajectories in stream order, each with its events, signals and artifacts; not the
    subtrajectories (:func:`is_subtrajectory`): part of the run that spawned them, they answer
    no task of their own."""
    out = []
    by_id = {}
    for rec in records:
        kind = rec.get("record_type")
        if kind == "trajectory":
            if rec["id"] not in by_id:
                entry = {"record": rec, "events": [], "signals": [], "artifacts": []}
                by_id[rec["id"]] = entry
                if not is_subtrajectory(rec):
                    out.append(entry)
        elif kind in ("event", "signal", "artifact"):
            entry = by_id.get(rec.get("trajectory_id"))
            if entry is not None:
                entry[kind + "s"].append(rec)
    return out


def is_subtrajectory(rec):
    """Whether a trajectory record is a subtrajectory: a file the trace named, mapped as a child
    of the trajectory that spawned it (its ``metadata.spawned_by``, D109)."""
    metadata = rec.get("metadata")
    return bool(rec.get("parent_id")) and isinstance(metadata, dict) and "spawned_by" in metadata


def content_text(content):
    """Message content as text: strings as-is; content parts joined by their text."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict):
                text = part.get("text")
                if text is None and isinstance(part.get("content"), str):
                    text = part["content"]
                if isinstance(text, str):
                    texts.append(text)
        return "\n".join(texts)
    if isinstance(content, dict) and isinstance(content.get("text"), str):
        return content["text"]
    return None


AGENT_ROLES = ("assistant", "agent", "ai", "model")


def is_agent_turn(sem):
    return sem.get("kind") == "generation" or (
        sem.get("kind") == "message" and sem.get("role") in AGENT_ROLES
    )


def default_final_output(events, sem):
    """The content of the last agent turn, when the spec names no final_output."""
    for ev in reversed(events):
        info = sem.get(ev["id"]) if sem else None
        if info and is_agent_turn(info):
            text = content_text(info.get("content"))
            if text:
                return text
    return None


def evaluation_scope(entry, st, task):
    """What evaluator expressions see as ``@``."""
    rec = entry["record"]
    signals = {}
    for sig in entry["signals"]:
        signals[sig["name"]] = sig["value"]
    output = st.final_outputs.get(rec["id"]) if rec["id"] in st.final_outputs else None
    if output is None:
        output = default_final_output(entry["events"], st.sem)
    return {
        "signals": signals,
        "signal_list": [
            {"name": s["name"], "value": s["value"], "unit": s.get("unit")}
            for s in entry["signals"]
        ],
        "output": output,
        "events": entry["events"],
        "trajectory": rec,
        "status": rec.get("status"),
        "task": task,
    }


def template_text(value):
    """A value placed into feedback text."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (int, str)):
        return str(value)
    import json

    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def score_evaluators(functions, table, scope, variables):
    """Run every evaluator. Returns ``(evaluations, errors)``.

    An evaluation is ``{evaluator_id, score, feedback, min_score, max_score}``
    with the score inside its range; an evaluator that raises, returns null,
    a non-number or an out-of-range score becomes an error instead.
    """
    evaluations = []
    errors = []
    for fn, meta in zip(functions, table):
        low, high = meta["min"], meta["max"]
        try:
            score, feedback = fn(scope, variables)
        except Exception as exc:  # an expression type error on unexpected data
            errors.append(
                {"evaluator_id": meta["id"], "message": f"evaluation failed: {exc}"[:500]}
            )
            continue
        if isinstance(score, bool):
            score = high if score else low
        if score is None:
            errors.append(
                {
                    "evaluator_id": meta["id"],
                    "message": "score expression gave null (is the data it reads missing?)",
                }
            )
            continue
        if not isinstance(score, (int, float)) or not math.isfinite(score):
            errors.append(
                {
                    "evaluator_id": meta["id"],
                    "message": f"score must be a finite number, got {score!r}"[:500],
                }
            )
            continue
        if not low <= score <= high:
            errors.append(
                {
                    "evaluator_id": meta["id"],
                    "message": f"score {score} is outside [{low}, {high}]",
                }
            )
            continue
        if not feedback or not str(feedback).strip():
            feedback = (
                f"{meta['description']}: {template_text(score)} "
                f"(range {template_text(low)} to {template_text(high)})"
            )
        evaluations.append(
            {
                "evaluator_id": meta["id"],
                "score": score,
                "feedback": str(feedback),
                "min_score": low,
                "max_score": high,
            }
        )
    return evaluations, errors


def normalized(evaluation):
    """A score mapped to 0..1 from its declared range."""
    low, high = evaluation["min_score"], evaluation["max_score"]
    return (evaluation["score"] - low) / (high - low)


def combine_rewards(evaluations, table, how):
    """One reward in [0, 1] from normalized evaluator scores (mean, primary, min, weighted)."""
    if not evaluations:
        return 0.0
    by_id = {e["evaluator_id"]: normalized(e) for e in evaluations}
    if how == "primary":
        for meta in table:
            if meta["primary"] and meta["id"] in by_id:
                return by_id[meta["id"]]
        return 0.0
    if how == "min":
        return min(by_id.values())
    if how == "weighted":
        total = sum(m["weight"] for m in table if m["id"] in by_id)
        if total <= 0:
            return 0.0
        return sum(by_id[m["id"]] * m["weight"] for m in table if m["id"] in by_id) / total
    return sum(by_id.values()) / len(by_id)


def pick_trajectory(entries, records, task_id):
    """The trajectory that answers ``task_id``: the only one, or the one whose
    case or trajectory id is the task id, else the first."""
    if len(entries) <= 1:
        return entries[0] if entries else None
    case_of = {}
    groups = {r["id"]: r.get("case_id") for r in records if r.get("record_type") == "group"}
    for e in entries:
        case_of[e["record"]["id"]] = groups.get(e["record"].get("group_id"))
    for e in entries:
        if task_id in (e["record"]["id"], case_of.get(e["record"]["id"])):
            return e
    return entries[0]


def evaluate_trace(map_source, src, task, functions, table, tables):
    """Map one trace and score its trajectory for ``task``.

    Returns ``(records, state, entry, scope, evaluations, errors)``; raises
    MappingError when the trace cannot be mapped or holds no trajectory.
    """
    from .stream import collect_records

    records, st = collect_records(map_source, src)
    entries = group_trajectories(records)
    entry = pick_trajectory(entries, records, task["id"])
    if entry is None:
        raise MappingError("the trace holds no trajectory")
    scope = evaluation_scope(entry, st, task)
    evaluations, errors = score_evaluators(
        functions, table, scope, {"task": task, "tables": tables}
    )
    return records, st, entry, scope, evaluations, errors


def unpaired_result(ev, call_id, what):
    """The warning for a tool result whose call no earlier event of its trajectory made."""
    return (
        f"event {ev['id']!r}: the tool result for call {call_id!r} answers no call an earlier "
        f"event made; {what}; hint: check the spec's tool_calls ids and tool_call_id, "
        "and the trace"
    )
