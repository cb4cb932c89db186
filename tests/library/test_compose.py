"""Spec composition (`extends`): merge semantics, positions per origin file, diagnostics.

Bad compositions are case directories under tests/cases/compose (a spec.yaml,
the files it extends, and expected.json with the diagnostics it must get);
the merge rules are unit tests.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from golden import assert_golden
from mapc.core.diagnostics import Diagnostics
from mapc.spec.library import library_specs
from mapc.spec import load_spec
from mapc.spec.compose import resolve_extends
from mapc.spec.loader import load_file

CASES = Path(__file__).resolve().parents[1] / "cases" / "compose"
CASE_DIRS = sorted(p for p in CASES.iterdir() if (p / "spec.yaml").is_file())


def _diagnostics(case: Path) -> list[dict]:
    _, diags = load_spec(case / "spec.yaml")
    out = []
    for d in diags:
        item = d.to_dict()
        item["file"] = Path(item["file"]).name if "file" in item else None
        out.append(item)
    return out


@pytest.mark.parametrize("case", CASE_DIRS, ids=[p.name for p in CASE_DIRS])
def test_bad_composition_diagnostics(case: Path):
    actual = _diagnostics(case)
    assert any(d["severity"] == "error" for d in actual), "a bad composition must be an error"
    for d in actual:
        assert d["file"] and d["line"] >= 1 and d["column"] >= 1, f"diagnostic without a position: {d}"
    assert_golden(case / "expected.json", json.dumps(actual, indent=2, ensure_ascii=False) + "\n")


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


BASE = """\
    mapc: 1
    name: base
    description: The base.
    source:
      format: demo
      container: jsonl
      probe: {require: [type], confidence: 0.8}
    tables:
      grades: {C: 1, I: 0}
    records:
      trajectory:
        each: "@"
        status: "'completed'"
        signals: {reward: reward, cost: cost}
      events: {each: "steps", kind: message, content: text}
    evaluators:
      - {id: reward, description: base reward, score: "signals.reward"}
      - {id: cost, description: base cost, score: "signals.cost", range: [0, 5]}
    fixtures: [samples/base.jsonl]
    """


@pytest.fixture
def project(tmp_path):
    _write(tmp_path, "lib/samples/base.jsonl", '{"type": "x", "steps": [{"text": "hi"}], "reward": 1, "cost": 2}\n')
    _write(tmp_path, "lib/base.yaml", BASE)
    spec = _write(tmp_path, "spec.yaml", """\
        mapc: 1
        name: project
        extends: lib/base.yaml
        source:
          probe: {confidence: 0.95}
        tables:
          grades: {P: 0.5}
        records:
          trajectory:
            signals:
              cost: null          # removed
              tokens: tokens      # added
        evaluators:
          - {id: cost, description: project cost, score: "signals.tokens", range: [0, 100]}
          - {id: extra, description: project extra, score: "signals.reward"}
        """)
    return spec


def _resolved(path: Path):
    loaded, found = load_file(path)
    diags = Diagnostics()
    diags.extend(found)
    return resolve_extends(loaded, diags), diags


def test_project_keys_merge_over_the_base(project):
    merged, diags = _resolved(project)
    assert diags.ok
    data = merged.data
    assert "extends" not in data
    assert data["name"] == "project" and data["description"] == "The base."  # scalars: project wins, else inherited
    assert data["source"]["probe"] == {"require": ["type"], "confidence": 0.95}  # mappings merge
    assert data["tables"]["grades"] == {"C": 1, "I": 0, "P": 0.5}
    assert data["records"]["trajectory"]["signals"] == {"reward": "reward", "tokens": "tokens"}  # null removes
    assert data["records"]["trajectory"]["status"] == "'completed'"
    # evaluators merge by id: same id replaced in place, new ids appended
    assert [(e["id"], e["description"]) for e in data["evaluators"]] == [
        ("reward", "base reward"), ("cost", "project cost"), ("extra", "project extra")]


def test_every_node_keeps_the_position_of_the_file_it_came_from(project):
    merged, _ = _resolved(project)
    base_file = str(project.parent / "lib" / "base.yaml")
    inherited = merged.mark(("records", "events", "content"))
    assert (inherited.file, inherited.line) == (base_file, 15)
    overridden = merged.mark(("evaluators", 1, "description"))
    assert (overridden.file, overridden.line) == (str(project), 14)
    moved = merged.mark(("evaluators", 0, "score"))  # base entry kept at the same index
    assert (moved.file, moved.line) == (base_file, 17)
    added = merged.mark(("evaluators", 2, "id"))
    assert (added.file, added.line) == (str(project), 15)
    assert merged.mark(("source", "probe", "require")).file == base_file
    assert merged.mark(("source", "probe", "confidence")).file == str(project)
    # an expression error inside an inherited expression points into the base file
    assert set(merged.texts) == {base_file, str(project)}


def test_relative_paths_resolve_against_the_file_that_wrote_them(project):
    spec, diags = load_spec(project)
    assert spec is not None, [d.format() for d in diags]
    assert Path(spec.fixtures[0].resolved) == (project.parent / "lib" / "samples" / "base.jsonl").resolve()


def test_extends_chains_resolve_recursively(tmp_path, project):
    top = _write(tmp_path, "top.yaml", """\
        mapc: 1
        name: top
        extends: ./spec.yaml
        evaluators:
          - {id: reward, description: top reward, score: "signals.reward"}
        """)
    spec, diags = load_spec(top)
    assert spec is not None, [d.format() for d in diags]
    assert spec.name == "top"
    assert [e.description for e in spec.evaluators] == ["top reward", "project cost", "project extra"]


def test_extends_a_library_spec_by_name(tmp_path):
    spec_path = _write(tmp_path, "spec.yaml", """\
        mapc: 1
        name: my-evals
        extends: inspect-ai-eval-log
        """)
    spec, diags = load_spec(spec_path)
    assert spec is not None, [d.format() for d in diags]
    assert spec.source.format == "inspect-ai-eval-log"
    lib = library_specs()["inspect-ai-eval-log"]
    # the library's fixture is inherited and found next to the library spec
    assert Path(spec.fixtures[0].resolved).parent == (lib.parent / "fixtures" / "inspect-ai-eval-log").resolve()
    assert str(lib) in spec.files


def test_mapc_run_maps_a_trace_with_a_project_over_a_library_spec(tmp_path):
    lib = library_specs()["tau-bench-historical"]
    spec_path = _write(tmp_path, "spec.yaml", """\
        mapc: 1
        name: my-tau
        extends: tau-bench-historical
        records:
          trajectory:
            signals:
              solved: "reward == `1`"
        """)
    sample = lib.parent / "fixtures" / "tau-bench-historical" / "trajectories.json"
    proc = subprocess.run([sys.executable, "-m", "mapc.cli", "run", "--json", str(spec_path), str(sample)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    records = json.loads(proc.stdout)["records"]
    solved = sorted(r["value"] for r in records if r.get("name") == "solved")
    rewards = [r["value"] for r in records if r.get("name") == "reward"]
    assert solved == [False, True] and sorted(rewards) == [0.0, 1.0]


def test_check_cli_reports_errors_in_the_base_with_its_file(tmp_path):
    case = CASES / "error-in-base-file"
    proc = subprocess.run([sys.executable, "-m", "mapc.cli", "check", "--json", "spec.yaml"],
                          cwd=case, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    (diag,) = json.loads(proc.stdout)["diagnostics"]
    assert (Path(diag["file"]).name, diag["line"], diag["code"]) == ("base.yaml", 11, "unknown_function")
