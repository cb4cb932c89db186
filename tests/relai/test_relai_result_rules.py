"""Each runner-result rule of RELAI's contract rejects a bad example; task scores normalize."""

from __future__ import annotations

import copy

import pytest

from mapc.targets.relai.validator.catalog import Findings
from mapc.targets.relai.validator.result import check_result, task_score

TASK = {
    "id": "request/create",
    "tags": ["request.create"],
    "evaluators": [
        {"id": "correctness", "description": "Checks the requested result"},
        {"id": "quality", "description": "Rates answer quality", "min_score": 0, "max_score": 5},
    ],
}
RESULT = {
    "schema_version": "relai.custom_run.v1",
    "task_id": "request/create",
    "trace": {"steps": [{"step_id": 1, "source": "agent", "message": "Completed the request"}]},
    "final_output": "Completed the request",
    "evaluations": [
        {"evaluator_id": "correctness", "score": 1, "feedback": "Requested result was present"},
        {"evaluator_id": "quality", "score": 4, "min_score": 0, "max_score": 5, "feedback": "Clear response"},
    ],
}
FAILED = {
    "schema_version": "relai.custom_run.v1",
    "task_id": "request/create",
    "trace": {"steps": []},
    "evaluations": [{"evaluator_id": "correctness", "score": 0, "feedback": "kept as evidence"}],
    "failure": {"kind": "evaluation", "message": "quality grader crashed"},
    "evaluation_errors": [{"evaluator_id": "quality", "message": "timeout"}],
}


def codes(result, *, task=TASK, secrets=None, errors_only=True) -> set[str]:
    f = Findings("result.json")
    check_result(result, "request/create", task, f, secrets=secrets)
    return {d.code for d in f.items if d.is_error or not errors_only}


def changed(base, **fields):
    data = copy.deepcopy(base)
    for key, value in fields.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    return data


def evals(*items):
    return [dict(e) for e in items]


GOOD_Q = {"evaluator_id": "quality", "score": 4, "feedback": "Clear"}
GOOD_C = {"evaluator_id": "correctness", "score": 1, "feedback": "ok"}

BAD = {
    "wrong schema_version": (changed(RESULT, schema_version="relai.custom_run.v0"), "schema_version"),
    "task id differs from the request": (changed(RESULT, task_id="request/update"), "task_id_mismatch"),
    "trace missing on a completed run": (changed(RESULT, trace=None), "trace_missing"),
    "trace not an object": (changed(RESULT, trace=[]), "trace_invalid"),
    "steps not an array": (changed(RESULT, trace={"steps": {}}), "atif_step"),
    "steps not ATIF": (changed(RESULT, trace={"steps": [{"step_id": 1, "source": "tool", "message": ""}]}), "atif_step"),
    "evaluations missing on a completed run": (changed(RESULT, evaluations=None), "evaluations_missing"),
    "evaluations not an array": (changed(RESULT, evaluations={}), "evaluations_invalid"),
    "evaluation not an object": (changed(RESULT, evaluations=[GOOD_C, "quality"]), "evaluation_invalid"),
    "evaluator not in the catalog": (
        changed(RESULT, evaluations=evals(GOOD_C, GOOD_Q, {"evaluator_id": "style", "score": 1, "feedback": "x"})),
        "unknown_evaluator"),
    "evaluator scored twice": (changed(RESULT, evaluations=evals(GOOD_C, GOOD_Q, GOOD_C)), "duplicate_evaluation"),
    "evaluator not scored": (changed(RESULT, evaluations=evals(GOOD_C)), "evaluations_incomplete"),
    "score above the range": (changed(RESULT, evaluations=evals(GOOD_C, dict(GOOD_Q, score=6))), "score_out_of_range"),
    "score below the default range": (changed(RESULT, evaluations=evals(dict(GOOD_C, score=-0.1), GOOD_Q)),
                                      "score_out_of_range"),
    "score not a number": (changed(RESULT, evaluations=evals(dict(GOOD_C, score="1"), GOOD_Q)), "score_invalid"),
    "score is a boolean": (changed(RESULT, evaluations=evals(dict(GOOD_C, score=True), GOOD_Q)), "score_invalid"),
    "score not finite": (changed(RESULT, evaluations=evals(dict(GOOD_C, score=float("nan")), GOOD_Q)), "score_invalid"),
    "feedback empty": (changed(RESULT, evaluations=evals(dict(GOOD_C, feedback=" "), GOOD_Q)), "feedback_empty"),
    "feedback missing": (changed(RESULT, evaluations=evals({"evaluator_id": "correctness", "score": 1}, GOOD_Q)),
                         "feedback_empty"),
    "range differs from the catalog": (changed(RESULT, evaluations=evals(GOOD_C, dict(GOOD_Q, max_score=10))),
                                       "range_mismatch"),
    "default range restated wrongly": (changed(RESULT, evaluations=evals(dict(GOOD_C, min_score=0, max_score=5), GOOD_Q)),
                                       "range_mismatch"),
    "failure not an object": (changed(RESULT, failure="it broke"), "failure_invalid"),
    "evaluation_errors without failure": (changed(RESULT, evaluation_errors=[{"evaluator_id": "quality", "message": "x"}]),
                                          "errors_without_failure"),
    "evaluation_errors not an array": (changed(FAILED, evaluation_errors={"quality": "x"}), "evaluation_errors_invalid"),
    "evaluation error without evaluator_id": (changed(FAILED, evaluation_errors=[{"message": "x"}]),
                                              "evaluation_error_invalid"),
    "evaluation error with empty message": (changed(FAILED, evaluation_errors=[{"evaluator_id": "quality", "message": ""}]),
                                            "evaluation_error_invalid"),
    "partial evidence still in range": (changed(FAILED, evaluations=[dict(GOOD_C, score=2)]), "score_out_of_range"),
}


