"""Break long generated statements the way black would, without changing them.

Generated code is read by people, so a statement longer than the line width is
split at its final bracketed group (a call's arguments, a dict, a list or a
tuple): its contents on one line of their own when they fit, else as many
elements a line as fit, with a trailing comma, recursively. A long
``if``/``elif`` condition joined by ``or``/``and`` is parenthesised and split
at those operators. The text of every element is kept as it was, and a
wrapped statement is only used when it parses to exactly the same syntax tree
as the original, so wrapping can never change what the code does.
"""

from __future__ import annotations

import ast
import io
import keyword
import re
import textwrap
import tokenize

WIDTH = 99
_OPEN = {"(": ")", "[": "]", "{": "}"}
_CLOSE = set(_OPEN.values())


def _tokens(text: str):
    try:
        toks = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return None
    skip = (tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER, tokenize.INDENT, tokenize.DEDENT)
    return [t for t in toks if t.type not in skip]


def _is_op(tok, chars) -> bool:
    return tok.type == tokenize.OP and tok.string in chars


def _opener(toks, close: int) -> int:
    depth = 0
    for i in range(close, -1, -1):
        if _is_op(toks[i], _CLOSE):
            depth += 1
        elif _is_op(toks[i], _OPEN):
            depth -= 1
            if depth == 0:
                return i
    return -1


def _split_top(toks, a: int, b: int, word: str) -> list[tuple[int, int]]:
    """Token ranges of ``toks[a..b]`` separated by a top-level ``word`` (`,`, `or`, `and`)."""
    parts, depth, start = [], 0, a
    for j in range(a, b + 1):
        t = toks[j]
        if _is_op(t, _OPEN):
            depth += 1
        elif _is_op(t, _CLOSE):
            depth -= 1
        elif depth == 0 and t.string == word:
            parts.append((start, j - 1))
            start = j + 1 if word == "," else j
    parts.append((start, b))
    return [(x, y) for x, y in parts if x <= y]


def _source(text: str, toks, a: int, b: int) -> str:
    return text[toks[a].start[1] : toks[b].end[1]]


def _same_tree(original: str, lines: list[str], header: bool) -> bool:
    """Whether the wrapped lines parse to the same syntax tree as the original line.

    A line that is one element of a longer bracketed construct (``"id": x,``)
    does not parse alone, so it is compared inside each context it could be
    in: call arguments, a dict display, a list display.
    """
    suffix = "\n    pass\n" if header else "\n"

    def standalone(text: str) -> str:  # an `elif` header parses on its own as an `if`
        return "if" + text[4:] if text.startswith("elif") else text

    before_text = standalone(original.strip())
    after_text = standalone(textwrap.dedent("\n".join(lines)))
    contexts = [("", ""), ("f(\n", "\n)"), ("{\n", "\n}"), ("[\n", "\n]")]
    if before_text.endswith(","):  # an element (generated code writes no bare tuple `a, b,`)
        contexts = contexts[1:]
    for wrap_open, wrap_close in contexts:
        try:
            before = ast.dump(ast.parse(wrap_open + before_text + wrap_close + suffix))
        except SyntaxError:
            continue
        try:
            after = ast.dump(ast.parse(wrap_open + after_text + wrap_close + suffix))
        except SyntaxError:
            return False
        return before == after
    return False


def wrap_line(line: str, width: int = WIDTH) -> list[str]:
    """``line`` as lines of at most ``width`` characters where it can be split safely."""
    if len(line) <= width or line.lstrip().startswith("#"):
        return [line]
    out = _wrap(line, width)
    header = line.rstrip().endswith(":")
    if out is None or not _same_tree(line, out, header):
        out = [line]
    if all(len(part) <= width for part in out):
        return out
    split = [piece for part in out for piece in _split_string(part, width)]
    return split if _same_tree(line, split, header) else out


