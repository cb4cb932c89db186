"""Target rlviz: an RLViz adapter plugin directory that passes RLViz's own validation.

Files: ``rlviz-plugin.yaml`` (in the YAML subset RLViz parses), ``adapter.py``
(the mapping program plus the process protocol from ``rlviz_rt``; standard
library only), ``test_adapter.py`` and ``testdata/cases.json`` (RLViz's
scaffold contract), the spec's fixtures (and the sibling files they use)
copied into ``testdata/``, and a ``README.md`` for the reviewer. The built-in
validator (:mod:`mapc.targets.rlviz.validator`) runs the plugin exactly as
``rlviz plugin validate`` does.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

from mapc.codegen.pysrc import comment_text, description_lines, one_line
from mapc.core.diagnostics import Diagnostic
from mapc.spec import ir
from mapc.targets.base import Target, ValidationReport
from mapc.targets.testdata import read_testdata, subtrajectory_testdata, testdata_files

LARGE_FIXTURE_BYTES = 256 << 10
CASES = "testdata/cases.json"
_FIXTURES_HINT = (
    "add a small synthetic sample trace next to the spec: `fixtures: [sample.jsonl]` "
    "(or `fixtures: [{path: sample.jsonl, min_records: 5}]`)"
)


class RlvizTarget(Target):
    name = "rlviz"
    description = "RLViz adapter plugin: rlviz-plugin.yaml, adapter.py, test_adapter.py, testdata/"
    runtime_modules = ("rlviz_rt",)
    semantic_views = False  # RLViz reads canonical records only

    def raw_events(self, spec: ir.Spec) -> bool:
        return bool(spec.target_option(self.name, "raw", False))  # targets.rlviz.raw

    # -- spec rules -----------------------------------------------------------------
    def check(self, spec: ir.Spec) -> list[Diagnostic]:
        diags: list[Diagnostic] = []
        if not spec.fixtures:
            diags.append(spec.diag(
                "missing_fixture", (),
                "the rlviz target needs at least one fixture: a small sample trace that "
                "test_adapter.py and mapc's validator run the adapter on",
                hint=_FIXTURES_HINT,
            ))
            return diags
        names: dict[str, int] = {}
        for i, fx in enumerate(spec.fixtures):
            path = Path(fx.resolved)
            if path.name == "cases.json":
                diags.append(spec.diag("reserved_fixture_name", ("fixtures", i),
                                       "a fixture cannot be named cases.json (testdata/cases.json lists the cases)",
                                       hint="rename the sample file"))
            if path.name in names:
                first = names[path.name]
                diags.append(spec.diag("duplicate_fixture_name", ("fixtures", i),
                                       f"fixtures[{first}] and fixtures[{i}] are both named {path.name!r}; "
                                       "fixtures are copied side by side into testdata/",
                                       hint="give each fixture its own file name"))
            names.setdefault(path.name, i)
            size = path.stat().st_size
            if size > LARGE_FIXTURE_BYTES:
                diags.append(spec.diag(
                    "large_fixture", ("fixtures", i),
                    f"fixture {fx.path} is {size} bytes; plugin testdata should be small "
                    f"(under {LARGE_FIXTURE_BYTES >> 10} KiB) and synthetic",
                    hint="cut the sample down to a few records", severity="warning",
                ))
        return diags

    # -- files ------------------------------------------------------------------------
    def render(self, spec: ir.Spec, program, out_dir: Path) -> dict[str, bytes]:
        from mapc.codegen.program import module_source

        shared = self.shared_runtime()
        adapter = module_source(
            program,
            entry=self.render_template("adapter_entry.py.j2"),
            docstring=_docstring(spec),
            header="#!/usr/bin/env python3",
            shared=shared,
        )
        data = {name: read_testdata(path) for name, path in sorted(testdata_files(spec).items())}
        data.update(subtrajectory_testdata(spec, adapter, shared.files, data, "mapc_rlviz_adapter"))
        counts = _record_counts(spec, adapter, shared.files, data, out_dir)
        cases = [
            {
                "source": Path(fx.resolved).name,
                "expected_format": spec.source.format,
                "min_records": fx.min_records or counts.get(Path(fx.resolved).name) or 1,
            }
            for fx in spec.fixtures
        ]
        files: dict[str, bytes] = {
            "adapter.py": adapter.encode("utf-8"),
            **shared.files_at(),
            "rlviz-plugin.yaml": self.render_template(
                "rlviz-plugin.yaml.j2", plugin_name=spec.name, version=spec.version,
                description=one_line(spec.description) or f"RLViz adapter for {spec.source.format} traces",
            ).encode("utf-8"),
            "test_adapter.py": self.render_template("test_adapter.py.j2").encode("utf-8"),
            CASES: (json.dumps({"schema_version": 1, "cases": cases}, indent=2, ensure_ascii=False) + "\n").encode(),
            "README.md": self.render_template("README.md.j2", **_readme_context(spec, cases)).encode("utf-8"),
        }
        for name, content in data.items():
            files[f"testdata/{name}"] = content
        return files

    # -- validation --------------------------------------------------------------------
    def validate_build(self, spec: ir.Spec, out_dir: Path) -> ValidationReport | None:
        return self.validate(out_dir, [], {"strict": True})  # mapc's own output meets RLViz's schemas too

    def validate(self, out_dir: Path, sources: list[Path], options: dict[str, Any]) -> ValidationReport:
        from mapc.targets.rlviz.validator.cases import validate_plugin_dir

        return validate_plugin_dir(Path(out_dir), [Path(s) for s in sources], jobs=int(options.get("jobs") or 1),
                                   progress=options.get("progress"), strict=bool(options.get("strict")))



def _docstring(spec: ir.Spec) -> str:
    from mapc.codegen.summary import header_table

    return (f"RLViz adapter {comment_text(spec.name)} {comment_text(spec.version)}: "
            "`python3 adapter.py probe|stream --request PATH`.\n\n"
            + header_table(spec, evaluators=False))


def _record_counts(spec: ir.Spec, adapter: str, runtime: tuple, data: dict[str, bytes],
                   out_dir: Path) -> dict[str, int]:
    """Records each fixture yields today (its min_records unless the spec sets one), mapped from
    a private copy of ``testdata/`` beside the output (:mod:`mapc.core.scratch`)."""
    from mapc.codegen.program import load_module, runtime_names

    ns = {**runtime_names(runtime), **load_module(adapter, "mapc_rlviz_adapter", runtime)}
    counts: dict[str, int] = {}
    from mapc.core.scratch import scratch

    with scratch("rlviz-count", near=out_dir) as tmp:
        for name, content in data.items():
            Path(tmp, name).parent.mkdir(parents=True, exist_ok=True)  # a subtrajectory's folder
            Path(tmp, name).write_bytes(content)
        for fx in spec.fixtures:
            name = Path(fx.resolved).name
            out = io.BytesIO()
            try:
                src = ns["SourceFile"](os.path.join(tmp, name), tmp, ns["MAX_BYTES"], ns["MAX_LINE_BYTES"])
                ns["write_canonical"](ns["map_source"], src, out, ns["MapState"]())
            except Exception:  # the validator reports it, with context
                continue
            counts[name] = out.getvalue().count(b"\n") - 1
    return counts


def _readme_context(spec: ir.Spec, cases: list[dict]) -> dict[str, Any]:
    src = spec.source
    probe = src.probe
    conditions = [f"fields {', '.join(probe.require_text)} are present"] if probe.require_text else []
    if probe.when is not None:
        conditions.append(f"{probe.when.text} holds")
    scope = {"jsonl": "on every probed line", "csv": "on every probed row"}.get(src.container, "in the document")
    probe_text = (" and ".join(conditions) + f" {scope}") if conditions else "the prefix parses as JSON"
    size = f"sources up to {src.max_bytes} bytes (a gzip file: decompressed)"
    if src.container == "jsonl":
        container_text = "JSON Lines, read one line at a time (memory stays flat)"
        bounds = f"{size}, lines up to {src.max_line_bytes} bytes; invalid lines are " + (
            "skipped with a warning" if src.invalid_lines == "skip" else "an error")
    elif src.container == "csv":
        container_text = "CSV with a header row, read one row at a time (memory stays flat)"
        bounds = f"{size}, rows up to {src.max_line_bytes} bytes; ragged rows and bad typed cells are " + (
            "skipped with a warning" if src.invalid_lines == "skip" else "an error")
    else:
        from mapc.analysis.streaming import stream_plan

        container_text = "one JSON document"
        bounds = size
        if stream_plan(spec).plan is not None:
            bounds += (f", each element of the streamed array and each member read up to {src.max_line_bytes} "
                       "characters")
    from mapc.runtime.rlviz_rt import RLVIZ_OUTPUT_LIMITS

    output, record, _ = RLVIZ_OUTPUT_LIMITS
    bounds += (f"; output up to {output >> 20} MiB, a record up to {record >> 20} MiB (what RLViz reads: the "
               "stream stops with an error before passing them)")
    levels = []
    parent = "source file"
    for lv in spec.levels:
        how = f"one per element of {lv.scope.loops[0].each.text}" if lv.scope.loops else f"one per {parent}"
        if not lv.declared:
            how += " (not in the spec: defaults)"
        levels.append(f"{lv.name}: {how}")
        parent = lv.name
    ev = spec.events
    each = f"one per element of {ev.scope.loops[0].each.text}" if ev.scope.loops else "one per trajectory"
    levels.append(f"events: {each}, mapped by the first matching rule:")
    rules = []
    for rule in ev.rules:
        when = f"when {rule.when.text}" if rule.when is not None else "otherwise"
        if rule.skip:
            rules.append(f"skipped {when}")
        for t in rule.emits:
            extra = f" (and {t.when.text})" if t.when is not None else ""
            rules.append(f"{t.kind} {when}{extra}")
    signal_names = []
    for lv in spec.levels:
        signal_names += [_signal_name(s) for s in lv.signals]
    for rule in ev.rules:
        for t in rule.emits:
            signal_names += [_signal_name(s) for s in t.signals]
    siblings = ", ".join(" or ".join(c) for _, c in src.siblings)
    raw = ev.raw or bool(spec.target_option("rlviz", "raw", False)) or any(
        t.raw for rule in ev.rules for t in rule.emits)
    return {
        "plugin_name": spec.name, "version": spec.version, "description": one_line(spec.description),
        "spec_file": Path(spec.file).name, "format": src.format, "container": src.container,
        "container_text": container_text, "probe_bytes": probe.bytes, "probe_lines": probe.lines,
        "confidence": probe.confidence, "probe_text": probe_text, "bounds_text": bounds,
        "siblings": siblings, "levels": levels, "signals": ", ".join(dict.fromkeys(signal_names)),
        "raw": raw, "cases": cases, "rules": rules,
    }


def _signal_name(sig: ir.SignalSpec) -> str:
    if isinstance(sig.name, ir.Literal):
        return str(sig.name.value)
    return str(getattr(sig.name, "text", "(computed)"))


TARGET = RlvizTarget()
