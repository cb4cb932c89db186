"""The runtime library that generated code carries with it.

Generated adapters are standalone: they cannot import mapc. Instead, the
helpers they need are written here as ordinary, tested Python modules, and
each build writes them, assembled into one module (:func:`shared_runtime`,
``mapc_runtime.py``), next to the entry file it generates. The module holds
every unit of the target's runtime modules, in a fixed order, with no spec
data: it is byte-identical for every spec built by one mapc version for one
target, so a reviewer reads it once per mapc version and checks its SHA-256
after that (``mapc review``, ``mapc runtime``). Keeping the helpers as real
code means they are linted, unit-tested and readable; writing them verbatim
means mapc's in-process execution (``mapc run``) and the generated adapters
run the very same code. (:func:`extract` still copies single units with their
dependencies: the expression compiler's standalone ``python_source`` uses it.)

Rules for runtime modules (``mapc/runtime/*.py`` listed in ``MODULES``):
- only standard-library imports, written as plain ``import x`` or
  ``from x import y`` at module top;
- every other top-level statement is a *unit*: a ``def``, a ``class`` or a
  simple assignment (``NAME = ...``); unit names are unique across modules;
- a unit may use other units and imported names; dependencies are found from
  the names it references, so no registry has to be kept by hand;
- what only some specs use stays out of what every adapter compiles: in a module
  of its own, which becomes a part of the package that only an entry file
  importing one of its names loads (``sessions_rt``: `carry` and counters), or
  in a part of :data:`LAZY_PARTS` for what only some specs or sources need (`merge`; D72, D79);
  measure a change's start-up with callgrind (docs/performance.md).
"""

from __future__ import annotations

import ast
import functools
import textwrap
from dataclasses import dataclass
from pathlib import Path

_HERE = Path(__file__).resolve().parent
_CORE = ("jmespath_rt", "mapping_rt", "records_rt", "sessions_rt", "eval_rt")

#: Runtime modules in the order their units are emitted: the core ones, then
#: every other ``*_rt.py`` (one per target) in name order, so a new target adds
#: its runtime file without editing this list.
MODULES = _CORE + tuple(sorted(p.stem for p in _HERE.glob("*_rt.py") if p.stem not in _CORE))


@dataclass(frozen=True)
class Unit:
    name: str
    module: str
    order: int
    source: str
    deps: frozenset[str]
    imports: frozenset[str]


def _referenced_names(node: ast.AST) -> tuple[set[str], set[str]]:
    """Names a unit uses, less those it imports itself (a function-local ``import hashlib``
    stays local: the generated module does not import it up front); and the names it binds
    inside (its functions' locals and arguments, nested ``def``s and classes)."""
    names: set[str] = set()
    local: set[str] = set()
    bound: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            (names if isinstance(sub.ctx, ast.Load) else bound).add(sub.id)
        elif isinstance(sub, (ast.Import, ast.ImportFrom)):
            local |= {(a.asname or a.name).split(".")[0] for a in sub.names}
        elif isinstance(sub, ast.arg):
            bound.add(sub.arg)
        elif isinstance(sub, (ast.FunctionDef, ast.ClassDef)) and sub is not node:
            bound.add(sub.name)
    return names - local, bound


def _module_level(refs: set[str], source: str) -> set[str]:
    """Of ``refs``, the names the unit ``source`` reads from the module's namespace, by
    Python's own scoping (``symtable``): a nested ``def signal`` or a local ``array`` named like
    a module import does not import it (each costs a stream's start-up the module's import)."""
    import symtable

    found: set[str] = set()
    top = symtable.symtable(source, "<unit>", "exec")
    scopes = [top]
    while scopes:
        scope = scopes.pop()
        for symbol in scope.get_symbols():
            if symbol.is_referenced() and (scope is top or symbol.is_global()):
                found.add(symbol.get_name())
        scopes.extend(scope.get_children())
    return refs & found


