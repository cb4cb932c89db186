"""Imports yaml: installed where mapc runs, absent under cap-evolve (standard library only)."""
import yaml  # noqa: F401

from cap_evolve import CapabilityAdapter, Rollout, Score, Task


class Adapter(CapabilityAdapter):
    def tasks(self, split):
        return [Task(id="t1", input="2+2", target="four")]

    def run_target(self, task, ctx, *, seed=0):
        return Rollout(task_id=task.id, error="not run")

    def score(self, task, rollout):
        return Score(task_id=task.id, reward=0.0, feedback="not scored")
