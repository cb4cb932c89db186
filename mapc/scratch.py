"""Private temporary folders for validation, removed even after a ``kill -9``.

Validation copies a build's output (the user's files in it included) into the
system's temporary folder, and runs the adapter there. Each such folder is made
by :func:`scratch`: private (``0700``, from ``mkdtemp``), named ``mapc-*``, and
holding a ``.mapc-owner`` file that its process keeps ``flock``-ed while it
exists. The kernel drops the lock when the process dies, however it dies, so a
``mapc-*`` folder whose owner file nobody holds was left by a killed run: the
next :func:`scratch` call (any mapc command that validates) removes it. Folders
without an owner file (another program's, or an older mapc's) are never touched.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import shutil
import tempfile
from collections.abc import Iterator

PREFIX = "mapc-"
OWNER = ".mapc-owner"


@contextlib.contextmanager
def scratch(kind: str) -> Iterator[str]:
    """A new private folder ``mapc-<kind>-*`` for the duration of the block."""
    sweep()
    path = tempfile.mkdtemp(prefix=f"{PREFIX}{kind}-")
    # locked before it gets its name: a sweep never sees an owner file nobody holds yet
    pending = os.path.join(path, OWNER + ".new")
    fd = os.open(pending, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.rename(pending, os.path.join(path, OWNER))
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
        os.close(fd)


def sweep(folder: str | None = None) -> list[str]:
    """Remove the scratch folders of dead processes from ``folder`` (the system's temporary
    folder); returns their names."""
    folder = folder or tempfile.gettempdir()
    removed = []
    try:
        names = [n for n in os.listdir(folder) if n.startswith(PREFIX)]
    except OSError:
        return removed
    uid = os.geteuid() if hasattr(os, "geteuid") else None
    for name in names:
        path = os.path.join(folder, name)
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if uid is not None and info.st_uid != uid:
            continue  # another user's: not ours to judge
        if _abandoned(path):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(name)
    return removed


def _abandoned(path: str) -> bool:
    """Whether ``path`` is a scratch folder whose owner process is gone."""
    try:
        fd = os.open(os.path.join(path, OWNER), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False  # not a folder of ours (no owner file), or already gone
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            return False  # alive
        return False
    finally:
        os.close(fd)
    return True