@functools.lru_cache(maxsize=None)
def _load() -> tuple[dict[str, Unit], dict[str, str]]:
    """Parse every runtime module once: units by name, import lines by bound name."""
    units: dict[str, Unit] = {}
    imports: dict[str, str] = {}
    # (name, module, names it references, names it binds inside, source): no syntax tree is
    # kept past its module, so parsing the runtime costs one module's tree of memory, not all
    # of them (`mapc run`)
    raw: list[tuple[str, str, set[str], set[str], str]] = []
    order = 0
    for module in MODULES:
        path = _HERE / f"{module}.py"
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
        lines = text.splitlines(keepends=True)
        for node in tree.body:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    bound = alias.asname or alias.name.split(".")[0]
                    imports[bound] = ast.unparse(ast.Import(names=[alias]))
                continue
            if isinstance(node, ast.ImportFrom):
                if node.module == "__future__":
                    continue
                for alias in node.names:
                    bound = alias.asname or alias.name
                    imports[bound] = ast.unparse(
                        ast.ImportFrom(module=node.module, names=[alias], level=0)
                    )
                continue
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                name = node.name
            elif (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
            ):
                name = node.targets[0].id
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                name = node.target.id
            elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
                continue  # module docstring
            else:
                raise RuntimeError(f"{path}:{node.lineno}: unsupported top-level statement")
            start = node.lineno - 1
            if getattr(node, "decorator_list", None):
                start = min(d.lineno for d in node.decorator_list) - 1
            # keep the comment block directly above the unit
            while start > 0 and lines[start - 1].lstrip().startswith("#"):
                start -= 1
            source = "".join(lines[start : node.end_lineno]).rstrip() + "\n"
            if name in units or any(r[0] == name for r in raw):
                raise RuntimeError(f"duplicate runtime unit {name!r}")
            raw.append((name, module, *_referenced_names(node), source))
        del tree, lines
    all_names = {r[0] for r in raw}
    for name, module, refs, bound, source in raw:
        if refs & bound & (all_names | set(imports)):  # a local named like a module-level name
            refs = _module_level(refs, source)
        units[name] = Unit(
            name=name,
            module=module,
            order=order,
            source=source,
            deps=frozenset((refs & all_names) - {name}),
            imports=frozenset(refs & set(imports)),
        )
        order += 1
    return units, imports


def unit_names() -> list[str]:
    """Every runtime unit, in emission order."""
    units, _ = _load()
    return sorted(units, key=lambda n: units[n].order)


def closure(names) -> list[str]:
    """The units ``names`` need (themselves included), in emission order."""
    units, _ = _load()
    seen: set[str] = set()
    stack = list(names)
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        if name not in units:
            raise KeyError(f"unknown runtime unit {name!r}")
        seen.add(name)
        stack.extend(units[name].deps)
    return sorted(seen, key=lambda n: units[n].order)


def imports_for(names) -> list[str]:
    """Sorted import statements needed by the closure of ``names``."""
    units, imports = _load()
    bound: set[str] = set()
    for name in closure(names):
        bound |= units[name].imports
    return sorted({imports[b] for b in bound}, key=lambda s: (s.startswith("from "), s))


def extract(names) -> str:
    """Source of the closure of ``names`` (no imports), ready to paste into a module."""
    units, _ = _load()
    return "\n\n\n".join(units[n].source for n in closure(names))


def namespace(names=None) -> dict:
    """Execute the extracted runtime (all units by default) into a fresh namespace.

    This is how mapc runs compiled code in-process: the same source text that
    generated files carry, executed once.
    """
    names = unit_names() if names is None else names
    code = "\n".join(imports_for(names)) + "\n\n" + extract(names)
    ns: dict = {"__name__": "mapc_runtime"}
    exec(compile(code, "<mapc-runtime>", "exec"), ns)  # noqa: S102 - our own source
    return ns


