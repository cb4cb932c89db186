"""Canonical NDJSON checks: RLViz's decoder and stream rules, then its published schema.

The verdict is RLViz's own: each line is read as RLViz's Go decoder reads it
(:mod:`.gojson`: strict typed structs, case-insensitive keys, U+FFFD for bad
UTF-8 and lone surrogates, int64 bounds, 8 MiB per record), then checked with
the rules of RLViz's ``model.Validator`` in RLViz's order (unique ids, parents
first, increasing sequences, context lists, artifacts, one final ``complete``
with the record count) and, with a source ``root``, RLViz's provenance check of
event ``source`` locations. Error messages, fields and kinds follow RLViz's.

RLViz's published ``canonical-record.schema.json`` says more than RLViz
enforces (RFC 3339 timestamps, ids of at most 512 characters, trajectory
status values, no ``null`` for optional fields, ``sequence`` and ``complete``
counts present, ...). Those checks run on every record RLViz accepts and are
reported as *beyond RLViz* findings: warnings, or failures with ``strict``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator

from mapc.targets.rlviz.validator import gojson
from mapc.targets.rlviz.validator.gojson import ANY, I64, MAP, PI64, RAW, STR, STRS, GoJSONError, Obj, Struct

MAX_RECORD_BYTES = 8 << 20
MAX_FINDINGS_KEPT = 20
RECORD_TYPES = ("run", "case", "group", "trajectory", "event", "signal", "artifact", "complete")
_SCHEMAS = Path(__file__).resolve().parent / "schemas"
_RFC3339 = re.compile(
    r"^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])[Tt]([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)"
    r"(\.\d+)?([Zz]|[+-]([01]\d|2[0-3]):[0-5]\d)$"
)
_SHA256 = re.compile(r"[0-9a-f]{64}")

# -- RLViz's record structs (internal/model/model.go) -----------------------------------------
SOURCE = Struct("SourceLocation", {"path": STR, "line": PI64, "byte_offset": PI64, "byte_length": PI64})
CONTEXT = Struct("Context", {
    "operation": STR, "input_tokens": PI64, "input_tokens_before": PI64, "capacity": PI64,
    "retained_event_ids": STRS, "dropped_event_ids": STRS, "summarized_event_ids": STRS,
    "summary": STR, "provenance": STR, "derivation": STR,
})
STRUCTS = {
    "run": Struct("Run", {"record_type": STR, "id": STR, "name": STR, "started_at": STR, "metadata": MAP}),
    "case": Struct("Case", {"record_type": STR, "id": STR, "run_id": STR, "name": STR, "input": ANY,
                            "metadata": MAP}),
    "group": Struct("Group", {"record_type": STR, "id": STR, "case_id": STR, "name": STR, "metadata": MAP}),
    "trajectory": Struct("Trajectory", {"record_type": STR, "id": STR, "group_id": STR, "parent_id": STR,
                                        "branch_id": STR, "status": STR, "termination": STR, "metadata": MAP}),
    "event": Struct("Event", {
        "record_type": STR, "id": STR, "trajectory_id": STR, "sequence": I64, "kind": STR, "timestamp": STR,
        "parent_id": STR, "branch_id": STR, "alignment_key": STR, "state_hash": STR, "input": ANY,
        "output": ANY, "data": ANY, "context": CONTEXT, "source": SOURCE, "raw": RAW, "metadata": MAP,
    }),
    "signal": Struct("Signal", {"record_type": STR, "id": STR, "trajectory_id": STR, "event_id": STR, "name": STR,
                                "value": ANY, "unit": STR, "metadata": MAP}),
    "artifact": Struct("Artifact", {"record_type": STR, "id": STR, "trajectory_id": STR, "event_id": STR,
                                    "name": STR, "media_type": STR, "path": STR, "text": STR, "json": ANY,
                                    "sha256": STR, "metadata": MAP}),
    "complete": Struct("Complete", {"record_type": STR, "records": I64, "warnings": I64}),
}
EVENT_KINDS = frozenset(("message", "generation", "tool", "environment_action", "observation", "state", "reward",
                         "grader", "artifact", "error", "log"))
CONTEXT_OPERATIONS = frozenset(("compaction", "truncation", "injection", "restore"))
_CONTEXT_LISTS = ("retained_event_ids", "dropped_event_ids", "summarized_event_ids")


class RecordError(Exception):
    """One failure, with the context RLViz reports (line, record type and id, field) and its kind."""

    def __init__(self, message: str, *, line: int | None = None, record_type: str | None = None,
                 record_id: str | None = None, field: str | None = None, kind: str = "protocol",
                 beyond: bool = False):
        super().__init__(message)
        self.message = message
        self.line = line
        self.record_type = record_type
        self.record_id = record_id
        self.field = field
        self.kind = kind
        self.beyond = beyond  # a finding beyond RLViz, failing because of strict mode

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}" if self.line else self.message

    def context(self) -> dict[str, Any]:
        """The diagnostic fields RLViz adds when it knows them."""
        out: dict[str, Any] = {}
        for key in ("line", "record_type", "record_id", "field"):
            value = getattr(self, key)
            if value:
                out[key] = value
        return out


class _Invalid(Exception):
    """A validator rule broke (message, field); the checker adds the record's context."""

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.message, self.field = message, field


