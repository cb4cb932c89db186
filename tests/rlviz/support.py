"""Shared helpers for the rlviz tests: example specs and running a generated adapter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = {
    "verifiers-math": ("examples/verifiers-math/spec.yaml", "examples/verifiers-math/results.jsonl"),
    "nemo-gym-blackjack": (
        "examples/nemo-gym-blackjack/spec.yaml",
        "examples/nemo-gym-blackjack/blackjack.example_rollouts.jsonl",
    ),
    "inspect-ai-popularity": (
        "examples/inspect-ai-popularity/spec.yaml",
        "examples/inspect-ai-popularity/2025-05-12T20-28-13-04-00_popularity.json",
    ),
}


def write_request(path: Path, operation: str, source: Path, **extra) -> Path:
    src = os.path.realpath(source)
    request = {
        "api_version": "rlviz.dev/v1alpha1",
        "operation": operation,
        "source": {"path": src, "root": os.path.dirname(src), "kind": "directory" if os.path.isdir(src) else "file"},
        "limits": {},
    }
    if os.path.isdir(src):
        request["source"]["root"] = src
    for key, value in extra.items():
        request[key] = value
    path.write_text(json.dumps(request), encoding="utf-8")
    return path


def run_adapter(plugin: Path, operation: str, source: Path, tmp: Path, *, cwd: Path | None = None,
                env: dict | None = None, request_name: str = "request.json", **extra) -> subprocess.CompletedProcess:
    """Run ``python3 -I -S adapter.py OP --request PATH`` (stdlib only: no site-packages)."""
    request = write_request(tmp / request_name, operation, source, **extra)
    return subprocess.run(
        [sys.executable, "-I", "-S", str(plugin / "adapter.py"), operation, "--request", str(request)],
        cwd=cwd or plugin, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=60,
    )
