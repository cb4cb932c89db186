"""The sample data a target ships with its output (RLViz's ``testdata/``, ATIF's ``samples/``):
each fixture of the spec, the sibling files it reads, and the subtrajectory files its rules
map. Shared by the targets, so that no target imports another."""

from __future__ import annotations

import io
import os
from pathlib import Path, PurePosixPath

from mapc.spec import ir


def testdata_files(spec: ir.Spec) -> dict[str, Path]:
    """``testdata/`` name -> file: each fixture, and the sibling files it reads."""
    out: dict[str, Path] = {}
    for fx in spec.fixtures:
        path = Path(fx.resolved)
        out.setdefault(path.name, path)
        for _, candidates in spec.source.siblings:
            sibling = _sibling_of(path, candidates)
            if sibling is not None:
                out.setdefault(sibling[0], sibling[1])
    return out


def _sibling_of(fixture: Path, candidates) -> tuple[str, Path] | None:
    """The sibling the adapter would read next to ``fixture`` (first existing candidate): a
    regular file that stays in the fixture's folder (or an allowed root), never a link out."""
    from mapc.core import safeio

    stem = fixture.stem
    for template in candidates:
        name = template.replace("{stem}", stem).replace("{name}", fixture.name)
        rel = PurePosixPath(name)
        if rel.is_absolute() or ".." in rel.parts or len(rel.parts) != 1:
            continue  # only plain names next to the fixture are copied
        try:
            return name, safeio.contained_file(fixture.parent / name, safeio.input_roots(fixture.parent))
        except (OSError, safeio.UnsafePath):
            continue
    return None


def read_testdata(path: Path) -> bytes:
    """A fixture or sibling, read again at render time with the same containment check."""
    from mapc.core import safeio

    return safeio.read_contained(path, safeio.input_roots(path.parent))


def subtrajectory_testdata(spec: ir.Spec, adapter: str, runtime: tuple, data: dict[str, bytes],
                           module_name: str) -> dict[str, bytes]:
    """The files a fixture's `subtrajectory` rules map (D109), by their path relative to the
    fixture's folder: copied beside the fixtures so that the host maps them too. Found by mapping each
    fixture where it is (the runtime's containment: inside its folder, regular files)."""
    if not spec.subtrajectories:
        return {}
    from mapc.core import safeio
    from mapc.codegen.program import load_module, runtime_names

    ns = {**runtime_names(runtime), **load_module(adapter, module_name, runtime)}
    out: dict[str, bytes] = {}
    for fx in spec.fixtures:
        folder = Path(fx.resolved).parent
        st = ns["MapState"]()
        try:
            src = ns["SourceFile"](fx.resolved, str(folder), ns["MAX_BYTES"], ns["MAX_LINE_BYTES"])
            ns["write_canonical"](ns["map_source"], src, io.BytesIO(), st)
        except Exception:  # the validator reports it, with context
            pass
        subs = getattr(st, "subtrajectories", None)
        for real in sorted(subs.files - {os.path.realpath(fx.resolved)}) if subs else ():
            name = Path(os.path.relpath(real, os.path.realpath(folder))).as_posix()
            if name not in data:
                out.setdefault(name, safeio.read_contained(real, safeio.input_roots(folder)))
    return out
