"""A stand-in for a real tau2-bench run of one task, for the RELAI example.

A real project would run tau2 here (`tau2 run --domain airline ...` with its
agent and user models, for this one task, saving the Results file at PATH).
This script is deterministic and offline instead: it copies the recorded
simulation of the task (from ../traces/airline_run1.json) into a tau2 Results
file at PATH, exactly the shape a real run leaves behind.

    python3 agent/fake_tau2_agent.py --task-id 7 --output runs/7/results.json
    python3 agent/fake_tau2_agent.py --check     (the adapter's `prepare` step)
"""

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RECORDED = os.path.join(HERE, "..", "traces", "airline_run1.json")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task-id")
    parser.add_argument("--output")
    parser.add_argument("--check", action="store_true", help="only check that the recorded runs are readable")
    args = parser.parse_args(argv)
    with open(RECORDED, encoding="utf-8") as fh:
        recorded = json.load(fh)
    if args.check:
        print(f"fake tau2 agent ready: {len(recorded['simulations'])} recorded runs")
        return 0
    if not args.task_id or not args.output:
        parser.error("--task-id and --output are required")
    sims = [s for s in recorded["simulations"] if s["task_id"] == args.task_id]
    if not sims:
        print(f"no recorded run for task {args.task_id!r}", file=sys.stderr)
        return 1
    results = dict(recorded, tasks=[t for t in recorded["tasks"] if t["id"] == args.task_id], simulations=sims[:1])
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    with open(args.output, "w", encoding="utf-8") as fh:
        json.dump(results, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
