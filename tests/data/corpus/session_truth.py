"""Ground truth for the agent session logs in this corpus, computed from the files alone.

Standard library only and no mapc import: tests compare mapc's records with these
numbers, so they must not share code with mapc. SESSIONS.md explains every rule
used here and why.

    python tests/data/corpus/session_truth.py            # print the table
    python tests/data/corpus/session_truth.py --write    # rewrite session_truth.json
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

CORPUS = Path(__file__).resolve().parent
TRUTH_JSON = CORPUS / "session_truth.json"

# Every session-log file the truth covers, by format. Subagent files of a Claude
# Code transcript are found from their parent, not listed here.
SESSION_FILES = {
    "claude-code-transcript": ["claude-code-transcript/ca4291e5-5178-4fdb-972b-f6b4d6c26a65.jsonl"],
    "claude-code-stream-json": ["claude-code-stream-json/fe89b91e-5955-48a9-a325-1d1245732392.stream.jsonl"],
    "codex-rollout": [
        "codex-rollout/rollout-2025-11-17T15-30-28-019a93b9-f380-7600-98ff-940e6b99603c.jsonl",
        "codex-rollout/sample_codex_session.jsonl",
        "codex-rollout/rollout-2026-01-02T03-04-05-11111111-1111-4111-8111-111111111111.jsonl",
        "codex-rollout/atif-make/codex-rollout.jsonl",
    ],
    "copilot-cli": [
        "copilot-cli/session-demo/events.jsonl",
        "copilot-cli/atif-make/copilot-cli.jsonl",
    ],
    "cursor-agent-transcript": ["cursor-agent-transcript/atif-make/transcript.jsonl"],
    "aider-chat": ["aider-chat/aider/chat-history.md"],
    "gemini-cli": ["gemini-cli/gemini-cli-pomodoro-timer.first-6-messages.json"],
}

TOKEN_KEYS = ("input", "output", "cache_read", "cache_creation")


def read_jsonl(path: Path) -> list[dict]:
    """Every non-blank line parsed; a line that is not a JSON object is an error."""
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            row = json.loads(line)
            if not isinstance(row, dict):
                raise ValueError(f"{path}:{number}: not a JSON object")
            rows.append(row)
    return rows


def _pairs(calls: list[str], results: list[str]) -> dict:
    """Calls matched to results by id; ids that appear on one side only."""
    call_set, result_set = set(calls), set(results)
    return {
        "tool_calls": len(calls),
        "tool_results": len(results),
        "pairs": len(call_set & result_set),
        "calls_without_result": sorted(call_set - result_set),
        "results_without_call": sorted(result_set - call_set),
        "duplicate_call_ids": sorted({c for c in calls if calls.count(c) > 1}),
        "duplicate_result_ids": sorted({r for r in results if results.count(r) > 1}),
    }


def _relative(path: Path) -> str:
    """A corpus file's path inside the corpus; another file's (a trimmed copy) as given."""
    return str(path.relative_to(CORPUS)) if path.is_relative_to(CORPUS) else str(path)


def _first_seen(values) -> list:
    seen: list = []
    for value in values:
        if value is not None and value not in seen:
            seen.append(value)
    return seen


# ---------------------------------------------------------------- Claude Code --

def _content(row: dict) -> list:
    content = (row.get("message") or {}).get("content")
    return content if isinstance(content, list) else []


def _claude_usage(usage: dict) -> dict:
    return {
        "input": usage.get("input_tokens", 0),
        "output": usage.get("output_tokens", 0),
        "cache_read": usage.get("cache_read_input_tokens", 0),
        "cache_creation": usage.get("cache_creation_input_tokens", 0),
    }


def claude_messages(rows: list[dict]) -> dict:
    """Model responses keyed by message.id, in first-seen order.

    One response is written as several lines (thinking, text, each tool_use) that
    share message.id and repeat usage. The usage is read from the response's last
    line: earlier lines may carry a partial count (output_tokens 0 while streaming).
    """
    responses: dict[str, dict] = {}
    for index, row in enumerate(rows):
        if row.get("type") != "assistant":
            continue
        message = row.get("message") or {}
        mid = message.get("id")
        entry = responses.setdefault(mid, {"lines": [], "usages": [], "model": message.get("model")})
        entry["lines"].append(index)
        entry["usages"].append(message.get("usage") or {})
    return responses


def _claude_tokens(responses: dict) -> tuple[dict, dict]:
    """Tokens counted once per response (last line's usage), and the naive per-line sum."""
    once = dict.fromkeys(TOKEN_KEYS, 0)
    naive = dict.fromkeys(TOKEN_KEYS, 0)
    for entry in responses.values():
        for key, value in _claude_usage(entry["usages"][-1]).items():
            once[key] += value
        for usage in entry["usages"]:
            for key, value in _claude_usage(usage).items():
                naive[key] += value
    return once, naive


def _claude_calls_results(rows: list[dict]) -> tuple[list[str], list[str], dict]:
    calls, results, call_names = [], [], {}
    for row in rows:
        for block in _content(row):
            if not isinstance(block, dict):
                continue
            if row.get("type") == "assistant" and block.get("type") == "tool_use":
                calls.append(block["id"])
                call_names[block["id"]] = block
            elif row.get("type") == "user" and block.get("type") == "tool_result":
                results.append(block["tool_use_id"])
    return calls, results, call_names


def _is_prompt(row: dict) -> bool:
    """A user line that a person (or the harness) typed, not a tool result or meta line."""
    if row.get("type") != "user" or row.get("isMeta") or row.get("isCompactSummary"):
        return False
    content = (row.get("message") or {}).get("content")
    if isinstance(content, str):
        return True
    return bool(content) and not any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content
    )


