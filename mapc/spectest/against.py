"""``mapc test --against DIR``: the records an already-built adapter gives on the same traces.

DIR is a build output (an RLViz plugin, a cap-evolve adapter folder, a RELAI
project or adapter folder). The module that holds the mapping is found from the
build's ``mapc.lock.json`` (the RELAI adapter named like the spec when a project
has several) and run in a fresh interpreter by ``adapter_driver.py``: its own
code, not mapc's, maps the traces. The lock is untrusted: only a module inside DIR,
reached without a symbolic link, is run, with its own ``mapc_runtime/`` and the
standard library (``python -P``: nothing else of its folder is importable).
"""

from __future__ import annotations

import ast
import json
import os
import posixpath
import subprocess
import sys
import tempfile
from pathlib import Path

from mapc.core import safeio

DRIVER = Path(__file__).resolve().parent / "adapter_driver.py"
TIMEOUT = 600
#: A generated entry file is a few hundred KiB at most; parsing one larger is not worth it.
MAX_MODULE_BYTES = 64 << 20


class AgainstError(ValueError):
    """The folder holds no adapter whose mapping can be run."""


def find_module(folder: Path, spec_name: str) -> Path:
    """The generated Python file in ``folder`` that defines ``map_source``.

    The lock is untrusted input: every Python file it names must lie in ``folder``, reached
    without a symbolic link, and so must the runtime package beside the module found;
    anything else is refused (AgainstError), never run.
    """
    from mapc.pipeline import provenance
    from mapc.tools.review import find_locks

    if not folder.is_dir():
        raise AgainstError(f"{folder} is not a folder")
    real = Path(os.path.realpath(folder))
    locks = find_locks(folder)
    if len(locks) > 1:
        named = [p for p in locks if p.parent.name == spec_name]
        if len(named) != 1:
            names = ", ".join(p.parent.name for p in locks)
            raise AgainstError(f"{folder} holds several adapters ({names}); give the adapter's own folder")
        locks = named
    if locks:
        try:
            lock = provenance.read_lock(locks[0])
        except (provenance.LockError, OSError) as exc:
            raise AgainstError(f"{locks[0]}: {exc}") from None
        lock_dir = locks[0].parent.relative_to(folder).as_posix()  # found without a symlink (find_locks)
        candidates = [_contained(real, folder, locks[0], [lock_dir, lock.output, rel])
                      for rel in sorted(lock.files) if rel.endswith(".py")]
    else:
        candidates = ["adapter.py", "adapters/adapter.py", "run.py"]
    texts = {}
    for rel in candidates:  # all of them first: one reached through a symlink is refused, not skipped
        try:
            texts[rel] = safeio.read_beneath(real, rel, MAX_MODULE_BYTES)
        except FileNotFoundError:
            continue
        except (safeio.UnsafePath, OSError) as exc:
            raise AgainstError(f"{folder}/{rel}: {exc}; mapc runs no adapter reached through one") from None
    for rel, text in texts.items():
        if _defines_map_source(text):
            _check_runtime(real, folder, posixpath.dirname(rel))
            return real / rel
    raise AgainstError(f"no generated adapter with a mapping (map_source) in {folder}")


def _contained(real: Path, folder: Path, lock: Path, parts: list[str]) -> str:
    """The lock's path ``parts`` joined (its folder, its ``output``, a file) as a path below
    ``real`` (the folder given, resolved); AgainstError when it leads anywhere else."""
    joined = os.path.normpath(os.path.join(real, *parts))
    inner = os.path.relpath(joined, real)
    if "\0" in joined or inner == os.curdir or inner.split(os.sep)[0] == os.pardir:
        shown = repr(parts[-1]) + ("" if parts[1] in (".", "") else f" in its output {parts[1]!r}")
        raise AgainstError(f"{lock}: the lock names {shown}, which is outside {folder}; mapc runs nothing "
                           "outside the folder given to --against (a tampered lock?)")
    return Path(inner).as_posix()


def _check_runtime(real: Path, folder: Path, module_folder: str) -> None:
    """The runtime beside the module (``mapc_runtime/``) holds no symbolic link: the driver loads
    its parts from there."""
    from mapc.core.runtime_files import RUNTIME_PACKAGE

    base = real / module_folder if module_folder else real
    for name in (RUNTIME_PACKAGE, RUNTIME_PACKAGE + ".py"):
        top = base / name
        if not os.path.lexists(top):
            continue
        found = [top] + ([Path(d, n) for d, dirs, names in os.walk(top) for n in dirs + names]
                         if not top.is_symlink() and top.is_dir() else [])
        link = next((p for p in found if p.is_symlink()), None)
        if link is not None:
            raise AgainstError(f"{folder}/{link.relative_to(real).as_posix()} is a symbolic link; mapc runs no "
                               "adapter runtime reached through one")


def _defines_map_source(text: bytes) -> bool:
    try:
        tree = ast.parse(text.decode("utf-8"))
    except (UnicodeDecodeError, SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return any(isinstance(n, ast.FunctionDef) and n.name == "map_source" for n in tree.body)


def trusted_records(module: Path, traces: list[Path]) -> list[tuple[list[dict] | None, str | None]]:
    """``(records, error)`` per trace, from the adapter's own mapping, in one fresh process."""
    if not traces:
        return []
    from mapc.targets.capevolve.validator import STANDIN

    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    with tempfile.TemporaryDirectory(prefix="mapc-test-against-") as tmp:
        try:
            proc = subprocess.run(
                [sys.executable, "-P", str(DRIVER), str(module), str(STANDIN), *map(str, traces)],
                cwd=tmp, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=TIMEOUT,
            )
        except subprocess.TimeoutExpired:
            raise AgainstError(f"{module} did not finish mapping within {TIMEOUT} s") from None
    prefix = "MAPC-TEST "
    lines = [ln for ln in proc.stdout.decode("utf-8", "replace").splitlines() if ln.startswith(prefix)]
    answers = []
    for line in lines:
        doc = json.loads(line[len(prefix):])
        if "fatal" in doc:
            raise AgainstError(doc["fatal"])
        answers.append((doc["records"] if doc["error"] is None else None, doc["error"]))
    if len(answers) != len(traces):
        tail = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-1:]
        raise AgainstError(f"{module} stopped before mapping every trace" + (f": {tail[0]}" if tail else ""))
    return answers
