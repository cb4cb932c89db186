"""The ``mapc`` command line.

One output contract for every command (docs/cli.md): exit 0 ok, 1 problems found in what
you gave (an invalid spec from every command, a failing test, stale output, a malformed
trace, a validation failure, review findings, breaking drift), 2 usage (a bad option, a
named file that is not there, a bad project configuration) or internal error. ``--format``
``json`` (or ``--json``) prints one envelope ``{"ok", "diagnostics", ...payload}``, ``github``
workflow annotations, ``sarif`` a SARIF 2.1.0 log. With no SPEC, ``check``, ``build`` and
``test`` act on every build of the project configuration (:mod:`mapc.pipeline.project`). No Python
traceback reaches a user for bad input (set MAPC_DEBUG=1 to see one for an internal error).
"""

from __future__ import annotations

import functools
import json
import os
import sys
from enum import Enum
from pathlib import Path
from typing import Optional

import typer
from typer.core import TyperGroup

from mapc.core.version import __version__
from mapc.core.diagnostics import Diagnostic, format_text
from mapc.tools.envelope import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, FORMATS, Outcome, exit_code, failure, many, render


class _Group(TyperGroup):
    """Typer's command group, whose own usage errors (an unknown option, a missing argument)
    keep the output contract: with ``--json`` or ``--format F`` they come as that format."""

    def main(self, args=None, *rest, **kwargs):
        self._argv = list(sys.argv[1:] if args is None else args)
        return super().main(args, *rest, **kwargs)

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except Exception as exc:
            argv = getattr(self, "_argv", [])
            fmt = _requested_format(argv)
            if fmt == "text" or getattr(exc, "exit_code", None) != EXIT_USAGE or not hasattr(exc, "format_message"):
                raise
            command = next((a for a in argv if not a.startswith("-")), "mapc")
            _print_machine(failure("usage", exc.format_message()), fmt, command, EXIT_USAGE)


