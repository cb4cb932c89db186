"""Runtime units that generated adapters carry: reading sources, ids, coercions, probing."""

from __future__ import annotations

import io
import json
import os

import pytest

from runtime_names import rt


def _src(tmp_path, name: str, data: bytes, **kw) -> rt.SourceFile:
    p = tmp_path / name
    p.write_bytes(data)
    return rt.SourceFile(str(p), **kw)


def test_lines_stream_with_offsets_bom_crlf_and_blank_lines(tmp_path):
    data = b'\xef\xbb\xbf{"a":1}\r\n\n   \n{"a":2}\n{"a":3}'
    src = _src(tmp_path, "t.jsonl", data)
    st = rt.MapState()
    got = list(src.lines(st))
    assert [(n, v["a"]) for n, v, _ in got] == [(1, 1), (4, 2), (5, 3)]
    # byte offsets/lengths point at exactly the JSON text of each line
    for _, value, loc in got:
        chunk = data[loc["byte_offset"] : loc["byte_offset"] + loc["byte_length"]]
        assert json.loads(chunk) == value
        assert loc["path"] == "t.jsonl"


@pytest.mark.parametrize(
    "data, message",
    [
        (b'{"a":1}\n{"a":\n', "line 2: invalid JSON"),
        (b'{"a":1}\n\xff\xfe\n', "line 2: invalid UTF-8"),
        (b"", "source is empty"),
        (b"\n \n", "source is empty"),
        (b'{"a":"' + b"x" * 200 + b'"}\n', "line 1: longer than 100 bytes"),
    ],
)
def test_malformed_lines_raise_one_line_errors(tmp_path, data, message):
    src = _src(tmp_path, "t.jsonl", data, max_line_bytes=100)
    with pytest.raises(rt.MappingError) as err:
        list(src.lines(rt.MapState()))
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_invalid_lines_can_be_skipped_with_a_warning(tmp_path):
    src = _src(tmp_path, "t.jsonl", b'{"a":1}\nnot json\n{"a":2}\n')
    st = rt.MapState()
    assert [v["a"] for _, v, _ in src.lines(st, invalid="skip")] == [1, 2]
    assert st.warnings == 1 and "line 2" in st.messages[0]


def test_nan_and_infinity_become_null_with_warnings(tmp_path):
    src = _src(tmp_path, "t.json", b'{"a": NaN, "b": [Infinity, -Infinity], "c": 1}')
    st = rt.MapState()
    assert src.document(st) == {"a": None, "b": [None, None], "c": 1}
    assert st.warnings == 3


def test_source_must_be_a_regular_file_inside_its_root(tmp_path):
    with pytest.raises(rt.MappingError, match="directory"):
        rt.SourceFile(str(tmp_path))
    with pytest.raises(rt.MappingError, match="not found"):
        rt.SourceFile(str(tmp_path / "missing.json"))
    outside = tmp_path / "outside.json"
    outside.write_text("{}")
    root = tmp_path / "root"
    root.mkdir()
    (root / "link.json").symlink_to(outside)
    with pytest.raises(rt.MappingError, match="outside its root"):
        rt.SourceFile(str(root / "link.json"), root=str(root))


def test_document_size_bound_and_deep_nesting(tmp_path):
    src = _src(tmp_path, "big.json", b"[" + b"1," * 100 + b"1]", max_bytes=50)
    with pytest.raises(rt.MappingError, match="at most 50"):
        src.document(rt.MapState())
    deep = _src(tmp_path, "deep.json", b"[" * 100000 + b"]" * 100000)
    with pytest.raises(rt.MappingError, match="nested too deeply"):
        deep.document(rt.MapState())


