"""Target atif: a standalone converter from a trace to Agent Trajectory Interchange Format.

Files: ``convert.py`` (the mapping program plus ``atif_rt``; standard library only:
``python3 convert.py TRACE > trajectory.json``), its ``mapc_runtime/``, the spec's fixtures
(with the sibling and subtrajectory files they read) in ``samples/``, and a ``README.md``.
The steps are the ones RELAI's runner writes (``atif_steps_rt``, shared); the built-in
validator (:mod:`mapc.targets.atif.validator`) runs the converter and checks every trajectory
against ATIF's rules.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mapc.codegen.pysrc import comment_text
from mapc.core.diagnostics import Diagnostic
from mapc.spec import ir
from mapc.targets.base import Target, ValidationReport

SAMPLES = "samples"
#: the fixtures' names among the samples (the others are files they read)
SAMPLES_INDEX = "samples.json"


class AtifTarget(Target):
    name = "atif"
    description = "ATIF converter: convert.py TRACE > trajectory.json (Agent Trajectory Interchange Format)"
    runtime_modules = ("eval_rt", "atif_steps_rt", "atif_rt")

    # -- spec rules -----------------------------------------------------------------
    def check(self, spec: ir.Spec) -> list[Diagnostic]:
        diags: list[Diagnostic] = []
        if not spec.fixtures:
            diags.append(spec.diag(
                "missing_fixture", (), "the atif target has no fixture to test convert.py on: the build "
                "cannot check its output", hint="add a small sample trace: `fixtures: [sample.jsonl]`",
                severity="warning"))
        if not any(t.semantic for rule in spec.events.rules for t in rule.emits):
            diags.append(spec.diag(
                "no_conversation", ("records", "events"),
                "no event rule gives role/content/tool_calls, so every ATIF trajectory will have no steps",
                hint="add semantic fields to the event rules, e.g. role: role, content: content",
                severity="warning"))
        return diags

    # -- files ------------------------------------------------------------------------
    def render(self, spec: ir.Spec, program, out_dir: Path) -> dict[str, bytes]:
        from mapc.codegen.program import module_source
        from mapc.runtime.atif_rt import ATIF_SCHEMA_VERSION

        shared = self.shared_runtime()
        entry = self.render_template(
            "convert_entry.py.j2",
            agent={"name": str(spec.target_option("atif", "agent_name", spec.name)),
                   "version": str(spec.target_option("atif", "agent_version", spec.version))})
        convert = module_source(program, entry=entry, docstring=_docstring(spec), header="#!/usr/bin/env python3",
                                with_probe=False, shared=shared)
        samples = _samples(spec, convert, shared)
        readme = self.render_template("README.md.j2", name=spec.name, version=spec.version,
                                      spec_file=Path(spec.file).name, format=spec.source.format,
                                      schema=ATIF_SCHEMA_VERSION,
                                      samples=[Path(fx.resolved).name for fx in spec.fixtures])
        files = {"convert.py": convert.encode("utf-8"), "README.md": readme.encode("utf-8"), **shared.files_at()}
        files.update({f"{SAMPLES}/{name}": data for name, data in samples.items()})
        if spec.fixtures:  # what `mapc validate --target atif DIR` runs the converter on
            index = {"fixtures": [Path(fx.resolved).name for fx in spec.fixtures]}
            files[SAMPLES_INDEX] = (json.dumps(index, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
        return files

    # -- validation ---------------------------------------------------------------------
    def validate_build(self, spec: ir.Spec, out_dir: Path) -> ValidationReport | None:
        return self.validate(out_dir, [], {})

    def validate(self, out_dir: Path, sources: list[Path], options: dict[str, Any]) -> ValidationReport:
        """Run ``convert.py --all`` on each source (default: the samples a build copied, the
        spec's fixtures) and check every trajectory it writes against ATIF's rules."""
        from mapc.targets.atif.validator import run_converter

        out_dir = Path(out_dir)
        convert = out_dir / "convert.py"
        if not sources:
            fixtures = _fixture_names(out_dir)
            sources = [out_dir / SAMPLES / name for name in fixtures]
        progress = options.get("progress")
        items, lines = [], []
        for done, source in enumerate(sources, 1):
            item = run_converter(convert, Path(source))
            items.append(item)
            label = item["source"]
            if item["ok"]:
                lines.append(f"ok {label}: {item['records']} trajectory(ies), {item['warnings']} warning(s)")
            else:
                lines.append(f"FAIL {label}: {item['detail']}")
            if progress is not None:
                progress(done, len(sources), str(source))
        if not items:
            lines.append("no trace to run the converter on (the spec has no fixtures): give traces")
        ok = all(item["ok"] for item in items)
        payload = {"ok": ok, "target": "atif", "results": items}
        return ValidationReport(ok, payload, "\n".join(lines), items=items)


def _fixture_names(out_dir: Path) -> list[str]:
    """The fixtures a build copied into ``samples/`` (not their siblings or subtrajectory
    files), from ``samples.json``; a name that would leave ``samples/`` is not run."""
    try:
        index = json.loads((out_dir / SAMPLES_INDEX).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    names = index.get("fixtures") if isinstance(index, dict) else None
    return [n for n in names or () if isinstance(n, str) and n and "/" not in n and "\\" not in n and n != ".."]


def _samples(spec: ir.Spec, convert: str, shared) -> dict[str, bytes]:
    """``samples/`` name -> bytes: each fixture, the siblings it reads and the subtrajectory
    files it spawns (found as the RLViz target finds its testdata)."""
    from mapc.targets.testdata import read_testdata, subtrajectory_testdata, testdata_files

    data = {name: read_testdata(path) for name, path in sorted(testdata_files(spec).items())}
    data.update(subtrajectory_testdata(spec, convert, shared.files, data, "mapc_atif_converter"))
    return dict(sorted(data.items()))


def _docstring(spec: ir.Spec) -> str:
    from mapc.codegen.summary import header_table

    return (f"ATIF converter generated by mapc: {comment_text(spec.name)} {comment_text(spec.version)}.\n"
            "`python3 convert.py TRACE > trajectory.json` maps the trace and writes its trajectory in\n"
            "Agent Trajectory Interchange Format (`--trajectory ID` picks one of several, `--all`\n"
            "writes every one, a line each); standard library only, the trace is only read.\n\n"
            + header_table(spec, evaluators=False))


TARGET = AtifTarget()
