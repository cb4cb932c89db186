"""``cap-evolve check``: the gate, step for step as cap-evolve's own ``check.py`` runs it.

A stand-in of ``cap_evolve.check`` (cap-evolve is Apache-2.0; this follows its
``check.py`` at commit d94fb33). What decides the verdict is kept exactly: the
order of the probes, which exceptions are caught and which end the check
(anything that is not an ``Exception``, such as ``SystemExit``, escapes as it
does in cap-evolve), the problem texts and the early returns. The differential
suite (``tests/conformance/test_capevolve_differential.py``) runs every mutant
adapter through this and through the real check and requires the same verdict.

Not reproduced: cap-evolve's consuming-model note compares model tiers from its
own model table; here ``runner_model()`` is called at the same point with the
same error handling, but no note is written (notes never change the verdict).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from .adapter import CapabilityAdapter, stub_methods
from .types import Rollout, Task


@dataclass
class CheckReport:
    ok: bool = False
    stubs: list = field(default_factory=list)
    problems: list = field(default_factory=list)
    notes: list = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"ok": self.ok, "stubs": self.stubs, "problems": self.problems, "notes": self.notes}


def load_adapter(project_dir: Path) -> CapabilityAdapter:
    """Import ``adapters/adapter.py`` (its folder first on ``sys.path``) and return ``Adapter()``."""
    project_dir = Path(project_dir)
    mod_path = project_dir / "adapters" / "adapter.py"
    if not mod_path.exists():
        raise FileNotFoundError(f"no adapter at {mod_path}")
    adir = str(mod_path.parent)
    if adir not in sys.path:
        sys.path.insert(0, adir)
    spec = importlib.util.spec_from_file_location("forge_project_adapter", mod_path)
    mod = importlib.util.module_from_spec(spec)
    assert spec and spec.loader
    spec.loader.exec_module(mod)
    if not hasattr(mod, "Adapter"):
        raise AttributeError(f"{mod_path} must define a class named `Adapter`")
    return mod.Adapter()


def _check_consuming_model(rep: CheckReport, adapter, project_dir: Path) -> None:
    """Call ``runner_model()`` where cap-evolve does; never raises an ``Exception``."""
    try:
        cfg_path = project_dir / "capevolve.yaml"
        if cfg_path.exists():
            cfg_path.read_text(encoding="utf-8")
        try:
            adapter.runner_model()
        except Exception:  # noqa: BLE001 - optional hook
            pass
    except Exception:  # noqa: BLE001 - best effort, never blocks
        pass


def run_check(project_dir: Path, *, tolerance: float = 1e-6) -> CheckReport:
    rep = CheckReport()
    try:
        adapter = load_adapter(Path(project_dir))
    except Exception as e:  # noqa: BLE001
        rep.problems.append(f"could not load adapter: {e}")
        return rep

    rep.stubs = stub_methods(adapter)
    if rep.stubs:
        rep.problems.append(
            "unimplemented adapter methods: " + ", ".join(rep.stubs)
            + " — implement them in adapters/adapter.py"
        )
        return rep

    _check_consuming_model(rep, adapter, Path(project_dir))

    try:
        t1 = adapter.tasks("val")
        t2 = adapter.tasks("val")
    except Exception as e:  # noqa: BLE001
        rep.problems.append(f"tasks('val') raised: {e}")
        return rep
    if not t1:
        rep.problems.append("tasks('val') returned an empty list")
        return rep
    if not all(isinstance(t, Task) for t in t1):
        rep.problems.append("tasks('val') must return a list[Task]")
        return rep
    if [t.id for t in t1] != [t.id for t in t2]:
        rep.problems.append("tasks('val') is not stable across calls (must be deterministic)")
    rep.notes.append(f"tasks('val') -> {len(t1)} task(s)")

    probe_task = t1[0]
    probe_rollout = Rollout(task_id=probe_task.id, output="__probe_output__")
    try:
        s1 = adapter.score(probe_task, probe_rollout)
        s2 = adapter.score(probe_task, probe_rollout)
    except Exception as e:  # noqa: BLE001
        rep.problems.append(f"score(...) raised on a probe rollout: {e}")
        return rep
    if abs(s1.reward - s2.reward) > tolerance:
        rep.problems.append(
            f"scorer is non-deterministic: {s1.reward} vs {s2.reward} on identical input"
        )
    else:
        rep.notes.append(f"scorer deterministic (probe reward={s1.reward:.4f})")

    # materialize() into a throwaway copy of the project; a failure is only a note
    try:
        with tempfile.TemporaryDirectory() as td:
            sandbox = Path(td) / "candidate"
            src = Path(project_dir)
            if src.is_dir():
                shutil.copytree(src, sandbox)
            else:
                sandbox.mkdir(parents=True, exist_ok=True)
            adapter.materialize(sandbox)
        rep.notes.append("materialize() callable (dry-run into temp copy; host untouched)")
    except Exception as e:  # noqa: BLE001
        rep.notes.append(f"materialize() probe raised (may be expected): {e}")

    # cap-evolve's opt-in degenerate-trials probe (CAPEVOLVE_N_TRIALS>1 and
    # CAPEVOLVE_CHECK_TRIAL_PROBE=1): it only ever adds a note
    if (int(os.environ.get("CAPEVOLVE_N_TRIALS", "1")) > 1
            and os.environ.get("CAPEVOLVE_CHECK_TRIAL_PROBE") == "1"):
        try:
            r1 = adapter.run_target(probe_task, Path(project_dir), seed=0)
            r2 = adapter.run_target(probe_task, Path(project_dir), seed=1)
            d1 = json.dumps(r1.to_dict(), default=str, sort_keys=True)
            d2 = json.dumps(r2.to_dict(), default=str, sort_keys=True)
            if d1 == d2:
                rep.notes.append(
                    "WARNING: two rollouts with different seeds were byte-identical "
                    "while n_trials>1 — the runner may be swallowing the per-trial seed"
                )
        except Exception as e:  # noqa: BLE001
            rep.notes.append(f"degenerate-trials probe skipped: {e}")

    rep.ok = not rep.problems
    return rep