def _response_shape(responses: dict) -> dict:
    """How the lines of one response sit in the file: split, interleaved, usage repeats."""
    lines_per_response = [len(e["lines"]) for e in responses.values()]
    interleaved = [
        mid for mid, e in responses.items() if e["lines"][-1] - e["lines"][0] + 1 != len(e["lines"])
    ]
    usage_differs = [mid for mid, e in responses.items() if any(u != e["usages"][0] for u in e["usages"])]
    return {
        "assistant_lines": sum(lines_per_response),
        "max_lines_per_response": max(lines_per_response, default=0),
        "responses_not_consecutive": len(interleaved),
        "responses_with_changing_usage": len(usage_differs),
    }


def claude_transcript(path: Path) -> dict:
    rows = read_jsonl(path)
    responses = claude_messages(rows)
    once, naive = _claude_tokens(responses)
    calls, results, call_blocks = _claude_calls_results(rows)
    out = {
        "format": "claude-code-transcript",
        "lines": len(rows),
        "line_types": _count(row.get("type") for row in rows),
        "session_ids": _first_seen(row.get("sessionId") for row in rows),
        "models": _first_seen(e["model"] for e in responses.values()),
        "model_responses": len(responses),
        "response_ids": list(responses),
        "user_prompts": sum(_is_prompt(row) for row in rows),
        "tokens": once,
        "tokens_summed_per_line": naive,
        **_response_shape(responses),
        **_pairs(calls, results),
        "call_ids": calls,
        "result_ids": results,
        "subagents": [],
    }
    out["subagents"] = _claude_subagents(path, rows, call_blocks)
    return out


def _claude_subagents(path: Path, rows: list[dict], call_blocks: dict) -> list[dict]:
    """Subagent files beside the session and the call that spawned each.

    The link is recorded three times: the spawning call's tool_result line has
    toolUseResult.agentId (equal to the file name's agent-<id> and to every line's
    agentId); the subagent's first prompt equals the call's input.prompt; the
    meta.json description equals the call's input.description.
    """
    folder = path.with_suffix("") / "subagents"
    if not folder.is_dir():
        return []
    spawned = {}
    for row in rows:
        result = row.get("toolUseResult")
        if isinstance(result, dict) and result.get("agentId"):
            for block in _content(row):
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    spawned[result["agentId"]] = block["tool_use_id"]
    found = []
    for sub in sorted(folder.glob("agent-*.jsonl")):
        agent_id = sub.stem.removeprefix("agent-")
        sub_rows = read_jsonl(sub)
        call_id = spawned.get(agent_id)
        call = call_blocks.get(call_id, {})
        meta_path = sub.with_name(sub.stem + ".meta.json")
        meta = json.loads(meta_path.read_text(encoding="utf-8")) if meta_path.exists() else {}
        first_prompt = next((r for r in sub_rows if _is_prompt(r)), {})
        truth = claude_transcript_rows(sub_rows)
        found.append({
            "file": _relative(sub),
            "agent_id": agent_id,
            "spawned_by_call": call_id,
            "spawning_tool": call.get("name"),
            "line_agent_ids": _first_seen(r.get("agentId") for r in sub_rows),
            "all_lines_sidechain": all(r.get("isSidechain") is True for r in sub_rows),
            "session_ids": _first_seen(r.get("sessionId") for r in sub_rows),
            "prompt_matches_call": (first_prompt.get("message") or {}).get("content")
            == (call.get("input") or {}).get("prompt"),
            "meta": meta,
            "meta_matches_call": bool(meta) and meta.get("description")
            == (call.get("input") or {}).get("description"),
            **truth,
        })
    return found


