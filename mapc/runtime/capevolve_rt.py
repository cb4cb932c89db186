"""Runtime units for cap-evolve adapters: tasks, rollouts and scores.

The generated ``Adapter`` class is a thin shell: each method calls one unit
here and builds cap-evolve's ``Task``, ``Rollout`` or ``Score`` from the plain
keyword-argument dict it returns. That keeps this module standard-library
only and testable without cap-evolve installed.

Rules the units keep (cap-evolve's adapter contract):
- ``run_target`` never raises: an unknown task, a failed or timed-out agent,
  a missing or unmappable trace become ``Rollout.error``;
- a rollout carries its canonical trace, so ``score`` re-evaluates from the
  rollout alone and is deterministic;
- a reward is in [0, 1]; the metrics catalog has exactly one primary entry,
  equal to the reward;
- feedback never shows the task's gold target: text that comes from data is
  scrubbed of it (see :func:`capevolve_scrub_gold`).

"""

import copy
import json
import math
import os
import re

from .agent_rt import bounded_mapping, load_tasks, run_agent
from .eval_rt import (
    group_trajectories, content_text, evaluation_scope, template_text, score_evaluators,
    combine_rewards, unpaired_result,
)
from .mapping_rt import json_type, one_line


CAPEVOLVE_SPLITS = ("train", "val", "test")
CAPEVOLVE_WITHHELD = "[withheld]"
CAPEVOLVE_MAX_RESULT_CHARS = 1000
CAPEVOLVE_MAX_ERROR_CHARS = 500
CAPEVOLVE_MAX_GOLD_FORMS = 2000


CAPEVOLVE_COMBINE_TEXT = {
    "mean": "the mean of {n} evaluator score(s)",
    "min": "the lowest of {n} evaluator score(s)",
    "weighted": "the weighted mean of {n} evaluator score(s)",
    "primary": "the score of the primary evaluator, {primary}",
}


def capevolve_data_dir(module_file, env_name):
    """The folder holding tasks.jsonl and traces/: next to adapter.py unless
    ``env_name`` is set."""
    override = os.environ.get(env_name)
    if override:
        return os.path.abspath(override)
    return os.path.dirname(os.path.realpath(module_file))


def capevolve_project_root(env_name):
    """Where an agent command runs: ``env_name`` if set, else the current directory.

    cap-evolve is run from the repository root (``cap-evolve check
    .capevolve/project``), and passes candidate directories relative to it.
    """
    return os.path.abspath(os.environ.get(env_name) or os.getcwd())


