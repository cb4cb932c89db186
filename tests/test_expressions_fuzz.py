"""Differential fuzzing: compiled expressions against ``jmespath.search``.

Random JMESPath expressions (built from a grammar covering fields, indexes,
slices, projections, filters, pipes, multiselects, functions, literals,
comparisons and and/or/not) are evaluated on random JSON documents by both the
reference interpreter and mapc's compiled code; they must agree on the result
(compared with types: bool is not int, int is not float) or on the error
category.  When an expression has an ``inline_source``, that is checked too.

The default run is short; set ``MAPC_FUZZ_EXAMPLES`` (e.g. 20000) for a longer one.
"""

from __future__ import annotations

import json
import math
import os
import warnings

import jmespath
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jmespath import exceptions as jp_exc

from mapc.core import runtime_files as runtime
from mapc.expressions.compiler import helpers_in
from mapc.expressions import (
    ExpressionError,
    ExpressionTypeError,
    ExpressionValueError,
    compile_expression,
)
from mapc.expressions.parser import _PositionParser

MAX_EXAMPLES = int(os.environ.get("MAPC_FUZZ_EXAMPLES", "300"))

KEYS = ["a", "b", "c", "foo", "bar", "with space"]

# --- documents ---------------------------------------------------------------
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from([0.0, 1.5, -2.5, 10.0]),
    st.sampled_from(["", "a", "b", "abc", "1", "2.5", "A", "a b"]),
)
documents = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.sampled_from(KEYS), children, max_size=4),
    ),
    max_leaves=25,
)
top_documents = st.one_of(st.dictionaries(st.sampled_from(KEYS), documents, max_size=5), documents)

# --- expressions -------------------------------------------------------------
fields = st.sampled_from(["a", "b", "c", "foo", "bar", '"with space"', '"a"'])
literals = st.sampled_from(
    [
        "`1`", "`0`", "`-1`", "`1.5`", "`2`", '`"a"`', "'a'", "''", "'abc'", "`true`",
        "`false`", "`null`", "`[]`", "`[1, 2]`", '`["a", "b"]`', '`{"a": 1}`', "`{}`",
        '`"1"`', '`[0, "a"]`', "'b'",
    ]
)
leaves = st.one_of(fields, fields, fields, literals, st.just("@"))
indexes = st.sampled_from(["0", "1", "-1", "-2", "3"])
slices = st.sampled_from(["::", ":", "1:", ":1", "::-1", "-2:", "0:2", "1::2", "::2", "::0"])
comparators = st.sampled_from(["==", "!=", "<", "<=", ">", ">="])

# function name -> argument kinds ("x": any expression, "&": expref, "o": object)
FUNCTION_ARGS = {
    "abs": "x", "avg": "x", "ceil": "x", "floor": "x", "contains": "xx",
    "ends_with": "xx", "starts_with": "xx", "join": "xx", "keys": "x", "values": "x",
    "length": "x", "map": "&x", "max": "x", "min": "x", "max_by": "x&", "min_by": "x&",
    "sort": "x", "sort_by": "x&", "sum": "x", "to_array": "x", "to_number": "x",
    "to_string": "x", "type": "x", "reverse": "x", "not_null": "xx", "merge": "oo",
}


def _objects(children):
    return st.one_of(
        st.sampled_from(['`{"a": 1}`', "`{}`", '`{"b": [1]}`']),
        st.tuples(children).map(lambda t: f"{{a: {t[0]}}}"),
    )


def _function(children):
    def build(name):
        parts = []
        for kind in FUNCTION_ARGS[name]:
            if kind == "x":
                parts.append(children)
            elif kind == "&":
                parts.append(children.map(lambda e: f"&{e}"))
            else:
                parts.append(_objects(children))
        return st.tuples(*parts).map(lambda args: f"{name}({', '.join(args)})")

    return st.sampled_from(sorted(FUNCTION_ARGS)).flatmap(build)


