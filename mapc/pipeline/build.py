"""The build pipeline: spec -> IR -> program -> target files -> disk -> validation.

Each step is a call into the module that owns it; this module only orders
them and collects diagnostics, so the CLI, tests and benchmarks all build the
same way. The public API function ``mapc.build(spec, target, out)`` is
:func:`mapc.api.build`, which calls :func:`build` here.
"""

from __future__ import annotations

import contextlib
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from mapc.codegen.program import Program, build_program, load_module, module_source
from mapc.core.diagnostics import Diagnostic, Diagnostics
from mapc.core.errors import UsageError
from mapc.spec import ir, load_spec
from mapc.targets import Target, ValidationReport, check_target_options, get_target


@dataclass
class BuildResult:
    spec: ir.Spec | None
    diagnostics: Diagnostics
    files: dict[str, bytes] = field(default_factory=dict)
    validation: ValidationReport | None = None
    written: object = None  # mapc.pipeline.output.WriteReport: removed files, forced overwrites, notes
    tests: object = None  # mapc.spectest.TestReport: the spec's tests, run before writing
    notes: list[str] = field(default_factory=list)  # worth knowing, not wrong (e.g. memory use)

    @property
    def ok(self) -> bool:
        return self.diagnostics.ok and (self.validation is None or self.validation.ok)


def resolve_target(name: str) -> Target:
    """The target ``name`` (importing no installed package but the one that provides it), or a
    usage error saying why not."""
    target = get_target(name)
    if target is None:
        from mapc.targets import target_names, target_problem

        problem = target_problem(name)
        others = ", ".join(n for n in target_names() if n != name) or "(none installed)"
        raise UsageError(f"{problem}; other targets: {others}" if problem else
                         f"unknown target {name!r}; known targets: {others}")
    return target


def load_checked(spec_path: str | Path, target: Target | None = None) -> tuple[ir.Spec | None, Diagnostics]:
    """Load a spec, check it against its fixtures, and run the target's own checks on it."""
    from mapc.analysis.fixture_check import check_fixtures

    spec, diags = load_spec(spec_path)
    if spec is not None:
        diags.extend(check_fixtures(spec))
    if spec is not None:
        diags.extend(check_target_options(spec))
    if spec is not None and target is not None:
        diags.extend(target.check(spec))
    if not diags.ok:
        spec = None
    return spec, diags


def render(spec: ir.Spec, target: Target, out_dir: Path) -> tuple[Program, dict[str, bytes]]:
    program = build_program(spec, semantics=target.semantic_views, raw_events=target.raw_events(spec))
    return program, with_runtime(target, target.render(spec, program, out_dir))


def with_runtime(target: Target, files: dict[str, bytes]) -> dict[str, bytes]:
    """``files`` plus the target's runtime package next to every Python file that imports it
    (a target from another package need not write it itself)."""
    from posixpath import dirname, join

    from mapc.core.runtime_files import RUNTIME_PACKAGE, is_runtime_path

    stem = RUNTIME_PACKAGE.encode("ascii")
    folders = {dirname(rel) for rel, data in files.items()
               if rel.endswith(".py") and not is_runtime_path(rel) and b"from " + stem + b"." in data}
    missing = sorted(folder for folder in folders if join(folder, RUNTIME_PACKAGE, "__init__.py") not in files)
    for folder in missing:
        files = {**files, **target.shared_runtime().files_at(folder)}
    return files


@dataclass
class Output:
    """Everything a build writes, before it touches the disk."""

    files: dict[str, bytes]  # with provenance headers, reconciled, the lock included
    rendered: set[str]  # every path the target produced (and the lock)
    roots: list[str]  # what the target owns in the output
    lock: str  # the lock's path
    origin: object  # mapc.pipeline.provenance.Origin


