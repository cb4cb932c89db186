"""``mapc review DIR``: what a person needs before trusting generated code.

Reads the build's ``mapc.lock.json`` and files (never runs them): what the
adapter reads (source format, probe, every source field path the mapping
touches), what it emits (records, event kinds, signals, evaluators), what it
executes (agent and prepare commands as declared, the runner a host will
start, and every process or file operation in the code), each file with its
digest checked against the lock, and static findings (:mod:`mapc.tools.codescan`).

The spec is found through the lock (its path from the output folder). Without
it the summary says so, and the files are still checked and scanned.
"""

from __future__ import annotations

import ast
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from mapc.pipeline import planted, provenance
from mapc.tools.codescan import Behaviour, Finding, fingerprints, scan_source
from mapc.core.version import __version__

_SKIP_DIRS = {".git", "__pycache__", ".venv", "venv", "node_modules"}
_MAX_SCANNED = 500


class ReviewError(Exception):
    """DIR cannot be reviewed (exit code 2)."""


@dataclass
class Review:
    out: str  # the output folder, as the user can find it
    lock_file: str | None
    target: str | None
    mapc_version: str | None
    spec: dict  # path, sha256, status: matches | changed | missing | invalid | unknown
    reads: dict = field(default_factory=dict)
    emits: dict = field(default_factory=dict)
    executes: dict = field(default_factory=dict)
    files: list[dict] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: the shared runtime module checked against the hash mapc knows (:func:`check_runtime`)
    runtime: dict = field(default_factory=dict)
    #: the folder given to review, relative to ``out`` ("" when it is the output itself)
    scope: str = ""

    def to_dict(self) -> dict:
        return {
            "out": self.out, "lock": self.lock_file, "target": self.target, "mapc_version": self.mapc_version,
            "spec": self.spec, "runtime": self.runtime, "reads": self.reads, "emits": self.emits, "executes": self.executes,
            "files": self.files, "findings": [f.to_dict() for f in self.findings], "notes": self.notes,
        }


def find_locks(folder: Path) -> list[Path]:
    """Locks of the builds in ``folder``: its own, or the RELAI adapters of a project (never
    found through a symlink)."""
    from mapc.core.safeio import is_regular_beneath

    if is_regular_beneath(folder, provenance.LOCK_NAME):
        return [folder / provenance.LOCK_NAME]
    adapters = ".relai/custom-adaptor"
    if any(os.path.islink(folder / p) for p in (".relai", adapters)) or not os.path.isdir(folder / adapters):
        return []
    return [folder / adapters / n / provenance.LOCK_NAME for n in sorted(os.listdir(folder / adapters))
            if is_regular_beneath(folder, f"{adapters}/{n}/{provenance.LOCK_NAME}")]


