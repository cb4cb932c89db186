"""Specs checked against their fixtures before anything is built (`mapc check`, `build`, `run`).

Each folder under tests/cases/fixture_checks holds `spec.yaml`, its fixture and
`expected.json`: the diagnostics `mapc check` gives (code, severity, position,
spec path, message, hint), or `[]` for reads the fixtures need not have.
Regenerate after an intended wording change with MAPC_UPDATE_GOLDENS=1.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from golden import assert_golden
from mapc.pipeline.build import load_checked
from mapc.tools.coverage import analyse_fixtures
from mapc.spec import load_spec
from mapc.analysis.fixture_check import CHECK_BYTES, check_fixtures, sniff, typo_of

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "tests" / "cases" / "fixture_checks"
CASE_DIRS = sorted(p for p in CASES.iterdir() if (p / "spec.yaml").is_file())
SPECS = sorted(ROOT.glob("specs/*.yaml")) + sorted(ROOT.glob("examples/**/spec*.yaml"))


def _diagnostics(case: Path) -> list[dict]:
    """What `mapc check` says: the fixture checks, then (on a valid spec) the warnings of the
    fixtures' values (mapc.tools.traps, mapc.tools.coverage)."""
    spec, diags = load_checked(case / "spec.yaml")
    if spec is not None:
        diags.extend(analyse_fixtures(spec, list(diags))[1])
    out = []
    for d in diags:
        item = d.to_dict()
        item["file"] = Path(item["file"]).name if "file" in item else None
        out.append(item)
    return out


def _mapc(*args, cwd: Path):
    """The command line, in process (a subprocess per call would cost seconds)."""
    import os

    from typer.testing import CliRunner

    from mapc.cli import app

    here = os.getcwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(app, [str(a) for a in args])
    finally:
        os.chdir(here)


@pytest.mark.parametrize("case", CASE_DIRS, ids=[p.name for p in CASE_DIRS])
def test_fixture_check_cases(case: Path):
    actual = _diagnostics(case)
    for d in actual:
        assert d["line"] >= 1 and d["column"] >= 1 and d["message"], d
    assert_golden(case / "expected.json", json.dumps(actual, indent=2, ensure_ascii=False) + "\n")


def test_every_mistake_class_has_a_case():
    codes = {d["code"] for case in CASE_DIRS for d in json.loads((case / "expected.json").read_text())}
    assert {"not_in_fixtures", "type_mismatch", "container_mismatch", "jsonl_above_lines"} <= codes
    assert any(json.loads((c / "expected.json").read_text()) == [] for c in CASE_DIRS), "a no-false-positive case"


@pytest.mark.parametrize("spec", SPECS, ids=[str(p.relative_to(ROOT)) for p in SPECS])
def test_no_library_or_example_spec_gets_a_fixture_warning(spec: Path):
    loaded, diags = load_spec(spec)
    assert loaded is not None, [d.format() for d in diags]
    assert [d.format() for d in check_fixtures(loaded)] == []


def test_the_issue_example_status_completed_on_a_json_source():
    """`status: completed` once passed check, run and build silently; now each says it."""
    case = CASES / "status-bare-word"
    check = _mapc("check", "spec.yaml", cwd=case)
    assert check.exit_code == 0, check.stderr
    assert "reads a field `completed` that no fixture has" in check.stderr
    assert "did you mean the text 'completed'? write \"'completed'\"" in check.stderr
    assert "1 warning(s)" in check.stderr
    run = _mapc("run", "spec.yaml", "sample.json", cwd=case)
    assert run.exit_code == 0 and "warning[not_in_fixtures]" in run.stderr, run.stderr
    as_json = json.loads(_mapc("run", "--json", "spec.yaml", "sample.json", cwd=case).stdout)
    assert [d["code"] for d in as_json["diagnostics"]] == ["not_in_fixtures"]


def test_a_wrong_container_stops_the_build_at_the_spec(tmp_path: Path):
    case = CASES / "container-json-on-jsonl"
    proc = _mapc("build", "spec.yaml", "--target", "rlviz", "-o", tmp_path / "out", cwd=case)
    assert proc.exit_code == 1
    assert "spec.yaml:5:14: error[container_mismatch] source.container" in proc.stderr
    assert "write `container: jsonl`" in proc.stderr and "phase probe" not in proc.stderr
    assert not (tmp_path / "out").exists(), "nothing is written for a spec with errors"


