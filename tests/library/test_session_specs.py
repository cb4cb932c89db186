"""The session-log library specs map each session exactly as its ground truth says.

For every library spec of an agent session log and every file it is tested on (its corpus
files and its own fixtures), tests/data/corpus/session_truth.py computes the truth from the
file alone, with no mapc import: the model responses (distinct `message.id`s, Codex runs of
model-made items, Copilot and Gemini messages), the calls and results paired by id, the
prompts and the session's own token totals. The records the generated RLViz adapter streams
must match it exactly, per trajectory (a subagent's is a child trajectory of its own): one
`generation` per model response, every result paired with a call made before it, each token
counted once.
"""

from __future__ import annotations

import collections
import importlib.util
from pathlib import Path

import pytest
from library_support import FORMATS, load_adapter, map_records
from shared_paths import CORPUS, ROOT

_spec = importlib.util.spec_from_file_location("session_truth", CORPUS / "session_truth.py")
session_truth = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(session_truth)

SESSION_FORMATS = ("claude-code-transcript", "claude-code-stream-json", "codex-rollout", "copilot-cli", "gemini-cli")
FIXTURES = ROOT / "specs" / "fixtures"
#: signal name -> the truth's token key
TOKEN_SIGNALS = {"input_tokens": "input", "output_tokens": "output", "cache_read_tokens": "cache_read",
                 "cache_write_tokens": "cache_creation"}


def _files() -> list[tuple[str, Path]]:
    out = [(fmt, CORPUS / rel) for fmt in SESSION_FORMATS for rel in FORMATS[fmt]]
    for fmt in SESSION_FORMATS:
        fixtures = sorted(p for p in (FIXTURES / fmt).rglob("*") if p.is_file() and p.suffix in (".jsonl", ".json")
                          and "subagents" not in p.parts)
        assert fixtures, fmt
        out += [(fmt, p) for p in fixtures]
    return out


FILES = _files()


def _label(item) -> str:
    fmt, path = item
    where = "fixture" if FIXTURES in path.parents else "corpus"
    return f"{fmt}:{where}:{path.name[:40]}"


def _truths(fmt: str, path: Path) -> dict[str, dict]:
    """Trajectory id -> the truth of that agent: the session's, and each subagent's."""
    truth = session_truth.READERS[fmt](path)
    if fmt == "claude-code-transcript":
        main = {path.stem: truth}
        return main | {f"agent-{s['agent_id']}": s for s in truth.get("subagents", ())}
    if fmt == "copilot-cli":
        session = (truth["session_ids"] or [path.stem])[0]
        return {session: truth} | {f"{session}/subagent/{s['agent_id']}": s for s in truth["subagents"]}
    if fmt == "gemini-cli":
        return {truth["session_ids"][0]: truth}
    return {path.stem: truth}


def _tokens(fmt: str, truth: dict, trajectory: str, main: str) -> dict:
    """The totals the spec must give a trajectory: what the session itself counts once."""
    if fmt == "claude-code-stream-json":  # only the result line has them
        return truth["result_tokens"]
    if fmt == "copilot-cli":  # output per message; input and cache only in session.shutdown
        shutdown = truth.get("shutdown_tokens") if trajectory == main else None
        return {**(shutdown or dict.fromkeys(session_truth.TOKEN_KEYS, 0)), "output": truth["tokens"]["output"]}
    return truth["tokens"]


@pytest.fixture(scope="module")
def mapped(library_plugins) -> dict:
    """(format, file) -> the records the generated RLViz adapter streams."""
    return {(fmt, path): map_records(load_adapter(library_plugins[fmt][1]), path) for fmt, path in FILES}


@pytest.mark.parametrize("item", FILES, ids=[_label(i) for i in FILES])
def test_records_match_the_ground_truth_computed_from_the_file(mapped, item):
    fmt, path = item
    records = mapped[item]
    assert records[-1]["record_type"] == "complete"
    truths = _truths(fmt, path)
    main = next(iter(truths))
    trajectories = [r["id"] for r in records if r["record_type"] == "trajectory"]
    assert trajectories == list(truths), "one trajectory per agent, the session's first"
    events = collections.defaultdict(list)
    for r in records:
        if r["record_type"] == "event":
            events[r["trajectory_id"]].append(r)
    for tid, truth in truths.items():
        evs = events[tid]
        generations = [e for e in evs if e["kind"] == "generation"]
        assert len(generations) == truth["model_responses"], (tid, "one generation per model response")
        calls = [c["id"] for e in generations for c in (e["output"].get("tool_calls") or [])]
        assert calls == truth["call_ids"], (tid, "every call, once, in the order the model made them")
        results = [e["output"]["tool_call_id"] for e in evs if e["kind"] == "observation"]
        assert sorted(results) == sorted(truth["result_ids"]) and len(results) == truth["tool_results"]
        made = set()
        for e in evs:  # every result answers a call made before it
            if e["kind"] == "generation":
                made.update(c["id"] for c in (e["output"].get("tool_calls") or []))
            if e["kind"] == "observation":
                assert e["output"]["tool_call_id"] in made, (tid, e["id"])
        prompts = [e for e in evs if e["kind"] == "message" and e["input"]["role"] == "user"]
        assert len(prompts) == truth["user_prompts"], tid
        totals = {r["name"]: r["value"] for r in records if r["record_type"] == "signal" and r["trajectory_id"] == tid}
        expected = _tokens(fmt, truth, tid, main)
        got = {key: totals.get(name, 0) for name, key in TOKEN_SIGNALS.items()}
        assert got == expected, (tid, "each token counted once")
    # a subagent's trajectory names the session and the call that spawned it
    for r in records:
        if r["record_type"] == "trajectory" and r["id"] != main:
            call = r["metadata"]["spawned_by"]["tool_call_id"]
            assert r["parent_id"] == main and call in truths[main]["call_ids"]
    assert records[-1]["warnings"] == 0


