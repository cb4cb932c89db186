#!/usr/bin/env python3
"""``mapc validate --target rlviz`` against the real RLViz validator, on the same large trace.

Usage::

    python bench/validate_rlviz.py                  # 40,000 events (about 26 MiB of canonical output)
    python bench/validate_rlviz.py --events 20000 --repeats 5

Builds the RLViz adapter of ``bench/agent_events/spec.yaml``, writes a JSONL
trace of that many events (``bench/traces.py``), then times, interleaved and
``--repeats`` times each, the real ``rlviz-validate --json PLUGIN TRACE``
(``MAPC_RLVIZ_BIN``, else the vendored one, built on first use: ``tests/hosts.py``)
and ``mapc validate --target rlviz --json PLUGIN TRACE``, both as a user runs
them (fresh processes). Both run the same adapter four times (probe and
stream twice), so what differs is the checking itself. Prints the median wall
times, the ratio mapc / RLViz (the goal: at most 2) and both verdicts, which
must be the same. Wall time, not CPU time: RLViz's limits are wall-clock
limits, and the real validator's CPU time includes the adapter's.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))
import traces  # noqa: E402

GOAL = 2.0


def real_rlviz() -> Path:
    sys.path.insert(0, str(ROOT / "tests"))
    import hosts  # the tests' finder: MAPC_RLVIZ_BIN, else the vendored sources, built once

    try:
        return hosts.rlviz_bin()
    except hosts.HostUnavailable as exc:
        raise SystemExit(f"the real RLViz validator is not available: {exc}") from None


def timed(argv: list[str]) -> tuple[float, int, dict]:
    start = time.perf_counter()
    run = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    output = run.stdout if run.returncode == 0 else run.stderr
    try:
        verdict = json.loads(output)
    except ValueError:
        verdict = {"error": output.strip()[-300:]}
    return wall, run.returncode, verdict


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=40_000, help="trace size in events (default 40,000)")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each validator (default 3)")
    args = parser.parse_args(argv)
    binary = real_rlviz()
    with tempfile.TemporaryDirectory(prefix="mapc-bench-validate-") as tmp:
        work = Path(tmp)
        plugin = work / "plugin"
        build = subprocess.run([sys.executable, "-m", "mapc.cli", "build", str(BENCH / "agent_events" / "spec.yaml"),
                                "--target", "rlviz", "-o", str(plugin)], capture_output=True, text=True, cwd=ROOT)
        if build.returncode != 0:
            raise SystemExit(f"mapc build failed:\n{build.stdout}{build.stderr}")
        trace = work / "trace.jsonl"
        lines, size = traces.write_jsonl(trace, events=args.events)
        print(f"trace: {lines:,} lines, {size / 1e6:.1f} MB; adapter: bench/agent_events/spec.yaml")
        commands = {
            "real RLViz": [str(binary), "--json", str(plugin), str(trace)],
            "mapc": [sys.executable, "-m", "mapc.cli", "validate", "--target", "rlviz", "--json", str(plugin), str(trace)],
        }
        walls: dict[str, list[float]] = {name: [] for name in commands}
        verdicts: dict[str, tuple[int, dict]] = {}
        for _ in range(args.repeats):
            for name, command in commands.items():
                wall, code, verdict = timed(command)
                walls[name].append(wall)
                verdicts[name] = (code, verdict)
    for name in commands:
        code, verdict = verdicts[name]
        summary = (f"{verdict.get('records'):,} records" if code == 0 else f"FAIL {verdict.get('error', '')[:120]}")
        print(f"{name:>10}: median {statistics.median(walls[name]):6.2f} s wall "
              f"(runs: {', '.join(f'{w:.2f}' for w in walls[name])}); {summary}")
    ratio = statistics.median(walls["mapc"]) / statistics.median(walls["real RLViz"])
    print(f"     ratio: mapc / real RLViz = {ratio:.2f} (goal: at most {GOAL:g}) "
          f"{'met' if ratio <= GOAL else 'NOT met'}")
    real_code, real_verdict = verdicts["real RLViz"]
    mapc_code, mapc_verdict = verdicts["mapc"]
    same = real_code == mapc_code and (real_code != 0 or real_verdict == mapc_verdict)
    print(f"   verdict: {'same' if same else 'DIFFERENT'} ({'pass' if real_code == 0 else 'fail'} on both)"
          if same else f"   verdict: DIFFERENT: real {real_verdict}, mapc {mapc_verdict}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
