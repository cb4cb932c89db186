"""JSON documents read one array element at a time give what parsing them whole gives.

``JsonDocumentReader`` (mapc/runtime/mapping_rt.py) is checked against
``json.loads`` value for value and error for error, with buffers cut at every
place; the generated mapping is checked byte for byte on every example,
library spec and corpus trace with streaming forced on (tiny buffers) and off;
``mapc.analysis.streaming.stream_plan`` says which specs stream and why the others do not.
"""

from __future__ import annotations

import io
import json
import os
import sys
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs
from shared_paths import CORPUS

from mapc.pipeline.build import mapping_namespace, run_mapping
from runtime_names import rt
from mapc.spec import load_spec
from mapc.analysis.streaming import FLATTEN, PLAIN, PROJECT, stream_plan

ROOT = Path(__file__).resolve().parents[2]
SPECS = sorted([*ROOT.glob("examples/*/spec.yaml"), *ROOT.glob("specs/*.yaml"), *ROOT.glob("bench/*/spec.yaml")])


def _elements(value, mode):
    """What the loop's expression gives for a document parsed whole."""
    if not isinstance(value, list):
        return None
    if mode == PLAIN:
        return list(value)
    if mode == PROJECT:
        return [v for v in value if v is not None]
    return [x for v in value for x in (v if isinstance(v, list) else [v]) if x is not None]


def _whole(path, key, needed, mode):
    st = rt.MapState()
    try:
        doc = rt.SourceFile(str(path)).document(st)
    except rt.MappingError as exc:
        return "error", str(exc)
    value = doc if key is None else doc.get(key) if isinstance(doc, dict) else None
    rest = {k: doc[k] for k in needed if k in doc} if isinstance(doc, dict) else None
    return "ok", rest, _elements(value, mode), st.warnings


def _streamed(path, key, needed, mode, chunk, monkeypatch):
    monkeypatch.setattr(rt.JsonDocumentReader, "CHUNK", chunk)
    st = rt.MapState()
    try:
        src = rt.SourceFile(str(path))
        src.stream_above = 0
        doc = src.streamed_document(st, key, needed)
        rest = {k: doc[k] for k in needed if k in doc} if isinstance(doc, dict) else None
        got = rt.streamed_elements(doc, key, mode)
        if got is None:
            value = doc if key is None else doc.get(key) if isinstance(doc, dict) else None
            elements = _elements(value, mode)
        else:
            elements = list(got)
    except rt.MappingError as exc:
        return "error", str(exc)
    return "ok", rest, elements, st.warnings


