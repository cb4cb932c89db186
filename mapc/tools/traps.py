"""Checks that teach: expression traps the values of a spec's fixtures spring.

``mapc check``, ``mapc test`` and ``mapc report`` map the fixtures with the spec's own
program, watching which elements each event rule takes (:mod:`mapc.tools.observe`), then
evaluate the parts of each rule's expressions on those elements, in the same scope, as
the adapter would. Each trap is a warning at the spec line and column of the expression,
naming the fixture element that shows it and the fix:

- ``empty_string_falsy``: an operand of ``a && b || c`` is ``""`` on a fixture element:
  JMESPath treats ``""`` as false, so the chain gives ``c`` there, not ``""``. (``a || c``
  alone means "a, else c", and ``""`` taken as missing there is what it usually means.)
- ``null_argument``: a function the expression calls there is given null for an
  argument that takes no null (``join``, ``replace``, ...): the adapter fails on it.
- ``timestamp_range``: an event timestamp that lands before 1990 or after 2100 (epoch
  seconds read as milliseconds, or the reverse), or that no date can hold.
- ``naive_time``: an event timestamp without a zone: the adapter takes it as UTC.

Only the parts the expression evaluates on that element are looked at (``b`` in
``a && b`` only where ``a`` holds), and only in values, not in tests (``when``, where
truthiness is the point). A ``'`` inside a raw string cannot be a warning: the
expression does not compile; its syntax error says how to write it
(:func:`apostrophe_hint`). The work is bounded by what :mod:`mapc.tools.observe` keeps
(``MAX_KEPT`` elements per rule and fixture).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from mapc.core.diagnostics import WARNING, Diagnostic, format_path
from mapc.expressions import FUNCTIONS, ExpressionTypeError, ExpressionValueError, compile_part
from mapc.expressions.errors import apostrophe_hint  # noqa: F401 (moved down for mapc.spec; re-exported)
from mapc.expressions.paths import plain_path
from mapc.expressions.variables import rewrite_variables
from mapc.core.fieldpath import render
from mapc.tools.observe import MAX_KEPT, Observation
from mapc.analysis.reads import _exprs
from mapc.runtime.jmespath_rt import jp_truthy as truthy
from mapc.spec import ir
from mapc.analysis.fixture_check import _call_text, _field_column, _fix

YEARS = (1990, 2100)  # a trace's timestamps land in between
_EPOCH_1990, _EPOCH_2100 = 631152000, 4102444800
_UNITS = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}
_TIME_FUNCTIONS = ("iso8601", "epoch")
_DEFAULTS = {"string": "''", "number": "`0`", "array": "`[]`", "object": "`{}`"}
_ZONE = re.compile(r"(?:[zZ]|[+-]\d\d(?::?\d\d)?)$")
_DATE_TIME = re.compile(r"^\d{4}-\d\d-\d\d[T ]\d\d:\d\d")


@dataclass
class _Seen:
    """Where a trap showed: how many elements, and the first."""

    count: int = 0
    first: str = ""
    detail: str = ""


def check_traps(spec: ir.Spec, observed: list[Observation]) -> list[Diagnostic]:
    """Warnings for the traps the fixture elements ``observed`` (one per fixture) spring."""
    found: dict[tuple, _Seen] = {}
    notes: dict[tuple, tuple] = {}
    cut = any(t.count > len(t.kept) for obs in observed for t in obs.rules.values())
    for obs in observed:
        name = obs.trace.rsplit("/", 1)[-1]
        for i, rule in enumerate(spec.events.rules):
            taken = obs.taken(i)
            if not taken.kept:
                continue
            for expr, is_timestamp in _rule_values(rule):
                checker = _ExprCheck(expr)
                for n, (el, scope) in enumerate(zip(taken.kept, taken.scopes)):
                    place = _place(name, scope, n, i)
                    for key, note in checker.run(el, scope, is_timestamp):
                        seen = found.setdefault((i, expr.where) + key, _Seen())
                        seen.count += 1
                        if seen.count == 1:
                            seen.first, notes[(i, expr.where) + key] = place, note
    diags = []
    for key, seen in found.items():
        code, message, hint, column, expr = notes[key]
        more = f"{seen.count - 1} more element(s)" + (f" of the first {MAX_KEPT} per rule and fixture" if cut else "")
        where = f"on {seen.first}" + (f" (and {more})" if seen.count > 1 else "")
        diags.append(_diag(spec, expr, code, message.replace("{where}", where), hint, column))
    return sorted(diags, key=lambda d: (d.line or 0, d.column or 0, d.code))


def _rule_values(rule: ir.Rule):
    """``(expression, is it the timestamp)`` for each value one rule's events map from the
    element itself (signals and artifacts with loops of their own run elsewhere)."""
    for t in rule.emits:
        if isinstance(t.timestamp, ir.Expr):
            yield t.timestamp, True
        values = [t.id, None if isinstance(t.parent, str) else t.parent]
        values += [v for _, v in t.semantic + t.canonical]
        for child in t.signals + t.artifacts:
            if child.loops:
                continue
            values += [child.value, child.metadata] if isinstance(child, ir.SignalSpec) \
                else [v for _, v in child.fields]
        for e in _exprs(values):
            yield e, False


def _place(name: str, scope: dict, n: int, rule: int) -> str:
    line = (scope.get("source") or {}).get("line")
    return f"{name} line {line}" if line else f"{name}, element {n + 1} of those rule {rule} takes"


def _diag(spec: ir.Spec, expr: ir.Expr, code: str, message: str, hint: str | None, column: int) -> Diagnostic:
    mark = spec.locate_in(expr.path, column) if spec.locate_in is not None else spec.locate(expr.path)
    return Diagnostic(code=code, message=message, severity=WARNING, file=mark.file if mark else spec.file,
                      line=mark.line if mark else None, column=mark.column if mark else None,
                      path=format_path(expr.path) or None, hint=hint)


def _shown(value, limit: int = 40) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _name(node: dict) -> str | None:
    names = plain_path(node)
    if names is not None:
        return render(names)
    if node["type"] == "literal":
        return _shown(node["value"]) if not isinstance(node["value"], str) else "'" + node["value"] + "'"
    if node["type"] == "variable" and not node.get("children"):
        return "$" + node["value"]
    return None


class _ExprCheck:
    """One expression's parts, compiled once, evaluated on element after element."""

    def __init__(self, expr: ir.Expr):
        self.expr = expr
        self.parts: dict[int, object] = {}
        self.ors: list[tuple[dict, list]] = []
        self.calls: list[tuple[dict, list]] = []
        self._walk(expr.compiled.ast, [])

    def value(self, node: dict, el, scope):
        part = self.parts.get(id(node))
        if part is None:
            part = self.parts[id(node)] = compile_part(node)
        return part.evaluate(el, scope)

    def _walk(self, node: dict, guards: list) -> None:
        """Note the ``||`` chains and calls evaluated on the expression's own ``@``, each with
        the operands that must be true (or false) for it to run."""
        kind = node["type"]
        kids = [c for c in node.get("children", []) if isinstance(c, dict)]
        if kind == "or_expression":
            self.ors.append((node, guards))
            self._walk(kids[0], guards)
            self._walk(kids[1], guards + [(kids[0], False)])
        elif kind == "and_expression":
            self._walk(kids[0], guards)
            self._walk(kids[1], guards + [(kids[0], True)])
        elif kind == "function_expression":
            self.calls.append((node, guards))
            for c in kids:
                if c["type"] != "expref":
                    self._walk(c, guards)
        elif kind in ("comparator", "not_expression", "multi_select_list", "multi_select_dict", "key_val_pair"):
            for c in kids:
                self._walk(c, guards)
        elif kind in ("subexpression", "index_expression", "pipe", "projection", "filter_projection",
                      "value_projection", "flatten") and kids:
            self._walk(kids[0], guards)

    def _runs(self, guards: list, el, scope) -> bool:
        return all(truthy(self.value(g, el, scope)) == want for g, want in guards)

    def run(self, el, scope, is_timestamp: bool):
        """``(key, (code, message, hint, column, expr))`` for each trap on this element."""
        checks = [lambda n=n, g=g: [t for t in [self._empty_string(n, g, el, scope)] if t] for n, g in self.ors]
        checks += [lambda n=n, g=g: list(self._null_arguments(n, g, el, scope)) for n, g in self.calls]
        if is_timestamp:
            checks.append(lambda: list(self._timestamp(el, scope)))
        for check in checks:
            try:
                yield from check()
            except (ExpressionTypeError, ExpressionValueError):
                continue  # the part fails on this element: the mapping fails there too, and says so

    # -- "" in && / || ------------------------------------------------------------------------
    def _empty_string(self, node, guards, el, scope):
        left, right = node["children"]
        operands = _chain(left, "and_expression")
        if len(operands) < 2:
            return None  # `a || b`: "a, else b", and "" taken as missing is what it usually means
        if not self._runs(guards, el, scope) or self.value(left, el, scope) != "":
            return None
        culprit = next((o for o in operands if not truthy(self.value(o, el, scope))), left)
        if self.value(culprit, el, scope) != "":
            return None
        instead = self.value(right, el, scope)
        if instead == "":
            return None  # falls through to "" anyway: same value
        text = self.expr.text.strip()
        name = _name(culprit) or "an operand"
        message = (f"`{name}` is \"\" {{where}}, and JMESPath treats \"\" as false: `{text}` gives "
                   f"{_shown(instead)} there, not \"\"")
        names = [_name(o) for o in operands] + [_name(right)]
        if None in names:
            hint = ("if \"\" is a value to keep, wrap the operands in arrays, which are true even when they hold "
                    "\"\": `(a && [b] || [c])[0]`; if \"\" means missing, this is right")
        else:
            chain = " && ".join(names[:-2] + [f"[{names[-2]}]"])
            hint = (f"if \"\" is a value to keep, write `({chain} || [{names[-1]}])[0]` (an array holding \"\" "
                    "is true); if \"\" means missing, this is right")
        return ("empty_string_falsy", name), ("empty_string_falsy", message, hint, _column(self.expr.text, culprit), self.expr)

    # -- null given to a function -----------------------------------------------------------------
    def _null_arguments(self, node, guards, el, scope):
        sig = FUNCTIONS.get(node["value"])
        if sig is None or not self._runs(guards, el, scope):
            return
        for i, arg in enumerate(node["children"]):
            param = sig.param_for(i)
            accepted = {t.split("-")[0] for t in param.types}
            if not accepted or "null" in accepted or param.literal or arg["type"] == "expref":
                continue
            if self.value(arg, el, scope) is not None:
                continue
            fn = node["value"]
            call = _call_text(self.expr.text, _column(self.expr.text, node))
            written = _arguments(call)
            text = written[i] if i < len(written) else None
            name = _name(arg) or text
            what = f"`{name}`" if name else "its value"
            default = next((_DEFAULTS[t] for t in sorted(accepted) if t in _DEFAULTS), None)
            message = (f"{fn}() argument {i + 1} ({param.name}) is null {{where}}: {what} is null there, and "
                       f"{fn}() takes no null, so the adapter fails on that element")
            if plain_path(arg) is not None:
                hint = _fix(call, name, {"null"}, accepted)
            elif text and default:
                alternative = text if arg["type"] == "or_expression" else f"({text})"
                hint = f"write {call.replace(text, f'{alternative} || {default}', 1)} to map null as {default}"
            else:
                hint = "read another field, or test it first"
            if arg["type"] == "or_expression":
                hint += "; in `a && b || c`, c is taken wherever a or b is \"\", [], {} or null"
            yield ("null_argument", fn, i), ("null_argument", message, hint, _column(self.expr.text, node), self.expr)

    # -- timestamps -----------------------------------------------------------------------------
    def _timestamp(self, el, scope):
        ast = self.expr.compiled.ast
        value = self.value(ast, el, scope)
        text = self.expr.text.strip()
        zoned = f"join('', [{text}, 'Z'])", f"join('', [{text}, '+02:00'])"
        if ast["type"] == "function_expression" and ast["value"] in _TIME_FUNCTIONS and ast["children"]:
            arg = self.value(ast["children"][0], el, scope)
            unit = self.value(ast["children"][1], el, scope) if len(ast["children"]) > 1 else "s"
            if isinstance(arg, (int, float)) and not isinstance(arg, bool) and unit in _UNITS:
                seconds = arg / _UNITS[unit]
                if not _EPOCH_1990 <= seconds <= _EPOCH_2100:
                    yield self._range(arg, unit, seconds, text)
                return
            if isinstance(arg, str):
                value = arg
                call = ast["value"]
                inner = _name(ast["children"][0]) or "ts"
                zoned = f"{call}(join('', [{inner}, 'Z']))", f"{call}(join('', [{inner}, '+02:00']))"
        if isinstance(value, str):
            if _DATE_TIME.match(value) and not _ZONE.search(value) and _parses(value):
                yield ("naive_time",), ("naive_time", f"the timestamp `{text}` is {_shown(value)} {{where}}, a time "
                                        "without a zone: the adapter takes it as UTC", (
                                            f"if the source's clock is UTC, say so: `{zoned[0]}`; if it is local "
                                            f"time, add its offset (`{zoned[1]}`): "
                                            "otherwise every event shifts by it"), 0, self.expr)
            elif value[:4].isdigit() and not YEARS[0] <= int(value[:4]) <= YEARS[1]:
                yield ("timestamp_range",), ("timestamp_range", f"the timestamp `{text}` is {_shown(value)} "
                                             f"{{where}}, outside {YEARS[0]}-{YEARS[1]}",
                                             "check the field and its unit (seconds or milliseconds)", 0, self.expr)

    def _range(self, arg, unit: str, seconds: float, text: str):
        import datetime

        try:
            year = (datetime.datetime(1970, 1, 1) + datetime.timedelta(seconds=seconds)).year
            landing = f"the year {year}, outside {YEARS[0]}-{YEARS[1]}"
        except OverflowError:
            landing = "past the year 9999, which no timestamp holds: the adapter leaves it out"
        right = next((u for u, per in _UNITS.items() if _EPOCH_1990 <= arg / per <= _EPOCH_2100), None)
        unit_words = {"s": "seconds", "ms": "milliseconds", "us": "microseconds", "ns": "nanoseconds"}
        message = (f"the timestamp `{text}` reads {_shown(arg)} {{where}} as {unit_words[unit]} since 1970: that is "
                   f"{landing}")
        fn = self.expr.compiled.ast["value"]
        arg_text = _name(self.expr.compiled.ast["children"][0]) or "ts"
        hint = (f"the number is in {unit_words[right]}: write `{fn}({arg_text}, '{right}')`" if right
                else "check the field: it holds no time since 1970 in any unit")
        return ("timestamp_range",), ("timestamp_range", message, hint, 0, self.expr)


