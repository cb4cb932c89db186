"""Each catalog and runtime-manifest rule of RELAI's contract rejects a bad example."""

from __future__ import annotations

import copy
import json

import pytest

from mapc.targets.relai.validator.catalog import Findings, check_adapter_name, check_catalog, read_json_object, task_evaluators
from mapc.targets.relai.validator.manifest import check_manifest, simulator_env, unmet_requirements

CATALOG = {
    "schema_version": "relai.custom_adapter.v1",
    "prepare": ["python3", ".relai/custom-adaptor/example/prepare.py"],
    "runner": ["python3", ".relai/custom-adaptor/example/run.py"],
    "tasks": [
        {
            "id": "request/create",
            "tags": ["request.create", "request-workflow", "smoke"],
            "description": "Create the requested item",
            "input_summary": "The target agent receives a request and may use project tools.",
            "evaluators": [
                {"id": "correctness", "description": "Checks the requested result"},
                {"id": "quality", "description": "Rates answer quality", "min_score": 0, "max_score": 5},
            ],
            "metadata": {"suite": "example"},
        },
        {
            "id": "request/update",
            "tags": ["request.update", "request-workflow"],
            "description": "Update an existing item",
            "evaluators": [{"id": "correctness", "description": "Checks the requested update"}],
        },
    ],
}


def errors(data) -> set[str]:
    f = Findings("catalog.json")
    check_catalog(data, f)
    return {d.code for d in f.items if d.is_error}


def mutate(fn):
    data = copy.deepcopy(CATALOG)
    fn(data)
    return data


def _set(path, value):
    def fn(data):
        target = data
        for key in path[:-1]:
            target = target[key]
        if value is _DELETE:
            del target[path[-1]]
        else:
            target[path[-1]] = value
    return fn


_DELETE = object()
T0 = ("tasks", 0)
E1 = ("tasks", 0, "evaluators", 1)

