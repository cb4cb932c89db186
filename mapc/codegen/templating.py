"""Jinja2 rendering that cannot interpolate spec text as code.

Templates under ``mapc/targets/<name>/templates/`` lay out generated files. Every value a
template prints must be marked by one of the filters below, which decide how
the text is embedded:

- ``pyrepr``: a Python literal (``repr``), safe for any string;
- ``comment``: one line of comment text, control characters escaped;
- ``code``: text that mapc itself generated (compiled functions, the runtime);
- ``yaml_str``: a double-quoted scalar that RLViz's small YAML parser reads back;
- ``json``: compact JSON; ``json_pretty``: indented JSON;
- ``md``: Markdown text with HTML and line breaks neutralised.

A plain ``{{ value }}`` without one of these raises at render time, so a new
template cannot accidentally paste a spec string into code.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jinja2

from mapc.codegen.pysrc import comment_text, literal


class Safe(str):
    """Text that a filter has already made safe for its destination."""


def _finalize(value: Any) -> Any:
    if isinstance(value, Safe):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    raise jinja2.TemplateError(
        f"template printed an unmarked value {str(value)[:40]!r}; pipe it through "
        "pyrepr, comment, code, yaml_str, json or md"
    )


def _yaml_str(value: Any) -> Safe:
    # RLViz's parser reads "..." with JSON escapes, so JSON string syntax is exact. Characters
    # beyond U+FFFF stay as UTF-8: YAML parsers read a \ud83d\ude00 escape pair as two lone
    # surrogates, JSON parsers as one character; the raw character means the same to both.
    out = []
    for ch in str(value):
        if ch in '"\\':
            out.append("\\" + ch)
        elif " " <= ch <= "~" or ord(ch) > 0xFFFF:
            out.append(ch)
        else:
            out.append(f"\\u{ord(ch):04x}")
    return Safe('"' + "".join(out) + '"')


def _md(value: Any) -> Safe:
    text = " ".join(str(value).split())
    # control and format characters (ESC, NUL, bidi overrides) are shown, not acted on
    text = "".join(ch if ch.isprintable() else f"\\u{ord(ch):04x}" for ch in text)
    for ch, rep in (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ("`", "'")):
        text = text.replace(ch, rep)
    return Safe(text)


def environment(folder: str | Path | None = None) -> jinja2.Environment:
    """A Jinja environment on a target's template ``folder`` (none: templates from strings only)
    with mapc's escaping filters (``Target.render_template`` uses it, for built-in targets and
    those of other packages)."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(folder)) if folder is not None else None,
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
        finalize=_finalize,
    )
    env.filters["pyrepr"] = lambda v: Safe(literal(v))
    env.filters["comment"] = lambda v, limit=100: Safe(comment_text(v, limit))
    env.filters["code"] = lambda v: Safe(v)
    env.filters["yaml_str"] = _yaml_str
    env.filters["json"] = lambda v: Safe(json.dumps(v, ensure_ascii=False, separators=(",", ":")))
    env.filters["json_pretty"] = lambda v: Safe(json.dumps(v, ensure_ascii=False, indent=2))
    env.filters["md"] = _md
    return env


def template_digest(folder: str | Path | None = None) -> str:
    """SHA-256 over the template files of a target's ``folder`` (none: the digest of no file),
    for lock files: did the templates change?"""
    import hashlib

    h = hashlib.sha256()
    root = Path(folder) if folder else None
    files = root.rglob("*") if root is not None and root.is_dir() else ()
    for path in sorted(p for p in files if p.is_file() and "__pycache__" not in p.parts):
        rel = path.relative_to(root).as_posix()
        h.update(f"{len(rel)}:{rel}:".encode())
        h.update(path.read_bytes())
    return h.hexdigest()