def test_check_says_when_there_is_no_fixture_to_check_against(tmp_path: Path):
    spec = (CASES / "status-bare-word" / "spec.yaml").read_text().replace("fixtures: [sample.json]\n", "")
    (tmp_path / "spec.yaml").write_text(spec)
    proc = _mapc("check", "spec.yaml", cwd=tmp_path)
    assert proc.exit_code == 0 and "warning" not in proc.stderr
    assert "no fixtures, so the fields it reads were not checked against a sample" in proc.stderr


def test_a_fixture_past_the_bound_proves_no_absence(tmp_path: Path):
    """Profiling is bounded: a fixture cut by the bound gives no missing-field warnings."""
    row = json.dumps({"type": "message", "text": "x" * 1000})
    (tmp_path / "big.jsonl").write_text((row + "\n") * (CHECK_BYTES // 1000 + 10))
    spec = (CASES / "field-typo" / "spec.yaml").read_text().replace("sample.jsonl", "big.jsonl")
    (tmp_path / "spec.yaml").write_text(spec)
    loaded, diags = load_spec(tmp_path / "spec.yaml")
    assert loaded is not None and check_fixtures(loaded) == []
    (tmp_path / "big.jsonl").write_text(row + "\n")
    assert [d.code for d in check_fixtures(load_spec(tmp_path / "spec.yaml")[0])] == ["not_in_fixtures"]


def test_fields_of_a_library_spec_are_not_the_extending_specs_business(tmp_path: Path):
    """A project extending a library spec with its own, smaller fixture is not told about the
    library's optional fields; its own reads are still checked."""
    sample = ROOT / "specs" / "fixtures" / "verifiers-results" / "results.jsonl"
    first = sample.read_text().splitlines()[0]
    row = json.loads(first)
    row.pop("info", None)
    (tmp_path / "mine.jsonl").write_text(json.dumps(row) + "\n")
    (tmp_path / "spec.yaml").write_text(
        "mapc: 1\nname: mine\nextends: verifiers-results\nfixtures: [mine.jsonl]\n"
        "records:\n  trajectory:\n    final_output: final_answer\n")
    loaded, diags = load_spec(tmp_path / "spec.yaml")
    assert loaded is not None, [d.format() for d in diags]
    found = check_fixtures(loaded)
    assert [(d.code, d.path, Path(d.file).name) for d in found] == [
        ("not_in_fixtures", "records.trajectory.final_output", "spec.yaml")], [d.format() for d in found]


@pytest.mark.parametrize("text, cut, kind", [
    ('{"a": 1}\n', False, "json-line"),
    ('{\n  "a": 1\n}\n', False, "json"),
    ('{"a": 1}\n{"a": 2}\n', False, "jsonl"),
    ('not json\n{"a": 1}\n{"a": 2}\n', False, "jsonl"),
    ('{\n  "a": [1, 2,', True, "json"),
    ("a,b\n1,2\n", False, "other"),
    ('{"a": 1}{"a": 2}', False, "other"),
])
def test_sniff_tells_documents_from_lines(text, cut, kind):
    assert sniff(text, cut) == kind


def test_typo_of_counts_edits_and_transpositions():
    assert typo_of("tpye", ["type", "text"]) == ["type"]
    assert typo_of("txt", ["text", "type"]) == ["text"]
    assert typo_of("parent_id", ["span_id"]) == []
    assert typo_of("tool_call_id", ["tool_calls"]) == []


def test_drift_never_claims_every_field_is_there_when_one_is_in_no_sample(tmp_path: Path):
    from mapc.tools.drift import drift, format_drift

    case = CASES / "field-typo"
    report, _ = drift(case / "spec.yaml", case / "sample.jsonl")
    never = [i for i in report.items if i.kind == "never_seen"]
    assert [i.path for i in never] == ["txt"] and not report.breaking
    text = format_drift(report)
    assert "every field the spec reads is there" not in text
    assert "read, but in neither the fixtures nor the new sample (1; optional fields, or typos: `mapc check` " \
        "points at those): txt (records.events.rules[0])" in text


def _collapsing_one_pair_at_a_time(segs):
    """``drift._variants`` as it was (the oracle): the path, then the leftmost ``[][]`` read
    as ``[]``, again and again, each time rescanning the path."""
    out, current = [segs], list(segs)
    while any(current[i] == current[i + 1] == "[]" for i in range(len(current) - 1)):
        i = next(i for i in range(len(current) - 1) if current[i] == current[i + 1] == "[]")
        del current[i]
        out.append(tuple(current))
    return out


def test_path_variants_are_the_pairs_collapsed_left_to_right_no_longer_than_the_profile():
    """Built once each and only as long as the profile's longest path (`a[0][0]...` of n
    steps made n variants of n segments, each looked up)."""
    import itertools

    from mapc.tools.drift import _variants

    for n in range(9):
        for segs in itertools.product(["a", "[]", "*"], repeat=n):
            for longest in range(10):
                assert list(_variants(segs, longest)) == [
                    v for v in _collapsing_one_pair_at_a_time(segs) if len(v) <= longest], (segs, longest)


#: the traps whose warnings would be false alarms on the library's and examples' specs (their
#: naive times are real: OpenHands and tau2 write local times without a zone)
_NEVER_ON_THE_LIBRARY = {"empty_string_falsy", "null_argument", "timestamp_range"}


@pytest.mark.parametrize("spec", SPECS, ids=[str(p.relative_to(ROOT)) for p in SPECS])
def test_no_library_or_example_spec_springs_a_trap(spec: Path):
    loaded, diags = load_checked(spec)
    assert loaded is not None, [d.format() for d in diags]
    found = analyse_fixtures(loaded, list(diags))[1]
    assert [d.format() for d in found if d.code in _NEVER_ON_THE_LIBRARY] == []


def test_every_trap_has_a_case():
    codes = {d["code"] for case in CASE_DIRS for d in json.loads((case / "expected.json").read_text())}
    assert {"empty_string_falsy", "null_argument", "timestamp_range", "naive_time", "rule_never_matches"} <= codes


def test_check_reports_coverage_per_rule_and_per_value():
    """The issue's example: a rule hidden by the one above it, a rule whose text is a typo."""
    case = CASES / "rule-never-matches"
    proc = _mapc("check", "spec.yaml", cwd=case)
    assert proc.exit_code == 0, proc.stderr
    assert "rules[1] type == 'tool' -> tool: 0  <- never matches" in proc.stderr
    assert "rules[0] takes the elements with type 'tool' first (first match wins)" in proc.stderr
    assert "did you mean 'reward'?" in proc.stderr
    assert "type=tool (1, rules[0]): reads type; ignores args, name, result" in proc.stderr
    payload = json.loads(_mapc("check", "--json", "spec.yaml", cwd=case).stdout)
    cov = payload["coverage"]
    assert [r["matched"] for r in cov["rules"]] == [2, 0, 0] and cov["unmatched"] == 1
    assert cov["discriminator"] == "type"
    assert {r["value"]: r["ignored"] for r in cov["fields"]} == {
        "message": [], "tool": ["args", "name", "result"], "reward": ["value"]}
    assert [d["code"] for d in payload["diagnostics"]] == ["rule_never_matches"] * 2


def test_test_reports_coverage_too(tmp_path: Path):
    import shutil

    shutil.copytree(CASES / "empty-string-in-and-or", tmp_path / "case")
    proc = _mapc("test", "--json", "spec.yaml", cwd=tmp_path / "case")
    payload = json.loads(proc.stdout)
    assert payload["coverage"]["rules"][0]["matched"] == 2
    assert "empty_string_falsy" in [d["code"] for d in payload["diagnostics"]]
    text = _mapc("test", "spec.yaml", cwd=tmp_path / "case")
    assert "coverage: 2 element(s) in sample.jsonl" in text.stdout + text.stderr


def test_a_trap_on_a_part_not_evaluated_stays_quiet(tmp_path: Path):
    """`x && join(',', x) || ''`: join is only called where x holds; its null elsewhere is no trap."""
    spec = (CASES / "null-to-join" / "spec.yaml").read_text().replace(
        "join(' ', args.argv && args.argv || args.cmd)", "args.cmd && join(' ', args.cmd) || ''")
    (tmp_path / "spec.yaml").write_text(spec)
    (tmp_path / "sample.jsonl").write_text((CASES / "null-to-join" / "sample.jsonl").read_text())
    loaded, diags = load_checked(tmp_path / "spec.yaml")
    assert loaded is not None and analyse_fixtures(loaded, list(diags))[1] == []
