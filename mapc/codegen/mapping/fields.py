"""Values and fields: the pieces every mapping function writes (a record's optional field, a
checked object or time, a call wrapped at 99 columns, a rule's semantic fields laid out in
its canonical input, output and data), and the small facts about spec values they read."""

from __future__ import annotations

import ast
import re

from mapc.codegen.mapping.frame import Frame
from mapc.codegen.pysrc import Writer, literal
from mapc.spec import ir

_ID_PREFIX = {"run": "run", "case": "case", "group": "group", "trajectory": "traj", "events": "evt"}
_NEXT = {"run": "case", "case": "group", "group": "trajectory", "trajectory": "events"}
_STATUSES = ("running", "completed", "failed", "cancelled")  # coerce_status's (mapping_rt.STATUSES)
#: generated code that may raise (an expression function, a JMESPath ordering comparison)
_RAISES = re.compile(r"\b(x_\w+|jp_[lg][te])\(")

# Where semantic fields land in a canonical event when the rule gives no explicit layout.
_MESSAGE_LAYOUT = (
    ("role", "role"),
    ("content", "content"),
    ("reasoning", "reasoning"),
    ("model", "model"),
    ("tool_calls", "tool_calls"),
    ("tool_call_id", "tool_call_id"),
    ("name", "tool_name"),
)


def _without_unused_scope(function: str) -> str:
    """A level function without its ``s = dict(scope)`` when nothing reads ``s``."""
    tree = ast.parse(function)
    if any(isinstance(n, ast.Name) and n.id == "s" and isinstance(n.ctx, ast.Load) for n in ast.walk(tree)):
        return function
    return function.replace("\n    s = dict(scope)\n", "\n", 1)


def _path_of_signal(signals: str, name: str) -> tuple:
    """The spec path of signal ``name`` in the signals mapping at ``signals`` (a spec path)."""
    from mapc.codegen.places import _path_of

    return _path_of(signals) + (name,)


def _where(path: tuple) -> str:
    return ir.Expr("", path, None).where


def json_path_step(each: ir.Expr, where: str) -> str:
    """The JSON path step an `each` takes from its parent element: `.steps`, `` for `@`, or
    `.(records.events.each)` (the elements that spec node computes) when it is not a field path."""
    from mapc.expressions.paths import plain_path

    if each.text.strip() == "@":
        return ""
    names = plain_path(each.compiled.ast)
    return "." + ".".join(names) if names else f".({where})"


