"""mapc from Python: load a spec, build an adapter, run the mapping, validate output.

For CI scripts and notebooks; the ``mapc`` command line is a thin layer over
these functions, so they behave exactly as the commands do. Nothing here
prints, and problems in what you give (a bad spec, a malformed trace, output
that fails validation) come back as results with diagnostics, never as a
traceback. ::

    import mapc

    spec = mapc.load_spec("spec.yaml")                  # mapc.SpecError if it has errors
    result = mapc.run(spec, "trace.jsonl")              # RunResult: ok, records, warnings
    runs = mapc.run_many(spec, ["traces/"], jobs=4)     # one RunResult per file, in order
    built = mapc.build(spec, "rlviz", "plugins/agent")  # BuildResult: ok, diagnostics, files
    report = mapc.validate("rlviz", "plugins/agent", ["trace.jsonl"])  # ValidationReport
    mapper = mapc.Mapper(spec)                          # picklable: ray.data ... .flat_map(mapper)

Everything is imported on first use, so ``import mapc`` stays cheap.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Callable, Iterable, Iterator, Sequence, Union

from mapc.core.errors import UsageError
from mapc.pipeline.results import RunResult, Spec, SpecError, load_spec
from mapc.pipeline.results import map_one as _map_one

if TYPE_CHECKING:
    from mapc.pipeline.build import BuildResult
    from mapc.spec import ir
    from mapc.targets import ValidationReport

PathLike = Union[str, "os.PathLike[str]"]
#: Called after each source or case finishes: ``progress(done, total, label)``.
Progress = Callable[[int, int, str], None]

__all__ = ["Spec", "SpecError", "RunResult", "UsageError", "load_spec", "build", "run", "run_many",
           "validate", "expand_sources", "default_jobs", "Mapper", "MappingFailed"]


def __getattr__(name: str):
    if name in ("Mapper", "MappingFailed"):  # picklable mapping for Ray Data and the like (mapc/pipeline/mapper.py)
        from mapc.pipeline import mapper

        return getattr(mapper, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _spec_path(spec: Spec | PathLike) -> Path:
    return spec.path if isinstance(spec, Spec) else Path(spec)


def build(spec: Spec | PathLike, target: str, out: PathLike, *, validate: bool = True,
          force: bool = False, test: bool = True) -> BuildResult:
    """Generate the adapter for ``target`` into ``out`` and run the built-in validator, as
    ``mapc build`` does (the spec's tests first, unless ``test=False``: ``result.tests``).

    ``spec`` is a path or a :class:`Spec` (its file is read again, so the build records the
    file as it is now). Spec errors, output conflicts and validation failures are in the
    result (``ok``, ``diagnostics``, ``validation``); nothing the user owns is overwritten
    unless ``force``.
    """
    from mapc.pipeline.build import build as build_output

    from mapc.spectest.runner import build_gate

    return build_output(_spec_path(spec), target, out, validate=validate, force=force,
                        run_tests=build_gate if test else None)


def _spec_ir(spec: Spec | PathLike) -> ir.Spec:
    return (spec if isinstance(spec, Spec) else load_spec(spec)).ir


def run(spec: Spec | PathLike, source: PathLike, *, out: BinaryIO | None = None) -> RunResult:
    """Map one source trace with ``spec``: exactly the code a generated adapter runs.

    The canonical NDJSON is kept in the result, or streamed to the binary file ``out``
    (flat memory for long traces). A malformed trace gives ``ok=False`` and a one-line
    ``error``. Raises :class:`SpecError` when ``spec`` is a path to a spec with errors.
    """
    from mapc.pipeline.build import mapping_namespace

    spec_ir = _spec_ir(spec)
    return _map_one(spec_ir, mapping_namespace(spec_ir), source, out)


def expand_sources(sources: PathLike | Iterable[PathLike]) -> list[Path]:
    """Source paths with each folder replaced by the files inside it (recursively, sorted,
    hidden files and folders left out), and each glob pattern (``runs/*/*.jsonl``,
    ``runs/**/*.jsonl``; a path that does not exist) by the files it matches, the same way.
    Raises ``UsageError`` for a folder with no files or a pattern that matches none."""

    if isinstance(sources, (str, os.PathLike)):
        sources = [sources]
    found: list[Path] = []
    for source in map(Path, sources):
        if _is_pattern(source):
            found += _glob(source)
        elif not source.is_dir():
            found.append(source)
        else:
            files = _files_in(source)
            if not files:
                raise UsageError(f"{source} is a folder with no files to read")
            found += files
    return found


def _files_in(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*")
                  if p.is_file() and not any(part.startswith(".") for part in p.relative_to(folder).parts))


def _is_pattern(source: Path) -> bool:
    """A glob pattern rather than a path: it has ``*``, ``?`` or ``[`` and names nothing
    (a file whose name holds them is read as it is)."""
    return any(c in str(source) for c in "*?[") and not os.path.lexists(source)


def _glob(pattern: Path) -> list[Path]:
    """The files a pattern matches (folders it matches: their files), sorted, each once,
    never outside the folder before its first wildcard, hidden names left out (D113)."""
    from glob import glob


    parts = pattern.parts
    first = next(n for n, part in enumerate(parts) if any(c in part for c in "*?["))
    base = Path(*parts[:first]) if first else Path(".")
    if ".." in parts[first:]:
        raise UsageError(f"{pattern}: '..' after a wildcard would match outside {base}; "
                         "hint: put the '..' before the first wildcard")
    files: set[Path] = set()
    for match in map(Path, glob(str(pattern), recursive=True)):
        files.update(_files_in(match) if match.is_dir() else [match] if match.is_file() else [])
    if not files:
        raise UsageError(f"no files match {pattern}")
    root = os.path.realpath(base)
    for path in sorted(files):
        if os.path.commonpath([root, os.path.realpath(path)]) != root:
            raise UsageError(f"{path} (matched by {pattern}) leads outside {base}; hint: name it as a "
                             "source of its own to read it")
    return sorted(files)


def default_jobs() -> int:
    """Parallel jobs by default: the CPUs this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


#: Input per worker process when ``jobs`` is not given. Starting a worker (Python, mapc, the
#: spec's program) takes about 0.5 s of CPU, what mapping 10 MB of JSONL takes
#: (docs/performance.md), so smaller runs stay in one process.
BYTES_PER_WORKER = 16 * 1024 * 1024


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def run_many(spec: Spec | PathLike, sources: PathLike | Iterable[PathLike], *, jobs: int | None = None,
             progress: Progress | None = None) -> list[RunResult]:
    """Map many sources (files, or folders of them): one :class:`RunResult` per file, in order.

    With ``jobs`` > 1 the files are mapped in that many worker processes (see
    :mod:`mapc.pipeline.parallel`), each loading the spec from its file; the results are the same as
    one at a time. By default: up to the CPU count, one worker per 16 MB of input.
    ``progress(done, total, source)`` is called as each file finishes.
    """
    return list(iter_runs(spec, sources, jobs=jobs, progress=progress))


def iter_runs(spec: Spec | PathLike, sources: PathLike | Iterable[PathLike], *, jobs: int | None = None,
              progress: Progress | None = None) -> Iterator[RunResult]:
    """:func:`run_many`, yielding each result in order as soon as it and those before it are done."""
    from mapc.pipeline.build import mapping_namespace

    spec = spec if isinstance(spec, Spec) else load_spec(spec)
    files = expand_sources(sources)
    if not jobs:  # a worker costs about what mapping 10 MB does: start one per BYTES_PER_WORKER
        jobs = min(default_jobs(), max(1, sum(_size(f) for f in files) // BYTES_PER_WORKER))
    jobs = min(jobs, len(files))
    if jobs <= 1:
        ns = mapping_namespace(spec.ir)
        for done, source in enumerate(files, 1):
            result = _map_one(spec.ir, ns, source)
            if progress is not None:
                progress(done, len(files), result.source)
            yield result
        return
    from mapc.pipeline.parallel import run_in_workers

    yield from run_in_workers(spec.path, files, jobs, progress)


def validate(target: str, out: PathLike, sources: PathLike | Iterable[PathLike] = (), *,
             tasks: Sequence[str] = (), jobs: int | None = None, progress: Progress | None = None,
             options: dict[str, Any] | None = None) -> ValidationReport:
    """Check generated output the way the host would, as ``mapc validate`` does.

    ``sources`` (files or folders) are traces to validate an RLViz plugin on; without them
    its own test cases are used. ``tasks`` selects RELAI tasks. Targets that validate many
    sources run ``jobs`` at a time (default: the CPU count) and call
    ``progress(done, total, label)``. The report has ``ok``, the host-shaped JSON
    ``payload``, the ``text`` ``mapc validate`` prints, and ``items``: one row per source
    (source, records, warnings, ok, detail).
    """
    from mapc.pipeline.build import resolve_target

    chosen = resolve_target(target)
    opts: dict[str, Any] = {"tasks": list(tasks), "jobs": jobs or default_jobs(), **(options or {})}
    if progress is not None:
        opts["progress"] = progress
    return chosen.validate(Path(out), expand_sources(sources), opts)
