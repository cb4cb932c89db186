"""Runtime units for the atif target's converter (the generated ``convert.py``).

The converter maps one trace with the spec, groups its records by trajectory and writes
each top-level trajectory as an ATIF document: the steps ``atif_steps_rt`` builds (the
same as RELAI's), per-step metrics from the event's token signals, final metrics from the
trajectory's, and each subtrajectory the trace spawned embedded in
``subagent_trajectories`` under the id its observation's ``subagent_trajectory_ref`` names.
Everything is built before a byte is written: a trace that fails writes nothing.

"""

import json
import sys

from .atif_steps_rt import atif_steps, atif_ordered
from .eval_rt import is_subtrajectory
from .mapping_rt import MappingError, warn_stderr, one_line


ATIF_SCHEMA_VERSION = "ATIF-v1.8"


#: ATIF metric -> the signal names that give it, first found wins (mapc's library specs
#: name session tokens input/output/cache_read/cache_write: `input` is the uncached part)
ATIF_METRIC_SIGNALS = (
    ("completion_tokens", ("completion_tokens", "output_tokens")),
    ("cached_tokens", ("cached_tokens", "cache_read_tokens")),
    ("cost_usd", ("cost_usd",)),
)


#: Signals whose sum is the prompt when no ``prompt_tokens`` signal gives it: ATIF's
#: prompt counts every input token, cached or not.
ATIF_PROMPT_PARTS = ("input_tokens", "cache_read_tokens", "cache_write_tokens")


#: Signals an ATIF field holds as such; every other signal of a trajectory is kept in
#: ``final_metrics.extra`` under its own name (reward, the input/cache split, ...).
ATIF_NAMED_SIGNALS = ("prompt_tokens", "completion_tokens", "cached_tokens", "cost_usd")


