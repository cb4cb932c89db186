"""The agent session logs of the corpus hold what SESSIONS.md says they hold.

tests/data/corpus/session_truth.py computes the ground truth (model responses,
calls and results paired by id, tokens counted once, subagent links) from the
files alone, with no mapc import. This test pins those numbers
(session_truth.json) and the invariants the mapping features rely on, so a
changed file or a changed rule shows up here before it shows up as a mapc bug.
Regenerate the JSON with `python tests/data/corpus/session_truth.py --write`
and review the diff.
"""
from __future__ import annotations

import importlib.util
import json

import pytest
from shared_paths import CORPUS

_spec = importlib.util.spec_from_file_location("session_truth", CORPUS / "session_truth.py")
session_truth = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(session_truth)

FILES = [(fmt, rel) for fmt, rels in session_truth.SESSION_FILES.items() for rel in rels]
PINNED = {t["file"]: t for t in json.loads(session_truth.TRUTH_JSON.read_text(encoding="utf-8"))}
TRANSCRIPT = "claude-code-transcript/ca4291e5-5178-4fdb-972b-f6b4d6c26a65.jsonl"
STREAM = "claude-code-stream-json/fe89b91e-5955-48a9-a325-1d1245732392.stream.jsonl"
CODEX = "codex-rollout/rollout-2025-11-17T15-30-28-019a93b9-f380-7600-98ff-940e6b99603c.jsonl"
COPILOT = "copilot-cli/session-demo/events.jsonl"
AIDER = "aider-chat/aider/chat-history.md"
GEMINI = "gemini-cli/gemini-cli-pomodoro-timer.first-6-messages.json"


def _ids(rel: str):
    return rel.replace("/", "__")


@pytest.fixture(scope="module")
def truths() -> dict:
    return {t["file"]: t for t in session_truth.all_truths()}


def test_the_truth_imports_nothing_from_mapc():
    source = (CORPUS / "session_truth.py").read_text(encoding="utf-8")
    assert "mapc" not in {line.split()[1].split(".")[0] for line in source.splitlines()
                          if line.startswith(("import ", "from "))}


def test_every_session_file_is_pinned_and_listed_in_provenance():
    provenance = (CORPUS / "PROVENANCE.md").read_text(encoding="utf-8")
    assert set(PINNED) == {rel for _, rel in FILES}
    for _, rel in FILES:
        assert f"| {rel} |" in provenance, rel


@pytest.mark.parametrize("fmt,rel", FILES, ids=[_ids(r) for _, r in FILES])
def test_truth_equals_the_pinned_numbers(truths, fmt, rel):
    assert truths[rel] == PINNED[rel]
    assert truths[rel]["format"] == fmt


@pytest.mark.parametrize("fmt,rel", FILES, ids=[_ids(r) for _, r in FILES])
def test_every_result_pairs_with_a_call_by_id(truths, fmt, rel):
    t = truths[rel]
    if fmt == "cursor-agent-transcript":  # Cursor logs calls without ids and no results
        assert t["tool_results"] == 0 and t["calls_without_id"] == t["tool_calls"]
        return
    assert t["calls_without_result"] == [] and t["results_without_call"] == []
    assert t["duplicate_call_ids"] == [] and t["duplicate_result_ids"] == []
    assert t["pairs"] == t["tool_calls"] == t["tool_results"]
    assert sorted(t["call_ids"]) == sorted(t["result_ids"])


def test_claude_transcript_splits_each_response_over_lines_sharing_message_id(truths):
    t = truths[TRANSCRIPT]
    assert t["model_responses"] == len(set(t["response_ids"])) == 34
    assert t["assistant_lines"] == 89 > t["model_responses"]
    assert t["responses_not_consecutive"] == 0
    # usage repeated on every line: summing lines overcounts, once per response does not
    assert t["tokens"] == {"input": 417885, "output": 9310, "cache_read": 736296, "cache_creation": 24787}
    assert t["tokens_summed_per_line"]["output"] > 2 * t["tokens"]["output"]


def test_claude_tokens_match_what_harbor_recorded_for_the_trial(truths):
    # the trial's result.json (same Harbor job): n_input_tokens 1178968 (input + cache
    # reads + cache writes), n_cache_tokens 736296, n_output_tokens 9310 -- main session only
    t = truths[TRANSCRIPT]["tokens"]
    assert t["input"] + t["cache_read"] + t["cache_creation"] == 1178968
    assert (t["cache_read"], t["output"]) == (736296, 9310)


