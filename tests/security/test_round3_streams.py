"""Issue 28, items 8 and 9: bounded input and output in generated adapters and `mapc run`.

Item 8: a gzip source is bounded by ``source.max_bytes`` on its decompressed bytes, as a
plain file is on its size (a 5 MB gzip of 2 GiB of short lines ran for ever); an RLViz
adapter stops before its output passes what RLViz reads (32 MiB of stdout, 8 MiB a record)
with one line on stderr, and `mapc run`, whose stdout is the user's, has no output bound
(D96). Item 9: a streamed JSON document skips the members the mapping does not read
without building them, bounds what it reads at once by ``source.max_line_bytes``, and
streams gzipped documents too (D97). Bytes, errors and tracemalloc peaks are asserted,
never times.
"""

from __future__ import annotations

import gzip
import io
import json
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest

import hosts
from mapc.pipeline.build import build, mapping_namespace
from runtime_names import rt
from mapc.spec import load_spec
from mapc.targets.rlviz.validator.validate import ValidationFailure, validate

ROOT = Path(__file__).resolve().parents[2]
MiB = 1 << 20
RLVIZ_STDOUT, RLVIZ_RECORD = 32 * MiB, 8 * MiB
LINE = b'{"type":"user","text":"hi"}\n'

JSONL_SPEC = """\
mapc: 1
name: bounds-jsonl
description: One event per line, for the bounds tests.
source:
  format: bounds-events
  container: jsonl
  max_bytes: {max_bytes}
  probe: {{require: [type]}}
records:
  events:
    each: "@"
    rules:
      - kind: message
        role: "'user'"
        content: text
fixtures: [fixture.jsonl]
"""

JSON_SPEC = """\
mapc: 1
name: bounds-json
description: An eval log, its samples streamed, for the bounds tests.
source:
  format: bounds-log
  container: json
  max_line_bytes: {max_line_bytes}
  probe: {{require: [eval.task]}}
records:
  run: {{name: eval.task}}
  case:
    each: samples
    id: "to_string(id)"
    input: input
  events:
    each: messages
    rules:
      - kind: message
        role: role
        content: content
fixtures: [fixture.json]
"""


def _project(folder: Path, template: str, fixture: tuple[str, bytes], **bounds) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / fixture[0]).write_bytes(fixture[1])
    spec = folder / "spec.yaml"
    spec.write_text(template.format(**bounds), encoding="utf-8")
    return spec


@pytest.fixture(scope="module")
def jsonl_plugin(tmp_path_factory) -> tuple[Path, Path]:
    """(spec, RLViz adapter) of a JSON Lines spec that reads at most 1 MiB."""
    base = tmp_path_factory.mktemp("bounds-jsonl")
    spec = _project(base / "spec", JSONL_SPEC, ("fixture.jsonl", LINE * 3), max_bytes=MiB)
    result = build(spec, "rlviz", base / "plugin", validate=False)
    assert result.ok, [d.format() for d in result.diagnostics]
    return spec, base / "plugin"


@pytest.fixture(scope="module")
def jsonl_default_plugin(tmp_path_factory) -> tuple[Path, Path]:
    """(spec, RLViz adapter) of the same spec with the default bounds (1 GiB)."""
    base = tmp_path_factory.mktemp("bounds-jsonl-default")
    spec = _project(base / "spec", JSONL_SPEC, ("fixture.jsonl", LINE * 3), max_bytes=1 << 30)
    result = build(spec, "rlviz", base / "plugin", validate=False)
    assert result.ok, [d.format() for d in result.diagnostics]
    return spec, base / "plugin"


def _eval_log(samples: list[dict], before: bytes = b"", after: bytes = b"") -> bytes:
    """An eval log; ``before`` and ``after``: members (``"name": value,``) around the array."""
    return (b'{"eval": {"task": "t"}, ' + before + b'"samples": ' + json.dumps(samples).encode()
            + (b", " + after if after else b"") + b"}")


SAMPLES = [{"id": i, "input": f"q{i}", "messages": [{"role": "user", "content": f"hi {i}"}]} for i in range(3)]


