"""Shared helpers for the regeneration, review and drift tests."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from shared_paths import CORPUS

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "tests" / "cases"
TINY = CASES / "regen" / "tiny"
EXAMPLES = ROOT / "examples"


def copy_case(tmp_path: Path, src: Path = TINY, name: str = "spec") -> Path:
    """A private copy of a spec folder (tests edit specs); returns the spec file."""
    dest = tmp_path / name
    shutil.copytree(src, dest)
    return dest / "spec.yaml"


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (hidden ones too), by relative path."""
    out = {}
    for dirpath, _, names in os.walk(folder):
        for name in names:
            p = Path(dirpath, name)
            out[p.relative_to(folder).as_posix()] = p.read_bytes()
    return out


def mapc(*args, cwd=None, env=None) -> subprocess.CompletedProcess:
    """The real command line, in a fresh interpreter."""
    full_env = dict(os.environ if env is None else env)
    full_env.pop("MAPC_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "mapc.cli", *map(str, args)], cwd=cwd or ROOT,
                          capture_output=True, text=True, timeout=120, env=full_env)


def build_ok(spec: Path, out: Path, target: str = "rlviz", **kw):
    from mapc.api import build

    result = build(spec, target, out, validate=False, **kw)
    assert result.ok, [d.message for d in result.diagnostics]
    return result


def build_fails(spec: Path, out: Path, target: str = "rlviz", **kw) -> str:
    """The output_conflict message of a build that must be refused."""
    from mapc.api import build

    result = build(spec, target, out, validate=False, **kw)
    assert not result.ok
    codes = [d.code for d in result.diagnostics.errors]
    assert codes == ["output_conflict"], codes
    return result.diagnostics.errors[0].message
