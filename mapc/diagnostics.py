"""One diagnostic type for every stage: loading, schema, semantics, build, validate.

A diagnostic says where (file, 1-based line and column, spec path such as
``records.events.rules[2].when``), what (a stable ``code`` plus a message) and,
where possible, how to fix it (``hint``). Stages collect diagnostics instead
of raising, so a user sees every problem at once.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable

ERROR = "error"
WARNING = "warning"


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
            text += f"\n  {self.line:>4} | {src}"
            if self.column is not None:
                pad = "".join("\t" if ch == "\t" else " " for ch in src[: self.column - 1])
                text += f"\n       | {pad}^"
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text


@dataclass
class Diagnostics:
    """An ordered collection that stages append to."""

    items: list[Diagnostic] = field(default_factory=list)

    def add(self, diag: Diagnostic) -> None:
        if diag not in self.items:
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
