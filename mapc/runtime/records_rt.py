"""Records, optional fields and signals: the units generated level and event code calls.

They hold what every spec's mapping does the same way, so the generated entry file says only
what the spec says: which field, which expression, which spec line. ``st.emit`` is the
``emit`` that ``map_source`` was given.

"""

from itertools import islice

from .mapping_rt import (
    MappingError, child_id, coerce_id, coerce_nonempty_text, coerce_time, coerce_object,
    coerce_scalar, missing_required,
)


_PLAIN_SCALARS = (str, int, bool)
_PARENT_KEYS = {"case": "run_id", "group": "case_id", "trajectory": "group_id"}
_DEFAULT_PREFIXES = {"case": "case", "group": "group", "trajectory": "traj"}


def put(rec, key, value):
    """Set an optional field: ``rec[key] = value`` unless the value is null."""
    if value is not None:
        rec[key] = value


def compact(obj=None, /, **members):
    """An object template's value: ``obj`` (or the keyword members) without its null members."""
    if obj is None:
        obj = members
    for value in obj.values():  # `is`, not `None in obj.values()` (see nonempty)
        if value is None:
            return {name: value for name, value in obj.items() if value is not None}
    return obj


def put_object(rec, key, obj):
    """Set ``rec[key]`` to ``obj`` without its null members; leave it out when all are null."""
    for value in obj.values():  # `is`, not `None in obj.values()` (see nonempty)
        if value is None:
            obj = {name: value for name, value in obj.items() if value is not None}
            break
    if obj:
        rec[key] = obj


def nonempty(**members):
    """An object the rule builds from its fields (``input=nonempty(role=..., content=...)``):
    its members that are not null, or None (the field left out) when none is left.

    Nulls are found by identity: ``None in members.values()`` would compare every other value
    with ``==``: about 1,400 instructions for three members against the loop's 1,100 (D88),
    on every event. A JSON value equals None only when it is None."""
    for value in members.values():
        if value is None:
            members = {name: value for name, value in members.items() if value is not None}
            break
    return members or None


def level_record(st, kind, parent, loc, rid=None):
    """A run, case, group or trajectory record: its kind, its id and its parent's id.

    The id is ``rid`` (the spec's) unless that is null or empty; else a run is named after
    the source file; a trajectory after its source element when it has one (each element
    is its own sample); otherwise the one child of its parent (``group@example-0``), shared
    when the parent repeats.
    """
    if parent is None:
        rid = rid or "run@" + st.src.name + ("#" + loc if loc else "")
        return {"record_type": kind, "id": rid}
    if not rid:
        if kind == "trajectory" and loc:
            rid = "traj@" + loc
        else:
            rid = child_id(_DEFAULT_PREFIXES[kind], parent["id"])
    return {"record_type": kind, "id": rid, _PARENT_KEYS[kind]: parent["id"]}


def default_record(st, kind, parent, loc, scope):
    """A run, case, group or trajectory the spec leaves out (:func:`level_record`), emitted
    unless it repeats. ``scope[kind]`` is the record."""
    rec = scope[kind] = level_record(st, kind, parent, loc)
    if st.level(kind, rec, None if parent is None else parent["id"]):
        st.emit(rec)
    return rec


def event_record(tid, seq, eid, kind, timestamp, parent):
    """An event's leading fields, in canonical order; a null timestamp or parent is left out."""
    ev = {"record_type": "event", "id": eid, "trajectory_id": tid, "sequence": seq, "kind": kind}
    if timestamp is not None:
        ev["timestamp"] = timestamp
    if parent is not None:
        ev["parent_id"] = parent
    return ev


def event_parent(st, tid, value, where):
    """The parent event the spec names, kept only when it is an earlier event of ``tid``. An
    empty text is no parent (OpenTelemetry's root spans have ``parent_span_id: ""``)."""
    if value is None or value == "":
        return None
    if isinstance(value, (dict, list)):
        what = "an object" if isinstance(value, dict) else "an array"
        st.warn(where, f"expected a string id, got {what}; no parent")
        return None
    return st.parent_event(tid, coerce_id(st, value, where), where)


# TrajectoryEvents' default for a parent or raw element it was not given (None is a value: no
# parent, a null element)
NOT_GIVEN = object()


