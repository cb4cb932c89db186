"""The runtime package a build writes next to its entry file (``mapc_runtime/``), by copying.

Each file a build ships is a file of :mod:`mapc.runtime`, byte for byte, below a header
comment naming the mapc version and target (its ``__init__.py``'s header also carries the
stamp the entry file checks at import, D132). A target ships the core modules and its own
(``Target.runtime_modules``); the bytes depend only on mapc's version and the target, so a
reviewer reads them once per version and after that compares them with mapc's source (``mapc
review``: identical, or a unified diff). No linker: the modules import each other
(``from .records_rt import put``), and what only some specs need is a module of its own
imported inside the function that needs it (D135).

In process (``mapc run``'s compiler side, ``Mapper``, ``mapc test``'s evaluation, compiled
expressions) mapc imports the very same modules (:func:`namespace`).
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib
from dataclasses import dataclass
from pathlib import Path

import mapc.runtime
from mapc.core.version import __version__

#: The package each build writes its runtime into, next to the entry file: its folder and
#: its import name (``from mapc_runtime.records_rt import put``).
RUNTIME_PACKAGE = "mapc_runtime"
RUNTIME_MODULE = RUNTIME_PACKAGE
SOURCE_DIR = Path(mapc.runtime.__file__).resolve().parent
#: The modules every target's runtime holds, before the target's own: those an entry names
#: first (small: a probe loads them), then those their functions import on first call.
CORE = ("jmespath_errors", "jmespath_rt", "mapping_rt", "records_rt", "sessions_rt", "jmespath_more",
        "timestamps", "probe", "stream", "document", "document_long", "limits", "sniff", "csv", "merge", "subtrajectory")
#: The line of ``__init__.py``'s header that carries the stamp's title (the next line, its
#: digest), read by the package itself.
STAMP_PREFIX = "# RUNTIME: "


def strip_header(text: str) -> str:
    """A shipped file's text without its leading ``#`` lines: its source in mapc/runtime/."""
    lines = text.splitlines(keepends=True)
    i = 0
    while i < len(lines) and lines[i].startswith("#"):
        i += 1
    return "".join(lines[i:])


def source_text(module: str) -> str:
    """The text of ``mapc/runtime/<module>.py``."""
    return (SOURCE_DIR / f"{module}.py").read_text(encoding="utf-8")


