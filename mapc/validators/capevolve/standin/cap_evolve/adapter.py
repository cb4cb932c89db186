"""The adapter contract: three abstract methods and defaulted optional hooks.

A stand-in of ``cap_evolve.adapter`` written from cap-evolve's
ADAPTER_CONTRACT.md. Unimplemented methods raise ``NotImplementedError``
carrying :data:`IMPLEMENT_MARKER`, which is how ``cap-evolve check`` tells a
stub from a method that merely failed on its fake probe input.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from contextlib import contextmanager
from pathlib import Path

from .types import Rollout, Score, Task

IMPLEMENT_MARKER = "IMPLEMENT ME"


class CapabilityAdapter(ABC):
    """Implement this in ``.capevolve/project/adapters/adapter.py``."""

    @abstractmethod
    def tasks(self, split: str) -> list[Task]:
        """The tasks of ``split`` (train, val, test or all); the same on every call."""
        raise NotImplementedError(f"{IMPLEMENT_MARKER}: tasks(split)")

    @abstractmethod
    def run_target(self, task: Task, ctx, *, seed: int = 0) -> Rollout:
        """Run the agent under test on ``task`` with the candidate live as ``ctx``."""
        raise NotImplementedError(f"{IMPLEMENT_MARKER}: run_target(task, ctx, *, seed)")

    @abstractmethod
    def score(self, task: Task, rollout: Rollout) -> Score:
        """A reward in [0, 1] with feedback; deterministic on a fixed rollout."""
        raise NotImplementedError(f"{IMPLEMENT_MARKER}: score(task, rollout)")

    def materialize(self, candidate_dir: Path, edits: dict | None = None) -> None:
        """Write ``{component: text}`` edits as files under ``candidate_dir`` (pure)."""
        if not edits:
            return
        root = Path(candidate_dir)
        root.mkdir(parents=True, exist_ok=True)
        for component, text in edits.items():
            dst = root / str(component)
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.write_text(text if isinstance(text, str) else str(text), encoding="utf-8")

    @contextmanager
    def live(self, candidate_dir: Path):
        """Make the candidate live for one evaluation; yields the ``ctx`` (the dir)."""
        self.apply(candidate_dir)
        yield candidate_dir

    def apply(self, candidate_dir: Path, edits: dict | None = None) -> None:
        """Back-compat hook: materialize ``edits``; nothing global by default."""
        self.materialize(candidate_dir, edits)

    def trajectories(self, split: str, ctx=None):
        """The runner's native trace directory for the last evaluation (default: None)."""
        return None

    def runner_model(self) -> str | None:
        """The consuming model id, for check's mismatch note (default: None)."""
        return None


def stub_methods(adapter: object) -> list[str]:
    """Names of the three required methods that are missing or still raise IMPLEMENT ME.

    Each is called once with throwaway arguments; any other exception means the
    method is implemented (it got far enough to fail on the fake input).
    """
    probes = {
        "tasks": lambda m: m("val"),
        "run_target": lambda m: m(Task(id="__probe__"), Path("."), seed=0),
        "score": lambda m: m(Task(id="__probe__"), Rollout(task_id="__probe__")),
    }
    stubs = []
    for name, probe in probes.items():
        method = getattr(adapter, name, None)
        if method is None:
            stubs.append(name)
            continue
        try:
            probe(method)
        except NotImplementedError as exc:
            if IMPLEMENT_MARKER in str(exc):
                stubs.append(name)
        except Exception:  # noqa: BLE001 - implemented, failed on the fake input
            pass
    return stubs
