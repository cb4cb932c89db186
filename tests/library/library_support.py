"""Helpers and tables for the spec library, composition and `mapc init` tests.

A module of its own (not conftest.py) so test modules import it by a name no
other test folder uses. Builds are the slow part (each runs the built-in RLViz
validator, which starts the adapter four times): adapters are generated on one
thread and validated a few at a time.
"""

from __future__ import annotations

import io
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from shared_paths import CORPUS

ROOT = Path(__file__).resolve().parents[2]
WORKERS = 4

#: library spec -> the corpus trace files it must accept (and map)
FORMATS: dict[str, list[str]] = {
    "agentlab-browsergym": ["agentlab-browsergym/click-checkboxes_20.summary_info.json"],
    "agentlab-result-df": ["agentlab-browsergym/result_df_trial_1_of_3.csv"],
    # agent session logs (issue 27); ground truth in tests/data/corpus/SESSIONS.md
    "claude-code-stream-json": ["claude-code-stream-json/fe89b91e-5955-48a9-a325-1d1245732392.stream.jsonl"],
    "claude-code-transcript": ["claude-code-transcript/ca4291e5-5178-4fdb-972b-f6b4d6c26a65.jsonl"],
    "codex-rollout": [
        "codex-rollout/rollout-2025-11-17T15-30-28-019a93b9-f380-7600-98ff-940e6b99603c.jsonl",
        "codex-rollout/rollout-2026-01-02T03-04-05-11111111-1111-4111-8111-111111111111.jsonl",
        "codex-rollout/sample_codex_session.jsonl",
    ],
    "copilot-cli": ["copilot-cli/session-demo/events.jsonl"],
    "gemini-cli": ["gemini-cli/gemini-cli-pomodoro-timer.first-6-messages.json"],
    "harbor-atif": [
        "harbor-atif/openhands-hello-world.trajectory.json",
        "harbor-atif/terminus2-hello-world-context-summarization.trajectory.json",
        "harbor-atif/terminus2-hello-world-context-summarization.trajectory.summarization-1-summary.json",
    ],
    "harbor-traces-export": ["harbor-traces-export/terminus2-hello-world-invalid-json.traces.json"],
    "inspect-ai-eval-log": [
        "inspect-ai-eval-log/2024-11-05T13-31-45-05-00_input-task_8zXjbRzCWrL9GXiXo2vus9.json",
        "inspect-ai-eval-log/2025-05-12T20-27-36-04-00_browser.no-sandbox-events.json",
        "inspect-ai-eval-log/2025-05-12T20-28-13-04-00_popularity.json",
    ],
    "langfuse-trace-export": [
        "langfuse-trace-export/microsoft-agent-2025-12-17.trace.json",
        "langfuse-trace-export/openai-agents-2025-09-30.trace.json",
    ],
    "langsmith-run-payloads": [
        "langsmith-run-payloads/langsmith_js_wrap_openai_reasoning.json",
        "langsmith-run-payloads/langsmith_py_wrap_openai_stream.json",
    ],
    "letta-agent-file": ["letta-agent-file/loop.af"],
    "letta-evals-results": ["letta-evals-results/results.jsonl"],
    "mini-swe-agent-traj": ["mini-swe-agent-traj/mini-swe-agent-trajectory.json"],
    "nemo-gym-rollouts": [
        "nemo-gym-rollouts/blackjack.example_rollouts.jsonl",
        "nemo-gym-rollouts/workplace_assistant.example_rollouts.jsonl",
    ],
    "openhands-events": [
        "openhands-events/basic_gui_mode.json",
        "openhands-events/harbor-rfc-openhands_trajectory.json",
    ],
    "swe-agent-traj": [
        "swe-agent-traj/marshmallow-code__marshmallow-1867.function_calling.traj",
        "swe-agent-traj/pydicom__pydicom-1458.traj",
    ],
    "tau-bench-historical": ["tau-bench-historical/gpt-4o-airline.truncated.json"],
    "tau2-bench-results": ["tau2-bench-results/airline_run1.truncated.json"],
    "verifiers-results": ["verifiers-results/math-python--gpt-5-nano.results.jsonl"],
}

#: corpus files no library spec accepts, and why
AUXILIARY: dict[str, str] = {
    "letta-evals-results/header.json": "sibling of results.jsonl (read as $siblings.header)",
    "letta-evals-results/summary.json": "sibling of results.jsonl (read as $siblings.summary)",
    "nemo-gym-rollouts/blackjack.example_rollouts_aggregate_metrics.json": "aggregate metrics, no trajectories",
    "verifiers-results/math-python--gpt-5-nano.metadata.json": "sibling of results.jsonl (read as $siblings.metadata)",
}

PAIRS = [(name, rel) for name, files in FORMATS.items() for rel in files]


def corpus_files() -> list[str]:
    """The corpus's trace files: each format folder's files, and the files FORMATS lists in a
    folder of their own (a session kept in its tool's layout: copilot-cli/session-demo/)."""
    top = {str(p.relative_to(CORPUS)) for p in CORPUS.glob("*/*") if p.is_file() and p.name != "PROVENANCE.md"}
    nested = {rel for rels in FORMATS.values() for rel in rels if rel.count("/") > 1}
    return sorted(top | nested)


def parallel(fn, items, workers: int = WORKERS) -> list:
    """``[fn(item) for item in items]``, a few at a time.

    Only for work that is subprocesses (running adapters): CPython 3.11's
    ``ast`` module is not thread-safe, so compiling stays on one thread.
    """
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(fn, items))


def build_all(jobs: list[tuple[Path, str, Path]]) -> list:
    """Build each ``(spec, target, out)``: generate one at a time, validate in parallel.

    Returns the BuildResults in order, each with its validation report, as
    ``mapc build`` would.
    """
    from mapc.api import build
    from mapc.pipeline.build import resolve_target

    results = [build(spec, target, out, validate=False) for spec, target, out in jobs]

    def check(i: int):
        spec, target, out = jobs[i]
        result = results[i]
        if result.spec is not None and result.diagnostics.ok:
            result.validation = resolve_target(target).validate_build(result.spec, Path(out))
        return result

    return parallel(check, range(len(jobs)))


def load_adapter(plugin: Path) -> dict:
    """The generated adapter.py executed in-process (the same code RLViz runs), with the runtime
    module next to it: the entry's names and the runtime's."""
    from mapc.codegen.program import load_entry_file, read_runtime, runtime_names

    return {**runtime_names(read_runtime(plugin)), **load_entry_file(plugin / "adapter.py", f"adapter_{plugin.name}")}


def map_records(ns: dict, source: Path) -> list[dict]:
    """Run the adapter's mapping on ``source``; the canonical records it streams."""
    out = io.BytesIO()
    src = ns["SourceFile"](str(source), None, ns["MAX_BYTES"], ns["MAX_LINE_BYTES"])
    ns["write_canonical"](ns["map_source"], src, out, ns["MapState"]())
    return [json.loads(line) for line in out.getvalue().splitlines()]


