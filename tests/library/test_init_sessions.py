"""`mapc init --from` on the real session logs of the corpus (issue 27 item 7): the unedited
draft, built for RLViz, under the real validator, against the ground truth computed from the
files alone (tests/data/corpus/session_truth.json, by session_truth.py, which never imports
mapc). With `--no-library` this measures the draft itself; the library route is tested where
the library specs are (an `extends` proposal maps exactly as its library spec).

Before this reading of event streams the Claude Code transcript was drafted as one `log` event
per line (1 of 7 kinds right) and the Codex rollout as one case per line (its 39 calls
dropped)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from test_init_cases import measure

import hosts
from shared_paths import CORPUS

TRUTH = {t["file"]: t for t in json.loads((CORPUS / "session_truth.json").read_text(encoding="utf-8"))}
TRANSCRIPT = "claude-code-transcript/ca4291e5-5178-4fdb-972b-f6b4d6c26a65.jsonl"
SUBAGENT = "claude-code-transcript/ca4291e5-5178-4fdb-972b-f6b4d6c26a65/subagents/agent-a90795522da6172b3.jsonl"
ROLLOUT = "codex-rollout/rollout-2025-11-17T15-30-28-019a93b9-f380-7600-98ff-940e6b99603c.jsonl"


def _mapc(*args, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mapc.cli", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=600)


def _truth(rel: str) -> dict:
    return TRUTH[rel] if rel in TRUTH else next(
        s for t in TRUTH.values() for s in t.get("subagents", ()) if s["file"] == rel)


@pytest.fixture(scope="module")
def drafted(tmp_path_factory):
    """rel -> (folder, spec, records) of `mapc init --no-library` on each log, then `mapc run`."""
    out = {}
    for rel in (TRANSCRIPT, SUBAGENT, ROLLOUT):
        folder = tmp_path_factory.mktemp("session")
        made = _mapc("init", "--no-library", "--from", CORPUS / rel, "-o", "spec.yaml", cwd=folder)
        assert made.returncode == 0, made.stderr
        ran = _mapc("run", "spec.yaml", CORPUS / rel, cwd=folder)
        assert ran.returncode == 0 and "warning" not in ran.stderr, ran.stderr
        out[rel] = (folder, folder / "spec.yaml", [json.loads(line) for line in ran.stdout.splitlines()])
    return out


@pytest.mark.parametrize("rel", [TRANSCRIPT, SUBAGENT], ids=["main", "subagent"])
def test_a_claude_code_transcript_draft_meets_the_ground_truth(drafted, rel):
    truth, got = _truth(rel), measure(drafted[rel][2])
    assert got["kinds"]["generation"] == truth["model_responses"]  # one per message.id (34, 6)
    assert got["calls"] == got["results"] == got["paired"] == truth["pairs"]  # every result paired
    assert got["kinds"]["message"] == truth["user_prompts"]
    assert got["totals"] == {"input_tokens": truth["tokens"]["input"], "output_tokens": truth["tokens"]["output"],
                             "cache_read_input_tokens": truth["tokens"]["cache_read"],
                             "cache_creation_input_tokens": truth["tokens"]["cache_creation"]}
    assert got["trajectories"] == [json.loads((CORPUS / rel).open().readline())["sessionId"]]
    assert set(got["models"]) == set(truth["models"])


def test_a_codex_rollout_draft_pairs_every_call_and_counts_tokens_once(drafted):
    truth, got = TRUTH[ROLLOUT], measure(drafted[ROLLOUT][2])
    assert got["calls"] == got["results"] == got["paired"] == truth["pairs"] == 39
    # a running total written twice per request: its increases, summed once
    assert got["totals"]["output_tokens"] == truth["tokens"]["output"] == 22305
    assert got["totals"]["cached_input_tokens"] == truth["tokens"]["cache_read"]
    assert got["totals"]["input_tokens"] == truth["total_token_usage_raw"]["input_tokens"]  # Codex's own sense
    # a rollout has no response id: one generation per reasoning item (38 of the 39 responses;
    # one response is a bare call), the UI's echoes of them (agent_reasoning) skipped
    assert got["kinds"]["generation"] == truth["line_types"]["response_item/reasoning"] == 38
    assert set(got["models"]) == {"gpt-5.1-codex"}  # carried from turn_context


@pytest.mark.parametrize("rel", [TRANSCRIPT, ROLLOUT], ids=["claude-code", "codex"])
def test_the_real_rlviz_accepts_the_unedited_draft_on_the_whole_log(drafted, rel):
    folder, spec, records = drafted[rel]
    built = _mapc("build", spec, "--target", "rlviz", "-o", folder / "out", cwd=folder)
    assert built.returncode == 0, built.stderr
    rlviz = hosts.require_rlviz()
    proc = subprocess.run([str(rlviz), "--json", str(folder / "out"), str(CORPUS / rel)], capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["records"] == len([r for r in records if r["record_type"] != "complete"]), report
    assert report["warnings"] == 0 and report["deterministic"], report


# -- with the library: recognised, and the commands init prints give a faithful plugin ----------
@pytest.mark.parametrize("rel, library", [(TRANSCRIPT, "claude-code-transcript"), (ROLLOUT, "codex-rollout")],
                         ids=["claude-code", "codex"])
def test_init_recognises_the_log_and_its_printed_commands_build_a_faithful_plugin(rel, library, tmp_path):
    """Issue 27's "done when": `mapc init --from` on a Claude Code transcript and on a Codex rollout,
    with no edits, builds an RLViz plugin the real validator accepts, whose records meet the
    ground truth: one generation per response, every result paired, tokens counted once. The
    spec goes in specs/ (docs/editors.md's layout): the sample and its subagents' folder are
    copied next to it, and the commands are run exactly as init prints them."""
    import shlex

    made = _mapc("init", "--from", CORPUS / rel, "-o", "specs/session.yaml", "--json", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    payload = json.loads(made.stdout)
    assert payload["library"] == library and f"extends: {library}\n" in payload["spec"]
    outputs = {}
    for command in payload["next"]:
        argv = shlex.split(command)
        ran = _mapc(*argv[1:], cwd=tmp_path)
        assert ran.returncode == 0, (command, ran.stderr)
        outputs[argv[1]] = ran.stdout
    records = [json.loads(line) for line in outputs["run"].splitlines()]
    trajectories = [r["id"] for r in records if r["record_type"] == "trajectory"]
    files = [rel] + [s["file"] for s in _truth(rel).get("subagents", ())]
    assert len(trajectories) == len(files)  # the session, then each subagent's file as its own
    for trajectory in trajectories:
        mine = [r for r in records if trajectory in (r.get("trajectory_id"), r.get("id"))]
        got = measure(mine)
        truth = _truth(next(f for f in files if Path(f).stem == trajectory))
        assert got["kinds"]["generation"] == truth["model_responses"], trajectory
        assert got["calls"] == got["results"] == got["paired"] == truth["pairs"], trajectory
        assert got["totals"]["output_tokens"] == truth["tokens"]["output"], trajectory
        assert got["totals"]["input_tokens"] == truth["tokens"]["input"], trajectory
    rlviz = hosts.require_rlviz()
    fixture = tmp_path / "specs" / payload["fixture"]
    proc = subprocess.run([str(rlviz), "--json", str(tmp_path / "out"), str(fixture)], capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["records"] == len([r for r in records if r["record_type"] != "complete"]), report
    assert report["warnings"] == 0 and report["deterministic"], report
