"""File safety of the commands added since round 2 (issue 28 items 1, 2, 7 and 10).

Each test is named after its item and reproduces the attack the issue describes:
``mapc test --update`` filling a git hook, ``mapc test --against`` running a module a
tampered lock points out of its folder, a module planted beside a built adapter, and a
``kill -9`` during a build leaving copies of the user's files in the temporary folder.
Case folders a user could write are under ``tests/cases/file_safety/``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mapc.pipeline import provenance
from mapc.spectest import run_tests
from security_support import kill_when, scratch_copies

SPEC = """\
mapc: 1
name: round3
source:
  format: demo-events
  container: jsonl
  probe: {require: [type]}
records:
  events:
    each: "@"
    rules:
      - when: "type == 'user'"
        kind: message
        role: "'user'"
        content: text
fixtures: [sample.jsonl]
"""
#: A fixture whose text a shell would run: what the hook would have executed.
SAMPLE = '{"type": "user", "text": "$(touch PWNED)"}\n'


def _project(tmp_path: Path, tests: str = "", *, name: str = "project") -> Path:
    """A spec folder with the spec (plus ``tests`` appended) and its fixture; returns the spec."""
    folder = tmp_path / name
    folder.mkdir()
    (folder / "sample.jsonl").write_text(SAMPLE, encoding="utf-8")
    (folder / "spec.yaml").write_text(SPEC + tests, encoding="utf-8")
    return folder / "spec.yaml"


def _mapc(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ if env is None else env, PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run([sys.executable, "-m", "mapc.cli", *args], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=300)


def _test_entry(expected: str) -> str:
    return f"tests:\n  - source: sample.jsonl\n    expected: {json.dumps(expected)}\n"


# -- item 1: `mapc test --update` writes only expected files mapc owns ----------------------
def test_item1_update_refuses_git_hook(tmp_path):
    """The issue's attack: `expected: .git/hooks/pre-commit` with an executable hook, and a
    fixture whose text is `$(touch PWNED)`; the next commit would have run it."""
    spec = _project(tmp_path, _test_entry(".git/hooks/pre-commit"))
    hook = spec.parent / ".git" / "hooks" / "pre-commit"
    hook.parent.mkdir(parents=True)
    hook.write_text("#!/bin/sh\nexit 0\n")
    hook.chmod(0o755)
    proc = _mapc("test", "--update", "spec.yaml", cwd=spec.parent)
    printed = proc.stdout + proc.stderr
    assert proc.returncode == 1, printed
    assert hook.read_text() == "#!/bin/sh\nexit 0\n" and stat.S_IMODE(hook.stat().st_mode) == 0o755
    assert "Traceback" not in printed and "internal error" not in printed
    # a located diagnostic: file, line and column of the entry's `expected`, its spec path, a fix
    assert "spec.yaml:18:15: error[unsafe_expected_file] tests[0].expected:" in printed, printed
    assert ".git" in printed and "hint:" in printed
    subprocess.run(["sh", str(hook)], cwd=spec.parent, check=True)  # what `git commit` runs
    assert not (spec.parent / "PWNED").exists()


@pytest.mark.parametrize("expected, why", [
    ("spec.yaml", "the spec"),
    ("sample.jsonl", "a fixture"),
    ("data/trace.jsonl", "a test's source"),
    (".git/config", "under .git"),
    ("sub/.git/info/attributes", "under .git"),
    ("notes.md", "not expected records"),
    ("tool.sh", "executable"),
    ("link.ndjson", "a symbolic link"),
    ("linked/new.ndjson", "a symbolic link"),
])
def test_item1_update_refuses_files_mapc_does_not_own(tmp_path, expected, why):
    extra = "  - source: data/trace.jsonl\n    expected: data/trace.expected.ndjson\n"
    spec = _project(tmp_path, _test_entry(expected) + extra)
    folder = spec.parent
    (folder / "data").mkdir()
    (folder / "data" / "trace.jsonl").write_text(SAMPLE)
    (folder / ".git").mkdir()
    (folder / ".git" / "config").write_text("[core]\n")
    (folder / "sub" / ".git" / "info").mkdir(parents=True)
    (folder / "sub" / ".git" / "info" / "attributes").write_text("")
    (folder / "notes.md").write_text("# my notes\n")
    (folder / "tool.sh").write_text('{"record_type": "run", "id": "r"}\n')  # looks like records, but runs
    (folder / "tool.sh").chmod(0o755)
    (folder / "elsewhere").mkdir()
    (folder / "elsewhere" / "kept.ndjson").write_text('{"record_type": "run", "id": "r"}\n')
    (folder / "link.ndjson").symlink_to("elsewhere/kept.ndjson")
    (folder / "linked").symlink_to("elsewhere")
    before = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file() and not p.is_symlink()}
    modes = {p: p.stat().st_mode for p in before}
    report = run_tests(spec, update=True)
    first = report.results[0]  # the entry for sample.jsonl replaces the fixture's own case
    assert first.case.declared == ("tests", 0)
    assert first.status == "error" and first.diagnostic is not None, (why, first.message)
    d = first.diagnostic
    assert d.code == "unsafe_expected_file" and d.path == "tests[0].expected" and d.line == 18 and d.hint
    assert why in d.message, d.message
    for p, data in before.items():
        if p.name != "trace.expected.ndjson":
            assert p.read_bytes() == data and p.stat().st_mode == modes[p], p
    assert not (folder / "elsewhere" / "new.ndjson").exists()


def test_item1_update_refuses_a_symlinked_folder_on_the_way(tmp_path):
    """An expected file in a folder reached through a symlink (to a folder inside the spec's)."""
    spec = _project(tmp_path)
    folder = spec.parent
    (folder / "real").mkdir()
    (folder / "real" / "t.jsonl").write_text(SAMPLE)
    (folder / "via").symlink_to("real")
    spec.write_text(SPEC.replace("fixtures: [sample.jsonl]", "fixtures: [sample.jsonl]\ntests:\n"
                                 "  - source: via/t.jsonl\n    expected: via/t.expected.ndjson\n"))
    report = run_tests(spec, update=True)
    assert [r.status for r in report.results] == ["written", "error"]
    assert "symbolic link" in report.results[1].diagnostic.message
    assert report.results[1].diagnostic.path == "tests[0].expected"
    assert sorted(p.name for p in (folder / "real").iterdir()) == ["t.jsonl"]


def test_item1_update_writes_its_own_files_0644_atomically(tmp_path):
    """New expected files are 0644 whatever the umask; mapc's own (records, evaluations,
    an empty file) are replaced, keeping their mode; no temporary file is left."""
    spec = _project(tmp_path, "tests:\n  - source: copy.jsonl\n    expected: expected/out.ndjson\n")
    folder = spec.parent
    (folder / "copy.jsonl").write_text(SAMPLE)
    old = os.umask(0o077)
    try:
        assert run_tests(spec, update=True).ok
    finally:
        os.umask(old)
    written = folder / "expected" / "out.ndjson"
    assert stat.S_IMODE(written.stat().st_mode) == 0o644
    assert stat.S_IMODE((folder / "sample.jsonl.expected.ndjson").stat().st_mode) == 0o644
    written.write_text('{"record_type": "run", "id": "edited by hand"}\n')
    written.chmod(0o600)
    (folder / "sample.jsonl.expected.ndjson").write_text("")
    report = run_tests(spec, update=True)
    assert [r.status for r in report.results] == ["written", "written"], [r.message for r in report.results]
    assert b"edited by hand" not in written.read_bytes() and stat.S_IMODE(written.stat().st_mode) == 0o600
    assert sorted(p.name for p in folder.rglob("*.tmp")) == []
    assert run_tests(spec).ok


# -- item 2: `mapc test --against DIR` runs nothing outside DIR -----------------------------
EVIL = """\
import pathlib
pathlib.Path({marker!r}).write_text("ran")  # code outside DIR was run


def map_source(src, st, emit):
    pass


MapState = SourceFile = object
MAX_BYTES = MAX_LINE_BYTES = 1
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A spec and its RLViz adapter in out/ (copied per test), and a module outside it that
    records being run."""
    base = tmp_path_factory.mktemp("against")
    spec = _project(base)
    proc = _mapc("build", "spec.yaml", "--target", "rlviz", "-o", "out", "--no-validate", cwd=spec.parent)
    assert proc.returncode == 0, proc.stderr
    return spec.parent


def _against_copy(built: Path, tmp_path: Path) -> tuple[Path, Path]:
    project = tmp_path / "project"
    shutil.copytree(built, project, symlinks=True)
    evil = tmp_path / "evil"
    evil.mkdir()
    (evil / "adapter.py").write_text(EVIL.format(marker=str(evil / "PWNED")))
    (evil / "mapc_runtime").mkdir()
    (evil / "mapc_runtime" / "__init__.py").write_text(EVIL.format(marker=str(evil / "PWNED")))
    return project, evil


def _edit_lock(out: Path, change) -> None:
    lock = json.loads((out / provenance.LOCK_NAME).read_text())
    change(lock)
    (out / provenance.LOCK_NAME).write_text(json.dumps(lock))


def _dotdot_output(out, evil):
    _edit_lock(out, lambda lock: lock.update(output="../../evil"))


def _dotdot_file(out, evil):
    _edit_lock(out, lambda lock: lock["files"].update({"../../evil/adapter.py": "0" * 64}))


def _absolute_output(out, evil):
    _edit_lock(out, lambda lock: lock.update(output=str(evil)))


def _absolute_file(out, evil):
    _edit_lock(out, lambda lock: lock["files"].update({str(evil / "adapter.py"): "0" * 64}))


def _symlinked_folder(out, evil):
    (out / "sub").symlink_to(evil)
    _edit_lock(out, lambda lock: lock["files"].update({"sub/adapter.py": "0" * 64}))


def _symlinked_file(out, evil):
    (out / "adapter.py").unlink()
    (out / "adapter.py").symlink_to(evil / "adapter.py")


def _symlinked_runtime(out, evil):
    shutil.rmtree(out / "mapc_runtime")
    (out / "mapc_runtime").symlink_to(evil / "mapc_runtime")


def _symlinked_runtime_part(out, evil):
    (out / "mapc_runtime" / "rlviz_rt.py").unlink()
    (out / "mapc_runtime" / "rlviz_rt.py").symlink_to(evil / "adapter.py")


@pytest.mark.parametrize("tamper", [_dotdot_output, _dotdot_file, _absolute_output, _absolute_file,
                                    _symlinked_folder, _symlinked_file, _symlinked_runtime,
                                    _symlinked_runtime_part])
def test_item2_against_runs_nothing_outside_dir(built, tmp_path, tamper):
    project, evil = _against_copy(built, tmp_path)
    tamper(project / "out", evil)  # ../../evil from project/out is tmp_path/evil
    proc = _mapc("test", "spec.yaml", "--against", "out", cwd=project)
    printed = proc.stdout + proc.stderr
    assert not (evil / "PWNED").exists(), printed
    assert proc.returncode == 2, printed
    assert "Traceback" not in printed and "internal error" not in printed
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "out" in lines[0] and ("outside" in lines[0] or "symbolic link" in lines[0]), printed


@pytest.mark.parametrize("lock_text, says", [
    ("[" * 100_000 + "]" * 100_000, "mapc.lock.json"),
    ('{"mapc_lock": 1, "files": []}', "mapc.lock.json"),
    ("{not json", "not JSON"),
    ("\xff\xfe", "not JSON"),
])
def test_item2_against_treats_the_lock_as_untrusted(built, tmp_path, lock_text, says):
    project, evil = _against_copy(built, tmp_path)
    (project / "out" / provenance.LOCK_NAME).write_text(lock_text, encoding="latin-1")
    proc = _mapc("test", "spec.yaml", "--against", "out", cwd=project)
    printed = proc.stdout + proc.stderr
    assert proc.returncode == 2 and "Traceback" not in printed and "internal error" not in printed, printed
    assert says in printed and len(proc.stderr.strip().splitlines()) == 1, printed


def test_item2_against_still_runs_the_adapter_inside_dir(built, tmp_path):
    project, _ = _against_copy(built, tmp_path)
    proc = _mapc("test", "spec.yaml", "--against", "out", cwd=project)
    assert proc.returncode == 0 and "ok: 1 case(s) passed" in proc.stdout, proc.stdout + proc.stderr


def test_item2_against_a_relai_adapter_folder_whose_lock_output_is_above_it(tmp_path):
    """RELAI's lock lives in the adapter's folder with output `../../..`: given that folder, the
    runner inside it is still found (the lock's paths are contained, not refused wholesale)."""
    from mapc.api import build

    folder = tmp_path / "ex"
    shutil.copytree(Path(__file__).resolve().parents[2] / "examples" / "verifiers-math", folder)
    assert build(folder / "spec.yaml", "relai", tmp_path / "proj", validate=False).ok
    adapter = tmp_path / "proj" / ".relai" / "custom-adaptor" / "verifiers-math"
    assert json.loads((adapter / provenance.LOCK_NAME).read_text())["output"] == "../../.."
    assert run_tests(folder / "spec.yaml", against=adapter).ok


# -- item 7: code planted in an output folder never runs, and is reported ------------------
#: Standard library modules an adapter (or mapc's validation of it) imports, early or late.
SHADOWED = ("json", "gzip", "hashlib", "zlib", "re", "math", "datetime", "itertools", "array", "codecs", "csv",
            "posixpath", "importlib", "inspect", "traceback", "subprocess", "signal", "struct", "io", "abc",
            "collections", "functools", "types", "textwrap", "tempfile", "shutil", "random", "threading")


def _plant(folder: Path, marker: Path, names=SHADOWED) -> None:
    """A module per name in ``folder`` that, imported, leaves ``marker`` (and says so)."""
    for name in names:
        (folder / f"{name}.py").write_text(
            f"open({str(marker)!r}, 'a').write({name!r} + '\\n')\nraise SystemExit('planted {name} ran')\n")


@pytest.mark.parametrize("target", ["rlviz", "cap-evolve"])
def test_item7_build_validation_never_runs_planted_code(tmp_path, target):
    """The issue's attack: `json.py` (and friends) beside adapter.py, then a rebuild with
    validation: the build fails naming the file, and nothing planted ran."""
    folder = tmp_path / "ex"
    example = "verifiers-math" if target == "rlviz" else "cap-evolve-tau-bench"
    shutil.copytree(Path(__file__).resolve().parents[2] / "examples" / example, folder)
    out = tmp_path / "out"
    first = _mapc("build", str(folder / "spec.yaml"), "--target", target, "-o", str(out), "--no-validate",
                  cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    marker = tmp_path / "PLANTED-RAN"
    _plant(out, marker)
    proc = _mapc("build", str(folder / "spec.yaml"), "--target", target, "-o", str(out), cwd=tmp_path)
    printed = proc.stdout + proc.stderr
    assert not marker.exists(), (marker.read_text(), printed)
    assert proc.returncode == 1, printed
    assert f"{out / 'json.py'}: error[foreign_code]" in printed and "Traceback" not in printed, printed


PLANTS = {
    "module beside the entry": ("json.py", "x = 1\n"),
    "package folder": ("json/__init__.py", "x = 1\n"),
    "extension beside a runtime part": ("mapc_runtime/probe.cpython-311-x86_64-linux-gnu.so", "\x7fELF"),
    "bytecode for a runtime part": ("mapc_runtime/__pycache__/probe.cpython-311.pyc", "\x00"),
    "legacy bytecode": ("gzip.pyc", "\x00"),
    "symlinked package": ("hashlib", None),
}


@pytest.mark.parametrize("plant", sorted(PLANTS), ids=sorted(PLANTS))
def test_item7_check_and_review_fail_on_planted_code(built, tmp_path, plant):
    project, evil = _against_copy(built, tmp_path)
    rel, text = PLANTS[plant]
    path = project / "out" / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if text is None:
        path.symlink_to(evil / "mapc_runtime")
    else:
        path.write_text(text, encoding="latin-1")
    check = _mapc("build", "spec.yaml", "--target", "rlviz", "-o", "out", "--check", cwd=project)
    assert check.returncode == 1, check.stdout + check.stderr
    assert f"{rel}: not_generated:" in check.stdout + check.stderr, check.stdout + check.stderr
    review = _mapc("review", "out", cwd=project)
    assert review.returncode == 1, review.stdout
    assert f"{rel} not_generated:" in review.stdout, review.stdout


def test_item7_check_is_current_without_planted_code(built, tmp_path):
    project, _ = _against_copy(built, tmp_path)
    (project / "out" / "notes.txt").write_text("the user's notes: not code\n")
    check = _mapc("build", "spec.yaml", "--target", "rlviz", "-o", "out", "--check", cwd=project)
    assert check.returncode == 0, check.stdout + check.stderr


def test_item7_generated_adapter_imports_nothing_planted_beside_it(tmp_path):
    """RLViz runs `python3 adapter.py`, which puts the adapter's folder first on sys.path: the
    generated entry takes it off again, so a planted stdlib name is never imported, under
    mapc's validator and under the real RLViz."""
    from hosts import require_rlviz

    real = require_rlviz()
    folder = tmp_path / "ex"
    shutil.copytree(Path(__file__).resolve().parents[2] / "examples" / "verifiers-math", folder)
    out = tmp_path / "out"
    assert _mapc("build", str(folder / "spec.yaml"), "--target", "rlviz", "-o", str(out), "--no-validate",
                 cwd=tmp_path).returncode == 0
    marker = tmp_path / "PLANTED-RAN"
    _plant(out, marker)
    (out / "testdata" / "results.jsonl.gz").write_bytes(__import__("gzip").compress(
        (out / "testdata" / "results.jsonl").read_bytes()))
    for source in ("results.jsonl", "results.jsonl.gz"):
        proc = _mapc("validate", "--target", "rlviz", str(out), str(out / "testdata" / source), cwd=tmp_path)
        assert proc.returncode == 0 and not marker.exists(), proc.stdout + proc.stderr
        proc = subprocess.run([str(real), "--json", str(out), str(out / "testdata" / source)],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["records"] == 178
        assert not marker.exists(), marker.read_text()


# -- item 10: a killed build leaves no copy of the user's files in the temporary folder -------
@pytest.mark.parametrize("target, then", [("rlviz", "build"), ("rlviz", "check"), ("cap-evolve", "build")])
def test_item10_killed_build_leaves_nothing_in_tmp_and_next_run_sweeps(tmp_path, target, then):
    """`mapc build` killed with SIGKILL while it holds a private copy of the output (validation,
    or the fixtures' record count): nothing in TMPDIR; the copy is beside the output, 0700,
    named for it; the next build (or `--check`) removes it, and nothing else."""
    folder = tmp_path / "ex"
    example = "verifiers-math" if target == "rlviz" else "cap-evolve-tau-bench"
    shutil.copytree(Path(__file__).resolve().parents[2] / "examples" / example, folder)
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "mapc.cli", "build", str(folder / "spec.yaml"), "--target", target, "-o", str(out)]
    first = subprocess.run(cmd + ["--no-validate"], capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    (out / "user-notes.txt").write_text("the user's file, copied for validation\n")
    tmpdir = tmp_path / "tmpdir"
    tmpdir.mkdir()
    env = dict(os.environ, TMPDIR=str(tmpdir), PYTHONDONTWRITEBYTECODE="1")
    seen = kill_when(cmd, lambda: scratch_copies(tmpdir, tmp_path), env=env, cwd=tmp_path)
    assert seen, "the build never made a private copy (finished too early?)"
    assert sorted(p.name for p in tmpdir.iterdir()) == []
    assert all(p.parent == tmp_path and p.name.startswith(".out.mapc-scratch-") for p in seen), seen
    assert all(stat.S_IMODE(os.lstat(p).st_mode) == 0o700 for p in seen)
    decoy = tmp_path / ".out.mapc-scratch-rlviz-plugin-users"  # a look-alike the user made: kept
    decoy.mkdir(mode=0o700)
    (decoy / ".mapc-owner").write_text((seen[0] / ".mapc-owner").read_text())
    again = cmd + (["--check"] if then == "check" else ["--no-validate"])
    proc = subprocess.run(again, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode in (0, 1), proc.stderr
    assert not any(p.exists() for p in seen), [p.name for p in tmp_path.iterdir()]
    assert decoy.is_dir() and (out / "user-notes.txt").is_file()
    assert sorted(p.name for p in tmpdir.iterdir()) == []


def test_item10_sweep_beside_takes_only_dead_scratch_folders_of_its_own(tmp_path):
    from mapc.core import scratch

    out = tmp_path / "out"
    out.mkdir()
    with scratch.scratch("live", near=out) as live:
        assert Path(live).parent == tmp_path and stat.S_IMODE(os.lstat(live).st_mode) == 0o700
        pid = os.fork()
        if pid == 0:
            try:
                with scratch.scratch("dead", near=out) as path:
                    Path(path, "copy.txt").write_text("a copy of the user's file\n")
                    os.kill(os.getpid(), signal.SIGKILL)
            finally:
                os._exit(1)
        os.waitpid(pid, 0)
        fresh = tmp_path / ".out.mapc-scratch-empty-new"  # just made by a live run: too young to judge
        old = tmp_path / ".out.mapc-scratch-empty-old"  # left by a run killed as it made it
        other = tmp_path / ".other.mapc-scratch-dead-x"  # another output's: its own build sweeps it
        for folder in (fresh, old, other):
            folder.mkdir(mode=0o700)
        os.utime(old, (time.time() - 3600, time.time() - 3600))
        removed = scratch.sweep_beside(out)
        assert sorted(n.split("-")[2] for n in removed) == ["dead", "empty"], removed
        assert Path(live).is_dir() and fresh.is_dir() and other.is_dir() and not old.exists()