def capevolve_catalog(path):
    """The task catalog (tasks.jsonl); a clear RuntimeError when it cannot be read."""
    try:
        return load_tasks(path)
    except OSError as exc:
        raise RuntimeError(f"cannot read the task catalog {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise RuntimeError(f"the task catalog {path} is not JSON Lines: {exc}") from None


def capevolve_split(rows, split):
    """The catalog rows of ``split``.

    ``all`` is every task. When the spec assigned splits, ``train``/``val``/``test``
    return their own tasks; otherwise every split is the full set and
    cap-evolve's harness makes its own seeded split.
    """
    if split == "all":
        return list(rows)
    if split not in CAPEVOLVE_SPLITS:
        raise ValueError(f"unknown split {split!r}; expected train, val, test or all")
    if any(row.get("split") for row in rows):
        return [row for row in rows if row.get("split") == split]
    return list(rows)


def capevolve_task_fields(row):
    """``Task(...)`` arguments for one catalog row, as fresh copies on every call."""
    metadata = copy.deepcopy(row.get("metadata") or {})
    for key in ("description", "tags", "split"):
        if row.get(key) and key not in metadata:
            metadata[key] = copy.deepcopy(row[key])
    return {
        "id": row["id"],
        "input": copy.deepcopy(row.get("input")),
        "target": copy.deepcopy(row.get("target")),
        "metadata": metadata,
    }


def capevolve_task_scope(row, task_id, task_input, target):
    """``$task`` for evaluators: the catalog row, with the input and target of the Task given."""
    row = row or {}
    return {
        "id": task_id,
        "input": task_input,
        "target": target,
        "metadata": row.get("metadata") or {},
        "tags": row.get("tags") or [],
        "split": row.get("split"),
        "description": row.get("description"),
    }


def capevolve_unknown_task(task_id, catalog_size):
    """Why a task id this adapter does not know is neither run nor scored."""
    return f"unknown task {task_id!r}: it is not among this adapter's {catalog_size} tasks"


def capevolve_error_rollout(task_id, message):
    """``Rollout(...)`` arguments for an infrastructure failure."""
    text = " ".join(str(message).split())
    if len(text) > CAPEVOLVE_MAX_ERROR_CHARS:
        text = text[: CAPEVOLVE_MAX_ERROR_CHARS - 3] + "..."
    return {"task_id": task_id, "error": text or "the run failed"}


def capevolve_failure_text(exc):
    """One line for an exception inside the adapter (RuntimeErrors carry their own wording)."""
    return " ".join(str(exc).split()) if type(exc) is RuntimeError else one_line(exc)


def capevolve_candidate(ctx):
    """The candidate the harness made live (``ctx``, usually a relative Path), made absolute."""
    if ctx is None:
        return os.getcwd()
    try:
        return os.path.abspath(os.fspath(ctx))
    except TypeError:
        return str(ctx)


def capevolve_pick(entries, records, task_id, seed):
    """``(trajectory entry, None)``, or ``(None, why)`` when the trace does not answer the task.

    A trace with one trajectory answers whatever task produced it. A trace with
    several (a recorded results file) must hold ones whose trajectory or case
    id is the task id; trial ``seed`` replays the ``seed``-th of them (wrapping
    around), so repeated trials walk through the recorded attempts.
    """
    if not entries:
        return None, "the trace holds no trajectory"
    if len(entries) == 1:
        return entries[0], None
    case_of = {r["id"]: r.get("case_id") for r in records if r.get("record_type") == "group"}
    mine = [
        e
        for e in entries
        if task_id in (e["record"]["id"], case_of.get(e["record"].get("group_id")))
    ]
    if not mine:
        return None, (
            f"the trace holds {len(entries)} trajectories and none has the task id {task_id!r} "
            "as its case or trajectory id (map records.case.id to the task id)"
        )
    return mine[seed % len(mine)], None


def capevolve_result_text(value):
    """A tool result as bounded text for ``Rollout.tool_calls``."""
    text = content_text(value) if not isinstance(value, dict) else None
    if text is None:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    if len(text) > CAPEVOLVE_MAX_RESULT_CHARS:
        text = text[: CAPEVOLVE_MAX_RESULT_CHARS - 3] + "..."
    return text


def capevolve_tool_calls(events, sem, notes=None):
    """``[{id, name, arguments, result?}]`` in call order, from the semantic event view.

    Calls come from an agent turn's ``tool_calls`` or from a ``tool`` event's
    ``tool_name``/``arguments``; a later event answering a call (its
    ``tool_call_id``) adds the call's ``result``; ``notes`` gets a line for a result whose
    call no earlier event made.
    """
    calls = []
    by_id = {}

    def add(call_id, name, arguments):
        item = {"id": call_id, "name": name, "arguments": arguments}
        calls.append(item)
        if call_id is not None and call_id not in by_id:
            by_id[call_id] = item
        return item

    for ev in events:
        info = sem.get(ev["id"]) if sem else None
        if not info:
            continue
        listed = info.get("tool_calls")
        for call in listed if isinstance(listed, list) else ():
            if isinstance(call, dict):
                add(call.get("id"), call.get("name"), call.get("arguments"))
        call_id = info.get("tool_call_id")
        result = info["result"] if "result" in info else info.get("content")
        if info.get("kind") == "tool" and info.get("tool_name") is not None:
            item = by_id.get(call_id) if call_id is not None else None
            if item is None:
                item = add(call_id, info["tool_name"], info.get("arguments"))
            if result is not None:
                item["result"] = capevolve_result_text(result)
        elif call_id is not None and call_id in by_id and result is not None:
            by_id[call_id]["result"] = capevolve_result_text(result)
        elif call_id is not None and result is not None and notes is not None:
            notes.append(unpaired_result(ev, call_id, "left out of tool_calls"))
    return calls


def capevolve_number(fn, scope, variables, key, notes):
    """One usage value (``usage.cost_usd`` or ``usage.tokens``): a finite number
    >= 0, else None."""
    try:
        value = fn(scope, variables)
    except Exception as exc:  # an expression type error on unexpected data
        notes.append(f"usage.{key} failed: {exc}"[:CAPEVOLVE_MAX_ERROR_CHARS])
        return None
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value < 0
    ):
        notes.append(
            f"usage.{key} gave {json_type(value)} {str(value)[:80]!r}; expected a number >= 0"
        )
        return None
    return value


