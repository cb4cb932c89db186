"""Unit tests for mapc.expressions: mapc functions, variables, errors, static facts,
inline sources, standalone generated code and code-injection safety."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import textwrap
import warnings

import jmespath
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mapc.core import runtime_files as runtime
from mapc.expressions import (
    FUNCTIONS,
    CompiledExpression,
    ExpressionError,
    ExpressionTypeError,
    ExpressionValueError,
    compile_expression,
)
from mapc.expressions.compiler import helpers_in, literal_source, string_source


def run(text, data=None, scope=None, **kw):
    return compile_expression(text, **kw)(data, scope)


def error_of(text, **kw) -> ExpressionError:
    with pytest.raises(ExpressionError) as info:
        compile_expression(text, **kw)
    return info.value


def reference(text, data):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return jmespath.search(text, data)


DOC = {
    "s": "a-b-c",
    "path": "/x/y/z.txt",
    "n": 2.567,
    "objs": [
        {"id": 1, "v": "a", "w": None},
        {"id": "1", "v": None, "w": 2},
        {"id": 2, "v": "c"},
        {"v": "no key"},
    ],
    "json": '{"a": [1, 2]}',
    "double": json.dumps(json.dumps({"a": 1})),
}


# --- mapc functions --------------------------------------------------------------
class TestStableId:
    def test_known_digests(self):
        # sha256 of the canonical JSON '["abc",1]' and of '[]', first 16 hex digits
        assert run("stable_id('t', 'abc', `1`)") == "t-9b3ca09b6d8421fe"
        assert run("stable_id('t')") == "t-4f53cda18c2baa0c"

    def test_canonical_json_sorts_keys_and_keeps_unicode(self):
        # canonical JSON of [{"b": "é", "a": 1}] is '[{"a":1,"b":"é"}]' (UTF-8)
        assert run("stable_id('t', @)", {"b": "é", "a": 1}) == "t-0947ff8502bae37e"

    def test_parts_from_data(self):
        assert run("stable_id('t', s, `1`)", {"s": "abc"}) == "t-9b3ca09b6d8421fe"

    def test_prefix_must_be_string(self):
        with pytest.raises(ExpressionTypeError):
            run("stable_id(n, 'x')", {"n": 1})
        assert error_of("stable_id(`1`)").kind == "invalid-type"

    def test_deterministic_across_hash_seeds(self, tmp_path):
        source = compile_expression("stable_id('t', @)").python_source
        script = tmp_path / "prog.py"
        script.write_text(source + "\nprint(expression({'x': [1, {'b': 2, 'a': 'ü'}], 'y': None}))\n")
        outputs = set()
        for seed in ("0", "1", "12345"):
            env = {"PYTHONHASHSEED": seed, "PATH": "/usr/bin:/bin"}
            out = subprocess.run([sys.executable, "-S", str(script)], env=env, check=True,
                                 capture_output=True, text=True).stdout
            outputs.add(out)
        assert len(outputs) == 1
        assert outputs.pop().strip() == run("stable_id('t', @)", {"x": [1, {"b": 2, "a": "ü"}],
                                                                 "y": None})


class TestJsonFunctions:
    def test_parse_json(self):
        assert run("parse_json(json)", DOC) == {"a": [1, 2]}
        assert run("parse_json(parse_json(double))", DOC) == {"a": 1}
        assert run("parse_json('not json')") is None
        assert run("parse_json('[1, NaN]')") is None
        assert run("parse_json('Infinity')") is None
        assert run("parse_json('1e999')") is None
        assert run("parse_json(n)", DOC) == 2.567
        assert run("parse_json(objs[0])", DOC) == {"id": 1, "v": "a", "w": None}

    def test_to_json(self):
        assert run("to_json(objs[0])", DOC) == '{"id":1,"v":"a","w":null}'
        assert run("to_json(@)", {"b": "é", "a": [1]}) == '{"b":"é","a":[1]}'
        with pytest.raises(ExpressionValueError):
            run("to_json(to_number('nan'))")


class TestIso8601:
    @pytest.mark.parametrize(
        "text, expected",
        [
            ("iso8601(`1700000000`)", "2023-11-14T22:13:20Z"),
            ("iso8601(`1700000000.5`)", "2023-11-14T22:13:20.500000Z"),
            ("iso8601(`1700000000123`, 'ms')", "2023-11-14T22:13:20.123000Z"),
            ("iso8601(`1700000000123456`, 'us')", "2023-11-14T22:13:20.123456Z"),
            ("iso8601(`1700000000123456789`, 'ns')", "2023-11-14T22:13:20.123456Z"),
            ("iso8601(`0`)", "1970-01-01T00:00:00Z"),
            ("iso8601(`-1`)", "1969-12-31T23:59:59Z"),
            ("iso8601('2024-01-02T03:04:05+02:00')", "2024-01-02T01:04:05Z"),
            ("iso8601('2024-01-02T03:04:05.123Z')", "2024-01-02T03:04:05.123000Z"),
            ("iso8601('2024-01-02 03:04:05')", "2024-01-02T03:04:05Z"),  # naive = UTC
            ("iso8601('2024-01-02')", "2024-01-02T00:00:00Z"),
            ("iso8601('yesterday')", None),
            ("iso8601(`true`)", None),
            ("iso8601(`null`)", None),
            ("iso8601(`[1]`)", None),
            ("iso8601(`1e20`)", None),  # out of range
            ("iso8601('0001-01-01T00:00:00+01:00')", None),  # out of range in UTC
        ],
    )
    def test_values(self, text, expected):
        assert run(text) == expected

    def test_unit_from_data(self):
        assert run("iso8601(t, u)", {"t": 1500, "u": "ms"}) == "1970-01-01T00:00:01.500000Z"
        with pytest.raises(ExpressionValueError):
            run("iso8601(t, u)", {"t": 1, "u": "hours"})
        err = error_of("iso8601(t, 'hours')")
        assert (err.kind, err.column) == ("invalid-value", 11)


class TestCollections:
    def test_get(self):
        assert run("get(objs, `-1`)", DOC) == {"v": "no key"}
        assert run("get(objs, `10`)", DOC) is None
        assert run("get(@, 's')", DOC) == "a-b-c"
        assert run("get(@, k)", {"k": "x", "x": 5}) == 5
        assert run("get(objs, 's')", DOC) is None
        assert run("get(s, `0`)", DOC) is None
        assert run("get(objs, `true`)", DOC) is None

    def test_items_and_from_items(self):
        assert run("items(objs[0])", DOC) == [["id", 1], ["v", "a"], ["w", None]]
        assert run("from_items(items(objs[0]))", DOC) == DOC["objs"][0]
        assert run("from_items(`[[\"a\", 1], [\"a\", 2]]`)") == {"a": 2}
        with pytest.raises(ExpressionTypeError):
            run("from_items(`[[1, 2]]`)")
        with pytest.raises(ExpressionTypeError):
            run("items(s)", DOC)

    def test_index_by(self):
        assert run("index_by(objs, &id)", DOC) == {
            "1": {"id": 1, "v": "a", "w": None},
            "2": {"id": 2, "v": "c"},
        }

    def test_unique_by(self):
        assert run("unique_by(objs, &id)", DOC) == [DOC["objs"][0], DOC["objs"][2],
                                                      DOC["objs"][3]]

    def test_merge_by(self):
        data = {"rows": [
            {"id": "a", "x": 1, "y": None},
            {"id": "b", "x": 5},
            {"id": "a", "x": None, "y": 2, "z": 3},
            {"x": 9},
        ]}
        assert run("merge_by(rows, &id)", data) == [
            {"id": "a", "x": 1, "y": 2, "z": 3},
            {"id": "b", "x": 5},
        ]
        assert data["rows"][0] == {"id": "a", "x": 1, "y": None}  # input untouched
        with pytest.raises(ExpressionTypeError):
            run("merge_by(`[1]`, &@)")

    def test_group_by(self):
        assert run("group_by(objs, &id)", DOC) == {
            "1": [DOC["objs"][0], DOC["objs"][1]],
            "2": [DOC["objs"][2]],
        }
        assert list(run("group_by(@, &k)", [{"k": "b"}, {"k": "a"}, {"k": "b"}])) == ["b", "a"]

    def test_key_must_be_string_or_number(self):
        with pytest.raises(ExpressionTypeError):
            run("group_by(@, &k)", [{"k": [1]}])
        with pytest.raises(ExpressionTypeError):
            run("index_by(@, &k)", [{"k": True}])
        with pytest.raises(ExpressionTypeError):
            run("unique_by(s, &k)", DOC)

    def test_coalesce_and_concat(self):
        assert run("coalesce(missing, `null`, s, n)", DOC) == "a-b-c"
        assert run("coalesce(missing)", DOC) is None
        assert run("concat(objs[*].id, missing, `[9]`)", DOC) == [1, "1", 2, 9]
        assert run("concat(missing)", DOC) == []
        with pytest.raises(ExpressionTypeError):
            run("concat(s)", DOC)
        assert error_of("concat(`1`)").kind == "invalid-type"


class TestStrings:
    def test_string_functions(self):
        assert run("split(s, '-')", DOC) == ["a", "b", "c"]
        assert run("split('abc', '')") == ["a", "b", "c"]
        assert run("replace(s, '-', '+')", DOC) == "a+b+c"
        assert run("lower('AbC')") == "abc"
        assert run("upper(s)", DOC) == "A-B-C"
        assert run("trim('  x \t\n')") == "x"
        assert run("sha256('abc')") == (
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        )
        assert run("sha256('é')") == (
            "a6e5ab8d1f6e8fa0b0a5cf0f0d2c82f5a4f0b54ef0b3fae3ed1b4e37d4bf6b7d"[:0]
            + __import__("hashlib").sha256("é".encode()).hexdigest()
        )
        assert run("basename(path)", DOC) == "z.txt"
        assert run("dirname(path)", DOC) == "/x/y"
        assert run("basename('dir/')") == ""

    @pytest.mark.parametrize("text", ["lower(n)", "upper(`null`)", "trim(objs)",
                                      "split(s, n)", "replace(s, 'a', n)", "sha256(n)",
                                      "basename(n)", "dirname(objs)"])
    def test_string_type_errors(self, text):
        try:
            compile_expression(text)
        except ExpressionError as e:
            assert e.kind == "invalid-type"
        else:
            with pytest.raises(ExpressionTypeError):
                run(text, DOC)

    def test_round(self):
        assert run("round(n)", DOC) == 3
        assert type(run("round(n)", DOC)) is int
        assert run("round(n, `1`)", DOC) == 2.6
        assert run("round(`2.5`)") == 2  # half to even
        assert run("round(`7`, `-1`)") == 10
        with pytest.raises(ExpressionTypeError):
            run("round(s)", DOC)
        assert error_of("round(n, `1.5`)").kind == "invalid-type"


class TestRegex:
    def test_extract(self):
        assert run(r"regex_extract(s, '(\w)-(\w)')", DOC) == "a"
        assert run(r"regex_extract(s, '(\w)-(\w)', `2`)", DOC) == "b"
        assert run(r"regex_extract(s, '(\w)-(\w)', `0`)", DOC) == "a-b"
        assert run(r"regex_extract(s, '\w-(?P<x>\w)', 'x')", DOC) == "b"
        assert run(r"regex_extract(s, 'b-\w')", DOC) == "b-c"
        assert run("regex_extract(s, 'z')", DOC) is None
        assert run("regex_extract(n, 'z')", DOC) is None

    def test_findall_and_test(self):
        assert run(r"regex_findall(s, '\w')", DOC) == ["a", "b", "c"]
        assert run(r"regex_findall(s, '(\w)-')", DOC) == ["a", "b"]
        assert run("regex_findall(n, 'x')", DOC) is None
        assert run("regex_test(s, '^a')", DOC) is True
        assert run("regex_test(s, '^b')", DOC) is False
        assert run("regex_test(n, '^a')", DOC) is False
        assert run("objs[?regex_test(v, '^[ab]')].id", DOC) == [1]

    def test_pattern_must_be_literal(self):
        err = error_of("regex_test(s, pattern)")
        assert (err.kind, err.column) == ("invalid-value", 14)
        err = error_of("regex_extract(s, `1`)")
        assert err.kind == "invalid-value"

    def test_invalid_pattern_points_at_argument(self):
        err = error_of("a || regex_findall(s,   '(unclosed')")
        assert (err.kind, err.column) == ("invalid-value", 24)
        assert "unterminated" in err.message

    def test_invalid_group(self):
        assert error_of(r"regex_extract(s, '(\w)', `2`)").kind == "invalid-value"
        assert error_of(r"regex_extract(s, '(\w)', 'name')").kind == "invalid-value"
        with pytest.raises(ExpressionValueError):
            run(r"regex_extract(s, '(\w)', g)", {"s": "a", "g": 3})


# --- variables ---------------------------------------------------------------------
class TestVariables:
    SCOPE = {"case": {"id": "c1", "tags": ["x", "y"]}, "index": 3,
             "trajectory": {"id": "t9"}}

    def test_lookup(self):
        assert run("$case.id", None, self.SCOPE) == "c1"
        assert run("$case.tags[0]", None, self.SCOPE) == "x"
        assert run("$index", None, self.SCOPE) == 3
        assert run("$missing", None, self.SCOPE) is None
        assert run("$case.id") is None  # no scope at all

    def test_in_functions(self):
        text = "join('-', [$trajectory.id, to_string($index)])"
        assert run(text, {}, self.SCOPE) == "t9-3"
        # JMESPath: a multiselect applied to null is null, whatever it contains
        assert run("[$index]", None, self.SCOPE) is None
        ce = compile_expression(text)
        assert ce.variables == ("index", "trajectory")
        assert ce.functions == ("join", "to_string")

    def test_in_filters_and_projections(self):
        data = {"rows": [{"case": "c1", "v": 1}, {"case": "c2", "v": 2}, {"case": "c1", "v": 3}]}
        assert run("rows[?case == $case.id].v", data, self.SCOPE) == [1, 3]
        assert run("rows[*].[v, $index]", data, self.SCOPE) == [[1, 3], [2, 3], [3, 3]]
        assert run("sort_by(rows, &v)[?case != $case.id].v", data, self.SCOPE) == [2]
        assert run("map(&[v, $case.id], rows)", data, self.SCOPE)[1] == [2, "c1"]
        assert run("$case.tags[*] | [?@ == 'y']", None, self.SCOPE) == ["y"]

    def test_dollar_inside_strings_is_not_a_variable(self):
        data = {"$x": 1, "a\\$": 2}
        assert run("'$x'") == "$x"
        assert run('"$x"', data) == 1
        assert run('`"$x"`') == "$x"
        assert run(r"'it\'s $x'") == "it's $x"
        assert run(r'"a\\$"', data) == 2
        assert compile_expression("'$x'").variables == ()

    def test_allowed_variables(self):
        assert run("$case.id", None, self.SCOPE, variables=["case", "index"]) == "c1"
        err = error_of("a || $cse.id", variables=["case", "index"])
        assert err.kind == "unknown-variable"
        assert err.column == 5
        assert err.hint == "did you mean '$case'?"
        err = error_of("$zzz", variables={"case"})
        assert err.hint == "available: $case"

    def test_malformed_dollar(self):
        for text, column in [("$", 0), ("a || $", 5), ("$1", 0), ("[$ a]", 1), ("$.a", 0)]:
            err = error_of(text)
            assert (err.kind, err.column) == ("syntax", column), text
        err = error_of("foo.$bar")
        assert (err.kind, err.column) == ("syntax", 4)

    def test_error_columns_after_rewriting(self):
        text = "join('-', [$a, $b]) || foo.]"
        err = error_of(text)
        assert (err.kind, err.column) == ("syntax", text.index("]", 20))
        text = "$case.id == $index && nope($a)"
        err = error_of(text)
        assert (err.kind, err.column) == ("unknown-function", text.index("nope"))
        text = "[$case, $case.id, $x.y](@)"
        err = error_of(text)
        assert err.kind == "syntax"
        err = error_of("$a.b.[")
        assert (err.kind, err.column) == ("syntax", 6)

    def test_reserved_name_cannot_be_forged(self):
        assert error_of("__mapc_var__('x')").kind == "unknown-function"


# --- errors --------------------------------------------------------------------------
class TestErrors:
    @pytest.mark.parametrize(
        "text, kind, column",
        [
            ("foo.[", "syntax", 5),  # the expression ends where '[' needs more
            ("foo.]", "syntax", 4),
            ("a[?b == ]", "syntax", 8),
            ("a.b.c = 1", "syntax", 6),
            ("a | | b", "syntax", 4),
            ("'unclosed", "syntax", 0),
            ("a.`bad", "syntax", 2),
            ("", "syntax", 0),
            ("x || to_strng(@)", "unknown-function", 5),
            ("abs(@, @)", "invalid-arity", 0),
            ("a.length()", "invalid-arity", 2),
            ("abs('x')", "invalid-type", 4),
            ("sort_by(@, a)", "invalid-type", 11),
            ("a || length(&b)", "invalid-type", 12),
            ("a[::0]", "invalid-value", 1),
        ],
    )
    def test_kinds_and_columns(self, text, kind, column):
        err = error_of(text)
        assert (err.kind, err.column) == (kind, column)
        assert err.message and "\n" not in err.message
        assert err.text == text

    def test_did_you_mean(self):
        err = error_of("to_strng(@)")
        assert err.hint == "did you mean 'to_string'?"
        assert error_of("rgex_test(a, 'x')").hint == "did you mean 'regex_test'?"
        assert error_of("zzzzzz(@)").hint is None

    def test_pretty(self):
        assert error_of("foo.]").pretty().endswith("foo.]\n      ^")

    def test_runtime_errors_have_shared_classes(self):
        with pytest.raises(ExpressionTypeError) as info:
            run("abs(a)", {"a": "x"})
        assert isinstance(info.value, TypeError)
        with pytest.raises(ExpressionTypeError):
            run("a < b", {"a": 1, "b": "x"})  # the reference crashes with TypeError
        with pytest.raises(ExpressionValueError) as info:
            run("ceil(to_number('inf'))")
        assert isinstance(info.value, ValueError)


# --- static facts -------------------------------------------------------------------------
class TestStaticFacts:
    @pytest.mark.parametrize(
        "text, paths",
        [
            ("a.b", ("a.b",)),
            ("a.b.c || a.d", ("a.b.c", "a.d")),
            ("messages[].role", ("messages[].role",)),
            ("messages[*].role", ("messages[].role",)),
            ("tool_calls[].function.name", ("tool_calls[].function.name",)),
            ("messages[?role == 'user'].content",
             ("messages[].content", "messages[].role")),
            ("messages[0].content", ("messages[].content",)),
            ("length(messages)", ("messages",)),
            ("{id: id, n: length(steps)}", ("id", "steps")),
            ("$case.id", ("$case.id",)),
            ("[?id == $case.id].name", ("$case.id", "[].id", "[].name")),
            ("sort_by(steps, &t)[0].x", ("steps", "steps[].t")),
            ("map(&name, users)", ("users", "users[].name")),
            ("obj.*.name", ("obj.*.name",)),
            ("parse_json(raw).x", ("raw",)),
            ("a | b", ("a.b",)),
            ("`1`", ()),
            ("@", ()),
        ],
    )
    def test_field_paths(self, text, paths):
        assert compile_expression(text).field_paths == paths

    def test_path(self):
        assert compile_expression('a.b."c.d"').path == ("a", "b", "c.d")
        assert compile_expression("a").path == ("a",)
        assert compile_expression("a[0]").path is None
        assert compile_expression("a | b").path is None
        assert compile_expression("$a.b").path is None
        assert compile_expression("length(a)").path is None

    @pytest.mark.parametrize(
        "text, constant",
        [
            ("`1`", (True, 1)),
            ("'x'", (True, "x")),
            ("`null`", (True, None)),
            ('`{"a": [1, 2]}`.a[1]', (True, 2)),
            ("to_string(`[1, true]`)", (True, "[1,true]")),
            ("stable_id('t', 'abc', `1`)", (True, "t-9b3ca09b6d8421fe")),
            ("`1` == `1.0`", (True, True)),
            ("a", (False, None)),
            ("[`1`]", (False, None)),  # null when the input is null
            ("$x", (False, None)),
            ("`[1]` | [*].[$x]", (False, None)),
            ("ceil(to_number('inf'))", (False, None)),  # raises at run time
        ],
    )
    def test_constant(self, text, constant):
        ce = compile_expression(text)
        assert ce.constant == constant
        if constant[0]:
            assert ce.helpers == ()
            last = ce.function_source("f").splitlines()[-1]
            assert last.startswith("    return ")
            assert ast.literal_eval(last[len("    return "):]) == constant[1]

    def test_helpers_and_functions(self):
        ce = compile_expression("sort_by(a, &b)[?c > `1`] | length(@)")
        assert ce.functions == ("length", "sort_by")
        assert ce.helpers == ("jp_gt", "jp_length", "jp_sort_by")
        assert set(ce.helpers) <= set(runtime.unit_names())
        assert compile_expression("a").helpers == ()


# --- functions registry -----------------------------------------------------------------
def test_functions_registry():
    assert {"length", "sort_by", "to_string", "not_null"} <= set(FUNCTIONS)
    mapc_names = {n for n, sig in FUNCTIONS.items() if sig.origin == "mapc"}
    assert mapc_names == {
        "stable_id", "parse_json", "to_json", "iso8601", "get", "items", "from_items",
        "split", "replace", "lower", "upper", "trim", "regex_extract", "regex_findall",
        "regex_test", "index_by", "unique_by", "merge_by", "group_by", "coalesce", "concat",
        "sha256", "basename", "dirname", "round", "epoch", "add", "subtract", "multiply",
        "divide", "modulo", "floor_divide", "negate",
    }
    assert (FUNCTIONS["iso8601"].min_args, FUNCTIONS["iso8601"].max_args) == (1, 2)
    assert (FUNCTIONS["stable_id"].min_args, FUNCTIONS["stable_id"].max_args) == (1, None)
    assert (FUNCTIONS["merge"].min_args, FUNCTIONS["merge"].max_args) == (1, None)
    units = set(runtime.unit_names())
    for sig in FUNCTIONS.values():
        assert sig.helper in units, sig.name


# --- generated code --------------------------------------------------------------------------
INLINE_CASES = [
    ("a", {"a": 1}),
    ("a.b.c", {"a": {"b": {"c": [1]}}}),
    ("a.b.c", {"a": {"b": 5}}),
    ("a[1].b", {"a": [{}, {"b": 2}]}),
    ("a[-1]", {"a": [1, 2]}),
    ("@", [1]),
    ("'lit'", None),
    ("`[1, 2]`", None),
    ("$case.id", {"x": 1}),
    ("$index", None),
    ("a == 'x'", {"a": "x"}),
    ("a != `null`", {"a": None}),
    ("a == `0`", {"a": False}),
    ("a == `1`", {"a": 1.0}),
    ("a == b", {"a": [1], "b": [True]}),
    ("a < `3`", {"a": 2}),
    ("a >= b", {"a": "b", "b": "a"}),
    ("!a", {"a": 0}),
    ("!a", {"a": []}),
    ("a || b", {"a": 0, "b": 2}),
    ("a || 'default'", {"a": ""}),
    ("a && b.c", {"a": "x", "b": {"c": 3}}),
    ("a == `1` || b == `2`", {"a": 0, "b": 2}),
    ("a == `1` && !b", {"a": 1, "b": None}),
    ("$case.id == a.b", {"a": {"b": "c1"}}),
    ("(a || b) && c", {"b": 1, "c": 0}),
    # functions that never raise, whatever their arguments: called in line
    ("parse_json(a)", {"a": '{"x": [1, 2.5]}'}),
    ("parse_json(a)", {"a": "[1"}),
    ("parse_json(a)", {"a": "NaN"}),
    ("parse_json(a)", {"a": 3}),
    ("get(a, 'k')", {"a": {"k": 1}}),
    ("get(a, 'k')", {"a": "k"}),
    ("get(@, `-1`)", [1, 2]),
    ("get(@, `true`)", [1, 2]),
    ("get(@, `0`)", "ab"),
    ("get($case, 'id') || parse_json(@)", "1e999"),
    # multiselects of the current value: a display, null for null, nulls kept for a non-object
    ("{id: id, name: function || 'unknown', args: arguments || `{}`}", {"id": 1, "function": ""}),
    ("{id: id, name: function || 'unknown'}", None),
    ("{id: id, name: function || 'unknown'}", "text"),
    ("[id, kind]", {"kind": "tool"}),
    ("[id, kind]", None),
    ("[id, kind]", [1, 2]),
    ("{target: target}", {"target": [1]}),
]


@pytest.mark.parametrize("text, data", INLINE_CASES)
def test_inline_source_matches_function(text, data):
    scope = {"case": {"id": "c1"}, "index": 0}
    ce = compile_expression(text)
    source = ce.inline_source("rec", "sc")
    assert source is not None, text
    ns = runtime.namespace(ce.inline_helpers("rec", "sc"))
    ns.update(rec=data, sc=scope)
    assert eval(source, ns) == ce(data, scope)  # noqa: S307 - generated by us
    assert type(eval(source, ns)) is type(ce(data, scope))  # noqa: S307


def test_inline_source_plain_chain_is_direct():
    src = compile_expression("a").inline_source("rec", "sc")
    assert src == 'rec.get("a") if isinstance(rec, dict) else None'
    assert compile_expression("a[*].b").inline_source("d", "s") is None
    assert compile_expression("length(a)").inline_source("d", "s") is None
    assert compile_expression("to_string(`1`)").inline_source("d", "s") == '"1"'


def test_plain_chain_is_one_path_call():
    """`a.b.c` is one `jp_path` call (a line, not one per step); a chain from a value already
    held starts from it."""
    ce = compile_expression("a.b.c")
    assert ce.helpers == ("jp_path",)
    assert ce.function_source("f").splitlines()[1:] == ['    return jp_path(data, ("a", "b", "c"))']
    body = compile_expression("type(a) == 'object' && a.b[0].c").function_source("f")
    assert 'jp_path(v1, ("b", 0, "c"))' in body, body
    assert run("type(a) == 'object' && a.b[0].c", {"a": {"b": [{"c": 2}]}}) == 2
    # from a variable, one key: a one-element tuple (not a string of characters)
    assert "jp_path(scope.get(\"case\"), (\"id\",))" in compile_expression("$case.id").function_source("f")
    assert run("[$case.id, $case.idx.b]", {}, {"case": {"id": "xy", "idx": {"b": 1}}}) == ["xy", 1]
    assert run("$case.id", {}, {"case": ["i", "d"]}) is None


def test_function_source_shape():
    ce = compile_expression("people[?age > `30`].name")
    src = ce.function_source("get_names")
    assert src.startswith("def get_names(data, scope):\n    ")
    for line in src.splitlines():
        indent = len(line) - len(line.lstrip(" "))
        assert indent % 4 == 0
        assert len(line) < 100
    ast.parse(src)


def test_python_source_is_deterministic():
    texts = ["sort_by(a, &b)[?c == 'x'].{k: d, l: length(e)}", "$case.id || stable_id('x', @)"]
    first = [compile_expression(t).python_source for t in texts]
    from mapc.expressions import _compile, _runtime_namespace

    _compile.cache_clear()
    _runtime_namespace.cache_clear()
    assert [compile_expression(t).python_source for t in texts] == first
    script = "from mapc.expressions import compile_expression as c\n" + "".join(
        f"print(repr(c({t!r}).python_source))\n" for t in texts
    )
    outs = {
        subprocess.run([sys.executable, "-c", script], check=True, capture_output=True,
                       text=True, env={"PYTHONHASHSEED": seed, "PATH": "/usr/bin:/bin"}).stdout
        for seed in ("1", "2")
    }
    assert outs == {"".join(f"{s!r}\n" for s in first)}


STANDALONE_CASES = [
    ("a.b.c", {"a": {"b": {"c": 1}}}, {}),
    ("people[?age > `30`].name | sort(@)", {"people": [{"name": "b", "age": 31},
                                                     {"name": "a", "age": 40}]}, {}),
    ("sort_by(xs, &k)[].{k: k, t: type(v)}", {"xs": [{"k": 2, "v": 1}, {"k": 1, "v": "s"}]}, {}),
    ("join('-', [$trajectory.id, to_string($index)])", {},
     {"trajectory": {"id": "t"}, "index": 2}),
    ("[?role == $role].content", [{"role": "user", "content": "hi"}], {"role": "user"}),
    ("stable_id('s', $case.id, @)", {"x": "é"}, {"case": {"id": 7}}),
    (r"regex_extract(s, '(\d+)') || iso8601(t, 'ms')", {"s": "x", "t": 1500}, {}),
    ("group_by(rows, &k).*[].v", {"rows": [{"k": "a", "v": 1}, {"k": 1, "v": 2}]}, {}),
    ("merge_by(rows, &id)", {"rows": [{"id": 1, "a": None}, {"id": 1, "a": 2}]}, {}),
    ("parse_json(j).a[-1]", {"j": "{\"a\": [1, 2]}"}, {}),
    ("max_by(@, &n).n", [{"n": 1}, {"n": 3}], {}),
]


def test_python_source_runs_standalone(tmp_path):
    """Executed by an isolated interpreter without site-packages: no mapc, no jmespath."""
    programs = []
    for i, (text, data, scope) in enumerate(STANDALONE_CASES):
        ce = compile_expression(text)
        module = tmp_path / f"expr_{i}.py"
        module.write_text(
            ce.python_source
            + "\n\nif __name__ == '__main__':\n"
            + "    import json, sys\n"
            + "    args = json.loads(sys.stdin.read())\n"
            + "    print(json.dumps(expression(args[0], args[1])))\n",
            encoding="utf-8",
        )
        programs.append((module, ce(data, scope), data, scope))
    probe = subprocess.run([sys.executable, "-I", "-S", "-c", textwrap.dedent("""
        import importlib.util
        print(importlib.util.find_spec('jmespath'), importlib.util.find_spec('mapc'))
        """)], capture_output=True, text=True, cwd=tmp_path, check=True)
    assert probe.stdout.strip() == "None None"
    for module, expected, data, scope in programs:
        out = subprocess.run([sys.executable, "-I", "-S", str(module)],
                             input=json.dumps([data, scope]), capture_output=True, text=True,
                             cwd=tmp_path)
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout) == expected, module.read_text()


# --- code injection -----------------------------------------------------------------------------
NASTY = [
    "'''", '"""', "\\", "\n", "\r\n", "\u2028", "\u2029", "\x00", "'", '"', "#", "\\n",
    "{}", "{x}", "é", "\t", "\ufeff", "\u202e", "`", "\\`", "$x",
    "');import os;os.system('x')#", "\\'''+__import__('os').system('x')+'''",
]


