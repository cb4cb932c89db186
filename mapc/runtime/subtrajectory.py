"""Mapping a file a trace names as a child trajectory (``subtrajectory``)."""

import os
import stat

from .mapping_rt import MappingError, renamed_id, coerce_id, json_type, contained


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
