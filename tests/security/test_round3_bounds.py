"""Issue 28, items 5 and 6, and a compiler crash the expression fuzzer found: work that grew
faster than its input, and inputs that broke the compiler instead of getting a diagnostic.

Each test counts the work done (paths looked up, ids probed), never times it: the time is
measured by ``bench/hostile_specs.py --only dotted`` (item 5) and ``bench/distinct_ids.py
--shared`` (item 6); docs/performance.md has the numbers.
"""

from __future__ import annotations

import copy
import json
import random

import pytest

from mapc.pipeline.build import load_checked, mapping_namespace, run_mapping
from mapc.tools.drift import PathIndex
from mapc.expressions import ExpressionError, compile_expression
from mapc.runtime.stream import IdTable, MapState
from mapc.spec.semantic import MAX_EXPRESSION_CHARS
from security_support import ROOT

HEAD = """mapc: 1
name: bounds
source:
  format: bounds-events
  container: jsonl
  probe: {require: [type]}
records:
"""
#: a fixture line whose `a` holds a key with a dot, which a long path `a.a.a...` could mean
DOTTED_FIXTURE = '{"type": "message", "role": "user", "text": "hi", "a": {"a.b": 1, "c": 2}}\n'


def _spec_reading(tmp_path, expression: str, fixture: str = DOTTED_FIXTURE):
    """A spec whose event content reads ``expression``, with a one-line fixture."""
    (tmp_path / "f.jsonl").write_text(fixture, encoding="utf-8")
    spec = tmp_path / "spec.yaml"
    quoted = "'" + expression.replace("'", "''") + "'"
    spec.write_text(HEAD + f'  events: {{each: "@", kind: message, role: role, content: {quoted}}}\n'
                    + "fixtures: [f.jsonl]\n", encoding="utf-8")
    return spec


# -- item 5: a long dotted field path -------------------------------------------------------------
def _fuzzer_path(chars: int) -> str:
    """Short varied names, as a fuzzer writes them."""
    return ".".join(("a", "b1", "_c", "dd")[i % 4] for i in range(chars))[:chars].rstrip(".")


