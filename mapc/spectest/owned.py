"""Which files ``mapc test --update`` may write: expected files mapc owns, nothing else.

A test's ``expected:`` is text a pull request can write. ``--update`` once filled
whatever it named (``.git/hooks/pre-commit``, the spec, a source file) with records
whose values come from a fixture, so the next ``git commit`` ran a fixture's
``$(...)``. Now a file is written only when it lies below the spec's folder, outside
any ``.git`` folder, reached without a symbolic link, and it is new, empty, or holds
what ``--update`` writes (canonical records, or an evaluation, D91); never a file the
spec reads, an executable file or anything but a regular file. New files are 0644;
every write goes to a temporary file beside the target, renamed over it.
"""

from __future__ import annotations

import errno
import json
import os
import secrets
import stat
from pathlib import Path

from mapc.core import safeio
from mapc.spec import ir
from mapc.spectest.canonical import MAX_EXPECTED_BYTES
from mapc.spectest.cases import EVALUATION_SUFFIX, RECORDS_SUFFIX, Case, default_expected, spec_folder

#: Record types of canonical NDJSON: an expected-records file holds nothing else.
RECORD_TYPES = frozenset({"run", "case", "group", "trajectory", "event", "signal", "artifact", "complete"})
#: Keys every expected evaluation holds (see ``Executor.evaluate``).
EVALUATION_KEYS = ("task_id", "scores", "reward")


class Refused(Exception):
    """``--update`` will not write this expected file (the message completes "the expected file ...")."""

    def __init__(self, message: str, hint: str):
        super().__init__(message)
        self.hint = hint


def spec_reads(spec: ir.Spec) -> dict[tuple[int, int], str]:
    """(device, inode) -> what it is, for every file the spec reads: never an expected file."""
    from mapc.pipeline.build import spec_inputs

    folder = spec_folder(spec)
    labelled = [(spec.file, "the spec"), *((f, "a spec it extends") for f in spec.files)]
    labelled += [(f.resolved, "a fixture") for f in spec.fixtures]
    labelled += [(t.resolved, "a test's source" if t.task is None else "a test's trace") for t in spec.tests]
    traces = [Path(f.resolved) for f in spec.fixtures] + [Path(t.resolved) for t in spec.tests]
    labelled += [(p, "a sibling file the spec reads") for p in _siblings(spec, traces)]
    labelled += [(p, "a file the spec reads") for p in spec_inputs(spec, folder)]
    found: dict[tuple[int, int], str] = {}
    for path, what in labelled:
        try:
            info = os.stat(path)
        except (OSError, ValueError):
            continue
        found.setdefault((info.st_dev, info.st_ino), what)
    return found


def _siblings(spec: ir.Spec, traces: list[Path]) -> list[Path]:
    """The sibling files the mapping may read next to each trace (``source.siblings``)."""
    out = []
    for trace in traces:
        stem, prefix = os.path.splitext(trace.name)[0], trace.name.split(".", 1)[0]
        for _, candidates in spec.source.siblings:
            for c in candidates:
                out.append(trace.parent / c.replace("{stem}", stem).replace("{prefix}", prefix)
                           .replace("{name}", trace.name))
    return out


def write_expected(case: Case, data: bytes, spec: ir.Spec, reads: dict[tuple[int, int], str]) -> bool:
    """Write ``data`` as ``case``'s expected file; False when it already holds exactly that.

    Raises :class:`Refused` when the file is not one mapc may write (``reads``: :func:`spec_reads`).
    """
    folder = spec_folder(spec)
    rel = os.path.relpath(case.expected, folder)
    parts = Path(rel).parts
    fix = (f"give this test an expected file of its own: a new file below the spec's folder, outside .git/, "
           f"e.g. `expected: {_suggestion(case, spec)}`")
    if os.path.isabs(rel) or not parts or parts[0] == "..":
        raise Refused(f"{rel} is outside the spec's folder", fix)
    if any(p.lower() == ".git" for p in parts):
        raise Refused(f"{rel} is under .git (git's own files: a hook filled with records would run at the "
                      "next commit)", fix)
    try:
        fd = safeio.folder_beneath(folder, list(parts[:-1]))
    except FileNotFoundError:
        fd = None  # a new folder, so a new file
    except safeio.UnsafePath as exc:
        raise Refused(_through_link(rel, exc), fix) from None
    name = parts[-1]
    try:
        if fd is not None:
            mode = _replaceable(fd, name, rel, case, data, reads, fix)
            if mode is None:
                return False
        else:
            mode = 0o644
            fd = _made(folder, list(parts[:-1]), rel, fix)
        _replace(fd, name, data, mode)
    finally:
        if fd is not None:
            os.close(fd)
    return True


