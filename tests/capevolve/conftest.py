"""Fixtures for the cap-evolve target tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from capevolve_support import EXAMPLE, build_adapter


@pytest.fixture(scope="session")
def example_adapter(tmp_path_factory) -> Path:
    """The example built (and validated) once."""
    out = tmp_path_factory.mktemp("capevolve") / "adapters"
    result = build_adapter(EXAMPLE / "spec.yaml", out, validate=True)
    assert result.ok, result.validation.text
    return out
