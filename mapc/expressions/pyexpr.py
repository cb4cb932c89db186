"""Python expressions as the compiler builds them: source text with what it knows of it.

An :class:`Expr` is the Python source for one JMESPath node plus the facts the
emitters use to lay code out and to skip work (its operator precedence, whether it
is a plain name, cannot raise, is always boolean or never None, a known literal).
Everything taken from the expression text is embedded with :func:`literal_source`,
built on ``repr()``, so no expression can inject code.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: Maximum line length the emitter aims for (black's default is 88; we allow 99).
LINE_LENGTH = 99
#: the longest one-line form of a projection or multiselect (the rest of the line is indentation)
_ONE_LINE = 75

# Python operator precedence levels used to decide on parentheses.
ATOM = 100
CMP = 50
NOT = 40
AND = 30
OR = 20
COND = 10


def string_source(text: str) -> str:
    """A Python string literal for ``text``: ``repr()``, in double quotes like black."""
    source = repr(text)
    if source[0] == "'" and '"' not in text and "'" not in text:
        # Without quote characters the escapes inside are the same for both styles.
        source = '"' + source[1:-1] + '"'
    return source


def literal_source(value) -> str:
    """Python source for a JSON value, safe for any content (built on repr())."""
    if value is None or value is True or value is False:
        return repr(value)
    if isinstance(value, str):
        return string_source(value)
    if isinstance(value, int):
        return repr(int(value))
    if isinstance(value, float):
        if math.isnan(value):
            return "float('nan')"
        if math.isinf(value):
            return "float('inf')" if value > 0 else "float('-inf')"
        return repr(float(value)).replace("e+", "e")  # 1e21, as black writes it
    if isinstance(value, list):
        return "[" + ", ".join(literal_source(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(
            f"{literal_source(str(k))}: {literal_source(v)}" for k, v in value.items()
        ) + "}"
    raise TypeError(f"not a JSON value: {value!r}")


def _is_scalar(value) -> bool:
    return value is None or isinstance(value, (bool, int, float, str))


@dataclass(frozen=True)
class Expr:
    """A Python expression produced for an AST node."""

    src: str
    prec: int = ATOM
    name: bool = False  # src is a plain variable name
    simple: bool = False  # cheap to repeat: a name or a scalar literal
    pure: bool = False  # cannot raise and has no effects
    boolean: bool = False  # value is always True, False or None
    nonnull: bool = False  # value is never None
    const: tuple | None = None  # (value,) when the value is a known literal
    parts: tuple | None = None  # (open, items, close) for displays and calls

    def paren(self, level: int) -> str:
        """``src`` as an operand of an operator at ``level``."""
        if self.prec > level or (self.prec == level and level not in (CMP, COND)):
            return self.src
        return f"({self.src})"


def _name(src: str, **kw) -> Expr:
    return Expr(src, ATOM, name=True, simple=True, pure=True, **kw)


def _literal(value) -> Expr:
    return Expr(
        literal_source(value),
        ATOM,
        simple=_is_scalar(value),
        pure=True,
        boolean=value is None or isinstance(value, bool),
        nonnull=value is not None,
        const=(value,),
    )


def _display(open_: str, items: list[str], close: str, **kw) -> Expr:
    return Expr(open_ + ", ".join(items) + close, ATOM, parts=(open_, tuple(items), close), **kw)


def _call(function: str, args: list[str], **kw) -> Expr:
    return _display(f"{function}(", args, ")", **kw)


def truth(e: Expr) -> Expr:
    """A Python condition that is true exactly when ``e`` is JMESPath-truthy."""
    if e.const is not None:
        value = e.const[0]
        truthy = not (value is None or value is False or value in ("", [], {}))
        return Expr(repr(truthy), ATOM, pure=True, boolean=True, nonnull=True, const=(truthy,))
    if e.boolean:
        return e
    return Expr(f"jp_truthy({e.src})", ATOM, pure=e.pure, boolean=True, nonnull=True)


_ORDERING = {"lt": ("<", "jp_lt"), "lte": ("<=", "jp_le"), "gt": (">", "jp_gt"),
             "gte": (">=", "jp_ge")}