def output_files(spec: ir.Spec, target: Target, out: Path, *, force: bool = False,
                 rendered: dict[str, bytes] | None = None) -> Output:
    """Render, add provenance headers, let the target reconcile with the disk, add the lock.

    ``rendered``: the target's files with headers, when already rendered (:func:`render_files`).
    """
    from mapc.pipeline import provenance

    origin = provenance.origin(spec.file, spec.digest, target.name, out)
    files = dict(rendered) if rendered is not None else render_files(spec, target, out)
    rendered_paths = set(files)
    roots = target.owned_roots(spec)
    files = target.reconcile(spec, out, files, force=force)
    lock = provenance.lock_path(roots, rendered_paths)
    digests = provenance.still_ours(out, lock, rendered_paths - set(files))
    digests.update({rel: provenance.sha256(data) for rel, data in files.items()})
    files[lock] = provenance.lock_bytes(origin, digests, roots, lock)
    return Output(files, rendered_paths | {lock}, roots, lock, origin)


def render_files(spec: ir.Spec, target: Target, out: Path) -> dict[str, bytes]:
    """The target's files with provenance headers: what a build writes, before it looks at the disk."""
    from mapc.pipeline import provenance

    _, files = render(spec, target, out)
    return provenance.add_headers(files, provenance.origin(spec.file, spec.digest, target.name, out))


def spec_inputs(spec: ir.Spec, out: Path) -> list[str]:
    """Files the spec reads, which no build may claim, rewrite or remove: the spec and its bases,
    its tasks file and fixtures, its recorded traces, and files its agent command names."""
    from mapc.targets.capevolve.data import replay_plan

    found = [spec.file, *spec.files, *spec.inputs]
    plan = replay_plan(spec)
    if plan is not None:
        found += [str(p) for p in plan.files.values()]
    agent = spec.agent
    if agent is not None:
        folder = Path(spec.file).resolve().parent
        for arg in (agent.command or ()) + (agent.prepare or ()):
            if arg and "{" not in arg and "\0" not in arg:
                found += [str(folder / arg), str(out / arg)]
    return found


#: Runs a spec's tests before a build writes: ``(spec_path, spec) -> (report, diagnostics)``
#: (``mapc.spectest.runner.build_gate``; passed in by the API, which sits above both layers).
TestGate = Callable[[Path, ir.Spec], tuple[object, list[Diagnostic]]]


def build(spec_path: str | Path, target_name: str, out_dir: str | Path, *, validate: bool = True,
          force: bool = False, run_tests: TestGate | None = None) -> BuildResult:
    """Build ``spec_path`` for ``target_name`` into ``out_dir``.

    With ``run_tests``, the spec's tests run first (those with expected files) and a failing
    one stops the build before anything is written.
    """
    target = resolve_target(target_name)
    spec, diags = load_checked(spec_path, target)
    if spec is None:
        return BuildResult(None, diags)
    tests = None
    if run_tests is not None:
        tests, failed = run_tests(Path(spec_path), spec)
        diags.extend(failed)
        if not diags.ok:
            return BuildResult(spec, diags, tests=tests)
    out = Path(os.path.abspath(out_dir))  # still valid after the swap replaces a folder cwd is in
    if validate:
        diags.extend(target.output_problems(spec, out))
        if not diags.ok:
            return BuildResult(spec, diags, tests=tests)
    return write_build(spec, target, out, render_files(spec, target, out), diags, validate=validate, force=force,
                       tests=tests)


