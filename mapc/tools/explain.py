"""``mapc explain SPEC``: which generated function implements each spec line.

Generated code already names its spec paths: comments such as
``# records.events.rules[0] (line 47): when role == 'assistant'`` and
strings such as ``'records.run.name'`` (the path a warning reports). This
module reads those mentions back from the generated source (comments and
string literals only, via ``tokenize``), finds the function around each, and
attributes it to the most specific spec line. A spec line with no mention of
its own is implemented within its nearest ancestor's functions (marked so).
Reading the real generated text, instead of a side table filled during code
generation, keeps the map honest: it shows what the code says.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass, field
from pathlib import Path

from mapc.core.diagnostics import format_path

_TOP = r"(?:records|source|evaluators|usage|tasks|agent|reward|tables|fixtures|targets|name|version)"
_PATH = re.compile(_TOP + r"(?:\.[^\s.\[\]():,'\"`]+|\[\d+\])*")


@dataclass
class LineMap:
    line: int
    paths: list[str]
    functions: list[str]  # "name" or "file:line name" (with a target)
    inherited_from: str | None = None

    def to_dict(self) -> dict:
        out = {"line": self.line, "paths": self.paths, "functions": self.functions}
        if self.inherited_from:
            out["within"] = self.inherited_from
        return out


@dataclass
class Explanation:
    spec: str
    generated: str  # what was read: "mapping program" or the target's files
    lines: list[LineMap] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"spec": self.spec, "generated": self.generated, "lines": [x.to_dict() for x in self.lines]}


#: Module constants that list spec places for runtime diagnostics (codegen/places.py).
_DIAGNOSTIC_TABLES = ("SPEC_PLACES", "SPEC_LOOPS")


def mentions(rel: str, source: str) -> dict[str, list[tuple[str, int, str]]]:
    """spec path -> [(file, line, function)] for every mention in ``source``."""
    tree = ast.parse(source)
    defs = sorted(((n.lineno, n.end_lineno or n.lineno, n.name) for n in ast.walk(tree)
                   if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))),
                  key=lambda d: (d[0], -d[1]))
    starts = {d[0]: d[2] for d in defs}
    module_names = {}  # first line of a run of module-level assignments -> the names assigned
    run_start = None
    prev_end = 0
    for node in tree.body:
        if isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) for t in node.targets):
            if run_start is None or not _adjacent(source, prev_end, node.lineno):
                run_start = node.lineno
                module_names[run_start] = []
            module_names[run_start] += [t.id for t in node.targets]
            prev_end = node.end_lineno or node.lineno
        else:
            run_start = None
    module_names = {k: ", ".join(v) for k, v in module_names.items()}
    # the diagnostics tables (codegen/places.py) name every path again: not an implementation
    tables = [(n.lineno, n.end_lineno or n.lineno) for n in tree.body if isinstance(n, ast.Assign)
              and any(isinstance(t, ast.Name) and t.id in _DIAGNOSTIC_TABLES for t in n.targets)]
    lines = source.splitlines()
    found: dict[str, list[tuple[str, int, str]]] = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if any(a <= tok.start[0] <= b for a, b in tables):
            continue
        if tok.type == tokenize.COMMENT:
            text = tok.string.lstrip("#").strip()
            anywhere = True
        elif tok.type == tokenize.STRING:
            try:
                text = ast.literal_eval(tok.string)
            except (ValueError, SyntaxError):
                continue
            if not isinstance(text, str):
                continue
            anywhere = False
        else:
            continue
        for m in _PATH.finditer(text):
            path = m.group(0)
            dotted = "." in path or "[" in path
            if not dotted and not (m.start() == 0 and text[m.end():m.end() + 1] == ":"):
                continue  # a bare word like "source" is prose unless it labels: "agent: ..."
            if not anywhere and m.start() != 0:
                continue
            line = tok.start[0]
            where = _function_at(line, defs, starts, lines, module_names, tok.type == tokenize.COMMENT)
            found.setdefault(path, []).append((rel, line, where))
            if not anywhere:
                break
    return found


def _adjacent(source: str, end: int, start: int) -> bool:
    """Whether statement lines ``end`` and ``start`` follow each other directly (one block)."""
    return start == end + 1


def _function_at(line: int, defs, starts, lines, module_names, is_comment: bool) -> str:
    if is_comment:  # a comment block right above a def or a constant describes it
        nxt = line + 1
        while nxt <= len(lines) and lines[nxt - 1].lstrip().startswith("#"):
            nxt += 1
        if nxt in starts:
            return starts[nxt]
        if nxt in module_names and not any(a <= line <= b for a, b, _ in defs):
            return module_names[nxt]
    inner = None
    for a, b, name in defs:
        if a <= line <= b and (inner is None or a >= inner[0]):
            inner = (a, b, name)
    return inner[2] if inner else "(module)"


def explain(spec_path: str | Path, target_name: str | None = None) -> tuple[Explanation | None, object]:
    """The line map of ``spec_path``; ``(None, diagnostics)`` when the spec has errors."""
    from mapc.pipeline.build import load_checked, resolve_target
    from mapc.spec.loader import load_file

    target = resolve_target(target_name) if target_name else None
    spec, diags = load_checked(spec_path, target)
    if spec is None:
        return None, diags
    found: dict[str, list[tuple[str, int, str]]] = {}
    for rel, text in _generated(spec, target, Path(spec_path)).items():
        for path, hits in mentions(rel, text).items():
            found.setdefault(path, []).extend(hits)
    loaded, _ = load_file(spec_path)
    spec_file = loaded.file
    by_path: dict[str, int] = {}
    for table in (loaded.keys, loaded.values):
        for path, mark in table.items():
            if path and mark.file == spec_file:
                key = format_path(path)
                by_path[key] = min(by_path.get(key, mark.line), mark.line)
    attributed: dict[str, list[tuple[str, int, str]]] = {}
    for mention, hits in found.items():
        owner = _deepest(mention, by_path)
        if owner is not None:
            attributed.setdefault(owner, []).extend(hits)
    result = Explanation(str(spec_path), f"{target.name} target" if target else "mapping program (as `mapc run` runs it)")
    rows: dict[int, LineMap] = {}
    for path in sorted(by_path, key=lambda p: (by_path[p], p)):
        hits = attributed.get(path)
        within = None
        if not hits:
            within = _ancestor_with(path, attributed)
            hits = attributed.get(within, []) if within else []
        names = _names(hits, with_lines=target is not None)
        row = rows.get(by_path[path])
        if row is None:
            rows[by_path[path]] = LineMap(by_path[path], [path], names, within)
        else:
            row.paths.append(path)
            row.functions += [n for n in names if n not in row.functions]
            if row.inherited_from and not within:
                row.inherited_from = None
    result.lines = [rows[k] for k in sorted(rows)]
    return result, diags


def _names(hits, *, with_lines: bool) -> list[str]:
    out: list[str] = []
    first: dict[tuple[str, str], int] = {}
    for rel, line, name in hits:
        first.setdefault((rel, name), line)
    for (rel, name), line in first.items():
        label = f"{rel}:{line} {name}" if with_lines else name
        if label not in out:
            out.append(label)
    return out


def _parents(path: str) -> list[str]:
    out = []
    while True:
        cut = max(path.rfind("."), path.rfind("["))
        if cut <= 0:
            return out
        path = path[:cut]
        out.append(path)


def _deepest(mention: str, by_path: dict[str, int]) -> str | None:
    for candidate in [mention] + _parents(mention):
        if candidate in by_path:
            return candidate
    return None


def _ancestor_with(path: str, attributed: dict) -> str | None:
    for parent in _parents(path):
        if parent in attributed:
            return parent
    return None


def _generated(spec, target, spec_path: Path) -> dict[str, str]:
    """Generated Python to read: the target's files (with headers, so lines match a
    build), or the target-independent mapping program."""
    from mapc.pipeline import provenance
    from mapc.pipeline.build import render
    from mapc.codegen.program import build_program, module_source

    if target is None:
        program = build_program(spec)
        return {"(mapping program)": module_source(program, entry="", docstring="mapping program",
                                                   with_evaluation=True)}
    out = spec_path.resolve().parent
    _, files = render(spec, target, out)
    files = provenance.add_headers(files, provenance.origin(spec.file, spec.digest, target.name, out))
    return {rel: data.decode("utf-8") for rel, data in sorted(files.items()) if rel.endswith(".py")}


def format_explanation(e: Explanation) -> str:
    name = Path(e.spec).name
    lines = [f"mapc explain: {e.spec} -> {e.generated}"]
    width = min(44, max((len(", ".join(r.paths)) for r in e.lines), default=0))
    for r in e.lines:
        paths = ", ".join(r.paths)
        within = f"  (within {r.inherited_from})" if r.inherited_from else ""
        functions = ", ".join(r.functions) or "- (no generated code names this line)"
        lines.append(f"{name}:{r.line:<4} {paths.ljust(width)}  {functions}{within}")
    return "\n".join(lines) + "\n"
