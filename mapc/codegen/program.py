"""Assemble a standalone Python module from the pieces of one spec.

A generated entry file is, top to bottom: header, docstring, one import block
(stdlib, the check that ``mapc_runtime/`` is the runtime it was built with, then
``from mapc_runtime.MODULE import ...`` of the runtime names it calls, see
:func:`mapc.core.runtime_files.shared_runtime`), constants from the spec, the probe,
the compiled expressions and mapping functions, the diagnostics tables
(``SPEC_PLACES``, ``SPEC_LOOPS``: read only when something fails), and the
target's entry code. Which runtime units and imports are needed is read
off the assembled code itself (names it references), so nothing has to be
listed by hand.
"""

from __future__ import annotations

import ast
import functools
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path

from mapc.core import runtime_files
from mapc.codegen.expressions import ExprTable
from mapc.codegen.mapping import MappingGenerator
from mapc.codegen.places import places_source, spec_places
from mapc.codegen.pysrc import Writer, literal, module_docstring
from mapc.codegen.wrap import wrap_line
from mapc.spec import ir


@dataclass(frozen=True)
class Program:
    """The target-independent parts of a generated module."""

    spec: ir.Spec
    constants: tuple[Constant, ...]
    agent: str
    mapping: str
    probe: str
    evaluation: str
    #: spec places the code names, and each level's loops (see places.py); a module keeps
    #: only the entries of the code it includes
    places: dict = field(default_factory=dict, compare=False)
    loops: dict = field(default_factory=dict, compare=False)
    #: places the runtime derives from the mapping's ``events.put`` calls (mapping.py)
    derived: frozenset = field(default_factory=frozenset, compare=False)


@dataclass(frozen=True)
class Constant:
    """Module constants from the spec under one comment: each line assigns some names, and
    only the names the code uses are written."""

    comment: str
    lines: tuple[tuple[tuple[str, str], ...], ...]  # per line: (name, Python source of its value)

    @property
    def names(self) -> set[str]:
        return {name for line in self.lines for name, _ in line}

    def text(self, used: set[str]) -> str:
        w = Writer()
        for line in self.lines:
            kept = [(n, v) for n, v in line if n in used]
            text = f"{', '.join(n for n, _ in kept)} = {', '.join(v for _, v in kept)}"
            if len(kept) > 1 and len(text) > 99:
                w.lines += [part for n, v in kept for part in wrap_line(f"{n} = {v}")]
            elif kept:
                w.lines += wrap_line(text)
        if not w.lines:
            return ""
        return "# " + self.comment + "\n" + w.text()


def _spec_line(spec: ir.Spec, path: tuple) -> str:
    mark = spec.locate(tuple(path), key=True) if spec.locate else None
    return f" (line {mark.line})" if mark is not None and mark.line else ""


def _constants(spec: ir.Spec) -> tuple[Constant, ...]:
    src = spec.source
    tables = f"tables{_spec_line(spec, ('tables',))}" if spec.tables else "tables: none in the spec"
    csv = ()
    if src.container == "csv":
        csv = (Constant(f"source.columns, source.delimiter{_spec_line(spec, ('source', 'columns'))}: csv cells", (
            (("CSV_COLUMNS", literal(dict(src.columns))), ("CSV_DELIMITER", literal(src.delimiter))),
        )),)
    tables_line = (("TABLES", literal(dict(spec.tables))),)
    return (
        Constant(f"source{_spec_line(spec, ('source',))}: format, probe.require, read bounds, invalid_lines"
                 + ("" if spec.tables else "; no tables"), (
            (("FORMAT", literal(src.format)), ("REQUIRED", literal(tuple(tuple(p) for p in src.probe.require))))
            + (() if spec.tables else tables_line),
            (("MAX_BYTES", str(src.max_bytes)), ("MAX_LINE_BYTES", str(src.max_line_bytes)),
             ("INVALID_LINES", literal(src.invalid_lines))),
        )),
        *csv,
        *((Constant(f"{tables} ($tables)", (tables_line,)),) if spec.tables else ()),
    )


