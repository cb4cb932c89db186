"""ATIF trajectory rules (ATIF v1.8), and running a generated converter on traces.

The rules mirror the ``atif`` package's Pydantic models (``Trajectory``, ``Agent``,
``FinalMetrics``; steps by :func:`mapc.targets.atif_rules.step_problems`, the rules
RELAI's ``trace.steps`` already meet) without importing it: unknown fields forbidden,
required ``schema_version``, ``agent.name``, ``agent.version`` and ``steps``, sequential
step ids, embedded subagent trajectories with unique ids. Types are read strictly, as for
RELAI's steps: JSON a strict reader accepts is JSON every reader accepts. mapc's tests
check the verdicts against the ``atif`` package on valid documents and on mutants.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from mapc.targets.atif_rules import _extra, _is_int, _is_number, _unknown, step_problems

TRAJECTORY_FIELDS = frozenset({
    "schema_version", "session_id", "trajectory_id", "agent", "steps", "notes", "final_metrics",
    "continued_trajectory_ref", "extra", "subagent_trajectories",
})
AGENT_FIELDS = frozenset({"name", "version", "model_name", "tool_definitions", "extra"})
FINAL_INT = ("total_prompt_tokens", "total_completion_tokens", "total_cached_tokens", "total_steps")
FINAL_FIELDS = frozenset(FINAL_INT + ("total_cost_usd", "extra"))
#: How long one converter run may take on one trace before it counts as failed.
CONVERT_TIMEOUT_S = 120


def _optional_str(obj: dict, key: str, where: str, out: list) -> None:
    if obj.get(key) is not None and not isinstance(obj[key], str):
        out.append((f"{where}.{key}", "must be a string"))


def _agent(agent: Any, where: str, out: list) -> None:
    if not isinstance(agent, dict):
        out.append((where, "is required: an object with `name` and `version`"))
        return
    _unknown(agent, AGENT_FIELDS, where, out)
    for key in ("name", "version"):
        if not isinstance(agent.get(key), str):
            out.append((f"{where}.{key}", "is required and must be a string"))
    _optional_str(agent, "model_name", where, out)
    tools = agent.get("tool_definitions")
    if tools is not None and not (isinstance(tools, list) and all(isinstance(t, dict) for t in tools)):
        out.append((f"{where}.tool_definitions", "must be an array of objects"))
    _extra(agent, where, out)


def _final_metrics(final: Any, where: str, out: list) -> None:
    if not isinstance(final, dict):
        out.append((where, "must be an object"))
        return
    _unknown(final, FINAL_FIELDS, where, out)
    for key in FINAL_INT:
        if final.get(key) is not None and not _is_int(final[key]):
            out.append((f"{where}.{key}", "must be an integer"))
    if final.get("total_cost_usd") is not None and not _is_number(final["total_cost_usd"]):
        out.append((f"{where}.total_cost_usd", "must be a finite number"))
    _extra(final, where, out)


def trajectory_problems(doc: Any, where: str = "$") -> list[tuple[str, str]]:
    """``(json path, message)`` for each way ``doc`` is not a valid ATIF trajectory."""
    if not isinstance(doc, dict):
        return [(where, "an ATIF trajectory must be a JSON object")]
    out: list[tuple[str, str]] = []
    _unknown(doc, TRAJECTORY_FIELDS, where, out)
    if not isinstance(doc.get("schema_version"), str):
        out.append((f"{where}.schema_version", "is required and must be a string (e.g. 'ATIF-v1.8')"))
    for key in ("session_id", "trajectory_id", "notes", "continued_trajectory_ref"):
        _optional_str(doc, key, where, out)
    _agent(doc.get("agent"), f"{where}.agent", out)
    if "steps" not in doc:
        out.append((f"{where}.steps", "is required (an array of steps)"))
    else:
        out += step_problems(doc["steps"], f"{where}.steps")
    if doc.get("final_metrics") is not None:
        _final_metrics(doc["final_metrics"], f"{where}.final_metrics", out)
    _extra(doc, where, out)
    subs = doc.get("subagent_trajectories")
    if subs is not None:
        if not isinstance(subs, list):
            out.append((f"{where}.subagent_trajectories", "must be an array of trajectories"))
            return out
        seen: set[str] = set()
        for i, sub in enumerate(subs):
            p = f"{where}.subagent_trajectories[{i}]"
            out += trajectory_problems(sub, p)
            tid = sub.get("trajectory_id") if isinstance(sub, dict) else None
            if tid is None:
                out.append((f"{p}.trajectory_id", "is required on an embedded subagent trajectory"))
            elif tid in seen:
                out.append((f"{p}.trajectory_id", f"{tid!r} is embedded twice (ids must be unique)"))
            seen.add(tid)
    return out


def check_output(stdout: bytes) -> tuple[int, list[str]]:
    """The converter's ``--all`` output (one trajectory a line): (trajectories, problems)."""
    problems: list[str] = []
    # lines end with "\n" only: a string may hold U+2028, which str.splitlines() would split at
    lines = stdout.decode("utf-8", "replace").split("\n")
    lines = lines[:-1] if lines and lines[-1] == "" else lines
    if not lines:
        return 0, ["the converter wrote no trajectory"]
    for n, line in enumerate(lines, 1):
        try:
            doc = json.loads(line)
        except ValueError as exc:
            problems.append(f"line {n}: not JSON ({exc})")
            continue
        problems += [f"line {n}: {path}: {message}" for path, message in trajectory_problems(doc)]
    return len(lines), problems


def run_converter(convert: Path, source: Path) -> dict[str, Any]:
    """Run ``convert.py SOURCE --all`` and check every trajectory it writes: one summary row."""
    item: dict[str, Any] = {"source": str(source), "records": 0, "warnings": 0, "ok": False, "detail": None}
    try:
        proc = subprocess.run([sys.executable, "-I", str(convert), str(source), "--all"],
                              capture_output=True, timeout=CONVERT_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        item["detail"] = f"the converter ran longer than {CONVERT_TIMEOUT_S} s"
        return item
    stderr = proc.stderr.decode("utf-8", "replace").splitlines()
    item["warnings"] = sum(line.startswith("warning: ") for line in stderr)
    if proc.returncode != 0:
        item["detail"] = (stderr[-1] if stderr else f"exit status {proc.returncode}")
        return item
    item["records"], problems = check_output(proc.stdout)
    item["problems"] = problems
    item["ok"] = not problems
    if problems:
        item["detail"] = problems[0] + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else "")
    return item
