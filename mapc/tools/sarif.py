"""``--format sarif``: the diagnostics as a SARIF 2.1.0 log, for GitHub code scanning.

One run: ``tool.driver`` is mapc (name, version, one rule per diagnostic code in the log);
each diagnostic with a file is a result (``ruleId`` its code, ``level``, ``message``, one
location whose ``artifactLocation.uri`` is relative to the repository, ``uriBaseId``
``%SRCROOT%``, and a region: code scanning needs ``startLine``, so a diagnostic about a
whole file points at its line 1). A diagnostic with no file (a usage error, a spec that
cannot be read) is a tool execution notification of the run's invocation, which also
records the exit code. The spec path of a diagnostic is its result's ``specPath`` property.
Tests validate the log against the official schema (tests/data/sarif/).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import quote

from mapc.core.version import __version__
from mapc.tools.annotations import message_text, relative_file, workspace

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
#: Diagnostic severity -> SARIF level.
LEVELS = {"error": "error", "warning": "warning"}
BASE = "%SRCROOT%"


def sarif_log(diags: list[dict[str, Any]], command: str, exit_status: int) -> dict[str, Any]:
    root = workspace()
    located = [d for d in diags if d.get("file")]
    codes = list(dict.fromkeys(d["code"] for d in located))
    rules = [_rule(code, next(d for d in located if d["code"] == code)) for code in codes]
    invocation: dict[str, Any] = {"executionSuccessful": exit_status in (0, 1), "exitCode": exit_status,
                                  "commandLine": f"mapc {command}"}
    notes = [{"level": LEVELS.get(d.get("severity"), "note"), "message": {"text": message_text(d)},
              "descriptor": {"id": d["code"]}} for d in diags if not d.get("file")]
    if notes:
        invocation["toolExecutionNotifications"] = notes
    run = {
        "tool": {"driver": {"name": "mapc", "version": __version__, "semanticVersion": __version__,
                            "rules": rules}},
        "originalUriBaseIds": {BASE: {"uri": root.as_uri().rstrip("/") + "/"}},
        "invocations": [invocation],
        "results": [_result(d, codes.index(d["code"]), root) for d in located],
    }
    return {"$schema": SCHEMA, "version": "2.1.0", "runs": [run]}


def _rule(code: str, first: dict[str, Any]) -> dict[str, Any]:
    return {"id": code, "shortDescription": {"text": code.replace("_", " ")},
            "defaultConfiguration": {"level": LEVELS.get(first.get("severity"), "note")}}


def _result(d: dict[str, Any], rule_index: int, root: Path) -> dict[str, Any]:
    rel = relative_file(d["file"], root)
    artifact = ({"uri": quote(rel), "uriBaseId": BASE} if rel is not None
                else {"uri": Path(os.path.abspath(d["file"])).as_uri()})
    region = {"startLine": max(1, int(d.get("line") or 1))}
    if d.get("line") and d.get("column"):
        region["startColumn"] = max(1, int(d["column"]))
    result = {"ruleId": d["code"], "ruleIndex": rule_index, "level": LEVELS.get(d.get("severity"), "note"),
              "message": {"text": message_text(d)},
              "locations": [{"physicalLocation": {"artifactLocation": artifact, "region": region}}]}
    if d.get("path"):
        result["properties"] = {"specPath": d["path"]}
    return result
