"""`mapc drift` on corpus traces whose schema was changed, and the profiler it shares with `mapc init`.

Each folder under tests/cases/drift with a `case.json` is a case: the spec (repository path,
or a file in the case folder), the sample (a corpus file under tests/data/corpus, `local:NAME`
in the case folder, or a repository path `tests/...`) and the edits applied to its records
(`only` picks the records an edit applies to; `append` adds one); `expected.json` is the drift
report (golden) and `case.json`'s `verdict` the verdict it must have. A folder without
`case.json` (openai-evals-log) holds a spec and fixture the cases share.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from golden import assert_golden
from mapc.tools.drift import drift, format_drift, segments
from mapc.analysis.profile import ProfileError, profile
from regen.helpers import CASES, CORPUS, ROOT, mapc

DRIFT_CASES = sorted(p for p in (CASES / "drift").iterdir() if (p / "case.json").is_file())


# -- schema edits -------------------------------------------------------------------------------
def _matches(record, only: dict | None) -> bool:
    """Whether ``record`` is one an edit applies to: each key of ``only`` holds its value
    (``"*"``: the key is there at all)."""
    if not only:
        return True
    return isinstance(record, dict) and all(
        k in record if v == "*" else record.get(k) == v for k, v in only.items())


def _edit(value, segs: tuple, op: dict):
    """Apply ``op`` at the path ``segs`` (``[]`` = every element) inside ``value``."""
    if isinstance(value, list) and segs and segs[0] == "[]":
        for item in value:
            _edit(item, segs[1:], op)
        return
    if not isinstance(value, dict) or not segs:
        return
    key, rest = segs[0], segs[1:]
    if rest:
        if key in value:
            _edit(value[key], rest, op)
        return
    if op["op"] == "rename" and key in value:
        value[op["to"]] = value.pop(key)
    elif op["op"] == "delete":
        value.pop(key, None)
    elif op["op"] == "stringify" and key in value:
        value[key] = str(value[key])
    elif op["op"] in ("add", "set"):
        value[key] = op["value"]


def _apply(docs: list, op: dict) -> list:
    """The records after ``op``: an edit of each record that ``op["only"]`` selects, or
    ``append``: a new record (line) before the first one ``op["before"]`` selects, else last."""
    if op["op"] == "append":
        at = next((i for i, d in enumerate(docs) if "before" in op and _matches(d, op["before"])), len(docs))
        return docs[:at] + [op["value"]] + docs[at:]
    for doc in docs:
        if _matches(doc, op.get("only")):
            _edit(doc, segments(op["path"]), op)
    return docs


def _sample(case: Path, tmp_path: Path) -> Path:
    """The case's sample with its edits: a corpus file, a file of the case (``local:NAME``)
    or of the repository (``tests/...``)."""
    spec = json.loads((case / "case.json").read_text())
    ref = spec["sample"]
    src = case / ref[6:] if ref.startswith("local:") else ROOT / ref if ref.startswith("tests/") else CORPUS / ref
    text = src.read_text(encoding="utf-8")
    jsonl = src.suffix == ".jsonl"
    docs = [json.loads(line) for line in text.splitlines() if line.strip()] if jsonl else [json.loads(text)]
    for op in spec["edits"]:
        docs = _apply(docs, op)
    out = tmp_path / src.name
    tmp_path.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(json.dumps(d) for d in docs) + "\n" if jsonl else json.dumps(docs[0]))
    return out


def _spec(case: Path) -> Path:
    ref = json.loads((case / "case.json").read_text())["spec"]
    return case / ref if (case / ref).is_file() else ROOT / ref


def test_there_are_drift_cases():
    assert len(DRIFT_CASES) >= 6


def _report(case: Path, tmp_path: Path):
    report, diags = drift(_spec(case), _sample(case, tmp_path))
    assert report is not None, [d.message for d in diags]
    return report


@pytest.mark.parametrize("case", DRIFT_CASES, ids=[p.name for p in DRIFT_CASES])
def test_drift_cases(case: Path, tmp_path: Path):
    report = _report(case, tmp_path)
    payload = report.to_dict()
    for key in ("spec", "sample", "ok"):  # where the test put them; ok is `not breaking`
        del payload[key]
    assert_golden(case / "expected.json", json.dumps(payload, indent=2) + "\n")
    assert report.verdict == json.loads((case / "case.json").read_text())["verdict"]


def test_a_renamed_field_on_a_corpus_trace_is_breaking(tmp_path: Path):
    report = _report(CASES / "drift" / "verifiers-renamed-field", tmp_path)
    assert report.verdict == "breaking"
    missing = {i.path for i in report.items if i.kind == "missing"}
    assert "completion" in missing
    assert any(i.kind == "probe" and "missing field completion" in i.message for i in report.items)
    (renamed,) = [i for i in report.items if i.renamed_to]
    assert (renamed.path, renamed.renamed_to) == ("completion", "completions")


def test_an_unchanged_corpus_trace_has_no_drift(tmp_path: Path):
    report = _report(CASES / "drift" / "verifiers-unchanged", tmp_path)
    assert report.verdict == "none"
    assert [i.severity for i in report.items] == ["note"]  # the sibling metadata.json is not beside it


def test_the_openai_evals_rename_that_blanked_every_generation_is_breaking(tmp_path: Path):
    """Issue 30: renaming `data.sampled` in the `sampling` lines left every generation empty;
    `match` lines still have a `data.sampled` (a text), so the path was still in the file
    and drift said "no breaking drift". Rule by rule, the sampling rule's elements lost it."""
    report = _report(CASES / "drift" / "evals-renamed-sampled", tmp_path)
    assert report.verdict == "breaking"
    rule = "records.events.rules[1]"
    found = {(i.kind, i.place, i.path): i for i in report.items}
    assert found[("blanked", rule, "output.content")].breaking
    missing = found[("missing", rule, "data.sampled[]")]
    assert missing.renamed_to == "data.completion[]" and missing.read_by == (f"{rule}.content",)


