"""The events of a `mapc init` draft for an event stream: a JSON Lines log whose lines say
what they are in one field (`type`, `event`, `kind`) with several values.

Agent session logs (Claude Code, Codex, Copilot CLI) are such streams: one model response
may take several lines that share an id, calls come back as results on later lines paired by
id, a value set on one line (the model) applies to later ones, token counters repeat or
accumulate, and some lines repeat what others hold (a UI echo of the API record). The draft
reads the sample's lines (values are compared, never copied into the spec) and writes:

- one rule per value of the discriminating field, split again by a type-like field of the
  object the lines carry (`payload.type`) and by role, with the kind the lines' shape says
  (content parts with calls: a generation with `tool_calls`; a line that is a call: `tool`;
  a result naming its call: `observation` with `tool_call_id`), else the kind its name says;
- `merge` by a response id several lines share, usage counted once (`last`) as totals;
- `carry` of the model when only other lines name it; a running token total as a
  `cumulative` counter; a group whose texts all appear in another group is skipped;
- the session key (a field every line holds with one value) as the trajectory id.

Nothing here knows a format by name: the same reading applies to any stream.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from mapc.tools.init_rules import TYPE_KEYS, kind_of, lit, q

MIN_SHARE = 0.6  # the discriminating field is on at least this share of the lines
MAX_VALUES = 40
CALL_ID_KEYS = ("call_id", "tool_call_id", "toolCallId", "tool_use_id", "id")
RESULT_ID_KEYS = ("tool_use_id", "tool_call_id", "toolCallId", "call_id")
ARG_KEYS = ("input", "arguments", "args", "parameters")
NAME_KEYS = ("name", "toolName", "tool_name")
PAYLOAD_KEYS = ("payload", "data", "body", "event", "item", "msg")  # the object a line's fields are in
RESULT_KEYS = ("content", "output", "result", "text")
TEXT_KEYS = ("content", "text", "message")
TIME_KEYS = ("timestamp", "created_at", "createdAt", "time", "ts")
EVENT_ID_KEYS = ("uuid", "id", "event_id", "eventId")
SESSION_RE = re.compile(r"(session|conversation|thread)[_-]?id$", re.IGNORECASE)
RESPONSE_ID_RE = re.compile(r"(^|\.)(id|message_?id|messageId|request_?id|requestId|response_?id|responseId)$")
OUTCOME_RE = re.compile(r"reward|score|correct|accuracy|passed|success|resolved|solved", re.IGNORECASE)
MIN_TEXT = 16  # strings this long are compared to find lines that repeat others


def _ident(name: str) -> str:
    return name if re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", name) else json.dumps(name)


def expr(*names: str) -> str:
    """A field path as an expression (``message``, ``id`` -> ``message.id``)."""
    return ".".join(_ident(n) for n in names if n)


def _get(obj, path: tuple[str, ...]):
    for name in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(name)
    return obj


def _items(obj) -> list:
    """``obj`` if it is an array, else none: lines hold anything where the sample had arrays."""
    return obj if isinstance(obj, list) else []


def _members(obj) -> dict:
    return obj if isinstance(obj, dict) else {}


def _walk(obj, prefix=(), depth=3):
    """(path, value) of every member of ``obj`` down to ``depth`` objects deep (not into arrays)."""
    if not isinstance(obj, dict) or depth == 0:
        return
    for k, v in obj.items():
        yield prefix + (k,), v
        yield from _walk(v, prefix + (k,), depth - 1)


def _texts(obj, out: set[str]) -> set[str]:
    if isinstance(obj, str):
        if len(obj) >= MIN_TEXT:
            out.add(obj.strip())
    elif isinstance(obj, dict):
        for k, v in obj.items():
            if k not in TIME_KEYS and not re.search(r"(id|Id|ID)$", k):  # when and which, not what
                _texts(v, out)
    elif isinstance(obj, list):
        for v in obj:
            _texts(v, out)
    return out


@dataclass
class Group:
    """The lines of one value of the discriminating field (and of a type field inside them)."""

    conds: list[tuple[tuple[str, ...], str]]
    lines: list[dict] = field(default_factory=list)
    at: list[int] = field(default_factory=list)  # line indexes in the sample

    @property
    def name(self) -> str:
        return self.conds[-1][1]

    @property
    def test(self) -> str:
        return " && ".join(f"{expr(*p)} == {lit(v)}" for p, v in self.conds)

    @property
    def field(self) -> str:
        return self.conds[-1][0][-1]


@dataclass
class Blocks:
    """A content array whose parts are text, reasoning, calls or results."""

    path: tuple[str, ...]
    typed: bool
    text: list[str] = field(default_factory=list)  # the part types holding text
    reasoning: tuple[str, str] | None = None  # (part type, field)
    call: tuple[str | None, str, str, str] | None = None  # (part type, id key, arguments key, name key)
    result: tuple[str | None, str, str] | None = None  # (part type, id key, content key)

    def texts(self) -> str:
        """The text of the parts, joined: every part's `text` (other kinds of parts have none),
        unless a reasoning part in the same array has one too."""
        if self.reasoning and self.reasoning[1] == "text":
            return self.join("text", " || ".join(f"type == {lit(t)}" for t in self.text))
        return self.join("text")

    def join(self, key: str, where: str | None = None) -> str:
        """The texts at ``key`` of the parts (where ``where`` holds), joined: texts only, and an
        empty text where the line has no such array (a string, null), never a failing `join`."""
        test = f"type({_ident(key)}) == 'string'" + (f" && ({where})" if where else "")
        return f"join({lit('')}, {expr(*self.path)}[?{test}].{_ident(key)} || `[]`)"

    def select(self, part: str | None) -> str:
        base = expr(*self.path)
        return f"{base}[?type == {lit(part)}]" if part is not None else f"{base}[]"


def detect(docs: list) -> str | None:
    """The discriminating field of a stream of lines, or None when the lines are not one."""
    objs = [d for d in docs if isinstance(d, dict)]
    if len(objs) < 2:
        return None
    for key in TYPE_KEYS:
        values = [d.get(key) for d in objs if isinstance(d.get(key), str)]
        if len(values) >= MIN_SHARE * len(objs) and 2 <= len(set(values)) <= MAX_VALUES:
            return key
    return None


class StreamDrafter:
    """The `records:` block of a draft for the stream ``docs`` discriminated by ``key``."""

    def __init__(self, docs: list, key: str):
        self.docs = [d for d in docs if isinstance(d, dict)]
        self.key = key
        self.notes: list[str] = []
        self.found: list[str] = []  # what records() drafted, said by `mapc init`
        self.groups = self._groups()
        self.calls_elsewhere = False  # a generation's content parts hold the calls: a call line repeats one
        self.calls_elsewhere = any(b.call for g in self.groups for b in self.blocks(g))

    def nested(self) -> bool:
        """The lines keep what they are in nested objects (a payload, typed content parts, a
        response id shared by several lines): what this reading is for. Flat lines are drafted
        field by field (:class:`mapc.tools.init_rules.RuleDrafter`)."""
        return any(len(g.conds) > 1 or self.base(g) or any(b.typed or b.call or b.result for b in self.blocks(g))
                   or self.response_key(g) for g in self.groups)

    # -- the groups ---------------------------------------------------------------------
    def _groups(self) -> list[Group]:
        by_value: dict[str, Group] = {}
        for i, doc in enumerate(self.docs):
            value = doc.get(self.key)
            if isinstance(value, str):
                group = by_value.setdefault(value, Group([((self.key,), value)]))
                group.lines.append(doc)
                group.at.append(i)
        out = []
        for group in by_value.values():
            out += self._split(group)
        return out

    def _split(self, group: Group) -> list[Group]:
        """Split by a type-like field of an object every line of the group carries (`payload.type`):
        with several values, or one value in the line's payload (a rollout whose `response_item`
        lines are all messages is still `payload.type == 'message'`)."""
        for name in sorted({k for d in group.lines for k, v in d.items() if isinstance(v, dict)}):
            inner = [d[name] for d in group.lines if isinstance(d.get(name), dict)]
            if len(inner) < len(group.lines):
                continue
            least = 1 if name in PAYLOAD_KEYS else 2
            for key in TYPE_KEYS:
                values = [o.get(key) for o in inner if isinstance(o.get(key), str)]
                if len(values) == len(inner) and least <= len(set(values)) <= MAX_VALUES:
                    parts: dict[str, Group] = {}
                    for doc, i in zip(group.lines, group.at):
                        part = parts.setdefault(doc[name][key], Group(group.conds + [((name, key), doc[name][key])]))
                        part.lines.append(doc)
                        part.at.append(i)
                    return list(parts.values())
        return [group]

    # -- what the lines of a group hold -------------------------------------------------
    def paths(self, group: Group, kinds: tuple[type, ...]) -> dict[tuple[str, ...], int]:
        """Member paths (3 objects deep) holding values of ``kinds``: how many lines have each."""
        found: dict[tuple[str, ...], int] = {}
        for doc in group.lines:
            for path in {p for p, v in _walk(doc) if isinstance(v, kinds) and not isinstance(v, bool)}:
                found[path] = found.get(path, 0) + 1
        return found

    def blocks(self, group: Group) -> list[Blocks]:
        """The arrays of objects in the group's lines, read as content parts."""
        out = []
        for path in self.paths(group, (list,)):
            parts: dict[str | None, set[str]] = {}
            for doc in group.lines:
                items = _get(doc, path)
                for item in _items(items):
                    if isinstance(item, dict):
                        kind = item.get("type") if isinstance(item.get("type"), str) else None
                        parts.setdefault(kind, set()).update(item)
            if not parts:
                continue
            found = Blocks(path, typed=None not in parts)
            for part, keys in parts.items():
                call_id = next((k for k in CALL_ID_KEYS if k in keys), None)
                result_id = next((k for k in RESULT_ID_KEYS if k in keys), None)
                args = next((k for k in ARG_KEYS if k in keys), None)
                name = next((k for k in NAME_KEYS if k in keys), None)
                if name and args and call_id and found.call is None:
                    found.call = (part, call_id, args, name)
                elif result_id and not name and found.result is None:
                    found.result = (part, result_id, next((k for k in RESULT_KEYS if k in keys), result_id))
                elif part and re.search(r"think|reason|summary", part) and found.reasoning is None:
                    found.reasoning = (part, next((k for k in ("thinking", "text", "summary") if k in keys), "text"))
                elif part and "text" in keys:
                    found.text.append(part)
            if found.call or found.result or found.text or found.reasoning:
                out.append(found)
        return sorted(out, key=lambda b: (len(b.path), b.path))

    def base(self, group: Group) -> tuple[str, ...]:
        """The object the group's own fields are in: the one its type field is in, else the
        payload object every line of the group carries (`data`), else the line."""
        inner = group.conds[-1][0][:-1]
        if inner:
            return inner
        return next(((k,) for k in PAYLOAD_KEYS if all(isinstance(d.get(k), dict) for d in group.lines)), ())

    def own(self, group: Group) -> dict[str, set[type]]:
        """The keys of the group's base object and the JSON types of their values."""
        keys: dict[str, set[type]] = {}
        for doc in group.lines:
            obj = _get(doc, self.base(group)) if self.base(group) else doc
            for k, v in (obj.items() if isinstance(obj, dict) else ()):
                keys.setdefault(k, set()).add(type(v))
        return keys

    def string_at(self, group: Group, names) -> tuple[str, ...] | None:
        """The first of ``names`` that is a string in at least half the group's lines, in its base
        object or one object below it (``message.role``, ``payload.model``), the nearest first."""
        base = self.base(group)
        found = [p for p, n in self.paths(group, (str,)).items()
                 if n >= 0.5 * len(group.lines) and p[:len(base)] == base and len(p) - len(base) <= 2]
        for name in names:
            near = sorted((p for p in found if p[-1] == name), key=lambda p: (len(p), p))
            if near:
                return near[0]
        return None

    # -- the pieces of the spec ------------------------------------------------------------
    def session_key(self) -> str | None:
        """A top-level field every line holds, with one value, named like a session id."""
        for key in self.docs[0]:
            values = {json.dumps(d.get(key)) for d in self.docs}
            if SESSION_RE.search(key) and len(values) == 1 and isinstance(self.docs[0][key], str):
                return key
        return None

    def line_field(self, names, unique: bool = False) -> str | None:
        """A top-level string field most lines hold (``unique``: a different value on each)."""
        for name in names:
            values = [d.get(name) for d in self.docs if isinstance(d.get(name), str)]
            if len(values) >= 0.9 * len(self.docs) and (not unique or len(set(values)) == len(values)):
                return name
        return None

    def response_key(self, group: Group) -> tuple[str, ...] | None:
        """An id several lines of the group share (one model response written a part a line)."""
        constant = {k for k in self.docs[0] if len({json.dumps(d.get(k)) for d in self.docs}) == 1}
        best, best_repeats = None, 0
        for path, n in self.paths(group, (str,)).items():
            if n < 0.9 * len(group.lines) or len(path) > 2 or not RESPONSE_ID_RE.search(".".join(path)):
                continue
            if path[0] in constant or "parent" in path[-1].lower():
                continue
            values = [_get(d, path) for d in group.lines]
            repeats = len(values) - len(set(values))
            if repeats > best_repeats and len(set(values)) > 1:
                best, best_repeats = path, repeats
        return best

    def open_keys(self, group: Group, key: tuple[str, ...]) -> int:
        """How many keys are open at once in the sample (their first to last line overlap)."""
        spans: dict[str, list[int]] = {}
        for doc, i in zip(group.lines, group.at):
            spans.setdefault(json.dumps(_get(doc, key)), [i, i])[1] = i
        most = 1
        for first, _ in spans.values():
            most = max(most, sum(1 for a, b in spans.values() if a <= first <= b))
        return min(most, 256)

    def usage(self, group: Group) -> tuple[tuple[str, ...], list[str], bool] | None:
        """An object of token counts in the group's lines: (path, count names, running total)."""
        objects = {p for p in self.paths(group, (dict,)) if re.search(r"usage|tokens", p[-1], re.I)}
        running = sorted(p for p in objects if p[-1].lower().startswith(("total", "cumulative")))
        for path in running + sorted(objects, key=lambda p: (len(p), p)):
            names = sorted({k for d in group.lines for k, v in _members(_get(d, path)).items()
                            if re.search(r"tokens$", k) and isinstance(v, (int, float)) and not isinstance(v, bool)})
            if names:
                return path, names, path in running
        return None

    def mirrors(self) -> dict[int, int]:
        """Groups whose long texts all appear in another group: index -> the other's index. When
        two groups repeat each other, the one that holds its text in typed content parts (the API
        record) is kept, the plain echo skipped."""
        texts = [_texts(g.lines, set()) for g in self.groups]
        typed = [any(b.typed for b in self.blocks(g)) for g in self.groups]
        out = {}
        for i, mine in enumerate(texts):
            made = {ln for rule in self.rules_of(self.groups[i], None, False) for ln in rule}
            if not mine or made & {"kind: tool", "kind: observation"} or any(ln.startswith("tool_calls:") for ln in made):
                continue  # calls and results are never an echo
            for j, theirs in enumerate(texts):
                if i == j or j in out or len(mine & theirs) < 0.9 * len(mine):
                    continue
                mutual = len(mine & theirs) >= 0.9 * len(theirs)
                if not mutual or (typed[j] and not typed[i]) or (typed[j] == typed[i] and j < i):
                    out[i] = j
                    break
        return out

    # -- the rules ---------------------------------------------------------------------------
    def rules_of(self, group: Group, model: str | None, tokens: bool) -> list[list[str]]:
        """The rules of one group: each a list of `key: value` lines (the first is `when:`)."""
        when = group.test
        blocks = self.blocks(group)
        own = self.own(group)
        base = self.base(group)
        calls = next((b for b in blocks if b.call), None)
        results = next((b for b in blocks if b.result), None)
        texts = next((b for b in blocks if b.text), None)
        thinking = next((b for b in blocks if b.reasoning), None)
        rules: list[list[str]] = []
        call_id = next((k for k in ("call_id", "tool_call_id", "toolCallId", "tool_use_id") if str in own.get(k, ())),
                       None)
        if results:  # lines holding results that name their call: observations
            part, rid, content = results.result
            first = f"{results.select(part)} | [0]"
            every = all(any(isinstance(x, dict) and x.get("type", None) == part for x in _items(_get(d, results.path)))
                        for d in group.lines)
            rules.append([f"when: {q(when if every else when + ' && ' + results.select(part))}",
                          "kind: observation", f"tool_call_id: {q(first + '.' + _ident(rid))}",
                          f"result: {q(first + '.' + _ident(content))}"])
            if every:
                return rules
            rest = Group(group.conds)  # the other lines of the value: what they are, after the results
            for doc, i in zip(group.lines, group.at):
                if not any(isinstance(x, dict) and x.get("type") == part for x in _items(_get(doc, results.path))):
                    rest.lines.append(doc)
                    rest.at.append(i)
            return rules + self.rules_of(rest, model, tokens)
        if calls or (thinking or texts) and kind_of(group.field, group.name) != "message":
            rule = [f"when: {q(when)}", "kind: generation", "role: \"'assistant'\""]
            if texts:
                rule.append(f"content: {q(texts.texts())}")
            if thinking:
                part, key = thinking.reasoning
                rule.append(f"reasoning: {q(thinking.join(key, f'type == {lit(part)}') + ' || null')}")
            if calls:
                part, cid, args, name = calls.call
                arguments = f"parse_json({args}) || {{input: {args}}}" if self._string_args(group, calls) else args
                rule.append(f"tool_calls: {q(calls.select(part) + '.{id: ' + _ident(cid) + ', name: ' + _ident(name) + ', arguments: ' + arguments + '} || null')}")
            if model:
                rule.append(f"model: {model}")
            rules.append(rule + (self.token_signals(group) if tokens else []))
            return rules
        name = next((k for k in NAME_KEYS if k in own), None)
        if name and call_id and any(k in own for k in ARG_KEYS):  # the line is a call
            if self.calls_elsewhere:
                return [[f"when: {q(when)}", "kind: log    # TODO: the call again: the generation's tool_calls "
                         "hold it", f"data: {{tool_call_id: {expr(*base, call_id)}, tool_name: {expr(*base, name)}}}"]]
            args = next(k for k in ARG_KEYS if k in own)
            arguments = expr(*base, args)
            if str in own[args]:
                arguments = f"parse_json({arguments}) || {{input: {arguments}}}"
            rules.append([f"when: {q(when)}", "kind: tool", f"tool_call_id: {expr(*base, call_id)}",
                          f"tool_name: {expr(*base, name)}", f"arguments: {q(arguments)}"])
            return rules
        out = next((k for k in RESULT_KEYS if k in own), None)
        if call_id and not name and out:  # the line is a result naming its call
            rules.append([f"when: {q(when)}", "kind: observation", f"tool_call_id: {expr(*base, call_id)}",
                          f"result: {expr(*base, out)}"])
            return rules
        return rules + self.by_name(group, model, tokens, texts)

    def _string_args(self, group: Group, blocks: Blocks) -> bool:
        part, _, args, _ = blocks.call
        return any(isinstance(x, dict) and isinstance(x.get(args), str)
                   for d in group.lines for x in _items(_get(d, blocks.path)))

    def by_name(self, group: Group, model: str | None, tokens: bool, texts: Blocks | None) -> list[list[str]]:
        """Rules from what the value's name says (split by role where the lines have several)."""
        kind = kind_of(group.field, group.name)
        kind = "log" if kind == "end" else kind
        role = self.string_at(group, ("role",))
        content = self.string_at(group, TEXT_KEYS)
        if content is None and texts:
            content_expr = texts.texts()
        else:
            content_expr = expr(*content) if content else None
        who = re.search(r"user|human|system|developer|prompt|instruction", group.name, re.I)
        if kind == "message" and role and not who:  # a message of anyone: the model's are generations
            agent = f"{group.test} && contains(['assistant', 'model', 'agent'], {expr(*role)})"
            return [self.turn(agent, "generation", role, content_expr, model, tokens, group),
                    self.turn(group.test, "message", role, content_expr, None, False, group)]
        if kind == "generation" and not content_expr and not self.string_at(group, ("reasoning", "thinking")):
            kind = "log"  # named for the model, but no text: a marker (`turn_start`), not a response
        if kind in ("message", "generation"):
            return [self.turn(group.test, kind, role, content_expr, model, tokens and kind == "generation", group)]
        rule = [f"when: {q(group.test)}", f"kind: {kind}"]
        if tokens:
            signals = self.token_signals(group)
            if signals:
                usage = self.usage(group)
                rule[0] = f"when: {q(group.test + ' && ' + expr(*usage[0]))}"
                return [rule + signals]
        own = self.own(group)
        data = [k for k in sorted(own) if k not in TIME_KEYS and k not in EVENT_ID_KEYS and k != group.field][:6]
        base = self.base(group)
        if data:
            rule.append("data: {" + ", ".join(f"{_ident(k)}: {q(expr(*base, k))}" for k in data) + "}")
        outcomes = [k for k in sorted(own) if OUTCOME_RE.search(k) and own[k] - {type(None)}
                    and own[k] - {type(None)} <= {int, float, bool}]
        if outcomes:  # a grade on a line of its own: signals of that line's event
            rule.append("signals: {" + ", ".join(f"{_ident(k)}: {q(expr(*base, k))}" for k in outcomes[:8])
                        + "}    # TODO: outcome fields")
        return [rule]

    def turn(self, when: str, kind: str, role, content: str | None, model, tokens: bool, group: Group) -> list[str]:
        rule = [f"when: {q(when)}", f"kind: {kind}"]
        if role:
            rule.append(f"role: {expr(*role)}")
        if content:
            rule.append(f"content: {q(content)}")
        if model and kind == "generation":
            rule.append(f"model: {model}")
        return rule + (self.token_signals(group) if tokens else [])

    def token_signals(self, group: Group) -> list[str]:
        found = self.usage(group)
        if found is None:
            return []
        path, names, running = found
        how = "counter: cumulative, total: true" if running else "total: true"
        lines = ["signals:" + ("    # TODO: a running total: its increases, summed once" if running else
                               "    # TODO: counted once per event (merged lines: the last line's)")]
        for name in names:
            lines.append(f"  {_ident(name)}: {{value: {q(expr(*path, name))}, {how}, unit: \"'tokens'\"}}")
        return lines

    # -- the block ---------------------------------------------------------------------------
    def records(self) -> list[str]:
        """The `records:` block (without its header line)."""
        session = self.session_key()
        event_id = self.line_field(EVENT_ID_KEYS, unique=True)
        when = self.line_field(TIME_KEYS)
        mirrors = self.mirrors()
        # which groups make generations: they merge by a response id and carry the usage
        generations = []
        for i, group in enumerate(self.groups):
            if i in mirrors:
                continue
            kinds = [ln for rule in self.rules_of(group, None, False) for ln in rule if ln.startswith("kind: ")]
            if "kind: generation" in kinds:
                generations.append(i)
        with_usage = [i for i in generations if self.usage(self.groups[i])]
        token_groups = set(with_usage) if with_usage else {i for i, g in enumerate(self.groups)
                                                             if i not in mirrors and self.usage(g)}
        model, carry = self.model(generations)
        merges = []
        for i in generations:
            key = self.response_key(self.groups[i])
            if key:
                merges.append((i, key))
        loop: list[str] = []
        if merges:
            i, key = merges[0]
            group = self.groups[i]
            usage = self.usage(group)
            paths = [(b.path, "concat") for b in self.blocks(group) if b.typed or b.call]
            paths += [(usage[0], "last")] if usage else []
            fields = [f"{expr(*p)}: {how}" for p, how in paths  # a path inside another: the outer one decides
                      if not any(o != p and p[:len(o)] == o for o, _ in paths)]
            loop += ["merge:    # TODO: lines that share this id are one model response",
                     f"  by: {expr(*key)}", f"  when: {q(group.test)}"]
            if fields:
                loop += ["  fields:"] + [f"    {f}" for f in fields]
            most = self.open_keys(group, key)
            if most > 1:
                loop.append(f"  open: {most}")
        if carry:
            loop += ["carry:    # the model is named on other lines than the responses",
                     f"  model: {{value: {carry[0]}, when: {q(carry[1])}}}"]
        rules = []
        for i, group in enumerate(self.groups):
            if i in mirrors:
                rules.append([f"when: {q(group.test)}",
                              f"skip: true    # TODO: repeats what the {self.groups[mirrors[i]].name!r} lines hold"])
                continue
            rules += self.rules_of(group, model if i in generations else None, i in token_groups)
        made = [ln for rule in rules for ln in rule]
        inner = sorted({expr(*g.conds[-1][0]) for g in self.groups if len(g.conds) > 1})
        self.found = [f"{len(rules)} rule(s) for the values of `{self.key}`"
                      + "".join(f", `{name}`" for name in inner)]
        self.found += [f"lines merged by `{expr(*merges[0][1])}`"] if merges else []
        if any(ln.startswith("tool_calls:") or ln == "kind: tool" for ln in made):
            paired = any(ln.startswith("tool_call_id:") for rule in rules if "kind: observation" in rule for ln in rule)
            self.found.append("calls" + (" paired with their results by id" if paired else " (no results name them)"))
        self.found += ["the model carried from other lines"] if carry else []
        self.found += ["token counts as totals"] if any("total: true" in ln for ln in made) else []
        self.found += [f"{len(mirrors)} group(s) skipped as echoes of others"] if mirrors else []
        self.found += [f"`{session}` as the trajectory id"] if session else []
        out: list[str] = []
        if session:
            out += ["  trajectory:", "    each: \"@\"    # the lines of the session",
                    f"    id: {_ident(session)}    # every line names the session"]
            out += [f"    {line}" for line in loop]
            out += ["  events:"]
        else:
            out += ["  events:", "    each: \"@\"    # one event per line"]
            out += [f"    {line}" for line in loop]
        if event_id:
            out.append(f"    id: {_ident(event_id)}")
        if when:
            out.append(f"    timestamp: {q('iso8601(' + _ident(when) + ')')}")
        out += ["    rules:", f"      # TODO: one rule per value of `{self.key}` seen in the sample; "
                "check the kinds and fields"]
        for rule in rules:
            out.append(f"      - {rule[0]}")
            out += [f"        {line}" for line in rule[1:]]
        out += ["      - kind: log    # values the sample did not have",
                f"        data: {{{_ident(self.key)}: {_ident(self.key)}}}"]
        return out

    def model(self, generations: list[int]) -> tuple[str | None, tuple[str, str] | None]:
        """The model of a generation: read on its lines, else carried from lines that name it."""
        for i in generations:
            path = self.string_at(self.groups[i], ("model",))
            if path:
                return expr(*path), None
        for group in self.groups:
            path = self.string_at(group, ("model",))
            if path:
                return "$carry.model", (expr(*path), group.test)
        return None, None