def _made(folder: Path, parts: list[str], rel: str, fix: str) -> int:
    """The expected file's folder, made where missing (never through a symbolic link)."""
    try:
        return safeio.folder_beneath(folder, parts, create=True)
    except safeio.UnsafePath as exc:
        raise Refused(_through_link(rel, exc), fix) from None


def _through_link(rel: str, exc: safeio.UnsafePath) -> str:
    return f"{rel}: {exc}; mapc writes no file through a symbolic link"


def _replaceable(fd: int, name: str, rel: str, case: Case, data: bytes, reads: dict, fix: str) -> int | None:
    """The mode to write ``name`` with (in the folder ``fd``): 0644 when new, its own when it
    is mapc's; None when it already holds ``data``. Raises Refused for anything else."""
    try:
        info = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return 0o644
    if stat.S_ISLNK(info.st_mode):
        raise Refused(f"{rel} is a symbolic link; mapc writes no file through one", fix)
    if not stat.S_ISREG(info.st_mode):
        raise Refused(f"{rel} is not a regular file", fix)
    what = reads.get((info.st_dev, info.st_ino))
    if what is not None:
        raise Refused(f"{rel} is {what}: mapc never writes a file the spec reads", fix)
    if info.st_mode & 0o111:
        raise Refused(f"{rel} is executable: an expected file never is, so mapc will not replace it", fix)
    current = _read(fd, name, rel, fix)
    if current == data:
        return None
    if current.strip() and not recognised(case.kind, current):
        kind = "expected records" if case.kind == "records" else "an expected evaluation"
        raise Refused(f"{rel} exists and is not {kind} written by mapc; mapc will not replace it",
                      f"if it is an old expected file, move it away and run `mapc test --update` again; else {fix}")
    return stat.S_IMODE(info.st_mode) & 0o666


def recognised(kind: str, data: bytes) -> bool:
    """Whether ``data`` is what ``--update`` writes for a case of ``kind`` (maybe edited by hand):
    records, one JSON object with a canonical ``record_type`` per line; or a JSON object holding
    an evaluation's keys."""
    try:
        text = data.decode("utf-8")
        if kind != "records":
            doc = json.loads(text)
            return isinstance(doc, dict) and all(k in doc for k in EVALUATION_KEYS)
        for line in text.split("\n"):
            if line.strip():
                rec = json.loads(line)
                if not isinstance(rec, dict) or rec.get("record_type") not in RECORD_TYPES:
                    return False
        return True
    except (UnicodeDecodeError, ValueError, RecursionError):
        return False


def _read(fd: int, name: str, rel: str, fix: str) -> bytes:
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        file = os.open(name, flags, dir_fd=fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise Refused(f"{rel} is a symbolic link; mapc writes no file through one", fix) from None
        raise
    with os.fdopen(file, "rb") as fh:
        data = fh.read(MAX_EXPECTED_BYTES + 1)
    if len(data) > MAX_EXPECTED_BYTES:
        raise Refused(f"{rel} is larger than {MAX_EXPECTED_BYTES >> 20} MiB: not an expected file of mapc's", fix)
    return data


def _replace(fd: int, name: str, data: bytes, mode: int) -> None:
    """Write a temporary file beside ``name`` (in the folder ``fd``), then rename it over ``name``."""
    tmp = f".{name}.{secrets.token_hex(4)}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    out = os.open(tmp, flags, 0o600, dir_fd=fd)
    try:
        with os.fdopen(out, "wb") as fh:
            os.fchmod(fh.fileno(), mode)  # exactly: not what the umask leaves of it
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.rename(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=fd)
        except OSError:
            pass
        raise


def _suggestion(case: Case, spec: ir.Spec) -> str:
    if case.kind != "records":
        return f"{case.task}{EVALUATION_SUFFIX}"
    return os.path.relpath(default_expected(spec, case.source, RECORDS_SUFFIX), spec_folder(spec))