@dataclass(frozen=True)
class Finding:
    """Something RLViz accepts but its published schema does not (reported as "beyond RLViz")."""

    message: str
    line: int | None = None
    record_type: str | None = None
    record_id: str | None = None
    field: str | None = None

    def payload(self) -> dict[str, Any]:
        out = {"message": self.message}
        for key in ("line", "record_type", "record_id", "field"):
            value = getattr(self, key)
            if value:
                out[key] = value
        return out

    def text(self) -> str:
        where = [f"line {self.line}"] if self.line else []
        if self.record_type:
            where.append(f"{self.record_type} {self.record_id!r}" if self.record_id else self.record_type)
        if self.field:
            where.append(self.field)
        return f"{', '.join(where)}: {self.message}" if where else self.message


@dataclass
class Findings:
    """Beyond-RLViz findings of one validation: the first few kept, all counted."""

    kept: list[Finding] = field(default_factory=list)
    total: int = 0

    def add(self, finding: Finding) -> None:
        self.total += 1
        if len(self.kept) < MAX_FINDINGS_KEPT:
            self.kept.append(finding)

    def lines(self, label: str) -> list[str]:
        """One warning line per kept finding, and how many more there were."""
        def clip(text: str) -> str:
            return text if len(text) <= 300 else text[:297] + "..."

        out = [f"warning (beyond RLViz) {label}: {clip(f.text())}" for f in self.kept]
        if self.total > len(self.kept):
            out.append(f"warning (beyond RLViz) {label}: ... and {self.total - len(self.kept)} more")
        return out

    def extend(self, other: "Findings") -> None:
        room = MAX_FINDINGS_KEPT - len(self.kept)
        self.kept += other.kept[:max(room, 0)]
        self.total += other.total


def load_schema(name: str) -> dict:
    """One of RLViz's published schemas shipped with mapc (``<name>.schema.json``)."""
    import json

    return json.loads((_SCHEMAS / f"{name}.schema.json").read_text(encoding="utf-8"))


def is_date_time(value: Any) -> bool:
    """RFC 3339 ``date-time`` as JSON Schema defines the format."""
    return not isinstance(value, str) or bool(_RFC3339.match(value))


@lru_cache(maxsize=None)
def schema_validator(name: str, definition: str | None = None):
    """A jsonschema validator for RLViz's schema ``name`` (or one of its ``$defs``), formats asserted.

    mapc's checks do not use it (they are hand-written for speed); tests use it
    to show that the beyond-RLViz findings are exactly the schema's verdict.
    """
    import jsonschema
    from referencing import Registry, Resource

    schema = load_schema(name)
    registry = Registry().with_resource(schema["$id"], Resource.from_contents(schema))
    target = {"$ref": f"{schema['$id']}#/$defs/{definition}"} if definition else schema
    checker = jsonschema.Draft202012Validator.TYPE_CHECKER.redefine_many({
        "integer": lambda _, v: isinstance(v, int) and not isinstance(v, bool),
        "number": lambda _, v: isinstance(v, (int, float)) and not isinstance(v, bool),
    })
    cls = jsonschema.validators.extend(jsonschema.Draft202012Validator, type_checker=checker)
    formats = jsonschema.FormatChecker(formats=())
    formats.checks("date-time")(is_date_time)
    return cls(target, registry=registry, format_checker=formats)