def _raw_string(s):  # JMESPath raw string literal
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _quoted_identifier(s):
    return json.dumps(s, ensure_ascii=False)


def _json_literal(value):
    return "`" + json.dumps(value, ensure_ascii=False).replace("`", "\\`") + "`"


@pytest.mark.parametrize("nasty", NASTY)
def test_no_code_injection(nasty, tmp_path):
    field = "k" + nasty
    data = {field: {"v": nasty}, "other": [nasty]}
    texts = [
        _raw_string(nasty),
        _raw_string("x" + nasty + "y"),
        _quoted_identifier(field) + ".v",
        _json_literal(nasty),
        _json_literal({nasty: [nasty, 1]}),
        f"[?@ == {_raw_string(nasty)}]",
        f"{_quoted_identifier(field)}.v == {_raw_string(nasty)}",
        f"{{{_quoted_identifier(field)}: {_quoted_identifier(field)}}}",
        f"other[?@ != {_json_literal(nasty)}] || {_raw_string(nasty)}",
        f"join({_raw_string(nasty)}, other)",
    ]
    for text in texts:
        target = data["other"] if text.startswith("[?") else data
        expected = reference(text, target)
        ce = compile_expression(text)
        assert ce(target) == expected, text
        source = ce.python_source
        ast.parse(source)
        ns: dict = {}
        exec(compile(source, "<test>", "exec"), ns)  # noqa: S102 - generated by us
        assert ns["expression"](target) == expected, text
        inline = ce.inline_source("rec", "sc")
        if inline is not None:
            env = runtime.namespace(ce.inline_helpers("rec", "sc"))
            env.update(rec=target, sc={})
            assert eval(inline, env) == expected, text  # noqa: S307
        # the expression text only ever appears inside string literals
        tree = ast.parse(source)
        names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        assert "os" not in names and "system" not in names