def test_subagent_file_links_to_its_spawning_call_three_ways(truths):
    [sub] = truths[TRANSCRIPT]["subagents"]
    assert sub["agent_id"] == "a90795522da6172b3"
    assert sub["spawned_by_call"] == "call_function_h5ily07rg46d_1" and sub["spawning_tool"] == "Agent"
    assert sub["line_agent_ids"] == [sub["agent_id"]] and sub["all_lines_sidechain"]
    assert sub["session_ids"] == truths[TRANSCRIPT]["session_ids"]
    assert sub["prompt_matches_call"] and sub["meta_matches_call"]
    assert sub["meta"] == {"agentType": "Explore", "description": "Explore page label code"}
    assert sub["spawned_by_call"] in truths[TRANSCRIPT]["call_ids"]


def test_subagent_usage_grows_within_a_response_so_the_last_line_counts(truths):
    [sub] = truths[TRANSCRIPT]["subagents"]
    assert sub["model_responses"] == 6 and sub["responses_with_changing_usage"] == 6
    assert sub["tokens"]["output"] == 4061 < sub["tokens_summed_per_line"]["output"]


def test_stream_json_carries_tokens_only_on_the_result_line(truths):
    t = truths[STREAM]
    assert t["model_responses"] == t["result_num_turns"] == 14
    assert t["tokens"] == dict.fromkeys(session_truth.TOKEN_KEYS, 0)
    assert t["result_tokens"] == {"input": 31070, "output": 2300, "cache_read": 397120, "cache_creation": 0}
    assert t["init_model"] == t["result_model_usage_keys"][0] == "qwen3.5-27b" != t["models"][0]


def test_codex_totals_agree_whether_summed_per_response_or_read_last(truths):
    for fmt, rel in FILES:
        if fmt == "codex-rollout":
            t = truths[rel]
            assert t["tokens"] == t["tokens_summed_last_usage"], rel


def test_codex_turn_context_repeats_per_model_request_in_cli_0_77(truths):
    t = truths["codex-rollout/sample_codex_session.jsonl"]
    assert t["cli_versions"] == ["0.77.0"] and t["user_prompts"] == 1
    assert t["turn_context_lines"] == 6 and t["models"] == ["gpt-5.2-codex"]


def test_real_codex_rollout_reports_each_request_twice_and_cumulatively(truths):
    t = truths[CODEX]
    assert t["cli_versions"] == ["0.58.0"] and t["models"] == ["gpt-5.1-codex"]
    assert t["session_ids"] == ["019a93b9-f380-7600-98ff-940e6b99603c"] and t["user_prompts"] == 1
    # 39 replies, each one reasoning-or-not plus exactly one shell/update_plan call, all answered
    assert t["model_responses"] == t["tool_calls"] == t["pairs"] == 39
    assert t["assistant_messages"] == 0  # the file stops mid-run: no final answer, no task_complete
    # one distinct token_count per reply, each written twice (only rate_limits differ),
    # and one with info null before the first reply
    assert t["token_count_distinct"] == t["model_responses"]
    assert t["token_count_events"] == 2 * t["token_count_distinct"] == 78
    assert t["token_count_without_info"] == 1
    assert t["tokens"] == t["tokens_summed_last_usage"] == {
        "input": 71933, "output": 22305, "cache_read": 1027328, "cache_creation": 0}
    assert t["total_token_usage_raw"]["input_tokens"] == 1099261 == 71933 + 1027328
    # a turn_context per model request: 39 answered, the 40th was in flight when the copy was made
    assert t["turn_context_lines"] == t["model_responses"] + 1


def test_summing_every_codex_token_count_event_doubles_the_tokens():
    rows = [json.loads(line) for line in (CORPUS / CODEX).read_text(encoding="utf-8").splitlines()]
    infos = [r["payload"]["info"] for r in rows
             if r["type"] == "event_msg" and r["payload"]["type"] == "token_count" and r["payload"]["info"]]
    naive = sum(i["last_token_usage"]["output_tokens"] for i in infos)
    assert naive == 2 * infos[-1]["total_token_usage"]["output_tokens"] == 2 * 22305