@pytest.fixture(scope="module")
def json_plugin(tmp_path_factory) -> tuple[Path, Path]:
    """(spec, RLViz adapter) of an eval-log spec whose elements may be at most 1 MiB."""
    base = tmp_path_factory.mktemp("bounds-json")
    spec = _project(base / "spec", JSON_SPEC, ("fixture.json", _eval_log(SAMPLES)), max_line_bytes=MiB)
    result = build(spec, "rlviz", base / "plugin", validate=False)
    assert result.ok, [d.format() for d in result.diagnostics]
    return spec, base / "plugin"


def _stream(plugin: Path, source: Path, tmp: Path) -> subprocess.CompletedProcess:
    """`python3 adapter.py stream --request PATH` as RLViz runs it."""
    request = tmp / f"{source.name}.request.json"
    request.write_text(json.dumps({
        "api_version": "rlviz.dev/v1alpha1", "operation": "stream",
        "source": {"path": str(source), "root": str(source.parent), "kind": "file"}, "limits": {},
    }), encoding="utf-8")
    return subprocess.run([sys.executable, "-I", "-S", str(plugin / "adapter.py"), "stream", "--request", str(request)],
                          cwd=plugin, capture_output=True, stdin=subprocess.DEVNULL, timeout=300)


def _mapc_run(spec: Path, source: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mapc.cli", "run", str(spec), str(source)], cwd=ROOT,
                          capture_output=True, stdin=subprocess.DEVNULL, timeout=300)


def _records(stdout: bytes) -> list[dict]:
    """Every line of a stream, decoded (each must be whole JSON)."""
    assert stdout == b"" or stdout.endswith(b"\n")
    return [json.loads(line) for line in stdout.splitlines()]


def _one_error_line(stderr: bytes, *words: str) -> str:
    text = stderr.decode()
    assert text.count("\n") == 1 and text.startswith("error: "), text[-2000:]
    for word in words:
        assert word in text, text
    return text