#: The package each build writes its runtime into, next to the entry file: its folder and
#: its import name (``from mapc_runtime import ...``).
RUNTIME_PACKAGE = "mapc_runtime"
RUNTIME_MODULE = RUNTIME_PACKAGE
#: Runtime modules every target's runtime holds, before the target's own. ``sessions_rt``
#: (merge, counters) is a part of its own that only entries using it import.
CORE = ("jmespath_rt", "mapping_rt", "records_rt", "sessions_rt")
#: Units only mapping a source runs (an RLViz ``stream``, a runner collecting a trace's
#: records). With everything only they need, they form the package's ``stream`` part, which
#: other parts reach through a forwarding function: a probe never compiles it (D72).
STREAM_ROOTS = ("rlviz_stream", "collect_records")
STREAM_PART = "stream"
#: Parts loaded on the first call of one of their roots, each with what only its roots use:
#: the stream, and what few traces need (D79): the reader of a JSON document streamed one
#: element at a time (never a JSON Lines trace), what it needs only for a value longer than a
#: window or a document of another shape (D97), what only a stream stopped at a host's
#: output limits runs (D96), what only a probe runs (reading and parsing
#: a source's prefix), CSV (only CSV sources), `iso8601()` (with `datetime`, 5 M
#: instructions to import), a loop's `merge` (17 M to compile, D104) and `subtrajectory`
#: (D109). Other parts call a root through a forwarding function that imports its part; a
#: part whose roots need nothing of their own is not made (its units stay where their
#: module puts them).
LAZY_PARTS = (
    (STREAM_PART, STREAM_ROOTS),
    ("document", ("JsonDocumentReader",)),
    ("document_long", ("skip_long", "read_long", "whole_document")),
    ("limits", ("output_limit",)),
    ("sniff", ("probe_source",)),
    ("csv", ("csv_rows", "csv_probe_values")),
    ("timestamps", ("_jp_iso8601",)),
    ("merge", ("MergedElements",)),
    ("subtrajectory", ("map_subtrajectory", "claim_subtrajectory")),
)
#: Units an RLViz probe runs (``adapter.py probe``: the entry stops before it imports its
#: mapping helpers), with the JMESPath functions probes' ``when`` use (``type(x) ==
#: 'array'``, ``starts_with``). With everything they use that is not in a lazy part they form
#: the ``probe`` part, imported first (a stream imports it too, a probe also ``sniff``); in a
#: runtime without :data:`PROBE_ENTRY` there is none (D76).
PROBE_ROOTS = ("rlviz_main", "source_probe", "_jp_type", "_jp_eq", "_jp_truthy", "_jp_starts_with",
               "_jp_ends_with", "_jp_contains", "_jp_length", "_jp_path")
PROBE_ENTRY = "rlviz_main"
PROBE_PART = "probe"
#: The JMESPath helpers most specs use (counted over the examples and library specs); with
#: what they use they stay in the ``jmespath_rt`` part, and the other functions (``sort_by``,
#: ``regex_*``, ``group_by``, ...) go to ``jmespath_more``, compiled only by an entry that
#: imports one of them (D76).
JMESPATH_COMMON = ("_jp_path", "_jp_type", "_jp_join", "_jp_eq", "_jp_truthy", "_jp_or", "_jp_and",
                   "_jp_flatten", "_jp_to_string", "_jp_parse_json", "_jp_pluck", "_jp_items", "_jp_get",
                   "_jp_concat", "_jp_starts_with", "_jp_contains", "_jp_length", "_jp_iso8601",
                   "_jp_index_by", "_jp_to_number", "_jp_coalesce", "_jp_sum", "_jp_gt", "_jp_lt",
                   "_jp_ge", "_jp_le")
JMESPATH_MORE = "jmespath_more"


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
    units: frozenset[str]
    #: the SHA-256 of the manifest of every file but ``__init__.py`` (which carries it)
    parts_sha256: str = ""

    @property
    def stamp(self) -> tuple[str, str]:
        """What ``__init__.py`` carries as ``RUNTIME`` and an entry file checks at import (D132)."""
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
    import hashlib

    lines = "".join(f"{digest}  {path}\n" for path, digest in sorted(digests, key=lambda d: d[0].encode()))
    return hashlib.sha256(lines.encode("utf-8")).hexdigest()


def _module_summary(module: str) -> str:
    """The first line of a runtime module's docstring."""
    doc = ast.get_docstring(ast.parse((_HERE / f"{module}.py").read_text(encoding="utf-8"))) or module
    return doc.strip().splitlines()[0].rstrip(".")


def shared_runtime(target: str, modules: tuple[str, ...]) -> SharedRuntime:
    """The runtime package of ``target``: the core modules and ``modules``, every unit of
    each (no tree-shaking), so the bytes depend only on mapc's version and the target."""
    return _shared_runtime(target, tuple(modules))


def _eager(units: dict[str, Unit], roots, lazy: set[str]) -> set[str]:
    """``roots`` and every unit they use, not following uses of ``lazy`` units."""
    seen: set[str] = set()
    stack = list(roots)
    while stack:
        name = stack.pop()
        if name not in seen:
            seen.add(name)
            stack.extend(d for d in units[name].deps if d not in lazy)
    return seen


