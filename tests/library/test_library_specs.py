"""The bundled spec library, checked on the real trace corpus.

Every library spec is built for RLViz (the build validates it on its own
synthetic fixture), then validated with the built-in RLViz validator on each
of its corpus files; the records it yields per kind are golden data. Its
probe must accept its own corpus files and reject every other file.
"""

from __future__ import annotations

import collections
import json
import shutil
from pathlib import Path

import pytest
from library_support import AUXILIARY, CORPUS, FORMATS, PAIRS, corpus_files, load_adapter, map_records

from golden import assert_golden
from strict_python import compile_folder_strictly
from mapc.spec.library import catalog, library_specs

GOLDEN = Path(__file__).resolve().parent / "golden"


def test_library_covers_at_least_ten_corpus_formats():
    names = set(library_specs())
    assert len(names) >= 10
    assert names == set(FORMATS), "every library spec needs its corpus files listed in conftest.FORMATS"


@pytest.mark.parametrize("entry", catalog(), ids=lambda e: e["name"])
def test_library_spec_is_a_documented_product(entry):
    text = Path(entry["path"]).read_text(encoding="utf-8")
    assert entry["format"] == entry["name"], "the format id is the library name"
    assert len(entry["description"]) > 40
    assert text.startswith("# yaml-language-server: $schema="), "specs open with the schema hint"
    comments = [ln for ln in text.splitlines() if ln.lstrip().startswith("#")]
    assert len(comments) >= 5, "a library spec explains its format in comments"


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_library_spec_builds_and_validates_on_its_fixture(library_plugins, name):
    result, plugin = library_plugins[name]
    assert result.ok, [d.format() for d in result.diagnostics] + [result.validation and result.validation.text]
    cases = json.loads((plugin / "testdata" / "cases.json").read_text())
    assert cases["cases"] and all(c["expected_format"] == name for c in cases["cases"])
    # its Python compiles as `python -W error` compiles it (no invalid escape)
    assert {"adapter.py", "test_adapter.py"} <= set(compile_folder_strictly(plugin))


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: f"{p[0]}:{Path(p[1]).name}")
def test_library_spec_validates_on_its_corpus_file(corpus_validations, library_plugins, pair):
    report = corpus_validations[pair]
    assert report.get("deterministic") is True, report
    assert report["format"] == pair[0]
    records = map_records(load_adapter(library_plugins[pair[0]][1]), CORPUS / pair[1])
    assert report["records"] == len(records) - 1, "the validator counts what the adapter streamed"
    kinds = collections.Counter(r["record_type"] for r in records)
    assert kinds["trajectory"] >= 1 and kinds["event"] >= 1


def _counts(records: list[dict]) -> dict:
    by_type = collections.Counter(r["record_type"] for r in records if r["record_type"] != "complete")
    kinds = collections.Counter(r["kind"] for r in records if r["record_type"] == "event")
    signals = collections.Counter(r["name"] for r in records if r["record_type"] == "signal")
    return {"records": dict(sorted(by_type.items())), "event_kinds": dict(sorted(kinds.items())),
            "signals": dict(sorted(signals.items())), "warnings": records[-1]["warnings"]}


def test_records_per_kind_on_the_corpus_are_golden(library_plugins):
    """What each library spec makes of each of its corpus files, per record type, event kind and signal."""
    table: dict = {}
    for name, rel in PAIRS:
        records = map_records(load_adapter(library_plugins[name][1]), CORPUS / rel)
        table.setdefault(name, {})[rel] = _counts(records)
    assert_golden(GOLDEN / "corpus-records.json", json.dumps(table, indent=2, sort_keys=True) + "\n")


def test_cross_probe_matrix_has_no_false_positives(library_plugins):
    """Each library probe accepts exactly its own corpus files; auxiliary files are nobody's."""
    files = corpus_files()
    assert set(files) == {rel for rels in FORMATS.values() for rel in rels} | set(AUXILIARY)
    matrix = {}
    for name in sorted(FORMATS):
        probe = load_adapter(library_plugins[name][1])["probe"]
        matrix[name] = sorted(rel for rel in files if probe(str(CORPUS / rel))["supported"])
    expected = {name: sorted(rels) for name, rels in FORMATS.items()}
    assert matrix == expected


def test_probes_answer_within_rlviz_probe_limits(library_plugins):
    """A probe given RLViz's smaller prefix limit still answers (it never reads past it)."""
    for name, rels in FORMATS.items():
        probe = load_adapter(library_plugins[name][1])["probe"]
        for rel in rels:
            answer = probe(str(CORPUS / rel), 4096)
            assert isinstance(answer["supported"], bool) and 0 <= answer["confidence"] <= 1


def test_verifiers_reads_metadata_json_beside_results(library_plugins, tmp_path):
    """verifiers writes results.jsonl and metadata.json side by side: the run comes from the sibling."""
    shutil.copy(CORPUS / "verifiers-results/math-python--gpt-5-nano.results.jsonl", tmp_path / "results.jsonl")
    shutil.copy(CORPUS / "verifiers-results/math-python--gpt-5-nano.metadata.json", tmp_path / "metadata.json")
    records = map_records(load_adapter(library_plugins["verifiers-results"][1]), tmp_path / "results.jsonl")
    run = records[0]
    assert run["record_type"] == "run" and run["name"] == "math-python"
    assert run["started_at"] == "2025-09-29T21:20:27Z"
    assert run["metadata"]["rollouts_per_example"] == 3


