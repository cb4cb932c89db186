"""CSV sources and transparent gzip: the runtime units generated adapters carry.

End to end (every target's generated code on malformed CSV, gzip bombs, gzipped
fixtures) is in tests/security/test_hostile_traces.py; these pin the units.
"""

from __future__ import annotations

import gzip
import json

import pytest

from runtime_names import rt


def _src(tmp_path, name: str, data: bytes, **kw) -> rt.SourceFile:
    p = tmp_path / name
    p.write_bytes(data)
    return rt.SourceFile(str(p), **kw)


def _rows(src, columns=None, delimiter=",", invalid="error", st=None):
    return list(rt.csv_rows(src, st or rt.MapState(), columns or {}, delimiter, invalid))


TABLE = (b'\xef\xbb\xbfepisode,reward,done,steps,meta,note\r\n'
         b'e1,0.5,True,3.0,"{""k"": [1]}","a, b"\r\n'
         b"\r\n"
         b'e2,,false,,,"two\r\nlines"\r\n'
         b"e3,-1e3,1,7,null,\r\n")
TYPES = {"reward": "number", "done": "boolean", "steps": "integer", "meta": "json"}


def test_csv_rows_are_objects_with_typed_columns_and_exact_locations(tmp_path):
    src = _src(tmp_path, "t.csv", TABLE)
    got = _rows(src, TYPES)
    assert [v for _, v, _ in got] == [
        {"episode": "e1", "reward": 0.5, "done": True, "steps": 3, "meta": {"k": [1]}, "note": "a, b"},
        {"episode": "e2", "reward": None, "done": False, "steps": None, "meta": None, "note": "two\r\nlines"},
        {"episode": "e3", "reward": -1000.0, "done": True, "steps": 7, "meta": None, "note": ""},
    ]
    assert [line for line, _, _ in got] == [2, 4, 6]  # where each row starts; a blank line between
    for _, _, loc in got:  # offsets and lengths cover exactly the row's text, without its line end
        chunk = TABLE[loc["byte_offset"] : loc["byte_offset"] + loc["byte_length"]]
        assert chunk.startswith(b"e") and not chunk.endswith((b"\r", b"\n"))
        assert loc["path"] == "t.csv" and loc["line"] in (2, 4, 6)
    assert TABLE[got[1][2]["byte_offset"]:][:got[1][2]["byte_length"]].endswith(b'lines"')
    assert isinstance(got[2][1]["steps"], int) and isinstance(got[0][1]["reward"], float)


def test_csv_untyped_cells_stay_text_and_a_delimiter_can_be_chosen(tmp_path):
    src = _src(tmp_path, "t.tsv", b"a\tb\n1\t\n")
    assert [v for _, v, _ in _rows(src, delimiter="\t")] == [{"a": "1", "b": ""}]


@pytest.mark.parametrize(
    "data, columns, message",
    [
        (b"a,b\n1,2\n3\n", {}, "line 3: 1 fields, the header has 2"),
        (b"a,b\n1,2,3\n", {}, "line 2: 3 fields, the header has 2"),
        (b"a,b\n1,x\n", {"b": "number"}, "line 2: column b: 'x' is not a number"),
        (b"a,b\n1,nan\n", {"b": "number"}, "line 2: column b: 'nan' is not a number"),
        (b"a,b\n1,2.5\n", {"b": "integer"}, "line 2: column b: '2.5' is not an integer"),
        (b"a,b\n1,yes\n", {"b": "boolean"}, "line 2: column b: 'yes' is not true or false"),
        (b"a,b\n1,{x\n", {"b": "json"}, "line 2: column b: '{x' is not JSON"),
        (b"a,b\n1,2\n", {"c": "number"}, "line 1: source.columns names 'c', which is not in the header"),
        (b"a,a\n1,2\n", {}, "line 1: the header names column 'a' twice"),
        (b"a,,c\n1,2,3\n", {}, "line 1: the header's column 2 has no name"),
        (b'a,b\n1,"x\n2,3\n', {}, "line 2: not valid CSV"),
        (b'a,b\n1,"x"y\n', {}, "line 2: not valid CSV"),
        (b"a,b\n1,\xff\n", {}, "line 2: invalid UTF-8"),
        (b"a,b\n", {}, "source has a header row and no data rows"),
        (b"\n\n", {}, "source is empty"),
        (b"a,b\n1," + b"x" * 200 + b"\n", {}, "line 2: longer than 100 bytes"),
        (b'a,b\n1,"' + b"x\n" * 80 + b'"\n', {}, "a row longer than 100 bytes"),
    ],
)
def test_malformed_csv_raises_one_line_errors_with_the_line(tmp_path, data, columns, message):
    src = _src(tmp_path, "t.csv", data, max_line_bytes=100)
    with pytest.raises(rt.MappingError) as err:
        _rows(src, columns)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_bad_csv_rows_can_be_skipped_with_a_warning(tmp_path):
    src = _src(tmp_path, "t.csv", b"a,b\n1,2\n3\n4,x\n5,6\n")
    st = rt.MapState()
    assert [v["a"] for _, v, _ in _rows(src, {"b": "number"}, invalid="skip", st=st)] == ["1", "5"]
    assert st.warnings == 2 and st.messages[0].startswith("source: line 3: 1 fields")


