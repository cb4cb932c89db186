"""run_target() raises for a task it does not know, as on cap-evolve check's __probe__."""
from cap_evolve import CapabilityAdapter, Rollout, Score, Task

TASKS = [Task(id="t1", input="2+2", target="four"), Task(id="t2", input="3+3", target="six")]


class Adapter(CapabilityAdapter):
    def tasks(self, split):
        return list(TASKS)

    def run_target(self, task, ctx, *, seed=0):
        answers = {"t1": "four", "t2": "six"}
        return Rollout(task_id=task.id, output=answers[task.id])

    def score(self, task, rollout):
        return Score(task_id=task.id, reward=0.0, feedback="not scored" + (rollout.error or ""))