def _parses(text: str) -> bool:
    """Whether the runtime takes ``text`` as a date-time (``datetime.fromisoformat``)."""
    import datetime

    try:
        datetime.datetime.fromisoformat(text)
    except ValueError:
        return False
    return True


def _arguments(call: str) -> list[str]:
    """The arguments of ``f(a, b || c, 'x, y')`` as written, split at top-level commas."""
    inner = call[call.find("(") + 1: call.rfind(")")]
    out, depth, quote, start = [], 0, None, 0
    for i, ch in enumerate(inner):
        if quote:
            quote = None if ch == quote and inner[i - 1] != "\\" else quote
        elif ch in "'\"`":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(inner[start:i].strip())
            start = i + 1
    return out + [inner[start:].strip()]


def _chain(node: dict, kind: str) -> list[dict]:
    """The operands of ``a && b && c`` (``kind`` and_expression), in order."""
    if node["type"] != kind:
        return [node]
    return [o for c in node["children"] for o in _chain(c, kind)]


def _column(text: str, node: dict) -> int:
    """Column (0-based, in ``text`` as written) where ``node`` starts, or 0."""
    names = plain_path(node)
    if names:
        return _field_column(text, tuple(names), len(names) - 1)
    if "position" not in node:
        return 0
    _, offsets = rewrite_variables(text)
    return offsets.to_original(node["position"])
