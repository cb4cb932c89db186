"""Runtime units for mapping programs: reading sources, ids, coercions, probing.

Everything here is copied verbatim into generated adapters (see
``mapc.runtime``), so it uses only the standard library, never prints to
stdout, and turns every problem with the source into either a counted warning
(a recoverable omission) or a :class:`MappingError` with a one-line message.

"""

import json
import math
import os
import re
import sys
import zlib


MAX_WARNINGS_SHOWN = 20
MAX_ID_LENGTH = 512
_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
STATUSES = ("running", "completed", "failed", "cancelled")
GZIP_MAGIC = b"\x1f\x8b"


class MappingError(Exception):
    """The source cannot be mapped: the adapter stops with this one-line message."""


def renamed_id(rid, taken, suffixes):
    """``rid~N`` for the least N >= 2 that ``taken`` does not refuse (the caller takes it).

    Probing from 2 each time made k repeats of one id cost k²/2 probes (4,000 samples
    sharing a uuid: 30 times the time of distinct ones). ``suffixes`` holds, per ``rid``,
    the N its last search stopped short of: ids are never released, so every N below is
    still taken, and each N is probed at most twice however often ``rid`` repeats. It is
    written only when a search found its first try taken: an id renamed once (the usual
    repeat) adds no entry."""
    first = n = suffixes.get(rid, 2)
    while taken(bounded_id(f"{rid}~{n}")):
        n += 1
    if n > first:
        suffixes[rid] = n + 1
    return bounded_id(f"{rid}~{n}")


def loc_text(loc):
    return loc if loc else "0"


_DERIVED_PREFIXES = ("run@", "case@", "group@", "traj@")


def child_id(prefix, parent_id):
    """Default id of the one child a parent has (a level without `each`).

    Derived from the parent, so a parent that repeats (deduplicated) keeps a
    single child: ``case@L3`` -> ``group@L3``, native ``example-0`` ->
    ``group@example-0``.
    """
    for p in _DERIVED_PREFIXES:
        if parent_id.startswith(p):
            return bounded_id(prefix + "@" + parent_id[len(p) :])
    return bounded_id(prefix + "@" + parent_id)


def bounded_id(value):
    """An id RLViz accepts (at most MAX_ID_LENGTH characters): longer ones are hashed, so a
    long name or a suffix on a long id still gives a unique, valid id."""
    if len(value) <= MAX_ID_LENGTH:
        return value
    import hashlib

    return "h-" + hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()


def coerce_id(st, value, where):
    """A record id from a native value: strings as-is, numbers as text, else None."""
    if value is None:
        return None
    if isinstance(value, bool):
        value = "true" if value else "false"
    elif isinstance(value, (int, float)):
        value = json.dumps(value)
    elif not isinstance(value, str):
        st.warn(where, f"expected a string id, got {json_type(value)}; using a derived id")
        return None
    if not value:
        st.warn(where, "empty id; using a derived id")
        return None
    if len(value) > MAX_ID_LENGTH:
        import hashlib

        st.warn(where, f"id longer than {MAX_ID_LENGTH} characters; hashed")
        return "h-" + hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()
    return value


