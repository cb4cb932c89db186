#!/usr/bin/env python3
"""The benchmark's eval-log mapping, evaluated with ``jmespath.search`` per record.

A table-driven adapter: the expressions are the ones ``spec.yaml`` writes,
interpreted by the reference ``jmespath`` package at run time for every
sample and message (``$case.id`` and ``$tables.grades``, which JMESPath has no
syntax for, are passed in by Python). Reading and writing are done as in
``handwritten.py``, so the difference between the two is the cost of
evaluating expressions at run time. bench/run.py checks that it prints the
same records as the generated adapter.

Usage: jmespath_adapter.py SOURCE [--raw]
"""

import json
import os
import sys

import jmespath

GRADES = {"C": 1, "I": 0}

RUN = {"name": "eval.task", "started_at": "eval.created",
       "metadata": {"model": "eval.model", "dataset": "eval.dataset.name"}}
CASE = {"id": "join('-', ['sample', to_string(id)])", "input": "input", "metadata": {"target": "target"}}
TRAJECTORY_ID = "join('-', [case_id, 'epoch', to_string(sample.epoch)])"
SIGNALS = [("score", "scores.match.value", None), ("input_tokens", "model_usage.input_tokens", "tokens"),
           ("output_tokens", "model_usage.output_tokens", "tokens"), ("total_time", "total_time", "s")]
RULES = [
    {"when": "role == 'assistant'", "kind": "generation",
     "output": {"role": "role", "content": "content", "model": "model",
                "tool_calls": "tool_calls[*].{id: id, name: function, arguments: arguments}"}},
    {"when": "role == 'tool'", "kind": "observation",
     "output": {"content": "content", "tool_call_id": "tool_call_id", "name": "function", "role": "role"}},
    {"when": None, "kind": "message", "input": {"role": "role", "content": "content"}},
]


def value(template, data):
    """An expression, or an object template whose null members are dropped."""
    if isinstance(template, dict):
        out = {k: value(e, data) for k, e in template.items()}
        return {k: v for k, v in out.items() if v is not None} or None
    return jmespath.search(template, data)


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
    run_id = "run@" + name
    emit(without_nulls({"record_type": "run", "id": run_id, **{k: value(e, doc) for k, e in RUN.items()}}))
    seen_cases = set()
    for i, sample in enumerate(jmespath.search("samples", doc) or []):
        case_id = jmespath.search(CASE["id"], sample)
        group_id = "group@" + case_id
        if case_id not in seen_cases:
            seen_cases.add(case_id)
            emit(without_nulls({"record_type": "case", "id": case_id, "run_id": run_id,
                                "input": value(CASE["input"], sample), "metadata": value(CASE["metadata"], sample)}))
            emit({"record_type": "group", "id": group_id, "case_id": case_id})
        tid = jmespath.search(TRAJECTORY_ID, {"case_id": case_id, "sample": sample})
        emit({"record_type": "trajectory", "id": tid, "group_id": group_id, "status": "completed"})
        previous = None
        for j, msg in enumerate(jmespath.search("messages", sample) or []):
            rule = next(r for r in RULES if r["when"] is None or jmespath.search(r["when"], msg))
            eid = f"evt@{i}.{j}"
            event = {"record_type": "event", "id": eid, "trajectory_id": tid, "sequence": j,
                     "kind": rule["kind"], "parent_id": previous}
            for key in ("input", "output"):
                if key in rule:
                    event[key] = value(rule[key], msg)
            event["source"] = {"path": name}
            if raw:
                event["raw"] = msg
            emit(without_nulls(event))
            previous = eid
        for signal_name, expression, unit in SIGNALS:
            signal_value = jmespath.search(expression, sample)
            if signal_name == "score":
                signal_value = GRADES.get(signal_value)
            if signal_value is not None:
                emit(without_nulls({"record_type": "signal", "id": f"{tid}:{signal_name}", "trajectory_id": tid,
                                    "name": signal_name, "value": signal_value, "unit": unit}))
    write(json.dumps({"record_type": "complete", "records": count, "warnings": 0}, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
