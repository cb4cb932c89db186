"""A trace read from standard input (``mapc run SPEC -``, ``mapc validate ... -``).

Sources are read by path (a gzip file is recognised by its first bytes, a large document is
streamed in a second pass), and a pipe cannot be read twice, so standard input is first
copied into a private scratch folder (:mod:`mapc.core.scratch`), as a file named ``stdin``; it
is then mapped exactly as a file is. The copy is bounded like a file: past ``max_bytes``
(the spec's ``source.max_bytes``) it stops with the file's error, and a gzip stream is
bounded again by what it decompresses to. So ``$source`` of standard input is
``{path: "stdin", name: "stdin", stem: "stdin"}`` and so are the records' ``source.path``
fields; results and messages name it ``-``, as it was given (D100).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

#: How standard input is named on the command line and in results.
STDIN = "-"
#: The name of its copy, so ``$source.name`` and ``$source.stem`` read ``stdin``.
COPY_NAME = "stdin"
CHUNK = 1 << 20
#: The bound when no spec gives one (`mapc validate`): the default `source.max_bytes`.
DEFAULT_MAX_BYTES = 1 << 30


class StdinTooLarge(Exception):
    """Standard input gave more than the bound (the message is the file's, with its fix)."""


def is_stdin(path: str | os.PathLike) -> bool:
    return os.fspath(path) == STDIN


@contextlib.contextmanager
def stdin_copy(max_bytes: int, stream=None) -> Iterator[Path]:
    """A private copy of standard input (at most ``max_bytes``), removed after the block."""
    from mapc.core.scratch import scratch

    stream = stream if stream is not None else sys.stdin.buffer
    with scratch("stdin") as folder:
        path = Path(folder) / COPY_NAME
        total = 0
        with open(path, "xb") as out:
            os.chmod(path, 0o600)
            while True:
                chunk = stream.read(CHUNK)
                if not chunk:
                    break
                total += len(chunk)
                if total > max_bytes:
                    raise StdinTooLarge(f"standard input gives more than {max_bytes} bytes, the spec's "
                                        "source.max_bytes; hint: raise source.max_bytes in the spec")
                out.write(chunk)
        yield path
