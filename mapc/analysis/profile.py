"""A bounded structural profile of a sample trace: shape, and values only where asked.

``mapc drift`` compares the fields a spec reads with a new sample's profile,
and ``mapc init --from`` drafts a spec from one; both read samples through
:func:`profile` so they agree on what a sample holds. A profile records the
container kind (one JSON document or JSON Lines), every field path with the
JSON types seen there and, for arrays, their lengths. It records no value
unless asked (``values=True``, for ``mapc init``), and then only for fields
that look like discriminators: at most ``MAX_VALUES`` distinct short,
identifier-like strings (``type: tool_call``, ``role: assistant``); a field
with more distinct values, or one holding free text, keeps none. So profiles
may be printed or stored next to specs without leaking trace content.

Paths use the syntax of expression field paths (:mod:`mapc.core.fieldpath`):
fields joined with ``.`` (a key that is not an identifier quoted, as JMESPath
reads it: ``attributes."gen_ai.system"``), ``[]`` for "any element of an array", relative to
the document (json) or to each line (jsonl); ``""`` is the root itself.
Reads are bounded: at most ``max_bytes`` of the file (a JSON document cut by
the bound is parsed as far as it goes), ``max_lines`` lines, ``max_depth``
levels and ``max_paths`` distinct paths; hitting a bound sets ``truncated``.

:func:`profile_elements` profiles values already read (the elements one event rule
takes, for ``mapc drift``): per path also how many elements hold a value there, and,
to tell a renamed field by its values, a fingerprint of them (hashes, never the values).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from mapc.core import fieldpath
from mapc.core.fieldpath import ANY, segments
from mapc.runtime.csv import csv_probe_values
from mapc.runtime.mapping_rt import (  # the runtime's own reading: JSON, CSV rows, gzip
    MappingError,
    gzip_read,
    json_type,
    open_source,
)
from mapc.runtime.sniff import parse_prefix

MAX_BYTES = 16 << 20
MAX_LINES = 5000
MAX_DEPTH = 64
MAX_PATHS = 10000
MAX_VALUES = 12  # distinct values kept per field (values=True); more, and the field keeps none
_VALUE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.:/-]{0,39}$")  # what a discriminator's value looks like
JSONL_SUFFIXES = (".jsonl", ".ndjson")
CSV_SUFFIXES = (".csv", ".tsv")


class ProfileError(ValueError):
    """The sample cannot be read as JSON or JSON Lines."""


@dataclass
class FieldShape:
    """What was seen at one path: JSON types (with counts) and array lengths."""

    types: dict[str, int] = field(default_factory=dict)
    min_length: int | None = None
    max_length: int | None = None
    #: value -> count for a low-cardinality string field (values=True); None: not kept
    values: dict[str, int] | None = None
    #: profile_elements: the elements that hold a value (not null) here
    present: int = 0
    #: profile_elements: a fingerprint of the values here (see :class:`Fingerprint`)
    fingerprint: "Fingerprint | None" = None

    @property
    def count(self) -> int:
        return sum(self.types.values())

    def to_dict(self) -> dict:
        out: dict = {"types": dict(sorted(self.types.items())), "count": self.count}
        if self.min_length is not None:
            out["array_length"] = [self.min_length, self.max_length]
        return out


@dataclass
class Profile:
    container: str  # "json", "jsonl" or "csv"
    records: int  # documents (1) or lines profiled
    fields: dict[str, FieldShape]  # path -> shape, in sorted path order
    bytes_read: int
    truncated: bool = False  # a bound was hit: the profile covers a prefix
    invalid_lines: int = 0  # jsonl lines that are not JSON (skipped)
    columns: dict[str, str] = field(default_factory=dict)  # csv: column types the cells show

    def types(self, path: str) -> set[str]:
        shape = self.fields.get(path)
        return set(shape.types) if shape else set()

    def children(self, path: str) -> list[str]:
        """Member names of the objects at ``path`` (the keys as the source has them)."""
        prefix = f"{path}." if path else ""
        out = []
        for p in self.fields:
            if p.startswith(prefix) and p != path:
                segs = segments(p[len(prefix):])
                if len(segs) == 1 and segs[0] != ANY:
                    out.append(segs[0])
        return out

    def to_dict(self) -> dict:
        return {
            "container": self.container,
            "records": self.records,
            "bytes_read": self.bytes_read,
            "truncated": self.truncated,
            "invalid_lines": self.invalid_lines,
            "fields": {p: s.to_dict() for p, s in self.fields.items()},
        }


MAX_DIGESTS = 64  # value hashes kept per path by a fingerprint


#: What a text looks like, for a fingerprint (the first pattern that matches)
_TEXT_KINDS = (
    ("time", re.compile(r"\d{4}-\d\d-\d\d")),
    ("uuid", re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\Z")),
    ("hex", re.compile(r"[0-9a-fA-F]{16,}\Z")),
    ("number", re.compile(r"-?\d+(\.\d+)?\Z")),
    ("url", re.compile(r"[a-z]+://")),
    ("text", re.compile(r".*\s", re.S)),
)


@dataclass
class Fingerprint:
    """What the values at one path look like, to tell whether a field that appeared holds
    what one that disappeared held: hashes of the first distinct scalar values (never the
    values), what the texts look like (times, uuids, words, text with spaces...) and the
    range of text lengths and of numbers."""

    digests: set[bytes] = field(default_factory=set)
    kinds: set[str] = field(default_factory=set)
    low: float | None = None
    high: float | None = None

    def add(self, value) -> None:
        if isinstance(value, (dict, list)):
            return
        if len(self.digests) < MAX_DIGESTS:
            self.digests.add(hashlib.blake2b(json.dumps(value).encode(), digest_size=8).digest())
        if isinstance(value, str):
            self.kinds.add(next((k for k, pattern in _TEXT_KINDS if pattern.match(value)), "word"))
            size = len(value)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            size = value
        else:
            return
        self.low = size if self.low is None else min(self.low, size)
        self.high = size if self.high is None else max(self.high, size)

    def similar(self, other: "Fingerprint") -> bool:
        """Shared values; or texts that look alike (same kinds, close lengths), or numbers in
        ranges that overlap."""
        if self.digests & other.digests:
            return True
        if None in (self.low, other.low) or (self.kinds or other.kinds) and not self.kinds & other.kinds:
            return False
        return self.low <= other.high * 2 + 1 and other.low <= self.high * 2 + 1

    def merge(self, other: "Fingerprint") -> None:
        self.digests |= other.digests
        self.kinds |= other.kinds
        for v in (other.low, other.high):
            if v is not None:
                self.low = v if self.low is None else min(self.low, v)
                self.high = v if self.high is None else max(self.high, v)


class _Walker:
    def __init__(self, max_depth: int, max_paths: int, values: bool = False):
        self.fields: dict[str, FieldShape] = {}
        self.max_depth = max_depth
        self.max_paths = max_paths
        self.truncated = False
        self.values = values
        self.no_values: set[str] = set()  # paths that held free text or too many values
        self.seen: set[str] | None = None  # profile_elements: the paths with a value in this element

    def walk(self, value, path: str = "", depth: int = 0) -> None:
        # iterative on wide arrays, recursive on depth (bounded by max_depth)
        shape = self.fields.get(path)
        if shape is None:
            if len(self.fields) >= self.max_paths:
                self.truncated = True
                return
            shape = self.fields[path] = FieldShape()
        kind = json_type(value)
        shape.types[kind] = shape.types.get(kind, 0) + 1
        if self.seen is not None and kind != "null":
            self.seen.add(path)
            if shape.fingerprint is None:
                shape.fingerprint = Fingerprint()
            shape.fingerprint.add(value)
        if kind == "string" and self.values and path not in self.no_values:
            self.value(shape, path, value)
        if kind not in ("object", "array"):
            return
        if depth >= self.max_depth:
            self.truncated = True
            return
        if kind == "array":
            n = len(value)
            shape.min_length = n if shape.min_length is None else min(shape.min_length, n)
            shape.max_length = n if shape.max_length is None else max(shape.max_length, n)
            child = path + "[]"
            for item in value:
                self.walk(item, child, depth + 1)
        else:
            for key, item in value.items():
                self.walk(item, fieldpath.child(path, key), depth + 1)


    def value(self, shape: FieldShape, path: str, value: str) -> None:
        seen = shape.values if shape.values is not None else {}
        if not _VALUE.match(value) or (value not in seen and len(seen) >= MAX_VALUES):
            self.no_values.add(path)
            shape.values = None
            return
        seen[value] = seen.get(value, 0) + 1
        shape.values = seen


def _read(path: Path, max_bytes: int) -> tuple[bytes, bool]:
    """At most ``max_bytes`` of the file, decompressed when it is gzipped."""
    fh, gz = open_source(str(path))
    with fh:
        try:
            data = gzip_read(fh.read, max_bytes + 1) if gz else fh.read(max_bytes + 1)
        except MappingError as exc:
            raise ProfileError(f"{path.name}: {exc}") from None
    return data[:max_bytes], len(data) > max_bytes


def profile(path: str | Path, *, container: str | None = None, max_bytes: int = MAX_BYTES,
            max_lines: int = MAX_LINES, max_depth: int = MAX_DEPTH, max_paths: int = MAX_PATHS,
            values: bool = False, columns: dict[str, str] | None = None, delimiter: str = ",",
            fingerprints: bool = False) -> Profile:
    """Profile the sample at ``path`` (gzipped or not); ``container`` (json|jsonl|csv) skips
    the guess; ``values`` keeps the values of discriminator-like string fields;
    ``fingerprints`` a :class:`Fingerprint` per path. A csv sample's
    cells are read with ``columns`` (the spec's types) or, without them, with the types its
    cells show (``Profile.columns``).

    Raises :class:`ProfileError` (a one-line reason) when it is neither JSON
    nor JSON Lines, and ``OSError`` when it cannot be read.
    """
    path = Path(path)
    if path.is_dir():
        raise ProfileError(f"{path} is a directory, not a sample trace")
    data, cut = _read(path, max_bytes)
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        text = data.decode("utf-8", "ignore" if cut else "strict")
    except UnicodeDecodeError:
        raise ProfileError(f"{path.name} is not UTF-8 text") from None
    if not text.strip():
        raise ProfileError(f"{path.name} is empty")
    if container is None:
        container = guess_container(text, path.name)
    walker = _Walker(max_depth, max_paths, values)
    if fingerprints:
        walker.seen = set()  # filled and never read: a fingerprint is kept per path
    if container == "csv":
        return _profile_csv(path, text, cut, walker, max_lines, columns, delimiter, len(data))
    if container == "jsonl":
        records, invalid, more = _profile_lines(text, cut, walker, max_lines)
        if records == 0:
            raise ProfileError(f"{path.name}: no line is a JSON value")
        return Profile("jsonl", records, dict(sorted(walker.fields.items())), len(data),
                       truncated=cut or more or walker.truncated, invalid_lines=invalid)
    try:
        value, complete = parse_prefix(text)
    except (ValueError, RecursionError):
        raise ProfileError(f"{path.name} is not a JSON document (nor JSON Lines)") from None
    walker.walk(value)
    return Profile("json", 1, dict(sorted(walker.fields.items())), len(data),
                   truncated=cut or not complete or walker.truncated)


def profile_elements(values, *, max_depth: int = MAX_DEPTH, max_paths: int = MAX_PATHS) -> Profile:
    """Profile values already read (paths relative to each): per path also the number of
    values that hold something there (``present``) and a :class:`Fingerprint`."""
    walker = _Walker(max_depth, max_paths)
    count = 0
    for value in values:
        count += 1
        walker.seen = set()
        walker.walk(value)
        for path in walker.seen:
            walker.fields[path].present += 1
    return Profile("elements", count, dict(sorted(walker.fields.items())), 0, truncated=walker.truncated)


def guess_container(text: str, name: str = "") -> str:
    """``jsonl`` for a .jsonl/.ndjson name or several JSON lines, ``csv`` for a .csv/.tsv
    name (``.gz`` after either too); else ``json``."""
    lower = name.lower().removesuffix(".gz")
    if lower.endswith(JSONL_SUFFIXES):
        return "jsonl"
    if lower.endswith(CSV_SUFFIXES):
        return "csv"
    try:
        json.loads(text)
        return "json"
    except (ValueError, RecursionError):
        pass
    lines = [ln for ln in text.split("\n")[:2] if ln.strip()]
    if len(lines) >= 2:
        try:
            json.loads(lines[0])
            return "jsonl"
        except (ValueError, RecursionError):
            pass
    return "json"


def csv_column_types(rows: list[dict]) -> dict[str, str]:
    """The type each column's non-empty cells all have (boolean, integer, number), for the
    columns that have one; text columns are left out."""
    from mapc.runtime.csv import CSV_CONVERTERS

    out: dict[str, str] = {}
    for name in rows[0] if rows else ():
        cells = [r[name].strip() for r in rows if r.get(name, "").strip()]
        for kind in ("boolean", "integer", "number"):
            if kind == "boolean" and any(c.lower() not in ("true", "false") for c in cells):
                continue  # 0 and 1 alone are numbers
            if cells and all(_converts(CSV_CONVERTERS[kind], c) for c in cells):
                if kind != "integer" or all("." not in c for c in cells):  # 3.0: a number column
                    out[name] = kind
                    break
    return out


def _converts(convert, cell: str) -> bool:
    try:
        convert(cell)
        return True
    except (ValueError, KeyError):
        return False


def _profile_csv(path: Path, text: str, cut: bool, walker: _Walker, max_lines: int,
                 columns: dict[str, str] | None, delimiter: str, size: int) -> Profile:
    rows = csv_probe_values(text, cut, max_lines, ({}, delimiter))
    if isinstance(rows, str):
        raise ProfileError(f"{path.name}: {rows}")
    types = dict(columns) if columns is not None else csv_column_types(rows)
    typed = csv_probe_values(text, cut, max_lines, (types, delimiter))
    if isinstance(typed, str):
        raise ProfileError(f"{path.name}: {typed}")
    for row in typed:
        walker.walk(row)
    return Profile("csv", len(typed), dict(sorted(walker.fields.items())), size,
                   truncated=cut or len(typed) >= max_lines or walker.truncated,
                   columns=types if columns is None else {})


def _profile_lines(text: str, cut: bool, walker: _Walker, max_lines: int) -> tuple[int, int, bool]:
    lines = text.split("\n")
    if cut:
        lines.pop()  # the last line may be cut off by the bound
    records = invalid = 0
    for line in lines:
        if not line.strip():
            continue
        if records >= max_lines:
            return records, invalid, True
        try:
            value = json.loads(line)
        except (ValueError, RecursionError):
            invalid += 1
            continue
        records += 1
        walker.walk(value)
    return records, invalid, False


# -- path matching ------------------------------------------------------------------------
def _matches(pattern: tuple[str, ...], path: tuple[str, ...]) -> bool:
    return len(pattern) == len(path) and all(
        p == q or (p == "*" and q != "[]") for p, q in zip(pattern, path))


def _variants(segs: tuple[str, ...], longest: int):
    """The path, and the same with ``[][]`` read as ``[]`` (one pair more at a time, leftmost
    first): field paths index a projection's result (``a[?x] | [0].b``) as if it were nested
    arrays. Only those of at most ``longest`` segments (no longer path can match), each built
    once: collapsing a pair at a time rescanned the path (``a[0][0]...``: n² and n variants)."""
    dups = [i for i in range(1, len(segs)) if segs[i] == segs[i - 1] == "[]"]
    for k in range(max(0, len(segs) - longest), len(dups) + 1):
        if k == 0:
            yield segs
            continue
        cut = dups[k - 1]  # drop dups[:k]: the path up to ``cut`` has every pair collapsed
        yield tuple(s for i, s in enumerate(segs[:cut]) if not (s == "[]" and i and segs[i - 1] == "[]")) \
            + segs[cut + 1:]


class PathIndex:
    """Looks field paths up in a profile, as expressions read them (`*` and `[][]` included)."""

    def __init__(self, prof: Profile):
        self.fields = {segments(p): (p, set(s.types)) for p, s in prof.fields.items()}
        self.longest = max(map(len, self.fields), default=0)

    def lookup(self, path: str) -> tuple[str, set[str]] | None:
        """(profile path, types) of the first variant of ``path`` the profile has."""
        for variant in _variants(segments(path), self.longest):
            if variant in self.fields:
                return self.fields[variant]
            if "*" not in variant:
                continue
            types: set[str] = set()
            hit = None
            for segs, (p, t) in self.fields.items():
                if _matches(variant, segs):
                    types |= t
                    hit = hit or p
            if hit:
                return hit, types
        return None

    def nearest_ancestor(self, path: str) -> tuple[str, set[str]] | None:
        segs = segments(path)
        for n in range(len(segs) - 1, -1, -1):
            found = self.lookup(fieldpath.render(segs[:n]))
            if found is not None:
                return found
        return None
