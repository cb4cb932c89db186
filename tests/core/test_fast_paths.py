"""The speed-ups of generated adapters give exactly what the plain code gave.

Each fast path (one C encoder per stream, one JSON decoder per file, rule
dispatch on a field read once, conditions without ``truthy()``, constants
written without coercion) is checked against the slower, obvious form. No
timing here: numbers live in ``bench/run.py`` and docs/performance.md.
"""

from __future__ import annotations

import io
import json
import random
from datetime import datetime, timedelta, timezone

import pytest

from mapc.core import runtime_files as runtime
from mapc.pipeline.build import mapping_namespace, mapping_runtime
from mapc.codegen.program import build_program, runtime_names
from mapc.runtime import jmespath_rt
from runtime_names import rt
from mapc.spec import load_spec

STANDARD = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


@pytest.mark.parametrize("value", [
    {"record_type": "event", "id": "evt@L1", "sequence": 0, "input": {"role": "user", "content": "café ☕ \u2028"}},
    {"a": [1, 2.5, -0.0, 1e16, 1e-05, 10**30, True, False, None, "", [], {}], "b": {"c": {"d": ["\x00\x1f\"\\/"]}}},
    {1: "int key", None: "null key", True: "bool key", 2.5: "float key"},
    [],
    "just a string",
    12.0,
])
def test_compact_encoder_writes_what_jsonencoder_writes(value):
    assert rt.compact_encoder()(value) == STANDARD.encode(value)


@pytest.mark.parametrize("bad", [{"x": float("nan")}, {"x": [float("inf")]}, {"x": {1, 2}}])
def test_compact_encoder_raises_what_jsonencoder_raises(bad):
    with pytest.raises(Exception) as fast:
        rt.compact_encoder()(bad)
    with pytest.raises(Exception) as standard:
        STANDARD.encode(bad)
    assert (type(fast.value), str(fast.value)) == (type(standard.value), str(standard.value))


def test_compact_encoder_reports_a_record_that_contains_itself_like_jsonencoder():
    record = {"record_type": "run", "id": "r"}
    record["metadata"] = record  # e.g. `metadata: $run` in a spec
    with pytest.raises(ValueError, match="Circular reference detected"):
        rt.compact_encoder()(record)
    encode = rt.compact_encoder()
    with pytest.raises(ValueError):
        encode(record)
    assert encode({"after": "a failure"}) == '{"after":"a failure"}'  # nothing left over


