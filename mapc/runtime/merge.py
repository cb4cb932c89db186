"""A loop's ``merge``: merged elements (only specs that merge elements run it)."""

import json
import sys
from collections import deque

from .mapping_rt import MAX_WARNINGS_SHOWN, _spec_at


#: Elements held back behind the oldest open group before that group closes early: merging
#: never holds more than this of a source (a line's JSON text is counted when the container
#: says how long it is: JSON Lines and CSV, not gzipped).
MERGE_HELD_LINES = 10_000


#: ... and bytes of their text.
MERGE_HELD_BYTES = 16 << 20


#: How many closed keys are remembered, to warn when one comes again (a hash each).
MERGE_RECENT_KEYS = 1024


class MergeGroup:
    """The elements of one key so far: the first one whole, each merged field gathered."""

    __slots__ = ("key", "first", "pos", "loc", "text", "last_pos", "last_loc", "lines", "bytes",
                 "gathered", "closed")

    def __init__(self, key, first, pos, loc, text, size, fields):
        self.key, self.first, self.pos, self.loc, self.text = key, first, pos, loc, text
        self.last_pos, self.last_loc, self.lines, self.bytes = pos, loc, 1, size
        self.closed = False
        self.gathered = [merge_step(strategy, None, path_value(first, keys))
                         for keys, strategy in fields]

    def add(self, el, pos, loc, size, fields):
        """Take one more element of this key."""
        self.last_pos, self.last_loc = pos, loc
        self.lines += 1
        self.bytes += size
        gathered = self.gathered
        for i, (keys, strategy) in enumerate(fields):
            gathered[i] = merge_step(strategy, gathered[i], path_value(el, keys))


class MergePassed:
    """An element no group takes, held back until the groups before it are released."""

    __slots__ = ("el", "pos", "loc", "text", "lines", "bytes", "closed")

    def __init__(self, el, pos, loc, text, size):
        self.el, self.pos, self.loc, self.text = el, pos, loc, text
        self.lines, self.bytes, self.closed = 1, size, True


