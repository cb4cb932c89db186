"""Reading files whose names come from text mapc does not trust: a spec, a lock, an output folder.

Two rules, kept here so every reader applies them the same way:

- **Below a folder** (``read_beneath``): a file an output's lock or a build names,
  relative to the output. Each path component is opened with ``O_NOFOLLOW`` from
  its parent's descriptor, so no symlink is followed anywhere on the way (a
  committed ``out/p -> /proc/self`` plus a lock entry ``p/environ`` reads
  nothing), and only a regular file is opened (a FIFO or device is refused
  before it is opened, so nothing blocks or has side effects).
- **Inside the spec's roots** (``contained_file``, ``read_contained``): a spec's
  own inputs (fixtures, tasks files, recorded traces, sibling files, base specs).
  The path is resolved through symlinks and must land on a regular file inside
  the folder of the spec file that names it, or inside a folder the person
  running mapc allowed with ``--allow-read DIR`` / ``MAPC_ALLOW_READ`` (never the
  spec itself: it is the input being guarded against).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from pathlib import Path

#: Folders (``os.pathsep``-separated) a spec's inputs may come from, besides the spec's folder.
ALLOW_READ_ENV = "MAPC_ALLOW_READ"

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_FILE_FLAGS = os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


class UnsafePath(ValueError):
    """A path mapc refuses to read: it leaves its root, goes through a symlink, or is not a regular file."""


# -- below a folder (outputs, locks) ------------------------------------------------------
def relative_parts(rel: str) -> list[str]:
    """The components of an output-relative path; UnsafePath for absolute, empty, ``.`` or ``..`` parts."""
    parts = rel.split("/")
    if not rel or rel.startswith("/") or "\\" in rel or "\0" in rel or any(p in ("", ".", "..") for p in parts):
        raise UnsafePath(f"{rel!r} is not a plain relative path")
    return parts


def open_beneath(root: str | os.PathLike, rel: str) -> int:
    """A read-only descriptor of the regular file ``root/rel``, reached without following any symlink.

    Raises FileNotFoundError when it is not there, UnsafePath when a component is a
    symlink or not a folder, or the file is not a regular file.
    """
    parts = relative_parts(rel)
    fd = os.open(root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        for i, name in enumerate(parts[:-1]):
            try:
                inner = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    where = "/".join(parts[: i + 1])
                    raise UnsafePath(f"{where} is a symbolic link or not a folder") from None
                raise
            os.close(fd)
            fd = inner
        info = os.stat(parts[-1], dir_fd=fd, follow_symlinks=False)
        if stat.S_ISLNK(info.st_mode):
            raise UnsafePath(f"{rel} is a symbolic link")
        if not stat.S_ISREG(info.st_mode):
            raise UnsafePath(f"{rel} is not a regular file")
        try:
            out = os.open(parts[-1], _FILE_FLAGS, dir_fd=fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise UnsafePath(f"{rel} is a symbolic link") from None
            raise
        if not stat.S_ISREG(os.fstat(out).st_mode):  # swapped since the check
            os.close(out)
            raise UnsafePath(f"{rel} is not a regular file")
        return out
    finally:
        os.close(fd)


def folder_beneath(root: str | os.PathLike, parts: list[str], *, create: bool = False) -> int:
    """A descriptor of the folder ``root/parts...``, reached without following any symlink;
    with ``create``, missing folders are made on the way. UnsafePath when a component is a
    symbolic link or not a folder; FileNotFoundError when one is missing (without ``create``)."""
    fd = os.open(root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        for i, name in enumerate(parts):
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, 0o777, dir_fd=fd)
            try:
                inner = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise UnsafePath(f"{'/'.join(parts[: i + 1])} is a symbolic link or not a folder") from None
                raise
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_beneath(root: str | os.PathLike, rel: str, limit: int | None = None) -> bytes:
    """The bytes of ``root/rel`` (see :func:`open_beneath`); at most ``limit`` bytes."""
    return _read_fd(open_beneath(root, rel), rel, limit)


def try_read_beneath(root: str | os.PathLike, rel: str, limit: int | None = None) -> bytes | None:
    """Like :func:`read_beneath`, but None when the file is absent, unsafe or unreadable."""
    try:
        return read_beneath(root, rel, limit)
    except (OSError, UnsafePath):
        return None


def is_regular_beneath(root: str | os.PathLike, rel: str) -> bool:
    """Whether ``root/rel`` is a regular file reached without a symlink (nothing is opened)."""
    try:
        parts = relative_parts(rel)
    except UnsafePath:
        return False
    path = Path(root)
    for name in parts:
        path = path / name
        try:
            info = os.lstat(path)
        except OSError:
            return False
        if stat.S_ISLNK(info.st_mode):
            return False
    return stat.S_ISREG(info.st_mode)


def _read_fd(fd: int, name: str, limit: int | None) -> bytes:
    with os.fdopen(fd, "rb") as fh:
        if limit is None:
            return fh.read()
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise UnsafePath(f"{name} is larger than {limit} bytes")
    return data


# -- inside the spec's roots (a spec's inputs) ----------------------------------------------
def allowed_roots() -> list[Path]:
    """The folders the person running mapc allowed a spec to read from (``MAPC_ALLOW_READ``)."""
    value = os.environ.get(ALLOW_READ_ENV, "")
    return [Path(p) for p in value.split(os.pathsep) if p.strip()]


def allow_read(folders) -> None:
    """Add ``folders`` to the allowed roots of this process and the processes it starts."""
    current = [str(p) for p in allowed_roots()]
    for folder in folders:
        path = os.path.abspath(folder)
        if path not in current:
            current.append(path)
    os.environ[ALLOW_READ_ENV] = os.pathsep.join(current)


@contextlib.contextmanager
def allowing(folders):
    """Within the block, also allow ``folders`` (e.g. the sample `mapc init` was given)."""
    before = os.environ.get(ALLOW_READ_ENV)
    allow_read(folders)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(ALLOW_READ_ENV, None)
        else:
            os.environ[ALLOW_READ_ENV] = before


def input_roots(spec_folder: str | os.PathLike) -> list[Path]:
    """Where a spec's inputs may be: the folder of the spec file that names them, and the allowed roots."""
    return [Path(spec_folder)] + allowed_roots()


