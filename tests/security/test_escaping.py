"""Property tests of the only ways spec text reaches generated files.

``pysrc.literal`` (Python data), ``pysrc.comment_text`` (a one-line comment),
``pysrc.docstring_text`` (inside a one-line docstring), ``module_source``'s module
docstring, and the template filters (``pyrepr``, ``comment``, ``yaml_str``, ``md``,
``json``) are fed arbitrary unicode, including every line-breaking character
Python or ``str.splitlines`` knows, quotes, backslashes and NUL. Each must keep the
text as data: parsing the surrounding code gives exactly the expected statements
and reads the value back unchanged.
"""

from __future__ import annotations

import ast
import io
import json
import tokenize

import jinja2
import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from mapc.codegen.pysrc import comment_text, docstring_text, literal
from mapc.codegen.templating import Safe, environment
from mapc.targets.rlviz.validator.manifest import parse_simple_yaml
from security_support import examples

SETTINGS = dict(deadline=None, suppress_health_check=list(HealthCheck))
#: Characters that end a line for Python's tokenizer or for str.splitlines (editors, diff tools).
LINE_BREAKS = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"
HOSTILE = list(LINE_BREAKS) + ["\x00", "'", '"', "\\", '"""', "'''", "\\\\", "#", "{{", "}}", "{%", "%}",
                                "\ufeff", "\u202e", "\t", "-->", "<!--", "<script>", "`", "${", "\x1b"]
# Any unicode except lone surrogates (a YAML or JSON spec cannot hold them), with hostile pieces mixed in.
texts = st.lists(st.one_of(st.text(st.characters(blacklist_categories=("Cs",)), max_size=6),
                           st.sampled_from(HOSTILE)), max_size=12).map("".join)
json_data = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False), texts),
    lambda c: st.one_of(st.lists(c, max_size=4), st.dictionaries(texts, c, max_size=4)),
    max_leaves=20,
)


@settings(max_examples=examples(300), **SETTINGS)
@given(value=json_data)
def test_literal_reads_back_as_the_same_value_and_is_one_line(value):
    source = literal(value)
    assert not any(ch in source for ch in LINE_BREAKS), source
    tree = ast.parse(f"X = {source}\n")
    assert len(tree.body) == 1 and isinstance(tree.body[0], ast.Assign)
    assert ast.literal_eval(source) == value


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_literal_refuses_non_finite_numbers(value):
    """`repr(inf)` is the name `inf`, not a literal: it must never be written as code."""
    with pytest.raises(ValueError):
        literal(value)
    with pytest.raises(ValueError):
        literal({"a": [value]})


@settings(max_examples=examples(300), **SETTINGS)
@given(text=texts, limit=st.sampled_from([10, 100, 2000]))
def test_comment_text_stays_inside_one_comment(text, limit):
    comment = comment_text(text, limit)
    assert not any(ch in comment for ch in LINE_BREAKS) and "\x00" not in comment
    source = f"# {comment}\nX = 1\n"
    tree = ast.parse(source)
    assert len(tree.body) == 1 and isinstance(tree.body[0], ast.Assign)
    tokens = [t for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type == tokenize.COMMENT]
    assert len(tokens) == 1 and tokens[0].start == (1, 0)
    assert len(source.splitlines()) == 2  # editors and diffs see the same two lines


@settings(max_examples=examples(300), **SETTINGS)
@given(text=texts)
def test_docstring_text_stays_inside_its_docstring(text):
    source = f'def f():\n    """{docstring_text(text, 2000)}"""\n    return 1\n'
    body = ast.parse(source).body[0].body
    assert len(body) == 2 and isinstance(body[0].value, ast.Constant) and isinstance(body[1], ast.Return)
    assert len(source.splitlines()) == 3


@settings(max_examples=examples(50), **SETTINGS)
@given(text=texts)
def test_module_docstring_cannot_be_closed_by_spec_text(text):
    """The module docstring of every generated file holds spec text (description, names)."""
    from mapc.codegen.program import module_source

    program = _tiny_program()
    source = module_source(program, entry="", docstring=f"About: {comment_text(text, 2000)}\n\nmore")
    tree = ast.parse(source)
    doc = ast.get_docstring(tree, clean=False)
    assert doc is not None and doc.startswith("About:")
    # long lines may be re-wrapped: the text is all there, only whitespace may differ
    assert "".join(comment_text(text, 2000).split()) in "".join(doc.split())
    assert not any(isinstance(node, ast.Expr) for node in tree.body[1:]), "only the docstring is an expression"


