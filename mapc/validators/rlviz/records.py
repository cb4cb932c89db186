"""Canonical NDJSON checks: RLViz's JSON Schema plus its relational stream rules.

A stream passes when every line is one compact JSON object that matches
``canonical-record.schema.json`` and the stream rules of RLViz v1alpha1 hold:
ids are unique, references point to earlier records (trajectory parents in the
same group; event parents, signal/artifact events and context event lists in
the same trajectory), event sequences strictly increase per trajectory, and
exactly one ``complete`` record comes last with the count of records before
it. With a source ``root``, event ``source`` locations must also name an
existing file inside that root and stay within its size (RLViz's provenance
check during ``plugin validate``).

RLViz decodes records with Go's strict JSON decoder, which is stricter than
the schema in two ways mirrored here: integers must be written as integers
(``1.0`` is not a sequence), and ``NaN``/``Infinity`` are not JSON.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator

import jsonschema
from referencing import Registry, Resource

MAX_RECORD_BYTES = 8 << 20
RECORD_TYPES = ("run", "case", "group", "trajectory", "event", "signal", "artifact", "complete")
_SCHEMAS = Path(__file__).resolve().parent / "schemas"
_RFC3339 = re.compile(
    r"^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])[Tt]([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)"
    r"(\.\d+)?([Zz]|[+-]([01]\d|2[0-3]):[0-5]\d)$"
)
_CONTEXT_LISTS = ("retained_event_ids", "dropped_event_ids", "summarized_event_ids")


class RecordError(Exception):
    """One finding, with the context RLViz reports (line, record, field)."""

    def __init__(self, message: str, *, line: int | None = None, record_type: str | None = None,
                 record_id: str | None = None, field: str | None = None, kind: str = "protocol"):
        super().__init__(message)
        self.message = message
        self.line = line
        self.record_type = record_type
        self.record_id = record_id
        self.field = field
        self.kind = kind

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


def load_schema(name: str) -> dict:
    """One of RLViz's published schemas shipped with mapc (``<name>.schema.json``)."""
    return json.loads((_SCHEMAS / f"{name}.schema.json").read_text(encoding="utf-8"))


def is_date_time(value: Any) -> bool:
    """RFC 3339 ``date-time`` as JSON Schema defines the format."""
    return not isinstance(value, str) or bool(_RFC3339.match(value))


def _strict_types() -> Any:
    # Go decodes integers into int64: a JSON float such as 1.0 is rejected, and
    # booleans are never numbers.
    checker = jsonschema.Draft202012Validator.TYPE_CHECKER
    return checker.redefine_many({
        "integer": lambda _, v: isinstance(v, int) and not isinstance(v, bool),
        "number": lambda _, v: isinstance(v, (int, float)) and not isinstance(v, bool),
    })


@lru_cache(maxsize=None)
def schema_validator(name: str, definition: str | None = None):
    """A validator for schema ``name`` (or one of its ``$defs``), strict about types and formats."""
    schema = load_schema(name)
    registry = Registry().with_resource(schema["$id"], Resource.from_contents(schema))
    target = {"$ref": f"{schema['$id']}#/$defs/{definition}"} if definition else schema
    cls = jsonschema.validators.extend(jsonschema.Draft202012Validator, type_checker=_strict_types())
    formats = jsonschema.FormatChecker(formats=())
    formats.checks("date-time")(is_date_time)
    return cls(target, registry=registry, format_checker=formats)


def _dotted(parts) -> str:
    return ".".join(str(p) for p in parts if not isinstance(p, int))


def schema_problem(validator, instance: Any) -> tuple[str | None, str] | None:
    """The most relevant schema violation as ``(field, message)``, or None when valid."""
    error = jsonschema.exceptions.best_match(validator.iter_errors(instance))
    if error is None:
        return None
    where = list(error.absolute_path)
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = set(error.schema.get("properties", {}))
        extra = sorted(k for k in error.instance if k not in allowed)
        field = _dotted(where + extra[:1])
        return field, f"unknown field {field!r}"
    if error.validator == "required" and isinstance(error.instance, dict):
        missing = [k for k in error.validator_value if k not in error.instance]
        field = _dotted(where + missing[:1])
        return field, f"{field} is required"
    if error.validator == "oneOf" and isinstance(error.instance, dict) and "media_type" in error.instance:
        return None, "artifact must provide exactly one of path, text or json"
    field = _dotted(where) or None
    detail = error.message if len(error.message) <= 160 else error.message[:157] + "..."
    return field, f"{field}: {detail}" if field else detail