def _gzip_bomb(path: Path, size: int) -> None:
    """``size`` bytes of short valid lines, gzipped (a few KB)."""
    with gzip.open(path, "wb", compresslevel=9) as fh:
        block = LINE * (MiB // len(LINE))
        for _ in range(size // len(block)):
            fh.write(block)


# -- item 8: input --------------------------------------------------------------------------------
def test_item8_gzip_bomb_stops_at_input_bound(tmp_path, jsonl_plugin):
    spec, plugin = jsonl_plugin
    bomb = tmp_path / "bomb.jsonl"
    _gzip_bomb(bomb, 16 * MiB)  # 16 MiB of lines; the spec reads at most 1 MiB
    assert bomb.stat().st_size < 64 << 10
    # in process: the reader stops right past the bound
    src = rt.SourceFile(str(bomb), None, MiB)
    seen = 0
    with pytest.raises(rt.MappingError, match="source decompresses to more than 1048576 bytes; .*"
                                              "hint: raise source.max_bytes"):
        for _ in src.lines(rt.MapState()):
            seen += 1
    assert seen * len(LINE) <= MiB
    # the generated adapter: exit 1, one line, whole records, never `complete`
    run = _stream(plugin, bomb, tmp_path)
    assert run.returncode == 1
    _one_error_line(run.stderr, "decompresses to more than 1048576 bytes", "source.max_bytes")
    records = _records(run.stdout)
    assert all(r["record_type"] != "complete" for r in records)
    assert sum(r["record_type"] == "event" for r in records) <= MiB // len(LINE)
    # `mapc run`: the same bound, the same line
    done = _mapc_run(spec, bomb)
    assert done.returncode == 1
    assert b"decompresses to more than 1048576 bytes" in done.stderr and b"Traceback" not in done.stderr
    assert all(r["record_type"] != "complete" for r in _records(done.stdout))


def test_item8_csv_and_document_gzip_bombs_stop_at_input_bound(tmp_path):
    table = tmp_path / "rows.csv"
    with gzip.open(table, "wb") as fh:
        fh.write(b"a,b\n" + b"1,2\n" * (4 * MiB // 4))
    with pytest.raises(rt.MappingError, match="decompresses to more than 1048576 bytes"):
        list(rt.csv_rows(rt.SourceFile(str(table), None, MiB), rt.MapState(), {}, ","))
    doc = tmp_path / "doc.json"
    with gzip.open(doc, "wb") as fh:
        fh.write(b'{"eval": 1, "samples": [' + b'"abcdefgh", ' * (4 * MiB // 12) + b"1]}")
    tracemalloc.start()
    try:
        with pytest.raises(rt.MappingError, match="decompresses to more than 1048576 bytes"):
            src = rt.SourceFile(str(doc), None, MiB)
            list(rt.streamed_elements(src.streamed_document(rt.MapState(), "samples", ("eval",)), "samples", 0))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * MiB, peak


def test_item8_plain_file_over_max_bytes_is_refused_before_reading(tmp_path):
    trace = tmp_path / "big.jsonl"
    trace.write_bytes(LINE * (MiB // len(LINE) + 1))
    src = rt.SourceFile(str(trace), None, MiB)
    lines = src.lines(rt.MapState())
    with pytest.raises(rt.MappingError, match=r"source is \d+ bytes; this adapter reads at most 1048576; "
                                              "hint: raise source.max_bytes"):
        next(lines)


# -- item 8: output --------------------------------------------------------------------------------
def _big_lines(path: Path, count: int, text_bytes: int) -> None:
    with open(path, "wb") as fh:
        for i in range(count):
            fh.write(b'{"type":"user","text":"%d %s"}\n' % (i, b"x" * text_bytes))


def test_item8_output_stops_at_host_limit(tmp_path, jsonl_default_plugin):
    _, plugin = jsonl_default_plugin
    trace = tmp_path / "wide.jsonl"
    _big_lines(trace, 40, MiB)  # 40 events of 1 MiB: more than RLViz's 32 MiB of stdout
    run = _stream(plugin, trace, tmp_path)
    assert run.returncode == 1
    # whole lines of protocol up to the limit, never past it, and no `complete`
    assert RLVIZ_STDOUT - (MiB + 200) < len(run.stdout) <= RLVIZ_STDOUT
    records = _records(run.stdout)
    assert all(r["record_type"] != "complete" for r in records)
    _one_error_line(run.stderr, f"the output would pass RLViz's limit of 33554432 bytes: stopped after "
                                f"{len(records)} records", "hint:")


def test_item8_record_over_host_limit_is_not_written(tmp_path, jsonl_default_plugin):
    _, plugin = jsonl_default_plugin
    trace = tmp_path / "one-big.jsonl"
    trace.write_bytes(LINE + b'{"type":"user","text":"' + b"y" * (9 * MiB) + b'"}\n')
    run = _stream(plugin, trace, tmp_path)
    assert run.returncode == 1
    _one_error_line(run.stderr, "(event 'evt@L2')", "RLViz reads at most 8388608 bytes a record")
    assert len(run.stdout) < MiB and all(r["record_type"] != "complete" for r in _records(run.stdout))


def test_item8_output_limit_is_exact():
    """Exactly the limit is written whole; a byte more stops the stream before it is written."""

    def mapping(count):
        def map_source(src, st, emit):
            for i in range(count):
                emit({"record_type": "run", "id": f"r{i:04d}"})
        return map_source

    whole = io.BytesIO()
    rt.write_canonical(mapping(300), None, whole, rt.MapState())
    size, last = len(whole.getvalue()), whole.getvalue().splitlines()[-1]
    out = io.BytesIO()
    rt.write_canonical(mapping(300), None, out, rt.MapState(), (size, len(last), "Host"))
    assert out.getvalue() == whole.getvalue()
    for limits in ((size - 1, len(last), "Host"), (size, len(last) - 1, "Host")):
        out = io.BytesIO()
        with pytest.raises(rt.MappingError, match="Host"):
            rt.write_canonical(mapping(300), None, out, rt.MapState(), limits)
        assert len(out.getvalue()) <= limits[0] and whole.getvalue().startswith(out.getvalue())
        assert b"complete" not in out.getvalue()


def test_item8_rlviz_fails_the_run_with_the_adapters_line(tmp_path, jsonl_default_plugin):
    """The real RLViz (and mapc's validator, which must agree) fail the stream on the exit
    status and show the adapter's one line: partial output is never taken as a stream."""
    real = hosts.require_rlviz()
    _, plugin = jsonl_default_plugin
    trace = tmp_path / "wide.jsonl"
    _big_lines(trace, 40, MiB)
    done = subprocess.run([str(real), "--json", str(plugin), str(trace)], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=300)
    assert done.returncode == 1, done.stdout
    verdict = json.loads(done.stderr)
    assert verdict["phase"] == "stream" and verdict["kind"] == "execution" and verdict["pass"] == 1, verdict
    assert "exit status 1: error: the output would pass RLViz's limit of 33554432 bytes" in verdict["error"]
    assert "adapter stdout exceeded" not in verdict["error"]  # stopped by the adapter, not cut by RLViz
    with pytest.raises(ValidationFailure) as failure:
        validate(plugin, trace)
    mine = failure.value.payload()
    assert {k: mine.get(k) for k in verdict} == verdict


def test_item8_mapc_run_writes_past_rlviz_limit(tmp_path, jsonl_default_plugin):
    """D96: `mapc run` writes to the user's stdout, not to a host: no output bound."""
    spec, _ = jsonl_default_plugin
    trace = tmp_path / "wide.jsonl"
    _big_lines(trace, 40, MiB)
    done = _mapc_run(spec, trace)
    assert done.returncode == 0, done.stderr[-2000:]
    assert len(done.stdout) > RLVIZ_STDOUT and _records(done.stdout)[-1]["record_type"] == "complete"


# -- item 9: JSON documents ---------------------------------------------------------------------------
def _peak(action) -> int:
    """tracemalloc's peak while ``action()`` runs (its result is dropped)."""
    tracemalloc.start()
    try:
        action()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _streamed(path: Path, max_line_bytes: int = 64 * MiB, key: str = "samples", needed=("eval",), keep=True):
    """(needed members, elements) of a streamed document, as generated code reads it (without
    ``keep``: the number of elements, each dropped once read)."""
    src = rt.SourceFile(str(path), None, 1 << 30, max_line_bytes)
    src.stream_above = 0
    doc = src.streamed_document(rt.MapState(), key, needed)
    got = rt.streamed_elements(doc, key, 0)
    elements = None if got is None else list(got) if keep else sum(1 for _ in got)
    return {k: doc[k] for k in needed if k in doc}, elements


def test_item9_unread_field_is_skipped_not_built(tmp_path):
    nested = b"[" + b",".join([b'{"k": [1, 2.5, "x", {"y": null}]}'] * 80_000) + b"]"  # 2.6 MB
    text = b'"' + b"abcdefgh" * (4 * MiB) + b'"'  # 32 MiB
    path = tmp_path / "log.json"
    path.write_bytes(_eval_log(SAMPLES, before=b'"plan": ' + nested + b", ", after=b'"log": ' + text
                               + b', "more": ' + nested))
    assert path.stat().st_size > 36 * MiB
    got = []
    # built, the unread members peaked at 118 MiB; skipped, at what a window or two holds
    assert _peak(lambda: got.append(_streamed(path))) < 40 * MiB
    assert got == [({"eval": {"task": "t"}}, SAMPLES)]
    # and they are checked as json.loads checks them
    path.write_bytes(_eval_log(SAMPLES, after=b'"log": ' + text[:-1] + b'\x01"'))
    with pytest.raises(rt.MappingError, match=r"invalid JSON: Invalid control character at line 1 column \d+"):
        _streamed(path)


def test_item9_element_size_bound(tmp_path):
    big = {"id": 9, "input": "z" * (3 * MiB), "messages": []}
    path = tmp_path / "log.json"
    path.write_text(json.dumps({"eval": {"task": "t"}, "samples": [*SAMPLES, big]}))
    message = (r"line 1 column \d+: element 3 of 'samples' is longer than 1048576 characters; .*"
               r"bounded by source.max_line_bytes; hint: raise source.max_line_bytes in the spec and rebuild")
    with pytest.raises(rt.MappingError, match=message):
        _streamed(path, max_line_bytes=MiB)
    # it stops at the bound: what it held is about the bound, never the element
    path.write_text(json.dumps({"eval": {"task": "t"}, "samples": [{"id": 1, "input": "z" * (40 * MiB)}]}))

    def refuse():
        with pytest.raises(rt.MappingError, match="is longer than 1048576 characters"):
            _streamed(path, max_line_bytes=MiB)

    assert _peak(refuse) < 8 * MiB
    # within the bound, the same element is read whole (and as json.loads reads it)
    path.write_text(json.dumps({"eval": {"task": "t"}, "samples": [*SAMPLES, big]}))
    assert _streamed(path, max_line_bytes=4 * MiB) == ({"eval": {"task": "t"}}, [*SAMPLES, big])


def test_item9_a_member_the_mapping_reads_is_bounded_too(tmp_path):
    path = tmp_path / "log.json"
    path.write_text(json.dumps({"eval": {"task": "t", "notes": "n" * (2 * MiB)}, "samples": SAMPLES}))
    with pytest.raises(rt.MappingError, match="member 'eval' is longer than 1048576 characters"):
        _streamed(path, max_line_bytes=MiB)


def test_item9_a_document_of_another_shape_is_checked_not_built(tmp_path):
    path = tmp_path / "log.json"
    path.write_text(json.dumps([{"k": [i, "x"]} for i in range(100_000)]))  # an array, not an object

    def refuse():
        with pytest.raises(rt.MappingError, match="the document is an array of more than 1048576 characters"):
            _streamed(path, max_line_bytes=MiB)

    assert _peak(refuse) < 40 * MiB


def test_item9_gzipped_document_streams(tmp_path):
    samples = [{"id": i, "messages": [{"role": "user", "content": "c" * 200}]} for i in range(30_000)]
    plain = tmp_path / "log.json"
    plain.write_bytes(_eval_log(samples))
    packed = tmp_path / "log.json.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    opened = rt.JsonDocumentReader.opened
    assert _streamed(packed) == ({"eval": {"task": "t"}}, samples)
    assert rt.JsonDocumentReader.opened == opened + 1
    assert _peak(lambda: _streamed(packed, keep=False)) < _peak(lambda: json.loads(plain.read_bytes())) / 4


def test_item9_the_generated_adapter_keeps_both_bounds(tmp_path, json_plugin):
    spec, plugin = json_plugin
    expected = _stream(plugin, spec.parent / "fixture.json", tmp_path)
    assert expected.returncode == 0, expected.stderr
    # an unread member of 20 MiB after the array: the same records (ids name the file)
    log = tmp_path / "fixture.json"
    log.write_bytes(_eval_log(SAMPLES, after=b'"unread": "' + b"u" * (20 * MiB) + b'"'))
    run = _stream(plugin, log, tmp_path)
    assert run.returncode == 0, run.stderr
    mine = [{k: v for k, v in r.items() if k != "source"} for r in _records(run.stdout)]
    assert mine == [{k: v for k, v in r.items() if k != "source"} for r in _records(expected.stdout)]
    # an element over the spec's max_line_bytes (1 MiB): one line, exit 1
    log.write_text(json.dumps({"eval": {"task": "t"}, "samples": [*SAMPLES, {"id": 7, "input": "z" * (2 * MiB)}]}))
    run = _stream(plugin, log, tmp_path)
    assert run.returncode == 1
    _one_error_line(run.stderr, "element 3 of 'samples' is longer than 1048576 characters", "source.max_line_bytes")
    assert all(r["record_type"] != "complete" for r in _records(run.stdout))
    done = _mapc_run(spec, log)
    assert done.returncode == 1 and b"element 3 of 'samples' is longer than 1048576" in done.stderr


def test_item9_state_per_sample_is_as_documented(tmp_path):
    """docs/performance.md: each sample that is a new case (its group and trajectory too) keeps
    86 to 162 bytes of id bookkeeping: 16-byte slots for the case and group ids, a 32-byte slot
    for the trajectory, in tables filled 42.5-85%, and the last event's id (about 10 bytes)."""
    spec, _ = load_spec(ROOT / "bench" / "eval_log" / "spec.yaml")
    ns = mapping_namespace(spec)
    sample = ('{"id":%d,"epoch":1,"input":"q","target":"a","messages":[{"role":"user","content":"hi"}],'
              '"scores":{"match":{"value":"C"}},"total_time":1.5}')
    count = 60_000
    path = tmp_path / "log.json"
    path.write_text('{"version":2,"eval":{"task":"t"},"samples":[' + ",".join(sample % i for i in range(count))
                    + "]}")
    st = ns["MapState"]()
    src = ns["SourceFile"](str(path), None, ns["MAX_BYTES"], ns["MAX_LINE_BYTES"])
    ns["write_canonical"](ns["map_source"], src, io.BytesIO(), st)
    assert len(st.levels) == 2 * count + 1 and len(st.trails.table) == count  # and the run
    held = sum(len(a) * a.itemsize for a in (st.levels._slots, st.trails.table._slots)) + len(st.trails.arena)
    assert 86 * count < held < 162 * count, held / count