def test_real_copilot_subagent_is_inline_and_its_tokens_complete_the_shutdown_totals(truths):
    t = truths[COPILOT]
    assert t["cli_versions"] == ["1.0.55-1"] and t["user_prompts"] == 1
    assert t["model_responses"] == t["turns"] == 3 and t["models"] == ["claude-opus-4.7-1m-internal"]
    [sub] = t["subagents"]
    assert sub["agent_id"] == sub["spawned_by_call"] == "toolu_vrtx_01TxUTxpA98CaQcbRogpf822"
    assert sub["spawning_tool"] == "task" and sub["agent_name"] == "explore"
    assert sub["started"] and sub["completed"] and sub["parent_tool_call_ids"] == [sub["agent_id"]]
    assert sub["spawned_by_call"] in t["call_ids"]
    assert sub["model_responses"] == 2 and sub["models"] == ["claude-haiku-4.5"]
    assert sub["pairs"] == sub["tool_calls"] == sub["calls_reported_by_parent"] == 2
    assert sub["calls_without_result"] == [] and sub["results_without_call"] == []
    # per-message outputTokens, main and subagent, add up to the shutdown's total
    assert t["tokens"]["output"] + sub["tokens"]["output"] == t["shutdown_tokens"]["output"] == 747
    metrics = t["shutdown_model_metrics"]
    assert metrics["claude-opus-4.7-1m-internal"]["requests"] == t["model_responses"]
    assert metrics["claude-opus-4.7-1m-internal"]["tokens"]["output"] == t["tokens"]["output"] == 521
    assert metrics["claude-haiku-4.5"]["requests"] == sub["model_responses"]
    assert metrics["claude-haiku-4.5"]["tokens"]["output"] == sub["tokens"]["output"] == 226
    for m in metrics.values():  # usage.inputTokens counts cache reads and writes; tokenDetails does not
        tok = m["tokens"]
        assert m["usage"]["inputTokens"] == tok["input"] + tok["cache_read"] + tok["cache_creation"]
    assert t["shutdown_tokens"] == {key: sum(m["tokens"][key] for m in metrics.values())
                                    for key in session_truth.TOKEN_KEYS}


def test_aider_history_counts_replies_by_their_token_lines_and_keeps_cut_short_ones(truths):
    t = truths[AIDER]
    assert t["sessions"] == 12 and t["text_before_first_session"]  # the fixture starts mid-session
    assert t["model_responses"] == 12 and t["responses_with_token_report"] == t["token_reports"] == 10
    assert len(t["responses_cut_short"]) == 2  # one ^C, one API error ("Overloaded")
    assert t["tokens"] == {"input": 128288, "output": 5120, "cache_read": 0, "cache_creation": 0}
    assert t["tool_calls"] == t["tool_results"] == 0  # edits are SEARCH/REPLACE text, not calls
    assert (t["edit_blocks"], t["edits_applied"]) == (13, 9)
    assert t["user_prompts"] == 8 and t["commands"]["/undo"] == 10
    # /model switches the answering model mid-session; the session cost keeps running
    assert t["reply_models"][4:6] == ["claude-3-5-sonnet-20240620", "openrouter/anthropic/claude-3.5-sonnet"]
    running = 0.0
    for cost, session in zip(t["costs"], t["session_costs"]):
        running = float(cost) if cost == session else running + float(cost)
        assert abs(running - float(session)) < 0.005, (cost, session)


def test_gemini_responses_carry_their_own_tokens_and_inline_results(truths):
    t = truths[GEMINI]
    assert t["model_responses"] == 4 and t["user_prompts"] == 2 and t["models"] == ["gemini-2.5-pro"]
    assert t["pairs"] == t["tool_calls"] == 4 and t["responses_without_tokens"] == 1
    # input includes the cached tokens: split as Claude reports them; thoughts are apart from output
    assert t["tokens"] == {"input": 3354, "output": 319, "cache_read": 18833, "cache_creation": 0}
    assert t["thought_tokens"] == 161


def test_a_changed_file_changes_the_truth(tmp_path, monkeypatch):
    """The pin is not vacuous: dropping one tool_result line unpairs its call."""
    rows = (CORPUS / TRANSCRIPT).read_text(encoding="utf-8").splitlines(keepends=True)
    cut = next(i for i, r in enumerate(rows) if '"tool_use_id":"call_function_mthmym0srje2_1"' in r)
    copy = tmp_path / "claude-code-transcript" / "x.jsonl"
    copy.parent.mkdir()
    copy.write_text("".join(rows[:cut] + rows[cut + 1:]), encoding="utf-8")
    monkeypatch.setattr(session_truth, "CORPUS", tmp_path)
    t = session_truth.truth("claude-code-transcript/x.jsonl", "claude-code-transcript")
    assert t["calls_without_result"] == ["call_function_mthmym0srje2_1"]
    assert t["pairs"] == PINNED[TRANSCRIPT]["pairs"] - 1