def test_a_lone_surrogate_escapes_only_its_own_record_in_a_chunk(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_bytes(b"{}\n")
    src = rt.SourceFile(str(p))

    def map_source(src, st, emit):
        for i in range(300):
            emit({"record_type": "run", "id": f"r{i}", "name": "é\ud800" if i == 7 else "é"})

    out = io.BytesIO()
    rt.write_canonical(map_source, src, out)
    lines = out.getvalue().split(b"\n")
    assert lines[-1] == b"" and len(lines) == 302
    assert lines[7] == b'{"record_type":"run","id":"r7","name":"\\u00e9\\ud800"}'
    assert lines[6] == '{"record_type":"run","id":"r6","name":"é"}'.encode()
    assert json.loads(lines[300]) == {"record_type": "complete", "records": 300, "warnings": 0}


@pytest.mark.parametrize("records", [255, 511])
def test_no_blank_line_when_the_complete_record_fills_a_chunk(tmp_path, records):
    """255 records + ``complete`` = one full chunk of 256 lines, written as ``complete`` is
    emitted: the final flush has nothing left and must write nothing (it wrote a bare newline,
    a blank line at the end of the NDJSON, which ``RunResult.record_count`` failed on)."""
    p = tmp_path / "t.jsonl"
    p.write_bytes(b"{}\n")

    def map_source(src, st, emit):
        for i in range(records):
            emit({"record_type": "run", "id": f"r{i}"})

    out = io.BytesIO()
    rt.write_canonical(map_source, rt.SourceFile(str(p)), out)
    lines = out.getvalue().split(b"\n")
    assert len(lines) == records + 2 and lines[-1] == b"" and lines[-2].startswith(b'{"record_type":"complete"')


def test_lines_warn_with_the_line_number_and_keep_json_loads_messages(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_bytes(b'{"a":1}\n \t\x0b\x0c\n{"a":NaN}\n\xef\xbb\xbf{"a":2}\n')
    st = rt.MapState()
    with pytest.raises(rt.MappingError) as exc:
        list(rt.SourceFile(str(p)).lines(st))
    assert st.messages == ["source: line 3: non-finite number NaN read as null"]
    assert str(exc.value) == ("line 4: invalid JSON: "
                              "Unexpected UTF-8 BOM (decode using utf-8-sig) at column 1")
    st = rt.MapState()
    got = list(rt.SourceFile(str(p)).lines(st, "skip"))
    assert [(n, v) for n, v, _ in got] == [(1, {"a": 1}), (3, {"a": None})]
    assert st.warnings == 2


def _iso8601_by_fields(value, per_second=1):
    """The formatting jp_iso8601 used before it printed with isoformat()."""
    epoch = datetime(1970, 1, 1, tzinfo=timezone.utc)
    try:
        if isinstance(value, int):
            seconds, rest = divmod(value, per_second)
            moment = epoch + timedelta(seconds=seconds, microseconds=rest * 1_000_000 // per_second)
        elif isinstance(value, float):
            moment = epoch + timedelta(microseconds=value * 1_000_000 / per_second)
        else:
            moment = datetime.fromisoformat(value)
            moment = moment.replace(tzinfo=timezone.utc) if moment.tzinfo is None else moment.astimezone(timezone.utc)
    except (ValueError, OverflowError):
        return None
    text = (f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}"
            f"T{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}")
    return text + (f".{moment.microsecond:06d}" if moment.microsecond else "") + "Z"


def test_iso8601_prints_the_same_text_as_field_by_field_formatting():
    rng = random.Random(5)
    values = [rng.uniform(-7e10, 3e11) for _ in range(3000)] + [rng.randint(-10**12, 10**13) for _ in range(3000)]
    # half a microsecond either way (rounded half to even), a day's last instant, not finite
    values += [5e-7, 1.5e-6, 2.5e-6, -5e-7, -1.5e-6, 86399.9999995, 59.9999995, 1.0000005, 1e-7, -1e-7,
               float("nan"), float("inf"), -float("inf"), 2**63, -2**63, 10**30, -(10**30)]
    values += [0, 0.0, -1.5, 1e308, -62135596800, -62135596801, 253402300799, 253402300800, 1736000002.853,
               "2024-01-01T00:00:00", "2024-01-01T23:30:00-05:00", "0001-01-01T00:00:00+01:00",
               "9999-12-31T23:59:59-01:00", "2024-01-01 10:00:00.5+02:00", "0999-05-05", "not a date"]
    for unit, per_second in (("s", 1), ("ms", 1000), ("ns", 10**9)):
        for v in values:
            if isinstance(v, str) and unit != "s":
                continue
            assert jmespath_rt.jp_iso8601(v, unit) == _iso8601_by_fields(v, per_second), (v, unit)


def test_signals_written_as_text_are_the_bytes_their_records_encode_to(tmp_path):
    """write_canonical writes signals as text (event_writer's ``signal``, from the id text it
    kept for the event written last): the same bytes as the records collect_records keeps,
    encoded; values that are not written as text still are."""
    ns = runtime_names(mapping_runtime())  # every part of the runtime package mapc run uses
    values = ["x", 'é \u2028 "\\ \x00', "\ud800", 0, -5, 10**30, True, False, 2.5, -0.0, 1e16, 1e-07,
              1736000002.853, float("nan"), float("inf"), [1], {"a": 1}, None]
    trace = tmp_path / "t.jsonl"
    trace.write_text("{}\n")

    def map_source(src, st, emit):
        st.src, st.emit = src, emit  # as a generated map_source starts
        traj = {"record_type": "trajectory", "id": 'traj "é"', "group_id": "g"}
        ev = {"record_type": "event", "id": "evt@L1", "trajectory_id": traj["id"], "kind": "step"}
        for i, value in enumerate(values):
            unit = "ms" if i % 2 else None
            ns["put_signal"](st, traj, "score", value, "records.trajectory.signals", unit)
            ns["put_signal"](st, ev, f"s{i}", value, "records.events.rules[0].signals", unit)
            ns["event_signal"](st, ev["trajectory_id"], ev["id"], f"e{i}é", value,
                               "records.events.rules[0].signals.x", unit)
        # an event just written: its signals reuse the writer's text of its id and trajectory
        last = ns["event_record"](traj["id"], 0, 'evt "é"\\\x01', "step", None, None)
        ns["emit_event"](st, last, {"path": "t.jsonl"})
        for i, value in enumerate(values):
            ns["event_signal"](st, traj["id"], last["id"], f"k{i}\"", value,
                               "records.events.rules[0].signals.x", "u" if i % 2 else None)

    out = io.BytesIO()
    written = ns["write_canonical"](map_source, ns["SourceFile"](str(trace)), out)
    records, kept = ns["collect_records"](map_source, ns["SourceFile"](str(trace)))
    encode = ns["compact_encoder"]()
    ascii_encode = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode
    expected = [ns["encode_line"](encode(r), ascii_encode).decode() for r in records]
    lines = out.getvalue().decode().split("\n")[:-1]  # not splitlines(): U+2028 is in a value
    assert lines[:-1] == expected and len(expected) == 4 * 13 + 1  # 13 values, 4 signals each
    assert (written.warnings, written.messages) == (kept.warnings, kept.messages) and kept.warnings == 16
    assert lines[36].endswith('"value":1736000002.853}') and '"value":true}' in lines[18]


def test_events_written_as_text_are_the_bytes_their_records_encode_to(tmp_path):
    """write_canonical writes events from text kept between them (mapping_rt.event_writer):
    the same bytes as the records collect_records keeps, encoded, whatever the event holds."""
    ns = runtime_names(mapping_runtime())  # every part of the runtime package mapc run uses
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"a": 1}\n\n {"a": "é"}\r\n{"a": [1, {"b": null}]}\n')
    deep = []
    for _ in range(100_000):
        deep = [deep]

    def map_source(src, st, emit):
        st.src, st.emit = src, emit
        prev, other = None, {"path": "x.json", "pointer": "/samples/0"}
        for number, value, loc in src.lines(st):
            for k, (kind, ts, fields) in enumerate([
                ("message", None, {"input": {"role": "user", "content": value}}),
                ("tool", "2025-01-04T14:13:20Z", {"input": value, "output": [None, 1.5, True]}),
                ("step", None, {}),
                ("weird", 12, {"data": {"é": "\ud800", "n": 10**30}}),
            ]):
                tid = "t\"" if k % 2 else 'traj "é"'
                ev = ns["event_record"](tid, k, f"evt@L{number}.{k}", kind, ts, prev if k != 2 else "p")
                ev.update(fields)
                srcloc = other if k == 3 else loc
                prev = ns["emit_event"](st, ev, srcloc if k != 1 or number != 1 else None)
        ev = ns["event_record"]("t", 9, "deep", "message", None, prev)
        ev["input"] = deep
        ns["emit_event"](st, ev, {"path": "t.jsonl"})

    out = io.BytesIO()
    with pytest.raises(RecursionError):  # what the encoder raises for it, as before
        ns["write_canonical"](map_source, ns["SourceFile"](str(trace)), out)
    deep.clear()  # now it encodes
    out = io.BytesIO()
    ns["write_canonical"](map_source, ns["SourceFile"](str(trace)), out)
    records, _ = ns["collect_records"](map_source, ns["SourceFile"](str(trace)))
    encode = ns["compact_encoder"]()
    ascii_encode = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode
    expected = [ns["encode_line"](encode(r), ascii_encode) for r in records]
    assert out.getvalue().split(b"\n")[:-2] == expected and len(expected) == 13
    assert b'"source":{"path":"t.jsonl","line":3,"byte_offset":10,"byte_length":12}}' in expected[4]


def _written_and_collected(ns, map_source, trace):
    """``map_source`` run on ``trace`` by write_canonical (its lines, without the complete
    record) and by collect_records (the lines its records encode to), with both states and
    the records."""
    out = io.BytesIO()
    written = ns["write_canonical"](map_source, ns["SourceFile"](str(trace)), out)
    records, kept = ns["collect_records"](map_source, ns["SourceFile"](str(trace)))
    encode = ns["compact_encoder"]()
    ascii_encode = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode
    expected = [ns["encode_line"](encode(r), ascii_encode) for r in records]
    return out.getvalue().split(b"\n")[:-2], expected, written, records, kept

def test_events_put_writes_what_the_records_it_emits_encode_to(tmp_path):
    """TrajectoryEvents.put (one call an event, D82) as write_canonical writes it, as text,
    gives the bytes of the records it emits to collect_records, encoded: null fields left
    out, an empty layout object left out, metadata after the source, signals after their
    event; and the same warnings, at the rule's spec places."""
    ns = runtime_names(mapping_runtime())
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"a": 1}\n{"a": "é"}\n')

    def map_source(src, st, emit):
        st.src, st.emit = src, emit
        for tid in ('traj "é"', "t2"):
            events = ns["TrajectoryEvents"](st, tid, {"path": "x.json"}, remember=True, previous=True)
            for number, value, loc in src.lines(st):
                events.srcloc = loc
                events.put(f"evt@L{number}", "message", "records.events.rules[0]",
                           timestamp="2025-01-04 14:13:20", input=ns["nonempty"](role="user", content=value))
                events.put(f"evt@L{number}.1", "tool", "records.events.rules[1]", timestamp=12,
                           parent=f"evt@L{number}", output=None, data={"n": None, "v": [value]},
                           metadata={"k": value}, signals=(("s", value, "ms"), ("t", None, None),
                                                           ("u", [1], None), ("v", True, None)))
                events.put(f"evt@L{number}.2", "step", "records.events.rules[2]", parent="nope",
                           input=ns["nonempty"](role=None), output=ns["compact"](a=None))
                events.put(f"evt@L{number}.3", "log", events_parent={"x": 1}, parent_id="ignored")
            events.close()

    lines, expected, written, records, kept = _written_and_collected(ns, map_source, trace)
    # per line and trajectory: 4 events and signal v (s is an object, u an array: warned)
    assert lines == expected and len(expected) == 2 * 2 * (4 + 1)
    assert (written.warnings, written.messages) == (kept.warnings, kept.messages)
    first = [r for r in records if r["record_type"] == "event"][:4]
    assert first[0]["timestamp"] == "2025-01-04T14:13:20Z" and first[0]["sequence"] == 0
    assert first[1]["parent_id"] == "evt@L1" and "output" not in first[1] and "timestamp" not in first[1]
    assert list(first[1])[-3:] == ["data", "source", "metadata"] and first[1]["data"] == {"n": None, "v": [{"a": 1}]}
    assert "input" not in first[2] and first[2]["output"] == {} and "parent_id" not in first[2]
    assert "parent_id" not in first[3] and first[3]["sequence"] == 3
    assert any("records.events.rules[1].timestamp" in m for m in kept.messages)
    assert any("records.events.rules[2].parent" in m for m in kept.messages)
    assert any(m.startswith("records.events.parent") for m in kept.messages)
    assert any("records.events.rules[1].signals.u.value" in m for m in kept.messages)
    assert any("records.events.rules[1].signals.s.value" in m for m in kept.messages)


