"""Every spec with tasks builds for cap-evolve and passes the REAL cap-evolve: its ``check``
gate and a real one-iteration ``cap-evolve run`` in which no rollout errored.

The specs are the examples and the library specs that declare tasks, an agent and
evaluators. Each is built the way its README says (from its project root: a replay path
or an agent command may be relative to it), with mapc's built-in validation, whose
``cap-evolve check`` verdict must be the real one's. ``run.sh`` runs every task
(``RUN_SPLIT=all``: run_target and score on the val split twice and on test once). An
agent command runs from the repository root, so ``RUN_ROOT`` brings the project's files
there; a replay adapter gets no ``RUN_ROOT``: it must find its traces in its own folder.
"""

from __future__ import annotations

import contextlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from capevolve_host import real_check, real_run
from mapc.api import build
from mapc.spec import load_spec

ROOT = Path(__file__).resolve().parents[2]
CANDIDATES = sorted(ROOT.glob("examples/*/spec*.yaml")) + sorted(ROOT.glob("specs/*.yaml"))


def _runs_tasks(path: Path) -> bool:
    spec, _ = load_spec(path)
    return spec is not None and bool(spec.tasks and spec.agent and spec.evaluators)


SPECS = [p for p in CANDIDATES if _runs_tasks(p)]


def project_root(spec_path: Path) -> Path:
    """The folder a user builds from: the example's ``project/`` when it has one."""
    project = spec_path.parent / "project"
    return project if project.is_dir() else spec_path.parent


def test_every_example_with_tasks_is_here():
    names = {f"{p.parent.name}/{p.name}" for p in SPECS}
    assert len(SPECS) >= 9 and "cap-evolve-tau-bench/spec.yaml" in names, names


@pytest.mark.parametrize("spec_path", SPECS, ids=[f"{p.parent.name}/{p.name}" for p in SPECS])
def test_builds_and_passes_the_real_check_and_run(spec_path, tmp_path, real_capevolve, real_capevolve_venv):
    spec, _ = load_spec(spec_path)
    root = project_root(spec_path)
    out = tmp_path / "adapters"
    with contextlib.chdir(root):
        result = build(spec_path, "cap-evolve", out, validate=True)
    assert result.diagnostics.ok, [d.format() for d in result.diagnostics]
    run_root = None if spec.agent.replay else root
    with ThreadPoolExecutor(max_workers=2) as pool:  # two independent real processes
        check = pool.submit(real_check, real_capevolve, real_capevolve_venv, out / "adapter.py")
        run = pool.submit(real_run, real_capevolve, real_capevolve_venv, out, run_root)
        check, run = check.result(), run.result()

    assert check["ok"] is True, check
    mapc_check = result.validation.payload["cap-evolve check"]
    assert mapc_check["ok"] is True and mapc_check["problems"] == check["problems"] == []
    assert result.ok, result.validation.text
    beyond = [c for c in result.validation.payload["checks"] if not c["contract"]]
    assert len(beyond) >= 12 and all(c["ok"] for c in beyond), beyond

    assert run["ok"] is True and run["strict_ok"] is True, {k: v for k, v in run.items() if k != "stderr"}
    assert run["errored_rollouts"] == 0 and run["n_tasks_all"] == len(spec.tasks.items)
    assert run["run_target_calls"] == run["score_calls"] == 3 * len(spec.tasks.items), run["rollouts"]
    rewards = run["mean_reward"]
    assert rewards and all(isinstance(r, float) and 0.0 <= r <= 1.0 for r in rewards.values()), rewards
