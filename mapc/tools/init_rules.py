"""Event rules for a `mapc init` draft: one rule per value of a discriminator field.

An event array's elements usually say what they are in one short string field
(``type``, ``event``, ``message_type``, ``role``, ``action``): its values come
from a small fixed set. The profile keeps those values (and only those:
:mod:`mapc.analysis.profile` with ``values=True``), and :func:`elements` reads which keys
the elements of each value carry. Each value gets the event kind its name says
(``assistant`` -> generation, ``tool_result`` -> observation, ``score`` ->
grader, ...) and the fields its elements carry (role, content, tool calls, tool
call id, tool name/arguments/result, reasoning, numeric rewards as signals).
Values with the same kind and fields share a rule; an ``x_end`` marker that
closes an ``x_begin`` is skipped. Type-like fields that split the elements
between them (OpenHands' ``action`` and ``observation``) each get their rules. Without values (``--no-values``) the rules
come from the structure alone: by role when the elements have one.
"""

from __future__ import annotations

import json
import re

from mapc.core.fieldpath import ANY, child, join, key, segments
from mapc.analysis.profile import Profile

#: Fields whose values say what an element is, most telling first.
TYPE_KEYS = ("type", "event", "event_type", "message_type", "kind", "step_type", "action", "observation")
ROLE_KEYS = ("role", "source", "sender", "author", "speaker")
DISCRIMINATORS = TYPE_KEYS + ROLE_KEYS
CONTENT_KEYS = ("content", "text", "message", "body", "response", "output", "completion")
RESULT_KEYS = ("result", "output", "observation", "content", "text", "response")
REASONING_KEYS = ("reasoning", "reasoning_content", "thought", "thinking")
TOOL_NAME_KEYS = ("function", "tool_name", "tool", "name")
ARGUMENT_KEYS = ("arguments", "args", "input", "parameters", "tool_input")
CALL_ID_KEYS = ("tool_call_id", "call_id")
TIME_KEYS = ("timestamp", "created_at", "createdAt", "time", "date", "ts", "start_time", "startTime")
ID_KEYS = ("id", "event_id", "uuid", "message_id")
REWARD_RE = re.compile(r"(reward|score|value|correct|passed|success)", re.IGNORECASE)
MAX_DATA_KEYS = 6

#: (pattern over a lower-cased value, kind), first match wins; for type-like fields.
_VALUE_KINDS = (
    (r"(^|_)(end|stop|finish)(ed)?$", "end"),  # a closing marker (skipped when a begin exists)
    (r"reason|thought|think", "generation"),
    (r"(tool|function)_?(call_)?(output|result|return|response)|observation|tool_message|ipython", "observation"),
    (r"(tool|function)_?(call|use)", "generation"),
    (r"^tool$|^tool_|_tool$|tool_execution|^action$", "tool"),
    (r"assistant|generation|^model$|^llm|completion|^ai$|^bot|^response", "generation"),
    (r"user|system|human|developer|^input$|prompt|instruction|sample_init|^message$|^task", "message"),
    (r"score|grade|judge|eval", "grader"),
    (r"reward", "reward"),
    (r"state|store|status", "state"),
    (r"error|exception|fail", "error"),
)
_ROLE_KINDS = (
    (r"assistant|^ai$|agent|model|^bot|gpt", "generation"),
    (r"tool|function|ipython|environment|observation", "observation"),
)


def kind_of(field: str, value: str) -> str:
    """The event kind a discriminator value names (``end`` for a closing marker)."""
    v = value.lower()
    if field in ROLE_KEYS:
        return next((kind for pattern, kind in _ROLE_KINDS if re.search(pattern, v)), "message")
    for pattern, kind in _VALUE_KINDS:
        if re.search(pattern, v):
            return kind
    return {"action": "generation", "observation": "observation"}.get(field, "log")


def elements(value, path: str):
    """The values at ``path`` (``a[].b[]``: every element of every ``b``) inside ``value``."""
    current = [value]
    for name in segments(path):
        if name == ANY:
            current = [item for c in current if isinstance(c, list) for item in c]
        else:
            current = [c.get(name) for c in current if isinstance(c, dict)]
    return current


def keys_by_value(docs, paths: list[str], field: str) -> dict[str, set[str]]:
    """value of ``field`` -> the keys of the elements that have it (over every path)."""
    out: dict[str, set[str]] = {}
    for doc in docs:
        for path in paths:
            for el in elements(doc, path):
                if isinstance(el, dict) and isinstance(el.get(field), str):
                    out.setdefault(el[field], set()).update(el)
    return out


