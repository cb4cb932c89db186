"""mapc is POSIX only (it locks output folders with fcntl): on Windows ``import mapc`` says so
in one line instead of failing later, mid-build, on a missing ``fcntl``."""

from __future__ import annotations

import subprocess
import sys


def _import_mapc_on(platform: str) -> subprocess.CompletedProcess:
    code = f"import sys; sys.platform = {platform!r}; import mapc; print(mapc.__version__)"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)


def test_importing_mapc_on_windows_says_it_is_posix_only():
    proc = _import_mapc_on("win32")
    assert proc.returncode == 1
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: mapc runs on POSIX systems") and "WSL" in last


def test_importing_mapc_on_posix_works():
    proc = _import_mapc_on(sys.platform)
    assert proc.returncode == 0 and proc.stdout.strip(), proc.stderr