def test_non_finite_literals():
    assert run("`1e999`") == float("inf")
    assert run("a == `-1e999`", {"a": float("-inf")}) is True
    src = compile_expression("a == `1e999`").function_source("f")
    assert "float('inf')" in src


def test_is_a_compiled_expression():
    ce = compile_expression("a")
    assert isinstance(ce, CompiledExpression)
    assert ce.text == "a"
    assert repr(ce) == "CompiledExpression('a')"
    assert ce({"a": 1}) == 1
    assert ce({"a": 1}, {"x": 1}) == 1


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=5), children, max_size=4),
    max_leaves=15,
)


@settings(max_examples=300, deadline=None)
@given(text=st.text())
def test_string_source_round_trips(text):
    source = string_source(text)
    assert "\n" not in source and "\r" not in source
    assert ast.literal_eval(source) == text


@settings(max_examples=200, deadline=None)
@given(value=json_values)
def test_literal_source_round_trips(value):
    source = literal_source(value)
    result = eval(source, {})  # noqa: S307 - literal_source output
    assert json.dumps(result, sort_keys=True) == json.dumps(value, sort_keys=True)


def test_temporaries_renumbered_outside_strings_only():
    src = compile_expression('v9.out3 || "item2"[0]').function_source("f")
    assert '"v9"' in src and '"out3"' in src and '"item2"' in src
    assert "v1 = " in src


