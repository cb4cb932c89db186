"""`mapc run SPEC SOURCE` maps in a process that holds only the mapping (D73).

Loading and checking a spec needs mapc's compiler (pyyaml, jinja2, jmespath, jsonschema,
typer and the spec model: about 30 MiB); mapping a trace needs none of it, and on a large
trace the mapping's own memory comes on top. So once the spec is compiled, the process
replaces itself (``os.execv``, same pid, same interpreter and flags) with one that runs
:mod:`mapc.pipeline.run_child` on the spec's mapping program and the runtime package, handed over in
an anonymous file: no cache, no file left behind whatever happens, nothing another user
could write. Where that cannot be done (not POSIX, no anonymous file) the mapping runs in
process, as before.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from mapc.spec import ir

CHILD = Path(__file__).with_name("run_child.py")


def _anonymous_file() -> int:
    """A file descriptor of a file with no name, readable and writable by this process."""
    if hasattr(os, "memfd_create"):
        return os.memfd_create("mapc-run", 0)  # close-on-exec off: the new program reads it
    import tempfile

    return os.dup(tempfile.TemporaryFile().fileno())  # unlinked at once (O_TMPFILE on Linux)


def exec_mapping(spec: ir.Spec, source: Path) -> None:
    """Map ``source`` with ``spec`` in this process, replaced by one without mapc's compiler;
    returns only when that could not be done (the caller maps in process)."""
    if os.name != "posix":
        return
    from mapc.pipeline.build import mapping_runtime, mapping_source

    job = json.dumps({"program": mapping_source(spec), "runtime": mapping_runtime(), "source": str(source)})
    try:
        child = CHILD.read_text(encoding="utf-8")
        fd = _anonymous_file()
    except OSError:
        return
    try:
        data = memoryview(job.encode("ascii"))  # json.dumps escapes every other character
        while data:
            data = data[os.write(fd, data):]
        os.lseek(fd, 0, os.SEEK_SET)
        os.set_inheritable(fd, True)
        # -X utf8, -W, -O, ... as this process (a CPython helper: without it, no flags)
        interpreter_flags = getattr(subprocess, "_args_from_interpreter_flags", list)
        flags = interpreter_flags()
        argv = [sys.executable, *flags, *([] if "-S" in flags else ["-S"]), "-c", child, str(fd)]
        sys.stdout.flush()
        sys.stderr.flush()
        os.execv(sys.executable, argv)
    except (OSError, ValueError):  # e.g. no sys.executable
        os.close(fd)
        return
