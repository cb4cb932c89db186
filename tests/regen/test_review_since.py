"""`mapc review --since REF` and the runtime line of `mapc review`.

Each folder under tests/cases/review_since holds `before.yaml` and `after.yaml` (the spec a
person reviewed and the one they regenerated from; any other file there is a fixture the
spec names) and `expected.txt`: which files changed and the spec paths and lines named for
each hunk of the generated Python. Every case is built twice, once per spec, in ONE git
repository (one commit per side), so the git revision form is what the goldens check; the
folder and lock forms are checked on one case.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from golden import assert_golden
from mapc.pipeline import provenance
from mapc.cli import app
from mapc.tools.review import review
from mapc.tools.review_since import SinceError, cause_of, since
from regen.helpers import CASES, TINY, build_ok

SINCE_CASES = sorted(p for p in (CASES / "review_since").iterdir() if (p / "before.yaml").is_file())
GIT = shutil.which("git")


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args], cwd=repo, check=True,
                   capture_output=True, timeout=60)


def _spec_folder(case: Path, dest: Path, side: str) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    for f in TINY.glob("*.jsonl"):
        shutil.copy(f, dest / f.name)
    for f in case.iterdir():
        if f.name not in ("before.yaml", "after.yaml", "expected.txt"):
            shutil.copy(f, dest / f.name)
    shutil.copy(case / f"{side}.yaml", dest / "spec.yaml")


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    """Every case built from its before spec (committed, and copied to `trusted/`), then
    rebuilt from its after spec (committed): HEAD~1 is the build a person trusted."""
    if GIT is None:
        pytest.fail("git is needed for the --since tests")
    root = tmp_path_factory.mktemp("since")
    _git(root, "init", "-q", ".")
    for case in SINCE_CASES:
        _spec_folder(case, root / case.name / "spec", "before")
        build_ok(root / case.name / "spec" / "spec.yaml", root / case.name / "out", test=False)
        shutil.copytree(root / case.name / "out", root / case.name / "trusted")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "before")
    for case in SINCE_CASES:
        _spec_folder(case, root / case.name / "spec", "after")
        build_ok(root / case.name / "spec" / "spec.yaml", root / case.name / "out", test=False)
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "after")
    return root


def _summary(rep) -> str:
    """What a case pins: file statuses, the spec's, the runtime's, and each hunk's causes."""
    lines = [f"spec: {rep.spec['status']}", f"runtime: {rep.runtime['status']}"]
    for f in rep.files:
        if f["status"] != "unchanged":
            header = " (only its header)" if f.get("header_changed") and not f.get("hunks") else ""
            lines.append(f"{f['status']} {f['path']}{header}")
    for f in rep.files:
        for h in f.get("hunks") or []:
            if f["path"].endswith(".py"):
                named = []
                for c in h["causes"]:
                    where = f"line {c['line']}" if c["line"] is not None else f"line {c['line_before']} before"
                    changed = ",".join(str(x["line"]) for x in c.get("changed_spec_lines", []))
                    named.append(f"{c['path']} ({where}" + (f"; changed {changed})" if changed else ")"))
                lines.append(f"{f['path']} hunk: " + ("; ".join(named) or "(no spec comment)"))
    return "\n".join(lines) + "\n"


def test_there_are_since_cases():
    assert len(SINCE_CASES) >= 5


@pytest.mark.parametrize("case", SINCE_CASES, ids=[p.name for p in SINCE_CASES])
def test_since_a_git_revision_names_what_changed(case: Path, repo: Path):
    (rep,) = since(repo / case.name / "out", "HEAD~1")
    assert rep.kind == "git" and rep.runtime["status"] == "unchanged"
    assert rep.runtime["line"].startswith("runtime: unchanged (mapc ")
    assert_golden(case / "expected.txt", _summary(rep))
    # the same build compared with itself: nothing changed
    (same,) = since(repo / case.name / "out", "HEAD")
    assert all(f["status"] == "unchanged" for f in same.files) and same.spec["status"] == "unchanged"


def test_a_changed_field_is_traced_to_its_spec_line(repo: Path):
    """The regenerated adapter's hunk names the rule, and the spec line that changed in it."""
    (rep,) = since(repo / "rename-a-field" / "out", "HEAD~1")
    entry = next(f for f in rep.files if f["path"] == "adapter.py")
    assert entry["status"] == "changed" and '+            f_tool_name = el0.get("tool")' in entry["diff"] or \
        'el0.get("tool")' in entry["diff"]
    causes = [c for h in entry["hunks"] for c in h["causes"]]
    assert any(c["path"].startswith("records.events.rules[1]") and
               {"line": 20, "text": "tool_name: tool"} in c["changed_spec_lines"] for c in causes), causes
    assert not any(c["path"].startswith(("records.events.rules[0]", "records.events.rules[2]")) for c in causes)
    assert "-        tool_name: name\n+        tool_name: tool\n" in rep.spec["diff"]