def review(folder: str | Path) -> list[Review]:
    """One review per build found in ``folder`` (raises ReviewError when it is not a folder)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ReviewError(f"{folder} is not a folder")
    locks = find_locks(folder)
    if not locks:
        return [_review_unlocked(folder)]
    return [_review_locked(lock, folder) for lock in locks]


# -- with a lock ------------------------------------------------------------------------
def _review_locked(lock_path: Path, folder: Path, summary: bool = True) -> Review:
    """Review the build whose lock is ``lock_path``, found in ``folder`` (the folder given to
    review): whatever the lock says, no file outside ``folder`` is read but the spec it names.
    Without ``summary`` only the files and the runtime are checked (``--since``)."""
    from mapc.core import safeio

    lock_rel = lock_path.relative_to(folder).as_posix()
    try:
        lock = provenance.load_lock(folder, lock_rel)
    except (provenance.LockError, OSError) as exc:
        r = _review_unlocked(lock_path.parent)
        r.lock_file = str(lock_path)
        r.findings.insert(0, Finding(lock_path.name, 0, "lock", f"unreadable lock: {exc}"))
        return r
    assert lock is not None
    root, scope = folder, ""  # the build's output, and the part of it given to review
    expected = "/".join([".."] * lock_rel.count("/")) or "."
    problem = None
    if lock.output != expected:
        inner = _inner_folder(folder, lock) if lock_rel == provenance.LOCK_NAME else None
        if inner is not None:  # an adapter folder inside its project (RELAI): that folder only
            root, scope = Path(os.path.realpath(folder)).parents[inner.count("/")], inner
        else:
            problem = (f"the lock says its output is {lock.output!r}, but it lies in {folder} (expected "
                       f"{expected!r}); only {folder} is reviewed")
    r = Review(out=str(root), lock_file=str(lock_path), target=lock.target, mapc_version=lock.mapc_version,
               spec={"path": lock.spec, "sha256": lock.spec_sha256, "status": "unknown"}, scope=scope)
    if problem:
        r.findings.append(Finding(lock_path.name, 0, "lock", problem))
    spec, target = _load_spec(root, lock, r) if summary else (None, None)
    known: set[str] = set()
    if spec is not None and target is not None:
        _describe_spec(spec, r)
        known = _fresh_fingerprints(spec, target, root)
    sources: dict[str, str] = {}
    outside: list[str] = []
    from mapc.pipeline.output import OutputConflict, safe_relpath

    for rel, digest in sorted(lock.files.items()):
        try:
            safe_relpath(rel)
        except OutputConflict:
            r.findings.append(Finding(lock_path.name, 0, "lock", f"the lock lists {rel!r}, outside the output"))
            continue
        entry = {"path": rel, "sha256": digest, "status": "ok", "lock_sha256": digest}
        if scope and not (rel == scope or rel.startswith(scope + "/")):
            entry["status"] = "not read"
            r.files.append(entry)
            outside.append(rel)
            continue
        try:
            data = safeio.read_beneath(root, rel)
        except safeio.UnsafePath as exc:
            data = None
            entry["status"] = "unsafe"
            r.findings.append(Finding(rel, 0, "unsafe_path", f"listed in the lock, but {exc}: not read"))
        except OSError:
            data = None
            entry["status"] = "missing"
            r.findings.append(Finding(rel, 0, "missing", "listed in the lock but not there"))
        if data is not None:
            if provenance.sha256(data) != digest:
                entry["status"] = "edited"
                entry["sha256"] = provenance.sha256(data)
                r.findings.append(Finding(rel, 0, "edited", "differs from what mapc generated (see "
                                          "`mapc build --diff`)"))
            if rel.endswith(".py"):
                sources[rel] = data.decode("utf-8", "replace")
            if rel.endswith("catalog.json"):
                _catalog_commands(data, rel, r)
        r.files.append(entry)
    if outside:
        r.notes.append(f"{len(outside)} file(s) of this build lie outside {folder} and were not read "
                       f"({', '.join(outside[:3])}); review {root} to check them")
    for rel in _unlisted_code(root, lock, scope):
        data = safeio.try_read_beneath(root, rel)  # None for a symbolic link: never followed
        r.findings.append(Finding(rel, 0, "not_generated", planted.describe(rel)))
        if data is not None:
            r.files.append({"path": rel, "sha256": provenance.sha256(data), "status": "not generated by mapc"})
            if rel.endswith(".py"):
                sources[rel] = data.decode("utf-8", "replace")
    r.runtime = check_runtime(lock, r.files)
    _runtime_source(r, sources)
    if r.runtime["finding"]:
        r.findings.insert(0, Finding(r.runtime.get("path") or provenance.LOCK_NAME, 0, r.runtime["status"],
                                     r.runtime["line"].removeprefix("runtime: ")))
    for entry in r.files:
        entry.pop("lock_sha256", None)
    if summary:
        _scan(sources, lock.target, known, r)
    return r


# -- the runtime module -----------------------------------------------------------------------
def published_runtime(target: str, mapc_version: str):
    """The runtime mapc publishes for ``target`` at ``mapc_version`` (a ``SharedRuntime``), or
    None when this mapc cannot know it (another version, or a target it does not have)."""
    from mapc.targets import get_target

    found = get_target(target)
    if found is None or mapc_version != __version__:
        return None
    try:
        return found.shared_runtime()
    except Exception:  # a package target whose runtime cannot be assembled: nothing is known
        return None


def runtime_path(lock: provenance.Lock) -> str | None:
    """The runtime package's folder in the lock (its ``runtime`` entry, or the folder of a
    listed runtime file); a ``mapc_runtime.py`` file for a build from before D72."""
    if lock.runtime and (lock.runtime["path"] in lock.files
                         or any(rel.startswith(lock.runtime["path"] + "/") for rel in lock.files)):
        return lock.runtime["path"]
    found = next((rel for rel in sorted(lock.files) if provenance.is_runtime(rel)), None)
    return provenance.runtime_folder(found) if found else None


def check_runtime(lock: provenance.Lock, files: list[dict]) -> dict:
    """One line on the runtime package: unchanged (the bytes mapc publishes for the lock's
    version and target), or modified after the build, missing, or not verifiable. ``files``
    are the review's file entries (``sha256`` as on disk, ``lock_sha256`` as in the lock;
    a file in the package that the lock does not list counts as a change). ``finding``
    marks what no file finding says already: a runtime whose lock entries match but that is
    not the runtime mapc publishes, or one this mapc cannot verify."""
    path = runtime_path(lock)
    out = {"path": path, "status": "none", "finding": False, "sha256": None, "lock_sha256": None,
           "published_sha256": None}
    if path is None:
        out["line"] = ("runtime: none in this build (built before mapc wrote mapc_runtime/, or by a target "
                       "without one): the entry file carries its runtime")
        return out
    title = f"mapc {lock.mapc_version} {lock.target} runtime"
    if path.endswith(".py"):
        out.update(status="runtime_unverified", finding=True,
                   line=f"runtime: {path} is the one-file runtime of an earlier mapc {lock.mapc_version}, which "
                        "this mapc cannot verify (it writes the mapc_runtime/ package, D72): rebuild, and review "
                        "this version's runtime once")
        return out
    mine = [f for f in files if provenance.is_runtime(f["path"]) and provenance.runtime_folder(f["path"]) == path]
    out["lock_sha256"] = provenance.runtime_sha256(lock.files, path)
    published = published_runtime(lock.target, lock.mapc_version)
    known = published.sha256 if published else None
    out["published_sha256"] = known
    bad = next((f for f in mine if f["status"] in ("missing", "unsafe", "not read")), None)
    if not mine or bad is not None:
        status = bad["status"] if bad else "missing"
        why = {"missing": "MISSING (the lock lists it)", "unsafe": "NOT READ (not a regular file inside the "
               "output)", "not read": "outside the folder given to review: not checked"}[status]
        out.update(status=f"runtime_{status.replace(' ', '_')}", line=f"runtime: {bad['path'] if bad else path} {why}")
        return out
    disk = provenance.runtime_sha256({f["path"]: f["sha256"] for f in mine}, path)
    out["sha256"] = disk
    if disk != out["lock_sha256"]:
        known_text = f"; mapc {lock.mapc_version} publishes {_short(known)}" if known else ""
        changed = sorted(f["path"] for f in mine if f["status"] != "ok")
        out.update(status="runtime_modified",  # each file's `edited`/`not_generated` finding says it too
                   line=f"runtime: {path}/ MODIFIED after the build ({', '.join(changed)}; sha256 {_short(disk)}, "
                        f"the lock says {_short(out['lock_sha256'])}{known_text}): do not trust it; rebuild")
    elif known == disk:
        out.update(status="unchanged", line=f"runtime: {title}, unchanged (sha256 {_short(disk)})")
    elif known is not None:
        out.update(status="runtime_modified", finding=True,
                   line=f"runtime: {path}/ is NOT the {title} (sha256 {_short(disk)}; mapc {lock.mapc_version} "
                        f"publishes {_short(known)}), though its lock entries match: the files and the lock were "
                        f"both changed; rebuild, or compare with `mapc runtime --target {lock.target} --show`")
    else:
        current = published_runtime(lock.target, __version__)
        if current is not None and current.sha256 == disk:
            out.update(status="unchanged", line=f"runtime: built by mapc {lock.mapc_version}, the same bytes as "
                                                f"the {current.title}, unchanged (sha256 {_short(disk)})")
        else:
            why = (f"this is mapc {__version__}, which does not know mapc {lock.mapc_version}'s runtime hash"
                   if current is not None else f"this mapc has no {lock.target!r} target")
            out.update(status="runtime_unverified", finding=True,
                       line=f"runtime: built by another mapc version ({title}; {why}): sha256 {_short(disk)} "
                            f"matches the lock only; compare it with `mapc runtime --target {lock.target}` of "
                            f"mapc {lock.mapc_version}, or rebuild and review this version's runtime once")
    return out


def _runtime_source(r: Review, sources: dict[str, str]) -> None:
    """The runtime's files (as read) against this mapc's ``mapc/runtime/``: identical below
    their header comments, or a unified diff (``source`` and ``source_diff`` of the runtime)."""
    from mapc.core import runtime_files
    from mapc.core.version import __version__

    path = r.runtime.get("path")
    mine = {rel: text for rel, text in sources.items()
            if path and not path.endswith(".py") and provenance.is_runtime(rel)
            and provenance.runtime_folder(rel) == path}
    if not mine:
        return
    diff = runtime_files.source_diff(mine)
    where = f"mapc/runtime/ of the installed mapc {__version__}"
    r.runtime["source_diff"] = diff
    r.runtime["source"] = "differs" if diff else "identical"
    differ = sum(line.startswith("+++ ") for line in diff)
    r.runtime["source_line"] = (f"runtime source: {differ} of {len(mine)} file(s) differ from {where}, below "
                                "their header comments:" if diff else
                                f"runtime source: {len(mine)} file(s), each identical to its file in {where} "
                                "below its header comment")


def _short(digest: str | None) -> str:
    return f"{digest[:12]}…" if digest else "nothing"


def _load_spec(root: Path, lock: provenance.Lock, r: Review):
    from mapc.pipeline.build import load_checked
    from mapc.targets import get_target

    spec_file = root / lock.spec
    target = get_target(lock.target)
    if target is None:
        r.notes.append(f"unknown target {lock.target!r}: built by another mapc?")
        return None, None
    if not _spec_file_ok(spec_file):
        r.spec["status"] = "missing"
        r.notes.append(f"the spec {lock.spec} is not there (relative to {r.out}): what the adapter reads and "
                       "emits cannot be shown; files are still checked and scanned")
        return None, target
    spec, diags = load_checked(spec_file, target)
    if spec is None:
        r.spec["status"] = "invalid"
        r.notes.append(f"the spec {lock.spec} has errors now (`mapc check {spec_file}`); only the files are reviewed")
        return None, target
    if spec.digest == lock.spec_sha256:
        r.spec["status"] = "matches"
    else:
        r.spec["status"] = "changed"
        r.notes.append("the spec changed since this build: the summary below is the current spec's; "
                       "`mapc build --check` shows which files are stale")
    return spec, target


def _spec_file_ok(path: Path) -> bool:
    """The spec a lock names is read only when it is a regular YAML file (a lock cannot make
    review read /etc/passwd or block on a FIFO)."""
    import stat

    try:
        info = os.stat(path)
    except OSError:
        return False
    return stat.S_ISREG(info.st_mode) and os.path.realpath(path).endswith((".yaml", ".yml"))


def _fresh_fingerprints(spec, target, root: Path) -> set[str]:
    """Functions mapc would generate from this spec now: mapc's own code."""
    from mapc.pipeline.build import render

    try:
        _, files = render(spec, target, root)
    except Exception:  # a target that cannot render only loses this refinement
        return set()
    found: set[str] = set()
    for rel, data in files.items():
        if rel.endswith(".py"):
            found |= fingerprints(data.decode("utf-8", "replace"))
    return found