def capevolve_usage(usage, scope, variables):
    """``(cost_usd, tokens, notes)`` from the spec's usage expressions (0 when absent)."""
    notes = []
    cost = tokens = None
    if "cost_usd" in usage:
        cost = capevolve_number(usage["cost_usd"], scope, variables, "cost_usd", notes)
    if "tokens" in usage:
        tokens = capevolve_number(usage["tokens"], scope, variables, "tokens", notes)
    return float(cost or 0.0), int(round(tokens or 0)), notes


def capevolve_trace(entry, fmt):
    """What ``Rollout.trace`` holds: the trajectory's canonical records, enough to score again."""
    return {
        "format": fmt,
        "trajectory": entry["record"],
        "events": entry["events"],
        "signals": entry["signals"],
        "artifacts": entry["artifacts"],
    }


def capevolve_run(task_id, row, ctx, seed, program):
    """``run_target``'s work: run (or replay) the agent, map its trace, build
    ``Rollout`` arguments.

    ``program`` holds the generated module's pieces: ``agent`` (AGENT),
    ``data_dir``, ``project_root``, ``map_source``, ``usage`` (USAGE),
    ``tables``, ``format``, ``max_bytes``, ``max_line_bytes`` and
    ``catalog_size``. Never raises for a failed run: the reason becomes
    ``error``.
    """
    from .stream import SourceFile, collect_records

    if row is None:
        return capevolve_error_rollout(
            task_id, capevolve_unknown_task(task_id, program["catalog_size"])
        )
    if isinstance(seed, bool) or not isinstance(seed, int):
        return capevolve_error_rollout(task_id, f"seed must be an integer, got {seed!r}")
    agent = program["agent"]
    replay = bool(agent.get("replay"))
    root = program["data_dir"] if replay else program["project_root"]
    try:
        trace, reason = run_agent(
            agent, row, project_root=root, seed=seed, candidate=capevolve_candidate(ctx)
        )
    except (OSError, ValueError) as exc:  # e.g. the trace folder cannot be created
        trace, reason = None, f"cannot run the agent: {exc}"
    if reason:
        return capevolve_error_rollout(task_id, reason)
    rel = os.path.relpath(trace, root).replace(os.sep, "/")
    try:
        src = SourceFile(trace, None, program["max_bytes"], program["max_line_bytes"])
        records, st = collect_records(bounded_mapping(program["map_source"]), src)
    except Exception as exc:  # the trace does not fit the spec: a failed run, not a crash
        return capevolve_error_rollout(task_id, f"cannot map the trace {rel}: {one_line(exc)}")
    entry, problem = capevolve_pick(group_trajectories(records), records, task_id, seed)
    if problem:
        return capevolve_error_rollout(task_id, f"{rel}: {problem}")
    task = capevolve_task_scope(row, task_id, row.get("input"), row.get("target"))
    scope = evaluation_scope(entry, st, task)
    cost, tokens, notes = capevolve_usage(
        program["usage"], scope, {"task": task, "tables": program["tables"]}
    )
    metadata = {
        "trace": rel,
        "trajectory_id": entry["record"]["id"],
        "seed": seed,
        "mode": "replay" if replay else "command",
    }
    if st.warnings:
        metadata["mapping_warnings"] = st.warnings
        metadata["warning_messages"] = list(st.messages)
    if notes:
        metadata["usage_notes"] = notes
    unpaired = []
    tool_calls = capevolve_tool_calls(entry["events"], st.sem, unpaired)
    if unpaired:
        metadata["pairing_warnings"] = unpaired
    return {
        "task_id": task_id,
        "output": scope["output"],
        "trace": capevolve_trace(entry, program["format"]),
        "tool_calls": tool_calls,
        "cost_usd": cost,
        "tokens": tokens,
        "metadata": metadata,
    }


