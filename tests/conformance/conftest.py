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