def test_the_documented_results_are_valid():
    assert codes(copy.deepcopy(RESULT)) == set()
    assert codes(copy.deepcopy(FAILED)) == set()


@pytest.mark.parametrize("name", sorted(BAD))
def test_each_result_rule_rejects_a_bad_example(name):
    result, code = BAD[name]
    assert code in codes(result)


def test_a_failure_needs_no_scores_and_may_name_the_grading_system():
    failure = {"schema_version": "relai.custom_run.v1", "task_id": "request/create",
               "failure": {"kind": "agent", "message": "timeout"},
               "evaluation_errors": [{"evaluator_id": "grading-system", "message": "not run"}]}
    assert codes(failure) == set()


def test_failure_null_counts_as_a_completed_run():
    assert "evaluations_incomplete" in codes(changed(RESULT, failure=None, evaluations=evals(GOOD_C)) | {"failure": None})


def test_sensitive_values_must_not_appear_anywhere():
    secrets = {"API_KEY": "sk-live-123"}
    assert "secret_leak" in codes(changed(RESULT, final_output="token sk-live-123"), secrets=secrets)
    feedback = evals(GOOD_C, dict(GOOD_Q, feedback="used sk-live-123"))
    assert "secret_leak" in codes(changed(RESULT, evaluations=feedback), secrets=secrets)
    step = {"step_id": 1, "source": "agent", "message": "", "extra": {"sk-live-123": 1}}
    assert "secret_leak" in codes(changed(RESULT, trace={"steps": [step]}), secrets=secrets)
    assert "secret_leak" not in codes(RESULT, secrets=secrets)
    # a short secret that happens to be inside the result's own field names is no leak
    assert "secret_leak" not in codes(RESULT, secrets={"K": "k"})


def test_final_output_is_expected_on_completed_runs():
    assert "final_output_missing" in codes(changed(RESULT, final_output=None), errors_only=False)
    assert "final_output_type" in codes(changed(RESULT, final_output={"a": 1}), errors_only=False)


def test_legacy_custom_grade_applies_without_an_evaluators_list():
    legacy = {"id": "request/create", "tags": ["x"]}
    ok = changed(RESULT, evaluations=[{"evaluator_id": "custom-grade", "score": 0.5, "feedback": "half"}])
    assert codes(ok, task=legacy) == set()
    assert "unknown_evaluator" in codes(RESULT, task=legacy)


def test_task_score_normalizes_each_score_and_averages():
    assert task_score(RESULT, TASK) == pytest.approx((1 + 4 / 5) / 2)
    ranged = {"id": "t", "evaluators": [{"id": "a", "description": "a", "min_score": -1, "max_score": 1}]}
    result = {"evaluations": [{"evaluator_id": "a", "score": 0, "feedback": "x"}]}
    assert task_score(result, ranged) == pytest.approx(0.5)


def test_a_failed_task_scores_zero_even_with_high_partial_scores():
    assert task_score(changed(FAILED, evaluations=[dict(GOOD_C, score=1)]), TASK) == 0.0
    assert task_score(None, TASK) == 0.0