def claude_transcript_rows(rows: list[dict]) -> dict:
    """The counting part of claude_transcript, for a subagent's rows."""
    responses = claude_messages(rows)
    once, naive = _claude_tokens(responses)
    calls, results, _ = _claude_calls_results(rows)
    return {
        "lines": len(rows),
        "models": _first_seen(e["model"] for e in responses.values()),
        "model_responses": len(responses),
        "user_prompts": sum(_is_prompt(row) for row in rows),
        "tokens": once,
        "tokens_summed_per_line": naive,
        **_response_shape(responses),
        **_pairs(calls, results),
        "call_ids": calls,
        "result_ids": results,
    }


def claude_stream_json(path: Path) -> dict:
    """`--output-format stream-json`: same split of responses, plus system and result lines."""
    rows = read_jsonl(path)
    main = [r for r in rows if r.get("parent_tool_use_id") is None]
    responses = claude_messages(main)
    sub_responses = claude_messages([r for r in rows if r.get("parent_tool_use_id")])
    once, naive = _claude_tokens(responses)
    calls, results, _ = _claude_calls_results(rows)
    init = next((r for r in rows if r.get("type") == "system" and r.get("subtype") == "init"), {})
    result = next((r for r in rows if r.get("type") == "result"), {})
    usage = result.get("usage") or {}
    return {
        "format": "claude-code-stream-json",
        "lines": len(rows),
        "line_types": _count(row.get("type") for row in rows),
        "session_ids": _first_seen(row.get("session_id") for row in rows),
        "models": _first_seen(e["model"] for e in responses.values()),
        "init_model": init.get("model"),
        "model_responses": len(responses),
        "subagent_model_responses": len(sub_responses),
        "response_ids": list(responses),
        "user_prompts": sum(_is_prompt(row) for row in main),
        "tokens": once,
        "tokens_summed_per_line": naive,
        "result_tokens": _claude_usage(usage),
        "result_num_turns": result.get("num_turns"),
        "result_total_cost_usd": result.get("total_cost_usd"),
        "result_model_usage_keys": list(result.get("modelUsage") or {}),
        "task_started": sum(r.get("subtype") == "task_started" for r in rows),
        **_response_shape(responses),
        **_pairs(calls, results),
        "call_ids": calls,
        "result_ids": results,
    }


# -------------------------------------------------------------------- Codex --

CODEX_CALL_TYPES = ("function_call", "custom_tool_call", "local_shell_call")
CODEX_RESULT_TYPES = ("function_call_output", "custom_tool_call_output")
CODEX_MODEL_ITEMS = CODEX_CALL_TYPES + ("reasoning", "web_search_call")


def _codex_item_by_model(item: dict) -> bool:
    if item.get("type") == "message":
        return item.get("role") == "assistant"
    return item.get("type") in CODEX_MODEL_ITEMS


def _codex_tokens(usage: dict | None) -> dict:
    """Codex input_tokens include the cached ones and output_tokens the reasoning ones;
    the truth uses Claude's split: input = uncached input, cache_read = cached."""
    usage = usage or {}
    cached = usage.get("cached_input_tokens", 0)
    return {
        "input": usage.get("input_tokens", 0) - cached,
        "output": usage.get("output_tokens", 0),
        "cache_read": cached,
        "cache_creation": 0,
    }


