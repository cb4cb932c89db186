#!/usr/bin/env python3
"""A hand-written RLViz adapter for the benchmark's agent event log.

Written the way adapters usually are by hand: ``json.loads`` per line, plain
dicts, ``json.dumps(record, sort_keys=True)`` per output line. It implements
the same mapping as ``spec.yaml`` (bench/run.py checks that both print the
same records), without mapc's type checks and warnings.

Usage: handwritten.py SOURCE [--raw]
"""

import json
import os
import sys
from datetime import datetime, timezone


def iso8601(ts):
    if not isinstance(ts, (int, float)):
        return None
    return datetime.fromtimestamp(ts, timezone.utc).isoformat().replace("+00:00", "Z")


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
            kind = rec.get("type")
            if kind == "heartbeat":
                continue
            eid = f"evt@L{number}"
            event = {"record_type": "event", "id": eid, "trajectory_id": tid, "sequence": sequence}
            event["timestamp"] = iso8601(rec.get("ts"))
            event["parent_id"] = previous
            signals = []
            if kind == "message":
                event["kind"] = "message"
                event["input"] = without_nulls({"role": rec.get("role"), "content": rec.get("content")})
            elif kind == "generation":
                event["kind"] = "generation"
                event["output"] = without_nulls({"role": "assistant", "content": rec.get("content"),
                                                 "model": rec.get("model"), "tool_calls": rec.get("tool_calls")})
                usage = rec.get("usage") or {}
                signals.append(("prompt_tokens", usage.get("prompt_tokens"), "tokens"))
                signals.append(("completion_tokens", usage.get("completion_tokens"), "tokens"))
            elif kind == "tool":
                event["kind"] = "tool"
                event["input"] = without_nulls({"name": rec.get("name"), "arguments": rec.get("args"),
                                                "id": rec.get("call_id")})
                event["output"] = rec.get("result")
                signals.append(("latency", rec.get("duration_ms"), "ms"))
            elif kind == "reward":
                event["kind"] = "reward"
                event["data"] = without_nulls({"value": rec.get("value"), "reason": rec.get("reason")})
                signals.append(("reward", rec.get("value"), None))
            else:
                continue
            event["source"] = {"path": name, "line": number, "byte_offset": start, "byte_length": len(body)}
            if raw:
                event["raw"] = rec
            emit(without_nulls(event))
            sequence += 1
            previous = eid
            for signal_name, value, unit in signals:
                if value is not None:
                    emit(without_nulls({"record_type": "signal", "id": f"{eid}:{signal_name}", "trajectory_id": tid,
                                        "event_id": eid, "name": signal_name, "value": value, "unit": unit}))
    write(json.dumps({"record_type": "complete", "records": count, "warnings": 0}, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