def test_letta_evals_reads_header_and_summary(library_plugins, corpus):
    records = map_records(load_adapter(library_plugins["letta-evals-results"][1]), corpus / "letta-evals-results/results.jsonl")
    run = records[0]
    assert run["name"] == "fetch-webpage-tool-output-test"
    assert run["metadata"]["gate"]["metric_key"] == "tool_output_check"
    assert run["metadata"]["gates_passed"] is False


def test_recipes_for_real_formats_work_on_the_corpus(library_plugins, corpus):
    """Spot checks of the spec-language recipes the library relies on."""
    def records_of(name, rel):
        return map_records(load_adapter(library_plugins[name][1]), corpus / rel)

    # joins: tau2 tool results get their tool's name from the call with the same id
    tau2 = records_of("tau2-bench-results", "tau2-bench-results/airline_run1.truncated.json")
    observations = [r for r in tau2 if r.get("kind") == "observation"]
    assert observations and all(r["output"].get("name") for r in observations)
    # lookup table: Inspect letter grades become numbers
    inspect = records_of("inspect-ai-eval-log", "inspect-ai-eval-log/2025-05-12T20-28-13-04-00_popularity.json")
    assert sorted(r["value"] for r in inspect if r.get("name") == "score.match") == [0, 1, 1]
    # dynamic keys: attachment:// references resolved
    browser = records_of("inspect-ai-eval-log", "inspect-ai-eval-log/2025-05-12T20-27-36-04-00_browser.no-sandbox-events.json")
    assert not any("attachment://" in json.dumps(r.get("input", "")) for r in browser if r.get("kind") == "message")
    # ordinal among records with the same key: verifiers rollouts 0..2 per example
    verifiers = records_of("verifiers-results", "verifiers-results/math-python--gpt-5-nano.results.jsonl")
    assert sorted(r["id"] for r in verifiers if r["record_type"] == "trajectory")[:3] == [
        "example-0-rollout-0", "example-0-rollout-1", "example-0-rollout-2"]
    # sorting and merge by key: Langfuse observations once each, in start-time order
    lf = records_of("langfuse-trace-export", "langfuse-trace-export/openai-agents-2025-09-30.trace.json")
    events = [r for r in lf if r["record_type"] == "event"]
    assert len(events) == 5 and [e["timestamp"] for e in events] == sorted(e["timestamp"] for e in events)
    # post/patch merged: the run has its inputs (post) and its outputs (patch)
    ls = records_of("langsmith-run-payloads", "langsmith-run-payloads/langsmith_js_wrap_openai_reasoning.json")
    assert [r["kind"] for r in ls if r["record_type"] == "event"] == ["message", "generation"]
    # regex extraction: mini-swe-agent's bash blocks become tool calls
    mini = records_of("mini-swe-agent-traj", "mini-swe-agent-traj/mini-swe-agent-trajectory.json")
    calls = [c for r in mini if r.get("kind") == "generation" for c in r["output"]["tool_calls"]]
    assert calls and calls[0]["arguments"]["command"] == 'echo "Hello, world!" > hello.txt'
    # string-encoded JSON: SWE-agent's pre-1.0 state strings are parsed
    swe = records_of("swe-agent-traj", "swe-agent-traj/pydicom__pydicom-1458.traj")
    states = [r for r in swe if r.get("kind") == "state"]
    assert states and all(isinstance(r["data"], dict) and "working_dir" in r["data"] for r in states)
    # arrays of arrays with ordinals at both levels: letta turns of messages
    letta = records_of("letta-evals-results", "letta-evals-results/results.jsonl")
    assert {r["metadata"]["turn"] for r in letta if r.get("record_type") == "event"} == {0}
    # keys containing dots: AgentLab's "stats.cum_cost"
    agentlab = records_of("agentlab-browsergym", "agentlab-browsergym/click-checkboxes_20.summary_info.json")
    assert [r["value"] for r in agentlab if r.get("name") == "cost_usd"] == [0.00078585]


#: library specs whose corpus files give every trajectory a final answer (RELAI final_output, Rollout.output)
FINAL_ANSWERS = ["harbor-atif", "inspect-ai-eval-log", "langsmith-run-payloads", "nemo-gym-rollouts",
                 "openhands-events", "swe-agent-traj", "verifiers-results"]


@pytest.mark.parametrize("name", FINAL_ANSWERS)
def test_final_answers_are_text(name):
    from mapc.pipeline.build import mapping_namespace
    from mapc.spec import load_spec

    spec, _ = load_spec(library_specs()[name])
    ns = mapping_namespace(spec, semantics=True)  # with the semantic views RELAI and cap-evolve use
    for rel in FORMATS[name]:
        src = ns["SourceFile"](str(CORPUS / rel), None, ns["MAX_BYTES"], ns["MAX_LINE_BYTES"])
        records, st = ns["collect_records"](ns["map_source"], src, True)
        trajectories = [r["id"] for r in records if r["record_type"] == "trajectory"]
        answers = [st.final_outputs.get(t) for t in trajectories]
        assert all(isinstance(a, str) and a.strip() for a in answers), (rel, answers)