def capevolve_has_trace(trace):
    return isinstance(trace, dict) and isinstance(trace.get("events"), list)


def capevolve_scope(output, trace, task):
    """The evaluation scope rebuilt from a rollout (same shape as ``evaluation_scope``).

    A rollout without a trace (e.g. cap-evolve check's probe) gives a scope
    with its output and no signals or events.
    """
    doc = trace if capevolve_has_trace(trace) else {}
    signals = [
        s
        for s in doc.get("signals") or ()
        if isinstance(s, dict) and isinstance(s.get("name"), str)
    ]
    events = [e for e in doc.get("events") or () if isinstance(e, dict)]
    traj = doc.get("trajectory") if isinstance(doc.get("trajectory"), dict) else None
    return {
        "signals": {s["name"]: s.get("value") for s in signals},
        "signal_list": [
            {"name": s["name"], "value": s.get("value"), "unit": s.get("unit")} for s in signals
        ],
        "output": output,
        "events": events,
        "trajectory": traj,
        "status": traj.get("status") if traj else None,
        "task": task,
    }


def capevolve_oriented(evaluations, errors, table):
    """Evaluations turned so that higher is better; an evaluator that failed
    counts as its worst."""
    by_id = {e["evaluator_id"]: e for e in evaluations}
    failed = {e["evaluator_id"] for e in errors}
    out = []
    for meta in table:
        low, high = meta["min"], meta["max"]
        if meta["id"] in by_id:
            score = by_id[meta["id"]]["score"]
            if meta["direction"] == "lower":
                score = low + high - score
        elif meta["id"] in failed:
            score = low
        else:
            continue
        out.append(
            {"evaluator_id": meta["id"], "score": score, "min_score": low, "max_score": high}
        )
    return out


def capevolve_reward(evaluations, errors, table, how):
    """The reward in [0, 1]: normalized, oriented evaluator scores combined as the spec says."""
    reward = float(combine_rewards(capevolve_oriented(evaluations, errors, table), table, how))
    if not math.isfinite(reward):
        return 0.0
    return min(1.0, max(0.0, reward))


def capevolve_metrics(reward, evaluations, table, usage_values):
    """The metrics catalog: ``reward`` (primary), each evaluator's own score, then usage.

    Display entries keep each evaluator's own scale and direction; an
    evaluator literally named ``reward`` that equals the reward is not repeated.
    """
    metrics = [{"name": "reward", "value": reward, "primary": True, "direction": "higher"}]
    used = {"reward"}

    def add(name, value, direction, suffix):
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
        ):
            return
        while name in used:
            name += suffix
        used.add(name)
        metrics.append({"name": name, "value": value, "primary": False, "direction": direction})

    by_id = {e["evaluator_id"]: e for e in evaluations}
    for meta in table:
        e = by_id.get(meta["id"])
        if e is None or (meta["id"] == "reward" and e["score"] == reward):
            continue
        add(meta["id"], e["score"], meta["direction"], " (evaluator)")
    for key, value in usage_values:
        add(key, value, "lower", " (usage)")
    return metrics


def capevolve_default_feedback(evaluation, meta):
    """True when an evaluation's feedback is score_evaluators' fallback (the spec gave none)."""
    fallback = (
        f"{meta['description']}: {template_text(evaluation['score'])} "
        f"(range {template_text(meta['min'])} to {template_text(meta['max'])})"
    )
    return evaluation["feedback"] == fallback


