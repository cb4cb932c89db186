#!/usr/bin/env python3
"""A tiny deterministic stand-in for an Inspect AI eval: one arithmetic
question, one model call, a `match` scorer's letter grade, written as an
Inspect JSON eval log (format version 2).

    python3 agent.py --task add-2-3 --input task.json --seed 0 --out runs/add-2-3.json

The task input is a JSON file holding {"a": ..., "b": ..., "target": ...}.
The fake model adds the two numbers; the scorer grades "C" when the answer
equals the target and "I" otherwise. The candidate being optimised
(cap-evolve passes its folder in AGENT_CANDIDATE) may hold `style.txt`:
"sloppy" makes the model add one too many.
"""

import argparse
import json
import os


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", required=True)
    ap.add_argument("--input", required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    with open(args.input, encoding="utf-8") as fh:
        task = json.load(fh)
    a, b = int(task.get("a", 0)), int(task.get("b", 0))
    target = str(task.get("target", a + b))
    style = ""
    candidate = os.environ.get("AGENT_CANDIDATE", "")
    if candidate and os.path.isfile(os.path.join(candidate, "style.txt")):
        with open(os.path.join(candidate, "style.txt"), encoding="utf-8") as fh:
            style = fh.read().strip()
    answer = str(a + b + (1 if style == "sloppy" else 0))
    grade = "C" if answer == target else "I"
    question = f"What is {a} + {b}? Reply with the number only."
    ts = "2025-01-02T10:00:0{}+00:00".format
    usage = {"input_tokens": 30, "output_tokens": 2, "total_tokens": 32}
    events = [
        {"span_id": "s1", "timestamp": ts(0), "event": "span_begin", "id": "s1", "type": "init", "name": "init"},
        {"span_id": "s1", "timestamp": ts(0), "event": "sample_init", "sample": {"input": question, "target": target, "id": args.task}},
        {"span_id": "s1", "timestamp": ts(1), "event": "span_end", "id": "s1"},
        {"span_id": "s2", "timestamp": ts(1), "event": "span_begin", "id": "s2", "type": "solver", "name": "generate"},
        {"span_id": "s2", "timestamp": ts(2), "event": "model", "model": "fake/model",
         "input": [{"role": "user", "content": question}], "tools": [], "tool_choice": "none", "config": {},
         "output": {"model": "fake-model", "choices": [{"message": {"role": "assistant", "content": answer}, "stop_reason": "stop"}],
                    "usage": usage, "time": 0.1}},
        {"span_id": "s2", "timestamp": ts(3), "event": "span_end", "id": "s2"},
        {"span_id": "s3", "timestamp": ts(3), "event": "span_begin", "id": "s3", "type": "scorer", "name": "match"},
        {"span_id": "s3", "timestamp": ts(3), "event": "score", "score": {"value": grade, "answer": answer}, "target": target, "intermediate": False},
        {"span_id": "s3", "timestamp": ts(4), "event": "span_end", "id": "s3"},
    ]
    log = {
        "version": 2, "status": "success",
        "eval": {"eval_id": f"eval-{args.task}-{args.seed}", "run_id": f"run-{args.task}-{args.seed}", "created": ts(0),
                 "task": "arithmetic", "task_id": "arithmetic", "task_version": 0, "model": "fake/model",
                 "dataset": {"name": "arithmetic", "samples": 1, "sample_ids": [args.task]}, "config": {}, "packages": {"inspect_ai": "0.3.95"}},
        "plan": {"name": "plan", "steps": [{"solver": "generate", "params": {}}]},
        "results": {"total_samples": 1, "completed_samples": 1, "scores": [{"name": "match", "scorer": "match", "params": {}, "metrics": {}}]},
        "stats": {"started_at": ts(0), "completed_at": ts(4)},
        "samples": [{"id": args.task, "epoch": 1, "uuid": f"{args.task}-{args.seed}", "input": question, "target": target,
                     "messages": [{"role": "user", "content": question}, {"role": "assistant", "content": answer}],
                     "output": {"model": "fake-model", "choices": [{"message": {"role": "assistant", "content": answer}, "stop_reason": "stop"}],
                                "completion": answer, "usage": usage},
                     "scores": {"match": {"value": grade, "answer": answer}}, "metadata": {}, "store": {}, "events": events,
                     "model_usage": {"fake/model": usage}, "total_time": 4.0, "working_time": 3.5, "attachments": {}}],
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as fh:
        json.dump(log, fh, indent=1)
        fh.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
