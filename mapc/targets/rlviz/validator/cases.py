"""``mapc validate --target rlviz``: RLViz's validation on given sources or on testdata/.

With sources, each is validated as ``rlviz plugin validate`` would. Without,
the plugin's ``testdata/cases.json`` is read with the rules of RLViz's
scaffold (exact keys, fixtures inside testdata/) and each case must validate
with the expected format and at least ``min_records`` records — what
``python3 test_adapter.py`` checks with RLViz installed.

What RLViz's published schemas require beyond what RLViz enforces is shown as
"beyond RLViz" warnings (and listed under ``beyond_rlviz`` in JSON); with
``strict`` (``mapc validate --strict``, and every ``mapc build``) they fail.
"""

from __future__ import annotations

import json
import os
from pathlib import Path, PurePosixPath
from typing import Any, Callable

from mapc.targets.base import ValidationReport
from mapc.targets.rlviz.validator.validate import Report, ValidationFailure, load_plugin, validate_adapter

CASE_KEYS = {"source", "expected_format", "min_records"}


class CaseFileError(ValueError):
    """testdata/cases.json breaks the scaffold's rules."""


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def read_cases(plugin_dir: Path) -> list[tuple[str, Path, str, int]]:
    """``(label, fixture, expected_format, min_records)`` per case of testdata/cases.json."""
    testdata = (plugin_dir / "testdata").resolve()
    try:
        doc = json.loads((testdata / "cases.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise CaseFileError(f"testdata/cases.json cannot be read: {exc}") from None
    if not isinstance(doc, dict) or set(doc) != {"schema_version", "cases"}:
        raise CaseFileError("testdata/cases.json must have exactly the keys schema_version and cases")
    if not _count(doc["schema_version"]) or doc["schema_version"] != 1:
        raise CaseFileError("testdata/cases.json: schema_version must be 1")
    if not isinstance(doc["cases"], list) or not doc["cases"]:
        raise CaseFileError("testdata/cases.json: cases must be a non-empty list")
    out = []
    for n, case in enumerate(doc["cases"], start=1):
        if not isinstance(case, dict) or set(case) != CASE_KEYS:
            raise CaseFileError(f"case {n}: needs exactly source, expected_format and min_records")
        source, fmt, minimum = case["source"], case["expected_format"], case["min_records"]
        if not isinstance(fmt, str) or not fmt:
            raise CaseFileError(f"case {n}: expected_format must be a non-empty string")
        if not _count(minimum) or minimum < 1:
            raise CaseFileError(f"case {n}: min_records must be an integer of at least 1")
        if not isinstance(source, str) or not source:
            raise CaseFileError(f"case {n}: source must be a non-empty relative path")
        rel = PurePosixPath(source)
        if rel.is_absolute() or ".." in rel.parts:
            raise CaseFileError(f"case {n}: source {source!r} must stay inside testdata/")
        path = Path(os.path.realpath(testdata / source))
        if os.path.commonpath([str(testdata), str(path)]) != str(testdata) or not path.is_file():
            raise CaseFileError(f"case {n}: fixture {source!r} is not a file inside testdata/")
        out.append((f"testdata/{source}", path, fmt, minimum))
    return out


def describe(failure: ValidationFailure) -> str:
    """The failure's message plus the context RLViz attaches (phase, kind, pass, line, record, field)."""
    where = ", ".join(f"{k} {_clip(v, 100)}" for k, v in (("phase", failure.phase), ("kind", failure.kind),
                                                          ("pass", failure.pass_), ("line", failure.line),
                                                          ("record", failure.record_id), ("field", failure.field)) if v)
    return _clip(failure.error, 500) + (f" [{where}]" if where else "")


def _clip(value, limit: int) -> str:
    """Text for a person: a 6000-character id is shown by its start (the JSON payload keeps it whole)."""
    text = str(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def validate_plugin_dir(plugin_dir: Path, sources: list[Path], *, jobs: int = 1,
                        progress: Callable[[int, int, str], None] | None = None,
                        strict: bool = False) -> ValidationReport:
    """Validate a plugin on ``sources`` (or on its testdata cases), ``jobs`` at a time.

    Each source is validated on its own (the adapter runs in subprocesses, so threads
    suffice); the report lists them in the order given. ``progress(done, total, label)``
    is called as each finishes. ``strict`` fails on beyond-RLViz findings.
    """
    from mapc.core.concurrent import ordered_map

    try:
        plugin = load_plugin(plugin_dir)
    except ValidationFailure as exc:
        return ValidationReport(False, exc.payload(), f"rlviz: {plugin_dir}: {describe(exc)}")
    if sources:
        runs = [(str(s), s, None, None) for s in sources]
    else:
        try:
            runs = read_cases(plugin_dir)
        except CaseFileError as exc:
            return ValidationReport(False, ValidationFailure(str(exc)).payload(), f"rlviz: {exc}")

    def validate_run(run) -> tuple[dict[str, Any], list[str]]:
        label, path, fmt, minimum = run
        try:
            report: Report = validate_adapter(plugin, path, strict=strict)
            if fmt is not None and report.format != fmt:
                raise ValidationFailure(f"format {report.format!r}, expected {fmt!r} (testdata/cases.json)")
            if minimum is not None and report.records < minimum:
                raise ValidationFailure(f"{report.records} records, expected at least {minimum} (testdata/cases.json)")
        except ValidationFailure as exc:
            return {"source": label, "ok": False, **exc.payload()}, [f"rlviz: FAIL {label}: {describe(exc)}"]
        warn = f", {report.warnings} warning(s)" if report.warnings else ""
        lines = [f"rlviz: ok {label}: {report.records} records ({report.format}){warn}, deterministic"]
        lines += [f"rlviz: {line}" for line in report.findings.lines(label)]
        beyond = [f.payload() for f in report.findings.kept]
        return {"source": label, "ok": True, **report.payload(), "beyond_rlviz": beyond,
                "beyond_rlviz_total": report.findings.total}, lines

    done = None if progress is None else (lambda n, total, out: progress(n, total, out[0]["source"]))
    validated = ordered_map(validate_run, runs, jobs, done)
    results = [result for result, _ in validated]
    lines = [line for _, run_lines in validated for line in run_lines]
    ok = all(r["ok"] for r in results)
    if len(results) == 1 and sources:  # RLViz's own report (or diagnostic), beyond-RLViz findings only when any
        payload = {k: v for k, v in results[0].items() if k not in ("source", "ok")}
        if not payload.get("beyond_rlviz"):
            payload.pop("beyond_rlviz", None)
            payload.pop("beyond_rlviz_total", None)
    else:
        payload = {"ok": ok, "plugin": plugin.manifest.name, "digest": plugin.digest, "results": results}
    items = [{"source": r["source"], "records": r.get("records"), "warnings": r.get("warnings", 0), "ok": r["ok"]}
             for r in results]
    return ValidationReport(ok, payload, "\n".join(lines), items=items)