def _lazy_parts(units: dict[str, Unit], names: list[str]) -> dict[str, set[str]]:
    """The units of each part of :data:`LAZY_PARTS` this runtime has: its roots and what only
    they use, not through another part's root; a unit that eager code or two lazy parts use
    stays eager (in its module's part)."""
    lazy = {part: set(roots) & set(names) for part, roots in LAZY_PARTS}
    lazy = {part: roots for part, roots in lazy.items() if roots}
    while True:
        roots = set().union(*lazy.values())
        reach = {part: _eager(units, r, roots) for part, r in lazy.items()}
        eager = _eager(units, set(names) - set().union(*reach.values()), roots)
        # a unit two lazy parts reach is eager, and so is what it uses
        twice = {n for p in reach for n in reach[p] if any(n in reach[q] for q in reach if q != p)}
        eager |= _eager(units, twice - roots, roots)
        own = {part: reach[part] - eager - twice for part in lazy}
        empty = [part for part in lazy if own[part] <= lazy[part]]
        if not empty:  # each part holds more than its roots
            return own
        for part in empty:  # its roots need nothing of their own: no such part
            del lazy[part]


def partition(units: dict[str, Unit], names: list[str], chosen: tuple[str, ...]) -> dict[str, list[str]]:
    """Units by the part (module of the package) that defines them, parts in load order.

    Each part of :data:`LAZY_PARTS` holds its roots and what only they use (``_lazy_parts``);
    the ``probe`` part, :data:`PROBE_ROOTS` and what they use besides that; every other unit
    stays in the part named after its runtime module. Parts import each other's units at their
    top, so a part's import compiles the parts it needs and no others; uses of a lazy part's
    root from another part go through a forwarding function instead. A runtime whose other
    parts use what the roots use (RELAI's, cap-evolve's stream roots) has no such part."""
    lazy = _lazy_parts(units, names)
    roots = {n for part, rs in LAZY_PARTS if part in lazy for n in rs if n in names}
    placed = set().union(*lazy.values())
    probe: set[str] = set()
    if PROBE_ENTRY in names:
        probe = _eager(units, set(PROBE_ROOTS) & set(names), set(STREAM_ROOTS)) - placed
    common = _eager(units, set(JMESPATH_COMMON) & set(names), set())
    placed |= probe
    parts = {PROBE_PART: [n for n in names if n in probe]}
    for m in chosen:
        parts[m] = [n for n in names if units[n].module == m and n not in placed
                    and (m != "jmespath_rt" or n in common)]
        if m == "jmespath_rt":
            parts[JMESPATH_MORE] = [n for n in names if units[n].module == m and n not in placed | common]
    parts = {m: ns for m, ns in parts.items() if ns}
    for part, own in lazy.items():
        parts[part] = [n for n in names if n in own]
    where = {n: p for p, ns in parts.items() for n in ns}
    # the parts' own imports must not go round in a circle (Python would see half a part)
    uses = {p: {where[d] for n in ns for d in units[n].deps if d not in roots or where[d] == p} - {p}
            for p, ns in parts.items()}
    order: list[str] = []
    while len(order) < len(parts):
        ready = [p for p in parts if p not in order and uses[p] <= set(order)]
        if not ready:
            stuck = sorted(p for p in parts if p not in order)
            raise RuntimeError(f"runtime parts use each other in a circle: {', '.join(stuck)}")
        order.append(ready[0])
    return {p: parts[p] for p in order}


def _import_block(lines: list[str]) -> str:
    return "\n".join(sorted(set(lines), key=lambda s: (s.startswith("from "), s)))


def _from_import(module: str, names: list[str]) -> str:
    one = f"from {module} import {', '.join(names)}"
    if len(one) <= 99:
        return one
    body = textwrap.wrap(", ".join(names) + ",", 95, initial_indent="    ", subsequent_indent="    ",
                         break_on_hyphens=False)
    return f"from {module} import (\n" + "\n".join(body) + "\n)"


def _forwarder(name: str, part: str) -> str:
    return (f"def {name}(*args, **kwargs):\n"
            f'    """The {part} part\'s {name}, imported on the first call."""\n'
            f"    from . import load_part\n\n"
            f'    return load_part("{part}").{name}(*args, **kwargs)\n')


