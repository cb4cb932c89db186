"""`mapc review`: the summary a reviewer reads, and the static scan that flags risky edits.

Each folder under tests/cases/review holds `edit.py`, code appended to a freshly built
adapter.py, and `expected.json`: the findings, with lines counted inside the edit.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from golden import assert_golden
from mapc.tools import codescan
from mapc.tools.review import format_review, review
from regen.helpers import CASES, EXAMPLES, build_ok, copy_case, mapc
from mapc.targets import get_target

REVIEW_CASES = sorted(p for p in (CASES / "review").iterdir() if (p / "edit.py").is_file())


@pytest.fixture(scope="module")
def plugin(tmp_path_factory) -> Path:
    """The tiny spec built once; tests copy the whole folder (spec and output)."""
    base = tmp_path_factory.mktemp("review")
    spec = copy_case(base)
    build_ok(spec, base / "out")
    return base


def _copy(plugin: Path, tmp_path: Path) -> Path:
    shutil.copytree(plugin, tmp_path / "w")
    return tmp_path / "w" / "out"


def test_there_are_review_cases():
    assert len(REVIEW_CASES) >= 10


@pytest.mark.parametrize("case", REVIEW_CASES, ids=[p.name for p in REVIEW_CASES])
def test_review_flags_risky_edits(case: Path, plugin: Path, tmp_path: Path):
    out = _copy(plugin, tmp_path)
    adapter = out / "adapter.py"
    base_lines = len(adapter.read_text().splitlines())
    with open(adapter, "a") as fh:
        fh.write(case.joinpath("edit.py").read_text())
    (r,) = review(out)
    actual = [{"file": f.file, "edit_line": f.line - base_lines if f.line else 0, "code": f.code,
               "message": f.message} for f in r.findings]
    assert {"file": "adapter.py", "edit_line": 0, "code": "edited",
            "message": "differs from what mapc generated (see `mapc build --diff`)"} in actual
    assert all(a["edit_line"] >= 0 for a in actual), "findings point into the edit, never at mapc's code"
    assert_golden(case / "expected.json", json.dumps(actual, indent=2) + "\n")


def test_a_clean_build_has_no_findings_and_a_full_summary(plugin: Path, tmp_path: Path):
    out = _copy(plugin, tmp_path)
    (r,) = review(out)
    assert r.findings == [] and r.spec["status"] == "matches"
    assert sorted(r.reads["paths"]) == ["args", "name", "result", "role", "text", "type", "value"]
    assert r.reads["paths"]["type"] == ["records.events.rules[0].when", "records.events.rules[1].when",
                                        "records.events.rules[2].when", "source.probe.require", "source.probe.when"]
    assert [k["kind"] for k in r.emits["event_kinds"]] == ["message", "tool", "reward"]
    assert r.emits["signals"] == ["reward"]
    assert {f["path"]: f["status"] for f in r.files} == {
        rel: "ok" for rel in ("README.md", "adapter.py", *(p for p, _ in get_target("rlviz").shared_runtime().files),
                              "rlviz-plugin.yaml", "test_adapter.py", "testdata/cases.json",
                              "testdata/sample.jsonl", "testdata/second.jsonl")}
    calls = {(b["function"], b["call"]) for b in r.executes["code"]}
    assert ("check_case", "subprocess.run") in calls  # test_adapter.py runs rlviz: mapc's own code
    text = format_review(r)
    for section in ("WHAT IT READS", "WHAT IT EMITS", "WHAT IT EXECUTES", "FILES (25) checked against the lock",
                    "FINDINGS: none"):
        assert section in text


def test_review_cli_exit_codes_text_and_json(plugin: Path, tmp_path: Path):
    out = _copy(plugin, tmp_path)
    ok = mapc("review", out)
    assert ok.returncode == 0 and "FINDINGS: none" in ok.stdout
    base_lines = len((out / "adapter.py").read_text().splitlines())
    with open(out / "adapter.py", "a") as fh:
        fh.write("import os\nos.system('id')\n")
    bad = mapc("review", out)
    assert bad.returncode == 1
    assert f"adapter.py:{base_lines + 2} shell: calls os.system()" in bad.stdout
    payload = json.loads(mapc("review", out, "--json").stdout)
    assert payload["ok"] is False
    assert {"file": "adapter.py", "line": base_lines + 2, "code": "shell",
            "message": "calls os.system(): runs a command through the shell or replaces the process"} \
        in payload["reviews"][0]["findings"]
    missing = mapc("review", tmp_path / "nope")
    assert missing.returncode == 2 and "is not a folder" in missing.stderr and "Traceback" not in missing.stderr


def test_review_without_the_spec_still_checks_and_scans(plugin: Path, tmp_path: Path):
    out = _copy(plugin, tmp_path)
    shutil.rmtree(tmp_path / "w" / "spec")
    with open(out / "test_adapter.py", "a") as fh:
        fh.write("import socket\n")
    (r,) = review(out)
    assert r.spec["status"] == "missing" and any("is not there" in n for n in r.notes)
    assert r.reads == {} and r.emits == {}
    assert [(f.file, f.code) for f in r.findings] == [("test_adapter.py", "edited"), ("test_adapter.py", "network")]


def test_review_of_a_folder_without_a_lock(tmp_path: Path):
    (tmp_path / "adapter.py").write_text("import json\nimport socket\n")
    (r,) = review(tmp_path)
    assert [f.code for f in r.findings] == ["no_lock", "network"]
    assert r.findings[1].line == 2


def test_review_of_a_python_file_mapc_did_not_generate(plugin: Path, tmp_path: Path):
    out = _copy(plugin, tmp_path)
    (out / "helper.py").write_text("import subprocess\nsubprocess.call(['rm', '-rf', '/'])\n")
    (r,) = review(out)
    assert [(f.file, f.line, f.code) for f in r.findings] == [
        ("helper.py", 0, "not_generated"), ("helper.py", 2, "subprocess")]


def test_relai_review_from_the_project_root_lists_what_runs(tmp_path: Path):
    project = tmp_path / "project"
    shutil.copytree(EXAMPLES / "relai-tau2-airline", tmp_path / "ex")
    project.mkdir()
    build_ok(tmp_path / "ex" / "spec-agent.yaml", project, target="relai")
    (r,) = review(project)
    assert r.findings == [] and r.target == "relai" and r.spec["status"] == "matches"
    assert r.executes["agent command"] == ["python3", "agent/fake_tau2_agent.py", "--task-id", "{task_id}",
                                           "--output", "{trace}"]
    assert r.executes["prepare command"] == ["python3", "agent/fake_tau2_agent.py", "--check"]
    runner = r.executes["runner (.relai/custom-adaptor/tau2-airline-agent/catalog.json)"]
    assert runner == ["python3", ".relai/custom-adaptor/tau2-airline-agent/run.py"]
    calls = {(b["function"], b["call"]) for b in r.executes["code"]}
    assert ("run_command", "subprocess.Popen") in calls and ("relai_write_result", "os.replace") in calls
    # the same review from the adapter folder itself
    (again,) = review(project / ".relai" / "custom-adaptor" / "tau2-airline-agent")
    assert again.findings == [] and again.executes["agent command"] == r.executes["agent command"]


def test_a_changed_agent_command_in_the_code_is_a_finding(tmp_path: Path):
    project = tmp_path / "project"
    shutil.copytree(EXAMPLES / "relai-tau2-airline", tmp_path / "ex")
    project.mkdir()
    build_ok(tmp_path / "ex" / "spec-agent.yaml", project, target="relai")
    run_py = project / ".relai" / "custom-adaptor" / "tau2-airline-agent" / "run.py"
    run_py.write_text(run_py.read_text().replace("agent/fake_tau2_agent.py", "agent/other.py"))
    (r,) = review(project)
    codes = [f.code for f in r.findings]
    assert codes == ["edited", "agent_command"]


# -- the scanner, unit ------------------------------------------------------------------------
def _runtime_unit(name: str, module: str = "agent_rt") -> str:
    """One function of a runtime module, with the module's standard-library imports."""
    import ast

    from mapc.core import runtime_files

    text = runtime_files.source_text(module)
    tree = ast.parse(text)
    imports = [ast.get_source_segment(text, n) for n in tree.body
               if isinstance(n, (ast.Import, ast.ImportFrom)) and not getattr(n, "level", 0)]
    node = next(n for n in tree.body if getattr(n, "name", None) == name)
    return "\n".join(imports) + "\n\n\n" + ast.get_source_segment(text, node) + "\n"