def test_expression_error_pickles():
    import pickle

    err = error_of("to_strng(@)")
    copy = pickle.loads(pickle.dumps(err))
    assert (copy.kind, copy.message, copy.column, copy.hint) == (
        err.kind, err.message, err.column, err.hint)


def test_no_variables_allowed():
    err = error_of("$x", variables=())
    assert (err.kind, err.hint) == ("unknown-variable", "no variables are available here")


#: elements a filter meets: objects, and every value that is not one (JMESPath's falsy values
#: among them: null, false, "", [], {}; and 0, which is truthy)
_FILTER_ELEMENTS = [
    {"role": "user", "content": "a", "is_demo": False}, {"role": "user", "is_demo": True},
    {"role": "assistant", "content": "b", "function": {"name": "x", "arguments": "{}"}},
    {"role": "user", "content": None}, {"parent_run_id": None, "content": "c"},
    {"type": "tool_call", "text": ""}, {"type": "function_call", "text": 0}, {"null": 1},
    None, False, 0, "", "user", [], {}, [{"role": "user"}], 1.5,
]


@pytest.mark.parametrize("text,shape", [
    ("history[?role == 'user' && !is_demo] | [0].content", "next(("),
    ("history[?role == 'user'] | [-1].content", "reversed("),
    ("history[?function.name == 'x'] | [0].function.arguments", "next(("),
    ("history[?role == 'user'].content | [0]", "next(("),
    ("history[?parent_run_id == null]", "not isinstance(item1, dict)"),
    ("history[?type == 'tool_call' || type == 'function_call'].text", "isinstance(item1, dict)"),
    ("history[?!role]", "not isinstance(item1, dict)"),
    ("history[?role != 'user'] | [0]", "next(("),
    ("history[?content] | [-1]", "next(("),
])
def test_filters_as_comprehensions_keep_jmespath_semantics(text, shape):
    """A filter compiled as a comprehension (or ``next()`` for ``| [0]``/``[-1]``) gives what
    jmespath gives for objects, non-objects, nulls and falsy values, in every order."""
    source = compile_expression(text).function_source("f")
    assert shape in source, source
    assert "for item1 in" in source and "out1 = []" not in source, source
    for start in range(len(_FILTER_ELEMENTS)):
        history = _FILTER_ELEMENTS[start:] + _FILTER_ELEMENTS[:start]
        for data in ({"history": history}, {"history": history[::-1]}, {"history": history[:3]}):
            assert run(text, data) == reference(text, data), (text, data)
    assert run(text, {"history": "not a list"}) is None