@pytest.mark.parametrize("text", [
    "a" * 88 + '"""""' + "+__import__('os').system('id')#",  # a forced break right after an escaping backslash
    ("\\" * 7 + '"""""') * 40,  # escapes across every possible break position
    "x" * 300 + "\\",
])
def test_a_long_docstring_line_cannot_be_broken_inside_an_escape(text):
    """Docstring lines may be re-wrapped; a break between a backslash and what it escapes would
    make a line continuation and could close the docstring early (code injection)."""
    from mapc.codegen.program import module_source

    source = module_source(_tiny_program(), entry="", docstring=text)
    tree = ast.parse(source)
    doc = ast.get_docstring(tree, clean=False)
    assert doc is not None and "".join(doc.split()) == "".join(text.split())
    assert not any(isinstance(node, ast.Expr) for node in tree.body[1:]), "only the docstring is an expression"


_PROGRAM = None


def _tiny_program():
    global _PROGRAM
    if _PROGRAM is None:
        from mapc.codegen.program import build_program
        from mapc.spec import load_spec_text

        spec, diags = load_spec_text(
            "mapc: 1\nname: t\nsource: {format: f, container: jsonl, probe: {require: [a]}}\n"
            "records: {events: {each: '@', kind: log, data: '@'}}\n")
        assert spec is not None, [d.format() for d in diags]
        _PROGRAM = build_program(spec)
    return _PROGRAM


# --- template filters -------------------------------------------------------------------------
_TEMPLATES: dict[str, jinja2.Template] = {}


def _render(source: str, **context) -> str:
    if source not in _TEMPLATES:
        _TEMPLATES[source] = environment().from_string(source)
    return _TEMPLATES[source].render(**context)


@settings(max_examples=examples(200), **SETTINGS)
@given(text=texts)
def test_pyrepr_and_comment_filters_keep_text_as_data(text):
    source = _render("# {{ v|comment }}\nX = {{ v|pyrepr }}\n", v=text)
    tree = ast.parse(source)
    assert len(tree.body) == 1 and ast.literal_eval(tree.body[0].value) == text


@settings(max_examples=examples(200), **SETTINGS)
@given(text=texts)
@example(text="\U0001f642 beyond U+FFFF")  # was written as a surrogate pair that YAML reads as two characters
@example(text="tab\tnul\x00 del\x7f nel\x85 \u2028")
def test_yaml_str_reads_back_in_rlviz_and_in_yaml(text):
    source = _render("name: {{ v|yaml_str }}\ndescription: {{ v|yaml_str }}\n", v=text)
    assert len(source.splitlines()) == 2
    assert parse_simple_yaml(source) == {"name": text, "description": text}
    assert yaml.safe_load(source) == {"name": text, "description": text}


@settings(max_examples=examples(200), **SETTINGS)
@given(text=texts)
@example(text="\x1b[31m red \x00 \u202e")  # control and bidi characters reached README.md as they were
def test_md_filter_is_one_line_of_inert_text(text):
    out = _render("{{ v|md }}", v=text)
    assert not any(ch in out for ch in LINE_BREAKS)
    assert "<" not in out and ">" not in out and "`" not in out
    assert all(ch == " " or ch.isprintable() for ch in out), out


@settings(max_examples=examples(200), **SETTINGS)
@given(value=json_data)
def test_json_filter_reads_back(value):
    assert json.loads(_render("{{ v|json }}", v=value)) == value
    assert json.loads(_render("{{ v|json_pretty }}", v=value)) == value


@pytest.mark.parametrize("value", ["text", "'; import os #", ["a"], {"k": "v"}, None, True])
def test_a_template_cannot_print_an_unmarked_value(value):
    with pytest.raises(jinja2.TemplateError, match="unmarked value"):
        _render("X = {{ v }}\n", v=value)


def test_only_filtered_values_are_safe():
    assert _render("{{ v }}", v=Safe("already safe")) == "already safe"
    assert _render("{{ n }}", n=3) == "3"
