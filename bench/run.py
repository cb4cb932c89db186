#!/usr/bin/env python3
"""mapc benchmark: speed and memory of generated adapters, and `mapc build` time.

Usage::

    python bench/run.py                 # default: 10k/100k/1M events, build times (a few minutes)
    python bench/run.py --quick         # smoke run: tiny traces, one repeat, no docs/performance.md
    python bench/run.py --rss 10M,100M,1G   # peak RSS of the generated adapter over JSONL sizes
    python bench/run.py --limits        # largest JSONL trace within RLViz's 10 s / 32 MiB, raw on/off
    python bench/run.py --only rss --rss 10M,1G   # one section (throughput, build, rss, limits)
    python bench/run.py --rss-json 10M,100M,1G  # peak RSS over eval-log (JSON document) sizes
    python bench/run.py --only startup  # start-up of each target's entry point (probe, 10 lines)

What it measures, in one run and side by side on the same synthetic traces
(``bench/traces.py``; a JSONL agent event log and a nested JSON eval log):

* ``generated``: the adapter ``mapc build --target rlviz`` writes for
  ``bench/<format>/spec.yaml``, run as RLViz runs it (``adapter.py stream
  --request REQ``), through ``bench/uncapped.py``: without the 32 MiB output limit at which
  it stops (RLViz reads no more), so that large traces are mapped to the end;
* ``hand-written``: ``bench/<format>/handwritten.py``, the same mapping written
  by hand in the usual style (``json.loads`` per line, dicts,
  ``json.dumps(sort_keys=True)``);
* ``jmespath``: ``bench/<format>/jmespath_adapter.py``, the same mapping with
  the spec's expressions evaluated by ``jmespath.search`` per record;
* ``floor``: ``bench/floor.py``, only ``json.loads`` + ``json.dumps`` of each
  source element.

Each adapter is a separate process; the script drains its stdout through a
pipe like RLViz and takes wall time, CPU time (user + system, from
``os.wait4``) and peak RSS (``VmHWM``) of the process. Repeats are interleaved and
medians reported. Ratios use CPU time, which the other jobs on a shared
machine disturb far less than wall time (both are printed). Before timing
anything, the script checks that the hand-written and JMESPath adapters print
the same records as the generated one (all records at the smallest size; the
record count and a head and tail sample at every size).

Results are printed and, unless ``--quick``, written into the marked blocks
of ``docs/performance.md`` (``--doc PATH`` to write elsewhere, ``--no-doc``
to skip). No numbers are asserted here or in the tests.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))

import traces  # noqa: E402  (bench/traces.py, next to this script)

PYTHON = sys.executable
RLVIZ_TIMEOUT_S = 10.0
RLVIZ_MAX_STDOUT = 32 << 20
HEAD_BYTES = 1 << 20
TAIL_BYTES = 256 << 10
ADAPTERS = ("generated", "hand-written", "jmespath", "floor")
# Adapters run with the environment this script has, less PYTHONUNBUFFERED: with it, Python's
# binary stdout is unbuffered, so the floor and the hand-written adapters (which write a line
# at a time through sys.stdout.buffer) made one write() per line (100,000 at 100k lines, 0.3 s
# of system time in a pipe) while the generated adapter writes 256 records at a time either way.
ADAPTER_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
SECTIONS = ("throughput", "build", "rss", "rss-json", "startup", "limits")
# A realistic spec per target for `mapc build` times (the repository's examples).
BUILD_SPECS = {
    "rlviz": "examples/verifiers-math/spec.yaml",
    "relai": "examples/relai-tau2-airline/spec.yaml",
    "cap-evolve": "examples/cap-evolve-tau-bench/spec.yaml",
}


@dataclass(frozen=True)
class Format:
    key: str
    title: str
    folder: Path
    suffix: str

    def write(self, path: Path, events: int) -> tuple[int, int]:
        if self.suffix == ".jsonl":
            return traces.write_jsonl(path, events=events)
        return traces.write_eval_log(path, events)


FORMATS = {
    "jsonl": Format("jsonl", "agent events (JSONL)", BENCH / "agent_events", ".jsonl"),
    "json": Format("json", "eval log (nested JSON)", BENCH / "eval_log", ".json"),
}


# -- running one adapter ------------------------------------------------------------------
@dataclass
class Run:
    wall: float
    cpu: float
    rss_kib: int
    out_bytes: int
    lines: int
    head: bytes
    tail: bytes
    full: bytes | None = None
    status: int | str = 0  # the exit status, "killed" after a timeout (``check=False`` only)
    stderr: str = ""  # its last line (``check=False`` only)


class AdapterFailed(RuntimeError):
    pass


def high_water_kib(pid: int) -> int | None:
    """``VmHWM`` of a running process: the peak RSS of the program it runs now.

    ``ru_maxrss`` from ``wait4`` is not used for this: Linux folds the parent's
    memory into a child's ``ru_maxrss`` when the child starts (fork or vfork,
    then exec), so a large benchmark process would inflate every adapter's figure.
    """
    try:
        with open(f"/proc/{pid}/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def run_process(argv: list[str], *, cwd: Path | None = None, keep_all: bool = False, keep_limit: int = 1 << 30,
                env: dict | None = None, timeout: float | None = None, check: bool = True) -> Run:
    """Run ``argv``, drain its stdout like RLViz does, and measure it; kill it after ``timeout``
    seconds; a failure raises :class:`AdapterFailed` unless ``check`` is False."""
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL, cwd=cwd,
                                env=env)
        fd = proc.stdout.fileno()
        head = bytearray()
        tail = b""
        full = [] if keep_all else None
        out_bytes = lines = 0
        peaks: list[int] = []
        running = True

        def watch() -> None:
            # every 10 ms, not only when output comes: `mapc run` compiles the spec before it
            # writes anything and then replaces itself (exec, same pid) with the mapping process,
            # whose VmHWM starts again; the peak reported is the higher of the two phases
            while running:
                hwm = high_water_kib(proc.pid)
                if hwm is not None:
                    peaks.append(hwm)
                if timeout is not None and time.perf_counter() - start > timeout:
                    proc.kill()
                time.sleep(0.01)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        while True:
            chunk = os.read(fd, 1 << 20)
            hwm = high_water_kib(proc.pid)
            if hwm is not None:
                peaks.append(hwm)
            if not chunk:
                break
            out_bytes += len(chunk)
            lines += chunk.count(b"\n")
            if len(head) < HEAD_BYTES:
                head += chunk[: HEAD_BYTES - len(head)]
            tail = (tail + chunk)[-TAIL_BYTES:]
            if full is not None and out_bytes <= keep_limit:
                full.append(chunk)
        running = False
        watcher.join()  # before the pid is reaped (and could be another process's)
        peak = max(peaks) if peaks else None
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.stdout.close()
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        message = err.read().decode("utf-8", "replace").strip()
        if proc.returncode != 0 and check:
            raise AdapterFailed(f"{' '.join(map(str, argv))} exited {proc.returncode}: {message[-2000:]}")
    rss = peak if peak is not None else usage.ru_maxrss
    return Run(wall, usage.ru_utime + usage.ru_stime, rss, out_bytes, lines, bytes(head), tail,
               b"".join(full) if full is not None else None,
               "killed" if proc.returncode == -9 else proc.returncode, message.rsplit("\n", 1)[-1][:160])


def stream_request(trace: Path, work: Path) -> Path:
    """The request file RLViz writes for `adapter.py stream` on ``trace``."""
    real = os.path.realpath(trace)
    path = work / f"request-{trace.stem}.json"
    path.write_text(json.dumps({"api_version": "rlviz.dev/v1alpha1", "operation": "stream",
                                "source": {"path": real, "root": os.path.dirname(real), "kind": "file",
                                           "size_bytes": os.path.getsize(real)},
                                "limits": {}}))
    return path


def adapter_argv(name: str, fmt: Format, trace: Path, plugin: Path, work: Path, *, uncapped: bool = True) -> list[str]:
    """The command of an adapter; the generated one through ``bench/uncapped.py`` (without RLViz's
    32 MiB output limit, at which it stops: D96) unless ``uncapped`` is False."""
    if name == "generated":
        argv = [PYTHON, str(plugin / "adapter.py"), "stream", "--request", str(stream_request(trace, work))]
        return argv[:1] + [str(BENCH / "uncapped.py")] + argv[1:] if uncapped else argv
    script = {"hand-written": fmt.folder / "handwritten.py", "jmespath": fmt.folder / "jmespath_adapter.py",
              "floor": BENCH / "floor.py"}[name]
    return [PYTHON, str(script), str(trace)]


# -- building ---------------------------------------------------------------------------
def mapc_build(spec: Path, target: str, out: Path, *, validate: bool) -> None:
    argv = [PYTHON, "-m", "mapc.cli", "build", str(spec), "--target", target, "-o", str(out), "--force"]
    if not validate:
        argv.append("--no-validate")
    done = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        raise SystemExit(f"mapc build {spec} --target {target} failed:\n{done.stdout}{done.stderr}")


def build_plugin(fmt: Format, work: Path, *, raw: bool = False, validate: bool = True) -> Path:
    """Build the RLViz adapter of ``fmt``'s spec (a copy with ``targets.rlviz.raw`` when ``raw``)."""
    spec = fmt.folder / "spec.yaml"
    if raw:
        folder = work / f"spec-{fmt.key}-raw"
        folder.mkdir(exist_ok=True)
        for item in fmt.folder.iterdir():
            if item.name.startswith("fixture"):
                shutil.copy(item, folder / item.name)
        (folder / "spec.yaml").write_text(spec.read_text() + "\ntargets:\n  rlviz: {raw: true}\n")
        spec = folder / "spec.yaml"
    plugin = work / f"plugin-{fmt.key}{'-raw' if raw else ''}"
    mapc_build(spec, "rlviz", plugin, validate=validate)
    return plugin


