"""The YAML loader keeps positions, including inside expressions."""

from __future__ import annotations

from mapc.spec.loader import load_text


def _mark_of_char(text: str, path: tuple, needle: str, spec_text: str):
    spec, diags = load_text(spec_text, "s.yaml")
    assert not diags
    value = spec.data
    for p in path:
        value = value[p]
    offset = value.index(needle)
    return spec.expression_mark(path, offset)


def _line_col(spec_text: str, needle: str, occurrence: int = 0):
    lines = spec_text.splitlines()
    seen = 0
    for i, line in enumerate(lines):
        start = 0
        while (j := line.find(needle, start)) >= 0:
            if seen == occurrence:
                return i + 1, j + 1
            seen += 1
            start = j + 1
    raise AssertionError(needle)


def test_positions_of_keys_and_values():
    text = "a: 1\nb:\n  c: [x, y]\n  d: {e: f}\n"
    spec, diags = load_text(text, "s.yaml")
    assert not diags
    assert spec.data == {"a": 1, "b": {"c": ["x", "y"], "d": {"e": "f"}}}
    assert (spec.mark(("b", "c", 1)).line, spec.mark(("b", "c", 1)).column) == (3, 10)
    assert (spec.mark(("b", "d", "e"), key=True).line, spec.mark(("b", "d", "e"), key=True).column) == (4, 7)
    # an unknown path falls back to its nearest ancestor: the block mapping's
    # value starts on line 3, its key on line 2
    assert (spec.mark(("b", "zzz")).line, spec.mark(("b", "zzz")).column) == (3, 3)
    assert spec.mark(("b", "zzz"), key=True).line == 2


def test_expression_mark_plain_single_double_and_block():
    cases = [
        ("k: foo.bar(baz)\n", "baz"),
        ("k: 'it''s(baz)'\n", "baz"),
        ('k: "a\\"b(baz)"\n', "baz"),
        ("k: |\n  first\n  sec(baz)\n", "baz"),
        ("k: >-\n  first\n  sec(baz)\n", "baz"),
    ]
    for text, needle in cases:
        mark = _mark_of_char(text, ("k",), needle, text)
        assert (mark.line, mark.column) == _line_col(text, needle), text


def test_duplicate_keys_are_errors():
    _, diags = load_text("a: 1\nb: 2\na: 3\n", "s.yaml")
    assert [(d.code, d.line, d.column) for d in diags] == [("duplicate_key", 3, 1)]


def test_merge_keys_merge_as_yaml_says():
    spec, diags = load_text("base: &b {x: 1}\nother:\n  <<: *b\n  y: 2\n", "s.yaml")
    assert spec.data["other"] == {"x": 1, "y": 2} and not diags
    # of a list, the first mapping that has a key gives it; a key written beside them wins
    spec, diags = load_text("a: &a {x: 1}\nb: {<<: [*a, {x: 2, y: 3}], y: 4}\n", "s.yaml")
    assert list(spec.data["b"].items()) == [("x", 1), ("y", 4)] and not diags
    _, diags = load_text("a: {<<: 3}\n", "s.yaml")
    assert [(d.code, d.line, d.column) for d in diags] == [("invalid_merge", 1, 9)]
    _, diags = load_text("a: &a {x: {<<: *a}}\n", "s.yaml")
    assert [d.code for d in diags] == ["recursive_alias"]


def test_yaml_dates_become_strings_and_multiple_documents_are_rejected():
    spec, diags = load_text("d: 2024-01-02\n", "s.yaml")
    assert spec.data == {"d": "2024-01-02"} and not diags
    _, diags = load_text("a: 1\n---\nb: 2\n", "s.yaml")
    assert [d.code for d in diags] == ["multiple_documents"]


def test_alias_bomb_is_bounded():
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        prev = f"*a{i-1}"
        lines.append(f"a{i}: &a{i} [{', '.join([prev] * 10)}]")
    _, diags = load_text("\n".join(lines) + "\n", "s.yaml")
    assert [d.code for d in diags] == ["spec_too_large"]


def test_syntax_error_has_position_and_hint():
    _, diags = load_text("a: [1, 2\nb: 3\n", "s.yaml")
    assert diags[0].code == "yaml_syntax" and diags[0].line is not None and diags[0].hint