def _short(text: str, limit: int = 32) -> str:
    """An expression cut short for a docstring line (the full text is in the comments)."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _constant(v) -> tuple[bool, object]:
    """``(True, value)`` when a value template is known at build time (a literal)."""
    if isinstance(v, ir.Literal):
        return True, v.value
    if isinstance(v, ir.Expr) and v.compiled.constant[0]:
        return True, v.compiled.constant[1]
    return False, None


def _constant_text(v) -> str | None:
    """The text of a constant nonempty string (it needs no coercion at run time), else None."""
    known, value = _constant(v)
    return value if known and isinstance(value, str) and value else None



class Fields:
    """The generator's writers of values and fields (a part of :class:`MappingGenerator`)."""

    @staticmethod
    def _object(v: ir.Value, src: str, where: str) -> str:
        """An object field: ``coerce_object``, unless an object template made it (always one)."""
        return src if isinstance(v, ir.ObjectTemplate) else f"coerce_object(state, {src}, {where})"

    @staticmethod
    def _time(v: ir.Value, src: str, where: str) -> str:
        """A date-time field: ``coerce_time``, unless ``iso8601()`` made it (always RFC 3339 or null)."""
        if isinstance(v, ir.Expr) and v.compiled.outer_function == "iso8601":
            return src
        return f"coerce_time(state, {src}, {where})"

    @staticmethod
    def _put(w: Writer, rec: str, key: str, src: str) -> None:
        """An optional field: set unless its value is null (the runtime's ``put``); an object
        template's value (``compact(...)``) is never null."""
        if src.startswith("compact(") and src.endswith(")"):
            w.line(f"{rec}[{literal(key)}] = {src}")
        else:
            w.line(f"put({rec}, {literal(key)}, {src})")


    @staticmethod
    def _call(w: Writer, head: str, args: list[str]) -> None:
        """``head(args...)``: on one line when it fits, else the arguments filled into lines
        (an argument longer than a line on a line of its own, as the formatter would)."""
        one = f"{head}({', '.join(args)})"
        if 4 * w.level + len(one) <= 99:
            w.line(one)
            return
        w.line(f"{head}(")
        width = 99 - 4 * (w.level + 1)
        line = ""
        with w.indent():
            for arg in args:
                piece = f"{arg},"
                if line and len(line) + 1 + len(piece) > width:
                    w.line(line)
                    line = ""
                line = f"{line} {piece}" if line else piece
            if line:
                w.line(line)
        w.line(")")

    def _fused_fields(self, level: int, values: list[tuple[str, str]], layout: dict, canonical: dict,
                      inline: bool, first: list[tuple[str, str]]) -> tuple[list[str], list[str]] | None:
        """``(lines, keyword arguments)`` of an event's input, output and data as
        :meth:`_fields` lays them out: semantic fields in variables of their name first (after
        the variables ``first``), or (``inline``) in their place; None when they cannot be: a
        semantic view reads them, or two values may raise (their order is the spec's)."""
        risky = [k for k, v in values if _RAISES.search(v)]
        if inline and (self.semantics or len(risky) > 1 or not values):
            return None
        w = Writer(level)
        if not inline:
            self._assign(w, first + values)
        src = {k: (v if inline else k) for k, v in values}
        args = []
        for key in ("input", "output", "data"):
            if key in canonical:
                args.append(f"{key}={canonical[key]}")
            elif isinstance(layout.get(key), str):
                args.append(f"{key}={src[layout[key]]}")
            elif key in layout:
                members = ", ".join(f"{name}={src[var]}" for name, var in layout[key])
                args.append(f"{key}=nonempty({members})")
        return w.lines, args


    def _fields(self, level: int, values: list[tuple[str, str]], layout: dict, canonical: dict) -> list[str]:
        """An event's input, output and data (``canonical``: those the rule gives as such): each
        semantic field in a variable of its name (a semantic view reads them too), then the
        record's fields built from them. Without semantic views, a variable read once is
        written in its place when that takes fewer lines and at most one value may raise (an
        expression function): the order of failures cannot change."""

        def write(inline: set) -> list[str]:
            w = Writer(level)
            self._assign(w, [(k, v) for k, v in values if k not in inline])
            src = dict(values)
            for key in ("input", "output", "data"):
                if key in canonical:
                    self._put(w, "ev", key, canonical[key])
                elif isinstance(layout.get(key), str):
                    var = layout[key]
                    self._put(w, "ev", key, src[var] if var in inline else var)
                elif key in layout:
                    members = ", ".join(f"{literal(name)}: {src[var] if var in inline else var}"
                                        for name, var in layout[key])
                    w.line(f"put_object(ev, {literal(key)}, {{{members}}})")
            return w.lines

        plain = write(set())
        if self.semantics:
            return plain
        reads = [var for key in ("input", "output", "data") if key not in canonical and key in layout
                 for var in ((layout[key],) if isinstance(layout[key], str) else [v for _, v in layout[key]])]
        once = {var for var in reads if reads.count(var) == 1}
        risky = [k for k, v in values if _RAISES.search(v)]
        if len(risky) > 1:
            return plain
        inlined = write(once)
        return inlined if len(inlined) < len(plain) else plain

    def _field_value(self, v: ir.Value, frame: Frame) -> str:
        """A rule's field: ``tested`` when it is the field the rule's condition read."""
        if frame.matched is not None and isinstance(v, ir.Expr) and v.compiled.path == frame.matched:
            return "tested"
        return self.x.value(v, frame.el, "s")

    @staticmethod
    def _assign(w: Writer, pairs: list[tuple[str, str]]) -> None:
        """``a, b = x, y``: variables assigned in order, several on a line while it stays short."""
        width = 99 - 4 * w.level
        group: list[tuple[str, str]] = []

        def flush():
            if group:
                w.line(f"{', '.join(n for n, _ in group)} = {', '.join(v for _, v in group)}")
                group.clear()

        for name, value in pairs:
            names = ", ".join(n for n, _ in group + [(name, value)])
            values = ", ".join(v for _, v in group + [(name, value)])
            if group and len(f"{names} = {values}") > width:
                flush()
            group.append((name, value))
        flush()

    @staticmethod
    def _layout(kind: str, sem: dict) -> dict[str, str | tuple]:
        """Canonical input/output/data built from semantic fields, by kind.

        A value is a variable name, or ``((member, variable), ...)`` for an
        object whose null members are left out.
        """
        if not sem:
            return {}

        def obj(pairs):
            present = tuple((k, field) for k, field in pairs if field in sem)
            return present or None

        out: dict[str, str | tuple | None] = {}
        if kind == "message":
            out["input"] = obj(_MESSAGE_LAYOUT)
        elif kind == "generation":
            out["output"] = obj(_MESSAGE_LAYOUT)
        elif kind == "tool":
            out["input"] = obj((("name", "tool_name"), ("arguments", "arguments"), ("id", "tool_call_id")))
            if "result" in sem:
                out["output"] = "result"
            elif "content" in sem:
                out["output"] = "content"
        elif kind == "observation":
            content = "result" if "result" in sem else "content"
            out["output"] = obj((("content", content), ("tool_call_id", "tool_call_id"), ("name", "tool_name"), ("role", "role")))
        else:
            out["data"] = obj(tuple((k, k) for k in sem))
        return {k: v for k, v in out.items() if v is not None}