# -- same mapping ------------------------------------------------------------------------
def _records(data: bytes, *, from_end: bool = False) -> list:
    """Complete lines of a head (or tail) sample, decoded; the cut-off line is dropped."""
    lines = data.split(b"\n")
    lines = lines[1:] if from_end else lines[:-1]
    return [json.loads(line) for line in lines if line.strip()]


def same_mapping(fmt: Format, events: int, runs: dict[str, Run]) -> list[str]:
    """Problems found comparing the adapters' records to the generated adapter's (empty: same)."""
    problems = []
    gen = runs["generated"]
    for name in ("hand-written", "jmespath"):
        other = runs[name]
        where = f"{fmt.key} {events:,} events, {name}"
        if other.lines != gen.lines:
            problems.append(f"{where}: {other.lines} records, generated printed {gen.lines}")
            continue
        if gen.full is not None and other.full is not None:
            a, b = _records(gen.full + b"\n"), _records(other.full + b"\n")
            if a != b:
                first = next(i for i, (x, y) in enumerate(zip(a, b)) if x != y) if len(a) == len(b) else min(
                    len(a), len(b))
                problems.append(f"{where}: record {first + 1} differs")
            continue
        for label, a, b in (("head", _records(gen.head), _records(other.head)),
                            ("tail", _records(gen.tail, from_end=True), _records(other.tail, from_end=True))):
            n = min(len(a), len(b))
            a, b = (a[:n], b[:n]) if label == "head" else (a[len(a) - n:], b[len(b) - n:])
            if a != b:
                problems.append(f"{where}: the {label} sample ({n} records) differs")
    return problems


# -- sections -----------------------------------------------------------------------------
@dataclass
class Row:
    fmt: Format
    events: int
    in_bytes: int
    adapter: str
    runs: list[Run] = field(default_factory=list)

    @property
    def cpu(self) -> float:
        return statistics.median(r.cpu for r in self.runs)

    @property
    def wall(self) -> float:
        return statistics.median(r.wall for r in self.runs)

    @property
    def rss_mib(self) -> float:
        return max(r.rss_kib for r in self.runs) / 1024

    @property
    def out_mib(self) -> float:
        return self.runs[0].out_bytes / (1 << 20)