def test_picked_filter_still_tests_every_element_when_a_test_can_raise():
    """`x[?length(b) > 0] | [0]`: the test raises for a later element in jmespath, so the
    compiled code tests every element too (no `next()`), and raises the same error."""
    text = "a[?length(b) > `0`] | [0]"
    assert "next(" not in compile_expression(text).function_source("f")
    data = {"a": [{"b": "x"}, {"b": 5}]}
    with pytest.raises(jmespath.exceptions.JMESPathTypeError):
        reference(text, data)
    with pytest.raises(ExpressionTypeError):
        run(text, data)


# --- arithmetic (JEP-16 operators) and epoch() ------------------------------------------
@pytest.mark.parametrize("text, data, expected", [
    ("end - start", {"end": 5, "start": 2.5}, 2.5),
    ("end-start", {"end": 5, "start": 2}, 3),                    # no spaces needed
    ("a + b * c", {"a": 1, "b": 2, "c": 3}, 7),                  # * binds tighter than +
    ("(a + b) * c", {"a": 1, "b": 2, "c": 3}, 9),
    ("a - b - c", {"a": 10, "b": 3, "c": 2}, 5),                 # left to right
    ("a / b * c", {"a": 8, "b": 2, "c": 4}, 16.0),
    ("a // b % c", {"a": 17, "b": 2, "c": 5}, 3),
    ("a % b", {"a": -7, "b": 3}, 2),                             # the sign of the divisor
    ("a / b", {"a": 7, "b": 2}, 3.5),                            # / is true division
    ("-a.b * c", {"a": {"b": 2}, "c": 3}, -6),                   # unary minus of a.b
    ("a - b > `0`", {"a": 3, "b": 1}, True),                     # below comparisons
    ("x[-1] - x[0]", {"x": [1, 5, 9]}, 8),                       # a negative index is a number
    ("x[1:-1]", {"x": [1, 5, 9]}, [5]),
    ("sum(x) / length(x)", {"x": [1, 2, 3, 6]}, 3.0),
    ("end - start", {"end": 5}, None),                           # a missing operand: null
    ("a / b", {"a": 1, "b": 0}, None),                           # division by zero: null
    ("a // b", {"a": 1, "b": 0.0}, None),
    ("a * b", {"a": 1e308, "b": 10}, None),                      # overflow: null, not inf
    ("(e - s) / `1000000000`", {"e": 1733000001750000000, "s": 1733000000500000000}, 1.25),
    ("a \u2212 b \u00d7 c \u00f7 d", {"a": 10, "b": 3, "c": 4, "d": 2}, 4.0),  # JEP-16's signs
    ("epoch(t)", {"t": "2024-01-02T03:04:05Z"}, 1704164645),
    ("epoch(t)", {"t": "2024-01-02T05:04:05.25+02:00"}, 1704164645.25),
    ("epoch(t)", {"t": "2024-01-02T03:04:05"}, 1704164645),      # no offset: UTC, as iso8601()
    ("epoch(t, 'ms')", {"t": 1500}, 1.5),
    ("epoch(t, 'ns')", {"t": 1704164645000000000}, 1704164645),
    ("epoch(t)", {"t": "yesterday"}, None),
    ("epoch(t)", {"t": "0001-01-01T00:00:00+05:00"}, None),   # no UTC time: null, as iso8601()
    ("epoch(t)", {"t": True}, None),
    ("epoch(e) - epoch(s)", {"e": "2024-01-02T03:04:06.5Z", "s": "2024-01-02T03:04:05Z"}, 1.5),
])
def test_arithmetic(text, data, expected):
    got = compile_expression(text)(data)
    assert got == expected and type(got) is type(expected), (text, got)