def test_events_put_full_writes_what_the_records_it_emits_encode_to(tmp_path):
    """TrajectoryEvents.put_full (D86) as write_canonical writes it gives the bytes of the
    records it emits to collect_records, encoded; its fields in the record's order (``raw``
    after the source, before the metadata: written as text too); its checks warn at the
    rule's places, in that order."""
    ns = runtime_names(mapping_runtime())
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"a": 1}\n{"a": "é"}\n')

    def map_source(src, st, emit):
        st.src, st.emit = src, emit
        events = ns["TrajectoryEvents"](st, "t", {"path": "x.json"}, remember=True, previous=True)
        for number, value, loc in src.lines(st):
            events.srcloc = loc
            events.put_full(f"evt@L{number}", "state", "records.events.rules[0]", timestamp="soon",
                            parent="nope", branch_id=number, alignment_key=["k"], state_hash="h",
                            input=value, context={"c": None}, raw=value, metadata="m",
                            signals=(("s", number, None),))
            events.put_full(f"evt@L{number}.1", "grader", "records.events.rules[1]", branch_id={"b": 1},
                            alignment_key="k", output=None, data=value, context=[1], metadata={"k": 1})
            events.put_full(f"evt@L{number}.2", "log", data=None, raw=None, metadata=ns["compact"](a=None))
            events.put_full(f"evt@L{number}.3", "obs", output={"o": value}, raw=f"line {number} é",
                            metadata={"m": [1.5, None]})
        events.close()

    lines, expected, written, records, kept = _written_and_collected(ns, map_source, trace)
    assert lines == expected and len(expected) == 2 * 5
    assert (written.warnings, written.messages) == (kept.warnings, kept.messages)
    lead = ["record_type", "id", "trajectory_id", "sequence", "kind"]
    assert [list(r) for r in records[:5]] == [
        lead + ["branch_id", "state_hash", "input", "context", "source", "raw"],
        ["record_type", "id", "trajectory_id", "event_id", "name", "value"],
        lead + ["parent_id", "alignment_key", "data", "source", "metadata"],
        lead + ["parent_id", "source", "raw", "metadata"],
        lead + ["parent_id", "output", "source", "raw", "metadata"],
    ]
    assert records[0]["branch_id"] == "1" and records[3]["raw"] is None and records[3]["metadata"] == {}
    assert [m.split(":")[0] for m in kept.messages[:7]] == [
        "records.events.rules[0].timestamp", "records.events.rules[0].parent",
        "records.events.rules[0].alignment_key", "records.events.rules[0].metadata",
        "records.events.rules[1].branch_id", "records.events.rules[1].context",
        "records.events.rules[0].timestamp"]

