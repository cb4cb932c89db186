"""The parts `mapc drift` is made of: what a rule reads of its elements (mapc.analysis.reads), which
elements each rule takes (mapc.tools.observe), element profiles and fingerprints (mapc.analysis.profile),
and the evidence rules for renames and chance (mapc.tools.drift_rules)."""

from __future__ import annotations

import json
from pathlib import Path

from mapc.analysis.drift_evidence import rename_of, significant
from mapc.expressions import compile_expression
from mapc.tools.observe import NO_RULE, Observer
from mapc.analysis.profile import profile_elements
from mapc.analysis.reads import alternatives_of, rule_reads, rule_tests, string_tests
from mapc.spec import load_spec

SPEC = """mapc: 1
name: parts
source:
  format: parts-events
  container: jsonl
  probe: {require: [type]}
records:
  events:
    each:
      - {each: "@", as: line}
      - {each: "parts || [@]", as: part}
    let: {kind: "$line.type"}
    where: "$line.type != 'hidden'"
    rules:
      - when: "$kind == 'skip'"
        skip: true
      - when: "type == 'msg' || type == 'note'"
        kind: message
        content: "text || body"
        role: "coalesce(role, 'user')"
      - when: "contains(['call', 'tool'], type)"
        emit:
          - kind: tool
            tool_name: name
          - kind: error
            when: "err != null"
            data: {message: err, trace: stack}
      - kind: log
        data: data
"""


