"""Target cap-evolve: spec rules (case directories), generated files, goldens, determinism, the example."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from capevolve_support import ADAPTERS, EXAMPLE, ROOT, build_adapter
from golden import assert_golden
from mapc.pipeline.build import load_checked
from mapc.targets import get_target

HERE = Path(__file__).resolve().parent
CASES = HERE / "cases"
GOLDEN = HERE / "golden"
CASE_DIRS = sorted(p for p in CASES.iterdir() if (p / "spec.yaml").is_file())


@pytest.mark.parametrize("case", CASE_DIRS, ids=[p.name for p in CASE_DIRS])
def test_spec_rules(case):
    """Each case's diagnostics (file, line, column, spec path, message, hint) are in its expected.json."""
    spec, diags = load_checked(case / "spec.yaml", get_target("cap-evolve"))
    found = []
    for d in diags:
        item = d.to_dict()
        item["file"] = Path(item["file"]).name
        found.append(item)
    assert found, "every case must produce a diagnostic"
    assert all(d["line"] >= 1 and d["column"] >= 1 for d in found)
    assert (spec is None) == any(d["severity"] == "error" for d in found)
    assert_golden(case / "expected.json", json.dumps(found, indent=2, ensure_ascii=False) + "\n")


def test_the_example_builds_and_passes_the_gate(example_adapter):
    files = sorted(p.relative_to(example_adapter).as_posix() for p in example_adapter.rglob("*") if p.is_file())
    assert [f for f in files if f != "mapc.lock.json"] == [
        "README.md", "adapter.py", *(p for p, _ in get_target("cap-evolve").shared_runtime().files), "tasks.jsonl",
        "traces/gpt-4o-airline.truncated.json"]
    recorded = EXAMPLE / "recorded" / "gpt-4o-airline.truncated.json"
    assert (example_adapter / "traces" / recorded.name).read_bytes() == recorded.read_bytes()


def _class_section(adapter_py: str) -> str:
    """What this target contributes to adapter.py: the host import and everything from the entry on
    (the standard-library imports follow the runtime units and are checked separately)."""
    head, _, entry = adapter_py.partition("# --- cap-evolve adapter ---")
    host = [line for line in head.splitlines() if line.startswith("from cap_evolve ")]
    return "\n".join(host) + "\n\n# --- cap-evolve adapter ---" + entry


def _readme(folder: Path) -> str:
    """README.md without the provenance header (it names the output folder, which varies)."""
    text = (folder / "README.md").read_text()
    return text.split("-->\n\n", 1)[1] if text.startswith("<!--") else text


def test_goldens(example_adapter):
    assert_golden(GOLDEN / "tau-bench-airline" / "README.md", _readme(example_adapter))
    assert_golden(GOLDEN / "tau-bench-airline" / "tasks.jsonl", (example_adapter / "tasks.jsonl").read_text())
    assert_golden(GOLDEN / "tau-bench-airline" / "adapter_class.py",
                  _class_section((example_adapter / "adapter.py").read_text()))


def test_command_agent_goldens(tmp_path):
    out = tmp_path / "adapters"
    build_adapter(ADAPTERS / "toy-calc" / "spec.yaml", out)
    assert_golden(GOLDEN / "toy-calc" / "README.md", _readme(out))
    assert_golden(GOLDEN / "toy-calc" / "splits.json", (out / "splits.json").read_text())
    assert_golden(GOLDEN / "toy-calc" / "adapter_class.py", _class_section((out / "adapter.py").read_text()))


def test_adapter_imports_only_the_standard_library_and_cap_evolve(example_adapter):
    import ast

    tree = ast.parse((example_adapter / "adapter.py").read_text())
    modules = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            modules.add(node.module.split(".")[0])
    assert "cap_evolve" in modules
    assert modules - {"cap_evolve", "mapc_runtime"} <= set(sys.stdlib_module_names)
    host = [n for n in tree.body if isinstance(n, ast.ImportFrom) and n.module == "cap_evolve"]
    assert [(a.name) for a in host[0].names] == ["CapabilityAdapter", "Rollout", "Score", "Task"]
    assert "print(" not in (example_adapter / "adapter.py").read_text()


def test_generated_python_is_formatted(example_adapter):
    text = (example_adapter / "adapter.py").read_text()
    section = _class_section(text)
    assert max(len(line) for line in section.splitlines()) <= 120
    assert "\t" not in text and not any(line != line.rstrip() for line in text.splitlines())
    compile(text, "adapter.py", "exec")


