"""Long generated statements are wrapped black-style without changing their meaning."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from mapc.codegen.wrap import WIDTH, wrap_line

ROOT = Path(__file__).resolve().parents[2]


def _tree(lines: list[str], header: bool) -> str:
    code = textwrap.dedent("\n".join(lines))
    if code.startswith("elif"):
        code = "if" + code[4:]  # an elif header parses on its own as an if
    return ast.dump(ast.parse(code + ("\n    pass\n" if header else "\n")))


@pytest.mark.parametrize(
    "line",
    [
        '    ev = {"record_type": "event", "id": "evt@" + loc0, "trajectory_id": tid, "sequence": seq, "kind": "message"}',
        '    st.sem[ev["id"]] = compact_object((("kind", "generation"), ("role", f_role), ("content", f_content), ("m", m)))',
        '    v = coerce_time(st, el0.get("timestamp") if isinstance(el0, dict) else None, "records.events.rules[0].timestamp")',
        "    if not isinstance(el0, dict) or el0.get('type') is None or el0.get('step') is None or el0.get('q') is None:",
        "    x = (some_really_long_function_name_aaaaaaaaaaaa + argument_two_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb)",
        "        return score, ('The run cost ' + template_text(jp_path(feedback_scope, ('signals', 'cost'))) + ' USD, over budget.')",
        "            elif truthy(jp_ge(feedback_scope.get('score') if isinstance(feedback_scope, dict) else None, 1)):",
        '    rec = {"record_type": "t", "id": coerce_id(st, x_records_trajectory_id(cur, s), "records.trajectory.id") or (("traj@" + loc) if loc else child_id("traj", parent["id"])), "group_id": parent["id"]}',
        "            if truthy(jp_ge(feedback_scope.get('score') if isinstance(feedback_scope, dict) else None, 1)):",
        '    s = "a string literal that is much longer than the width and can be split into implicit concatenation"',
        "        return score, 'The agent did not answer; this feedback text is long enough to exceed 99 columns (it\\'s)'",
        '                note="Averyveryverylongwordwithoutanyspacesthatcannotbewrappedatspacesatallbecauseitisreallylong",',
        "    if x != 'this is a very long string literal that goes on and on past the ninety-nine column limit':",
    ],
)
def test_wrapped_lines_fit_and_mean_the_same(line):
    out = wrap_line(line)
    assert len(out) > 1
    assert all(len(x) <= WIDTH for x in out), out
    header = line.rstrip().endswith(":")
    assert _tree(out, header) == _tree([line], header)


@pytest.mark.parametrize(
    "line",
    [
        "    x = data[some_really_long_function_name(argument_one, argument_two, argument_three, argument_four_x)]",
        "    # a comment that is far too long to fit on one line but must never be touched by the wrapper at all ok",
    ],
)
def test_what_cannot_be_split_safely_is_left_alone(line):
    assert wrap_line(line) == [line]


def test_every_generated_statement_keeps_its_meaning():
    """Wrap every line of every adapter mapc generates for the examples and library specs."""
    from mapc.pipeline.build import render
    from mapc.spec import load_spec
    from mapc.targets import get_target

    specs = (sorted(ROOT.glob("examples/*/spec*.yaml")) + sorted(ROOT.glob("specs/*.yaml"))
             + sorted(ROOT.glob("tests/cases/long_lines/*/spec.yaml")))
    checked = 0
    for spec_path in specs:
        spec, _ = load_spec(spec_path)
        if spec is None:
            continue
        for name in ("rlviz", "relai", "cap-evolve", "atif"):
            target = get_target(name)
            if target.check(spec) and any(d.is_error for d in target.check(spec)):
                continue
            _, files = render(spec, target, ROOT / "out-unused")
            for rel, data in files.items():
                if rel.endswith(".py"):
                    text = data.decode()
                    ast.parse(text)  # the whole file still parses
                    long = [line for line in text.splitlines() if len(line) > WIDTH]
                    assert long == [], f"{spec_path.name} {name} {rel}: {long}"
                    checked += 1
    assert checked >= 20


def test_a_long_conditional_value_is_split_in_parentheses_not_at_a_short_string():
    line = ('    v2 = jp_join(":", [jp_path(scope.get("trajectory"), ("id",)), "score", v1]) '
            'if jp_truthy(v1) else v1')
    assert wrap_line(line) == [
        "    v2 = (",
        '        jp_join(":", [jp_path(scope.get("trajectory"), ("id",)), "score", v1])',
        "        if jp_truthy(v1)",
        "        else v1",
        "    )",
    ]
    ret = "    return " + line[9:]
    assert wrap_line(ret)[0] == "    return (" and wrap_line(ret)[-1] == "    )"


def test_an_element_too_long_splits_at_its_operator_not_at_a_short_string():
    line = ('        jp_type(jp_path(scope.get("last"), ("result",))) == "object" and '
            'jp_path(scope.get("last"), ("result",)),')
    assert wrap_line(line) == [
        '        jp_type(jp_path(scope.get("last"), ("result",))) == "object"',
        '        and jp_path(scope.get("last"), ("result",)),',
    ]