PAD = "a" * 200  # a string longer than the buffer when the reader starts it (tiny chunks below)
DOCUMENTS = [
    '{"eval": {"a": 1}, "samples": [1, 2.5e10, "x", {"b": [1, 2]}, null, [3, null]], "after": 1}',
    '{"samples": [1, 2], "eval": 3}',  # the member the mapping reads comes after the array
    '{"samples": [1, 2], "eval": 3, "samples": {"x": 1}}',  # the last member counts
    '{"eval": 3, "samples": {"x": 1}}',
    '{"eval": 3}',
    "[1, 2]",
    "  ",
    '{"eval": NaN, "samples": [NaN, Infinity, 1]}',
    '{"eval": 1, "samples": [1, 2,]}',
    '{"eval": 1, "samples": [1 2]}',
    '{"eval": 1, "samples": [1, 2]',
    '{"eval": 1, "samples": [1, 2]} x',
    '{"eval": 1, "samples": [1, 2], }',
    '{"eval": 1, "samples": [1, "abc',
    '{"eval": 1, "samples": [1, 12345678901234567890123',
    '{"eval": 1, "samples": [\n {"a": 1},\n {"a": tru}\n]}',
    '{"eval": 1, "samples": []}',
    '{"eval": 1, "samples": [ ] , "z": [ ] }',
    "{}",
    '{"eval": 1 "samples": []}',
    '{"eval": 1, "samples": ["\\ud800", "caf\u00e9 \u4e2d \\u00e9\\n"]}',
    '{"eval": 1, "samples": [1e5, -0, 0.1e-2, 10000000000000000000000000000000000000, -1.5E+3]}',
    '{"eval": 1, "samples": [' + "9" * 5000 + "]}",
    '{"eval": 1, "samples": [1]}\n{"eval": 2, "samples": []}\n',  # JSON Lines read as a document: a hint
    '{"eval": 1, "samples": [' + "[" * 5000 + "]" * 5000 + "]}",
    # members the mapping does not read are skipped, not built: checked as json.loads checks them
    '{"eval": 1, "x": "' + PAD + 'abc\\u00e9\\n\\"q\\/", "samples": [1, "a\\u00e9\\\\b"], "y": "ok \\ud800"}',
    '{"eval": 1, "samples": [1], "y": "' + PAD + 'bad \\x escape"}',
    '{"eval": 1, "samples": [1], "y": "' + PAD + 'control \x01 character"}',
    '{"eval": 1, "samples": [1], "y": "' + PAD + 'bad \\u12G4 escape"}',
    '{"eval": 1, "samples": [1], "y": "' + PAD + 'cut \\u12',
    '{"eval": 1, "samples": [1], "y": "' + PAD + 'cut \\',
    '{"eval": 1, "samples": [1], "y": "' + PAD + 'unterminated',
    '{"x": [[1, {"a": [NaN, {"b": "c"}]}], {}, []], "eval": 1, "samples": [2], "z": {"k": [1, -Infinity]}}',
    '{"eval": 1, "samples": [2], "z": {"k": [1 2]}}',
    '{"x": {"a" 1}, "eval": 1, "samples": []}',
    '{"x": {1: 2}, "eval": 1, "samples": []}',
    '{"x": {"a": 1,}, "eval": 1, "samples": []}',
    '{"x": [1,,2], "eval": 1, "samples": []}',
    '{"x": [1, 2,], "eval": 1, "samples": []}',
    '{"x": [tru], "eval": 1, "samples": []}',
    '{"x": {"a": [1, {"b": ',
    '{"x": {"' + PAD + 'k": 1, "' + PAD + '\x01": 2}, "eval": 1, "samples": []}',
    '{"x": {"' + PAD + 'k" 1}, "eval": 1, "samples": []}',
    '{"x": ' + "[" * 5000 + "]" * 5000 + ', "eval": 1, "samples": []}',
    '{"x": ' + '[{"a": ' * 300 + "1" + "}]" * 300 + ', "eval": 1, "samples": [' + "[" * 300 + "]" * 300 + "]}",
    '{"eval": 1, "samples": [{"long": "' + "ab\\n" * 300 + '", "n": ' + "7" * 300 + "}]}",
]
RAW_DOCUMENTS = [
    b'\xef\xbb\xbf{"eval":1,"samples":[1,2]}',
    b'{"eval":1,"samples":["ab\xffc"]}',
    b'\xef\xbb\xbf{"eval":1,"samples":["\xe2\x82"]}',
    b'{"eval":1,"samples":["\xe2\x82\xac\xf0\x9f\x98\x80"]}',
]


@pytest.mark.parametrize("data", [d.encode() for d in DOCUMENTS] + RAW_DOCUMENTS)
@pytest.mark.parametrize("mode", [PLAIN, FLATTEN, PROJECT])
def test_the_reader_gives_what_json_loads_gives(tmp_path, monkeypatch, data, mode):
    path = tmp_path / "doc.json"
    path.write_bytes(data)
    expected = _whole(path, "samples", ("eval",), mode)
    for chunk in (1, 2, 3, 7, 100, 1 << 20):
        assert _streamed(path, "samples", ("eval",), mode, chunk, monkeypatch) == expected, chunk


