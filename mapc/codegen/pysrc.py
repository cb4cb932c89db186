"""Writing Python source safely and readably.

Spec strings reach generated code in exactly two ways: as literals through
:func:`literal` (``repr`` of plain data, which Python guarantees to read back
as the same value) or as comments through :func:`comment_text` (one line, no
control or line-separator characters). Nothing else interpolates user text
into code, so no spec string can become code.
"""

from __future__ import annotations

import math
import re
import textwrap
import unicodedata
from typing import Any

from mapc.codegen.wrap import wrap_line

_UNSAFE_CATEGORIES = {"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"}


def literal(value: Any) -> str:
    """A Python literal for JSON-like data (dict, list, str, int, float, bool, None)."""
    if isinstance(value, float) and not math.isfinite(value):
        # repr() would write the name `nan` or `inf`: not a literal, and not JSON either
        raise ValueError(f"{value!r} cannot be written as a literal")
    if isinstance(value, tuple):
        inner = ", ".join(literal(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, list):
        return "[" + ", ".join(literal(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{literal(k)}: {literal(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (str, int, float, bool)) or value is None:
        text = repr(value)
        if isinstance(value, str):
            # repr keeps printable non-ASCII as-is; escape line/paragraph separators too
            text = text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
        return text
    raise TypeError(f"cannot write {type(value).__name__} as a literal")


def comment_text(text: str, limit: int = 100) -> str:
    """Spec text made safe for a one-line ``#`` comment."""
    out = []
    for ch in str(text):
        if ch in "\n\r":
            out.append("\\n")
        elif ch == "\t":
            out.append(" ")
        elif unicodedata.category(ch) in _UNSAFE_CATEGORIES:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    s = "".join(out)
    return s if len(s) <= limit else s[: limit - 3] + "..."


def docstring_text(text: str, limit: int = 100) -> str:
    """Spec text made safe inside a one-line ``\"\"\"docstring\"\"\"``: no quote or backslash can end it."""
    return comment_text(text, limit).replace("\\", "\\\\").replace('"', '\\"')


def wrap_escaped(text: str, width: int) -> list[str]:
    """``textwrap.wrap`` for text made by :func:`docstring_text`, never splitting an escape.

    A break between a backslash and the character it escapes would leave a backslash at
    the end of a line: a line continuation, or an escape of the next line's first character
    (``\\N`` does not compile, ``\\q`` warns). Text without such a break wraps exactly as
    ``textwrap.wrap`` wraps it."""
    return _EscapeWrapper(width).wrap(text)


class _EscapeWrapper(textwrap.TextWrapper):
    def _handle_long_word(self, reversed_chunks, cur_line, cur_len, width):
        # textwrap's own, with the cut moved off the middle of an escape. Chunks start at an
        # escape boundary (they are split at spaces and hyphens), and docstring_text writes
        # only `\\` and `\"` escapes: a cut after an odd run of backslashes splits one.
        space_left = 1 if width < 1 else width - cur_len
        chunk = reversed_chunks[-1]
        end = space_left
        if self.break_on_hyphens and len(chunk) > space_left:
            hyphen = chunk.rfind("-", 0, space_left)
            if hyphen > 0 and any(c != "-" for c in chunk[:hyphen]):
                end = hyphen + 1
        run = len(chunk[:end]) - len(chunk[:end].rstrip("\\"))
        if run % 2:
            end -= 1
        if end == 0:
            if cur_line:
                return  # the chunk starts the next line, where more of it fits
            end = 2  # a line one column wide: the escape goes whole
        cur_line.append(chunk[:end])
        reversed_chunks[-1] = chunk[end:]


def module_docstring(text: str, width: int = 96) -> str:
    """A module docstring holding ``text`` (spec text in it already one-line safe):
    lines longer than the width re-wrapped, then escaped, so no break can split an escape
    and no quote or backslash can end it."""
    out = []
    for n, line in enumerate(text.strip().splitlines()):
        limit = width - 3 if n == 0 else width  # the first line leaves room for the quotes
        if len(line) <= limit:
            out.append(line)
            continue
        indent = line[: len(line) - len(line.lstrip())]
        out += textwrap.wrap(line, limit, subsequent_indent=indent)
    escaped = "\n".join(out).replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    return '"""' + escaped + '\n"""'


def one_line(text: Any) -> str:
    """Spec text (a description) on one line, whitespace collapsed."""
    return " ".join(str(text or "").split())


def description_lines(text: Any, width: int = 79) -> list[str]:
    """A spec description as a docstring paragraph followed by a blank line ([] if none)."""
    about = one_line(text)
    return textwrap.wrap(comment_text(about, 2000), width) + [""] if about else []


def identifier(*parts: Any) -> str:
    """A readable Python identifier built from spec path parts."""
    raw = "_".join(str(p) for p in parts if p != "")
    name = re.sub(r"[^0-9A-Za-z_]+", "_", raw).strip("_").lower()
    name = re.sub(r"_+", "_", name)
    if not name or name[0].isdigit():
        name = "x_" + name
    return name


class Writer:
    """Lines with indentation, for building functions."""

    def __init__(self, indent: int = 0):
        self.lines: list[str] = []
        self.level = indent

    def line(self, text: str = "") -> None:
        """Add a line at the current indentation; a long statement is wrapped (see wrap.py)."""
        if not text:
            self.lines.append("")
            return
        self.lines.extend(wrap_line("    " * self.level + text))

    def docstring(self, text: str) -> None:
        """A docstring (text already made safe with ``docstring_text``), wrapped to the width."""
        width = max(40, 99 - 4 * self.level)
        lines = wrap_escaped(text, width - 6) or [""]
        if len(lines) == 1:
            self.line(f'"""{lines[0]}"""')
            return
        self.line(f'"""{lines[0]}')
        for ln in lines[1:-1]:
            self.line(ln)
        self.line(f'{lines[-1]}"""')

    def comment(self, text: str) -> None:
        """A one-line comment, cut to fit the line width at the current indentation."""
        self.line("# " + comment_text(text, max(30, 99 - 4 * self.level - 2)))

    def indent(self) -> "_Indent":
        return _Indent(self)

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


class _Indent:
    def __init__(self, w: Writer):
        self.w = w

    def __enter__(self):
        self.w.level += 1
        return self.w

    def __exit__(self, *exc):
        self.w.level -= 1
        return False
