"""Helpers for the `mapc test` tests: every spec that ships expected records, and spec copies."""

from __future__ import annotations

import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "tests" / "cases" / "spectest"
SHIPPED = sorted(list((ROOT / "examples").glob("*/spec*.yaml")) + list((ROOT / "specs").glob("*.yaml")))


def copy_example(tmp_path: Path, name: str) -> Path:
    """A private copy of an example folder; returns its spec.yaml."""
    dest = tmp_path / name
    shutil.copytree(ROOT / "examples" / name, dest)
    return dest / "spec.yaml"


def edit(spec: Path, old: str, new: str) -> None:
    text = spec.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"{old!r} must appear once in {spec}"
    spec.write_text(text.replace(old, new), encoding="utf-8")
