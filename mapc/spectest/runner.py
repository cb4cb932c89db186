"""Run a spec's test cases: compare, update, or compare with an already-built adapter."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from mapc.core.diagnostics import Diagnostic, Diagnostics
from mapc.spec import ir
from mapc.spectest import canonical, owned
from mapc.spectest.cases import Case, spec_cases
from mapc.spectest.compare import MISSING, Comparison, FieldChange, RecordDiff, diff_values
from mapc.spectest.execute import Executor, MappingRun
from mapc.spectest.locate import Locator, place_of, written
from mapc.spectest.origins import Origins
from mapc.spectest.partial import check_evaluation, check_records

#: Case outcomes; the first three pass.
PASSED, WRITTEN, CURRENT = "passed", "written", "current"
FAILED, MISSING_FILE, ERROR, SKIPPED = "failed", "missing", "error", "skipped"


@dataclass
class CaseResult:
    case: Case
    status: str
    message: str | None = None
    diffs: list[RecordDiff] = field(default_factory=list)  # full record expectations
    mismatches: list[FieldChange] = field(default_factory=list)  # partial ones, evaluations
    records: int | None = None  # records the spec emits now
    diagnostic: Diagnostic | None = None  # a located problem with the spec's entry (an expected file refused)

    @property
    def ok(self) -> bool:
        return self.status in (PASSED, WRITTEN, CURRENT, SKIPPED)

    def to_dict(self) -> dict:
        c = self.case
        out = {"name": c.name, "kind": c.kind, "status": self.status, "ok": self.ok, "source": str(c.source),
               "expected": str(c.expected) if c.expected else None}
        if c.task is not None:
            out["task"] = c.task
        if self.records is not None:
            out["records"] = self.records
        if self.message:
            out["message"] = self.message
        if self.diffs:
            out["differences"] = [d.to_dict() for d in self.diffs]
        if self.mismatches:
            out["mismatches"] = [m.to_dict() for m in self.mismatches]
        if self.diagnostic is not None:
            out["diagnostic"] = self.diagnostic.to_dict()
        return out


@dataclass
class TestReport:
    spec: str
    diagnostics: Diagnostics
    results: list[CaseResult] = field(default_factory=list)
    update: bool = False
    against: str | None = None

    @property
    def ran(self) -> bool:
        """Whether the spec was valid, so the cases could run."""
        return self.diagnostics.ok

    @property
    def ok(self) -> bool:
        return self.ran and all(r.ok for r in self.results)

    @property
    def failed(self) -> list[CaseResult]:
        return [r for r in self.results if not r.ok]

    def to_dict(self) -> dict:
        return {"ok": self.ok, "spec": self.spec, "update": self.update, "against": self.against,
                "cases": [r.to_dict() for r in self.results],
                "diagnostics": [d.to_dict() for d in self.diagnostics]}


def run_tests(spec_path: str | Path, *, update: bool = False, against: str | Path | None = None,
              spec: ir.Spec | None = None, only_expected: bool = False) -> TestReport:
    """Run every case of the spec at ``spec_path``.

    ``update`` writes the expected files instead of failing on a difference;
    ``against`` compares with the records of the adapter built in that folder;
    ``only_expected`` (``mapc build``) skips cases whose expected file does not exist yet.
    ``spec`` is the already loaded spec, if any.
    """
    from mapc.core.errors import UsageError
    from mapc.pipeline.build import load_checked

    if update and against is not None:
        raise UsageError("--update writes expected files from this spec; --against compares with a built "
                         "adapter instead: give one of them")
    diags = Diagnostics()
    if spec is None:
        spec, diags = load_checked(spec_path)
    report = TestReport(str(spec_path), diags, update=update, against=str(against) if against else None)
    if spec is None:
        return report
    runner = _Runner(spec)
    cases = spec_cases(spec)
    if against is not None:
        report.results = runner.against(cases, Path(against))
        return report
    owners: dict[Path, str] = {}
    for case in cases:
        owner = owners.setdefault(case.expected, case.name) if case.expected is not None else case.name
        if owner != case.name:
            report.results.append(CaseResult(case, ERROR, f"its expected file {case.expected.name} is also "
                                             f"{owner!r}'s: give this test its own with `expected:`"))
        elif only_expected and case.expected is not None and not case.expected.exists():
            report.results.append(CaseResult(case, SKIPPED, f"no expected file {case.expected.name} yet"))
        else:
            report.results.append(runner.run(case, update))
    return report


def what_failed(r: CaseResult) -> str:
    """A failing case's trouble in a few words (records that differ, expectations not met)."""
    if r.diffs:
        return f"{len(r.diffs)} record(s) differ from {r.case.expected.name}"
    if r.mismatches:
        return f"{len(r.mismatches)} expectation(s) not met"
    return r.message or r.status


