#!/usr/bin/env python3
"""Start-up of an RLViz adapter's probe and a 10-line stream, in instructions (callgrind).

``python bench/probe_startup.py [--mapc CHECKOUT] [--python /usr/bin/python3]`` builds
``examples/verifiers-math`` and ``bench/agent_events`` for RLViz with the mapc of CHECKOUT
(default: this one; its ``mapc`` package comes first on ``PYTHONPATH``, bytecode off so
nothing is written there) and counts the instructions of the whole process of
``adapter.py probe`` and ``adapter.py stream`` (10 lines), ``PYTHONDONTWRITEBYTECODE=1``,
``PYTHONHASHSEED=0``, next to ``python -c pass``. Prints a Markdown table, and ``wc -l`` of
the runtime files the build ships (docs/performance.md, Round 13).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import traces  # noqa: E402
from run import instructions  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SPECS = {"verifiers-math": ROOT / "examples/verifiers-math/spec.yaml",
         "agent events": ROOT / "bench/agent_events/spec.yaml"}


def _request(work: Path, source: Path, operation: str) -> Path:
    real = os.path.realpath(source)
    path = work / f"request-{operation}-{source.stem}.json"
    path.write_text(json.dumps({"api_version": "rlviz.dev/v1alpha1", "operation": operation,
                                "source": {"path": real, "root": os.path.dirname(real), "kind": "file"},
                                "limits": {}}))
    return path


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mapc", type=Path, default=ROOT, help="the checkout whose mapc builds the adapters")
    parser.add_argument("--python", default="/usr/bin/python3", help="the interpreter that runs them")
    args = parser.parse_args()
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0"}
    build_env = {**env, "PYTHONPATH": str(args.mapc.resolve())}
    with tempfile.TemporaryDirectory(prefix="mapc-startup-") as tmp:
        work = Path(tmp)
        ten = work / "ten.jsonl"
        traces.write_jsonl(ten, events=10)
        rows = [("`python -c pass`", instructions([args.python, "-c", "pass"], env=env), None)]
        for name, spec in SPECS.items():
            out = work / name.replace(" ", "-")
            subprocess.run([sys.executable, "-m", "mapc.cli", "build", str(spec), "--target", "rlviz", "-o",
                            str(out), "--no-validate"], env=build_env, cwd=work, check=True, capture_output=True)
            fixture = next(p for p in sorted((out / "testdata").iterdir()) if p.is_file())
            probe = instructions([args.python, "adapter.py", "probe", "--request", str(_request(work, fixture, "probe"))],
                                 cwd=out, env=env)
            stream = None
            if name == "agent events":
                stream = instructions([args.python, "adapter.py", "stream", "--request",
                                       str(_request(work, ten, "stream"))], cwd=out, env=env)
            rows.append((name, probe, stream))
            lines = subprocess.run(["wc", "-l", *sorted(map(str, (out / "mapc_runtime").glob("*.py")))],
                                   capture_output=True, text=True).stdout.strip().splitlines()[-1]
            print(f"{name}: runtime files {len(list((out / 'mapc_runtime').glob('*.py')))}, {lines}")
    print("| process | probe (M instructions) | stream, 10 lines |")
    print("|---|---:|---:|")
    for name, probe, stream in rows:
        print(f"| {name} | {probe:.2f} | {'' if stream is None else f'{stream:.2f}'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