def test_an_alternative_the_spec_reads_is_no_false_alarm(tmp_path: Path):
    """Issue 30: `output_text || completion` on the spec's own fixture that has `completion`,
    where `mapc test` passes."""
    case = CASES / "drift" / "alternative-read-on-own-fixture"
    assert mapc("test", case / "spec.yaml").returncode == 0
    report = _report(case, tmp_path)
    assert report.verdict == "none"
    (note,) = report.items
    assert (note.kind, note.severity, note.path) == ("alternative", "note", "output_text")
    assert "completion instead" in note.message


def test_a_new_event_type_taken_by_the_catch_all_is_reported(tmp_path: Path):
    report = _report(CASES / "drift" / "evals-new-event-type", tmp_path)
    assert report.verdict == "additive"
    (new,) = [i for i in report.items if i.kind == "new_value"]
    assert new.path == "type == 'error'" and new.place == "records.events.rules[3]"
    assert "the other values of type ('match', 'sampling') have rules of their own" in new.message


def test_a_new_field_under_what_the_catch_all_maps_whole_is_reported(tmp_path: Path):
    report = _report(CASES / "drift" / "evals-catch-all-new-field", tmp_path)
    assert report.verdict == "additive"
    (new,) = report.items
    assert (new.kind, new.place, new.path) == ("new_field", "records.events.rules[3]", "data.bootstrap_std")
    assert "carried along whole by records.events.rules[3].data" in new.message


def test_a_renamed_event_type_is_breaking(tmp_path: Path):
    report = _report(CASES / "drift" / "evals-renamed-event-type", tmp_path)
    (renamed,) = [i for i in report.items if i.kind == "value_renamed"]
    assert renamed.breaking and renamed.place == "records.events.rules[1]" and renamed.renamed_to == "completion"


def test_no_path_read_through_a_computed_value_is_printed(tmp_path: Path):
    """Issue 30: drift printed invented "best guess" paths (`type[].content`) for a spec
    whose loop reads a computed value; a path it cannot know is never printed."""
    report = _report(CASES / "drift" / "claude-code-computed-loop", tmp_path)
    text = format_drift(report)
    assert "best guess" not in text and "type[]" not in text
    assert all(not i.path.startswith("type[]") for i in report.items)


def test_drift_cli_exit_codes_text_and_json(tmp_path: Path):
    case = CASES / "drift" / "verifiers-renamed-field"
    sample = _sample(case, tmp_path)
    proc = mapc("drift", _spec(case), sample)
    assert proc.returncode == 1
    assert "BREAKING missing       completion: missing from the new sample" in proc.stdout
    assert "verdict: BREAKING" in proc.stdout
    payload = json.loads(mapc("drift", _spec(case), sample, "--json").stdout)
    assert payload["verdict"] == "breaking" and payload["breaking"] is True and payload["ok"] is False
    ok = mapc("drift", _spec(case), CORPUS / "verifiers-results" / "math-python--gpt-5-nano.results.jsonl")
    assert ok.returncode == 0 and "verdict: no drift" in ok.stdout
    additive = CASES / "drift" / "verifiers-new-field"
    sample = _sample(additive, tmp_path / "additive")
    plain, strict = mapc("drift", _spec(additive), sample), mapc("drift", _spec(additive), sample, "--strict")
    assert (plain.returncode, strict.returncode) == (0, 1) and "verdict: additive" in plain.stdout
    assert json.loads(mapc("drift", _spec(additive), sample, "--json").stdout)["verdict"] == "additive"


