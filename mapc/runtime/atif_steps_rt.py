"""ATIF steps from a trajectory's canonical events and their semantic views.

Shared by the targets that write Agent Trajectory Interchange Format: RELAI's runner puts
these steps in its result's ``trace.steps``, the atif target's converter (``atif_rt``) in a
whole trajectory. One builder, so both hosts see the same steps for the same trace.

"""

import json

from .eval_rt import content_text, AGENT_ROLES, unpaired_result


#: Chat roles that become ATIF ``system`` steps; ``tool`` roles are observations.
ATIF_SYSTEM_ROLES = ("system", "developer")


ATIF_TOOL_ROLES = ("tool", "function", "ipython", "tool_result")


def atif_text(value):
    """An ATIF message string: text as-is, content parts joined, other JSON as text."""
    if value is None:
        return ""
    text = content_text(value)
    if isinstance(text, str):
        return text
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def atif_arguments(value):
    """Tool-call arguments as the JSON object ATIF requires.

    Objects pass through; a JSON string holding an object is parsed; anything
    else (plain text, arrays, numbers) is wrapped as ``{"input": value}``.
    """
    if isinstance(value, dict):
        return value
    if value is None:
        return {}
    if isinstance(value, str):
        if not value.strip():
            return {}
        try:
            parsed = json.loads(value)
        except ValueError:
            return {"input": value}
        return parsed if isinstance(parsed, dict) else {"input": parsed}
    return {"input": value}


def atif_call_id(value):
    if isinstance(value, str) and value:
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return json.dumps(value)
    return None


def atif_tool_call(call, fallback_id):
    """One ATIF tool call from a spec's ``{id, name, arguments}`` (OpenAI shapes accepted)."""
    if not isinstance(call, dict):
        return {
            "tool_call_id": fallback_id,
            "function_name": "",
            "arguments": atif_arguments(call),
        }
    function = call.get("function") if isinstance(call.get("function"), dict) else {}
    name = call.get("name", call.get("function_name", function.get("name")))
    arguments = call.get("arguments", function.get("arguments"))
    call_id = atif_call_id(call.get("id", call.get("tool_call_id")))
    return {
        "tool_call_id": call_id or fallback_id,
        "function_name": name if isinstance(name, str) else atif_text(name),
        "arguments": atif_arguments(arguments),
    }


def atif_step_kind(info):
    """Which ATIF step an event becomes: system, user, agent, tool_call,
    tool_result or None (skipped)."""
    kind = info.get("kind")
    role = info.get("role")
    role = role.lower() if isinstance(role, str) else None
    if kind == "generation":
        return "agent"
    if kind == "tool":
        return "tool_call"
    if kind == "observation" or role in ATIF_TOOL_ROLES:
        return "tool_result"
    if kind in ("message", "environment_action") or role is not None:
        if role in ATIF_SYSTEM_ROLES:
            return "system"
        if role in AGENT_ROLES or (role is None and kind == "environment_action"):
            return "agent"
        return "user"
    if kind == "error":
        return "system"
    return None  # state, reward, grader, artifact, log: scored, not conversation


def atif_observe(step, call_id, content, subtrajectory=None):
    """Append one observation result to ``step``; ``subtrajectory``: the id of the trajectory
    the result's event spawned (its ATIF ``subagent_trajectory_ref``, D109)."""
    result = {}
    if call_id is not None:
        result["source_call_id"] = call_id
    result["content"] = atif_text(content)
    if isinstance(subtrajectory, str):
        result["subagent_trajectory_ref"] = [{"trajectory_id": subtrajectory}]
    step.setdefault("observation", {"results": []})["results"].append(result)


def atif_agent_step(info, calls_seen):
    """An agent step: message, reasoning, model and tool calls of one turn."""
    step = {"source": "agent", "message": atif_text(info.get("content"))}
    if isinstance(info.get("model"), str) and info["model"]:
        step["model_name"] = info["model"]
    reasoning = atif_text(info.get("reasoning")) if info.get("reasoning") is not None else ""
    if reasoning:
        step["reasoning_content"] = reasoning
    calls = info.get("tool_calls")
    calls = calls if isinstance(calls, list) else ([calls] if isinstance(calls, dict) else [])
    if info.get("tool_name") is not None:
        single = {
            "id": info.get("tool_call_id"),
            "name": info["tool_name"],
            "arguments": info.get("arguments"),
        }
        calls = calls + [single]
    for call in calls:
        atif_add_call(step, call, calls_seen)
    return step


class AtifCalls(dict):
    """tool_call_id -> the step that made the call, and where the next search for a free
    ``call_N`` (the id of a call without one) starts: ``call_N`` below it were taken when it
    was found, and ids are never removed."""

    __slots__ = ("free_from",)

    def __init__(self):
        super().__init__()
        self.free_from = 1


