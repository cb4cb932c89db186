"""Spec text placed in generated docstrings cannot end the docstring (code injection)."""

from __future__ import annotations

import ast

import pytest

from mapc.codegen.pysrc import docstring_text


@pytest.mark.parametrize("text", [
    'a"""; import os; os.system("x") #',
    "ends with a backslash \\",
    'quote at the end"',
    "line\nbreak and \u2028 separator",
    "'''single''' and \"\"\"double\"\"\"",
])
def test_docstring_text_stays_inside_its_docstring(text):
    source = f'def f():\n    """{docstring_text(text, 1000)}"""\n    return 1\n'
    tree = ast.parse(source)
    body = tree.body[0].body
    assert len(body) == 2 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
    assert "\n" not in body[0].value.value
