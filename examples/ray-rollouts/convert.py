"""Convert a folder of trace files to canonical NDJSON with Ray Data: one task per file.

    python examples/ray-rollouts/convert.py SPEC SOURCE... -o OUT [--address auto]
        [--files-per-task N] [--num-cpus N]

SOURCE: files, folders or quoted glob patterns (as ``mapc run`` takes them). Each file
becomes ``OUT/<its path below the sources' common folder>.ndjson``, byte for byte what
``mapc run SPEC FILE`` prints, written by the worker that mapped it (on a cluster OUT must
be a file system every worker writes, e.g. NFS). A file that cannot be mapped gets no
output (nothing partial) and is listed in the summary. OUT must be new or empty: nothing
there is overwritten. Prints a JSON summary; exits 1 if any file failed, 2 on bad usage.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import ray
import ray.data

import mapc
from mapc.api import expand_sources


def plan(sources: list[str], out: Path) -> list[dict]:
    """One row per file: ``path`` (absolute) and ``dest`` (its NDJSON file in ``out``)."""
    files = [path.resolve() for path in expand_sources(sources)]
    if len(set(files)) != len(files):
        raise mapc.UsageError("a file is given twice (overlapping sources)")
    root = Path(os.path.commonpath([f.parent for f in files]))
    return [{"path": str(f), "dest": str(out / f"{f.relative_to(root)}.ndjson")} for f in files]


class WriteNdjson:
    """The task: map one file with ``mapper`` and write its NDJSON next to nothing else.

    Returns a summary row (no records: they are on disk, not in Ray's object store).
    Written to a temporary name first, then renamed: a reader never sees half a file.
    """

    def __init__(self, mapper: mapc.Mapper):
        self.mapper = mapper

    def __call__(self, row: dict) -> dict:
        cpu = time.process_time()
        done = self.mapper.per_file({"path": row["path"]})
        if done["ok"]:
            dest = Path(row["dest"])
            dest.parent.mkdir(parents=True, exist_ok=True)
            partial = dest.with_name(f".{dest.name}.{os.getpid()}.partial")
            partial.write_bytes(done["ndjson"])
            os.replace(partial, dest)
        return {"source": done["source"], "ok": done["ok"], "error": done["error"], "records": done["records"],
                "warnings": done["warnings"], "bytes_in": os.path.getsize(row["path"]),
                "bytes_out": len(done["ndjson"]) if done["ok"] else 0, "cpu_seconds": time.process_time() - cpu}


def convert(spec: str, sources: list[str], out: Path, files_per_task: int = 1) -> dict:
    """Map every file on the Ray cluster this process is connected to; the summary."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise mapc.UsageError(f"{out} exists and is not an empty folder; choose a new one")
    rows = plan(sources, out.resolve())
    mapper = mapc.Mapper(spec)  # compiled here; pickled to the workers as ~45 KB of program text
    started = time.perf_counter()
    blocks = max(1, -(-len(rows) // max(1, files_per_task)))
    summary = (ray.data.from_items(rows, override_num_blocks=blocks)
               .map(WriteNdjson(mapper))
               .take_all())
    seconds = time.perf_counter() - started
    by_source = {row["source"]: row for row in summary}
    ordered = [by_source[row["path"]] for row in rows]  # input order, whatever order tasks finished in
    failed = [{"source": r["source"], "error": r["error"]} for r in ordered if not r["ok"]]
    return {"files": len(ordered), "ok": len(ordered) - len(failed), "failed": failed,
            "records": sum(r["records"] for r in ordered), "warnings": sum(r["warnings"] for r in ordered),
            "bytes_in": sum(r["bytes_in"] for r in ordered), "bytes_out": sum(r["bytes_out"] for r in ordered),
            "cpu_seconds": round(sum(r["cpu_seconds"] for r in ordered), 3),  # in the tasks, Ray's own not counted
            "seconds": round(seconds, 3), "tasks": blocks}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("spec")
    parser.add_argument("sources", nargs="+")
    parser.add_argument("-o", "--out", required=True, type=Path)
    parser.add_argument("--address", help="a Ray cluster to join ('auto': the one on this machine); "
                        "default: start a local one")
    parser.add_argument("--num-cpus", type=int, help="CPUs of the local Ray instance (default: all)")
    parser.add_argument("--files-per-task", type=int, default=1,
                        help="files mapped by one Ray task (default 1; more amortise Ray's per-task cost)")
    args = parser.parse_args(argv)
    if not ray.is_initialized():
        local = {"num_cpus": args.num_cpus, "include_dashboard": False} if args.address is None else {}
        ray.init(address=args.address, log_to_driver=False, **local)
    try:
        summary = convert(args.spec, args.sources, args.out, args.files_per_task)
    except (mapc.UsageError, mapc.SpecError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(summary, indent=2))
    return 1 if summary["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
