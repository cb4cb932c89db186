"""``mapc review DIR --since REF``: only what changed since the build a person last trusted.

REF is the trusted build, as the person kept it: a previous ``mapc.lock.json``
(hashes only: which files changed), a previous copy of the output folder, or a
git revision of the repository holding DIR (its files read with ``git cat-file``,
no shell, bounded output). Each changed file gets a unified diff whose hunk
headers name the spec paths and lines that caused the hunk: generated code
carries comments such as ``# records.events.rules[0] (line 12): ...``, and a
hunk belongs to the nearest such comment enclosing its changed lines. The spec
itself is diffed when its old text is known (a git revision), and the runtime
module gets one line: unchanged, or changed (review it once).

Whatever a lock says, only DIR, REF and the spec DIR's lock names (as plain
``mapc review`` reads it) are read; every path below a folder goes through
:mod:`mapc.core.safeio`, and a git path never leaves the repository.
"""

from __future__ import annotations

import difflib
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Callable

from mapc.pipeline import provenance
from mapc.core import safeio
from mapc.tools.explain import _TOP, _parents  # the spec paths generated code names, as `mapc explain` reads them

#: A generated file larger than this is compared by hash, not read.
MAX_FILE_BYTES = 32 << 20
#: Text larger than this is listed, not diffed.
MAX_DIFF_BYTES = 1 << 20
#: Suffixes of files diffed line by line (data copies such as fixtures are listed only).
_DIFFED = (".py", ".yaml", ".yml", ".json", ".md", ".toml", ".sh", ".txt")
_GIT_TIMEOUT = 30


class SinceError(Exception):
    """REF cannot be compared with (exit code 2, one line)."""


@dataclass
class Before:
    """The trusted build: its lock and how to read its files (path relative to DIR ->
    bytes, None when absent or unreadable)."""

    kind: str  # lock | folder | git
    label: str  # what the person typed, with what it turned out to be
    lock: provenance.Lock | None
    read: Callable[[str], bytes | None] | None  # None: only the lock's hashes are known
    #: the spec's text at REF from its path relative to DIR (a git revision only)
    spec_at: Callable[[str], str | None] | None = None


@dataclass
class SinceReport:
    out: str
    ref: str
    kind: str
    target: str | None
    runtime: dict
    spec: dict
    files: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    modified_runtime: bool = False

    def to_dict(self) -> dict:
        return {"out": self.out, "since": self.ref, "kind": self.kind, "target": self.target,
                "runtime": self.runtime, "spec": self.spec, "files": self.files, "notes": self.notes}


# -- what REF is -------------------------------------------------------------------------------
def _lock_from_bytes(data: bytes | None, where: str) -> provenance.Lock | None:
    if data is None:
        return None
    try:
        return provenance.parse_lock(data)
    except provenance.LockError as exc:
        raise SinceError(f"{where} is not a mapc lock ({exc})") from None


def resolve(folder: Path, ref: str, lock_sub: str) -> Before:
    """The trusted build named by ``ref``, for the build whose lock is ``folder/lock_sub``."""
    if not ref or ref.startswith("-"):
        raise SinceError(f"--since {ref!r}: give a lock file, an output folder or a git revision")
    path = Path(ref)
    if os.path.lexists(path):
        if path.is_dir():
            def read(sub: str) -> bytes | None:
                try:
                    return safeio.read_beneath(path, sub, MAX_FILE_BYTES)
                except safeio.UnsafePath:
                    raise
                except OSError:
                    return None

            try:
                lock = _lock_from_bytes(provenance.lock_data(path, lock_sub), f"{ref}/{lock_sub}")
            except provenance.LockError as exc:
                raise SinceError(f"{ref}/{lock_sub}: {exc}") from None
            if lock is None:
                raise SinceError(f"{ref} holds no {lock_sub}: not a mapc build (give the output folder you "
                                 f"reviewed, its lock file, or a git revision)")
            return Before("folder", f"{ref} (output folder)", lock, read)
        if path.is_file():
            try:
                data = safeio.read_beneath(path.parent, path.name, provenance.MAX_LOCK_BYTES)
            except (OSError, safeio.UnsafePath) as exc:
                raise SinceError(f"cannot read {ref}: {exc}") from None
            return Before("lock", f"{ref} (lock file)", _lock_from_bytes(data, ref), None)
        raise SinceError(f"{ref} is neither a regular file nor a folder")
    return _git_before(folder, ref, lock_sub)


