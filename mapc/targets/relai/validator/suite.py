"""``mapc validate --target relai``: check a project's custom adapters the way RELAI uses them.

For each adapter under ``.relai/custom-adaptor/``: the catalog rules; the
runtime manifest and the requirements it declares (checked before any command
runs, as RELAI does); ``prepare`` once; then the runner once per selected task
with ``--task-id ID --output PATH`` appended (argv, no shell, cwd = project
root, simulator environment); every result rule; and a suite report with each
task's normalized averaged score.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mapc.core.diagnostics import Diagnostic
from mapc.runtime.agent_rt import run_command
from mapc.targets.relai.validator.catalog import (
    Findings, check_adapter_name, check_catalog, read_json_object, task_evaluators,
)
from mapc.targets.relai.validator.manifest import check_manifest, sensitive_values, simulator_env, unmet_requirements
from mapc.targets.relai.validator.result import (
    check_result, describe_failure, evaluation_summary, is_failure, task_score,
)

ADAPTERS_DIR = ".relai/custom-adaptor"
MANIFEST = ".relai/runtime-manifest.json"
COMMAND_TIMEOUT = 3600.0
MAX_RESULT_BYTES = 64 << 20


@dataclass
class TaskOutcome:
    adapter: str
    task_id: str
    status: str  # completed | failed | invalid | not_run
    score: float = 0.0
    detail: str = ""
    evaluations: list[dict] = field(default_factory=list)
    findings: list[Diagnostic] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "selector": f"{self.adapter}::{self.task_id}",
            "task_id": self.task_id,
            "status": self.status,
            "score": round(self.score, 6),
            "detail": self.detail,
            "evaluations": self.evaluations,
            "problems": [d.to_dict() for d in self.findings],
        }


@dataclass
class AdapterReport:
    name: str
    catalog: str
    findings: list[Diagnostic] = field(default_factory=list)
    tasks: list[TaskOutcome] = field(default_factory=list)
    prepare: str = "none"

    @property
    def ok(self) -> bool:
        return not any(d.is_error for d in self.findings) and all(
            t.status == "completed" for t in self.tasks)


def find_catalogs(root: Path) -> list[Path]:
    base = root / ADAPTERS_DIR
    if not base.is_dir():
        return []
    return sorted(p / "catalog.json" for p in base.iterdir() if p.is_dir() and (p / "catalog.json").is_file())


def select(selectors: list[str], names: list[str]) -> tuple[dict[str, set[str] | None], list[str]]:
    """``--task`` values (``ID``, ``ADAPTER::ID`` or ``ADAPTER::*``) -> ids per adapter (None: all)."""
    if not selectors:
        return {n: None for n in names}, []
    chosen: dict[str, set[str] | None] = {}
    problems = []
    for sel in selectors:
        adapter, sep, tid = sel.partition("::")
        if not sep:
            adapter, tid = "", sel
        targets = [adapter] if adapter else names
        if adapter and adapter not in names:
            problems.append(f"--task {sel!r}: no adapter named {adapter!r} (found: {', '.join(names) or 'none'})")
            continue
        for name in targets:
            if tid == "*":
                chosen[name] = None
            elif chosen.get(name, set()) is not None:
                chosen.setdefault(name, set()).add(tid)
    return chosen, problems


def validate_project(root: Path, selectors: list[str] | None = None, *, run: bool = True,
                     adapters: list[str] | None = None) -> dict[str, Any]:
    """Check the project's adapters; returns the JSON report (``ok``, ``adapters``, ``summary``)."""
    root = Path(root)
    catalogs = find_catalogs(root)
    if adapters is not None:
        catalogs = [c for c in catalogs if c.parent.name in adapters]
    problems: list[Diagnostic] = []
    if not root.is_dir():
        problems.append(Diagnostic("project_missing", f"project folder not found: {root}"))
    elif not catalogs:
        problems.append(Diagnostic("no_adapter", f"no RELAI custom adapter in {root / ADAPTERS_DIR}",
                                   hint="build one with `mapc build SPEC --target relai -o PROJECT_DIR`"))
    names = [c.parent.name for c in catalogs]
    chosen, usage = select(list(selectors or []), names)
    problems += [Diagnostic("unknown_selector", u) for u in usage]
    env = simulator_env(root)
    manifest, manifest_findings = _manifest(root)
    problems += manifest_findings
    unmet = unmet_requirements(manifest or {}, env, root) if manifest and run else []
    for text in unmet:
        problems.append(Diagnostic("requirement_missing", text, file=str(root / MANIFEST),
                                   hint="RELAI stops before running any custom command until it is set "
                                   "(environment, .relai/simulator.env, --env-file or --env)"))
    secrets = sensitive_values(manifest, env)
    reports = []
    for catalog_path in catalogs:
        name = catalog_path.parent.name
        if name not in chosen:
            continue
        report = _adapter(root, catalog_path, chosen[name], env, secrets, run=run and not unmet)
        reports.append(report)
    ok = not any(d.is_error for d in problems) and all(r.ok for r in reports)
    return _payload(root, ok, problems, reports, run)


