"""Source field paths (mapc.core.fieldpath): one text per path, the one JMESPath reads.

A key with dots (OpenTelemetry's `gen_ai.usage.input_tokens`), spaces, dashes, quotes, unicode,
a leading digit or nothing at all is one member: its text must read that member back, in
JMESPath (`jmespath.search`), in mapc's compiler (`CompiledExpression.path`) and in
`segments`; and profiles, reads and `mapc init` must agree on it.
"""

from __future__ import annotations

import json
import random

import jmespath
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from mapc.expressions import compile_expression
from mapc.core.fieldpath import ANY, Variable, child, key, literal_dots, render, segments, variable
from mapc.tools.init import init_spec
from mapc.analysis.profile import profile

#: member names: anything but the two markers a path text gives their own meaning
NAMES = st.text(max_size=12).filter(lambda s: s not in (ANY, "*"))


@settings(max_examples=300, deadline=None)
@given(st.lists(NAMES, min_size=1, max_size=5))
def test_a_rendered_path_reads_exactly_its_keys(names):
    text = render(names)
    assert segments(text) == tuple(names)
    assert compile_expression(text).path == tuple(names)
    doc: object = "found"
    for name in reversed(names):
        doc = {name: doc}
    assert jmespath.search(text, doc) == "found"


def test_keys_are_quoted_only_when_they_are_not_identifiers():
    assert [key(k) for k in ("a_1", "gen_ai.system", "first name", "user-id", "1st", "", 'say "hi"', "résumé")] == [
        "a_1", '"gen_ai.system"', '"first name"', '"user-id"', '"1st"', '""', '"say \\"hi\\""', '"résumé"']
    assert child("attributes", "gen_ai.system") == 'attributes."gen_ai.system"'
    assert render(("spans", ANY, "attributes", "eval.score")) == 'spans[].attributes."eval.score"'
    assert segments("a.b[0].c") == ("a", "b", ANY, "c")  # an index, as people write it, is any element
    assert render((variable("span"), "attributes", "a.b")) == '$span.attributes."a.b"'


def test_a_key_that_starts_with_a_dollar_is_not_a_variable():
    # `$schema`, `$oid`: source keys, quoted; `$span`: a variable, written as one
    assert render(("$schema",)) == '"$schema"'
    assert segments('"$schema".x') == ("$schema", "x")
    assert not isinstance(segments('"$schema".x')[0], Variable)
    assert isinstance(segments("$span.x")[0], Variable)
    assert render(segments("$span.x")) == "$span.x"
    assert render(segments('"$oid"')) == '"$oid"'


def _names_at(paths):
    """``literal_dots``'s ``names_at`` over a set of paths (segment tuples)."""
    return lambda prefix: {p[len(prefix)] for p in paths if len(p) > len(prefix) and p[:len(prefix)] == prefix}


def test_literal_dots_finds_the_key_a_dotted_path_meant():
    keys = {("attributes",), ("attributes", "gen_ai.usage.input_tokens")}
    assert literal_dots(("attributes", "gen_ai", "usage", "input_tokens"), keys.__contains__, _names_at(keys)) == (
        "attributes", "gen_ai.usage.input_tokens")
    assert literal_dots(("attributes", "model"), keys.__contains__, _names_at(keys)) is None


def test_literal_dots_prefers_the_longest_run_then_the_first():
    keys = {("a",), ("a.b",), ("a.b", "c.d"), ("a.b", "c"), ("a.b", "c", "d"), ("a.b.c",), ("a.b.c", "d")}
    assert literal_dots(("a", "b", "c", "d"), keys.__contains__, _names_at(keys)) == ("a.b.c", "d")
    keys -= {("a.b.c",), ("a.b.c", "d")}
    assert literal_dots(("a", "b", "c", "d"), keys.__contains__, _names_at(keys)) == ("a.b", "c", "d")
    assert literal_dots(("x", "[]", "b"), keys.__contains__, _names_at(keys)) is None


def _every_run(segs, has):
    """``literal_dots`` as it was (the oracle): every run of two or more names joined, longest
    first, each whole path asked of ``has``."""
    for size in range(len(segs), 1, -1):
        for start in range(len(segs) - size + 1):
            run = segs[start:start + size]
            candidate = segs[:start] + (".".join(run),) + segs[start + size:]
            if ANY not in run and "*" not in run and has(candidate):
                return candidate
    return None


