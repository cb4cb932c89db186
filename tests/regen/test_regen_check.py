"""`mapc build --check` / `--diff`: current or not, and why, per file."""

from __future__ import annotations

import json

import pytest

import mapc
from mapc.pipeline.freshness import check_build
from regen.helpers import build_ok, copy_case, mapc as run_mapc, snapshot


def _statuses(spec, out) -> dict[str, str]:
    fresh, diags = check_build(spec, "rlviz", out)
    assert fresh is not None, [d.message for d in diags]
    return {f.path: f.status for f in fresh.files if f.status != "current"}


@pytest.fixture
def built(tmp_path):
    spec = copy_case(tmp_path)
    out = tmp_path / "out"
    build_ok(spec, out)
    return spec, out


def test_a_fresh_build_is_current(built):
    spec, out = built
    fresh, _ = check_build(spec, "rlviz", out)
    assert fresh.current and len(fresh.files) == 26  # 8 + the runtime package's 18
    assert {f.status for f in fresh.files} == {"current"}


def test_spec_changed(built):
    spec, out = built
    spec.write_text(spec.read_text().replace("Events of a tiny agent", "Events of a small agent"))
    stale = _statuses(spec, out)
    assert stale == {rel: "spec_changed" for rel in
                     ("README.md", "adapter.py", "mapc.lock.json", "rlviz-plugin.yaml", "test_adapter.py")}


def test_a_fixture_change_is_a_spec_change(built):
    spec, out = built
    with open(spec.parent / "second.jsonl", "a") as fh:
        fh.write('{"type": "message", "role": "user", "text": "again"}\n')
    stale = _statuses(spec, out)
    assert stale["testdata/second.jsonl"] == "spec_changed" and stale["adapter.py"] == "spec_changed"


def test_mapc_version_changed(tmp_path, monkeypatch):
    spec = copy_case(tmp_path)
    out = tmp_path / "out"
    monkeypatch.setattr("mapc.core.version.__version__", "0.0.9")
    build_ok(spec, out)
    monkeypatch.undo()
    fresh, _ = check_build(spec, "rlviz", out)
    stale = {f.path: f for f in fresh.files if f.status != "current"}
    assert set(stale) == {"README.md", "adapter.py", "mapc.lock.json", "rlviz-plugin.yaml", "test_adapter.py"}
    assert {f.status for f in stale.values()} == {"generator_changed"}
    assert f"mapc 0.0.9 -> {mapc.__version__}" in stale["adapter.py"].message


def test_templates_changed(tmp_path, monkeypatch):
    import mapc.codegen.templating as templating

    spec = copy_case(tmp_path)
    out = tmp_path / "out"
    real = templating.template_digest
    monkeypatch.setattr(templating, "template_digest", lambda folder="": "0" * 64)
    build_ok(spec, out)
    monkeypatch.setattr(templating, "template_digest", real)
    fresh, _ = check_build(spec, "rlviz", out)
    lock = next(f for f in fresh.files if f.path == "mapc.lock.json")
    assert lock.status == "generator_changed" and "the rlviz templates changed" in lock.message


def test_edited_missing_extra_and_foreign(built):
    spec, out = built
    with open(out / "adapter.py", "a") as fh:
        fh.write("# hand edit\n")
    (out / "testdata" / "cases.json").unlink()
    spec.write_text(spec.read_text().replace("fixtures: [sample.jsonl, second.jsonl]", "fixtures: [sample.jsonl]"))
    stale = _statuses(spec, out)
    assert stale["adapter.py"] == "edited"  # edited wins over stale: a build would refuse it
    assert stale["testdata/cases.json"] == "missing"
    assert stale["testdata/second.jsonl"] == "extra"
    assert stale["README.md"] == "spec_changed"


def test_a_foreign_file_where_mapc_writes(tmp_path):
    spec = copy_case(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / "README.md").write_text("mine\n")
    stale = _statuses(spec, out)
    assert stale["README.md"] == "not_generated" and stale["adapter.py"] == "missing"


def test_moved_output(built, tmp_path):
    spec, out = built
    moved = tmp_path / "elsewhere" / "out"
    moved.parent.mkdir()
    out.rename(moved)
    stale = _statuses(spec, moved)
    assert stale["adapter.py"] == "moved" and stale["mapc.lock.json"] == "moved"


def test_check_writes_nothing(built):
    spec, out = built
    (out / "adapter.py").unlink()
    before = snapshot(out)
    check_build(spec, "rlviz", out, with_diff=True)
    assert snapshot(out) == before


