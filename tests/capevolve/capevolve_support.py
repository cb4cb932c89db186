"""Helpers for the cap-evolve target tests: paths, building specs, driving generated adapters.

A module of its own (not conftest.py) so tests import it by a name no other test folder uses.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
ADAPTERS = HERE / "adapters"
EXAMPLE = ROOT / "examples" / "cap-evolve-tau-bench"
STANDIN = ROOT / "mapc" / "targets" / "capevolve" / "validator" / "standin"
DRIVE = HERE / "drive.py"


def host_env(**extra) -> dict:
    """The environment a generated adapter runs in: the stand-in cap_evolve importable,
    this interpreter first on PATH (agent commands say `python3`), no bytecode files."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(STANDIN)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.update(extra)
    return env


def build_adapter(spec: Path, out: Path, *, validate: bool = False):
    from mapc.api import build

    result = build(spec, "cap-evolve", out, validate=validate)
    assert result.diagnostics.ok, [d.format() for d in result.diagnostics]
    return result


def drive(adapter_dir: Path, ops: list[dict], *, cwd: Path, env: dict | None = None, timeout: float = 60):
    """Run ``ops`` against ``adapter_dir/adapter.py`` in a fresh process; (results, process)."""
    ops_file = cwd / ".drive-ops.json"
    result_file = cwd / ".drive-result.json"
    ops_file.write_text(json.dumps(ops), encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, str(DRIVE), str(adapter_dir / "adapter.py"), str(ops_file), str(result_file)],
        cwd=cwd, env=env or host_env(), stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout,
    )
    assert result_file.is_file(), proc.stderr.decode()
    return json.loads(result_file.read_text(encoding="utf-8")), proc
