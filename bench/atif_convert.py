#!/usr/bin/env python3
"""Time and peak RSS of the atif target's converter on a Claude Code transcript made larger.

Usage::

    python bench/atif_convert.py                 # the corpus session repeated 10, 50 and 100 times
    python bench/atif_convert.py --copies 200

The converter holds every record of a trace until its documents are complete (a failure
writes nothing), so its memory grows with the trace; the spec's ``source.max_bytes`` bounds
what it reads. The trace is the corpus transcript's lines repeated with new message, tool
call and line ids (each copy a new set of model responses, calls and results, so merging and
pairing work as in one long session). Prints the trace size, CPU seconds, peak RSS and the
RSS per trace byte. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SESSION = ROOT / "tests/data/corpus/claude-code-transcript/ca4291e5-5178-4fdb-972b-f6b4d6c26a65.jsonl"


def _copy(row: dict, k: int) -> dict:
    """One line of copy ``k``: every id that pairs or merges suffixed with ``-k``."""
    row = dict(row, uuid=f"{row.get('uuid')}-{k}")
    row.pop("toolUseResult", None)  # no subagent files for the copies
    message = row.get("message")
    if not isinstance(message, dict) or not isinstance(message.get("content"), list):
        return row
    blocks = []
    for b in message["content"]:
        if isinstance(b, dict) and b.get("type") == "tool_use":
            b = dict(b, id=f"{b['id']}-{k}")
        elif isinstance(b, dict) and b.get("type") == "tool_result":
            b = dict(b, tool_use_id=f"{b['tool_use_id']}-{k}")
        blocks.append(b)
    message = dict(message, content=blocks)
    if row.get("type") == "assistant":
        message["id"] = f"{message.get('id')}-{k}"
    return dict(row, message=message)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", default="10,50,100")
    args = parser.parse_args()
    rows = [json.loads(line) for line in SESSION.read_text(encoding="utf-8").splitlines() if line.strip()]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp, "out")
        subprocess.run([sys.executable, "-m", "mapc.cli", "build", str(ROOT / "specs/claude-code-transcript.yaml"),
                        "--target", "atif", "-o", str(out), "--no-validate", "--no-test"], check=True,
                       capture_output=True)
        print(f"{'copies':>7} {'trace MB':>9} {'CPU s':>7} {'peak RSS MB':>12} {'RSS/byte':>9}")
        for copies in (int(c) for c in args.copies.split(",")):
            trace = Path(tmp, f"session-{copies}.jsonl")
            with trace.open("w", encoding="utf-8") as fh:
                for k in range(copies):
                    for row in rows:
                        fh.write(json.dumps(_copy(row, k)) + "\n")
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            proc = subprocess.run([sys.executable, "-c", _MEASURE, str(out / "convert.py"), str(trace)],
                                  capture_output=True, text=True, check=False)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if proc.returncode != 0:
                print(f"{copies:>7} failed: {proc.stderr.strip()[-300:]}")
                continue
            peak_kb = int(proc.stdout.strip())
            size = trace.stat().st_size
            cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
            print(f"{copies:>7} {size / 1e6:>9.1f} {cpu:>7.2f} {peak_kb / 1024:>12.0f} {peak_kb * 1024 / size:>9.1f}")
    return 0


#: runs the converter in this process (its output discarded) and prints its peak RSS in KB
_MEASURE = """
import io, resource, runpy, sys
convert, trace = sys.argv[1], sys.argv[2]
sys.argv = [convert, trace]
real, sys.stdout = sys.stdout, io.TextIOWrapper(io.BytesIO())
try:
    runpy.run_path(convert, run_name="__main__")
except SystemExit as exc:
    if exc.code:
        raise
sys.stdout = real
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


if __name__ == "__main__":
    sys.exit(main())
