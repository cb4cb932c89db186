#!/usr/bin/env python3
"""A hand-written RLViz adapter for the benchmark's eval log (one JSON document).

Written the way adapters usually are by hand: ``json.load`` of the document,
plain dicts, ``json.dumps(record, sort_keys=True)`` per output line. It
implements the same mapping as ``spec.yaml`` (bench/run.py checks that both
print the same records), without mapc's type checks and warnings.

Usage: handwritten.py SOURCE [--raw]
"""

import json
import os
import sys

GRADES = {"C": 1, "I": 0}


def without_nulls(obj):
    return {k: v for k, v in obj.items() if v is not None}


def main():
    path = os.path.realpath(sys.argv[1])
    raw = "--raw" in sys.argv[2:]
    name = os.path.basename(path)
    write = sys.stdout.write
    count = 0

    def emit(record):
        nonlocal count
        write(json.dumps(record, sort_keys=True) + "\n")
        count += 1

    with open(path, "rb") as fh:
        doc = json.load(fh)
    ev = doc.get("eval") or {}
    run_id = "run@" + name
    emit(without_nulls({"record_type": "run", "id": run_id, "name": ev.get("task"), "started_at": ev.get("created"),
                        "metadata": without_nulls({"model": ev.get("model"),
                                                   "dataset": (ev.get("dataset") or {}).get("name")})}))
    seen_cases = set()
    for i, sample in enumerate(doc.get("samples") or []):
        case_id = f"sample-{sample['id']}"
        group_id = "group@" + case_id
        if case_id not in seen_cases:
            seen_cases.add(case_id)
            emit(without_nulls({"record_type": "case", "id": case_id, "run_id": run_id, "input": sample.get("input"),
                                "metadata": without_nulls({"target": sample.get("target")})}))
            emit({"record_type": "group", "id": group_id, "case_id": case_id})
        tid = f"{case_id}-epoch-{sample['epoch']}"
        emit({"record_type": "trajectory", "id": tid, "group_id": group_id, "status": "completed"})
        previous = None
        for j, msg in enumerate(sample.get("messages") or []):
            eid = f"evt@{i}.{j}"
            event = {"record_type": "event", "id": eid, "trajectory_id": tid, "sequence": j, "parent_id": previous}
            role = msg.get("role")
            if role == "assistant":
                event["kind"] = "generation"
                calls = msg.get("tool_calls")
                if calls is not None:
                    calls = [{"id": c.get("id"), "name": c.get("function"), "arguments": c.get("arguments")}
                             for c in calls]
                event["output"] = without_nulls({"role": role, "content": msg.get("content"),
                                                 "model": msg.get("model"), "tool_calls": calls})
            elif role == "tool":
                event["kind"] = "observation"
                event["output"] = without_nulls({"content": msg.get("content"), "tool_call_id": msg.get("tool_call_id"),
                                                 "name": msg.get("function"), "role": role})
            else:
                event["kind"] = "message"
                event["input"] = without_nulls({"role": role, "content": msg.get("content")})
            event["source"] = {"path": name}
            if raw:
                event["raw"] = msg
            emit(without_nulls(event))
            previous = eid
        usage = sample.get("model_usage") or {}
        score = GRADES.get(((sample.get("scores") or {}).get("match") or {}).get("value"))
        for signal_name, value, unit in (("score", score, None),
                                         ("input_tokens", usage.get("input_tokens"), "tokens"),
                                         ("output_tokens", usage.get("output_tokens"), "tokens"),
                                         ("total_time", sample.get("total_time"), "s")):
            if value is not None:
                emit(without_nulls({"record_type": "signal", "id": f"{tid}:{signal_name}", "trajectory_id": tid,
                                    "name": signal_name, "value": value, "unit": unit}))
    write(json.dumps({"record_type": "complete", "records": count, "warnings": 0}, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