def test_a_raw_element_too_deep_for_the_writer_fails_as_its_record_does(tmp_path):
    """A raw event the event writer gives up (RecursionError) is emitted as its record
    (event_dict of the writer's ``(raw, metadata)``), whose encoding raises the encoder's
    error, as before D88; the same element, once encodable, is written as text."""
    ns = runtime_names(mapping_runtime())
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"a": 1}\n')
    deep = []
    for _ in range(100_000):
        deep = [deep]

    def map_source(src, st, emit):
        st.src, st.emit = src, emit
        events = ns["TrajectoryEvents"](st, "t", {"path": "x.json"})
        for number, value, loc in src.lines(st):
            events.srcloc = loc
            events.put_full(f"evt@L{number}", "obs", input=value, raw=deep, metadata={"m": 1})
        events.close()

    with pytest.raises(RecursionError):
        ns["write_canonical"](map_source, ns["SourceFile"](str(trace)), io.BytesIO())
    deep.clear()
    lines, expected, written, records, kept = _written_and_collected(ns, map_source, trace)
    assert lines == expected and records[0]["raw"] == [] and list(records[0])[-2:] == ["raw", "metadata"]


def test_function_local_imports_stay_local():
    # hashlib (OpenSSL), csv and gzip are imported by the few units that use them, so an
    # adapter's start-up does not load them: no runtime module imports them at its top
    import ast

    everything = set()
    for module in runtime.all_modules():
        tree = ast.parse(runtime.source_text(module))
        everything |= {alias.name for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))
                       for alias in node.names} | {node.module for node in tree.body
                                                   if isinstance(node, ast.ImportFrom) and node.level == 0}
    assert {"hashlib", "csv", "gzip"}.isdisjoint(everything), everything
    assert "json" in everything
    assert "import hashlib" not in runtime.extract(["coerce_id", "jp_stable_id"])[0]