def coerce_text(st, value, where):
    """A display string: strings as-is, numbers/booleans as JSON text, else omitted."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (bool, int, float)):
        return json.dumps(value)
    st.warn(where, f"expected a string, got {json_type(value)}; omitted")
    return None


def coerce_nonempty_text(st, value, where):
    value = coerce_text(st, value, where)
    return value if value else None


def coerce_time(st, value, where):
    """An RFC 3339 date-time, normalizing ISO 8601 strings; else omitted with a warning."""
    if value is None:
        return None
    if isinstance(value, str):
        if _RFC3339.match(value):
            return value
        import datetime

        try:
            parsed = datetime.datetime.fromisoformat(value)
        except ValueError:
            parsed = None
        if parsed is not None:
            if parsed.tzinfo is None:
                parsed = parsed.replace(tzinfo=datetime.timezone.utc)
            text = parsed.isoformat()
            return text[:-6] + "Z" if text.endswith("+00:00") else text
    st.warn(
        where, f"not an RFC 3339 date-time ({json_type(value)}); omitted (convert with iso8601())"
    )
    return None


def coerce_object(st, value, where):
    if value is None or isinstance(value, dict):
        return value
    st.warn(where, f"expected an object, got {json_type(value)}; omitted")
    return None


def coerce_status(st, value, where):
    if value is None or value in STATUSES:
        return value
    st.warn(
        where, f"status {value!r} is not one of running, completed, failed, cancelled; omitted"
    )
    return None


def coerce_scalar(st, value, where):
    """A signal value: number, string or boolean; null skips it silently."""
    if isinstance(value, float) and not math.isfinite(
        value
    ):  # 1e999 in the source reads as infinity
        st.warn(where, "signal value is not a finite number; skipped")
        return None
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    st.warn(
        where, f"signal value must be a number, string or boolean, got {json_type(value)}; skipped"
    )
    return None


def coerce_artifact_path(st, value, where):
    value = coerce_nonempty_text(st, value, where)
    if value is None:
        return None
    parts = value.replace("\\", "/").split("/")
    if value.startswith(("/", "\\")) or ".." in parts or re.match(r"^[A-Za-z]:", value):
        st.warn(where, "artifact path must stay inside the source root; skipped")
        return None
    return value


def coerce_sha256(st, value, where):
    if value is None:
        return None
    if isinstance(value, str) and re.fullmatch(r"[0-9a-f]{64}", value):
        return value
    st.warn(where, "sha256 must be 64 lowercase hex characters; omitted")
    return None


def truthy(value):
    """JMESPath truthiness: false, null, and empty strings, arrays and objects are false."""
    return not (value is None or value is False or value == "" or value == [] or value == {})


def json_type(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def iterate(st, value, where):
    """Elements to loop over: arrays as-is, null as nothing, anything else warned and skipped."""
    if isinstance(value, list):
        return value
    if value is not None:
        st.warn(where, f"expected an array to iterate, got {json_type(value)}; skipped")
    return ()


def compact_object(pairs):
    """An object template: members whose value is null are dropped."""
    return {k: v for k, v in pairs if v is not None}


def contained(root, path, what="path", where="its root"):
    """``path`` (relative to ``root``, or absolute) with every symlink resolved, if it stays
    inside ``root``; else a MappingError. The one containment rule of every generated runner
    and adapter: a symlink anywhere on the way, ``..`` or an absolute path that leads out is
    refused, with this one line whatever the target."""
    base = os.path.realpath(root)
    full = os.path.realpath(os.path.join(base, path))
    if os.path.commonpath([base, full]) != base:
        raise MappingError(
            f"{what} {path!r} leads outside {where} (through a symlink, '..' or an absolute "
            "path); refused"
        )
    return full


#: what :meth:`JsonDocumentReader.attempt` gives for a value longer than it may hold
_LONGER = object()


class StreamedArray(list):
    """Stands in a document for its big top-level array while :class:`JsonDocumentReader`
    reads it from disk: empty to anything but :func:`streamed_elements`."""

    __slots__ = ("reader",)


def streamed_elements(doc, key, mode):
    """The elements of the document's array ``key`` (None: the document itself) when it is
    a :class:`StreamedArray`, one at a time, as the loop's expression would give them
    (``mode`` 0: ``a``; 1: ``a[]``, nested arrays flattened one level; 2: ``a[*]``; nulls
    dropped by 1 and 2); None when the document was parsed whole."""
    value = doc if key is None else doc.get(key) if type(doc) is dict else None
    if type(value) is not StreamedArray:
        return None
    elements = value.reader.elements()
    if mode == 0:
        return elements
    if mode == 2:
        return (v for v in elements if v is not None)
    return (x for v in elements for x in (v if isinstance(v, list) else (v,)) if x is not None)


def is_gzip(path):
    """Whether the file starts with gzip's magic bytes (whatever its name)."""
    with open(path, "rb") as fh:
        return fh.read(2) == GZIP_MAGIC


