"""Every command keeps the output contract of docs/cli.md: the envelope, the exit codes and
the github and sarif formats, in the success, problems-found and usage-error cases, for one
input and for many.

The commands are enumerated from Typer's registry, so a command added without cases here
(and a row in docs/cli.md) fails ``test_every_command_has_contract_cases``. The payload keys
each command must carry are read from docs/cli.md's table, so the page and the code cannot
drift apart. SARIF logs are validated against the official SARIF 2.1.0 schema (vendored in
tests/data/sarif).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import jsonschema
import pytest
import typer
from typer.testing import CliRunner

from mapc.cli import app
from shared_paths import SHARED

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "verifiers-math"
SARIF_SCHEMA = json.loads((SHARED / "sarif" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
DIAGNOSTIC_KEYS = {"code", "severity", "message", "file", "line", "column", "path", "hint"}
ANNOTATION = re.compile(r"^::(error|warning|notice) (?:file=[^,:]+,(?:line=\d+,(?:col=\d+,)?)?)?title=[^,:]+::.*$")

# -- the cases ------------------------------------------------------------------------------------
# Each case: (name, argv, expected exit code, many?) with paths as {placeholders} of the project
# below; ``cwd`` "project" runs in the project with a configuration (no SPEC), "bad" in one whose
# configuration lists a spec with errors.
OK, FOUND, USAGE = 0, 1, 2
CASES: dict[str, list[tuple]] = {
    "check": [
        ("success", ["check", "{spec}"], OK, False),
        ("problems", ["check", "{bad}"], FOUND, False),
        ("usage", ["check", "{missing}"], USAGE, False),
        ("many", ["check"], OK, "project"),
        ("many problems", ["check"], FOUND, "bad"),
    ],
    "build": [
        ("success", ["build", "{spec}", "-t", "rlviz", "-o", "{plugin}", "--no-validate", "--no-test"], OK, False),
        ("problems", ["build", "{bad}", "-t", "rlviz", "-o", "{scratch}/bad-out"], FOUND, False),
        ("usage", ["build", "{spec}", "-t", "nosuch", "-o", "{scratch}/x"], USAGE, False),
        ("check current", ["build", "{spec}", "-t", "rlviz", "-o", "{plugin}", "--check"], OK, False),
        ("check stale", ["build", "{spec}", "-t", "rlviz", "-o", "{stale}", "--diff"], FOUND, False),
        ("many", ["build", "--check"], OK, "project"),
        ("many build", ["build", "--no-validate", "--no-test"], OK, "project"),
        ("many problems", ["build", "--check"], FOUND, "bad"),
    ],
    "run": [
        ("success", ["run", "{spec}", "{trace}"], OK, False),
        ("problems", ["run", "{spec}", "{broken}"], FOUND, False),
        ("usage", ["run", "{spec}", "{missing}"], USAGE, False),
        ("many", ["run", "{spec}", "{trace}", "{trace2}"], OK, True),
        ("many problems", ["run", "{spec}", "{trace}", "{broken}"], FOUND, True),
    ],
    "test": [
        ("success", ["test", "{spec}"], OK, False),
        ("problems", ["test", "{bad}"], FOUND, False),
        ("usage", ["test", "{spec}", "--update", "--against", "{plugin}"], USAGE, False),
        ("many", ["test"], OK, "project"),
        ("many problems", ["test"], FOUND, "bad"),
    ],
    "validate": [
        ("success", ["validate", "-t", "rlviz", "{plugin}", "{trace}"], OK, False),
        ("problems", ["validate", "-t", "rlviz", "{plugin}", "{broken}"], FOUND, False),
        ("usage", ["validate", "-t", "nosuch", "{plugin}"], USAGE, False),
        ("many", ["validate", "-t", "rlviz", "{plugin}", "{trace}", "{trace2}"], OK, True),
        ("many problems", ["validate", "-t", "rlviz", "{plugin}", "{trace}", "{broken}"], FOUND, True),
    ],
    "review": [
        ("success", ["review", "{plugin}"], OK, False),
        ("problems", ["review", "{stale}"], FOUND, False),
        ("usage", ["review", "{missing}"], USAGE, False),
    ],
    "runtime": [
        ("success", ["runtime"], OK, False),
        ("usage", ["runtime", "--show"], USAGE, False),
    ],
    "explain": [
        ("success", ["explain", "{spec}"], OK, False),
        ("problems", ["explain", "{bad}"], FOUND, False),
        ("usage", ["explain", "{missing}"], USAGE, False),
    ],
    "drift": [
        ("success", ["drift", "{spec}", "{trace}"], OK, False),
        ("problems", ["drift", "{spec}", "{renamed}"], FOUND, False),
        ("usage", ["drift", "{spec}", "{missing}"], USAGE, False),
    ],
    "report": [
        ("success", ["report", "{spec}", "-o", "{scratch}/report.html"], OK, False),
        ("problems", ["report", "{bad}", "-o", "{scratch}/bad-report.html"], FOUND, False),
        ("usage", ["report", "{missing}", "-o", "{scratch}/missing.html"], USAGE, False),
    ],
    "schema": [
        ("success", ["schema"], OK, False),
        ("usage", ["schema", "-o", "{foreign}"], USAGE, False),
    ],
    "specs": [
        ("success", ["specs"], OK, False),
        ("usage", ["specs", "extra-argument"], USAGE, False),
    ],
    "targets": [
        ("success", ["targets"], OK, False),
        ("usage", ["targets", "extra-argument"], USAGE, False),
    ],
    "init": [
        ("success", ["init", "--from", "{trace}"], OK, False),
        ("problems", ["init", "--from", "{garbage}"], FOUND, False),
        ("usage", ["init", "--from", "{missing}"], USAGE, False),
    ],
}
#: Commands that find no problems (they list or print what mapc has): no problems-found case.
NO_PROBLEMS = {"runtime", "schema", "specs", "targets"}
#: Commands that take one input (docs/cli.md: no "keys of each result").
ONE_INPUT = {"review", "runtime", "explain", "drift", "report", "schema", "specs", "targets", "init"}


def documented_payloads() -> dict[str, tuple[list[str], list[str]]]:
    """docs/cli.md's table: command -> (payload keys, keys of each result)."""
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    table = text.split("## Payload of each command", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0].startswith("`"):
            rows[cells[0].strip("`")] = (re.findall(r"`([a-z_]+)`", cells[1]), re.findall(r"`([a-z_]+)`", cells[2]))
    return rows


