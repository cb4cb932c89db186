"""``--format github`` escapes as the Actions runner reads workflow commands, and ``--format
sarif`` locates results the way code scanning needs (relative URIs, a start line), valid
against the official SARIF 2.1.0 schema."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

from mapc.tools.annotations import annotations, escape_data, escape_property
from mapc.tools.sarif import sarif_log
from shared_paths import SHARED

SCHEMA = json.loads((SHARED / "sarif" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))


def test_workflow_command_escaping():
    assert escape_data("100% done\r\nnext: a, b") == "100%25 done%0D%0Anext: a, b"
    assert escape_property("dir,1/a:b.yaml 100%\n") == "dir%2C1/a%3Ab.yaml 100%25%0A"


def test_annotations_name_the_file_relative_to_the_workspace(tmp_path, monkeypatch):
    monkeypatch.setenv("GITHUB_WORKSPACE", str(tmp_path))
    inside = tmp_path / "specs" / "a,b:c.yaml"
    diags = [
        {"code": "unknown_key", "severity": "error", "message": "unknown key 'x'\nsecond line: 5%",
         "file": str(inside), "line": 3, "column": 7, "path": "records.run.x", "hint": "remove it"},
        {"code": "source_warning", "severity": "warning", "message": "skipped", "file": "/elsewhere/t.jsonl"},
        {"code": "usage", "severity": "error", "message": "spec not found: x"},
    ]
    lines = list(annotations(diags, "check"))
    assert lines[0] == ("::error file=specs/a%2Cb%3Ac.yaml,line=3,col=7,title=mapc check%3A unknown_key::"
                        "records.run.x: unknown key 'x'%0Asecond line: 5%25%0Ahint: remove it")
    assert lines[1] == "::warning file=/elsewhere/t.jsonl,title=mapc check%3A source_warning::skipped"
    assert lines[2] == "::error title=mapc check%3A usage::spec not found: x"


def test_sarif_results_locations_and_notifications(tmp_path, monkeypatch):
    monkeypatch.setenv("GITHUB_WORKSPACE", str(tmp_path))
    diags = [
        {"code": "unknown_key", "severity": "error", "message": "unknown key",
         "file": str(tmp_path / "my specs/a.yaml"), "line": 3, "column": 7, "path": "records.run.x"},
        {"code": "output_edited", "severity": "error", "message": "edited by hand",
         "file": str(tmp_path / "out/README.md")},
        {"code": "unknown_key", "severity": "warning", "message": "again", "file": "/elsewhere/b.yaml", "line": 2},
        {"code": "usage", "severity": "error", "message": "bad option"},
    ]
    log = sarif_log(diags, "check", 1)
    jsonschema.Draft7Validator(SCHEMA, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER).validate(log)
    run = log["runs"][0]
    assert [r["id"] for r in run["tool"]["driver"]["rules"]] == ["unknown_key", "output_edited"]
    first, whole_file, outside = run["results"]
    assert first["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "my%20specs/a.yaml", "uriBaseId": "%SRCROOT%"},
        "region": {"startLine": 3, "startColumn": 7}}
    assert first["properties"] == {"specPath": "records.run.x"}
    assert first["message"]["text"] == "records.run.x: unknown key"
    assert whole_file["locations"][0]["physicalLocation"]["region"] == {"startLine": 1}
    assert outside["level"] == "warning"
    assert outside["locations"][0]["physicalLocation"]["artifactLocation"] == {"uri": "file:///elsewhere/b.yaml"}
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == Path(tmp_path).as_uri() + "/"
    (note,) = run["invocations"][0]["toolExecutionNotifications"]
    assert note["descriptor"] == {"id": "usage"} and note["level"] == "error"