def test_drift_cli_bad_input_exit_codes_without_traceback(tmp_path: Path):
    """A sample that is not there is a usage error (2); one that cannot be read, or a spec with
    errors, is a problem found (1), as from every command (D98)."""
    spec = ROOT / "examples" / "verifiers-math" / "spec.yaml"
    (tmp_path / "bin.jsonl").write_bytes(b"\xff\xfe\x00garbage")
    (tmp_path / "bad.yaml").write_text("mapc: 1\n")
    for args, code in (((spec, tmp_path / "missing.jsonl"), 2), ((spec, tmp_path / "bin.jsonl"), 1),
                       ((tmp_path / "bad.yaml", tmp_path / "bin.jsonl"), 1)):
        proc = mapc("drift", *args)
        assert proc.returncode == code, (args, proc.stdout, proc.stderr)
        assert "Traceback" not in proc.stderr and "error" in proc.stderr


def test_format_drift_groups_by_rule_and_bounds_each_kind(tmp_path: Path):
    case = CASES / "drift" / "verifiers-new-field"
    text = format_drift(_report(case, tmp_path))
    assert "source (what the spec reads outside its event rules)" in text
    assert "additive new_field     judge: new since the fixtures (object)" in text
    assert text.endswith("what it maps is unchanged\n")
    report = _report(CASES / "drift" / "evals-renamed-sampled", tmp_path / "b")
    many = [report.items[0]] * 12
    report.items = many
    shown = format_drift(report)
    assert shown.count(many[0].message) == 5 and "... and 7 more blanked (breaking; --json lists all)" in shown


# -- the profiler ----------------------------------------------------------------------------------
def test_a_profile_records_shape_never_values(tmp_path: Path):
    secret = "sk-live-THIS-MUST-NOT-LEAK"
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({"token": secret, "n": 987654321, "msgs": [{"role": "user"}, {"role": None}]}) + "\n"
                    + json.dumps({"token": secret, "msgs": []}) + "\n")
    prof = profile(path)
    dumped = json.dumps(prof.to_dict())
    assert secret not in dumped and "987654321" not in dumped and '"user"' not in dumped
    assert prof.container == "jsonl" and prof.records == 2
    assert prof.to_dict()["fields"] == {
        "": {"types": {"object": 2}, "count": 2},
        "msgs": {"types": {"array": 2}, "count": 2, "array_length": [0, 2]},
        "msgs[]": {"types": {"object": 2}, "count": 2},
        "msgs[].role": {"types": {"null": 1, "string": 1}, "count": 2},
        "n": {"types": {"number": 1}, "count": 1},
        "token": {"types": {"string": 2}, "count": 2},
    }


def test_profile_bounds(tmp_path: Path):
    doc = tmp_path / "big.json"
    doc.write_text(json.dumps({"items": [{"a": i} for i in range(5000)], "tail": 1}))
    cut = profile(doc, max_bytes=1000)
    assert cut.container == "json" and cut.truncated and cut.bytes_read == 1000
    assert "items[].a" in cut.fields and "tail" not in cut.fields
    lines = tmp_path / "many.jsonl"
    lines.write_text("".join(json.dumps({"i": i}) + "\n" for i in range(50)))
    few = profile(lines, max_lines=10)
    assert few.records == 10 and few.truncated
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 30 + "]" * 30)
    assert profile(deep, max_depth=5).truncated
    wide = tmp_path / "wide.json"
    wide.write_text(json.dumps({f"k{i}": i for i in range(100)}))
    assert len(profile(wide, max_paths=10).fields) == 10


def test_profile_container_guess_and_errors(tmp_path: Path):
    one = tmp_path / "one.json"
    one.write_text('{"a": 1}\n')
    assert profile(one).container == "json"
    named = tmp_path / "one.jsonl"
    named.write_text('{"a": 1}\n')
    assert profile(named).container == "jsonl"
    mixed = tmp_path / "mixed.txt"
    mixed.write_text('{"a": 1}\nnot json\n{"a": 2}\n')
    prof = profile(mixed)
    assert prof.container == "jsonl" and prof.records == 2 and prof.invalid_lines == 1
    for name, data in (("empty.json", b""), ("text.json", b"hello"), ("bin.json", b"\xff\xfe")):
        (tmp_path / name).write_bytes(data)
        with pytest.raises(ProfileError):
            profile(tmp_path / name)
    with pytest.raises(ProfileError):
        profile(tmp_path)


def test_segments():
    assert segments("a.b[].c") == ("a", "b", "[]", "c")
    assert segments("[]") == ("[]",)
    assert segments("x[][]") == ("x", "[]", "[]")
    assert segments("") == ()
