"""Injection-proof generation: spec strings reach generated code as data, never as code.

The adversarial corpus (tests/cases/adversarial/strings.json: quotes, triple quotes,
backslashes, newlines, ``{{ }}``, ``{% %}``, U+2028/U+2029, NUL, control characters,
a very long string, Python keywords and code, shell syntax, HTML, bidi overrides) is
put into every string-bearing spec field (see ``adversarial.spec_data``). The spec
file, its fixture, the output folders and the project folder get adversarial names
too. The spec is built for every target once per module; then:

- every generated ``.py`` compiles, and the corpus's marker words occur in its
  tokens only inside string literals and comments;
- ``mapc review`` finds nothing and reports the agent command exactly;
- running the outputs shows each string arriving intact: RLViz records (metadata,
  signal names and values, artifacts, fields read by quoted names), the RELAI
  catalog and results (descriptions, feedback, task ids, the agent's argv,
  environment and input), cap-evolve tasks, rollouts and feedback;
- names and formats that could steer paths or code are refused with a located
  diagnostic.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest
import yaml

import adversarial as adv
from golden import assert_golden
from mapc.spec import load_spec_text
from security_support import check_diagnostics, drive_capevolve, host_env
from strict_python import compile_strictly

CORPUS = adv.corpus()
STRINGS = CORPUS["strings"]
TASK_IDS = list(CORPUS["task_ids"].values())
EVALUATOR_ID = CORPUS["evaluator_id"]
#: Words that occur only in the corpus: in generated Python they may appear only in strings and comments.
MARKERS = ("pwned", "whoami", "alert(1)", "7*7", "zero-width", "__import__")
ODD_FOLDER = "project 'q' \"x\" $(id) é\u2028 -->"
ODD_SPEC = "spec '$(id)' \"\"\" é\n--><b>.yaml"
ODD_FIXTURE = "fixture 'q' {x} $(id) é\n\"\"\".jsonl"


def test_case_files_are_generated_from_the_corpus():
    assert_golden(adv.CASE / "spec.yaml", adv.spec_text(CORPUS))
    assert_golden(adv.CASE / "fixture.jsonl", adv.fixture_text(CORPUS))
    data = yaml.safe_load((adv.CASE / "spec.yaml").read_text(encoding="utf-8"))
    assert data == adv.spec_data(CORPUS), "the YAML reads back as exactly the corpus"
    assert len(STRINGS) >= 20 and any(len(s) > 1000 for s in STRINGS.values())


@pytest.fixture(scope="module")
def builds(tmp_path_factory) -> dict:
    """The corpus spec, under adversarial file names, built (and validated) for every target."""
    from mapc.api import build

    project = tmp_path_factory.mktemp("adversarial") / ODD_FOLDER
    project.mkdir()
    shutil.copy(adv.CASE / "agent.py", project / "agent.py")
    (project / ODD_FIXTURE).write_text(adv.fixture_text(CORPUS), encoding="utf-8")
    spec = project / ODD_SPEC
    spec.write_text(adv.spec_text(CORPUS, fixture=ODD_FIXTURE), encoding="utf-8")
    outs = {"rlviz": project / "rlviz 'out' -->", "relai": project, "cap-evolve": project / 'cap "evolve"',
            "atif": project / "atif <b>out</b> -->"}
    results = {}
    for target, out in outs.items():
        result = build(spec, target, out)
        assert result.ok, (target, [d.format() for d in result.diagnostics],
                           result.validation and result.validation.text[-2000:])
        results[target] = result
    return {"project": project, "spec": spec, "outs": outs, "results": results}


def _python_files(builds) -> dict[str, Path]:
    out = {}
    for target, folder in builds["outs"].items():
        for rel in builds["results"][target].files:
            if rel.endswith(".py"):
                out[f"{target}:{rel}"] = folder / rel
    return out


def test_generated_python_compiles_and_holds_spec_text_only_as_data(builds):
    files = _python_files(builds)
    assert {"rlviz:adapter.py", "rlviz:test_adapter.py", f"relai:.relai/custom-adaptor/{CORPUS['name']}/run.py",
            "cap-evolve:adapter.py", "atif:convert.py"} <= set(files)
    seen = set()
    for name, path in files.items():
        source = path.read_text(encoding="utf-8")
        compile_strictly(source, name)  # as `python -W error`: no invalid escape either
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            hits = {m for m in MARKERS if m in tok.string}
            if hits:
                assert tok.type in (tokenize.STRING, tokenize.COMMENT), (name, tok)
                seen |= hits
    assert seen == set(MARKERS), "the corpus reached the generated code (as data)"


def test_headers_and_readmes_stay_inert(builds):
    """File names with newlines, quotes, `-->` and markup cannot add lines to a header or markup
    to a README."""
    adapter = (builds["outs"]["rlviz"] / "adapter.py").read_text(encoding="utf-8").splitlines()
    assert adapter[0] == "#!/usr/bin/env python3"
    n = 5  # the provenance header's lines (mapc.pipeline.provenance.header_lines), no more
    assert [line[:2] for line in adapter[1:1 + n]] == ["# "] * n and not adapter[1 + n].startswith("# ")
    for target in ("rlviz", "cap-evolve", "atif"):
        readme = (builds["outs"][target] / "README.md").read_text(encoding="utf-8")
        assert readme.startswith("<!--\n") and readme.count("<!--") == 1 and readme.count("-->") == 1, target
        body = readme.split("-->", 1)[1]  # what a Markdown viewer renders
        assert "<b>" not in body and "<script>" not in body, target


def test_review_finds_nothing_unexpected(builds):
    from mapc.tools.review import review

    command = adv.spec_data(CORPUS)["agent"]["command"]
    for target, folder in builds["outs"].items():
        reviews = review(folder)
        assert len(reviews) == 1, target
        r = reviews[0].to_dict()
        assert r["findings"] == [], (target, r["findings"])
        assert r["spec"]["status"] == "matches", (target, r["spec"])
        assert r["executes"]["agent command"] == command, target


def _stream(plugin: Path, source: Path, tmp: Path, operation: str = "stream"):
    request = tmp / "request.json"
    real = os.path.realpath(source)
    request.write_text(json.dumps({"api_version": "rlviz.dev/v1alpha1", "operation": operation,
                                   "source": {"path": real, "root": os.path.dirname(real), "kind": "file"},
                                   "limits": {}}), encoding="utf-8")
    return subprocess.run([sys.executable, "-I", "-S", str(plugin / "adapter.py"), operation, "--request", str(request)],
                          cwd=plugin, capture_output=True, stdin=subprocess.DEVNULL, timeout=120)


def test_rlviz_records_carry_every_string_intact(builds, tmp_path):
    plugin = builds["outs"]["rlviz"]
    fixture = plugin / "testdata" / ODD_FIXTURE
    probe = _stream(plugin, fixture, tmp_path, "probe")
    assert probe.returncode == 0 and json.loads(probe.stdout)["supported"] is True, probe.stderr
    run = _stream(plugin, fixture, tmp_path)
    assert run.returncode == 0 and run.stderr == b"", run.stderr[-500:]
    records = [json.loads(line) for line in run.stdout.splitlines()]
    assert records[-1]["record_type"] == "complete" and records[-1]["warnings"] == 0
    by_type: dict[str, list] = {}
    for r in records:
        by_type.setdefault(r["record_type"], []).append(r)
    as_pairs = {v: v for v in STRINGS.values()}
    (trajectory,) = by_type["trajectory"]
    assert trajectory["metadata"] == as_pairs
    signals = [r for r in by_type["signal"] if "event_id" not in r]
    assert {r["name"]: r["value"] for r in signals} == as_pairs
    assert all(len(r["id"]) <= 512 for r in records if "id" in r)  # a 1200-character name still gives a valid id
    assert {r["name"]: r["text"] for r in by_type["artifact"]} == as_pairs
    generation = next(r for r in by_type["event"] if r["kind"] == "generation")
    assert generation["metadata"] == STRINGS  # fields read by quoted names that are the corpus strings
    assert json.loads(generation["output"]["content"]) == adv.expected_echo(STRINGS)
    from mapc.targets.rlviz.validator.manifest import load_manifest

    manifest = load_manifest(plugin)
    assert manifest.description == " ".join(adv.spec_data(CORPUS)["description"].split())


def test_relai_catalog_and_results_carry_every_string_intact(builds, tmp_path):
    project = builds["project"]
    folder = project / ".relai" / "custom-adaptor" / CORPUS["name"]  # a Python keyword as a name
    catalog = json.loads((folder / "catalog.json").read_text(encoding="utf-8"))
    assert [t["id"] for t in catalog["tasks"]] == TASK_IDS
    expected_descriptions = {f"says-{k.replace('_', '-')}": v for k, v in STRINGS.items()}
    for task in catalog["tasks"]:
        assert task["description"] == STRINGS["quotes"] + STRINGS["newlines"]
        assert task["metadata"] == {v: v for v in STRINGS.values()}
        described = {e["id"]: e["description"] for e in task["evaluators"]}
        assert {k: described[k] for k in expected_descriptions} == expected_descriptions
        assert EVALUATOR_ID in described
    env = host_env()
    for task_id in TASK_IDS:
        output = tmp_path / "result.json"
        proc = subprocess.run(["python3", str(folder.relative_to(project) / "run.py"), "--task-id", task_id,
                               "--output", str(output)], cwd=project, env=env, capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 0 and proc.stderr == "", proc.stderr[-1000:]
        result = json.loads(output.read_text(encoding="utf-8"))
        assert "failure" not in result, result.get("failure")
        assert result["task_id"] == task_id
        feedback = {e["evaluator_id"]: e["feedback"] for e in result["evaluations"]}
        assert {k: feedback[k] for k in expected_descriptions} == expected_descriptions
        assert feedback["echoed"] == task_id and feedback[EVALUATOR_ID] == EVALUATOR_ID
        assert json.loads(result["final_output"]) == adv.expected_echo(STRINGS)  # argv, env, input file


def test_capevolve_tasks_rollouts_and_feedback_carry_every_string_intact(builds):
    project = builds["project"]
    ops = [{"op": "tasks", "split": "all"}]
    for i, task_id in enumerate(TASK_IDS):
        ops += [{"op": "run", "task": task_id, "ctx": ".", "seed": 0, "as": f"r{i}"},
                {"op": "score", "task": task_id, "rollout": f"r{i}"}]
    results, proc = drive_capevolve(builds["outs"]["cap-evolve"], ops, cwd=project)
    assert proc.returncode == 0 and proc.stdout == b"", proc.stderr[-1000:]
    tasks = results[0]
    assert [t["id"] for t in tasks] == TASK_IDS
    assert all(t["input"] == adv.task_input(STRINGS) and t["target"] == adv.GOLD for t in tasks)
    for i, task_id in enumerate(TASK_IDS):
        rollout, score = results[1 + 2 * i], results[2 + 2 * i]
        assert "raised" not in rollout and "raised" not in score, (rollout, score)
        assert rollout.get("error") is None, rollout.get("error")
        assert json.loads(rollout["output"]) == adv.expected_echo(STRINGS)
        assert score["reward"] == pytest.approx((len(STRINGS) + 1.5) / (len(STRINGS) + 2))  # one scores 0.5
        assert " ".join(EVALUATOR_ID.split()) in score["feedback"]
        assert {m["name"]: m["value"] for m in score["metrics"]}[EVALUATOR_ID] == 0.5
        # feedback templates are data-derived text: whitespace is normalised, nothing else changes
        for text in STRINGS.values():
            assert " ".join(text.split()) in score["feedback"], text[:40]
        assert " ".join(task_id.split()) in score["feedback"] and adv.GOLD not in score["feedback"]


# --- names and formats that could steer paths or code are refused ---------------------------
def _spec_with(name: str = "ok", fmt: str = "ok-format") -> str:
    return yaml.safe_dump({"mapc": 1, "name": name, "source": {"format": fmt, "container": "jsonl",
                                                               "probe": {"require": ["a"]}},
                           "records": {"events": {"each": "@", "kind": "log", "data": "@"}}}, allow_unicode=True,
                          sort_keys=False)


@pytest.mark.parametrize("name", CORPUS["names_rejected"], ids=repr)
def test_a_name_that_could_leave_the_output_or_break_code_is_refused(name):
    spec, diags = load_spec_text(_spec_with(name=name), file="spec.yaml")
    assert spec is None
    check_diagnostics(diags, spec_file="spec.yaml")
    (d,) = [d for d in diags if d.path == "name"]
    assert d.code in ("invalid_name", "empty_value") and d.line == 2 and d.column == 7, d
    assert d.hint or d.code == "empty_value"


@pytest.mark.parametrize("fmt", CORPUS["formats_rejected"], ids=repr)
def test_a_format_id_outside_its_character_set_is_refused(fmt):
    spec, diags = load_spec_text(_spec_with(fmt=fmt), file="spec.yaml")
    assert spec is None
    (d,) = [d for d in diags if d.path == "source.format"]
    assert d.code in ("invalid_value", "empty_value") and d.line is not None and d.column is not None, d


@pytest.mark.parametrize("field, value, message", [
    (("agent", "command", 1), "a\x00b", "cannot contain a NUL character"),
    (("agent", "env", "X"), "a\x00b", "cannot contain a NUL character"),
    (("agent", "trace"), "runs/\x00{task_id}", "cannot contain a NUL character"),
])
def test_strings_a_process_cannot_receive_are_refused_at_check_time(field, value, message):
    data = {"mapc": 1, "name": "x", "source": {"format": "f", "container": "jsonl", "probe": {"require": ["role"]}},
            "records": {"events": {"each": "@", "kind": "message", "role": "role", "content": "content"}},
            "evaluators": [{"id": "a", "description": "d", "score": "`1`"}], "tasks": [{"id": "t"}],
            "agent": {"command": ["python3", "agent.py"], "trace": "runs/{task_id}.json", "env": {"X": "1"}}}
    node = data
    for key in field[:-1]:
        node = node[key]
    node[field[-1]] = value
    spec, diags = load_spec_text(yaml.safe_dump(data), file="spec.yaml")
    assert spec is None
    (d,) = diags.errors
    assert message in d.message and d.line and d.column, d


def test_an_environment_variable_name_with_equals_is_refused():
    text = _spec_with().replace("records:", "agent: {command: [x], trace: t, env: {'A=B': v}}\nrecords:")
    _, diags = load_spec_text(text, file="spec.yaml")
    (d,) = [d for d in diags.errors if d.code == "invalid_name"]
    assert d.path == "agent.env.A=B" and d.line and d.column


def test_validator_messages_show_a_long_id_by_its_start():
    """The text report (not the JSON payload) of a failure about a record with a huge id stays readable."""
    from mapc.targets.rlviz.validator.cases import describe
    from mapc.targets.rlviz.validator.validate import ValidationFailure

    failure = ValidationFailure("invalid signal record: " + "E" * 5000, phase="stream", kind="protocol",
                                record_id="traj:" + "L" * 5000)
    text = describe(failure)
    assert len(text) < 700 and text.count("...") == 2
    assert failure.payload()["record_id"] == "traj:" + "L" * 5000
