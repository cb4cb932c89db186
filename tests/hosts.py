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

import os
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
    return path
