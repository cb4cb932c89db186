"""Many sources at once: worker processes for mapping, threads for validation.

Mapping is pure Python and CPU-bound, so sources are mapped in worker processes
(``python -m mapc.pipeline.parallel SPEC``), each loading the spec once and reading source
paths on stdin. They are plain subprocesses rather than ``multiprocessing``: a
caller's script is never re-imported in a worker (what ``spawn`` does, which breaks
scripts without a ``__main__`` guard), and no threads are forked (``fork``).
Validation waits on adapter subprocesses, so threads are enough there.
Either way results come back in input order, identical to one at a time.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable, Iterator

_STOP = object()


def run_in_workers(spec_path: Path, files: list[Path], jobs: int,
                   on_done: Callable[[int, int, str], None] | None = None) -> Iterator[Any]:
    """Map ``files`` with the spec at ``spec_path`` in ``jobs`` worker processes.

    Yields one ``mapc.api.RunResult`` per file, in input order, each as soon as it and
    those before it are done. Workers are stopped when the caller stops (or is interrupted).
    """
    tasks: queue.Queue = queue.Queue()
    for n, source in enumerate(files):
        tasks.put((n, str(source)))
    results: queue.Queue = queue.Queue()
    stopping = threading.Event()
    procs: list[subprocess.Popen] = []
    lock = threading.Lock()

    def drive() -> None:
        worker = None
        try:
            while not stopping.is_set():
                try:
                    n, source = tasks.get_nowait()
                except queue.Empty:
                    return
                if worker is None:
                    worker = _Worker(spec_path)
                    with lock:
                        procs.append(worker.proc)
                result = worker.run(source)
                if result is None:  # the worker died: report this source, start another for the rest
                    result = _failed(source, f"internal error: the worker process stopped{worker.reason()}")
                    worker.close()
                    worker = None
                results.put((n, result))
        except BaseException as exc:  # never leave the consumer waiting
            results.put((None, exc))
        finally:
            if worker is not None:
                worker.close()
            results.put((None, _STOP))

    threads = [threading.Thread(target=drive, daemon=True) for _ in range(min(jobs, len(files)))]
    for thread in threads:
        thread.start()
    try:
        finished: dict[int, Any] = {}
        following, done, running = 0, 0, len(threads)
        while following < len(files):
            n, result = results.get()
            if n is None:
                if isinstance(result, BaseException):
                    raise result
                running -= 1
                if running == 0 and following + len(finished) < len(files):
                    raise RuntimeError("the mapping workers stopped before every source was mapped")
                continue
            done += 1
            finished[n] = result
            if on_done is not None:
                on_done(done, len(files), result.source)
            while following in finished:
                yield finished.pop(following)
                following += 1
    finally:
        stopping.set()
        with lock:
            for proc in procs:
                if proc.poll() is None:
                    proc.kill()
        for thread in threads:
            thread.join(timeout=10)


def _failed(source: str, error: str):
    from mapc.pipeline.results import RunResult

    return RunResult(source, False, error)


class _Worker:
    """One ``python -m mapc.pipeline.parallel SPEC`` process: a source path in, a result out."""

    def __init__(self, spec_path: Path):
        package_root = str(Path(__file__).resolve().parents[2])
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
        self.errors = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([sys.executable, "-m", "mapc.pipeline.parallel", str(spec_path)], env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.errors)

    def run(self, source: str):
        from mapc.pipeline.results import RunResult

        try:
            self.proc.stdin.write(json.dumps({"source": source}).encode() + b"\n")
            self.proc.stdin.flush()
            header = self.proc.stdout.readline()
            if not header:
                return None
            meta = json.loads(header)
            data = self.proc.stdout.read(meta.pop("size"))
        except (OSError, ValueError):
            return None
        return RunResult(ndjson=data, **meta)

    def reason(self) -> str:
        try:
            self.proc.wait(timeout=5)
            self.errors.seek(0)
            tail = self.errors.read()[-2000:].decode("utf-8", "replace").strip().splitlines()
        except (OSError, subprocess.TimeoutExpired):
            tail = []
        return f": {tail[-1]}" if tail else ""

    def close(self) -> None:
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        self.errors.close()


def main(argv: list[str]) -> int:
    """The worker: load the spec once, then map each source path read from stdin."""
    from mapc.pipeline.results import RunResult
    from mapc.pipeline.results import map_one as _map_one
    from mapc.pipeline.build import load_checked, mapping_namespace

    protocol = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything printed by mistake goes to stderr, never into the protocol
    spec, _ = load_checked(argv[1])
    ns = mapping_namespace(spec) if spec is not None else None
    for line in sys.stdin.buffer:
        source = json.loads(line)["source"]
        if spec is None:
            result = RunResult(source, False, "the spec no longer loads without errors (was it edited during the run?)")
        else:
            result = _map_one(spec, ns, source)
        header = {"source": result.source, "ok": result.ok, "error": result.error, "warnings": result.warnings,
                  "warning_messages": result.warning_messages, "size": len(result.ndjson)}
        protocol.write(json.dumps(header).encode() + b"\n" + result.ndjson)
        protocol.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
