"""Evidence for ``mapc drift``: is an absence chance or change, and did a field that
appeared take the place of one that disappeared?

A field ``held`` by ``of`` elements (or records) of the fixtures and by none of ``now_of``
new ones is gone for a reason when all held it, or when missing it by chance is unlikely
(:data:`CHANCE`). A rename is suggested only for a field where one member name along the
path changed, with a JSON type in common and similar values (:class:`mapc.analysis.profile.Fingerprint`:
shared values, texts that look alike, ranges that overlap; for objects and arrays, most
members in common), and only when one field fits.
"""

from __future__ import annotations

from mapc.core.fieldpath import render, segments, within
from mapc.analysis.profile import Profile

#: below this chance of a field's absence from every new element, its absence is not chance
CHANCE = 0.01
SIMILAR_FIELDS = 0.6  # share of fields two groups of elements have in common to be the same kind


def significant(held: int, of: int, now_of: int) -> bool:
    """Whether a field ``held`` by ``of`` elements (or records) before and by none of
    ``now_of`` now is gone for a reason: always there before, or unlikely to miss by chance."""
    if of == 0 or held == 0 or now_of == 0:
        return False
    return held == of or (1 - held / of) ** now_of < CHANCE


# -- looking fields up in a profile -----------------------------------------------------------
def _shape(prof: Profile, path: str):
    from mapc.analysis.profile import PathIndex

    found = PathIndex(prof).lookup(path)
    return prof.fields.get(found[0]) if found else None


def present(prof: Profile, path: str) -> int:
    """How many of the profiled elements hold a value (not null) at ``path``."""
    shape = _shape(prof, path)
    return shape.present if shape else 0


def types_at(prof: Profile, path: str) -> set[str]:
    shape = _shape(prof, path)
    return set(shape.types) - {"null"} if shape else set()


def _below(prof: Profile, path: str) -> set[tuple[str, ...]]:
    """The paths under ``path``, relative to it."""
    n = len(segments(path))
    return {segments(p)[n:] for p in prof.fields if p != path and within(p, path) and len(segments(p)) > n}


def similar(before: Profile, old: str, after: Profile, new: str) -> bool:
    """Whether ``new`` in ``after`` holds what ``old`` held in ``before``: a type in common,
    and similar values (shared values, close lengths or numbers) or, for objects and arrays,
    mostly the same fields with similar values."""
    a, b = before.fields.get(old), after.fields.get(new)
    if a is None or b is None or not (set(a.types) - {"null"}) & (set(b.types) - {"null"}):
        return False
    below_a, below_b = _below(before, old), _below(after, new)
    if below_a or below_b:
        common = below_a & below_b
        if len(common) < SIMILAR_FIELDS * len(below_a | below_b):
            return False
        prints = [(before.fields.get(render(segments(old) + c)), after.fields.get(render(segments(new) + c)))
                  for c in common]
        prints = [(x.fingerprint, y.fingerprint) for x, y in prints if x and y and x.fingerprint and y.fingerprint
                  and (x.fingerprint.digests or x.fingerprint.low is not None)]
        return not prints or any(x.similar(y) for x, y in prints)
    return bool(a.fingerprint and b.fingerprint and a.fingerprint.similar(b.fingerprint))


def rename_of(path: str, before: Profile, after: Profile, exclude=()) -> str | None:
    """The one field that appeared where ``path`` disappeared (one member name along the path
    changed) holding the same type and similar values; None without such evidence, or
    when two fields would fit."""
    segs = segments(path)
    fits = []
    for cand, shape in after.fields.items():
        if cand in exclude or not shape.present and shape.fingerprint is None:
            continue
        other = segments(cand)
        changed = [(x, y) for x, y in zip(segs, other) if x != y]
        if len(other) != len(segs) or len(changed) != 1 or {"[]", "*"} & set(changed[0]):
            continue  # one member name changed: not an array for an object, nor two names
        if cand in before.fields or not types_at(after, cand):
            continue
        if similar(before, path, after, cand):
            fits.append(cand)
    return fits[0] if len(fits) == 1 else None
