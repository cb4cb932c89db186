"""Target ``ndjson-cli``: a standalone ``convert.py`` that maps one source trace to canonical NDJSON.

An example of a target shipped as its own package (see mapc's docs/targets.md): it is
found through the ``mapc.targets`` entry point in pyproject.toml, renders its own
templates with mapc's escaping filters, generates code from the spec's mapping
program, and validates its output by running it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from mapc.targets import Target, ValidationReport


class NdjsonCliTarget(Target):
    name = "ndjson-cli"
    description = "a standalone convert.py: one source trace in, canonical NDJSON out"
    templates = Path(__file__).resolve().parent / "templates"

    def check(self, spec):
        if spec.fixtures:
            return []
        return [spec.diag("missing_fixture", (), "the ndjson-cli target needs a fixture to test convert.py on",
                          hint="add a small sample trace: `fixtures: [sample.jsonl]`")]

    def render(self, spec, program, out_dir):
        from mapc.codegen.program import module_source

        convert = module_source(
            program,
            entry=self.render_template("convert_entry.py.j2", spec_name=spec.name, format=spec.source.format),
            docstring=f"Convert {spec.source.format} traces to canonical NDJSON (spec {spec.name}).",
            header="#!/usr/bin/env python3",
            units=("write_canonical", "SourceFile", "MapState", "one_line", "warn_stderr"),
            with_probe=False,
        )
        samples = {Path(fx.resolved).name: Path(fx.resolved) for fx in spec.fixtures}
        files = {
            "convert.py": convert.encode("utf-8"),
            "README.md": self.render_template("README.md.j2", name=spec.name, format=spec.source.format,
                                              samples=sorted(samples)).encode("utf-8"),
        }
        for name, path in sorted(samples.items()):
            files[f"samples/{name}"] = path.read_bytes()
        return files

    def validate_build(self, spec, out_dir):
        return self.validate(out_dir, [], {})

    def validate(self, out_dir, sources, options):
        out_dir = Path(out_dir)
        sources = list(sources) or sorted((out_dir / "samples").iterdir())
        progress = options.get("progress")
        items, lines = [], []
        for done, source in enumerate(sources, 1):
            item = _check(out_dir / "convert.py", Path(source))
            items.append(item)
            verdict = "ok" if item["ok"] else f"FAIL ({item['error']})"
            lines.append(f"ndjson-cli: {verdict} {source}: {item['records']} records")
            if progress is not None:
                progress(done, len(sources), str(source))
        ok = all(item["ok"] for item in items)
        return ValidationReport(ok, {"ok": ok, "results": items}, "\n".join(lines), items=items)


def _check(convert: Path, source: Path) -> dict:
    """Run convert.py on ``source``: every line JSON, ending with a complete record that counts them."""
    proc = subprocess.run([sys.executable, str(convert), str(source)], capture_output=True, timeout=120)
    item = {"source": str(source), "records": 0, "warnings": 0, "ok": False, "error": None}
    if proc.returncode != 0:
        item["error"] = proc.stderr.decode("utf-8", "replace").strip() or f"exit {proc.returncode}"
        return item
    try:
        records = [json.loads(line) for line in proc.stdout.splitlines()]
    except ValueError as exc:
        item["error"] = f"not NDJSON: {exc}"
        return item
    last = records[-1] if records else {}
    item["records"] = len(records) - 1
    item["warnings"] = last.get("warnings", 0)
    if last.get("record_type") != "complete" or last.get("records") != len(records) - 1:
        item["error"] = "the stream does not end with a complete record counting it"
        return item
    item["ok"] = True
    return item


TARGET = NdjsonCliTarget()