class TrajectoryEvents:
    """The events a ``level_events`` call emits for trajectory ``tid``, one :meth:`put` each.

    It keeps what the rules share: the sequence number and the previous event's id so far
    (from ``st.seq`` and ``st.last``, written back by :meth:`close`; ``st.last`` only with
    ``last``), the source location ``srcloc`` (a JSON Lines level sets it for each line),
    whether each event is remembered for later tests of an id (``remember``: the spec names
    events by id) and whether a rule's parent is the previous event unless it says otherwise
    (``previous``: ``records.events.parent: previous``).
    """

    __slots__ = ("st", "tid", "seq", "prev", "srcloc", "remember", "last", "previous")

    def __init__(self, st, tid, srcloc, remember=False, last=False, previous=False):
        self.st, self.tid, self.srcloc, self.remember = st, tid, srcloc, remember
        self.last, self.previous = last or previous, previous
        self.seq = st.seq.get(tid, 0)
        self.prev = st.last.get(tid) if self.last else None

    def put(self, eid, kind, at=None, *, timestamp=None, rfc3339=None, parent=NOT_GIVEN,
            events_parent=NOT_GIVEN, parent_id=NOT_GIVEN, metadata=None, signals=(), **fields):
        """Emit event ``eid`` of ``kind`` and return its id: the leading fields checked as the
        rule says, the rule's ``fields`` (input, output, data; a null one is left out) in the
        order given, then ``source`` and ``metadata``. Written as text by ``st.write_event``
        when write_canonical has one, else emitted as a record.

        ``timestamp`` is checked as an RFC 3339 date-time at ``<at>.timestamp`` (``at``: the
        rule's spec path); ``rfc3339`` is one already (``iso8601()``'s). ``parent`` (the
        rule's own) and ``events_parent`` (``records.events.parent``, for every rule without
        its own) must name an earlier event of the trajectory; ``parent_id`` is the parent
        as it is. ``signals``: the event's signals as ``(name, value, unit)``, their names
        literal and distinct (``<at>.signals``), written after it as :func:`event_signal`
        writes them.
        """
        st, tid, seq = self.st, self.tid, self.seq
        if timestamp is not None:
            rfc3339 = coerce_time(st, timestamp, at + ".timestamp")
        if parent is not NOT_GIVEN:
            parent_id = event_parent(st, tid, parent, at + ".parent")
        elif events_parent is not NOT_GIVEN:
            parent_id = event_parent(st, tid, events_parent, "records.events.parent")
        elif parent_id is NOT_GIVEN:
            parent_id = self.prev if self.previous else None
        for value in fields.values():  # `is`, not `None in fields.values()` (see nonempty)
            if value is None:
                fields = {name: value for name, value in fields.items() if value is not None}
                break
        write, ts, parent, srcloc = st.write_event, rfc3339, parent_id, self.srcloc
        if write is None or not write(tid, seq, eid, kind, ts, parent, fields, srcloc, metadata):
            st.emit(event_dict(tid, seq, eid, kind, ts, parent, fields, srcloc, metadata))
        self.seq, self.prev = seq + 1, eid
        if self.remember:
            st.remember_event(tid, eid)
        if st.sem is not None:
            st.sem[eid] = {"kind": kind}
        for name, value, unit in signals:
            event_signal(st, tid, eid, name, value, at + ".signals", unit)
        return eid

    def put_full(self, eid, kind, at=None, timestamp=None, rfc3339=None, parent=NOT_GIVEN,
                 events_parent=NOT_GIVEN, parent_id=NOT_GIVEN, input=None, output=None,
                 data=None, raw=NOT_GIVEN, metadata=None, signals=(), **checked):
        """:meth:`put` for the rules with fields it does not take (a method of its own: each
        keyword ``put`` declared would cost its every call, D86). ``checked``: ``branch_id``
        (an id), ``alignment_key`` and ``state_hash`` (non-empty texts), written before the
        rule's fields, ``context`` (an object), after them; each checked at ``<at>.<name>``
        after the timestamp and parent, in the record's order, then ``metadata`` (an object).
        ``raw``: the source element, written after ``source`` (the writer takes it with the
        metadata, as ``(raw, metadata)``)."""
        st, tid, seq = self.st, self.tid, self.seq
        if timestamp is not None:
            rfc3339 = coerce_time(st, timestamp, at + ".timestamp")
        if parent is not NOT_GIVEN:
            parent_id = event_parent(st, tid, parent, at + ".parent")
        elif events_parent is not NOT_GIVEN:
            parent_id = event_parent(st, tid, events_parent, "records.events.parent")
        elif parent_id is NOT_GIVEN:
            parent_id = self.prev if self.previous else None
        out = {}
        if checked:
            for name, check in (("branch_id", coerce_id), ("alignment_key", coerce_nonempty_text),
                                ("state_hash", coerce_nonempty_text)):
                if checked.get(name) is not None:
                    out[name] = check(st, checked[name], at + "." + name)
        if input is not None:
            out["input"] = input
        if output is not None:
            out["output"] = output
        if data is not None:
            out["data"] = data
        if checked:
            if checked.get("context") is not None:
                out["context"] = coerce_object(st, checked["context"], at + ".context")
            if None in out.values():  # a check failed
                out = {name: value for name, value in out.items() if value is not None}
        if metadata is not None and metadata.__class__ is not dict:
            metadata = coerce_object(st, metadata, at + ".metadata")
        if raw is not NOT_GIVEN:
            metadata = raw, metadata
        write, srcloc = st.write_event, self.srcloc
        if write is None or not write(tid, seq, eid, kind, rfc3339, parent_id, out, srcloc,
                                      metadata):
            st.emit(event_dict(tid, seq, eid, kind, rfc3339, parent_id, out, srcloc, metadata))
        self.seq, self.prev = seq + 1, eid
        if self.remember:
            st.remember_event(tid, eid)
        if st.sem is not None:
            st.sem[eid] = {"kind": kind}
        for name, value, unit in signals:
            event_signal(st, tid, eid, name, value, at + ".signals", unit)
        return eid

    def time(self, value):
        """``records.events.timestamp`` (the time of every rule without its own), checked at
        that place."""
        return coerce_time(self.st, value, "records.events.timestamp")

    def close(self):
        """Keep the trajectory's sequence number and last event for its next events."""
        self.st.seq[self.tid] = self.seq
        if self.last:
            self.st.last[self.tid] = self.prev


