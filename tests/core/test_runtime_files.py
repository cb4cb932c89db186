"""The runtime a build ships is mapc's own source (issue 29): every file in ``mapc_runtime/`` is
a file of ``mapc/runtime/``, byte for byte below its header comment; the modules import only
the standard library and each other, and name nothing they do not define or import."""

from __future__ import annotations

import ast
import builtins
import subprocess
import symtable
import sys
from pathlib import Path

import pytest

from mapc.core import runtime_files
from mapc.pipeline.build import build
from mapc.targets import builtin_targets

ROOT = Path(__file__).resolve().parents[2]
MODULES = [*runtime_files.all_modules(), "__init__"]


def _targets():
    return sorted(builtin_targets())


@pytest.mark.parametrize("target", _targets())
def test_every_shipped_file_is_a_source_file_below_its_header(target):
    from mapc.targets import get_target

    shared = get_target(target).shared_runtime()
    assert {path for path, _ in shared.files} == {f"mapc_runtime/{m}.py" for m in (*shared.modules, "__init__")}
    for path, text in shared.files:
        module = path.removeprefix("mapc_runtime/").removesuffix(".py")
        assert text.startswith("# ") and shared.title in text.splitlines()[0], path
        assert runtime_files.strip_header(text) == runtime_files.source_text(module), path
    assert runtime_files.source_diff(dict(shared.files)) == []


def test_a_built_folder_holds_the_same_bytes_and_a_changed_one_shows_a_diff(tmp_path):
    out = tmp_path / "out"
    assert build(ROOT / "examples/verifiers-math/spec.yaml", "rlviz", out).ok
    files = {f"mapc_runtime/{p.name}": p.read_text() for p in (out / "mapc_runtime").glob("*.py")}
    assert len(files) >= 15 and runtime_files.source_diff(files) == []
    files["mapc_runtime/limits.py"] += "print('hi')\n"
    diff = runtime_files.source_diff(files)
    assert diff[:2] == ["--- mapc/runtime/limits.py", "+++ mapc_runtime/limits.py"] and "+print('hi')" in diff
    files["mapc_runtime/json.py"] = "x = 1\n"  # a file mapc has no source of
    assert "--- /dev/null" in runtime_files.source_diff(files)


@pytest.mark.parametrize("module", MODULES)
def test_a_runtime_module_imports_only_the_standard_library_and_its_siblings(module):
    tree = ast.parse(runtime_files.source_text(module))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            assert node.level == 1 and node.module in runtime_files.all_modules(), (module, node.lineno)
            defined = runtime_files.defined_names(node.module)
            assert all(a.name in defined for a in node.names), (module, node.lineno)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [node.module] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            assert all(n.split(".")[0] in sys.stdlib_module_names for n in names), (module, node.lineno)
            assert all(n.split(".")[0] != "mapc" for n in names)


@pytest.mark.parametrize("module", MODULES)
def test_a_runtime_module_has_no_free_name(module):
    """Every global a module's code reads is bound at its top (def, class, assignment, import)
    or a builtin: no unit relies on a name a linker would paste in."""
    text = runtime_files.source_text(module)
    top = symtable.symtable(text, f"{module}.py", "exec")
    bound = {s.get_name() for s in top.get_symbols() if s.is_assigned() or s.is_imported()}
    known = bound | set(dir(builtins)) | {"__file__", "__spec__", "__path__", "__name__"}
    free: set[str] = set()
    scopes = [top]
    while scopes:
        scope = scopes.pop()
        free |= {s.get_name() for s in scope.get_symbols()
                 if s.is_referenced() and (scope is top or s.is_global()) and s.get_name() not in known}
        scopes.extend(scope.get_children())
    assert not free, (module, sorted(free))


def test_the_modules_import_without_mapc_and_in_any_order(tmp_path):
    """Copied alone (as a build does), each module imports in a fresh interpreter without
    site-packages: its sibling imports are all it needs."""
    package = tmp_path / "mapc_runtime"
    package.mkdir()
    for module in MODULES:
        (package / f"{module}.py").write_text(runtime_files.source_text(module))
    script = "import importlib, sys\nsys.path.insert(0, sys.argv[1])\nimportlib.import_module('mapc_runtime.' + sys.argv[2])\n"
    for module in runtime_files.all_modules():
        done = subprocess.run([sys.executable, "-I", "-S", "-B", "-c", script, str(tmp_path), module], cwd=tmp_path,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, (module, done.stderr)


def test_names_an_entry_imports_come_from_small_modules_that_load_the_heavy_ones_later():
    where = runtime_files.where_defined(runtime_files.CORE)
    assert where["MergedElements"] == "sessions_rt" and where["jp_iso8601"] == "jmespath_rt"
    for module in ("sessions_rt", "jmespath_rt", "mapping_rt", "records_rt"):
        tops = {node.module for node in ast.parse(runtime_files.source_text(module)).body
                if isinstance(node, ast.ImportFrom)}
        assert tops.isdisjoint({"merge", "timestamps", "stream", "datetime", "csv", "document"}), module
