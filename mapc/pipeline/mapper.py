"""A spec's mapping as a small picklable object, for Ray Data, Dask or multiprocessing.

``mapc.Mapper(spec)`` compiles the spec once, on the machine that has it, into the
mapping program ``mapc run`` executes (D73) and the SHA-256 of the runtime it was compiled
against: that text, compressed, and its SHA-256 are all the object holds, so it pickles
cheaply and a worker needs neither the spec, its fixtures nor its folder, only the same mapc
(the program runs with the worker's own runtime modules, ``mapc.runtime``).
Each worker process executes a program once, on first use, and keeps it by digest for
every later task. Records are the bytes ``mapc run`` prints for the same file. ::

    mapper = mapc.Mapper("spec.yaml")
    mapper.run("trace.jsonl")                   # a RunResult, as mapc.run gives
    ds = ray.data.read_binary_files(folder, include_paths=True)
    ds.flat_map(mapper)                         # one row per record: source, index, record
    ds.map_batches(mapper.batch)                # the same rows, a batch of files at a time
    ds.map(mapper.per_file)                     # one row per file: ok, error, ..., ndjson

Records travel as JSON text, not dicts: Ray Data stores rows as Arrow tables, whose
schema is unified across rows, so a field one record lacks would come back as null
(D112).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Union

if TYPE_CHECKING:
    from mapc.pipeline.results import RunResult, Spec

PathLike = Union[str, "os.PathLike[str]"]
#: A source: a path, or a row with ``path`` (and ``bytes``, as ``read_binary_files`` gives).
Row = Union[PathLike, Mapping[str, Any]]

#: Programs executed in this process, by digest (a worker maps with a few specs at most).
_PROGRAMS: dict[str, dict] = {}
_PROGRAMS_KEPT = 16
_LOCK = threading.Lock()


class MappingFailed(ValueError):
    """A source that could not be mapped (``Mapper.__call__``, where a row has no room for
    the verdict): ``source`` and the one-line ``error`` ``mapc run`` prints."""

    def __init__(self, source: str, error: str):
        self.source, self.error = source, error
        super().__init__(f"{source}: {error}")


def _runtime_sha256() -> str:
    """The SHA-256 of the runtime package this mapc writes (an RLViz build's, as ``mapc run``)."""
    from mapc.pipeline.build import resolve_target

    return resolve_target("rlviz").shared_runtime().sha256


class Mapper:
    """A spec's mapping, picklable: call it on a row or path in any worker process."""

    def __init__(self, spec: Spec | PathLike):
        from mapc.pipeline.results import Spec, load_spec
        from mapc.pipeline.build import mapping_source

        loaded = spec if isinstance(spec, Spec) else load_spec(spec)
        # the program, and the runtime it was compiled against (a worker runs it with its own
        # mapc's runtime modules, which must be the same)
        program, runtime = mapping_source(loaded.ir), _runtime_sha256()
        text = json.dumps([program, runtime], ensure_ascii=True)
        #: the spec's name, for messages
        self.name: str = loaded.ir.name
        #: SHA-256 of the program and runtime: the key a worker keeps the executed program by
        self.digest: str = hashlib.sha256(text.encode("ascii")).hexdigest()
        #: whether the spec reads files beside the source (``source.siblings``): rows of bytes
        #: do not carry them
        self.reads_siblings: bool = bool(loaded.ir.source.siblings)
        self._program = zlib.compress(text.encode("ascii"), 6)

    def __repr__(self) -> str:
        return f"Mapper({self.name!r}, digest={self.digest[:12]})"

    def _namespace(self) -> dict:
        """The executed program: from this process's cache, or executed now (once)."""
        ns = _PROGRAMS.get(self.digest)
        if ns is not None:
            return ns
        with _LOCK:
            if self.digest not in _PROGRAMS:
                from mapc.codegen.program import IN_PROCESS, load_module

                text = zlib.decompress(self._program)
                if hashlib.sha256(text).hexdigest() != self.digest:
                    raise ValueError(f"mapper {self.name!r}: its program does not match its digest")
                program, runtime = json.loads(text)
                if runtime != _runtime_sha256():
                    raise ValueError(f"mapper {self.name!r}: compiled by another mapc version than this "
                                     "worker's (its runtime differs): install the same mapc everywhere")
                if len(_PROGRAMS) >= _PROGRAMS_KEPT:
                    del _PROGRAMS[next(iter(_PROGRAMS))]
                _PROGRAMS[self.digest] = load_module(program, runtime=IN_PROCESS)
            return _PROGRAMS[self.digest]

    def run(self, source: Row) -> RunResult:
        """Map one source: a path, or a row with ``path`` and optionally ``bytes`` (the file's
        content, mapped under the path's file name). The ``RunResult`` ``mapc.run`` gives."""
        from mapc.pipeline.results import map_one as _map_one

        path, data = _source(source)
        ns = self._namespace()
        if data is None:
            return _map_one(None, ns, path)  # compiled already: the spec itself is not needed
        if self.reads_siblings:
            raise ValueError(f"{path}: spec {self.name!r} reads files beside the source (source.siblings), "
                             "which a row of bytes does not carry; hint: give rows with only 'path' "
                             "(e.g. ray.data.from_items([{'path': p} ...])) on a file system every worker reads")
        with tempfile.TemporaryDirectory(prefix="mapc-") as folder:
            local = Path(folder) / _basename(path)
            local.write_bytes(data)
            result = _map_one(None, ns, local)
        result.source = path
        return result

    def __call__(self, row: Row) -> list[dict[str, Any]]:
        """For ``flat_map``: one row per record, ``source``, ``index`` (its line in the
        output, from 0) and ``record`` (its JSON text, the line ``mapc run`` prints).
        Raises :class:`MappingFailed` for a source that cannot be mapped."""
        result = self.run(row)
        if not result.ok:
            raise MappingFailed(result.source, result.error or "not mapped")
        return [{"source": result.source, "index": n, "record": line.decode("utf-8")}
                for n, line in enumerate(result.ndjson.splitlines())]

    def batch(self, batch: Mapping[str, Any]) -> dict[str, list]:
        """For ``map_batches``: a batch of files (columns ``path`` and optionally ``bytes``, as
        lists or arrays) to the columns of :meth:`__call__`'s rows, file after file."""
        columns: dict[str, list] = {"source": [], "index": [], "record": []}
        paths = list(batch["path"])
        contents = list(batch["bytes"]) if "bytes" in batch else [None] * len(paths)
        for path, data in zip(paths, contents):
            row = {"path": str(path)} if data is None else {"path": str(path), "bytes": data}
            for record in self(row):
                for key, value in record.items():
                    columns[key].append(value)
        return columns

    def per_file(self, row: Row) -> dict[str, Any]:
        """For ``map``: one row per file, never raising for its content: ``source``, ``ok``,
        ``error``, ``warnings``, ``warning_messages``, ``records`` (count, without the final
        ``complete``) and ``ndjson`` (the bytes ``mapc run`` prints)."""
        result = self.run(row)
        return {"source": result.source, "ok": result.ok, "error": result.error, "warnings": result.warnings,
                "warning_messages": list(result.warning_messages), "records": result.record_count,
                "ndjson": result.ndjson}


def _source(row: Row) -> tuple[str, bytes | None]:
    """``(path, content or None)`` of a path or a row."""
    if isinstance(row, (str, os.PathLike)):
        return os.fspath(row), None
    if not isinstance(row, Mapping) or not isinstance(row.get("path"), str):
        raise ValueError("a mapc row needs 'path' (a str): e.g. ray.data.read_binary_files(..., "
                         "include_paths=True), or ray.data.from_items([{'path': p} ...])")
    data = row.get("bytes")
    return row["path"], None if data is None else bytes(data)


def _basename(path: str) -> str:
    """The file name of a local path or a URL-like one (``s3://bucket/a/b.jsonl``), never one
    that names a folder."""
    name = path.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
    return name if name not in ("", ".", "..") else "source"