# -- git -----------------------------------------------------------------------------------------
def _git(args: list[str], cwd: Path, limit: int) -> tuple[int, bytes, str]:
    """Run git (no shell) with its output bounded: (exit code, stdout, first stderr line).
    Raises SinceError when the output is larger than ``limit``."""
    git = shutil.which("git")
    if git is None:
        raise SinceError("git is not installed")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0", LC_ALL="C")
    with subprocess.Popen([git, "--literal-pathspecs", *args], cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, env=env) as proc:
        try:
            out = proc.stdout.read(limit + 1)
            if len(out) > limit:
                proc.kill()
                raise SinceError(f"`git {' '.join(args[:2])}` printed more than {limit} bytes")
            err = proc.stderr.read(4096)
            code = proc.wait(timeout=_GIT_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise SinceError(f"`git {' '.join(args[:2])}` did not finish in {_GIT_TIMEOUT} s") from None
    first = err.decode("utf-8", "replace").strip().splitlines()
    return code, out, first[0] if first else ""


def _git_before(folder: Path, ref: str, lock_sub: str) -> Before:
    if shutil.which("git") is None:
        raise SinceError(f"{ref} is not a file or folder, and git (to read it as a revision) is not installed")
    code, out, err = _git(["rev-parse", "--show-toplevel", "--show-prefix"], folder, 1 << 16)
    if code != 0:
        raise SinceError(f"{ref} is not a file or folder, and {folder} is not in a git repository to read it "
                         f"as a revision ({err})")
    top, prefix = (out.decode("utf-8", "replace").split("\n") + [""])[:2]
    code, out, err = _git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"],
                          Path(top), 1 << 10)
    commit = out.decode("ascii", "replace").strip()
    if code != 0 or not re.fullmatch(r"[0-9a-f]{40,64}", commit):
        raise SinceError(f"{ref} is not a file, a folder or a git revision of {top}")
    code, out, err = _git(["ls-tree", "-r", "-z", "--full-tree", commit, "--", prefix or "."], Path(top), 16 << 20)
    if code != 0:
        raise SinceError(f"git cannot list {prefix or '.'} at {ref}: {err}")
    blobs = {}  # path relative to DIR -> blob id, or None for what is not a regular file
    for entry in out.split(b"\0"):
        meta, _, name = entry.partition(b"\t")
        parts = meta.split()
        rel = name.decode("utf-8", "surrogateescape")
        if len(parts) == 3 and rel.startswith(prefix):
            regular = parts[0] in (b"100644", b"100755") and parts[1] == b"blob"
            blobs[rel[len(prefix):]] = parts[2].decode("ascii") if regular else None

    def read(sub: str) -> bytes | None:
        if sub not in blobs:
            return None
        blob = blobs[sub]
        if blob is None:  # a symlink's target is never read
            raise safeio.UnsafePath(f"{sub} is a symbolic link or not a regular file at {ref}")
        code, data, _ = _git(["cat-file", "blob", blob], Path(top), MAX_FILE_BYTES)
        return data if code == 0 else None

    try:
        lock = _lock_from_bytes(read(lock_sub), f"{lock_sub} at {ref}")
    except safeio.UnsafePath as exc:
        raise SinceError(str(exc)) from None
    if lock is None:
        raise SinceError(f"{prefix or './'}{lock_sub} is not in {ref}: that revision holds no build here")

    def spec_at(spec_rel: str) -> str | None:
        """The spec's text at REF, when it lies in the repository (``spec_rel`` from DIR)."""
        path = os.path.normpath(prefix + spec_rel)
        if path.startswith("..") or os.path.isabs(path):
            return None
        code, out, _ = _git(["ls-tree", "-z", "--full-tree", commit, "--", path], Path(top), 1 << 12)
        parts = out.split(b"\t")[0].split()
        if code != 0 or len(parts) != 3 or parts[0] not in (b"100644", b"100755"):
            return None
        code, data, _ = _git(["cat-file", "blob", parts[2].decode("ascii")], Path(top), 4 << 20)
        return data.decode("utf-8", "replace") if code == 0 else None

    return Before("git", f"{ref} (git revision {commit[:10]})", lock, read, spec_at)


