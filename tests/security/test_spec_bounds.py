"""Checking a spec costs time and memory in proportion to it, and no more than its limits allow.

The limits (``mapc.spec.loader``: bytes, YAML nodes and characters counted after alias
expansion, depth; ``mapc.spec.semantic``: the expression budget; ``mapc.core.diagnostics``:
errors reported) bound what a spec can make mapc do. These tests check the bounds
structurally, by counting the work done (comparisons, compilations, suggestions, nodes
built, positions copied), never by timing it; ``bench/hostile_specs.py`` measures the
time and memory of the worst cases. The hostile specs themselves are case folders in
``tests/cases/hostile_specs/`` (test_hostile_specs.py).
"""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

import pytest
import yaml

from mapc.core.diagnostics import MAX_REPORTED, SHOWN_LINE, Diagnostic, Diagnostics
from mapc.spec import load_spec, load_spec_text
from mapc.spec import loader, schema_check, semantic
from mapc.spec.checks import exprs
from mapc.spec.loader import MAX_EXPANDED_CHARS, MAX_NODES, load_text
from security_support import seed_specs

VALID = """mapc: 1
name: demo
source:
  format: demo-events
  container: jsonl
  probe: {require: [type]}
records:
  events: {each: "@", kind: message, role: role, content: text}
"""


class _Counter:
    def __init__(self):
        self.n = 0


def _counting(monkeypatch, owner, name) -> _Counter:
    counter = _Counter()
    original = getattr(owner, name)

    def counted(*args, **kwargs):
        counter.n += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return counter


def test_collecting_diagnostics_is_linear(monkeypatch):
    """Duplicates were found by scanning the list: n diagnostics cost n²/2 comparisons."""
    eq = _counting(monkeypatch, Diagnostic, "__eq__")
    diags = Diagnostics()
    n = 3000
    for i in range(n):
        diags.add(Diagnostic(code="c", message=f"m{i}", line=i))
    diags.add(Diagnostic(code="c", message="m7", line=7))  # a repeat is still kept once
    assert len(diags) == n and eq.n <= 2 * n


def test_a_spec_stage_stops_after_the_reported_errors(monkeypatch):
    """10,000 unknown keys: a did-you-mean was computed for every one (38 s)."""
    suggest = _counting(monkeypatch, schema_check, "suggest")
    spec, diags = load_spec_text(VALID + "".join(f"unknown_key_{i:05d}: 1\n" for i in range(10_000)))
    assert spec is None
    assert len(diags.errors) == MAX_REPORTED + 1 and diags.errors[-1].code == "too_many_errors"
    assert suggest.n <= MAX_REPORTED + 1


def test_semantic_errors_stop_the_semantic_pass(monkeypatch):
    is_file = _counting(monkeypatch, Path, "is_file")
    fixtures = "".join(f"- missing-{i}.jsonl\n" for i in range(90))
    spec, diags = load_spec_text(VALID + "fixtures:\n" + fixtures + "tasks: {from: " + "x" * 50 + ".jsonl}\n"
                                 + "evaluators:\n" + "".join(f"- {{id: e{i}, description: d, score: 'b('}}\n"
                                                             for i in range(200)))
    assert spec is None and diags.errors[-1].code == "too_many_errors"
    assert len(diags.errors) == MAX_REPORTED + 1
    assert is_file.n <= 200


def test_compilations_are_bounded_by_the_expression_budget(monkeypatch):
    compiled = _counting(monkeypatch, exprs, "compile_expression")
    fields = "".join(f"      k{i}: \"a{i}.b\"\n" for i in range(5000))
    text = VALID.replace("records:\n", "records:\n  case:\n    each: \"@\"\n    metadata:\n" + fields).replace(
        'events: {each: "@"', 'events: {each: "[@]"')
    spec, diags = load_spec_text(text)
    assert spec is None and [d.code for d in diags.errors] == ["expressions_too_large"]
    assert compiled.n <= semantic.MAX_SPEC_EXPRESSION_CHARS // semantic.EXPRESSION_MIN_COST