def event_dict(tid, seq, eid, kind, timestamp, parent, fields, srcloc, metadata):
    """An event as a record (see :meth:`TrajectoryEvents.put`), its fields in canonical order;
    ``metadata`` as the event writer takes it: ``(raw, metadata)`` with a source element."""
    ev = event_record(tid, seq, eid, kind, timestamp, parent)
    ev.update(fields)
    ev["source"] = srcloc
    if metadata.__class__ is tuple:
        ev["raw"], metadata = metadata
    if metadata is not None:
        ev["metadata"] = metadata
    return ev


def emit_event(st, ev, srcloc=None, remember=False):
    """Finish an event built by :func:`event_record` and the rule (its ``source`` location
    last, unless set already), emit it (written as text by ``st.write_event`` when
    write_canonical has one), remember its id for later parent tests (``remember``) and
    return it: what :meth:`TrajectoryEvents.put` does for the rules neither it nor
    ``put_full`` takes (with artifacts, with signals of other shapes, events that expressions
    read as ``$event``)."""
    write = st.write_event
    if srcloc is None:
        st.emit(ev)
    else:
        if write is not None:  # written as text (event_writer)
            lead = 5 + ("timestamp" in ev) + ("parent_id" in ev)
            fields = dict(islice(ev.items(), lead, None))
            tid, seq, eid, kind = ev["trajectory_id"], ev["sequence"], ev["id"], ev["kind"]
            ts, parent = ev.get("timestamp"), ev.get("parent_id")
            write = write(tid, seq, eid, kind, ts, parent, fields, srcloc, None)
        ev["source"] = srcloc
        if not write:
            st.emit(ev)
    eid = ev["id"]
    if remember:
        st.remember_event(ev["trajectory_id"], eid)
    if st.sem is not None:
        st.sem[eid] = {"kind": ev["kind"]}
    return eid


def default_records(st, scope, kinds, parent=None, loc=""):
    """The records of consecutive levels the spec leaves out (see :func:`default_record`);
    returns the last one."""
    for kind in kinds:
        parent = default_record(st, kind, parent, loc, scope)
    return parent


def native_event_id(st, value, default, where):
    """The event id the spec gives (made unique across the stream), or ``default`` if null."""
    eid = coerce_id(st, value, where)
    return default if eid is None else st.native_event_id(eid, where)


def put_signal(st, owner, name, value, where, unit=None):
    """Emit signal ``name`` of ``owner`` (a trajectory or an event record) with ``value``.

    A null value (or name) emits nothing; a value that is not a number, string or boolean
    is a warning at ``where``: the signal's spec path, or that of the ``signals`` mapping
    that holds it under its name. The id is ``<owner id>:<name>``, numbered if it repeats.
    """
    if value.__class__ not in _PLAIN_SCALARS:  # anything but a string, integer or boolean
        value = coerce_scalar(st, value, _signal_where(where, name))
        if value is None:
            return
    if name is not None:
        oid = owner["id"]
        sid = st.child_id(oid, name)
        if owner["record_type"] == "event":
            _emit_signal(st, sid, owner["trajectory_id"], oid, name, value, unit)
        else:
            _emit_signal(st, sid, oid, None, name, value, unit)