def _no_constants(name: str):
    raise ValueError(f"{name} is not valid JSON")


def decode_line(raw: bytes, line: int) -> dict:
    """Parse one NDJSON line the way RLViz's decoder does (strict JSON, one object)."""
    if len(raw) > MAX_RECORD_BYTES:
        raise RecordError(f"canonical record exceeds maximum size ({len(raw)} > {MAX_RECORD_BYTES} bytes)", line=line)
    if not raw.strip():
        raise RecordError("blank records are not allowed", line=line)
    try:
        value = json.loads(raw.decode("utf-8"), parse_constant=_no_constants)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        raise RecordError(f"invalid JSON: {reason}", line=line) from None
    if not isinstance(value, dict):
        raise RecordError("a record must be a JSON object", line=line)
    return value


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


@dataclass
class StreamSummary:
    records: int
    warnings: int


class StreamChecker:
    """Checks records one at a time; memory grows with ids, not with payloads."""

    def __init__(self, root: str | os.PathLike | None = None):
        self.root = os.path.realpath(root) if root is not None else None
        self.line = 0
        self.records = 0
        self.warnings = 0
        self.complete = False
        self.ids: dict[str, str] = {}
        self.cases: set[str] = set()
        self.runs: set[str] = set()
        self.groups: set[str] = set()
        self.trajectories: dict[str, str] = {}  # trajectory id -> group id
        self.events: dict[str, str] = {}  # event id -> trajectory id
        self.last_sequence: dict[str, int] = {}
        self._sizes: dict[str, int] = {}

    # -- entry points ------------------------------------------------------------
    def add_line(self, raw: bytes) -> dict:
        """Decode and check the next line; raises :class:`RecordError`."""
        self.line += 1
        record = decode_line(raw, self.line)
        self.add(record)
        return record

    def add(self, record: dict) -> None:
        rtype = record.get("record_type")
        rid = record.get("id") if isinstance(record.get("id"), str) else None
        ctx = {"line": self.line or None, "record_type": rtype if isinstance(rtype, str) else None, "record_id": rid}
        if "record_type" not in record:
            raise RecordError("record_type is required", field="record_type", **ctx)
        if rtype not in RECORD_TYPES:
            raise RecordError(f"unsupported record_type {rtype!r}", field="record_type", **ctx)
        if self.complete:
            raise RecordError("complete must be the final record", **ctx)
        problem = schema_problem(schema_validator("canonical-record", rtype), record)
        if problem is not None:
            field, message = problem
            raise RecordError(f"invalid {rtype} record: {message}", field=field, **ctx)
        try:
            getattr(self, "_" + rtype)(record)
        except RecordError as exc:
            for key, value in ctx.items():
                if getattr(exc, key) is None:
                    setattr(exc, key, value)
            raise

    def finish(self) -> StreamSummary:
        if not self.complete:
            raise RecordError("stream ended without a complete record")
        return StreamSummary(self.records, self.warnings)

    # -- relational rules ----------------------------------------------------------
    def _claim(self, rec: dict) -> None:
        self.records += 1
        rid, rtype = rec["id"], rec["record_type"]
        if rid in self.ids:
            raise RecordError(f"duplicate id {rid!r} (already used by {self.ids[rid]})", field="id")
        self.ids[rid] = rtype

    @staticmethod
    def _ref(known, key: str, rec: dict, what: str) -> Any:
        value = rec[key]
        if value not in known:
            raise RecordError(
                f"{rec['record_type']} {rec['id']!r} references unknown or later {what} {value!r}", field=key
            )
        return value

    def _run(self, rec: dict) -> None:
        self._claim(rec)
        self.runs.add(rec["id"])

    def _case(self, rec: dict) -> None:
        self._claim(rec)
        self._ref(self.runs, "run_id", rec, "run")
        self.cases.add(rec["id"])

    def _group(self, rec: dict) -> None:
        self._claim(rec)
        self._ref(self.cases, "case_id", rec, "case")
        self.groups.add(rec["id"])

    def _trajectory(self, rec: dict) -> None:
        self._claim(rec)
        group = self._ref(self.groups, "group_id", rec, "group")
        if "parent_id" in rec:
            parent = self._ref(self.trajectories, "parent_id", rec, "parent")
            if self.trajectories[parent] != group:
                raise RecordError(f"trajectory {rec['id']!r} parent {parent!r} belongs to another group",
                                  field="parent_id")
        self.trajectories[rec["id"]] = group

    def _event(self, rec: dict) -> None:
        self._claim(rec)
        tid = self._ref(self.trajectories, "trajectory_id", rec, "trajectory")
        seq = rec["sequence"]
        prev = self.last_sequence.get(tid)
        if prev is not None and seq <= prev:
            raise RecordError(f"event {rec['id']!r} sequence {seq} is not greater than prior sequence {prev}",
                              field="sequence")
        if "parent_id" in rec:
            self._same_trajectory(rec, "parent_id", "parent")
        if "context" in rec:
            self._context(rec, tid)
        if "source" in rec and self.root is not None:
            self._provenance(rec)
        self.events[rec["id"]] = tid
        self.last_sequence[tid] = seq

    def _same_trajectory(self, rec: dict, key: str, what: str) -> None:
        target = self._ref(self.events, key, rec, what)
        if self.events[target] != rec["trajectory_id"]:
            raise RecordError(f"{rec['record_type']} {rec['id']!r} {what} {target!r} belongs to another trajectory",
                              field=key)

    def _context(self, rec: dict, tid: str) -> None:
        seen: dict[str, str] = {}
        for key in _CONTEXT_LISTS:
            field = f"context.{key}"
            for eid in rec["context"].get(key, ()):
                if eid in seen:
                    raise RecordError(f"context event {eid!r} is already listed in {seen[eid]}", field=field)
                if eid not in self.events:
                    raise RecordError(f"context references unknown or later event {eid!r}", field=field)
                if self.events[eid] != tid:
                    raise RecordError(f"context event {eid!r} belongs to another trajectory", field=field)
                seen[eid] = field

    def _provenance(self, rec: dict) -> None:
        loc = rec["source"]
        eid = rec["id"]
        path = loc["path"]
        full = path if os.path.isabs(path) else os.path.join(self.root, path)
        resolved = os.path.realpath(full)
        if not os.path.exists(resolved):
            raise RecordError(f"event {eid!r} source path {path!r} does not exist", field="source.path",
                              kind="provenance")
        if os.path.commonpath([self.root, resolved]) != self.root:
            raise RecordError(f"event {eid!r} source path escapes registered root", field="source.path",
                              kind="provenance")
        if "byte_offset" not in loc:
            return
        size = self._sizes.get(resolved)
        if size is None:
            size = self._sizes[resolved] = os.path.getsize(resolved)
        end = loc["byte_offset"]
        if "byte_length" in loc:
            if loc["byte_length"] > size - end:
                raise RecordError(f"event {eid!r} source byte range exceeds file size {size}",
                                  field="source.byte_length", kind="provenance")
            end += loc["byte_length"]
        if end > size:
            raise RecordError(f"event {eid!r} source byte range ends at {end} past file size {size}",
                              field="source.byte_offset", kind="provenance")

    def _signal(self, rec: dict) -> None:
        self._claim(rec)
        self._ref(self.trajectories, "trajectory_id", rec, "trajectory")
        if "event_id" in rec:
            self._same_trajectory(rec, "event_id", "event")

    def _artifact(self, rec: dict) -> None:
        self._signal(rec)

    def _complete(self, rec: dict) -> None:
        if rec["records"] != self.records:
            raise RecordError(f"complete reports {rec['records']} records, decoded {self.records}", field="records")
        self.warnings = rec["warnings"]
        self.complete = True


def check_stream(data: bytes, root: str | os.PathLike | None = None) -> StreamSummary:
    """Check a whole canonical stream held in memory; raises :class:`RecordError`."""
    checker = StreamChecker(root)
    for raw in split_lines(data):
        checker.add_line(raw)
    return checker.finish()
