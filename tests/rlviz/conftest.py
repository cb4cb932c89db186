"""Fixtures for the rlviz target tests: built example plugins and a way to run adapters."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

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


@pytest.fixture(scope="session")
def built(tmp_path_factory) -> dict[str, tuple[Path, Path]]:
    """Every example built for rlviz once: name -> (plugin dir, example source)."""
    from mapc.build import build

    out = {}
    for name, (spec, source) in EXAMPLES.items():
        plugin = tmp_path_factory.mktemp("plugin") / name
        result = build(ROOT / spec, "rlviz", plugin)
        assert result.ok, (name, [d.message for d in result.diagnostics], result.validation and result.validation.text)
        out[name] = (plugin, ROOT / source)
    return out


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


@pytest.fixture(scope="session")
def rlviz_shim(tmp_path_factory) -> Path:
    """An executable that behaves like `rlviz` for `plugin validate` (mapc's stand-in)."""
    path = tmp_path_factory.mktemp("bin") / "rlviz"
    path.write_text(f"#!/bin/sh\nexec {sys.executable} -m mapc.validators.rlviz.cli \"$@\"\n", encoding="utf-8")
    path.chmod(0o755)
    return path