# -- the comparison ------------------------------------------------------------------------------
def since(folder: str | Path, ref: str) -> list[SinceReport]:
    """What changed in each build found in ``folder`` since the build ``ref`` names."""
    from mapc.tools.review import ReviewError, _review_locked, find_locks

    folder = Path(folder)
    if not folder.is_dir():
        raise ReviewError(f"{folder} is not a folder")
    locks = find_locks(folder)
    if not locks:
        raise SinceError(f"{folder} holds no {provenance.LOCK_NAME}: not a mapc build, nothing to compare")
    if len(locks) > 1 and os.path.isfile(ref):
        raise SinceError(f"{folder} holds {len(locks)} builds; with a lock file as REF, review one adapter "
                         f"folder ({', '.join(str(p.parent) for p in locks[:3])})")
    return [_since_one(folder, lock, ref, _review_locked(lock, folder, summary=False)) for lock in locks]


def _sub(rel: str, scope: str) -> str | None:
    """An output-relative path as a path relative to the folder given (None: outside it)."""
    from mapc.pipeline.output import OutputConflict, safe_relpath

    try:
        safe_relpath(rel)
    except OutputConflict:
        return None
    if not scope:
        return rel
    return rel[len(scope) + 1:] if rel.startswith(scope + "/") else None


def _since_one(folder: Path, lock_path: Path, ref: str, now) -> SinceReport:
    from mapc.tools.review import runtime_path

    lock_sub = lock_path.relative_to(folder).as_posix()
    try:
        new_lock = provenance.load_lock(folder, lock_sub)
    except (provenance.LockError, OSError) as exc:
        raise SinceError(f"cannot read {lock_path}: {exc}; `mapc review {folder}` says more") from None
    before = resolve(folder, ref, lock_sub)
    scope = now.scope
    up = "/".join([".."] * len(PurePosixPath(scope).parts)) if scope else ""
    spec_from_dir = os.path.normpath(os.path.join(up, new_lock.spec))
    old_spec_text = before.spec_at(spec_from_dir) if before.spec_at and spec_from_dir else None
    new_spec_text = _current_spec(Path(now.out), new_lock)
    rep = SinceReport(out=str(folder), ref=before.label, kind=before.kind, target=new_lock.target, runtime={},
                      spec={})
    rep.spec = _spec_change(before.lock, new_lock, old_spec_text, new_spec_text, ref)
    if before.lock.target != new_lock.target:
        rep.notes.append(f"{ref} is a build for {before.lock.target}, this one for {new_lock.target}: "
                         f"compare builds of one target")
    old_runtime = runtime_path(before.lock)
    new_runtime = runtime_path(new_lock)
    runtimes = {_sub(p, scope) for p in (old_runtime, new_runtime) if p}
    old_files = {s: d for rel, d in before.lock.files.items() if (s := _sub(rel, scope)) is not None}
    new_files = {s: d for rel, d in new_lock.files.items() if (s := _sub(rel, scope)) is not None}
    spec_names = (_spec_lines(old_spec_text), _spec_lines(new_spec_text),
                  _changed_lines(old_spec_text, new_spec_text))
    for sub in sorted(set(old_files) | set(new_files)):
        old, unread = None, None
        try:
            old = before.read(sub) if before.read and sub in old_files else None
        except safeio.UnsafePath as exc:
            unread = str(exc)
        new = safeio.try_read_beneath(folder, sub, MAX_FILE_BYTES) if sub in new_files else None
        old_sha = provenance.sha256(old) if old is not None else old_files.get(sub)
        new_sha = provenance.sha256(new) if new is not None else new_files.get(sub)
        if sub not in new_files:
            status = "removed"
        elif sub not in old_files:
            status = "added"
        else:
            status = "unchanged" if old_sha == new_sha else "changed"
        entry = {"path": sub, "status": status, "before": old_sha if sub in old_files else None,
                 "after": new_sha if sub in new_files else None}
        if unread:
            entry["not_read"] = unread
            rep.notes.append(f"{unread}: not read; compared by the hash its lock records")
        if sub in runtimes or any(sub.startswith(f"{r}/") for r in runtimes):
            entry["runtime"] = True
        elif status == "changed" and old is not None and new is not None:
            entry.update(_file_diff(sub, old, new, ref, spec_names))
        rep.files.append(entry)
    rep.runtime = _runtime_line(before.lock, new_lock, rep.files, now.runtime, runtimes)
    rep.modified_runtime = now.runtime.get("status") in ("runtime_modified", "runtime_missing", "runtime_unsafe")
    if before.read is None:
        rep.notes.append(f"{ref} is a lock: it holds each file's hash, not its text, so only which files changed "
                         f"is shown; for the diff give the output folder you reviewed or a git revision "
                         f"(`mapc review {folder} --since HEAD~1`)")
    if now.runtime.get("finding") or rep.modified_runtime:
        rep.notes.append(f"`mapc review {folder}` (without --since) explains the runtime finding")
    return rep