def write_build(spec: ir.Spec, target: Target, out: Path, rendered: dict[str, bytes], diags: Diagnostics, *,
                validate: bool = True, force: bool = False, tests=None) -> BuildResult:
    """Write rendered files into ``out`` holding the output's lock (one build per output at a
    time, validation included), then validate."""
    from mapc.pipeline import provenance
    from mapc.pipeline.output import OutputConflict, plan_output, write_output

    files: dict[str, bytes] = {}
    try:
        with claim_output(out) as held:
            output = output_files(spec, target, out, force=force, rendered=rendered)
            sweep_scratch(out, output.roots)
            files = output.files
            folders = owned_folders(spec, target, out, output)
            previous = provenance.previous_files(out, output.lock, force=force)
            lock_root = provenance.lock_folder(output.roots, output.rendered)
            plan = plan_output(out, files, roots=output.roots, rendered=output.rendered, previous=previous,
                               lock_root=lock_root, removable=target.ownable_roots(spec),
                               inputs=spec_inputs(spec, out))
            if lock_root == "":  # the target owns the whole output (RELAI: its own folder's rules)
                from mapc.pipeline.outowner import refuse_foreign_folder

                for root, shown in folders:
                    refuse_foreign_folder(plan, root, target=target.name, lock_target=lock_target(out, output.lock),
                                          force=force, shown_as=shown, suggestion=f"out/{spec.name}")
            for rel in plan.ignored:
                diags.add(Diagnostic(code="lock_outside_owned", severity="warning", file=str(out / output.lock),
                                     message=f"the previous lock lists {rel!r}, outside the folders the "
                                             f"{target.name} target owns; mapc left it alone"))
            written = write_output(plan, force=force, held=held)
            result = BuildResult(spec, diags, files, written=written, tests=tests, notes=build_notes(spec))
            if validate and not refuse_foreign_code(out, output, diags):
                result.validation = target.validate_build(spec, out)
            return result
    except OutputConflict as exc:
        diags.add(Diagnostic(code=exc.code, message=str(exc), hint=exc.hint, file=str(out)))
        return BuildResult(spec, diags, files)


def sweep_scratch(out: Path, roots: list[str]) -> None:
    """Remove the private scratch folders a killed run left beside the output and the folders
    the target owns in it (:mod:`mapc.core.scratch`)."""
    from mapc.core import scratch

    for root in {"", *roots}:
        scratch.sweep_beside(out / root if root else out)


def refuse_foreign_code(out: Path, output: Output, diags: Diagnostics) -> bool:
    """Whether the folders the build owns hold code it did not write (:mod:`mapc.pipeline.planted`):
    then validation, which runs the adapter, must not run (an error per file says why)."""
    from mapc.pipeline import planted

    found = planted.foreign_code(out, output.roots, output.files)
    for rel in found:
        diags.add(Diagnostic(code="foreign_code", file=str(out / rel),
                             message=planted.describe(rel) + "; the build was not validated, so nothing ran it",
                             hint="remove it (or move it out of the output folder) and build again"))
    return bool(found)


def owned_folders(spec: ir.Spec, target: Target, out: Path, output: Output) -> list[tuple[str, str]]:
    """The folders the target owns as a whole (output-relative root, as shown to the user);
    the spec's folder and those above it are refused (:mod:`mapc.pipeline.outowner`)."""
    from mapc.pipeline.outowner import refuse_spec_folder

    folders = []
    for root in output.roots:
        if root in output.rendered:
            continue  # a single file (RELAI's runtime manifest), not a folder
        real = out / root if root else out
        shown = os.path.relpath(real)
        shown = str(real) if shown.startswith("../..") else shown
        refuse_spec_folder(real, spec_file=spec.file, target=target.name, shown_as=shown,
                           suggestion=f"out/{spec.name}")
        folders.append((root, shown))
    return folders


def lock_target(out: Path, lock_rel: str) -> str | None:
    """The target the lock ``out/lock_rel`` names; None without a readable one."""
    from mapc.pipeline import provenance

    try:
        data = provenance.lock_data(out, lock_rel)
        return None if data is None else provenance.parse_lock(data).target
    except (provenance.LockError, OSError):
        return None


