"""Compiling a spec's expressions and `{...}` templates, within the spec's budget.

Errors point at the column inside the expression; a read of a field the record
behind a variable never has (``$case.model``) is reported, since it is always null.
"""

from __future__ import annotations

import re

from mapc.core import fieldpath
from mapc.expressions import ExpressionError, compile_expression
from mapc.expressions.errors import apostrophe_hint
from mapc.spec import ir
from mapc.spec.checks.context import Context
from mapc.spec.schema_check import suggest

#: Longest expression (or template placeholder) compiled; real specs use well under 1 KiB.
MAX_EXPRESSION_CHARS = 16 * 1024
#: All expressions of a spec together, each counted as at least EXPRESSION_MIN_COST characters
#: (compiling one costs about that much however short it is). The library's largest spec
#: uses about 4 KiB; this bounds compiling at under a second (bench/hostile_specs.py).
MAX_SPEC_EXPRESSION_CHARS = 32 * 1024
EXPRESSION_MIN_COST = 32
#: The fields of the record (or value) a variable holds; any other always reads null.
VARIABLE_FIELDS = {
    "run": ("record_type", "id", "name", "started_at", "metadata"),
    "case": ("record_type", "id", "run_id", "name", "input", "metadata"),
    "group": ("record_type", "id", "case_id", "name", "metadata"),
    "trajectory": ("record_type", "id", "group_id", "parent_id", "branch_id", "status", "termination",
                   "metadata"),
    "source": ("path", "name", "stem", "line", "byte_offset", "byte_length"),
    "merged": ("key", "lines", "first_line", "last_line"),
}
_EXPR_CODES = {
    "syntax": "expression_syntax",
    "unknown-function": "unknown_function",
    "unknown-variable": "unknown_variable",
    "invalid-arity": "invalid_arity",
    "invalid-type": "invalid_argument",
    "invalid-value": "invalid_argument",
}


def compile_expr(ctx: Context, text: str, path: tuple, variables, *, offset: int = 0, raw_path: tuple | None = None,
                 template: bool = False) -> ir.Expr | None:
    """Compile one expression; ``offset`` locates it inside a larger string (``template``)."""
    where = raw_path or path
    if len(text) > MAX_EXPRESSION_CHARS:  # compiling takes time in proportion: bound it
        ctx.diags.append(ctx.spec.diag(
            "expression_too_long", path, f"the expression is {len(text)} characters long; the limit is "
            f"{MAX_EXPRESSION_CHARS}", hint="name its parts with `let` variables", mark=ctx.spec.mark(where)))
        return None
    if not spend(ctx, text, path, where):
        return None
    try:
        compiled = compile_expression(text, variables=frozenset(variables))
    except ExpressionError as exc:
        mark = ctx.spec.expression_mark(where, offset + max(exc.column or 0, 0))
        hint = exc.hint
        if exc.kind == "unknown-variable":
            hint = _stream_variable_hint(exc.message) or hint
        if exc.kind in ("syntax", "invalid-arity"):  # `'it's'`, or `'it''s'` (two arguments)
            hint = apostrophe_hint(text) or hint
        if template and hint is None and exc.kind == "syntax":  # `{% ... %}` meant as text
            hint = "a template's `{...}` holds an expression; write `{{` and `}}` for literal braces"
        ctx.diags.append(
            ctx.spec.diag(_EXPR_CODES.get(exc.kind, "expression_error"), path, exc.message,
                          hint=hint, mark=mark)
        )
        return None
    unknown_record_fields(ctx, text, compiled.field_paths, path, where, offset)
    mark = ctx.spec.mark(where)
    return ir.Expr(text=text, path=path, compiled=compiled, line=mark.line, file=mark.file)


def unknown_record_fields(ctx: Context, text: str, field_paths, path: tuple, where: tuple, offset: int) -> None:
    """``$case.model``: a field the record a variable holds never has, so it always maps to null."""
    for read in field_paths:
        segs = fieldpath.segments(read) if read.startswith("$") else ("",)
        name = segs[0][1:]
        known = tuple(ctx.carry_names) if name == "carry" else VARIABLE_FIELDS.get(name)
        field = segs[1] if len(segs) > 1 and segs[1] not in (fieldpath.ANY, fieldpath.STAR) else ""
        if known is None or not field or field in known or name in ctx.bound:
            continue
        found = re.search(r"\$" + name + r"\s*\.\s*[\"']?(" + re.escape(field) + ")", text)
        column = found.start(1) if found else 0
        ctx.diags.append(ctx.spec.diag(
            "unknown_field", path, f"${name} has no field `{field}`: it would always be null",
            hint=" ".join(filter(None, [suggest(field, known), f"${name} has {', '.join(known)}"
                                        + ("; other values go in its metadata" if "metadata" in known else "")])),
            mark=ctx.spec.expression_mark(where, offset + column)))