def _current_spec(root: Path, lock: provenance.Lock | None) -> str | None:
    """The spec the current lock names, read as plain ``mapc review`` reads it."""
    from mapc.tools.review import _spec_file_ok

    if lock is None or not _spec_file_ok(root / lock.spec):
        return None
    try:
        with open(root / lock.spec, "rb") as fh:
            return fh.read(4 << 20).decode("utf-8", "replace")
    except OSError:
        return None


def _spec_change(old: provenance.Lock, new: provenance.Lock, old_text, new_text, ref: str) -> dict:
    out = {"path": new.spec, "before": old.spec_sha256, "after": new.spec_sha256,
           "status": "unchanged" if old.spec_sha256 == new.spec_sha256 else "changed", "diff": ""}
    if out["status"] == "changed" and old_text is not None and new_text is not None:
        name = PurePosixPath(new.spec).name
        out["diff"] = "".join(difflib.unified_diff(
            old_text.splitlines(keepends=True), new_text.splitlines(keepends=True),
            f"a/{name} ({ref})", f"b/{name} (now)"))
    return out


def _runtime_line(old: provenance.Lock, new: provenance.Lock, files: list[dict], check: dict,
                  runtimes: set) -> dict:
    after = _runtime_digest(files, "after")
    before = _runtime_digest(files, "before")
    title = f"mapc {new.mapc_version} {new.target} runtime"
    show = f"`mapc runtime --target {new.target} --show`"
    if after is None:
        line = "runtime: none in this build"
    elif before is None:
        line = f"runtime: new since then ({title}, sha256 {after[:12]}…): review it once: {show}"
    elif before == after:
        line = f"runtime: unchanged ({title}, sha256 {after[:12]}…)"
    else:
        line = (f"runtime: changed: mapc {old.mapc_version} → {new.mapc_version} {new.target} runtime (sha256 "
                f"{before[:12]}… → {after[:12]}…): review it once: {show}")
    if check.get("status") not in (None, "unchanged", "none"):
        line += "; " + check["line"].removeprefix("runtime: ")
    return {"line": line, "status": check.get("status"), "before": before, "after": after}


def _runtime_digest(files: list[dict], side: str) -> str | None:
    """The runtime's SHA-256 on one ``side`` (``before``/``after``): its package's manifest
    hash, or the one file's hash of a build from before the package (D72)."""
    mine = {f["path"]: f[side] for f in files if f.get("runtime") and f[side]}
    package = sorted(provenance.runtime_folder(p) for p in mine if provenance.is_runtime(p))
    if package:
        return provenance.runtime_sha256(mine, package[0])
    return next(iter(mine.values()), None)


# -- diffs and the spec lines behind each hunk -----------------------------------------------------
_MENTION = re.compile(r"""^\s*(?:#\s*|(?:def\s.*)?["']{1,3})(""" + _TOP
                      + r"""(?:\.[^\s.\[\]():,'"`]+|\[\d+\])*)(?:\s+\(line\s+(\d+)\))?(?=[\s:'"]|$)""")
_LINE_OF = re.compile(r"\(line (\d+)\)")