def codex_rollout(path: Path) -> dict:
    """A model response is a maximal run of model-made response_items (reasoning,
    assistant message, calls) not broken by a tool output or a user message; a
    token_count event after it reports that response's usage."""
    rows = read_jsonl(path)
    runs, in_run = 0, False
    calls, results = [], []
    token_events, distinct_last, last_total, null_infos = 0, [], None, 0
    previous_info = None
    for row in rows:
        payload = row.get("payload") or {}
        if row.get("type") == "response_item":
            if _codex_item_by_model(payload):
                runs += not in_run
                in_run = True
            else:
                in_run = False
            if payload.get("type") in CODEX_CALL_TYPES:
                calls.append(payload.get("call_id"))
            elif payload.get("type") in CODEX_RESULT_TYPES:
                results.append(payload.get("call_id"))
        elif row.get("type") == "event_msg" and payload.get("type") == "token_count":
            info = payload.get("info")
            if info is None:  # written before the first response: rate limits only
                null_infos += 1
                continue
            token_events += 1
            if info != previous_info:  # the same info written twice is one report
                distinct_last.append(info.get("last_token_usage"))
            previous_info = info
            last_total = info.get("total_token_usage")
        elif row.get("type") == "event_msg" and payload.get("type") == "user_message":
            in_run = False
    summed = dict.fromkeys(TOKEN_KEYS, 0)
    for usage in distinct_last:
        for key, value in _codex_tokens(usage).items():
            summed[key] += value
    metas = [r.get("payload") or {} for r in rows if r.get("type") == "session_meta"]
    contexts = [r.get("payload") or {} for r in rows if r.get("type") == "turn_context"]
    return {
        "format": "codex-rollout",
        "lines": len(rows),
        "line_types": _count(
            r.get("type") + "/" + str((r.get("payload") or {}).get("type"))
            if r.get("type") in ("response_item", "event_msg") else r.get("type") for r in rows
        ),
        "session_ids": _first_seen(m.get("id") or m.get("session_id") for m in metas),
        "cli_versions": _first_seen(m.get("cli_version") for m in metas),
        "models": _first_seen(c.get("model") for c in contexts),
        "model_responses": runs,
        "token_count_events": token_events,
        "token_count_distinct": len(distinct_last),
        "token_count_without_info": null_infos,
        "assistant_messages": sum(
            r.get("type") == "response_item" and (r.get("payload") or {}).get("type") == "message"
            and (r.get("payload") or {}).get("role") == "assistant" for r in rows
        ),
        "user_prompts": sum(
            r.get("type") == "event_msg" and (r.get("payload") or {}).get("type") == "user_message"
            for r in rows
        ),
        "turn_context_lines": len(contexts),
        "turn_ids": _first_seen(c.get("turn_id") for c in contexts),
        "tokens": _codex_tokens(last_total) if last_total else dict.fromkeys(TOKEN_KEYS, 0),
        "tokens_summed_last_usage": summed,
        "total_token_usage_raw": last_total,
        **_pairs(calls, results),
        "call_ids": calls,
        "result_ids": results,
    }


# -------------------------------------------------------------- Copilot CLI --

def _copilot_counts(rows: list[dict]) -> dict:
    """One assistant.message is one model response (messageId); its toolRequests are
    the calls, paired with tool.execution_complete by toolCallId. Only output
    tokens are logged, per message."""
    messages = [r.get("data") or {} for r in rows if r.get("type") == "assistant.message"]
    calls = [q.get("toolCallId") for m in messages for q in (m.get("toolRequests") or [])]
    results = [
        (r.get("data") or {}).get("toolCallId") for r in rows if r.get("type") == "tool.execution_complete"
    ]
    return {
        "models": _first_seen((r.get("data") or {}).get("model") for r in rows),
        "model_responses": len(_first_seen(m.get("messageId") for m in messages)),
        "tokens": {**dict.fromkeys(TOKEN_KEYS, 0), "output": sum(m.get("outputTokens", 0) for m in messages)},
        **_pairs(calls, results),
        "call_ids": calls,
        "result_ids": results,
    }


def _copilot_details(details: dict) -> dict:
    """`tokenDetails` of session.shutdown: input here is uncached, as in the truth."""
    return {
        "input": (details.get("input") or {}).get("tokenCount", 0),
        "output": (details.get("output") or {}).get("tokenCount", 0),
        "cache_read": (details.get("cache_read") or {}).get("tokenCount", 0),
        "cache_creation": (details.get("cache_write") or {}).get("tokenCount", 0),
    }