def _split_string(line: str, width: int) -> list[str]:
    """A line still too long for a string literal in it (a spec's text): its longest plain
    string goes in parentheses on lines of its own, as implicit concatenation of pieces cut
    after spaces where it needs more than one line."""
    if len(line) <= width:
        return [line]
    indent = line[: len(line) - len(line.lstrip())]
    text = line.strip()
    strings = [t for t in _tokens(text) or () if t.type == tokenize.STRING and t.string[0] in "'\""
               and t.start[0] == t.end[0] == 1 and not t.string.startswith(("'''", '"""'))]
    if not strings:
        return [line]
    tok = max(strings, key=lambda t: len(t.string))
    inner = indent + "    "
    pieces = _pieces(ast.literal_eval(tok.string), width - len(inner), tok.string[0])
    if not pieces:
        return [line]  # an empty string: `()` would be a tuple
    head = indent + text[: tok.start[1]] + "("
    return [head] + [inner + piece for piece in pieces] + [indent + ")" + text[tok.end[1] :]]


def _pieces(value: str, room: int, quote: str) -> list[str]:
    """``value`` as string literals of at most ``room`` characters (at least one character
    each), cut after spaces where it can be; each piece is written whole, so no escape is cut."""
    out: list[str] = []
    chunk = ""
    for word in re.findall(r"\S+\s*|\s+", value):
        while word:
            if len(_quoted(chunk + word, quote)) <= room:
                chunk, word = chunk + word, ""
            elif chunk:
                out.append(chunk)
                chunk = ""
            else:  # a word longer than a line: as much of it as fits
                cut = next((i for i in range(min(len(word), room), 1, -1) if len(_quoted(word[:i], quote)) <= room), 1)
                out.append(word[:cut])
                word = word[cut:]
    if chunk:
        out.append(chunk)
    return [_quoted(piece, quote) for piece in out]


def _quoted(value: str, quote: str = "'") -> str:
    """``repr(value)`` (line and paragraph separators escaped, as :func:`mapc.codegen.pysrc.literal`
    writes it) in ``quote`` marks when it can be."""
    text = repr(value).replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    if text[0] == quote or quote != '"':
        return text
    return '"' + text[1:-1].replace("\\'", "'").replace('"', '\\"') + '"'


def _wrap(line: str, width: int, in_brackets: bool = False) -> list[str] | None:
    """``in_brackets``: the line is inside an open bracket, where newlines may go anywhere."""
    if len(line) <= width:
        return [line]
    indent = line[: len(line) - len(line.lstrip())]
    text = line.strip()
    inner = indent + "    "
    first = text.split(None, 1)[0]
    if text.endswith(":") and first in ("if", "elif", "while", "for"):
        toks = _tokens(text[:-1])
        if not toks or len(toks) < 2:
            return None
        for word in ("or", "and") if first != "for" else ():
            parts = _split_top(toks, 1, len(toks) - 1, word)
            if len(parts) > 1:
                lines = [f"{indent}{first} ("]
                for x, y in parts:
                    part = inner + _source(text, toks, x, y)
                    lines += _wrap(part, width, in_brackets=True) or [part]
                return lines + [f"{indent}):"]
        # `if f(...):` -> split the call's arguments, keeping the colon on the last line
        lines = _wrap(indent + text[:-1], width - 1)
        if lines is None or len(lines) < 2:
            return None
        return lines[:-1] + [lines[-1] + ":"]
    trailing = ""
    if text.endswith(","):
        text, trailing = text[:-1], ","
    toks = _tokens(text)
    if not toks:
        return None
    splittable = trailing or in_brackets  # inside brackets a newline may go anywhere
    if splittable:
        # lowest precedence first, as black does: `a or (b)` splits at `or`, not inside `(b)`
        lines = _split_operators(indent, text, toks, trailing, width, _LOGICAL)
        if lines is not None:
            return lines
    exploded = _explode(indent, text, toks, trailing, width) if _is_op(toks[-1], _CLOSE) else None
    if exploded is None and splittable:
        return _split_operators(indent, text, toks, trailing, width, _ARITHMETIC)
    if exploded is None and not in_brackets:
        return _parenthesized(indent, text, width)
    return exploded


_VALUE_STATEMENT = re.compile(r"(return |[A-Za-z_][\w.]* = )(?!\()")


