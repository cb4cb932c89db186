"""``rlviz plugin validate`` for adapters, re-implemented step by step (``internal/plugins/validate.go``).

Manifest -> digest -> probe twice (answers compared) -> stream pass 1
(decoded and checked) -> stream pass 2 (decoded and checked) -> the two
stdouts must be byte-identical. Before every execution the plugin is loaded
and hashed again (a plugin that changed since validation started fails, as
in RLViz) and copied to a fresh snapshot (see :mod:`.host`). The whole
validation has RLViz's 30 s budget. Trust is not required here: mapc
validates the plugin it has just written; RLViz itself still asks the user to
trust the digest.

The verdict is RLViz's. What RLViz's published schemas require beyond what
RLViz enforces is collected as *beyond RLViz* findings (:class:`Finding`):
reported as warnings, or failures with ``strict`` (what ``mapc build`` uses).

Reports have RLViz's JSON shapes. Success:
``{"plugin","digest","format","records","warnings","deterministic"}``.
Failure: ``{"code": "plugin_validate_failed", "error", "phase", "kind",
"pass", "line", "record_type", "record_id", "field"}`` with the context
fields present only when known, keys sorted as Go prints a map.
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from mapc.core.scratch import scratch
from mapc.targets.rlviz.validator import gojson
from mapc.targets.rlviz.validator.digest import DigestError, content_digest
from mapc.targets.rlviz.validator.gojson import BOOLP, F64P, STR, GoJSONError, Obj, Struct
from mapc.targets.rlviz.validator.host import HostError, Limits, execute, new_request, snapshot
from mapc.targets.rlviz.validator.manifest import Manifest, ManifestError, load_manifest
from mapc.targets.rlviz.validator.records import Finding, Findings, RecordError, StreamChecker, split_lines

FAILURE_CODE = "plugin_validate_failed"
PROBE = Struct("", {"supported": BOOLP, "confidence": F64P, "format": STR, "reason": STR})


def go_json(value: Any, *, sort_keys: bool = False) -> str:
    """Compact JSON as Go's encoder writes it (HTML-significant characters escaped)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=sort_keys)
    for ch, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(ch, esc)
    return text