def copilot_cli(path: Path) -> dict:
    """The main agent's events have no `agentId`. A subagent's events are written inline
    in the same file, each with top-level `agentId` = the spawning call's toolCallId,
    between subagent.started and subagent.completed (whose data.toolCallId is that
    call). Their counts are reported per subagent, as for Claude Code's subagent files.
    session.shutdown, when present, holds the session's token totals (both agents)."""
    rows = read_jsonl(path)
    main = [r for r in rows if not r.get("agentId")]
    started = {(r.get("data") or {}).get("toolCallId"): r.get("data") or {}
               for r in rows if r.get("type") == "subagent.started"}
    completed = {(r.get("data") or {}).get("toolCallId") for r in rows if r.get("type") == "subagent.completed"}
    requests = {q.get("toolCallId"): q for r in main if r.get("type") == "assistant.message"
                for q in ((r.get("data") or {}).get("toolRequests") or [])}
    telemetry = {(r.get("data") or {}).get("toolCallId"): ((r.get("data") or {}).get("toolTelemetry") or {})
                 for r in main if r.get("type") == "tool.execution_complete"}
    subagents = []
    for agent_id in _first_seen(r.get("agentId") for r in rows):
        sub_rows = [r for r in rows if r.get("agentId") == agent_id]
        info = started.get(agent_id, {})
        subagents.append({
            "agent_id": agent_id,
            "spawned_by_call": agent_id if agent_id in requests else None,
            "spawning_tool": (requests.get(agent_id) or {}).get("name"),
            "agent_name": info.get("agentName"),
            "started": agent_id in started,
            "completed": agent_id in completed,
            "parent_tool_call_ids": _first_seen(
                (r.get("data") or {}).get("parentToolCallId") for r in sub_rows
                if r.get("type") not in ("subagent.started", "subagent.completed")),
            "calls_reported_by_parent": ((telemetry.get(agent_id) or {}).get("metrics") or {}).get(
                "numberOfToolCallsMadeByAgent"),
            "lines": len(sub_rows),
            "user_prompts": sum(r.get("type") == "user.message" for r in sub_rows),
            **_copilot_counts(sub_rows),
        })
    shutdown = next((r.get("data") or {} for r in rows if r.get("type") == "session.shutdown"), None)
    metrics = {}
    for model, m in ((shutdown or {}).get("modelMetrics") or {}).items():
        metrics[model] = {"requests": (m.get("requests") or {}).get("count"),
                          "usage": m.get("usage"), "tokens": _copilot_details(m.get("tokenDetails") or {})}
    return {
        "format": "copilot-cli",
        "lines": len(rows),
        "line_types": _count(r.get("type") for r in rows),
        "session_ids": _first_seen((r.get("data") or {}).get("sessionId") for r in rows),
        "cli_versions": _first_seen((r.get("data") or {}).get("copilotVersion") for r in rows),
        "user_prompts": sum(r.get("type") == "user.message" for r in main),
        "turns": sum(r.get("type") == "assistant.turn_start" for r in main),
        **_copilot_counts(main),
        "subagents": subagents,
        "shutdown_tokens": _copilot_details((shutdown or {}).get("tokenDetails") or {}) if shutdown else None,
        "shutdown_model_metrics": metrics,
    }


# --------------------------------------------------------------- Gemini CLI --

def _gemini_tokens(tokens: dict | None) -> dict:
    """Gemini's `input` (promptTokenCount) includes the cached tokens; the truth uses
    Claude's split. `output` (candidates) excludes `thoughts`, reported apart."""
    tokens = tokens or {}
    cached = tokens.get("cached", 0)
    return {"input": tokens.get("input", 0) - cached, "output": tokens.get("output", 0),
            "cache_read": cached, "cache_creation": 0}


