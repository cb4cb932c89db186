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


# Files whose tests share an expensive module- or session-scoped setup (builds of every spec,
# the real hosts' verdicts): one worker runs each, so the setup is paid once, not per worker.
# (``xdist_group`` marks would say this, but ``--dist loadgroup`` does not group under pytest 9.)
# The order is the schedule's: the costliest first (CPU seconds measured with --durations), so
# no long unit starts last while the other worker idles.
ONE_WORKER_FILES = (
    "tests/library/test_init.py",
    "tests/core/test_output_contract.py",
    "tests/conformance/test_capevolve_differential.py",
    "tests/conformance/test_rlviz_conformance.py",
    "tests/regen/test_regen_review.py",
    "tests/regen/test_review_since.py",
    "tests/security/test_hostile_traces.py",
    "tests/conformance/test_rlviz_differential.py",
    "tests/spectest/test_spectest_workflow.py",
    "tests/library/test_examples.py",
    "tests/core/test_ray_data.py",  # one local Ray instance for the file (about 7 s to start)
    "tests/core/test_many_sources.py",
    "tests/security/test_injection.py",
    "tests/security/test_spec_fuzz.py",
    "tests/capevolve/test_capevolve_adapter.py",
    "tests/core/test_runtime_diagnostics.py",
    "tests/core/test_third_party_target.py",
    "tests/capevolve/test_standin.py",
)


def pytest_configure(config):
    """Compile mapc's modules once, before any worker starts: with ``PYTHONDONTWRITEBYTECODE``
    set (as on CI machines) every ``mapc`` subprocess would otherwise compile the whole package
    again (about 0.5 s of CPU per command, hundreds of commands)."""
    if hasattr(config, "workerinput"):
        return
    import compileall

    compileall.compile_dir(ROOT / "mapc", quiet=1)
    _python3_past_its_shim(config)


def _python3_past_its_shim(config) -> None:
    """When ``python3`` on PATH is a script (a pyenv shim: bash plus ``pyenv exec``, about 0.1 s
    per start), put the interpreter it hands over to first on PATH for the test session.
    Generated adapters are run as ``python3 adapter.py`` thousands of times (the real RLViz does
    the same); they still run under the plain interpreter, never the venv with mapc in it."""
    import shutil
    import tempfile

    found = shutil.which("python3")
    if found is None:
        return
    with open(found, "rb") as fh:
        if fh.read(2) != b"#!":
            return
    base = getattr(sys, "_base_executable", sys.executable)
    folder = tempfile.mkdtemp(prefix="mapc-tests-python3-")
    os.symlink(base, os.path.join(folder, "python3"))
    os.environ["PATH"] = folder + os.pathsep + os.environ.get("PATH", "")
    config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))


def pytest_collection_modifyitems(config, items):
    """The files in ``ONE_WORKER_FILES`` first, in its order; then the rest as collected."""
    rank = {path: i for i, path in enumerate(ONE_WORKER_FILES)}
    last = len(ONE_WORKER_FILES)
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], last))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """``--dist load`` (the default), except that each of ``ONE_WORKER_FILES`` is one unit of work."""
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadGroupScheduling

    config.option.loadscopereorder = False  # keep the collection's order (costliest units first)

    class Scheduling(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return path if path in ONE_WORKER_FILES else nodeid

    return Scheduling(config, log)


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
