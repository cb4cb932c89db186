"""What a spec's adapter reads, emits and executes: the facts ``mapc review`` prints and the
table at the top of every generated entry file, from one place so they cannot disagree."""

from __future__ import annotations

from mapc.codegen.pysrc import comment_text


def describe_spec(spec) -> tuple[dict, dict, dict]:
    """``(reads, emits, executes)`` of a spec: source format, probe, limits and field paths;
    records (with their spec lines), event kinds per rule, signals, evaluators and tasks;
    the agent and prepare commands as declared."""
    from mapc.analysis.reads import read_paths, spec_reads
    from mapc.analysis.streaming import stream_plan

    src = spec.source
    reads = spec_reads(spec)
    siblings: dict[str, dict] = {}
    for name, candidates in src.siblings:
        siblings[name] = {"files": list(candidates), "paths": read_paths(reads, f"sibling:{name}")}
    read = {
        "format": src.format,
        "container": src.container,
        "relative_to": {"jsonl": "each line", "csv": "each row"}.get(src.container, "the document"),
        "probe": {"bytes": src.probe.bytes, "lines": src.probe.lines, "require": list(src.probe.require_text),
                  "when": src.probe.when.text if src.probe.when else None},
        "limits": {"max_bytes": src.max_bytes, "max_line_bytes": src.max_line_bytes},
        "paths": read_paths(reads),
        "approximate": sorted({x.path for x in reads if not x.exact}),
        "siblings": siblings,
        "memory": stream_plan(spec).describe(),
        # files the trace names, each mapped as a child trajectory (D109)
        "subtrajectories": [{"path": s.path.text, "where": _where(s.at), "line": _line(spec, s.at)}
                            for s in spec.subtrajectories],
    }
    records = []
    parent = "source file"
    for lv in spec.levels:
        how = f"one per element of {lv.scope.loops[0].each.text}" if lv.scope.loops else f"one per {parent}"
        how += _stream_notes(lv.scope.loops)
        records.append({"record": lv.name, "how": how + ("" if lv.declared else ", not in the spec"),
                        "line": _line(spec, lv.path) if lv.declared else None})
        parent = lv.name
    ev = spec.events
    records.append({"record": "event",
                    "how": (f"one per element of {ev.scope.loops[0].each.text}" if ev.scope.loops else "one per trajectory")
                    + _stream_notes(ev.scope.loops),
                    "line": _line(spec, ("records", "events"))})
    kinds, signals = [], []
    for lv in spec.levels:
        signals += [_name(s.name) for s in lv.signals]
    for rule in ev.rules:
        when = rule.when.text if rule.when is not None else None
        line = _line(spec, rule.path)
        if rule.skip:
            kinds.append({"kind": "(skipped)", "when": when, "line": line})
        for t in rule.emits:
            kinds.append({"kind": t.kind, "when": when if t.when is None else f"{when} and {t.when.text}",
                          "line": line})
            if t.subtrajectory is not None:
                kinds[-1]["subtrajectory"] = t.subtrajectory.path.text
            signals += [_name(s.name) + _counting(s) for s in t.signals]
    emits = {
        "records": records,
        "event_kinds": kinds,
        "signals": list(dict.fromkeys(signals)),
        "evaluators": [{"id": e.id, "range": [e.low, e.high], "description": e.description}
                       for e in spec.evaluators],
        "tasks": len(spec.tasks.items) if spec.tasks else 0,
    }
    executes: dict = {}
    agent = spec.agent
    if agent is not None:
        if agent.command:
            executes["agent command"] = list(agent.command)
        if agent.prepare:
            executes["prepare command"] = list(agent.prepare)
        if agent.replay:
            executes["replays recorded traces"] = agent.replay
        if agent.trace:
            executes["reads the agent's trace at"] = agent.trace
        if agent.env:
            executes["agent environment"] = dict(agent.env)
        executes["timeout seconds"] = agent.timeout
    return read, emits, executes


def _stream_notes(loops) -> str:
    """What a level's loops merge and carry (`merge`, `carry`), as the review says it."""
    notes = []
    for lp in loops:
        if lp.merge is not None:
            m = lp.merge
            notes.append(f"elements sharing {m.by.text} merged" if m.by is not None
                         else f"runs of consecutive elements where {m.when.text} merged")
        if lp.carry:
            notes.append("carrying " + ", ".join(c.name for c in lp.carry))
    return "".join(f", {n}" for n in notes)


def _counting(sig) -> str:
    """`` (cumulative)``, `` (total)``: how an event rule's signal counts (`counter`, `total`)."""
    notes = [n for n, on in (("cumulative", sig.counter == "cumulative"), ("total", sig.total)) if on]
    return f" ({', '.join(notes)})" if notes else ""


def _line(spec, path) -> int | None:
    mark = spec.locate(tuple(path), key=True) if spec.locate else None
    return mark.line if mark is not None and mark.line else None


def _where(path) -> str:
    from mapc.core.diagnostics import format_path

    return format_path(path)


def _name(v) -> str:
    from mapc.spec import ir

    return str(v.value) if isinstance(v, ir.Literal) else f"({getattr(v, 'text', 'computed')})"


#: what the container holds, as the review says it
CONTAINER_TEXT = {"jsonl": "JSON Lines", "csv": "CSV rows", "json": "one JSON document"}


def header_table(spec, *, evaluators: bool) -> str:
    """The table at the top of a generated entry file: what it reads (format, container,
    probe), each record level and event rule with its spec line, the signals and (for hosts
    that score) the evaluators. Plain text, at most 95 columns a line."""
    read, emits, _ = describe_spec(spec)
    probe = read["probe"]
    out = [f"reads    {read['format']}, {CONTAINER_TEXT.get(read['container'], read['container'])}"
           + f"; probe {probe['bytes']} bytes" + (f" / {probe['lines']} lines" if read["container"] != "json" else "")]
    test = ([f"requires {', '.join(probe['require'])}"] if probe["require"] else []) + (
        [f"when {probe['when']}"] if probe["when"] else [])
    if test and len(out[0] + "; " + "; ".join(test)) <= 95:
        out[0] += "; " + "; ".join(test)  # all on the first line when it fits
    else:
        if test and len("; ".join(test)) <= 86:
            test = ["; ".join(test)]
        out += ["         " + x for x in test]
    out.append("line     emits")
    left_out = [rec["record"] for rec in emits["records"] if rec["how"].endswith(", not in the spec")]
    if len(left_out) > 1:  # one row for the levels the spec leaves out
        out.append(f"   -     {', '.join(left_out)}: not in the spec, the defaults")
    for rec in emits["records"]:
        if len(left_out) > 1 and rec["record"] in left_out:
            continue
        out.append(f"{rec['line'] or '-':>4}     {rec['record']}, {rec['how']}"
                   + (", by the first rule that matches:" if rec["record"] == "event" else ""))
    for k in emits["event_kinds"]:
        out.append(f"{k['line'] or '-':>4}       {k['kind']} " + (f"when {k['when']}" if k["when"] else "otherwise"))
        if k.get("subtrajectory"):
            out.append(f"           after the trajectory of the file {k['subtrajectory']}")
    if emits["signals"]:
        out.append(f"signals  {', '.join(emits['signals'])}")
    if evaluators and emits["evaluators"]:
        out.append("scores   " + ", ".join(f"{e['id']} [{e['range'][0]:g}, {e['range'][1]:g}]"
                                            for e in emits["evaluators"]))
    return "\n".join(_cut(comment_text(x, 2000)) for x in out)


def _cut(line: str, width: int = 95) -> str:
    return line if len(line) <= width else line[: width - 3] + "..."