def spend(ctx: Context, text: str, path: tuple, where: tuple | None = None) -> bool:
    """Count ``text`` toward MAX_SPEC_EXPRESSION_CHARS; False (reported once) past it."""
    before = ctx.expression_chars
    ctx.expression_chars += max(len(text), EXPRESSION_MIN_COST)
    if ctx.expression_chars <= MAX_SPEC_EXPRESSION_CHARS:
        return True
    if before <= MAX_SPEC_EXPRESSION_CHARS:
        ctx.diags.append(ctx.spec.diag(
            "expressions_too_large", path, f"the spec's expressions and templates add up to more than "
            f"{MAX_SPEC_EXPRESSION_CHARS} characters (each counts at least {EXPRESSION_MIN_COST}); "
            "the rest are not checked", mark=ctx.spec.mark(where or path),
            hint="a spec needs a few hundred short expressions at most; keep data in tables or tasks"))
    return False


def build_template(ctx: Context, text: str, path: tuple, variables) -> tuple | None:
    """Split ``"text {expr} text"`` into parts; ``{{`` and ``}}`` are literal braces."""
    if not spend(ctx, text, path):  # templates count like expressions: they are scanned and compiled
        return None
    parts: list = []
    buf = ""
    i = 0
    ok = True
    while i < len(text):
        brace = _BRACE.search(text, i)  # jump over plain text
        if brace is None:
            buf += text[i:]
            break
        buf += text[i : brace.start()]
        i = brace.start()
        ch = text[i]
        if text.startswith("{{", i) or text.startswith("}}", i):
            buf += ch
            i += 2
            continue
        if ch == "}":
            ctx.diags.append(ctx.spec.diag("template_syntax", path, "unmatched `}` in template",
                                           hint="write `}}` for a literal brace",
                                           mark=ctx.spec.expression_mark(path, i)))
            return None
        if ch == "{":
            end = _find_close(text, i + 1)
            if end < 0:
                ctx.diags.append(ctx.spec.diag("template_syntax", path, "unclosed `{` in template",
                                               hint="close it with `}`, or write `{{` for a literal brace",
                                               mark=ctx.spec.expression_mark(path, i)))
                return None
            if buf:
                parts.append(buf)
                buf = ""
            inner = text[i + 1 : end]
            lead = len(inner) - len(inner.lstrip())
            e = compile_expr(ctx, inner.strip(), path, variables, offset=i + 1 + lead, template=True)
            if e is None:
                ok = False
            else:
                parts.append(e)
            i = end + 1
            continue
    if buf:
        parts.append(buf)
    return tuple(parts) if ok else None


def _stream_variable_hint(message: str) -> str | None:
    """The fix for ``$carry`` or ``$merged`` where no loop above declares them."""
    if re.search(r"\$carry\b", message):
        return ("$carry holds what `carry:` on a loop declares (e.g. `records.events.carry: {model: "
                "message.model}`), visible at that loop's level and below")
    if re.search(r"\$merged\b", message):
        return "$merged describes the element a loop's `merge:` made: it exists at that loop's level and below"
    return None


_BRACE = re.compile(r"[{}]")
_PLACEHOLDER_SPECIAL = re.compile(r"[\\'\"`{}]")


def _find_close(text: str, start: int) -> int:
    """Index of the `}` closing a template placeholder, skipping JMESPath quotes."""
    depth = 0
    i = start
    quote = None
    while i < len(text):
        special = _PLACEHOLDER_SPECIAL.search(text, i)  # only these characters matter
        if special is None:
            return -1
        i = special.start()
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if ch == quote:
                quote = None
        elif ch in "'\"`":
            quote = ch
        elif ch == "{":
            depth += 1
        elif ch == "}":
            if depth == 0:
                return i
            depth -= 1
        i += 1
    return -1

