#!/usr/bin/env python3
"""A tiny deterministic stand-in for a NeMo Gym rollout: a weather question,
one tool call, an answer, and the environment's reward, written as one line
of a NeMo Gym rollouts file.

    python3 agent.py --task paris --input task.json --seed 0 --out runs/paris.jsonl

The task input is a JSON file holding {"city": ...}. The agent calls
get_weather(city), answers with what the tool said, and the environment
rewards 1.0 when the answer names the true weather. The candidate being
optimised (cap-evolve passes its folder in AGENT_CANDIDATE) may hold
`style.txt`: "guess" makes the agent answer without calling the tool.
"""

import argparse
import json
import os

WEATHER = {"Paris": "sunny", "Oslo": "snowy", "Lima": "cloudy"}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", required=True)
    ap.add_argument("--input", required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    with open(args.input, encoding="utf-8") as fh:
        city = json.load(fh).get("city", "Paris")
    style = ""
    candidate = os.environ.get("AGENT_CANDIDATE", "")
    if candidate and os.path.isfile(os.path.join(candidate, "style.txt")):
        with open(os.path.join(candidate, "style.txt"), encoding="utf-8") as fh:
            style = fh.read().strip()
    truth = WEATHER.get(city, "windy")
    output = []
    if style == "guess":
        answer = "sunny"
    else:
        answer = truth
        output += [
            {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_weather",
             "arguments": json.dumps({"city": city}), "status": "completed"},
            {"type": "function_call_output", "call_id": "call_1", "output": json.dumps({"weather": truth})},
        ]
    output.append({"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                   "content": [{"type": "output_text", "text": f"It is {answer} in {city}.", "annotations": []}]})
    rollout = {
        "responses_create_params": {
            "input": [{"type": "message", "role": "system", "content": "Answer weather questions with the tool."},
                      {"type": "message", "role": "user", "content": f"What is the weather in {city}?"}],
            "tools": [{"type": "function", "name": "get_weather",
                       "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}],
        },
        "response": {"id": f"resp_{args.task}_{args.seed}", "object": "response", "model": "fake-model",
                     "output": output,
                     "usage": {"input_tokens": 80, "output_tokens": 12, "total_tokens": 92,
                               "input_tokens_details": {"cached_tokens": 0},
                               "output_tokens_details": {"reasoning_tokens": 0}}},
        "reward": 1.0 if answer == truth else 0.0,
        "terminated": True,
        "truncated": False,
        "info": {"city": city, "used_tool": style != "guess"},
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(rollout) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
