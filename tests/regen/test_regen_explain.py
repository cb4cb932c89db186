"""`mapc explain`: each spec line -> the generated function that implements it."""

from __future__ import annotations

import json
import shutil

from mapc.tools.explain import explain, format_explanation, mentions
from regen.helpers import EXAMPLES, build_ok, mapc

VERIFIERS = EXAMPLES / "verifiers-math" / "spec.yaml"


def _line_of(spec, text: str) -> int:
    return next(i for i, ln in enumerate(spec.read_text().splitlines(), start=1) if ln.strip().startswith(text))


def test_every_mapping_line_names_its_function():
    result, _ = explain(VERIFIERS)
    rows = {row.line: row for row in result.lines}
    case_id = rows[_line_of(VERIFIERS, "id: \"join('-', ['example'")]
    assert case_id.paths == ["records.case.id"] and case_id.functions == ["x_records_case_id", "level_case"]
    when = rows[_line_of(VERIFIERS, "- when: \"role == 'assistant'\"")]
    assert when.functions == ["level_events"] and when.inherited_from is None
    tool_calls = rows[_line_of(VERIFIERS, "tool_calls: >-")]
    assert tool_calls.functions == ["x_records_events_rules_0_tool_calls"]
    role = rows[_line_of(VERIFIERS, "role: role")]
    assert role.inherited_from == "records.events.rules[0]" and role.functions == ["level_events"]
    probe_when = rows[_line_of(VERIFIERS, "when: \"type(prompt)")]
    assert probe_when.functions == ["x_source_probe_when"]
    assert [r.line for r in result.lines] == sorted(r.line for r in result.lines)


def test_with_a_target_the_lines_point_into_the_built_files(tmp_path):
    ex = tmp_path / "ex"
    shutil.copytree(VERIFIERS.parent, ex)
    spec = ex / "spec.yaml"
    result, _ = explain(spec, "rlviz")
    out = tmp_path / "plugin"
    build_ok(spec, out)
    adapter = (out / "adapter.py").read_text().splitlines()
    row = next(r for r in result.lines if r.paths == ["records.case.id"])
    label = next(f for f in row.functions if f.endswith(" x_records_case_id"))
    line = int(label.split(" ")[0].split(":")[1])
    assert adapter[line - 1].startswith("# records.case.id (line 30):")
    assert adapter[line] == "def x_records_case_id(data, scope):"


def test_mentions_are_read_from_comments_and_strings_only():
    source = (
        "# records.run.name (line 3): x\n"
        "def level_run(st):\n"
        "    records = 1  # prose about records and source, not a path\n"
        "    coerce(st, 'records.run.id')\n"
        "    return 'source'\n"
    )
    found = mentions("a.py", source)
    assert found == {"records.run.name": [("a.py", 1, "level_run")], "records.run.id": [("a.py", 4, "level_run")]}


def test_explain_cli_text_json_and_errors(tmp_path):
    proc = mapc("explain", VERIFIERS)
    assert proc.returncode == 0
    assert "spec.yaml:30   records.case.id" in proc.stdout and "x_records_case_id, level_case" in proc.stdout
    payload = json.loads(mapc("explain", VERIFIERS, "--json").stdout)
    assert {"line": 30, "paths": ["records.case.id"], "functions": ["x_records_case_id", "level_case"]} \
        in payload["lines"]
    bad = tmp_path / "bad.yaml"
    bad.write_text("mapc: 1\nname: Bad Name\n")
    proc = mapc("explain", bad)
    assert proc.returncode == 1 and "error[" in proc.stderr and "Traceback" not in proc.stderr


def test_format_marks_inherited_lines():
    result, _ = explain(VERIFIERS)
    text = format_explanation(result)
    assert "records.events.rules[0].role" in text and "(within records.events.rules[0])" in text
