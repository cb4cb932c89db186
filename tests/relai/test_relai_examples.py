"""Every example that declares tasks, evaluators and an agent builds for relai, validates, and
every result's steps form an ATIF trajectory. The relai example's README commands are real."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from relai_support import EXAMPLE, ROOT, atif_trajectory, build_project, read_result, run_runner
from mapc.spec import load_spec
from mapc.targets.relai.validator.suite import validate_project

SPECS = sorted(ROOT.glob("examples/*/spec*.yaml"))


def _runs_tasks(spec_path: Path) -> bool:
    spec, _ = load_spec(spec_path)
    return spec is not None and bool(spec.tasks and spec.evaluators and spec.agent)


TASK_SPECS = [p for p in SPECS if _runs_tasks(p)]
# specs that only map records (every example runs tasks; the library specs do not)
OTHER_SPECS = [p for p in sorted(ROOT.glob("specs/*.yaml")) if not _runs_tasks(p)]


def _project_copy(example: Path, tmp_path: Path) -> Path:
    """The example's project root (its `project/` folder if it has one), copied."""
    source = example / "project" if (example / "project").is_dir() else example
    project = tmp_path / "project"
    shutil.copytree(source, project, ignore=shutil.ignore_patterns(".relai", "runs"))
    return project


def test_the_relai_example_is_among_them():
    assert {p.name for p in TASK_SPECS if p.parent == EXAMPLE} == {"spec.yaml", "spec-agent.yaml"}


@pytest.mark.parametrize("spec_path", TASK_SPECS, ids=[f"{p.parent.name}/{p.name}" for p in TASK_SPECS])
def test_example_builds_validates_and_yields_atif(spec_path, tmp_path):
    project = _project_copy(spec_path.parent, tmp_path)
    result = build_project(spec_path, project)
    assert result.ok, [d.format() for d in result.diagnostics]
    spec, _ = load_spec(spec_path)
    payload = validate_project(project, [f"{spec.name}::*"])
    assert payload["ok"], json.dumps(payload, indent=1)[:3000]
    tasks = payload["adapters"][0]["tasks"]
    assert [t["task_id"] for t in tasks] == [t.id for t in spec.tasks.items]
    for task in spec.tasks.items:
        out = tmp_path / "results" / f"{len(task.id)}-{abs(hash(task.id))}.json"
        proc = run_runner(project, spec.name, task.id, out)
        assert proc.returncode == 0, proc.stderr
        data = read_result(out)
        assert "failure" not in data, data["failure"]
        steps = data["trace"]["steps"]
        assert steps, "an example run has conversation steps"
        trajectory = atif_trajectory(steps)
        assert len(trajectory.steps) == len(steps)
        assert {e["evaluator_id"] for e in data["evaluations"]} == {ev.id for ev in spec.evaluators}


def test_there_are_specs_without_tasks_to_check():
    assert len(OTHER_SPECS) >= 10


@pytest.mark.parametrize("spec_path", OTHER_SPECS, ids=[f"{p.parent.name}/{p.name}" for p in OTHER_SPECS])
def test_specs_without_tasks_get_a_clear_relai_error(spec_path, tmp_path):
    result = build_project(spec_path, tmp_path / "project")
    codes = {d.code for d in result.diagnostics if d.is_error}
    assert not result.ok and codes <= {"missing_tasks", "missing_evaluators", "missing_agent"} and codes
    assert all(d.line for d in result.diagnostics if d.is_error)


def test_readme_commands_name_real_adapters_tasks_and_tags(tmp_path):
    project = _project_copy(EXAMPLE, tmp_path)
    for name in ("spec.yaml", "spec-agent.yaml"):
        assert build_project(EXAMPLE / name, project).ok
    catalogs = {p.parent.name: json.loads(p.read_text())
                for p in (project / ".relai/custom-adaptor").glob("*/catalog.json")}
    readme = (EXAMPLE / "README.md").read_text(encoding="utf-8")
    selectors = re.findall(r"--custom-(tests|tags) '([^']+)'", readme)
    assert len(selectors) >= 4
    for kind, selector in selectors:
        adapter, _, rest = selector.partition("::")
        assert adapter in catalogs, selector
        tasks = catalogs[adapter]["tasks"]
        if rest == "*":
            continue
        if kind == "tests":
            assert rest in {t["id"] for t in tasks}, selector
        else:
            assert rest in {tag for t in tasks for tag in t["tags"]}, selector
