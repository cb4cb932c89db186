"""Spec front end: YAML with positions -> JSON Schema pass -> semantic pass -> IR."""

from __future__ import annotations

from pathlib import Path

from mapc.core.diagnostics import MAX_REPORTED, Diagnostics
from mapc.spec import ir
from mapc.spec.loader import Budget, LoadedSpec, load_file, load_text
from mapc.spec.schema_check import check_schema
from mapc.spec.semantic import Builder

__all__ = ["load_spec", "load_spec_text", "ir", "LoadedSpec"]


def _compile(loaded: LoadedSpec, diags: Diagnostics, base_dir: Path) -> ir.Spec | None:
    if not diags.ok:
        return None  # the YAML could not be read; a document that is just `null` goes on to the schema
    schema_diags = check_schema(loaded)
    diags.extend(schema_diags)
    builder = Builder(loaded, base_dir)
    if schema_diags:
        # still report what the semantic layer finds elsewhere: every error at once
        if isinstance(loaded.data, dict):
            builder.build(tolerant=True)
            reported = {d.path for d in schema_diags}
            diags.extend(d for d in builder.diags if not _under(d.path, reported))
        return None
    spec = builder.build()
    diags.extend(builder.diags)
    return spec if diags.ok else None


def _under(path: str | None, reported: set) -> bool:
    """Whether ``path`` is, or lies inside, a path the schema layer already reported."""
    if path is None:
        return False
    # the path and each of its ancestors (`a.b[2].c` -> a, a.b, a.b[2]): a set lookup each
    return path in reported or any(path[:i] in reported for i, ch in enumerate(path) if ch in ".[")


def load_spec(path: str | Path) -> tuple[ir.Spec | None, Diagnostics]:
    """Load, validate and lower a spec file. The spec is None when there are errors."""
    budget = Budget()  # one for the spec and its whole `extends` chain
    loaded, found = load_file(path, budget)
    diags = Diagnostics(limit=MAX_REPORTED)
    diags.extend(found)
    if loaded.data is not None and diags.ok:
        from mapc.spec.compose import resolve_extends  # composition of library specs

        loaded = resolve_extends(loaded, diags, budget=budget)
    spec = _compile(loaded, diags, Path(path).resolve().parent)
    return spec, diags


def load_spec_text(text: str, file: str = "<spec>", base_dir: str | Path = ".") -> tuple[ir.Spec | None, Diagnostics]:
    """Same as :func:`load_spec` for text already in memory (tests, fuzzing)."""
    loaded, found = load_text(text, file)
    diags = Diagnostics(limit=MAX_REPORTED)
    diags.extend(found)
    spec = _compile(loaded, diags, Path(base_dir).resolve())
    return spec, diags
