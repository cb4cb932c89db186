"""Helpers for the security tests: hostile inputs, running generated code, checking diagnostics.

A module of its own (not conftest.py), imported by a name no other test folder uses.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
CASES = ROOT / "tests" / "cases"
STANDIN = ROOT / "mapc" / "targets" / "capevolve" / "validator" / "standin"
DRIVE = ROOT / "tests" / "capevolve" / "drive.py"

#: How many examples each default-profile fuzz test runs; MAPC_FUZZ_EXAMPLES raises it.
FUZZ_EXAMPLES = int(os.environ.get("MAPC_FUZZ_EXAMPLES", "0") or 0)


def examples(default: int) -> int:
    """``default`` examples, or the opt-in count from MAPC_FUZZ_EXAMPLES."""
    return FUZZ_EXAMPLES or default


def seed_specs() -> list[Path]:
    """The real specs fuzzing starts from: every example and every library spec."""
    found = sorted((ROOT / "examples").glob("*/spec*.yaml")) + sorted((ROOT / "specs").glob("*.yaml"))
    assert len(found) >= 15, found
    return found


def copy_seed_tree(dest: Path) -> dict[Path, Path]:
    """Copies of examples/ and specs/ under ``dest`` (mutated specs are written there, next to the
    files they name); original spec -> its copy."""
    out = {}
    for folder in ("examples", "specs"):
        shutil.copytree(ROOT / folder, dest / folder, symlinks=True)
    for spec in seed_specs():
        out[spec] = dest / spec.relative_to(ROOT)
    return out


def check_diagnostics(diags, *, spec_file: str | None = None) -> None:
    """Every diagnostic is located and readable: a code, a message, and for problems in the
    spec text a line and column."""
    for d in diags:
        assert isinstance(d.code, str) and d.code and " " not in d.code, d
        assert isinstance(d.message, str) and d.message.strip(), d
        assert d.severity in ("error", "warning"), d
        if spec_file is not None and d.file == spec_file and d.code not in FILE_LEVEL_CODES:
            assert d.line is not None and d.line >= 1 and d.column is not None and d.column >= 1, d.to_dict()
        d.format()  # renders without raising


#: Diagnostics about the file as a whole (encoding, size, reading it), not a place in it.
FILE_LEVEL_CODES = {"spec_too_large", "unreadable", "file_not_found", "not_a_file"}


def host_env(**extra) -> dict:
    """Environment for generated cap-evolve adapters: mapc's stand-in cap_evolve importable."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(STANDIN)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.update(extra)
    return env


def drive_capevolve(adapter_dir: Path, ops: list[dict], *, cwd: Path, env: dict | None = None,
                    timeout: float = 120) -> tuple[list, subprocess.CompletedProcess]:
    """Run cap-evolve operations against ``adapter_dir/adapter.py`` in one fresh process
    (tests/capevolve/drive.py); returns (results, process)."""
    ops_file = cwd / ".drive-ops.json"
    result_file = cwd / ".drive-result.json"
    if result_file.exists():
        result_file.unlink()
    ops_file.write_text(json.dumps(ops), encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, str(DRIVE), str(adapter_dir / "adapter.py"), str(ops_file), str(result_file)],
        cwd=cwd, env=env or host_env(), stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout,
    )
    assert result_file.is_file(), proc.stderr.decode(errors="replace")
    return json.loads(result_file.read_text(encoding="utf-8")), proc


def scratch_copies(*places: Path) -> list[Path]:
    """mapc's scratch folders in ``places`` once they hold copies: beside an output (an owner
    file that says whose it is), or a ``mapc-*`` folder in a temporary folder (an owner file)."""
    def written(path: Path) -> bool:
        try:
            return path.stat().st_size > 0
        except OSError:
            return False

    return [p for place in places for p in place.iterdir()
            if (".mapc-scratch-" in p.name and written(p / ".mapc-owner"))
            or (p.name.startswith("mapc-") and (p / ".mapc-owner").exists())]


def kill_when(cmd: list[str], found, *, env: dict, cwd: Path | None = None, timeout: float = 120) -> list:
    """Run ``cmd``; as soon as ``found()`` is not empty, freeze the process (SIGSTOP: what it
    found cannot vanish first) and kill it with SIGKILL. Returns what ``found()`` gave then."""
    import signal
    import time

    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seen: list = []
    deadline = time.monotonic() + timeout
    try:
        while not seen and proc.poll() is None and time.monotonic() < deadline:
            if found():
                os.kill(proc.pid, signal.SIGSTOP)
                seen = found()
                if not seen:
                    os.kill(proc.pid, signal.SIGCONT)
            else:
                time.sleep(0.001)
    finally:
        proc.kill()
        proc.wait()
    return seen
