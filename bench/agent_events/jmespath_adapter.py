#!/usr/bin/env python3
"""The benchmark's agent-event mapping, evaluated with ``jmespath.search`` per record.

A table-driven adapter: the expressions are the ones ``spec.yaml`` writes,
interpreted by the reference ``jmespath`` package at run time for every
line (mapc's ``iso8601`` registered as a custom function). Reading and
writing are done as in ``handwritten.py``, so the difference between the two
is the cost of evaluating expressions at run time. bench/run.py checks that
it prints the same records as the generated adapter.

Usage: jmespath_adapter.py SOURCE [--raw]
"""

import json
import os
import sys
from datetime import datetime, timezone

import jmespath
from jmespath import functions


class MapcFunctions(functions.Functions):
    @functions.signature({"types": ["number", "string", "null"]})
    def _func_iso8601(self, ts):
        if not isinstance(ts, (int, float)):
            return None
        return datetime.fromtimestamp(ts, timezone.utc).isoformat().replace("+00:00", "Z")


OPTIONS = jmespath.Options(custom_functions=MapcFunctions())

# records.events.rules of spec.yaml: (when, kind, timestamp, layout, signals)
RULES = [
    {"when": "type == 'heartbeat'", "skip": True},
    {"when": "type == 'message'", "kind": "message", "timestamp": "iso8601(ts)",
     "input": {"role": "role", "content": "content"}},
    {"when": "type == 'generation'", "kind": "generation", "timestamp": "iso8601(ts)",
     "output": {"role": "'assistant'", "content": "content", "model": "model", "tool_calls": "tool_calls"},
     "signals": [("prompt_tokens", "usage.prompt_tokens", "tokens"),
                 ("completion_tokens", "usage.completion_tokens", "tokens")]},
    {"when": "type == 'tool'", "kind": "tool", "timestamp": "iso8601(ts)",
     "input": {"name": "name", "arguments": "args", "id": "call_id"}, "output": "result",
     "signals": [("latency", "duration_ms", "ms")]},
    {"when": "type == 'reward'", "kind": "reward", "timestamp": "iso8601(ts)",
     "data": {"value": "value", "reason": "reason"},
     "signals": [("reward", "value", None)]},
]


def search(expression, data):
    return jmespath.search(expression, data, options=OPTIONS)


def value(template, data):
    """An expression, or an object template whose null members are dropped."""
    if isinstance(template, dict):
        out = {k: search(e, data) for k, e in template.items()}
        return {k: v for k, v in out.items() if v is not None} or None
    return search(template, data)


def without_nulls(obj):
    return {k: v for k, v in obj.items() if v is not None}


def main():
    path = os.path.realpath(sys.argv[1])
    raw = "--raw" in sys.argv[2:]
    name = os.path.basename(path)
    stem = os.path.splitext(name)[0]
    write = sys.stdout.write
    count = 0

    def emit(record):
        nonlocal count
        write(json.dumps(record, sort_keys=True) + "\n")
        count += 1

    emit({"record_type": "run", "id": "run@" + name, "name": stem})
    emit({"record_type": "case", "id": "case@" + name, "run_id": "run@" + name})
    emit({"record_type": "group", "id": "group@" + name, "case_id": "case@" + name})
    tid = "traj@" + name
    emit({"record_type": "trajectory", "id": tid, "group_id": "group@" + name, "status": "completed"})

    sequence = 0
    previous = None
    offset = 0
    with open(path, "rb") as fh:
        for number, line in enumerate(fh, start=1):
            start = offset
            offset += len(line)
            body = line.rstrip(b"\r\n")
            if not body.strip():
                continue
            rec = json.loads(body)
            rule = next((r for r in RULES if search(r["when"], rec)), None)
            if rule is None or rule.get("skip"):
                continue
            eid = f"evt@L{number}"
            event = {"record_type": "event", "id": eid, "trajectory_id": tid, "sequence": sequence,
                     "kind": rule["kind"], "timestamp": search(rule["timestamp"], rec), "parent_id": previous}
            for key in ("input", "output", "data"):
                if key in rule:
                    event[key] = value(rule[key], rec)
            event["source"] = {"path": name, "line": number, "byte_offset": start, "byte_length": len(body)}
            if raw:
                event["raw"] = rec
            emit(without_nulls(event))
            sequence += 1
            previous = eid
            for signal_name, expression, unit in rule.get("signals", ()):
                signal_value = search(expression, rec)
                if signal_value is not None:
                    emit(without_nulls({"record_type": "signal", "id": f"{eid}:{signal_name}", "trajectory_id": tid,
                                        "event_id": eid, "name": signal_name, "value": signal_value, "unit": unit}))
    write(json.dumps({"record_type": "complete", "records": count, "warnings": 0}, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
