"""The values the public API hands back (:mod:`mapc.api` re-exports them): a loaded
:class:`Spec`, a :class:`SpecError`, one source's :class:`RunResult`, and the two steps that
make them. They live in the pipeline so that the pipeline's own parts (parallel workers,
the picklable :class:`~mapc.pipeline.mapper.Mapper`) return them without importing the API."""

from __future__ import annotations

import io
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Union

if TYPE_CHECKING:
    from mapc.core.diagnostics import Diagnostic, Diagnostics
    from mapc.spec import ir

PathLike = Union[str, "os.PathLike[str]"]


class SpecError(ValueError):
    """A spec with errors. ``diagnostics`` holds every problem found (file, line, column,
    spec path, message, hint); ``str()`` is the same text ``mapc check`` prints."""

    def __init__(self, path: PathLike, diagnostics: Diagnostics):
        from mapc.core.diagnostics import format_text

        self.path = Path(path)
        self.diagnostics = diagnostics
        super().__init__(format_text(diagnostics.errors or diagnostics.items) or f"{path}: not a valid spec")


@dataclass(frozen=True)
class Spec:
    """A loaded spec without errors; ``warnings`` lists what it may want to fix."""

    path: Path
    ir: ir.Spec = field(repr=False)  # the compiled spec (internal; its shape may change)
    diagnostics: Diagnostics = field(repr=False)
    target: str | None = None  # the target whose rules it was also checked against

    @property
    def name(self) -> str:
        return self.ir.name

    @property
    def format(self) -> str:
        """The source format id (``source.format``)."""
        return self.ir.source.format

    @property
    def warnings(self) -> list[Diagnostic]:
        return self.diagnostics.warnings


@dataclass
class RunResult:
    """One source mapped with a spec: what ``mapc run`` prints for it."""

    source: str
    ok: bool
    error: str | None = None  # one line, when the source could not be mapped
    warnings: int = 0  # recoverable omissions (records or fields skipped)
    warning_messages: list[str] = field(default_factory=list)  # the first few, with their location
    ndjson: bytes = b""  # the canonical NDJSON (empty when written to ``out``)

    @property
    def records(self) -> list[dict[str, Any]]:
        """The canonical records (parsed from ``ndjson``)."""
        return [json.loads(line) for line in self.ndjson.splitlines() if line.strip()]

    @property
    def record_count(self) -> int:
        """Records mapped, not counting the final ``complete`` record."""
        lines = self.ndjson.splitlines()
        complete = bool(lines) and json.loads(lines[-1]).get("record_type") == "complete"
        return len(lines) - 1 if complete else len(lines)


def load_spec(path: PathLike, *, target: str | None = None) -> Spec:
    """Load and check a spec (with ``target``: also that host's rules), as ``mapc check`` does.

    Raises :class:`SpecError` when the spec has errors, and ``UsageError`` for an unknown
    target.
    """
    from mapc.pipeline.build import load_checked, resolve_target

    spec, diags = load_checked(path, resolve_target(target) if target else None)
    if spec is None:
        raise SpecError(path, diags)
    return Spec(Path(path), spec, diags, target)


def map_one(spec: ir.Spec, ns: dict, source: PathLike, out: BinaryIO | None = None) -> RunResult:
    """Map ``source`` with the compiled mapping ``ns``: the ``RunResult`` ``mapc.run`` gives
    (the NDJSON kept, or streamed to ``out``)."""
    from mapc.pipeline.build import run_mapping

    buf = out if out is not None else io.BytesIO()
    ok, error, st = run_mapping(spec, Path(source), buf, ns=ns)
    return RunResult(str(source), ok, error, st.warnings, list(st.messages),
                     buf.getvalue() if out is None else b"")
