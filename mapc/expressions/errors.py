"""Compile-time errors for mapc expressions."""

from __future__ import annotations

import re

#: Every value ``ExpressionError.kind`` can take (the JMESPath error categories).
ERROR_KINDS = (
    "syntax",
    "unknown-function",
    "invalid-arity",
    "unknown-variable",
    "invalid-type",
    "invalid-value",
)


class ExpressionError(Exception):
    """An expression that cannot be compiled.

    Attributes:
        kind: one of :data:`ERROR_KINDS`.
        message: one sentence describing the problem.
        column: 0-based offset into the original expression text.
        hint: a suggestion such as ``"did you mean 'to_string'?"``, or None.
        text: the expression text (when known).
    """

    def __init__(self, kind: str, message: str, column: int = 0, hint: str | None = None,
                 text: str | None = None):
        if kind not in ERROR_KINDS:
            raise ValueError(f"unknown expression error kind {kind!r}")
        self.kind = kind
        self.message = message
        self.column = column
        self.hint = hint
        self.text = text
        super().__init__(self._render())

    def __reduce__(self):
        return (type(self), (self.kind, self.message, self.column, self.hint, self.text))

    def _render(self) -> str:
        out = f"{self.message} (column {self.column})"
        if self.hint:
            out += f"; {self.hint}"
        return out

    def with_text(self, text: str) -> ExpressionError:
        self.text = text
        return self

    def pretty(self) -> str:
        """The message with the expression and a caret under the offending column."""
        out = str(self)
        if self.text is not None and "\n" not in self.text:
            out += f"\n  {self.text}\n  {' ' * self.column}^"
        return out


def apostrophe_hint(text: str) -> str | None:
    """The hint for a syntax error caused by a ``'`` inside a raw string (``'it's'``, or
    ``'it''s'`` as SQL writes it), else None."""
    if re.search(r"\w''\w|\w'\w", text):
        return ("a raw string ends at the next ', so write ' inside it as \\' ('it\\'s'); in a YAML "
                "double-quoted string the backslash is doubled (\"x == 'it\\\\'s'\"), in a single-quoted "
                "or plain one it is not; a JSON literal takes ' as it is (`\"it's\"`)")
    return None
