"""Fixtures for the relai target tests (helpers live in relai_support.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from relai_support import build_project, chat_trace, spec_text, write_json


@pytest.fixture
def replay_project(tmp_path) -> Path:
    """The chat-demo spec built for relai, replaying one recorded trace per task."""
    project = tmp_path / "project"
    write_json(project / "traces/request/create.json", chat_trace())
    write_json(project / "traces/request/update.json", chat_trace("updated", 0, 2))
    result = build_project(spec_text(), project)
    assert result.ok, [d.format() for d in result.diagnostics]
    return project
