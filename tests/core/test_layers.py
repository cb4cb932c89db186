"""mapc's layers (docs/architecture.md, "Layers"): every import in ``mapc/`` goes to the same
or a lower layer, no target imports another target, and the import graph has no cycle.

Imports inside functions count as much as those at the top of a module: deferring an import
keeps start-up cheap, it does not make an upward dependency acceptable. ``TYPE_CHECKING``
imports count too (a type is a dependency). Dynamic loading by name (the target registry's
``importlib.import_module`` of a built-in or installed target) is not an import statement
and is not seen here; it is the extension point, like sqlglot's dialect registry.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "mapc"

#: Folder (or top-level module) -> rank: a module may import only modules of the same or a
#: lower rank. Keep in step with the table in docs/architecture.md.
LAYERS = {
    "runtime": 0,      # what a build ships: only its own siblings
    "core": 1,         # diagnostics, errors, field paths, safe I/O, scratch, resources, version
    "expressions": 2,  # JMESPath -> Python (the "lang" layer)
    "spec": 3,         # YAML -> IR
    "analysis": 4,     # facts about a spec and its samples
    "codegen": 5,      # IR -> Python text
    "targets": 6,      # targets/base.py + one folder per host, never importing each other
    "pipeline": 7,     # build, run, parallel, mapper, output folders
    "spectest": 8,     # `mapc test`
    "tools": 8,        # review, explain, drift, init, report, editor, codescan, ...
    "api": 9,          # the public facade
    "cli": 10,         # the typer app
    "": 11,            # the package root: lazy API (PEP 562), imports only version eagerly
}

#: Edges allowed although they break the rule or close a cycle: (importer, imported) -> why.
#: Empty, and meant to stay so; an entry that no longer occurs fails the test.
EXEMPT: dict[tuple[str, str], str] = {}



def modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if "standin" in parts or "__pycache__" in parts:
            continue  # the cap-evolve stand-in is cap-evolve's own package, not mapc's
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _resolve(name: str, mods: dict[str, Path]) -> str | None:
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name or None


def imports(mods: dict[str, Path]) -> list[tuple[str, str, str]]:
    """(importer, imported, "file:line") for every import of a mapc module, wherever it is."""
    edges = []
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                wanted = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    parts = parts[: len(parts) - (node.level - 1)]
                    base = ".".join(parts + ([node.module] if node.module else []))
                # `from mapc import x` imports the submodule x when there is one
                wanted = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            else:
                continue
            where = f"{path.relative_to(PACKAGE.parent)}:{node.lineno}"
            for target in wanted:
                resolved = _resolve(target, mods) if target.split(".")[0] == "mapc" else None
                if resolved and resolved != name:
                    edges.append((name, resolved, where))
    return edges


def layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def target_folder(module: str) -> str | None:
    """The host folder (``mapc/targets/<name>/``) a module belongs to; None for the modules
    directly in ``mapc/targets/``, which every target shares (base, testdata, atif_rules)."""
    parts = module.split(".")
    if parts[1:2] != ["targets"] or len(parts) < 3 or not (PACKAGE / "targets" / parts[2]).is_dir():
        return None
    return parts[2]


def rule_breaks(edges) -> list[str]:
    found = []
    for src, dst, where in sorted(set(edges), key=lambda e: e[2]):
        if (src, dst) in EXEMPT:
            continue
        if LAYERS[layer(dst)] > LAYERS[layer(src)]:
            found.append(f"{where}: {src} ({layer(src) or 'root'}) imports {dst} ({layer(dst) or 'root'}), a higher layer")
        elif target_folder(src) and target_folder(dst) and target_folder(src) != target_folder(dst):
            found.append(f"{where}: target {target_folder(src)} imports target {target_folder(dst)} ({dst})")
    return found


def cycles(nodes, edges) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    adj: dict[str, set[str]] = {}
    for src, dst, _ in edges:
        adj.setdefault(src, set()).add(dst)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(adj.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return found


def test_every_module_is_in_a_layer():
    unknown = sorted(m for m in modules() if layer(m) not in LAYERS)
    assert not unknown, f"modules outside the layer table (add a folder to LAYERS and docs/architecture.md): {unknown}"


def test_imports_go_down_the_layers():
    mods = modules()
    edges = imports(mods)
    breaks = rule_breaks(edges)
    assert not breaks, "imports against the layer rule:\n" + "\n".join(breaks)
    stale = sorted(set(EXEMPT) - {(s, d) for s, d, _ in edges})
    assert not stale, f"EXEMPT lists edges that no longer exist (remove them): {stale}"


def test_no_import_cycle():
    mods = modules()
    edges = [e for e in imports(mods) if e[:2] not in EXEMPT]
    found = cycles(mods, edges)
    detail = []
    for component in found:
        members = set(component)
        detail.append(f"cycle of {len(component)} modules: {', '.join(component)}")
        detail += [f"  {where}: {src} -> {dst}" for src, dst, where in edges if src in members and dst in members]
    assert not found, "\n".join(detail)


def test_the_checks_catch_what_they_should():
    """The rule and the cycle finder on a made-up graph: an upward edge, a target importing
    another target, and a two-module cycle are all reported."""
    edges = [("mapc.core.a", "mapc.spec.b", "a.py:1"), ("mapc.targets.rlviz", "mapc.targets.relai.x", "r.py:2"),
             ("mapc.spec.b", "mapc.spec.c", "b.py:3"), ("mapc.spec.c", "mapc.spec.b", "c.py:4")]
    breaks = rule_breaks(edges)
    assert any("a.py:1" in b and "higher layer" in b for b in breaks)
    assert any("r.py:2" in b and "imports target relai" in b for b in breaks)
    assert cycles({"mapc.core.a", "mapc.spec.b", "mapc.spec.c"}, edges) == [["mapc.spec.b", "mapc.spec.c"]]


if __name__ == "__main__":  # print the graph's numbers: python tests/core/test_layers.py
    mods = modules()
    edges = imports(mods)
    print(f"{len(mods)} modules, {len(set(edges))} imports of mapc modules")
    print("\n".join(rule_breaks(edges)) or "no upward import (EXEMPT aside)")
    for component in cycles(mods, [e for e in edges if e[:2] not in EXEMPT]):
        print(f"cycle of {len(component)}: {component}")