@functools.lru_cache(maxsize=None)
def _shared_runtime(target: str, modules: tuple[str, ...]) -> SharedRuntime:
    import hashlib

    import mapc

    units, imports = _load()
    chosen = tuple(m for m in MODULES if m in CORE + modules)
    names = [n for n in unit_names() if units[n].module in chosen]
    outside = sorted({d for n in names for d in units[n].deps if units[d].module not in chosen})
    if outside:
        raise RuntimeError(f"the {target} runtime lacks units its units use: {', '.join(outside)}")
    parts = partition(units, names, chosen)
    where = {n: p for p, ns in parts.items() for n in ns}
    # the lazy parts' roots, which other parts call through a forwarding function
    roots = {n for part, rs in LAZY_PARTS if part in parts for n in rs if n in where and where[n] == part}
    title = f"mapc {mapc.__version__} {target} runtime"
    files: dict[str, str] = {}
    for part, part_names in parts.items():
        std = [imports[b] for n in part_names for b in units[n].imports]
        used = {d for n in part_names for d in units[n].deps if where[d] != part}
        lazy = sorted(d for d in used if d in roots)
        own: dict[str, list[str]] = {}
        for d in sorted(used - set(lazy), key=lambda d: units[d].order):
            own.setdefault(where[d], []).append(d)
        relative = [_from_import(f".{p}", own[p]) for p in parts if p in own]
        if part in _PART_SUMMARIES:
            from_modules = ", ".join(m for m in chosen if any(units[n].module == m for n in part_names))
            summary = f"The units {_PART_SUMMARIES[part]} (from {from_modules})"
        elif part == JMESPATH_MORE:
            summary = "The JMESPath functions fewer specs use (the others are in jmespath_rt)"
        else:
            summary = _module_summary(part)
        body = [units[n].source.rstrip("\n") for n in part_names] + [
            _forwarder(d, where[d]).rstrip("\n") for d in lazy]
        files[f"{RUNTIME_PACKAGE}/{part}.py"] = (
            f"# {title}, part {part}. DO NOT EDIT (see __init__.py).\n"
            f'"""{summary}."""\n\n'
            + (_import_block(std) + "\n" if std else "")
            + ("\n" if std and relative else "")
            + ("\n".join(relative) + "\n" if relative else "")
            + "\n\n" + "\n\n\n".join(body) + "\n"
        )
    digests = []
    for path, text in files.items():
        compile(text, path, "exec")  # the runtime must at least compile
        digests.append((path, hashlib.sha256(text.encode("utf-8")).hexdigest()))
    parts_sha256 = manifest_sha256(digests)
    init = f"{RUNTIME_PACKAGE}/__init__.py"
    files[init] = _package_init(target, title, chosen, parts, parts_sha256)
    compile(files[init], init, "exec")
    digests.append((init, hashlib.sha256(files[init].encode("utf-8")).hexdigest()))
    ordered = tuple(sorted(files.items(), key=lambda f: f[0].encode()))
    return SharedRuntime(target, mapc.__version__, chosen, ordered, manifest_sha256(digests),
                         frozenset(names), parts_sha256)


#: What each computed part holds, in its own docstring and in ``__init__.py``'s.
_PART_SUMMARIES = {
    STREAM_PART: "only mapping a source runs",
    PROBE_PART: "a probe runs",
    "document": "only a JSON document streamed one element at a time runs",
    "document_long": "a streamed document runs for a value longer than a window",
    "limits": "a stream runs only at a host's output limits",
    "sniff": "only a probe runs, reading and parsing the source's first bytes",
    "csv": "only CSV sources run",
    "timestamps": "of iso8601() and datetime: only specs that convert times run",
    "merge": "of a loop's `merge`: only specs that merge elements run",
    "subtrajectory": "only a spec with `subtrajectory` runs (a child trajectory)",
}
_INIT_SUMMARIES = {
    STREAM_PART: "the units only mapping a source runs (a probe never imports it)",
    PROBE_PART: "the units a probe and a stream run (a stream imports no part a probe alone needs)",
    "document": "the reader of a JSON document streamed one element at a time (never JSON Lines)",
    "document_long": "what that reader needs for a value longer than a window, or another shape",
    "limits": "what a stream runs only when its output reaches a host's limits",
    "sniff": "what only a probe runs: reading and parsing the first bytes of a source",
    "csv": "reading CSV sources (their stream and their probe)",
    "timestamps": "iso8601(), with what only it needs (datetime)",
    "merge": "a loop's `merge` (the rest of sessions_rt: carry, counters)",
    "subtrajectory": "mapping a file a trace names as a child trajectory (`subtrajectory`)",
    JMESPATH_MORE: "the JMESPath functions fewer specs use",
}


