"""score() builds a metrics catalog whose primary entry is not the reward."""
from cap_evolve import CapabilityAdapter, Rollout, Score, Task

TASKS = [Task(id="t1", input="2+2", target="four"), Task(id="t2", input="3+3", target="six")]


class Adapter(CapabilityAdapter):
    def tasks(self, split):
        return list(TASKS)

    def run_target(self, task, ctx, *, seed=0):
        return Rollout(task_id=task.id, error="not run")

    def score(self, task, rollout):
        metrics = [{"name": "reward", "value": 1.0, "primary": True, "direction": "higher"}]
        return Score(task_id=task.id, reward=0.5, feedback="half", metrics=metrics)
