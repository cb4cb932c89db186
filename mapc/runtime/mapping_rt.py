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
import stat
import sys
import zlib
from array import array
from itertools import compress, islice

MAX_WARNINGS_SHOWN = 20
MAX_ID_LENGTH = 512
MAX_SIBLING_BYTES = 64 << 20
_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
STATUSES = ("running", "completed", "failed", "cancelled")
STREAM_ABOVE_BYTES = 4 << 20
_JSON_SPACE = json.decoder.WHITESPACE  # [ \t\n\r]*, compiled when json is imported
GZIP_MAGIC = b"\x1f\x8b"


class MappingError(Exception):
    """The source cannot be mapped: the adapter stops with this one-line message."""


class IdTable:
    """A mapping from ids (text) to integers below 2³² that keeps 96 bits of hash per id
    instead of the id (Python's own string hash and a CRC-32 of its UTF-8): 16 bytes a slot
    in one flat array, plus ``extra`` 64-bit words a slot for the caller (a trajectory's
    sequence and last event), at most 85% of the slots used, whatever the ids' length. A
    dict held each id and an entry, 100 to 700 bytes, and a stream may hold millions of ids.
    Two distinct ids of a stream share both hashes with a probability of about n²/2⁹⁷ for n
    ids (10⁻¹³ for a hundred million). Collisions are resolved by double hashing (the CRC
    gives the step), which keeps lookups short that full."""

    __slots__ = ("_slots", "_mask", "_count", "_width", "_key", "_found")

    def __init__(self, extra=0, slots=8):
        # words a slot: hash (0 when free), crc << 32 | value, then the extra words; ``slots``
        # a power of two (a table that will hold thousands of ids skips the early doublings)
        self._width = 2 + extra
        self._mask = slots - 1
        self._slots = array("Q", bytes(8 * self._width * slots))
        self._count = 0
        self._key = self._found = None  # the last key probed: read, then written back

    def _probe(self, key):
        """``key``'s first word in ``_slots`` (of a free slot if it is absent), its hash and
        its crc << 32."""
        if key is self._key:
            return self._found
        high = hash(key) & 0xFFFFFFFFFFFFFFFF | 1
        crc = zlib.crc32(key.encode("utf-8", "surrogatepass"))
        self._key, self._found = key, (self._find(high, crc), high, crc << 32)
        return self._found

    def _find(self, high, crc):
        """The first word of the slot holding the hashes ``high`` and ``crc`` (``_probe``'s),
        or of the free slot where they would go."""
        slots, width = self._slots, self._width  # a power of two: slot i's first word is
        wmask = (self._mask + 1) * width - 1  # width * i, and the next one's that plus a
        j, step = (high & self._mask) * width, (crc | 1) * width  # step, masked with wmask
        h = slots[j]
        while h and (h != high or slots[j + 1] >> 32 != crc):
            j = (j + step) & wmask
            h = slots[j]
        return j

    def get(self, key, default=None):
        j = self._probe(key)[0]
        return self._slots[j + 1] & 0xFFFFFFFF if self._slots[j] else default

    def __contains__(self, key):
        return self._slots[self._probe(key)[0]] != 0

    def __len__(self):
        return self._count

    def __setitem__(self, key, value):
        j, high, crc = self._probe(key)
        if self._slots[j]:
            self._slots[j + 1] = crc | value
        else:
            self._add(j, high, crc, value)

    def claim(self, key, value):
        """The value ``key`` has; if none, None after giving it ``value`` (one lookup)."""
        j, high, crc = self._probe(key)
        if self._slots[j]:
            return self._slots[j + 1] & 0xFFFFFFFF
        self._add(j, high, crc, value)
        return None

    def claim_apart(self, key, value, other):
        """``claim(key, value)``, or -1 without claiming when the table ``other`` has ``key``:
        both tables probed with one computing of its hashes (``MapState.level``)."""
        high = hash(key) & 0xFFFFFFFFFFFFFFFF | 1
        crc = zlib.crc32(key.encode("utf-8", "surrogatepass"))
        if other._slots[other._find(high, crc)]:
            return -1
        j = self._find(high, crc)
        self._key, self._found = key, (j, high, crc << 32)
        if self._slots[j]:
            return self._slots[j + 1] & 0xFFFFFFFF
        self._add(j, high, crc << 32, value)
        return None

    def count(self, key):
        """How often ``key`` was counted before (one lookup)."""
        j, high, crc = self._probe(key)
        if not self._slots[j]:
            self._add(j, high, crc, 1)
            return 0
        self._slots[j + 1] += 1
        return (self._slots[j + 1] & 0xFFFFFFFF) - 1

    def slot(self, key):
        """``key``'s first word in ``_slots`` (its extra words follow), added with value 0
        if it is absent."""
        j, high, crc = self._probe(key)
        if not self._slots[j]:
            self._add(j, high, crc, 0)
            j = self._probe(key)[0]  # the table may have grown
        return j

    def _add(self, j, high, crc, value):
        slots = self._slots
        slots[j], slots[j + 1] = high, crc | value
        self._count += 1
        if 20 * self._count > 17 * (self._mask + 1):  # 85% full: double
            self._grow()

    def _grow(self):
        """Double the slots and put each used one in its place in the new array (a chunk of
        the old one at a time: ``compress`` skips the free slots in C)."""
        old, width = self._slots, self._width
        self._key = None  # its slot moves
        self._mask = mask = 2 * self._mask + 1
        self._slots = grown = array("Q", bytes(8 * width * (mask + 1)))
        wmask = (mask + 1) * width - 1
        size = 4096 * width
        for start in range(0, len(old), size):
            chunk = old[start : start + size]
            highs = chunk[::width]
            if width == 2:
                for high, low in compress(zip(highs, chunk[1::2]), highs):
                    j, step = (high & mask) * 2, (low >> 32 | 1) * 2
                    while grown[j]:
                        j = (j + step) & wmask
                    grown[j], grown[j + 1] = high, low
                continue
            for k in compress(range(0, size, width), highs):
                high = chunk[k]
                j, step = (high & mask) * width, (chunk[k + 1] >> 32 | 1) * width
                while grown[j]:
                    j = (j + step) & wmask
                grown[j : j + width] = chunk[k : k + width]


class TrajectoryTrail:
    """Where each trajectory stands: its record's owner hash (as ``MapState.levels``), how
    many events it has and the id of its last one (the next event's ``parent: previous``), in
    one :class:`IdTable` with two extra words a slot; the last ids' UTF-8 in one byte arena,
    rewritten in place when the new id fits where the old one was. A trajectory costs about
    40 bytes here plus its last id's bytes (it was three table entries and a str object,
    about 150 bytes). ``seq`` and ``last`` are views the generated code reads and writes
    (``st.seq.get(tid, 0)``, ``st.last[tid] = prev``)."""

    __slots__ = ("table", "arena", "long", "seq", "last")

    def __init__(self):
        # value: owner hash; then sequence, last id's place. 4,096 slots (128 KiB) from the
        # start: a table of thousands of trajectories doubling from 8 was about 13,000
        # instructions an id (every id moved one or two times, in Python); the final size is
        # the same power of two whatever the start
        self.table = IdTable(extra=2, slots=4096)
        self.arena = bytearray()
        self.long = {}  # last ids longer than 4,094 bytes (the place holds 12 bits of length)
        self.seq = TrailSequences(self)
        self.last = TrailLastEvents(self)

    def get_last(self, tid):
        table = self.table
        j = table._probe(tid)[0]
        place = table._slots[j + 3] if table._slots[j] else 0
        if not place:
            return None
        size = (place & 0xFFF) - 1
        if size < 0:
            return self.long.get(tid)
        start = place >> 24
        return self.arena[start : start + size].decode("utf-8", "surrogatepass")

    def set_last(self, tid, eid):
        table = self.table
        j = table.slot(tid)
        place = table._slots[j + 3]
        if eid is None:
            table._slots[j + 3] = 0
            self.long.pop(tid, None)
            return
        data = eid.encode("utf-8", "surrogatepass")
        size = len(data)
        if size > 4094:
            self.long[tid] = eid
            table._slots[j + 3] = 1 << 12  # a place of length -1: in ``long``
            return
        room = place >> 12 & 0xFFF
        if size <= room:
            start = place >> 24
            self.arena[start : start + size] = data
        else:
            start, room = len(self.arena), size
            self.arena += data
        table._slots[j + 3] = start << 24 | room << 12 | (size + 1)