def build_gate(spec_path: Path, spec: ir.Spec) -> tuple[TestReport, list]:
    """The tests ``mapc build`` runs before it writes (those with expected files), and the
    diagnostics of those that failed: the build's ``run_tests`` hook."""
    report = run_tests(spec_path, spec=spec, only_expected=True)
    return report, failed_tests(report, str(spec_path))


def failed_tests(report: TestReport, spec_arg: str) -> list:
    """One error per failing case, for ``mapc build`` (which then writes nothing)."""
    from mapc.core.diagnostics import Diagnostic

    out = []
    for r in report.failed:
        c = r.case
        what = what_failed(r)
        out.append(Diagnostic(
            code="test_failed", file=str(c.expected or c.source),
            message=f"test {c.name!r} fails: {what}; nothing was written",
            hint=f"see the differences with `mapc test {spec_arg}`; if the new output is intended, "
                 f"`mapc test --update {spec_arg}` writes it as expected (review it), or build with --no-test"))
    return out


class _Runner:
    def __init__(self, spec: ir.Spec):
        self.spec = spec
        self.executor = Executor(spec)
        self._locator: Locator | None = None
        self._origins: Origins | None = None
        self._reads: dict | None = None  # files the spec reads, which --update never writes

    # -- one case ---------------------------------------------------------------------
    def run(self, case: Case, update: bool) -> CaseResult:
        if case.kind == "evaluation":
            return self._evaluation(case, update)
        run = self.executor.map(case.source)
        if run.error:
            return CaseResult(case, ERROR, f"the spec cannot map {case.source.name}: {run.error}")
        result = CaseResult(case, PASSED, records=len(run.records))
        if case.expect is not None:
            result.mismatches = self._placed(check_records(case.expect, run.records, run.warnings), run)
            result.status = FAILED if result.mismatches else PASSED
            return result
        if update:
            return self._write(result, canonical.records_bytes(run.records))
        expected, problem = self._expected(case, canonical.read_records)
        if problem:
            result.status, result.message = problem
            return result
        result.diffs = self._compare(expected, run)
        result.status = FAILED if result.diffs else PASSED
        return result

    def _evaluation(self, case: Case, update: bool) -> CaseResult:
        evaluation, error = self.executor.evaluate(case.source, case.task)
        if error:
            return CaseResult(case, ERROR, f"cannot score task {case.task!r} on {case.source.name}: {error}")
        result = CaseResult(case, PASSED)
        if case.expect is not None:
            result.mismatches = [self._place_evaluation(m) for m in check_evaluation(case.expect, evaluation)]
        elif update:
            return self._write(result, canonical.evaluation_bytes(evaluation))
        else:
            expected, problem = self._expected(case, canonical.read_evaluation)
            if problem:
                result.status, result.message = problem
                return result
            changes: list[FieldChange] = []
            diff_values((), expected, evaluation, changes)
            result.mismatches = [self._place_evaluation(m) for m in changes]
        result.status = FAILED if result.mismatches else PASSED
        return result

    def _expected(self, case: Case, read):
        if not case.expected.exists():
            return None, (MISSING_FILE, f"no expected file {case.expected.name} yet")
        try:
            return read(case.expected), None
        except (canonical.ExpectedFileError, OSError) as exc:
            return None, (ERROR, f"cannot read the expected file: {exc}")

    def _write(self, result: CaseResult, data: bytes) -> CaseResult:
        if self._reads is None:
            self._reads = owned.spec_reads(self.spec)
        case = result.case
        try:
            changed = owned.write_expected(case, data, self.spec, self._reads)
        except owned.Refused as exc:
            entry = case.declared + ("expected",)
            path = entry if written(self.spec, entry) else case.declared
            result.status, result.message = ERROR, f"not written: the expected file {exc}"
            result.diagnostic = self.spec.diag("unsafe_expected_file", path, f"the expected file {exc}",
                                               hint=exc.hint)
            return result
        except OSError as exc:
            result.status, result.message = ERROR, f"cannot write {case.expected}: {exc.strerror or exc}"
            return result
        result.status = WRITTEN if changed else CURRENT
        return result

    # -- against a built adapter ------------------------------------------------------
    def against(self, cases: list[Case], folder: Path) -> list[CaseResult]:
        from mapc.core.errors import UsageError
        from mapc.spectest.against import AgainstError, find_module, trusted_records

        mapped = [c for c in cases if c.kind == "records"]
        try:
            module = find_module(folder, self.spec.name)
            answers = dict(zip([c.source for c in mapped], trusted_records(module, [c.source for c in mapped])))
        except AgainstError as exc:
            raise UsageError(str(exc)) from None
        out = []
        for case in cases:
            if case.kind != "records":
                out.append(CaseResult(case, SKIPPED, "evaluations are compared with expected files only"))
                continue
            run = self.executor.map(case.source)
            if run.error:
                out.append(CaseResult(case, ERROR, f"the spec cannot map {case.source.name}: {run.error}"))
                continue
            records, error = answers[case.source]
            if error:
                out.append(CaseResult(case, ERROR, f"the built adapter cannot map {case.source.name}: {error}",
                                      records=len(run.records)))
                continue
            diffs = self._compare([r for r in records if r.get("record_type") != "complete"], run)
            out.append(CaseResult(case, FAILED if diffs else PASSED, diffs=diffs, records=len(run.records)))
        return out

    # -- spec lines -------------------------------------------------------------------
    @property
    def locator(self) -> Locator:
        if self._locator is None:
            self._locator = Locator(self.spec)
        return self._locator

    @property
    def origins(self) -> Origins:
        if self._origins is None:
            self._origins = Origins(self.executor.mapping_text)
        return self._origins

    def _origin_of(self, record: dict, run: MappingRun) -> str | None:
        for i, r in enumerate(run.records):
            if r is record:
                function, line = run.emitted_at[i]
                return self.origins.of(record.get("record_type"), function, line)
        return None

    def _compare(self, expected: list[dict], run: MappingRun) -> list[RecordDiff]:
        diffs = Comparison(expected, run.records).differences()
        position = {id(r): i for i, r in enumerate(run.records)}
        for d in diffs:
            origin = None
            if d.actual is not None and id(d.actual) in position:
                function, line = run.emitted_at[position[id(d.actual)]]
                origin = self.origins.of(d.record_type, function, line)
            rec = d.actual if d.actual is not None else d.expected
            d.place = self.locator.place(rec, (), origin)
            for f in d.fields:
                f.place = self.locator.place(rec, f.path, origin)
        return diffs

    def _placed(self, changes: list[FieldChange], run: MappingRun) -> list[FieldChange]:
        for c in changes:
            if c.record is not None:
                c.place = self.locator.place(c.record, c.path, self._origin_of(c.record, run))
        return changes

    def _place_evaluation(self, change: FieldChange) -> FieldChange:
        """Scores and feedback come from evaluators, metrics from usage, the reward from reward.combine."""
        key, name = (change.path + (None, None))[:2]
        path = None
        evaluators = {ev.id: ev for ev in self.spec.evaluators}
        if key in ("scores", "feedback", "metrics", "not_scored") and name in evaluators:
            ev = evaluators[name]
            path = ev.score.path if key in ("scores", "metrics") or not ev.feedback else ev.feedback[0].path[:-1]
        elif key == "metrics" and name in ("cost_usd", "tokens"):
            path = ("usage", name)
        elif key in ("reward", "metrics"):  # combined from every evaluator (reward.combine, or the mean)
            path = ("reward", "combine") if written(self.spec, ("reward",)) else ("evaluators",)
        if path is not None:
            change.place = place_of(self.spec, path)
        return change
