"""Pure rules for names and paths a spec writes: task ids and tags (RELAI's rules), file
paths the operating system can look up, `{placeholder}` templates.

No context: the targets and host validators use them too (``mapc.spec.semantic``
re-exports them).
"""

from __future__ import annotations

import re
import string

from mapc.spec.schema_check import suggest

# RELAI naming rules (contracts/relai.md)
_TAG_RE = re.compile(r"^[A-Za-z0-9._-]+$")
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")
def task_id_problem(task_id: str) -> str | None:
    """Why a task id breaks RELAI's rules, or None when it is fine."""
    if not task_id:
        return "must not be empty"
    if task_id == "*":
        return "must not be exactly `*` (that selects every task)"
    if task_id.startswith("/"):
        return "must not be absolute"
    if "::" in task_id:
        return "must not contain `::` (it separates adapter and task in selectors)"
    if "," in task_id:
        return "must not contain a comma"
    if "\\" in task_id:
        return "must not contain a backslash"
    if _CONTROL_RE.search(task_id):
        return "must not contain control characters"
    for seg in task_id.split("/"):
        if seg in ("", ".", ".."):
            return "must not have empty, `.` or `..` path segments"
    return None


def path_problem(path: str) -> str | None:
    """Why the operating system could not even look ``path`` up (a NUL, names over its limits)."""
    if "\0" in path:
        return "contains a NUL character"
    if len(path.encode("utf-8", "surrogatepass")) > 4096:
        return "is longer than 4096 bytes"
    if any(len(part.encode("utf-8", "surrogatepass")) > 255 for part in re.split(r"[/\\]", path)):
        return "has a part longer than 255 bytes (the file system's limit for one name)"
    return None


def tag_problem(tag: str) -> str | None:
    """Why a tag breaks RELAI's rules, or None when it is fine."""
    if not _TAG_RE.match(tag or ""):
        return "tags use ASCII letters, digits, `.`, `_` and `-` only"
    if tag in (".", ".."):
        return "a tag must not be `.` or `..`"
    return None


def template_problem(text: str, allowed) -> str | None:
    """Why ``text`` is not a `{placeholder}` template over ``allowed`` names, or None."""
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError as exc:
        return f"invalid placeholder syntax: {exc} (write {{{{ and }}}} for literal braces)"
    for _, field, spec, conv in parsed:
        if field is None:
            continue
        if field not in allowed:
            hint = suggest(field, allowed)
            return f"unknown placeholder {{{field}}}; known: " + ", ".join(f"{{{a}}}" for a in allowed) + (
                f" ({hint})" if hint else "")
        if spec or conv:
            return f"placeholder {{{field}}} takes no format spec or conversion"
    return None
