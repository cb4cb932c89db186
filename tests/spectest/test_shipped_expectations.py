"""Every example and library spec ships expected records for its fixtures, and meets them.

`mapc test` runs in-process here (no adapter is built): the same mapping program
`mapc run` and the generated adapters run.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mapc.spectest import run_tests
from mapc.spectest.cases import spec_cases
from spectest_support import ROOT, SHIPPED


def test_every_example_and_library_spec_is_tested():
    assert len([p for p in SHIPPED if p.parent.parent.name == "examples"]) >= 9
    assert len([p for p in SHIPPED if p.parent.name == "specs"]) >= 15


@pytest.mark.parametrize("spec", SHIPPED, ids=[str(p.relative_to(ROOT)) for p in SHIPPED])
def test_shipped_spec_meets_its_expected_records(spec: Path):
    report = run_tests(spec)
    assert report.ran, [d.message for d in report.diagnostics]
    assert report.results, f"{spec} has no test case"
    failed = {r.case.name: (r.status, r.message, [d.to_dict() for d in r.diffs[:3]]) for r in report.failed}
    assert not failed, f"{spec}: {failed}\nIf intended: mapc test --update {spec.relative_to(ROOT)}"
    for result in report.results:
        if result.case.kind == "records" and result.case.expect is None:
            assert result.records, f"{result.case.name}: a fixture that maps to no record tests nothing"
    # byte for byte: `--update` on a clean checkout changes nothing (stable order and format)
    from mapc.pipeline.build import load_checked
    from mapc.spectest import canonical
    from mapc.spectest.execute import Executor

    loaded, _ = load_checked(spec)
    executor = Executor(loaded)
    for case in spec_cases(loaded):
        if case.expected is None:
            continue
        if case.kind == "records":
            run = executor.map(case.source)
            assert run.error is None
            data = canonical.records_bytes(run.records)
        else:
            result, error = executor.evaluate(case.source, case.task)
            assert error is None
            data = canonical.evaluation_bytes(result)
        assert case.expected.read_bytes() == data, case.expected