@contextlib.contextmanager
def claim_output(out: Path):
    """The output folder, created if needed and locked for this build (another build of the
    same output waits; see :mod:`mapc.core.outlock`). A folder this build created and left empty
    (the build stopped) is removed again."""
    from mapc.core import outlock
    from mapc.pipeline.output import OutputConflict, OutputError, _blocked_ancestor, os_error_text

    if os.path.lexists(out) and not os.path.isdir(out):
        raise OutputConflict(f"{out} exists and is not a folder")
    blocked = _blocked_ancestor(out)
    if blocked is not None:
        raise OutputError(f"cannot build into {out}: {blocked} is not a folder; nothing was written",
                          hint="choose an output path whose parent folders are folders")
    created = not os.path.lexists(out)
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"cannot create the output folder {out}: {os_error_text(exc)}; nothing was written",
                          hint="build into a folder you can write") from None
    try:
        with outlock.output_lock(out) as held:
            try:
                yield held
            finally:
                if created:
                    _remove_if_empty(out)
    except outlock.LockTimeout as exc:
        raise OutputError(f"{exc}; nothing was written",
                          hint=f"wait for it to finish (or set {outlock.WAIT_ENV} to wait longer)") from None
    except OSError as exc:
        raise OutputError(f"cannot lock the output folder {out}: {os_error_text(exc)}; nothing was written") from None


def _remove_if_empty(folder: Path) -> None:
    try:
        os.rmdir(folder)
    except OSError:
        pass  # not empty (the build wrote it), or already gone


def build_notes(spec: ir.Spec) -> list[str]:
    """What a build tells about the adapter beyond errors: a JSON document it cannot stream."""
    from mapc.analysis.streaming import stream_plan

    verdict = stream_plan(spec)
    return [f"the adapter {verdict.describe()}"] if verdict.reason else []


def mapping_runtime() -> tuple[tuple[str, str], ...]:
    """The runtime package the in-process mapping program runs on: the one an RLViz build
    writes (same bytes)."""
    return resolve_target("rlviz").shared_runtime().files


def mapping_source(spec: ir.Spec, semantics: bool = False) -> str:
    """The text of the spec's in-process mapping program (``mapc run``, ``mapc test``): the
    mapping functions an RLViz adapter of the spec holds, importing from its runtime module;
    with ``semantics``, also the semantic views RELAI and cap-evolve read (``collect_records``)."""
    rlviz = resolve_target("rlviz")
    return module_source(
        build_program(spec, semantics, rlviz.raw_events(spec)),
        entry="",
        docstring=f"mapc run: in-process mapping program of {spec.name}",
        units=("write_canonical", "collect_records", "SourceFile", "MapState", "one_line", "warn_stderr"),
        shared=rlviz.shared_runtime(),
        keep=("MAX_BYTES", "MAX_LINE_BYTES"),
        check_runtime=False,  # run by mapc with its own runtime (in process, or `mapc run`'s child)
    )


def mapping_namespace(spec: ir.Spec, semantics: bool = False) -> dict:
    """The spec's mapping program, executed in-process with mapc's own runtime modules (the
    files generated adapters carry)."""
    from mapc.codegen.program import IN_PROCESS

    return load_module(mapping_source(spec, semantics), runtime=IN_PROCESS)


def run_mapping(spec: ir.Spec, source: Path, out=None, ns: dict | None = None) -> tuple[bool, str | None, object]:
    """Map ``source`` with ``spec`` and write canonical NDJSON to ``out`` (binary).

    ``ns``: the spec's :func:`mapping_namespace`, when mapping many sources with one.
    Returns ``(ok, one-line error, state)``.
    """
    ns = ns if ns is not None else mapping_namespace(spec)
    out = out if out is not None else sys.stdout.buffer
    st = ns["MapState"]()
    try:
        src = ns["SourceFile"](str(source), None, ns["MAX_BYTES"], ns["MAX_LINE_BYTES"])
        ns["write_canonical"](ns["map_source"], src, out, st)
    except BrokenPipeError:
        raise  # the reader of our stdout went away; the CLI stops quietly
    except Exception as exc:  # every failure becomes one line, never a traceback
        return False, ns["one_line"](exc), st
    return True, None, st