@pytest.mark.parametrize("expression", [
    ".".join(["a"] * 100),
    ".".join(["a"] * 800),
    _fuzzer_path(4096),
    ".".join(["a"] * (MAX_EXPRESSION_CHARS // 2)),  # 16,383 characters: the longest allowed
    ".".join(["a"] * (MAX_EXPRESSION_CHARS // 2 + 1)),  # one name more: refused
], ids=["100 names", "800 names", "4 KiB of varied names", "at the limit", "past the limit"])
def test_item5_long_dotted_path_is_linear_or_refused(tmp_path, monkeypatch, expression):
    """`mapc check` looked for a key with dots the path could have meant by joining every run
    of its names and looking the whole path up again: n²/2 lookups of n names each (400
    names: 34 s). Now it joins only names the fixtures have where the run starts: the path
    is looked up a few times, whatever its length. Past the documented limit the expression
    is refused, located, with the limit and a fix."""
    looked_up = []
    lookup = PathIndex.lookup
    monkeypatch.setattr(PathIndex, "lookup", lambda self, path: looked_up.append(path) or lookup(self, path))
    spec_file = _spec_reading(tmp_path, expression)
    spec, diags = load_checked(spec_file, None)
    if len(expression) <= MAX_EXPRESSION_CHARS:
        assert spec is not None, [d.format() for d in diags]
        assert sum(map(len, looked_up)) <= 4 * len(expression) + 1000, (len(looked_up), len(expression))
        return
    assert spec is None
    (refused,) = diags.errors
    assert (refused.code, refused.file, refused.line, refused.column, refused.path) == (
        "expression_too_long", str(spec_file), 8, 59, "records.events.content")
    assert f"{len(expression)} characters" in refused.message and str(MAX_EXPRESSION_CHARS) in refused.message
    assert refused.hint and "`let`" in refused.hint


def test_item5_a_dotted_key_at_the_end_of_a_long_path_is_still_found(tmp_path):
    """The key with dots is found past 50 names (the lookups are bounded, not the search)."""
    data: dict = {"x.y": 1}
    for _ in range(50):
        data = {"a": data}
    spec_file = _spec_reading(tmp_path, ".".join(["a"] * 50 + ["x", "y"]),
                              json.dumps(dict(data, type="message", role="user")) + "\n")
    spec, diags = load_checked(spec_file, None)
    (found,) = diags
    assert found.code == "dotted_key" and "`x.y`" in found.message, found.format()
    assert found.hint.endswith('."x.y"` (a key that is not a plain name is quoted in a path)'), found.hint


@pytest.mark.parametrize("expression", [
    # projections nest one level each: the parser managed, a later walk of the tree recursed
    ".".join(("a", "b", "c", "*", "a[0]", "a[*]", "a[]")[i % 7] for i in range(1300)),
    " || ".join(["a"] * 450),
])
def test_item5_a_deeply_nested_expression_is_a_diagnostic(tmp_path, expression):
    """A long chain of projections passed the parser, then CompiledExpression's walks of its
    tree raised RecursionError: `mapc check` said "internal error". Now every step of
    compiling one expression is inside the handler that says "nested too deeply"."""
    assert len(expression) < MAX_EXPRESSION_CHARS
    with pytest.raises(ExpressionError, match="nested too deeply"):
        compile_expression(expression)
    spec, diags = load_checked(_spec_reading(tmp_path, expression), None)
    assert spec is None and [(d.code, d.path) for d in diags.errors] == [
        ("expression_syntax", "records.events.content")]


def test_item5_a_long_or_chain_builds_an_adapter_that_runs(tmp_path):
    """`a || a || ...` of 200 terms checked, then `mapc build` failed with "internal error
    (SyntaxError): too many nested parentheses": the adapter inlined it as 200 nested
    calls. An expression nesting deeper than MAX_INLINE_DEPTH is a function of its own."""
    from mapc import api

    expression = " || ".join(["missing"] * 199 + ["text"])
    result = api.build(_spec_reading(tmp_path, expression), "rlviz", tmp_path / "out")
    assert result.ok, [d.format() for d in result.diagnostics]
    records = api.run(tmp_path / "spec.yaml", tmp_path / "f.jsonl").records
    assert [r["input"]["content"] for r in records if r["record_type"] == "event"] == ["hi"]


# -- item 6: ids that repeat ----------------------------------------------------------------------
class _CountingIdTable(IdTable):
    """An IdTable that counts membership tests (the renamer's probes of event ids)."""

    probes = 0

    def __contains__(self, key):
        _CountingIdTable.probes += 1
        return super().__contains__(key)


@pytest.mark.parametrize("kind", ["run", "case", "group", "trajectory"])
def test_item6_shared_ids_rename_in_linear_time(kind):
    """k records of one kind with one id under k parents: renamed `x~2`, `x~3`, ... in order.
    The renamer probed every suffix from 2 each time, k²/2 probes (4,000 eval samples sharing
    a uuid: 30 times the time of distinct ones); now it resumes where it stopped."""
    k = 2000
    st = MapState()
    probes = []
    used_id = st.used_id
    st.used_id = lambda rid: probes.append(rid) or used_id(rid)
    names = []
    for i in range(k):
        rec = {"id": "x"}
        assert st.level(kind, rec, f"parent-{i}")
        names.append(rec["id"])
    assert names == ["x"] + [f"x~{n}" for n in range(2, k + 1)]
    assert len(probes) <= 2 * k, len(probes)
    assert st.warnings == k - 1


def test_item6_shared_event_ids_rename_in_linear_time():
    k = 2000
    st = MapState()
    st.native_ids = _CountingIdTable()
    _CountingIdTable.probes = 0
    names = [st.native_event_id("e", "records.events.id") for _ in range(k)]
    assert names == ["e"] + [f"e~{n}" for n in range(2, k + 1)]
    assert _CountingIdTable.probes <= 3 * k, _CountingIdTable.probes


def _renamed_as_before(ids_and_kinds):
    """The ids the renamer gave before it kept state: the least ``~N`` from 2 not used."""
    used, out = set(), []
    for rid, kind in ids_and_kinds:
        new, n = rid, 2
        while new in used:
            new, n = f"{rid}~{n}", n + 1
        used.add(new)
        out.append(new)
    return out


def test_item6_renaming_keeps_the_names_and_their_order():
    """The same `~N` names as before, ids written like renamed ones (`x~3`) included: an id
    is never released, so every suffix below the remembered one stays taken."""
    rnd = random.Random(28)
    for _ in range(200):
        bases = ["x", "y", "x~2", "x~3", "y~2~2"][: rnd.randint(1, 5)]
        ids = [(rnd.choice(bases + [f"x~{rnd.randint(2, 9)}"]), rnd.choice(["case", "trajectory"]))
               for _ in range(rnd.randint(1, 40))]
        st = MapState()
        got = []
        for i, (rid, kind) in enumerate(ids):
            rec = {"id": rid}
            st.level(kind, rec, f"parent-{i}")  # every record has its own parent: no repeat is the same
            got.append(rec["id"])
        assert got == _renamed_as_before(ids), ids
        events = MapState()
        assert [events.native_event_id(rid, "w") for rid, _ in ids] == _renamed_as_before(ids), ids


def _eval_log(path, samples: int, shared: str) -> None:
    """``samples`` copies of the library fixture's first sample: every copy with the same
    uuid (``shared="uuid"``: trajectories renamed) or identical (``"sample"``: one case and
    trajectory whose span event ids repeat)."""
    log = json.loads((ROOT / "specs" / "fixtures" / "inspect-ai-eval-log" / "eval-log.json").read_text())
    sample = log.pop("samples")[0]
    sample["events"] = [e for e in sample["events"] if e["event"] in ("span_begin", "span_end", "sample_init")]
    log["samples"] = []
    for i in range(samples):
        one = copy.deepcopy(sample)
        if shared == "uuid":
            one["id"] = i
            for event in one["events"]:
                event.update({key: f"{event[key]}-{i}" for key in ("id", "span_id") if key in event})
        log["samples"].append(one)
    path.write_text(json.dumps(log), encoding="utf-8")


@pytest.mark.parametrize("shared", ["uuid", "sample"])
def test_item6_mapc_run_renames_repeated_eval_log_ids_in_linear_time(tmp_path, monkeypatch, shared):
    """An Inspect eval log whose samples repeat their uuid (24,000 samples: 220 s of CPU),
    through the mapping program `mapc run` executes and an adapter holds (the same runtime
    bytes): every id is tested a few times, not once for every earlier repeat."""
    spec, diags = load_checked(ROOT / "specs" / "inspect-ai-eval-log.yaml", None)
    assert spec is not None, diags
    ns = mapping_namespace(spec)
    runtime_ids = ns["MapState"].__init__.__globals__["IdTable"]  # the runtime module's own class
    tests = []
    contains = runtime_ids.__contains__
    monkeypatch.setattr(runtime_ids, "__contains__", lambda self, key: tests.append(key) or contains(self, key))
    samples = 400
    _eval_log(tmp_path / "eval.json", samples, shared)
    with open(tmp_path / "out.ndjson", "wb") as out:
        ok, error, st = run_mapping(spec, tmp_path / "eval.json", out, ns)
    assert ok, error
    records = [json.loads(line) for line in (tmp_path / "out.ndjson").read_bytes().splitlines()]
    if shared == "uuid":
        ids = [r["id"] for r in records if r["record_type"] == "trajectory"]
        uuid = ids[0]
        assert ids == [uuid] + [f"{uuid}~{n}" for n in range(2, samples + 1)]
    else:
        spans = [r["id"] for r in records if r["record_type"] == "event" and r["id"].startswith("span-a111")]
        assert spans == ["span-a111"] + [f"span-a111~{n}" for n in range(2, samples + 1)]
    assert len(tests) <= 20 * samples, len(tests)
