#!/usr/bin/env python3
"""A tiny deterministic stand-in for a real agent: it "solves" a greeting task
and writes its run as a Harbor ATIF trajectory.

    python3 agent.py --task greet-en --input task.json --seed 0 --out runs/greet-en.json

The task input is a JSON file holding {"instruction": ..., "word": ...}. The
agent writes the requested word to a file with one (pretend) shell command and
reports what it did. No model, no network, no randomness beyond the seed.

The candidate being optimised (cap-evolve passes its folder in AGENT_CANDIDATE)
may hold `style.txt`: "terse" makes the final answer leave out the word, which
the project's `answered` evaluator catches.
"""

import argparse
import json
import os


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", required=True)
    ap.add_argument("--input", required=True, help="JSON file with the task input")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", required=True, help="where to write the ATIF trajectory")
    args = ap.parse_args()
    with open(args.input, encoding="utf-8") as fh:
        task = json.load(fh)
    word = task.get("word", "hello") if isinstance(task, dict) else "hello"
    style = ""
    candidate = os.environ.get("AGENT_CANDIDATE", "")
    if candidate and os.path.isfile(os.path.join(candidate, "style.txt")):
        with open(os.path.join(candidate, "style.txt"), encoding="utf-8") as fh:
            style = fh.read().strip()
    answer = "Done." if style == "terse" else f"greeting.txt now contains {word}."
    instruction = task.get("instruction", "") if isinstance(task, dict) else str(task)
    command = f"printf '{word}\\n' > greeting.txt"
    steps = [
        {"step_id": 1, "source": "system", "message": "You are a shell agent. Use bash to finish the task."},
        {"step_id": 2, "source": "user", "message": instruction},
        {"step_id": 3, "source": "agent", "model_name": "fake-model", "message": "I will write the file.",
         "tool_calls": [{"tool_call_id": "call_1", "function_name": "bash", "arguments": {"command": command}}],
         "observation": {"results": [{"source_call_id": "call_1", "content": ""}]},
         "metrics": {"prompt_tokens": 100 + args.seed, "completion_tokens": 20, "cost_usd": 0.0002}},
        {"step_id": 4, "source": "agent", "model_name": "fake-model", "message": answer,
         "metrics": {"prompt_tokens": 140 + args.seed, "completion_tokens": 10, "cost_usd": 0.0001}},
    ]
    trajectory = {
        "schema_version": "ATIF-v1.5",
        "session_id": f"{args.task}-seed-{args.seed}",
        "agent": {"name": "fake-shell-agent", "version": "0.1.0", "model_name": "fake-model"},
        "steps": steps,
        "final_metrics": {"total_prompt_tokens": 240 + 2 * args.seed, "total_completion_tokens": 30,
                          "total_cost_usd": 0.0003, "total_steps": len(steps)},
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as fh:
        json.dump(trajectory, fh, indent=2)
        fh.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
