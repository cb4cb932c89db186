"""tasks() returns its tasks in a different order on every call."""
from cap_evolve import CapabilityAdapter, Rollout, Score, Task

TASKS = [Task(id="t1", input="2+2", target="four"), Task(id="t2", input="3+3", target="six")]

CALLS = [0]


class Adapter(CapabilityAdapter):
    def tasks(self, split):
        CALLS[0] += 1
        return list(TASKS) if CALLS[0] % 2 else list(reversed(TASKS))

    def run_target(self, task, ctx, *, seed=0):
        return Rollout(task_id=task.id, error="not run")

    def score(self, task, rollout):
        return Score(task_id=task.id, reward=0.0, feedback="no answer")
