"""The generated mapping program: deterministic, standalone, and the same code `mapc run` runs."""

from __future__ import annotations

import ast
import hashlib
import os
import subprocess
import sys
from pathlib import Path

from mapc.codegen.program import build_program, module_source
from mapc.core.runtime_files import RUNTIME_MODULE
from mapc.spec import load_spec
from mapc.targets import get_target

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "verifiers-math"
STDLIB = set(sys.stdlib_module_names)

_SOURCE_SNIPPET = """
import hashlib, sys
sys.path.insert(0, {root!r})
from mapc.spec import load_spec
from mapc.codegen.program import build_program, module_source
spec, _ = load_spec({spec!r})
text = module_source(build_program(spec), entry="", docstring="d", units=("write_canonical", "SourceFile"))
print(hashlib.sha256(text.encode()).hexdigest())
"""


def _module(extra_entry: str = "") -> str:
    spec, diags = load_spec(EXAMPLE / "spec.yaml")
    assert spec is not None, diags.items
    return module_source(build_program(spec), entry=extra_entry, docstring="d",
                         units=("write_canonical", "SourceFile"))


def test_same_spec_same_bytes_across_hash_seeds_and_cwd(tmp_path):
    digests = set()
    for seed, cwd in (("0", ROOT), ("1", tmp_path), ("12345", "/")):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        code = _SOURCE_SNIPPET.format(root=str(ROOT), spec=str(EXAMPLE / "spec.yaml"))
        out = subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        digests.add(out.stdout.strip())
    assert len(digests) == 1


def _imports(text: str) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level:  # not the runtime's parts
            out.add(node.module.split(".")[0])
    return out


def test_generated_module_imports_only_the_standard_library_and_its_runtime():
    text = _module()
    assert _imports(text) - STDLIB == {RUNTIME_MODULE}
    for target in ("rlviz", "relai", "cap-evolve"):
        for path, part in get_target(target).shared_runtime().files:
            assert _imports(part) <= STDLIB, (target, path)
    names = {n.id for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Name)}
    assert not {"eval", "exec", "compile", "__import__"} & names


def test_standalone_module_matches_mapc_run(tmp_path):
    """The generated program and its runtime module, run with `python -S -E` (no site-packages:
    no mapc importable), print what `mapc run` prints."""
    entry = (
        "if __name__ == '__main__':\n"
        "    src = SourceFile(sys.argv[1], None, MAX_BYTES, MAX_LINE_BYTES)\n"
        "    write_canonical(map_source, src, sys.stdout.buffer)\n"
    )
    script = tmp_path / "standalone.py"
    script.write_text(_module(entry))
    for path, data in get_target("rlviz").shared_runtime().files_at().items():
        (tmp_path / path).parent.mkdir(exist_ok=True)
        (tmp_path / path).write_bytes(data)
    standalone = subprocess.run([sys.executable, "-S", "-E", str(script), str(EXAMPLE / "results.jsonl")],
                                cwd="/", capture_output=True, timeout=120)
    assert standalone.returncode == 0, standalone.stderr.decode()
    via_cli = subprocess.run([sys.executable, "-m", "mapc.cli", "run", str(EXAMPLE / "spec.yaml"),
                              str(EXAMPLE / "results.jsonl")], cwd=ROOT, capture_output=True, timeout=120)
    assert via_cli.returncode == 0
    assert hashlib.sha256(standalone.stdout).digest() == hashlib.sha256(via_cli.stdout).digest()
    assert standalone.stdout.count(b"\n") > 100


def test_every_spec_path_is_commented_next_to_its_code():
    text = _module()
    for where in ("records.case.id", "records.events.rules[0]", "records.trajectory.signals.reward",
                  "records.events.rules[0].tool_calls"):
        assert where in text, where


def test_field_reads_of_known_objects_lose_their_guard_not_a_calls_parentheses():
    """``assume_dicts``: a guarded read of a variable known to hold an object (or through its
    alias) is a plain ``.get``; parentheses that only held the read as an operand go too, a
    call's stay."""
    from mapc.codegen.expressions import ExprTable

    table = ExprTable()
    table.known_dicts.add("el0")
    table.aliases["c0"] = "o0"
    read = 'el0.get("a") if isinstance(el0, dict) else None'
    alias = 'c0.get("b") if isinstance(c0, dict) else None'
    assert table.assume_dicts(f"jp_to_string({read})") == 'jp_to_string(el0.get("a"))'
    assert table.assume_dicts(f"({read}) == 'x' or [({alias})]") == \
        "el0.get(\"a\") == 'x' or [o0.get(\"b\")]"
    assert table.assume_dicts(f"f(({alias}), {alias})") == 'f(o0.get("b"), o0.get("b"))'
