"""Mapping one source: a mapping's state (ids, trails), sources and siblings, writing records.

Imported on the first stream (a probe never loads it).
"""

import json
import math
import os
import sys
import zlib
from array import array
from itertools import compress

from .mapping_rt import (
    MAX_WARNINGS_SHOWN, MappingError, renamed_id, bounded_id, contained, is_gzip, open_source,
    gzip_read, json_error, _compact_encoders, failure_place,
)


MAX_SIBLING_BYTES = 64 << 20
STREAM_ABOVE_BYTES = 4 << 20


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
        from .subtrajectory import claim_subtrajectory

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


def level_owner(kind, parent_id):
    """What MapState.levels keeps of a record's kind and parent: 32 bits of their hash."""
    return hash((kind, parent_id)) & 0xFFFFFFFF


def event_key(tid, eid):
    """One key for an event id within a trajectory (the length keeps the two apart)."""
    return f"{len(tid)}:{tid}{eid}"


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
        from .document import JsonDocumentReader

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


def loads(st, text, where):
    """json.loads that reports problems as MappingError and turns NaN/Infinity into null."""

    def constant(name):
        st.warn("source", f"{where}non-finite number {name} read as null")
        return None

    try:
        return json.loads(text, parse_constant=constant)
    except (ValueError, RecursionError) as exc:
        raise json_error(exc, where) from None


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
        from .limits import output_limit

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
