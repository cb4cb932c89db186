"""``rlviz plugin validate`` for adapters, re-implemented step by step.

Manifest -> digest -> probe twice (answers compared) -> stream pass 1
(decoded and checked) -> stream pass 2 (decoded and checked) -> the two
stdouts must be byte-identical. Every execution runs in a fresh snapshot (see
:mod:`.host`). Trust is not required here: mapc validates the plugin it has
just written; RLViz itself still asks the user to trust the digest.

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
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from mapc.validators.rlviz.digest import DigestError, content_digest
from mapc.validators.rlviz.host import HostError, new_request, run_plugin
from mapc.validators.rlviz.manifest import Manifest, ManifestError, load_manifest
from mapc.validators.rlviz.records import RecordError, check_stream, schema_problem, schema_validator

FAILURE_CODE = "plugin_validate_failed"


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
                 field: str | None = None):
        super().__init__(error)
        self.error = error
        self.phase, self.kind, self.pass_ = phase, kind, pass_
        self.line, self.record_type, self.record_id, self.field = line, record_type, record_id, field

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

    def payload(self) -> dict[str, Any]:
        return {"plugin": self.plugin, "digest": self.digest, "format": self.format, "records": self.records,
                "warnings": self.warnings, "deterministic": self.deterministic}


@dataclass(frozen=True)
class Plugin:
    root: Path
    manifest: Manifest
    digest: str


def load_plugin(path: str | os.PathLike) -> Plugin:
    """Read, check and hash a plugin directory; raises :class:`ValidationFailure`."""
    try:
        manifest = load_manifest(path)
        root = Path(manifest.path).parent
        digest = content_digest(root, manifest.command)
    except (ManifestError, DigestError, OSError) as exc:
        raise ValidationFailure(str(exc)) from None
    return Plugin(root, manifest, digest)


def _not_json(name: str):
    raise ValueError(f"{name} is not valid JSON")


def parse_probe(stdout: bytes) -> dict[str, Any]:
    """A probe answer read as strictly as RLViz reads it; raises ValueError."""
    try:
        text = stdout.decode("utf-8")
        decoder = json.JSONDecoder(parse_constant=_not_json)
        start = len(text) - len(text.lstrip())
        value, end = decoder.raw_decode(text, start)
    except (UnicodeDecodeError, ValueError) as exc:
        raise ValueError(f"invalid probe response: {exc}") from None
    if text[end:].strip():
        raise ValueError("probe stdout must contain exactly one JSON object")
    if not isinstance(value, dict):
        raise ValueError("invalid probe response: expected a JSON object")
    problem = schema_problem(schema_validator("adapter-probe-response"), value)
    if problem is not None:
        raise ValueError(f"invalid probe response: {problem[1]}")
    if not math.isfinite(value["confidence"]):
        raise ValueError("probe confidence must be between 0 and 1")
    return {"supported": value["supported"], "confidence": value["confidence"],
            "format": value.get("format", ""), "reason": value.get("reason", "")}


def _go_struct(p: dict) -> str:
    return "{Supported:%s Confidence:%s Format:%s Reason:%s}" % (
        str(p["supported"]).lower(), p["confidence"], p["format"], p["reason"])


def _first_difference(a: bytes, b: bytes) -> int:
    for n, (x, y) in enumerate(zip(a.split(b"\n"), b.split(b"\n")), start=1):
        if x != y:
            return n
    return min(a.count(b"\n"), b.count(b"\n")) + 1


Runner = Callable[..., Any]


def validate_adapter(plugin: Plugin, source: str | os.PathLike, *, runner: Runner = run_plugin) -> Report:
    """Validate ``plugin`` on ``source`` as ``rlviz plugin validate`` does."""
    m = plugin.manifest
    if m.kind != "Adapter":
        raise ValidationFailure(f"plugin {m.name!r} has kind {m.kind}, want Adapter")
    try:
        probe_req = new_request("probe", source)
    except HostError as exc:
        raise ValidationFailure(str(exc), phase="source", kind="provenance") from None
    answers = []
    for n in (1, 2):
        try:
            result = runner(plugin.root, m, probe_req)
        except HostError as exc:
            raise ValidationFailure(f"probe pass {n}: {exc}", phase="probe", kind="execution", pass_=n) from None
        try:
            answers.append(parse_probe(result.stdout))
        except ValueError as exc:
            raise ValidationFailure(f"probe pass {n}: {exc}", phase="probe", kind="protocol", pass_=n) from None
    first, second = answers
    if first != second:
        raise ValidationFailure(f"probe is nondeterministic: first={_go_struct(first)} second={_go_struct(second)}",
                                phase="probe", kind="nondeterministic")
    if not first["supported"]:
        raise ValidationFailure(f"adapter does not support source: {first['reason']}", phase="probe",
                                kind="unsupported")
    stream_req = dict(probe_req, operation="stream")
    outputs, summary = [], None
    for n in (1, 2):
        try:
            result = runner(plugin.root, m, stream_req)
        except HostError as exc:
            raise ValidationFailure(f"stream pass {n}: {exc}", phase="stream", kind="execution", pass_=n) from None
        try:
            found = check_stream(result.stdout, stream_req["source"]["root"])
        except RecordError as exc:
            raise ValidationFailure(str(exc), phase="stream", kind=exc.kind, pass_=n, **exc.context()) from None
        summary = summary or found
        outputs.append(result.stdout)
    if outputs[0] != outputs[1]:
        line = _first_difference(*outputs)
        raise ValidationFailure(f"stream is nondeterministic: repeated output differs (first at line {line})",
                                phase="stream", kind="nondeterministic")
    return Report(m.name, plugin.digest, first["format"], summary.records, summary.warnings)


def validate(plugin_dir: str | os.PathLike, source: str | os.PathLike) -> Report:
    """Load the plugin and validate it on one source; raises :class:`ValidationFailure`."""
    return validate_adapter(load_plugin(plugin_dir), source)