def test_since_the_old_folder_and_the_old_lock(repo: Path):
    out = repo / "add-a-signal" / "out"
    (folder,) = since(out, str(repo / "add-a-signal" / "trusted"))
    (git,) = since(out, "HEAD~1")
    keep = ("path", "status", "before", "after")
    assert [{k: f[k] for k in keep} for f in folder.files] == [{k: f[k] for k in keep} for f in git.files]
    def body(diff):  # the same hunks; only the `--- a/... (REF)` labels differ
        return diff and "".join(x for x in diff.splitlines(keepends=True)[2:])

    assert [body(f.get("diff")) for f in folder.files] == [body(f.get("diff")) for f in git.files]
    assert any(f.get("diff") for f in folder.files)
    assert folder.spec["status"] == "changed" and folder.spec["diff"] == ""  # no old spec text in a folder
    (lock,) = since(out, str(repo / "add-a-signal" / "trusted" / provenance.LOCK_NAME))
    assert {f["path"]: f["status"] for f in lock.files} == {f["path"]: f["status"] for f in git.files}
    assert all("diff" not in f for f in lock.files)
    assert any("holds each file's hash, not its text" in n for n in lock.notes)


def test_since_on_the_cli_text_json_and_exit_codes(repo: Path, monkeypatch):
    runner = CliRunner()
    monkeypatch.chdir(repo)
    result = runner.invoke(app, ["review", "rename-a-field/out", "--since", "HEAD~1"])
    assert result.exit_code == 0, result.output
    assert "changed there: spec.yaml:20: tool_name: tool" in result.output
    assert "runtime: unchanged (mapc " in result.output and "+++ b/adapter.py (now)" in result.output
    result = runner.invoke(app, ["review", "rename-a-field/out", "--since", "HEAD~1", "--json"])
    payload = json.loads(result.output)
    assert payload["ok"] is True and payload["since"][0]["kind"] == "git"
    assert {"path": "adapter.py", "status": "changed"}.items() <= payload["since"][0]["files"][1].items()


@pytest.mark.parametrize("ref, message", [
    ("no-such-thing", "is not a file, a folder or a git revision of"),
    ("-output=/tmp/x", "give a lock file, an output folder or a git revision"),
    ("rename-a-field/spec/sample.jsonl", "is not a mapc lock"),
    ("rename-a-field/spec", "holds no mapc.lock.json"),
    ("HEAD~99", "is not a file, a folder or a git revision of"),
])
def test_a_bad_ref_is_one_clear_line(repo: Path, ref: str, message: str, monkeypatch):
    monkeypatch.chdir(repo)
    result = CliRunner().invoke(app, ["review", "rename-a-field/out", "--since", ref])
    assert result.exit_code == 2 and message in result.output, result.output
    assert result.output.count("\n") == 1 and "Traceback" not in result.output


def test_without_git_or_outside_a_repository(repo: Path, tmp_path: Path, monkeypatch):
    shutil.copytree(repo / "rename-a-field" / "out", tmp_path / "out")
    with pytest.raises(SinceError, match="is not in a git repository"):
        since(tmp_path / "out", "HEAD~1")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(SinceError, match="git .*is not installed"):
        since(repo / "rename-a-field" / "out", "HEAD~1")


def test_a_hostile_git_revision_reads_nothing_outside(repo: Path, tmp_path: Path):
    """At REF the output's adapter.py is a symlink to a secret and the lock lists files outside
    it: neither is read (git's symlink is a blob holding the target's name, never followed)."""
    from mapc.tools.review_since import format_since

    work = tmp_path / "r"
    shutil.copytree(repo / "rename-a-field" / "out", work / "out")
    (work / "secret.txt").write_text("mapc-since-secret-71c2")
    good = (work / "out" / "adapter.py").read_bytes()
    lock_file = work / "out" / provenance.LOCK_NAME
    good_lock = lock_file.read_text()
    lock = json.loads(good_lock)
    lock["files"].update({"../secret.txt": "0" * 64, "/etc/passwd": "0" * 64})
    lock_file.write_text(json.dumps(lock))
    (work / "out" / "adapter.py").unlink()
    (work / "out" / "adapter.py").symlink_to("../secret.txt")
    _git(work, "init", "-q", ".")
    _git(work, "add", "-A")
    _git(work, "commit", "-qm", "hostile")
    (work / "out" / "adapter.py").unlink()
    (work / "out" / "adapter.py").write_bytes(good)
    lock_file.write_text(good_lock)
    (rep,) = since(work / "out", "HEAD")
    text = format_since(rep)
    assert "mapc-since-secret-71c2" not in text and "root:x:0" not in text
    assert "adapter.py is a symbolic link or not a regular file at HEAD: not read" in text
    assert {f["path"] for f in rep.files} == set(json.loads(good_lock)["files"])


# -- the runtime line of plain `mapc review` ------------------------------------------------------
def _copy_out(repo: Path, tmp_path: Path) -> Path:
    shutil.copytree(repo / "add-a-rule", tmp_path / "w")
    return tmp_path / "w" / "out"


