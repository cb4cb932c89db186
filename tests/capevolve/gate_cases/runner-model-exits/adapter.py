"""runner_model() ends the process: cap-evolve check calls it, and catches only Exception."""
import sys

from cap_evolve import CapabilityAdapter, Rollout, Score, Task


class Adapter(CapabilityAdapter):
    def tasks(self, split):
        return [Task(id="t1", input="2+2", target="four")]

    def run_target(self, task, ctx, *, seed=0):
        return Rollout(task_id=task.id, error=f"unknown task {task.id}")

    def score(self, task, rollout):
        return Score(task_id=task.id, reward=0.0, feedback=f"not scored: {rollout.error}")

    def runner_model(self):
        sys.exit("no model configured")
