"""`mapc build --target relai`: the spec rules (case directories), the files it writes, what it
never overwrites in the user's project, and byte-for-byte determinism."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from relai_support import EXAMPLE, ROOT, build_project, chat_trace, read_result, run_runner, spec_text, write_json
from relai_support import replay_project  # noqa: F401 (a fixture)
from golden import assert_golden
from mapc.pipeline.build import load_checked, resolve_target

CASES = Path(__file__).resolve().parent / "cases"
CASE_DIRS = sorted(p for p in CASES.iterdir() if (p / "spec.yaml").is_file())
ADAPTER = ".relai/custom-adaptor/chat-demo"
MANIFEST = ".relai/runtime-manifest.json"
REQUIRES = """\
agent:
  replay: "traces/{task_id}.json"
  requires:
    env:
      - {name: DEMO_API_KEY, required: true, sensitive: true, reason: model API access}
    files:
      - {path_env: DEMO_DATA, required: false, reason: extra task data}
"""


def _diagnostics(case: Path) -> list[dict]:
    _, diags = load_checked(case / "spec.yaml", resolve_target("relai"))
    out = []
    for d in diags:
        item = d.to_dict()
        item["file"] = Path(item["file"]).name
        out.append(item)
    return out


@pytest.mark.parametrize("case", CASE_DIRS, ids=[p.name for p in CASE_DIRS])
def test_relai_spec_rules(case: Path):
    actual = _diagnostics(case)
    assert actual, "every case breaks (or bends) a relai rule"
    for d in actual:
        assert d["line"] >= 1 and d["column"] >= 1 and d["message"], d
    assert_golden(case / "expected.json", json.dumps(actual, indent=2, ensure_ascii=False) + "\n")


def test_build_reports_spec_errors_with_positions_and_writes_nothing(tmp_path):
    project = tmp_path / "project"
    proc = subprocess.run([sys.executable, "-m", "mapc.cli", "build", str(CASES / "missing-agent/spec.yaml"),
                           "--target", "relai", "-o", str(project)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert "spec.yaml:1:1: error[missing_agent]" in proc.stderr and "hint:" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not project.exists() or not any(project.iterdir())


def test_build_writes_the_adapter_and_the_manifest(tmp_path):
    project = tmp_path / "project"
    result = build_project(spec_text(REQUIRES), project)
    assert result.ok, [d.format() for d in result.diagnostics]
    assert {p.name for p in (project / ADAPTER).iterdir()} >= {"catalog.json", "run.py", "tasks.jsonl", "README.md"}
    catalog = json.loads((project / ADAPTER / "catalog.json").read_text())
    assert catalog["runner"] == ["python3", f"{ADAPTER}/run.py"] and "prepare" not in catalog
    assert [t["tags"] for t in catalog["tasks"]] == [["request.create", "request-workflow", "demo"],
                                                     ["request.update", "request-workflow", "demo"]]
    assert catalog["tasks"][0]["evaluators"] == [
        {"id": "correct", "description": "The answer is right"},
        {"id": "quality", "description": "Answer quality from 0 to 5", "min_score": 0, "max_score": 5}]
    manifest = json.loads((project / MANIFEST).read_text())
    assert manifest == {
        "schema_version": "relai.runtime_manifest.v1",
        "env": [{"name": "DEMO_API_KEY", "required": True, "sensitive": True, "reason": "model API access"}],
        "files": [{"path_env": "DEMO_DATA", "required": False, "reason": "extra task data"}],
    }
    tasks = [json.loads(line) for line in (project / ADAPTER / "tasks.jsonl").read_text().splitlines()]
    assert tasks[0]["target"] == "created" and tasks[0]["input"] == "Create the item"


def test_no_manifest_without_requirements(replay_project):
    assert not (replay_project / MANIFEST).exists()


def test_prepare_comes_from_the_spec_with_project_root_as_dot(tmp_path):
    agent = 'agent:\n  replay: "t/{task_id}.json"\n  prepare: [make, -C, "{project_root}/agent", build]\n'
    project = tmp_path / "project"
    assert build_project(spec_text(agent), project).ok
    catalog = json.loads((project / ADAPTER / "catalog.json").read_text())
    assert catalog["prepare"] == ["make", "-C", "./agent", "build"]


# --- the user's files -------------------------------------------------------------------------


def test_an_adapter_folder_mapc_did_not_generate_is_not_replaced(tmp_path):
    project = tmp_path / "project"
    handmade = project / ADAPTER
    handmade.mkdir(parents=True)
    (handmade / "catalog.json").write_text('{"hand": "made"}')
    (handmade / "run.py").write_text("print('my runner')\n")
    result = build_project(spec_text(), project)
    assert not result.ok
    [conflict] = [d for d in result.diagnostics if d.code == "output_conflict"]
    assert "mapc did not generate" in conflict.message and "--force" in conflict.hint
    assert (handmade / "catalog.json").read_text() == '{"hand": "made"}'
    forced = build_project(spec_text(), project, force=True)
    assert forced.ok, [d.format() for d in forced.diagnostics]
    assert json.loads((handmade / "catalog.json").read_text())["schema_version"] == "relai.custom_adapter.v1"


def test_rebuilding_replaces_mapcs_own_adapter(replay_project):
    again = build_project(spec_text().replace("Answer quality from 0 to 5", "Quality 0-5"), replay_project)
    assert again.ok, [d.format() for d in again.diagnostics]
    assert "Quality 0-5" in (replay_project / ADAPTER / "catalog.json").read_text()


def _user_manifest(project: Path, env: list[dict]) -> bytes:
    data = {"schema_version": "relai.runtime_manifest.v1", "env": env, "files": []}
    (project / ".relai").mkdir(parents=True, exist_ok=True)
    text = json.dumps(data, indent=4).encode()
    (project / MANIFEST).write_bytes(text)
    return text


HARBOR_ENTRY = {"name": "HARBOR_TOKEN", "required": True, "sensitive": True, "reason": "Harbor runs"}
OURS = {"name": "DEMO_API_KEY", "required": True, "sensitive": True, "reason": "model API access"}


def test_a_users_manifest_is_never_overwritten_without_force(tmp_path):
    project = tmp_path / "project"
    before = _user_manifest(project, [HARBOR_ENTRY])
    result = build_project(spec_text(REQUIRES), project)
    assert not result.ok
    [conflict] = [d for d in result.diagnostics if d.code == "output_conflict"]
    assert "DEMO_API_KEY" in conflict.message and "--force to merge" in conflict.hint
    assert (project / MANIFEST).read_bytes() == before
    assert not (project / ADAPTER).exists()  # nothing half-built


def test_force_merges_the_specs_requirements_into_the_users_manifest(tmp_path):
    project = tmp_path / "project"
    _user_manifest(project, [HARBOR_ENTRY, dict(OURS, reason="old reason")])
    result = build_project(spec_text(REQUIRES), project, force=True)
    assert result.ok, [d.format() for d in result.diagnostics]
    merged = json.loads((project / MANIFEST).read_text())
    assert merged["env"] == [HARBOR_ENTRY, OURS]
    assert merged["files"] == [{"path_env": "DEMO_DATA", "required": False, "reason": "extra task data"}]


def test_a_manifest_that_already_declares_everything_is_left_untouched(tmp_path):
    project = tmp_path / "project"
    files_entry = {"path_env": "DEMO_DATA", "required": False, "reason": "extra task data"}
    data = {"schema_version": "relai.runtime_manifest.v1", "env": [HARBOR_ENTRY, OURS], "files": [files_entry]}
    (project / ".relai").mkdir(parents=True)
    text = json.dumps(data, indent=4).encode()
    (project / MANIFEST).write_bytes(text)
    result = build_project(spec_text(REQUIRES), project)
    assert result.ok, [d.format() for d in result.diagnostics]
    assert (project / MANIFEST).read_bytes() == text


def test_an_unreadable_manifest_stops_the_build_even_with_force(tmp_path):
    project = tmp_path / "project"
    (project / ".relai").mkdir(parents=True)
    (project / MANIFEST).write_text("{oops")
    for force in (False, True):
        result = build_project(spec_text(REQUIRES), project, force=force)
        assert not result.ok
        assert any("cannot be merged" in d.message for d in result.diagnostics)
    assert (project / MANIFEST).read_text() == "{oops"


def test_other_project_files_are_untouched(replay_project):
    keep = replay_project / ".relai" / "simulator.env"
    keep.write_text("X=1\n")
    other = replay_project / ".relai/custom-adaptor/other/catalog.json"
    other.parent.mkdir(parents=True)
    other.write_text("{}")
    assert build_project(spec_text(), replay_project).ok
    assert keep.read_text() == "X=1\n" and other.read_text() == "{}"


# --- determinism and goldens ----------------------------------------------------------------------


def _build_in_subprocess(spec: Path, project: Path, cwd: Path, seed: str) -> dict[str, bytes]:
    env = dict(os.environ, PYTHONHASHSEED=seed)
    proc = subprocess.run([sys.executable, "-m", "mapc.cli", "build", str(spec), "--target", "relai",
                           "-o", str(project), "--no-validate"], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    return {str(p.relative_to(project)): p.read_bytes() for p in sorted((project / ".relai").rglob("*")) if p.is_file()}


def test_same_spec_same_bytes_whatever_the_hash_seed_or_cwd(tmp_path):
    spec = EXAMPLE / "spec-agent.yaml"
    project = tmp_path / "project"
    a = _build_in_subprocess(spec, project, ROOT, "1")
    shutil.rmtree(project)
    b = _build_in_subprocess(spec, project, tmp_path, "99")
    assert a.keys() == b.keys() and len(a) >= 5
    for name in a:
        assert a[name] == b[name], name


def test_example_catalog_and_tasks_golden(tmp_path):
    project = tmp_path / "project"
    result = build_project(EXAMPLE / "spec.yaml", project)
    assert result.ok, [d.format() for d in result.diagnostics]
    folder = project / ".relai/custom-adaptor/tau2-airline"
    golden = Path(__file__).resolve().parent / "golden"
    assert_golden(golden / "tau2-airline.catalog.json", (folder / "catalog.json").read_text())
    assert_golden(golden / "tau2-airline.tasks.jsonl", (folder / "tasks.jsonl").read_text())


def test_generated_runner_reads_like_the_spec(replay_project):
    source = (replay_project / ADAPTER / "run.py").read_text()
    runtime = "".join(p.read_text() for p in sorted((replay_project / ADAPTER / "mapc_runtime").glob("*.py")))
    compile(source, "run.py", "exec")
    assert "RELAI custom-adapter runner generated by mapc" in source
    assert "import subprocess" in runtime and "shell=True" not in source + runtime
    assert "# score (line" in source  # evaluator expressions carry their spec line
    imported = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            imported |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add(node.module.split(".")[0])
    assert imported and imported - {"mapc_runtime"} <= set(sys.stdlib_module_names), imported


def test_mapcs_own_manifest_follows_the_spec_until_the_user_edits_it(tmp_path):
    project = tmp_path / "project"
    assert build_project(spec_text(REQUIRES), project).ok
    renamed = REQUIRES.replace("DEMO_API_KEY", "DEMO_TOKEN")
    again = build_project(spec_text(renamed), project)
    assert again.ok, [d.format() for d in again.diagnostics]
    names = [e["name"] for e in json.loads((project / MANIFEST).read_text())["env"]]
    assert names == ["DEMO_TOKEN"]  # written by mapc last time: replaced, no stale entry
    edited = json.loads((project / MANIFEST).read_text())
    edited["env"].append(HARBOR_ENTRY)
    (project / MANIFEST).write_text(json.dumps(edited))
    third = build_project(spec_text(REQUIRES), project)
    assert not third.ok and any(d.code == "output_conflict" for d in third.diagnostics)
    assert HARBOR_ENTRY in json.loads((project / MANIFEST).read_text())["env"]


def test_spec_strings_cannot_become_code(tmp_path):
    nasty = 'x"""; import os; os.system("echo pwned") #\\n\u2028end'
    spec = spec_text(REQUIRES.replace("model API access", json.dumps(nasty)), replace={
        "description: A tiny chat format used by mapc's relai tests.": f"description: {json.dumps(nasty)}",
        'text: "correct answer"': f"text: {json.dumps(nasty)}",
    })
    project = tmp_path / "project"
    (project / "traces/request").mkdir(parents=True)
    (project / "traces/request/create.json").write_text(json.dumps(
        {"answer": "created", "reward": 1, "quality": 3, "messages": []}))
    result = build_project(spec, project)
    assert result.ok, [d.format() for d in result.diagnostics]
    source = (project / ADAPTER / "run.py").read_text()
    tree = ast.parse(source)
    calls = {n.func.attr for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)}
    assert "system" not in calls
    out = tmp_path / "r.json"
    proc = run_runner(project, "chat-demo", "request/create", out, env={"DEMO_API_KEY": "sk-test-999"})
    assert proc.returncode == 0 and "pwned" not in proc.stdout + proc.stderr
    data = read_result(out)
    assert data["evaluations"][0]["feedback"] == nasty, data


def test_replayed_traces_missing_from_the_project_are_reported_by_the_build(tmp_path):
    """`mapc validate` fails every task whose recorded trace is not under -o: the build warns first,
    at agent.replay, naming the missing traces and the project that holds them."""
    project = tmp_path / "project"
    spec_dir = tmp_path / "spec"
    write_json(spec_dir / "recorded" / "traces/request/create.json", chat_trace())
    write_json(spec_dir / "recorded" / "traces/request/update.json", chat_trace("updated", 0, 2))
    result = build_project(spec_text(), project, spec_dir=spec_dir)
    assert result.ok
    [diag] = result.diagnostics.warnings
    assert (diag.code, diag.path, diag.line) == ("missing_replay_trace", "agent.replay", 51)
    assert "2 recorded traces that agent.replay names are not in the project" in diag.message
    assert "traces/request/create.json (task 'request/create')" in diag.message
    assert f"that holds them: `-o {os.path.relpath(spec_dir / 'recorded')}`" in diag.hint
    again = build_project(spec_text(), spec_dir / "recorded", spec_dir=spec_dir)
    assert again.ok and not again.diagnostics.warnings
