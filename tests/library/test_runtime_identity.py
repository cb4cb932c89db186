"""The runtime module a build writes is the same bytes for every spec of a target, and the lock
names it with the SHA-256 mapc publishes for it (`mapc runtime`)."""

from __future__ import annotations

import json
from pathlib import Path

from mapc.runtime import RUNTIME_FILE
from mapc.targets import get_target


def check_runtime(folder: Path, lock_folder: Path, target: str, prefix: str = "") -> None:
    shared = get_target(target).shared_runtime()
    assert (folder / RUNTIME_FILE).read_bytes() == shared.text.encode("utf-8"), folder
    lock = json.loads((lock_folder / "mapc.lock.json").read_text(encoding="utf-8"))
    assert lock["runtime"] == {"path": prefix + RUNTIME_FILE, "sha256": shared.sha256}
    assert lock["files"][prefix + RUNTIME_FILE] == shared.sha256


def test_every_library_spec_gets_the_same_rlviz_runtime(library_plugins):
    assert len(library_plugins) >= 10
    for _, plugin in library_plugins.values():
        check_runtime(plugin, plugin, "rlviz")


def test_targets_have_different_runtimes_that_differ_only_in_their_own_modules():
    runtimes = {t: get_target(t).shared_runtime() for t in ("rlviz", "relai", "cap-evolve")}
    assert len({r.sha256 for r in runtimes.values()}) == 3
    assert runtimes["rlviz"].modules == ("jmespath_rt", "mapping_rt", "records_rt", "rlviz_rt")
    assert "relai_main" in runtimes["relai"].units and "relai_main" not in runtimes["cap-evolve"].units
    for r in runtimes.values():
        assert r.text.startswith(f"# mapc {r.mapc_version} {r.target} runtime.")
        compile(r.text, RUNTIME_FILE, "exec")


def test_no_runtime_unit_shadows_a_module_the_runtime_imports():
    """A unit named like an imported module (a ``def signal`` next to ``import signal``)
    replaces the module for every unit of the same file."""
    import ast

    for t in ("rlviz", "relai", "cap-evolve"):
        r = get_target(t).shared_runtime()
        tree = ast.parse(r.text)
        imported = {(a.asname or a.name).split(".")[0] for n in tree.body
                    if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
        defined = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
        assert imported and not imported & defined, (t, imported & defined)
