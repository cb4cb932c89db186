"""Shared test fixtures: repository paths and the golden-file convention."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from shared_paths import SHARED  # noqa: E402


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    if not SHARED.is_dir():
        pytest.fail(f"shared materials not found at {SHARED}")
    return SHARED
