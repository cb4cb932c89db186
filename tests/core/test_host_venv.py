"""The real cap-evolve's venv (tests/hosts.py): made with an interpreter that outlives the
test session, and made again when an earlier session left it broken."""

from __future__ import annotations

import os

import hosts


def test_a_venv_whose_interpreter_is_gone_does_not_count(tmp_path):
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "cap-evolve").write_text("#!/bin/sh\n")
    (venv / "bin" / "cap-evolve").chmod(0o755)
    os.symlink(tmp_path / "removed" / "python3", venv / "bin" / "python")  # dangling
    assert hosts._runs(venv) is False
    assert hosts._runs(tmp_path / "none") is False


def test_the_install_path_leaves_out_conftests_temporary_python(monkeypatch, tmp_path):
    temp = str(tmp_path / "mapc-tests-python3-abc123")
    monkeypatch.setenv("PATH", os.pathsep.join([temp, "/usr/bin", "/bin"]))
    env = hosts._install_env(tmp_path / "venv")
    assert env["PATH"].split(os.pathsep) == ["/usr/bin", "/bin"]
    assert env["CAPEVOLVE_VENV"] == str(tmp_path / "venv")
