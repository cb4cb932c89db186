"""Running the real cap-evolve's ``check.sh`` and ``run.sh`` from tests.

Both wrappers create their virtual environment (``$CAPEVOLVE_VENV``) on first use;
two pytest-xdist workers starting at once would both create it, so
:func:`hosts.ensure_venv` does it once, under a file lock, before any test runs them.
Each wrapper prints one JSON line on stdout (see its header comment).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from hosts import ensure_venv, host_env, venv_path  # noqa: F401 (this module's callers use them)


def one_line(proc: subprocess.CompletedProcess) -> dict:
    """The wrapper's one JSON line; its stderr tail rides along as ``stderr`` for messages."""
    lines = [ln for ln in proc.stdout.decode("utf-8", "replace").splitlines() if ln.strip()]
    assert lines, f"no JSON line (exit {proc.returncode}): {proc.stderr.decode()[-2000:]}"
    result = json.loads(lines[-1])
    result["stderr"] = proc.stderr.decode("utf-8", "replace")[-3000:]
    return result


def real_check(capevolve_dir: Path, venv: Path, adapter_py: Path, *, timeout: float = 60) -> dict:
    """``check.sh ADAPTER_PY``: the real ``cap-evolve check`` on the adapter's folder."""
    env = host_env(venv, CHECK_TIMEOUT=f"{timeout:g}")
    proc = subprocess.run([str(capevolve_dir / "check.sh"), str(adapter_py)], env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout + 60)
    return one_line(proc)


def real_run(capevolve_dir: Path, venv: Path, adapter_dir: Path, run_root: Path | None = None) -> dict:
    """``run.sh ADAPTER_PY DATA_DIR``: a real one-iteration ``cap-evolve run`` (every task run
    and scored), with ``RUN_ROOT``'s files in the repository root when given."""
    env = host_env(venv, RUN_TIMEOUT="240")
    if run_root is not None:
        env["RUN_ROOT"] = str(run_root)
    proc = subprocess.run([str(capevolve_dir / "run.sh"), str(adapter_dir / "adapter.py"), str(adapter_dir)],
                          env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=300)
    return one_line(proc)