class TrailSequences:
    """``MapState.seq``: a trajectory's event count, as a dict-like view of its trail."""

    __slots__ = ("trail",)

    def __init__(self, trail):
        self.trail = trail

    def get(self, tid, default=None):
        table = self.trail.table
        j = table._probe(tid)[0]
        return table._slots[j + 2] if table._slots[j] else default

    def __setitem__(self, tid, n):
        table = self.trail.table
        j = table.slot(tid)  # first: adding it may grow the table (a new ``_slots``)
        table._slots[j + 2] = n

    def __len__(self):
        return len(self.trail.table)


class TrailLastEvents:
    """``MapState.last``: the id of a trajectory's last event, as a dict-like view."""

    __slots__ = ("trail",)

    def __init__(self, trail):
        self.trail = trail

    def get(self, tid, default=None):
        eid = self.trail.get_last(tid)
        return default if eid is None else eid

    def __setitem__(self, tid, eid):
        self.trail.set_last(tid, eid)


class MapState:
    """Per-run bookkeeping that keeps the canonical stream valid.

    Ids are remembered as 96-bit hashes (:class:`IdTable`): ids of run/case/group/trajectory
    records with their kind and parent, per-trajectory counters and (when the spec uses native
    event ids or native parents) those ids. Memory grows by a few dozen bytes per distinct id,
    however long the ids are; the id of each trajectory's last event is kept whole, as UTF-8
    (:class:`TrajectoryTrail`; it is the next event's parent with ``parent: previous``).
    """

    def __init__(self, semantics=False):
        self.warnings = 0
        self.messages = []
        # run/case/group id -> hash of its kind and parent (level_owner); 4,096 slots (64 KiB)
        # from the start, as the trail's
        self.levels = IdTable(slots=4096)
        self.trails = TrajectoryTrail()  # trajectory id -> that hash, events so far, last event
        self.seq = self.trails.seq  # trajectory id -> events so far
        self.last = self.trails.last  # trajectory id -> id of its last event
        self.native_ids = IdTable()  # native event ids used (value 1)
        # id renamed more than once -> the first ``~N`` not yet tried for it (renamed_id): of
        # run/case/group/trajectory ids, and apart of native event ids (their own namespace)
        self.level_suffixes = IdTable()
        self.event_suffixes = IdTable()
        self.known_events = IdTable()  # trajectory id and event id (event_key) -> 1
        self.ordinals = IdTable()  # level and ordinal_by value -> count
        self.sem = {} if semantics else None
        # write_canonical's writers of events and signals as JSON text (event_writer), without
        # a dict to encode; None: records are collected
        self.write_event = self.write_signal = None
        self.source_text = (None, None)  # a JSON Lines line's location and its JSON text
        self.final_outputs = {}
        self.spawn = None  # the link of a subtrajectory being mapped (map_subtrajectory)
        self._owner = None
        self._owner_names = {}

    def begin(self, src, emit, tables):
        """Start mapping ``src``, its records going to ``emit``: the expressions' scope (for a
        source without sibling files) and the records' source location."""
        self.src, self.emit = src, emit
        scope = {"source": src.info, "tables": tables, "siblings": {}, "root": None}
        return scope, {"path": src.rel}

    def warn(self, where, message):
        """Count a recoverable omission; keep the first few messages for stderr, with the
        spec line and the place in the source when the spec path is the generated code's."""
        self.warnings += 1
        if len(self.messages) < MAX_WARNINGS_SHOWN:
            frames = []
            frame = sys._getframe(1)
            while frame is not None:
                frames.append(frame)
                frame = frame.f_back
            at, spec, _ = failure_place(frames[::-1], where)
            self.messages.append(f"{at + ': ' if at and spec else ''}{spec or where}: {message}")

    def level(self, kind, rec, parent_id):
        """Claim ``rec['id']`` for a run/case/group/trajectory record.

        Returns True when the record is new and must be emitted, False when the
        same record (same id, same parent) was already emitted. An id already
        used by another record gets a ``~N`` suffix and a warning.
        """
        rid = rec["id"]
        owner = hash((kind, parent_id)) & 0xFFFFFFFF  # level_owner(kind, parent_id)
        if kind == "trajectory":
            if self.spawn is not None:  # a subtrajectory's own record: always a new one
                return claim_subtrajectory(self, rec, owner)
            seen = self.trails.table.claim_apart(rid, owner, self.levels)
            mine = self.trails.table
        else:
            seen = self.levels.claim_apart(rid, owner, self.trails.table)
            mine = self.levels
        if seen is None:
            return True
        if seen == owner:
            return False
        new = renamed_id(rid, self.used_id, self.level_suffixes)
        self.warn(
            f"records.{kind}.id", f"id {rid!r} is already used by another record; renamed {new!r}"
        )
        rec["id"] = new
        mine[new] = owner
        return True

    def used_id(self, rid):
        """Whether a run, case, group or trajectory record has the id ``rid``."""
        return rid in self.levels or rid in self.trails.table

    def is_level(self, rid, kind, parent_id):
        """Whether ``rid`` names an emitted record of ``kind`` under ``parent_id``."""
        table = self.trails.table if kind == "trajectory" else self.levels
        return table.get(rid) == level_owner(kind, parent_id)

    def next_sequence(self, tid):
        n = self.seq.get(tid, 0)
        self.seq[tid] = n + 1
        return n

    def native_event_id(self, eid, where):
        """A native event id, made unique across the stream."""
        if eid not in self.native_ids and not self.used_id(eid):
            self.native_ids[eid] = 1
            return eid
        new = renamed_id(eid, self.native_ids.__contains__, self.event_suffixes)
        self.warn(where, f"event id {eid!r} repeats; renamed {new!r}")
        self.native_ids[new] = 1
        return new

    def remember_event(self, tid, eid):
        self.known_events[event_key(tid, eid)] = 1

    def has_event(self, tid, eid):
        """Whether trajectory ``tid`` emitted event ``eid`` (remember_event)."""
        return event_key(tid, eid) in self.known_events

    def parent_event(self, tid, pid, where):
        """Keep a native parent only when it names an earlier event of the trajectory."""
        if pid is None:
            return None
        if self.has_event(tid, pid):
            return pid
        self.warn(where, f"parent {pid!r} is not an earlier event of this trajectory; dropped")
        return None

    def ordinal(self, level, key):
        k = json.dumps(key, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        k = level + "\0" + k
        return self.ordinals.count(k)

    def child_id(self, owner, name):
        """``owner:name`` unique among the children of one owner (signals, artifacts)."""
        if owner != self._owner:
            self._owner = owner
            self._owner_names = {}
        base = f"{owner}:{name}"
        n = self._owner_names.get(base, 0) + 1
        self._owner_names[base] = n
        return bounded_id(base if n == 1 else f"{base}~{n}")


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


def level_owner(kind, parent_id):
    """What MapState.levels keeps of a record's kind and parent: 32 bits of their hash."""
    return hash((kind, parent_id)) & 0xFFFFFFFF


def event_key(tid, eid):
    """One key for an event id within a trajectory (the length keeps the two apart)."""
    return f"{len(tid)}:{tid}{eid}"


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


class SourceFile:
    """One source trace, opened read-only, with bounded reads.

    ``path`` must be a regular file inside ``root`` (default: its folder);
    symlinks are resolved and must not lead outside the root (:func:`contained`).
    """

    def __init__(self, path, root=None, max_bytes=1 << 30, max_line_bytes=64 << 20):
        real = contained(root, path, "source") if root else os.path.realpath(path)
        if os.path.isdir(real):
            raise MappingError(f"source is a directory, not a file: {os.path.basename(path)}")
        if not os.path.isfile(real):
            raise MappingError(f"source not found or not a regular file: {os.path.basename(path)}")
        self.root = os.path.realpath(root) if root else os.path.dirname(real)
        self.path = real
        self.rel = os.path.relpath(real, self.root).replace(os.sep, "/")
        self.name = os.path.basename(real)
        self.stem = os.path.splitext(self.name)[0]
        self.max_bytes = max_bytes
        self.max_line_bytes = max_line_bytes
        #: documents up to this size are parsed whole even when the spec could stream them
        #: (one larger than ``max_line_bytes`` streams: its elements are bounded by it)
        self.stream_above = min(STREAM_ABOVE_BYTES, max_line_bytes)
        self.info = {"path": self.rel, "name": self.name, "stem": self.stem}

    def check_size(self):
        """Refuse a file larger than ``max_bytes`` before reading it: every container is
        bounded so, and a gzip file by what it decompresses to (:meth:`counted`)."""
        size = os.path.getsize(self.path)
        if size > self.max_bytes:
            raise MappingError(
                f"source is {size} bytes; this adapter reads at most {self.max_bytes}; "
                "hint: raise source.max_bytes in the spec and rebuild"
            )

    def too_much(self):
        """The error for a gzip source that decompresses to more than ``max_bytes``."""
        return MappingError(
            f"source decompresses to more than {self.max_bytes} bytes; this adapter reads at "
            f"most {self.max_bytes}; hint: raise source.max_bytes in the spec and rebuild"
        )

    def counted(self, read):
        """``read`` of a gzip stream (:func:`gzip_read`) that stops with :meth:`too_much` once
        all it gave passes ``max_bytes``: a small bomb stops where its plain file would."""
        total = 0

        def read_counted(size):
            nonlocal total
            data = gzip_read(read, size)
            total += len(data)
            if total > self.max_bytes:
                raise self.too_much()
            return data

        return read_counted

    def document(self, st):
        """Parse the whole file as one JSON document (gzip: the decompressed bytes are
        bounded by ``max_bytes`` as a plain file is)."""
        self.check_size()
        fh, gz = open_source(self.path)
        with fh:
            data = gzip_read(fh.read, self.max_bytes + 1) if gz else fh.read(self.max_bytes + 1)
        if len(data) > self.max_bytes:
            raise self.too_much()
        if not data.strip():
            raise MappingError("source is empty")
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise MappingError(f"invalid UTF-8 at byte {exc.start}") from None
        return loads(st, text, "")

    def streamed_document(self, st, key, needed):
        """The document, with its top-level array ``key`` left on disk to be read one
        element at a time (:func:`streamed_elements`); ``needed`` are the other top-level
        members the mapping reads. A small plain file (up to ``stream_above`` bytes), or one
        that is not an object, is parsed whole by :meth:`document` (same result, same
        errors); a gzip file streams whatever its size, its decompressed bytes bounded by
        ``max_bytes`` as a plain file's are."""
        self.check_size()
        if not is_gzip(self.path) and os.path.getsize(self.path) <= self.stream_above:
            return self.document(st)
        doc = JsonDocumentReader(self, st).top_level(key, needed)
        return self.document(st) if doc is None else doc

    def lines(self, st, invalid="error"):
        """Yield ``(line_number, value, location)`` per non-blank line, streaming."""
        limit = self.max_line_bytes
        offset = 0
        number = 0
        seen_data = False

        def constant(name):  # NaN and Infinity: read as null, with a warning naming the line
            st.warn("source", f"line {number}: non-finite number {name} read as null")
            return None

        # one decoder for the whole file (json.loads with an option builds one per call);
        # its scanner, called as raw_decode calls it, spares decode()'s two whitespace scans
        scan = json.JSONDecoder(parse_constant=constant).scan_once
        loc_head = None
        if st.write_event is not None and self.rel.__class__ is str:
            loc_head = ',"source":{"path":' + json.encoder.encode_basestring(self.rel) + ","
        self.check_size()
        fh, gz = open_source(self.path)
        with fh:
            readline = self.counted(fh.readline) if gz else fh.readline
            while True:
                raw = readline(limit + 1)
                if not raw:
                    break
                number += 1
                start = offset
                offset += len(raw)
                if raw[0] == 123 and raw[-1] == 10 and raw[-2] != 13 and number > 1:
                    body = raw[:-1]  # the usual line, "{...}\n": none of the tests below apply
                    start_at = 0
                else:
                    start_at = None
                    if len(raw) > limit and not raw.endswith(b"\n"):
                        raise MappingError(
                            f"line {number}: longer than {limit} bytes; "
                            "hint: raise source.max_line_bytes in the spec and rebuild"
                        )
                    body = raw[:-1] if raw.endswith(b"\n") else raw
                    if body.endswith(b"\r"):
                        body = body[:-1]
                    if number == 1 and body.startswith(b"\xef\xbb\xbf"):
                        body = body[3:]
                        start += 3
                    if not body or body.isspace():
                        continue
                try:
                    text = body.decode("utf-8")
                    if start_at is None:  # JSON's own whitespace first is skipped
                        start_at = 0 if not text[0].isspace() else len(text) - len(text.lstrip())
                    try:
                        value, end = scan(text, start_at)
                    except StopIteration as err:  # what raw_decode raises for it
                        raise json.JSONDecodeError("Expecting value", text, err.value) from None
                    if end != len(text) and not text[end:].isspace():
                        # where json.loads reports it: after the whitespace that follows the value
                        end += len(text[end:]) - len(text[end:].lstrip())
                        raise json.JSONDecodeError("Extra data", text, end)
                except UnicodeDecodeError:
                    if invalid == "skip":
                        st.warn("source", f"line {number}: not valid JSON; skipped")
                        continue
                    raise MappingError(f"line {number}: invalid UTF-8") from None
                except (ValueError, RecursionError) as exc:
                    if invalid == "skip":
                        st.warn("source", f"line {number}: not valid JSON; skipped")
                        continue
                    if body.startswith(b"\xef\xbb\xbf"):  # what json.loads says of a BOM
                        exc = json.JSONDecodeError(
                            "Unexpected UTF-8 BOM (decode using utf-8-sig)", "", 0
                        )
                    raise json_error(exc, f"line {number}: ", inline=True) from None
                seen_data = True
                if gz:  # offsets into the decompressed text would point nowhere in the file
                    yield number, value, {"path": self.rel, "line": number}
                    continue
                loc = {
                    "path": self.rel,
                    "line": number,
                    "byte_offset": start,
                    "byte_length": len(body),
                }
                if loc_head is not None:  # its JSON text for event_writer: no encoding per event
                    st.source_text = loc, (
                        f'{loc_head}"line":{number},"byte_offset":{start},'
                        f'"byte_length":{len(body)}}}}}'
                    )
                yield number, value, loc
        if not seen_data:
            raise MappingError("source is empty")

    def sibling(self, st, candidates):
        """The first existing JSON file among ``candidates`` next to the source, parsed."""
        folder = os.path.dirname(self.path)
        for template in candidates:
            name = (
                template.replace("{stem}", self.stem)
                .replace("{prefix}", self.name.split(".", 1)[0])
                .replace("{name}", self.name)
            )
            try:
                path = contained(self.root, os.path.join(folder, name))
            except MappingError:  # a sibling is optional: one outside the root is not there
                continue
            if not os.path.isfile(path):
                continue
            if os.path.getsize(path) > MAX_SIBLING_BYTES:
                st.warn("source.siblings", f"{name} is too large; ignored")
                return None
            with open(path, "rb") as fh:
                try:
                    return loads(st, fh.read().decode("utf-8-sig"), f"{name}: ")
                except (UnicodeDecodeError, MappingError):
                    st.warn("source.siblings", f"{name} is not valid JSON; ignored")
                    return None
        return None


# --- subtrajectories: files a trace names, mapped as child trajectories (D109) ---------------

#: How deep subtrajectories nest (a subagent's own subagents count one more), and how many files
#: one source maps as subtrajectories in all: a file past either bound is not mapped, with one
#: warning for the bound (docs/spec-reference.md, docs/security.md).
MAX_SUBTRAJECTORY_DEPTH = 4
MAX_SUBTRAJECTORY_FILES = 256


class SubtrajectoryError(MappingError):
    """A subtrajectory's file cannot be mapped: the message names the file (once, however deep)."""


def map_subtrajectory(st, emit, mapper, path, event, traj, tool_call_id, scope, where):
    """Map the file ``path`` names (relative to the folder of the source being mapped) as a
    child trajectory of ``traj``, spawned by ``event``, before that event is emitted; return
    the child's trajectory id, or None when there is none (``path`` null) or the file is refused.

    The file is read as the source is: inside the source's root after every symlink
    (:func:`contained`), a regular file, at most ``max_bytes``; and each file once in a stream,
    so a file naming itself or its parent is refused. Refused or missing: a warning at
    ``where`` (the rule's ``subtrajectory``), never a failure of the source. ``mapper(st, emit,
    scope, parent, loc)`` is the generated code that maps a file from its trajectory level; it
    runs with ``st.src`` the child's file and ``$source`` its place. The child's record gets
    ``parent_id`` ``traj``'s id and ``metadata.spawned_by`` (:func:`claim_subtrajectory`), the
    event ``metadata.subtrajectory_id``."""
    if path is None:
        return None
    real = subtrajectory_file(st, path, where)
    if real is None:
        return None
    subs = st.subtrajectories
    subs.files.add(real)
    parent_src, parent_text, outer = st.src, st.source_text, st.spawn
    # a SourceFile like the source's (named so, the stream part would be loaded with this one)
    child = parent_src.__class__(
        real, parent_src.root, parent_src.max_bytes, parent_src.max_line_bytes
    )
    spawned_by = {"event_id": event["id"]}
    if tool_call_id is not None:
        spawned_by["tool_call_id"] = coerce_id(st, tool_call_id, where)
    link = {"parent": traj["id"], "spawned_by": spawned_by, "where": where}
    st.spawn, st.src = link, child
    subs.depth += 1
    try:
        mapper(st, emit, dict(scope, source=child.info, root=None), {"id": traj["group_id"]},
               f"sub{len(subs.files) - 1}")
    except SubtrajectoryError:
        raise
    except MappingError as exc:
        raise SubtrajectoryError(f"subtrajectory {child.rel}: {exc}") from None
    finally:
        subs.depth -= 1
        st.spawn, st.src, st.source_text = outer, parent_src, parent_text
    child_id = link.get("id")
    if child_id is not None:  # a new object: the rule's metadata may be the source's own
        event["metadata"] = dict(event.get("metadata") or {}, subtrajectory_id=child_id)
    return child_id


def subtrajectory_file(st, path, where):
    """The real path of the subtrajectory file ``path`` names, or None with a warning at
    ``where`` when it is not to be mapped: not a text, missing, out of the source's root, not a
    regular file, larger than ``max_bytes``, mapped before in this stream, or past the bounds."""
    subs = getattr(st, "subtrajectories", None)
    if subs is None:
        subs = st.subtrajectories = Subtrajectories(st.src)
    if not isinstance(path, str) or not path:
        st.warn(where, f"path: expected a file name, got {json_type(path)}; no subtrajectory")
        return None
    if subs.depth >= MAX_SUBTRAJECTORY_DEPTH or len(subs.files) > MAX_SUBTRAJECTORY_FILES:
        deep = subs.depth >= MAX_SUBTRAJECTORY_DEPTH
        if deep not in subs.warned:  # one warning a bound
            subs.warned.add(deep)
            if deep:
                what = f"would nest subtrajectories deeper than {MAX_SUBTRAJECTORY_DEPTH}"
            else:
                what = f"would be subtrajectory file {MAX_SUBTRAJECTORY_FILES + 1} of this source"
            st.warn(where, f"{path!r} {what}; not mapped, nor any other past this bound")
        return None
    src = st.src
    try:
        real = contained(src.root, os.path.join(os.path.dirname(src.path), path), "subtrajectory",
                         "the source's root")
        info = os.stat(real)
    except MappingError as exc:
        st.warn(where, f"{exc}; not mapped")
        return None
    except FileNotFoundError:
        st.warn(where, f"subtrajectory {path!r} is missing; not mapped")
        return None
    except (OSError, ValueError) as exc:  # a name too long, a NUL in it, no permission
        why = getattr(exc, "strerror", None) or exc
        st.warn(where, f"subtrajectory {path!r} cannot be read ({why}); refused")
        return None
    if not stat.S_ISREG(info.st_mode):
        why = "is not a regular file (a folder, pipe or device)"
    elif info.st_size > src.max_bytes:
        why = (f"is {info.st_size} bytes, more than the {src.max_bytes} this adapter reads "
               "(source.max_bytes)")
    elif real in subs.files:
        why = ("is mapped already in this stream (a file naming itself, its parent or another "
               "file mapped before)")
    else:
        return real
    st.warn(where, f"subtrajectory {path!r} {why}; refused")
    return None


class Subtrajectories:
    """What one source's subtrajectories share (``st.subtrajectories``): the files mapped, the
    source's own first (their real paths; how many says the next one's number), how deep the
    mapping is now, and the bounds already warned of."""

    __slots__ = ("files", "depth", "warned")

    def __init__(self, src):
        self.files = {src.path}
        self.depth = 0
        self.warned = set()


def claim_subtrajectory(st, rec, owner):
    """``MapState.level`` for a subtrajectory's trajectory record (``st.spawn`` set): always a
    new record, never one seen before; an id any run, case, group or trajectory has is renamed
    ``~N`` with a warning. The record gets its ``parent_id`` and ``metadata.spawned_by``; the
    id goes back to :func:`map_subtrajectory` in ``st.spawn``."""
    spawn = st.spawn
    rid = rec["id"]
    if st.used_id(rid):
        new = renamed_id(rid, st.used_id, st.level_suffixes)
        st.warn(spawn["where"], f"trajectory id {rid!r} is already used; renamed {new!r}")
        rec["id"] = rid = new
    st.trails.table[rid] = owner
    rec["parent_id"] = spawn["parent"]
    metadata = rec.get("metadata")
    rec["metadata"] = dict(metadata or {}, spawned_by=spawn["spawned_by"])
    spawn["id"] = rid
    st.spawn = None  # its own events may spawn the next ones
    return True


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


class JsonDocumentReader:
    """Reads a JSON document whose top level is an object, member by member, and one of its
    arrays element by element, with bounded memory.

    A value the mapping reads (an element of the array, a member read before it) is decoded
    by the standard library's ``raw_decode`` straight from the buffer, and may be at most
    ``source.max_line_bytes`` characters of JSON text. A value it does not read is checked as
    ``json.loads`` checks it and skipped (:meth:`skip`), never held whole. Memory is a
    window or two (``CHUNK``) plus the value being read; errors carry the line and column
    ``json.loads`` would report for the whole document.
    """

    CHUNK = 1 << 20
    opened = 0  # documents read this way (tests check the streamed path was taken)
    #: a value must end this far before the buffer's end (unless the file ends): a number
    #: cut by the buffer's end would otherwise decode as a shorter one
    MARGIN = 64
    #: arrays and objects a skipped value may nest (json.loads stops near this depth too)
    MAX_DEPTH = 1000

    def __init__(self, src, st):
        self.src = src
        self.limit = src.max_line_bytes  # characters of one value read at once
        self.st = st
        self.pending = []  # non-finite numbers of the value being decoded
        self.array_at = None  # where the streamed array is: "here" or (occurrence, key)
        self.key = None  # the streamed array's member (None: the document is the array)
        self.rest = None  # reads the members after the array, when it streams in one pass
        self.decode_value = json.JSONDecoder(parse_constant=self.constant).raw_decode
        self.keep = None  # buffer index where a value longer than a window starts (read_long)
        self.open()

    def open(self):
        import codecs

        JsonDocumentReader.opened += 1
        self.fh, gz = open_source(self.src.path)
        self.read = self.src.counted(self.fh.read) if gz else self.fh.read
        self.utf8 = codecs.getincrementaldecoder("utf-8")()
        head = self.read(3)
        self.fed = 0  # bytes given to the UTF-8 decoder (a BOM is not)
        self.buf = ""
        self.i = 0
        self.eof = False
        self.base = 0  # absolute index of buf[0] in the document's text
        self.lines_before = 0  # newlines before buf[0]
        self.last_newline = -1  # absolute index of the last newline before buf[0]
        if head != b"\xef\xbb\xbf":
            self.feed(head)

    def constant(self, name):
        self.pending.append(name)
        return None

    def feed(self, data):
        try:
            text = self.utf8.decode(data, final=not data)
        except UnicodeDecodeError as exc:
            start = self.fed - len(self.utf8.getstate()[0]) + exc.start
            raise MappingError(f"invalid UTF-8 at byte {max(start, 0)}") from None
        self.fed += len(data)
        i = self.i
        if i:
            k = self.buf.rfind("\n", 0, i)
            if k >= 0:
                self.last_newline = self.base + k
                self.lines_before += self.buf.count("\n", 0, k + 1)
            if self.keep is not None:  # the text of the value being kept leaves the buffer
                self.kept.append(self.buf[self.keep : i])
                self.kept_size += i - self.keep
                self.keep = 0
            self.base += i
            self.buf = self.buf[i:] + text
            self.i = 0
        else:
            self.buf += text
        if not data:
            self.eof = True

    def more(self):
        """Read the next chunk (at least as much as is buffered: a large value is read in
        O(size) however many times it is retried); False at the end of the file."""
        if self.eof:
            return False
        if self.keep is not None and self.kept_size + self.i - self.keep > self.limit:
            raise self.too_long(*self.keeping)  # the value being kept has passed the bound
        self.feed(self.read(max(self.CHUNK, len(self.buf) - self.i)))
        return True

    def place(self, pos):
        """``(line, column)`` of buffer index ``pos``, as json.loads counts them."""
        buf = self.buf
        k = buf.rfind("\n", 0, pos)
        column = pos - k if k >= 0 else self.base + pos - self.last_newline
        return self.lines_before + buf.count("\n", 0, pos) + 1, column

    def fail(self, message, pos):
        """A MappingError for ``message`` at buffer index ``pos``, placed as json.loads does."""
        exc = json.JSONDecodeError(message, "", 0)
        exc.lineno, exc.colno = self.place(pos)
        return json_error(exc, "")

    def too_long(self, what, at):
        """The MappingError for a value the mapping reads that is longer than ``limit``."""
        if what.__class__ is int:
            what = f"element {what} of {'the document' if self.key is None else repr(self.key)}"
        return MappingError(
            f"line {at[0]} column {at[1]}: {what} is longer than {self.limit} characters; a "
            "streamed JSON document's elements, and the members the mapping reads, are bounded "
            "by source.max_line_bytes; hint: raise source.max_line_bytes in the spec and rebuild"
        )

    def space(self):
        """Skip whitespace; the next character, or "" at the end of the file."""
        while True:
            i = _JSON_SPACE.match(self.buf, self.i).end()
            self.i = i
            if i < len(self.buf):
                return self.buf[i]
            if not self.more():
                return ""

    def attempt(self, warn, limit):
        """Decode the value at the cursor and move past it, reading on while its text may
        end within ``limit`` characters; ``_LONGER``, the cursor left on it, when it does not.
        ``self.size``: the decoded value's length."""
        self.space()
        while True:
            self.pending.clear()
            buf, i = self.buf, self.i
            if len(buf) - i < self.CHUNK >> 4 and not self.eof:
                self.more()  # read on first: a value cut short raises an error whose place
                continue  # json finds by counting the buffer's lines (a 1 MiB scan each time)
            try:
                value, end = self.decode_value(buf, i)
            except json.JSONDecodeError as exc:
                if not self.eof and (
                    exc.pos >= len(buf) - self.MARGIN or exc.msg.startswith("Unterminated")
                ):  # the value may go on in the next chunk
                    if len(buf) - i > limit:
                        return _LONGER
                    self.more()
                    continue
                raise self.fail(exc.msg, exc.pos) from None
            except (ValueError, RecursionError) as exc:
                raise json_error(exc, "") from None
            if end > len(buf) - self.MARGIN and not self.eof:
                if len(buf) - i > limit:
                    return _LONGER
                self.more()
                continue
            self.i = end
            self.size = end - i
            if warn:
                for name in self.pending:
                    self.st.warn("source", f"non-finite number {name} read as null")
            return value

    def value(self, warn=True, what="a value"):
        """Decode the value at the cursor and move past it (at most ``limit`` characters:
        ``what`` names it in the error, an int the streamed array's element)."""
        value = self.attempt(warn, self.CHUNK)
        if value is _LONGER:
            return read_long(self, warn, what)
        if self.size > self.limit:
            raise self.too_long(what, self.place(self.i - self.size))
        return value

    def skip(self, warn=True):
        """Move past the value at the cursor without keeping it, checked as json.loads checks
        it (the same errors; non-finite numbers warned when ``warn``): decoded and dropped
        when it fits in a window (``CHUNK``), else :func:`skip_long`."""
        if self.attempt(warn, self.CHUNK) is _LONGER:
            skip_long(self, warn)

    def expect(self, chars, message):
        ch = self.space()
        if not ch or ch not in chars:
            raise self.fail(message, self.i)
        self.i += 1
        return ch

    def members(self, after_comma=False):
        """Yield each member's key, the cursor on its value, up to the ``}`` that ends the
        object (the cursor after its ``{``, or after a ``,`` with ``after_comma``)."""
        if not after_comma and self.space() == "}":
            self.i += 1
            return
        while True:
            if self.space() != '"':
                raise self.fail("Expecting property name enclosed in double quotes", self.i)
            name = self.value(True, "a member name")
            self.expect(":", "Expecting ':' delimiter")
            yield name
            if self.expect(",}", "Expecting ',' delimiter") == "}":
                return

    def elements(self):
        """Yield the elements of the array at the cursor, then read the rest of the document."""
        if self.array_at is None:
            raise MappingError("internal error: the streamed array was read twice")
        if self.array_at != "here":
            self.reopen_at(*self.array_at)
        self.array_at = None
        self.expect("[", "Expecting value")
        if self.space() == "]":
            self.i += 1
        else:
            n = 0
            while True:
                yield self.value(True, n)
                if self.expect(",]", "Expecting ',' delimiter") == "]":
                    break
                n += 1
        if self.rest is not None:
            self.rest()

    def end(self):
        """After the top-level value: only whitespace may follow."""
        if self.space():
            raise self.fail("Extra data", self.i)
        self.fh.close()

    def top_level(self, key, needed):
        """The document's members the mapping reads (``needed``), ``key`` a
        :class:`StreamedArray` when it is an array (read later by :meth:`elements`); with
        ``key`` None, the document as a StreamedArray when it is an array. None for any other
        document (to be parsed whole: :func:`whole_document`)."""
        self.key = key
        ch = self.space()
        if ch == "[" and key is None:
            return self.stream("here", self.end)
        if ch != "{" or key is None:
            return whole_document(self, ch)
        self.i += 1
        doc = {}
        wanted = set(needed)
        occurrence = 0  # of `key` holding an array
        for name in self.members():
            if name != key:
                if name in wanted:
                    doc[name] = self.value(True, f"member {name!r}")
                else:
                    self.skip()
                continue
            if self.space() != "[":
                doc[name] = self.value(True, f"member {name!r}")
                continue
            occurrence += 1
            if wanted.issubset(doc):
                doc[key] = self.stream("here", lambda: self.rest_after(key, needed))
                return doc
            self.skip(False)
            doc[key] = StreamedArray()
        self.end()
        if occurrence and type(doc.get(key)) is StreamedArray:
            doc[key] = self.stream((occurrence, key))
        return doc

    def stream(self, at, rest=None):
        """A :class:`StreamedArray` for the array at ``at`` ("here": the cursor; else
        ``(occurrence, key)``); ``rest`` reads what follows it, in one pass."""
        array = StreamedArray()
        array.reader = self
        self.array_at = at
        self.rest = rest
        return array

    def reopen_at(self, occurrence, key):
        """Second pass: back to the ``occurrence``-th array member named ``key``."""
        self.fh.close()
        self.open()
        self.expect("{", "Expecting value")
        for name in self.members():
            if name == key and self.space() == "[":
                occurrence -= 1
                if not occurrence:
                    return
            self.skip(False)

    def rest_after(self, key, needed):
        """The members after a streamed array: checked, and refused when they repeat one the
        mapping already read (read whole, the later member would have counted)."""
        if self.expect(",}", "Expecting ',' delimiter") == ",":
            for name in self.members(after_comma=True):
                if name == key or name in needed:
                    raise MappingError(
                        f"the document repeats its member {name!r} after the array "
                        f"{key!r}; this adapter reads {key!r} one element at a time and "
                        "cannot tell which one counts"
                    )
                self.skip()
        self.end()



#: the inside of a JSON string, up to its closing quote or to what json refuses in it
_STRING_BODY = re.compile(
    r'[^"\\\x00-\x1f]*(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})[^"\\\x00-\x1f]*)*'
)


def skip_long(reader, warn):
    """Move past the value at the reader's cursor, longer than a window: an array or object is
    entered and its elements or members taken one at a time (each decoded and dropped when it
    fits in a window, entered in turn when it does not), a string scanned
    (:func:`skip_long_string`): memory stays a window or two however large the value."""
    closers = []  # "]" or "}" of each array and object entered
    long = True  # the value at the cursor is known to be longer than a window
    while True:
        ch = reader.space()
        if long or reader.attempt(warn, reader.CHUNK) is _LONGER:
            if ch == '"':
                skip_long_string(reader)
            elif ch == "[" or ch == "{":
                if len(closers) >= reader.MAX_DEPTH:
                    raise json_error(RecursionError(), "")
                reader.i += 1
                close = "]" if ch == "[" else "}"
                long = False
                if reader.space() != close:
                    closers.append(close)
                    if close == "}":
                        skip_member_name(reader)
                    continue
                reader.i += 1
            elif reader.attempt(warn, reader.limit) is _LONGER:  # a number that long
                raise reader.too_long("a number", reader.place(reader.i))
        long = False
        while closers:  # after a value: the delimiters of what it ends
            close = closers[-1]
            if reader.expect("," + close, "Expecting ',' delimiter") == ",":
                if close == "}":
                    skip_member_name(reader)
                break
            closers.pop()
        if not closers:
            return


def skip_member_name(reader):
    """Move past a skipped object's member name and its colon."""
    if reader.space() != '"':
        raise reader.fail("Expecting property name enclosed in double quotes", reader.i)
    if reader.attempt(False, reader.CHUNK) is _LONGER:
        skip_long_string(reader)
    reader.expect(":", "Expecting ':' delimiter")


def skip_long_string(reader):
    """Move past the string at the reader's cursor, however long: its text is matched a
    buffer at a time; what json refuses in it is reported as json reports it."""
    unterminated = reader.fail("Unterminated string starting at", reader.i)
    reader.i += 1
    while True:
        buf, run = reader.buf, reader.i  # ``run``: between two characters (or escapes)
        end = _STRING_BODY.match(buf, run).end()
        if end < len(buf) and buf[end] == '"':
            reader.i = end + 1
            return
        reader.i = end
        if len(buf) - end < 6 and not reader.eof:  # the buffer ends in it (maybe in an escape)
            if end - 6 >= run and buf[end - 6 : end - 4] == "\\u":
                k = end - 6  # a \uXXXX escape just before: json refuses one that ends the
                while k > run and buf[k - 1] == "\\":  # file, so it is read again with
                    k -= 1  # what follows (when its backslash is not one escaped)
                if (end - 6 - k) % 2 == 0:
                    reader.i = end - 6
            reader.more()
            continue
        # a control character or a bad escape at ``end``, or the end of the file: json's own
        # message for it (an escape that ends the file is one, where it starts)
        try:
            reader.i = json.decoder.scanstring(buf, run)[1]
            return
        except json.JSONDecodeError as exc:
            if exc.msg.startswith("Unterminated"):
                raise unterminated from None
            raise reader.fail(exc.msg, exc.pos) from None


def read_long(reader, warn, what):
    """The value at the reader's cursor when it is longer than a window: its end found by
    :func:`skip_long`, its text kept meanwhile (``JsonDocumentReader.feed``; at most
    ``limit`` characters, ``more``), then decoded at once."""
    reader.keeping = (what, reader.place(reader.i))
    reader.keep, reader.kept, reader.kept_size = reader.i, [], 0
    try:
        skip_long(reader, False)
        text = "".join(reader.kept) + reader.buf[reader.keep : reader.i]
    finally:
        reader.keep = reader.kept = None
    if len(text) > reader.limit:
        raise reader.too_long(*reader.keeping)
    reader.pending.clear()
    try:
        value = reader.decode_value(text)[0]
    except (ValueError, RecursionError) as exc:
        raise json_error(exc, "") from None
    if warn:
        for name in reader.pending:
            reader.st.warn("source", f"non-finite number {name} read as null")
    return value


def whole_document(reader, ch):
    """None, for a document that is not the object (or array) the spec streams, to be
    parsed whole, when it is at most ``limit`` characters; checked first (skipped), and
    refused when it is longer."""
    if not ch:
        reader.fh.close()
        raise MappingError("source is empty")
    start = reader.base + reader.i
    reader.skip(False)
    size = reader.base + reader.i - start
    reader.end()
    if size > reader.limit:
        wanted = "an array" if reader.key is None else f"an object with the array {reader.key!r}"
        raise MappingError(
            f"the document is {'an array' if ch == '[' else 'not an object'} of more than "
            f"{reader.limit} characters, where this adapter reads {wanted} one element at a "
            "time; hint: check the source is the spec's format, or raise source.max_line_bytes "
            "in the spec and rebuild"
        )
    return None


_CSV_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_CSV_BOOLEANS = {"true": True, "false": False, "1": True, "0": False}


def csv_number(cell):
    """A number cell: an integer when it is written as one, else a finite float."""
    if not _CSV_NUMBER.fullmatch(cell):
        raise ValueError
    if cell.lstrip("+-").isdigit():
        return int(cell)
    return float(cell)


def csv_integer(cell):
    """An integer cell (``3`` or ``3.0``, as pandas writes integers beside empty cells)."""
    value = csv_number(cell)
    if isinstance(value, float):
        if not value.is_integer():
            raise ValueError
        return int(value)
    return value


def csv_boolean(cell):
    """A boolean cell: true/false in any case (Python's True/False) or 1/0."""
    return _CSV_BOOLEANS[cell.lower()]


def csv_json(cell):
    """A cell that holds JSON text (an object, a list, ...)."""
    return json.loads(cell)


CSV_TYPE_TEXT = {"number": "a number", "integer": "an integer", "boolean": "true or false",
                 "json": "JSON"}
CSV_CONVERTERS = {
    "number": csv_number,
    "integer": csv_integer,
    "boolean": csv_boolean,
    "json": csv_json,
}


def csv_header(row, columns, where):
    """``(names, typed)`` from a header row: ``typed`` lists ``(index, name, type)`` of
    the columns that ``columns`` (name -> type) declares; a bad header is a MappingError."""
    seen = set()
    for i, name in enumerate(row):
        if not name.strip():
            raise MappingError(f"{where}the header's column {i + 1} has no name")
        if name in seen:
            raise MappingError(f"{where}the header names column {name!r} twice")
        seen.add(name)
    for name in columns:
        if name not in seen:
            raise MappingError(
                f"{where}source.columns names {name!r}, which is not in the header"
            )
    typed = [(i, name, columns[name]) for i, name in enumerate(row) if name in columns]
    return list(row), typed


def csv_record(names, typed, row, where):
    """One data row as an object (header names as keys); a typed column's empty cell is
    null. Raises ValueError with a one-line message for a ragged row or a bad cell."""
    if len(row) != len(names):
        raise ValueError(f"{where}{len(row)} fields, the header has {len(names)}")
    rec = dict(zip(names, row))
    for i, name, kind in typed:
        cell = row[i].strip()
        if not cell:
            rec[name] = None
            continue
        try:
            rec[name] = CSV_CONVERTERS[kind](cell)
        except (ValueError, KeyError, RecursionError):
            shown = cell if len(cell) <= 40 else cell[:37] + "..."
            what = CSV_TYPE_TEXT[kind]
            raise ValueError(f"{where}column {name}: {shown!r} is not {what}") from None
    return rec


def csv_rows(src, st, columns, delimiter, invalid="error"):
    """Yield ``(line, row, location)`` per data row of a CSV source with a header row,
    streaming. Each physical line, and each row (quoted cells may span lines), is bounded
    by ``max_line_bytes``; ``line`` is where the row starts."""
    import csv  # here, not at module top: adapters of other containers never load it

    limit = src.max_line_bytes
    pos = [0, 0, 0, 0]  # lines read, bytes read, end-of-line bytes of the last line, row start
    src.check_size()
    fh, gz = open_source(src.path)
    readline = src.counted(fh.readline) if gz else fh.readline

    def physical_lines():
        while True:
            raw = readline(limit + 1)
            if not raw:
                return
            pos[0] += 1
            if len(raw) > limit and not raw.endswith(b"\n"):
                raise MappingError(f"line {pos[0]}: longer than {limit} bytes")
            pos[1] += len(raw)
            pos[2] = len(raw) - len(raw.rstrip(b"\r\n"))
            if pos[1] - pos[3] > limit:
                raise MappingError(f"line {pos[0]}: a row longer than {limit} bytes")
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise MappingError(f"line {pos[0]}: invalid UTF-8") from None
            yield text[1:] if pos[0] == 1 and text.startswith("\ufeff") else text

    csv.field_size_limit(max(csv.field_size_limit(), limit))
    reader = csv.reader(physical_lines(), delimiter=delimiter, strict=True)
    names = None
    rows = 0
    with fh:
        while True:
            line, pos[3] = pos[0] + 1, pos[1]
            try:
                row = next(reader, None)
            except csv.Error as exc:
                raise MappingError(f"line {line}: not valid CSV: {exc}") from None
            if row is None:
                break
            if not row:
                continue  # a blank line
            if names is None:
                names, typed = csv_header(row, columns, f"line {line}: ")
                continue
            try:
                rec = csv_record(names, typed, row, f"line {line}: ")
            except ValueError as exc:
                if invalid == "skip":
                    st.warn("source", f"{exc}; skipped")
                    continue
                raise MappingError(str(exc)) from None
            rows += 1
            if gz:
                yield line, rec, {"path": src.rel, "line": line}
            else:
                length = pos[1] - pos[3] - pos[2]
                yield line, rec, {"path": src.rel, "line": line, "byte_offset": pos[3],
                                  "byte_length": length}
    if names is None:
        raise MappingError("source is empty")
    if not rows:
        raise MappingError("source has a header row and no data rows")


def csv_probe_values(text, truncated, max_rows, csv_format):
    """The first rows of a CSV prefix as objects, or a reason string when they are not
    CSV the adapter reads (a row cut off by the end of the prefix is left out)."""
    import csv

    columns, delimiter = csv_format
    lines = text.splitlines(keepends=True)
    if truncated and lines and not lines[-1].endswith(("\n", "\r")):
        lines.pop()
    reader = csv.reader(lines, delimiter=delimiter, strict=True)
    names, values = None, []
    try:
        for row in reader:
            if not row:
                continue
            where = f"line {reader.line_num}: "
            if names is None:
                names, typed = csv_header(row, columns, where)
            elif len(values) < max_rows:
                values.append(csv_record(names, typed, row, where))
            else:
                break
    except csv.Error as exc:
        if truncated:  # a quoted cell cut by the end of the prefix
            return values or "no complete CSV row in the probed prefix"
        return f"line {reader.line_num}: not valid CSV: {exc}"
    except (MappingError, ValueError) as exc:
        return str(exc)
    return values or "no complete CSV row in the probed prefix"


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


def loads(st, text, where):
    """json.loads that reports problems as MappingError and turns NaN/Infinity into null."""

    def constant(name):
        st.warn("source", f"{where}non-finite number {name} read as null")
        return None

    try:
        return json.loads(text, parse_constant=constant)
    except (ValueError, RecursionError) as exc:
        raise json_error(exc, where) from None


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


def unparsed(exc, where, otherwise):
    """A probe's reason for JSON it could not parse: too deep a nesting in the words
    ``stream`` uses (:func:`json_error`), anything else ``otherwise``."""
    if isinstance(exc, RecursionError) or "nested too deeply" in str(exc):
        return f"{where}JSON nested too deeply"
    return otherwise


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


def read_prefix(path, limit):
    """At most ``limit`` bytes of the file (decompressed when it is gzipped) and whether
    there is more; a plain file is read once, ``limit + 1`` bytes at most."""
    with open(path, "rb") as fh:
        data = fh.read(limit + 1)
    if data[:2] == GZIP_MAGIC:
        import gzip

        with gzip.open(path, "rb") as fh:
            data = gzip_read(fh.read, limit + 1)
    truncated = len(data) > limit
    return data[:limit], truncated


def parse_prefix(text):
    """Parse a possibly truncated JSON text into what it holds so far.

    Returns ``(value, complete)``. Containers cut off by the end of the text
    are closed; a scalar or key cut off is dropped. Raises ValueError when the
    text is not the beginning of a JSON document.
    """
    try:
        return json.loads(text), True
    except RecursionError:
        raise ValueError("nested too deeply") from None
    except json.JSONDecodeError:
        pass
    parser = _PrefixParser(text)
    try:
        value = parser.value(0)
    except EOFError:
        raise ValueError("no complete JSON value in the prefix") from None
    if not parser.at_end():
        raise ValueError("extra data after the JSON value")
    return value, False


class _PrefixParser:
    """A small JSON reader that stops quietly at the end of its input."""

    _scalar = re.compile(r'-?\d+(\.\d+)?([eE][+-]?\d+)?|true|false|null|"(?:[^"\\]|\\.)*"')

    def __init__(self, text):
        self.text = text
        self.i = 0

    def _ws(self):
        while self.i < len(self.text) and self.text[self.i] in " \t\r\n":
            self.i += 1

    def at_end(self):
        self._ws()
        return self.i >= len(self.text)

    def value(self, depth):
        if depth > 200:
            raise ValueError("nested too deeply")
        self._ws()
        if self.i >= len(self.text):
            raise EOFError
        ch = self.text[self.i]
        if ch == "{":
            return self._object(depth)
        if ch == "[":
            return self._array(depth)
        m = self._scalar.match(self.text, self.i)
        if not m:
            rest = self.text[self.i :].rstrip()
            if ch == '"' or any(word.startswith(rest) for word in ("true", "false", "null", "-")):
                raise EOFError  # a scalar cut off by the end of the prefix
            raise ValueError(f"unexpected {ch!r} at offset {self.i}")
        self.i = m.end()
        if self.i >= len(self.text) and m.group(0)[0] in "-0123456789":
            raise EOFError  # a number may continue past the cut
        return json.loads(m.group(0))

    def _object(self, depth):
        out = {}
        self.i += 1
        while True:
            self._ws()
            if self.i >= len(self.text):
                return out
            if self.text[self.i] == "}":
                self.i += 1
                return out
            if self.text[self.i] == ",":
                self.i += 1
                continue
            try:
                key = self.value(depth + 1)
            except EOFError:
                self.i = len(self.text)  # the cut: nothing after it to parse
                return out
            if not isinstance(key, str):
                raise ValueError("object keys must be strings")
            self._ws()
            if self.i >= len(self.text):
                return out
            if self.text[self.i] != ":":
                raise ValueError(f"expected ':' at offset {self.i}")
            self.i += 1
            try:
                out[key] = self.value(depth + 1)
            except EOFError:
                self.i = len(self.text)  # the cut: nothing after it to parse
                return out

    def _array(self, depth):
        out = []
        self.i += 1
        while True:
            self._ws()
            if self.i >= len(self.text):
                return out
            if self.text[self.i] == "]":
                self.i += 1
                return out
            if self.text[self.i] == ",":
                self.i += 1
                continue
            try:
                out.append(self.value(depth + 1))
            except EOFError:
                self.i = len(self.text)  # the cut: nothing after it to parse
                return out


def probe_source(
    path, container, limit, max_lines, required, when, confidence, fmt, require_text,
    csv_format=None,
):
    """Answer an RLViz probe from a bounded prefix of ``path`` (of its decompressed bytes
    when it is gzipped); ``csv_format`` is ``(columns, delimiter)`` of a csv container."""
    if os.path.isdir(path):
        return {"supported": False, "confidence": 0.0, "reason": "source is a directory"}
    if not os.path.isfile(path):  # a named pipe or device: reading could block or never end
        return {"supported": False, "confidence": 0.0, "reason": "source is not a regular file"}
    try:
        data, truncated = read_prefix(path, limit)
    except MappingError as exc:
        return {"supported": False, "confidence": 0.0, "reason": str(exc)}
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if not data.strip():
        return {"supported": False, "confidence": 0.0, "reason": "source is empty"}
    try:
        text = data.decode("utf-8", "ignore" if truncated else "strict")
    except UnicodeDecodeError:
        return {"supported": False, "confidence": 0.0, "reason": "source is not UTF-8 text"}
    if container == "jsonl":
        lines = text.split("\n")
        tail = lines.pop()  # after the last newline: empty, or a line that may be cut off
        values = []
        for number, line in enumerate(lines, start=1):
            if len(values) >= max_lines:
                break
            if not line.strip():
                continue
            try:
                values.append(json.loads(line))
            except (ValueError, RecursionError) as exc:
                return {
                    "supported": False,
                    "confidence": 0.0,
                    "reason": unparsed(exc, f"line {number}: ", f"line {number} is not JSON"),
                }
        if not values and tail.strip():
            try:  # the only line, possibly cut: judge what it holds so far
                values.append(parse_prefix(tail)[0])
            except (ValueError, RecursionError) as exc:
                where = f"line {len(lines) + 1}"
                return {
                    "supported": False,
                    "confidence": 0.0,
                    "reason": unparsed(exc, where + ": ", where + " is not JSON"),
                }
        if not values:
            return {
                "supported": False,
                "confidence": 0.0,
                "reason": "no complete JSON line in the probed prefix",
            }
    elif container == "csv":
        values = csv_probe_values(text, truncated, max_lines, csv_format)
        if isinstance(values, str):
            return {"supported": False, "confidence": 0.0, "reason": values}
    else:
        try:
            value, _ = parse_prefix(text)
        except (ValueError, RecursionError) as exc:
            reason = unparsed(exc, "", "not a JSON document")
            return {"supported": False, "confidence": 0.0, "reason": reason}
        values = [value]
    for value in values:
        missing = missing_required(value, required)
        if missing is not None:
            return {"supported": False, "confidence": 0.0, "reason": f"missing field {missing}"}
        if when is not None:
            try:
                ok = when(value)
            except (TypeError, ValueError):
                ok = False
            if not ok:
                return {
                    "supported": False,
                    "confidence": 0.0,
                    "reason": "probe condition does not hold",
                }
    what = ", ".join(require_text) if require_text else "the probe condition"
    unit = {"jsonl": f"{len(values)} line(s)", "csv": f"{len(values)} row(s)"}.get(
        container, "the document"
    )
    return {
        "supported": True,
        "confidence": confidence,
        "format": fmt,
        "reason": f"{unit}: found {what}",
    }


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


def encode_line(line, ascii_encode):
    """One encoded canonical line as UTF-8; a line that cannot be UTF-8 (a lone
    surrogate from a ``\\ud800``-style escape in the source) is written escaped."""
    try:
        return line.encode("utf-8")
    except UnicodeEncodeError:
        return ascii_encode(json.loads(line)).encode("ascii")


def write_canonical(map_source, src, out, st=None, limits=None):
    """Map ``src`` and write canonical NDJSON to the binary stream ``out``.

    The ``complete`` record is written last, and only when mapping finished:
    a stream cut short by an error never looks complete. Records are encoded
    as they come and written 256 at a time. ``limits`` is ``(bytes, record bytes, host)``:
    a host's bounds on its reader's stdout and on one record. The stream stops at the first
    record that would pass one, before writing it, with a MappingError (:func:`output_limit`):
    the host gets no more than it reads, in whole lines, and no ``complete``.
    """
    st = st if st is not None else MapState()
    c_encode, encode = _compact_encoders()
    join = "".join
    ascii_encode = json.JSONEncoder(
        ensure_ascii=True, separators=(",", ":"), allow_nan=False
    ).encode
    lines = []
    written = 0
    room, max_record, host = limits or (None, None, None)

    def write_lines():
        nonlocal written, room
        if not lines:  # ``complete`` filled the last chunk: nothing left, not even a newline
            return
        try:
            data = ("\n".join(lines) + "\n").encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate somewhere: line by line
            data = b"\n".join(encode_line(line, ascii_encode) for line in lines) + b"\n"
        if room is not None:
            room -= len(data)
            if room < 0 or len(data) > max_record + 1:  # lines of 256 records: one may be long
                data, error = output_limit(data, written, room, limits)
                if error is not None:
                    out.write(data)  # the whole lines within the limits, then the error
                    raise error
        out.write(data)
        written += len(lines)
        lines.clear()

    def line(text):  # a record the runtime encoded itself (MapState.line)
        lines.append(text)
        if len(lines) >= 256:
            write_lines()

    if c_encode is None:

        def emit(record):
            line(encode(record))

    else:  # the C encoder called here: one Python call a record, not three

        def emit(record):
            try:
                lines.append(join(c_encode(record, 0)))
            except RecursionError:
                lines.append(encode(record))  # raises the standard encoder's error
            if len(lines) >= 256:
                write_lines()

    if c_encode is not None:
        st.write_event, st.write_signal = event_writer(st, c_encode, lines, write_lines, emit)
    map_source(src, st, emit)
    emit({"record_type": "complete", "records": written + len(lines), "warnings": st.warnings})
    write_lines()
    out.flush()
    return st


def output_limit(data, written, room, limits):
    """``(head, error)`` for the lines ``data`` (after ``written`` records) when they may break
    a host's ``limits`` (:func:`write_canonical`; ``room``: what is left after ``data``): the
    whole lines ``head`` that keep within them, and the MappingError for the line after them,
    None when every line does (a record longer than the host reads, or the output passing
    what its reader takes)."""
    max_output, max_record, host = limits
    room += len(data)  # what was left before ``data``
    end = count = 0
    while end < len(data):
        stop = data.index(b"\n", end)
        if stop - end > max_record:
            return data[:end], MappingError(
                f"record {written + count + 1}{record_label(data[end:stop])} is {stop - end} "
                f"bytes; {host} reads at most {max_record} bytes a record; hint: leave large "
                "source values (raw, content, input) out of the spec's records"
            )
        if stop + 1 > room:
            return data[:end], MappingError(
                f"the output would pass {host}'s limit of {max_output} bytes: stopped after "
                f"{written + count} records; hint: emit less per event (no raw, fewer fields "
                "and signals) or split the trace"
            )
        end, count = stop + 1, count + 1
    return data, None


def record_label(line):
    """`` (event 'evt@L2')``: the type and id of the record on the canonical line ``line``."""
    try:
        record = json.loads(line)
        return f" ({record['record_type']} {record.get('id', '')!r})"
    except (ValueError, KeyError, TypeError, RecursionError):
        return ""


def event_writer(st, c_encode, lines, write_lines, emit):
    """``(write, signal)``: writers of events and signals as JSON text, appended to ``lines``
    (``write_lines`` empties it), the text the C encoder ``c_encode`` makes of their records.

    ``write(tid, seq, eid, kind, ts, parent, fields, srcloc, metadata)`` writes an event: its
    leading fields (``ts``, ``parent``: None when it has none), the rule's ``fields`` (a dict,
    no null values), ``source`` ``srcloc``, then ``metadata`` unless None: an object, or
    ``(raw, metadata)`` for an event with its source element (``raw`` before the metadata,
    which may be None). records_rt's ``TrajectoryEvents`` and ``emit_event`` call it. The
    leading fields are written from text kept between events: the trajectory's id and the
    source location as long as they are the same objects, the previous event's id as this one's
    ``parent_id``, the kind by name. Only the rule's own fields go through the encoder, so the
    field names and ids of the leading fields are not escaped again for every event. False,
    writing nothing, for a value nested too deep for the C encoder: the caller emits the
    record, and ``emit`` reports it as the standard encoder does.

    ``signal(sid, tid, eid, name, value, unit)`` writes a signal record (``eid``: its event,
    or None; ``sid`` None: ``eid:name``) from the same kept text (its event and trajectory are
    mostly the ones written last) and its name's and unit's text, made once; False, writing
    nothing, for a value or name it does not write as text.
    """
    quote, join, append = json.encoder.encode_basestring, "".join, lines.append
    kinds, names, units = {}, {}, {None: "}"}
    tid_key = tid_text = eid_key = eid_text = loc_key = loc_json = None
    float_repr, int_repr, isfinite = float.__repr__, int.__repr__, math.isfinite

    def text_of(value):  # a string as quote() writes it; anything else as the encoder does
        return quote(value) if value.__class__ is str else join(c_encode(value, 0))

    def write(tid, seq, eid, kind, ts, parent, fields, srcloc, metadata):
        nonlocal tid_key, tid_text, eid_key, eid_text, loc_key, loc_json
        if tid is not tid_key:
            tid_key, tid_text = tid, text_of(tid)
        text = kinds.get(kind)
        if text is None:
            text = kinds[kind] = text_of(kind)
        if parent is None:
            after = ""
        else:  # mostly the event written before: its text is kept
            after = ',"parent_id":' + (eid_text if parent is eid_key else text_of(parent))
        eid_key, eid_text = eid, quote(eid) if eid.__class__ is str else text_of(eid)
        if ts is not None:
            after = ',"timestamp":' + (quote(ts) if ts.__class__ is str else text_of(ts)) + after
        if srcloc is not loc_key:
            loc_key, loc_json = srcloc, st.source_text[1]
            if st.source_text[0] is not srcloc:  # not a line's location (SourceFile.lines)
                loc_json = ',"source":' + join(c_encode(srcloc, 0)) + "}"
        tail = loc_json
        try:
            if fields:
                after = f"{after},{join(c_encode(fields, 0))[1:-1]}"
            if metadata is not None:
                if metadata.__class__ is tuple:  # (raw, metadata): with its source element
                    raw, metadata = metadata
                    tail = f'{tail[:-1]},"raw":{join(c_encode(raw, 0))}}}'
                if metadata is not None:
                    tail = f'{tail[:-1]},"metadata":{join(c_encode(metadata, 0))}}}'
        except RecursionError:  # the caller emits it as a record: the encoder's error
            return False
        append(
            f'{{"record_type":"event","id":{eid_text},"trajectory_id":{tid_text},'
            f'"sequence":{seq},"kind":{text}{after}{tail}'
        )
        if len(lines) >= 256:
            write_lines()
        return True

    def signal(sid, tid, eid, name, value, unit):
        cls = value.__class__
        if cls is str:
            value = quote(value)
        elif cls is int:
            value = int_repr(value)
        elif cls is float and isfinite(value):
            value = float_repr(value)
        elif cls is bool:
            value = "true" if value else "false"
        else:  # not finite (the encoder's own error), or not a scalar
            return False
        named = names.get(name)
        if named is None:
            if name.__class__ is not str:
                return False
            named = names[name] = (',"name":' + quote(name) + ',"value":', quote(":" + name)[1:])
        tail = units.get(unit)
        if tail is None:
            if unit.__class__ is not str:
                return False
            tail = units[unit] = ',"unit":' + quote(unit) + "}"
        if tid is not tid_key:
            tid = quote(tid)
        else:
            tid = tid_text
        if eid is None:
            append(
                f'{{"record_type":"signal","id":{quote(sid)},"trajectory_id":{tid}'
                f"{named[0]}{value}{tail}"
            )
        else:
            eid = eid_text if eid is eid_key else quote(eid)
            sid = eid[:-1] + named[1] if sid is None else quote(sid)
            append(
                f'{{"record_type":"signal","id":{sid},"trajectory_id":{tid},"event_id":{eid}'
                f"{named[0]}{value}{tail}"
            )
        if len(lines) >= 256:
            write_lines()
        return True

    return write, signal


def collect_records(map_source, src, semantics=True):
    """Map ``src`` into a list of records (small traces: RELAI runs, cap-evolve rollouts)."""
    st = MapState(semantics)
    records = []
    map_source(src, st, records.append)
    return records, st


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