def _agent_constant(spec: ir.Spec) -> str:
    """``AGENT``: only modules that run tasks (RELAI, cap-evolve) include it."""
    w = Writer()
    if spec.agent is not None:
        a = spec.agent
        agent = {
            "command": list(a.command) if a.command else None,
            "trace": a.trace,
            "replay": a.replay,
            "timeout": a.timeout,
            "env": dict(a.env),
            "seed_env": a.seed_env,
        }
        w.comment("agent: how a task is run (argv, no shell) or replayed")
        w.line(f"AGENT = {literal(agent)}")
    return w.text()


def _probe(spec: ir.Spec, exprs: ExprTable) -> str:
    """``probe``: the runtime's ``source_probe`` with the spec's settings and its ``when`` test."""
    src = spec.source
    p = src.probe
    w = Writer()
    when = "None"
    if p.when is not None:  # tested only on a value that has the required fields: an object
        when = exprs.function(p.when, object_root=bool(p.require))
    w.comment(f"source.probe{_spec_line(spec, ('source', 'probe'))}")
    args = ["FORMAT", literal(src.container), str(p.bytes), str(p.lines), "REQUIRED", when,
            literal(p.confidence), "TABLES"]
    dotted = tuple(".".join(map(str, path)) for path in src.probe.require)
    if src.container == "csv":
        args += ["None" if dotted == tuple(p.require_text) else literal(tuple(p.require_text)),
                 "(CSV_COLUMNS, CSV_DELIMITER)"]
    elif dotted != tuple(p.require_text):
        args.append(literal(tuple(p.require_text)))
    w.line(f"probe = source_probe({', '.join(args)})")
    return w.text()


def build_program(spec: ir.Spec, semantics: bool = True, raw_events: bool = False) -> Program:
    """The spec's generated code; ``semantics=False`` leaves out what only a semantic view
    of events reads (see :attr:`mapc.targets.Target.semantic_views`); ``raw_events`` copies
    each event's source element into `raw` (:meth:`mapc.targets.Target.raw_events`)."""
    exprs = ExprTable()
    generator = MappingGenerator(spec, exprs, semantics, raw_events)
    mapping = generator.generate()
    # the probe gets its own expression table: targets that never probe leave it all out
    probe_exprs = ExprTable()
    probe_def = _probe(spec, probe_exprs)
    probe = "\n\n\n".join(p for p in (probe_exprs.source().strip(), probe_def.strip()) if p) + "\n"
    from mapc.codegen.evaluation import generate_evaluation

    # evaluators get their own table too: the RLViz adapter does not score
    eval_exprs = ExprTable()
    evaluation = generate_evaluation(spec, eval_exprs)
    evaluation = "\n\n\n".join(p for p in (eval_exprs.source().strip(), evaluation.strip()) if p) + "\n"
    code = "\n".join((mapping, probe, evaluation))
    return Program(
        spec=spec,
        constants=_constants(spec),
        agent=_agent_constant(spec),
        mapping=mapping,
        probe=probe,
        evaluation=evaluation,
        places=spec_places(spec, [exprs, probe_exprs, eval_exprs], code, generator.runtime_places,
                           generator.rule_places),
        loops=generator.loops,
        derived=frozenset(generator.runtime_places),
    )


def _referenced(code: str) -> set[str]:
    tree = ast.parse(code)
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}


def _defined(code: str) -> set[str]:
    tree = ast.parse(code)
    out = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, ast.Assign):
            out |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            out |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return out


