"""An entry file runs only with the runtime it was built with (D132), under the real hosts.

Each build's ``mapc_runtime/__init__.py`` carries, in its header comment, its title and the
SHA-256 of its other files (the package reads it as ``RUNTIME``); each entry file compares it
with its own copy before it takes a name from the package. A ``mapc_runtime/`` from another build (another mapc version, another target) fails
with one line naming both and the fix: on stderr with exit status 1 run as a script
(RLViz, RELAI, ATIF), as an ImportError imported (cap-evolve's loader). The unmodified
builds pass the real hosts in test_runtime_module.py.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import mapc
import mapc.core.runtime_files as runtime
from mapc.pipeline.build import build, resolve_target

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "verifiers-math"
#: where each target's entry file is, in its output folder
ENTRIES = {"rlviz": "adapter.py", "cap-evolve": "adapter.py", "atif": "convert.py",
           "relai": ".relai/custom-adaptor/verifiers-math/run.py"}


def _built(tmp_path: Path, target: str) -> Path:
    work = tmp_path / "example"
    if not work.exists():
        shutil.copytree(EXAMPLE, work)
    out = tmp_path / target
    result = build(work / "spec.yaml", target, out)
    assert result.ok, [d.format() for d in result.diagnostics]
    return out / ENTRIES[target]


def _other_version(target: str, monkeypatch) -> runtime.SharedRuntime:
    """``target``'s runtime as mapc 0.0.9 would write it (same code, another version)."""
    with monkeypatch.context() as patch:
        patch.setattr(runtime, "__version__", "0.0.9")  # the version a runtime package names
        runtime._shared_runtime.cache_clear()
        try:
            return resolve_target(target).shared_runtime()
        finally:
            runtime._shared_runtime.cache_clear()


def _swap(entry: Path, shared: runtime.SharedRuntime) -> None:
    """Replace the runtime next to ``entry`` by ``shared``'s files."""
    shutil.rmtree(entry.parent / runtime.RUNTIME_PACKAGE)
    for path, data in shared.files_at().items():
        (entry.parent / path).parent.mkdir(exist_ok=True)
        (entry.parent / path).write_bytes(data)


def _one_line(text: str, found: str, built: str) -> None:
    assert text.count("\n") <= 1 and "Traceback" not in text, text
    assert f"mapc_runtime/ is the {found} (" in text and f"not the {built} (" in text, text
    assert "rebuild it" in text and "restore mapc_runtime/ from the build" in text, text


@pytest.mark.parametrize("target", sorted(ENTRIES))
def test_a_runtime_of_another_version_fails_at_import_with_one_line(target, tmp_path, monkeypatch):
    entry = _built(tmp_path, target)
    _swap(entry, _other_version(target, monkeypatch))
    run = subprocess.run([sys.executable, entry.name, "--help"], cwd=entry.parent, capture_output=True,
                         text=True, timeout=60)
    assert run.returncode == 1 and run.stdout == ""
    _one_line(run.stderr, f"mapc 0.0.9 {target} runtime", f"mapc {mapc.__version__} {target} runtime")
    assert not list(entry.parent.rglob("__pycache__"))
    # imported (as cap-evolve's loader does): an ImportError with the same line
    spec = importlib.util.spec_from_file_location("swapped_entry", entry)
    sys.path.insert(0, str(entry.parent))
    try:
        with pytest.raises(ImportError) as raised:
            spec.loader.exec_module(importlib.util.module_from_spec(spec))
    finally:
        sys.path.remove(str(entry.parent))
        for name in [n for n in sys.modules if n.split(".")[0] == runtime.RUNTIME_PACKAGE]:
            del sys.modules[name]
    assert str(raised.value) == run.stderr.strip()


def test_a_runtime_of_another_target_fails_with_both_names(tmp_path):
    entry = _built(tmp_path, "atif")
    _swap(entry, resolve_target("rlviz").shared_runtime())
    run = subprocess.run([sys.executable, entry.name, "x"], cwd=entry.parent, capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 1
    _one_line(run.stderr, f"mapc {mapc.__version__} rlviz runtime", f"mapc {mapc.__version__} atif runtime")


def test_the_stamp_is_the_sha256_of_the_parts_manifest(tmp_path):
    """``RUNTIME``'s digest is ``sha256sum`` of every part but ``__init__.py``, piped to sha256sum."""
    entry = _built(tmp_path, "rlviz")
    package = entry.parent / runtime.RUNTIME_PACKAGE
    lines = "".join(f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {runtime.RUNTIME_PACKAGE}/{p.name}\n"
                    for p in sorted(package.glob("*.py"), key=lambda p: p.name.encode()) if p.name != "__init__.py")
    shared = resolve_target("rlviz").shared_runtime()
    assert shared.parts_sha256 == hashlib.sha256(lines.encode()).hexdigest()
    header = f"# RUNTIME: {shared.title}\n# RUNTIME SHA-256: {shared.parts_sha256}\n"
    assert header in (package / "__init__.py").read_text()
    assert f'RUNTIME = (\n    "{shared.title}",\n    "{shared.parts_sha256}",\n)\n' in entry.read_text()


def test_a_runtime_without_its_stamp_fails_with_one_line(tmp_path):
    """mapc's own ``mapc/runtime/`` copied in place of the build's (no header: no stamp)."""
    entry = _built(tmp_path, "rlviz")
    init = entry.parent / runtime.RUNTIME_PACKAGE / "__init__.py"
    init.write_text(runtime.strip_header(init.read_text()))
    run = subprocess.run([sys.executable, entry.name, "probe"], cwd=entry.parent, capture_output=True,
                         text=True, timeout=60)
    assert run.returncode == 1 and run.stdout == ""
    _one_line(run.stderr, "runtime of another mapc version", f"mapc {mapc.__version__} rlviz runtime")


def test_real_rlviz_reports_a_swapped_runtime_as_a_failure(real_rlviz, tmp_path, monkeypatch):
    entry = _built(tmp_path, "rlviz")
    _swap(entry, _other_version("rlviz", monkeypatch))
    fixture = entry.parent / "testdata" / "results.jsonl"
    done = subprocess.run([str(real_rlviz), "--json", str(entry.parent), str(fixture)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode != 0
    error = json.loads(done.stdout or done.stderr)
    assert error["code"] == "plugin_validate_failed" and error["phase"] == "probe", error
    _one_line(error["error"].split(": exit status 1: ", 1)[1], "mapc 0.0.9 rlviz runtime",
              f"mapc {mapc.__version__} rlviz runtime")


def test_real_capevolve_check_reports_a_swapped_runtime(real_capevolve, tmp_path, monkeypatch):
    entry = _built(tmp_path, "cap-evolve")
    _swap(entry, _other_version("cap-evolve", monkeypatch))
    check = subprocess.run([str(real_capevolve / "check.sh"), str(entry), str(entry.parent)],
                           capture_output=True, text=True, timeout=300)
    report = json.loads(check.stdout.strip().splitlines()[-1])
    assert report["ok"] is False
    (problem,) = report["problems"]
    assert problem.startswith("could not load adapter: "), problem
    _one_line(problem.removeprefix("could not load adapter: "), "mapc 0.0.9 cap-evolve runtime",
              f"mapc {mapc.__version__} cap-evolve runtime")