def _spec(tmp_path: Path, lines: list[dict]):
    (tmp_path / "t.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    (tmp_path / "spec.yaml").write_text(SPEC, encoding="utf-8")
    spec, diags = load_spec(tmp_path / "spec.yaml")
    assert spec is not None, [d.format() for d in diags]
    return spec, tmp_path / "t.jsonl"


def test_alternatives_are_the_fields_of_the_other_branches():
    def alts(text):
        return alternatives_of(compile_expression(text).ast)

    assert alts("output_text || completion") == {"output_text": {"completion"}, "completion": {"output_text"}}
    assert alts("coalesce(a.b, c)") == {"a.b": {"c"}, "c": {"a.b"}}
    assert alts("a && b || c") == {"a": {"c"}, "b": {"c"}, "c": {"a", "b"}}
    # a variable or a literal is no field to fall back on; another context is not `@`'s
    assert alts("x || $y") == {} and alts("content || null") == {} and alts("data | (a || b)") == {}
    assert alts("x") == {}


def test_string_tests_through_and_or_not_and_contains():
    def tests(text):
        return string_tests(compile_expression(text).ast)

    assert tests("type == 'a' || !(kind == 'b') && 'c' == x.y") == [("type", "a"), ("kind", "b"), ("x.y", "c")]
    assert tests("contains(['call', 'tool'], type)") == [("type", "call"), ("type", "tool")]
    assert tests("length(x) > `1`") == []


def test_rule_reads_know_tests_alternatives_and_what_a_when_guards(tmp_path: Path):
    spec, _ = _spec(tmp_path, [{"type": "msg", "text": "hi"}])
    reads = {(r.rule, r.path, r.where): r for r in rule_reads(spec)}
    text = reads[(1, "text", "records.events.rules[1].content")]
    assert text.alternatives == {"body"} and not text.mapped and not text.guarded
    assert reads[(2, "name", "records.events.rules[2].emit[0].tool_name")].whole
    err = reads[(2, "err", "records.events.rules[2].emit[1].data.message")]
    assert err.guarded and err.mapped
    assert reads[(3, "data", "records.events.rules[3].data")].whole
    assert not any(r.path.startswith("$") for r in reads.values())  # `$kind` is no field of the element
    assert rule_tests(spec) == {"type": {"msg": 1, "note": 1, "call": 2, "tool": 2}}


def test_the_observer_files_each_element_under_the_rule_that_takes_it(tmp_path: Path):
    lines = [
        {"type": "msg", "text": "a"},
        {"type": "skip"},
        {"type": "hidden", "text": "never an element"},
        {"type": "x", "parts": [{"type": "call", "name": "ls"}, {"type": "msg", "body": "b"}, {"type": "z"}]},
        {"type": "other", "data": {"k": 1}},
    ]
    spec, trace = _spec(tmp_path, lines)
    obs = Observer(spec).observe(trace)
    assert obs.error is None and obs.selection_error is None
    taken = {rule: t.kept for rule, t in obs.rules.items()}
    assert taken[0] == [{"type": "skip"}]
    assert taken[1] == [{"type": "msg", "text": "a"}, {"type": "msg", "body": "b"}]
    assert taken[2] == [{"type": "call", "name": "ls"}]
    assert taken[3] == [{"type": "z"}, {"type": "other", "data": {"k": 1}}]
    assert NO_RULE not in taken
    assert obs.rules[2].scopes[0]["kind"] == "x" and obs.rules[2].scopes[0]["part_index"] == 0
    # records, per spec node: how many, and how many hold each field
    assert obs.outputs["records.events.rules[1]"].count == 2
    assert obs.outputs["records.events.rules[1]"].fields["input.content"] == 2  # a user message
    assert "records.events.rules[2].emit[1]" not in obs.outputs  # no `err`: the error event is never made


def test_element_profiles_count_the_elements_that_hold_a_value(tmp_path: Path):
    prof = profile_elements([{"a": 1, "b": [{"c": "x"}, {"c": None}]}, {"a": None, "d": "hello world"}])
    assert {p: s.present for p, s in prof.fields.items()} == {"": 2, "a": 1, "b": 1, "b[]": 1, "b[].c": 1, "d": 1}
    assert prof.fields["d"].fingerprint.kinds == {"text"}
    assert "hello" not in repr(prof.fields["d"].fingerprint)  # hashes, never the values


def test_a_rename_is_suggested_only_on_evidence():
    before = profile_elements([{"id": "a1", "msg": "hello there", "n": 3} for _ in range(3)])
    same_values = profile_elements([{"id": "a1", "text": "hello there", "n": 3} for _ in range(3)])
    assert rename_of("msg", before, same_values) == "text"
    other_type = profile_elements([{"id": "a1", "text": 42, "n": 3}])
    assert rename_of("msg", before, other_type) is None
    unlike = profile_elements([{"id": "a1", "text": "2024-01-01T00:00:00Z", "n": 3}])  # a time, not text
    assert rename_of("msg", before, unlike) is None
    two = profile_elements([{"id": "a1", "text": "hello there", "body": "hello there", "n": 3}])
    assert rename_of("msg", before, two) is None  # two would fit: no suggestion
    as_array = profile_elements([[1, 2]])  # `[]` is not a member name
    assert rename_of("n", profile_elements([{"n": 1}]), as_array) is None


def test_significance_of_an_absence():
    assert significant(3, 3, 1)  # every fixture element had it
    assert not significant(1, 10, 2)  # rare, and few new elements: may be chance
    assert significant(1, 2, 9)  # half had it, none of nine
    assert not significant(0, 3, 5) and not significant(2, 3, 0)


def test_the_observer_follows_a_document_the_mapping_streams(tmp_path: Path):
    """A document larger than `max_line_bytes` streams its array to the mapping, once: the
    observer reads the elements again with a reader of its own (it saw none before)."""
    (tmp_path / "spec.yaml").write_text("""mapc: 1
name: streamed
source:
  format: streamed-events
  container: json
  max_line_bytes: 2048
  probe: {require: [events]}
records:
  events:
    each: events
    rules:
      - when: "type == 'msg'"
        kind: message
        content: text
      - kind: log
        data: "@"
""", encoding="utf-8")
    events = [{"type": "msg", "text": f"hello {i}"} for i in range(400)] + [{"type": "other"}]
    (tmp_path / "big.json").write_text(json.dumps({"events": events}), encoding="utf-8")
    assert (tmp_path / "big.json").stat().st_size > 4 * 2048
    spec, diags = load_spec(tmp_path / "spec.yaml")
    assert spec is not None, [d.format() for d in diags]
    observer = Observer(spec)
    assert observer.stream is not None and observer.stream.key == "events"
    obs = observer.observe(tmp_path / "big.json")
    assert obs.error is None and obs.selection_error is None
    assert {rule: t.count for rule, t in obs.rules.items()} == {0: 400, 1: 1}
    assert obs.outputs["records.events.rules[0]"].count == 400  # the mapping streamed them too


def test_a_value_no_fixture_has_is_additive_unless_a_rule_tests_for_it(tmp_path: Path):
    from mapc.tools.drift import drift

    spec, fixture = _spec(tmp_path, [{"type": "msg", "text": "a"}, {"type": "other", "data": {}}])
    (tmp_path / "spec.yaml").write_text(SPEC + "fixtures: [t.jsonl]\n", encoding="utf-8")
    sample = tmp_path / "s.jsonl"
    sample.write_text(json.dumps({"type": "note", "text": "b"}) + "\n" + json.dumps({"type": "new", "data": {}})
                      + "\n", encoding="utf-8")
    report, _ = drift(tmp_path / "spec.yaml", sample)
    values = {i.path: i for i in report.items if i.kind == "new_value"}
    assert values["type == 'note'"].severity == "note"  # rules[1] tests `type == 'note'`
    assert values["type == 'new'"].severity == "additive" and values["type == 'new'"].place == "records.events.rules[3]"
    assert report.verdict == "additive"