def capevolve_feedback(reward, evaluations, errors, table, how, has_trace, target):
    """Feedback that explains the reward evaluator by evaluator, in the spec's own words.

    The parts that come from data (each evaluator's feedback template, which
    may echo the output or the task, and error messages) go through
    :func:`capevolve_scrub_gold`; mapc's own frame (ids, descriptions, scores,
    ranges) holds no task data. Its numbers carry two decimals, so a short
    numeric target such as ``0`` is not mistaken for one of them.
    """
    scored = [m for m in table if m["id"] in {e["evaluator_id"] for e in evaluations + errors}]
    primary = next((m["id"] for m in table if m["primary"]), "")
    how_text = CAPEVOLVE_COMBINE_TEXT.get(how, how).format(n=len(scored), primary=primary)
    inverted = (
        " (lower-is-better scores inverted)"
        if any(m["direction"] == "lower" for m in scored)
        else ""
    )
    lines = [f"Reward {reward:.2f}: {how_text}, each scaled to 0-1 by its range{inverted}."]
    if not has_trace:
        lines.append(
            "This rollout has no trace, only its output: evaluators that read the trace's "
            "signals or events had nothing to read."
        )
    by_id = {e["evaluator_id"]: e for e in evaluations}
    why = {e["evaluator_id"]: e["message"] for e in errors}
    for meta in table:
        head = f"- {meta['id']} ({meta['description']}"
        head += "; lower is better): " if meta["direction"] == "lower" else "): "
        e = by_id.get(meta["id"])
        if e is not None:
            text = f"{e['score']:.2f} on a {meta['min']:.2f} to {meta['max']:.2f} scale."
            if not capevolve_default_feedback(e, meta):
                text += " " + capevolve_scrub_gold(" ".join(e["feedback"].split()), target)
        elif meta["id"] in why:
            reason = capevolve_scrub_gold(why[meta["id"]], target)
            text = f"not scored ({reason}); counted as its worst score."
        else:
            continue
        lines.append(head + text)
    return "\n".join(lines)


def capevolve_gold_forms(target):
    """The texts a gold target may appear as: each leaf's text and number renderings, and its JSON.

    Longest first. Strings are whitespace-normalized; booleans count only as a
    whole target (``true``/``false`` inside a nested target is structure, not an answer).
    """
    forms = set()

    def scalar(value, top):
        if value is None:
            return
        if isinstance(value, bool):
            if top:
                forms.add("true" if value else "false")
            return
        if isinstance(value, (int, float)):
            if not math.isfinite(value):
                return
            forms.update(
                (
                    str(value),
                    json.dumps(value),
                    template_text(value),
                    str(float(value)),
                    f"{value:.2f}",
                )
            )
            if float(value).is_integer():
                forms.add(str(int(value)))
            return
        text = " ".join(str(value).split())
        if text:
            forms.add(text)

    def walk(value, top):
        if isinstance(value, dict):
            for item in value.values():
                walk(item, False)
        elif isinstance(value, (list, tuple)):
            for item in value:
                walk(item, False)
        else:
            scalar(value, top)

    walk(target, True)
    if isinstance(target, (dict, list)):
        for text in (
            json.dumps(target, ensure_ascii=False),
            json.dumps(target, ensure_ascii=False, sort_keys=True),
            json.dumps(target, ensure_ascii=False, separators=(",", ":")),
            template_text(target),
        ):
            forms.add(" ".join(text.split()))
    forms.discard("")
    return sorted(forms, key=lambda f: (-len(f), f))[:CAPEVOLVE_MAX_GOLD_FORMS]


def capevolve_gold_pattern(form):
    """A case-insensitive pattern for ``form`` as a whole token (not inside a
    longer word or number)."""
    body = r"\s+".join(re.escape(part) for part in form.split())
    left = right = ""
    if re.match(r"\w", form[0]):
        left = r"(?<!\w)" + (r"(?<!\d\.)" if form[0].isdigit() else "")
    if re.match(r"\w", form[-1]):
        right = r"(?!\w)" + (r"(?!\.\d)" if form[-1].isdigit() else "")
    return re.compile(left + body + right, re.IGNORECASE)