def atif_number(value, integer):
    """A signal value as an ATIF metric: an integer count or a finite number, else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        return None
    if value in (float("inf"), float("-inf")):
        return None
    if integer:
        return int(value) if float(value).is_integer() else None
    return value


def atif_metrics(signals, prefix=""):
    """ATIF metrics (``prefix`` ``total_`` for final metrics) from ``{name: value}``."""
    out = {}
    prompt = atif_number(signals.get("prompt_tokens"), True)
    if prompt is None:
        parts = [atif_number(signals.get(name), True) for name in ATIF_PROMPT_PARTS]
        parts = [p for p in parts if p is not None]
        prompt = sum(parts) if parts else None
    if prompt is not None:
        out[prefix + "prompt_tokens"] = prompt
    for key, names in ATIF_METRIC_SIGNALS:
        for name in names:
            value = atif_number(signals.get(name), key != "cost_usd")
            if value is not None:
                out[prefix + key] = value
                break
    return out


def atif_group(records):
    """Trajectory id -> {record, events, signals (trajectory-level), event_signals
    (event id -> {name: value})}, and the ids of the top-level trajectories in order."""
    by_id = {}
    top = []
    for rec in records:
        kind = rec.get("record_type")
        if kind == "trajectory" and rec["id"] not in by_id:
            by_id[rec["id"]] = {"record": rec, "events": [], "signals": {}, "event_signals": {}}
            if not is_subtrajectory(rec):
                top.append(rec["id"])
            continue
        entry = by_id.get(rec.get("trajectory_id"))
        if entry is None:
            continue
        if kind == "event":
            entry["events"].append(rec)
        elif kind == "signal" and rec.get("event_id") is None:
            entry["signals"][rec["name"]] = rec["value"]
        elif kind == "signal":
            entry["event_signals"].setdefault(rec["event_id"], {})[rec["name"]] = rec["value"]
    return by_id, top


def atif_trajectory(tid, by_id, sem, agent, notes, seen=None):
    """The ATIF document of trajectory ``tid``, its subtrajectories embedded (once each)."""
    entry = by_id[tid]
    seen = set() if seen is None else seen
    seen.add(tid)
    steps = atif_steps(entry["events"], sem, notes)
    model = None
    for n, step in enumerate(steps):
        metrics = atif_metrics(entry["event_signals"].get(step["extra"]["event_id"], {}))
        if metrics and step["source"] == "agent":  # ATIF: metrics are agent-only
            steps[n] = atif_ordered(dict(step, metrics=metrics))
        model = model or step.get("model_name")
    doc = {"schema_version": ATIF_SCHEMA_VERSION, "session_id": tid, "trajectory_id": tid}
    doc["agent"] = dict(agent, model_name=model) if model else dict(agent)
    doc["steps"] = steps
    final = atif_metrics(entry["signals"], "total_")
    final["total_steps"] = len(steps)
    extra = {k: v for k, v in sorted(entry["signals"].items()) if k not in ATIF_NAMED_SIGNALS}
    if extra:
        final["extra"] = extra
    doc["final_metrics"] = final
    record = entry["record"]
    doc["extra"] = {k: record[k] for k in ("status", "termination", "metadata") if k in record}
    subs = []
    for sid, sub in by_id.items():  # the subtrajectories it spawned, in stream order
        child = sub["record"]
        if child.get("parent_id") == tid and sid not in seen and is_subtrajectory(child):
            atif_link_subagent(steps, sid, child["metadata"]["spawned_by"])
            subs.append(atif_trajectory(sid, by_id, sem, agent, notes, seen))
    if subs:
        doc["subagent_trajectories"] = subs
    return doc


def atif_link_subagent(steps, sid, spawned_by):
    """Name subtrajectory ``sid`` in the ``subagent_trajectory_ref`` of the result of the call
    that spawned it, when that result does not name it yet (a subagent mapped from the same
    file: only its record says which call spawned it)."""
    call_id = spawned_by.get("tool_call_id") if isinstance(spawned_by, dict) else None
    results = [r for step in steps for r in step.get("observation", {}).get("results", ())]
    named = [ref["trajectory_id"] for r in results for ref in r.get("subagent_trajectory_ref", ())]
    if sid in named:
        return
    for result in results:
        if call_id is not None and result.get("source_call_id") == call_id:
            refs = result.get("subagent_trajectory_ref", [])
            result["subagent_trajectory_ref"] = refs + [{"trajectory_id": sid}]
            return


def atif_documents(records, sem, agent, notes, pick=None):
    """The ATIF documents of a trace's top-level trajectories (only ``pick``'s, when given)."""
    by_id, top = atif_group(records)
    if pick is not None:
        if pick not in top:
            known = ", ".join(top[:5]) + (", ..." if len(top) > 5 else "")
            raise MappingError(f"the trace has no trajectory {pick!r} (it has: {known or 'none'})")
        top = [pick]
    return [atif_trajectory(tid, by_id, sem, agent, notes) for tid in top]


def atif_parse_args(argv):
    """``TRACE [--trajectory ID | --all]`` -> (trace, pick, every, problem)."""
    trace, pick, every = None, None, False
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        if arg == "--all":
            every = True
        elif arg == "--trajectory" and i < len(argv):
            pick = argv[i]
            i += 1
        elif arg.startswith("--trajectory="):
            pick = arg.partition("=")[2]
        elif arg.startswith("-") and arg != "-":
            return None, None, False, f"unknown option {arg!r}"
        elif trace is None:
            trace = arg
        else:
            return None, None, False, "give one trace"
    if trace is None:
        return None, None, False, "give a trace"
    if pick is not None and every:
        return None, None, False, "--trajectory and --all exclude each other"
    return trace, pick, every, None


def atif_main(argv, map_source, agent, max_bytes, max_line_bytes):
    """The converter: one trace in; one ATIF trajectory (or, with ``--all``, one per line)
    out. Exit 1 with one line on stderr, and nothing on stdout, when the trace fails."""
    from .stream import SourceFile, collect_records

    trace, pick, every, problem = atif_parse_args(argv)
    if problem:
        sys.stderr.write(f"error: {problem}; usage: convert.py TRACE [--trajectory ID | --all]\n")
        return 2
    notes = []
    try:
        src = SourceFile(trace, None, max_bytes, max_line_bytes)
        records, st = collect_records(map_source, src)
        docs = atif_documents(records, st.sem, agent, notes, pick)
        if not docs:
            raise MappingError("the trace holds no trajectory")
        if len(docs) > 1 and not every:
            ids = ", ".join(d["trajectory_id"] for d in docs[:3])
            ids += ", ..." if len(docs) > 3 else ""
            raise MappingError(
                f"the trace holds {len(docs)} trajectories ({ids}); pick one with "
                "--trajectory ID, or write them all, one per line, with --all"
            )
        if every:
            text = "".join(
                json.dumps(d, ensure_ascii=False, separators=(",", ":"), allow_nan=False) + "\n"
                for d in docs
            )
        else:
            text = json.dumps(docs[0], ensure_ascii=False, indent=2, allow_nan=False) + "\n"
    except Exception as exc:  # every failure is one line on stderr, nothing on stdout
        sys.stderr.write("error: " + one_line(exc) + "\n")
        return 1
    warn_stderr(st)
    for note in notes:
        sys.stderr.write(f"warning: {note}\n")
    sys.stdout.buffer.write(text.encode("utf-8"))
    sys.stdout.flush()
    return 0