def _manifest(root: Path) -> tuple[dict | None, list[Diagnostic]]:
    path = root / MANIFEST
    if not path.is_file():
        return None, []
    f = Findings(str(path))
    data = read_json_object(path, f, "manifest")
    if data is not None:
        check_manifest(data, f)
    return (data if f.ok else None), f.items


def _adapter(root: Path, catalog_path: Path, wanted: set[str] | None, env: dict, secrets: dict,
             *, run: bool) -> AdapterReport:
    name = catalog_path.parent.name
    f = Findings(str(catalog_path))
    report = AdapterReport(name, str(catalog_path.relative_to(root)))
    check_adapter_name(name, f)
    data = read_json_object(catalog_path, f, "catalog")
    if data is not None:
        check_catalog(data, f)
    report.findings = f.items
    if data is None or not f.ok:
        return report
    tasks = [t for t in data["tasks"] if isinstance(t, dict)]
    if wanted is not None:
        known = {t.get("id") for t in tasks}
        for tid in sorted(wanted - known):
            report.findings.append(Diagnostic("unknown_task", f"no task {tid!r} in adapter {name!r}", file=str(catalog_path)))
        tasks = [t for t in tasks if t.get("id") in wanted]
    if not run:
        return report
    if "prepare" in data:
        res = run_command(data["prepare"], cwd=str(root), timeout=COMMAND_TIMEOUT, env_extra=env)
        if res["status"] != "ok":
            report.prepare = "failed: " + _redact(_command_failure("prepare", res), secrets)
            for t in tasks:
                report.tasks.append(TaskOutcome(name, t["id"], "failed", detail="prepare failed"))
            return report
        report.prepare = "ok"
    from mapc.core.scratch import scratch

    with scratch("relai-results", near=root) as tmp:  # beside the project: results never land in it
        for n, task in enumerate(tasks):
            out = Path(tmp) / f"result-{n}.json"
            report.tasks.append(_run_task(root, name, data["runner"], task, out, env, secrets))
    return report


def _command_failure(what: str, res: dict) -> str:
    if res["status"] == "timeout":
        return f"{what} did not finish within {COMMAND_TIMEOUT:g} s"
    if res["status"] == "not_found":
        return res["message"]
    lines = [ln for ln in (res.get("stderr") or "").splitlines() if ln.strip()]
    tail = f": {lines[-1].strip()[:300]}" if lines else ""
    return f"{what} exited with status {res['returncode']}{tail}"


def _redact(text: str, secrets: dict) -> str:
    for value in sorted(secrets.values(), key=len, reverse=True):
        text = text.replace(value, "[REDACTED]")
    return text


def _run_task(root: Path, adapter: str, runner: list[str], task: dict, out: Path, env: dict,
              secrets: dict) -> TaskOutcome:
    tid = task["id"]
    argv = list(runner) + ["--task-id", tid, "--output", str(out)]
    res = run_command(argv, cwd=str(root), timeout=COMMAND_TIMEOUT, env_extra=env)
    if res["status"] != "ok":
        # RELAI: a runner that exits unsuccessfully is a task failure; no result needed
        return TaskOutcome(adapter, tid, "failed", detail=_redact(_command_failure("the runner", res), secrets))
    f = Findings(f"result of {adapter}::{tid}")
    if not out.is_file():
        f.error("result_missing", "", "the runner exited 0 but wrote no result at the --output path",
                hint="write one UTF-8 JSON object at PATH, or exit nonzero for a command failure")
        return TaskOutcome(adapter, tid, "invalid", findings=f.items)
    result = read_json_object(out, f, "result")
    if result is None:
        return TaskOutcome(adapter, tid, "invalid", findings=f.items)
    check_result(result, tid, task, f, secrets=secrets)
    outcome = TaskOutcome(adapter, tid, "completed", findings=f.items,
                          evaluations=evaluation_summary(result))
    if not f.ok:
        outcome.status = "invalid"
    elif is_failure(result):
        outcome.status = "failed"
        outcome.detail = _redact(describe_failure(result), secrets)
    else:
        outcome.score = task_score(result, task)
        outcome.detail = _evaluations_text(result, task)
    return outcome


