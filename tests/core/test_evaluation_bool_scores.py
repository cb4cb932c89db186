"""A true/false evaluator scores its range's ends, and its feedback sees that number."""

from __future__ import annotations

import pytest

from mapc.codegen.program import build_program, load_module, module_source
from mapc.spec import load_spec_text
from mapc.targets import get_target

SPEC = """
mapc: 1
name: bools
source: {format: demo, container: json, probe: {require: [steps]}}
records:
  events: {each: steps, kind: message, content: text}
evaluators:
  - id: passed
    description: The check passed
    range: [0, 5]
    score: "signals.ok"
    feedback:
      - when: "score == `5`"
        text: "passed ({score})"
      - when: "score == `0`"
        text: "failed ({score})"
      - text: "unexpected {score}"
"""


@pytest.mark.parametrize("ok, expected", [(True, (5.0, "passed (5)")), (False, (0.0, "failed (0)"))])
def test_boolean_score_is_the_range_end_in_score_and_feedback(ok, expected):
    spec, diags = load_spec_text(SPEC)
    assert spec is not None, [d.message for d in diags]
    ns = load_module(module_source(build_program(spec), entry="", docstring="t", with_evaluation=True),
                     runtime=get_target("relai").shared_runtime().files)
    assert ns["evaluate_passed"]({"signals": {"ok": ok}}, {}) == expected
