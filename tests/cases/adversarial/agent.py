#!/usr/bin/env python3
"""A stand-in agent for the adversarial corpus: its trace echoes what it received.

    python3 agent.py --out TRACE --input TASK_JSON --seed N --candidate DIR -- ARG...

It writes two JSON Lines: the user turn (the task's prompt) and one assistant turn
whose text is JSON of every argument after `--`, every ADV_* environment variable,
the task input and the seed, and whose other fields are the task input's
`fields` (keys and values are adversarial strings). A test then checks that each
string arrived intact through argv, the environment, the input file and the
mapping. Standard library only; no network, no shell.
"""

import json
import os
import sys


def trace_lines(args, env, task_input, seed):
    """The two trace records for what the agent received."""
    echo = {"argv": list(args), "env": dict(sorted(env.items())), "input": task_input, "seed": seed}
    assistant = {"kind": "assistant", "text": json.dumps(echo, ensure_ascii=False, sort_keys=True)}
    assistant.update(task_input["fields"])
    return [{"kind": "user", "text": task_input["prompt"]}, assistant]


def write_trace(path, lines):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        for line in lines:
            fh.write(json.dumps(line, ensure_ascii=False) + "\n")


def main(argv):
    split = argv.index("--")
    opts = dict(zip(argv[:split:2], argv[1:split:2]))
    with open(opts["--input"], encoding="utf-8") as fh:
        task_input = json.load(fh)
    env = {k: v for k, v in os.environ.items() if k.startswith("ADV_")}
    write_trace(opts["--out"], trace_lines(argv[split + 1:], env, task_input, int(opts["--seed"])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
