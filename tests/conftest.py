"""Shared test fixtures: repository paths and the golden-file convention."""

from __future__ import annotations

import os
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
        pytest.fail(f"vendored test data not found at {SHARED}")
    return SHARED


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """With ``MAPC_REQUIRE_HOSTS=1`` (set by ``.ci/run``) a skipped test fails: in CI no
    test may skip, the conformance tests against the real hosts included."""
    outcome = yield
    report = outcome.get_result()
    if report.skipped and os.environ.get("MAPC_REQUIRE_HOSTS") == "1":
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"skipped, but MAPC_REQUIRE_HOSTS=1 makes every test mandatory: {reason}"