def _parenthesized(indent: str, text: str, width: int) -> list[str] | None:
    """``x = a if c else b`` (or ``return ...``) too long, not ending in a bracket: its value in
    parentheses, split inside them as black does (``x = (``, the value's parts, ``)``)."""
    m = _VALUE_STATEMENT.match(text)
    if m is None:
        return None
    inner = indent + "    " + text[m.end():]
    body = _wrap(inner, width, in_brackets=True)
    if body is None or len(body) < 2:
        return None
    return [indent + m.group(1) + "("] + body + [indent + ")"]


def _explode(indent: str, text: str, toks, trailing: str, width: int) -> list[str] | None:
    """Split the final bracket group: one element per line, with a trailing comma."""
    inner = indent + "    "
    close = len(toks) - 1
    open_at = _opener(toks, close)
    if open_at < 0 or open_at + 1 > close - 1:
        return None
    bracket = toks[open_at].string
    before = toks[open_at - 1] if open_at > 0 else None
    after_name = before is not None and (
        (before.type == tokenize.NAME and not keyword.iskeyword(before.string))
        or before.type == tokenize.STRING
        or _is_op(before, _CLOSE)
    )
    items = _split_top(toks, open_at + 1, close - 1, ",")
    had_comma = _is_op(toks[close - 1], ",")
    if bracket == "[" and after_name:
        return None  # a subscript: a trailing comma would make it a tuple index
    if bracket == "(" and not after_name and len(items) == 1 and not had_comma:
        # a parenthesised expression, not a tuple: split it at its operators, no commas
        content = inner + _source(text, toks, open_at + 1, close - 1)
        body = _tokens(content.strip())
        split = _split_operators(inner, content.strip(), body, "", width) if body else None
        if split is None:
            return None
        head = indent + text[: toks[open_at].end[1]]
        return [head] + split + [indent + text[toks[close].start[1] :] + trailing]
    head = indent + text[: toks[open_at].end[1]]
    tail = indent + text[toks[close].start[1] :] + trailing
    body = inner + _source(text, toks, open_at + 1, close - 1)
    if not had_comma and len(body) <= width and len(tail) <= width:
        # black's first choice: the bracket's contents on one line of their own
        return [head, body, tail]
    # as many elements a line as fit (a reviewer reads fewer lines); one too long for a line
    # of its own is split in turn
    lines = [head]
    row = ""
    for x, y in items:
        item = _source(text, toks, x, y) + ","
        if len(inner + item) > width:
            if row:
                lines.append(inner + row)
                row = ""
            lines += _wrap(inner + item, width, in_brackets=True) or [inner + item]
        elif row and len(inner + row + " " + item) > width:
            lines.append(inner + row)
            row = item
        else:
            row = f"{row} {item}" if row else item
    if row:
        lines.append(inner + row)
    lines.append(indent + text[toks[close].start[1] :] + trailing)
    return lines


_LOGICAL = (("or",), ("and",), ("if", "else"), ("==", "!=", "<", "<=", ">", ">="))
_ARITHMETIC = (("+",),)


def _split_operators(
    indent: str, text: str, toks, trailing: str, width: int, groups=_LOGICAL + _ARITHMETIC
) -> list[str] | None:
    """An element inside brackets, split before its top-level ``or``/``and``/``if``/``else``.

    Inside brackets a newline may stand between any two tokens, so no
    parentheses are needed: ``"id": a or b,`` becomes two lines.
    """
    for words in groups:
        cuts = [
            j
            for j in range(1, len(toks))
            if toks[j].string in words
            and toks[j].type in (tokenize.NAME, tokenize.OP)
            and _depth(toks, j) == 0
        ]
        if cuts:
            starts = [0] + cuts
            ends = cuts + [len(toks)]
            pieces = [indent + text[toks[a].start[1] : toks[b - 1].end[1]] for a, b in zip(starts, ends)]
            pieces[-1] += trailing
            lines = []
            for piece in pieces:
                lines += (_wrap(piece, width, in_brackets=True) if len(piece) > width else None) or [piece]
            return lines
    return None


def _depth(toks, j: int) -> int:
    depth = 0
    for t in toks[:j]:
        if _is_op(t, _OPEN):
            depth += 1
        elif _is_op(t, _CLOSE):
            depth -= 1
    return depth
