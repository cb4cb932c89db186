#!/usr/bin/env python3
"""Throughput of converting many trace files: ``mapc run --jobs N`` and Ray Data (docs/scale.md).

Usage::

    python bench/scale.py                        # 2,000 files, 1 and 2 workers, 3 repeats
    python bench/scale.py --files 500 --workers 1,2,4 --repeats 5 --work /tmp/scale
    python bench/scale.py --quick                # smoke run: 20 files, mapc run only, no doc

The corpus is ``--files`` JSONL agent event logs (``bench/traces.py``, the format of
``bench/agent_events/spec.yaml``), one seed each, in folders of 100 like a day of rollouts,
sized log-uniformly from 30 to 900 events (8 to 250 KB), so that a few large files and
many small ones are mixed as in real rollout dumps. Each mode converts all of it:

* ``mapc-run``: ``mapc run SPEC 'CORPUS/**/*.jsonl' --jobs N``, stdout to a file (one
  process; N worker processes when N > 1);
* ``ray``: ``examples/ray-rollouts/convert.py`` on a local Ray instance of N CPUs, one Ray
  task per file, each writing its NDJSON file;
* ``ray-batched``: the same with 50 files per task, to show Ray's per-task cost.

Times are wall times of the whole conversion (for Ray: from the call, after ``ray.init``,
whose time is reported apart). CPU is user + system time: of ``mapc run`` and its worker
processes, and for Ray of the mapping in the tasks (Ray's own scheduling not counted), so
"files per CPU s" is what one worker converts when it has a core to itself. The machine is shared, so the load average is recorded
before every measurement; repeats are interleaved and the median and the range reported.
No numbers are asserted anywhere.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import random
import resource
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))

import traces  # noqa: E402  (bench/traces.py)
from run import machine_line, write_doc  # noqa: E402  (bench/run.py: the doc's marked blocks)

SPEC = BENCH / "agent_events" / "spec.yaml"
EXAMPLE = ROOT / "examples" / "ray-rollouts" / "convert.py"
MODES = ("mapc-run", "ray", "ray-batched")
BATCH = 50


def make_corpus(folder: Path, files: int, seed: int = 31) -> tuple[int, int]:
    """``files`` traces under ``folder`` (reused when already written with the same counts);
    returns (files, bytes)."""
    stamp = folder / ".corpus"
    if stamp.exists() and stamp.read_text() == f"{files} {seed}\n":
        paths = sorted(folder.rglob("*.jsonl"))
        return len(paths), sum(p.stat().st_size for p in paths)
    shutil.rmtree(folder, ignore_errors=True)
    rng = random.Random(seed)
    total = 0
    for n in range(files):
        events = int(math.exp(rng.uniform(math.log(30), math.log(900))))
        path = folder / f"day-{n // 100:02d}" / f"rollout-{n:05d}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        total += traces.write_jsonl(path, events=events, seed=seed * 100_000 + n)[1]
    stamp.write_text(f"{files} {seed}\n")
    return files, total


def mapc_run(corpus: Path, jobs: int, work: Path) -> dict:
    """``mapc run`` over the corpus as a glob; records counted from its output afterwards."""
    out = work / "mapc-run.ndjson"
    argv = [sys.executable, "-m", "mapc.cli", "run", str(SPEC), str(corpus / "**" / "*.jsonl"), "--jobs", str(jobs)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    with open(out, "wb") as fh:
        proc = subprocess.run(argv, stdout=fh, stderr=subprocess.PIPE, cwd=ROOT)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)  # mapc and its worker processes
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    if proc.returncode != 0:
        raise RuntimeError(f"mapc run failed: {proc.stderr.decode()[-2000:]}")
    with open(out, "rb") as fh:
        lines = sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b""))
    completes = sum(1 for _ in corpus.rglob("*.jsonl"))
    out.unlink()
    return {"seconds": seconds, "cpu": cpu, "records": lines - completes}


def load_example():
    spec = importlib.util.spec_from_file_location("ray_rollouts_convert", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    import ray.cloudpickle

    ray.cloudpickle.register_pickle_by_value(module)  # as when run as a script
    return module


def ray_convert(example, corpus: Path, files_per_task: int, work: Path) -> dict:
    out = work / "ray-out"
    started = time.perf_counter()
    summary = example.convert(str(SPEC), [str(corpus)], out, files_per_task)
    seconds = time.perf_counter() - started
    shutil.rmtree(out)
    if summary["failed"]:
        raise RuntimeError(f"ray conversion failed: {summary['failed'][:3]}")
    return {"seconds": seconds, "cpu": summary["cpu_seconds"], "records": summary["records"]}


def measure(corpus: Path, work: Path, workers: list[int], modes: list[str], repeats: int, log) -> tuple[list, list]:
    """Interleaved repeats: per repeat, per worker count, every mode. Returns (runs, ray inits)."""
    runs, inits = [], []
    example = load_example() if any(m.startswith("ray") for m in modes) else None
    if example is not None:
        os.environ.setdefault("RAY_AUTH_TOKEN", secrets.token_hex(16))  # nothing written to ~/.ray
    for repeat in range(repeats):
        for n in workers:
            for mode in modes:
                if mode == "mapc-run":
                    load = os.getloadavg()[0]
                    runs.append({"mode": mode, "workers": n, "load": load, **mapc_run(corpus, n, work)})
                    log(runs[-1])
            if example is None:
                continue
            import ray
            import ray.data

            started = time.perf_counter()
            ray.init(num_cpus=n, include_dashboard=False, log_to_driver=False, _temp_dir=str(work / "ray"),
                     logging_level="WARNING")
            ray.data.DataContext.get_current().enable_progress_bars = False
            inits.append({"workers": n, "seconds": time.perf_counter() - started})
            try:
                for mode in modes:
                    if mode.startswith("ray"):
                        load = os.getloadavg()[0]
                        per_task = BATCH if mode == "ray-batched" else 1
                        runs.append({"mode": mode, "workers": n, "load": load,
                                     **ray_convert(example, corpus, per_task, work)})
                        log(runs[-1])
            finally:
                ray.shutdown()
    return runs, inits


def table(runs: list[dict], files: int, size: int) -> str:
    """One row per mode and worker count: medians, with the range over the repeats."""
    rows = ["| mode | workers | files/s | MB/s | records/s | files/s per worker | speed-up | wall s | load "
            "| CPU s | files per CPU s |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|"]
    base: dict[str, float] = {}
    for mode in MODES:
        for n in sorted({r["workers"] for r in runs if r["mode"] == mode}):
            picked = [r for r in runs if r["mode"] == mode and r["workers"] == n]
            secs = sorted(r["seconds"] for r in picked)
            med = statistics.median(secs)
            records = picked[0]["records"]
            fps = files / med
            base.setdefault(mode, fps)
            spread = f" ({files / secs[-1]:,.0f}–{files / secs[0]:,.0f})" if len(secs) > 1 else ""
            loads = sorted(r["load"] for r in picked)
            cpu = statistics.median(r["cpu"] for r in picked)
            rows.append(f"| {mode} | {n} | {fps:,.0f}{spread} | {size / 1e6 / med:.1f} | {records / med:,.0f} | "
                        f"{fps / n:,.0f} | {fps / base[mode]:.2f}x | {med:.1f} | {loads[0]:.1f}–{loads[-1]:.1f} | "
                        f"{cpu:.1f} | {files / cpu:,.0f} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--work", type=Path, help="keep the corpus here (reused when it matches)")
    parser.add_argument("--doc", type=Path, default=ROOT / "docs" / "scale.md")
    parser.add_argument("--no-doc", action="store_true")
    parser.add_argument("--quick", action="store_true", help="20 files, 1 worker, mapc run only, no doc")
    args = parser.parse_args(argv)
    if args.quick:
        args.files, args.workers, args.repeats, args.modes, args.no_doc = 20, "1", 1, "mapc-run", True
    modes = args.modes.split(",")
    unknown = sorted(set(modes) - set(MODES))
    if unknown:
        parser.error(f"unknown mode {unknown[0]!r}: choose from {', '.join(MODES)}")
    machine = machine_line(args.repeats)  # the load average before anything runs
    work = args.work or Path(tempfile.mkdtemp(prefix="mapc-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        files, size = make_corpus(work / "corpus", args.files)
        print(f"corpus: {files} files, {size / 1e6:.1f} MB", flush=True)
        runs, inits = measure(work / "corpus", work, [int(n) for n in args.workers.split(",")], modes,
                              args.repeats, lambda row: print(row, flush=True))
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    text = (f"{machine}\n\nCorpus: {files:,} JSONL files, {size / 1e6:.1f} MB "
            f"({size / files / 1e3:.0f} KB a file on average).\n\n{table(runs, files, size)}")
    if inits:
        text += "\n\n" + "; ".join(f"ray.init with {i['workers']} CPUs: {i['seconds']:.1f} s" for i in inits)
    print(text)
    if not args.no_doc:
        write_doc(args.doc, {"scale": text})
    return 0


if __name__ == "__main__":
    sys.exit(main())
