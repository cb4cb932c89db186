"""Run a spec's test cases in-process: the same program ``mapc run`` and the adapters run.

Records pass through JSON on the way out, as they do in an adapter's stream, so
what is compared is what a host would read. Each record also keeps where it was
emitted (the generated function and line), which ``origins`` turns into the spec
node behind it. Evaluation uses the runtime's own units (trajectory pick, scoring,
reward, usage, metrics) with seed 0, as cap-evolve's first trial scores it.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

from mapc.spec import ir

_EVAL_UNITS = ("collect_records", "group_trajectories", "capevolve_pick", "capevolve_task_scope",
               "evaluation_scope", "score_evaluators", "capevolve_reward", "capevolve_usage",
               "capevolve_metrics", "SourceFile", "MapState", "one_line")


@dataclass
class MappingRun:
    records: list[dict] = field(default_factory=list)
    emitted_at: list[tuple[str, int]] = field(default_factory=list)  # (function, line) per record
    warnings: int = 0
    messages: list[str] = field(default_factory=list)
    error: str | None = None


class Executor:
    """One spec's programs, compiled once and run per case."""

    def __init__(self, spec: ir.Spec):
        self.spec = spec
        self._mapping: tuple[str, dict] | None = None
        self._evaluation: dict | None = None

    @property
    def mapping_text(self) -> str:
        return self._mapping_program()[0]

    def _mapping_program(self) -> tuple[str, dict]:
        if self._mapping is None:
            self._mapping = _compiled(self.spec)
        return self._mapping

    def map(self, trace: Path) -> MappingRun:
        """Map ``trace``; a failure is the run's one-line ``error``, never an exception."""
        _, ns = self._mapping_program()
        run = MappingRun()
        getframe = sys._getframe
        dumps, loads = json.dumps, json.loads

        def emit(record):
            frame = getframe(1)
            while frame.f_code.co_filename != _PROGRAM_FILE and frame.f_back is not None:
                frame = frame.f_back  # emitted by a runtime unit the program called
            run.records.append(loads(dumps(record, ensure_ascii=False, allow_nan=False)))
            run.emitted_at.append((frame.f_code.co_name, frame.f_lineno))

        st = ns["MapState"]()
        try:
            src = ns["SourceFile"](str(trace), None, ns["MAX_BYTES"], ns["MAX_LINE_BYTES"])
            ns["map_source"](src, st, emit)
        except Exception as exc:  # the one line an adapter would print
            run.error = ns["one_line"](exc)
        run.warnings, run.messages = st.warnings, list(st.messages)
        return run

    def evaluate(self, trace: Path, task_id: str) -> tuple[dict | None, str | None]:
        """The evaluation of ``task_id`` on its recorded trace: ``(result, None)`` or ``(None, error)``."""
        ns = self._evaluation_namespace()
        rows = {row["id"]: row for row in _task_rows(self.spec)}
        row = rows[task_id]
        task = ns["capevolve_task_scope"](row, task_id, row.get("input"), row.get("target"))
        try:
            src = ns["SourceFile"](str(trace), None, ns["MAX_BYTES"], ns["MAX_LINE_BYTES"])
            records, st = ns["collect_records"](ns["map_source"], src)
        except Exception as exc:
            return None, f"cannot map the trace: {ns['one_line'](exc)}"
        entry, problem = ns["capevolve_pick"](ns["group_trajectories"](records), records, task_id, 0)
        if problem:
            return None, problem
        scope = ns["evaluation_scope"](entry, st, task)
        variables = {"task": task, "tables": ns["TABLES"]}
        table = ns["EVALUATORS"]
        evaluations, errors = ns["score_evaluators"](ns["EVALUATOR_FUNCTIONS"], table, scope, variables)
        reward = ns["capevolve_reward"](evaluations, errors, table, ns["COMBINE"])
        cost, tokens, _ = ns["capevolve_usage"](ns["USAGE"], scope, variables)
        usage = [(k, v) for k, v in (("cost_usd", cost), ("tokens", tokens)) if k in ns["USAGE"]]
        metrics = ns["capevolve_metrics"](reward, evaluations, table, usage)
        scores = {e["evaluator_id"]: e["score"] for e in evaluations}
        scores.update({e["evaluator_id"]: None for e in errors})
        result = {
            "task_id": task_id,
            "trajectory_id": entry["record"]["id"],
            "output": scope["output"],
            "scores": scores,
            "feedback": {e["evaluator_id"]: e["feedback"] for e in evaluations},
            "reward": reward,
            "metrics": {m["name"]: m["value"] for m in metrics},
        }
        if errors:
            result["not_scored"] = {e["evaluator_id"]: e["message"] for e in errors}
        return json.loads(json.dumps(result, ensure_ascii=False, allow_nan=False)), None

    def _evaluation_namespace(self) -> dict:
        if self._evaluation is None:
            from mapc.codegen.program import IN_PROCESS, build_program, load_module, module_source
            from mapc.pipeline.build import resolve_target

            shared = resolve_target("cap-evolve").shared_runtime()  # the runtime that scores
            text = module_source(build_program(self.spec), entry="", with_evaluation=True, with_probe=False,
                                 docstring=f"mapc test: in-process evaluation of {self.spec.name}",
                                 units=_EVAL_UNITS, shared=shared,
                                 keep=("MAX_BYTES", "MAX_LINE_BYTES"), check_runtime=False)
            self._evaluation = load_module(text, "mapc_test_evaluation", IN_PROCESS)
        return self._evaluation


_PROGRAM_NAME = "mapc_test"
_PROGRAM_FILE = f"<{_PROGRAM_NAME}>"  # the file name load_module compiles it under
#: Compiled mapping programs by spec digest (the digest covers everything the program is made
#: from): `mapc build` tests a spec that a test run in the same process may have compiled.
_COMPILED: dict[str, tuple[str, dict]] = {}
_MAX_COMPILED = 16


def _compiled(spec: ir.Spec) -> tuple[str, dict]:
    from mapc.pipeline.build import mapping_source
    from mapc.codegen.program import IN_PROCESS, load_module

    hit = _COMPILED.get(spec.digest)
    if hit is None:
        text = mapping_source(spec)
        hit = (text, load_module(text, _PROGRAM_NAME, IN_PROCESS))
        if len(_COMPILED) >= _MAX_COMPILED:
            _COMPILED.pop(next(iter(_COMPILED)))
        _COMPILED[spec.digest] = hit
    return hit


def _task_rows(spec: ir.Spec) -> list[dict]:
    """The tasks as the adapters read them (JSON Lines: YAML dates become text)."""
    from mapc.targets.capevolve.data import task_rows, tasks_jsonl

    return [json.loads(line) for line in tasks_jsonl(task_rows(spec)).decode("utf-8").splitlines()]