def _extend(children):
    c = children
    return st.one_of(
        st.tuples(c, fields).map(lambda t: f"{t[0]}.{t[1]}"),
        st.tuples(c, indexes).map(lambda t: f"{t[0]}[{t[1]}]"),
        st.tuples(c, slices).map(lambda t: f"{t[0]}[{t[1]}]"),
        st.tuples(c, fields).map(lambda t: f"{t[0]}[*].{t[1]}"),
        c.map(lambda e: f"{e}[*]"),
        c.map(lambda e: f"{e}[]"),
        st.tuples(c, fields).map(lambda t: f"{t[0]}[].{t[1]}"),
        st.tuples(c, fields).map(lambda t: f"{t[0]}.*.{t[1]}"),
        c.map(lambda e: f"{e}.*"),
        st.tuples(c, c).map(lambda t: f"{t[0]}[?{t[1]}]"),
        st.tuples(c, c, fields).map(lambda t: f"{t[0]}[?{t[1]}].{t[2]}"),
        st.tuples(c, c).map(lambda t: f"{t[0]} | {t[1]}"),
        st.tuples(c, c).map(lambda t: f"({t[0]}) || ({t[1]})"),
        st.tuples(c, c).map(lambda t: f"({t[0]}) && ({t[1]})"),
        c.map(lambda e: f"!({e})"),
        st.tuples(c, comparators, c).map(lambda t: f"({t[0]}) {t[1]} ({t[2]})"),
        st.tuples(fields, comparators, literals).map(lambda t: f"{t[0]} {t[1]} {t[2]}"),
        st.tuples(c, c).map(lambda t: f"[{t[0]}, {t[1]}]"),
        st.tuples(c, c).map(lambda t: f"{{x: {t[0]}, y: {t[1]}}}"),
        st.tuples(c, c, c).map(lambda t: f"{t[0]}.[{t[1]}, {t[2]}]"),
        st.tuples(c, c).map(lambda t: f"{t[0]}.{{k: {t[1]}}}"),
        c.map(lambda e: f"({e})"),
        _function(c),
    )


expressions = st.recursive(leaves, _extend, max_leaves=12)

# Mostly well-formed expressions, plus some truncated or spliced ones (syntax errors).
JUNK = ["", "]", "[", ".", "(", ")", "|", "||", "&", "!", "==", "<", ",", ":", "{", "}", "`", "'",
        "\"", "*", "[?", "[]", "@", "-", "=", "1"]
fuzzed_expressions = st.one_of(
    expressions,
    expressions,
    expressions,
    expressions,
    st.tuples(expressions, st.integers(0, 30)).map(lambda t: t[0][: t[1]]),
    st.tuples(expressions, st.integers(0, 30), st.sampled_from(JUNK)).map(
        lambda t: t[0][: t[1]] + t[2] + t[0][t[1]:]
    ),
)


# --- comparison ----------------------------------------------------------------
def _same(a, b) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return a == b


def _reference(expression, data):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return "ok", jmespath.search(expression, data)
    except (jp_exc.ArityError, jp_exc.VariadictArityError):
        return "error", "invalid-arity"
    except (jp_exc.ParseError, jp_exc.EmptyExpressionError):
        return "error", "syntax"
    except jp_exc.UnknownFunctionError:
        return "error", "unknown-function"
    except jp_exc.JMESPathTypeError:
        return "error", "invalid-type"
    except TypeError:  # the reference crashes on e.g. "a" < 1
        return "error", "invalid-type"
    except (ValueError, OverflowError):  # e.g. slice step 0, ceil(inf)
        return "error", "invalid-value"


def _ours(expression, data):
    try:
        ce = compile_expression(expression)
    except ExpressionError as e:
        return None, ("compile-error", e.kind)
    try:
        return ce, ("ok", ce(data))
    except ExpressionTypeError:
        return ce, ("error", "invalid-type")
    except ExpressionValueError:
        return ce, ("error", "invalid-value")


#: Error kinds mapc detects when compiling, where the reference only reports them
#: if evaluation gets there (and may hit another error first, or none at all):
#: unknown functions, arity, literal arguments of the wrong type, slice step 0.
STATIC_KINDS = ("unknown-function", "invalid-arity", "invalid-type", "invalid-value")


def _arithmetic(expression) -> bool:
    """Whether mapc reads ``expression`` as JEP-16 arithmetic (``a - b``), which the reference
    package lacks (a syntax error there); its semantics are tested in test_expressions.py."""
    try:
        node = _PositionParser()._do_parse(expression).parsed
    except Exception:  # noqa: BLE001 - not parsed by mapc either: compared as usual
        return False
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, dict):
            if "operator" in n:
                return True
            stack.extend(n.get("children", []))
    return False


def check_agreement(expression, data):
    expected = _reference(expression, data)
    if expected == ("error", "syntax") and _arithmetic(expression):
        return
    ce, got = _ours(expression, data)
    if got[0] == "compile-error":
        if got[1] in STATIC_KINDS and expected != ("error", "syntax"):
            return
        assert expected == ("error", got[1]), (expression, data, expected, got)
        return
    if expected[0] == "ok" and got[0] == "ok":
        assert _same(got[1], expected[1]), (expression, data, expected, got)
    else:
        assert got == expected, (expression, data, expected, got)
    check_object_root(ce, data, got)
    inline = ce.inline_source("data", "scope")
    if inline is not None:
        ns = runtime.namespace(ce.inline_helpers("data", "scope"))
        ns.update(data=data, scope={})
        try:
            value = ("ok", eval(inline, ns))  # noqa: S307 - our own generated code
        except TypeError:
            value = ("error", "invalid-type")
        assert value[0] == got[0], (expression, inline, value, got)
        if value[0] == "ok":
            assert _same(value[1], got[1]), (expression, inline, value, got)


