"""Pre-lexing of ``$name`` variables.

JMESPath has no variables, and its lexer rejects ``$``.  Before parsing, every
``$name`` outside string literals is rewritten to a call of a reserved
function, ``__mapc_var__('name')``, which the compiler turns into a scope
lookup.  An :class:`OffsetMap` translates columns in the rewritten text back
to the original text so that errors point at what the user wrote.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from .errors import ExpressionError

#: The reserved function name variables are rewritten to.
VAR_FUNCTION = "__mapc_var__"

_START = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")
_PART = _START | frozenset("0123456789")
_QUOTES = frozenset("'\"`")


@dataclass(frozen=True)
class Replacement:
    original_start: int  # column of the ``$``
    original_end: int
    rewritten_start: int  # column of ``__mapc_var__``
    rewritten_end: int
    name: str


class OffsetMap:
    """Maps columns of the rewritten text to columns of the original text."""

    def __init__(self, replacements: list[Replacement], original_length: int):
        self.replacements = replacements
        self.original_length = original_length
        self._starts = [r.rewritten_start for r in replacements]

    def to_original(self, column: int) -> int:
        i = bisect.bisect_right(self._starts, column) - 1
        if i < 0:
            return column
        r = self.replacements[i]
        if column < r.rewritten_end:
            return r.original_start
        return column - r.rewritten_end + r.original_end

    def is_variable_call(self, rewritten_column: int) -> bool:
        """Whether a function name at this column was produced by the rewrite."""
        i = bisect.bisect_left(self._starts, rewritten_column)
        return i < len(self._starts) and self._starts[i] == rewritten_column


def _skip_string(text: str, i: int) -> int:
    """Index just past the string literal starting at ``text[i]`` (len if unclosed).

    Mirrors the jmespath lexer: a backslash escapes the following character.
    """
    quote = text[i]
    i += 1
    n = len(text)
    while i < n and text[i] != quote:
        if text[i] == "\\":
            i += 1
        i += 1
    return min(i + 1, n)


def rewrite_variables(text: str) -> tuple[str, OffsetMap]:
    """Rewrite ``$name`` to ``__mapc_var__('name')``; raise on a malformed ``$``."""
    out: list[str] = []
    replacements: list[Replacement] = []
    i = 0
    n = len(text)
    emitted = 0  # length of the rewritten text so far
    last_significant = ""
    chunk_start = 0
    while i < n:
        ch = text[i]
        if ch in _QUOTES:
            i = _skip_string(text, i)
            last_significant = ch
            continue
        if ch != "$":
            if not ch.isspace():
                last_significant = ch
            i += 1
            continue
        j = i + 1
        if j >= n or text[j] not in _START:
            raise ExpressionError(
                "syntax",
                "'$' must be followed by a variable name such as $case",
                column=i,
            )
        while j < n and text[j] in _PART:
            j += 1
        name = text[i + 1 : j]
        if last_significant == ".":
            raise ExpressionError(
                "syntax",
                f"variable ${name} cannot follow '.'; start the expression with it instead",
                column=i,
            )
        before = text[chunk_start:i]
        out.append(before)
        emitted += len(before)
        call = f"{VAR_FUNCTION}('{name}')"
        replacements.append(Replacement(i, j, emitted, emitted + len(call), name))
        out.append(call)
        emitted += len(call)
        chunk_start = j
        last_significant = ")"
        i = j
    out.append(text[chunk_start:])
    return "".join(out), OffsetMap(replacements, n)
