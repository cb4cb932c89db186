from cap_evolve import CapabilityAdapter, Rollout, Score, Task

# --- cap-evolve adapter ---

#: tasks.jsonl and traces/ are next to this file, or in this folder
#: if the variable is set
DATA_DIR_ENV = 'TAU_BENCH_AIRLINE_DATA_DIR'
#: what run_target and score pass to the runtime (capevolve_run, capevolve_score)
RUN = {"agent": AGENT, "map_source": map_source, "usage": USAGE, "tables": TABLES}
RUN.update(format=FORMAT, max_bytes=MAX_BYTES, max_line_bytes=MAX_LINE_BYTES)
SCORE = {"functions": EVALUATOR_FUNCTIONS, "evaluators": EVALUATORS, "combine": COMBINE}
SCORE.update(usage=USAGE, tables=TABLES)


class Adapter(CapabilityAdapter):
    """cap-evolve's three required methods; the optional hooks keep their defaults."""

    def __init__(self):
        self._rows = None
        self._by_id = None

    def _catalog(self):
        """The tasks in tasks.jsonl, read once, so every call sees the same tasks."""
        if self._rows is None:
            folder = capevolve_data_dir(__file__, DATA_DIR_ENV)
            rows = capevolve_catalog(os.path.join(folder, "tasks.jsonl"))
            self._by_id = {row["id"]: row for row in rows}
            self._rows = rows
        return self._rows

    def tasks(self, split):
        """The tasks of `split` (train, val, test or all), in the same order on every call."""
        rows = capevolve_split(self._catalog(), split)
        return [Task(**capevolve_task_fields(row)) for row in rows]

    def run_target(self, task, ctx, *, seed=0):
        """Replay the task's recorded trace for trial `seed` (`ctx` is not used) and map it into
        a Rollout. Never raises: failures set Rollout.error."""
        task_id = str(getattr(task, "id", task))
        try:
            rows = self._catalog()
            folder = capevolve_data_dir(__file__, DATA_DIR_ENV)
            program = dict(RUN, data_dir=folder, catalog_size=len(rows))
            program["project_root"] = None
            return Rollout(**capevolve_run(task_id, self._by_id.get(task_id), ctx, seed, program))
        except Exception as exc:  # run_target must not raise: report it as the rollout's error
            reason = f"adapter error: {capevolve_failure_text(exc)}"
            return Rollout(**capevolve_error_rollout(task_id, reason))

    def score(self, task, rollout):
        """A deterministic reward in [0, 1] with feedback that never shows the gold target
        (a rollout without a trace is scored from its output; an errored one, or a task
        tasks.jsonl does not list, gets 0.0 and the reason)."""
        task_id = str(task.id)
        try:
            self._catalog()
            row = self._by_id.get(task_id)
            known = row is not None
        except Exception:  # scoring does not need the catalog: tags and metadata are then empty
            row, known = None, True
        try:
            if not known:
                return Score(**capevolve_unknown_task_score(task_id, len(self._rows), task.target))
            fields = {"output": rollout.output, "trace": rollout.trace, "error": rollout.error}
            fields.update(cost_usd=rollout.cost_usd, tokens=rollout.tokens)
            task_scope = capevolve_task_scope(row, task_id, task.input, task.target)
            return Score(**capevolve_score(task_id, fields, task_scope, SCORE))
        except Exception as exc:  # score must not raise: reward 0 with the reason
            return Score(**capevolve_scoring_failure(task_id, exc, task.target))
