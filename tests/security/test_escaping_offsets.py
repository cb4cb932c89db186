"""Spec text at every wrap offset, in every emitter that wraps, comments or quotes it.

The property tests of test_escaping.py draw random text; a break between a backslash
and the character it escapes needs the escape to land exactly on the wrap column, which
random text rarely does (a backslash at the docstring wrap column of an evaluator
description made ``\\N`` a SyntaxError and ``\\q`` an invalid escape). Here every
escape-relevant character, followed by what would complete an escape, is put at every
offset from the start of a line to past two wrap widths, at every indentation the code
generator uses, with and without spaces to break at. Each result must compile with
warnings as errors (``python -W error``) and read back as the text it was given.
"""

from __future__ import annotations

import ast
import io
import tokenize
import warnings

import pytest

from mapc.codegen.pysrc import Writer, comment_text, docstring_text, literal, wrap_escaped

#: Characters that matter to a docstring, a comment or a string literal, one of each kind: a
#: backslash, quotes, a line break and a control character (comment_text writes both as a
#: backslash escape: `\n`, `\u001b`), a paragraph separator, a comment sign, a hyphen and a
#: space (textwrap breaks after them).
RELEVANT = ["\\", '"', "'", "\n", "\x1b", "\u2029", "#", "-", " "]
#: What may follow a backslash to make an escape, a bad escape or the end of a string.
FOLLOWERS = ["N", "q", '"""', "\\", ""]
WIDTH = 99


def strict_parse(source: str) -> ast.Module:
    """Parse as ``python -W error`` does: an invalid escape (a warning) is a SyntaxError."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return ast.parse(source)


def _texts():
    """Each relevant character at each offset up to two widths and a bit (what follows matters
    only after a backslash), in one long word (broken anywhere) or after words (broken at
    spaces)."""
    for char in RELEVANT:
        for follower in FOLLOWERS if char == "\\" else ["N"]:
            for offset in range(0, 2 * WIDTH + 3):
                yield "a" * offset + char + follower + " tail"
                if offset % 5 == 0:
                    yield "word " * (offset // 5) + char + follower + " end"


def _same_text(got: str, expected: str) -> bool:
    """Wrapping may replace a space by a line break and indentation, and break long words."""
    return "".join(got.split()) == "".join(expected.split())


@pytest.mark.parametrize("level", [0, 2])
def test_wrapped_docstrings_at_every_offset(level):
    for text in _texts():
        for limit in (100, 2000):
            w = Writer(level)
            w.docstring(f"evaluators[0] {docstring_text(text, limit)}")
            # inside a function (the lines keep their indentation, one level of it is the def's)
            lines = [line[4 * (level - 1):] for line in w.lines] if level else w.lines
            source = ("def f():\n" if level else "") + "\n".join(lines) + "\n"
            tree = strict_parse(source)
            node = tree.body[0].body[0] if level else tree.body[0]
            assert isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant), (text, source)
            assert _same_text(node.value.value, "evaluators[0] " + comment_text(text, limit)), (text, source)
            assert len(tree.body) == 1 and (not level or len(tree.body[0].body) == 1), (text, source)
            assert all(len(line) <= WIDTH for line in w.lines) or len(text) > 2000, source


def test_wrap_escaped_never_ends_a_line_inside_an_escape():
    for text in _texts():
        escaped = docstring_text(text, 2000)
        for width in (34, 60, 89):
            lines = wrap_escaped(escaped, width)
            for line in lines:
                trailing = len(line) - len(line.rstrip("\\"))
                assert trailing % 2 == 0, (text, width, line)
                assert len(line) <= width, (text, width, line)
            assert _same_text("".join(lines), escaped)


def test_module_docstrings_at_every_offset():
    from mapc.codegen.pysrc import module_docstring

    for text in _texts():
        doc = f"About: {comment_text(text, 2000)}\n\n  indented: {comment_text(text, 2000)}"
        source = module_docstring(doc) + "\nX = 1\n"
        tree = strict_parse(source)
        assert len(tree.body) == 2, (text, source)
        assert _same_text(ast.get_docstring(tree, clean=False), doc), text


@pytest.mark.parametrize("level", [0, 2])
def test_comments_at_every_offset(level):
    for text in _texts():
        w = Writer(level)
        w.comment(text)
        source = "\n".join(line[4 * level:] for line in w.lines) + "\nX = 1\n"
        strict_parse(source)
        comments = [t for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type == tokenize.COMMENT]
        assert len(comments) == 1 and len(source.splitlines()) == 2, (text, source)


@pytest.mark.parametrize("level", [0, 3])
def test_wrapped_literals_at_every_offset(level):
    """Long statements are wrapped at their brackets (wrap.py): strings stay whole."""
    for text in _texts():
        if len(text) % 3:
            continue  # a third of them: each statement is long, the wrap is per element
        value = {"id": text, "items": [text[:50], text, "x"], "n": 1}
        w = Writer(level)
        w.line(f"VALUE = {literal(value)}")
        source = "\n".join(line[4 * level:] for line in w.lines) + "\n"
        tree = strict_parse(source)
        assert len(tree.body) == 1 and ast.literal_eval(tree.body[0].value) == value, source
