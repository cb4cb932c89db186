"""The official JMESPath compliance suite, run through mapc's expression compiler.

Every case (except the ``bench`` ones) must give the expected result, compared
with types (bool is not int, int is not float), or raise an error of the
expected category.  The suite is vendored in
``tests/data/upstream/jmespath-compliance`` (provenance in ``tests/data/README.md``).
"""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import jmespath
import pytest

from mapc.expressions import (
    ExpressionError,
    ExpressionTypeError,
    ExpressionValueError,
    compile_expression,
)
from shared_paths import UPSTREAM

SUITE = UPSTREAM / "jmespath-compliance"
EXPECTED_CASES = 892


def _load_cases():
    cases = []
    for path in sorted((SUITE / "tests").glob("*.json")):
        number = 0
        for group in json.loads(path.read_text(encoding="utf-8")):
            for case in group["cases"]:
                number += 1
                if "bench" in case:
                    continue
                cases.append(pytest.param(group["given"], case, id=f"{path.name}-{number}"))
    return cases


CASES = _load_cases()


def _same(a, b) -> bool:
    """Deep equality that also compares types (True != 1, 1 != 1.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return a == b


def test_suite_size():
    assert len(CASES) == EXPECTED_CASES, f"expected {EXPECTED_CASES} cases under {SUITE}"


@pytest.mark.parametrize("given, case", CASES)
def test_case(given, case):
    expression = case["expression"]
    if "error" in case:
        expected = case["error"]
        try:
            ce = compile_expression(expression)
        except ExpressionError as e:
            assert e.kind == expected, (expression, e)
            return
        with pytest.raises((ExpressionTypeError, ExpressionValueError)) as info:
            ce(given)
        kind = "invalid-type" if isinstance(info.value, ExpressionTypeError) else "invalid-value"
        assert kind == expected, (expression, info.value)
        return
    result = compile_expression(expression)(given)
    assert _same(result, case["result"]), (expression, result, case["result"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert _same(result, jmespath.search(expression, given))
