"""A deterministic fake agent for tests: adds numbers, correctly only when the candidate says so.

The candidate folder's prompt.txt must contain ``[CALC]`` for the agent to use its
calculator. The task input's ``mode`` makes it crash, hang or leave no trace, to test
how the adapter reports infrastructure failures. It prints chatter to stdout, which
the adapter must keep out of its own stdout.
"""

import argparse
import json
import os
import sys
import time

parser = argparse.ArgumentParser()
for flag in ("--task", "--candidate", "--seed", "--input", "--out"):
    parser.add_argument(flag, required=True)
args = parser.parse_args()
with open(args.input, encoding="utf-8") as fh:
    task_input = json.load(fh)
print(f"agent: working on {args.task}")
mode = task_input.get("mode")
if mode == "crash":
    sys.stderr.write("agent: simulated crash\n")
    sys.exit(3)
if mode == "hang":
    time.sleep(30)
if mode == "no-trace":
    sys.exit(0)
expr = task_input["expr"]
prompt_file = os.path.join(args.candidate, "prompt.txt")
prompt = open(prompt_file, encoding="utf-8").read() if os.path.isfile(prompt_file) else ""
lines = [{"role": "user", "content": f"Compute {expr}"}]
if "[CALC]" in prompt:
    total = sum(int(x) for x in expr.split("+"))
    lines.append({"role": "assistant", "content": "",
                  "tool_calls": [{"id": "c1", "name": "calc", "arguments": {"expr": expr}}]})
    lines.append({"role": "tool", "tool_call_id": "c1", "content": str(total)})
    lines.append({"role": "assistant", "content": str(total)})
else:
    lines.append({"role": "assistant", "content": f"I think {expr} is about a hundred"})
lines.append({"role": "result", "seed": int(args.seed), "seed_env": int(os.environ["TOY_SEED"]),
              "candidate_env": os.environ["TOY_CANDIDATE"], "tokens": 100 + int(args.seed), "cost": 0.01})
with open(args.out, "w", encoding="utf-8") as fh:
    for line in lines:
        fh.write(json.dumps(line) + "\n")