def _build_in_subprocess(spec: Path, out: Path, cwd: Path, hash_seed: str) -> dict[str, str]:
    env = dict(os.environ, PYTHONHASHSEED=hash_seed)
    proc = subprocess.run([sys.executable, "-m", "mapc.cli", "build", str(spec), "--target", "cap-evolve",
                           "-o", str(out), "--no-validate"], cwd=cwd, env=env, capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()
    return {p.relative_to(out).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(out.rglob("*")) if p.is_file()}


def test_build_is_deterministic_across_hash_seeds_and_working_folders(tmp_path):
    import shutil

    for name in ("a", "b"):
        shutil.copytree(EXAMPLE, tmp_path / name / "example")
    first = _build_in_subprocess(tmp_path / "a" / "example" / "spec.yaml", tmp_path / "a" / "out", tmp_path, "1")
    second = _build_in_subprocess(tmp_path / "b" / "example" / "spec.yaml", tmp_path / "b" / "out", ROOT, "2")
    assert first == second and "adapter.py" in first


def test_spec_strings_cannot_inject_code(tmp_path):
    """A hostile description, evaluator text, task id and agent argv end up as literals or comments only."""
    evil = '"""; import os; os.system("echo pwned") #\\n\'\u2028'
    spec = (ADAPTERS / "toy-calc" / "spec.yaml").read_text()
    spec = spec.replace("description: A deterministic fake agent that adds numbers (tests of the cap-evolve target).",
                        f"description: {json.dumps(evil)}")
    spec = spec.replace("description: The agent used its calculator", f"description: {json.dumps(evil)}")
    spec = spec.replace("--task, ", f"{json.dumps(evil)}, --task, ")
    (tmp_path / "spec.yaml").write_text(spec)
    (tmp_path / "agent.py").write_text("")
    out = tmp_path / "adapters"
    build_adapter(tmp_path / "spec.yaml", out)
    text = (out / "adapter.py").read_text()
    compile(text, "adapter.py", "exec")
    import ast

    calls = [n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Attribute) and n.attr == "system"]
    assert calls == []
    assert "pwned" in text  # it is there, but only inside literals, comments and the docstring


def test_expression_text_cannot_inject_code_through_docstrings(tmp_path):
    """An `each` expression or evaluator description holding triple quotes stays inside its docstring."""
    escape = "\"\"\" or __import__('os').system('echo pwned') or \"\"\""
    spec = f"""
mapc: 1
name: injection
source: {{format: demo, container: json, probe: {{require: [items]}}}}
records:
  case:
    each: {json.dumps("items[?name != '" + escape.replace("'", '"') + "']")}
  events: {{each: steps, kind: message, content: text}}
evaluators:
  - {{id: x, description: {json.dumps(escape)}, score: "`1`"}}
tasks: [{{id: a}}]
agent: {{replay: trace.json}}
"""
    (tmp_path / "spec.yaml").write_text(spec)
    (tmp_path / "trace.json").write_text('{"items": [{"name": "a", "steps": [{"text": "hi"}]}]}')
    out = tmp_path / "adapters"
    build_adapter(tmp_path / "spec.yaml", out)
    import ast

    tree = ast.parse((out / "adapter.py").read_text())
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr == "system"]
    assert calls == []


def _cap_evolve_examples() -> list[Path]:
    """Every example spec that declares tasks, an agent and evaluators (what cap-evolve needs)."""
    import yaml

    out = []
    for spec in sorted(ROOT.glob("examples/*/spec*.yaml")):
        data = yaml.safe_load(spec.read_text(encoding="utf-8")) or {}
        if {"tasks", "agent", "evaluators"} <= set(data):
            out.append(spec)
    return out


def _cli_examples() -> list[Path]:
    """The command-line path for one example built from its ``project/`` folder: every example
    is built and validated with the same gate in tests/conformance/test_capevolve_examples.py
    (and under the real check and run there), so repeating each one here only costs time."""
    examples = _cap_evolve_examples()
    return [p for p in examples if (p.parent / "project").is_dir()][:1] or examples[:1]


@pytest.mark.parametrize("spec", _cli_examples(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_an_example_builds_and_validates_for_cap_evolve_on_the_command_line(spec, tmp_path):
    """`mapc build --target cap-evolve` then `mapc validate --target cap-evolve`, from the project root:
    the example's `project/` folder when it has one (its stand-in for a user's checkout), else the repository."""
    cwd = spec.parent / "project" if (spec.parent / "project").is_dir() else ROOT
    out = tmp_path / "adapters"
    # the build's own validation is the same gate as `mapc validate`: run it once, below
    build = subprocess.run([sys.executable, "-m", "mapc.cli", "build", str(spec), "--target", "cap-evolve",
                            "-o", str(out), "--no-validate"], cwd=cwd, capture_output=True, timeout=120)
    assert build.returncode == 0, build.stderr.decode()
    validate = subprocess.run([sys.executable, "-m", "mapc.cli", "validate", "--target", "cap-evolve", str(out),
                               "--json"], cwd=cwd, capture_output=True, timeout=120)
    payload = json.loads(validate.stdout)
    assert validate.returncode == 0 and payload["ok"], payload["problems"]
    beyond = [c for c in payload["checks"] if not c["contract"]]
    assert len(beyond) >= 12 and all(c["ok"] for c in beyond)
