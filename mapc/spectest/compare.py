"""Pair expected and actual records the way a person would, and say what changed in each.

Records are paired level by level (run, case, group, trajectory, event, then
signals and artifacts), only among the children of parents already paired, so a
changed trajectory id does not turn all its events into "removed" and "added".
Within one parent: records with native ids pair by id (signals and artifacts by
name); the rest, and every record whose id mapc derived from its source location
(``evt@L12.3``, ``group@...``), pair by position, after aligning the two
sequences (events in ``sequence`` order) so that an event the spec no longer
emits shows as removed rather than shifting every later pairing.

Within a pair, references to other records are compared through the pairing (a
``trajectory_id`` that names the paired trajectory is unchanged), and an id or a
``sequence`` that moved only because a neighbour or parent changed is shown with
the record, not listed as a change of its own.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field

ORDER = ("run", "case", "group", "trajectory", "event", "signal", "artifact")
_PARENT = {"case": ("run", "run_id"), "group": ("case", "case_id"), "trajectory": ("group", "group_id"),
           "event": ("trajectory", "trajectory_id")}
#: Fields holding the id of another record: field -> that record's type (None: the record's own type).
REFERENCES = {"run_id": "run", "case_id": "case", "group_id": "group", "trajectory_id": "trajectory",
              "event_id": "event", "parent_id": None}
_DERIVED = re.compile(r"^(?:run|case|group|traj|evt|art|sig)@")
MISSING = object()


@dataclass
class FieldChange:
    field: str  # dotted path: output.content
    change: str  # added | removed | changed
    expected: object = None
    actual: object = None
    place: object = None  # locate.Place
    path: tuple = ()  # the field as keys: ("output", "content")
    record: dict | None = None  # the record a partial expectation named (to locate the field)

    def to_dict(self) -> dict:
        out = {"field": self.field, "change": self.change}
        if self.change != "added":
            out["expected"] = self.expected
        if self.change != "removed":
            out["actual"] = self.actual
        if self.place is not None:
            out.update(self.place.to_dict())
        return out


@dataclass
class RecordDiff:
    record_type: str
    change: str  # added | removed | changed
    expected_id: str | None
    actual_id: str | None
    parent: str | None  # the parent's id (actual side when there is one)
    fields: list[FieldChange] = field(default_factory=list)
    expected: dict | None = None
    actual: dict | None = None
    place: object = None  # where the record is made (locate.Place)

    @property
    def label(self) -> str:
        rt = self.record_type
        if self.record_type == "event":
            rec = self.actual or self.expected or {}
            rt = f"event ({rec.get('kind')})"
        elif self.record_type in ("signal", "artifact"):
            rt = f"{self.record_type} {(self.actual or self.expected or {}).get('name')!r}"
        if self.expected_id and self.actual_id and self.expected_id != self.actual_id:
            return f"{rt} {self.expected_id} -> {self.actual_id}"
        return f"{rt} {self.actual_id or self.expected_id}"

    def to_dict(self) -> dict:
        out = {"record_type": self.record_type, "change": self.change, "expected_id": self.expected_id,
               "actual_id": self.actual_id, "parent": self.parent}
        if self.change == "changed":
            out["fields"] = [f.to_dict() for f in self.fields]
        else:
            out["record"] = self.actual if self.change == "added" else self.expected
        if self.place is not None:
            out.update(self.place.to_dict())
        return out


def derived(record_id) -> bool:
    return isinstance(record_id, str) and bool(_DERIVED.match(record_id))


def parent_key(record: dict) -> tuple[str, object] | None:
    rt = record.get("record_type")
    if rt in _PARENT:
        ptype, key = _PARENT[rt]
        return ptype, record.get(key)
    if rt in ("signal", "artifact"):
        if record.get("event_id") is not None:
            return "event", record["event_id"]
        return "trajectory", record.get("trajectory_id")
    return None


def _fingerprint(record: dict) -> str:
    """Everything but identity and position: equal fingerprints are records a person calls the same."""
    rest = {k: v for k, v in record.items() if k not in REFERENCES and k not in ("id", "sequence")}
    return json.dumps(rest, sort_keys=True, ensure_ascii=False, default=str)


def _coarse(record: dict):
    rt = record.get("record_type")
    if rt == "event":
        return record.get("kind")
    if rt in ("signal", "artifact"):
        return record.get("name")
    return rt


def _align(exp: list[int], act: list[int], expected: list[dict], actual: list[dict]) -> list[tuple]:
    """Pairs (expected index or None, actual index or None) of two ordered sibling lists."""
    out: list[tuple] = []

    def blocks(a, b, key):
        sm = difflib.SequenceMatcher(None, [key(expected[i]) for i in a], [key(actual[j]) for j in b],
                                     autojunk=False)
        return sm.get_opcodes()

    for tag, i1, i2, j1, j2 in blocks(exp, act, _fingerprint):
        if tag == "equal":
            out += list(zip(exp[i1:i2], act[j1:j2]))
            continue
        a, b = exp[i1:i2], act[j1:j2]
        for tag2, k1, k2, l1, l2 in blocks(a, b, _coarse):
            sub_a, sub_b = a[k1:k2], b[l1:l2]
            n = min(len(sub_a), len(sub_b))
            out += list(zip(sub_a[:n], sub_b[:n]))
            out += [(i, None) for i in sub_a[n:]] + [(None, j) for j in sub_b[n:]]
    return out


class Comparison:
    """Expected vs actual records of one case."""

    def __init__(self, expected: list[dict], actual: list[dict]):
        self.expected, self.actual = expected, actual
        self.pairs: list[tuple[int | None, int | None]] = []
        self.ids: dict[tuple[str, object], object] = {}  # (type, expected id) -> actual id
        self._index = {(r.get("record_type"), r.get("id")): r for r in expected}
        self._pair()

    # -- pairing ---------------------------------------------------------------------
    def _pair(self) -> None:
        known = set(ORDER)
        for rt in ORDER + tuple(sorted({r.get("record_type") for r in self.expected + self.actual} - known)):
            exp = [i for i, r in enumerate(self.expected) if r.get("record_type") == rt]
            act = [j for j, r in enumerate(self.actual) if r.get("record_type") == rt]
            if rt == "event":
                exp.sort(key=lambda i: _num(self.expected[i].get("sequence")))
                act.sort(key=lambda j: _num(self.actual[j].get("sequence")))
            groups: dict[object, tuple[list[int], list[int]]] = {}
            for i in exp:
                groups.setdefault(self._translated_parent(self.expected[i]), ([], []))[0].append(i)
            for j in act:
                groups.setdefault(parent_key(self.actual[j]), ([], []))[1].append(j)
            for a, b in groups.values():
                for i, j in self._pair_siblings(a, b):
                    self.pairs.append((i, j))
                    if i is not None and j is not None:
                        self.ids[(rt, self.expected[i].get("id"))] = self.actual[j].get("id")

    def _translated_parent(self, record: dict):
        key = parent_key(record)
        if key is None:
            return None
        ptype, pid = key
        return (ptype, self.ids.get((ptype, pid), ("unpaired", pid)))

    def _pair_siblings(self, a: list[int], b: list[int]) -> list[tuple]:
        out = []
        by_key: dict[object, list[int]] = {}
        for j in b:
            k = self._identity(self.actual[j])
            if k is not None:
                by_key.setdefault(k, []).append(j)
        rest_a, taken = [], set()
        for i in a:
            k = self._identity(self.expected[i])
            match = by_key.get(k) if k is not None else None
            if match and len(match) == 1 and match[0] not in taken:
                out.append((i, match[0]))
                taken.add(match[0])
            else:
                rest_a.append(i)
        rest_b = [j for j in b if j not in taken]
        return out + _align(rest_a, rest_b, self.expected, self.actual)

    @staticmethod
    def _identity(record: dict):
        """What pairs a record directly: its native id, or a signal's or artifact's name."""
        rt = record.get("record_type")
        if rt in ("signal", "artifact"):
            return ("name", record.get("name"))
        rid = record.get("id")
        if rid is None or derived(rid):
            return None
        return ("id", rid)

    # -- differences -----------------------------------------------------------------
    def differences(self) -> list[RecordDiff]:
        """Changed, removed and added records, in the order of the expected stream (added ones
        where they appear in the actual stream)."""
        ranks = self._ranks()
        out = []
        for i, j in self.pairs:
            exp = self.expected[i] if i is not None else None
            act = self.actual[j] if j is not None else None
            rec = act or exp
            rt = rec.get("record_type")
            key = parent_key(rec)
            parent = key[1] if key else None
            if exp is None:
                out.append(((1, j), RecordDiff(rt, "added", None, act.get("id"), parent, actual=act)))
            elif act is None:
                out.append(((0, i), RecordDiff(rt, "removed", exp.get("id"), None, parent, expected=exp)))
            else:
                changes = self._field_changes(exp, act, ranks.get(("e", i)) == ranks.get(("a", j)))
                if changes:
                    out.append(((0, i), RecordDiff(rt, "changed", exp.get("id"), act.get("id"), parent,
                                                   changes, exp, act)))
        order = {rt: n for n, rt in enumerate(ORDER)}
        out.sort(key=lambda p: (order.get(p[1].record_type, len(ORDER)), p[0]))
        return [d for _, d in out]

    def _ranks(self) -> dict:
        """Rank of each paired event among its paired siblings, on each side: equal ranks mean a
        changed ``sequence`` only reflects events added or removed before it."""
        ranks = {}
        for side, records, index in (("e", self.expected, 0), ("a", self.actual, 1)):
            by_parent: dict[object, list[int]] = {}
            for pair in self.pairs:
                if pair[0] is None or pair[1] is None:
                    continue
                k = pair[index]
                if records[k].get("record_type") == "event":
                    by_parent.setdefault(parent_key(self.actual[pair[1]]), []).append(k)
            for members in by_parent.values():
                for rank, k in enumerate(sorted(members, key=lambda x: _num(records[x].get("sequence")))):
                    ranks[(side, k)] = rank
        return ranks

    def _field_changes(self, exp: dict, act: dict, same_rank: bool) -> list[FieldChange]:
        out: list[FieldChange] = []
        rt = exp.get("record_type")
        for key in list(exp) + [k for k in act if k not in exp]:
            if key == "record_type":
                continue
            e, a = exp.get(key, MISSING), act.get(key, MISSING)
            if e == a:
                continue
            if key == "id" and (derived(e) and derived(a) or self._follows_parent(exp, act)):
                continue
            if key in REFERENCES and e is not MISSING and a is not MISSING:
                ref_type = REFERENCES[key] or rt
                if self.ids.get((ref_type, e), MISSING) == a:
                    continue
            if key == "sequence" and rt == "event" and same_rank:
                continue
            diff_values((key,), e, a, out)
        return out

    def _follows_parent(self, exp: dict, act: dict) -> bool:
        """An id built from an ancestor's id (``example-0-rollout-1``, ``traj:reward``) that changed
        only because the ancestor's did."""
        e, a = exp.get("id"), act.get("id")
        if not isinstance(e, str) or not isinstance(a, str):
            return False
        for key, ref_type in REFERENCES.items():
            pe = exp.get(key)
            pa = self.ids.get((ref_type or exp.get("record_type"), pe))
            if isinstance(pe, str) and isinstance(pa, str) and pe and pe in e and e.replace(pe, pa) == a:
                return True
        ancestors = self._ancestors(exp)
        return any(pe in e and e.replace(pe, pa) == a for pe, pa in ancestors)

    def _ancestors(self, record: dict) -> list[tuple[str, str]]:
        out = []
        index = self._index
        key = parent_key(record)
        seen = 0
        while key is not None and seen < 8:
            seen += 1
            pa = self.ids.get(key)
            if isinstance(key[1], str) and isinstance(pa, str) and key[1]:
                out.append((key[1], pa))
            parent = index.get(key)
            key = parent_key(parent) if parent else None
        return out


def _num(value):
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else float("inf")


def diff_values(path: tuple, e, a, out: list[FieldChange]) -> None:
    """Field changes between two values: objects member by member, anything else as a whole."""
    if isinstance(e, dict) and isinstance(a, dict):
        for key in list(e) + [k for k in a if k not in e]:
            ev, av = e.get(key, MISSING), a.get(key, MISSING)
            if ev != av:
                diff_values(path + (key,), ev, av, out)
        return
    name = ".".join(str(p) for p in path)
    if e is MISSING:
        out.append(FieldChange(name, "added", None, a, path=path))
    elif a is MISSING:
        out.append(FieldChange(name, "removed", e, None, path=path))
    else:
        out.append(FieldChange(name, "changed", e, a, path=path))