def test_siblings_are_found_next_to_the_source_only(tmp_path):
    (tmp_path / "run.metadata.json").write_text('{"env": "x"}')
    src = _src(tmp_path, "run.results.jsonl", b"{}\n")
    st = rt.MapState()
    assert src.sibling(st, ("metadata.json", "{stem}.metadata.json")) is None  # stem is run.results
    (tmp_path / "run.results.metadata.json").write_text('{"env": "y"}')
    assert src.sibling(st, ("metadata.json", "{stem}.metadata.json")) == {"env": "y"}
    (tmp_path / "metadata.json").write_text("{broken")
    assert src.sibling(st, ("metadata.json",)) is None and st.warnings == 1


@pytest.mark.parametrize(
    "text, expected",
    [
        ('{"a": 1, "b": [1, 2', {"a": 1, "b": [1]}),  # "2" may be the start of "25"
        ('{"a": 1, "b": "unfinished', {"a": 1}),
        ('{"a": {"x": tr', {"a": {}}),
        ('[{"id": 1}, {"id": 2}, {"id"', [{"id": 1}, {"id": 2}, {}]),
        ('{"n": 12', {}),  # a number cut off may continue
    ],
)
def test_parse_prefix_closes_truncated_documents(text, expected):
    value, complete = rt.parse_prefix(text)
    assert value == expected and complete is False


def test_parse_prefix_rejects_non_json():
    for text in ("hello", '{"a" 1}', "", "{} {}"):
        with pytest.raises(ValueError):
            rt.parse_prefix(text)
    assert rt.parse_prefix('{"a": 1}') == ({"a": 1}, True)


def test_probe_reads_only_a_prefix_and_explains(tmp_path):
    p = tmp_path / "doc.json"
    p.write_text(json.dumps({"version": 2, "eval": {"task": "t"}, "samples": ["x" * 1000] * 100}))
    answer = rt.probe_source(str(p), "json", 200, 8, (("version",), ("eval", "task")), None, 0.9, "fmt", ("version", "eval.task"))
    assert answer == {"supported": True, "confidence": 0.9, "format": "fmt", "reason": "the document: found version, eval.task"}
    answer = rt.probe_source(str(p), "json", 200, 8, (("missing",),), None, 0.9, "fmt", ())
    assert answer["supported"] is False and "missing" in answer["reason"]
    j = tmp_path / "rows.jsonl"
    j.write_text("\n".join(json.dumps({"type": "m", "i": i}) for i in range(1000)))
    ok = rt.probe_source(str(j), "jsonl", 300, 4, (("type",),), lambda v: v["i"] < 4, 0.8, "rows", ("type",))
    assert ok["supported"] and ok["reason"].startswith("4 line(s)")
    assert rt.probe_source(str(tmp_path), "jsonl", 300, 4, (), None, 0.8, "rows", ())["supported"] is False


def test_level_records_dedupe_and_rename_on_collision():
    st = rt.MapState()
    assert st.level("case", {"id": "c1"}, "run") is True
    assert st.level("case", {"id": "c1"}, "run") is False  # the same case again
    rec = {"id": "c1"}
    assert st.level("trajectory", rec, "g1") is True  # another record with that id
    assert rec["id"] == "c1~2" and st.warnings == 1


def test_native_event_ids_are_made_unique_and_parents_checked():
    st = rt.MapState()
    assert st.native_event_id("e1", "w") == "e1"
    assert st.native_event_id("e1", "w") == "e1~2"
    st.remember_event("t", "e1")
    assert st.parent_event("t", "e1", "w") == "e1"
    assert st.parent_event("t", "e9", "w") is None and st.warnings == 2