def module_source(
    program: Program,
    *,
    entry: str,
    docstring: str,
    header: str = "",
    units: tuple[str, ...] = (),
    with_evaluation: bool = False,
    with_probe: bool = True,
    prelude: str = "",
    shared=None,
    keep: tuple[str, ...] = (),
    check_runtime: bool = True,
) -> str:
    """The full text of a generated entry file (``adapter.py``, ``run.py``).

    ``entry`` is the target's own code (usually a few lines calling runtime
    units); the runtime units the code references are imported from the
    runtime package next to it (:data:`mapc.core.runtime_files.RUNTIME_PACKAGE`), and
    ``units`` names more to import (``mapc run`` uses it); ``with_probe=False``
    leaves out the probe (hosts that never probe a source); ``prelude`` is
    placed right after the imports (e.g. a host-package import for cap-evolve);
    ``shared``, the target's runtime package (:class:`mapc.core.runtime_files.SharedRuntime`), checks
    that it has every unit the entry imports, and the entry checks at import that the
    package next to it is that runtime (D132); ``keep`` names constants to write even if no
    code names them (callers that read them from the namespace); ``check_runtime=False``
    leaves the stamp check out (programs mapc runs itself, with its own runtime). One import block at the
    top names the runtime modules the code calls, which are small: what a probe never runs
    is imported by the runtime's functions on their first call (D135).
    """
    parts = [program.mapping] + ([program.probe] if with_probe else [])
    if with_evaluation:
        parts.append(program.evaluation)
    parts.append(entry)
    body = "\n\n".join(p.strip() + "\n" for p in parts if p.strip())
    where = dict(shared.names) if shared is not None else runtime_files.where_defined(runtime_files.all_modules())
    named = _referenced(body) | set(keep)
    constants = "".join(c.text(named) for c in program.constants)
    used = ((named | _referenced(constants)) & set(runtime_files.unit_names())) | set(units)
    if used - set(where):
        raise RuntimeError(f"the target's runtime lacks {', '.join(sorted(used - set(where)))}")
    imports = set()
    # stdlib modules the generated code itself names (e.g. `sys` in the entry)
    defined = _defined(body) | used
    for name in sorted(_referenced(body) - defined):
        if name in sys.stdlib_module_names:
            imports.add(f"import {name}")
    imports |= {"import os", "import sys"}
    import_lines = sorted(imports, key=lambda s: (s.startswith("from "), s))
    doc = module_docstring(docstring)
    agent = program.agent if "AGENT" in _referenced(body) else ""
    places = _places(program, body)
    head = [
        header.rstrip() + "\n" if header.strip() else "",
        doc + "\n",
        "\n".join(import_lines) + "\n",
        _runtime_import(used, where, shared.stamp if shared is not None and check_runtime else None),
        prelude.strip() + "\n" if prelude.strip() else "",
        constants,
        agent,
        _no_code_note(program.spec, with_evaluation and bool(program.evaluation.strip()), bool(agent)),
    ]
    # top-level definitions are two blank lines apart, as black writes them
    # in spec order: source (the probe), records, evaluators; the diagnostics tables (read
    # only when something fails), then the host's entry code
    definitions = [
        program.probe if with_probe else "",
        program.mapping,
        program.evaluation if with_evaluation and program.evaluation.strip() else "",
        places,
        "\n".join(part for line in entry.strip().splitlines() for part in wrap_line(line)) + "\n",
    ]
    text = (
        "\n\n".join(s.strip("\n") for s in head if s.strip())
        + "\n\n\n"
        + "\n\n\n".join(s.strip("\n") for s in definitions if s.strip())
        + "\n"
    )
    compile(text, "<generated>", "exec")  # a generated module must at least compile
    return text