def make_trace(fmt: Format, events: int, work: Path) -> tuple[Path, int, int]:
    path = work / f"trace-{fmt.key}-{events}{fmt.suffix}"
    meta = path.with_suffix(".meta")
    if path.exists() and meta.exists():
        n, size = json.loads(meta.read_text())
        return path, n, size
    n, size = fmt.write(path, events)
    meta.write_text(json.dumps([n, size]))
    return path, n, size


def throughput(formats: list[Format], sizes: list[int], repeats: int, work: Path, plugins: dict[str, Path],
               log) -> tuple[list[Row], list[str]]:
    rows: list[Row] = []
    problems: list[str] = []
    smallest = min(sizes)
    for fmt in formats:
        for events in sizes:
            trace, n, size = make_trace(fmt, events, work)
            log(f"  {fmt.key} {n:,} events ({size / 1e6:.1f} MB)")
            group = {name: Row(fmt, n, size, name) for name in ADAPTERS}
            for rep in range(repeats):
                for name in ADAPTERS:
                    argv = adapter_argv(name, fmt, trace, plugins[fmt.key], work)
                    keep = rep == 0 and events == smallest and name != "floor"
                    group[name].runs.append(run_process(argv, keep_all=keep, env=ADAPTER_ENV))
            first = {name: row.runs[0] for name, row in group.items()}
            problems += same_mapping(fmt, n, first)
            gen_outputs = {(r.out_bytes, r.head, r.tail) for r in group["generated"].runs}
            if len(gen_outputs) != 1:
                problems.append(f"{fmt.key} {n:,} events: the generated adapter's output differs between runs")
            for name in ADAPTERS:
                row = group[name]
                log(f"    {name:<13} cpu {row.cpu:7.2f}s  wall {row.wall:7.2f}s  rss {row.rss_mib:6.1f} MiB")
                rows.append(row)
    return rows, problems