def _evaluations_text(result: dict, task: dict) -> str:
    ranges = {e["id"]: (e["min_score"], e["max_score"]) for e in task_evaluators(task)}
    parts = []
    for ev in result.get("evaluations") or []:
        lo, hi = ranges.get(ev.get("evaluator_id"), (0, 1))
        parts.append(f"{ev.get('evaluator_id')} {_num(ev.get('score'))}/{_num(hi)}"
                     + (f" (from {_num(lo)})" if lo != 0 else ""))
    return ", ".join(parts)


def _num(x: Any) -> str:
    return f"{x:g}" if isinstance(x, (int, float)) and not isinstance(x, bool) else str(x)


def _payload(root: Path, ok: bool, problems: list[Diagnostic], reports: list[AdapterReport], ran: bool) -> dict:
    tasks = [t for r in reports for t in r.tasks]
    summary = {
        "adapters": len(reports),
        "tasks": len(tasks),
        "completed": sum(t.status == "completed" for t in tasks),
        "failed": sum(t.status == "failed" for t in tasks),
        "invalid": sum(t.status == "invalid" for t in tasks),
        "mean_score": round(sum(t.score for t in tasks) / len(tasks), 6) if tasks else None,
    }
    return {
        "ok": ok,
        "target": "relai",
        "project": str(root),
        "ran_tasks": ran,
        "problems": [d.to_dict() for d in problems],
        "adapters": [
            {"name": r.name, "catalog": r.catalog, "prepare": r.prepare, "ok": r.ok,
             "problems": [d.to_dict() for d in r.findings], "tasks": [t.to_dict() for t in r.tasks]}
            for r in reports
        ],
        "summary": summary,
    }


def report_text(payload: dict) -> str:
    """The human suite report."""
    lines = []
    for r in payload["adapters"]:
        errors = [p for p in r["problems"] if p.get("severity", "error") == "error"]
        state = "ok" if not errors else f"{len(errors)} problem(s)"
        lines.append(f"RELAI adapter {r['name']} ({r['catalog']}): catalog {state}")
        if payload["ran_tasks"] and r["prepare"] != "none":
            lines.append(f"  prepare: {r['prepare']}")
        width = max((len(t["selector"]) for t in r["tasks"]), default=0)
        for t in r["tasks"]:
            head = f"  {t['selector']:<{width}}  {t['status']:<9}"
            if t["status"] == "completed":
                lines.append(f"{head} score {t['score']:.3f}  {t['detail']}")
            elif t["status"] == "failed":
                lines.append(f"{head} score 0 (scored as failed)  {t['detail']}")
            else:
                lines.append(f"{head} result breaks {len(t['problems'])} rule(s)")
    s = payload["summary"]
    if payload["ran_tasks"] and s["tasks"]:
        lines.append(f"suite: {s['tasks']} task(s): {s['completed']} completed, {s['failed']} failed, "
                     f"{s['invalid']} invalid; mean normalized score {s['mean_score']:.3f}")
    broken = len(diagnostics_errors(payload))
    if payload["ok"]:
        lines.append("ok: the adapters follow RELAI's contract" + (" and every task completed" if s["tasks"] else ""))
    elif broken:
        lines.append(f"FAILED: {broken} contract problem(s), listed above")
    else:
        lines.append(f"FAILED: {s['failed']} task(s) failed; the adapters follow RELAI's contract")
    return "\n".join(lines)


def diagnostics(payload: dict) -> list[Diagnostic]:
    """Every problem in the payload, as diagnostics (for text output)."""
    out = [Diagnostic(**p) for p in payload["problems"]]
    for r in payload["adapters"]:
        out += [Diagnostic(**p) for p in r["problems"]]
        for t in r["tasks"]:
            out += [Diagnostic(**p) for p in t["problems"]]
    return out


def diagnostics_errors(payload: dict) -> list[Diagnostic]:
    return [d for d in diagnostics(payload) if d.is_error]


def dumps(payload: dict) -> str:
    return json.dumps(payload, ensure_ascii=False)
