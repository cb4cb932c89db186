"""Fixtures for the rlviz target tests: built example plugins and an `rlviz` stand-in."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from rlviz.support import EXAMPLES, ROOT


@pytest.fixture(scope="session")
def built(tmp_path_factory) -> dict[str, tuple[Path, Path]]:
    """Every example built for rlviz once: name -> (plugin dir, example source)."""
    from mapc.api import build

    out = {}
    for name, (spec, source) in EXAMPLES.items():
        plugin = tmp_path_factory.mktemp("plugin") / name
        result = build(ROOT / spec, "rlviz", plugin)
        assert result.ok, (name, [d.message for d in result.diagnostics], result.validation and result.validation.text)
        out[name] = (plugin, ROOT / source)
    return out


@pytest.fixture(scope="session")
def rlviz_shim(tmp_path_factory) -> Path:
    """An executable that behaves like `rlviz` for `plugin validate` (mapc's stand-in)."""
    path = tmp_path_factory.mktemp("bin") / "rlviz"
    path.write_text(f"#!/bin/sh\nexec {sys.executable} -m mapc.targets.rlviz.validator.cli \"$@\"\n", encoding="utf-8")
    path.chmod(0o755)
    return path