def test_mapcs_own_runner_is_expected_but_an_edited_copy_is_flagged():
    source = _runtime_unit("run_command")
    findings, behaviours = codescan.scan_source("run.py", source, target="relai")
    assert findings == [] and [b.call for b in behaviours if b.function == "run_command"] == ["subprocess.Popen"]
    edited = source.replace("start_new_session=True,", "start_new_session=True, shell=True,")
    findings, _ = codescan.scan_source("run.py", edited, target="relai")
    # an edited function is no longer mapc's: every process and file operation in it is flagged
    assert [f.code for f in findings] == ["shell"]
    extra_arg = source.replace("list(argv),", "list(argv) + ['--exfiltrate'],")
    findings, _ = codescan.scan_source("run.py", extra_arg, target="relai")
    assert [f.code for f in findings] == ["subprocess"]


@pytest.mark.parametrize("code, expected", [
    ("open(p)", []),
    ("open(p, 'rb')", []),
    ("open(p, mode)", ["file_write"]),
    ("open(p, mode='a')", ["file_write"]),
    ("import pathlib\npathlib.Path(p).open('w')", ["file_write"]),
    ("text.replace('a', 'b')", []),
    ("import os\nos.open(p, os.O_WRONLY | os.O_CREAT)", ["file_write"]),
    ("import os\nos.open(p, os.O_RDONLY)", []),
    ("import os as o\no.popen('ls')", ["shell"]),
    ("import subprocess as sp\nsp.check_output(['x'])", ["subprocess"]),
    ("import subprocess\nsubprocess.run(['x'], shell=False)", ["subprocess"]),
    ("import ctypes", ["import_not_allowed"]),
    ("from . import x", ["import_not_allowed"]),
    ("import cap_evolve", ["import_not_allowed"]),
])
def test_scanner_rules(code, expected):
    findings, _ = codescan.scan_source("x.py", code + "\n", target="rlviz")
    assert [f.code for f in findings] == expected