@pytest.mark.parametrize("text, data, message", [
    ("a - b", {"a": "2024-01-02", "b": 1}, "subtract() argument 1 must be a number, got string"),
    ("a * b", {"a": 2, "b": True}, "multiply() argument 2 must be a number, got boolean"),
    ("-a", {"a": [1]}, "negate() argument must be a number, got array"),
])
def test_arithmetic_on_other_types_is_an_invalid_type_error(text, data, message):
    with pytest.raises(ExpressionTypeError, match=re.escape(message)):
        compile_expression(text)(data)


@pytest.mark.parametrize("text, kind, message, column", [
    ("a - 'x'", "invalid-type", "`-` computes on numbers", 2),
    ("a - 1", "syntax", "unexpected number 1", 4),  # a bare number is not an expression
    ("a +", "syntax", "the expression ends too early", 3),
    ("epoch(t, 'days')", "invalid-value", "the unit of epoch()", 9),
])
def test_arithmetic_mistakes_are_found_when_compiled(text, kind, message, column):
    with pytest.raises(ExpressionError) as exc:
        compile_expression(text)
    assert (exc.value.kind, exc.value.column) == (kind, column) and message in exc.value.message
    if text == "a - 1":
        assert exc.value.hint == "a number in an expression is a literal: write `1`"