@functools.lru_cache(maxsize=None)
def defined_names(module: str) -> tuple[str, ...]:
    """The names a runtime module defines at its top (defs, classes, assignments)."""
    found = []
    for node in ast.parse(source_text(module)).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            found.append(node.name)
        elif isinstance(node, ast.Assign):
            found += [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            found.append(node.target.id)
    return tuple(found)


def all_modules() -> tuple[str, ...]:
    """Every runtime module: the core ones, then the targets' in name order."""
    others = sorted(p.stem for p in SOURCE_DIR.glob("*.py") if p.stem not in CORE + ("__init__",))
    return CORE + tuple(others)


def where_defined(modules) -> dict[str, str]:
    """Each name of ``modules`` -> the module an entry imports it from: the first in order that
    defines it (``sessions_rt.MergedElements`` loads ``merge`` on its first call)."""
    where: dict[str, str] = {}
    for module in modules:
        for name in defined_names(module):
            where.setdefault(name, module)
    return where


@functools.lru_cache(maxsize=None)
def unit_names() -> tuple[str, ...]:
    """Every name the runtime modules define (what generated code may call)."""
    return tuple(where_defined(all_modules()))


def namespace(names=None) -> dict:
    """Every name of every runtime module, imported from :mod:`mapc.runtime` (in-process
    execution runs the very modules a build ships), in a new dict. ``names`` is accepted for
    the callers that named what they use; the namespace holds them all."""
    return dict(_namespace())


@functools.lru_cache(maxsize=None)
def _namespace() -> dict:
    found: dict = {}
    for module in reversed(all_modules()):  # the first module that defines a name wins
        loaded = importlib.import_module(f"mapc.runtime.{module}")
        found.update((n, getattr(loaded, n)) for n in defined_names(module))
    return found


@dataclass(frozen=True)
class SharedRuntime:
    """The runtime package of one target: its files, SHA-256 and where it came from."""

    target: str
    mapc_version: str
    modules: tuple[str, ...]
    #: (path, text) of each file, paths relative to the entry file's folder
    #: (``mapc_runtime/__init__.py``, ...), sorted by path
    files: tuple[tuple[str, str], ...]
    sha256: str
    #: every name the package's modules define -> its module
    names: tuple[tuple[str, str], ...]
    #: the SHA-256 of the manifest of every file but ``__init__.py`` (which carries it)
    parts_sha256: str = ""

    @property
    def units(self) -> frozenset[str]:
        return frozenset(n for n, _ in self.names)

    @property
    def stamp(self) -> tuple[str, str]:
        """What ``__init__.py``'s header carries and an entry file checks at import (D132)."""
        return (self.title, self.parts_sha256)

    @property
    def title(self) -> str:
        """How reviews name it: ``mapc 0.1.0 rlviz runtime``."""
        return f"mapc {self.mapc_version} {self.target} runtime"

    @property
    def text(self) -> str:
        """Every file, each after a ``# ==> path <==`` line (``mapc runtime --show``)."""
        return "".join(f"# ==> {path} <==\n{text}" for path, text in self.files)

    @property
    def lines(self) -> int:
        return sum(text.count("\n") for _, text in self.files)

    def files_at(self, folder: str = "") -> dict[str, bytes]:
        """The files to write next to an entry file in ``folder`` (relative, '' for the top)."""
        prefix = f"{folder}/" if folder else ""
        return {prefix + path: text.encode("utf-8") for path, text in self.files}


def is_runtime_path(rel: str) -> bool:
    """A path (relative to an output folder) inside a runtime package."""
    return RUNTIME_PACKAGE in rel.replace("\\", "/").split("/")[:-1]


def manifest_sha256(digests) -> str:
    """The runtime's SHA-256: of its manifest, one ``<sha256 of the file>  <path>`` line per
    file (``sha256sum``'s format), paths relative to the package's parent, sorted by path
    bytes. So ``cd FOLDER && LC_ALL=C sha256sum mapc_runtime/*.py | sha256sum`` prints it."""
    lines = "".join(f"{digest}  {path}\n" for path, digest in sorted(digests, key=lambda d: d[0].encode()))
    return hashlib.sha256(lines.encode("utf-8")).hexdigest()


def shared_runtime(target: str, modules: tuple[str, ...]) -> SharedRuntime:
    """The runtime package of ``target``: ``__init__``, the core modules and ``modules``,
    copied from mapc/runtime/ below a header, so the bytes depend only on mapc's version and
    the target."""
    return _shared_runtime(target, tuple(modules))


def _relative_imports(text: str) -> set[str]:
    """The sibling modules a runtime module imports (at its top or inside a function)."""
    return {node.module for node in ast.walk(ast.parse(text))
            if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module}


@functools.lru_cache(maxsize=None)
def _shared_runtime(target: str, modules: tuple[str, ...]) -> SharedRuntime:
    chosen = CORE + tuple(m for m in modules if m not in CORE)
    title = f"mapc {__version__} {target} runtime"
    files: dict[str, str] = {}
    for module in chosen:
        text = source_text(module)
        missing = _relative_imports(text) - set(chosen)
        if missing:
            raise RuntimeError(f"the {target} runtime lacks modules {module} imports: {', '.join(sorted(missing))}")
        files[f"{RUNTIME_PACKAGE}/{module}.py"] = (
            f"# {title}: mapc/runtime/{module}.py. DO NOT EDIT (see __init__.py).\n" + text)
    digests = [(path, hashlib.sha256(text.encode("utf-8")).hexdigest()) for path, text in files.items()]
    parts_sha256 = manifest_sha256(digests)
    init = f"{RUNTIME_PACKAGE}/__init__.py"
    files[init] = (
        f"# {title}. DO NOT EDIT: every spec built by this mapc version\n"
        f"# for the {target} target gets these same bytes, mapc/runtime/ of mapc's source below\n"
        "# these lines; `mapc review` shows any difference as a diff (see docs/review.md).\n"
        f"{STAMP_PREFIX}{title}\n# RUNTIME SHA-256: {parts_sha256}\n" + source_text("__init__"))
    digests.append((init, hashlib.sha256(files[init].encode("utf-8")).hexdigest()))
    ordered = tuple(sorted(files.items(), key=lambda f: f[0].encode()))
    names = tuple(sorted(where_defined(chosen).items()))
    return SharedRuntime(target, __version__, chosen, ordered, manifest_sha256(digests),
                         names, parts_sha256)


def source_diff(files: dict[str, str]) -> list[str]:
    """Each file of a runtime package (path -> text as on disk) against this mapc's
    ``mapc/runtime/``, below the file's header comment: the unified diff of what differs
    (``mapc review``), empty when every file is mapc's source byte for byte."""
    import difflib

    out: list[str] = []
    for rel, text in sorted(files.items()):
        module = rel.rsplit("/", 1)[-1].removesuffix(".py")
        path = SOURCE_DIR / f"{module}.py"
        source = path.read_text(encoding="utf-8") if path.is_file() and module.isidentifier() else ""
        body = strip_header(text)
        if body != source:
            out += [line.rstrip("\n") for line in difflib.unified_diff(
                source.splitlines(keepends=True), body.splitlines(keepends=True),
                f"mapc/runtime/{module}.py" if source else "/dev/null", rel, n=2)]
    return out


# --- standalone source of JMESPath helpers (``CompiledExpression.python_source``) -------------
#: The modules a compiled expression's helpers live in.
EXPRESSION_MODULES = ("jmespath_errors", "jmespath_rt", "jmespath_more", "timestamps")


@functools.lru_cache(maxsize=None)
def _expression_units() -> tuple[dict[str, tuple[str, frozenset[str]]], dict[str, str]]:
    """Each top-level definition of the JMESPath modules: (source, the names of the others
    it uses), and their standard-library imports by bound name. Sibling imports (at the top
    or inside a function) are dropped from the source: the units they name are pasted too."""
    import symtable

    units: dict[str, tuple[str, frozenset[str]]] = {}
    imports: dict[str, str] = {}
    for module in EXPRESSION_MODULES:
        text = source_text(module)
        lines = text.splitlines(keepends=True)
        for node in ast.parse(text).body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                if getattr(node, "level", 0) == 0:
                    for alias in node.names:
                        imports[alias.asname or alias.name.split(".")[0]] = ast.unparse(
                            type(node)(**{**node.__dict__, "names": [alias]}))
                continue
            if isinstance(node, ast.Expr):
                continue  # the docstring
            name = node.name if isinstance(node, (ast.FunctionDef, ast.ClassDef)) else node.targets[0].id
            start = node.lineno - 1
            while start > 0 and lines[start - 1].lstrip().startswith("#"):
                start -= 1
            body = [ln for ln in lines[start:node.end_lineno] if not ln.lstrip().startswith("from .")]
            source = "".join(body).rstrip() + "\n"
            refs: set[str] = set()
            scopes = [symtable.symtable(source, "<unit>", "exec")]
            while scopes:
                scope = scopes.pop()
                refs |= {s.get_name() for s in scope.get_symbols()
                         if s.is_referenced() and (s.is_global() or scope.get_type() == "module")}
                scopes.extend(scope.get_children())
            units[name] = (source, frozenset(refs))
    for name, (source, refs) in list(units.items()):
        # a name a sibling import bound inside a function is that sibling's unit
        local = {a.asname or a.name for node in ast.walk(ast.parse(source))
                 if isinstance(node, ast.ImportFrom) and node.level == 1 for a in node.names}
        units[name] = (source, frozenset((refs | local) - {name}))
    return units, imports


def extract(names) -> tuple[list[str], str]:
    """The imports and the source (in the modules' order) of ``names`` and what they use."""
    units, imports = _expression_units()
    seen: set[str] = set()
    stack = list(names)
    while stack:
        name = stack.pop()
        if name not in seen and name in units:
            seen.add(name)
            stack.extend(units[name][1])
    order = [n for n in units if n in seen]
    bound = {r for n in order for r in units[n][1] if r in imports}
    lines = sorted({imports[b] for b in bound}, key=lambda s: (s.startswith("from "), s))
    return lines, "\n\n\n".join(units[n][0].rstrip("\n") for n in order) + "\n"