def throughput_table(rows: list[Row]) -> str:
    out = ["| trace | events | input MB | adapter | CPU s | wall s | events/s | MB/s | CPU ÷ generated's "
           "| output MB | peak RSS MiB |",
           "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    gen = {(r.fmt.key, r.events): r for r in rows if r.adapter == "generated"}
    for r in rows:
        g = gen[(r.fmt.key, r.events)]
        ratio = "1.00" if r is g else f"{r.cpu / g.cpu:.2f}"
        out.append(f"| {r.fmt.title} | {r.events:,} | {r.in_bytes / 1e6:.1f} | {r.adapter} | {r.cpu:.2f} | "
                   f"{r.wall:.2f} | {r.events / r.cpu:,.0f} | {r.in_bytes / 1e6 / r.cpu:.1f} | {ratio} | "
                   f"{r.runs[0].out_bytes / 1e6:.1f} | {r.rss_mib:.1f} |")
    return "\n".join(out)


def goals(rows: list[Row] = (), rss: list[dict] = (), builds: list[dict] = (), rss_json: list[dict] = (),
          startup: list[dict] = ()) -> list[str]:
    """The issue's goals, each with the measured value (reported, never asserted)."""
    lines = []
    gen = {(r.fmt.key, r.events): r for r in rows if r.adapter == "generated"}
    for r in rows:
        if r.adapter == "generated":
            continue
        g = gen[(r.fmt.key, r.events)]
        want = {"hand-written": 1.5, "jmespath": 2.5}.get(r.adapter)
        ratio = r.cpu / g.cpu
        if want is not None:
            mark = "met" if ratio >= want else "MISSED"
            lines.append(f"{mark}: {r.fmt.key} {r.events:,} events: generated is {ratio:.2f}x {r.adapter} "
                         f"(goal >= {want}x)")
        elif r.fmt.key == "jsonl":
            mark = "met" if 1 / ratio <= 1.3 else "MISSED"
            lines.append(f"{mark}: {r.fmt.key} {r.events:,} events: generated takes {1 / ratio:.2f}x the floor's "
                         "CPU time (goal <= 1.3x)")
        else:
            lines.append(f"info: {r.fmt.key} {r.events:,} events: generated takes {1 / ratio:.2f}x the floor's "
                         "CPU time")
    for item in rss:
        mark = "met" if item["rss_mib"] < 64 else "MISSED"
        lines.append(f"{mark}: peak RSS {item['rss_mib']:.1f} MiB at {item['in_bytes'] / 1e6:,.0f} MB of JSONL "
                     f"(raw {'on' if item['raw'] else 'off'}; goal < 64 MiB)")
    for item in rss_json:
        for key in ("streamed", "mapc run"):
            mib = item[key]["rss_mib"]
            lines.append(f"{'met' if mib < 64 else 'MISSED'}: peak RSS {mib:.1f} MiB ({key}) at "
                         f"{item['in_bytes'] / 1e6:,.0f} MB of eval log (goal < 64 MiB)")
    for item in startup:
        if "probe" in item["name"]:
            lines.append(f"{'met' if item['wall_ms'] < 60 else 'MISSED'}: {item['name']} {item['wall_ms']:.0f} ms "
                         f"wall, {item['cpu_ms']:.0f} ms CPU (goal < 60 ms wall)")
    for b in builds:
        mark = "met" if b["no_validate_wall"] < 1.0 else "MISSED"
        lines.append(f"{mark}: mapc build --target {b['target']} --no-validate {b['no_validate_wall']:.2f}s wall "
                     f"(in-process build+render {b['render']:.2f}s; goal < 1 s)")
    return lines


def build_times(targets: list[str], repeats: int, work: Path, log) -> list[dict]:
    """`mapc build` per target: in-process build+render, and the CLI without and with validation."""
    results = []
    probe = (
        "import sys, time\n"
        "t0 = time.perf_counter()\n"
        "from pathlib import Path\n"
        "from mapc.pipeline.build import load_checked, render, resolve_target\n"
        "t1 = time.perf_counter()\n"
        "target = resolve_target(sys.argv[2])\n"
        "spec, diags = load_checked(sys.argv[1], target)\n"
        "assert spec is not None, diags\n"
        "render(spec, target, Path(sys.argv[3]))\n"
        "t2 = time.perf_counter()\n"
        "print(t1 - t0, t2 - t1)\n"
    )
    for target in targets:
        spec = ROOT / BUILD_SPECS[target]
        if not spec.exists():
            log(f"  {target}: {BUILD_SPECS[target]} not found; skipped")
            continue
        out = work / f"build-{target}"
        imports, renders, cli_nv, cli_nv_cpu, cli_v, cli_v_cpu = [], [], [], [], [], []
        try:
            for _ in range(repeats):
                done = subprocess.run([PYTHON, "-c", probe, str(spec), target, str(out)], capture_output=True,
                                      text=True, cwd=ROOT, check=True)
                a, b = map(float, done.stdout.split())
                imports.append(a)
                renders.append(b)
                for validate, walls, cpus in ((False, cli_nv, cli_nv_cpu), (True, cli_v, cli_v_cpu)):
                    argv = [PYTHON, "-m", "mapc.cli", "build", str(spec), "--target", target, "-o", str(out),
                            "--force"] + ([] if validate else ["--no-validate"])
                    r = run_process(argv, cwd=ROOT)
                    walls.append(r.wall)
                    cpus.append(r.cpu)
        except (subprocess.CalledProcessError, AdapterFailed) as exc:
            log(f"  {target}: build failed; skipped ({str(exc).splitlines()[0][:200]})")
            continue
        med = statistics.median
        item = {"target": target, "spec": BUILD_SPECS[target], "imports": med(imports), "render": med(renders),
                "no_validate_wall": med(cli_nv), "no_validate_cpu": med(cli_nv_cpu),
                "validate_wall": med(cli_v), "validate_cpu": med(cli_v_cpu), "repeats": repeats}
        log(f"  {target}: build+render {item['render']:.2f}s, CLI --no-validate {item['no_validate_wall']:.2f}s, "
            f"CLI with validation {item['validate_wall']:.2f}s")
        results.append(item)
    return results


def build_table(builds: list[dict]) -> str:
    out = ["| target | spec | imports s | build+render s (in-process) | `mapc build --no-validate` wall s (CPU s) "
           "| `mapc build` wall s (CPU s) |",
           "|---|---|---:|---:|---:|---:|"]
    for b in builds:
        out.append(f"| {b['target']} | `{b['spec']}` | {b['imports']:.2f} | {b['render']:.2f} | "
                   f"{b['no_validate_wall']:.2f} ({b['no_validate_cpu']:.2f}) | "
                   f"{b['validate_wall']:.2f} ({b['validate_cpu']:.2f}) |")
    return "\n".join(out)


def parse_size(text: str) -> int:
    units = {"K": 10**3, "M": 10**6, "G": 10**9}
    text = text.strip().upper().rstrip("B")
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


def parse_count(text: str) -> int:
    text = text.strip().lower()
    mult = {"k": 10**3, "m": 10**6}.get(text[-1:], 1)
    return int(float(text.rstrip("km")) * mult)


def jsonl_of_size(path: Path, size: int, work: Path) -> tuple[int, int]:
    """A JSONL trace of about ``size`` bytes: a generated 8 MB block repeated (fast for 1 GB)."""
    block_path = work / "block.jsonl"
    if not block_path.exists():
        traces.write_jsonl(block_path, size_bytes=8 * 10**6)
    block = block_path.read_bytes()
    block_lines = block.count(b"\n")
    lines = written = 0
    with open(path, "wb") as fh:
        while written + len(block) <= size:
            fh.write(block)
            written += len(block)
            lines += block_lines
        rest = block[: size - written]
        rest = rest[: rest.rfind(b"\n") + 1]
        fh.write(rest)
        written += len(rest)
        lines += rest.count(b"\n")
    return lines, written


def rss_series(sizes: list[int], work: Path, plugins: dict[str, Path], log) -> list[dict]:
    """Peak RSS of the generated JSONL adapter over growing traces, raw off and on."""
    results = []
    for size in sizes:
        trace = work / f"rss-{size}.jsonl"
        lines, written = jsonl_of_size(trace, size, work)
        for raw in (False, True):
            plugin = plugins["jsonl-raw" if raw else "jsonl"]
            r = run_process(adapter_argv("generated", FORMATS["jsonl"], trace, plugin, work))
            item = {"in_bytes": written, "events": lines, "raw": raw, "rss_mib": r.rss_kib / 1024, "cpu": r.cpu,
                    "wall": r.wall, "out_bytes": r.out_bytes}
            log(f"  {written / 1e6:,.0f} MB ({lines:,} events), raw {'on ' if raw else 'off'}: "
                f"peak RSS {item['rss_mib']:.1f} MiB, cpu {r.cpu:.1f}s, wall {r.wall:.1f}s, "
                f"output {r.out_bytes / 1e6:,.0f} MB")
            results.append(item)
        trace.unlink()
    return results


def rss_table(results: list[dict]) -> str:
    out = ["| JSONL input MB | events | raw | peak RSS MiB | CPU s | wall s | output MB |",
           "|---:|---:|---|---:|---:|---:|---:|"]
    for r in results:
        out.append(f"| {r['in_bytes'] / 1e6:,.0f} | {r['events']:,} | {'on' if r['raw'] else 'off'} | "
                   f"{r['rss_mib']:.1f} | {r['cpu']:.1f} | {r['wall']:.1f} | {r['out_bytes'] / 1e6:,.0f} |")
    return "\n".join(out)


def prefix_trace(master: Path, n: int, work: Path) -> tuple[Path, int]:
    """The first ``n`` lines of ``master`` as a file of their own."""
    path = work / f"limit-{n}.jsonl"
    size = 0
    with open(master, "rb") as src, open(path, "wb") as dst:
        for i, line in enumerate(src):
            if i >= n:
                break
            dst.write(line)
            size += len(line)
    return path, size


def largest_within_limits(work: Path, plugins: dict[str, Path], repeats: int, log) -> list[dict]:
    """The largest JSONL trace the generated adapter streams within RLViz's 10 s and 32 MiB."""
    from mapc.targets.rlviz.validator.host import HostError, new_request, run_plugin
    from mapc.targets.rlviz.validator.manifest import load_manifest

    fmt = FORMATS["jsonl"]
    results = []
    for raw in (False, True):
        plugin = plugins["jsonl-raw" if raw else "jsonl"]
        master, _, _ = make_trace(fmt, 2_000_000, work)

        def trial(n: int, times: int = 1) -> tuple[int, float, int]:
            trace, size = prefix_trace(master, n, work)
            runs = [run_process(adapter_argv("generated", fmt, trace, plugin, work)) for _ in range(times)]
            trace.unlink()
            return runs[0].out_bytes, statistics.median(r.wall for r in runs), size

        # output size is exact and linear in the trace: bisect on it
        n0 = 20_000
        out0, _, _ = trial(n0)
        lo, hi = 0, int(n0 * RLVIZ_MAX_STDOUT / out0 * 1.1) + 1
        while hi - lo > max(50, lo // 500):
            mid = (lo + hi) // 2
            if trial(mid)[0] <= RLVIZ_MAX_STDOUT:
                lo = mid
            else:
                hi = mid
        out_n = lo
        out_bytes, out_wall, out_size = trial(out_n, repeats)
        # time alone (as if output were unbounded): the wall-clock rate at a large trace, then checked
        big = 1_000_000
        _, big_wall, _ = trial(big, repeats)
        time_n = min(int(big * RLVIZ_TIMEOUT_S / big_wall), 2_000_000)
        _, time_wall, time_size = trial(time_n, repeats)
        # confirm with mapc's stand-in of RLViz's host (same limits, fresh snapshot, drained pipes)
        manifest = load_manifest(plugin)
        verdicts = {}
        for label, n in (("at", out_n), ("above", int(out_n * 1.02) + 1)):
            trace, _ = prefix_trace(master, n, work)
            try:
                run_plugin(plugin, manifest, new_request("stream", trace))
                verdicts[label] = "ok"
            except HostError as exc:
                verdicts[label] = str(exc)
            trace.unlink()
        item = {"raw": raw, "events": out_n, "in_bytes": out_size, "out_bytes": out_bytes, "wall": out_wall,
                "time_events": time_n, "time_in_bytes": time_size, "time_wall": time_wall,
                "host_at": verdicts["at"], "host_above": verdicts["above"]}
        log(f"  raw {'on ' if raw else 'off'}: {out_n:,} events ({out_size / 1e6:.1f} MB) -> "
            f"{out_bytes / (1 << 20):.1f} MiB in {out_wall:.2f}s; time alone allows {time_n:,} events "
            f"({time_size / 1e6:.0f} MB, {time_wall:.1f}s); host: {verdicts['at']} / +2%: {verdicts['above']}")
        results.append(item)
    return results


def limits_table(results: list[dict]) -> str:
    out = ["| raw | largest trace (events) | input MB | output MiB | wall s | binding limit | "
           "time alone would allow | RLViz host stand-in at / +2% |",
           "|---|---:|---:|---:|---:|---|---|---|"]
    for r in results:
        binding = "32 MiB stdout" if r["events"] <= r["time_events"] else "10 s"
        out.append(f"| {'on' if r['raw'] else 'off'} | {r['events']:,} | {r['in_bytes'] / 1e6:.1f} | "
                   f"{r['out_bytes'] / (1 << 20):.1f} | {r['wall']:.2f} | {binding} | "
                   f"{r['time_events']:,} events, {r['time_in_bytes'] / 1e6:.0f} MB ({r['time_wall']:.1f} s) | "
                   f"{r['host_at']} / {r['host_above']} |")
    return "\n".join(out)


# -- peak RSS of JSON documents -----------------------------------------------------------------
def whole_document_plugin(plugin: Path, work: Path) -> Path:
    """A copy of ``plugin`` that parses every document whole (as adapters did before streaming):
    the same code with the streaming threshold out of reach."""
    copy = work / (plugin.name + "-whole")
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(plugin, copy)
    # the runtime part that holds it (mapc_runtime/stream.py), else an older layout's file
    candidates = sorted((copy / "mapc_runtime").glob("*.py")) + [copy / "mapc_runtime.py", copy / "adapter.py"]
    runtime = next((p for p in candidates if p.is_file() and "\nSTREAM_ABOVE_BYTES = " in p.read_text("utf-8")),
                   None)
    if runtime is None:
        raise SystemExit(f"{copy}: no STREAM_ABOVE_BYTES to change")
    text = runtime.read_text(encoding="utf-8")
    runtime.write_text(text.replace("\nSTREAM_ABOVE_BYTES = ", "\nSTREAM_ABOVE_BYTES = 1 << 62  # ", 1),
                       encoding="utf-8")
    # a document larger than MAX_LINE_BYTES streams whatever the threshold (D97): out of reach too
    entry = copy / "adapter.py"
    text, found = re.subn(r"(?m)^(MAX_BYTES, MAX_LINE_BYTES = [^,\n]+), .*$", r"\1, 1 << 62",
                          entry.read_text(encoding="utf-8"), count=1)
    if not found:
        raise SystemExit(f"{entry}: no MAX_LINE_BYTES to change")
    entry.write_text(text, encoding="utf-8")
    return copy


def rss_json_series(sizes: list[int], whole_max: int, work: Path, plugin: Path, log) -> list[dict]:
    """Peak RSS of the generated eval-log adapter (streamed), of the same adapter parsing the
    document whole (up to ``whole_max`` bytes), and of `mapc run`, over growing documents.
    Every run must print the same records (count, head and tail) before it is reported."""
    whole_plugin = whole_document_plugin(plugin, work)
    fmt = FORMATS["json"]
    results = []
    for size in sizes:
        trace = work / f"rss-{size}.json"
        events, written = traces.write_eval_log_of_size(trace, size)
        runs = {"streamed": run_process(adapter_argv("generated", fmt, trace, plugin, work))}
        runs["mapc run"] = run_process([PYTHON, "-m", "mapc.cli", "run", str(fmt.folder / "spec.yaml"),
                                        str(trace)], cwd=ROOT)
        if written <= whole_max:
            runs["whole"] = run_process(adapter_argv("generated", fmt, trace, whole_plugin, work))
        same = all(r.lines == runs["streamed"].lines and r.head == runs["streamed"].head
                   and r.tail == runs["streamed"].tail for r in runs.values())
        item = {"in_bytes": written, "events": events, "same": same,
                **{k: {"rss_mib": r.rss_kib / 1024, "cpu": r.cpu, "wall": r.wall} for k, r in runs.items()}}
        log(f"  {written / 1e6:,.0f} MB ({events:,} events): " + ", ".join(
            f"{k} {v['rss_mib']:.1f} MiB cpu {v['cpu']:.1f}s" for k, v in item.items() if isinstance(v, dict))
            + ("" if same else "  OUTPUT DIFFERS"))
        results.append(item)
        trace.unlink()
    return results


def rss_json_table(results: list[dict]) -> str:
    out = ["| eval log MB | events | streamed: peak RSS MiB | CPU s | parsed whole (before): peak RSS MiB | "
           "CPU s | `mapc run`: peak RSS MiB | same records |",
           "|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in results:
        whole = r.get("whole")
        out.append(f"| {r['in_bytes'] / 1e6:,.0f} | {r['events']:,} | {r['streamed']['rss_mib']:.1f} | "
                   f"{r['streamed']['cpu']:.1f} | "
                   + (f"{whole['rss_mib']:,.1f} | {whole['cpu']:.1f} | " if whole else "not run | | ")
                   + f"{r['mapc run']['rss_mib']:.1f} | {'yes' if r['same'] else 'NO'} |")
    return "\n".join(out)


# -- start-up ------------------------------------------------------------------------------------
def import_ms(argv: list[str], cwd: Path | None = None, env: dict | None = None) -> float:
    """What ``python -X importtime`` says the process's imports took (ms, top-level total)."""
    done = subprocess.run([argv[0], "-X", "importtime", *argv[1:]], capture_output=True, text=True, cwd=cwd,
                          env=env)
    total = 0
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, cumulative, name = line[len("import time:"):].split("|", 2)
        if not name.startswith(" ") or name.startswith("  "):
            continue  # only top-level imports: nested ones are inside their cumulative time
        total += int(cumulative)
    return total / 1000


def interpreters(spec: str | None) -> list[tuple[str, str]]:
    """``(label, path)`` of the interpreters to start adapters with: ``--pythons`` (comma-
    separated paths), else the one running this script and ``python3`` on PATH (what RLViz's
    manifest command runs), and, when that is a shell script (a version manager's shim), the
    interpreter it hands over to."""
    # a bare name (`python3`) is the one on PATH, as RLViz's manifest command finds it
    paths = [p if os.sep in p else (shutil.which(p) or p) for p in (spec or "").split(",") if p] or [PYTHON]
    found = shutil.which("python3")
    if not spec and found:
        paths.append(found)
        real = subprocess.run([found, "-c", "import sys; print(sys.executable)"], capture_output=True,
                              text=True).stdout.strip()
        if real:
            paths.append(real)
    out, seen = [], set()
    for path in paths:
        key = os.path.realpath(path)
        if key in seen:
            continue
        seen.add(key)
        version = subprocess.run([path, "-c", "import platform; print(platform.python_version())"],
                                 capture_output=True, text=True).stdout.strip() or "?"
        with open(key, "rb") as fh:
            script = fh.read(2) == b"#!"
        kinds = (["python3 on PATH"] if found and key == os.path.realpath(found) else []) + (
            ["a shell-script shim"] if script else []) + (["runs this benchmark"] if path == PYTHON else [])
        out.append((f"Python {version}" + (f" ({', '.join(kinds)})" if kinds else ""), path))
    return out


def instructions(argv: list[str], cwd: Path | None = None, env: dict | None = None) -> float | None:
    """Instructions the process (and any it execs or starts) executed, in millions, counted by
    callgrind: repeatable on a shared machine, where times are not. None without valgrind."""
    if not shutil.which("valgrind"):
        return None
    with tempfile.TemporaryDirectory() as tmp:
        done = subprocess.run(["valgrind", "--tool=callgrind", "--trace-children=yes",
                               f"--callgrind-out-file={tmp}/cg.%p", *argv], capture_output=True, text=True,
                              cwd=cwd, env=env)
    counts = [int(line.rsplit(":", 1)[1]) for line in done.stderr.splitlines() if "Collected :" in line]
    return sum(counts) / 1e6 if counts else None


def startup_times(repeats: int, work: Path, log, pythons: str | None = None) -> list[dict]:
    """Each target's entry point as a whole process: RLViz's `probe` and `stream` of a 10-line
    trace with every interpreter (``interpreters``), each next to the bare interpreter; RELAI's
    run.py and the cap-evolve adapter imported; the bare interpreter for scale."""
    fmt = FORMATS["jsonl"]
    plugin = build_plugin(fmt, work, validate=False)
    trace = work / "startup-10.jsonl"
    traces.write_jsonl(trace, events=10)
    probe_req = work / "request-probe.json"
    real = os.path.realpath(trace)
    probe_req.write_text(json.dumps({"api_version": "rlviz.dev/v1alpha1", "operation": "probe",
                                     "source": {"path": real, "root": os.path.dirname(real), "kind": "file"},
                                     "limits": {}}))
    stream = adapter_argv("generated", fmt, trace, plugin, work, uncapped=False)[1:]
    # as RLViz runs adapters: no bytecode written (and none found: the plugin is a fresh copy)
    rlviz_env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    cases = []
    for label, python in interpreters(pythons):
        cases += [(f"{label}: interpreter only (`-c pass`)", [python, "-c", "pass"], None, rlviz_env, label),
                  (f"{label}: rlviz adapter.py probe",
                   [python, str(plugin / "adapter.py"), "probe", "--request", str(probe_req)], None, rlviz_env,
                   label),
                  (f"{label}: rlviz adapter.py stream (10 lines)", [python, *stream], None, rlviz_env, label)]
    relai = work / "startup-relai"
    mapc_build(ROOT / BUILD_SPECS["relai"], "relai", relai, validate=False)
    run_py = next(relai.rglob("run.py"))
    cases.append(("relai: import run.py", [PYTHON, "-c", "import run"], run_py.parent, None, None))
    capevolve = Path(os.environ.get("MAPC_CAPEVOLVE_DIR", ROOT / "tests" / "data" / "upstream" / "cap-evolve"))
    if (capevolve / "core" / "cap_evolve").is_dir():
        out = work / "startup-capevolve"
        mapc_build(ROOT / BUILD_SPECS["cap-evolve"], "cap-evolve", out, validate=False)
        env = {**os.environ, "PYTHONPATH": str(capevolve / "core")}
        entry = next(out.rglob("adapter.py"))
        cases.append(("cap-evolve: import adapter.py (cap_evolve itself included)",
                      [PYTHON, "-c", "import adapter"], entry.parent, env, None))
        cases.append(("cap-evolve: import cap_evolve alone", [PYTHON, "-c", "import cap_evolve"], None, env, None))
    else:
        log(f"  cap-evolve: no cap_evolve package under {capevolve}/core; its entry point is not measured")
    runs: dict[str, list[Run]] = {name: [] for name, *_ in cases}
    for _ in range(repeats):
        for name, argv, cwd, env, _group in cases:
            runs[name].append(run_process(argv, cwd=cwd, env=env))
    results = []
    bare: dict[str, dict] = {}
    for name, argv, cwd, env, group in cases:
        med = statistics.median
        item = {"name": name, "wall_ms": med(r.wall for r in runs[name]) * 1000,
                "cpu_ms": med(r.cpu for r in runs[name]) * 1000, "import_ms": import_ms(argv, cwd, env),
                "minstr": instructions(argv, cwd, env) if group else None, "group": group}
        if group and group not in bare:
            bare[group] = item
        elif group:
            base = bare[group]
            item["above_cpu_ms"] = item["cpu_ms"] - base["cpu_ms"]
            if item["minstr"] is not None and base["minstr"] is not None:
                item["above_minstr"] = item["minstr"] - base["minstr"]
        log(f"  {name}: wall {item['wall_ms']:.0f} ms, cpu {item['cpu_ms']:.0f} ms, "
            f"imports {item['import_ms']:.0f} ms"
            + (f", {item['minstr']:.0f} M instructions" if item["minstr"] is not None else ""))
        results.append(item)
    return results


def startup_table(results: list[dict]) -> str:
    # no peak RSS: a process this short often ends before /proc shows its VmHWM
    out = ["| process | wall ms | CPU ms | CPU ms above the bare interpreter | instructions (M, callgrind) | "
           "above the bare interpreter (M) | imports ms (`-X importtime`) |",
           "|---|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        above = f"{r['above_cpu_ms']:.0f}" if "above_cpu_ms" in r else ""
        minstr = f"{r['minstr']:.0f}" if r.get("minstr") is not None else ""
        above_m = f"{r['above_minstr']:.0f}" if "above_minstr" in r else ""
        out.append(f"| {r['name']} | {r['wall_ms']:.0f} | {r['cpu_ms']:.0f} | {above} | {minstr} | {above_m} | "
                   f"{r['import_ms']:.0f} |")
    return "\n".join(out)


# -- docs/performance.md -------------------------------------------------------------------
def _bullets(lines: list[str]) -> str:
    return "\n".join(f"- {line}" for line in lines)


def machine_line(repeats: int) -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            cpu = next(line.split(":", 1)[1].strip() for line in fh if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (f"Python {platform.python_version()} on {cpu}, {os.cpu_count()} cores; load average {load:.1f} "
            f"at the start; medians of {repeats} interleaved runs.")


def replace_block(text: str, name: str, body: str) -> str:
    begin, end = f"<!-- bench:{name}:begin -->", f"<!-- bench:{name}:end -->"
    if begin not in text or end not in text:
        return text.rstrip("\n") + f"\n\n{begin}\n{body}\n{end}\n"
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{begin}\n{body}\n{end}{tail}"


def write_doc(path: Path, blocks: dict[str, str]) -> None:
    text = path.read_text(encoding="utf-8") if path.exists() else "# Performance\n"
    for name, body in blocks.items():
        text = replace_block(text, name, body)
    path.write_text(text, encoding="utf-8")


# -- main --------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smoke run: tiny traces, one repeat, rlviz build only")
    parser.add_argument("--sizes", default=None, help="event counts, e.g. 10k,100k,1M (default)")
    parser.add_argument("--formats", default="jsonl,json", help="jsonl, json, or jsonl,json (default)")
    parser.add_argument("--repeats", type=int, default=None, help="runs per measurement (default 3; 1 with --quick)")
    parser.add_argument("--rss", default=None, metavar="SIZES",
                        help="peak RSS of the generated adapter over JSONL sizes, e.g. 10M,100M,1G")
    parser.add_argument("--rss-json", default=None, metavar="SIZES",
                        help="peak RSS over eval-log (one JSON document) sizes, e.g. 10M,100M,1G")
    parser.add_argument("--whole-max", default="300M", metavar="SIZE",
                        help="largest eval log also run parsed whole, as before streaming (default 300M)")
    parser.add_argument("--limits", action="store_true",
                        help="search the largest JSONL trace within RLViz's 10 s / 32 MiB (raw off and on)")
    parser.add_argument("--pythons", default=None, metavar="PATHS",
                        help="interpreters to time start-up with (comma-separated); default: this one, "
                             "python3 on PATH and the interpreter it hands over to")
    parser.add_argument("--only", default=None, help=f"comma-separated sections to run: {', '.join(SECTIONS)}")
    parser.add_argument("--targets", default=None, help="targets for build times (default all; rlviz with --quick)")
    parser.add_argument("--doc", default=None, help="markdown file to write the tables into "
                                                    "(default docs/performance.md; none with --quick)")
    parser.add_argument("--no-doc", action="store_true", help="do not write the tables into a file")
    parser.add_argument("--work", default=None, help="work folder (kept; traces are reused); default a temp folder")
    args = parser.parse_args(argv)

    quick = args.quick
    sizes = [parse_count(s) for s in (args.sizes or ("300" if quick else "10k,100k,1M")).split(",")]
    names = [k.strip() for k in args.formats.split(",") if k.strip()]
    unknown = [k for k in names if k not in FORMATS]
    if unknown or not names:
        parser.error(f"--formats takes {', '.join(FORMATS)} (comma-separated), not {args.formats!r}")
    formats = [FORMATS[k] for k in names]
    repeats = args.repeats or (1 if quick else 3)
    sections = set(args.only.split(",")) if args.only else {"throughput", "build"}
    if args.rss:
        sections.add("rss")
    if args.limits:
        sections.add("limits")
    if args.rss_json:
        sections.add("rss-json")
    unknown = sections - set(SECTIONS)
    if unknown:
        parser.error(f"unknown section(s): {', '.join(sorted(unknown))}")
    targets = (args.targets or ("rlviz" if quick else ",".join(BUILD_SPECS))).split(",")
    doc = None if args.no_doc or (quick and not args.doc) else Path(args.doc or ROOT / "docs" / "performance.md")
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="mapc-bench-"))
    work.mkdir(parents=True, exist_ok=True)

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    try:
        env_line = machine_line(repeats)
        log(env_line)
        blocks: dict[str, str] = {}
        rows, problems, rss, builds, limits, rss_json, startup = [], [], [], [], [], [], []
        plugins: dict[str, Path] = {}
        if sections & {"throughput", "rss", "limits", "rss-json"}:
            log("building the generated adapters (mapc build --target rlviz)")
            wanted = formats if "throughput" in sections else []
            for fmt in wanted:
                plugins[fmt.key] = build_plugin(fmt, work, validate=not quick)
            if "rss-json" in sections:
                plugins.setdefault("json", build_plugin(FORMATS["json"], work, validate=not quick))
            if sections & {"rss", "limits"}:
                plugins.setdefault("jsonl", build_plugin(FORMATS["jsonl"], work, validate=not quick))
                plugins["jsonl-raw"] = build_plugin(FORMATS["jsonl"], work, raw=True, validate=not quick)
        if "throughput" in sections:
            log("throughput (same traces, interleaved runs)")
            rows, problems = throughput(formats, sizes, repeats, work, plugins, log)
            table = throughput_table(rows)
            print("\n## Throughput\n\n" + table)
            verdict = "same mapping: ok" if not problems else "same mapping: FAILED\n" + "\n".join(problems)
            print("\n" + verdict)
            blocks["throughput"] = f"{env_line}\n\n{table}\n\n{verdict}\n\n" + _bullets(goals(rows=rows))
        if "build" in sections:
            log("mapc build times")
            builds = build_times(targets, repeats, work, log)
            table = build_table(builds)
            print("\n## mapc build\n\n" + table)
            blocks["build"] = f"{env_line}\n\n{table}\n\n" + _bullets(goals(builds=builds))
        if "rss" in sections:
            log("peak RSS over JSONL sizes")
            rss = rss_series([parse_size(s) for s in (args.rss or "10M,100M").split(",")], work, plugins, log)
            table = rss_table(rss)
            print("\n## Peak RSS\n\n" + table)
            blocks["rss"] = f"{env_line}\n\n{table}\n\n" + _bullets(goals(rss=rss))
        if "rss-json" in sections:
            log("peak RSS over eval-log sizes (one JSON document)")
            rss_json = rss_json_series([parse_size(s) for s in (args.rss_json or "10M").split(",")],
                                       parse_size(args.whole_max), work, plugins["json"], log)
            problems += [f"eval log {r['in_bytes']:,} bytes: the runs printed different records"
                         for r in rss_json if not r["same"]]
            table = rss_json_table(rss_json)
            print("\n## Peak RSS, eval log\n\n" + table)
            blocks["rss-json"] = f"{env_line}\n\n{table}\n\n" + _bullets(goals(rss_json=rss_json))
        if "startup" in sections:
            log("start-up of each target's entry point")
            startup = startup_times(max(repeats, 10), work, log, args.pythons)
            table = startup_table(startup)
            print("\n## Start-up\n\n" + table)
            blocks["startup"] = (f"{env_line.replace(f'medians of {repeats}', f'medians of {max(repeats, 10)}')}"
                                 f"\n\n{table}\n\n" + _bullets(goals(startup=startup)))
        if "limits" in sections:
            log("largest JSONL trace within RLViz's limits")
            limits = largest_within_limits(work, plugins, repeats, log)
            table = limits_table(limits)
            print("\n## Within RLViz's limits (10 s, 32 MiB of stdout)\n\n" + table)
            blocks["limits"] = f"{env_line}\n\n{table}"
        lines = goals(rows, rss, builds, rss_json, startup)
        if lines:
            print("\n## Goals\n\n" + _bullets(lines))
        if doc is not None:
            write_doc(doc, blocks)
            log(f"wrote {doc}")
        return 1 if problems else 0
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