#: roots an expression function meets: objects with truthy, falsy (0 is truthy) and missing
#: fields, and every value that is not an object
_ROOTS = [
    {"a": {"x": 1}, "b": 0, "id": "i", "pid": "p"}, {"a": {}, "b": "", "id": 0, "pid": None},
    {"a": 0, "b": [1], "pid": "q"}, {"a": None, "b": False, "pid": ""}, {},
    None, False, 0, "", "s", [], [1, 2], 1.5,
]


def _object_function(text):
    source = compile_expression(text).function_source("f", object_root=True)
    ns = runtime.namespace(helpers_in(source))
    exec(source, ns)  # noqa: S102 - generated by us
    return source, ns["f"]


@pytest.mark.parametrize("text, shape, object_shape, reads_object", [
    # `a || {}`: one call, no temporary; 0 stays (truthy in JMESPath)
    ("keys(a || `{}`)", "return jp_keys(jp_or(", "return jp_keys(jp_or(data.get(\"a\"), {}))", True),
    ("b || 'none'", "jp_or(", "jp_or(data.get(\"b\"), \"none\")", True),
    ("to_string(b) && b", None, None, True),
    # the field read once; the multiselect after a truthy field of the root: no null test
    ("pid && join('-', ['span', pid])", "jp_join(\"-\", [\"span\", v1]) if jp_truthy(v1)",
     "v1 = data.get(\"pid\")\n", True),
    # a multiselect of the root itself: null for null, so never given `{}` for a non-object
    ("join('-', ['span', id])", "None if data is None else [",
     "jp_join(\"-\", [\"span\", data.get(\"id\")])", False),
    ("join('-', ['span', to_string(id)])", None,
     "jp_join(\"-\", [\"span\", jp_to_string(data.get(\"id\"))])", False),
    ("a.x || a", None, None, True),
    ("@", None, None, False),
    ("[0] || b", None, None, False),
    ("a && [@, b]", None, None, True),
    ("[a, b] || b", None, None, False),
    ("length(a) > `0` && a", None, None, True),
])
def test_object_root_and_logical_shapes_keep_jmespath_semantics(text, shape, object_shape,
                                                              reads_object):
    """`a || literal` is one `jp_or` call; a field read on both sides of `&&` is read once;
    the function compiled for an object root reads fields unguarded. Each gives what jmespath
    gives on every root (the object variant on `{}` for a non-object root when the expression
    reads the root only as an object: what a generated adapter passes then)."""
    ce = compile_expression(text)
    assert ce.reads_root_as_object is reads_object, text
    if shape:
        assert shape in ce.function_source("f"), ce.function_source("f")
    source, as_object = _object_function(text)
    if object_shape:
        assert object_shape in source, source
    assert "isinstance(data, dict)" not in source, source
    for data in _ROOTS:
        try:
            expected = ("ok", reference(text, data))
        except jmespath.exceptions.JMESPathTypeError:
            expected = ("error",)
        for variant, root in ((ce, data), (as_object, data if isinstance(data, dict) else None)):
            if root is None and variant is as_object:
                if not reads_object:
                    continue
                root = {}
            try:
                got = ("ok", variant(root, {}))
            except Exception as e:  # (the namespace's own ExpressionTypeError)
                assert type(e).__name__ == "ExpressionTypeError", (text, data, e)
                got = ("error",)
            assert got == expected, (text, data, variant is as_object, got, expected)
            if got[0] == "ok":
                assert type(got[1]) is type(expected[1])


def test_a_multiselect_of_an_object_loses_its_null_test_where_the_value_is_one():
    from mapc.codegen.expressions import ExprTable

    table = ExprTable()
    e = compile_expression("{id: id, kind: kind}")
    assert e.inline_source("el0", "s") == (
        '{"id": el0.get("id") if isinstance(el0, dict) else None, "kind": el0.get("kind") '
        'if isinstance(el0, dict) else None} if el0 is not None else None')
    table.known_dicts.add("el0")
    assert table.assume_dicts(e.inline_source("el0", "s")) == '{"id": el0.get("id"), "kind": el0.get("kind")}'
    # a long one stays a function of its own
    long = "{" + ", ".join(f"field_{i}: some_field_{i}" for i in range(8)) + "}"
    assert compile_expression(long).inline_source("el0", "s") is None