# -- command line -----------------------------------------------------------------------------
def test_cli_exit_codes_reasons_and_json(built):
    spec, out = built
    ok = run_mapc("build", spec, "-t", "rlviz", "-o", out, "--check")
    assert ok.returncode == 0 and "is current (26 files)" in ok.stderr
    with open(out / "README.md", "a") as fh:
        fh.write("local note\n")
    stale = run_mapc("build", spec, "-t", "rlviz", "-o", out, "--check")
    assert stale.returncode == 1
    assert "README.md: edited: edited by hand since mapc generated it" in stale.stderr
    payload = json.loads(run_mapc("build", spec, "-t", "rlviz", "-o", out, "--check", "--json").stdout)
    assert payload["current"] is False and payload["ok"] is False
    assert {"path": "README.md", "status": "edited", "message": "edited by hand since mapc generated it"} in payload["files"]


def test_cli_diff_prints_what_a_build_would_change(built):
    spec, out = built
    with open(out / "README.md", "a") as fh:
        fh.write("local note\n")
    (out / "testdata" / "cases.json").unlink()
    proc = run_mapc("build", spec, "-t", "rlviz", "-o", out, "--diff")
    assert proc.returncode == 1
    assert "--- a/README.md\n+++ b/README.md\n" in proc.stdout and "\n-local note\n" in proc.stdout
    assert "--- /dev/null\n+++ b/testdata/cases.json\n" in proc.stdout
    payload = json.loads(run_mapc("build", spec, "-t", "rlviz", "-o", out, "--diff", "--json").stdout)
    assert "-local note" in payload["diff"]
    assert not (out / "testdata" / "cases.json").exists(), "--diff writes nothing"


def test_cli_check_exit_codes(tmp_path):
    """A spec with errors is a problem found (1, with its diagnostics); a spec that is not there
    or an unknown target is a usage error (2), as from every command (D98)."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("mapc: 1\nname: x\n")
    proc = run_mapc("build", bad, "-t", "rlviz", "-o", tmp_path / "out", "--check")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr and "error[" in proc.stderr
    payload = json.loads(run_mapc("build", bad, "-t", "rlviz", "-o", tmp_path / "out", "--check", "--json").stdout)
    assert payload["current"] is False and payload["diagnostics"][0]["file"] == str(bad)
    proc = run_mapc("build", tmp_path / "nope.yaml", "-t", "rlviz", "-o", tmp_path / "out", "--check", "--json")
    assert proc.returncode == 2 and json.loads(proc.stdout)["diagnostics"][0]["code"] == "usage"
    proc = run_mapc("build", bad, "-t", "nosuch", "-o", tmp_path / "out", "--check")
    assert proc.returncode == 2 and "unknown target 'nosuch'" in proc.stderr


def test_the_pre_commit_hooks_with_one_builds_args(tmp_path):
    """The hooks' entries with the args layout their file documents for one build (spec, target,
    output) fail on a stale output and pass after a build (with no args they act on the project
    configuration: tests/core/test_project_config.py)."""
    import shlex

    import yaml

    from regen.helpers import ROOT

    text = (ROOT / ".pre-commit-hooks.yaml").read_text()
    hooks = {h["id"]: h for h in yaml.safe_load(text)}
    hook = hooks["mapc-check"]
    assert hook["pass_filenames"] is False
    assert "#   args: [specs/my-agent.yaml, --target, rlviz, -o, plugins/my-agent]" in text
    spec = copy_case(tmp_path)
    out = tmp_path / "plugins" / "my-agent"
    entry = shlex.split(hook["entry"])
    assert entry[:2] == ["mapc", "build"]
    argv = entry[1:] + [str(spec), "--target", "rlviz", "-o", str(out)]
    assert run_mapc(*argv).returncode == 1  # nothing built yet
    build_ok(spec, out)
    assert run_mapc(*argv).returncode == 0
    # mapc-test: the spec maps its fixtures as expected (once the expected files are written)
    test_hook = hooks["mapc-test"]
    assert test_hook["pass_filenames"] is False
    test_argv = shlex.split(test_hook["entry"])[1:] + [str(spec)]
    assert run_mapc(*test_argv).returncode == 1  # no expected records yet
    assert run_mapc(*test_argv, "--update").returncode == 0
    assert run_mapc(*test_argv).returncode == 0