def test_aliases_count_after_expansion():
    text = VALID + "description: &d " + "x" * 100_000 + "\ntables:\n  t:\n" + "".join(
        f"    k{i}: *d\n" for i in range(MAX_EXPANDED_CHARS // 100_000 + 1))
    assert len(text) < MAX_EXPANDED_CHARS // 10
    spec, diags = load_text(text, "s.yaml")
    assert spec.data is None and [d.code for d in diags] == ["spec_too_large"]
    assert "characters" in diags[0].message


def test_the_composer_stops_at_the_node_limit(monkeypatch):
    """A 4 MiB spec of short list items holds a million nodes: they are not all built."""
    made = _counting(monkeypatch, yaml.ScalarNode, "__init__")
    text = VALID + "fixtures:\n" + "- a\n" * 1_000_000
    assert len(text.encode()) < loader.MAX_SPEC_BYTES
    spec, diags = load_text(text, "s.yaml")
    assert spec.data is None and [d.code for d in diags] == ["spec_too_large"]
    assert made.n <= MAX_NODES + 1


def test_an_extends_chain_shares_one_budget(tmp_path):
    """Each spec of a chain within the node limit, the chain past it: one budget for all."""
    levels, entries = 3, MAX_NODES // 5
    for n in range(levels):
        head = f"extends: ./base{n + 1}.yaml\n" if n < levels - 1 else VALID
        (tmp_path / f"base{n}.yaml").write_text(
            head + f"tables:\n  t{n}:\n" + "".join(f"    k{i}: v{i}\n" for i in range(entries)))
    (tmp_path / "spec.yaml").write_text("extends: ./base0.yaml\nname: demo\n")
    for n in range(levels):  # each file alone is within the limits
        alone, found = load_text((tmp_path / f"base{n}.yaml").read_text(), f"base{n}.yaml")
        assert alone.data is not None and not found
    spec, diags = load_spec(tmp_path / "spec.yaml")
    assert spec is None and "spec_too_large" in {d.code for d in diags.errors}
    too_large = next(d for d in diags.errors if d.code == "spec_too_large")
    assert too_large.path and too_large.path.startswith("tables.t"), too_large.format()


def test_libyaml_and_pyyaml_load_the_same_specs(monkeypatch):
    """The loader composes nodes from parser events with libyaml when present, else with PyYAML's
    own parser: both give the same data, positions and diagnostics (tab handling aside:
    libyaml allows a tab inside a plain scalar, as YAML does; an escape naming no character
    is refused by both, libyaml pointing at the escape, the fallback at its scalar)."""
    if not hasattr(yaml, "CSafeLoader"):
        pytest.skip("PyYAML without libyaml: only one parser to compare")  # (MAPC_REQUIRE_HOSTS fails it)
    hostile = Path(__file__).resolve().parents[1] / "cases" / "hostile_specs"
    texts = [p.read_text(encoding="utf-8-sig") for p in seed_specs()]
    for path in sorted(hostile.glob("*/spec.yaml")):
        try:
            text = path.read_text(encoding="utf-8-sig")
        except UnicodeDecodeError:
            continue  # (refused before YAML is parsed)
        if "\t" not in text and "escape" not in path.parent.name:
            texts.append(text)  # (both refuse an escape of a non-character, located differently)
    texts += ["a: [1, 2\n", "k: 'it''s é 🙂'\nj: |\n  x\n  y(\n", "a: &x 1\nb: *y\n", "a: &x 1\nb: &x 2\n"]
    for text in texts:
        results = []
        for parser in (yaml.CSafeLoader, yaml.SafeLoader):
            monkeypatch.setattr(loader, "_PARSER", parser)
            spec, diags = load_text(text, "s.yaml")
            results.append((spec.data, spec.values, spec.keys, spec.scalars,
                            [(d.code, d.line, d.column) for d in diags]))
        assert results[0] == results[1], text[:200]


def test_a_long_line_is_shown_as_a_window_around_the_column():
    line = "a" * 5000 + "HERE" + "b" * 5000
    text = Diagnostic(code="c", message="m", line=1, column=5001).format([line])
    shown, caret = text.splitlines()[1:3]
    assert len(shown) <= len("     1 | ") + SHOWN_LINE + 2
    assert shown[caret.index("^")] == "H"


def test_a_position_inside_a_huge_scalar_is_its_start(monkeypatch):
    walked = _counting(monkeypatch, loader, "_value_offset_to_index")
    spec, _ = load_text("k: " + "x" * (loader.MAX_LOCATED_SCALAR + 10) + "\nj: short(\n", "s.yaml")
    assert (spec.expression_mark(("k",), loader.MAX_LOCATED_SCALAR).line,
            spec.expression_mark(("k",), 5).column) == (1, 4)
    assert spec.expression_mark(("j",), 5).column == 9  # the "(" of short(
    assert walked.n == 1


@pytest.mark.parametrize("word", ["recrods", "x" * 7, "y" * 8, "fixtures" * 2, "z" * 200])
def test_suggest_skips_only_words_too_long_to_reach_the_cutoff(word):
    import difflib

    names = ["records", "fixtures", "tables"]
    expected = difflib.get_close_matches(word, sorted(names), n=1, cutoff=0.6)
    assert schema_check.suggest(word, names) == (f"did you mean {expected[0]!r}?" if expected else None)


def test_every_length_near_the_cutoff_agrees_with_difflib():
    import difflib

    names = ["abc", "abcdefg"]
    for n in range(1, 30):
        for word in ("abcdefg"[:n] + "q" * max(0, n - 7), "a" * n, "abc" * n):
            expected = difflib.get_close_matches(word, names, n=1, cutoff=0.6)
            assert schema_check.suggest(word, names) == (f"did you mean {expected[0]!r}?" if expected else None)


# -- the expression compiler's speed-ups keep its output -----------------------------------------
def _renumber_with_the_tokenizer(lines: list[str]) -> list[str]:
    """The tokenizer-based renumbering the compiler used before (the oracle)."""
    mapping, counters, edits = {}, {}, []
    text = "\n".join(lines)
    for tok in tokenize.generate_tokens(io.StringIO(text + "\n").readline):
        m = re.fullmatch(r"(v|out|item|expr)([0-9]+)", tok.string) if tok.type == tokenize.NAME else None
        if not m:
            continue
        if tok.string not in mapping:
            counters[m.group(1)] = counters.get(m.group(1), 0) + 1
            mapping[tok.string] = f"{m.group(1)}{counters[m.group(1)]}"
        edits.append((tok.start, tok.end, mapping[tok.string]))
    out = list(lines)
    for (row, col), (_, end), new in reversed(edits):
        out[row - 1] = out[row - 1][:col] + new + out[row - 1][end:]
    return out


EXPRESSIONS = [
    "a.b.c", "people[?age > `30`].name", "items[*].{id: id, v3: 'v3 # out2', n: `\"item9\"`}",
    "sort_by(a, &b)[0].c || d", "[a, b][?@ != `null`] | length(@)", "{\"v1\": v1, out2: out2}.v1",
    "join(',', map(&to_string(@), xs[].ys[]))", "max_by(rows, &score).name", "a[0][1][2]",
    "not_null(a, b, c) && !d", "x[?contains(y, 'expr1 \\'v2')].z[].w",
]


@pytest.mark.parametrize("text", EXPRESSIONS)
def test_renumbering_and_helpers_match_the_tokenizer_and_the_syntax_tree(text):
    import ast

    from mapc.expressions import compile_expression
    from mapc.expressions.compiler import FunctionCompiler, _renumber, helpers_in

    ce = compile_expression(text)
    body = ce.function_source("f").splitlines()[1:]
    assert _renumber(body) == _renumber_with_the_tokenizer(body) == body
    shuffled = [re.sub(r"\b(v|out|item|expr)(\d+)\b", lambda m: f"{m.group(1)}{int(m.group(2)) * 7 + 3}", line)
                for line in body]
    assert _renumber(shuffled) == _renumber_with_the_tokenizer(shuffled)
    assert ce.helpers == helpers_in(ce.function_source("f"))  # the code object's names, as the tree's
    assert FunctionCompiler and ast.parse(ce.python_source)