def _no_code_note(spec: ir.Spec, with_evaluation: bool, with_agent: bool) -> str:
    """A comment naming each section of the spec that writes no code in this file, and why:
    a reviewer reading the spec beside the code sees every section accounted for."""
    why = []
    if spec.evaluators and not with_evaluation:
        why.append(("evaluators", "this file maps traces; a target that scores them runs these"))
    if spec.usage and not with_evaluation:
        why.append(("usage", "read only where the evaluators score a trajectory"))
    if spec.agent is not None and not with_agent:
        why.append(("agent", "this file does not run the agent"))
    if spec.tests:
        why.append(("tests", "`mapc test` checks the spec against them"))
    lines = []
    for section, reason in why:
        mark = spec.locate((section,), key=True) if spec.locate else None
        line = f" (line {mark.line})" if mark and mark.line else ""
        lines.append(f"# {section}{line}: no code: {reason}")
    return "\n".join(lines) + "\n" if lines else ""


def _places(program: Program, body: str) -> str:
    """The diagnostics tables (places.py), limited to what ``body`` names."""
    named = _referenced(body) | {n.value for n in ast.walk(ast.parse(body))
                                 if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    if "level_events" in named:  # the places its `events.put` calls derive
        named |= program.derived
    from mapc.runtime.mapping_rt import _identifier

    places = {k: v for k, v in program.places.items()
              if k in named or "x_" + _identifier(k) in named or _in_named_signals(k, named)}
    loops = {k: v for k, v in program.loops.items() if k in named}
    spec_file = Path(program.spec.file).name if program.spec.file else ""
    return places_source(places, loops, spec_file) if places or loops else ""


def _in_named_signals(where: str, named: set) -> bool:
    """A signal of a signals mapping the code names (a table of signals, see mapping.py)."""
    parent = where.rpartition(".")[0]
    return parent.endswith(".signals") and parent in named


def _runtime_import(names, where: dict[str, str], stamp: tuple[str, str] | None = None) -> str:
    """The import of the runtime package next to the entry file, checked, then of the names
    the code calls, one ``from mapc_runtime.MODULE import ...`` a module.

    Run as a script, the entry puts its own folder first on ``sys.path`` (Python does
    so itself, except under ``-I``/``-P``), and the package takes it off again once it is
    imported, so nothing else beside the entry (a planted ``json.py``) is importable
    (D92); imported (cap-evolve), the host has put the folder there. Importing a module
    writes its bytecode into ``__pycache__/`` beside it unless told not to; RLViz digests
    every file of a plugin folder (and rejects one that changes while it runs), so the
    imports are made with bytecode writing off (the package compiles what it imports later
    from source, see its ``__init__``). With ``stamp`` (the title and digest in the
    package's header), the package is checked before any name is taken from it: another
    build's runtime fails with one line, not a late AttributeError (D132).
    """
    if not names:
        return ""
    w = Writer()
    w.comment(f"{runtime_files.RUNTIME_PACKAGE}/ next to this file, imported without writing __pycache__/ there")
    w.line('if __name__ == "__main__":')
    w.line("    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))")
    w.line("_write_bytecode, sys.dont_write_bytecode = sys.dont_write_bytecode, True")
    if stamp is not None:
        w.lines += _runtime_check(stamp).splitlines()
    by_module: dict[str, list[str]] = {}
    for name in sorted(names):
        by_module.setdefault(where[name], []).append(name)
    for module in sorted(by_module):
        w.lines += _import_line(module, by_module[module]).splitlines()
    w.line("sys.dont_write_bytecode = _write_bytecode")
    return w.text()


def _runtime_check(stamp: tuple[str, str]) -> str:
    """The check that ``mapc_runtime`` is the runtime the entry was built with (D132): a
    string compare of the ``RUNTIME`` its ``__init__`` reads from its own header, nothing
    hashed at start-up. Run as a script, a mismatch is one line on stderr and exit status 1;
    imported by a host, an ImportError with that line."""
    return _RUNTIME_CHECK.replace("TITLE", stamp[0]).replace("DIGEST", stamp[1])


#: what ``_runtime_check`` writes (``mapc_runtime`` is :data:`mapc.core.runtime_files.RUNTIME_MODULE`)
_RUNTIME_CHECK = """\
import mapc_runtime

# it must be the runtime this file was built with (`mapc review` checks its every file, D132)
RUNTIME = (
    "TITLE",
    "DIGEST",
)
if getattr(mapc_runtime, "RUNTIME", None) != RUNTIME:
    FOUND = getattr(mapc_runtime, "RUNTIME", None) or ("runtime of another mapc version", "?")
    MISMATCH = (
        f"mapc_runtime/ is the {FOUND[0]} ({FOUND[1][:16]}), not the {RUNTIME[0]}"
        f" ({RUNTIME[1][:16]}) this file was built with: rebuild it (the mapc build command"
        " is at its top) or restore mapc_runtime/ from the build"
    )
    sys.dont_write_bytecode = _write_bytecode
    if __name__ == "__main__":
        sys.exit(MISMATCH)
    raise ImportError(MISMATCH)
"""


def _import_line(module: str, names: list[str]) -> str:
    """``from mapc_runtime.MODULE import ...`` of ``names``, wrapped at 99 columns."""
    import textwrap

    one = f"from {runtime_files.RUNTIME_MODULE}.{module} import {', '.join(names)}"
    if len(one) <= 99:
        return one + "\n"
    body = textwrap.wrap(", ".join(names) + ",", 95, initial_indent="    ", subsequent_indent="    ",
                         break_on_hyphens=False)
    return f"from {runtime_files.RUNTIME_MODULE}.{module} import (\n" + "\n".join(body) + "\n)\n"


#: ``load_module``'s ``runtime`` for mapc's own runtime modules (:mod:`mapc.runtime`)
IN_PROCESS = "mapc.runtime"


def load_module(source: str, name: str = "mapc_generated", runtime=None, *,
                builtins: dict | None = None) -> dict:
    """Execute a generated entry file in a fresh namespace (mapc run, validators, tests).

    Its ``from mapc_runtime.MODULE import ...`` is answered by ``runtime``: :data:`IN_PROCESS`
    for mapc's own modules, or the runtime package written next to it (``SharedRuntime.files``,
    (path, text) pairs), each module executed
    when it is first imported, as Python would; nothing is put in ``sys.modules``, so entry
    files with different runtimes can be loaded side by side. ``builtins`` replaces builtins
    (e.g. a watched ``open``) in the entry and the runtime.
    """
    ns: dict = {"__name__": name}
    if runtime == IN_PROCESS:
        ns["__builtins__"] = _in_process_builtins()
    elif runtime is not None:
        package = load_runtime(runtime) if builtins is None else _runtime_package(runtime, builtins)
        ns["__builtins__"] = package.__dict__["__builtins__"]
    elif builtins is not None:
        ns["__builtins__"] = builtins
    exec(compile(source, f"<{name}>", "exec"), ns)  # noqa: S102 - our own generated code
    return ns


@functools.lru_cache(maxsize=1)
def _in_process_builtins() -> dict:
    """Builtins whose ``__import__`` answers ``mapc_runtime[.MODULE]`` with mapc's own
    runtime modules (``mapc.runtime[.MODULE]``): the modules a build copies, imported once."""
    import builtins as python_builtins
    import importlib

    def _import(name, globals=None, locals=None, fromlist=(), level=0):
        package = runtime_files.RUNTIME_PACKAGE
        if level == 0 and (name == package or name.startswith(package + ".")):
            module = importlib.import_module("mapc.runtime" + name[len(package):])
            return module if fromlist else importlib.import_module("mapc.runtime")
        return python_builtins.__import__(name, globals, locals, fromlist, level)

    return {**vars(python_builtins), "__import__": _import}


def load_entry_file(path, name: str = "mapc_generated") -> dict:
    """A generated entry file on disk, executed with the runtime package next to it."""
    from pathlib import Path

    return load_module(Path(path).read_text(encoding="utf-8"), name, read_runtime(Path(path).parent))


def read_runtime(folder) -> tuple[tuple[str, str], ...]:
    """The runtime package's files next to an entry file in ``folder``, as ``load_module`` takes them."""
    from pathlib import Path

    package = Path(folder) / runtime_files.RUNTIME_PACKAGE
    return tuple((f"{runtime_files.RUNTIME_PACKAGE}/{p.name}", p.read_text(encoding="utf-8"))
                 for p in sorted(package.glob("*.py")))


@functools.lru_cache(maxsize=8)
def load_runtime(files: tuple[tuple[str, str], ...]) -> types.ModuleType:
    """A runtime package's files, loaded into a package module (cached per files)."""
    return _runtime_package(files, None)


def runtime_names(files: tuple[tuple[str, str], ...]) -> dict:
    """Every name of every module of a runtime package (all loaded), as one namespace; a
    name two modules define is the first one's (``where_defined``)."""
    package = load_runtime(files)
    found: dict = {}
    modules = [p.rsplit("/", 1)[-1].removesuffix(".py") for p, _ in files]
    where = runtime_files.where_defined(m for m in runtime_files.all_modules() if m in modules)
    for module in modules:
        if module != "__init__":
            found.update(vars(package.load_module(module)))
    found.update((name, getattr(package.load_module(module), name)) for name, module in where.items())
    return {k: v for k, v in found.items() if not k.startswith("__")}


def _runtime_package(files, builtins: dict | None) -> types.ModuleType:
    """The package ``mapc_runtime`` from its files: ``__init__`` now, each part on its first
    import (``from .part import x``, ``from . import part``), through an ``__import__`` that
    knows only this package's parts and hands everything else to Python's own."""
    import builtins as python_builtins

    base = vars(python_builtins) if builtins is None else builtins
    texts = {path.rsplit("/", 1)[-1].removesuffix(".py"): text for path, text in files}
    package = types.ModuleType(runtime_files.RUNTIME_PACKAGE)
    modules = {"__init__": package}

    def _module(part: str) -> types.ModuleType:
        if part not in modules:
            if part not in texts:
                raise ImportError(f"{runtime_files.RUNTIME_PACKAGE} has no part {part!r}")
            module = types.ModuleType(f"{runtime_files.RUNTIME_PACKAGE}.{part}")
            module.__dict__.update(__package__=runtime_files.RUNTIME_PACKAGE, __builtins__=own)
            modules[part] = module
            code = compile(texts[part], f"{runtime_files.RUNTIME_PACKAGE}/{part}.py", "exec")
            exec(code, module.__dict__)  # noqa: S102 - mapc's runtime
            setattr(package, part, module)
        return modules[part]

    def _import(name, globals=None, locals=None, fromlist=(), level=0):
        if level == 0 and name == runtime_files.RUNTIME_PACKAGE:
            return package
        if level == 0 and name.startswith(runtime_files.RUNTIME_PACKAGE + "."):
            module = _module(name.partition(".")[2])
            return module if fromlist else package
        if level == 1 and (globals or {}).get("__package__") == runtime_files.RUNTIME_PACKAGE:
            if name:
                return _module(name)
            for part in fromlist or ():  # as Python does: a name the package lacks is a part
                if part not in package.__dict__:
                    _module(part)
            return package
        return python_builtins.__import__(name, globals, locals, fromlist, level)

    own = {**base, "__import__": _import}
    # the package reads its stamp from its header through its loader (it has no file here)
    loader = types.SimpleNamespace(get_source=lambda name: texts["__init__"])
    package.__dict__.update(__package__=runtime_files.RUNTIME_PACKAGE, __path__=[], __builtins__=own,
                            __spec__=types.SimpleNamespace(loader=loader), load_module=_module)
    code = compile(texts["__init__"], f"{runtime_files.RUNTIME_PACKAGE}/__init__.py", "exec")
    exec(code, package.__dict__)  # noqa: S102 - mapc's runtime
    return package