def check_object_root(ce, data, got):
    """The function compiled for an object root (``object_root=True``) agrees on an object,
    and, when the expression reads the root only as an object, on ``{}`` for any other root
    (a generated adapter passes the element's object alias then)."""
    if isinstance(data, dict):
        root = data
    elif ce.reads_root_as_object:
        root = {}
    else:
        return
    source = ce.function_source("f", object_root=True)
    ns = runtime.namespace(helpers_in(source))
    exec(source, ns)  # noqa: S102 - our own generated code
    try:
        value = ("ok", ns["f"](root, {}))
    except Exception as e:  # the namespace's own classes of ExpressionTypeError, ...ValueError
        kinds = {"ExpressionTypeError": "invalid-type", "ExpressionValueError": "invalid-value"}
        if type(e).__name__ not in kinds:
            raise
        value = ("error", kinds[type(e).__name__])
    assert value == got if value[0] == "error" else value[0] == got[0], (ce.text, data, source)
    if value[0] == "ok":
        assert _same(value[1], got[1]), (ce.text, data, source, value, got)


@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(expression=fuzzed_expressions, data=top_documents)
def test_compiled_matches_jmespath(expression, data):
    check_agreement(expression, data)


@pytest.mark.parametrize(
    "expression, data",
    [
        ("a < 'b'", {"a": 1}),  # the reference crashes: type error on both sides
        ("contains('abc', `1`)", {}),
        ("min_by(@, &a)", [{"a": 1}, {"a": "x"}]),
        ("[?a == `0`]", [{"a": False}, {"a": 0}, {"a": 0.0}]),
        ("[?a != `1`]", [{"a": True}, {"a": 1}, {"a": 2}]),
        ("a[::-1][?@ > `0`] | [0]", {"a": [3, -1, 2]}),
        ("!a || b && c", {"a": 0, "b": [], "c": "x"}),
        # "@ is not null" known inside a multiselect must not leak into &expr bodies
        ("map(&[a, map(&[c], b)], @)", [{"a": 1, "b": [None, {"c": 2}]}]),
        ("[a, map(&{x: @}, b)]", {"a": 1, "b": [None, 2]}),
        ("[a, b[*].[c, [d]]]", {"a": 1, "b": [None, {"c": 2}, 3]}),
        # a long comprehension whose loop line starts `[jp_path(item1, ("a", "a"))`: its
        # operand split tokenized the unbalanced rest of that line (tokenize.TokenError)
        ("a.*.[a.a, a][*].*", {}),
        ("a.*.[a.a, a][*].*", {"a": {"x": {"a": {"a": {"b": 1}}}, "y": 3}}),
    ],
)
def test_known_tricky_cases(expression, data):
    check_agreement(expression, data)


# --- variables ---------------------------------------------------------------------
# A variable's value does not depend on the current element, exactly like a JSON
# literal: `$v` with scope {"v": X} must behave like the reference on `X` spelled as
# a backtick literal.
var_leaves = st.one_of(leaves, st.sampled_from(["$v", "$w", "$v.a", "$w[0]"]))
var_expressions = st.recursive(var_leaves, _extend, max_leaves=10)


def _as_literal(value) -> str:
    return "`" + json.dumps(value).replace("`", "\\`") + "`"


@settings(
    max_examples=max(MAX_EXAMPLES // 3, 50),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(expression=var_expressions, data=top_documents, v=documents, w=documents)
def test_variables_behave_like_literals(expression, data, v, w):
    substituted = (
        expression.replace("$v", "(" + _as_literal(v) + ")").replace("$w", "(" + _as_literal(w) + ")")
    )
    expected = _reference(substituted, data)
    try:
        ce = compile_expression(expression)
    except ExpressionError as e:
        if e.kind in STATIC_KINDS and expected != ("error", "syntax"):
            return
        assert expected == ("error", e.kind), (expression, substituted, e)
        return
    try:
        got = ("ok", ce(data, {"v": v, "w": w}))
    except ExpressionTypeError:
        got = ("error", "invalid-type")
    except ExpressionValueError:
        got = ("error", "invalid-value")
    if expected[0] == "ok" and got[0] == "ok":
        assert _same(got[1], expected[1]), (expression, substituted, data, expected, got)
    else:
        assert got == expected, (expression, substituted, data, expected, got)
