#!/usr/bin/env python3
"""The floor of any adapter: only ``json.loads`` and ``json.dumps`` of each source element.

JSONL: every line is decoded and encoded again. JSON (the eval log): the
document is decoded, and every message of every sample encoded. No mapping,
no ids, no checks: no adapter that reads and writes JSON with the standard
library can be faster than this.

Usage: floor.py SOURCE
"""

import json
import sys


def main():
    path = sys.argv[1]
    out = sys.stdout.buffer
    dumps = json.dumps
    loads = json.loads
    if path.endswith(".jsonl"):
        with open(path, "rb") as fh:
            for line in fh:
                if line.strip():
                    out.write(dumps(loads(line)).encode() + b"\n")
    else:
        with open(path, "rb") as fh:
            doc = json.load(fh)
        for sample in doc["samples"]:
            for message in sample["messages"]:
                out.write(dumps(message).encode() + b"\n")


if __name__ == "__main__":
    main()