class ValidationFailure(Exception):
    """A failed validation, with RLViz's diagnostic taxonomy."""

    def __init__(self, error: str, *, phase: str | None = None, kind: str | None = None, pass_: int = 0,
                 line: int | None = None, record_type: str | None = None, record_id: str | None = None,
                 field: str | None = None, beyond: bool = False):
        super().__init__(error)
        self.error = error
        self.phase, self.kind, self.pass_ = phase, kind, pass_
        self.line, self.record_type, self.record_id, self.field = line, record_type, record_id, field
        self.beyond = beyond  # failed only because of a strict beyond-RLViz check

    def payload(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": FAILURE_CODE, "error": self.error}
        if self.phase:
            out["phase"] = self.phase
            out["kind"] = self.kind
        for key, value in (("pass", self.pass_), ("line", self.line), ("record_type", self.record_type),
                           ("record_id", self.record_id), ("field", self.field)):
            if value:
                out[key] = value
        return dict(sorted(out.items()))


@dataclass
class Report:
    plugin: str
    digest: str
    format: str
    records: int
    warnings: int
    deterministic: bool = True
    findings: Findings = field(default_factory=Findings)

    def payload(self) -> dict[str, Any]:
        """RLViz's success report."""
        return {"plugin": self.plugin, "digest": self.digest, "format": self.format, "records": self.records,
                "warnings": self.warnings, "deterministic": self.deterministic}


@dataclass(frozen=True)
class Plugin:
    root: Path
    manifest: Manifest
    digest: str


def load_plugin(path: str | os.PathLike, env: Mapping[str, str] | None = None) -> Plugin:
    """Read, check and hash a plugin directory; raises :class:`ValidationFailure`."""
    try:
        manifest = load_manifest(path)
        root = Path(manifest.path).parent
        digest = content_digest(root, manifest.command, env)
    except (ManifestError, DigestError, OSError) as exc:
        raise ValidationFailure(str(exc)) from None
    return Plugin(root, manifest, digest)


# -- probe answers ---------------------------------------------------------------------------------
def parse_probe(stdout: bytes) -> tuple[dict[str, Any], list[tuple[str | None, str]]]:
    """A probe answer read as RLViz reads it, and its beyond-RLViz findings; raises ValueError."""
    problems: list[tuple[str | None, str]] = []
    try:
        text = stdout.decode("utf-8")
    except UnicodeDecodeError:
        text = gojson.go_utf8(stdout)
        problems.append((None, "not valid UTF-8 (RLViz reads each invalid byte as U+FFFD)"))
    try:
        value, end = gojson.scan_value(text)
    except GoJSONError as exc:
        message = "EOF" if not text.strip(gojson.GO_WHITESPACE) else str(exc)
        raise ValueError(f"invalid probe response: {message}") from None
    if "\\u" in text and gojson.has_surrogates(value):
        value = gojson.fix_surrogates(value)
        problems.append((None, "an unpaired surrogate escape (RLViz reads it as U+FFFD)"))
    try:
        wire = gojson.decode_struct(PROBE, value)
    except GoJSONError as exc:
        raise ValueError(f"invalid probe response: {exc}") from None
    rest = len(text) - len(text[end:].lstrip(gojson.GO_WHITESPACE))
    if rest < len(text):
        try:
            gojson.scan_value(text, rest)
        except GoJSONError as exc:
            raise ValueError(f"invalid trailing probe output: {exc}") from None
        raise ValueError("probe stdout must contain exactly one JSON object")
    if "supported" not in wire or "confidence" not in wire:
        raise ValueError("probe response requires supported and confidence")
    answer = {"supported": wire["supported"], "confidence": wire["confidence"], "format": wire.get("format", ""),
              "reason": wire.get("reason", "")}
    if not 0 <= answer["confidence"] <= 1 or math.isnan(answer["confidence"]):
        raise ValueError("probe confidence must be between 0 and 1")
    if answer["supported"] and not answer["format"]:
        raise ValueError("supported probe response requires format")
    view = dict(value) if isinstance(value, Obj) else {}
    for key, item in view.items():
        if key not in PROBE.fields:
            problems.append((key, f"field {key!r} is not in RLViz's schema (RLViz matches keys case-insensitively)"))
        elif item is None:
            problems.append((key, "null is not allowed by RLViz's schema (RLViz reads it as absent)"))
    if view.get("format") == "":
        problems.append(("format", "an empty format is not allowed by RLViz's schema (RLViz reads it as absent)"))
    return answer, problems


def _go_float(value: float) -> str:
    text = repr(value)
    return text[:-2] if text.endswith(".0") else text


def _go_struct(p: dict) -> str:
    return "{Supported:%s Confidence:%s Format:%s Reason:%s}" % (
        str(p["supported"]).lower(), _go_float(p["confidence"]), p["format"], p["reason"])


def _first_difference(a: bytes, b: bytes) -> int:
    for n, (x, y) in enumerate(zip(a.split(b"\n"), b.split(b"\n")), start=1):
        if x != y:
            return n
    return min(a.count(b"\n"), b.count(b"\n")) + 1


# -- running the plugin ----------------------------------------------------------------------------
class _Run:
    """Executions of one plugin as RLViz's ``prepare`` does them: reload, compare, snapshot, run."""

    def __init__(self, plugin: Plugin, deadline: float, limits: Limits, env: Mapping[str, str] | None):
        self.plugin, self.deadline, self.limits, self.env = plugin, deadline, limits, env

    def __call__(self, request: dict):
        try:
            current = load_plugin(self.plugin.root, self.env)
        except ValidationFailure as exc:
            raise HostError(exc.error) from None
        if current.digest != self.plugin.digest:
            raise HostError("plugin changed after it was loaded; reload and trust it again")
        with scratch("rlviz-plugin", near=current.root) as private:  # 0700, beside it; swept after a kill -9
            try:
                where = snapshot(current.root, os.path.join(private, "plugin"))
            except (DigestError, OSError) as exc:
                raise HostError(f"snapshot trusted plugin: {exc}") from None
            try:
                copy = load_plugin(where, self.env)
            except ValidationFailure as exc:
                raise HostError(exc.error) from None
            if copy.digest != current.digest:
                raise HostError("plugin changed while creating its execution snapshot; reload and trust it again")
            return execute(where, copy.manifest, request, deadline=self.deadline, limits=self.limits, env=self.env)


def _check_output(stdout: bytes, root: str, strict: bool) -> StreamChecker:
    checker = StreamChecker(root, strict=strict)
    for raw in split_lines(stdout):
        checker.add_line(raw)
    checker.finish()
    return checker


def _stream_failure(exc: RecordError, n: int) -> ValidationFailure:
    return ValidationFailure(str(exc), phase="stream", kind=exc.kind, pass_=n, beyond=exc.beyond, **exc.context())


def validate_adapter(plugin: Plugin, source: str | os.PathLike, *, strict: bool = False, limits: Limits = Limits(),
                     env: Mapping[str, str] | None = None) -> Report:
    """Validate ``plugin`` on ``source`` as ``rlviz plugin validate`` does.

    ``strict`` fails on beyond-RLViz findings; ``env`` is the environment the
    plugin runs in (default: this process's).
    """
    deadline = time.monotonic() + limits.total
    run = _Run(plugin, deadline, limits, env)
    m = plugin.manifest
    if m.kind != "Adapter":
        raise ValidationFailure(f"plugin {m.name!r} has kind {m.kind}; mapc validates adapters only")
    try:
        probe_req = new_request("probe", source)
    except HostError as exc:
        raise ValidationFailure(str(exc), phase="source", kind="provenance") from None
    answers, probe_problems = [], []
    for n in (1, 2):
        try:
            result = run(probe_req)
        except HostError as exc:
            raise ValidationFailure(f"probe pass {n}: {exc}", phase="probe", kind="execution", pass_=n) from None
        try:
            answer, problems = parse_probe(result.stdout)
        except ValueError as exc:
            raise ValidationFailure(f"probe pass {n}: {exc}", phase="probe", kind="protocol", pass_=n) from None
        answers.append(answer)
        probe_problems = probe_problems or problems
    first, second = answers
    if first != second:
        raise ValidationFailure(f"probe is nondeterministic: first={_go_struct(first)} second={_go_struct(second)}",
                                phase="probe", kind="nondeterministic")
    if not first["supported"]:
        raise ValidationFailure(f"adapter does not support source: {first['reason']}", phase="probe",
                                kind="unsupported")
    findings = Findings()
    for where, message in probe_problems:
        if strict:
            raise ValidationFailure(f"probe pass 1: beyond RLViz: {message}", phase="probe", kind="protocol",
                                    pass_=1, field=where, beyond=True)
        findings.add(Finding(f"probe answer: {message}", field=where))
    stream_req = dict(probe_req, operation="stream")
    root = stream_req["source"]["root"]
    try:
        first_out = run(stream_req).stdout
    except HostError as exc:
        raise ValidationFailure(f"stream pass 1: {exc}", phase="stream", kind="execution", pass_=1) from None
    try:
        checker = _check_output(first_out, root, strict)
    except RecordError as exc:
        raise _stream_failure(exc, 1) from None
    try:
        second_out = run(stream_req).stdout
    except HostError as exc:
        raise ValidationFailure(f"stream pass 2: {exc}", phase="stream", kind="execution", pass_=2) from None
    if second_out != first_out or not checker.sources_unchanged():
        try:  # the second output is decoded and checked before the outputs are compared
            _check_output(second_out, root, strict)
        except RecordError as exc:
            raise _stream_failure(exc, 2) from None
    if second_out != first_out:
        line = _first_difference(first_out, second_out)
        raise ValidationFailure(f"stream is nondeterministic: repeated output differs (first at line {line})",
                                phase="stream", kind="nondeterministic")
    findings.extend(checker.findings)
    return Report(m.name, plugin.digest, first["format"], checker.records, checker.warnings, findings=findings)


def validate(plugin_dir: str | os.PathLike, source: str | os.PathLike, *, strict: bool = False,
             env: Mapping[str, str] | None = None, limits: Limits = Limits()) -> Report:
    """Load the plugin and validate it on one source; raises :class:`ValidationFailure`."""
    return validate_adapter(load_plugin(plugin_dir, env), source, strict=strict, env=env, limits=limits)