BAD = {
    # layout and commands
    "wrong schema_version": (_set(("schema_version",), "relai.custom_adapter.v2"), "schema_version"),
    "runner missing": (_set(("runner",), _DELETE), "runner_missing"),
    "runner empty": (_set(("runner",), []), "runner_invalid"),
    "runner is a shell string": (_set(("runner",), "python3 run.py"), "runner_invalid"),
    "runner argument not a string": (_set(("runner",), ["python3", 3]), "runner_invalid"),
    "prepare not an argv": (_set(("prepare",), "make"), "prepare_invalid"),
    "prepare empty argument": (_set(("prepare",), ["make", ""]), "prepare_invalid"),
    # tasks
    "tasks missing": (_set(("tasks",), _DELETE), "tasks_missing"),
    "no tasks": (_set(("tasks",), []), "tasks_empty"),
    "task not an object": (_set(("tasks", 1), "request/update"), "task_invalid"),
    "task id missing": (_set(T0 + ("id",), _DELETE), "task_id"),
    "task id duplicate": (_set(("tasks", 1, "id"), "request/create"), "duplicate_task_id"),
    "task id absolute": (_set(T0 + ("id",), "/request/create"), "task_id"),
    "task id empty segment": (_set(T0 + ("id",), "request//create"), "task_id"),
    "task id dot segment": (_set(T0 + ("id",), "request/./create"), "task_id"),
    "task id dotdot segment": (_set(T0 + ("id",), "../create"), "task_id"),
    "task id with ::": (_set(T0 + ("id",), "request::create"), "task_id"),
    "task id with comma": (_set(T0 + ("id",), "request,create"), "task_id"),
    "task id with backslash": (_set(T0 + ("id",), "request\\create"), "task_id"),
    "task id is *": (_set(T0 + ("id",), "*"), "task_id"),
    "task id control character": (_set(T0 + ("id",), "request\ncreate"), "task_id"),
    "task id empty": (_set(T0 + ("id",), ""), "task_id"),
    # tags
    "tags missing": (_set(T0 + ("tags",), _DELETE), "task_tags"),
    "no tags": (_set(T0 + ("tags",), []), "task_tags"),
    "tag with space": (_set(T0 + ("tags",), ["request create"]), "task_tag"),
    "tag with slash": (_set(T0 + ("tags",), ["request/create"]), "task_tag"),
    "tag non-ascii": (_set(T0 + ("tags",), ["anfrage-ä"]), "task_tag"),
    "tag is .": (_set(T0 + ("tags",), ["."]), "task_tag"),
    "tag is ..": (_set(T0 + ("tags",), [".."]), "task_tag"),
    "tag not a string": (_set(T0 + ("tags",), [1]), "task_tag"),
    # optional task fields
    "description not text": (_set(T0 + ("description",), ["x"]), "task_field"),
    "input_summary not text": (_set(T0 + ("input_summary",), 3), "task_field"),
    "agent_target not text": (_set(T0 + ("agent_target",), {}), "task_field"),
    "evaluator_description not text": (_set(T0 + ("evaluator_description",), 1), "task_field"),
    "metadata not an object": (_set(T0 + ("metadata",), "suite"), "task_field"),
    # evaluators
    "evaluators not a list": (_set(T0 + ("evaluators",), {"id": "x"}), "evaluators_invalid"),
    "evaluator not an object": (_set(E1, "quality"), "evaluator_invalid"),
    "evaluator id missing": (_set(E1 + ("id",), _DELETE), "evaluator_id"),
    "evaluator id empty": (_set(E1 + ("id",), ""), "evaluator_id"),
    "evaluator id duplicate in a task": (_set(E1 + ("id",), "correctness"), "duplicate_evaluator_id"),
    "evaluator description missing": (_set(E1 + ("description",), _DELETE), "evaluator_description"),
    "evaluator description blank": (_set(E1 + ("description",), "  "), "evaluator_description"),
    "only min_score": (_set(E1 + ("max_score",), _DELETE), "evaluator_range"),
    "only max_score": (_set(E1 + ("min_score",), _DELETE), "evaluator_range"),
    "min not below max": (_set(E1 + ("min_score",), 5), "evaluator_range"),
    "bound not a number": (_set(E1 + ("max_score",), "5"), "evaluator_range"),
    "bound is a boolean": (_set(E1 + ("max_score",), True), "evaluator_range"),
    "bound not finite": (_set(E1 + ("max_score",), float("inf")), "evaluator_range"),
}


def test_the_documented_example_catalog_is_valid():
    assert errors(copy.deepcopy(CATALOG)) == set()


@pytest.mark.parametrize("name", sorted(BAD))
def test_each_catalog_rule_rejects_a_bad_example(name):
    fn, code = BAD[name]
    assert code in errors(mutate(fn))


def test_evaluator_ids_may_repeat_across_tasks_and_tags_need_not_be_unique():
    data = copy.deepcopy(CATALOG)
    data["tasks"][1]["tags"] = list(data["tasks"][0]["tags"])
    assert errors(data) == set()


def test_unknown_fields_and_empty_evaluator_lists_are_warnings():
    data = mutate(_set(("tasks", 1, "evaluators"), []))
    data["owner"] = "me"
    f = Findings("catalog.json")
    check_catalog(data, f)
    assert f.ok
    assert {d.code for d in f.items} == {"unknown_field", "evaluators_empty"}


@pytest.mark.parametrize("name, ok", [("example", True), ("my_adapter-2", True), ("Example", False),
                                      ("ex ample", False), ("exämple", False)])
def test_adapter_folder_names(name, ok):
    f = Findings("x")
    check_adapter_name(name, f)
    assert f.ok is ok


def test_legacy_custom_grade_when_a_task_has_no_evaluators_list():
    assert task_evaluators({"id": "t", "evaluator_description": "Graded by hand"}) == [
        {"id": "custom-grade", "min_score": 0, "max_score": 1, "description": "Graded by hand"}]
    assert task_evaluators(CATALOG["tasks"][0])[1]["max_score"] == 5