def _inner_folder(folder: Path, lock: provenance.Lock) -> str | None:
    """When ``folder`` is the folder holding a build's lock inside its output (RELAI's adapter
    folder, lock output ``../../..``): that folder relative to the output, else None."""
    parts = lock.output.split("/")
    if not lock.owned or any(p != ".." for p in parts):
        return None
    inner = "/".join(Path(os.path.realpath(folder)).parts[-len(parts):])
    return inner if inner == lock.owned[0] else None


def _unlisted_code(root: Path, lock: provenance.Lock, scope: str = "") -> list[str]:
    """Importable code in the folders mapc owns (within ``scope``) that the lock does not list."""
    owned = [o for o in lock.owned if not scope or o == scope or o.startswith(scope + "/")]
    return planted.foreign_code(root, owned, lock.files)


def _catalog_commands(data: bytes, rel: str, r: Review) -> None:
    try:
        catalog = json.loads(data)
    except ValueError:
        return
    if isinstance(catalog, dict):
        for key in ("runner", "prepare"):
            if isinstance(catalog.get(key), list):
                r.executes[f"{key} ({rel})"] = catalog[key]


# -- without a lock -----------------------------------------------------------------------
def _review_unlocked(folder: Path) -> Review:
    r = Review(out=str(folder), lock_file=None, target=None, mapc_version=None,
               spec={"path": None, "sha256": None, "status": "unknown"})
    r.findings.append(Finding(provenance.LOCK_NAME, 0, "no_lock", "no mapc.lock.json: not a mapc build, or the "
                              "lock was removed; nothing can be checked against what mapc generated"))
    sources = {}
    from mapc.core.safeio import try_read_beneath

    for dirpath, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
        for name in sorted(names):
            if name.endswith(".py") and len(sources) < _MAX_SCANNED:
                path = Path(dirpath, name)
                rel = path.relative_to(folder).as_posix()
                data = try_read_beneath(folder, rel)
                if data is None:
                    continue
                r.files.append({"path": rel, "sha256": provenance.sha256(data), "status": "unknown"})
                sources[rel] = data.decode("utf-8", "replace")
    _scan(sources, None, set(), r)
    return r


