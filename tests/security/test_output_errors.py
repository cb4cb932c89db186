"""The file system says no: a plain diagnostic naming the folder (exit 1), the old output intact.

Disk full, an output that is a mount point, ``-o file/sub``, an unwritable
(read-only) parent and a staging folder that vanishes mid-build used to end in
``internal error`` (exit 2). Mounted file systems inside an output are refused
instead of being emptied into a hidden leftover; a rebuild as root keeps another
user's folders theirs; validation's private copies are removed by the next run
after a ``kill -9``.

Real failures where the machine allows them (tiny tmpfs mounts, as root, like
CI), fault injection otherwise (``os.write`` refusing with ENOSPC, a stage that
vanishes).
"""

from __future__ import annotations

import errno
import os
import shutil
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from mapc.pipeline import output
from mapc.core import scratch
from mapc.api import build
from security_support import CASES, kill_when, scratch_copies

HOSTILE = CASES / "hostile_traces"
LEFTOVER = (".mapc-new-", ".mapc-old-")


def _spec(folder: Path, version: str = "0.1.0") -> Path:
    (folder / "traces").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(HOSTILE / "fixture.jsonl", folder / "fixture.jsonl")
    shutil.copyfile(HOSTILE / "fixture.jsonl", folder / "traces" / "a.jsonl")
    (folder / "tasks.jsonl").write_text('{"id": "a"}\n', encoding="utf-8")
    text = (HOSTILE / "spec-jsonl.yaml").read_text(encoding="utf-8")
    (folder / "spec.yaml").write_text(text.replace("name: hostile-jsonl", f"name: hostile-jsonl\nversion: {version}"))
    return folder / "spec.yaml"


def _built(tmp_path: Path, out: Path | None = None) -> Path:
    """A first build (spec version 0.1.0) into ``out`` (default ``tmp_path / "out"``)."""
    out = tmp_path / "out" if out is None else out
    assert build(_spec(tmp_path / "spec"), "rlviz", out, validate=False).ok
    return out


def _rebuild(tmp_path: Path, out: Path):
    """A second build, with other bytes (spec version 0.2.0), into the same ``out``."""
    return build(_spec(tmp_path / "spec", "0.2.0"), "rlviz", out, validate=False)


def _leftovers(folder: Path) -> list[str]:
    """Staging or old-output folders a build left beside its output."""
    return [p.name for p in folder.iterdir() if any(m in p.name for m in LEFTOVER)]


def _state(folder: Path) -> dict[str, tuple]:
    """Every entry under ``folder``: bytes of files, owner and mode of everything."""
    out = {}
    for dirpath, dirs, names in os.walk(folder):
        for name in dirs + names:
            path = Path(dirpath, name)
            info = os.lstat(path)
            data = path.read_bytes() if stat.S_ISREG(info.st_mode) else None
            out[path.relative_to(folder).as_posix()] = (data, info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode))
    return out


def _errors(result) -> list:
    return [d for d in result.diagnostics.errors]


def _assert_plain(result, folder: Path, *words: str) -> None:
    errors = _errors(result)
    assert not result.ok and len(errors) == 1, [d.format() for d in result.diagnostics]
    text = errors[0].format()
    assert "internal error" not in text and str(folder) in text, text
    for word in words:
        assert word in text, text


@pytest.fixture
def mount(tmp_path):
    """``mount(path, size, options)``: a tmpfs at ``path``, unmounted at the end (root only)."""
    mounted = []

    def _mount(path: Path, size: str = "1m", options: str = "") -> Path:
        path.mkdir(parents=True, exist_ok=True)
        opts = f"size={size}" + (f",{options}" if options else "")
        proc = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(path)], capture_output=True, text=True)
        if proc.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here ({proc.stderr.strip()}); CI runs as root and can")
        mounted.append(path)
        return path

    yield _mount
    for path in reversed(mounted):
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


# -- disk full ------------------------------------------------------------------------------
def test_disk_full_is_a_plain_error_and_the_old_output_stays(tmp_path, mount):
    disk = mount(tmp_path / "disk", "1m")
    out = _built(tmp_path, disk / "out")
    before = _state(disk)
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o644)
    try:  # fill the file system to the last byte
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError as exc:
        assert exc.errno == errno.ENOSPC
    finally:
        os.close(fd)
    before["filler"] = _state(disk)["filler"]
    result = _rebuild(tmp_path, out)  # a build with other bytes
    _assert_plain(result, out, "No space left on device", "unchanged")
    assert _state(disk) == before


def test_a_write_refused_midway_leaves_the_old_output(tmp_path, monkeypatch):
    """The same through fault injection (any user): the third write of the build fails."""
    out = _built(tmp_path)
    (out / "notes.txt").write_text("the user's notes\n")
    before = _state(out)
    calls = []
    real_write = output._write_all

    def failing(fd, data):
        calls.append(fd)
        if len(calls) == 3:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_write(fd, data)

    monkeypatch.setattr(output, "_write_all", failing)
    result = _rebuild(tmp_path, out)
    _assert_plain(result, out, "No space left on device", "unchanged", "free some space")
    assert _state(out) == before
    assert _leftovers(tmp_path) == []


# -- where the output is ----------------------------------------------------------------------
def test_an_output_that_is_a_mount_point(tmp_path, mount):
    out = mount(tmp_path / "out", "1m")
    (out / "kept.txt").write_text("on the mounted file system\n")
    result = build(_spec(tmp_path / "spec"), "rlviz", out, validate=False)
    _assert_plain(result, out, "mount point", "build into a folder inside it")
    assert sorted(p.name for p in out.iterdir()) == ["kept.txt"]
    assert _leftovers(tmp_path) == []