def open_source(path):
    """``(binary stream, gzipped)``: a gzip file (:func:`is_gzip`) is decompressed as it is
    read; callers bound what they read as for a plain file, so the limits apply to the
    decompressed bytes and a gzip bomb stops at them."""
    if is_gzip(path):
        import gzip  # here, not at module top: only gzipped sources load it

        return gzip.open(path, "rb"), True
    return open(path, "rb"), False  # noqa: SIM115 - the caller closes it


def gzip_read(read, size):
    """``read(size)`` on a gzip stream, its errors (corrupt, cut off) as a MappingError."""
    try:
        return read(size)
    except (OSError, EOFError, zlib.error) as exc:
        raise MappingError(f"source is not a readable gzip file: {exc}") from None


def json_error(exc, where, inline=False):
    """The MappingError for JSON that could not be decoded (``where`` prefixes the message).

    ``inline``: the text was one line of the file that ``where`` names, so the place is a
    column of it (json's own line number would always be 1)."""
    if isinstance(exc, json.JSONDecodeError):
        hint = ""
        if exc.msg == "Extra data" and exc.colno == 1 and not where:  # a document, line after line
            hint = "; hint: one JSON value per line is JSON Lines: "
            hint += "write container: jsonl in source"
        at = f"column {exc.colno}" if inline else f"line {exc.lineno} column {exc.colno}"
        at = at if exc.msg.endswith(" at") else "at " + at  # json's "… starting at" reads on
        return MappingError(f"{where}invalid JSON: {exc.msg} {at}{hint}")
    if isinstance(exc, RecursionError):
        return MappingError(f"{where}JSON nested too deeply")
    if "integer string conversion" in str(exc):  # Python's int digit limit, without its advice
        return MappingError(f"{where}unreadable JSON value: an integer with more than 4300 digits")
    return MappingError(f"{where}unreadable JSON value: {exc}")


def has_path(value, keys):
    for key in keys:
        if not isinstance(value, dict):
            return False
        value = value.get(key)
    return value is not None


def missing_required(value, required):
    """The first required field path absent from ``value``, or None."""
    for keys in required:
        if not has_path(value, keys):  # written as the spec writes it: a."b.c" for the key b.c
            return ".".join(
                k if re.match(r"[A-Za-z_][A-Za-z0-9_]*\Z", k)
                else json.dumps(k, ensure_ascii=False)
                for k in keys
            )
    return None


def warn_stderr(st):
    """Write the kept warning messages to stderr (never stdout)."""
    for message in st.messages:
        sys.stderr.write(f"warning: {message}\n")
    if st.warnings > len(st.messages):
        sys.stderr.write(f"warning: ... and {st.warnings - len(st.messages)} more\n")


def compact_encoder():
    """``encode(value) -> str``, the text of ``JSONEncoder(ensure_ascii=False,
    separators=(",", ":"), allow_nan=False).encode``, made once for a whole stream.

    ``JSONEncoder.encode`` builds a new C encoder, with its circular-reference
    bookkeeping, for every call; here CPython's C encoder is built once and
    called directly (the standard encoder is used where there is none). A
    value that contains itself recurses until RecursionError and is then
    encoded by the standard encoder, which raises its own error for it.
    """
    c_encode, standard = _compact_encoders()
    if c_encode is None:
        return standard
    join = "".join

    def encode(value):
        try:
            return join(c_encode(value, 0))
        except RecursionError:
            return standard(value)

    return encode


def _compact_encoders():
    """CPython's C encoder of :func:`compact_encoder` (None without one) and the standard
    ``encode`` it stands for."""
    standard = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return None, standard.encode
    c_encode = make(
        None, standard.default, json.encoder.encode_basestring, None, ":", ",", False, False, False
    )
    return c_encode, standard.encode


