"""Source field paths: one text form, as a JMESPath expression writes them.

Profiles (:mod:`mapc.analysis.profile`), the reads of a spec (:mod:`mapc.analysis.reads`), drift, the
fixture check, ``mapc init`` and ``mapc review`` all key and print source field paths
as text. The text is the path's JMESPath spelling, so a message can be pasted into a
spec: a member name that is not a plain identifier is a quoted identifier
(``attributes."gen_ai.usage.input_tokens"``, ``"first name"``, ``"1st"``, ``""``),
``[]`` stands for any element of an array and ``*`` for any value of an object
(``a.*.b``). Every key is written one way only (:func:`key`), so two spellings never
name one path, and :func:`segments` reads the text back into its member names: never
split a path on ``.`` (a key may hold dots).
"""

from __future__ import annotations

import json
import re

ANY = "[]"  # a segment: any element of an array
STAR = "*"  # a segment: any value of an object
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_VARIABLE = re.compile(r"\$[A-Za-z_][A-Za-z0-9_]*\Z")  # a leading ``$name``: a read through a variable


class Variable(str):
    """A path's first segment when it reads a variable (``$span`` in ``$span.attributes``),
    not a member: a source key may itself start with ``$`` (``$schema``, ``$oid``), and that
    key is quoted (``"$schema"``), so the two never print alike."""


def variable(name: str) -> Variable:
    """The segment of variable ``name`` (given with or without its ``$``)."""
    return Variable(name if name.startswith("$") else "$" + name)


def is_identifier(name: str) -> bool:
    """Whether JMESPath reads ``name`` unquoted (``a_1`` yes; ``a.b``, ``1st``, ``""`` no)."""
    return bool(_IDENT.match(name))


def key(name: str) -> str:
    """One member name as a path segment: itself when an identifier, else quoted."""
    return name if _IDENT.match(name) else json.dumps(name, ensure_ascii=False)


def child(path: str, name: str) -> str:
    """The path of member ``name`` (a raw key, dots and all) of the objects at ``path``."""
    return f"{path}.{key(name)}" if path else key(name)


def join(base: str, rel: str) -> str:
    """``rel`` (a path text, relative to ``base``) read from ``base``."""
    if not rel:
        return base
    if not base:
        return rel
    return base + rel if rel.startswith("[") else f"{base}.{rel}"


def render(segs) -> str:
    """The text of a path given as segments (member names, :data:`ANY`, :data:`STAR`; first
    a :class:`Variable` when it reads one)."""
    out = ""
    for s in segs:
        if s == ANY:
            out += ANY
        else:
            text = STAR if s == STAR else s if not out and isinstance(s, Variable) else key(s)
            out = f"{out}.{text}" if out else text
    return out


def segments(path: str) -> tuple[str, ...]:
    """``a."b.c"[].d`` -> ``('a', 'b.c', '[]', 'd')``: the member names, unquoted.

    Also reads the looser texts people write (``a.b[0].c``: an index is :data:`ANY`)."""
    out: list[str] = []
    i, n = 0, len(path)
    while i < n:
        ch = path[i]
        if ch == ".":
            i += 1
        elif ch == "[":
            end = path.find("]", i)
            end = n - 1 if end < 0 else end
            out.append(ANY)
            i = end + 1
        elif ch == '"':
            text, i = _quoted(path, i)
            out.append(text)
        else:
            m = re.compile(r"[^.\[]*").match(path, i)
            text = m.group()
            out.append(Variable(text) if not out and i == 0 and _VARIABLE.match(text) else text)
            i = m.end()
    return tuple(out)


def _quoted(path: str, start: int) -> tuple[str, int]:
    """The quoted identifier at ``start`` and the index after it."""
    i = start + 1
    while i < len(path):
        if path[i] == "\\":
            i += 2
            continue
        if path[i] == '"':
            try:
                return json.loads(path[start:i + 1]), i + 1
            except ValueError:
                break
        i += 1
    return path[start + 1:], len(path)  # not a complete quoted name: the rest, as written


def parent(path: str) -> str:
    """The path one segment up (``a."b.c"`` -> ``a``; ``a[]`` -> ``a``)."""
    return render(segments(path)[:-1])


def last(path: str) -> str:
    """The last member name of ``path`` (unquoted), or ``[]``/``*``."""
    segs = segments(path)
    return segs[-1] if segs else ""


def within(path: str, ancestor: str) -> bool:
    """Whether ``path`` is ``ancestor`` or below it (segment by segment, not by text)."""
    a, p = segments(ancestor), segments(path)
    return p[:len(a)] == a


#: Places a dotted key is tried at, at most (each try looks a whole path up).
MAX_DOTTED_TRIES = 64


def literal_dots(segs: tuple[str, ...], has, names_at) -> tuple[str, ...] | None:
    """The segments with one run of names joined by dots into one key, where ``segs`` read
    the dots of a key as separators (``attributes.eval.score`` for the key ``"eval.score"``):
    the longest such run ``has(segments)`` accepts (the first of equal ones), or None.

    ``names_at(prefix)`` gives the member names the data has in the objects at the path
    ``prefix`` (nothing when there are none): a run can only be a key where the data has
    that key, and no key is below a prefix the data lacks. So the work is the names the
    data has along the path, and at most :data:`MAX_DOTTED_TRIES` whole paths looked up;
    trying every run made a path of n names cost n³ (400 names: 30 s)."""
    found = []  # (-size, start, key) of the runs that are keys where they stand
    for start in range(len(segs) - 1):
        if segs[start] in (ANY, STAR):
            continue
        names = names_at(segs[:start])
        if not names:
            break
        first = segs[start] + "."
        for name in names:
            if not name.startswith(first):
                continue
            parts = tuple(name.split("."))
            if segs[start:start + len(parts)] == parts and all(s not in (ANY, STAR) for s in parts):
                found.append((-len(parts), start, name))
    for minus_size, start, name in sorted(found)[:MAX_DOTTED_TRIES]:
        candidate = segs[:start] + (name,) + segs[start - minus_size:]
        if has(candidate):
            return candidate
    return None
