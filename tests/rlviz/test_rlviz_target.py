"""Target rlviz: spec rules (case directories), generated files, determinism, build-time validation."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rlviz.support import EXAMPLES, ROOT
from golden import assert_golden
from mapc.api import build
from mapc.pipeline.build import load_checked
from mapc.targets import get_target

CASES = Path(__file__).resolve().parent / "cases"
GOLDEN = Path(__file__).resolve().parent / "golden"


def _case_dirs():
    return sorted(p for p in CASES.iterdir() if (p / "expected.json").is_file())


@pytest.mark.parametrize("case", _case_dirs(), ids=lambda p: p.name)
def test_case(case, tmp_path):
    expected = json.loads((case / "expected.json").read_text())
    if expected["command"] == "check":
        spec, diags = load_checked(case / "spec.yaml", get_target("rlviz"))
        assert spec is None
        found = [d.to_dict() for d in diags]
        assert len(found) == len(expected["diagnostics"]), found
        for want, got in zip(expected["diagnostics"], found):
            for key, value in want.items():
                if key.endswith("_contains"):
                    assert value in got[key[: -len("_contains")]], (key, got)
                else:
                    assert got[key] == value, (key, got)
            assert got["file"].endswith("spec.yaml")
    else:
        result = build(case / "spec.yaml", "rlviz", tmp_path / "plugin")
        assert result.diagnostics.ok and not result.ok
        for text in expected["validation_contains"]:
            assert text in result.validation.text, result.validation.text
        assert result.validation.payload["ok"] is False


def test_large_fixture_is_a_warning(tmp_path):
    spec = (CASES / "missing-fixture" / "spec.yaml").read_text() + "fixtures:\n  - big.jsonl\n"
    (tmp_path / "spec.yaml").write_text(spec)
    line = (ROOT / EXAMPLES["nemo-gym-blackjack"][1]).read_bytes().split(b"\n")[0] + b"\n"
    (tmp_path / "big.jsonl").write_bytes(line * (300_000 // len(line)))
    loaded, diags = load_checked(tmp_path / "spec.yaml", get_target("rlviz"))
    assert loaded is not None
    assert [(d.code, d.severity, d.path) for d in diags] == [("large_fixture", "warning", "fixtures[0]")]


def _without_header(text: str) -> str:
    """The text after the provenance comment lines a build may put on top."""
    lines = text.splitlines(keepends=True)
    while lines and lines[0].startswith("#"):
        lines.pop(0)
    return "".join(lines)


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_generated_files_and_goldens(built, name):
    plugin, source = built[name]
    files = {p.relative_to(plugin).as_posix() for p in plugin.rglob("*") if p.is_file()}
    files.discard("mapc.lock.json")  # written by the build for regeneration, not by this target
    runtime = {p for p, _ in get_target("rlviz").shared_runtime().files}
    assert {"mapc_runtime/__init__.py", "mapc_runtime/stream.py"} <= runtime
    expected = {"README.md", "adapter.py", *runtime, "rlviz-plugin.yaml", "test_adapter.py",
                "testdata/cases.json", f"testdata/{source.name}"}
    assert expected <= files and len(files - expected) <= 1  # plus a sibling file, if the spec reads one
    assert_golden(GOLDEN / name / "rlviz-plugin.yaml", _without_header((plugin / "rlviz-plugin.yaml").read_text()))
    assert_golden(GOLDEN / name / "cases.json", (plugin / "testdata" / "cases.json").read_text())
    assert (plugin / "testdata" / source.name).read_bytes() == source.read_bytes()
    assert os.access(plugin / "adapter.py", os.X_OK) and os.access(plugin / "test_adapter.py", os.X_OK)


def test_sibling_files_are_copied_with_the_fixture(built):
    plugin, source = built["verifiers-math"]
    assert (plugin / "testdata" / "metadata.json").read_bytes() == (source.parent / "metadata.json").read_bytes()


def test_generated_python_is_formatted(built):
    for plugin, _ in built.values():
        for name in ("adapter.py", "test_adapter.py"):
            text = (plugin / name).read_text()
            compile(text, name, "exec")
            assert text.startswith("#!/usr/bin/env python3\n") and text.endswith("\n") and "\t" not in text
        # the parts this target writes (entry, protocol runtime, test runner) keep lines short
        adapter = (plugin / "adapter.py").read_text()
        runtime = (plugin / "mapc_runtime" / "rlviz_rt.py").read_text()  # the host protocol
        own = runtime[runtime.index("class RequestError"):]
        own += adapter[adapter.rindex('if __name__ == "__main__":'):]
        own += (plugin / "test_adapter.py").read_text()
        code = [line for line in own.splitlines() if not line.startswith("#")]  # provenance header aside
        assert max(len(line) for line in code) <= 120


def test_adapter_computes_no_semantic_views(built):
    # RLViz reads canonical records only: no event's semantic view, no trajectory's final_output
    # (RELAI and cap-evolve builds compute them: their steps and rollouts are made of them)
    for plugin, _ in built.values():
        adapter = (plugin / "adapter.py").read_text()
        assert "semantic_view" not in adapter and "final_outputs" not in adapter
        assert "def main(" not in adapter and "sys.exit(rlviz_main(sys.argv[1:], probe," in adapter


def test_build_is_byte_identical_across_hash_seeds_and_working_directories(tmp_path):
    spec = ROOT / EXAMPLES["inspect-ai-popularity"][0]
    out = tmp_path / "out"
    outputs = []
    for seed, cwd in [("1", ROOT), ("98765", tmp_path)]:
        shutil.rmtree(out, ignore_errors=True)
        env = dict(os.environ, PYTHONHASHSEED=seed)
        run = subprocess.run([sys.executable, "-m", "mapc.cli", "build", str(spec), "--target", "rlviz", "-o", str(out),
                              "--no-validate"], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr
        outputs.append({p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()})
    assert outputs[0] == outputs[1]


def test_min_records_defaults_to_what_the_fixture_yields(built):
    plugin, _ = built["nemo-gym-blackjack"]
    cases = json.loads((plugin / "testdata" / "cases.json").read_text())
    assert cases == {"schema_version": 1, "cases": [
        {"source": "blackjack.example_rollouts.jsonl", "expected_format": "nemo-gym-rollouts", "min_records": 54}]}


def test_build_json_reports_the_validation(tmp_path):
    spec = ROOT / EXAMPLES["nemo-gym-blackjack"][0]
    run = subprocess.run([sys.executable, "-m", "mapc.cli", "build", str(spec), "--target", "rlviz", "-o",
                          str(tmp_path / "p"), "--json"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    payload = json.loads(run.stdout)
    assert payload["validation"]["ok"] is True and payload["validation"]["results"][0]["deterministic"] is True


def test_a_probe_imports_only_the_probe_part_of_the_runtime(built, tmp_path):
    """RLViz starts the adapter for every probe: the entry answers it before importing its
    mapping helpers, so a probe compiles the runtime's `__init__`, `probe` and `sniff` parts
    only (and `csv` for a CSV source); a stream the rest but `sniff`, `jmespath_more` only when
    the entry uses one of its functions (D76, D79)."""
    import re

    from rlviz.support import write_request

    more = dict(get_target("rlviz").shared_runtime().files)["mapc_runtime/jmespath_more.py"]
    more_names = set(re.findall(r"^def (\w+)", more, re.M))
    for name, (plugin, source) in built.items():
        entry = (plugin / "adapter.py").read_text()
        for operation in ("probe", "stream"):
            request = write_request(tmp_path / f"{name}-{operation}.json", operation, source)
            run = subprocess.run([sys.executable, "-I", "-S", "-X", "importtime", str(plugin / "adapter.py"),
                                  operation, "--request", str(request)], capture_output=True, text=True,
                                 timeout=60, stdin=subprocess.DEVNULL)
            assert run.returncode == 0, run.stderr[-2000:]
            parts = {line.rsplit("|", 1)[1].strip() for line in run.stderr.splitlines()
                     if line.startswith("import time:") and "mapc_runtime" in line}
            csv = {"mapc_runtime.csv"} if "source_probe(FORMAT, 'csv'" in entry else set()
            named = {f"mapc_runtime.{m}" for m in re.findall(r"^from mapc_runtime\.(\w+) import", entry, re.M)}
            if operation == "probe":  # what the entry names, and what only a probe runs (D79, D135)
                only_probe = {"mapc_runtime", "mapc_runtime.sniff", "mapc_runtime.jmespath_errors"}
                assert parts == only_probe | named | csv, (name, parts)
            else:
                assert {"mapc_runtime.stream", "mapc_runtime.records_rt"} | named <= parts
                assert "mapc_runtime.sniff" not in parts and parts & {"mapc_runtime.csv"} == csv, (name, parts)
                uses_more = any(re.search(rf"\b{n}\b", entry) for n in more_names)
                assert ("mapc_runtime.jmespath_more" in parts) == uses_more, (name, parts)
