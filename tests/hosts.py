"""Where the real hosts are, for the conformance tests.

The real RLViz validator (``rlviz-validate``, RLViz's own Go code) and the real
cap-evolve (its ``check.sh`` gate and ``run.sh`` one-iteration run) are not part
of this repository. They are found through environment variables, with the
``shared/upstream`` folder next to the repository as the default:

- ``MAPC_RLVIZ_BIN``: the ``rlviz-validate`` binary;
- ``MAPC_CAPEVOLVE_DIR``: the folder holding cap-evolve's ``check.sh`` and ``run.sh``.

A test that needs a host that is absent skips with the reason. ``.ci/run``
sets both variables and ``MAPC_REQUIRE_HOSTS=1``, which turns every skip into a
failure (see ``conftest.py``), so in CI no conformance test can skip.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_UPSTREAM = ROOT.parent / "shared" / "upstream"


def _from_env(variable: str, default: Path) -> Path:
    value = os.environ.get(variable)
    return Path(value) if value else default


def rlviz_bin() -> Path:
    """The real RLViz validator binary (it may not exist)."""
    return _from_env("MAPC_RLVIZ_BIN", DEFAULT_UPSTREAM / "rlviz-validate" / "bin" / "rlviz-validate")


def capevolve_dir() -> Path:
    """The folder with the real cap-evolve's ``check.sh`` and ``run.sh`` (it may not exist)."""
    return _from_env("MAPC_CAPEVOLVE_DIR", DEFAULT_UPSTREAM / "cap-evolve")


def require_rlviz() -> Path:
    """The real RLViz validator, or skip the calling test with the reason."""
    path = rlviz_bin()
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.skip(f"the real RLViz validator is not at {path} (set MAPC_RLVIZ_BIN)")
    return path


def require_capevolve() -> Path:
    """The real cap-evolve folder, or skip the calling test with the reason."""
    path = capevolve_dir()
    if not ((path / "check.sh").is_file() and (path / "run.sh").is_file()):
        pytest.skip(f"the real cap-evolve (check.sh, run.sh) is not in {path} (set MAPC_CAPEVOLVE_DIR)")
    # the wrappers' venv, made once and working, for every test that runs them (directly too)
    os.environ["CAPEVOLVE_VENV"] = str(ensure_venv(path))
    return path


def venv_path() -> Path:
    """Where check.sh and run.sh keep the real cap-evolve (their own default)."""
    if os.environ.get("CAPEVOLVE_VENV"):
        return Path(os.environ["CAPEVOLVE_VENV"])
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "cap-evolve-venv"


def ensure_venv(capevolve_dir: Path) -> Path:
    """The wrappers' venv, created by the wrapper itself (no arguments: it installs, then
    prints its usage), by one process at a time."""
    venv = venv_path()
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / f"{venv.name}.lock", "w") as lock:  # beside the venv, ignored
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _runs(venv):
            # a venv whose interpreter is gone (made by an earlier session under conftest's
            # temporary `python3`, since removed) is made again
            shutil.rmtree(venv, ignore_errors=True)
            proc = subprocess.run([str(capevolve_dir / "check.sh")], env=_install_env(venv),
                                  capture_output=True, timeout=600)
            assert os.access(venv / "bin" / "cap-evolve", os.X_OK), (
                f"check.sh could not install cap-evolve into {venv}: {proc.stderr.decode()[-2000:]}")
    return venv


def _runs(venv: Path) -> bool:
    """Whether the venv's cap-evolve is there and its interpreter starts."""
    if not os.access(venv / "bin" / "cap-evolve", os.X_OK):
        return False
    try:
        return subprocess.run([str(venv / "bin" / "python"), "-c", "import cap_evolve"],
                              capture_output=True, timeout=60).returncode == 0
    except OSError:
        return False


def _install_env(venv: Path) -> dict:
    """The environment check.sh installs in: PATH without conftest's temporary ``python3``
    folder, so the venv points at an interpreter that outlives this test session."""
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep)
                           if not os.path.basename(p).startswith("mapc-tests-python3-"))
    return host_env(venv, PATH=path)


def host_env(venv: Path, **extra: str) -> dict:
    env = dict(os.environ, CAPEVOLVE_VENV=str(venv))
    env.update(extra)
    return env
