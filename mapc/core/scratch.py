"""Private scratch folders for validation, beside the output, removed even after a ``kill -9``.

Validation copies a build's output (the user's files in it included) and runs the
adapter there; an RLViz build counts each fixture's records in a copy of its
testdata. Each such folder is made by :func:`scratch` next to the folder it works
on (``near``): ``.<name>.mapc-scratch-<kind>-*`` in the same parent, so on the
same file system and never in a temporary folder shared with other users (only
when that parent cannot be written does it go to the system's temporary folder, as
``mapc-<kind>-*``). It is private (``0700``, from ``mkdtemp``) and holds a
``.mapc-owner`` file that its process keeps ``flock``-ed while it exists and that
names the folder itself (its device and inode). The kernel drops the lock when the
process dies, however it dies, so a folder whose owner file nobody holds was left by
a killed run: the next :func:`scratch` beside it, the next build and ``mapc build
--check`` (:func:`sweep_beside`) remove it. Only folders provably mapc's are
touched: the name, this user's, ``0700``, not a symbolic link, and an owner file
naming that very folder (a copied or committed folder has another inode); or an
empty such folder a minute old (a run killed while it made it; nothing to lose).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import shutil
import stat
import tempfile
import time
from collections.abc import Iterator

PREFIX = "mapc-"
OWNER = ".mapc-owner"
BESIDE = ".mapc-scratch-"
#: An empty scratch folder this old (seconds) was left by a run killed as it made it.
EMPTY_FOR = 60.0


@contextlib.contextmanager
def scratch(kind: str, near: str | os.PathLike | None = None) -> Iterator[str]:
    """A new private folder for the duration of the block, beside ``near`` when given."""
    path, fd = _make(kind, near)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
        os.close(fd)


def _make(kind: str, near: str | os.PathLike | None) -> tuple[str, int]:
    """A new scratch folder and its locked owner file's descriptor."""
    sweep()  # what a run of an older mapc (or one without ``near``) left there
    if near is not None:
        near = os.path.abspath(near)
        parent, name = os.path.dirname(near), os.path.basename(near)
        sweep_beside(near)
        try:
            return _owned(tempfile.mkdtemp(prefix=f".{name}{BESIDE}{kind}-", dir=parent))
        except OSError:
            pass  # a parent that cannot be written (or is full): the system's temporary folder
    return _owned(tempfile.mkdtemp(prefix=f"{PREFIX}{kind}-"))


def _owned(path: str) -> tuple[str, int]:
    """``path`` with its owner file, locked before it says whose it is: a sweep never takes a
    live folder for a dead one."""
    try:
        fd = os.open(os.path.join(path, OWNER), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            data = _identity(os.lstat(path))
            if os.write(fd, data) != len(data):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)
        except BaseException:
            os.close(fd)
            raise
    except BaseException:
        shutil.rmtree(path, ignore_errors=True)
        raise
    return path, fd


def sweep_beside(near: str | os.PathLike) -> list[str]:
    """Remove the scratch folders dead processes left beside ``near``; returns their names."""
    near = os.path.abspath(near)
    return _sweep(os.path.dirname(near), f".{os.path.basename(near)}{BESIDE}")


def sweep(folder: str | None = None) -> list[str]:
    """Remove the scratch folders of dead processes from ``folder`` (the system's temporary
    folder); returns their names."""
    return _sweep(folder or tempfile.gettempdir(), PREFIX)


def _sweep(folder: str, prefix: str) -> list[str]:
    removed = []
    try:
        names = [n for n in os.listdir(folder) if n.startswith(prefix)]
    except OSError:
        return removed
    for name in names:
        path = os.path.join(folder, name)
        if _abandoned(path):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(name)
    return removed


def _empty(path: str) -> bool:
    """Nothing in ``path`` but (maybe) an empty owner file."""
    try:
        names = os.listdir(path)
        return names == [] or (names == [OWNER] and os.lstat(os.path.join(path, OWNER)).st_size == 0)
    except OSError:
        return False


def _identity(info: os.stat_result) -> bytes:
    return f"mapc scratch {info.st_dev}:{info.st_ino}\n".encode()


def _abandoned(path: str) -> bool:
    """Whether ``path`` is a scratch folder of this user's whose owner process is gone."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    if not stat.S_ISDIR(info.st_mode) or stat.S_IMODE(info.st_mode) != 0o700:
        return False
    if hasattr(os, "geteuid") and info.st_uid != os.geteuid():
        return False  # another user's: not ours to judge
    if _empty(path):  # killed before its owner file said whose it is: nothing in it to lose
        return time.time() - info.st_mtime > EMPTY_FOR
    try:
        fd = os.open(os.path.join(path, OWNER), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False  # not a folder of ours (no owner file), or already gone
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode) or os.read(fd, 200) != _identity(info):
            return False  # a copy of a scratch folder (or somebody's look-alike), not the one mapc made
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            return False  # alive
        return False
    finally:
        os.close(fd)
    return True