@pytest.mark.parametrize("data", [b'[1, {"a": [2]}, null, "x"]', b"[]", b'[1, 2] x', b"[1, 2", b'{"a": 1}', b"7"])
def test_a_document_that_is_an_array_streams_itself(tmp_path, monkeypatch, data):
    path = tmp_path / "doc.json"
    path.write_bytes(data)
    expected = _whole(path, None, (), PLAIN)
    for chunk in (1, 5, 1 << 20):
        assert _streamed(path, None, (), PLAIN, chunk, monkeypatch) == expected


def test_a_member_repeated_after_the_streamed_array_is_refused_not_guessed(tmp_path, monkeypatch):
    path = tmp_path / "doc.json"
    path.write_text('{"eval": 3, "samples": [1, 2], "samples": [3]}')
    got = _streamed(path, "samples", ("eval",), PLAIN, 4, monkeypatch)
    assert got == ("error", "the document repeats its member 'samples' after the array 'samples'; this "
                            "adapter reads 'samples' one element at a time and cannot tell which one counts")


_json = hs.recursive(
    hs.none() | hs.booleans() | hs.integers() | hs.floats(allow_nan=False) | hs.text(max_size=8),
    lambda inner: hs.lists(inner, max_size=4) | hs.dictionaries(hs.text(max_size=4), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=30, deadline=None)
@given(
    before=hs.dictionaries(hs.sampled_from(["eval", "x"]), _json, max_size=2),
    samples=hs.lists(_json, max_size=6),
    after=hs.dictionaries(hs.sampled_from(["eval", "y", "z"]), _json, max_size=2),
    indent=hs.sampled_from([None, 1]),
    chunk=hs.integers(1, 40),
    cut=hs.integers(0, 400),
)
def test_any_document_or_any_prefix_of_it_reads_as_json_loads_reads_it(
        tmp_path_factory, before, samples, after, indent, chunk, cut):
    members = [json.dumps(k) + ": " + json.dumps(v, indent=indent) for k, v in before.items()]
    members.append('"samples": ' + json.dumps(samples, indent=indent))
    members += [json.dumps(k) + ": " + json.dumps(v, indent=indent) for k, v in after.items()]
    text = "{" + ",\n ".join(members) + "}"
    path = tmp_path_factory.mktemp("doc") / "doc.json"
    mp = pytest.MonkeyPatch()
    try:
        for data in (text, text[: cut % (len(text) + 1)]):
            path.write_text(data, encoding="utf-8")
            for mode in (PLAIN, FLATTEN):
                expected = _whole(path, "samples", ("eval",), mode)
                got = _streamed(path, "samples", ("eval",), mode, chunk, mp)
                if "eval" in after and data == text and expected[0] == "ok":
                    continue  # a needed member after the array: read in a second pass (checked below)
                if "eval" in before and "eval" in after and got[0] == "error" and "repeats" in got[1]:
                    continue  # a needed member repeated after the array: refused (tested above)
                assert got == expected
    finally:
        mp.undo()


def test_members_after_the_array_are_read_first_by_a_second_pass(tmp_path, monkeypatch):
    path = tmp_path / "doc.json"
    path.write_text('{"samples": [{"n": NaN}, 2], "eval": {"t": Infinity}, "tail": [1]}')
    expected = _whole(path, "samples", ("eval",), PLAIN)
    assert expected == ("ok", {"eval": {"t": None}}, [{"n": None}, 2], 2)
    assert _streamed(path, "samples", ("eval",), PLAIN, 3, monkeypatch) == expected


# -- the generated mapping ---------------------------------------------------------------------
def _sources() -> list[Path]:
    fixtures = []
    for path in SPECS:
        spec, _ = load_spec(path)
        fixtures += [Path(f.resolved) for f in spec.fixtures]
    corpus = [p for p in CORPUS.glob("*/*") if p.is_file() and p.suffix != ".md"]
    return sorted(p for p in set(fixtures + corpus) if p.suffix not in (".jsonl", ".csv"))  # documents


def _streaming_specs():
    out = []
    for path in SPECS:
        spec, _ = load_spec(path)
        if stream_plan(spec).plan is not None:
            out.append(spec)
    return out


def _map(spec, ns, source: Path) -> tuple:
    out = io.BytesIO()
    ok, error, st = run_mapping(spec, source, out, ns=ns)
    return ok, error, st.warnings, out.getvalue()


def _runtime_of(ns):
    """The globals of the runtime module a mapping program's ``SourceFile`` lives in, and the
    JSON document reader class (in a module of its own, which ``stream`` imports on the
    first document: D79)."""
    document = ns["__builtins__"]["__import__"]("mapc_runtime.document", fromlist=["JsonDocumentReader"])
    return ns["SourceFile"].__init__.__globals__, document.JsonDocumentReader


def test_every_streaming_spec_maps_every_fixture_and_corpus_trace_to_the_same_bytes(monkeypatch):
    specs = _streaming_specs()
    names = {Path(s.file).parent.name if Path(s.file).name == "spec.yaml" else Path(s.file).stem for s in specs}
    assert {"inspect-ai-eval-log", "tau2-bench-results", "tau-bench-historical", "eval_log"} <= names
    sources = _sources()
    mapped = streams = 0
    for spec in specs:
        ns = mapping_namespace(spec)
        runtime, reader = _runtime_of(ns)
        monkeypatch.setattr(reader, "CHUNK", 61)  # buffers cut everywhere
        for source in sources:
            monkeypatch.setitem(runtime, "STREAM_ABOVE_BYTES", 1 << 40)
            whole = _map(spec, ns, source)
            monkeypatch.setitem(runtime, "STREAM_ABOVE_BYTES", 0)
            before = reader.opened
            streamed = _map(spec, ns, source)
            assert streamed == whole, (spec.file, source)
            mapped += whole[0]
            streams += reader.opened > before
    assert mapped >= 12  # each spec maps its own traces, not only errors
    assert streams >= mapped  # and the streamed runs did read through JsonDocumentReader


def test_the_generated_code_streams_where_the_plan_says(tmp_path):
    from mapc.pipeline.build import mapping_source

    spec, _ = load_spec(ROOT / "bench/eval_log/spec.yaml")
    text = mapping_source(spec)
    assert "doc = source.streamed_document(state, 'samples', ('eval', 'version'))" in text
    assert "elements = streamed_elements(element, 'samples', 0) or iterate(" in text
    spec, _ = load_spec(ROOT / "specs/harbor-atif.yaml")
    assert "streamed_document" not in mapping_source(spec).split("def map_source", 1)[1]


def test_memory_does_not_grow_with_a_streamed_document(tmp_path, monkeypatch):
    spec, _ = load_spec(ROOT / "bench/eval_log/spec.yaml")
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import traces
    finally:
        sys.path.remove(str(ROOT / "bench"))
    ns = mapping_namespace(spec)
    runtime, reader = _runtime_of(ns)
    monkeypatch.setattr(reader, "CHUNK", 64 << 10)
    monkeypatch.setitem(runtime, "STREAM_ABOVE_BYTES", 0)
    peaks, sizes = {}, {}
    for events in (1200, 4800):
        path = tmp_path / f"log-{events}.json"
        _, sizes[events] = traces.write_eval_log(path, events)
        with open(os.devnull, "wb") as sink:
            tracemalloc.start()
            try:
                ok, error, _ = run_mapping(spec, path, sink, ns=ns)
                peaks["streamed", events] = tracemalloc.get_traced_memory()[1]
            finally:
                tracemalloc.stop()
        assert ok, error
    assert sizes[4800] > 1 << 20
    # about one element, a buffer, 256 lines out, and the id tables' first 192 KiB (D79)
    assert peaks["streamed", 4800] < sizes[4800] / 2 + (192 << 10), peaks
    # 4x the document: memory grows by the id bookkeeping of the extra trajectories only (parsed
    # whole, it would grow by several times the extra bytes)
    grown, extra = peaks["streamed", 4800] - peaks["streamed", 1200], sizes[4800] - sizes[1200]
    assert grown < 0.3 * extra, (peaks, sizes)


# -- which specs stream, and saying so -----------------------------------------------------------
_SPEC = """\
mapc: 1
name: stream-check
source:
  format: stream-check
  container: json
  probe: {{require: [version]}}
records:
  run:
    name: {run_name}
  case:
    each: "{each}"
    id: "to_string(id)"
{case_extra}
  events:
    each: messages
    rules:
      - kind: message
        role: role
        content: content
"""


def _plan(tmp_path, each="samples", run_name="eval.task", case_extra=""):
    path = tmp_path / "spec.yaml"
    path.write_text(_SPEC.format(each=each, run_name=run_name, case_extra=case_extra))
    spec, diags = load_spec(path)
    assert spec is not None, [d.message for d in diags]
    return stream_plan(spec)


@pytest.mark.parametrize("each, mode", [("samples", PLAIN), ("samples[]", FLATTEN), ("samples[*]", PROJECT)])
def test_a_top_level_array_streams_with_the_members_the_mapping_reads(tmp_path, each, mode):
    verdict = _plan(tmp_path, each=each, case_extra='    metadata: {model: "$root.eval.model"}')
    assert verdict.reason is None
    p = verdict.plan
    assert (p.level, p.key, p.mode, p.needed, p.where) == ("case", "samples", mode, ("eval", "version"),
                                                          "records.case.each")
    assert verdict.describe().startswith("streams `samples` one element at a time (records.case.each")


@pytest.mark.parametrize("kwargs, reason", [
    ({"each": "sort_by(samples, &id)"},
     "records.case.each iterates `sort_by(samples, &id)`, not an array member of the document"),
    ({"run_name": "to_string(length(samples))"}, "records.run.name reads `samples`: the whole array"),
    ({"case_extra": '    metadata: {n: "length($root.samples)"}'},
     "records.case.metadata.n reads `samples`: the whole array"),
    ({"case_extra": '    metadata: {all: "$root"}'}, "records.case.metadata.all reads the whole document"),
    ({"each": "data.samples"}, "records.case.each iterates `data.samples`, not an array member"),
])
def test_a_document_that_cannot_stream_says_which_spec_path_needs_it(tmp_path, kwargs, reason):
    verdict = _plan(tmp_path, **kwargs)
    assert verdict.plan is None
    assert verdict.reason.startswith(reason), verdict.reason
    assert verdict.describe().startswith("parses the whole document at once (memory grows with it): ")


def test_mapc_build_and_review_say_whether_the_document_streams(tmp_path):
    from mapc.pipeline.build import build_notes
    from mapc.tools.review import format_review, review

    spec, _ = load_spec(ROOT / "specs/harbor-atif.yaml")
    assert build_notes(spec) == ["the adapter parses the whole document at once (memory grows with it): "
                                 "records.case.input reads `steps[].source`: the whole array `steps` at once"]
    spec, _ = load_spec(ROOT / "bench/eval_log/spec.yaml")
    assert build_notes(spec) == []
    out = tmp_path / "out"
    import subprocess

    done = subprocess.run([sys.executable, "-m", "mapc.cli", "build", str(ROOT / "specs/harbor-atif.yaml"),
                           "--target", "rlviz", "-o", str(out), "--no-validate", "--no-test"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "note: the adapter parses the whole document at once (memory grows with it): records.case.input" \
        in done.stderr
    text = "\n".join(format_review(r) for r in review(out))
    assert "  memory: parses the whole document at once (memory grows with it): records.case.input" in text
