"""In CI (``MAPC_REQUIRE_HOSTS=1``) a skipped test fails, so no conformance test can skip."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def _run_skipping_test(tmp_path: Path, require: str | None) -> subprocess.CompletedProcess:
    (tmp_path / "conftest.py").write_text((TESTS / "conftest.py").read_text())
    (tmp_path / "shared_paths.py").write_text((TESTS / "shared_paths.py").read_text())
    (tmp_path / "test_skip.py").write_text(textwrap.dedent('''
        import pytest

        def test_host_absent():
            pytest.skip("the real host is not here")
    '''))
    env = {"PATH": "/usr/bin:/bin"}
    if require is not None:
        env["MAPC_REQUIRE_HOSTS"] = require
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


def test_a_skip_fails_when_hosts_are_required(tmp_path):
    run = _run_skipping_test(tmp_path, "1")
    assert run.returncode == 1, run.stdout
    assert "MAPC_REQUIRE_HOSTS=1 makes every test mandatory" in run.stdout
    assert "the real host is not here" in run.stdout


def test_a_skip_stays_a_skip_outside_ci(tmp_path):
    run = _run_skipping_test(tmp_path, None)
    assert run.returncode == 0, run.stdout
    assert "1 skipped" in run.stdout


def test_the_hosts_are_found(real_rlviz, real_capevolve):
    assert real_rlviz.is_file()
    assert (real_capevolve / "check.sh").is_file()
