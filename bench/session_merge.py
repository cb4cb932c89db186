#!/usr/bin/env python3
"""Peak RSS and CPU time of `merge` on a large session log (issue 27, item 8).

Usage::

    python bench/session_merge.py                 # a 1 GB Claude Code transcript
    python bench/session_merge.py --mb 100        # another size
    python bench/session_merge.py --quick         # 5 MB (a smoke run)

The log is written on the fly into a temporary folder (removed at the end) from the lines of
the real transcript in tests/data/corpus/claude-code-transcript, copied over and over; each
copy's ids (message.id, uuid, parentUuid, the tool calls' ids and the results' tool_use_id,
promptId, sourceToolAssistantUUID) get a suffix of their own, so every response is a new key
and every line a new event id, as in one very long session. It is mapped by the RLViz adapter
of tests/cases/recipes/claude-code-transcript/spec.yaml (one generation per message.id, usage once, token totals) and
by the adapter of the same spec without `merge` (one event per line), each as RLViz runs it
(through bench/uncapped.py: the output, hundreds of MB, passes RLViz's 32 MiB). Printed for
each: peak RSS (the adapter's VmHWM), CPU time (user + system), records written; then the
CPU ratio of merging to line by line. Goals: peak RSS under 64 MiB, the ratio at most 1.5.
Nothing is asserted; docs/performance.md quotes the numbers.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from run import PYTHON, ROOT, mapc_build, run_process, stream_request  # noqa: E402  (bench/run.py)

TRANSCRIPT = ROOT / "tests/data/corpus/claude-code-transcript/ca4291e5-5178-4fdb-972b-f6b4d6c26a65.jsonl"
SPEC = ROOT / "tests/cases/recipes/claude-code-transcript/spec.yaml"
#: keys whose string values are ids: each copy of the transcript gets fresh ones
ID_KEYS = ("id", "uuid", "parentUuid", "tool_use_id", "promptId", "sourceToolAssistantUUID")
MARK = "\x00"  # where a copy's suffix goes (no JSON text holds a raw NUL)


def templates() -> list[str]:
    """The transcript's lines with a mark after every id: a copy is ``line.replace(MARK, suffix)``."""
    ids: set[str] = set()

    def walk(value) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                if key in ID_KEYS and isinstance(item, str) and item:
                    ids.add(item)
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    lines = TRANSCRIPT.read_text(encoding="utf-8").splitlines()
    for line in lines:
        walk(json.loads(line))
    pattern = re.compile("|".join(re.escape(json.dumps(i)) for i in sorted(ids, key=len, reverse=True)))
    return [pattern.sub(lambda m: m.group(0)[:-1] + MARK + '"', line) + "\n" for line in lines]


def write_log(path: Path, size: int) -> tuple[int, int]:
    """About ``size`` bytes of copies of the transcript (whole copies); (lines, bytes) written."""
    lines = templates()
    written = count = copy = 0
    with open(path, "w", encoding="utf-8") as out:
        while written < size:
            text = "".join(lines).replace(MARK, f"-{copy}")
            out.write(text)
            written += len(text.encode("utf-8"))
            count += len(lines)
            copy += 1
    return count, written


def line_by_line(work: Path) -> Path:
    """The same spec without `merge` (and without the fields only merging gives)."""
    folder = work / "line-by-line"
    folder.mkdir()
    text = SPEC.read_text(encoding="utf-8")
    start = text.index("    merge:")
    end = text.index("    rules:")
    (folder / "spec.yaml").write_text(text[:start] + text[end:], encoding="utf-8")
    (folder / "transcript-head.jsonl").write_bytes((SPEC.parent / "transcript-head.jsonl").read_bytes())
    return folder / "spec.yaml"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=1000, help="size of the log in MB (default 1000)")
    parser.add_argument("--quick", action="store_true", help="5 MB: a smoke run")
    parser.add_argument("--work", type=Path, help="keep the log and plugins in this folder")
    args = parser.parse_args()
    size = int((5 if args.quick else args.mb) * 10**6)
    with tempfile.TemporaryDirectory(prefix="mapc-session-merge-") as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        log = work / "session.jsonl"
        lines, written = write_log(log, size)
        print(f"session log: {written / 10**6:,.0f} MB, {lines:,} lines (copies of {TRANSCRIPT.name})")
        results = {}
        for label, spec in (("merge", SPEC), ("line by line", line_by_line(work))):
            plugin = work / f"plugin-{label.replace(' ', '-')}"
            mapc_build(spec, "rlviz", plugin, validate=False)
            argv = [PYTHON, str(BENCH / "uncapped.py"), str(plugin / "adapter.py"), "stream", "--request",
                    str(stream_request(log, work))]
            run = run_process(argv)
            results[label] = run
            print(f"{label:>12}: peak RSS {run.rss_kib / 1024:6.1f} MiB, CPU {run.cpu:7.2f} s, "
                  f"wall {run.wall:7.2f} s, {run.lines:,} records")
        ratio = results["merge"].cpu / results["line by line"].cpu
        rss = results["merge"].rss_kib / 1024
        print(f"merge / line by line, CPU: {ratio:.2f}x (goal <= 1.5x); merge peak RSS {rss:.1f} MiB (goal < 64 MiB)")


if __name__ == "__main__":
    main()