def gemini_cli(path: Path) -> dict:
    """One JSON document. Each `gemini` message is one model response, with its own
    `tokens` (once per response, nothing repeats); its `toolCalls` carry their results
    inline (`result[].functionResponse.id` = the call's id)."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    messages = doc.get("messages") or []
    replies = [m for m in messages if m.get("type") == "gemini"]
    calls = [c.get("id") for m in replies for c in (m.get("toolCalls") or [])]
    results = [(r.get("functionResponse") or {}).get("id") for m in replies for c in (m.get("toolCalls") or [])
               for r in (c.get("result") or []) if isinstance(r, dict) and "functionResponse" in r]
    tokens = dict.fromkeys(TOKEN_KEYS, 0)
    thoughts = 0
    for m in replies:
        for key, value in _gemini_tokens(m.get("tokens")).items():
            tokens[key] += value
        thoughts += (m.get("tokens") or {}).get("thoughts", 0)
    return {
        "format": "gemini-cli",
        "lines": len(messages),
        "line_types": _count(m.get("type") for m in messages),
        "session_ids": _first_seen([doc.get("sessionId")]),
        "models": _first_seen(m.get("model") for m in replies),
        "model_responses": len(replies),
        "responses_without_tokens": sum(not any((m.get("tokens") or {}).values()) for m in replies),
        "user_prompts": sum(m.get("type") == "user" for m in messages),
        "tokens": tokens,
        "thought_tokens": thoughts,
        **_pairs(calls, results),
        "call_ids": calls,
        "result_ids": results,
    }


# -------------------------------------------------------------------- Aider --

AIDER_HEADER = re.compile(r"^# aider chat started at (.+)$")
# the form aider 0.47 writes after each completed reply (newer versions round to "12k"
# and say "message" for "request"; no such file is in the corpus)
AIDER_TOKENS = re.compile(
    r"^> Tokens: ([\d,]+) sent, ([\d,]+) received\. Cost: \$([\d.]+) request, \$([\d.]+) session\."
)
AIDER_MODEL = re.compile(r"^> (?:Models|Model|Main model): (\S+) with ")


def _aider_int(text: str) -> int:
    return int(text.replace(",", ""))


def _aider_kinds(lines: list[str]) -> list[str]:
    """Each line of .aider.chat.history.md classified as header, user, tool, model,
    continuation or blank.

    aider writes user input as `#### ` lines and its own output as `> ` lines
    (Markdown blockquotes); model text is written as is. A blockquote also goes on
    over the unprefixed lines right under a `> ` line (Markdown's lazy continuation:
    pasted command output, the repo map), and such output can itself hold blank
    lines. So other text is model text when the last non-blank line was model text,
    or was a user or tool line with a blank line between; it is continuation when
    it sits right under a tool line or the last non-blank line was continuation.
    """
    kinds: list[str] = []
    last, previous_blank = "header", True
    for line in lines:
        if not line.strip():
            kinds.append("blank")
            previous_blank = True
            continue
        if AIDER_HEADER.match(line):
            kind = "header"
        elif line.startswith("####"):
            kind = "user"
        elif line.startswith("> ") or line.rstrip() == ">":
            kind = "tool"
        elif last == "model":
            kind = "model"
        elif last == "continuation" or (last == "tool" and not previous_blank):
            kind = "continuation"
        elif last in ("user", "tool"):
            kind = "model"
        else:  # before the first header: the fixture's leading mode line
            kind = "continuation"
        kinds.append(kind)
        last, previous_blank = kind, False
    return kinds


def aider_chat(path: Path) -> dict:
    """A reply is a run of model lines (blank lines inside it included); it is complete
    when a `> Tokens:` line follows it before the next reply. A reply cut short (^C,
    an API error) has none. Requests that aider makes on its own (commit messages
    with the weak model) log nothing."""
    lines = path.read_text(encoding="utf-8").splitlines()
    kinds = _aider_kinds(lines)
    headers = [m.group(1) for m in map(AIDER_HEADER.match, lines) if m]
    inputs, replies = [], []  # replies: [first line, tokens report or None, model]
    model, models, weak = None, [], []
    reports = []
    for index, (line, kind) in enumerate(zip(lines, kinds)):
        if kind == "user" and (index == 0 or kinds[index - 1] != "user"):
            inputs.append(line[4:].strip())
        if kind == "model" and _aider_previous(kinds, index) != "model":
            replies.append([index, None, model])
        found = AIDER_MODEL.match(line)
        if found:
            model = found.group(1)
            models.append(model)
            weak_model = re.search(r"weak model (\S+)", line)
            if weak_model:
                weak.append(weak_model.group(1))
        report = AIDER_TOKENS.match(line)
        if report:
            sent, received = report.group(1), report.group(2)
            reports.append({"sent": _aider_int(sent), "received": _aider_int(received),
                            "cost": report.group(3), "session_cost": report.group(4)})
            if replies and replies[-1][1] is None:
                replies[-1][1] = len(reports) - 1
    prompts = [i for i in inputs if not i.startswith("/")]
    commands = [i.split()[0] for i in inputs if i.startswith("/")]
    return {
        "format": "aider-chat",
        "lines": len(lines),
        "line_kinds": _count(kinds),
        "sessions": len(headers),
        "session_starts": headers,
        "text_before_first_session": any(k != "blank" for k in kinds[: kinds.index("header")])
        if "header" in kinds else bool(lines),
        "session_ids": [],
        "models": _first_seen(models),
        "weak_models": _first_seen(weak),
        "reply_models": [r[2] for r in replies],
        "model_responses": len(replies),
        "responses_with_token_report": sum(r[1] is not None for r in replies),
        "responses_cut_short": [lines[r[0]][:60] for r in replies if r[1] is None],
        "token_reports": len(reports),
        "user_inputs": len(inputs),
        "user_prompts": len(prompts),
        "commands": _count(commands),
        "tokens": {**dict.fromkeys(TOKEN_KEYS, 0),
                   "input": sum(r["sent"] for r in reports), "output": sum(r["received"] for r in reports)},
        "costs": [r["cost"] for r in reports],
        "session_costs": [r["session_cost"] for r in reports],
        "edit_blocks": sum(line == "<<<<<<< SEARCH" for line, k in zip(lines, kinds) if k == "model"),
        "edits_applied": sum(line.startswith("> Applied edit to ") for line in lines),
        "commits": sum(bool(re.match(r"^> Commit [0-9a-f]{7} ", line)) for line in lines),
        "errors": sum(line.startswith("> Unexpected error:") for line in lines),
        "interrupts": sum(line.startswith("> ^C ") for line in lines),
        **_pairs([], []),
        "call_ids": [],
        "result_ids": [],
    }


def _aider_previous(kinds: list[str], index: int) -> str | None:
    """The kind of the last non-blank line before ``index``."""
    return next((k for k in reversed(kinds[:index]) if k != "blank"), None)


# ---------------------------------------------------------------- Cursor --

def cursor_transcript(path: Path) -> dict:
    """One role line is one message; tool_use parts carry no id and there are no
    results, so calls can be counted but never paired."""
    rows = read_jsonl(path)
    assistant = [r for r in rows if r.get("role") == "assistant"]
    calls = [
        part for r in assistant for part in (r.get("message") or {}).get("content") or []
        if isinstance(part, dict) and part.get("type") == "tool_use"
    ]
    manifest_path = path.parent / "manifest.json"
    manifest = json.loads(manifest_path.read_text(encoding="utf-8")) if manifest_path.exists() else {}
    return {
        "format": "cursor-agent-transcript",
        "lines": len(rows),
        "line_types": _count(r.get("role") or r.get("type") for r in rows),
        "session_ids": _first_seen([(manifest.get("session") or {}).get("id")]),
        "models": [],
        "model_responses": len(assistant),
        "user_prompts": sum(r.get("role") == "user" for r in rows),
        "turns": sum(r.get("type") == "turn_ended" for r in rows),
        "tokens": dict.fromkeys(TOKEN_KEYS, 0),
        "tool_calls": len(calls),
        "tool_results": 0,
        "pairs": 0,
        "calls_without_result": [],
        "results_without_call": [],
        "calls_without_id": len(calls),
    }


def _count(values) -> dict:
    counts: dict = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: str(kv[0])))


READERS = {
    "claude-code-transcript": claude_transcript,
    "claude-code-stream-json": claude_stream_json,
    "codex-rollout": codex_rollout,
    "copilot-cli": copilot_cli,
    "cursor-agent-transcript": cursor_transcript,
    "aider-chat": aider_chat,
    "gemini-cli": gemini_cli,
}


def truth(relpath: str, fmt: str) -> dict:
    return {"file": relpath, **READERS[fmt](CORPUS / relpath)}


def all_truths() -> list[dict]:
    return [truth(rel, fmt) for fmt, rels in SESSION_FILES.items() for rel in rels]


def main(argv: list[str]) -> int:
    truths = all_truths()
    if "--write" in argv:
        TRUTH_JSON.write_text(json.dumps(truths, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(f"wrote {TRUTH_JSON.relative_to(CORPUS.parents[2])}")
        return 0
    for t in truths:
        tok = t["tokens"]
        print(f'{t["file"]}: responses={t["model_responses"]} calls={t["tool_calls"]} '
              f'results={t["tool_results"]} pairs={t["pairs"]} prompts={t["user_prompts"]} '
              f'tokens in/out/cr/cc={tok["input"]}/{tok["output"]}/{tok["cache_read"]}/{tok["cache_creation"]}')
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