def test_literal_dots_agrees_with_trying_every_run():
    """It looks only at names the data has where a run starts; the answer is the one trying
    every run (n² whole-path lookups) gave."""
    rnd = random.Random(5)
    names = ["a", "b", "c"]
    for _ in range(3000):
        paths = set()
        for _ in range(rnd.randint(1, 6)):
            path = [".".join(rnd.choice(names) for _ in range(rnd.choice([1, 1, 2, 3])))
                    for _ in range(rnd.randint(1, 4))]
            paths |= {tuple(path[:i]) for i in range(1, len(path) + 1)}
        segs = tuple(rnd.choice(names + [ANY, "*"]) if rnd.random() < 0.1 else rnd.choice(names)
                     for _ in range(rnd.randint(1, 6)))
        assert literal_dots(segs, paths.__contains__, _names_at(paths)) == _every_run(segs, paths.__contains__), (
            segs, paths)


def test_expressions_profiles_and_reads_spell_a_dotted_key_alike(tmp_path):
    sample = tmp_path / "spans.jsonl"
    sample.write_text(json.dumps({"attributes": {"gen_ai.system": "openai", "a b": {"c-d": 1}}}) + "\n")
    prof = profile(sample)
    assert {'attributes."gen_ai.system"', 'attributes."a b"."c-d"'} <= set(prof.fields)
    assert "attributes.gen_ai.system" not in prof.fields
    assert prof.children("attributes") == ["a b", "gen_ai.system"]
    assert compile_expression('attributes."gen_ai.system"').field_paths == ('attributes."gen_ai.system"',)
    assert compile_expression('$s.attributes."a b"[].x').field_paths == ('$s.attributes."a b"[].x',)


def test_init_drafts_quoted_paths_that_map_dotted_keys(tmp_path):
    """`mapc init` on OpenTelemetry-style attributes: the draft quotes each dotted key, so its
    signals read the values (unquoted, each read null and the draft mapped nothing)."""
    lines = [{"span_id": f"s{i}", "name": "chat", "attributes": {"gen_ai.usage.input_tokens": 10 + i,
                                                                  "eval.score": i / 2}} for i in range(3)]
    sample = tmp_path / "spans.jsonl"
    sample.write_text("".join(json.dumps(line) + "\n" for line in lines))
    draft = init_spec(sample, spec_dir=tmp_path, use_library=False)
    assert 'attributes.\\"gen_ai.usage.input_tokens\\"' in draft.text, draft.text
    rules = yaml.safe_load(draft.text)["records"]["events"]["rules"]
    exprs = [v for rule in rules for v in (rule.get("signals") or {}).values()] + [rules[0]["when"]]
    assert exprs and all('attributes."' in e for e in exprs), exprs
    from mapc.api import run
    from mapc.pipeline.build import load_checked

    spec_file = tmp_path / "spec.yaml"
    spec_file.write_text(draft.text)
    spec, diags = load_checked(spec_file)
    assert spec is not None and not [d for d in diags if d.code in ("dotted_key", "not_in_fixtures")], diags
    records = run(spec_file, sample).records
    values = sorted(r["value"] for r in records if r.get("record_type") == "signal")
    assert values == sorted([10, 11, 12, 0.0, 0.5, 1.0]), values


def test_reads_name_quoted_keys_and_leave_out_the_null_word(tmp_path):
    """What `mapc review` lists: `x || null` reads x (`null` is the null value as specs write it),
    and a key with dots is one quoted member."""
    from mapc.pipeline.build import load_checked
    from mapc.analysis.reads import read_paths, spec_reads

    (tmp_path / "spec.yaml").write_text(
        "mapc: 1\nname: r\nsource: {format: r, container: jsonl, probe: {require: [span_id]}}\n"
        "records:\n  events:\n    each: '@'\n    kind: log\n    parent: parent_span_id || null\n"
        "    data: {tokens: 'attributes.\"gen_ai.usage.input_tokens\"'}\n")
    spec, diags = load_checked(tmp_path / "spec.yaml")
    assert spec is not None, diags
    assert sorted(read_paths(spec_reads(spec))) == [
        'attributes."gen_ai.usage.input_tokens"', "parent_span_id", "span_id"]


def test_partial_expectations_name_a_key_with_dots_quoted():
    from mapc.spectest.partial import check_records

    record = {"record_type": "event", "id": "e1", "data": {"gen_ai.system": "openai", "n": [{"x": 1}]}}
    ok = {"records": {"e1": {'data."gen_ai.system"': "openai", "data.n.0.x": 1}}}
    assert check_records(ok, [record], 0) == []
    (change,) = check_records({"records": {"e1": {'data."gen_ai.system"': "anthropic"}}}, [record], 0)
    assert change.path == ("data", "gen_ai.system") and change.actual == "openai"


@settings(max_examples=200, deadline=None)
@given(st.lists(NAMES, min_size=1, max_size=4))
def test_the_adapter_names_a_missing_required_field_as_the_spec_writes_it(names):
    # the generated adapter's own copy of the quoting (its runtime cannot import mapc)
    from mapc.runtime.mapping_rt import missing_required

    assert missing_required({}, [tuple(names)]) == render(names)
