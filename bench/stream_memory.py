"""Peak memory and throughput of a generated RLViz adapter streaming large JSONL traces.

Usage::

    python bench/stream_memory.py              # 1M and 16M (a few seconds)
    python bench/stream_memory.py 1M 100M 1G   # the 1 GB run (about a minute per GB)

For each size it writes a synthetic one-event-per-line JSONL trace (messages,
tool calls with results, rewards), builds an RLViz adapter for it with
``mapc build --target rlviz`` (the build validates the adapter on a small
fixture), runs ``adapter.py stream`` on the trace as RLViz would, counts the
canonical records it prints, and reports the adapter's own peak RSS (from
``os.wait4``) and the input throughput. Flat memory means peak RSS does not
grow with the trace size. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPEC = """\
mapc: 1
name: bench-events
version: 0.1.0
description: Synthetic one-event-per-line agent trace for the streaming benchmark.
source:
  format: bench-events
  container: jsonl
  probe:
    require: [type, step]
records:
  run: {name: $source.name}
  trajectory: {status: "'completed'"}
  events:
    each: "@"
    parent: previous
    rules:
      - when: "type == 'message'"
        kind: message
        role: role
        content: content
        timestamp: "iso8601(ts)"
      - when: "type == 'tool'"
        kind: tool
        tool_name: name
        arguments: args
        result: result
      - when: "type == 'reward'"
        kind: reward
        data: {value: value}
        signals:
          reward: value
fixtures:
  - fixture.jsonl
"""


def parse_size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper().rstrip("B")
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


def synthetic_lines():
    """An endless, deterministic agent trace: message, tool call, reward, ..."""
    step = 0
    filler = "lorem ipsum dolor sit amet " * 6
    while True:
        yield {"type": "message", "step": step, "ts": 1700000000 + step, "role": "user" if step % 2 else "assistant",
               "content": f"turn {step}: {filler}"}
        yield {"type": "tool", "step": step + 1, "name": "search", "args": {"q": f"query {step}", "k": 5},
               "result": {"hits": [f"doc-{step}-{i}" for i in range(5)]}}
        yield {"type": "reward", "step": step + 2, "value": (step % 7) / 7}
        step += 3


def write_trace(path: Path, size: int) -> int:
    """Write about ``size`` bytes of trace; returns the exact size."""
    written = 0
    with open(path, "wb", buffering=1 << 20) as fh:
        for rec in synthetic_lines():
            line = json.dumps(rec, separators=(",", ":")).encode() + b"\n"
            fh.write(line)
            written += len(line)
            if written >= size:
                break
    return written


def build_adapter(work: Path) -> Path:
    spec_dir = work / "spec"
    spec_dir.mkdir()
    (spec_dir / "spec.yaml").write_text(SPEC, encoding="utf-8")
    write_trace(spec_dir / "fixture.jsonl", 4096)
    plugin = work / "plugin"
    run = subprocess.run([sys.executable, "-m", "mapc.cli", "build", str(spec_dir / "spec.yaml"), "--target", "rlviz",
                          "-o", str(plugin)], capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"build failed:\n{run.stderr}")
    return plugin


def stream(plugin: Path, trace: Path, work: Path) -> tuple[int, int, float, int]:
    """(records, output bytes, seconds, peak RSS in KiB) of one `adapter.py stream` run."""
    request = work / "request.json"
    real = os.path.realpath(trace)
    request.write_text(json.dumps({"api_version": "rlviz.dev/v1alpha1", "operation": "stream",
                                   "source": {"path": real, "root": os.path.dirname(real), "kind": "file"},
                                   "limits": {}}))
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, str(plugin / "adapter.py"), "stream", "--request", str(request)],
                            stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, cwd=plugin)
    records = out_bytes = 0
    for chunk in iter(lambda: proc.stdout.read(1 << 20), b""):
        out_bytes += len(chunk)
        records += chunk.count(b"\n")
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit(f"adapter failed with exit status {proc.returncode}")
    return records - 1, out_bytes, elapsed, usage.ru_maxrss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sizes", nargs="*", default=["1M", "16M"], help="trace sizes, e.g. 1M 100M 1G")
    parser.add_argument("--keep", action="store_true", help="keep the generated traces and plugin")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="mapc-bench-"))
    plugin = build_adapter(work)
    print(f"{'size':>10} {'records':>12} {'output':>10} {'seconds':>8} {'MB/s':>7} {'peak RSS':>10}")
    for text in args.sizes:
        trace = work / f"trace-{text}.jsonl"
        size = write_trace(trace, parse_size(text))
        records, out_bytes, seconds, rss_kib = stream(plugin, trace, work)
        print(f"{size / (1 << 20):>8.1f}Mi {records:>12,} {out_bytes / (1 << 20):>8.1f}Mi {seconds:>8.2f} "
              f"{size / (1 << 20) / seconds:>7.1f} {rss_kib / 1024:>8.1f}Mi", flush=True)
        if not args.keep:
            trace.unlink()
    if args.keep:
        print(f"kept in {work}")
    else:
        import shutil

        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
