"""tasks() prints progress to stdout, where cap-evolve check writes its JSON."""
from cap_evolve import CapabilityAdapter, Rollout, Score, Task

TASKS = [Task(id="t1", input="2+2", target="four"), Task(id="t2", input="3+3", target="six")]


class Adapter(CapabilityAdapter):
    def tasks(self, split):
        print("loading tasks")
        return list(TASKS)

    def run_target(self, task, ctx, *, seed=0):
        return Rollout(task_id=task.id, error="not run")

    def score(self, task, rollout):
        return Score(task_id=task.id, reward=0.0, feedback="no answer")
