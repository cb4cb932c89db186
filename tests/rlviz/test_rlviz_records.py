"""Canonical record checks: RLViz's fixtures, and one broken stream per relational rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mapc.targets.rlviz.validator import records
from mapc.targets.rlviz.validator.records import RecordError, StreamChecker, check_stream
from shared_paths import RLVIZ_FIXTURES

FIXTURES = RLVIZ_FIXTURES


def _lines(*recs) -> bytes:
    return b"".join(json.dumps(r, separators=(",", ":")).encode() + b"\n" for r in recs)


def _base() -> list[dict]:
    """A small valid stream: two trajectories in one group, events, a signal, an artifact."""
    return [
        {"record_type": "run", "id": "r"},
        {"record_type": "case", "id": "c", "run_id": "r"},
        {"record_type": "group", "id": "g", "case_id": "c"},
        {"record_type": "trajectory", "id": "t1", "group_id": "g"},
        {"record_type": "trajectory", "id": "t2", "group_id": "g", "parent_id": "t1"},
        {"record_type": "event", "id": "e1", "trajectory_id": "t1", "sequence": 0, "kind": "message"},
        {"record_type": "event", "id": "e2", "trajectory_id": "t1", "sequence": 5, "kind": "tool", "parent_id": "e1"},
        {"record_type": "event", "id": "e3", "trajectory_id": "t2", "sequence": 0, "kind": "state",
         "context": {"provenance": "source_native", "retained_event_ids": ["e3x"]}},
        {"record_type": "signal", "id": "s1", "trajectory_id": "t1", "event_id": "e2", "name": "reward", "value": 1},
        {"record_type": "artifact", "id": "a1", "trajectory_id": "t1", "event_id": "e1", "media_type": "text/plain",
         "text": "hi"},
    ]


def _stream(recs: list[dict], complete: dict | None = None) -> bytes:
    done = complete if complete is not None else {"record_type": "complete", "records": len(recs), "warnings": 0}
    return _lines(*recs, done)


def _valid_base() -> list[dict]:
    recs = _base()
    del recs[7]["context"]  # e3 cannot refer to an unknown event in the valid version
    return recs


def test_base_stream_is_valid():
    summary = check_stream(_stream(_valid_base()))
    assert (summary.records, summary.warnings) == (10, 0)


@pytest.mark.parametrize("path", sorted((FIXTURES / "canonical").glob("*.ndjson")), ids=lambda p: p.name)
def test_rlviz_canonical_fixtures_pass(path):
    data = path.read_bytes()
    summary = check_stream(data)
    last = json.loads(data.splitlines()[-1])
    assert summary.records == last["records"] == len(data.splitlines()) - 1


# The context RLViz itself reports (the real rlviz-validate agrees, see tests/conformance): a line
# RLViz cannot decode carries its line number in the message only.
MALFORMED = {
    "complete-not-final.ndjson": dict(line=3, record_type="case", record_id="case-too-late", field=None),
    "duplicate-id.ndjson": dict(line=2, record_type="case", record_id="same-id", field="id"),
    "invalid-json.ndjson": dict(line=None, record_type=None, record_id=None, field=None),
    "out-of-order.ndjson": dict(line=6, record_type="event", record_id="evt-earlier", field="sequence"),
    "unknown-field.ndjson": dict(line=None, record_type=None, record_id=None, field=None),
    "unknown-parent.ndjson": dict(line=5, record_type="event", record_id="evt-orphan", field="parent_id"),
}


def test_every_malformed_fixture_has_an_expectation():
    assert sorted(p.name for p in (FIXTURES / "malformed").glob("*.ndjson")) == sorted(MALFORMED)


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_rlviz_malformed_fixtures_fail_with_the_right_context(name):
    with pytest.raises(RecordError) as caught:
        check_stream((FIXTURES / "malformed" / name).read_bytes())
    err = caught.value
    want = MALFORMED[name]
    assert (err.line, err.record_type, err.record_id, err.field) == (
        want["line"], want["record_type"], want["record_id"], want["field"])
    assert err.kind == "protocol"


def test_adversarial_fixture_is_valid_and_its_artifact_path_is_never_read(tmp_path):
    # Schema validity grants no permission to read the path: the checker must not touch it.
    data = (FIXTURES / "adversarial" / "untrusted-artifact-path.ndjson").read_bytes()
    assert check_stream(data, root=tmp_path).records == 6


def _mutate(edit):
    recs = _base()
    del recs[7]["context"]
    edit(recs)
    return recs


# (name, edit of the valid base stream, expected field, expected line); RLViz names no field for
# "belongs to another ..." rules, and no line context for a record it cannot decode
RELATIONAL = [
    ("duplicate id", lambda r: r[8].update(id="e1"), "id", 9),
    ("case before its run", lambda r: r[1].update(run_id="nope"), "run_id", 2),
    ("group of an unknown case", lambda r: r[2].update(case_id="nope"), "case_id", 3),
    ("trajectory of an unknown group", lambda r: r[3].update(group_id="nope"), "group_id", 4),
    ("trajectory parent that comes later", lambda r: r[3].update(parent_id="t2"), "parent_id", 4),
    ("trajectory parent in another group", lambda r: (
        r.insert(3, {"record_type": "group", "id": "g2", "case_id": "c"}), r[5].update(group_id="g2")), None, 6),
    ("event of an unknown trajectory", lambda r: r[5].update(trajectory_id="nope"), "trajectory_id", 6),
    ("event sequence not increasing", lambda r: r[6].update(sequence=0), "sequence", 7),
    ("negative sequence", lambda r: r[5].update(sequence=-1), "sequence", 6),
    ("event parent that comes later", lambda r: r[5].update(parent_id="e2"), "parent_id", 6),
    ("event parent in another trajectory", lambda r: r[7].update(parent_id="e1"), None, 8),
    ("signal on an event of another trajectory", lambda r: r[8].update(trajectory_id="t2"), None, 9),
    ("signal on an unknown event", lambda r: r[8].update(event_id="nope"), "event_id", 9),
    ("artifact on an event of another trajectory", lambda r: r[9].update(trajectory_id="t2"), None, 10),
    ("context list names a later event", lambda r: r[5].update(
        context={"provenance": "source_native", "dropped_event_ids": ["e2"]}), "context.dropped_event_ids", 6),
    ("context list names another trajectory's event", lambda r: r[7].update(
        context={"provenance": "source_native", "retained_event_ids": ["e1"]}), "context.retained_event_ids", 8),
    ("context event listed twice", lambda r: r[6].update(
        context={"provenance": "source_native", "retained_event_ids": ["e1"], "summarized_event_ids": ["e1"]}),
     "context.summarized_event_ids", 7),
    ("adapter-derived context without derivation", lambda r: r[5].update(
        context={"provenance": "adapter_derived", "input_tokens": 3}), "context.derivation", 6),
    ("artifact with two contents", lambda r: r[9].update(json={"a": 1}), None, 10),
    ("unknown field inside source", lambda r: r[5].update(source={"path": "x", "column": 3}), None, None),
]


@pytest.mark.parametrize("name,edit,field,line", RELATIONAL, ids=[r[0] for r in RELATIONAL])
def test_each_relational_rule_is_enforced(name, edit, field, line):
    recs = _mutate(edit)
    with pytest.raises(RecordError) as caught:
        check_stream(_stream(recs))
    assert (caught.value.field, caught.value.line) == (field, line), str(caught.value)


@pytest.mark.parametrize("complete,message", [
    ({"record_type": "complete", "records": 9, "warnings": 0}, "reports 9 records, decoded 10"),
    ({"record_type": "complete", "records": 10, "warnings": -1}, "warnings"),
])
def test_complete_count_must_be_exact(complete, message):
    with pytest.raises(RecordError) as caught:
        check_stream(_stream(_valid_base(), complete))
    assert message in str(caught.value)


def test_stream_without_complete_and_with_two_completes():
    with pytest.raises(RecordError, match="without a complete record"):
        check_stream(_lines(*_valid_base()))
    done = {"record_type": "complete", "records": 10, "warnings": 0}
    with pytest.raises(RecordError, match="final record") as caught:
        check_stream(_lines(*_valid_base(), done, done))
    assert caught.value.line == 12


@pytest.mark.parametrize("raw,message", [
    (b'{"record_type":"run","id":"r","name":NaN}', "invalid JSON"),
    (b"[1, 2]", "invalid JSON: json: cannot unmarshal array"),
    (b"null", "record_type is required"),
    (b'{"id":"r"}', "record_type is required"),
    (b'{"record_type":"span","id":"r"}', "unsupported record_type"),
    (b"   ", "blank records"),
])
def test_lines_rlviz_cannot_decode(raw, message):
    with pytest.raises(RecordError, match=message):
        check_stream(raw + b"\n")


@pytest.mark.parametrize("value", [0.0, 1e2, 2 ** 63, -(2 ** 63) - 1])
def test_integers_must_be_int64_literals(value):
    recs = _valid_base()
    recs[5]["sequence"] = value  # Go decodes sequence into int64: 0.0 and 2**63 are rejected
    with pytest.raises(RecordError, match="invalid event record: json: cannot unmarshal number"):
        check_stream(_stream(recs))


def test_crlf_lines_are_accepted_and_blank_lines_are_not():
    data = _stream(_valid_base())
    assert check_stream(data.replace(b"\n", b"\r\n")).records == 10
    with pytest.raises(RecordError, match="blank"):
        check_stream(data.replace(b"\n", b"\n\n", 1))


def test_record_size_limit(monkeypatch):
    monkeypatch.setattr(records, "MAX_RECORD_BYTES", 64)
    rec = {"record_type": "run", "id": "r", "name": "x" * 100}
    with pytest.raises(RecordError, match="exceeds maximum size"):
        check_stream(_lines(rec))


def test_timestamps_beyond_rfc3339_are_findings_and_fail_only_when_strict():
    recs = _valid_base()
    recs[0]["started_at"] = "2025-01-02 10:00:00"  # RLViz keeps any string; its schema says date-time
    summary = check_stream(_stream(recs))
    assert summary.findings.total == 1
    finding = summary.findings.kept[0]
    assert (finding.line, finding.record_type, finding.record_id, finding.field) == (1, "run", "r", "started_at")
    assert "RFC 3339" in finding.message
    with pytest.raises(RecordError) as caught:
        check_stream(_stream(recs), strict=True)
    assert (caught.value.field, caught.value.line, caught.value.beyond) == ("started_at", 1, True)


class TestProvenance:
    def _event(self, source):
        recs = _valid_base()
        recs[5]["source"] = source
        return _stream(recs)

    def test_source_inside_root_passes(self, tmp_path):
        (tmp_path / "trace.jsonl").write_bytes(b"0123456789")
        ok = self._event({"path": "trace.jsonl", "line": 1, "byte_offset": 2, "byte_length": 8})
        assert check_stream(ok, root=tmp_path).records == 10

    @pytest.mark.parametrize("source,field", [
        ({"path": "missing.jsonl"}, "source.path"),
        ({"path": "../outside.jsonl"}, "source.path"),
        ({"path": "trace.jsonl", "byte_offset": 4, "byte_length": 7}, "source.byte_length"),
        ({"path": "trace.jsonl", "byte_offset": 11}, "source.byte_offset"),
    ])
    def test_bad_source_locations_are_provenance_failures(self, tmp_path, source, field):
        root = tmp_path / "root"
        root.mkdir()
        (root / "trace.jsonl").write_bytes(b"0123456789")
        (tmp_path / "outside.jsonl").write_bytes(b"x")
        with pytest.raises(RecordError) as caught:
            check_stream(self._event(source), root=root)
        assert (caught.value.field, caught.value.kind) == (field, "provenance")

    def test_symlink_escaping_the_root_is_caught(self, tmp_path):
        root = tmp_path / "root"
        root.mkdir()
        (tmp_path / "secret").write_bytes(b"x" * 20)
        (root / "link.jsonl").symlink_to(tmp_path / "secret")
        with pytest.raises(RecordError, match="escapes registered root"):
            check_stream(self._event({"path": "link.jsonl"}), root=root)

    def test_without_a_root_locations_are_not_resolved(self):
        assert check_stream(self._event({"path": "/nowhere/at/all.jsonl", "byte_offset": 10 ** 9})).records == 10


def test_checker_counts_records_incrementally():
    checker = StreamChecker()
    for raw in _stream(_valid_base()).splitlines():
        checker.add_line(raw)
    assert checker.finish().records == 10


# -- beyond RLViz: exactly the published schema, on the records RLViz accepts --------------------------------
PRELUDE = [
    {"record_type": "run", "id": "r"},
    {"record_type": "case", "id": "c", "run_id": "r"},
    {"record_type": "group", "id": "g", "case_id": "c"},
    {"record_type": "trajectory", "id": "t", "group_id": "g"},
    {"record_type": "event", "id": "e0", "trajectory_id": "t", "sequence": 0, "kind": "log"},
]
TEMPLATES = {
    "run": {"record_type": "run", "id": "r2", "name": "n", "started_at": "2025-01-02T03:04:05Z", "metadata": {}},
    "case": {"record_type": "case", "id": "c2", "run_id": "r", "name": "n", "input": {"q": 1}},
    "group": {"record_type": "group", "id": "g2", "case_id": "c", "name": "n"},
    "trajectory": {"record_type": "trajectory", "id": "t2", "group_id": "g", "parent_id": "t", "branch_id": "b",
                   "status": "completed", "termination": "done"},
    "event": {"record_type": "event", "id": "e1", "trajectory_id": "t", "sequence": 3, "kind": "tool",
              "timestamp": "2025-01-02T03:04:05.5+01:00", "parent_id": "e0", "alignment_key": "k", "state_hash": "h",
              "source": {"path": "trace.jsonl", "line": 1, "byte_offset": 0, "byte_length": 2},
              "context": {"provenance": "adapter_derived", "derivation": "d", "operation": "compaction",
                          "input_tokens": 5, "input_tokens_before": 9, "capacity": 10,
                          "retained_event_ids": ["e0"], "summary": "s"}},
    "signal": {"record_type": "signal", "id": "s1", "trajectory_id": "t", "event_id": "e0", "name": "reward",
               "value": 1, "unit": "points"},
    "artifact": {"record_type": "artifact", "id": "a1", "trajectory_id": "t", "event_id": "e0", "name": "n",
                 "media_type": "text/plain", "text": "hi", "sha256": "0" * 64},
    "complete": {"record_type": "complete", "records": 5, "warnings": 0},
}
ODD_VALUES = [None, "", " ", "x" * 513, "yesterday", "2025-01-02T03:04:05Z", "running", "finished", "compaction",
              0, -1, 1.5, True, [], ["e0"], [""], {}, {"path": "trace.jsonl"}, "AB" * 32]


@st.composite
def perturbed_records(draw):
    rtype = draw(st.sampled_from(sorted(TEMPLATES)))
    rec = json.loads(json.dumps(TEMPLATES[rtype]))
    for _ in range(draw(st.integers(0, 3))):
        target = rec
        if rtype == "event" and draw(st.booleans()):
            nested = draw(st.sampled_from(["source", "context"]))
            if isinstance(rec.get(nested), dict):
                target = rec[nested]
        action = draw(st.sampled_from(["set", "drop", "extra", "case"]))
        keys = sorted(target)
        if action == "drop" and keys:
            target.pop(draw(st.sampled_from(keys)))
        elif action == "set" and keys:
            target[draw(st.sampled_from(keys + ["json", "path", "text", "branch_id"]))] = draw(st.sampled_from(ODD_VALUES))
        elif action == "extra":
            target[draw(st.sampled_from(["extra", "Name", "ID"]))] = "x"
        elif action == "case" and keys:
            key = draw(st.sampled_from(keys))
            target[key.upper()] = target.pop(key)
    return rtype, rec


@settings(max_examples=400, deadline=None, derandomize=True)
@given(perturbed_records())
def test_beyond_rlviz_findings_are_exactly_the_schema_verdict(case):
    """On every record RLViz accepts, mapc reports a beyond-RLViz finding iff RLViz's published schema
    rejects it (the schema itself, through jsonschema, is the reference)."""
    rtype, rec = case
    line = json.dumps(rec, separators=(",", ":")).encode()
    checker = StreamChecker()
    for prior in PRELUDE:
        checker.add_line(json.dumps(prior).encode())
    try:
        checker.add_line(line)
    except RecordError:
        return  # RLViz rejects it: nothing beyond RLViz to compare
    mine = [f for f in checker.findings.kept if f.line == len(PRELUDE) + 1]
    schema = list(records.schema_validator("canonical-record").iter_errors(json.loads(line)))
    assert bool(mine) == bool(schema), (rec, [f.message for f in mine], [e.message for e in schema][:3])


# -- RLViz's Go decoder, where it reads JSON differently from Python (checked against the real RLViz too) ------
def _with_event(*raw: bytes) -> bytes:
    head = b"".join(json.dumps(r, separators=(",", ":")).encode() + b"\n" for r in PRELUDE)
    done = b'{"record_type":"complete","records":%d,"warnings":0}\n' % (len(PRELUDE) + len(raw))
    return head + b"".join(line + b"\n" for line in raw) + done


@pytest.mark.parametrize("lines", [
    [b'{"record_type":"event","ID":"e1","trajectory_id":"t","sequence":1,"kind":"log"}'],  # keys fold
    ['{"record_type":"event","id":"e1","trajectory_id":"t","sequence":1,"\u212aind":"log"}'.encode()],  # Kelvin
    [b'{"Record_Type":"event","id":"e1","trajectory_id":"t","kind":"log","sequence":1}'],
    [b'{"record_type":"event","id":"e1","id":null,"trajectory_id":"t","sequence":1,"kind":"log"}'],  # null: no-op
    [b'{"record_type":"event","id":"e1","trajectory_id":"t","sequence":1,"kind":"log",'
     b'"source":{"path":"x"},"source":{"line":2}}'],  # the two sources merge into one with a path
    [b'{"record_type":"event","id":"e1","trajectory_id":"t","sequence":1,"kind":"log","metadata":{"x":'
     + b"[" * 9998 + b"]" * 9998 + b"}}"],  # 10000 levels in all
    [b'{"record_type":"event","id":"e1","trajectory_id":"t","sequence":1,"kind":"log","data":' + b"7" * 5000 + b"}"],
    [b'{"record_type":"signal","id":"s","trajectory_id":"t","name":"n","value":1e400}'],
    [b'{"record_type":"event","id":"a\xe2\x82","trajectory_id":"t","sequence":1,"kind":"log"}',
     b'{"record_type":"event","id":"a\xff","trajectory_id":"t","sequence":2,"kind":"log"}'],  # 2 U+FFFD vs 1
], ids=["ID", "kelvin-sign", "Record_Type", "null-after-id", "sources-merge", "depth-10000", "huge-integer",
        "signal-1e400", "truncated-utf8"])
def test_rlviz_accepts(lines):
    assert check_stream(_with_event(*lines)).records == len(PRELUDE) + len(lines)


@pytest.mark.parametrize("lines,message", [
    ([b'{"record_type":"event","id":"a\\ud800","trajectory_id":"t","sequence":1,"kind":"log"}',
      b'{"record_type":"event","id":"a\\udc00","trajectory_id":"t","sequence":2,"kind":"log"}'], "duplicate id"),
    ([b'{"record_type":"event","id":"a\xff","trajectory_id":"t","sequence":1,"kind":"log"}',
      b'{"record_type":"event","id":"a\xfe","trajectory_id":"t","sequence":2,"kind":"log"}'], "duplicate id"),
    ([b'{"record_type":"event","id":"e1","trajectory_id":"t","sequence":1,"kind":"log","metadata":{"x":'
      + b"[" * 9999 + b"]" * 9999 + b"}}"], "exceeded max depth"),
    ([b'{"record_type":"event","id":"e1","trajectory_id":"t","sequence":1,"ki_nd":"log"}'], "unknown field"),
    ([b'{"record_type":"event","id":"e1","trajectory_id":"t","sequence":1,"kind":"log",'
      b'"source":{"path":"x","line":9223372036854775808}}'], "cannot unmarshal number"),
])
def test_rlviz_rejects(lines, message):
    with pytest.raises(RecordError, match=message):
        check_stream(_with_event(*lines))


def test_a_nul_in_a_source_path_is_a_provenance_failure(tmp_path):
    line = b'{"record_type":"event","id":"e1","trajectory_id":"t","sequence":1,"kind":"log","source":{"path":"a\\u0000b"}}'
    with pytest.raises(RecordError) as caught:
        check_stream(_with_event(line), root=tmp_path)
    assert (caught.value.kind, caught.value.field) == ("provenance", "source.path")
