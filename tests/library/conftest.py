"""Session fixtures for the spec library tests: each library spec built once, corpus validations."""

from __future__ import annotations

from pathlib import Path

import pytest
from library_support import CORPUS, PAIRS, build_all, parallel


@pytest.fixture(scope="session")
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.fail(f"trace corpus not found at {CORPUS}")
    return CORPUS


@pytest.fixture(scope="session")
def library_plugins(tmp_path_factory, corpus) -> dict:
    """Every library spec built for rlviz (validated on its own fixture): name -> (result, plugin dir)."""
    from mapc.spec.library import library_specs

    base = tmp_path_factory.mktemp("library")
    names = sorted(library_specs())
    results = build_all([(library_specs()[name], "rlviz", base / name) for name in names])
    return {name: (result, base / name) for name, result in zip(names, results)}


@pytest.fixture(scope="session")
def corpus_validations(library_plugins, corpus) -> dict:
    """(spec, corpus file) -> the built-in validator's report, or the failure."""
    from mapc.targets.rlviz.validator.validate import ValidationFailure, validate

    def one(pair):
        name, rel = pair
        plugin = library_plugins[name][1]
        try:
            return pair, validate(plugin, corpus / rel).payload()
        except ValidationFailure as exc:
            return pair, exc.payload()

    return dict(parallel(one, PAIRS))