def capevolve_scrub_gold(text, target):
    """``text`` with every form of the gold ``target`` replaced by ``[withheld]``.

    Feedback is the optimizer's learning signal and must never leak the
    answer, even when an evaluator's template echoes the agent's output
    (which may contain it) or the target itself.
    """
    for form in capevolve_gold_forms(target):
        text = capevolve_gold_pattern(form).sub(CAPEVOLVE_WITHHELD, text)
    return text


def capevolve_errored_score(task_id, error, target):
    """``Score(...)`` arguments for a rollout that failed for an infrastructure
    reason: reward 0."""
    reason = capevolve_scrub_gold(" ".join(str(error).split()), target)
    return {
        "task_id": task_id,
        "reward": 0.0,
        "feedback": (
            "Not scored (reward 0): the run failed for an infrastructure reason, "
            f"not because of the answer: {reason}"
        ),
        "metrics": [{"name": "reward", "value": 0.0, "primary": True, "direction": "higher"}],
        "raw": {"infrastructure_error": reason},
    }


def capevolve_score(task_id, rollout, task, program):
    """``score``'s work: evaluate the rollout's trace (or output alone), build ``Score`` arguments.

    ``rollout`` is ``{output, trace, error, cost_usd, tokens}``; ``task`` is
    the evaluators' ``$task``; ``program`` holds ``functions``
    (EVALUATOR_FUNCTIONS), ``evaluators`` (EVALUATORS), ``combine``,
    ``usage`` and ``tables``. Deterministic for a fixed rollout.
    """
    target = task.get("target")
    if rollout.get("error"):
        return capevolve_errored_score(task_id, rollout["error"], target)
    has_trace = capevolve_has_trace(rollout.get("trace"))
    scope = capevolve_scope(rollout.get("output"), rollout.get("trace"), task)
    table = program["evaluators"]
    evaluations, errors = score_evaluators(
        program["functions"], table, scope, {"task": task, "tables": program["tables"]}
    )
    reward = capevolve_reward(evaluations, errors, table, program["combine"])
    usage_values = [
        (key, rollout.get(key)) for key in ("cost_usd", "tokens") if key in program["usage"]
    ]
    feedback = capevolve_feedback(
        reward, evaluations, errors, table, program["combine"], has_trace, target
    )
    return {
        "task_id": task_id,
        "reward": reward,
        "feedback": feedback,
        "metrics": capevolve_metrics(reward, evaluations, table, usage_values),
        "raw": {
            "scores": {e["evaluator_id"]: e["score"] for e in evaluations},
            "not_scored": sorted(e["evaluator_id"] for e in errors),
        },
    }


def capevolve_unknown_task_score(task_id, catalog_size, target):
    """``Score(...)`` arguments for a task id the adapter does not know: reward 0 with the reason.

    Its evaluators would see no task (no target, no metadata), so scoring the
    output alone could give any reward, 1.0 included.
    """
    reason = capevolve_unknown_task(capevolve_scrub_gold(task_id, target), catalog_size)
    return {
        "task_id": task_id,
        "reward": 0.0,
        "feedback": f"Not scored (reward 0): {reason}.",
        "metrics": [{"name": "reward", "value": 0.0, "primary": True, "direction": "higher"}],
        "raw": {"unknown_task": reason},
    }


def capevolve_scoring_failure(task_id, exc, target):
    """``Score(...)`` arguments when scoring itself failed: reward 0 with the
    reason (never raise)."""
    reason = capevolve_scrub_gold(capevolve_failure_text(exc), target)
    return {
        "task_id": task_id,
        "reward": 0.0,
        "feedback": f"Scoring failed, reward 0: {reason}",
        "metrics": [{"name": "reward", "value": 0.0, "primary": True, "direction": "higher"}],
        "raw": {"scoring_error": reason},
    }