def _mention(line: str) -> tuple[str, int | None] | None:
    """The spec path (and line) a generated line names: a comment ``# records.x (line 3): ...``
    or a string starting with a spec path (a docstring, a warning's path)."""
    m = _MENTION.match(line)
    if m is None:
        return None
    path = m.group(1)
    if "." not in path and "[" not in path and line[m.end(1):m.end(1) + 1] != ":" and m.group(2) is None:
        return None  # a bare word is prose unless it labels: "name: the adapter"
    return path, int(m.group(2)) if m.group(2) else None


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def cause_of(lines: list[str], k: int) -> tuple[str, int | None] | None:
    """The spec path behind line ``k``: named on the line, or by the nearest comment enclosing
    it (at its indentation or less; at the top level, within its block of lines). A comment
    above an earlier ``if``/``elif``/``for`` at line k's own level describes that block, not k."""
    found = _mention(lines[k])
    if found:
        return found
    limit = _indent(lines[k]) if lines[k].strip() else 10 ** 6
    sibling = False  # just passed an earlier compound statement at line k's level: its comment is its own
    for j in range(k - 1, -1, -1):
        text = lines[j]
        if not text.strip():
            if limit == 0:
                return None
            continue
        ind = _indent(text)
        comment = text.lstrip().startswith("#")
        found = _mention(text) if ind <= limit and not (sibling and ind == limit and comment) else None
        if found:
            return found
        if not comment:
            sibling = ind == limit and text.rstrip().endswith(":")
            if ind < limit:
                limit = ind  # the header of the block line k is in
    return None


def _spec_lines(text: str | None) -> dict:
    """spec path -> (line, text of that line) of a spec's text (empty when unknown)."""
    if not text:
        return {}
    from mapc.core.diagnostics import format_path
    from mapc.spec.loader import load_text

    try:
        loaded, _ = load_text(text, "spec.yaml")
    except Exception:  # an old spec that no longer loads: its lines are only not named
        return {}
    rows = text.splitlines()
    out: dict[str, tuple[int, str]] = {}
    for table in (loaded.keys, loaded.values):
        for path, mark in table.items():
            key = format_path(path)
            if path and (key not in out or mark.line < out[key][0]) and 0 < mark.line <= len(rows):
                out[key] = (mark.line, rows[mark.line - 1].strip())
    return out


#: The provenance header's lines (mapc.pipeline.provenance.header_lines): they change with the spec's hash.
_HEADER = re.compile(r"^(?:#|<!--)?\s*(?:Generated by mapc |Spec: |Spec sha256: [0-9a-f]{64}$|Regenerate, from the "
                     r"output folder:)")


def _header_only(rows: list[str], span: range) -> bool:
    return all(k < 12 and _HEADER.match(rows[k]) for k in span)


def _changed_lines(old: str | None, new: str | None) -> set[int]:
    """Lines (1-based) of the new spec that its diff adds or changes (empty when either is unknown)."""
    if old is None or new is None:
        return set()
    matcher = difflib.SequenceMatcher(None, old.splitlines(), new.splitlines(), autojunk=False)
    return {k + 1 for tag, _, _, j1, j2 in matcher.get_opcodes() if tag != "equal" for k in range(j1, j2)}


def _range(start: int, stop: int) -> str:
    length = stop - start
    if length == 1:
        return str(start + 1)
    return f"{start if length == 0 else start + 1},{length}"


def _file_diff(sub: str, old: bytes, new: bytes, ref: str, spec_names) -> dict:
    if not sub.endswith(_DIFFED) or max(len(old), len(new)) > MAX_DIFF_BYTES:
        return {"diff": None, "hunks": []}
    try:
        a, b = old.decode("utf-8").splitlines(), new.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        return {"diff": None, "hunks": []}
    python = sub.endswith(".py")
    text = [f"--- a/{sub} ({ref})\n", f"+++ b/{sub} (now)\n"]
    hunks = []
    header = False
    for group in difflib.SequenceMatcher(None, a, b, autojunk=False).get_grouped_opcodes(3):
        edits = [op for op in group if op[0] != "equal"]
        if all(_header_only(a, range(i1, i2)) and _header_only(b, range(j1, j2)) for _, i1, i2, j1, j2 in edits):
            header = True  # the provenance header's spec hash: said once, not diffed
            continue
        causes: dict[str, dict] = {}
        body = []
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                body += [" " + x for x in a[i1:i2]]
                continue
            body += ["-" + x for x in a[i1:i2]] + ["+" + x for x in b[j1:j2]]
            if python:
                for side, rows, span in (("before", a, range(i1, i2)), ("after", b, range(j1, j2))):
                    for k in span:
                        _add_cause(causes, cause_of(rows, k), side, spec_names)
        at = f"@@ -{_range(group[0][1], group[-1][2])} +{_range(group[0][3], group[-1][4])} @@"
        named = ", ".join(_cause_text(c) for c in causes.values())
        text.append(at + (f" {named}" if named else "") + "\n")
        text += [x + "\n" for x in body]
        hunks.append({"header": at, "causes": list(causes.values())})
    return {"diff": "".join(text) if hunks else None, "hunks": hunks, "header_changed": header}