def test_the_host_package_is_allowed_for_its_target_only():
    assert codescan.scan_source("a.py", "from cap_evolve import Task\n", target="cap-evolve")[0] == []
    assert "cap_evolve" not in codescan.allowed_imports("rlviz")
    assert {"json", "os", "re", "subprocess"} <= codescan.allowed_imports("relai")
    assert not (codescan.NETWORK & codescan.allowed_imports("relai"))


def test_a_syntax_error_is_a_finding_not_a_crash():
    findings, _ = codescan.scan_source("x.py", "def broken(:\n", target=None)
    assert [(f.code, f.line) for f in findings] == [("syntax", 1)]


# -- every example, its own target: no false positives -------------------------------------------
def _example_builds():
    from mapc.pipeline.build import load_checked
    from mapc.targets import targets

    out = []
    order = ("cap-evolve", "relai", "rlviz")
    for i, spec in enumerate(sorted(EXAMPLES.glob("*/spec*.yaml"))):
        # one build per example: the first target whose rules it meets, starting from a
        # different target each time so that every target gets examples
        for name in order[i % 3 :] + order[: i % 3]:
            loaded, diags = load_checked(spec, targets()[name])
            if loaded is not None:
                out.append((spec, name))
                break
    return out


EXAMPLE_BUILDS = _example_builds()


def test_every_target_has_an_example():
    assert {t for _, t in EXAMPLE_BUILDS} == {"rlviz", "relai", "cap-evolve"}


@pytest.mark.parametrize("spec, target", EXAMPLE_BUILDS,
                         ids=[f"{s.parent.name}/{s.name}:{t}" for s, t in EXAMPLE_BUILDS])
def test_a_clean_build_of_every_example_reviews_clean_and_is_current(spec, target, tmp_path):
    from mapc.pipeline.freshness import check_build

    shutil.copytree(spec.parent, tmp_path / "ex")
    spec = tmp_path / "ex" / spec.name
    out = tmp_path / "out"
    out.mkdir()
    build_ok(spec, out, target=target)
    reviews = review(out)
    assert len(reviews) == 1
    assert reviews[0].findings == [] and reviews[0].spec["status"] == "matches"
    assert all(f["status"] == "ok" for f in reviews[0].files)
    fresh, _ = check_build(spec, target, out)
    assert fresh.current


def test_a_lock_listing_a_path_outside_the_output_is_a_finding(plugin: Path, tmp_path: Path):
    out = _copy(plugin, tmp_path)
    lock = json.loads((out / "mapc.lock.json").read_text())
    lock["files"]["../../../etc/passwd"] = "0" * 64
    (out / "mapc.lock.json").write_text(json.dumps(lock))
    (r,) = review(out)
    assert [(f.code, f.message) for f in r.findings] == [
        ("lock", "the lock lists '../../../etc/passwd', outside the output")]
    assert all(not f["path"].startswith("..") for f in r.files)