def atif_add_call(step, call, calls_seen):
    """Add a tool call to an agent step; remember which step holds its id. Returns the id.

    A call without an id gets ``call_N``, the least N > (calls so far) not taken; the search
    starts where the last one stopped (``AtifCalls.free_from``), so each N is tested at most
    twice: testing from (calls so far) each time made many calls quadratic."""
    n = max(len(calls_seen) + 1, getattr(calls_seen, "free_from", 1))
    while f"call_{n}" in calls_seen:
        n += 1
    if hasattr(calls_seen, "free_from"):
        calls_seen.free_from = n
    converted = atif_tool_call(call, f"call_{n}")
    step.setdefault("tool_calls", []).append(converted)
    calls_seen[converted["tool_call_id"]] = step
    return converted["tool_call_id"]


def atif_steps(events, sem, notes=None):
    """ATIF steps (``step_id`` from 1) for a trajectory's events, in order.

    System, user and agent turns become steps of that source; a tool result
    becomes an observation on the agent step that made the call (matched by
    call id), else on the agent step just before it; a single tool event is a
    tool call on the current agent turn. Agent-only fields appear only on
    agent steps, and each observation's ``source_call_id`` names a tool call
    of its own step. ``notes`` gets a line for each result whose call no earlier event made.
    """
    steps = []
    calls_seen = AtifCalls()  # tool_call_id -> the step that made the call
    for ev in events:
        info = sem.get(ev["id"]) if sem else None
        what = atif_step_kind(info) if info else None
        if what == "tool_result":
            atif_tool_result(steps, ev, info, calls_seen, notes)
        elif what == "tool_call":
            atif_tool_event(steps, ev, info, calls_seen)
        elif what is not None:
            if what == "agent":
                step = atif_agent_step(info, calls_seen)
            else:
                step = {"source": what, "message": atif_text(info.get("content"))}
            atif_stamp(step, ev)
            steps.append(step)
    for n, step in enumerate(steps, 1):
        step["step_id"] = n
    return [atif_ordered(step) for step in steps]


def atif_current_step(steps, ev, source):
    """The last step when it is an agent step; else a new empty step of ``source``."""
    if steps and steps[-1]["source"] == "agent":
        return steps[-1]
    step = {"source": source, "message": ""}
    atif_stamp(step, ev)
    steps.append(step)
    return step


def atif_tool_result(steps, ev, info, calls_seen, notes=None):
    """A tool result: an observation on the step whose call it answers.

    Without a matching call it goes to the agent step just before it (or a
    system step), its unmatched id kept as ``extra.tool_call_id``.
    """
    call_id = atif_call_id(info.get("tool_call_id"))
    content = info["result"] if "result" in info else info.get("content")
    owner = calls_seen.get(call_id) if call_id is not None else None
    if owner is not None:
        atif_observe(owner, call_id, content, info.get("subtrajectory"))
        return
    step = atif_current_step(steps, ev, "system")
    atif_observe(step, None, content, info.get("subtrajectory"))
    if call_id is not None:
        step["observation"]["results"][-1]["extra"] = {"tool_call_id": call_id}
        if notes is not None:
            kept = "kept on the step before it, as extra.tool_call_id"
            notes.append(unpaired_result(ev, call_id, kept))


def atif_tool_event(steps, ev, info, calls_seen):
    """A single tool-call event (name, arguments, maybe its result) on the current agent turn."""
    call_id = atif_call_id(info.get("tool_call_id"))
    owner = calls_seen.get(call_id) if call_id is not None else None
    if owner is None:  # not announced by an earlier generation: the call itself
        owner = atif_current_step(steps, ev, "agent")
        call = {"id": call_id, "name": info.get("tool_name"), "arguments": info.get("arguments")}
        call_id = atif_add_call(owner, call, calls_seen)
    if "result" in info or "content" in info:
        content = info["result"] if "result" in info else info.get("content")
        atif_observe(owner, call_id, content, info.get("subtrajectory"))


def atif_stamp(step, ev):
    """Copy the event's timestamp and id (as ``extra.event_id``) onto a new step."""
    if ev.get("timestamp"):
        step["timestamp"] = ev["timestamp"]
    step["extra"] = {"event_id": ev["id"]}


ATIF_STEP_ORDER = (
    "step_id",
    "timestamp",
    "source",
    "model_name",
    "message",
    "reasoning_content",
    "tool_calls",
    "observation",
    "metrics",
    "extra",
)


def atif_ordered(step):
    """The step's keys in ATIF's documented order (readable, deterministic output)."""
    return {key: step[key] for key in ATIF_STEP_ORDER if key in step}