class MergedElements:
    """The elements of a loop with `merge` (records.<level>.merge, ``where``): those that share
    a key (``key_of(element, scope, position)``, None: the element stands alone) are one
    element, the first one's object with ``fields`` (``((keys, strategy), ...)``) combined over
    all of them, placed where the first one was: what comes after its first element is held
    back until it closes. A group closes when a new key finds ``most`` groups open (the oldest
    closes), at the end of the loop, or early when what is held back behind it, or what it
    holds itself, passes ``MERGE_HELD_LINES`` or ``MERGE_HELD_BYTES``. With ``runs`` (a merge
    without `by`), ``key_of`` says True (the element joins the open run, or starts one keyed by
    its position), False (it ends the run and stands alone) or None (it waits behind the run).
    ``current`` describes the element given last (``info()``: ``$merged``)."""

    def __init__(self, st, key_of, scope, where, fields, most=1, runs=False):
        self.st, self.key_of, self.scope, self.where = st, key_of, scope, where
        self.fields, self.most, self.runs = fields, most, runs
        self.current = (None, 1, 0, 0)  # key, elements, first and last position
        self.unit = "line"  # what a position is: a line (a row), or an element of an array
        self.recent = {}  # hash of a closed key -> (first, last position, closed early)

    def info(self):
        """``$merged``: the key, how many elements, the first and the last one's position."""
        key, lines, first, last = self.current
        return {"key": key, "lines": lines, "first_line": first, "last_line": last}

    def lines(self, rows):
        """``(line, element, location)`` of each line (``rows``: a JSON Lines or CSV reader's),
        merged; a merged element's location spans its lines."""
        return self.merged(rows, True)

    def elements(self, items):
        """``(index, element)`` of each element of an array, merged (the first one's index)."""
        for pos, el, _ in self.merged(((i, el, None) for i, el in enumerate(items)), False):
            yield pos, el

    def merged(self, rows, lines):
        """The merging itself: ``rows`` of ``(position, element, location)``."""
        self.unit = "line" if lines else "element"
        st, key_of, scope, fields = self.st, self.key_of, self.scope, self.fields
        queue = deque()  # what is not given yet, in source order: groups and held elements
        groups = {}  # the open groups, oldest first: normalized key -> MergeGroup
        held = [0, 0]  # lines and bytes in the queue
        runs, run = self.runs, None  # without `by`: the open run's key (its first position)
        for pos, el, loc in rows:
            text = st.source_text if lines and st.source_text[0] is loc else None
            key = key_of(el, scope, pos)
            if runs and key is not None:
                if key is False:  # the run ends here: this element stands alone, after it
                    if run is not None and merge_key(run) in groups:
                        self.close(groups, merge_key(run), False)
                    run = key = None
                else:  # a run closed early (holding too much) goes on as another element
                    key = run = pos if run is None else run
            if key is None and not queue:  # nothing open: the element goes straight through
                self.current = (None, 1, pos, pos)
                yield pos, el, loc
                continue
            size = loc.get("byte_length", 0) if lines and loc is not None else 0
            if key is None:
                queue.append(MergePassed(el, pos, loc, text, size))
            else:
                norm = merge_key(key)
                group = groups.get(norm)
                if group is None:
                    self.again(norm, key, pos)
                    if len(groups) >= self.most:  # the oldest open group closes
                        self.close(groups, next(iter(groups)), False)
                    group = groups[norm] = MergeGroup(key, el, pos, loc, text, size, fields)
                    queue.append(group)
                else:
                    group.add(el, pos, loc, size, fields)
                    if group.lines > MERGE_HELD_LINES or group.bytes > MERGE_HELD_BYTES:
                        self.close(groups, norm, True)  # one key on every line: not one element
            held[0] += 1
            held[1] += size
            while queue:
                front = queue[0]
                if not front.closed:
                    lines, size = held[0] - front.lines, held[1] - front.bytes
                    if lines <= MERGE_HELD_LINES and size <= MERGE_HELD_BYTES:
                        break
                    self.close(groups, merge_key(front.key), True)  # holding too much behind it
                yield self.release(queue, held)
        for norm in list(groups):
            self.close(groups, norm, False)
        while queue:
            yield self.release(queue, held)

    def close(self, groups, norm, early):
        group = groups.pop(norm)
        group.closed = True
        recent = self.recent
        recent[hash(norm)] = (group.pos, group.last_pos, early)
        if len(recent) > MERGE_RECENT_KEYS:
            del recent[next(iter(recent))]

    def again(self, norm, key, pos):
        """Warn when ``key`` starts a group at ``pos`` after a group of it closed: its elements
        become two (or more) elements."""
        seen = self.recent.pop(hash(norm), None)
        if seen is None:
            return
        first, last, early = seen
        unit = self.unit
        span = f"{unit} {first}" if first == last else f"{unit}s {first}-{last}"
        place = f"{unit} {pos}"
        if early:
            merge_warning(self.st, self.where, place, (
                f"merge_split: key {key!r} ({span}) was closed early, holding more than "
                f"{MERGE_HELD_LINES:,} {unit}s or {MERGE_HELD_BYTES >> 20} MiB (behind it or in "
                "it); this element starts another one; hint: the lines of one key should be few "
                "and near each other: check merge.by and merge.when"))
        else:
            merge_warning(self.st, self.where, place, (
                f"merge_key_again: key {key!r} ({span}) comes again after another key closed "
                "it; this element starts another one; hint: raise merge.open when keys "
                "interleave"))

    def release(self, queue, held):
        """The front of the queue as the loop's ``(position, element, location)``."""
        item = queue.popleft()
        held[0] -= item.lines
        held[1] -= item.bytes
        if item.__class__ is MergePassed:
            if item.text is not None:
                self.st.source_text = item.text
            self.current = (None, 1, item.pos, item.pos)
            return item.pos, item.el, item.loc
        el = merged_object(item.first, self.fields, item.gathered)
        loc = item.loc
        if item.lines > 1 and loc is not None:
            loc = merged_location(loc, item.last_loc)
        elif item.text is not None:
            self.st.source_text = item.text
        self.current = (item.key, item.lines, item.pos, item.last_pos)
        return item.pos, el, loc


