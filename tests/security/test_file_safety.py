"""Files are safe: builds write only inside `-o DIR`, atomically; adapters open sources read-only.

What tests/regen already proves for rlviz (a build killed at every write step
leaves the previous output intact, generated paths cannot escape the output) is
proved here for the relai and cap-evolve layouts too (a shared project folder, a
single owned file, copied traces), together with: nothing outside the output
changes during a build even when the spec's files live elsewhere, a symlink in
the output is never written through, and the generated code opens its sources
only for reading.
"""

from __future__ import annotations

import builtins
import json
import os
import re
import shutil
from pathlib import Path

import pytest

from mapc.pipeline import output
from security_support import CASES

HOSTILE = CASES / "hostile_traces"
LEFTOVER = re.compile(r"\.mapc-(new|old)-")


def _project(tmp_path: Path, *, requires: bool = False) -> Path:
    """The jsonl hostile-trace spec in a project of its own (two tasks, recorded traces)."""
    project = tmp_path / "project"
    (project / "traces").mkdir(parents=True)
    text = (HOSTILE / "spec-jsonl.yaml").read_text(encoding="utf-8")
    if requires:
        text = text.replace('  replay: "traces/{task_id}.jsonl"', '  replay: "traces/{task_id}.jsonl"\n  requires:\n'
                            '    env: [{name: HOSTILE_TOKEN, required: false, reason: a demo requirement}]')
    (project / "spec.yaml").write_text(text, encoding="utf-8")
    shutil.copyfile(HOSTILE / "fixture.jsonl", project / "fixture.jsonl")
    (project / "tasks.jsonl").write_text('{"id": "a"}\n{"id": "b"}\n', encoding="utf-8")
    for task in ("a", "b"):
        shutil.copyfile(HOSTILE / "fixture.jsonl", project / "traces" / f"{task}.jsonl")
    return project / "spec.yaml"