SPEC = """\
mapc: 1
name: fast-paths
source:
  format: fast-paths
  container: jsonl
  probe: {require: [type]}
records:
  trajectory: {status: "'completed'", signals: {lines: {value: "`1`", unit: "'line'"}}}
  events:
    each: "@"
    where: "!hidden"
    parent: previous
    rules:
      - when: "type == 'skip'"
        skip: true
      - when: "type == 'msg'"
        kind: message
        role: role
        content: text
        timestamp: "iso8601(ts)"
      - when: "'tool' == type"
        kind: tool
        tool_name: name
        arguments: args
        signals: {latency: {value: ms, unit: "'ms'"}}
      - when: flag
        kind: log
        data: {flag: flag}
      - kind: error
        data: "@"
"""

TRACE = [
    {"type": "msg", "role": "user", "text": "hi", "ts": 1.5},
    {"type": "msg", "role": None, "text": None, "ts": "2024-01-01T00:00:00+02:00"},
    {"type": "skip"},
    {"type": "tool", "name": "search", "args": {"q": 1}, "ms": 12},
    {"type": "tool", "hidden": True},
    {"type": "other", "flag": 0},
    {"type": "other", "flag": []},
    {"type": ["msg"], "flag": ""},
    {"type": 1},
]


def _expected(trace, name):
    """The canonical records of SPEC for ``trace``, written out by hand."""
    tid = f"traj@{name}"
    out = [{"record_type": "run", "id": f"run@{name}"},
           {"record_type": "case", "id": f"case@{name}", "run_id": f"run@{name}"},
           {"record_type": "group", "id": f"group@{name}", "case_id": f"case@{name}"},
           {"record_type": "trajectory", "id": tid, "group_id": f"group@{name}", "status": "completed"}]
    previous = None
    offset = 0
    for number, el in enumerate(trace, start=1):
        line = json.dumps(el)
        start, offset = offset, offset + len(line) + 1
        if el.get("hidden") or el["type"] == "skip":
            continue
        ev = {"record_type": "event", "id": f"evt@L{number}", "trajectory_id": tid, "sequence": 0}
        signals = []
        if el["type"] == "msg":
            ev["kind"] = "message"
            ev["timestamp"] = jmespath_rt.jp_iso8601(el["ts"])
            content = {k: v for k, v in (("role", el["role"]), ("content", el["text"])) if v is not None}
            if content:
                ev["input"] = content
        elif el["type"] == "tool":
            ev["kind"] = "tool"
            ev["input"] = {"name": el["name"], "arguments": el["args"]}
            signals.append({"record_type": "signal", "id": f"evt@L{number}:latency", "trajectory_id": tid,
                            "event_id": f"evt@L{number}", "name": "latency", "value": el["ms"], "unit": "ms"})
        elif el.get("flag") is not None and el.get("flag") is not False and el.get("flag") not in ("", [], {}):
            # JMESPath truthiness: 0 is true
            ev["kind"] = "log"
            ev["data"] = {"flag": el["flag"]}
        else:
            ev["kind"] = "error"
            ev["data"] = el
        ev["sequence"] = sum(1 for r in out if r["record_type"] == "event")
        if previous is not None:
            ev["parent_id"] = previous
        ev["source"] = {"path": name, "line": number, "byte_offset": start, "byte_length": len(line)}
        previous = ev["id"]
        out += [ev] + signals
    out.append({"record_type": "signal", "id": f"{tid}:lines", "trajectory_id": tid, "name": "lines", "value": 1,
                "unit": "line"})
    return out