# -- beyond RLViz: the published schema, on what RLViz accepted -----------------------------------
_SCHEMA_PROPS = {rtype: frozenset(struct.fields) for rtype, struct in STRUCTS.items()}
_FIELD_NAMES = frozenset().union(*_SCHEMA_PROPS.values()) - {"record_type"}
_NULLABLE = frozenset(("input", "output", "data", "raw"))  # the schema's {} (any value)
_REQUIRED = {
    "run": ("record_type", "id"), "case": ("record_type", "id", "run_id"), "group": ("record_type", "id", "case_id"),
    "trajectory": ("record_type", "id", "group_id"),
    "event": ("record_type", "id", "trajectory_id", "sequence", "kind"),
    "signal": ("record_type", "id", "trajectory_id", "name", "value"),
    "artifact": ("record_type", "id", "trajectory_id", "media_type"),
    "complete": ("record_type", "records", "warnings"),
}
_ID_FIELDS = ("id", "run_id", "case_id", "group_id", "trajectory_id", "parent_id", "branch_id", "event_id")
_NON_EMPTY = ("alignment_key", "state_hash", "path", "text", "media_type", "name")  # minLength 1 where they apply
_MIN_LENGTH_1 = {"event": ("alignment_key", "state_hash"), "artifact": ("path", "text", "media_type"),
                 "signal": ("name",)}
_STATUS = frozenset(("running", "completed", "failed", "cancelled"))
_CONTEXT_FACTS = ("operation", "input_tokens", "capacity", *_CONTEXT_LISTS, "summary")


def _object_problems(view: dict, props, required, where: str = "") -> list[tuple[str, str]]:
    out = []
    for key, value in view.items():
        name = where + key
        if key not in props:
            out.append((name, f"field {name!r} is not in RLViz's schema (RLViz matches keys case-insensitively)"))
        elif value is None and key not in _NULLABLE:
            out.append((name, "null is not allowed by RLViz's schema (RLViz reads it as absent)"))
    for key in required:
        if key not in view:
            out.append((where + key, "required by RLViz's schema (RLViz reads a missing value as empty or 0)"))
    return out


def _id_problem(value: Any) -> str | None:
    if isinstance(value, str) and not 1 <= len(value) <= 512:
        return "ids must be 1 to 512 characters in RLViz's schema" if value else \
            "an empty id is not allowed by RLViz's schema (RLViz reads it as absent)"
    return None


def beyond_rlviz(rtype: str, view: dict) -> list[tuple[str, str]]:
    """``(field, message)`` for each way ``view`` (the record as JSON tools read it) breaks the schema.

    Only called for records RLViz accepts, so it checks what RLViz leaves
    out; ``tests/rlviz`` shows it agrees with the schema itself.
    """
    out = _object_problems(view, _SCHEMA_PROPS[rtype], _REQUIRED[rtype])
    for key in _ID_FIELDS:
        if key in view:
            problem = _id_problem(view[key])
            if problem:
                out.append((key, problem))
    for key in _MIN_LENGTH_1.get(rtype, ()):
        if view.get(key) == "":
            out.append((key, "an empty string is not allowed by RLViz's schema"))
    for key in ("started_at", "timestamp"):
        value = view.get(key)
        if isinstance(value, str) and not _RFC3339.match(value):
            out.append((key, "not an RFC 3339 date-time (RLViz's schema; RLViz keeps any string)"))
    if rtype == "trajectory" and "status" in view and view["status"] is not None and view["status"] not in _STATUS:
        out.append(("status", "status must be running, completed, failed or cancelled in RLViz's schema"))
    if rtype == "event":
        if isinstance(view.get("source"), Obj):
            out += _object_problems(view["source"].last(), SOURCE.fields, ("path",), "source.")
        if isinstance(view.get("context"), Obj):
            out += _context_problems(view["context"].last())
    if rtype == "artifact":
        present = [key for key in ("path", "text", "json") if key in view]
        if len(present) != 1:
            out.append((None, "RLViz's schema wants exactly one of path, text or json present "
                              "(RLViz counts only non-empty ones)"))
        if view.get("sha256") == "":
            out.append(("sha256", "an empty sha256 is not allowed by RLViz's schema (RLViz reads it as absent)"))
    return out


