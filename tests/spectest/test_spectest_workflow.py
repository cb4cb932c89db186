"""`mapc test` in the workflow: the command line, `--update`, `--against` a built adapter,
`mapc build` testing first, `mapc init` writing the first expected file, and the schema."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from mapc.spectest import run_tests
from regen.helpers import mapc
from spectest_support import copy_example, edit

BROKEN = ("      - when: \"role == 'assistant'\"\n        kind: generation",
          "      - when: \"role == 'assistant'\"\n        kind: message")


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    """verifiers-math built for every target from a pristine copy: the adapters a user trusted."""
    from mapc.api import build

    root = tmp_path_factory.mktemp("trusted")
    spec = copy_example(root, "verifiers-math")
    out = {}
    for target in ("rlviz", "cap-evolve", "relai"):
        result = build(spec, target, root / target, validate=False)
        assert result.ok, [d.message for d in result.diagnostics]
        out[target] = root / target
    return out


def test_cli_exit_codes_and_json(tmp_path: Path):
    spec = copy_example(tmp_path, "verifiers-math")
    ok = mapc("test", spec, "--json")
    assert ok.returncode == 0, ok.stderr
    doc = json.loads(ok.stdout)
    assert doc["ok"] and [(c["kind"], c["status"]) for c in doc["cases"]] == [
        ("records", "passed"), ("evaluation", "passed"), ("evaluation", "passed")]
    assert doc["cases"][0]["records"] == 178
    edit(spec, *BROKEN)
    failed = mapc("test", spec, "--json")
    assert failed.returncode == 1
    case = json.loads(failed.stdout)["cases"][0]
    assert case["status"] == "failed" and len(case["differences"]) == 31
    first = case["differences"][0]
    assert first["fields"][0] == {"field": "kind", "change": "changed", "expected": "generation", "actual": "message",
                                  "spec_path": "records.events.rules[0].kind", "file": str(spec), "line": 48}
    text = mapc("test", spec)
    assert text.returncode == 1 and "mapc test --update" in text.stderr
    spec.write_text(spec.read_text() + "\nbogus: 1\n")
    bad = mapc("test", spec)
    assert bad.returncode == 1 and "unknown_key" in bad.stderr  # an invalid spec: a problem found (D98)
    both = mapc("test", spec, "--update", "--against", tmp_path)
    assert both.returncode == 2


def test_update_writes_only_what_changed_and_then_passes(tmp_path: Path):
    spec = copy_example(tmp_path, "verifiers-math")
    expected = spec.parent / "results.jsonl.expected.ndjson"
    before = expected.read_bytes()
    assert [r.status for r in run_tests(spec, update=True).results] == ["current"] * 3
    edit(spec, *BROKEN)
    assert not run_tests(spec).ok
    assert [r.status for r in run_tests(spec, update=True).results] == ["written", "current", "current"]
    assert run_tests(spec).ok
    after = expected.read_bytes().decode().splitlines()
    changed = [n for n, (a, b) in enumerate(zip(before.decode().splitlines(), after)) if a != b]
    assert len(after) == len(before.decode().splitlines()) and len(changed) == 31  # the 31 assistant turns


def test_update_never_writes_through_a_symlink(tmp_path: Path):
    spec = copy_example(tmp_path, "verifiers-math")
    expected = spec.parent / "results.jsonl.expected.ndjson"
    outside = tmp_path / "outside.txt"
    outside.write_text("mine\n")
    expected.unlink()
    expected.symlink_to(outside)
    report = run_tests(spec, update=True)
    assert not report.ok and "symbolic link" in report.results[0].message
    assert [r.status for r in report.results[1:]] == ["current", "current"]
    assert outside.read_text() == "mine\n"


def test_a_missing_expected_file_fails_and_says_how_to_write_it(tmp_path: Path):
    spec = copy_example(tmp_path, "verifiers-math")
    (spec.parent / "results.jsonl.expected.ndjson").unlink()
    result = mapc("test", spec)
    assert result.returncode == 1
    assert "MISSING" in result.stderr and f"mapc test --update {spec}" in result.stderr


@pytest.mark.parametrize("target", ["rlviz", "cap-evolve", "relai"])
def test_against_a_built_adapter(built, target: str, tmp_path: Path):
    spec = copy_example(tmp_path, "verifiers-math")
    (spec.parent / "results.jsonl.expected.ndjson").unlink()  # --against does not need them
    assert run_tests(spec, against=built[target]).ok
    edit(spec, *BROKEN)
    report = run_tests(spec, against=built[target])
    result = report.results[0]
    assert result.status == "failed" and len(result.diffs) == 31
    assert [r.status for r in report.results[1:]] == ["skipped", "skipped"]  # evaluations: expected files only
    assert result.diffs[0].fields[0].place.path == "records.events.rules[0].kind"


def test_against_a_folder_without_an_adapter_is_a_usage_error(tmp_path: Path):
    spec = copy_example(tmp_path, "verifiers-math")
    result = mapc("test", spec, "--against", tmp_path)
    assert result.returncode == 2 and "no generated adapter" in result.stderr


def test_build_tests_first_and_writes_nothing_when_a_test_fails(tmp_path: Path):
    from mapc.api import build

    spec = copy_example(tmp_path, "verifiers-math")
    edit(spec, *BROKEN)
    out = tmp_path / "out"
    result = build(spec, "rlviz", out, validate=False)
    assert not result.ok and not out.exists()
    (diag,) = result.diagnostics.errors
    assert diag.code == "test_failed" and "--update" in diag.hint
    assert build(spec, "rlviz", out, validate=False, test=False).ok


def test_build_notes_fixtures_without_expected_records(tmp_path: Path):
    spec = copy_example(tmp_path, "verifiers-math")
    (spec.parent / "results.jsonl.expected.ndjson").unlink()
    result = mapc("build", spec, "--target", "rlviz", "-o", tmp_path / "out", "--no-validate")
    assert result.returncode == 0, result.stderr
    assert "not tested (no expected records yet): results.jsonl" in result.stderr


def test_init_saves_no_expected_records_until_the_user_accepts_them(tmp_path: Path):
    """Issue 30: a draft's records are a guess; `mapc init` once saved them as the expected ones.
    Now it says how to accept them, and the commands it prints work as printed."""
    sample = tmp_path / "oslo.jsonl"
    sample.write_bytes((Path(__file__).resolve().parents[2] / "examples/nemo-gym-weather/samples/oslo.jsonl")
                       .read_bytes())
    result = mapc("init", "--from", sample.name, "-o", "spec.yaml", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert not (tmp_path / "oslo.jsonl.expected.ndjson").exists()
    assert "mapc test --update spec.yaml" in result.stderr and "No expected records are saved" in result.stderr
    assert run_tests(tmp_path / "spec.yaml").results[0].status == "missing"
    accepted = mapc("test", "--update", "spec.yaml", cwd=tmp_path)
    assert accepted.returncode == 0, accepted.stderr
    assert (tmp_path / "oslo.jsonl.expected.ndjson").is_file() and run_tests(tmp_path / "spec.yaml").ok


def test_schema_knows_tests():
    from mapc.spec.schema import SCHEMA

    item = SCHEMA["properties"]["tests"]["items"]
    assert set(item["properties"]) == {"name", "source", "task", "trace", "expected", "expect"}
    assert {"counts", "kinds", "records", "scores", "feedback", "reward", "metrics"} <= set(
        item["properties"]["expect"]["properties"])


def test_tests_do_not_change_the_spec_digest(tmp_path: Path):
    from mapc.pipeline.build import load_checked

    spec = copy_example(tmp_path, "verifiers-math")
    before, _ = load_checked(spec)
    spec.write_text(spec.read_text() + "  - {source: results.jsonl, expect: {counts: {run: 1}}}\n")
    after, _ = load_checked(spec)
    assert len(after.tests) == len(before.tests) + 1 and after.digest == before.digest


def test_an_extending_spec_does_not_inherit_tests(tmp_path: Path):
    from mapc.pipeline.build import load_checked

    base = copy_example(tmp_path, "verifiers-math")
    child = base.parent / "child.yaml"
    child.write_text("mapc: 1\nname: child\nextends: spec.yaml\n")
    loaded, diags = load_checked(child)
    assert loaded is not None, [d.message for d in diags]
    assert loaded.tests == () and len(load_checked(base)[0].tests) == 2


def test_bad_tests_entries_are_spec_errors_with_positions(tmp_path: Path):
    spec = copy_example(tmp_path, "verifiers-math")
    spec.write_text(spec.read_text() + "  - {source: ../../outside.jsonl}\n  - {task: nope}\n"
                    "  - {source: results.jsonl, task: example-0}\n  - {source: missing.jsonl}\n"
                    "  - {source: results.jsonl, expected: x.ndjson, expect: {counts: {run: 1}}}\n")
    result = mapc("check", spec, "--json")
    assert result.returncode == 1
    found = {(d["path"], d["code"]) for d in json.loads(result.stdout)["diagnostics"]}
    assert found == {("tests[2].source", "invalid_value"), ("tests[3].task", "unknown_task"),
                     ("tests[4]", "invalid_value"), ("tests[5].source", "missing_file"),
                     ("tests[6].expect", "conflicting_keys")}


def test_two_cases_never_share_an_expected_file(tmp_path: Path):
    spec = copy_example(tmp_path, "verifiers-math")
    spec.write_text(spec.read_text() + "  - {task: example-0, name: again}\n")
    report = run_tests(spec)
    again = [r for r in report.results if r.case.name == "again"][0]
    assert again.status == "error" and "expected: " not in again.message and "`expected:`" in again.message
    assert [r.status for r in report.results if r.case.name != "again"] == ["passed"] * 3


def test_evaluation_cases_score_the_recorded_trace(tmp_path: Path):
    spec = copy_example(tmp_path, "verifiers-math")
    report = run_tests(spec)
    evaluations = {r.case.task: r for r in report.results if r.case.kind == "evaluation"}
    assert set(evaluations) == {"example-0", "example-3"} and all(r.ok for r in evaluations.values())
    doc = json.loads((spec.parent / "spec.example-0.expected.json").read_text())
    assert doc["scores"] == {"correct": 1.0, "used_python": 1.0} and doc["trajectory_id"] == "example-0-rollout-0"
    assert set(doc["metrics"]) == {"reward", "correct", "used_python"}


def test_update_writes_files_with_the_usual_permissions(tmp_path: Path):
    spec = copy_example(tmp_path, "verifiers-math")
    expected = spec.parent / "results.jsonl.expected.ndjson"
    expected.unlink()
    old = os.umask(0o022)
    try:
        assert run_tests(spec, update=True).ok
    finally:
        os.umask(old)
    assert expected.stat().st_mode & 0o777 == 0o644
