"""``mapc test --against DIR``: the records an already-built adapter gives on the same traces.

DIR is a build output (an RLViz plugin, a cap-evolve adapter folder, a RELAI
project or adapter folder). The module that holds the mapping is found from the
build's ``mapc.lock.json`` (the RELAI adapter named like the spec when a project
has several) and run in a fresh interpreter by ``adapter_driver.py``: its own
code, not mapc's, maps the traces.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

DRIVER = Path(__file__).resolve().parent / "adapter_driver.py"
TIMEOUT = 600


class AgainstError(ValueError):
    """The folder holds no adapter whose mapping can be run."""


def find_module(folder: Path, spec_name: str) -> Path:
    """The generated Python file in ``folder`` that defines ``map_source``."""
    from mapc import provenance
    from mapc.review import find_locks

    if not folder.is_dir():
        raise AgainstError(f"{folder} is not a folder")
    locks = find_locks(folder)
    if len(locks) > 1:
        named = [p for p in locks if p.parent.name == spec_name]
        if len(named) != 1:
            names = ", ".join(p.parent.name for p in locks)
            raise AgainstError(f"{folder} holds several adapters ({names}); give the adapter's own folder")
        locks = named
    candidates: list[Path] = []
    if locks:
        try:
            lock = provenance.read_lock(locks[0])
        except provenance.LockError as exc:
            raise AgainstError(f"{locks[0]}: {exc}") from None
        root = (locks[0].parent / lock.output).resolve()
        candidates = [root / rel for rel in sorted(lock.files) if rel.endswith(".py")]
    else:
        candidates = [folder / "adapter.py", folder / "adapters" / "adapter.py", folder / "run.py"]
    for path in candidates:
        if path.is_file() and not path.is_symlink() and _defines_map_source(path):
            return path
    raise AgainstError(f"no generated adapter with a mapping (map_source) in {folder}")


def _defines_map_source(path: Path) -> bool:
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return False
    return any(isinstance(n, ast.FunctionDef) and n.name == "map_source" for n in tree.body)


def trusted_records(module: Path, traces: list[Path]) -> list[tuple[list[dict] | None, str | None]]:
    """``(records, error)`` per trace, from the adapter's own mapping, in one fresh process."""
    if not traces:
        return []
    from mapc.validators.capevolve import STANDIN

    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    with tempfile.TemporaryDirectory(prefix="mapc-test-against-") as tmp:
        try:
            proc = subprocess.run(
                [sys.executable, str(DRIVER), str(module), str(STANDIN), *map(str, traces)],
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