def merge_key(key):
    """A key as a dict key: JSON's ``1`` and ``true`` stay apart; an object or array as text."""
    if key.__class__ is bool:
        return ("bool", key)
    if isinstance(key, (dict, list)):
        return ("json", json.dumps(key, sort_keys=True, separators=(",", ":")))
    return key


def path_value(value, keys):
    """The value at ``keys`` (field names) in ``value``, or None."""
    for key in keys:
        if value.__class__ is not dict:
            return None
        value = value.get(key)
    return value


def merge_number(value):
    return value.__class__ in (int, float)


def merge_combine(a, b, pick):
    """``pick`` of two numbers; two objects member by member (recursively); else the first."""
    if a is None:
        return b
    if b is None:
        return a
    if merge_number(a) and merge_number(b):
        return pick(a, b)
    if a.__class__ is dict and b.__class__ is dict:
        out = dict(a)
        for key, value in b.items():
            out[key] = merge_combine(a.get(key), value, pick)
        return out
    return a


def merge_add(a, b):
    return a + b


MERGE_PICKS = {"max": max, "min": min, "sum": merge_add}


def merge_step(strategy, gathered, value):
    """What a field has gathered after one more element's ``value``: first and last keep a
    non-null value, max, min and sum combine, concat and collect keep a list of the values."""
    if strategy == "last":
        return gathered if value is None else value
    if strategy == "first":
        return value if gathered is None else gathered
    if strategy in ("concat", "collect"):
        if gathered is None:
            gathered = []
        if value is not None:
            gathered.append(value)
        return gathered
    return merge_combine(gathered, value, MERGE_PICKS[strategy])


def merge_result(strategy, gathered):
    """A field's merged value: concat joins texts, or makes one array of the arrays (another
    value is one item of it); collect is the list of values; None when there is none."""
    if strategy == "concat":
        if not gathered:
            return None
        if all(part.__class__ is str for part in gathered):
            return "".join(gathered)
        out = []
        for part in gathered:
            if part.__class__ is list:
                out.extend(part)
            else:
                out.append(part)
        return out
    if strategy == "collect":
        return gathered or None
    return gathered


def merged_object(first, fields, gathered):
    """The first element with each merged field replaced (new objects along each path: the
    source's own objects are never changed)."""
    out = first
    for (keys, strategy), value in zip(fields, gathered):
        value = merge_result(strategy, value)
        if value is not None and out.__class__ is dict:
            out = with_path(out, keys, value)
    return out


def with_path(obj, keys, value):
    """A copy of ``obj`` with ``value`` at ``keys`` (objects made where the path has none);
    ``obj`` itself when a step on the path is not an object."""
    head = keys[0]
    if len(keys) > 1:
        inner = obj.get(head)
        if inner is None:
            inner = {}
        elif inner.__class__ is not dict:
            return obj
        value = with_path(inner, keys[1:], value)
    out = dict(obj)
    out[head] = value
    return out


def merged_location(first, last):
    """A merged element's source location: its first line, up to the end of its last one."""
    loc = {"path": first["path"], "line": first["line"]}
    if "byte_offset" in first and "byte_offset" in last:
        loc["byte_offset"] = first["byte_offset"]
        loc["byte_length"] = last["byte_offset"] + last["byte_length"] - first["byte_offset"]
    return loc


def merge_warning(st, where, place, message):
    """A warning of ``where`` at ``place`` in the source (``line 12``), counted as ``st.warn``
    counts them: the loop's own frame would name the element it gave last."""
    st.warnings += 1
    if len(st.messages) >= MAX_WARNINGS_SHOWN:
        return
    frame = sys._getframe(1)
    while frame is not None and "SPEC_PLACES" not in frame.f_globals:
        frame = frame.f_back
    spec = where
    if frame is not None:
        at = frame.f_globals["SPEC_PLACES"].get(where)
        if at is not None:
            spec = f"{where} ({_spec_at(at, frame.f_globals.get('SPEC_FILE', ''))})"
    st.messages.append(f"{place}: {spec}: {message}")
