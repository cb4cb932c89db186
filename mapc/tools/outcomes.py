"""What each command found, as diagnostics: the envelope's ``ok`` is "no error diagnostic"
(:mod:`mapc.tools.envelope`), so every failure a command reports in its payload (a malformed
trace, a failing test case, a stale file, a validation failure, a review finding, breaking
drift) is also an error diagnostic here, located as well as the finding allows.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from mapc.core.diagnostics import ERROR, WARNING, Diagnostic

_AT_LINE = re.compile(r"^line (\d+)(?:,? column (\d+))?\b")


def run_diagnostics(source: str, error: str | None, warning_messages: list[str], warnings: int) -> list[Diagnostic]:
    """A mapping's error and its kept warning messages (``warnings`` counts them all)."""
    file = None if source == "-" else source
    out = [Diagnostic("source_warning", message, severity=WARNING, file=file) for message in warning_messages]
    if warnings > len(warning_messages):
        out.append(Diagnostic("source_warning", f"... and {warnings - len(warning_messages)} more warning(s)",
                              severity=WARNING, file=file))
    if error is not None:
        found = _AT_LINE.match(error)
        line, column = (int(found.group(1)), int(found.group(2)) if found.group(2) else None) if found else (None, None)
        out.append(Diagnostic("source_error", error, file=file, line=line, column=column))
    return out


def test_diagnostics(report) -> list[Diagnostic]:
    """One error per failing case of a :class:`mapc.spectest.TestReport`, at the spec line behind
    its first difference when known, else at its expected file (or source)."""
    from mapc.spectest.runner import what_failed

    out = []
    for r in report.failed:
        case = r.case
        if r.diagnostic is not None:
            out.append(r.diagnostic if r.diagnostic.is_error else Diagnostic(**{**r.diagnostic.to_dict(),
                                                                              "severity": ERROR}))
            continue
        place = next((p for p in [*(d.place for d in r.diffs), *(m.place for m in r.mismatches)] if p is not None),
                     None)
        where = {"file": place.file, "line": place.line, "path": place.path} if place is not None else \
            {"file": str(case.expected or case.source)}
        out.append(Diagnostic("test_failed", f"test {case.name!r} fails: {what_failed(r)}", **where,
                              hint=f"`mapc test {report.spec}` shows each difference; `mapc test --update "
                                   f"{report.spec}` accepts the new output (review it)"))
    return out


def freshness_diagnostics(out: Path, files) -> list[Diagnostic]:
    """An error per file of ``build --check`` that is not current (code ``output_<status>``)."""
    return [Diagnostic(f"output_{f.status}", f.message, file=str(out / f.path) if f.path else str(out),
                       hint="`mapc build` regenerates it" if f.status != "not_generated" else None)
            for f in files if f.status != "current"]


def validation_diagnostics(report, out: Path, sources_given: bool) -> list[Diagnostic]:
    """The report's diagnostics, plus an error per failure it states only in its payload."""
    diags = list(report.diagnostics)
    if report.ok or any(d.is_error for d in diags):
        return diags
    lines = report.text.splitlines()
    failed = [item for item in report.items if not item.get("ok")]
    for item in failed:
        label = str(item["source"])
        said = next((line.split(f"FAIL {label}: ", 1)[1] for line in lines if f"FAIL {label}: " in line), None)
        file = label if sources_given or os.path.isabs(label) else str(out / label)
        diags.append(Diagnostic("validation_failed", said or item.get("detail") or "failed validation", file=file))
    if not failed:
        problems = report.payload.get("problems") or []
        for problem in problems:
            text = problem.get("message") if isinstance(problem, dict) else str(problem)
            diags.append(Diagnostic("validation_failed", text, file=str(out)))
        if not problems:
            text = "; ".join(line.strip() for line in lines if line.strip()) or "failed validation"
            diags.append(Diagnostic("validation_failed", text, file=str(out)))
    return diags


def review_diagnostics(reviews) -> list[Diagnostic]:
    """An error per ``mapc review`` finding, at its file (and line) in the reviewed output."""
    return [Diagnostic(f.code, f.message, file=str(Path(r.out) / f.file), line=f.line or None)
            for r in reviews for f in r.findings]


def since_diagnostics(reports) -> list[Diagnostic]:
    """``review --since`` fails only for a modified runtime package."""
    return [Diagnostic("modified_runtime", "the runtime package differs from the one mapc publishes",
                       file=str(Path(r.out) / "mapc_runtime"),
                       hint="rebuild with `mapc build`; never edit mapc_runtime/")
            for r in reports if r.modified_runtime]


def drift_diagnostics(report, spec: Path, *, strict: bool = False) -> list[Diagnostic]:
    """An error per breaking finding (and, with ``strict``, per additive one), at the spec path
    that reads the field or the rule it is about; other additive findings are warnings."""
    out = []
    for item in report.to_dict()["items"]:
        if item["severity"] == "note":
            continue
        error = item["breaking"] or strict
        read_by = item.get("read_by") or []
        place = read_by[0] if read_by else (item.get("place") if item.get("place", "").startswith("records") else None)
        out.append(Diagnostic(f"drift_{item['kind']}", f"{item['path']}: {item['message']}", file=str(spec),
                              path=place, severity="error" if error else WARNING))
    return out


def target_problem_diagnostics(problems: dict[str, Any]) -> list[Diagnostic]:
    return [Diagnostic("target_problem", str(message), severity=WARNING) for message in problems.values()]
