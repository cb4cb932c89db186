"""Line layout of generated function bodies: temporaries renumbered, long tests split.

Pure text functions over lines of Python the emitters wrote; they know nothing of
JMESPath.
"""

from __future__ import annotations

import io
import re
import tokenize


#: A temporary's name, or what may hide one and must be skipped: a string literal
#: (``repr()`` writes only single-line '...' or "...") or a comment.
_TEMP_OR_SKIP = re.compile(
    r"""'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"|\#[^\n]*|(?<!\w)(v|out|item|expr)([0-9]+)(?!\w)"""
)
_ASSIGNED = re.compile(r"(\w+) = ")
_TEMP = re.compile(r"(v|out)[0-9]+")
_WORD = re.compile(r"\w+")


def _renumber(lines: list[str]) -> list[str]:
    """Number temporaries in order of first appearance (v1, v2, ... top to bottom).

    One regular-expression pass (the tokenizer it replaces took most of the time of
    compiling a long expression)."""
    mapping: dict[str, str] = {}
    counters: dict[str, int] = {}

    def rename(m: re.Match) -> str:
        prefix = m.group(1)
        if prefix is None:
            return m.group(0)
        old = m.group(0)
        new = mapping.get(old)
        if new is None:
            counters[prefix] = counters.get(prefix, 0) + 1
            new = mapping[old] = f"{prefix}{counters[prefix]}"
        return new

    return _TEMP_OR_SKIP.sub(rename, "\n".join(lines)).split("\n") if lines else []


def _conjuncts(src: str, word: str = "and") -> list[str]:
    """The operands of the top-level ``and`` (``word``) of ``src`` (an expression at that
    operator's level or above, so any ``or`` or conditional inside is in parentheses)."""
    parts, depth, start = [], 0, 0
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        if tok.type == tokenize.OP and tok.string in "([{":
            depth += 1
        elif tok.type == tokenize.OP and tok.string in ")]}":
            depth -= 1
            if depth == 0 and tok.string == word:
                parts.append(src[start:tok.start[1]].strip())
                start = tok.end[1]
        elif tok.type == tokenize.NAME and tok.string == word and depth == 0:
            parts.append(src[start:tok.start[1]].strip())
            start = tok.end[1]
    return parts + [src[start:].strip()]


def _split_or(line: str, room: int) -> list[str]:
    """A comprehension's test line ``if (a or b)`` longer than ``room``: ``if (a`` and
    ``    or b)``, one operand a line."""
    word, _, rest = line.partition(" ")
    if len(line) <= room or word not in ("if", "and") or not rest.startswith("("):
        return [line]
    # one group in parentheses: its last ")" is the only one that closes depth 0
    if _conjuncts(rest, ")")[1:] != [""]:
        return [line]
    parts = _conjuncts(rest[1:-1], "or")
    if len(parts) < 2:
        return [line]
    return [f"{word} ({parts[0]}"] + [f"    or {p}" for p in parts[1:-1]] + [f"    or {parts[-1]})"]


def _append_last(lines: list[tuple[int, str]], var: str, out: str) -> list[tuple[int, str]] | None:
    """``lines`` whose last statement ``var = X`` (``var`` read nowhere else) is written
    ``out.append(X)``; None when they do not end that way."""
    head = f"{var} = "
    starts = [i for i, (depth, text) in enumerate(lines) if depth == 0 and not text.startswith((")", "]", "}"))]
    if not starts or not lines[starts[-1]][1].startswith(head):
        return None
    first = starts[-1]
    tail = lines[first + 1:]
    if tail and not (tail[-1][0] == 0 and tail[-1][1] in (")", "]", "}")):
        return None
    name = re.compile(rf"(?<![\w.]){re.escape(var)}(?!\w)")
    if any(name.search(text) for i, (_, text) in enumerate(lines) if i != first):
        return None
    out_lines = list(lines)
    text = lines[first][1][len(head):]
    if tail:
        out_lines[first] = (0, f"{out}.append({text}")
        out_lines[-1] = (0, tail[-1][1] + ")")
    else:
        out_lines[first] = (0, f"{out}.append({text})")
    return out_lines

