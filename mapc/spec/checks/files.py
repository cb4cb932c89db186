"""Files a spec reads (fixtures, a tasks file): regular files inside the folder of the
spec file that names them; each one read counts in the spec's digest."""

from __future__ import annotations

from pathlib import Path

from mapc.core import safeio
from mapc.spec import ir
from mapc.spec.checks.context import Context
from mapc.spec.checks.names import path_problem
from mapc.spec.schema import MAX_FIXTURES


def input_file(ctx: Context, rel: str, path: tuple, what: str) -> Path | None:
    """A file the spec reads (fixture, tasks file), resolved: a regular file inside the
    folder of the spec file that names it (or an allowed root); else a diagnostic."""
    if path_problem(rel):
        ctx.error("invalid_value", path, f"the {what} path {path_problem(rel)}")
        return None
    folder = ctx.dir_of(path)
    try:
        found = safeio.contained_file(folder / rel, safeio.input_roots(folder))
    except FileNotFoundError:
        ctx.error("missing_file", path, f"{what} not found: {rel}",
                  hint=f"paths are relative to the spec's folder ({folder})")
        return None
    except safeio.UnsafePath as exc:
        outside = "spec's folder" in str(exc)
        ctx.error("file_outside_spec" if outside else "not_a_file", path,
                  f"the {what} {rel} {exc}; mapc reads only regular files inside the spec's folder",
                  hint=safeio.outside_hint(folder) if outside else
                  f"name a regular file (a named pipe, device or folder cannot be a {what}); "
                  "copy the data into a file")
        return None
    except OSError as exc:
        ctx.error("unreadable", path, f"cannot read {rel}: {exc.strerror or exc}")
        return None
    ctx.referenced_files.append(found)
    return found


def build_fixtures(ctx: Context, data: list | None) -> tuple[ir.Fixture, ...]:
    """`fixtures`: each one a file inside the spec's folder."""
    out = []
    for i, f in enumerate((data or [])[:MAX_FIXTURES]):  # the schema reports any beyond
        spec = {"path": f} if isinstance(f, str) else f
        p = input_file(ctx, spec["path"], ("fixtures", i), "fixture")
        if p is not None:
            out.append(ir.Fixture(spec["path"], str(p), spec.get("min_records")))
    return tuple(out)
