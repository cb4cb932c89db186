"""The example projects built on library specs run end to end on all three targets.

Each example `extends` a library spec and adds tasks, a tiny deterministic
fake agent (agent.py) and evaluators. For RLViz the adapter is validated on
the example's sample; for RELAI the generated runner executes the agent on
every task (as RELAI would) and each result is scored; for cap-evolve the
generated Adapter runs the agent on a task with a candidate folder and scores
the rollout, and a worse candidate scores worse.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
from library_support import ROOT, build_all
from strict_python import compile_strictly
from test_runtime_identity import check_runtime

EXAMPLES = {
    # example -> (library spec, candidate file that makes the fake agent worse)
    "atif-greeting-agent": ("harbor-atif", "terse"),
    "nemo-gym-weather": ("nemo-gym-rollouts", "guess"),
    "inspect-arithmetic": ("inspect-ai-eval-log", "sloppy"),
}
STANDIN = ROOT / "mapc" / "targets" / "capevolve" / "validator" / "standin"

RUN_CAP_EVOLVE = r"""
import importlib.util, json, os, sys
# like cap-evolve's loader: the adapter's folder first on sys.path (then the stand-in host)
sys.path[:0] = [os.path.dirname(os.path.abspath(sys.argv[2])), sys.argv[1]]
spec = importlib.util.spec_from_file_location("generated_adapter", sys.argv[2])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
adapter = module.Adapter()
task = adapter.tasks("all")[0]
rollout = adapter.run_target(task, sys.argv[3], seed=0)
score = adapter.score(task, rollout)
sys.stderr.write(json.dumps({"task": task.id, "error": rollout.error, "reward": score.reward,
                             "feedback": score.feedback}) + "\n")
"""


@pytest.fixture(scope="session")
def example_builds(tmp_path_factory):
    """Each example copied to a scratch folder and built for every target."""
    base = tmp_path_factory.mktemp("examples")
    items, jobs = [], []
    for name in EXAMPLES:
        for target in ("rlviz", "relai", "cap-evolve"):
            project = base / target / name
            shutil.copytree(ROOT / "examples" / name, project, ignore=shutil.ignore_patterns("runs", "out"))
            # RELAI adapters live inside the project they run in; the others get their own folder
            out = project if target == "relai" else project / "out"
            items.append(((name, target), project, out))
            jobs.append((project / "spec.yaml", target, out))
    return {key: (project, out, result) for (key, project, out), result in zip(items, build_all(jobs))}


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example_builds_on_a_library_spec(name):
    from mapc.spec import load_spec

    text = (ROOT / "examples" / name / "spec.yaml").read_text()
    assert f"extends: {EXAMPLES[name][0]}\n" in text
    spec, diags = load_spec(ROOT / "examples" / name / "spec.yaml")
    assert spec is not None and not diags.warnings, [d.format() for d in diags]
    assert spec.tasks and len(spec.tasks.items) >= 3 and spec.agent.command and spec.evaluators


@pytest.mark.parametrize("name", sorted(EXAMPLES))
@pytest.mark.parametrize("target", ["rlviz", "relai", "cap-evolve"])
def test_example_builds_and_validates(example_builds, name, target):
    _, _, result = example_builds[(name, target)]
    assert result.ok, ([d.format() for d in result.diagnostics], result.validation and result.validation.text)
    assert not result.diagnostics.warnings, [d.format() for d in result.diagnostics.warnings]
    # every generated Python file compiles as `python -W error` compiles it (no invalid escape)
    _, out, _ = example_builds[(name, target)]
    python = [rel for rel in result.files if rel.endswith(".py")]
    assert python
    for rel in python:
        compile_strictly((out / rel).read_text(encoding="utf-8"), rel)


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example_relai_runner_runs_the_agent_on_every_task(example_builds, name):
    from mapc.pipeline.build import resolve_target

    project, _, _ = example_builds[(name, "relai")]
    report = resolve_target("relai").validate(project, [], {"tasks": []})
    assert report.ok, report.text
    tasks = report.payload["adapters"][0]["tasks"]
    assert len(tasks) == 3 and all(t["status"] == "completed" and t["score"] == 1.0 for t in tasks), tasks
    assert sorted(p.name for p in (project / "runs").iterdir()), "the agent left its traces"


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example_cap_evolve_adapter_runs_and_scores_candidates(example_builds, name, tmp_path):
    project, out, _ = example_builds[(name, "cap-evolve")]
    prefix = name.upper().replace("-", "_")
    env = dict(os.environ, **{f"{prefix}_PROJECT_ROOT": str(project), f"{prefix}_DATA_DIR": str(out)})

    def rollout(style: str | None) -> dict:
        candidate = tmp_path / (style or "baseline")
        candidate.mkdir()
        if style:
            (candidate / "style.txt").write_text(style)
        proc = subprocess.run([sys.executable, "-c", RUN_CAP_EVOLVE, str(STANDIN), str(out / "adapter.py"),
                               str(candidate)], env=env, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0 and proc.stdout == "", proc.stderr
        return json.loads(proc.stderr.strip().splitlines()[-1])

    good, bad = rollout(None), rollout(EXAMPLES[name][1])
    assert good["error"] is None and bad["error"] is None, (good, bad)
    assert good["reward"] == 1.0 and bad["reward"] < good["reward"], (good, bad)
    assert good["feedback"] and bad["feedback"] != good["feedback"]


@pytest.mark.parametrize("target", ["rlviz", "relai", "cap-evolve"])
def test_every_example_gets_the_same_runtime_per_target(example_builds, target):
    folders = 0
    for (name, built_for), (project, out, result) in example_builds.items():
        if built_for != target:
            continue
        assert result.ok
        if target == "relai":
            prefix = f".relai/custom-adaptor/{result.spec.name}/"
            check_runtime(out / prefix, out / prefix, target, prefix)
        else:
            check_runtime(out, out, target)
        folders += 1
    assert folders >= 3
