"""Target cap-evolve: an ``adapters/`` folder that passes ``cap-evolve check`` and runs.

Files: ``adapter.py`` (``class Adapter(CapabilityAdapter)``: the mapping
program, the evaluators and the ``capevolve_rt`` runtime units; the standard
library plus ``from cap_evolve import ...`` only), ``tasks.jsonl``,
``splits.json`` when the spec assigns splits, the recorded traces under
``traces/`` for a replay agent, and a ``README.md``. The folder is dropped in
as ``.capevolve/project/adapters/``. The built-in validator
(:mod:`mapc.targets.capevolve.validator`) runs cap-evolve's gate on it, and more.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

from mapc.codegen.pysrc import comment_text, description_lines, one_line
from mapc.core.diagnostics import Diagnostic
from mapc.spec import ir
from mapc.targets.base import Target, ValidationReport
from mapc.targets.capevolve.data import (
    REPLAY_PLACEHOLDERS,
    read_trace,
    replay_plan,
    splits_json,
    task_id_file_problem,
    task_rows,
    tasks_jsonl,
)

HOST_IMPORT = "from cap_evolve import CapabilityAdapter, Rollout, Score, Task"
_PLACEHOLDER = re.compile(r"(?<!\{)\{([A-Za-z_]+)\}")


def env_prefix(name: str) -> str:
    """Environment-variable prefix from the spec name: ``verifiers-math`` -> ``VERIFIERS_MATH``."""
    prefix = re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_").upper()
    return prefix if prefix and not prefix[0].isdigit() else f"ADAPTER_{prefix}"



def _placeholders(text: str) -> set[str]:
    return set(_PLACEHOLDER.findall(text.replace("{{", "")))


class CapEvolveTarget(Target):
    name = "cap-evolve"
    host_packages = frozenset({"cap_evolve"})  # adapter.py imports cap-evolve's own package
    description = "cap-evolve adapter folder: adapter.py, tasks.jsonl, traces/, README.md"
    runtime_modules = ("eval_rt", "agent_rt", "capevolve_rt")

    # -- spec rules -----------------------------------------------------------------
    def check(self, spec: ir.Spec) -> list[Diagnostic]:
        diags: list[Diagnostic] = []
        if spec.tasks is None:
            diags.append(spec.diag(
                "missing_tasks", (), "the cap-evolve target needs `tasks`: tasks(split) returns them",
                hint="e.g. tasks: [{id: q1, input: 'What is 2+2?', target: '4'}] "
                "or tasks: {from: tasks.jsonl}",
            ))
        if spec.agent is None:
            diags.append(spec.diag(
                "missing_agent", (), "the cap-evolve target needs `agent`: run_target runs or replays it",
                hint='agent: {command: [python, agent.py, "{task_id}", "{candidate}"], trace: '
                '"runs/{task_id}.jsonl"} or agent: {replay: "recorded/{task_id}.json"}',
            ))
        if not spec.evaluators:
            diags.append(spec.diag(
                "missing_evaluators", (), "the cap-evolve target needs at least one evaluator: "
                "score() combines them into the reward",
                hint="evaluators: [{id: solved, description: 'Task solved', score: 'signals.reward'}]",
            ))
        elif spec.combine == "weighted" and not any(e.weight > 0 for e in spec.evaluators):
            diags.append(spec.diag(
                "zero_weights", ("reward", "combine"),
                "`combine: weighted` needs an evaluator with a weight above 0",
                hint="give the evaluators `weight:` values, or use `combine: mean`",
            ))
        if spec.tasks is not None:
            diags += self._check_tasks(spec)
        if spec.agent is not None:
            diags += self._check_agent(spec)
        return diags

    def _check_tasks(self, spec: ir.Spec) -> list[Diagnostic]:
        diags = []
        for i, t in enumerate(spec.tasks.items):
            problem = task_id_file_problem(t.id)
            if problem:
                plain = "-".join(p for p in t.id.replace("\\", "/").split("/") if p not in ("", ".", ".."))
                diags.append(spec.diag(
                    "invalid_task_id", ("tasks", i, "id"), f"task id {t.id!r} {problem}",
                    hint="cap-evolve saves each rollout as rollouts/<split>/<task_id>__<tag>__t<k>.json, "
                    "so a task id must be a plain file name" + (
                        f": write e.g. `{plain}` (RELAI takes it too)" if plain and plain != t.id
                        and not task_id_file_problem(plain) else ""),
                ))
        for i, row in enumerate(task_rows(spec)):
            try:
                tasks_jsonl([row])
            except (TypeError, ValueError) as exc:
                diags.append(spec.diag("invalid_value", ("tasks", i), f"task {row['id']!r} cannot be written as "
                                       f"JSON: {exc}", hint="task inputs, targets and metadata must be plain JSON "
                                       "values (no NaN or infinity)"))
        with_split = [t.id for t in spec.tasks.items if t.split]
        if with_split and len(with_split) != len(spec.tasks.items):
            without = [t.id for t in spec.tasks.items if not t.split]
            diags.append(spec.diag(
                "partial_splits", ("tasks",),
                f"{len(with_split)} task(s) have a split and {len(without)} do not "
                f"(e.g. {without[0]!r}); tasks(split) cannot tell where those belong",
                hint="give every task a `split` (train, val or test), or none and let cap-evolve split",
            ))
        elif with_split and not any(t.split == "val" for t in spec.tasks.items):
            diags.append(spec.diag(
                "empty_val_split", ("tasks",),
                "no task has `split: val`, but cap-evolve check needs tasks('val') to be nonempty",
                hint="assign some tasks to `val`",
            ))
        return diags

    def _check_agent(self, spec: ir.Spec) -> list[Diagnostic]:
        agent = spec.agent
        diags = []
        if agent.replay:
            extra = sorted(_placeholders(agent.replay) - set(REPLAY_PLACEHOLDERS))
            if extra:
                diags.append(spec.diag(
                    "unsupported_placeholder", ("agent", "replay"),
                    "a recorded trace path can use {task_id} and {seed} only, not "
                    + ", ".join(f"{{{p}}}" for p in extra),
                    hint='e.g. replay: "recorded/{task_id}.json" or "recorded/{task_id}/trial-{seed}.json"',
                ))
                return diags
            plan = replay_plan(spec)
            if plan.problem:
                diags.append(spec.diag("invalid_replay_path", ("agent", "replay"),
                                       f"replay path {agent.replay!r}: {plan.problem}",
                                       hint="the recorded traces are copied into the adapter folder's traces/"))
            elif not plan.files:
                diags.append(spec.diag(
                    "missing_trace", ("agent", "replay"),
                    f"no recorded trace found for any task (replay: {agent.replay!r}, looked under the spec's "
                    "folder and under the current directory)",
                    hint="the path is relative to the spec's folder or to the current directory (the project "
                    "root); {task_id} is each task's id",
                ))
            elif plan.missing:
                shown = ", ".join(repr(t) for t in plan.missing[:5]) + (" ..." if len(plan.missing) > 5 else "")
                diags.append(spec.diag(
                    "missing_trace", ("agent", "replay"),
                    f"{len(plan.missing)} task(s) have no recorded trace ({shown}); "
                    "run_target returns an errored Rollout for them",
                    severity="warning",
                ))
            return diags
        used = set()
        for arg in (agent.command or ()) + tuple(v for _, v in agent.env):
            used |= _placeholders(arg)
        if "candidate" not in used:
            diags.append(spec.diag(
                "candidate_unused", ("agent", "command"),
                "the agent never receives the candidate cap-evolve is evaluating, so every "
                "candidate scores the same",
                hint='pass "{candidate}" in agent.command or agent.env (the candidate folder, an absolute path)',
                severity="warning",
            ))
        if "seed" not in used and not agent.seed_env:
            diags.append(spec.diag(
                "seed_unused", ("agent", "command"),
                "the agent never receives the trial seed; cap-evolve needs independent trials "
                "from a stochastic agent",
                hint='pass "{seed}" in agent.command, or set agent.seed_env',
                severity="warning",
            ))
        if agent.trace and "task_id" not in _placeholders(agent.trace):
            diags.append(spec.diag(
                "shared_trace_path", ("agent", "trace"),
                "the trace path has no {task_id}; cap-evolve may run tasks in parallel "
                "(CAPEVOLVE_WORKERS) and runs would overwrite each other's trace",
                hint='e.g. trace: "runs/{task_id}-{seed}.jsonl"', severity="warning",
            ))
        for key, what in (("prepare", agent.prepare), ("requires", agent.requires_env or agent.requires_files)):
            if what:
                diags.append(spec.diag(
                    "ignored_by_target", ("agent", key),
                    f"agent.{key} is used by the RELAI target only; the cap-evolve adapter ignores it",
                    severity="warning", key=True,
                ))
        return diags

    # -- files ------------------------------------------------------------------------
    def render(self, spec: ir.Spec, program, out_dir: Path) -> dict[str, bytes]:
        from mapc.codegen.program import build_program, module_source

        plan = replay_plan(spec)
        if plan is not None:
            # the adapter replays the copies under traces/, relative to its own folder
            spec = dataclasses.replace(spec, agent=dataclasses.replace(spec.agent, replay=plan.template))
            program = build_program(spec)
        prefix = env_prefix(spec.name)
        rows = task_rows(spec)
        context = _context(spec, rows, prefix, plan)
        shared = self.shared_runtime()
        adapter = module_source(
            program,
            entry=self.render_template("adapter_entry.py.j2", **context),
            docstring=_docstring(spec, context),
            with_evaluation=True,
            with_probe=False,
            prelude=HOST_IMPORT,
            shared=shared,
        )
        files = {
            "adapter.py": adapter.encode("utf-8"),
            **shared.files_at(),
            "tasks.jsonl": tasks_jsonl(rows),
            "README.md": self.render_template("README.md.j2", **context).encode("utf-8"),
        }
        splits = splits_json(rows)
        if splits is not None:
            files["splits.json"] = splits
        for rel, path in sorted((plan.files if plan else {}).items()):
            files[rel] = read_trace(path)
        return files

    # -- validation --------------------------------------------------------------------
    def validate_build(self, spec: ir.Spec, out_dir: Path) -> ValidationReport | None:
        return self.validate(out_dir, [], {})

    def validate(self, out_dir: Path, sources: list[Path], options: dict[str, Any]) -> ValidationReport:
        from mapc.targets.capevolve.validator import validate_adapter_dir

        if sources:
            from mapc.core.errors import UsageError

            raise UsageError("cap-evolve validation takes no source traces: it runs the adapter's own "
                             "tasks (and their recorded traces) through cap-evolve's gate")
        return validate_adapter_dir(Path(out_dir))


def _context(spec: ir.Spec, rows: list[dict], prefix: str, plan) -> dict[str, Any]:
    agent = spec.agent
    splits = {name: sum(1 for r in rows if r.get("split") == name) for name in ("train", "val", "test")}
    table = [
        {"id": e.id, "description": one_line(e.description), "range": f"{e.low:g} to {e.high:g}",
         "direction": e.direction, "primary": e.primary, "weight": f"{e.weight:g}"}
        for e in spec.evaluators
    ]
    return {
        "adapter_name": spec.name,
        "version": spec.version,
        "description": one_line(spec.description),
        "spec_file": Path(spec.file).name,
        "format": spec.source.format,
        "task_count": len(rows),
        "splits": splits if any(splits.values()) else None,
        "replay": plan is not None,
        "replay_template": plan.template if plan else None,
        "replay_seed": bool(plan and "{seed}" in plan.template),
        "trace_count": len(plan.files) if plan else 0,
        "command": list(agent.command) if agent.command else None,
        "trace": agent.trace,
        "timeout": f"{agent.timeout:g}",
        "seed_env": agent.seed_env,
        "env_names": [k for k, _ in agent.env],
        "data_env": f"{prefix}_DATA_DIR",
        "root_env": f"{prefix}_PROJECT_ROOT",
        "evaluators": table,
        "combine": spec.combine,
        "usage": [k for k, _ in spec.usage],
    }


def _docstring(spec: ir.Spec, ctx: dict[str, Any]) -> str:
    from mapc.codegen.summary import header_table

    run = "replays the task's recorded trace" if ctx["replay"] else "runs the agent (no shell)"
    return (f"cap-evolve adapter {comment_text(spec.name)} {comment_text(spec.version)} (the folder"
            " is .capevolve/project/adapters/):\n"
            f"tasks.jsonl; run_target {run}; score combines ({spec.combine}) into [0, 1].\n\n"
            + header_table(spec, evaluators=True))


TARGET = CapEvolveTarget()