def one_line(exc):
    """A one-line diagnostic for any failure while mapping."""
    if isinstance(exc, MappingError):
        return str(exc)
    if isinstance(exc, RecursionError):
        return "the source is nested too deeply"
    if isinstance(exc, MemoryError):
        return "out of memory while mapping the source"
    if isinstance(exc, OSError):
        return f"cannot read the source: {exc.strerror or exc}"
    if isinstance(exc, ValueError) and "JSON compliant" in str(exc):
        return "the source holds a number too large for JSON output"
    text = " ".join(str(exc).split())
    if type(exc).__name__ in (
        "ExpressionTypeError",
        "ExpressionValueError",
    ):  # JMESPath's own errors
        frames = []
        tb = exc.__traceback__
        while tb is not None:
            frames.append(tb.tb_frame)
            tb = tb.tb_next
        at, spec, fixes = failure_place(frames)
        head = f"{at}: " if at else ""
        fixes = fixes.get(text.split("(", 1)[0]) if " must be " in text else None
        fix = fixes[0 if text.endswith("got null") else 1] if fixes else None
        hint = f"; hint: {fix}" if fix else ""
        return f"{head}{spec or 'a spec expression'} cannot be evaluated: {text}{hint}"[:500]
    return f"internal error ({type(exc).__name__}): {text}"[:500]


def failure_place(frames, where=None):
    """``(source place, spec place, fixes)`` of a failure, read off the generated code's
    frames (outermost first) and its tables (``SPEC_FILE``, ``SPEC_PLACES``, ``SPEC_LOOPS``).

    The spec place is ``records.events.rules[0].content (spec.yaml:31)``: the spec path
    ``where``, else the innermost expression function's. The source place is
    ``line 3, $.steps[2]`` (JSON Lines) or ``$.runs[1].steps[2]``: the line being mapped
    and the JSON path of the element, from each level's loop indexes.
    """
    line, steps, place, file = None, [], None, ""
    for frame in frames:
        code, names = frame.f_code.co_name, frame.f_globals
        places = names.get("SPEC_PLACES")
        if places is None:
            continue
        if code.startswith("x_"):
            place = _function_place(places, names.get("SPEC_FILE", ""), code) or place
        elif code.startswith("level_"):
            local = frame.f_locals
            srcloc = local.get("srcloc")
            if isinstance(srcloc, dict) and isinstance(srcloc.get("line"), int):
                line = srcloc["line"]
            for var, step in names.get("SPEC_LOOPS", {}).get(code, ()):
                if isinstance(local.get(var), int):
                    steps.append(f"{step}[{local[var]}]")
        elif code == "map_child_source":  # a subtrajectory's file: the place is in it
            line, steps, file = None, [], frame.f_locals.get("srcloc", {}).get("path", "")
        if where is not None:
            # a signal's value is at its signal's place (`...signals.reward.value`)
            at = places.get(where, places.get(where[:-6]) if where.endswith(".value") else None)
            if at is not None:
                place = (where, _spec_at(at, names.get("SPEC_FILE", "")))
    path = "$" + "".join(steps) if steps else ""
    at = ", ".join(p for p in (file, f"line {line}" if line else "", path) if p)
    if place is None:
        return at, None, {}
    fixes = place[2] if len(place) > 2 else {}
    return at, f"{place[0]} ({place[1]})" if place[1] else place[0], fixes


def _spec_at(value, spec_file):
    """``spec.yaml:31``: a ``SPEC_PLACES`` value, a line of ``SPEC_FILE`` or ``file:line``."""
    return f"{spec_file}:{value}" if isinstance(value, int) else value


def _function_place(places, spec_file, code):
    """``(spec path, file:line[, fixes])`` of expression function ``code``: its own entry
    in ``SPEC_PLACES``, else the spec path it is named after (``x_records_case_id``)."""
    entry = places.get(code)
    if entry is not None:
        return entry
    for key, value in places.items():
        if not key.startswith("x_") and "x_" + _identifier(key) == code:
            return (key, _spec_at(value, spec_file))
    return None


def _identifier(where):
    """The Python name a spec path gives its expression function (``records_case_id``)."""
    return re.sub(r"_+", "_", re.sub(r"[^0-9A-Za-z_]+", "_", where).strip("_").lower())