def event_signal(st, tid, eid, name, value, where, unit=None):
    """Like :func:`put_signal`, for event ``eid`` of trajectory ``tid`` whose signals have
    distinct literal names: the id ``<event id>:<name>`` is unique by construction, no
    bookkeeping needed."""
    if value.__class__ not in _PLAIN_SCALARS:  # anything but a string, integer or boolean
        value = coerce_scalar(st, value, _signal_where(where, name))
        if value is None:
            return
    write = st.write_signal  # write_canonical's: as text, from the event's text kept
    if write is None or not write(None, tid, eid, name, value, unit):
        _emit_signal(st, eid + ":" + name, tid, eid, name, value, unit)


def put_signal_with(st, owner, name, value, where, unit=None, metadata=None, numbered=True,
                    event_id=None, last=False):
    """:func:`put_signal` of a signal with a computed name or unit, metadata or an event: the
    name and the value are checked (warnings at ``where``.name, .value), then, only for a
    signal emitted, the event, the unit and the metadata (.event_id, .unit, .metadata).
    ``numbered`` False: the id is ``<event id>:<name>`` (an event's signals with distinct
    literal names: event_signal's). A trajectory's signal names its event with ``event_id``
    (an id, or a function computing it, called only for a signal emitted; dropped with a
    warning unless the trajectory has that event) or ``last`` (its last event, if any)."""
    name = coerce_nonempty_text(st, name, where + ".name")
    value = coerce_scalar(st, value, where + ".value")
    if value is None or name is None:
        return
    oid = owner["id"]
    sid = st.child_id(oid, name) if numbered else oid + ":" + name
    if owner["record_type"] == "event":
        sig = {"record_type": "signal", "id": sid, "trajectory_id": owner["trajectory_id"]}
        sig["event_id"] = oid
    else:
        sig = {"record_type": "signal", "id": sid, "trajectory_id": oid}
        event = None
        if last:
            event = st.last.get(oid)
        elif event_id is not None:
            event = owning_event(st, oid, event_id, where + ".event_id")
        if event is not None:
            sig["event_id"] = event
    sig["name"], sig["value"] = name, value
    put(sig, "unit", coerce_nonempty_text(st, unit, where + ".unit"))
    put(sig, "metadata", coerce_object(st, metadata, where + ".metadata"))
    st.emit(sig)


def owning_event(st, tid, event_id, where):
    """The event a trajectory's signal or artifact names (``event_id``: an id, or a function
    giving one), when trajectory ``tid`` has it; else None, with a warning at ``where`` (its
    ``event_id`` place) for an id it lacks. RLViz accepts only an event of the same trajectory
    emitted before the record; a trajectory's signals and artifacts come after all its events,
    so any event it has qualifies."""
    event = coerce_id(st, event_id() if callable(event_id) else event_id, where)
    if event is not None and not st.has_event(tid, event):
        st.warn(where, f"{event!r} is not an event of this trajectory; event_id dropped")
        return None
    return event


def _signal_where(where, name):
    """Where a signal's value is in the spec (``records.trajectory.signals.reward.value``)."""
    return (where + "." + name if where.endswith(".signals") else where) + ".value"


def _emit_signal(st, sid, tid, eid, name, value, unit):
    """Emit a signal record (``eid``: the event it belongs to, or None). Written as JSON text
    by ``st.write_signal`` when write_canonical has one (a quarter of a JSON Lines trace's
    records are signals): the bytes the C encoder makes of the record, without a dict."""
    write = st.write_signal
    if write is not None and write(sid, tid, eid, name, value, unit):
        return
    if eid is None:
        sig = {"record_type": "signal", "id": sid, "trajectory_id": tid}
    else:
        sig = {"record_type": "signal", "id": sid, "trajectory_id": tid, "event_id": eid}
    sig["name"] = name
    sig["value"] = value
    if unit is not None:
        sig["unit"] = unit
    st.emit(sig)


def semantic_view(st, eid, kind, **fields):
    """Keep the conversational view of event ``eid`` of ``kind`` (RELAI's ATIF steps,
    cap-evolve's rollouts): its kind and the semantic fields that are not null; nothing when
    the host asked for no views (``st.sem`` is None)."""
    if st.sem is None:
        return
    view = {"kind": kind}
    for name, value in fields.items():
        if value is not None:
            view[name] = value
    st.sem[eid] = view


def require_fields(value, required, fmt, at, line=None):
    """Raise when ``value`` (the document, or JSON Lines line ``line``) lacks a field that
    ``source.probe.require`` (at ``at``, ``spec.yaml:6``) names; ``fmt`` is the format id."""
    missing = missing_required(value, required)
    if missing is not None:
        by = f", by source.probe.require at {at})" if at else ")"
        by += f"; if {missing} may be absent, drop it from source.probe.require"
        if line is None:
            raise MappingError(f"missing required field {missing} (not a " + fmt + " document"
                               + by)
        raise MappingError(f"line {line}: missing required field {missing} (not " + fmt + by)
