"""The one machine-output contract of every command (docs/cli.md, D98).

A command's result on one input is an :class:`Outcome`: its diagnostics, its payload (the
keys docs/cli.md lists for that command) and how to say it as text. As JSON it is the
envelope ``{"ok", "diagnostics", **payload}``; several inputs (sources, specs of the project
configuration) make one envelope whose ``results`` are theirs, each an envelope too, and
whose ``ok`` is theirs all. ``ok`` is false exactly when a diagnostic is an error, so the
formats made of diagnostics alone (GitHub annotations, SARIF) carry every failure.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from mapc.core.diagnostics import Diagnostic

#: ``--format`` values; ``--json`` is ``--format json``.
FORMATS = ("text", "json", "github", "sarif")
EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2


@dataclass
class Outcome:
    """One input's result: diagnostics, payload, and the text the command prints for it."""

    diagnostics: list[Diagnostic] = field(default_factory=list)
    payload: dict[str, Any] = field(default_factory=dict)
    text: Callable[[], None] | None = None  # prints the human output (``--format text``)

    @property
    def ok(self) -> bool:
        return not any(d.is_error for d in self.diagnostics)

    def envelope(self) -> dict[str, Any]:
        return {"ok": self.ok, "diagnostics": [d.to_dict() for d in self.diagnostics], **self.payload}


def many(outcomes: Iterable[Outcome], diagnostics: Iterable[Diagnostic] = (), **payload) -> dict[str, Any]:
    """The envelope of several inputs: ``results`` holds each one's envelope."""
    results = [o.envelope() for o in outcomes]
    diags = list(diagnostics)
    ok = all(r["ok"] for r in results) and not any(d.is_error for d in diags)
    return {"ok": ok, "diagnostics": [d.to_dict() for d in diags], **payload, "results": results}


def failure(code: str, message: str, **where) -> dict[str, Any]:
    """The envelope of a usage or internal error (exit 2): no payload, one diagnostic."""
    return {"ok": False, "diagnostics": [Diagnostic(code, message, **where).to_dict()]}


def exit_code(envelope: dict[str, Any]) -> int:
    return EXIT_OK if envelope["ok"] else EXIT_FINDINGS


def diagnostics_of(envelope: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every diagnostic in the envelope, its results' included, in order."""
    yield from envelope.get("diagnostics", ())
    for result in envelope.get("results", ()):
        if isinstance(result, dict):
            yield from diagnostics_of(result)


def render(envelope: dict[str, Any], fmt: str, command: str, exit_status: int | None = None) -> str:
    """The envelope as ``fmt`` (json, github or sarif), ending with a newline when not empty."""
    if fmt == "json":
        return json.dumps(envelope, ensure_ascii=False) + "\n"
    diags = list(diagnostics_of(envelope))
    if fmt == "github":
        from mapc.tools.annotations import annotations

        return "".join(line + "\n" for line in annotations(diags, command))
    if fmt == "sarif":
        from mapc.tools.sarif import sarif_log

        status = exit_status if exit_status is not None else exit_code(envelope)
        return json.dumps(sarif_log(diags, command, status), ensure_ascii=False, indent=2) + "\n"
    raise ValueError(f"not a machine format: {fmt!r}")

