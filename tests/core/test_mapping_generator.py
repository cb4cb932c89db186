"""The mapping generator (mapc/codegen/mapping/): named parameters in the generated level
functions, a target's options passed in (no host name in codegen), and a comment for a spec
line that writes no code (D134)."""

from __future__ import annotations

import ast
import dataclasses
import shutil
from pathlib import Path

import mapc
from mapc.codegen.program import build_program
from mapc.spec import load_spec
from mapc.targets import get_target

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "verifiers-math"


def _spec():
    spec, diags = load_spec(EXAMPLE / "spec.yaml")
    assert spec is not None, diags.items
    return spec


def _parameters(code: str) -> dict[str, list[str]]:
    return {node.name: [a.arg for a in node.args.args] for node in ast.parse(code).body
            if isinstance(node, ast.FunctionDef)}


def test_level_functions_and_map_source_name_their_parameters():
    params = _parameters(build_program(_spec()).mapping)
    assert params["map_source"] == ["source", "state", "emit"]
    level = ["state", "emit", "element", "scope", "parent", "location", "srcloc"]
    for name in ("level_run", "level_case", "level_trajectory"):
        assert params[name] == level, name
    assert params["level_events"] == ["state", "emit", "element", "scope", "trajectory", "location",
                                      "srcloc"]


def test_the_target_passes_its_raw_option_in():
    spec = dataclasses.replace(_spec(), targets=(("rlviz", {"raw": True}),))
    assert get_target("rlviz").raw_events(spec) is True
    assert get_target("rlviz").raw_events(_spec()) is False
    assert get_target("relai").raw_events(spec) is False  # another host's option
    assert "raw=el0" in build_program(spec, semantics=False, raw_events=True).mapping
    assert "raw=" not in build_program(spec, semantics=False, raw_events=False).mapping


def test_targets_rlviz_raw_reaches_the_records_mapc_run_writes(tmp_path):
    folder = shutil.copytree(EXAMPLE, tmp_path / "spec")
    spec_file = folder / "spec.yaml"
    spec_file.write_text(spec_file.read_text() + "\ntargets:\n  rlviz: {raw: true}\n")
    result = mapc.run(spec_file, folder / "results.jsonl")
    events = [r for r in result.records if r["record_type"] == "event"]
    assert events and all(isinstance(e.get("raw"), dict) for e in events)
    assert events[0]["raw"].get("role") is not None  # the source message itself


def test_codegen_names_no_host():
    paths = sorted((ROOT / "mapc" / "codegen" / "mapping").glob("*.py"))
    assert len(paths) >= 6  # the generator's parts
    for path in paths:
        text = path.read_text(encoding="utf-8").lower()
        for host in ("rlviz", "relai", "cap-evolve", "capevolve", "target_option"):
            assert host not in text, f"{path.name} names {host}"


def test_a_spec_line_without_code_says_why():
    spec = _spec()
    without = build_program(spec, semantics=False).mapping
    assert "# records.trajectory.final_output (line 36): no code: only semantic views read it" in without
    assert "final_outputs[" not in without
    with_views = build_program(spec, semantics=True).mapping
    assert "final_outputs[" in with_views and "final_output (line 36): no code" not in with_views


def _entry(tmp_path: Path, target: str) -> str:
    out = tmp_path / target
    result = mapc.build(mapc.load_spec(EXAMPLE / "spec.yaml"), target, out)
    assert result.ok, result.diagnostics
    return next(p for p in sorted(out.glob("*.py")) if p.name != "test_adapter.py").read_text()


def test_a_section_without_code_in_a_build_says_why(tmp_path):
    """An RLViz adapter scores nothing and runs no agent: the spec's evaluators, agent and tests
    are named with their lines and the reason; a cap-evolve adapter scores, so its file does
    not list the evaluators as missing."""
    rlviz = _entry(tmp_path, "rlviz")
    for line in ("# evaluators (line 79): no code: this file maps traces; a target that scores them",
                 "# agent (line 76): no code: this file does not run the agent",
                 "# tests (line 98): no code: `mapc test` checks the spec against them"):
        assert line in rlviz
    capevolve = _entry(tmp_path, "cap-evolve")
    assert "# tests (line 98): no code" in capevolve
    assert "# evaluators (line" not in capevolve and "def evaluate_" in capevolve