def within(path: str | os.PathLike, folder: str | os.PathLike) -> bool:
    """Whether resolved ``path`` is ``folder`` or below it (both taken as they are)."""
    a, b = os.fspath(path), os.fspath(folder)
    try:
        return os.path.commonpath([a, b]) == b
    except ValueError:
        return False


def contained_file(path: str | os.PathLike, roots) -> Path:
    """``path`` resolved through every symlink, which must be a regular file inside one of ``roots``.

    Raises FileNotFoundError when nothing is there, UnsafePath (with a reason that
    completes "the fixture ...") otherwise.
    """
    real = os.path.realpath(path)
    reals = [os.path.realpath(r) for r in roots]
    if not any(within(real, r) for r in reals):
        lexical = os.path.normpath(os.path.abspath(path))
        linked = any(within(lexical, os.path.normpath(os.path.abspath(r))) for r in roots)
        how = "is a symbolic link out of" if linked else "is outside"
        raise UnsafePath(f"{how} the spec's folder (it resolves to {real})")
    info = os.stat(real)
    if not stat.S_ISREG(info.st_mode):
        raise UnsafePath("is not a regular file")
    return Path(real)


def read_contained(path: str | os.PathLike, roots, limit: int | None = None) -> bytes:
    """The bytes of a spec's input, checked by :func:`contained_file` and opened without following links."""
    real = contained_file(path, roots)
    try:
        fd = os.open(real, _FILE_FLAGS)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafePath("changed into a symbolic link while mapc read it") from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise UnsafePath("is not a regular file")
    return _read_fd(fd, str(path), limit)


def outside_hint(folder: str | os.PathLike) -> str:
    """The fix for an input outside its roots."""
    return (f"keep the spec's files inside its folder ({folder}), or let this build read another folder "
            f"with `--allow-read DIR` (or {ALLOW_READ_ENV}=DIR)")


def new_file_mode(path: str | os.PathLike) -> int:
    """The mode a file the user keeps gets when written atomically: its present mode, else
    what the umask gives a new file (mkstemp's private 0600 would hide it from the team)."""
    try:
        st = os.stat(path)
        if stat.S_ISREG(st.st_mode):
            return st.st_mode & 0o777
    except OSError:
        pass
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def write_text_atomic(text: str, out: Path) -> None:
    """Write ``text`` to the file ``out`` in one step (a temporary file beside it, then a
    rename), with the mode :func:`new_file_mode` gives: a reader never sees half a file."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    mode = new_file_mode(out)
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
    try:
        os.fchmod(fd, mode)  # a file the user edits and commits, not mkstemp's private 0600
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, out)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