# -- the scan and the summary ---------------------------------------------------------------
def _scan(sources: dict[str, str], target: str | None, known: set[str], r: Review) -> None:
    behaviours: list[Behaviour] = []
    declared = r.executes.get("agent command")
    for rel, text in sorted(sources.items()):
        found, seen = scan_source(rel, text, target=target, known=known)
        r.findings.extend(found)
        behaviours.extend(seen)
        agent = _agent_constant(text)
        if agent is not None:
            command = agent.get("command") if isinstance(agent, dict) else None
            if "agent command" in r.executes and command != declared:
                r.findings.append(Finding(rel, 0, "agent_command", f"the code runs {command!r}, but the spec "
                                          f"declares {declared!r}"))
            elif command is not None and "agent command" not in r.executes:
                r.executes[f"agent command ({rel})"] = command
    unique = {(b.file, b.line, b.function, b.call): b for b in behaviours}
    r.executes["code"] = [b.to_dict() for b in unique.values()]


def _agent_constant(text: str):
    """The ``AGENT = {...}`` constant of a generated module (what the code will run)."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "AGENT" for t in node.targets):
            try:
                return ast.literal_eval(node.value)
            except ValueError:
                return {"command": "(not a literal)"}
    return None


_CONTAINER_TEXT = {"jsonl": "JSON Lines", "csv": "CSV with a header row", "json": "one JSON document"}


def _describe_spec(spec, r: Review) -> None:
    from mapc.codegen.summary import describe_spec

    r.reads, r.emits, executes = describe_spec(spec)
    r.executes.update(executes)


# -- text ---------------------------------------------------------------------------------------
def format_review(r: Review) -> str:
    lines = [f"mapc review: {r.out}" + (f" ({r.target} target, built by mapc {r.mapc_version})" if r.target else "")]
    if r.spec.get("path"):
        lines.append(f"spec: {r.spec['path']} (from the output folder), sha256 {r.spec['sha256'][:16]}..., "
                     f"{_SPEC_STATUS[r.spec['status']]}")
    if r.runtime:
        lines.append(r.runtime["line"])
        if r.runtime.get("source_line"):
            lines.append(r.runtime["source_line"])
            lines += [f"  {line}" for line in r.runtime["source_diff"]]
    for note in r.notes:
        lines.append(f"note: {note}")
    if r.reads:
        rd = r.reads
        lines += ["", "WHAT IT READS",
                  f"  source format {rd['format']} ({_CONTAINER_TEXT.get(rd['container'], 'one JSON document')})"]
        probe = rd["probe"]
        cond = [f"requires {', '.join(probe['require'])}"] if probe["require"] else []
        if probe["when"]:
            cond.append(f"when {probe['when']}")
        lines.append(f"  probe: at most {probe['bytes']} bytes" + (f" / {probe['lines']} lines" if rd["container"] != "json"
                                                                 else "") + (f"; {'; '.join(cond)}" if cond else ""))
        lines.append(f"  source field paths ({len(rd['paths'])}, relative to {rd['relative_to']}):")
        width = min(48, max((len(p) for p in rd["paths"]), default=0))
        for path, where in rd["paths"].items():
            mark = " ~" if path in rd["approximate"] else ""
            lines.append(f"    {path.ljust(width)}  {', '.join(where)}{mark}")
        if rd["approximate"]:
            lines.append("    (~ read through a computed value: the path is a best guess)")
        if rd.get("memory"):
            lines.append(f"  memory: {rd['memory']}")
        for name, sib in rd["siblings"].items():
            lines.append(f"  sibling file {name} ({' or '.join(sib['files'])}): {', '.join(sib['paths']) or '(whole file)'}")
        for sub in rd.get("subtrajectories", ()):
            lines.append(f"  subtrajectory files ({sub['where']}, line {sub['line']}): {sub['path']}, relative to the "
                         "source's folder, inside its root; each mapped as the source is")
    if r.emits:
        em = r.emits
        lines += ["", "WHAT IT EMITS", "  records: " + "; ".join(f"{x['record']} ({x['how']})" for x in em["records"])]
        lines.append("  event kinds: " + "; ".join(f"{k['kind']} " + (f"when {k['when']}" if k["when"] else "otherwise")
                                                 + (" (after its subtrajectory)" if k.get("subtrajectory") else "")
                                                 for k in em["event_kinds"]))
        lines.append("  signals: " + (", ".join(em["signals"]) or "none"))
        lines.append("  evaluators: " + (", ".join(f"{e['id']} [{e['range'][0]:g}, {e['range'][1]:g}]"
                                                   for e in em["evaluators"]) or "none"))
        if em["tasks"]:
            lines.append(f"  tasks: {em['tasks']}")
    lines += ["", "WHAT IT EXECUTES"]
    commands = {k: v for k, v in r.executes.items() if k != "code"}
    if not commands:
        lines.append("  no agent, prepare or runner command")
    for key, value in commands.items():
        lines.append(f"  {key}: {json.dumps(value, ensure_ascii=False)}")
    code = r.executes.get("code", [])
    if code:
        lines.append("  process and file operations in mapc's own code:")
        for b in code:
            lines.append(f"    {b['file']}:{b['line']} {b['function']}: {b['call']}")
    lines += ["", f"FILES ({len(r.files)})" + (" checked against the lock" if r.lock_file else "")]
    for f in r.files:
        lines.append(f"  {f['status']:<8} {f['sha256'][:16]}  {f['path']}")
    lines += ["", f"FINDINGS ({len(r.findings)})" if r.findings else "FINDINGS: none"]
    for f in r.findings:
        where = f"{f.file}:{f.line}" if f.line else f.file
        lines.append(f"  {where} {f.code}: {f.message}")
    return "\n".join(lines) + "\n"


_SPEC_STATUS = {
    "matches": "matches the lock",
    "changed": "CHANGED since the build",
    "missing": "NOT FOUND",
    "invalid": "has errors",
    "unknown": "not checked",
}
