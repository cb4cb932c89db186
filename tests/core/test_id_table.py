"""Id bookkeeping of generated adapters: compact (a few dozen bytes per distinct id) and exact.

A dict of ids took 750 bytes per JSON Lines line whose case and trajectory ids were new
(874 MB for a million); ``IdTable`` keeps 96 bits of hash per id in one flat array. These
tests check that it behaves as the dicts it replaced, and count the memory it holds
(tracemalloc: bytes, not time); ``bench/distinct_ids.py`` measures a built adapter's peak RSS.
"""

from __future__ import annotations

import random
import tracemalloc

from runtime_names import rt


def _keys(n: int, seed: int = 3) -> list[str]:
    rng = random.Random(seed)
    odd = ["", "~", "\ud800", "é🙂", "x" * 600, "a\0b", "1", "True"]
    return odd + [f"{rng.choice(['example', 'traj', 'evt@'])}-{i}-{rng.random():.6f}" for i in range(n)]


def test_it_maps_as_a_dict_through_every_growth():
    keys = _keys(20_000)
    table, expected = rt.IdTable(), {}
    for i, key in enumerate(keys):
        table[key] = expected[key] = i % 1000
        if i % 7 == 0:  # overwrite an earlier one
            old = keys[i // 2]
            table[old] = expected[old] = (i * 31) % (1 << 32)
    assert len(table) == len(expected)
    assert all(table.get(k) == v for k, v in expected.items())
    assert all(k in table for k in keys)
    assert "absent" not in table and table.get("absent", -1) == -1 and table.get("absent") is None


def test_claim_and_count_look_up_once():
    table = rt.IdTable()
    assert table.claim("a", 5) is None and table.claim("a", 6) == 5 and table.get("a") == 5
    assert [table.count("k") for _ in range(4)] == [0, 1, 2, 3] and table.get("k") == 4
    assert table.claim("k", 9) == 4 and len(table) == 2


def test_a_trail_keeps_each_trajectorys_count_and_last_event_through_every_growth():
    trail = rt.TrajectoryTrail()
    keys = _keys(5000)
    expected = {}
    for i, key in enumerate(keys):
        assert trail.seq.get(key, 0) == 0 and trail.last.get(key) is None
        trail.seq[key] = i
        # ids of every length (the arena holds up to 4,094 bytes, longer ones are kept aside)
        eid = None if i % 11 == 0 else ("evt@" + key) * (1 + i % 3) + ("é" * 5000 if i % 97 == 1 else "")
        trail.last[key] = expected[key] = eid
    for i, key in enumerate(keys[: len(keys) // 2]):  # rewritten: shorter in place, longer appended
        eid = "" if i % 5 == 0 else ("x" * (i % 40)) + "\ud800"
        trail.last[key] = expected[key] = eid
        trail.seq[key] = trail.seq.get(key) + 1
    assert len(trail.seq) == len(keys)
    assert all(trail.last.get(k) == v for k, v in expected.items())
    assert all(trail.seq.get(k) == i + (i < len(keys) // 2) for i, k in enumerate(keys))
    assert trail.last.get("absent", "default") == "default" and trail.seq.get("absent") is None


def test_a_trajectory_rewriting_its_last_event_reuses_its_bytes():
    trail = rt.TrajectoryTrail()
    for i in range(10_000):  # one trajectory, a JSONL line per event
        trail.last["t"] = f"evt@{i % 500}"
    assert trail.last.get("t") == "evt@499" and len(trail.arena) < 30, len(trail.arena)


def test_the_last_key_read_is_written_back_to_its_slot():
    """level_events reads a trajectory's counter, maps its events, writes it back: the
    write reuses the read's slot, also when other keys were added (and the table grew) meanwhile."""
    table = rt.IdTable()
    tid = "traj-1"
    assert table.get(tid, 0) == 0
    for i in range(100):  # grows from 8 slots to 256
        table[f"other-{i}"] = i
    table[tid] = 7
    assert table.get(tid) == 7 and table.get("other-99") == 99 and len(table) == 101


def test_map_state_keeps_levels_apart_and_renames_a_reused_id():
    st = rt.MapState()
    case = {"id": "c1"}
    assert st.level("case", case, "run@x") is True
    assert st.level("case", {"id": "c1"}, "run@x") is False  # the same record again
    traj = {"id": "c1"}  # the same id for another record
    assert st.level("trajectory", traj, "group@c1") is True and traj["id"] == "c1~2"
    assert st.is_level("c1~2", "trajectory", "group@c1") and not st.is_level("c1", "trajectory", "group@c1")
    assert st.warnings == 1
    assert st.native_event_id("e1", "w") == "e1" and st.native_event_id("e1", "w") == "e1~2"
    assert st.native_event_id("c1", "w") != "c1"  # a record's id
    st.remember_event("t", "e1")
    assert st.parent_event("t", "e1", "w") == "e1" and st.parent_event("t2", "e1", "w") is None
    assert st.parent_event("t", "e", "w") is None  # ("t", "e1") is not ("t", "e")
    assert st.has_event("t", "e1") and not st.has_event("t", "e") and not st.has_event("t1", "e1"[1:])
    assert [st.ordinal("case", {"id": 3}) for _ in range(3)] == [0, 1, 2] and st.ordinal("group", {"id": 3}) == 0


def _bookkeeping_bytes(n: int, id_length: int) -> float:
    """Bytes held per line of a stream whose every line is a new case with one trajectory
    (what verifiers results look like): three level ids, an ordinal, a counter and a previous
    event per line."""
    pad = "x" * max(0, id_length - 12)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        st = rt.MapState()
        for i in range(n):
            case = {"id": f"example-{i}{pad}"}
            st.level("case", case, "run@results.jsonl")
            group = {"id": rt.child_id("group", case["id"])}
            st.level("group", group, case["id"])
            st.ordinal("trajectory", i)
            traj = {"id": f"{case['id']}-rollout-0"}
            st.level("trajectory", traj, group["id"])
            tid = traj["id"]
            seq = st.seq.get(tid, 0)
            prev = st.last.get(tid)
            seq, prev = seq + 2, f"evt@{i}.1" if prev is None else prev
            st.seq[tid] = seq
            st.last[tid] = prev
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert st.seq.get(f"example-{n - 1}{pad}-rollout-0") == 2
    return held / n


def test_memory_per_distinct_id_is_a_few_dozen_bytes():
    """Was 750 bytes per line with short ids and 1,280 with 200-character ids, then 260 (three
    entries a line in tables two thirds full, a str per last event). Now about 130, 185 right
    after a table doubled (43% full): 16 bytes a slot (32 for a trajectory), and the previous
    event's id as UTF-8 (about 10 bytes here)."""
    short = _bookkeeping_bytes(4000, 24)
    long_ids = _bookkeeping_bytes(4000, 200)
    assert short < 240, short
    assert long_ids < 240 and abs(long_ids - short) < 10, (short, long_ids)
