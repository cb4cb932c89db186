"""A correct hand-written adapter: the gate passes it (no AGENT, so no task is run)."""
from cap_evolve import CapabilityAdapter, Rollout, Score, Task

TASKS = [Task(id="t1", input="2+2", target="four"), Task(id="t2", input="3+3", target="six")]


class Adapter(CapabilityAdapter):
    def tasks(self, split):
        return [Task(id=t.id, input=t.input, target=t.target) for t in TASKS]

    def run_target(self, task, ctx, *, seed=0):
        if task.id not in {t.id for t in TASKS}:
            return Rollout(task_id=task.id, error=f"unknown task {task.id}")
        return Rollout(task_id=task.id, output="four")

    def score(self, task, rollout):
        if rollout.error:
            return Score(task_id=task.id, reward=0.0, feedback=f"infrastructure failure: {rollout.error}")
        ok = rollout.output == task.target
        return Score(task_id=task.id, reward=1.0 if ok else 0.0, feedback="right" if ok else "wrong answer")