def _relock(out: Path, **changes) -> None:
    lock_file = out / provenance.LOCK_NAME
    lock = json.loads(lock_file.read_text())
    for part in (out / "mapc_runtime").iterdir():
        lock["files"][f"mapc_runtime/{part.name}"] = provenance.sha256(part.read_bytes())
    lock["runtime"]["sha256"] = provenance.runtime_sha256(lock["files"], "mapc_runtime")
    lock.update(changes)
    lock_file.write_text(json.dumps(lock))


def test_an_untouched_runtime_is_named_and_unchanged(repo: Path, tmp_path: Path):
    (r,) = review(_copy_out(repo, tmp_path))
    assert r.runtime["status"] == "unchanged" and r.runtime["line"].startswith("runtime: mapc ")
    assert r.runtime["sha256"] == r.runtime["published_sha256"]


def test_a_tampered_runtime_is_detected(repo: Path, tmp_path: Path, monkeypatch):
    out = _copy_out(repo, tmp_path)
    with open(out / "mapc_runtime" / "stream.py", "a") as fh:
        fh.write("\nprint('hello')\n")
    (r,) = review(out)
    assert r.runtime["status"] == "runtime_modified" and "MODIFIED after the build" in r.runtime["line"]
    assert "mapc_runtime/stream.py" in r.runtime["line"]
    assert ("mapc_runtime/stream.py", "edited") in [(f.file, f.code) for f in r.findings]
    # the lock rewritten to match: still not the runtime mapc publishes
    _relock(out)
    (r,) = review(out)
    assert r.runtime["status"] == "runtime_modified" and "is NOT the mapc" in r.runtime["line"]
    assert [f.code for f in r.findings][:1] == ["runtime_modified"]
    (s,) = since(out, str(out.parent / "trusted"))
    assert s.modified_runtime and "runtime: changed" in s.runtime["line"]
    monkeypatch.chdir(out.parent)
    result = CliRunner().invoke(app, ["review", "out"])
    assert result.exit_code == 1 and "is NOT the mapc" in result.output.splitlines()[2]
    assert CliRunner().invoke(app, ["review", "out", "--since", "trusted"]).exit_code == 1


def test_a_runtime_from_another_mapc_version_is_not_verified(repo: Path, tmp_path: Path):
    out = _copy_out(repo, tmp_path)
    _relock(out, mapc_version="0.0.1")
    (r,) = review(out)  # the same bytes as this version's runtime: recognised
    assert r.runtime["status"] == "unchanged" and "built by mapc 0.0.1, the same bytes" in r.runtime["line"]
    with open(out / "mapc_runtime" / "__init__.py", "a") as fh:
        fh.write("\n")
    _relock(out, mapc_version="0.0.1")
    (r,) = review(out)
    assert r.runtime["status"] == "runtime_unverified" and "built by another mapc version" in r.runtime["line"]
    assert "runtime_unverified" in [f.code for f in r.findings]


def test_a_missing_runtime_is_said(repo: Path, tmp_path: Path):
    out = _copy_out(repo, tmp_path)
    (out / "mapc_runtime" / "records_rt.py").unlink()
    (r,) = review(out)
    assert r.runtime["status"] == "runtime_missing" and "mapc_runtime/records_rt.py MISSING" in r.runtime["line"]


def test_a_module_planted_in_the_runtime_package_is_a_change(repo: Path, tmp_path: Path):
    out = _copy_out(repo, tmp_path)
    (out / "mapc_runtime" / "extra.py").write_text("import os\n")
    (r,) = review(out)
    assert r.runtime["status"] == "runtime_modified" and "mapc_runtime/extra.py" in r.runtime["line"]
    assert ("mapc_runtime/extra.py", "not_generated") in [(f.file, f.code) for f in r.findings]


# -- which spec comment encloses a line, unit ------------------------------------------------------
_CODE = """\
# source.probe: bounded recognition
PROBE_BYTES = 4096
PROBE_LINES = 8

OTHER = 1


def level_events(st):
    \"\"\"records.events: one event per line.\"\"\"
    for el in st:
        # records.events.rules[0] (line 14): when type == 'message'
        if el == 'message':
            emit(el)
        # records.events.rules[1] (line 18): when type == 'tool'
        elif el == 'tool':
            emit(el)
        emit_tail(el)
"""


@pytest.mark.parametrize("line, expected", [
    ("PROBE_LINES = 8", ("source.probe", None)),
    ("OTHER = 1", None),
    ("            emit(el)", ("records.events.rules[0]", 14)),
    ("        elif el == 'tool':", ("records.events.rules[1]", 18)),
    ("        emit_tail(el)", ("records.events", None)),
    ("    for el in st:", ("records.events", None)),
])
def test_the_enclosing_spec_comment(line: str, expected):
    rows = _CODE.splitlines()
    assert cause_of(rows, rows.index(line)) == expected  # the first such line