@pytest.mark.parametrize(
    "fn, value, expected, warns",
    [
        (rt.coerce_id, 7, "7", 0),
        (rt.coerce_id, "", None, 1),
        (rt.coerce_id, {"a": 1}, None, 1),
        (rt.coerce_text, 1.5, "1.5", 0),
        (rt.coerce_text, [1], None, 1),
        (rt.coerce_time, "2024-01-02T03:04:05Z", "2024-01-02T03:04:05Z", 0),
        (rt.coerce_time, "2024-01-02 03:04:05", "2024-01-02T03:04:05Z", 0),
        (rt.coerce_time, "2024-01-02T03:04:05.123-04:00", "2024-01-02T03:04:05.123-04:00", 0),
        (rt.coerce_time, "yesterday", None, 1),
        (rt.coerce_time, 1700000000, None, 1),
        (rt.coerce_status, "done", None, 1),
        (rt.coerce_scalar, {"x": 1}, None, 1),
        (rt.coerce_scalar, False, False, 0),
        (rt.coerce_artifact_path, "../etc/passwd", None, 1),
        (rt.coerce_artifact_path, "out/file.txt", "out/file.txt", 0),
        (rt.coerce_sha256, "ABC", None, 1),
    ],
)
def test_coercions(fn, value, expected, warns):
    st = rt.MapState()
    assert fn(st, value, "w") == expected
    assert st.warnings == warns


def test_long_ids_are_hashed():
    st = rt.MapState()
    out = rt.coerce_id(st, "x" * 600, "w")
    assert out.startswith("h-") and len(out) == 66 and st.warnings == 1


def test_write_canonical_ends_with_complete_only_on_success(tmp_path):
    src = _src(tmp_path, "t.jsonl", b"{}\n")

    def ok_map(src, st, emit):
        emit({"record_type": "run", "id": "r"})
        st.warn("x", "y")

    out = io.BytesIO()
    rt.write_canonical(ok_map, src, out)
    lines = [json.loads(x) for x in out.getvalue().splitlines()]
    assert lines[-1] == {"record_type": "complete", "records": 1, "warnings": 1}

    def failing_map(src, st, emit):
        for i in range(300):
            emit({"record_type": "run", "id": f"r{i}"})
        raise rt.MappingError("boom")

    out = io.BytesIO()
    with pytest.raises(rt.MappingError):
        rt.write_canonical(failing_map, src, out)
    assert b'"complete"' not in out.getvalue()


def test_lone_surrogates_are_written_escaped(tmp_path):
    src = _src(tmp_path, "t.jsonl", b"{}\n")
    out = io.BytesIO()
    rt.write_canonical(lambda s, st, emit: emit({"record_type": "run", "id": "\ud800"}), src, out)
    first = out.getvalue().splitlines()[0]
    first.decode("utf-8")  # valid UTF-8
    assert b"\\ud800" in first


def test_one_line_never_spans_lines():
    for exc in (rt.MappingError("a"), RecursionError(), MemoryError(), OSError(2, "No such file"),
                ValueError("Out of range float values are not JSON compliant"), KeyError("x\ny")):
        assert "\n" not in rt.one_line(exc)


def test_truthiness_follows_jmespath():
    assert [rt.truthy(v) for v in (0, "x", [0], {"a": 1}, True)] == [True] * 5
    assert [rt.truthy(v) for v in (None, False, "", [], {})] == [False] * 5


@pytest.mark.parametrize(
    "line",
    [b'  {"a": 1}', b'{"a": 1}   ', b'{"a": 1} x', b'{"a": 1}  \t y', b'[1, 2', b'"str"', b"1e5", b"{} {}", b"\t"],
)
def test_line_decoding_matches_json_loads(tmp_path, line):
    """The line reader's fast decoder accepts, rejects and locates errors like json.loads."""
    src = _src(tmp_path, "t.jsonl", b'{"first": true}\n' + line + b"\n")
    text = line.decode()
    try:
        expected = json.loads(text)
        err = None
    except json.JSONDecodeError as exc:
        assert exc.lineno == 1  # one line of the file: its column is the place
        at = ("" if exc.msg.endswith(" at") else "at ") + f"column {exc.colno}"
        expected, err = None, f"line 2: invalid JSON: {exc.msg} {at}"
    if not text.strip():
        assert [v for _, v, _ in src.lines(rt.MapState())] == [{"first": True}]
        return
    if err is None:
        assert [v for _, v, _ in src.lines(rt.MapState())][1] == expected
    else:
        with pytest.raises(rt.MappingError) as got:
            list(src.lines(rt.MapState()))
        assert str(got.value) == err
