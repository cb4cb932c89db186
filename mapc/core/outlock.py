"""One build per output folder at a time, and staging entries that belong to a live build.

Two builds into one folder used to clear each other's staging folders and lose
the user's files. Now:

- ``output_lock(out)`` holds an exclusive ``flock`` on the output folder itself
  for the whole build (render, plan, write, validation). A second build waits
  for it (saying so once on stderr) and then builds on top of the first one's
  result, exactly as if it had been started afterwards. The swap replaces the
  folder (a new inode), so a waiter that wakes up on the old folder locks the
  new one instead; the new folder is locked from the moment it is staged.
- Every staging entry (``.<name>.mapc-new-<token>``) is ``flock``-ed by the
  build that made it while it exists. Leftovers are removed only when no live
  process holds them (``held_by_another``): the owner was killed.

``flock`` locks are released by the kernel when the process dies, however it
dies, so a killed build never leaves a folder locked.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import sys
import time
from pathlib import Path

#: How long a build waits for another build of the same output before giving up.
WAIT_ENV = "MAPC_LOCK_WAIT"
WAIT_SECONDS = 900.0
_DIR = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


class LockTimeout(Exception):
    """Another build kept the output locked for longer than ``WAIT_SECONDS``."""


class Held:
    """Descriptors holding locks until the build ends (stages, the output folder)."""

    def __init__(self) -> None:
        self.fds: list[int] = []

    def keep(self, fd: int) -> None:
        self.fds.append(fd)

    def release(self) -> None:
        while self.fds:
            try:
                os.close(self.fds.pop())
            except OSError:
                pass


def hold(path: str | os.PathLike, held: Held) -> None:
    """Lock the staging entry ``path`` (just created by this process) until ``held`` is released."""
    flags = (_DIR if os.path.isdir(path) else os.O_RDONLY | getattr(os, "O_CLOEXEC", 0)) | _NOFOLLOW
    fd = os.open(path, flags)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # new and ours: never contended
    held.keep(fd)


def held_by_another(path: str | os.PathLike) -> bool:
    """Whether a live process holds the staging entry ``path`` (then it must not be touched)."""
    try:
        flags = (_DIR if os.path.isdir(path) else os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)) | _NOFOLLOW
        fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return False  # gone, or a symlink: nobody's stage
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        return exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN)
    finally:
        os.close(fd)
    return False


@contextlib.contextmanager
def output_lock(out: str | os.PathLike, *, wait: float | None = None, say=None):
    """Hold the output folder ``out`` (which must exist) for one build; yields a :class:`Held`
    that keeps this build's staging locks until the block ends."""
    held = Held()
    if wait is None:
        try:
            wait = float(os.environ.get(WAIT_ENV) or WAIT_SECONDS)
        except ValueError:
            wait = WAIT_SECONDS
    held.keep(_lock_folder(Path(out), wait, say))
    try:
        yield held
    finally:
        held.release()


def _lock_folder(out: Path, wait: float, say) -> int:
    deadline = time.monotonic() + wait
    told = False
    delay = 0.01
    while True:
        try:
            fd = os.open(out, _DIR)
        except FileNotFoundError:
            fd = None  # between the two renames of a build without renameat2: look again
        if fd is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                if _same_folder(fd, out):
                    return fd
            except OSError as exc:
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                    os.close(fd)
                    raise
            os.close(fd)
        if time.monotonic() > deadline:
            raise LockTimeout(f"another mapc build into {out} is still running after {wait:g} s")
        if not told:
            told = True
            (say or _stderr)(f"waiting for another mapc build into {out} to finish")
        time.sleep(delay)
        delay = min(delay * 2, 0.1)


def _same_folder(fd: int, out: Path) -> bool:
    """The locked folder is still the one at ``out`` (a build may have swapped a new one in)."""
    try:
        a, b = os.fstat(fd), os.stat(out)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _stderr(message: str) -> None:
    print(f"note: {message}", file=sys.stderr, flush=True)
