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
  the names it references, so no registry has to be kept by hand.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from pathlib import Path

_HERE = Path(__file__).resolve().parent
_CORE = ("jmespath_rt", "mapping_rt", "records_rt", "eval_rt")

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


def _referenced_names(node: ast.AST) -> set[str]:
    """Names a unit uses, less those it imports itself (a function-local ``import hashlib``
    stays local: the generated module does not import it up front)."""
    names: set[str] = set()
    local: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            names.add(sub.id)
        elif isinstance(sub, (ast.Import, ast.ImportFrom)):
            local |= {(a.asname or a.name).split(".")[0] for a in sub.names}
    return names - local


@functools.lru_cache(maxsize=None)
def _load() -> tuple[dict[str, Unit], dict[str, str]]:
    """Parse every runtime module once: units by name, import lines by bound name."""
    units: dict[str, Unit] = {}
    imports: dict[str, str] = {}
    raw: list[tuple[str, str, ast.AST, str]] = []
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
            raw.append((name, module, node, source))
    all_names = {r[0] for r in raw}
    for name, module, node, source in raw:
        refs = _referenced_names(node)
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


#: The file each build writes its runtime into, next to the entry file, and its module name.
RUNTIME_FILE = "mapc_runtime.py"
RUNTIME_MODULE = "mapc_runtime"
#: Runtime modules every target's runtime holds, before the target's own.
CORE = ("jmespath_rt", "mapping_rt", "records_rt")


@dataclass(frozen=True)
class SharedRuntime:
    """The runtime module of one target: its text, SHA-256 and where it came from."""

    target: str
    mapc_version: str
    modules: tuple[str, ...]
    text: str
    sha256: str
    units: frozenset[str]

    @property
    def title(self) -> str:
        """How reviews name it: ``mapc 0.1.0 rlviz runtime``."""
        return f"mapc {self.mapc_version} {self.target} runtime"


def _module_summary(module: str) -> str:
    """The first line of a runtime module's docstring."""
    doc = ast.get_docstring(ast.parse((_HERE / f"{module}.py").read_text(encoding="utf-8"))) or module
    return doc.strip().splitlines()[0].rstrip(".")


def shared_runtime(target: str, modules: tuple[str, ...]) -> SharedRuntime:
    """The runtime module of ``target``: the core modules and ``modules``, every unit of
    each (no tree-shaking), so the bytes depend only on mapc's version and the target."""
    return _shared_runtime(target, tuple(modules))


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
    bound: set[str] = set()
    for name in names:
        bound |= units[name].imports
    import_lines = sorted({imports[b] for b in bound}, key=lambda s: (s.startswith("from "), s))
    head = [
        f"# mapc {mapc.__version__} {target} runtime. DO NOT EDIT: every spec built by this mapc",
        f"# version for the {target} target gets these same bytes; `mapc review` checks them",
        "# against the SHA-256 that `mapc runtime` prints (see docs/review.md).",
    ]
    doc = [
        f'"""mapc\'s {target} runtime: the helpers the generated entry file next to it imports.',
        "",
        "Standard library only. Modules, in order:",
        "",
    ]
    doc += [f"- {m}: {_module_summary(m)}" for m in chosen]
    doc += ['"""']
    sections = []
    for module in chosen:
        body = "\n\n\n".join(units[n].source.rstrip("\n") for n in names if units[n].module == module)
        sections.append(f"# --- {module} ---\n{body}")
    text = (
        "\n".join(head) + "\n"
        + "\n".join(doc) + "\n\n"
        + "\n".join(import_lines) + "\n\n\n"
        + "\n\n\n".join(sections) + "\n"
    )
    compile(text, RUNTIME_FILE, "exec")  # the runtime must at least compile
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return SharedRuntime(target, mapc.__version__, chosen, text, digest, frozenset(names))
