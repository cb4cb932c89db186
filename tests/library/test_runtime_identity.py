"""The runtime package a build writes is the same bytes for every spec of a target, and the
lock names it with the SHA-256 mapc publishes for it (`mapc runtime`): of its manifest, the
``sha256sum`` lines of its files."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from mapc.core.runtime_files import RUNTIME_PACKAGE, manifest_sha256
from mapc.targets import get_target


def check_runtime(folder: Path, lock_folder: Path, target: str, prefix: str = "") -> None:
    shared = get_target(target).shared_runtime()
    on_disk = sorted(p.relative_to(folder).as_posix() for p in (folder / RUNTIME_PACKAGE).rglob("*"))
    assert on_disk == [path for path, _ in shared.files], folder
    for path, text in shared.files:
        assert (folder / path).read_bytes() == text.encode("utf-8"), (folder, path)
    lock = json.loads((lock_folder / "mapc.lock.json").read_text(encoding="utf-8"))
    assert lock["runtime"] == {"path": prefix + RUNTIME_PACKAGE, "sha256": shared.sha256}
    digests = [(path, hashlib.sha256((folder / path).read_bytes()).hexdigest()) for path in on_disk]
    assert all(lock["files"][prefix + path] == digest for path, digest in digests)
    # `sha256sum mapc_runtime/*.py | sha256sum`, as docs/review.md says
    listing = "".join(f"{d}  {p}\n" for p, d in sorted(digests)).encode()
    assert hashlib.sha256(listing).hexdigest() == manifest_sha256(digests) == shared.sha256


def test_every_library_spec_gets_the_same_rlviz_runtime(library_plugins):
    assert len(library_plugins) >= 10
    for _, plugin in library_plugins.values():
        check_runtime(plugin, plugin, "rlviz")


def test_targets_have_different_runtimes_that_differ_only_in_their_own_modules():
    from mapc.core.runtime_files import CORE

    runtimes = {t: get_target(t).shared_runtime() for t in ("rlviz", "relai", "cap-evolve")}
    assert len({r.sha256 for r in runtimes.values()}) == 3
    assert runtimes["rlviz"].modules == (*CORE, "rlviz_rt")
    assert "relai_main" in runtimes["relai"].units and "relai_main" not in runtimes["cap-evolve"].units
    for r in runtimes.values():
        files = dict(r.files)
        assert files[f"{RUNTIME_PACKAGE}/__init__.py"].startswith(f"# mapc {r.mapc_version} {r.target} runtime.")
        for path, text in r.files:
            compile(text, path, "exec")


def _top_imports(text: str) -> set[str]:
    """The sibling modules a runtime file imports at its top (not inside a function)."""
    return {line.split()[1][1:] for line in text.splitlines() if line.startswith("from .")}


def test_the_stream_module_holds_what_only_a_stream_runs():
    """A probe imports the modules its entry names: never ``stream``, whose definitions (the
    readers, the id bookkeeping, the writer) only mapping a source runs (D135)."""
    files = {path.split("/")[-1][:-3]: text for path, text in get_target("rlviz").shared_runtime().files}
    for name in ("SourceFile", "MapState", "IdTable", "write_canonical"):
        assert f"\ndef {name}(" in files["stream"] or f"\nclass {name}" in files["stream"], name
    for name in ("rlviz_main", "rlviz_probe", "rlviz_stream"):
        assert f"\ndef {name}(" in files["rlviz_rt"], name
    # the modules an entry names reach `stream` only inside the functions that need it
    for module in ("jmespath_rt", "mapping_rt", "records_rt", "sessions_rt", "rlviz_rt"):
        assert "stream" not in _top_imports(files[module]), module
    assert "    from .stream import MapState, SourceFile, write_canonical" in files["rlviz_rt"]
    assert "\ndef jp_sort_by(" in files["jmespath_more"] and "\ndef jp_type(" in files["jmespath_rt"]


def test_what_few_sources_need_is_in_modules_loaded_on_first_use():
    """A stream compiles neither what only a probe runs (reading and parsing a prefix), nor CSV
    unless its source is CSV, nor the JSON document reader unless a document streams (nor its
    code for values longer than a window unless it meets one, D97), nor what stops a stream
    at a host's output limits unless it reaches them (D96), nor `iso8601()` (and `datetime`)
    until it is called (D79), nor what maps a `subtrajectory` unless the spec has one (D109):
    each is a module of its own that its callers import inside the function that needs it."""
    r = get_target("rlviz").shared_runtime()
    files = {path.split("/")[-1][:-3]: text for path, text in r.files}
    owners = {"sniff": ("probe_source", "parse_prefix", "_PrefixParser", "read_prefix"),
              "csv": ("csv_rows", "csv_probe_values", "csv_header", "csv_record", "CSV_CONVERTERS"),
              "document": ("JsonDocumentReader",), "timestamps": ("iso8601", "jp_epoch_text"),
              "document_long": ("skip_long", "skip_long_string", "read_long", "whole_document", "_STRING_BODY"),
              "limits": ("output_limit", "record_label"),
              "merge": ("MergeGroup", "merge_step"),
              "subtrajectory": ("map_subtrajectory", "subtrajectory_file", "claim_subtrajectory",
                                "Subtrajectories", "MAX_SUBTRAJECTORY_DEPTH", "MAX_SUBTRAJECTORY_FILES")}
    stream_side = ("mapping_rt", "records_rt", "jmespath_rt", "sessions_rt", "rlviz_rt", "stream")
    for module, names in owners.items():
        for name in names:
            defined = [m for m, text in files.items()
                       if f"\nclass {name}" in text or f"\n{name} = " in text or f"\ndef {name}(" in text]
            assert defined == [module], (name, defined)
        for other in stream_side:
            assert module not in _top_imports(files[other]), (module, other)
    assert "        from .sniff import probe_source" in files["probe"]
    assert "        from .document import JsonDocumentReader" in files["stream"]
    assert "        from .document_long import skip_long" in files["document"]  # a value longer than a window
    assert "        from .limits import output_limit" in files["stream"]  # output at a host's limits (D96)
    assert "        from .subtrajectory import claim_subtrajectory" in files["stream"]  # MapState.level (D109)
    assert "    from .timestamps import iso8601" in files["jmespath_rt"]
    assert "    from .merge import MergedElements as merged" in files["sessions_rt"]
    for target in ("relai", "cap-evolve"):  # their runners load these modules on first use too
        assert "csv.py" in "".join(p for p, _ in get_target(target).shared_runtime().files)


def test_no_runtime_unit_shadows_a_module_the_runtime_imports():
    """A unit named like an imported module (a ``def signal`` next to ``import signal``)
    replaces the module for every unit of the same file."""
    import ast

    for t in ("rlviz", "relai", "cap-evolve"):
        for path, text in get_target(t).shared_runtime().files:
            tree = ast.parse(text)
            imported = {(a.asname or a.name).split(".")[0] for n in tree.body
                        if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
            defined = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
            assert not imported & defined, (t, path, imported & defined)
