"""Case folders a user (or a hostile pull request) could write: tests/cases/file_safety/<case>/.

Each case holds a spec (and whatever files it names), an optional ``make.py``
that lays out what a spec cannot say (symlinks, a FIFO; ``tamper`` edits an
output or lock between steps) and ``case.json``: the ``mapc`` commands to run
from the case's folder, each with its exit code, text it must print and text it
must never print. Next to the case folder lies ``outside/`` with a secret, and
the environment holds another: no step may print either, nothing may be copied
out of ``outside/``, and the files ``unchanged`` lists keep their bytes.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from security_support import CASES

CASE_DIRS = sorted(p for p in (CASES / "file_safety").iterdir() if (p / "case.json").is_file())
SECRET = "mapc-case-secret-4f1d9c"
ENV_SECRET = "mapc-env-secret-93b2e7"


def _hook(case: Path, name: str):
    make = case / "make.py"
    if not make.is_file():
        return None
    spec = importlib.util.spec_from_file_location(f"file_safety_{case.name.replace('-', '_')}", make)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name, None)


def _digests(folder: Path) -> dict[str, str]:
    out = {}
    for dirpath, dirs, names in os.walk(folder):
        for name in names:
            path = Path(dirpath, name)
            if path.is_file() and not path.is_symlink():
                out[path.relative_to(folder).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def test_there_are_cases_for_every_file_safety_item():
    names = {p.name for p in CASE_DIRS}
    assert {"fixture-proc-environ", "fixture-symlink-out", "diff-through-output-symlink", "tampered-relai-lock",
            "review-lock-says-root", "capevolve-into-spec-folder",
            "outputs-own-their-folder"} <= names


@pytest.mark.parametrize("case", CASE_DIRS, ids=[p.name for p in CASE_DIRS])
def test_file_safety_case(case: Path, tmp_path: Path):
    config = json.loads((case / "case.json").read_text(encoding="utf-8"))
    project, outside = tmp_path / "project", tmp_path / "outside"
    shutil.copytree(case, project, symlinks=True, ignore=shutil.ignore_patterns("case.json", "make.py"))
    outside.mkdir()
    (outside / "secret.jsonl").write_text(json.dumps({"type": "user", "text": SECRET}) + "\n")
    (outside / "tasks.jsonl").write_text(json.dumps({"id": SECRET}) + "\n")
    make = _hook(case, "make")
    if make is not None:
        make(project, outside)
    before = _digests(project)
    outside_before = _digests(outside)
    env = dict(os.environ, MAPC_CASE_TOKEN=ENV_SECRET, PYTHONDONTWRITEBYTECODE="1")
    env.pop("MAPC_ALLOW_READ", None)
    for i, step in enumerate(config["steps"]):
        if "hook" in step:
            _hook(case, step["hook"])(project, outside)
            continue
        proc = subprocess.run([sys.executable, "-m", "mapc.cli", *step["run"]], cwd=project, env=env,
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
        printed = proc.stdout + proc.stderr
        where = f"step {i} `mapc {' '.join(step['run'])}`:\n{printed}"
        assert proc.returncode == step["exit"], where
        assert "Traceback" not in printed and "internal error" not in printed, where
        assert SECRET not in printed and ENV_SECRET not in printed, where
        for text in step["expect"]:
            assert text in printed, where
        for text in step["never"]:
            assert text not in printed, where
    after = _digests(project)
    for rel in config["unchanged"]:
        assert after.get(rel) == before.get(rel), f"{rel} changed or vanished"
    leaked = [rel for rel in after if SECRET in (project / rel).read_text(errors="replace")]
    assert leaked == [], f"the secret was copied into {leaked}"
    assert _digests(outside) == outside_before