def _add_cause(causes: dict, found, side: str, spec_names) -> None:
    if found is None:
        return
    path, line = found
    names = spec_names[0 if side == "before" else 1]
    known = next((names[p] for p in [path] + _parents(path) if p in names), None)
    if line is None and known:
        line = known[0]
    cause = causes.setdefault(path, {"path": path, "line": None, "line_before": None, "spec_text": None})
    if side == "after":
        cause["line"] = line if line is not None else cause["line"]
        if known and known[0] == line:
            cause["spec_text"] = known[1]
        changed = spec_names[2]
        base = next((p for p in [path] + _parents(path) if p in names), None)
        if changed and base:  # the spec lines inside this part of the spec that its diff touched
            inside = {v for p, v in names.items() if v[0] in changed
                      and (p == base or p.startswith((base + ".", base + "[")))}
            cause["changed_spec_lines"] = [{"line": n, "text": t} for n, t in sorted(inside)]
    elif cause["line_before"] is None:
        cause["line_before"] = line


def _cause_text(c: dict) -> str:
    if c["line"] is not None:
        return f"{c['path']} (spec line {c['line']})"
    if c["line_before"] is not None:
        return f"{c['path']} (spec line {c['line_before']} before)"
    return c["path"]


# -- text ----------------------------------------------------------------------------------------
def format_since(rep: SinceReport) -> str:
    lines = [f"mapc review: {rep.out} ({rep.target} target) since {rep.ref}", rep.runtime["line"]]
    spec = rep.spec
    if spec["status"] == "unchanged":
        lines.append(f"spec: {spec['path']} unchanged (sha256 {spec['after'][:12]}…)")
    else:
        how = "" if spec["diff"] else ("; its old text is not known here (a git revision of a repository "
                                       "holding the spec shows it)")
        lines.append(f"spec: {spec['path']} changed (sha256 {spec['before'][:12]}… → {spec['after'][:12]}…){how}")
    for note in rep.notes:
        lines.append(f"note: {note}")
    if spec["diff"]:
        lines += ["", spec["diff"].rstrip("\n")]
    counts = {s: sum(f["status"] == s for f in rep.files) for s in ("changed", "added", "removed", "unchanged")}
    lines += ["", "FILES: " + ", ".join(f"{n} {s}" for s, n in counts.items())]
    for f in rep.files:
        if f["status"] != "unchanged":
            extra = " (the runtime: see above)" if f.get("runtime") else ""
            if f["status"] == "changed" and not f.get("runtime") and f.get("diff") is None and "diff" in f:
                extra = (" (only its header: the spec's hash)" if f.get("header_changed") else
                         " (not diffed: data, binary or larger than 1 MiB)")
            lines.append(f"  {f['status']:<8} {f['path']}{extra}")
    spec_name = PurePosixPath(spec["path"]).name
    for f in rep.files:
        if f.get("diff"):
            lines += ["", f"{f['path']}: {len(f['hunks'])} hunk(s)"]
            causes = {c["path"]: c for h in f["hunks"] for c in h["causes"]}
            if causes:
                lines.append("  caused by these spec lines (each hunk's header names its own):")
            for c in sorted(causes.values(), key=lambda c: (c["line"] or c["line_before"] or 0, c["path"])):
                where = (f"{spec_name}:{c['line']}" if c["line"] is not None else
                         f"{spec_name}:{c['line_before']} (before)" if c["line_before"] is not None else spec_name)
                lines.append(f"    {where:<16} {c['path']}" + (f": {c['spec_text']}" if c["spec_text"] else ""))
                for row in c.get("changed_spec_lines", []):
                    lines.append(f"      changed there: {spec_name}:{row['line']}: {row['text']}")
            lines.append(f["diff"].rstrip("\n"))
    if not any(f["status"] != "unchanged" for f in rep.files) and spec["status"] == "unchanged":
        lines += ["", "nothing changed since then"]
    return "\n".join(lines) + "\n"
