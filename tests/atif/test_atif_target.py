"""The atif target: every example and library spec builds a converter whose output the `atif`
package accepts, and mapc's built-in ATIF rules agree with the package's verdicts.

Each spec is built once for the module (generation on one thread, the built-in validation
a few at a time); each converter runs, as a user runs it, on the spec's fixtures (copied into
``samples/``) and on the library's corpus files.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import atif
import pydantic
import pytest
from shared_paths import CORPUS

from mapc.targets.atif.validator import trajectory_problems

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "library"))  # library_support, test_session_specs
from library_support import FORMATS, build_all  # noqa: E402
from strict_python import compile_folder_strictly  # noqa: E402
SPECS = sorted(ROOT.glob("examples/*/spec.yaml")) + sorted(ROOT.glob("specs/*.yaml"))


def _label(spec: Path) -> str:
    return spec.parent.name if spec.name == "spec.yaml" else spec.stem


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict:
    """Spec label -> (BuildResult, output folder)."""
    root = tmp_path_factory.mktemp("atif-builds")
    jobs = [(spec, "atif", root / _label(spec)) for spec in SPECS]
    return {_label(spec): (result, out) for (spec, _, out), result in zip(jobs, build_all(jobs))}


def convert(out: Path, source: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-I", str(out / "convert.py"), str(source), *args],
                          capture_output=True, timeout=120, check=False)


def documents(proc: subprocess.CompletedProcess) -> list[dict]:
    assert proc.returncode == 0, proc.stderr.decode()
    return [json.loads(line) for line in proc.stdout.decode("utf-8").split("\n") if line]


@pytest.mark.parametrize("spec", SPECS, ids=_label)
def test_every_spec_builds_a_converter_whose_output_atif_accepts(built, spec):
    result, out = built[_label(spec)]
    assert result.ok, [d.message for d in result.diagnostics]
    assert "convert.py" in compile_folder_strictly(out)  # as `python -W error`
    index = json.loads((out / "samples.json").read_text())["fixtures"]
    assert index, "every bundled spec has a fixture"
    assert result.validation is not None and result.validation.ok, result.validation.text
    trajectories = 0
    for name in index:
        for doc in documents(convert(out, out / "samples" / name, "--all")):
            atif.Trajectory.model_validate(doc)  # the package's own verdict
            assert trajectory_problems(doc) == []
            assert doc["schema_version"] == "ATIF-v1.8" and doc["final_metrics"]["total_steps"] == len(doc["steps"])
            trajectories += 1
    assert trajectories >= len(index)
    assert len(result.validation.items) == len(index)


@pytest.mark.parametrize("fmt", sorted(f for f in FORMATS if (ROOT / "specs" / f"{f}.yaml").exists()))
def test_library_converters_map_their_corpus_files_to_valid_atif(built, fmt):
    _, out = built[fmt]
    for rel in FORMATS[fmt]:
        proc = convert(out, CORPUS / rel, "--all")
        if proc.returncode != 0:  # a corpus file the spec rejects with one line, nothing written
            assert proc.stdout == b"" and proc.stderr.decode().count("\n") == 1, rel
            continue
        for doc in documents(proc):
            atif.Trajectory.model_validate(doc)
            assert trajectory_problems(doc) == [], rel


def test_one_trajectory_is_the_document_itself_and_several_need_a_choice(built):
    _, out = built["nemo-gym-blackjack"]
    sample = out / "samples" / "blackjack.example_rollouts.jsonl"
    every = documents(convert(out, sample, "--all"))
    assert len(every) == 5
    proc = convert(out, sample)
    assert proc.returncode == 1 and proc.stdout == b""
    assert proc.stderr.decode().startswith("error: the trace holds 5 trajectories (task-0-rollout-0,")
    one = convert(out, sample, "--trajectory", every[1]["trajectory_id"])
    assert json.loads(one.stdout) == every[1] and one.stdout.endswith(b"}\n")
    missing = convert(out, sample, "--trajectory", "nope")
    assert missing.returncode == 1 and missing.stdout == b"" and "no trajectory 'nope'" in missing.stderr.decode()


def test_metrics_come_from_the_token_signals(built):
    """final_metrics: prompt = input + cache read + cache write (ATIF counts every input
    token), completion = output; the other signals (reward) kept in final_metrics.extra."""
    _, out = built["nemo-gym-blackjack"]
    doc = documents(convert(out, out / "samples" / "blackjack.example_rollouts.jsonl", "--all"))[0]
    final = doc["final_metrics"]
    assert final["total_prompt_tokens"] == final["extra"]["input_tokens"]
    assert final["total_completion_tokens"] == final["extra"]["output_tokens"]
    assert "reward" in final["extra"]


def test_a_malformed_trace_exits_nonzero_with_one_line_and_writes_nothing(built, tmp_path):
    _, out = built["nemo-gym-blackjack"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"responses_create_params": \n')
    for args in ((), ("--all",)):
        proc = convert(out, bad, *args)
        assert proc.returncode == 1 and proc.stdout == b""
        lines = proc.stderr.decode().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), lines
    proc = convert(out, tmp_path / "missing.jsonl")
    assert proc.returncode == 1 and proc.stdout == b"" and proc.stderr.decode().count("\n") == 1
    usage = subprocess.run([sys.executable, str(out / "convert.py")], capture_output=True, check=False)
    assert usage.returncode == 2 and usage.stdout == b"" and b"usage: convert.py TRACE" in usage.stderr


def test_the_build_is_deterministic_and_checked_like_the_other_targets(tmp_path):
    from mapc.api import build

    spec, out = ROOT / "examples/nemo-gym-blackjack/spec.yaml", tmp_path / "again"

    def snapshot() -> dict:
        return {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file() and "__pycache__" not in p.parts}

    assert build(spec, "atif", out, validate=False).ok
    first = snapshot()
    assert build(spec, "atif", out, validate=False).ok
    assert snapshot() == first, "same spec, same bytes"
    mapc = [sys.executable, "-m", "mapc.cli"]
    check = subprocess.run([*mapc, "build", str(spec), "--target", "atif", "-o", str(out), "--check"],
                           capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stdout + check.stderr
    review = subprocess.run([*mapc, "review", str(out)], capture_output=True, text=True, check=False)
    assert review.returncode == 0, review.stdout + review.stderr
    (out / "convert.py").write_text((out / "convert.py").read_text() + "# edited\n")
    review = subprocess.run([*mapc, "review", str(out)], capture_output=True, text=True, check=False)
    assert review.returncode != 0, "a hand edit of the converter is found"


def test_validate_runs_the_converter_on_given_traces(built, tmp_path):
    _, out = built["nemo-gym-blackjack"]
    mapc = [sys.executable, "-m", "mapc.cli"]
    ok = subprocess.run([*mapc, "validate", "--target", "atif", str(out), str(CORPUS / FORMATS["nemo-gym-rollouts"][1])],
                        capture_output=True, text=True, check=False)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    failed = subprocess.run([*mapc, "validate", "--target", "atif", str(out), str(bad)],
                            capture_output=True, text=True, check=False)
    assert failed.returncode != 0 and "bad.jsonl" in failed.stdout + failed.stderr


# --- the built-in rules agree with the atif package -------------------------------------------

VALID = {
    "schema_version": "ATIF-v1.8", "session_id": "s", "trajectory_id": "t",
    "agent": {"name": "a", "version": "1", "model_name": "m"},
    "steps": [
        {"step_id": 1, "source": "user", "message": "hi"},
        {"step_id": 2, "source": "agent", "message": "", "tool_calls": [
            {"tool_call_id": "c1", "function_name": "f", "arguments": {"x": 1}}],
         "observation": {"results": [{"source_call_id": "c1", "content": "out",
                                      "subagent_trajectory_ref": [{"trajectory_id": "sub"}]}]},
         "metrics": {"prompt_tokens": 10, "completion_tokens": 2, "cached_tokens": 4}},
    ],
    "final_metrics": {"total_prompt_tokens": 10, "total_completion_tokens": 2, "total_steps": 2,
                      "extra": {"reward": 1.0}},
    "extra": {"status": "completed"},
    "subagent_trajectories": [
        {"schema_version": "ATIF-v1.8", "trajectory_id": "sub", "agent": {"name": "a", "version": "1"},
         "steps": [{"step_id": 1, "source": "user", "message": "go"}]},
    ],
}


def _drop(path):
    def mutate(doc):
        *head, last = path
        for key in head:
            doc = doc[key]
        del doc[last]
    return mutate


def _set(path, value):
    def mutate(doc):
        *head, last = path
        for key in head:
            doc = doc[key]
        doc[last] = value
    return mutate


MUTANTS = {
    "no_schema_version": _drop(["schema_version"]),
    "no_agent": _drop(["agent"]),
    "no_agent_name": _drop(["agent", "name"]),
    "no_agent_version": _drop(["agent", "version"]),
    "no_steps": _drop(["steps"]),
    "no_step_message": _drop(["steps", 0, "message"]),
    "no_step_id": _drop(["steps", 1, "step_id"]),
    "schema_version_not_text": _set(["schema_version"], 1.8),
    "agent_name_not_text": _set(["agent", "name"], ["a"]),
    "steps_not_a_list": _set(["steps"], {"1": {}}),
    "step_ids_out_of_order": _set(["steps", 0, "step_id"], 2),
    "step_ids_from_zero": _set(["steps", 0, "step_id"], 0),
    "step_id_repeated": _set(["steps", 1, "step_id"], 1),
    "unknown_source": _set(["steps", 0, "source"], "tool"),
    "result_answering_no_call": _set(["steps", 1, "observation", "results", 0, "source_call_id"], "c9"),
    "tool_calls_on_a_user_step": _set(["steps", 0, "tool_calls"], [
        {"tool_call_id": "c", "function_name": "f", "arguments": {}}]),
    "metrics_on_a_user_step": _set(["steps", 0, "metrics"], {"prompt_tokens": 1}),
    "arguments_not_an_object": _set(["steps", 1, "tool_calls", 0, "arguments"], "x=1"),
    "metric_not_a_count": _set(["steps", 1, "metrics", "prompt_tokens"], "ten"),
    "final_metric_not_a_count": _set(["final_metrics", "total_steps"], [2]),
    "final_cost_not_a_number": _set(["final_metrics", "total_cost_usd"], "cheap"),
    "unknown_trajectory_field": _set(["reward"], 1.0),
    "unknown_agent_field": _set(["agent", "temperature"], 0.1),
    "unknown_final_metrics_field": _set(["final_metrics", "reward"], 1.0),
    "extra_not_an_object": _set(["extra"], "completed"),
    "ref_without_id_or_path": _set(["steps", 1, "observation", "results", 0, "subagent_trajectory_ref"], [{}]),
    "subagent_without_id": _drop(["subagent_trajectories", 0, "trajectory_id"]),
    "subagent_ids_repeated": lambda doc: doc["subagent_trajectories"].append(doc["subagent_trajectories"][0]),
    "bad_subagent_step": _set(["subagent_trajectories", 0, "steps", 0, "source"], "robot"),
    "bad_timestamp": _set(["steps", 0, "timestamp"], "yesterday"),
}


def test_the_valid_document_is_valid_for_both():
    atif.Trajectory.model_validate(copy.deepcopy(VALID))
    assert trajectory_problems(copy.deepcopy(VALID)) == []


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_each_mutant_is_rejected_by_both(name):
    doc = copy.deepcopy(VALID)
    MUTANTS[name](doc)
    with pytest.raises(pydantic.ValidationError):
        atif.Trajectory.model_validate(doc)
    assert trajectory_problems(doc), f"mapc's rules accept the {name} mutant"


# --- session logs: the converter's trajectory equals the log's own ground truth -------------

import test_session_specs as sessions  # noqa: E402  (tests/library: the truth per trajectory)


def _by_id(doc: dict) -> dict:
    """Trajectory id -> document: the session's and each embedded subagent's, at any depth."""
    out = {doc["trajectory_id"]: doc}
    for sub in doc.get("subagent_trajectories") or ():
        out.update(_by_id(sub))
    return out


@pytest.mark.parametrize("item", sessions.FILES, ids=[sessions._label(i) for i in sessions.FILES])
def test_session_trajectories_equal_the_ground_truth_computed_from_the_file(built, item):
    """One agent step per model response, every call once in order on its step, every result an
    observation of its own call, one user step per prompt, tokens counted once: ATIF's prompt
    is the session's every input token (uncached, cache reads, cache writes), its cached
    tokens the cache reads, its completion the output."""
    fmt, path = item
    _, out = built[fmt]
    docs = documents(convert(out, path, "--all"))
    assert len(docs) == 1, "a session is one trajectory, its subagents embedded"
    atif.Trajectory.model_validate(docs[0])
    assert trajectory_problems(docs[0]) == []
    truths = sessions._truths(fmt, path)
    main = next(iter(truths))
    found = _by_id(docs[0])
    assert list(found) == list(truths), "the session first, then each subagent"
    for tid, truth in truths.items():
        doc, steps = found[tid], found[tid]["steps"]
        agent = [s for s in steps if s["source"] == "agent"]
        assert len(agent) == truth["model_responses"], (tid, "one agent step per model response")
        assert sum(s["source"] == "user" for s in steps) == truth["user_prompts"], tid
        calls = [c["tool_call_id"] for s in steps for c in s.get("tool_calls", ())]
        assert calls == truth["call_ids"], (tid, "every call, once, in order")
        results = [r for s in steps for r in (s.get("observation") or {}).get("results", ())]
        assert len(results) == truth["tool_results"]
        assert sorted(r["source_call_id"] for r in results) == sorted(truth["result_ids"]), tid
        tokens = sessions._tokens(fmt, truth, tid, main)
        final = doc["final_metrics"]
        assert final.get("total_prompt_tokens", 0) == tokens["input"] + tokens["cache_read"] + tokens["cache_creation"]
        assert final.get("total_completion_tokens", 0) == tokens["output"], tid
        assert final.get("total_cached_tokens", 0) == tokens["cache_read"], tid
        assert final["total_steps"] == len(steps)
    for tid in list(truths)[1:]:  # a subagent is referenced by the observation of its call
        refs = [ref["trajectory_id"] for d in found.values() for s in d["steps"]
                for r in (s.get("observation") or {}).get("results", ()) for ref in r.get("subagent_trajectory_ref", ())]
        assert tid in refs


def test_the_validator_reads_one_trajectory_a_line_even_with_unicode_line_separators():
    from mapc.targets.atif.validator import check_output

    doc = copy.deepcopy(VALID)
    doc["steps"][0]["message"] = "a\u2028b\u0085c"  # JSON keeps them raw; str.splitlines() splits there
    text = (json.dumps(doc, ensure_ascii=False) + "\n") * 2
    assert check_output(text.encode("utf-8")) == (2, [])
    assert check_output(b"") == (0, ["the converter wrote no trajectory"])


def test_the_agent_comes_from_the_spec_options(tmp_path):
    """`targets.atif.agent_name` / `agent_version` name ATIF's agent (default: the spec's name
    and version); the model is the first agent step's."""
    import shutil

    from mapc.api import build

    example = ROOT / "examples/nemo-gym-blackjack"
    for name in ("spec.yaml", "blackjack.example_rollouts.jsonl", "blackjack.example_rollouts.jsonl.expected.ndjson",
                 "spec.task-0-rollout-0.expected.json"):
        shutil.copy(example / name, tmp_path / name)
    spec = tmp_path / "spec.yaml"
    spec.write_text(spec.read_text() + '\ntargets:\n  atif: {agent_name: "blackjack-bot", agent_version: "2.0"}\n')
    assert build(spec, "atif", tmp_path / "out", validate=False).ok
    doc = documents(convert(tmp_path / "out", tmp_path / "blackjack.example_rollouts.jsonl", "--all"))[0]
    assert doc["agent"] == {"name": "blackjack-bot", "version": "2.0", "model_name": "Qwen/Qwen3-4B-Instruct-2507"}


def test_an_atif_file_read_with_the_harbor_atif_spec_comes_back_with_the_same_steps(built):
    """Round trip: Harbor's OpenHands trajectory (ATIF, in the corpus) mapped by the library's
    harbor-atif spec and written back by its converter has the same steps: sources, tool call
    ids, the calls each result answers, per-step token and cost metrics, and final metrics."""
    _, out = built["harbor-atif"]
    source = CORPUS / "harbor-atif/openhands-hello-world.trajectory.json"
    original = json.loads(source.read_text(encoding="utf-8"))
    (doc,) = documents(convert(out, source, "--all"))

    def shape(step: dict) -> tuple:
        results = (step.get("observation") or {}).get("results", ())
        return (step["source"], [c["tool_call_id"] for c in step.get("tool_calls", ())],
                [r.get("source_call_id") for r in results], step.get("metrics") or {})

    assert [shape(s) for s in doc["steps"]] == [shape(s) for s in original["steps"]]
    assert doc["final_metrics"] == {**original["final_metrics"], "total_steps": len(original["steps"])}