def _context_problems(ctx: dict) -> list[tuple[str, str]]:
    out = _object_problems(ctx, CONTEXT.fields, ("provenance",), "context.")
    if "operation" in ctx and ctx["operation"] is not None and ctx["operation"] not in CONTEXT_OPERATIONS:
        out.append(("context.operation", "operation must be compaction, truncation, injection or restore "
                                         "in RLViz's schema"))
    for key in _CONTEXT_LISTS:
        items = ctx.get(key)
        if isinstance(items, list):
            if not items:
                out.append((f"context.{key}", "an empty list is not allowed by RLViz's schema"))
            elif any(_id_problem(item) for item in items):
                out.append((f"context.{key}", "ids must be 1 to 512 characters in RLViz's schema"))
    for key in ("summary", "derivation"):
        if ctx.get(key) == "":
            out.append((f"context.{key}", "an empty string is not allowed by RLViz's schema"))
    if not any(key in ctx for key in _CONTEXT_FACTS):
        out.append(("context", "RLViz's schema wants one of operation, input_tokens, capacity, an event list "
                               "or summary present"))
    return out


# -- reading lines ----------------------------------------------------------------------------------
def split_lines(data: bytes) -> Iterator[bytes]:
    """NDJSON lines as RLViz reads them: LF-separated, one CR stripped, no final empty line."""
    start = 0
    size = len(data)
    while start < size:
        end = data.find(b"\n", start)
        if end < 0:
            end = size
        line = data[start:end]
        if line.endswith(b"\r"):
            line = line[:-1]
        yield line
        start = end + 1


def _is_blank(raw: bytes) -> bool:
    return not raw or (raw[0] != 0x7B and not gojson.go_utf8(raw).strip(gojson.GO_SPACE))


@dataclass
class Decoded:
    """One record as RLViz decoded it."""

    rtype: str
    value: dict  # field -> value, with Go's meaning (absent = zero value)
    view: dict  # top-level keys as written, last value winning (what the schema sees)
    encoding: str | None = None  # a beyond-RLViz finding about the bytes themselves


def decode_record(raw: bytes, line: int) -> Decoded:
    """Decode one line as RLViz's ``model.Decoder`` does; raises :class:`RecordError`."""
    if len(raw) > MAX_RECORD_BYTES:
        raise RecordError(f"line {line}: canonical record exceeds maximum size "
                          f"({len(raw)} > {MAX_RECORD_BYTES} bytes)")
    if _is_blank(raw):
        raise RecordError(f"line {line}: blank records are not allowed")
    encoding = None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = gojson.go_utf8(raw)
        encoding = "not valid UTF-8 (RLViz reads each invalid byte as U+FFFD)"
    try:
        value, surrogates = gojson.parse_text(text)
        rtype = gojson.envelope_type(value, "record_type", _FIELD_NAMES)
    except GoJSONError as exc:
        raise RecordError(f"line {line}: invalid JSON: {exc}") from None
    if surrogates and encoding is None:
        encoding = "an unpaired surrogate escape (RLViz reads it as U+FFFD)"
    if not rtype:
        raise RecordError(f"line {line}: record_type is required")
    struct = STRUCTS.get(rtype)
    if struct is None:
        raise RecordError(f"line {line}: unsupported record_type {rtype!r}".replace("'", '"'))
    try:
        decoded = gojson.decode_struct(struct, value)
    except GoJSONError as exc:
        raise RecordError(f"line {line}: invalid {rtype} record: {exc}") from None
    return Decoded(rtype, decoded, dict(value), encoding)


def decode_line(raw: bytes, line: int) -> dict:
    """The record on one line, as RLViz decodes it (fields with Go's meaning); raises RecordError."""
    return decode_record(raw, line).value


@dataclass
class StreamSummary:
    records: int
    warnings: int
    findings: Findings = field(default_factory=Findings)


