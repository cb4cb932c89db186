"""Helpers and fixtures for the relai target tests: a tiny chat trace format, its spec, projects
built from it, and running generated runners the way RELAI does (subprocess, cwd = project root).

Not a conftest.py: other test folders import their own `conftest` module by that name.
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "relai-tau2-airline"

# A small chat trace format: {answer, reward, quality, messages: [{role, content, tool_calls, tool_call_id}]}
CHAT_SPEC = """\
mapc: 1
name: chat-demo
version: 0.2.0
description: A tiny chat format used by mapc's relai tests.
source:
  format: chat-demo
  container: json
  probe: {require: [messages]}
records:
  trajectory:
    final_output: answer
    signals:
      reward: reward
      quality: quality
  events:
    each: messages
    rules:
      - when: "role == 'assistant'"
        kind: generation
        role: role
        content: content
        model: model
        reasoning: reasoning
        tool_calls: "tool_calls[*].{id: id, name: function.name, arguments: function.arguments}"
      - when: "role == 'tool'"
        kind: observation
        role: role
        content: content
        tool_call_id: tool_call_id
      - kind: message
        role: role
        content: content
evaluators:
  - id: correct
    description: The answer is right
    score: signals.reward
    feedback:
      - when: "score == `1`"
        text: "correct answer"
      - text: "wrong answer: {output}"
  - id: quality
    description: Answer quality from 0 to 5
    range: [0, 5]
    score: signals.quality
tasks:
  suite_tags: [demo]
  items:
    - {id: request/create, input: "Create the item", target: "created", tags: [request-workflow]}
    - {id: request/update, input: "Update the item", target: "updated", tags: [request-workflow]}
{agent}
"""

REPLAY_AGENT = """\
agent:
  replay: "traces/{task_id}.json"
"""


def chat_trace(answer="created", reward=1, quality=4, *, secret=None):
    """A trace in the chat-demo format: system, user, a tool call and its result, an answer."""
    return {
        "answer": answer if secret is None else f"{answer} {secret}",
        "reward": reward,
        "quality": quality,
        "messages": [
            {"role": "system", "content": "You create and update items."},
            {"role": "user", "content": "Please create the item."},
            {"role": "assistant", "content": "", "model": "demo-model", "reasoning": "I should call create.",
             "tool_calls": [{"id": "call_a", "function": {"name": "create", "arguments": '{"name": "item"}'}}]},
            {"role": "tool", "tool_call_id": "call_a", "content": "ok" if secret is None else f"ok {secret}"},
            {"role": "assistant", "content": answer, "model": "demo-model"},
        ],
    }


def spec_text(agent: str = REPLAY_AGENT, replace: dict[str, str] | None = None) -> str:
    """The chat-demo spec with ``agent`` and optional text replacements."""
    text = CHAT_SPEC.replace("{agent}", textwrap.dedent(agent))
    for old, new in (replace or {}).items():
        assert old in text, old
        text = text.replace(old, new)
    return text


def write_json(path: Path, data) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def build_project(spec: str | Path, project: Path, *, force: bool = False, spec_dir: Path | None = None):
    """Build a spec (text or path) for relai into ``project``; returns the BuildResult."""
    from mapc.api import build

    if isinstance(spec, str):
        spec_dir = spec_dir or project.parent / (project.name + "-spec")
        spec_dir.mkdir(parents=True, exist_ok=True)
        path = spec_dir / "spec.yaml"
        path.write_text(spec, encoding="utf-8")
    else:
        path = spec
    project.mkdir(parents=True, exist_ok=True)
    return build(path, "relai", project, force=force)


def run_runner(project: Path, adapter: str, task_id: str, output: Path, *, env: dict | None = None,
               extra_args: list[str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    """Run the generated runner exactly as RELAI does: argv, no shell, cwd = project root."""
    argv = ["python3", f".relai/custom-adaptor/{adapter}/run.py"]
    argv += ["--task-id", task_id, "--output", str(output)] if extra_args is None else extra_args
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run(argv, cwd=project, capture_output=True, text=True, timeout=timeout, env=full_env)


def read_result(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def atif_trajectory(steps: list[dict]):
    """RELAI wraps trace.steps into an ATIF trajectory: do the same with the `atif` package."""
    import atif

    return atif.Trajectory(schema_version="ATIF-v1.8", agent={"name": "mapc-test", "version": "1"}, steps=steps)


def catalog_task(project: Path, adapter: str, task_id: str) -> dict:
    catalog = json.loads((project / f".relai/custom-adaptor/{adapter}/catalog.json").read_text())
    return next(t for t in catalog["tasks"] if t["id"] == task_id)


@pytest.fixture
def replay_project(tmp_path) -> Path:
    """The chat-demo spec built for relai, replaying one recorded trace per task."""
    project = tmp_path / "project"
    write_json(project / "traces/request/create.json", chat_trace())
    write_json(project / "traces/request/update.json", chat_trace("updated", 0, 2))
    result = build_project(spec_text(), project)
    assert result.ok, [d.format() for d in result.diagnostics]
    return project
