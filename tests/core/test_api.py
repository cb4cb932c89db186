"""The Python API (``mapc.load_spec``, ``mapc.build``, ``mapc.run``, ``mapc.validate``): the same
results as the commands, cheap to import, and the README's example runs as written."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import mapc

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "verifiers-math"
SPEC = EXAMPLE / "spec.yaml"
TRACE = EXAMPLE / "results.jsonl"


def cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "mapc.cli", *map(str, args)], cwd=cwd or ROOT,
                          capture_output=True, timeout=120)


def test_import_mapc_loads_nothing_else():
    """``import mapc`` loads its version (a low module, mapc/core/version.py) and nothing else."""
    code = ("import sys, mapc; heavy = ('yaml', 'jinja2', 'jsonschema', 'jmespath', 'typer', 'rich');"
            "print(sorted(m for m in sys.modules if m.startswith('mapc.') or m.split('.')[0] in heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "['mapc.core', 'mapc.core.version']"


def test_the_public_names_resolve_lazily():
    assert set(mapc.__all__) >= {"load_spec", "build", "run", "run_many", "validate", "Spec", "SpecError"}
    for name in mapc.__all__:
        assert getattr(mapc, name) is not None
    with pytest.raises(AttributeError):
        mapc.no_such_name  # noqa: B018


def test_load_spec_gives_the_spec_or_every_error():
    spec = mapc.load_spec(SPEC)
    assert (spec.name, spec.format, spec.path) == ("verifiers-math", "verifiers-results", SPEC)
    assert spec.warnings == []
    with pytest.raises(mapc.SpecError) as caught:
        mapc.load_spec(ROOT / "tests" / "cases" / "compose" / "cycle" / "spec.yaml")
    assert [d.code for d in caught.value.diagnostics.errors] == ["extends_cycle"]
    assert "middle.yaml:3:10: error[extends_cycle]" in str(caught.value)
    with pytest.raises(mapc.UsageError, match="unknown target 'nope'"):
        mapc.load_spec(SPEC, target="nope")


def test_run_maps_exactly_what_the_command_prints():
    result = mapc.run(mapc.load_spec(SPEC), TRACE)
    assert result.ok and result.error is None and result.warnings == 0
    command = cli("run", SPEC, TRACE)
    assert command.returncode == 0 and result.ndjson == command.stdout
    assert result.record_count == 178 and result.records[-1]["record_type"] == "complete"


def test_run_reports_a_malformed_trace_as_a_result(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 1}\n{not json\n')
    result = mapc.run(SPEC, bad)
    assert not result.ok and result.error.startswith("line 1: ") and "\n" not in result.error


def test_build_and_validate_through_the_api(tmp_path):
    spec = mapc.load_spec(SPEC)
    built = mapc.build(spec, "rlviz", tmp_path / "plugin")
    assert built.ok and "adapter.py" in built.files and built.validation.ok
    import mapc.pipeline.build as pipeline  # the build pipeline is an ordinary module, not the API function
    from mapc.api import build as api_build

    assert mapc.build is api_build and not callable(pipeline) and hasattr(pipeline, "load_checked")
    report = mapc.validate("rlviz", tmp_path / "plugin", [TRACE])
    assert report.ok and report.items == [{"source": str(TRACE), "records": 178, "warnings": 0, "ok": True}]
    assert report.payload["records"] == 178
    again = mapc.build(SPEC, "rlviz", tmp_path / "plugin")  # a path works as well; nothing changed
    assert again.ok and again.files == built.files


def test_the_readme_python_example_runs_as_written(tmp_path):
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Python API", 1)[1].split("\n## ", 1)[0]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    shutil.copytree(EXAMPLE, tmp_path / "examples" / "verifiers-math")
    script = tmp_path / "example.py"
    script.write_text(code)
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "out" / "verifiers-math" / "adapter.py").is_file()
    assert json.loads(proc.stdout.strip().splitlines()[-1])["ok"] is True