# -- RLViz's stream rules (internal/model/validate.go), in its order ------------------------------
class StreamChecker:
    """Checks records one at a time; memory grows with ids, not with payloads.

    ``root`` enables the provenance check of event sources (as in ``plugin
    validate``); ``strict`` turns beyond-RLViz findings into failures.
    """

    def __init__(self, root: str | os.PathLike | None = None, *, strict: bool = False):
        self.root = os.path.realpath(root) if root is not None else None
        self.strict = strict
        self.line = 0
        self.records = 0
        self.warnings = 0
        self.complete = False
        self.findings = Findings()
        self.ids: dict[str, str] = {}
        self.runs: set[str] = set()
        self.cases: dict[str, str] = {}
        self.groups: dict[str, str] = {}
        self.trajectories: dict[str, str] = {}  # trajectory id -> group id
        self.events: dict[str, str] = {}  # event id -> trajectory id
        self.last_sequence: dict[str, int] = {}
        self._resolved: dict[str, tuple[str | None, int | None]] = {}

    # -- entry points ------------------------------------------------------------
    def add_line(self, raw: bytes) -> dict:
        """Decode and check the next line; raises :class:`RecordError`. Returns the decoded fields."""
        self.line += 1
        decoded = decode_record(raw, self.line)
        self._check(decoded)
        return decoded.value

    def finish(self) -> StreamSummary:
        if not self.complete:
            raise RecordError("stream ended without a complete record")
        return StreamSummary(self.records, self.warnings, self.findings)

    def _check(self, dec: Decoded) -> None:
        rtype, rec = dec.rtype, dec.value
        rid = rec.get("id", "") if rtype != "complete" else ""
        try:
            if self.complete:
                raise _Invalid("complete must be the final record")
            if rtype != "complete":
                self.records += 1
            getattr(self, "_" + rtype)(rec)
        except _Invalid as exc:
            kind = "provenance" if (exc.field or "").startswith("source") else "protocol"
            raise RecordError(exc.message, line=self.line, record_type=rtype,
                              record_id=rid or None, field=exc.field, kind=kind) from None
        if rtype == "event" and "source" in rec and self.root is not None:
            self._provenance(rec, rid)
        problems = beyond_rlviz(rtype, dec.view)
        if dec.encoding:
            problems.insert(0, (None, dec.encoding))
        for where, message in problems:
            finding = Finding(message, self.line, rtype, rid or None, where)
            if self.strict:
                raise RecordError(f"beyond RLViz: {message}", line=self.line, record_type=rtype,
                                  record_id=rid or None, field=where, beyond=True)
            self.findings.add(finding)

    def _add_id(self, rid: str, rtype: str) -> None:
        if not rid:
            raise _Invalid(f"{rtype} id is required", "id")
        if rid in self.ids:
            raise _Invalid(f"duplicate id {_q(rid)} (already used by {self.ids[rid]})", "id")
        self.ids[rid] = rtype

    def _run(self, rec: dict) -> None:
        self._add_id(rec.get("id", ""), "run")
        self.runs.add(rec["id"])

    def _case(self, rec: dict) -> None:
        self._add_id(rec.get("id", ""), "case")
        run = rec.get("run_id", "")
        if run not in self.runs:
            raise _Invalid(f"case {_q(rec['id'])} references unknown or later run {_q(run)}", "run_id")
        self.cases[rec["id"]] = run

    def _group(self, rec: dict) -> None:
        self._add_id(rec.get("id", ""), "group")
        case = rec.get("case_id", "")
        if case not in self.cases:
            raise _Invalid(f"group {_q(rec['id'])} references unknown or later case {_q(case)}", "case_id")
        self.groups[rec["id"]] = case

    def _trajectory(self, rec: dict) -> None:
        tid = rec.get("id", "")
        self._add_id(tid, "trajectory")
        group = rec.get("group_id", "")
        if group not in self.groups:
            raise _Invalid(f"trajectory {_q(tid)} references unknown or later group {_q(group)}", "group_id")
        parent = rec.get("parent_id", "")
        if parent:
            if parent not in self.trajectories:
                raise _Invalid(f"trajectory {_q(tid)} references unknown or later parent {_q(parent)}", "parent_id")
            if self.trajectories[parent] != group:
                raise _Invalid(f"trajectory {_q(tid)} parent {_q(parent)} belongs to another group")
        self.trajectories[tid] = group

    def _event(self, rec: dict) -> None:
        eid = rec.get("id", "")
        self._add_id(eid, "event")
        tid = rec.get("trajectory_id", "")
        if tid not in self.trajectories:
            raise _Invalid(f"event {_q(eid)} references unknown or later trajectory {_q(tid)}", "trajectory_id")
        seq = rec.get("sequence", 0)
        if seq < 0:
            raise _Invalid(f"event {_q(eid)} sequence must be non-negative", "sequence")
        previous = self.last_sequence.get(tid)
        if previous is not None and seq <= previous:
            raise _Invalid(f"event {_q(eid)} sequence {seq} is not greater than prior sequence {previous}",
                           "sequence")
        kind = rec.get("kind", "")
        if kind not in EVENT_KINDS:
            raise _Invalid(f"event {_q(eid)} has unsupported kind {_q(kind)}", "kind")
        parent = rec.get("parent_id", "")
        if parent:
            if parent not in self.events:
                raise _Invalid(f"event {_q(eid)} references unknown or later parent {_q(parent)}", "parent_id")
            if self.events[parent] != tid:
                raise _Invalid(f"event {_q(eid)} parent {_q(parent)} belongs to another trajectory")
        source = rec.get("source")
        if source is not None:
            if not source.get("path"):
                raise _Invalid(f"event {_q(eid)} source.path is required", "source.path")
            for key, what in (("line", "line"), ("byte_offset", "byte offset"), ("byte_length", "byte length")):
                if source.get(key, 0) < 0:
                    raise _Invalid(f"event {_q(eid)} source {what} must be non-negative", f"source.{key}")
        context = rec.get("context")
        if context is not None:
            self._context(context, tid)
        self.events[eid] = tid
        self.last_sequence[tid] = seq

    def _context(self, ctx: dict, tid: str) -> None:
        provenance = ctx.get("provenance", "")
        if provenance not in ("source_native", "adapter_derived"):
            raise _Invalid("context provenance must be source_native or adapter_derived", "context.provenance")
        if provenance == "adapter_derived" and not gojson.go_trim_space(ctx.get("derivation", "")):
            raise _Invalid("adapter-derived context requires derivation", "context.derivation")
        operation = ctx.get("operation", "")
        if operation:
            if operation not in CONTEXT_OPERATIONS:
                raise _Invalid(f"unsupported context operation {_q(operation)}", "context.operation")
        elif "input_tokens_before" in ctx:
            raise _Invalid("context input_tokens_before requires an operation", "context.input_tokens_before")
        if ctx.get("input_tokens", 0) < 0:
            raise _Invalid("context input_tokens must be non-negative", "context.input_tokens")
        if ctx.get("input_tokens_before", 0) < 0:
            raise _Invalid("context input_tokens_before must be non-negative", "context.input_tokens_before")
        if "capacity" in ctx and ctx["capacity"] <= 0:
            raise _Invalid("context capacity must be positive", "context.capacity")
        if (not operation and "input_tokens" not in ctx and "capacity" not in ctx
                and not any(ctx.get(key) for key in _CONTEXT_LISTS)
                and not gojson.go_trim_space(ctx.get("summary", ""))):
            raise _Invalid("context must contain an observation or lifecycle fact", "context")
        seen: dict[str, str] = {}
        for key in _CONTEXT_LISTS:
            where = f"context.{key}"
            for eid in ctx.get(key) or ():
                if not gojson.go_trim_space(eid):
                    raise _Invalid("context event references must be non-empty", where)
                if eid in seen:
                    raise _Invalid(f"context event {_q(eid)} is already listed in {seen[eid]}", where)
                if eid not in self.events:
                    raise _Invalid(f"context references unknown or later event {_q(eid)}", where)
                if self.events[eid] != tid:
                    raise _Invalid(f"context event {_q(eid)} belongs to another trajectory", where)
                seen[eid] = where

    def _attached(self, rec: dict, rtype: str) -> None:
        """What signals and artifacts share: a known trajectory, an optional event of that trajectory."""
        rid = rec["id"]
        tid = rec.get("trajectory_id", "")
        if tid not in self.trajectories:
            raise _Invalid(f"{rtype} {_q(rid)} references unknown or later trajectory {_q(tid)}", "trajectory_id")

    def _event_of(self, rec: dict, rtype: str) -> None:
        event = rec.get("event_id", "")
        if event:
            if event not in self.events:
                raise _Invalid(f"{rtype} {_q(rec['id'])} references unknown or later event {_q(event)}", "event_id")
            if self.events[event] != rec.get("trajectory_id", ""):
                raise _Invalid(f"{rtype} {_q(rec['id'])} event belongs to another trajectory")

    def _signal(self, rec: dict) -> None:
        self._add_id(rec.get("id", ""), "signal")
        self._attached(rec, "signal")
        if not rec.get("name"):
            raise _Invalid(f"signal {_q(rec['id'])} name is required", "name")
        self._event_of(rec, "signal")
        value = rec.get("value")
        if value is None:
            raise _Invalid(f"signal {_q(rec['id'])} value: is required", "value")
        if isinstance(value, list):  # an object (Obj) or an array
            what = "map[string]interface {}" if isinstance(value, Obj) else "[]interface {}"
            raise _Invalid(f"signal {_q(rec['id'])} value: must be a number, string, or boolean, got {what}", "value")

    def _artifact(self, rec: dict) -> None:
        aid = rec.get("id", "")
        self._add_id(aid, "artifact")
        self._attached(rec, "artifact")
        if not rec.get("media_type"):
            raise _Invalid(f"artifact {_q(aid)} media_type is required", "media_type")
        self._event_of(rec, "artifact")
        locations = bool(rec.get("path")) + bool(rec.get("text")) + ("json" in rec)
        if locations != 1:
            raise _Invalid(f"artifact {_q(aid)} must provide exactly one of path, text, or json")
        sha = rec.get("sha256", "")
        if sha and not _SHA256.fullmatch(sha):
            raise _Invalid(f"artifact {_q(aid)} sha256 must be 64 lowercase hex characters", "sha256")

    def _complete(self, rec: dict) -> None:
        records, warnings = rec.get("records", 0), rec.get("warnings", 0)
        if records < 0:
            raise _Invalid("complete records must be non-negative", "records")
        if warnings < 0:
            raise _Invalid("complete warnings must be non-negative", "warnings")
        if records != self.records:
            raise _Invalid(f"complete reports {records} records, decoded {self.records}", "records")
        self.warnings = warnings
        self.complete = True

    # -- provenance (internal/plugins/validate.go) --------------------------------
    def _provenance(self, rec: dict, eid: str) -> None:
        source = rec["source"]
        error, size = self._resolve(source.get("path", ""))
        problem = None
        if error is not None:
            problem = (f"event {_q(eid)} {error}", "source.path")
        elif "byte_offset" in source:
            end = source["byte_offset"]
            if "byte_length" in source:
                if source["byte_length"] > size - end:
                    problem = (f"event {_q(eid)} source byte range exceeds file size {size}", "source.byte_length")
                end += source["byte_length"]
            if problem is None and end > size:
                problem = (f"event {_q(eid)} source byte range ends at {end} past file size {size}",
                           "source.byte_offset")
        if problem is not None:
            raise RecordError(problem[0], line=self.line, record_type="event", record_id=eid or None,
                              field=problem[1], kind="provenance")

    def _resolve(self, path: str) -> tuple[str | None, int | None]:
        """``(error, size)`` of a source path as RLViz's EvalSymlinks, ``within`` and Stat see it (cached)."""
        cached = self._resolved.get(path)
        if cached is None:
            cached = self._resolved[path] = self._resolve_now(path)
        return cached

    def sources_unchanged(self) -> bool:
        """Whether every source path resolves as it did while checking (so a re-check gives the same)."""
        return all(self._resolve_now(path) == seen for path, seen in self._resolved.items())

    def _resolve_now(self, path: str) -> tuple[str | None, int | None]:
        joined = path if path.startswith("/") else go_clean(os.path.join(self.root, path))
        try:
            resolved = os.path.realpath(joined, strict=True)
        except (OSError, ValueError) as exc:
            reason = "invalid argument" if isinstance(exc, ValueError) else (exc.strerror or str(exc))
            result: tuple[str | None, int | None] = (f"source path: lstat {joined}: {reason}", None)
        else:
            if not within(self.root, resolved):
                result = ("source path escapes registered root", None)
            else:
                try:
                    result = (None, os.stat(resolved).st_size)
                except OSError as exc:
                    result = (f"source path: {exc.strerror or exc}", None)
        return result


def go_clean(path: str) -> str:
    """``filepath.Clean`` for an absolute path (``//x`` is ``/x``, unlike ``os.path.normpath``)."""
    cleaned = os.path.normpath(path)
    return "/" + cleaned.lstrip("/") if cleaned.startswith("//") else cleaned


def within(root: str, path: str) -> bool:
    """RLViz's ``within``: ``path`` is ``root`` or below it (lexically)."""
    return path == root or path.startswith(root.rstrip("/") + "/")


def _q(text: str) -> str:
    """A string quoted as Go's %q does, near enough for messages."""
    import json

    return json.dumps(text, ensure_ascii=False)


def check_stream(data: bytes, root: str | os.PathLike | None = None, *, strict: bool = False) -> StreamSummary:
    """Check a whole canonical stream held in memory; raises :class:`RecordError`."""
    checker = StreamChecker(root, strict=strict)
    for raw in split_lines(data):
        checker.add_line(raw)
    return checker.finish()