def q(text: str) -> str:
    """A YAML double-quoted scalar (JSON string syntax is valid YAML)."""
    return json.dumps(text, ensure_ascii=False)


def seg(name: str) -> str:
    """A member name as an expression (quoted unless an identifier)."""
    return key(name)


def val(expr: str) -> str:
    """An expression as a YAML flow value: plain when YAML keeps it as written, else quoted
    (``"a.b"`` unquoted would be the YAML text a.b, the field path a.b)."""
    return expr if re.match(r"^[A-Za-z_][A-Za-z0-9_.]*$", expr) else q(expr)


def lit(value: str) -> str:
    """A JMESPath raw string literal (discriminator values hold no quotes)."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


class RuleDrafter:
    """Rules for the elements at ``paths`` (profile paths ending in ``[]``)."""

    def __init__(self, prof: Profile, paths: list[str], docs, use_values: bool = True,
                 signals: dict[str, str] | None = None):
        self.prof, self.paths = prof, paths
        self.keys = sorted({k for p in paths for k in prof.children(p)})
        self.docs = docs
        self.use_values = use_values
        self.signals = signals or {}  # name -> expression: outcome fields some elements carry
        self.carried: set[str] = set()  # the names a value's rule maps

    # -- what the profile says about one key of the elements --------------------------------
    def types(self, key: str) -> set[str]:
        out: set[str] = set()
        for p in self.paths:
            shape = self.prof.fields.get(child(p, key))
            if shape:
                out |= {t for t in shape.types if t != "null"}
        return out

    def values(self, key: str) -> dict[str, int] | None:
        merged: dict[str, int] = {}
        for p in self.paths:
            shape = self.prof.fields.get(child(p, key))
            if shape is None:
                continue
            if shape.values is None:
                return None if shape.types.get("string") else merged or None
            for v, n in shape.values.items():
                merged[v] = merged.get(v, 0) + n
        return merged or None

    def has(self, keys: set[str], key: str, *types: str) -> bool:
        return key in keys and (not types or bool(self.types(key) & set(types)))

    def first(self, keys: set[str], names, *types: str) -> str | None:
        return next((k for k in names if self.has(keys, k, *types)), None)

    def discriminators(self) -> list[tuple[str, dict[str, int]]]:
        """The fields that say what each element is: type-like fields that between them cover
        (nearly) every element (OpenHands' `action` and `observation`), else the one field
        present in the most elements (ties: the most telling name)."""
        if not self.use_values:
            return []
        elements = max(sum(self.prof.fields[p].types.get("object", 0) for p in self.paths
                           if p in self.prof.fields), 1)
        found = []
        for rank, key in enumerate(DISCRIMINATORS):
            values = self.values(key) if key in self.keys else None
            if values and self.types(key) == {"string"}:
                found.append((sum(values.values()) / elements, -rank, key, values))
        typed = sorted((f for f in found if f[2] in TYPE_KEYS), reverse=True)
        chosen, covered = [], 0.0
        for coverage, _, key, values in typed:
            if covered >= 0.9 or covered + coverage > 1.05:
                continue  # already covered, or the same elements again
            chosen.append((key, values))
            covered += coverage
        if covered >= 0.9:
            return chosen
        return [max(found)[2:]] if found else []

    # -- fields per kind -----------------------------------------------------------------
    def fields(self, kind: str, keys: set[str], skip: set[str]) -> list[str]:
        """Spec lines for an event of ``kind`` from elements with ``keys`` (``skip``: not as data)."""
        role = self.first(keys, ROLE_KEYS, "string")
        keys = keys - skip
        out: list[str] = []
        if kind in ("message", "generation", "observation"):
            if role:
                out.append(f"role: {q(seg(role))}")
            content = self.first(keys, CONTENT_KEYS if kind != "observation" else RESULT_KEYS)
            if content:
                out.append(f"content: {q(seg(content))}")
            if kind == "generation":
                reasoning = self.first(keys, REASONING_KEYS, "string")
                if reasoning and reasoning != content:
                    out.append(f"reasoning: {q(seg(reasoning))}")
                calls = self.tool_calls(keys)
                if calls:
                    out.append(f"tool_calls: {q(calls)}")
                if self.has(keys, "model", "string"):
                    out.append("model: model")
            if kind == "observation":
                call_id = self.first(keys, CALL_ID_KEYS, "string", "number")
                if call_id:
                    out.append(f"tool_call_id: {val(seg(call_id))}")
        elif kind == "tool":
            name = self.first(keys, TOOL_NAME_KEYS, "string")
            args = self.first(keys, ARGUMENT_KEYS, "object", "string")
            result = self.first(keys - {args} if args else keys, RESULT_KEYS)
            if name:
                out.append(f"tool_name: {val(seg(name))}")
            if args:
                expr = f"parse_json({seg(args)})" if self.types(args) == {"string"} else seg(args)
                out.append(f"arguments: {q(expr)}" if args != "action" else f"arguments: {{command: {val(seg(args))}}}")
            if result:
                out.append(f"result: {q(seg(result))}")
        elif kind in ("reward", "grader"):
            numeric = [k for k in sorted(keys) if self.types(k) & {"number", "boolean"} and REWARD_RE.search(k)]
            if numeric:
                first = "reward" if kind == "reward" else "score"
                names = [first if i == 0 and k == "value" else k for i, k in enumerate(numeric[:4])]
                out.append("signals: {" + ", ".join(f"{val(n)}: {val(seg(k))}" for n, k in zip(names, numeric)) + "}")
        if not out or kind in ("log", "state", "error", "grader"):
            data = [k for k in sorted(keys) if k not in TIME_KEYS and k not in ID_KEYS][:MAX_DATA_KEYS]
            if data and kind != "grader" or (kind == "grader" and not out and data):
                out.append("data: {" + ", ".join(f"{val(k)}: {val(seg(k))}" for k in data) + "}")
        return out

    def tool_calls(self, keys: set[str]) -> str | None:
        base = self.paths[0]
        if "tool_calls" in keys:
            if any(join(p, "tool_calls[].function.name") in self.prof.fields for p in self.paths):
                args = "function.arguments"
                parsed = any("string" in self.prof.types(join(p, "tool_calls[].function.arguments"))
                             for p in self.paths)
                return ("tool_calls[].{id: id, name: function.name, arguments: "
                        + (f"parse_json({args})" if parsed else args) + "}")
            if any(join(p, "tool_calls[].name") in self.prof.fields for p in self.paths):
                return "tool_calls[].{id: id, name: name, arguments: arguments}"
            return None
        if {"name", "arguments"} <= keys:  # the element is the call (OpenAI Responses `function_call`)
            call_id = self.first(keys, ("call_id", "id"), "string")
            args = "parse_json(arguments)" if self.types("arguments") == {"string"} else "arguments"
            return f"[{{id: {call_id or 'null'}, name: name, arguments: {args}}}]"
        if self.has(keys, "tool_call", "object") and join(base, "tool_call.name") in self.prof.fields:
            return "[{id: tool_call.tool_call_id, name: tool_call.name, arguments: tool_call.arguments}]"
        return None

    def common(self, keys: set[str]) -> list[str]:
        out = []
        ts = self.first(keys, TIME_KEYS, "string", "number")
        if ts:
            unit = "    # TODO: epoch seconds? give iso8601 a unit ('ms', ...)" if self.types(ts) == {"number"} else ""
            out.append(f"timestamp: {q('iso8601(' + seg(ts) + ')')}{unit}")
        return out

    # -- the rules -------------------------------------------------------------------------
    def rules(self) -> list[str]:
        found = self.discriminators()
        if not found:
            return self.structural_rules()
        names = " and ".join(f"`{f}`" for f, _ in found)
        lines = ["    rules:", f"      # TODO: one rule per value of {names} seen in the sample; "
                 "check the kinds and fields"]
        for field, values in found:
            lines += self.value_rules(field, values)
        field = found[0][0]
        fallback = "message" if field in ROLE_KEYS else "log"
        lines += [f"      - kind: {fallback}    # values the sample did not have"]
        lines += [f"        {line}" for line in self.fields(fallback, set(self.keys), {field})[:1]]
        return lines

    def value_rules(self, field: str, values: dict[str, int]) -> list[str]:
        keys_of = keys_by_value(self.docs, self.paths, field) if self.docs is not None else {}
        ordered = sorted(values, key=lambda v: (-values[v], v))
        groups: dict[tuple, list[str]] = {}
        skipped: list[str] = []
        role = field not in ROLE_KEYS and self.first(set(self.keys), ROLE_KEYS, "string")
        by_role: list[str] = []
        for value in ordered:
            kind = kind_of(field, value)
            if kind == "end":
                stem = re.sub(r"(^|_)(end|stop|finish)(ed)?$", "", value.lower())
                if any(v.lower().startswith(stem) and v != value for v in values) and stem:
                    skipped.append(value)
                    continue
                kind = "log"
            keys = keys_of.get(value, set(self.keys))
            if kind == "message" and role and role in keys:
                by_role.append(value)  # messages: their role says generation or message
                continue
            body = tuple(self.with_signals(self.fields(kind, keys, {field}), keys) + self.common(keys))
            groups.setdefault((kind, body, self.observed(kind, keys)), []).append(value)
        lines = []
        if skipped:
            lines += [f"      - when: {q(self._test(field, skipped))}    # an end marker: its begin has it all",
                      "        skip: true"]
        for (kind, body, observed), vals in groups.items():
            lines += [f"      - when: {q(self._test(field, vals))}"]
            lines += self.emit(kind, list(body), observed)
        if by_role:
            keys = set().union(*(keys_of.get(v, set(self.keys)) for v in by_role))
            test = self._test(field, by_role)
            for kind, names in (("generation", ("assistant", "agent", "model")), ("observation", ("tool",))):
                within = f"contains([{', '.join(map(lit, names))}], {role})"
                lines += [f"      - when: {q(test + ' && ' + within)}",
                          f"        kind: {kind}"]
                lines += [f"        {line}" for line in self.fields(kind, keys, {field}) + self.common(keys)]
            lines += [f"      - when: {q(test)}", "        kind: message"]
            lines += [f"        {line}" for line in self.fields("message", keys, {field}) + self.common(keys)]
        return lines

    def with_signals(self, body: list[str], keys: set[str]) -> list[str]:
        """``body`` with the outcome fields the elements (with ``keys``) carry as signals: on the
        rule of their own value, never a guessed rule ahead of the rules it would hide."""
        carried = {name: expr for name, expr in self.signals.items() if segments(expr)[0] in keys}
        if not carried or any(line.startswith("signals:") for line in body):
            return body
        self.carried |= set(carried)
        return body + ["signals: {" + ", ".join(f"{n if re.match(r'^[A-Za-z_][A-Za-z0-9_]*$', n) else q(n)}: "
                                                f"{q(e)}" for n, e in carried.items()) + "}    # TODO: outcome fields"]

    def observed(self, kind: str, keys: set[str]) -> str | None:
        """An `observation` the elements carry beside the model's turn (ATIF steps)."""
        if kind == "generation" and "observation" in keys and self.types("observation") & {"object", "string"}:
            return "observation"
        return None

    @staticmethod
    def emit(kind: str, body: list[str], observed: str | None) -> list[str]:
        if not observed:
            return [f"        kind: {kind}"] + [f"        {line}" for line in body]
        return (["        emit:    # the turn, then what it observed", f"          - kind: {kind}"]
                + [f"            {line}" for line in body]
                + ["          - kind: observation", f"            when: {q(observed)}",
                   f"            content: {q(observed)}"])

    @staticmethod
    def _test(field: str, values: list[str]) -> str:
        if len(values) == 1:
            return f"{seg(field)} == {lit(values[0])}"
        return f"contains([{', '.join(lit(v) for v in values)}], {seg(field)})"

    def structural_rules(self) -> list[str]:
        """Rules from the structure alone: a step that carries an action and its observation,
        a role, or one kind for everything."""
        keys = set(self.keys)
        common = self.common(keys)
        if {"action", "observation"} <= keys and not self.first(keys, ROLE_KEYS, "string"):
            lines = ["    rules:", "      # TODO: each step is the model's turn, the action it ran and what it saw",
                     "      - emit:", "          - kind: generation"]
            lines += [f"            {line}" for line in self.fields("generation", keys, {"action", "observation"})
                      + common]
            lines += ["          - kind: tool", "            tool_name: \"'action'\"    # TODO: the tool's name",
                      "            arguments: {command: action}", "            result: observation"]
            if "state" in keys:
                lines += ["          - kind: state", "            data: state"]
            return lines
        role = self.first(keys, ROLE_KEYS, "string")
        if role:
            lines = ["    rules:", f"      # TODO: kinds guessed from `{role}`; check its values in your data"]
            for kind, names in (("generation", ("assistant", "agent", "model")),
                                ("observation", ("tool", "function", "environment"))):
                lines += [f"      - when: {q('contains([' + ', '.join(map(lit, names)) + '], ' + role + ')')}",
                          f"        kind: {kind}"]
                lines += [f"        {line}" for line in self.fields(kind, keys, set()) + common]
            lines += ["      - kind: message"]
            lines += [f"        {line}" for line in self.fields("message", keys, set()) + common]
            return lines
        kind_key = self.first(keys, TYPE_KEYS, "string")
        hint = (f"one rule per value of `{kind_key}`" if kind_key else "choose the kind of each element")
        content = self.first(keys, CONTENT_KEYS)
        lines = ["    rules:", f"      # TODO: {hint} (message, generation, tool, observation, ...)"]
        if content:
            lines += ["      - kind: message", f"        content: {q(seg(content))}"]
        else:
            lines += ["      - kind: log", "        data: \"@\""]
        return lines + [f"        {line}" for line in common]
