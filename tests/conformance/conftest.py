"""Fixtures for the conformance tests: the real hosts, found by ``tests/hosts.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

import hosts


@pytest.fixture(scope="session")
def real_rlviz() -> Path:
    """The real RLViz validator binary (skips, or fails in CI, when absent)."""
    return hosts.require_rlviz()


@pytest.fixture(scope="session")
def real_capevolve() -> Path:
    """The real cap-evolve folder with ``check.sh`` and ``run.sh`` (skips, or fails in CI)."""
    return hosts.require_capevolve()


@pytest.fixture(scope="session")
def real_capevolve_venv(real_capevolve) -> Path:
    """The virtual environment check.sh and run.sh run cap-evolve in, created once (under a
    file lock: pytest-xdist workers would otherwise race to create it)."""
    from hosts import ensure_venv

    return ensure_venv(real_capevolve)
