"""ATIF step rules (ATIF v1.8), checked without the ``atif`` package; shared by RELAI's
validator and the ATIF target's (no target imports another).

RELAI writes a runner's ``trace.steps`` into an ATIF trajectory, so every step
must be a valid ATIF ``Step``. These rules mirror the published Pydantic
models (unknown fields forbidden, agent-only fields only on agent steps,
sequential ``step_id`` from 1, observation results tied to the step's own
tool calls) but read types strictly: JSON a stricter reader accepts is JSON
every reader accepts. mapc's tests cross-check them against ``atif`` itself.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

SOURCES = ("system", "user", "agent")
AGENT_ONLY = ("model_name", "reasoning_effort", "reasoning_content", "tool_calls", "metrics")
STEP_FIELDS = frozenset({
    "step_id", "timestamp", "source", "model_name", "reasoning_effort", "message",
    "reasoning_content", "tool_calls", "observation", "metrics", "extra", "llm_call_count",
    "is_copied_context",
})
TOOL_CALL_FIELDS = frozenset({"tool_call_id", "function_name", "arguments", "extra"})
RESULT_FIELDS = frozenset({"source_call_id", "content", "subagent_trajectory_ref", "extra"})
REF_FIELDS = frozenset({"trajectory_id", "trajectory_path", "session_id", "extra"})
METRICS_INT = ("prompt_tokens", "completion_tokens", "cached_tokens")
METRICS_LISTS = {"prompt_token_ids": "integer", "completion_token_ids": "integer", "logprobs": "number"}
METRICS_FIELDS = frozenset(METRICS_INT + tuple(METRICS_LISTS) + ("cost_usd", "extra"))
IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
AUDIO_TYPES = ("audio/wav", "audio/mpeg", "audio/mp4", "audio/aac", "audio/ogg", "audio/flac",
               "audio/webm", "audio/aiff", "audio/mp3", "audio/mpga", "audio/x-mpeg", "audio/x-wav",
               "audio/wave", "audio/vnd.wave", "audio/x-m4a", "audio/m4a", "audio/x-aac",
               "audio/x-flac", "audio/x-aiff")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _unknown(obj: dict, allowed: frozenset, where: str, out: list) -> None:
    for key in sorted(set(obj) - allowed):
        out.append((f"{where}.{key}", f"unknown field {key!r} (ATIF forbids extra fields; use `extra`)"))


def _extra(obj: dict, where: str, out: list) -> None:
    if obj.get("extra") is not None and not isinstance(obj["extra"], dict):
        out.append((f"{where}.extra", "must be an object"))


def _content(value: Any, where: str, out: list, *, required: bool) -> None:
    """A message or observation content: a string or an array of content parts."""
    if value is None:
        if required:
            out.append((where, "is required (use \"\" when there is no text)"))
        return
    if isinstance(value, str):
        return
    if not isinstance(value, list):
        out.append((where, "must be a string or an array of content parts"))
        return
    for i, part in enumerate(value):
        p = f"{where}[{i}]"
        if not isinstance(part, dict):
            out.append((p, "a content part must be an object"))
            continue
        _unknown(part, frozenset({"type", "text", "source"}), p, out)
        kind = part.get("type")
        if kind == "text":
            if not isinstance(part.get("text"), str):
                out.append((f"{p}.text", "a text part needs a string `text`"))
            if part.get("source") is not None:
                out.append((f"{p}.source", "a text part must omit `source`"))
        elif kind in ("image", "audio"):
            src = part.get("source")
            if part.get("text") is not None:
                out.append((f"{p}.text", f"an {kind} part must omit `text`"))
            if not isinstance(src, dict) or not isinstance(src.get("path"), str):
                out.append((f"{p}.source", f"an {kind} part needs a `source` with a `path`"))
                continue
            allowed = IMAGE_TYPES if kind == "image" else AUDIO_TYPES
            media = src.get("media_type")
            if not isinstance(media, str) or media.strip().lower() not in allowed:
                out.append((f"{p}.source.media_type", f"{media!r} is not an ATIF {kind} media type"))
        else:
            out.append((f"{p}.type", f"{kind!r} is not one of text, image, audio"))


def _tool_calls(calls: Any, where: str, out: list) -> set[str]:
    ids: set[str] = set()
    if not isinstance(calls, list):
        out.append((where, "must be an array of tool calls"))
        return ids
    for i, call in enumerate(calls):
        p = f"{where}[{i}]"
        if not isinstance(call, dict):
            out.append((p, "a tool call must be an object"))
            continue
        _unknown(call, TOOL_CALL_FIELDS, p, out)
        if not isinstance(call.get("tool_call_id"), str):
            out.append((f"{p}.tool_call_id", "must be a string"))
        else:
            ids.add(call["tool_call_id"])
        if not isinstance(call.get("function_name"), str):
            out.append((f"{p}.function_name", "must be a string"))
        if not isinstance(call.get("arguments"), dict):
            out.append((f"{p}.arguments", "must be a JSON object (ATIF tool arguments are an object; may be {})"))
        _extra(call, p, out)
    return ids


def _observation(obs: Any, where: str, call_ids: set[str], out: list) -> None:
    if not isinstance(obs, dict):
        out.append((where, "must be an object with `results`"))
        return
    _unknown(obs, frozenset({"results"}), where, out)
    results = obs.get("results")
    if not isinstance(results, list):
        out.append((f"{where}.results", "must be an array"))
        return
    for i, res in enumerate(results):
        p = f"{where}.results[{i}]"
        if not isinstance(res, dict):
            out.append((p, "an observation result must be an object"))
            continue
        _unknown(res, RESULT_FIELDS, p, out)
        sid = res.get("source_call_id")
        if sid is not None:
            if not isinstance(sid, str):
                out.append((f"{p}.source_call_id", "must be a string"))
            elif sid not in call_ids:
                out.append((f"{p}.source_call_id", f"{sid!r} does not match any tool call of this step"))
        _content(res.get("content"), f"{p}.content", out, required=False)
        refs = res.get("subagent_trajectory_ref")
        if refs is not None:
            if not isinstance(refs, list):
                out.append((f"{p}.subagent_trajectory_ref", "must be an array"))
            else:
                for j, ref in enumerate(refs):
                    rp = f"{p}.subagent_trajectory_ref[{j}]"
                    if not isinstance(ref, dict):
                        out.append((rp, "must be an object"))
                        continue
                    _unknown(ref, REF_FIELDS, rp, out)
                    if ref.get("trajectory_id") is None and ref.get("trajectory_path") is None:
                        out.append((rp, "needs `trajectory_id` or `trajectory_path`"))
        _extra(res, p, out)


def _metrics(m: Any, where: str, out: list) -> None:
    if not isinstance(m, dict):
        out.append((where, "must be an object"))
        return
    _unknown(m, METRICS_FIELDS, where, out)
    for key in METRICS_INT:
        if m.get(key) is not None and not _is_int(m[key]):
            out.append((f"{where}.{key}", "must be an integer"))
    if m.get("cost_usd") is not None and not _is_number(m["cost_usd"]):
        out.append((f"{where}.cost_usd", "must be a finite number"))
    for key, kind in METRICS_LISTS.items():
        v = m.get(key)
        if v is None:
            continue
        ok = _is_int if kind == "integer" else _is_number
        if not isinstance(v, list) or not all(ok(x) for x in v):
            out.append((f"{where}.{key}", f"must be an array of {kind}s"))
    _extra(m, where, out)


def _timestamp(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def step_problems(steps: Any, where: str = "trace.steps") -> list[tuple[str, str]]:
    """``(json path, message)`` for each way ``steps`` is not a valid ATIF step list."""
    out: list[tuple[str, str]] = []
    if not isinstance(steps, list):
        return [(where, "must be an array of ATIF steps")]
    for index, step in enumerate(steps):
        p = f"{where}[{index}]"
        if not isinstance(step, dict):
            out.append((p, "a step must be an object"))
            continue
        _unknown(step, STEP_FIELDS, p, out)
        sid = step.get("step_id")
        if not _is_int(sid):
            out.append((f"{p}.step_id", "must be an integer"))
        elif sid != index + 1:
            out.append((f"{p}.step_id", f"is {sid}; steps are numbered from 1 in order, expected {index + 1}"))
        source = step.get("source")
        if source not in SOURCES:
            out.append((f"{p}.source", f"{source!r} is not one of system, user, agent"))
        _content(step.get("message"), f"{p}.message", out, required=True)
        if step.get("timestamp") is not None and not _timestamp(step["timestamp"]):
            out.append((f"{p}.timestamp", f"{step['timestamp']!r} is not an ISO 8601 timestamp"))
        if source != "agent":
            for key in AGENT_ONLY:
                if step.get(key) is not None:
                    out.append((f"{p}.{key}", f"is only valid on agent steps (this step's source is {source!r})"))
        for key in ("model_name", "reasoning_content"):
            if step.get(key) is not None and not isinstance(step[key], str):
                out.append((f"{p}.{key}", "must be a string"))
        effort = step.get("reasoning_effort")
        if effort is not None and not (isinstance(effort, str) or _is_number(effort)):
            out.append((f"{p}.reasoning_effort", "must be a string or a number"))
        call_ids: set[str] = set()  # a result may only name a call of its own step
        if step.get("tool_calls") is not None:
            call_ids = _tool_calls(step["tool_calls"], f"{p}.tool_calls", out)
        if step.get("observation") is not None:
            _observation(step["observation"], f"{p}.observation", call_ids, out)
        if step.get("metrics") is not None:
            _metrics(step["metrics"], f"{p}.metrics", out)
        count = step.get("llm_call_count")
        if count is not None:
            if not _is_int(count) or count < 0:
                out.append((f"{p}.llm_call_count", "must be a non-negative integer"))
            elif count == 0 and source == "agent":
                for key in ("metrics", "reasoning_content"):
                    if step.get(key) is not None:
                        out.append((f"{p}.{key}", "must be absent when llm_call_count is 0"))
        if step.get("is_copied_context") is not None and not isinstance(step["is_copied_context"], bool):
            out.append((f"{p}.is_copied_context", "must be a boolean"))
        _extra(step, p, out)
    return out