def registered_commands() -> list[str]:
    return sorted(typer.main.get_command(app).commands)


# -- the project the cases run on -----------------------------------------------------------------
@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """A git repository with the example spec, its trace, a spec with errors, a built plugin,
    a stale (hand-edited) copy of it and two project configurations."""
    from mapc.api import build

    root = tmp_path_factory.mktemp("contract")
    (root / ".git").mkdir()
    specs = root / "specs"
    shutil.copytree(EXAMPLE, specs)
    bad_dir = root / "bad" / "specs"
    bad_dir.mkdir(parents=True)
    (root / "bad" / ".git").mkdir()
    bad = bad_dir / "spec.yaml"
    bad.write_text("mapc: 1\nname: Bad Name\nsorce: {}\n", encoding="utf-8")
    shutil.copy(specs / "spec.yaml", bad_dir / "good.yaml")
    for name in ("results.jsonl", "results.jsonl.expected.ndjson", "metadata.json"):
        shutil.copy(specs / name, bad_dir / name)
    plugin = root / "plugins" / "verifiers"
    assert build(specs / "spec.yaml", "rlviz", plugin).ok
    stale = root / "plugins" / "stale"
    shutil.copytree(plugin, stale)
    lock = json.loads((stale / "mapc.lock.json").read_text())
    (stale / "README.md").write_text("edited by hand\n")
    assert lock  # the copy keeps its lock: `build --check` and `review` see the edit
    lines = (specs / "results.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (root / "trace.jsonl").write_text("".join(lines[:3]), encoding="utf-8")
    (root / "trace2.jsonl").write_text("".join(lines[3:6]), encoding="utf-8")
    (root / "broken.jsonl").write_text(lines[0] + "{not json\n", encoding="utf-8")
    renamed = [json.loads(line) for line in lines[:3]]
    for record in renamed:
        record["answer_text"] = record.pop("completion", None)
    (root / "renamed.jsonl").write_text("".join(json.dumps(r) + "\n" for r in renamed), encoding="utf-8")
    (root / "foreign.json").write_text('{"mine": true}')
    (root / "garbage.bin").write_bytes(b"\x00\xff\xfe not text")
    shutil.copy(specs / "spec.yaml", specs / "other.yaml")
    for expected in specs.glob("spec.example-*.expected.json"):
        shutil.copy(expected, specs / expected.name.replace("spec.", "other.", 1))
    (root / "mapc.toml").write_text('[[build]]\nspec = "specs/spec.yaml"\ntarget = "rlviz"\n'
                                    'output = "plugins/verifiers"\n\n[[build]]\nspec = "specs/other.yaml"\n'
                                    'target = "rlviz"\noutput = "plugins/second"\n', encoding="utf-8")
    assert build(specs / "other.yaml", "rlviz", root / "plugins" / "second", validate=False).ok
    (root / "bad" / "pyproject.toml").write_text('[[tool.mapc.build]]\nspec = "specs/good.yaml"\ntarget = "rlviz"\n'
                                                 'output = "out/good"\n\n[[tool.mapc.build]]\n'
                                                 'spec = "specs/spec.yaml"\ntarget = "rlviz"\noutput = "out/bad"\n',
                                                 encoding="utf-8")
    places = {"spec": specs / "spec.yaml", "bad": bad, "missing": root / "missing.yaml", "plugin": plugin,
              "stale": stale, "scratch": root / "scratch", "trace": root / "trace.jsonl",
              "trace2": root / "trace2.jsonl", "broken": root / "broken.jsonl", "renamed": root / "renamed.jsonl",
              "foreign": root / "foreign.json", "garbage": root / "garbage.bin"}
    return root, places


def invoke(project, monkeypatch, argv, cwd, fmt):
    root, places = project
    monkeypatch.delenv("MAPC_ALLOW_READ", raising=False)
    monkeypatch.delenv("GITHUB_WORKSPACE", raising=False)
    monkeypatch.chdir(root / "bad" if cwd == "bad" else root)
    args = [a.format(**places) for a in argv] + ["--format", fmt]
    result = CliRunner().invoke(app, args)
    assert result.exception is None or isinstance(result.exception, SystemExit), (args, result.exception)
    return result


ALL_CASES = [(command, *case) for command, cases in CASES.items() for case in cases]
#: The json envelope of each case, as test_json_envelope got it (the github and sarif test
#: compares with it instead of running the command once more).
ENVELOPES: dict[tuple, dict] = {}


def test_every_command_has_contract_cases():
    """A command registered without cases here or a row in docs/cli.md breaks the contract."""
    documented = documented_payloads()
    for command in registered_commands():
        assert command in CASES, f"`mapc {command}` has no output-contract cases in {__file__}"
        assert command in documented, f"`mapc {command}` has no row in docs/cli.md's payload table"
        kinds = {case[0].split()[0] for case in CASES[command]}
        assert {"success", "usage"} <= kinds, command
        assert ("problems" in kinds) != (command in NO_PROBLEMS), command
        assert ("many" in kinds) != (command in ONE_INPUT), command
        assert bool(documented[command][1]) != (command in ONE_INPUT), command
    assert set(CASES) == set(registered_commands())


@pytest.mark.parametrize("command, name, argv, code, many", ALL_CASES,
                         ids=[f"{c[0]}-{c[1]}".replace(" ", "-") for c in ALL_CASES])
def test_json_envelope(project, monkeypatch, command, name, argv, code, many):
    result = invoke(project, monkeypatch, argv, many, "json")
    assert result.exit_code == code, (argv, result.stdout[-3000:])
    envelope = json.loads(result.stdout)
    check_envelope(envelope)
    ENVELOPES[(command, name)] = envelope
    if code == USAGE:
        assert set(envelope) == {"ok", "diagnostics"} and envelope["ok"] is False
        assert envelope["diagnostics"] and all(d["severity"] == "error" for d in envelope["diagnostics"])
        return
    assert envelope["ok"] is (code == OK)
    keys, result_keys = documented_payloads()[command + (" --check" if "--check" in argv or "--diff" in argv
                                                          else "")]
    if many:
        assert isinstance(envelope["results"], list) and len(envelope["results"]) >= 2, envelope
        assert envelope["ok"] is all(r["ok"] for r in envelope["results"])
        for item in envelope["results"]:
            assert set(result_keys) <= set(item), (result_keys, sorted(item))
        if many in ("project", "bad"):
            assert Path(envelope["config"]).name in ("mapc.toml", "pyproject.toml")
    else:
        assert "results" not in envelope or command == "validate"
        missing = set(keys) - set(envelope)
        assert not missing, f"documented payload keys missing from `mapc {command}`: {missing}"


def check_envelope(envelope: dict) -> None:
    """``ok``, ``diagnostics`` of the documented shape, ``ok`` == no error, in results too."""
    assert isinstance(envelope["ok"], bool) and isinstance(envelope["diagnostics"], list)
    for d in envelope["diagnostics"]:
        assert {"code", "severity", "message"} <= set(d) <= DIAGNOSTIC_KEYS, d
        assert d["severity"] in ("error", "warning")
        assert all(isinstance(d[k], int) and d[k] >= 1 for k in ("line", "column") if k in d), d
    results = envelope.get("results", [])
    for item in results:
        check_envelope(item)
    errors = any(d["severity"] == "error" for d in envelope["diagnostics"])
    assert envelope["ok"] is (not errors and all(r["ok"] for r in results)), envelope["diagnostics"]


def count_diagnostics(envelope: dict) -> int:
    return len(envelope["diagnostics"]) + sum(count_diagnostics(r) for r in envelope.get("results", []))


@pytest.mark.parametrize("command, name, argv, code, many", ALL_CASES,
                         ids=[f"{c[0]}-{c[1]}".replace(" ", "-") for c in ALL_CASES])
def test_github_and_sarif_say_the_same(project, monkeypatch, command, name, argv, code, many):
    """The same exit code in every format; one annotation and one SARIF result (or, without a
    file, one tool notification) per diagnostic of the json envelope; the SARIF log valid."""
    envelope = ENVELOPES.get((command, name)) or json.loads(invoke(project, monkeypatch, argv, many, "json").stdout)
    expected = count_diagnostics(envelope)
    github = invoke(project, monkeypatch, argv, many, "github")
    assert github.exit_code == code
    lines = github.stdout.splitlines()
    assert len(lines) == expected, github.stdout
    assert all(ANNOTATION.match(line) for line in lines), github.stdout
    sarif = invoke(project, monkeypatch, argv, many, "sarif")
    assert sarif.exit_code == code
    log = json.loads(sarif.stdout)
    jsonschema.Draft7Validator(SARIF_SCHEMA, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER).validate(log)
    run = log["runs"][0]
    notes = run["invocations"][0].get("toolExecutionNotifications", [])
    assert len(run["results"]) + len(notes) == expected
    assert run["invocations"][0]["exitCode"] == code
    assert run["invocations"][0]["executionSuccessful"] is (code != USAGE)
    rules = [r["id"] for r in run["tool"]["driver"]["rules"]]
    for result in run["results"]:
        assert rules[result["ruleIndex"]] == result["ruleId"]
        location = result["locations"][0]["physicalLocation"]
        assert location["region"]["startLine"] >= 1
        if location["artifactLocation"].get("uriBaseId") == "%SRCROOT%":
            assert not location["artifactLocation"]["uri"].startswith(("/", "file:"))


@pytest.mark.parametrize("command", registered_commands())
def test_an_unknown_option_is_a_usage_envelope(project, monkeypatch, command):
    """Typer's own usage errors keep the contract too (exit 2, the envelope in json)."""
    result = invoke(project, monkeypatch, [command, "--no-such-option"], False, "json")
    assert result.exit_code == USAGE
    envelope = json.loads(result.stdout)
    assert envelope["ok"] is False and envelope["diagnostics"][0]["code"] == "usage"
    assert "--no-such-option" in envelope["diagnostics"][0]["message"]


def test_json_and_another_format_conflict(project, monkeypatch):
    result = invoke(project, monkeypatch, ["specs", "--json"], False, "sarif")
    assert result.exit_code == USAGE and "--json is --format json" in result.stdout