def test_generated_rules_read_the_tested_field_once_and_keep_jmespath_truthiness(tmp_path):
    (tmp_path / "spec.yaml").write_text(SPEC)
    spec, diags = load_spec(tmp_path / "spec.yaml")
    assert spec is not None, diags.items
    mapping = build_program(spec).mapping
    # `type` is read once; comparisons need no truthy(); `when: flag` still does (0 is true in JMESPath)
    assert "tested = " in mapping and "elif tested == 'msg':" in mapping and "elif tested == 'tool':" in mapping
    assert mapping.count(" truthy(") == 1 and "elif truthy(" in mapping
    assert "coerce_time" not in mapping  # iso8601() is RFC 3339 already
    assert "'ms'" in mapping and "coerce_nonempty_text" not in mapping  # constant units
    trace = tmp_path / "t.jsonl"
    trace.write_text("".join(json.dumps(el) + "\n" for el in TRACE))
    ns = mapping_namespace(spec)
    out = io.BytesIO()
    ns["write_canonical"](ns["map_source"], ns["SourceFile"](str(trace)), out, ns["MapState"]())
    got = [json.loads(line) for line in out.getvalue().splitlines()]
    assert got[:-1] == _expected(TRACE, "t.jsonl")
    assert got[-1] == {"record_type": "complete", "records": len(got) - 1, "warnings": 0}


def test_to_string_of_an_integer_is_what_json_dumps_writes():
    rng = random.Random(3)
    for value in [0, -1, 10**40, True, False, None, 2.5, 1e16] + [rng.randint(-10**20, 10**20) for _ in range(500)]:
        assert jmespath_rt.jp_to_string(value) == json.dumps(value, separators=(",", ":"), default=str)
