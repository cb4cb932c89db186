"""Deterministic synthetic traces for the benchmark (no randomness from the clock).

Two formats, both shaped like real agent logs:

* ``agent_events`` (JSONL): one event per line, as an agent loop logs them —
  user/system messages, model generations with tool calls and token usage,
  tool executions with arguments, results and latency, rewards, and heartbeat
  lines that the spec skips. Epoch-second float timestamps.
* ``eval_log`` (one JSON document): an eval log in the style of Inspect AI —
  ``eval`` metadata, then ``samples``, each with its ``messages`` (system,
  user, assistant with tool calls, tool results) and ``scores``.

Sizes are counted in *events* (source elements that the mapping visits), so
the formats compare by work, not bytes.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

_WORDS = (
    "the agent reads file config value search result query tool call returns list of "
    "items error retry plan step answer because user asked for summary table update "
    "patch test passes fails check output number total path found missing next"
).split()
_TOOLS = ("search", "read_file", "run_tests", "write_file", "calculator")


def _text(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(low, high)))


def _args(rng: random.Random, tool: str, step: int) -> dict:
    if tool == "search":
        return {"query": _text(rng, 2, 6), "top_k": rng.randint(3, 10)}
    if tool == "calculator":
        return {"expression": f"{rng.randint(1, 999)} * {rng.randint(1, 99)}"}
    return {"path": f"src/module_{step % 97}/file_{rng.randint(0, 20)}.py", "line": rng.randint(1, 400)}


def agent_events(seed: int = 7):
    """Endless agent event stream: one dict per JSONL line (heartbeats included)."""
    rng = random.Random(seed)
    t = 1_736_000_000.0
    step = 0
    while True:
        episode_turns = rng.randint(2, 5)
        yield {"type": "message", "step": step, "ts": round(t, 3), "role": "system",
               "content": "You are a coding agent. " + _text(rng, 8, 20)}
        step += 1
        yield {"type": "message", "step": step, "ts": round(t + 0.01, 3), "role": "user",
               "content": _text(rng, 10, 40)}
        step += 1
        for _ in range(episode_turns):
            t += rng.uniform(0.2, 3.0)
            tool = rng.choice(_TOOLS)
            call_id = f"call_{step:08d}"
            args = _args(rng, tool, step)
            yield {"type": "generation", "step": step, "ts": round(t, 3), "model": "gpt-4o-mini-2024-07-18",
                   "content": _text(rng, 5, 30),
                   "tool_calls": [{"id": call_id, "name": tool, "arguments": args}],
                   "usage": {"prompt_tokens": rng.randint(200, 4000), "completion_tokens": rng.randint(10, 400)}}
            step += 1
            if rng.random() < 0.15:
                yield {"type": "heartbeat", "step": step, "ts": round(t + 0.05, 3)}
                step += 1
            t += rng.uniform(0.01, 1.5)
            yield {"type": "tool", "step": step, "ts": round(t, 3), "call_id": call_id, "name": tool,
                   "args": args, "result": {"ok": rng.random() > 0.1, "output": _text(rng, 5, 40)},
                   "duration_ms": rng.randint(3, 2500)}
            step += 1
        t += rng.uniform(0.1, 1.0)
        yield {"type": "generation", "step": step, "ts": round(t, 3), "model": "gpt-4o-mini-2024-07-18",
               "content": "Final answer: " + _text(rng, 5, 25), "tool_calls": [],
               "usage": {"prompt_tokens": rng.randint(200, 4000), "completion_tokens": rng.randint(10, 400)}}
        step += 1
        yield {"type": "reward", "step": step, "ts": round(t + 0.2, 3), "value": round(rng.random(), 4),
               "reason": rng.choice(("tests pass", "partial", "wrong answer"))}
        step += 1


def write_jsonl(path: Path, events: int | None = None, size_bytes: int | None = None, seed: int = 7) -> tuple[int, int]:
    """Write ``events`` lines (or about ``size_bytes``); returns (lines, bytes)."""
    lines = written = 0
    encode = json.JSONEncoder(separators=(",", ":")).encode
    with open(path, "wb", buffering=1 << 20) as fh:
        for rec in agent_events(seed):
            if events is not None and lines >= events:
                break
            if size_bytes is not None and written >= size_bytes:
                break
            data = encode(rec).encode() + b"\n"
            fh.write(data)
            lines += 1
            written += len(data)
    return lines, written


def _sample(rng: random.Random, sid: int, epoch: int, n_messages: int) -> dict:
    messages = [{"role": "system", "content": "You are a careful assistant. " + _text(rng, 5, 15)},
                {"role": "user", "content": _text(rng, 10, 40)}]
    while len(messages) < n_messages:
        tool = rng.choice(_TOOLS)
        call_id = f"call_{sid}_{epoch}_{len(messages)}"
        messages.append({"role": "assistant", "content": _text(rng, 3, 25), "model": "gpt-4o-mini-2024-07-18",
                         "tool_calls": [{"id": call_id, "function": tool, "arguments": _args(rng, tool, sid)}]})
        messages.append({"role": "tool", "tool_call_id": call_id, "function": tool, "content": _text(rng, 5, 40)})
    messages = messages[:n_messages]
    if messages[-1]["role"] != "assistant":
        messages.append({"role": "assistant", "content": "ANSWER: " + _text(rng, 2, 8)})
    return {"id": sid, "epoch": epoch, "input": _text(rng, 10, 30), "target": _text(rng, 1, 3),
            "messages": messages,
            "scores": {"match": {"value": rng.choice("CCI"), "answer": _text(rng, 1, 3)}},
            "model_usage": {"input_tokens": rng.randint(500, 9000), "output_tokens": rng.randint(50, 900)},
            "total_time": round(rng.uniform(1, 60), 3)}


def write_eval_log(path: Path, events: int, seed: int = 11) -> tuple[int, int]:
    """Write one eval-log document with about ``events`` messages; returns (messages, bytes).

    Samples are written as they are made, so memory stays small for large logs.
    """
    rng = random.Random(seed)
    head = {"version": 2, "status": "success",
            "eval": {"task": "bench-eval", "model": "openai/gpt-4o-mini", "created": "2025-01-04T10:00:00+00:00",
                     "dataset": {"name": "synthetic"}}}
    encode = json.JSONEncoder(separators=(",", ":")).encode
    total = 0
    sid = 0
    written = 0
    with open(path, "wb", buffering=1 << 20) as fh:

        def put(text: str) -> None:
            nonlocal written
            data = text.encode()
            fh.write(data)
            written += len(data)

        put(encode(head)[:-1] + ',"samples":[')
        while total < events:
            sid += 1
            for epoch in (1, 2):
                n = min(rng.randint(4, 14), max(2, events - total))
                sample = _sample(rng, sid, epoch, n)
                total += len(sample["messages"])
                put(("," if sid > 1 or epoch > 1 else "") + encode(sample))
                if total >= events:
                    break
        put("]}\n")
    return total, written


def write_eval_log_of_size(path: Path, size_bytes: int, seed: int = 11) -> tuple[int, int]:
    """An eval log of about ``size_bytes`` (fast enough for 1 GB): 500 samples made once,
    written over and over with new ids (so every case and trajectory id stays unique)."""
    rng = random.Random(seed)
    encode = json.JSONEncoder(separators=(",", ":")).encode
    pool = []
    for _ in range(250):
        for epoch in (1, 2):
            sample = _sample(rng, 0, epoch, rng.randint(4, 14))
            text = encode(sample)
            assert text.startswith('{"id":0,')
            pool.append((epoch, text[len('{"id":0,'):].encode(), len(sample["messages"])))
    head = {"version": 2, "status": "success",
            "eval": {"task": "bench-eval", "model": "openai/gpt-4o-mini", "created": "2025-01-04T10:00:00+00:00",
                     "dataset": {"name": "synthetic"}}}
    total = written = 0
    sid = 0
    with open(path, "wb", buffering=1 << 20) as fh:
        data = (encode(head)[:-1] + ',"samples":[').encode()
        fh.write(data)
        written += len(data)
        while written < size_bytes:
            for epoch, body, n in pool:
                sid += epoch == 1
                data = b'%s{"id":%d,%s' % (b"," if total else b"", sid, body)
                fh.write(data)
                written += len(data)
                total += n
                if written >= size_bytes and epoch == 2:
                    break
        fh.write(b"]}\n")
        written += 3
    return total, written
