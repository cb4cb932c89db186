"""``mapc report SPEC -o report.html``: one self-contained page that shows what a spec covers.

The page holds, from the spec's fixtures: the source's field tree with the spec lines that
read each field; what each event rule takes (:mod:`mapc.tools.coverage`); the records the spec
maps, as a tree run → case → group → trajectory → events with counts and kinds; and every
warning with its place (the spec's checks, the fixture checks, the traps of
:mod:`mapc.tools.traps`). It is rendered with jinja2 with autoescape on: trace values and spec
text are data, never markup; the page loads nothing (no script, no link, no image), so it
opens offline and as an attachment. A file already at the output path is replaced only
when it is a mapc report (its ``generator`` meta), else only with ``force``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from mapc.core.diagnostics import Diagnostic
from mapc.core.fieldpath import render, segments
from mapc.spec import ir

GENERATOR = "mapc report"
MAX_CHILDREN = 50  # children shown per node of the record tree; the rest are counted
MAX_FIELDS = 2000  # source fields listed
_LEVELS = ("run", "case", "group", "trajectory")
_PARENT = {"case": "run_id", "group": "case_id", "trajectory": "group_id", "event": "trajectory_id"}


class ReportFileError(ValueError):
    """The output path holds a file that is not a mapc report (or cannot be written)."""


@dataclass
class Node:
    """One record of the tree: its id, its children, and for a trajectory its events."""

    kind: str
    id: str
    children: list["Node"] = field(default_factory=list)
    events: Counter = field(default_factory=Counter)
    signals: int = 0

    @property
    def event_count(self) -> int:
        return sum(self.events.values()) + sum(c.event_count for c in self.children)

    def shown(self) -> list["Node"]:
        return self.children[:MAX_CHILDREN]

    @property
    def hidden(self) -> int:
        return max(0, len(self.children) - MAX_CHILDREN)


def record_tree(records: list[dict]) -> tuple[list[Node], Counter]:
    """The runs (each with its cases, groups, trajectories) and the count of each record type."""
    nodes: dict[tuple[str, str], Node] = {}
    totals: Counter = Counter()
    roots: list[Node] = []
    orphans = Node("run", "(records without their run)")
    for rec in records:
        kind = rec.get("record_type")
        totals[kind] += 1
        if kind in _LEVELS:
            nodes[(kind, str(rec.get("id")))] = Node(kind, str(rec.get("id")))
    for rec in records:
        kind = rec.get("record_type")
        if kind in _LEVELS:
            node = nodes[(kind, str(rec.get("id")))]
            if kind == "run":
                roots.append(node)
                continue
            above = _LEVELS[_LEVELS.index(kind) - 1]
            parent = nodes.get((above, str(rec.get(_PARENT[kind]))))
            (parent.children if parent else orphans.children).append(node)
        elif kind == "event":
            traj = nodes.get(("trajectory", str(rec.get("trajectory_id"))))
            (traj or orphans).events[str(rec.get("kind"))] += 1
        elif kind == "signal":
            traj = nodes.get(("trajectory", str(rec.get("trajectory_id"))))
            if traj:
                traj.signals += 1
    if orphans.children or orphans.events:
        roots.append(orphans)
    return roots, totals


def field_rows(spec: ir.Spec) -> tuple[list[dict], list[dict]]:
    """The fixtures' field tree, each field with the spec lines reading it; and the reads
    no fixture has (path, spec path, line)."""
    from mapc.analysis.profile import PathIndex
    from mapc.tools.drift import _LOOKS_ONLY, merged
    from mapc.analysis.profile import ProfileError, profile
    from mapc.analysis.reads import spec_reads
    from mapc.analysis.fixture_check import CHECK_BYTES, CHECK_LINES, MAX_FIXTURES

    profiles = []
    for fx in spec.fixtures[:MAX_FIXTURES]:
        try:
            profiles.append(profile(fx.resolved, container=spec.source.container, max_bytes=CHECK_BYTES,
                                    max_lines=CHECK_LINES,
                                    columns=dict(spec.source.columns) if spec.source.container == "csv" else None,
                                    delimiter=spec.source.delimiter))
        except (ProfileError, OSError):
            continue
    if not profiles:
        return [], []
    prof = merged(profiles)
    index = PathIndex(prof)
    by_path: dict[str, list[dict]] = {}
    whole: set[str] = set()
    unmatched = []
    for r in spec_reads(spec):
        if r.source != "trace" or not r.exact:
            continue
        line = r.expr.line if r.expr is not None else _line(spec, ("source", "probe", "require"))
        found = index.lookup(r.path)
        read = {"where": r.where, "line": line}
        if found is None:
            unmatched.append({"path": r.path or "@", **read})
        else:
            if read not in by_path.setdefault(found[0], []):
                by_path[found[0]].append(read)
            if r.expr is not None and r.expr.compiled.path is not None and not r.where.endswith(_LOOKS_ONLY):
                whole.add(found[0])  # mapped as it is, with all it holds
    rows = []
    for path, shape in list(prof.fields.items())[:MAX_FIELDS]:
        segs = segments(path)
        if not segs:
            continue  # the document (each line) itself
        rows.append({"path": path, "depth": len(segs) - 1, "name": segs[-1],
                     "types": "/".join(sorted(shape.types)), "count": shape.count,
                     "reads": sorted(by_path.get(path, []), key=lambda d: (d["line"] or 0, d["where"])),
                     "inside": _inside(segs, by_path, whole)})
    return rows, unmatched


def _inside(segs: tuple, by_path: dict, whole: set[str]) -> str | None:
    """The field read whole (``data: data``, ``join(',', tags)``) this one is carried inside."""
    for n in range(len(segs) - 1, 0, -1):
        above = render(segs[:n])
        if above in whole or (all(s == "[]" for s in segs[n:]) and by_path.get(above)):
            return above
    return None


def _line(spec: ir.Spec, path: tuple) -> int | None:
    mark = spec.locate(path) if spec.locate else None
    return mark.line if mark else None


@dataclass
class Report:
    spec: str
    name: str
    fixtures: list[str]
    fields: list[dict]
    unread_reads: list[dict]
    coverage: object  # mapc.tools.coverage.Coverage | None
    runs: list[Node]
    totals: Counter
    diagnostics: list[Diagnostic]
    mapping_errors: list[str]

    def payload(self) -> dict:
        return {"coverage": self.coverage.to_dict() if self.coverage is not None else None,
                "records": dict(sorted((k or "?", v) for k, v in self.totals.items())),
                "fields": len(self.fields)}


def build_report(spec_path: str | Path, spec: ir.Spec, diagnostics: list[Diagnostic]) -> Report:
    """Everything the page shows, for a valid ``spec`` (``diagnostics``: its checks' warnings,
    to which the traps and coverage warnings are added)."""
    from mapc.pipeline.results import map_one as _map_one
    from mapc.pipeline.build import mapping_namespace
    from mapc.tools.coverage import analyse_fixtures

    cov, found = analyse_fixtures(spec, diagnostics)
    records, errors = [], []
    ns = mapping_namespace(spec)
    for fx in spec.fixtures:
        result = _map_one(spec, ns, fx.resolved)  # what `mapc run` maps
        records += result.records
        if not result.ok:
            errors.append(f"{Path(fx.path).name}: {result.error}")
    runs, totals = record_tree(records)
    totals.pop("complete", None)
    rows, unread = field_rows(spec)
    return Report(str(spec_path), spec.name, [Path(fx.path).name for fx in spec.fixtures], rows, unread, cov, runs,
                  totals, list(diagnostics) + found, errors)


def render_html(report: Report) -> str:
    import jinja2

    from mapc.core.version import __version__

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(Path(__file__).resolve().parent / "templates")),
                             autoescape=True, undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    return env.get_template("report.html.j2").render(r=report, generator=GENERATOR, version=__version__)


def is_report(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096).decode("utf-8", "replace")
    except OSError:
        return False
    return f'<meta name="generator" content="{GENERATOR}' in head


def write_report(text: str, path: str | Path, *, force: bool = False) -> None:
    """Write the page atomically; a file there that is not a mapc report is kept unless ``force``."""
    from mapc.tools.init import write_spec

    path = Path(path)
    if path.is_dir():
        raise ReportFileError(f"{path} is a directory; give a file name such as {path / 'report.html'}")
    if path.exists() and not force and not is_report(path):
        raise ReportFileError(f"{path} exists and is not a mapc report; choose another name or pass --force "
                              "to overwrite it")
    try:
        write_spec(text, path, force=True)
    except OSError as exc:
        raise ReportFileError(f"cannot write {path}: {exc.strerror or exc}") from None