def _snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` except the staging leftovers a crash may leave."""
    out = {}
    for dirpath, dirs, names in os.walk(folder):
        dirs[:] = [d for d in dirs if not LEFTOVER.search(d)]
        for name in names:
            if not LEFTOVER.search(name):
                p = Path(dirpath, name)
                out[p.relative_to(folder).as_posix()] = p.read_bytes()
    return out


def _leftovers(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if LEFTOVER.search(p.name))


def _restore(folder: Path, snap: dict[str, bytes]) -> None:
    for rel in set(_snapshot(folder)) - set(snap):
        (folder / rel).unlink()
    for rel, data in snap.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(data)


def _build_in_child(spec: Path, target: str, out: Path, crash_at: int) -> int:
    pid = os.fork()
    if pid == 0:  # the child ends abruptly (os._exit, no cleanup) at write step `crash_at`
        code = 3
        try:
            os.environ[output.CRASH_ENV] = str(crash_at)
            output._steps = 0
            from mapc.api import build

            code = 0 if build(spec, target, out, validate=False).ok else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


@pytest.mark.parametrize("target", ["relai", "cap-evolve"])
def test_a_build_killed_at_any_step_leaves_the_previous_output_intact(tmp_path, target):
    from mapc.api import build

    spec = _project(tmp_path, requires=target == "relai")
    project = spec.parent
    out = project if target == "relai" else project / "adapter"
    assert build(spec, target, out, validate=False).ok
    (project / "notes.md").write_text("the user's notes\n")
    spec.write_text(spec.read_text().replace("name: hostile-jsonl", "name: hostile-jsonl\nversion: 0.2.0"))
    old = _snapshot(project)  # the first build's output (the spec already changed)
    new = None
    states = []
    for step in range(1, 80):
        code = _build_in_child(spec, target, out, step)
        if code == 0:
            new = _snapshot(project)
            break
        assert code == 86, f"step {step}: the child ended with {code}, not the simulated crash"
        states.append(_snapshot(project))
        _restore(project, old)
    assert new is not None and new != old and new["notes.md"] == b"the user's notes\n"
    assert len(states) >= 3, "the writer has several steps to interrupt"
    for step, state in enumerate(states, start=1):
        assert state in (old, new), f"a crash at step {step} left a mix of old and new files"
    assert states[0] == old
    if target == "relai":
        assert ".relai/runtime-manifest.json" in new  # a single owned file, replaced atomically too
    assert _leftovers(project) == [], "the completed build removed every staging leftover"


@pytest.mark.parametrize("target", ["rlviz", "relai", "cap-evolve"])
def test_a_build_changes_nothing_outside_its_output(tmp_path, target):
    """The spec and its fixture live elsewhere (the fixture in a sibling folder, named with
    `..` and allowed with --allow-read); only the output folder changes."""
    from mapc.api import build
    from mapc.core.safeio import allowing

    spec = _project(tmp_path)
    project = spec.parent
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.move(project / "fixture.jsonl", elsewhere / "fixture.jsonl")
    spec.write_text(spec.read_text().replace("fixtures: [fixture.jsonl]", "fixtures: [../elsewhere/fixture.jsonl]"))
    out = project if target == "relai" else tmp_path / "out"
    before = _snapshot(tmp_path)
    with allowing([elsewhere]):
        result = build(spec, target, out)
    assert result.ok, [d.format() for d in result.diagnostics]
    after = _snapshot(tmp_path)
    prefix = "project/.relai/" if target == "relai" else "out/"
    changed = {rel for rel in set(before) | set(after) if before.get(rel) != after.get(rel)}
    assert changed and all(rel.startswith(prefix) for rel in changed), sorted(changed)
    if target == "rlviz":
        assert "out/testdata/fixture.jsonl" in after  # copied by its name, never by its `..` path


def test_a_symlink_in_the_output_is_never_written_through(tmp_path):
    from mapc.api import build

    spec = _project(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    (out / "testdata").symlink_to(outside, target_is_directory=True)
    for force in (False, True):
        result = build(spec, "rlviz", out, force=force)
        assert not result.ok and [d.code for d in result.diagnostics.errors] == ["output_conflict"]
        assert "testdata" in result.diagnostics.errors[0].message
    assert list(outside.iterdir()) == []


def test_generated_code_opens_sources_read_only(tmp_path, monkeypatch, capsysbinary):
    """The RLViz adapter, run in process with `open` and `os.open` watched, opens the source,
    its sibling files and the request only for reading (and writes nothing but stdout)."""
    from mapc.api import build

    spec = _project(tmp_path)
    spec.write_text(spec.read_text().replace("  probe: {require: [type]}",
                                             "  probe: {require: [type]}\n  siblings: {meta: [meta.json]}"))
    out = tmp_path / "out"
    assert build(spec, "rlviz", out, validate=False).ok
    source = spec.parent / "traces" / "a.jsonl"
    (source.parent / "meta.json").write_text('{"x": 1}')
    request = tmp_path / "request.json"
    request.write_text(json.dumps({"api_version": "rlviz.dev/v1alpha1", "operation": "stream",
                                   "source": {"path": str(source), "root": str(source.parent), "kind": "file"}}))
    opened = []
    real_open, real_os_open = builtins.open, os.open

    def watched_open(file, mode="r", *args, **kwargs):
        opened.append((str(file), mode))
        return real_open(file, mode, *args, **kwargs)

    def watched_os_open(path, flags, *args, **kwargs):
        opened.append((str(path), flags))
        return real_os_open(path, flags, *args, **kwargs)

    from mapc.codegen.program import load_module, read_runtime

    # the adapter and the runtime module next to it, both with `open` watched
    namespace = load_module((out / "adapter.py").read_text(encoding="utf-8"), "adapter_under_test",
                            read_runtime(out),
                            builtins={**builtins.__dict__, "open": watched_open})
    monkeypatch.setattr(os, "open", watched_os_open)
    before = source.read_bytes(), os.stat(source).st_mtime_ns
    entry = [namespace[name] for name in ("probe", "map_source", "MAX_BYTES", "MAX_LINE_BYTES")]
    assert namespace["rlviz_main"](["stream", "--request", str(request)], *entry) == 0
    captured = capsysbinary.readouterr()
    assert captured.out.endswith(b'"warnings":0}\n'), captured.err
    files = {name for name, _ in opened}
    assert str(source) in files and str(request) in files and str(source.parent / "meta.json") in files
    for name, mode in opened:
        if isinstance(mode, str):
            assert set(mode) <= {"r", "b", "t"}, (name, mode)
        else:
            assert mode & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND) == 0, (name, mode)
    assert (source.read_bytes(), os.stat(source).st_mtime_ns) == before