@pytest.mark.parametrize("content, code", [
    (b"\xff\xfe", "catalog_unreadable"),
    (b"{not json", "catalog_unreadable"),
    (b"[1, 2]", "catalog_unreadable"),
    (b'{"a": NaN}', "catalog_unreadable"),
])
def test_unreadable_catalogs(tmp_path, content, code):
    path = tmp_path / "catalog.json"
    path.write_bytes(content)
    f = Findings(str(path))
    assert read_json_object(path, f, "catalog") is None
    assert [d.code for d in f.items] == [code]


# --- runtime manifest --------------------------------------------------------------------

MANIFEST = {
    "schema_version": "relai.runtime_manifest.v1",
    "env": [{"name": "AGENT_API_KEY", "required": True, "sensitive": True, "reason": "target agent API access"}],
    "files": [{"path_env": "AGENT_DATA_PATH", "required": True, "reason": "target agent input data"}],
}


def manifest_errors(data) -> set[str]:
    f = Findings("runtime-manifest.json")
    check_manifest(data, f)
    return {d.code for d in f.items if d.is_error}


MANIFEST_BAD = {
    "wrong schema_version": (("schema_version",), "relai.runtime_manifest", "schema_version"),
    "env not a list": (("env",), {"AGENT_API_KEY": "x"}, "manifest_invalid"),
    "bad variable name": (("env", 0, "name"), "AGENT-API-KEY", "manifest_invalid"),
    "missing reason": (("env", 0, "reason"), _DELETE, "manifest_invalid"),
    "required not a boolean": (("env", 0, "required"), "yes", "manifest_invalid"),
    "sensitive not a boolean": (("env", 0, "sensitive"), 1, "manifest_invalid"),
    "a value in the manifest": (("env", 0, "value"), "sk-123", "manifest_value"),
    "file without path_env": (("files", 0, "path_env"), _DELETE, "manifest_invalid"),
    "file with a default path": (("files", 0, "default"), "data.csv", "manifest_value"),
}


def test_the_documented_manifest_is_valid():
    assert manifest_errors(copy.deepcopy(MANIFEST)) == set()


@pytest.mark.parametrize("name", sorted(MANIFEST_BAD))
def test_each_manifest_rule_rejects_a_bad_example(name):
    path, value, code = MANIFEST_BAD[name]
    data = copy.deepcopy(MANIFEST)
    _set(path, value)(data)
    assert code in manifest_errors(data)


def test_requirements_are_checked_by_name_never_showing_values(tmp_path):
    (tmp_path / "data.csv").write_text("x")
    env = {"AGENT_API_KEY": "", "AGENT_DATA_PATH": "missing.csv"}
    problems = unmet_requirements(MANIFEST, env, tmp_path)
    assert len(problems) == 2
    assert "AGENT_API_KEY" in problems[0] and "AGENT_DATA_PATH" in problems[1]
    assert "missing.csv" not in " ".join(problems)
    ok = {"AGENT_API_KEY": "sk-1", "AGENT_DATA_PATH": "data.csv"}
    assert unmet_requirements(MANIFEST, ok, tmp_path) == []
    optional = json.loads(json.dumps(MANIFEST))
    optional["env"][0]["required"] = False
    optional["files"][0]["required"] = False
    assert unmet_requirements(optional, {}, tmp_path) == []


def test_simulator_env_overrides_the_process_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("FROM_PROCESS", "1")
    monkeypatch.setenv("OVERRIDDEN", "process")
    (tmp_path / ".relai").mkdir()
    (tmp_path / ".relai/simulator.env").write_text(
        "# comment\nOVERRIDDEN=file\nexport QUOTED=\"a b\"\nnot a line\n", encoding="utf-8")
    env = simulator_env(tmp_path)
    assert env["FROM_PROCESS"] == "1" and env["OVERRIDDEN"] == "file" and env["QUOTED"] == "a b"
