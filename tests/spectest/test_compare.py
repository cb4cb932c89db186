"""Pairing expected and actual records the way a person would, and what counts as a change."""

from __future__ import annotations

from mapc.spectest.compare import Comparison


def _traj(tid="t1", **kw):
    return [{"record_type": "run", "id": "run@x.json"},
            {"record_type": "case", "id": "c1", "run_id": "run@x.json"},
            {"record_type": "group", "id": "group@c1", "case_id": "c1"},
            {"record_type": "trajectory", "id": tid, "group_id": "group@c1", **kw}]


def _events(tid, specs, start=0):
    out, prev = [], None
    for n, (kind, text) in enumerate(specs):
        ev = {"record_type": "event", "id": f"evt@0.{start + n}", "trajectory_id": tid, "sequence": n,
              "kind": kind, "input": {"content": text}}
        if prev:
            ev["parent_id"] = prev
        prev = ev["id"]
        out.append(ev)
    return out


def _summary(diffs):
    return [(d.change, d.record_type, d.expected_id, d.actual_id, [(f.field, f.change) for f in d.fields])
            for d in diffs]


def test_identical_records_in_another_order_are_the_same():
    exp = _traj() + _events("t1", [("message", "a"), ("generation", "b")])
    act = list(reversed(exp))
    assert Comparison(exp, act).differences() == []


def test_an_event_no_longer_emitted_is_removed_and_later_derived_ids_do_not_count_as_changes():
    exp = _traj() + _events("t1", [("message", "sys"), ("message", "q"), ("generation", "a"), ("tool", "t")])
    act = _traj() + _events("t1", [("message", "q"), ("generation", "a"), ("tool", "t")], start=1)
    # the ids shift (evt@0.1 -> evt@0.0 ...) and so do sequences: paired by position, not by id
    act = _traj() + [dict(e, id=f"evt@0.{n}") for n, e in enumerate(act[4:])]
    for n, e in enumerate(act[4:]):
        if n:
            e["parent_id"] = f"evt@0.{n - 1}"
    diffs = Comparison(exp, act).differences()
    assert _summary(diffs) == [
        ("removed", "event", "evt@0.0", None, []),
        ("changed", "event", "evt@0.1", "evt@0.0", [("parent_id", "removed")]),
    ]


def test_a_changed_field_is_listed_with_its_path_and_values():
    exp = _traj() + _events("t1", [("generation", "a")])
    act = _traj() + _events("t1", [("generation", "b")])
    act[-1]["output"] = {"role": "assistant"}
    (diff,) = Comparison(exp, act).differences()
    assert [(f.field, f.change, f.expected, f.actual) for f in diff.fields] == [
        ("input.content", "changed", "a", "b"), ("output", "added", None, {"role": "assistant"})]


def test_children_follow_a_renamed_native_parent():
    exp = _traj("ex-0-rollout-0") + _events("ex-0-rollout-0", [("message", "q")]) + [
        {"record_type": "signal", "id": "ex-0-rollout-0:reward", "trajectory_id": "ex-0-rollout-0",
         "name": "reward", "value": 1}]
    act = _traj("ex-0-attempt-0") + _events("ex-0-attempt-0", [("message", "q")]) + [
        {"record_type": "signal", "id": "ex-0-attempt-0:reward", "trajectory_id": "ex-0-attempt-0",
         "name": "reward", "value": 0}]
    diffs = Comparison(exp, act).differences()
    # the trajectory's id is one change; its event and signal are paired through it, and the signal's
    # id (built from the trajectory's) is not a change of its own: only its value is
    assert _summary(diffs) == [
        ("changed", "trajectory", "ex-0-rollout-0", "ex-0-attempt-0", [("id", "changed")]),
        ("changed", "signal", "ex-0-rollout-0:reward", "ex-0-attempt-0:reward", [("value", "changed")]),
    ]


def test_native_ids_pair_by_id_even_when_the_order_changes():
    exp = _traj() + [{"record_type": "event", "id": "a", "trajectory_id": "t1", "sequence": 0, "kind": "message"},
                     {"record_type": "event", "id": "b", "trajectory_id": "t1", "sequence": 1, "kind": "message",
                      "input": {"content": "x"}}]
    act = _traj() + [{"record_type": "event", "id": "b", "trajectory_id": "t1", "sequence": 0, "kind": "message",
                      "input": {"content": "y"}},
                     {"record_type": "event", "id": "a", "trajectory_id": "t1", "sequence": 1, "kind": "message"}]
    diffs = Comparison(exp, act).differences()
    assert [(d.expected_id, d.actual_id) for d in diffs] == [("a", "a"), ("b", "b")]
    assert [f.field for f in diffs[1].fields] == ["sequence", "input.content"]


def test_records_under_a_new_parent_are_added_and_the_old_ones_removed():
    exp = _traj() + _events("t1", [("message", "q")])
    act = exp + [{"record_type": "trajectory", "id": "t2", "group_id": "group@c1"}] + [
        dict(e, trajectory_id="t2", id="evt@1.0") for e in _events("t2", [("message", "q")])]
    assert _summary(Comparison(exp, act).differences()) == [
        ("added", "trajectory", None, "t2", []), ("added", "event", None, "evt@1.0", [])]