@pytest.mark.parametrize("name", ["t.jsonl.gz", "t.jsonl"])  # by magic bytes, not by name
def test_gzipped_lines_stream_and_their_locations_leave_out_byte_offsets(tmp_path, name):
    src = _src(tmp_path, name, gzip.compress(b'{"a":1}\n\n{"a":2}\n'))
    got = list(src.lines(rt.MapState()))
    assert [(n, v, loc) for n, v, loc in got] == [
        (1, {"a": 1}, {"path": name, "line": 1}), (3, {"a": 2}, {"path": name, "line": 3})]


def test_gzipped_csv_and_document(tmp_path):
    csv_src = _src(tmp_path, "t.csv.gz", gzip.compress(b"a,b\n1,2\n"))
    assert _rows(csv_src, {"b": "number"}) == [(2, {"a": "1", "b": 2}, {"path": "t.csv.gz", "line": 2})]
    doc = _src(tmp_path, "t.json", gzip.compress(b'{"x": [1, 2]}'))
    assert doc.document(rt.MapState()) == {"x": [1, 2]}


def test_the_bounds_apply_to_the_decompressed_bytes(tmp_path):
    bomb = gzip.compress(b'{"x": "' + b"a" * (8 << 20) + b'"}')
    assert len(bomb) < 20_000  # a ratio above 400:1
    doc = _src(tmp_path, "d.json", bomb, max_bytes=1 << 20)
    with pytest.raises(rt.MappingError, match="source decompresses to more than 1048576 bytes"):
        doc.document(rt.MapState())
    lines = _src(tmp_path, "l.jsonl", bomb + gzip.compress(b"\n"), max_line_bytes=1 << 20)
    with pytest.raises(rt.MappingError, match="line 1: longer than 1048576 bytes"):
        list(lines.lines(rt.MapState()))
    table = _src(tmp_path, "t.csv", gzip.compress(b"a\n" + b"b" * (8 << 20) + b"\n"), max_line_bytes=1 << 20)
    with pytest.raises(rt.MappingError, match="line 2: longer than 1048576 bytes"):
        _rows(table)


@pytest.mark.parametrize("cut", [10, 25])
def test_a_corrupt_gzip_file_is_one_line_error(tmp_path, cut):
    data = gzip.compress(b'{"a":1}\n' * 100)
    src = _src(tmp_path, "t.jsonl", data[:cut])
    with pytest.raises(rt.MappingError, match="source is not a readable gzip file") as err:
        list(src.lines(rt.MapState()))
    assert "\n" not in str(err.value)


def _probe(path, container, required=(), csv_format=None, limit=65536):
    return rt.probe_source(str(path), container, limit, 8, required, None, 0.9, "f", ("x",),
                           csv_format)


def test_probe_reads_csv_rows_with_their_types(tmp_path):
    p = tmp_path / "t.csv"
    p.write_bytes(b"a,b\n1,2\n3,4\n")
    ok = _probe(p, "csv", (("a",),), ({"b": "number"}, ","))
    assert ok["supported"] and ok["reason"] == "2 row(s): found x"
    seen = []
    rt.probe_source(str(p), "csv", 65536, 8, (), lambda row: seen.append(row), 0.9, "f", (),
                    ({"b": "number"}, ","))
    assert seen == [{"a": "1", "b": 2}]  # the condition sees typed rows (and stops at a falsy one)
    assert _probe(p, "csv", (("c",),), ({}, ","))["reason"] == "missing field c"
    assert _probe(p, "csv", (), ({"b": "boolean"}, ","))["reason"] == "line 2: column b: '2' is not true or false"
    p.write_bytes(b"a,b\n1\n")
    assert _probe(p, "csv", (), ({}, ","))["reason"] == "line 2: 1 fields, the header has 2"


def test_probe_of_a_cut_csv_prefix_judges_the_whole_rows(tmp_path):
    p = tmp_path / "t.csv"
    p.write_bytes(b"a,b\n1,2\n3," + b"x" * 100 + b"\n")
    answer = _probe(p, "csv", (), ({}, ","), limit=20)
    assert answer["supported"] and answer["reason"].startswith("1 row(s)")
    p.write_bytes(b"a,b\n1,\"" + b"x" * 100 + b"\"\n")
    assert _probe(p, "csv", (), ({}, ","), limit=20)["reason"] == "no complete CSV row in the probed prefix"


def test_probe_reads_gzip_by_its_magic_bytes(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_bytes(gzip.compress(b'{"type": "x"}\n' * 3))
    assert _probe(p, "jsonl", (("type",),))["supported"]
    p.write_bytes(gzip.compress(json.dumps({"type": "x"}).encode()))
    assert _probe(p, "json", (("type",),))["supported"]
    p.write_bytes(gzip.compress(b"a,b\n1,2\n"))
    assert _probe(p, "csv", (("a",),), ({}, ","))["supported"]
    p.write_bytes(gzip.compress(b"x" * 1000)[:15])
    assert _probe(p, "jsonl")["reason"].startswith("source is not a readable gzip file")
