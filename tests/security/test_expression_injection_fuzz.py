"""Differential fuzzing of the expression compiler on hostile names and literals.

Extends tests/test_expressions_fuzz.py (random grammar, ``jmespath.search`` as the
reference) with what a hostile spec or trace holds: field names and string
literals made of quotes, backslashes, braces, control characters, line separators,
NUL and Python code, in quoted identifiers, raw string literals and JSON literals,
on documents whose keys are such strings. The compiled code must agree with the
reference, and the Python it generates must hold that text only inside string
literals: the marker ``PWN`` never appears in a name, keyword or operator token.

``MAPC_FUZZ_EXAMPLES`` raises the number of examples (see docs/security.md).
"""

from __future__ import annotations

import io
import json
import tokenize

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mapc.expressions import ExpressionError, compile_expression
from security_support import examples
from test_expressions_fuzz import _extend, check_agreement

PAYLOADS = ["PWN", "'PWN'", '"PWN"', "PWN\\", "\\'PWN", "\\\"PWN", "`PWN`", "PWN\n", "\u2028PWN", "PWN\x00",
            "{PWN}", "{{PWN}}", "');__import__('os').system('PWN')#", '"""PWN', "PWN\r\x85\x0c", "$PWN", "@PWN",
            "\\u0000PWN", "\\nPWN", "PWN\ud7ff\ufeff"]
hostile_text = st.one_of(
    st.sampled_from(PAYLOADS),
    st.tuples(st.text(st.characters(blacklist_categories=("Cs",)), max_size=5), st.sampled_from(PAYLOADS))
    .map("".join),
)
keys = st.one_of(hostile_text, st.sampled_from(["a", "b"]))


def quoted_identifier(name: str) -> str:
    return json.dumps(name)


def raw_string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def json_literal(value) -> str:
    return "`" + json.dumps(value).replace("`", "\\`") + "`"


hostile_leaves = st.one_of(
    keys.map(quoted_identifier),
    keys.map(quoted_identifier),
    hostile_text.map(raw_string),
    hostile_text.map(json_literal),
    st.dictionaries(keys, hostile_text, max_size=2).map(json_literal),
    st.just("@"),
)
hostile_expressions = st.recursive(hostile_leaves, _extend, max_leaves=6)
scalars = st.one_of(st.none(), st.booleans(), st.integers(-2, 2), hostile_text)
documents = st.recursive(
    scalars,
    lambda c: st.one_of(st.lists(c, max_size=3), st.dictionaries(keys, c, max_size=4)),
    max_leaves=15,
)

SETTINGS = dict(deadline=None, suppress_health_check=list(HealthCheck))


def _only_in_strings(source: str) -> None:
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if "PWN" in tok.string:
            assert tok.type in (tokenize.STRING, tokenize.COMMENT), (tok, source)


@settings(max_examples=examples(300), **SETTINGS)
@given(expression=hostile_expressions, data=st.one_of(st.dictionaries(keys, documents, max_size=4), documents))
def test_hostile_names_and_literals_agree_with_jmespath_and_stay_data(expression, data):
    check_agreement(expression, data)
    try:
        ce = compile_expression(expression)
    except ExpressionError:
        return
    source = ce.function_source("f")
    compile(source, "<expression>", "exec")
    _only_in_strings(source)
    inline = ce.inline_source("data", "scope")
    if inline is not None:
        _only_in_strings(inline)