app = typer.Typer(
    name="mapc",
    help="Compile a YAML mapping spec into standalone trace adapters for RLViz, RELAI and cap-evolve.",
    cls=_Group,
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


class Format(str, Enum):
    text = "text"
    json = "json"
    github = "github"
    sarif = "sarif"


JsonOpt = typer.Option(False, "--json", help="Machine-readable output: the same as --format json.")
FormatOpt = typer.Option(Format.text, "--format", help="text (default), json (the envelope of docs/cli.md), "
                         "github (workflow annotations) or sarif (SARIF 2.1.0 for code scanning).")
AllowReadOpt = typer.Option(None, "--allow-read", metavar="DIR",
                            help="Also let the spec read its fixtures, tasks, recorded traces and base specs "
                                 "from DIR (repeatable; by default only the spec's own folder). Same as "
                                 "MAPC_ALLOW_READ=DIR.")


def _requested_format(argv: list[str]) -> str:
    """The output format a command line asks for (``text`` when none, or one mapc does not know)."""
    if "--json" in argv:
        return "json"
    for i, arg in enumerate(argv):
        value = argv[i + 1] if arg == "--format" and i + 1 < len(argv) else (
            arg.split("=", 1)[1] if arg.startswith("--format=") else None)
        if value in FORMATS:
            return value
    return "text"


def _resolved_format(kwargs: dict) -> tuple[str, str | None]:
    """``(format, conflict)`` from a command's ``fmt`` and ``as_json`` arguments."""
    chosen = getattr(kwargs.get("fmt"), "value", kwargs.get("fmt"))
    chosen = chosen if chosen in FORMATS else "text"
    if kwargs.get("as_json"):
        if chosen not in ("text", "json"):
            return "json", f"--json is --format json; it cannot go with --format {chosen}"
        return "json", None
    return chosen, None


def _print_machine(envelope: dict, fmt: str, command: str, status: int | None = None):
    """Print ``envelope`` as ``fmt`` and exit with ``status`` (default: from its ``ok``)."""
    status = exit_code(envelope) if status is None else status
    typer.echo(render(envelope, fmt, command, status), nl=False)
    raise typer.Exit(status)


def _fail(command: str, fmt: str, diags: list[Diagnostic]):
    """A usage, configuration or internal error: exit 2, said in the format asked for."""
    if fmt != "text":
        _print_machine({"ok": False, "diagnostics": [d.to_dict() for d in diags]}, fmt, command, EXIT_USAGE)
    if len(diags) == 1 and diags[0].file is None:
        hint = f"\n({diags[0].hint})" if diags[0].hint else ""
        typer.echo(f"error: {diags[0].message}{hint}", err=True)
    else:
        typer.echo(format_text(diags), err=True)
    raise typer.Exit(EXIT_USAGE)


def guarded(fn):
    """Resolve ``--format``/``--json``; turn usage, configuration and unexpected errors into
    exit code 2, said in that format (an unexpected one in one line)."""
    command = fn.__name__.rstrip("_")

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        from mapc.core.errors import UsageError
        from mapc.pipeline.project import ConfigError

        fmt, conflict = _resolved_format(kwargs)
        if "fmt" in kwargs:
            kwargs["fmt"] = fmt
        try:
            if conflict:
                raise UsageError(conflict)
            return fn(*args, **kwargs)
        except typer.Exit:
            raise
        except UsageError as exc:
            _fail(command, fmt, [Diagnostic("usage", str(exc))])
        except ConfigError as exc:
            _fail(command, fmt, exc.diagnostics)
        except KeyboardInterrupt:
            typer.echo("interrupted", err=True)
            raise typer.Exit(130)
        except BrokenPipeError:
            # the reader went away (`mapc specs | head`): stop quietly, like other CLI tools
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            raise typer.Exit(0)
        except Exception as exc:  # internal error: say so plainly
            if os.environ.get("MAPC_DEBUG"):
                raise
            _fail(command, fmt, [Diagnostic("internal", f"internal error ({type(exc).__name__}): {exc}",
                                            hint="set MAPC_DEBUG=1 for a traceback")])

    return wrapper


def _version(value: bool) -> None:
    if value:
        typer.echo(f"mapc {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Optional[bool] = typer.Option(
        None, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """mapc: one YAML spec -> standalone adapters, checked by built-in validators."""
    try:
        os.getcwd()
    except FileNotFoundError:
        typer.echo("error: the current folder no longer exists (did a build replace it?); "
                   "run `cd \"$PWD\"` and try again", err=True)
        raise typer.Exit(EXIT_USAGE)


# -- finishing a command -----------------------------------------------------------------------
def _finish(command: str, fmt: str, outcome: Outcome):
    """One input's outcome: its text, or its envelope in ``fmt``; exit 0 or 1."""
    if fmt != "text":
        _print_machine(outcome.envelope(), fmt, command)
    if outcome.text is not None:
        outcome.text()
    raise typer.Exit(EXIT_OK if outcome.ok else EXIT_FINDINGS)


def _finish_many(command: str, fmt: str, outcomes: list[Outcome], what: str, **payload):
    """Several inputs' outcomes: each one's text and a summary line, or one envelope."""
    envelope = many(outcomes, **payload)
    if fmt != "text":
        _print_machine(envelope, fmt, command)
    for outcome in outcomes:
        if outcome.text is not None:
            outcome.text()
    good = sum(1 for o in outcomes if o.ok)
    typer.echo(f"mapc {command}: {good} of {len(outcomes)} {what} ok", err=True)
    raise typer.Exit(exit_code(envelope))


def _emit_diags(diags) -> None:
    diags = list(diags)
    if diags:
        typer.echo(format_text(diags), err=True)


def _require(path: Path, what: str, kind: str = "file") -> None:
    """A path named on the command line must be there (else a usage error, exit 2)."""
    from mapc.core.errors import UsageError
    from mapc.pipeline.stdin_source import is_stdin

    if kind != "folder" and is_stdin(path):
        return
    if not path.exists():
        raise UsageError(f"{what} not found: {path}")
    if kind == "file" and path.is_dir():
        raise UsageError(f"{what} is a folder, not a file: {path}")
    if kind == "folder" and not path.is_dir():
        raise UsageError(f"{what} is not a folder: {path}")


def _allow_read(folders) -> None:
    if folders:
        from mapc.core.safeio import allow_read

        allow_read(folders)


def _project_builds(target: Optional[str], **not_with):
    """The project configuration's builds (of ``target`` when given), for a command given no SPEC.

    ``not_with``: options that name one build's files, refused without a SPEC."""
    from mapc.core.errors import UsageError
    from mapc.pipeline.project import load_project

    given = [option for option, value in not_with.items() if value]
    if given:
        raise UsageError(f"{given[0]} names one build's files: give its SPEC too (with no SPEC, mapc acts on "
                         "every build of the project configuration)")
    project = load_project()
    if project is None:
        raise UsageError("no SPEC given, and no project configuration found (mapc.toml, or [tool.mapc] in "
                         f"pyproject.toml, from {os.getcwd()} up to the repository root); give a spec, or list "
                         "the builds: see docs/cli.md#project-configuration")
    builds = [b for b in project.builds if target is None or b.target == target]
    if not builds:
        raise UsageError(f"{os.path.relpath(project.file)} lists no build for target {target!r}")
    return project, builds


def _in_build(entry):
    """The project build's ``allow_read`` folders, allowed while it is handled."""
    from mapc.core.safeio import allowing

    return allowing(list(entry.allow_read))


SpecArg = typer.Argument(None, help="The spec file (YAML); none: every build of the project configuration.")


# -- check ---------------------------------------------------------------------------------------
@app.command()
@guarded
def check(
    spec: Optional[Path] = SpecArg,
    target: Optional[str] = typer.Option(None, "--target", "-t", help="Also apply this target's rules."),
    allow_read: Optional[list[Path]] = AllowReadOpt,
    fmt: Format = FormatOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Validate a spec without building anything."""
    _allow_read(allow_read)
    if spec is None:
        project, builds = _project_builds(target)
        outcomes = []
        for entry in {(b.spec, b.target): b for b in builds}.values():
            with _in_build(entry):
                outcomes.append(_check_one(entry.spec, entry.target))
        _finish_many("check", fmt, outcomes, "spec(s)", config=os.path.relpath(project.file))
    _require(spec, "spec")
    _finish("check", fmt, _check_one(spec, target))


def _check_one(spec: Path, target: Optional[str]) -> Outcome:
    from mapc.api import SpecError, load_spec

    try:
        checked = load_spec(spec, target=target)
        loaded, diags = checked.ir, checked.diagnostics
    except SpecError as exc:
        loaded, diags = None, exc.diagnostics
    cov = _analyse(loaded, diags)

    def text() -> None:
        _emit_diags(diags)
        if cov is not None:
            typer.echo(format_coverage(cov), nl=False, err=True)
        if diags.ok:
            warn = f" ({len(diags.warnings)} warning(s))" if diags.warnings else ""
            unchecked = "" if loaded is None or loaded.fixtures else (
                "; no fixtures, so the fields it reads were not checked against a sample")
            typer.echo(f"ok: {spec} is a valid mapc spec{warn}{unchecked}", err=True)

    return Outcome(list(diags), {"spec": str(spec), "target": target,
                                 "coverage": cov.to_dict() if cov is not None else None}, text)


def _analyse(loaded, diags):
    """Coverage of a valid spec's fixtures (None: no fixtures, or errors); the warnings its
    fixtures' values give (traps, rules that never match) go into ``diags``."""
    from mapc.tools.coverage import analyse_fixtures

    if loaded is None or not diags.ok or not loaded.fixtures:
        return None
    cov, found = analyse_fixtures(loaded, list(diags))
    diags.extend(found)
    return cov


def format_coverage(cov) -> str:
    from mapc.tools.coverage import format_coverage as fmt

    return fmt(cov)


# -- build ---------------------------------------------------------------------------------------
@app.command()
@guarded
def build(
    spec: Optional[Path] = SpecArg,
    target: Optional[str] = typer.Option(None, "--target", "-t", help="rlviz, relai, cap-evolve or atif (with no SPEC: "
                                         "only the configured builds of this target)."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Output directory (for relai: the project root)."),
    force: bool = typer.Option(False, "--force", help="Overwrite generated files that were edited by hand, "
                               "and files mapc did not generate that are in the way."),
    no_validate: bool = typer.Option(False, "--no-validate", help="Skip the built-in validator after building."),
    no_test: bool = typer.Option(False, "--no-test", help="Skip the spec's tests (`mapc test`), which "
                                 "otherwise run first and stop the build when one fails."),
    check_only: bool = typer.Option(False, "--check", help="Write nothing; exit 0 if the output is current, "
                                    "1 if not (with the reason per file)."),
    diff: bool = typer.Option(False, "--diff", help="Write nothing; print the unified diff a build would apply "
                              "(implies --check)."),
    allow_read: Optional[list[Path]] = AllowReadOpt,
    fmt: Format = FormatOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Generate the adapter for TARGET, then check it with mapc's built-in validator.

    With no SPEC: every build of the project configuration (mapc.toml or [tool.mapc] in
    pyproject.toml), each with its own spec, target, output and allow_read.
    """
    from mapc.core.errors import UsageError

    _allow_read(allow_read)
    checking = check_only or diff

    def one(spec: Path, target: str, out: Path) -> Outcome:
        if checking:
            return _check_build(spec, target, out, diff)
        return _build_one(spec, target, out, force=force, validate=not no_validate, test=not no_test)

    if spec is None:
        project, builds = _project_builds(target, **{"--out": out})
        outcomes = []
        for entry in builds:
            with _in_build(entry):
                outcomes.append(one(entry.spec, entry.target, entry.output))
        _finish_many("build", fmt, outcomes, "build(s)", config=os.path.relpath(project.file))
    if target is None or out is None:
        raise UsageError(f"{'--target' if target is None else '--out'} is required with a SPEC")
    _require(spec, "spec")
    _finish("build", fmt, one(spec, target, out))


def _build_one(spec: Path, target: str, out: Path, *, force: bool, validate: bool, test: bool) -> Outcome:
    from mapc.api import build as do_build
    from mapc.pipeline.build import resolve_target
    from mapc.tools.outcomes import test_diagnostics, validation_diagnostics

    resolve_target(target)  # an unknown target is a usage error, before anything is read
    result = do_build(spec, target, out, validate=validate, force=force, test=test)
    written = result.written
    payload = {"spec": str(spec), "target": target, "out": str(out), "files": sorted(result.files),
               "removed": written.removed if written is not None else [],
               "forced": [c.path for c in written.forced] if written is not None else [],
               "tests": [r.to_dict() for r in result.tests.results] if result.tests is not None else None,
               "validation": result.validation.payload if result.validation is not None else None,
               "notes": result.notes}
    diags = list(result.diagnostics)
    if result.validation is not None:
        diags += [d for d in validation_diagnostics(result.validation, out, False) if d not in diags]
    if result.tests is not None and not result.tests.ok and not any(d.code == "test_failed" for d in diags):
        diags += test_diagnostics(result.tests)

    def text() -> None:
        _emit_diags(result.diagnostics)
        if written is not None:
            for conflict in written.forced:
                typer.echo(f"overwrote (--force): {conflict.message}", err=True)
            for rel in written.removed:
                typer.echo(f"removed {rel} (the spec no longer produces it)", err=True)
            for note in written.notes + result.notes:
                typer.echo(f"note: {note}", err=True)
        if result.validation is not None and result.validation.text:
            typer.echo(result.validation.text, err=True)
        _test_notes(result.tests, spec)
        if result.ok:
            typer.echo(f"built {target} adapter in {out} ({len(result.files)} files)", err=True)

    return Outcome(diags, payload, text)


def _test_notes(report, spec: Path) -> None:
    """What `mapc build` could not test yet: cases without an expected file."""
    untested = [r.case.name for r in (report.results if report else []) if r.status == "skipped"]
    if untested:
        typer.echo(f"note: not tested (no expected records yet): {', '.join(untested)}; "
                   f"`mapc test --update {spec}` writes them", err=True)
    elif report is not None and report.results and report.ok:
        typer.echo(f"tested: {len(report.results)} case(s) pass (mapc test)", err=True)


def _check_build(spec: Path, target: str, out: Path, with_diff: bool) -> Outcome:
    """``build --check`` / ``--diff``: ok when current; a spec with errors is a problem found too."""
    from mapc.pipeline.build import resolve_target
    from mapc.pipeline.freshness import check_build
    from mapc.tools.outcomes import freshness_diagnostics

    resolve_target(target)
    fresh, diags = check_build(spec, target, out, with_diff=with_diff)
    payload = {"spec": str(spec), "target": target, "out": str(out), "current": False, "files": []}
    if with_diff:
        payload["diff"] = ""
    if fresh is None:
        return Outcome(list(diags), payload, lambda: _emit_diags(diags))
    stale = [f for f in fresh.files if f.status != "current"]
    payload.update(current=fresh.current, files=[f.to_dict() for f in fresh.files])
    if with_diff:
        payload["diff"] = fresh.diff

    def text() -> None:
        if with_diff and fresh.diff:
            sys.stdout.write(fresh.diff)
        for f in stale:
            typer.echo(f"{f.path or out}: {f.status}: {f.message}", err=True)
        if fresh.current:
            typer.echo(f"ok: {out} is current ({len(fresh.files)} files)", err=True)
        else:
            typer.echo(f"{out} is not current: {len(stale)} of {len(fresh.files)} file(s) differ from what "
                       f"`mapc build` would write", err=True)

    return Outcome(list(diags) + freshness_diagnostics(out, fresh.files), payload, text)


JobsOpt = typer.Option(0, "--jobs", "-j", min=0, help="Sources handled at once (default: the CPU count; `run`: "
                       "one worker process per 16 MB of input, up to it).")


# -- run -----------------------------------------------------------------------------------------
@app.command()
@guarded
def run(
    spec: Path = typer.Argument(..., help="The spec file (YAML)."),
    sources: list[Path] = typer.Argument(..., help="Source traces to map: files, folders of them, quoted glob "
                                         "patterns ('runs/**/*.jsonl'); `-` reads one from standard input."),
    jobs: int = JobsOpt,
    fmt: Format = FormatOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Map each SOURCE with SPEC and print canonical NDJSON (a dry run while authoring).

    Runs exactly the code a generated adapter runs. Warnings go to stderr. Several sources
    (or folders) are mapped in parallel and printed in order, one stream per source; on a
    terminal with a progress bar and a summary table. `-` maps standard input (bounded by
    the spec's source.max_bytes like a file; its $source is named `stdin`).
    """
    from mapc.api import SpecError, _is_pattern, load_spec
    from mapc.core.errors import UsageError
    from mapc.pipeline.stdin_source import is_stdin

    _require(spec, "spec")
    if any(is_stdin(s) for s in sources) and len(sources) > 1:
        raise UsageError("`-` (standard input) is the only source of its run: map files and folders in another")
    for source in sources:
        if not _is_pattern(source):  # a quoted glob pattern names no path (expand_sources, D113)
            _require(source, "source", "any")
    several = len(sources) > 1 or sources[0].is_dir() or _is_pattern(sources[0])
    try:
        loaded = load_spec(spec)
    except SpecError as exc:
        empty = {"spec": str(spec), "results": []} if several else \
            {"spec": str(spec), "source": str(sources[0]), "records": [], "warnings": 0}
        diags = exc.diagnostics
        _finish("run", fmt, Outcome(list(diags), empty, lambda: _emit_diags(diags)))
    if several:
        _run_many(loaded, sources, jobs, fmt)
    source = sources[0]
    if fmt != "text":
        result = _run_one(loaded, source)
        _finish("run", fmt, Outcome(list(loaded.diagnostics) + _run_diags(result),
                                    {"spec": str(spec), **_run_payload(result)}))
    _emit_diags(loaded.diagnostics.warnings)  # the spec's own warnings (fixture checks), before the mapping's
    if _EXEC_MAPPING and not is_stdin(source):  # the command line's own process: map in one without the compiler (D73)
        from mapc.pipeline.run_exec import exec_mapping

        exec_mapping(loaded.ir, source)  # returns only when it cannot
    result = _run_one(loaded, source, out=sys.stdout.buffer)
    for message in result.warning_messages:
        typer.echo(f"warning: {message}", err=True)
    if not result.ok:
        typer.echo(f"error: {source}: {result.error}", err=True)
        raise typer.Exit(EXIT_FINDINGS)
    raise typer.Exit(EXIT_OK)


def _run_one(spec, source: Path, out=None):
    """``mapc.api.run``, with ``-`` read from a bounded private copy of standard input."""
    from mapc.api import RunResult
    from mapc.api import run as run_one
    from mapc.pipeline.stdin_source import STDIN, StdinTooLarge, is_stdin, stdin_copy

    if not is_stdin(source):
        return run_one(spec, source, out=out)
    try:
        with stdin_copy(spec.ir.source.max_bytes) as copy:
            result = run_one(spec, copy, out=out)
    except StdinTooLarge as exc:
        return RunResult(STDIN, False, str(exc))
    result.source = STDIN
    return result


def _run_payload(result) -> dict:
    return {"source": result.source, "records": result.records, "warnings": result.warnings}


def _run_diags(result) -> list[Diagnostic]:
    from mapc.tools.outcomes import run_diagnostics

    return run_diagnostics(result.source, result.error, result.warning_messages, result.warnings)


def _run_many(spec, sources: list[Path], jobs: int, fmt: str) -> None:
    """``mapc run`` over several sources: streams in order, a line per warning or failure."""
    from mapc.api import expand_sources, iter_runs
    from mapc.core.progress import on_terminal, progress_bar, summary_table

    files = expand_sources(sources)
    if fmt != "text":
        outcomes = [Outcome(_run_diags(r), _run_payload(r)) for r in iter_runs(spec, files, jobs=jobs or None)]
        _print_machine(many(outcomes, spec.diagnostics, spec=str(spec.path)), fmt, "run")
    _emit_diags(spec.diagnostics.warnings)
    draw = on_terminal(False, len(files))
    held: list[bytes] = []  # records for a terminal that also shows the bar: printed after it
    rows = []
    with progress_bar(len(files), "mapping", draw) as bar:
        for result in iter_runs(spec, files, jobs=jobs or None, progress=bar):
            if bar.live and sys.stdout.isatty():
                held.append(result.ndjson)
            else:
                sys.stdout.buffer.write(result.ndjson)
                sys.stdout.buffer.flush()
            for message in result.warning_messages:
                bar.line(f"warning: {result.source}: {message}")
            if not result.ok:
                bar.line(f"error: {result.source}: {result.error}")
            rows.append({"source": result.source, "records": result.record_count, "warnings": result.warnings,
                         "ok": result.ok})
    for data in held:
        sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()
    if draw:
        summary_table(rows, "mapc run")
    raise typer.Exit(EXIT_OK if all(row["ok"] for row in rows) else EXIT_FINDINGS)


# -- test ----------------------------------------------------------------------------------------
@app.command("test")
@guarded
def test_(
    spec: Optional[Path] = SpecArg,
    update: bool = typer.Option(False, "--update", help="Write or refresh the expected files "
                                "(<fixture>.expected.ndjson) from what the spec produces now."),
    against: Optional[Path] = typer.Option(None, "--against", help="Compare with the records of the adapter "
                                           "already built in this folder instead of the expected files."),
    allow_read: Optional[list[Path]] = AllowReadOpt,
    fmt: Format = FormatOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Run SPEC on its test cases (every fixture, plus `tests:`) and compare with what is expected.

    Exit 0 when every case passes, 1 when one fails or the spec has errors. With no SPEC:
    every spec of the project configuration.
    """
    _allow_read(allow_read)
    if spec is None:
        project, builds = _project_builds(None, **{"--against": against})
        outcomes = []
        for entry in {b.spec: b for b in builds}.values():
            with _in_build(entry):
                outcomes.append(_test_one(entry.spec, update, None))
        _finish_many("test", fmt, outcomes, "spec(s)", config=os.path.relpath(project.file))
    _require(spec, "spec")
    _finish("test", fmt, _test_one(spec, update, against))


def _test_one(spec: Path, update: bool, against: Optional[Path]) -> Outcome:
    from mapc.tools.outcomes import test_diagnostics
    from mapc.spectest import run_tests
    from mapc.spectest.report import format_report

    from mapc.pipeline.build import load_checked

    if update and against is not None:
        report = run_tests(spec, update=update, against=against)  # the usage error, as before
    loaded, diags = load_checked(spec)
    cov = _analyse(loaded, diags)
    report = run_tests(spec, update=update, against=against, spec=loaded) if loaded is not None else None
    if report is None:
        from mapc.spectest.runner import TestReport

        report = TestReport(str(spec), diags, update=update, against=str(against) if against else None)
    report.diagnostics = diags
    payload = {"spec": str(spec), "update": update, "against": str(against) if against else None,
               "cases": [r.to_dict() for r in report.results],
               "coverage": cov.to_dict() if cov is not None else None}

    def text() -> None:
        _emit_diags(report.diagnostics)
        if report.ran:
            typer.echo(format_report(report, str(spec)), nl=False, err=not report.ok)
        if cov is not None:
            typer.echo(format_coverage(cov), nl=False, err=not report.ok)

    return Outcome(list(report.diagnostics) + test_diagnostics(report), payload, text)


# -- validate ------------------------------------------------------------------------------------
@app.command()
@guarded
def validate(
    target: str = typer.Option(..., "--target", "-t", help="rlviz, relai, cap-evolve or atif."),
    out: Path = typer.Argument(..., help="The generated directory (for relai: the project root)."),
    sources: list[Path] = typer.Argument(None, help="Source traces (files or folders) to validate against (rlviz, atif); "
                                         "`-` reads one from standard input."),
    task: list[str] = typer.Option(None, "--task", help="relai: validate only these task ids."),
    jobs: int = JobsOpt,
    strict: bool = typer.Option(False, "--strict", help="rlviz: also fail on what the host's published schemas "
                                "require beyond the host's own checks (reported as warnings otherwise)."),
    fmt: Format = FormatOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Check generated output the way the host would, without the host installed.

    Several sources are validated in parallel; on a terminal with a progress bar and a
    summary table.
    """
    from mapc.core.errors import UsageError
    from mapc.pipeline.build import resolve_target
    from mapc.pipeline.stdin_source import is_stdin

    resolve_target(target)  # an unknown target is reported before the sources are read
    _require(out, "output folder", "folder")
    sources = sources or []
    if any(is_stdin(s) for s in sources) and len(sources) > 1:
        raise UsageError("`-` (standard input) is the only source of its validation: validate files in another")
    for source in sources:
        _require(source, "source", "any")
    if sources and is_stdin(sources[0]):
        from mapc.pipeline.stdin_source import DEFAULT_MAX_BYTES, STDIN, StdinTooLarge, stdin_copy

        try:
            with stdin_copy(DEFAULT_MAX_BYTES) as copy:
                outcome = _validate(target, out, [copy], task, jobs, strict, fmt, shown={str(copy): STDIN})
        except StdinTooLarge as exc:
            outcome = Outcome([Diagnostic("source_error", str(exc))], {"target": target, "out": str(out),
                                                                       "source": STDIN})
    else:
        outcome = _validate(target, out, sources, task, jobs, strict, fmt)
    if isinstance(outcome, dict):
        _print_machine(outcome, fmt, "validate")
    _finish("validate", fmt, outcome)


def _validate(target, out, sources, task, jobs, strict, fmt, shown=None):
    """The outcome of validating (an envelope of several results when the report has several)."""
    from mapc.api import expand_sources
    from mapc.api import validate as validate_output
    from mapc.tools.outcomes import validation_diagnostics
    from mapc.core.progress import on_terminal, progress_bar, summary_table

    files = expand_sources(sources)
    draw = on_terminal(fmt != "text", len(files))
    with progress_bar(len(files), "validating", draw) as bar:
        report = validate_output(target, out, files, tasks=task or (), jobs=jobs or None,
                                 progress=bar if draw else None, options={"strict": strict})
    if shown:
        report = _relabelled(report, shown)
    diags = validation_diagnostics(report, out, bool(sources))
    head = {"target": target, "out": str(out)}
    host = {k: v for k, v in report.payload.items() if k != "ok"}  # the host-shaped report, beside the envelope's
    results = host.pop("results", None)
    if fmt != "text" and isinstance(results, list) and all(isinstance(r, dict) and "source" in r for r in results):
        outcomes = []  # one per source (or testdata case): the same envelope each
        for r in results:
            label = str(r["source"])
            own = [d for d in diags if d.file in (label, str(out / label))]
            report_of = {k: v for k, v in r.items() if k not in ("source", "ok")}
            outcomes.append(Outcome(own, {"source": label, **report_of}))
        rest = [d for d in diags if not any(d in o.diagnostics for o in outcomes)]
        return many(outcomes, rest, **head, **host)
    if results is not None:
        host["results"] = results
    if len(files) == 1:
        head["source"] = next(iter(shown.values())) if shown else str(files[0])

    def text() -> None:
        if report.diagnostics:
            typer.echo(format_text(report.diagnostics), err=True)
        if report.text:
            typer.echo(report.text, err=not report.ok)
        if draw and report.items:
            summary_table(report.items, f"mapc validate --target {target}")

    return Outcome(diags, {**head, **host}, text)


def _relabelled(report, shown: dict[str, str]):
    """The report with each private copy's path replaced by the name it was given (``-``)."""
    from mapc.targets import ValidationReport

    def swap(text: str) -> str:
        for path, name in shown.items():
            text = text.replace(path, name)
        return text

    payload = json.loads(swap(json.dumps(report.payload)))
    items = json.loads(swap(json.dumps(report.items)))
    diags = [Diagnostic(**json.loads(swap(json.dumps(d.to_dict())))) for d in report.diagnostics]
    return ValidationReport(report.ok, payload, swap(report.text), diags, items)


# -- review --------------------------------------------------------------------------------------
@app.command()
@guarded
def review(
    out: Path = typer.Argument(..., help="A build output (for relai: the project root or the adapter folder)."),
    since: Optional[str] = typer.Option(None, "--since", metavar="REF", help="Show only what changed since the "
                                        "build you trusted: its mapc.lock.json, a copy of that output folder, "
                                        "or a git revision (e.g. HEAD~1)."),
    fmt: Format = FormatOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Summarise generated code before you trust it; exit 1 on findings.

    What it reads, emits and executes, the runtime module checked against the hash mapc
    publishes, its files checked against mapc.lock.json, and a static scan of the Python
    (imports, network, shell, subprocess, writes, eval). With --since: each changed file's
    diff with the spec lines behind each hunk (exit 1 only for a modified runtime).
    See docs/review.md.
    """
    from mapc.core.errors import UsageError
    from mapc.tools.outcomes import review_diagnostics
    from mapc.tools.review import ReviewError, format_review
    from mapc.tools.review import review as do_review

    if since is not None:
        _finish("review", fmt, _review_since(out, since))
    try:
        reviews = do_review(out)
    except ReviewError as exc:
        raise UsageError(str(exc)) from None
    payload = {"out": str(out), "reviews": [r.to_dict() for r in reviews]}
    _finish("review", fmt, Outcome(review_diagnostics(reviews), payload,
                                   lambda: typer.echo("\n".join(format_review(r) for r in reviews), nl=False)))


def _review_since(out: Path, ref: str) -> Outcome:
    from mapc.core.errors import UsageError
    from mapc.tools.outcomes import since_diagnostics
    from mapc.tools.review import ReviewError
    from mapc.tools.review_since import SinceError, format_since, since

    try:
        reports = since(out, ref)
    except (ReviewError, SinceError) as exc:
        raise UsageError(str(exc)) from None
    return Outcome(since_diagnostics(reports), {"out": str(out), "since": [r.to_dict() for r in reports]},
                   lambda: typer.echo("\n".join(format_since(r) for r in reports), nl=False))


# -- runtime -------------------------------------------------------------------------------------
@app.command()
@guarded
def runtime(
    target: Optional[str] = typer.Option(None, "--target", "-t", help="One target (default: every target)."),
    show: bool = typer.Option(False, "--show", help="Print the runtime's files (with --target), each after a "
                              "`# ==> mapc_runtime/FILE <==` line."),
    fmt: Format = FormatOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Print the SHA-256 of the runtime package each target's builds carry (mapc_runtime/).

    The package is the same bytes for every spec this mapc version builds for a target:
    review it once (`--show`), then compare hashes (`mapc review` does it for you). The hash
    is of its manifest: `cd OUT && LC_ALL=C sha256sum mapc_runtime/*.py | sha256sum`.
    """
    import hashlib

    from mapc.core.errors import UsageError

    from mapc.pipeline.build import resolve_target
    from mapc.targets import targets

    if show and target is None:
        raise UsageError("--show prints one runtime: choose it with --target")
    names = [resolve_target(target).name] if target else sorted(targets())
    runtimes = [resolve_target(n).shared_runtime() for n in names]

    def files(r) -> list[dict]:
        return [{"path": path, "sha256": hashlib.sha256(text.encode()).hexdigest(), **({"text": text} if show else {})}
                for path, text in r.files]

    def text() -> None:
        if show:
            sys.stdout.write(runtimes[0].text)
            return
        for r in runtimes:
            typer.echo(f"{r.sha256}  {r.title} ({r.lines} lines in {len(r.files)} files: {', '.join(r.modules)})")

    _finish("runtime", fmt, Outcome([], {"runtimes": [
        {"target": r.target, "mapc_version": r.mapc_version, "sha256": r.sha256, "modules": list(r.modules),
         "lines": r.lines, "files": files(r)} for r in runtimes]}, text))


# -- explain -------------------------------------------------------------------------------------
@app.command()
@guarded
def explain(
    spec: Path = typer.Argument(..., help="The spec file (YAML)."),
    target: Optional[str] = typer.Option(None, "--target", "-t", help="Explain this target's generated files "
                                         "(with their line numbers) instead of the mapping program."),
    fmt: Format = FormatOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Map each spec line to the generated function that implements it."""
    from mapc.tools.explain import explain as do_explain
    from mapc.tools.explain import format_explanation

    _require(spec, "spec")
    result, diags = do_explain(spec, target)
    payload = {"spec": str(spec), "target": target, "generated": None, "lines": []}
    if result is None:
        _finish("explain", fmt, Outcome(list(diags), payload, lambda: _emit_diags(diags)))
    payload.update(result.to_dict(), spec=str(spec))
    _finish("explain", fmt, Outcome([], payload, lambda: typer.echo(format_explanation(result), nl=False)))


# -- drift ---------------------------------------------------------------------------------------
@app.command()
@guarded
def drift(
    spec: Path = typer.Argument(..., help="The spec file (YAML)."),
    sample: Path = typer.Argument(..., help="A sample of the changed source (JSON, JSON Lines or CSV)."),
    strict: bool = typer.Option(False, "--strict", help="Exit 1 on additive drift too (new fields, "
                                "new event types), not only on breaking drift."),
    fmt: Format = FormatOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Compare a new source sample with the spec's fixtures, rule by rule; exit 1 on breaking drift.

    Each event rule's elements in the fixtures and in the sample are compared: fields it
    reads that are gone (a rename suggested when a field with the same type and similar
    values appeared) or retyped, the record fields it no longer fills, new event types and
    the rule that now takes them, new fields; then what the spec reads outside the rules,
    and the probe. The verdict: `breaking` (exit 1: adapters would map the sample wrongly),
    `additive` (exit 0, 1 with --strict: more than the spec maps) or `none` (exit 0).
    """
    from mapc.tools.drift import ProfileError, format_drift
    from mapc.tools.drift import drift as do_drift
    from mapc.tools.outcomes import drift_diagnostics

    _require(spec, "spec")
    _require(sample, "sample")
    payload = {"spec": str(spec), "sample": str(sample), "breaking": False, "container": None, "records": 0,
               "baseline": [], "items": []}
    try:
        report, diags = do_drift(spec, sample)
    except (ProfileError, OSError) as exc:
        unreadable = [Diagnostic("sample_unreadable", f"cannot read the sample: {exc}", file=str(sample))]
        _finish("drift", fmt, Outcome(unreadable, payload, lambda: _emit_diags(unreadable)))
    if report is None:
        _finish("drift", fmt, Outcome(list(diags), payload, lambda: _emit_diags(diags)))
    payload.update({k: v for k, v in report.to_dict().items() if k != "ok"})
    _finish("drift", fmt, Outcome(drift_diagnostics(report, spec, strict=strict), payload,
                                  lambda: typer.echo(format_drift(report), nl=False)))


# -- report --------------------------------------------------------------------------------------
@app.command()
@guarded
def report(
    spec: Path = typer.Argument(..., help="The spec file (YAML)."),
    out: Path = typer.Option(..., "--out", "-o", help="The HTML file to write (e.g. report.html)."),
    force: bool = typer.Option(False, "--force", help="Overwrite a file there that is not a mapc report."),
    allow_read: Optional[list[Path]] = AllowReadOpt,
    fmt: Format = FormatOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Write one self-contained HTML page of what SPEC covers of its fixtures.

    The source's field tree with the spec line that reads each field, what each rule
    takes, the records as a tree (run, case, group, trajectory, events) and every
    warning with its place. The page loads nothing: it opens offline.
    """
    from mapc.core.errors import UsageError
    from mapc.pipeline.build import load_checked
    from mapc.tools.report import ReportFileError, build_report, render_html, write_report

    _allow_read(allow_read)
    _require(spec, "spec")
    loaded, diags = load_checked(spec)
    payload = {"spec": str(spec), "out": None, "coverage": None, "records": {}, "fields": 0}
    if loaded is None:
        _finish("report", fmt, Outcome(list(diags), payload, lambda: _emit_diags(diags)))
    page = build_report(spec, loaded, list(diags))
    try:
        write_report(render_html(page), out, force=force)
    except ReportFileError as exc:
        raise UsageError(str(exc)) from None
    payload.update({"out": str(out), **page.payload()})
    problems = [Diagnostic("source_error", f"the mapping fails on {e}", file=str(spec)) for e in page.mapping_errors]

    def text() -> None:
        _emit_diags(page.diagnostics + problems)
        typer.echo(f"wrote {out}: {sum(page.totals.values())} record(s), {len(page.fields)} source field(s), "
                   f"{len(page.diagnostics)} warning(s)", err=True)

    _finish("report", fmt, Outcome(page.diagnostics + problems, payload, text))


# -- schema, specs, targets ----------------------------------------------------------------------
@app.command()
@guarded
def schema(
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Write it to this file (e.g. "
                                       ".mapc/spec.schema.json) instead of printing it."),
    force: bool = typer.Option(False, "--force", help="Overwrite a file there that is not a mapc spec schema."),
    fmt: Format = FormatOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Print the JSON Schema of specs (for yaml-language-server and other editors).

    Point a spec at the written file with a first line
    `# yaml-language-server: $schema=<path relative to the spec>`.
    """
    from mapc.spec.schema import schema_json

    if out is None:
        text = schema_json()
        _finish("schema", fmt, Outcome([], {"out": None, "status": None, "schema": json.loads(text)},
                                       lambda: sys.stdout.write(text)))
    from mapc.core.errors import UsageError
    from mapc.tools.editor import SchemaFileError, write_schema

    try:
        status = write_schema(out, force=force)
    except SchemaFileError as exc:
        raise UsageError(str(exc)) from None
    _finish("schema", fmt, Outcome([], {"out": str(out), "status": status, "schema": None}, lambda: typer.echo(
        f"{'wrote' if status == 'written' else 'already current:'} {out}", err=True)))


@app.command("specs")
@guarded
def specs_(fmt: Format = FormatOpt, as_json: bool = JsonOpt) -> None:
    """List the bundled library specs (build on one with `extends: NAME`)."""
    from mapc.spec.library import catalog

    entries = catalog()

    def text() -> None:
        nw = max([len(e["name"]) for e in entries] + [4])
        fw = max([len(e["format"]) for e in entries] + [6])
        typer.echo(f"{'NAME':<{nw}}  {'FORMAT':<{fw}}  {'CONTAINER':<9}  DESCRIPTION")
        for e in entries:
            typer.echo(f"{e['name']:<{nw}}  {e['format']:<{fw}}  {e['container']:<9}  {e['summary']}")
        typer.echo("\nBuild on one with `extends: NAME`; `mapc init --from SAMPLE` picks one for you.", err=True)

    _finish("specs", fmt, Outcome([], {"specs": entries}, text))


@app.command("targets")
@guarded
def targets_(fmt: Format = FormatOpt, as_json: bool = JsonOpt) -> None:
    """List the targets mapc builds for: built-in ones and those of installed packages."""
    from mapc.tools.outcomes import target_problem_diagnostics
    from mapc.targets import target_problems, targets

    found = sorted(targets().values(), key=lambda t: t.name)
    problems = target_problems()

    def text() -> None:
        nw = max([len(t.name) for t in found] + [4])
        ow = max([len(t.origin) for t in found] + [6])
        typer.echo(f"{'NAME':<{nw}}  {'ORIGIN':<{ow}}  DESCRIPTION")
        for t in found:
            typer.echo(f"{t.name:<{nw}}  {t.origin:<{ow}}  {t.description}")
        for problem in problems.values():
            typer.echo(f"warning: {problem}", err=True)

    _finish("targets", fmt, Outcome(target_problem_diagnostics(problems), {
        "targets": [{"name": t.name, "origin": t.origin, "description": t.description} for t in found],
        "problems": problems}, text))


# -- init ----------------------------------------------------------------------------------------
def _init_usage(given: Path | None, sample: Path | None, out: Path | None) -> str:
    """What to type instead of ``mapc init SAMPLE`` (the sample goes after ``--from``)."""
    import shlex

    command = shlex.join(["mapc", "init", "--from", str(sample or given or "SAMPLE"), "-o", str(out or "spec.yaml")])
    if given is None:
        return f"mapc init needs a sample trace to draft the spec from; run: {command}"
    if sample is None:
        return f"mapc init takes the sample after --from, not as an argument; run: {command}"
    return f"unexpected argument {str(given)!r} (the sample is {str(sample)!r}); run: {command}"


@app.command(context_settings={"allow_extra_args": True})
@guarded
def init(
    ctx: typer.Context,
    sample: Optional[Path] = typer.Option(None, "--from", help="A sample trace (JSON or JSON Lines)."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Write the spec here (default: print it)."),
    name: Optional[str] = typer.Option(None, "--name", help="Adapter name (default: from the sample's file name)."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing spec file (never the "
                               "sample's expected records: `mapc test --update` writes those)."),
    no_library: bool = typer.Option(False, "--no-library", help="Draft from the sample even if a library spec fits."),
    no_values: bool = typer.Option(False, "--no-values", help="Draft from the structure alone: read no value, "
                                   "not even those of discriminator fields such as `type` or `role`."),
    fmt: Format = FormatOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Propose a spec for SAMPLE: reuse a library spec that recognises it, or draft one."""
    from mapc.core.errors import UsageError
    from mapc.tools.init import InitError, init_spec, next_commands, write_spec
    from mapc.tools.init_fixture import copy_all

    if sample is None or ctx.args:  # `mapc init SAMPLE`: say what to type, not Typer's bare message
        raise UsageError(_init_usage(Path(ctx.args[0]) if ctx.args else None, sample, out))
    _require(sample, "sample")
    if out is not None and out.exists() and not force:
        raise UsageError(f"{out} already exists; choose another name or pass --force to overwrite it")
    payload = {"library": None, "out": str(out) if out else None, "schema": None, "notes": [], "spec": None,
               "fixture": None, "next": []}
    try:
        draft = init_spec(sample, spec_dir=out.parent if out else Path.cwd(), name=name, use_library=not no_library,
                          values=not no_values, copy_sample=out is not None)
        if out is not None:
            copy_all(draft.placement)  # the fixture first: a spec naming a missing file is worse than none
            write_spec(draft.text, out, force=force)
            draft.notes.append(_write_project_schema(draft.schema))
    except (InitError, OSError) as exc:
        said = str(exc) if isinstance(exc, InitError) else f"cannot write the draft: {exc.strerror or exc}"
        _finish("init", fmt, Outcome([Diagnostic("init", said, file=str(sample))], payload,
                                     lambda: typer.echo(f"error: {said}", err=True)))
    if out is None and not draft.schema.is_file():
        draft.notes.append(f"its first line points editors at {os.path.relpath(draft.schema)}: create it with "
                           f"`mapc schema -o {os.path.relpath(draft.schema)}`")
    steps = next_commands(out, draft.placement)
    payload.update(library=draft.library, schema=str(draft.schema), notes=draft.notes, spec=draft.text,
                   fixture=draft.placement.fixture, next=[command for command, _ in steps])

    def text() -> None:
        if out is None:
            sys.stdout.write(draft.text)
        for note in draft.notes:
            typer.echo(f"note: {note}", err=True)
        how = f"extends the library spec {draft.library!r}" if draft.library else "drafted from the sample's structure"
        where = f"wrote {out}" if out else "spec above (save it as spec.yaml)"
        typer.echo(f"{where}: {how}. No expected records are saved until you accept what it maps. Next:", err=True)
        width = max(len(command) for command, _ in steps)
        for command, why in steps:
            typer.echo(f"  {command.ljust(width)}   # {why}", err=True)

    _finish("init", fmt, Outcome([], payload, text))


def _write_project_schema(path: Path) -> str:
    """Write the schema a new spec's modeline points at; the note that says what happened."""
    from mapc.tools.editor import SchemaFileError, write_schema

    shown = os.path.relpath(path)
    try:
        status = write_schema(path)
    except SchemaFileError as exc:
        return f"editor completion: {exc}"
    done = "wrote" if status == "written" else "reused"
    return f"{done} {shown}, the schema editors complete the spec with (see its first line)"


def _plain_run(argv: list[str]) -> bool:
    """``mapc run SPEC SOURCE``: one spec, one source, no option."""
    return len(argv) == 3 and argv[0] == "run" and not any(a.startswith("-") for a in argv[1:])


#: Whether ``run`` may replace this process to map (``mapc.pipeline.run_exec``): only when mapc is the
#: process's command (``main``), never inside a caller's process (tests, ``CliRunner``).
_EXEC_MAPPING = False


def main() -> None:
    """Console entry point."""
    global _EXEC_MAPPING
    _EXEC_MAPPING = True
    try:
        if _plain_run(sys.argv[1:]):
            # the same command without building the command tree: Typer makes a pydantic
            # adapter for every parameter of every command, about 20 MiB that a mapping of a
            # large trace would carry to its end (docs/performance.md, JSON documents)
            try:
                run(Path(sys.argv[2]), [Path(sys.argv[3])], jobs=0, fmt="text", as_json=False)
            except typer.Exit as exc:
                sys.exit(exc.exit_code)
        app()
    except SystemExit:
        raise
    except Exception as exc:  # click internals, should not happen
        if os.environ.get("MAPC_DEBUG"):
            raise
        sys.stderr.write(f"error: internal error ({type(exc).__name__}): {exc}\n")
        sys.exit(EXIT_USAGE)


if __name__ == "__main__":
    main()