def test_a_mount_inside_the_output_is_refused_not_emptied(tmp_path, mount):
    out = _built(tmp_path)
    cache = mount(out / "cache", "1m")
    (cache / "big.bin").write_bytes(b"x" * 1000)
    before = _state(tmp_path)
    result = _rebuild(tmp_path, out)
    after = _state(tmp_path)
    _assert_plain(result, out, "cache is a mount point", "unmount it")
    assert (cache / "big.bin").read_bytes() == b"x" * 1000
    assert {k: v for k, v in after.items() if not k.startswith("spec")} == \
        {k: v for k, v in before.items() if not k.startswith("spec")}
    assert _leftovers(tmp_path) == []


def test_an_output_below_a_file(tmp_path):
    (tmp_path / "notes.txt").write_text("a file, not a folder\n")
    proc = subprocess.run([sys.executable, "-m", "mapc.cli", "build", str(_spec(tmp_path / "spec")), "--target",
                           "rlviz", "-o", str(tmp_path / "notes.txt" / "sub")], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert "notes.txt is not a folder" in proc.stderr and "internal error" not in proc.stderr
    assert (tmp_path / "notes.txt").read_text() == "a file, not a folder\n"


def test_a_read_only_parent(tmp_path, mount):
    disk = mount(tmp_path / "disk", "1m")
    out = _built(tmp_path, disk / "out")
    before = _state(disk)
    subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
    result = _rebuild(tmp_path, out)
    _assert_plain(result, out, "Read-only file system", "unchanged")
    assert _state(disk) == before


def test_an_unwritable_parent_through_fault_injection(tmp_path, monkeypatch):
    out = _built(tmp_path)
    before = _state(out)

    def refused(real, held):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(real.parent))

    monkeypatch.setattr(output, "_make_stage", refused)
    result = _rebuild(tmp_path, out)
    _assert_plain(result, out, "Permission denied", "unchanged", "fix its permissions")
    assert _state(out) == before


def test_a_stage_that_vanishes_midway(tmp_path, monkeypatch):
    out = _built(tmp_path)
    (out / "notes.txt").write_text("the user's notes\n")
    before = _state(out)
    real_carry = output._carry

    def vanishing(src, dst, *args):
        shutil.rmtree(dst)  # something else removes mapc's staging folder
        return real_carry(src, dst, *args)

    monkeypatch.setattr(output, "_carry", vanishing)
    result = _rebuild(tmp_path, out)
    _assert_plain(result, out, "unchanged", "build again")
    assert _state(out) == before


# -- ownership ------------------------------------------------------------------------------
@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="only root can rebuild another user's folder")
def test_a_rebuild_as_root_keeps_the_users_folders_theirs(tmp_path):
    out = _built(tmp_path)
    (out / "data").mkdir()
    (out / "data" / "mine.txt").write_text("the user's file\n")
    for path in (out, out / "data", out / "data" / "mine.txt", out / "testdata"):
        os.chown(path, 4321, 4321)
    os.chmod(out, 0o750)
    os.chmod(out / "data", 0o700)
    assert _rebuild(tmp_path, out).ok
    for rel, mode in (("", 0o750), ("data", 0o700), ("testdata", None)):
        info = os.lstat(out / rel)
        assert (info.st_uid, info.st_gid) == (4321, 4321), rel
        assert mode is None or stat.S_IMODE(info.st_mode) == mode, rel
    assert os.lstat(out / "data" / "mine.txt").st_uid == 4321
    assert os.lstat(out / "adapter.py").st_uid == 4321  # new files in the user's folder are the user's


# -- validation's private copies ------------------------------------------------------------
def test_validation_copies_are_private_and_swept_after_a_kill(tmp_path):
    """`mapc validate` killed (-9) while it holds its copy of the output (beside the output, never
    in TMPDIR): the copy is private, and the next run removes it."""
    spec = _spec(tmp_path / "spec")
    out = tmp_path / "out"
    assert build(spec, "rlviz", out, validate=False, test=False).ok
    (out / "user-notes.txt").write_text("the user's file, copied for validation\n")
    tmpdir = tmp_path / "tmpdir"
    tmpdir.mkdir()
    env = dict(os.environ, TMPDIR=str(tmpdir), PYTHONDONTWRITEBYTECODE="1")
    validate = [sys.executable, "-m", "mapc.cli", "validate", "--target", "rlviz", str(out)]
    left = kill_when(validate, lambda: scratch_copies(tmp_path), env=env)
    assert left, "validation never made a private copy (finished too early?)"
    assert list(tmpdir.iterdir()) == []
    assert all(stat.S_IMODE(os.lstat(p).st_mode) == 0o700 for p in left)
    assert all(p.exists() for p in left)  # the kill left them behind
    again = subprocess.run(validate, env=env, capture_output=True, text=True, timeout=300)
    assert not any(p.exists() for p in left), (again.stderr, [p.name for p in tmp_path.iterdir()])


def test_sweep_keeps_live_scratch_folders(tmp_path):
    with scratch.scratch("unit") as live:
        pid = os.fork()
        if pid == 0:
            try:
                with scratch.scratch("dead") as path:
                    Path(path, "copy.txt").write_text("a copy of the user's file\n")
                    os.kill(os.getpid(), signal.SIGKILL)
            finally:
                os._exit(1)
        os.waitpid(pid, 0)
        removed = scratch.sweep()
        assert any(name.startswith("mapc-dead-") for name in removed)
        assert Path(live).is_dir() and os.path.basename(live) not in removed