def test_the_session_formats_are_all_library_specs():
    from mapc.spec.library import library_specs

    assert set(SESSION_FORMATS) <= set(library_specs())
    assert set(SESSION_FORMATS) <= set(session_truth.READERS)


PROJECT = """\
mapc: 1
name: my-claude-sessions
extends: claude-code-transcript
tasks:
  - {id: pdfminer-labels, input: "Fix the page label formatting"}
agent:
  replay: "recorded/{task_id}.jsonl"
evaluators:
  - id: finished
    description: The session ended with a final answer
    score: "output != null && output != ''"
"""


def _recorded(folder: Path) -> None:
    """The corpus transcript as a recorded run of task pdfminer-labels, its subagent beside it."""
    main = CORPUS / "claude-code-transcript" / "ca4291e5-5178-4fdb-972b-f6b4d6c26a65.jsonl"
    sub = main.with_suffix("") / "subagents" / "agent-a90795522da6172b3.jsonl"
    (folder / "recorded" / "pdfminer-labels" / "subagents").mkdir(parents=True)
    (folder / "recorded" / "pdfminer-labels.jsonl").write_bytes(main.read_bytes())
    (folder / "recorded" / "pdfminer-labels" / "subagents" / sub.name).write_bytes(sub.read_bytes())


def test_a_project_over_a_session_spec_builds_for_relai_and_capevolve(tmp_path):
    """A session log has no task or score: a project that `extends` the library spec adds them.
    RELAI's runner and cap-evolve's adapter then score the session, not its subagent, with every
    result on the step of its call and no pairing warning."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "relai"))
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "capevolve"))
    from capevolve_support import build_adapter, drive
    from relai_support import build_project, read_result, run_runner

    truth = session_truth.claude_transcript(CORPUS / "claude-code-transcript" / "ca4291e5-5178-4fdb-972b-f6b4d6c26a65.jsonl")
    project = tmp_path / "relai"
    project.mkdir()
    _recorded(project)
    built = build_project(PROJECT, project)
    assert built.ok, [d.format() for d in built.diagnostics]
    proc = run_runner(project, "my-claude-sessions", "pdfminer-labels", tmp_path / "result.json")
    assert proc.returncode == 0 and "answers no call" not in proc.stderr, proc.stderr
    steps = read_result(tmp_path / "result.json")["trace"]["steps"]
    made = {c["tool_call_id"]: s["step_id"] for s in steps for c in s.get("tool_calls", [])}
    answered = {r["source_call_id"]: s["step_id"] for s in steps
                for r in s.get("observation", {}).get("results", []) if "source_call_id" in r}
    assert sorted(made) == sorted(truth["call_ids"]) and answered == made  # the session's 39, not the subagent's
    assert sum(s.get("source") == "agent" for s in steps) == truth["model_responses"]

    spec_dir = tmp_path / "cap-spec"
    spec_dir.mkdir()
    (spec_dir / "spec.yaml").write_text(PROJECT, encoding="utf-8")
    _recorded(spec_dir)
    build_adapter(spec_dir / "spec.yaml", tmp_path / "cap" / "adapters")
    work = tmp_path / "cap" / "work"  # (the recorded trace is copied next to the adapter)
    work.mkdir()
    (rollout,) = drive(tmp_path / "cap" / "adapters", [{"op": "run", "task": "pdfminer-labels"}], cwd=work)[0]
    assert rollout.get("error") is None, rollout
    assert sorted(c["id"] for c in rollout["tool_calls"]) == sorted(truth["call_ids"])
    assert all(c.get("result") is not None for c in rollout["tool_calls"])
    assert not rollout["metadata"].get("pairing_warnings")