def _package_init(target: str, title: str, chosen: tuple[str, ...], parts: dict[str, list[str]],
                  parts_sha256: str) -> str:
    """``mapc_runtime/__init__.py``: which part defines each name; a part is imported on the
    first use of one of its names (PEP 562), without writing ``__pycache__/`` here."""
    head = [
        f"# {title}. DO NOT EDIT: every spec built by this mapc version for the",
        f"# {target} target gets these same bytes; `mapc review` checks them against the",
        "# SHA-256 that `mapc runtime` prints (see docs/review.md).",
        f'"""mapc\'s {target} runtime: the helpers the generated entry file next to this folder imports.',
        "",
        "Standard library only. Each part below is imported when the entry file first imports",
        "one of its names, so a probe compiles only the parts it runs. Parts:",
        "",
    ]
    for part in parts:
        summary = _INIT_SUMMARIES.get(part) or _module_summary(part)
        head.append(f"- {part}: {summary}")
    head.append('"""')
    # the names as one text a part: a tuple of string constants costs a stream and a probe
    # 2.5 M more instructions to compile (D79)
    table = ["#: the part that defines each name", "_PARTS = {name: part for part, names in ("]
    for part, names in parts.items():
        table.append(f'    ("{part}", """')
        table += textwrap.wrap(" ".join(names), 91, initial_indent="        ",
                               subsequent_indent="        ", break_on_hyphens=False)
        table.append('    """),')
    table.append(") for name in names.split()}")
    branches = []
    for i, part in enumerate(parts):
        branches.append(f'        {"if" if i == 0 else "elif"} name == "{part}":')
        branches.append(f"            from . import {part} as part")
    load = [
        "def load_part(name):",
        '    """The part ``name`` of this runtime, imported without writing __pycache__/ into this',
        '    folder (RLViz digests it, and rejects a plugin that changes while it runs)."""',
        "    write_bytecode, sys.dont_write_bytecode = sys.dont_write_bytecode, True",
        "    try:",
        *branches,
        "        else:",
        '            raise ImportError(f"{__name__} has no part {name!r}")',
        "    finally:",
        "        sys.dont_write_bytecode = write_bytecode",
        "    return part",
    ]
    getattr_ = [
        "def __getattr__(name):",
        '    """``from mapc_runtime import x`` imports the part that defines ``x``."""',
        "    part = _PARTS.get(name)",
        "    if part is None:",
        '        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")',
        "    return getattr(load_part(part), name)",
    ]
    stamp = [
        "#: this runtime and the SHA-256 of its parts (the manifest of every file but this one), which",
        "#: the entry file checks at import; `mapc review` checks every file's bytes (D132)",
        "RUNTIME = (",
        f'    "{title}",',
        f'    "{parts_sha256}",',
        ")",
    ]
    return ("\n".join(head) + "\n\nimport os\nimport sys\n\n" + "\n".join(stamp) + "\n\n\n"
            + _OFF_THE_PATH + "\n\n" + "\n".join(table)
            + "\n\n\n" + "\n".join(load) + "\n\n\n" + "\n".join(getattr_) + "\n")


#: The start of ``__init__.py``: run as a script, the entry's folder comes off ``sys.path`` (D92).
_OFF_THE_PATH = '''\
def _off_the_path():
    """Run as a script (`python3 adapter.py`), the entry file's folder is first on sys.path,
    where a module put beside it (json.py) would be imported in place of the standard
    library's: once this package is imported, that folder comes off (its parts are found
    through the package). Imported by a host, the host's sys.path is left as it is."""
    main = getattr(sys.modules.get("__main__"), "__file__", None)
    folder = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    if main and os.path.dirname(os.path.realpath(main)) == folder:
        sys.path[:] = [p for p in sys.path if os.path.realpath(p or os.curdir) != folder]


if "__file__" in globals():  # a package on disk (mapc also runs it in process, without one)
    _off_the_path()
'''
