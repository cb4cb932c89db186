"""One diagnostic type for every stage: loading, schema, semantics, build, validate.

A diagnostic says where (file, 1-based line and column, spec path such as
``records.events.rules[2].when``), what (a stable ``code`` plus a message) and,
where possible, how to fix it (``hint``). Stages collect diagnostics instead
of raising, so a user sees every problem at once.
"""

from __future__ import annotations

import difflib

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable

ERROR = "error"
WARNING = "warning"
#: Characters of a source line shown under a diagnostic.
SHOWN_LINE = 120


@dataclass(frozen=True)
class Diagnostic:
    code: str
    message: str
    severity: str = ERROR
    file: str | None = None
    line: int | None = None
    column: int | None = None
    path: str | None = None
    hint: str | None = None

    @property
    def is_error(self) -> bool:
        return self.severity == ERROR

    def to_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v is not None}

    def location(self) -> str:
        parts = [self.file or "<spec>"]
        if self.line is not None:
            parts.append(str(self.line))
            if self.column is not None:
                parts.append(str(self.column))
        return ":".join(parts)

    def format(self, source_lines: list[str] | None = None) -> str:
        """Compiler-style text: ``file:line:col: error[code] path: message``."""
        where = f" {self.path}:" if self.path else ""
        text = f"{self.location()}: {self.severity}[{self.code}]{where} {self.message}"
        if source_lines is not None and self.line is not None and 0 < self.line <= len(source_lines):
            src = source_lines[self.line - 1].rstrip("\n")
            column = self.column
            if len(src) > SHOWN_LINE:  # a window around the column, not megabytes of one line
                start = max(0, min((column or 1) - 1 - SHOWN_LINE // 2, len(src) - SHOWN_LINE))
                cut = src[start : start + SHOWN_LINE]
                src = ("…" if start else "") + cut + ("…" if start + SHOWN_LINE < len(src) else "")
                column = None if column is None else column - start + (1 if start else 0)
            text += f"\n  {self.line:>4} | {src}"
            if column is not None:
                pad = "".join("\t" if ch == "\t" else " " for ch in src[: column - 1])
                text += f"\n       | {pad}^"
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text


def shown(value, limit: int = 80) -> str:
    """``repr(value)`` for a message, cut to ``limit`` characters: a spec value may be megabytes."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


#: Errors (and, separately, warnings) reported for one spec. Past this many the rest are
#: the same mistake repeated; the spec stages stop early (:class:`Findings`), so a spec with
#: a hundred thousand mistakes is checked as fast as one with a hundred.
MAX_REPORTED = 100


class TooManyErrors(Exception):
    """Raised by :class:`Findings` when a stage has found more errors than are reported."""


class Findings(list):
    """One stage's diagnostics: appending error number MAX_REPORTED + 1 stops the stage."""

    def __init__(self, items: Iterable[Diagnostic] = ()):
        super().__init__()
        self.error_count = 0
        self.extend(items)

    def append(self, diag: Diagnostic) -> None:
        super().append(diag)
        if diag.is_error:
            self.error_count += 1
            if self.error_count > MAX_REPORTED:
                raise TooManyErrors()

    def extend(self, diags: Iterable[Diagnostic]) -> None:
        for d in diags:
            self.append(d)


@dataclass
class Diagnostics:
    """An ordered collection that stages append to; a repeated diagnostic is kept once.

    With ``limit``, at most that many errors and that many warnings are kept; the first
    error past it is replaced by one ``too_many_errors`` error at its place."""

    items: list[Diagnostic] = field(default_factory=list)
    limit: int | None = None
    _seen: set = field(default_factory=set, init=False, repr=False, compare=False)
    _counts: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def add(self, diag: Diagnostic) -> None:
        if diag in self._seen:  # a set: a list scan made 10,000 findings take minutes
            return
        self._seen.add(diag)
        if self.limit is not None:
            count = self._counts.get(diag.severity, 0)
            self._counts[diag.severity] = count + 1
            if count == self.limit and diag.is_error:
                diag = Diagnostic(code="too_many_errors", message=f"more than {self.limit} errors; "
                                  "checking stopped here", file=diag.file, line=diag.line,
                                  column=diag.column, path=diag.path, hint="fix these and check again")
            elif count >= self.limit:
                return
        self.items.append(diag)

    def extend(self, diags: Iterable[Diagnostic]) -> None:
        for d in diags:
            self.add(d)

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.items if d.is_error]

    @property
    def warnings(self) -> list[Diagnostic]:
        return [d for d in self.items if not d.is_error]

    @property
    def ok(self) -> bool:
        return not self.errors

    def sorted(self) -> list[Diagnostic]:
        return sorted(
            self.items,
            key=lambda d: (d.file or "", d.line or 0, d.column or 0, d.path or "", d.code),
        )

    def __iter__(self):
        return iter(self.sorted())

    def __len__(self) -> int:
        return len(self.items)


def format_text(diags: Iterable[Diagnostic]) -> str:
    """Human text with the offending source line under each diagnostic."""
    cache: dict[str, list[str] | None] = {}
    out = []
    for d in diags:
        lines = None
        if d.file:
            if d.file not in cache:
                try:
                    cache[d.file] = Path(d.file).read_text(encoding="utf-8").splitlines()
                except (OSError, UnicodeDecodeError):
                    cache[d.file] = None
            lines = cache[d.file]
        out.append(d.format(lines))
    return "\n".join(out)


def to_json(diags: Iterable[Diagnostic], **extra) -> str:
    diags = list(diags)
    payload = {
        "ok": not any(d.is_error for d in diags),
        **extra,
        "diagnostics": [d.to_dict() for d in diags],
    }
    return json.dumps(payload, indent=2, ensure_ascii=False)


def format_path(parts: Iterable[str | int]) -> str:
    """``('records', 'events', 'rules', 2, 'when')`` -> ``records.events.rules[2].when``."""
    out = ""
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        elif out:
            out += f".{p}"
        else:
            out = str(p)
    return out


def suggest(word: str, candidates: Iterable[str]) -> str | None:
    """``did you mean 'x'?`` for the closest candidate, if one is close."""
    names = sorted(set(candidates))
    # difflib's ratio is 2*matches/(len(word)+len(name)) <= 2*len(name)/(len(word)+len(name)):
    # a word over 2.4 times longer than every name cannot reach the cutoff (and would cost
    # time in proportion to its length, megabytes in a hostile spec)
    if not names or len(word) * 3 > 7 * max(map(len, names)):
        return None
    match = difflib.get_close_matches(word, names, n=1, cutoff=0.6)
    return f"did you mean {match[0]!r}?" if match else None
