"""The compiled expressions of one program, named after where the spec wrote them."""

from __future__ import annotations

import keyword
import re

from mapc.codegen.pysrc import comment_text, identifier, literal
from mapc.codegen.wrap import wrap_line
from mapc.core.diagnostics import format_path
from mapc.spec import ir
from mapc.spec.semantic import iter_exprs


class ExprTable:
    """Collects expression functions; simple expressions are inlined instead."""

    def __init__(self) -> None:
        self._names: dict[tuple, str] = {}
        self._used: set[str] = set()
        self._sources: list[str] = []
        #: expression function name -> the spec expression it computes (for diagnostics)
        self.functions: dict[str, ir.Expr] = {}
        #: variables the generated code has already proven to hold a dict
        self.known_dicts: set[str] = set()
        #: variable -> the name of its object (itself if a dict, else ``{}``), set once per element
        self.aliases: dict[str, str] = {}
        #: object templates the spec writes at two or more places (:func:`template_key`; a YAML
        #: alias, a metadata block repeated per rule): one function each, when long
        self.repeated: dict[tuple, int] = {}  # key -> how many places write it
        self._templates: dict[tuple, str] = {}
        #: spec path -> its line (the spec's ``locate``), for the comments of those functions
        self.locate = None

    def assume_dicts(self, src: str) -> str:
        """Drop ``isinstance(v, dict)`` guards on field reads of variables known to be dicts.

        ``v.get("k") if isinstance(v, dict) else None`` is exactly ``v.get("k")`` when
        ``v`` is a dict, and ``o.get("k")`` when ``o = v if isinstance(v, dict) else {}``
        (an alias), so this changes speed, never results.
        """
        for var in sorted(set(self.aliases) | self.known_dicts):
            target = var if var in self.known_dicts else self.aliases[var]
            read = (rf'\b{re.escape(var)}\.get\(("(?:[^"\\]|\\.)*")\) '
                    rf'if isinstance\({re.escape(var)}, dict\) else None')
            # in parentheses of its own (an operand), not a call's: they go too
            src = re.sub(rf"(?<![\w)\]])\({read}\)|{read}",
                         lambda m: f"{target}.get({m.group(1) or m.group(2)})", src)
        for var in sorted(self.known_dicts):  # a multiselect's null test of an object
            src = re.sub(rf"^([{{\[].*[}}\]]) if {re.escape(var)} is not None else None$", r"\1", src)
        return src

    def call(self, e: ir.Expr, data: str, scope: str) -> str:
        """Python expression evaluating ``e`` on ``data`` with variables ``scope``."""
        inline = e.compiled.inline_source(data, scope)
        if inline is not None:
            return self.assume_dicts(inline)
        # an object root: the function reads its fields unguarded (given the alias, `{}` for
        # a value that is not an object, when that gives the same value: reads_root_as_object)
        obj = data if data in self.known_dicts else None
        if obj is None and data in self.aliases and e.compiled.reads_root_as_object:
            obj = self.aliases[data]
        # one function per spec place, so a failure names the place that failed
        key = (e.text, e.path, obj is not None)
        name = self._names.get(key) or self._define(e, key)
        return f"{name}({obj or data}, {scope})"

    def _define(self, e: ir.Expr, key: tuple) -> str:
        base = "x_" + identifier(*e.path)
        name = base
        n = 2
        while name in self._used:
            name = f"{base}_{n}"
            n += 1
        self._used.add(name)
        self._names[key] = name
        self.functions[name] = e
        where = f"{e.where}" + (f" (line {e.line})" if e.line else "")
        where = comment_text(where)
        header = f"# {where}: {comment_text(e.text, max(30, 99 - len(where) - 4))}\n"
        body = e.compiled.function_source(name, scope_given=True, object_root=key[2])
        body = body.rstrip().splitlines()  # (scope given: see call())
        body = [part for line in body for part in wrap_line(line)]
        self._sources.append(header + "\n".join(body) + "\n")
        return name

    def function(self, e: ir.Expr, object_root: bool = False) -> str:
        """The name of a compiled function for ``e``, ``(data, scope)`` (never inlined);
        ``object_root``: every caller passes an object as ``data``."""
        key = (e.text, e.path, object_root)
        if key not in self._names:
            self._define(e, key)
        return self._names[key]

    def value(self, v: ir.Value | None, data: str, scope: str) -> str:
        """Python expression for a value template."""
        if v is None:
            return "None"
        if isinstance(v, ir.Expr):
            return self.call(v, data, scope)
        if isinstance(v, ir.Literal):
            return literal(v.value)
        if isinstance(v, ir.ObjectTemplate):
            shared = self._shared_template(v, data, scope) or self._extended_template(v, data, scope)
            if shared is not None:
                return shared
            if not v.items:
                return "{}"
            if len(v.keep) == len(v.items):  # `!keep_nulls` on the mapping: every member stays
                return "{" + ", ".join(f"{literal(k)}: {self.value(x, data, scope)}" for k, x in v.items) + "}"
            if v.keep:  # `!keep_nulls` on some members: they stay when null
                triples = ", ".join(f"({literal(k)}, {self.value(x, data, scope)}, {k in v.keep})" for k, x in v.items)
                return f"{{k: v for k, v, keep in ({triples},) if keep or v is not None}}"
            if all(k.isidentifier() and not keyword.iskeyword(k) for k, _ in v.items):
                return f"compact({', '.join(f'{k}={self.value(x, data, scope)}' for k, x in v.items)})"
            members = ", ".join(f"{literal(k)}: {self.value(x, data, scope)}" for k, x in v.items)
            return f"compact({{{members}}})"
        if isinstance(v, ir.ArrayTemplate):
            return "[" + ", ".join(self.value(x, data, scope) for x in v.items) + "]"
        raise TypeError(v)

    def _shared_template(self, v: ir.ObjectTemplate, data: str, scope: str) -> str | None:
        """A call of the one function of an object template the spec repeats, when ``data``
        is (or has) an object, every value is computed in line (nothing in it can raise, so a
        failure needs no place of its own) and the object takes more than a line."""
        key = template_key(v)
        obj = data if data in self.known_dicts else self.aliases.get(data)
        uses = self.repeated.get(key, 0)
        if uses < 2 or obj is None or not _in_line(v):
            return None
        name = self._templates.get(key)
        if name is None:
            known = set(self.known_dicts)
            self.known_dicts.add("data")
            del self.repeated[key]  # (rendered as usual, once)
            try:
                src = self.value(v, "data", "scope")
            finally:
                self.known_dicts.intersection_update(known)  # ("data" out again, same set)
                self.repeated[key] = uses
            # lines saved: each use's object (as an argument in a rule) becomes one line; the
            # function costs its body, a comment, its def and two blank lines
            in_place = len(wrap_line(" " * 16 + f"metadata={src},")) - 1
            body = len(wrap_line(f"    return {src}"))
            if uses * in_place <= body + 4:
                self._templates[key] = name = ""
            else:
                name = self._template_function(v, key, src)
        return f"{name}({obj}, {scope})" if name else None

    def _extended_template(self, v: ir.ObjectTemplate, data: str, scope: str) -> str | None:
        """``compact(**x_common(data, scope), key=...)``: a template that begins with the
        members of a shared one (``<<: *common`` and keys of its own) calls its function."""
        obj = data if data in self.known_dicts else self.aliases.get(data)
        if obj is None or v.keep or not _identifiers(v):
            return None
        for key, name in self._templates.items():
            if name and _begins_with(v, key):
                rest = ", ".join(f"{k}={self.value(x, data, scope)}" for k, x in v.items[len(key[1]):])
                return f"compact(**{name}({obj}, {scope}), {rest})"
        return None

    def _template_function(self, v: ir.ObjectTemplate, key: tuple, src: str) -> str:
        base = "x_" + identifier(*v.path)
        name, n = base, 2
        while name in self._used:
            name, n = f"{base}_{n}", n + 1
        self._used.add(name)
        self._templates[key] = name
        where = format_path(v.path)
        mark = self.locate(tuple(v.path), key=True) if self.locate else None
        line = f" (line {mark.line})" if mark is not None and getattr(mark, "line", None) else ""
        header = f"# {comment_text(where)}{line}, and wherever the spec repeats this mapping\n"
        body = [part for line in (f"def {name}(data, scope):", f"    return {src}")
                for part in wrap_line(line)]
        self._sources.append(header + "\n".join(body) + "\n")
        return name

    def take(self) -> str:
        """The functions defined since the last ``take``: they go right above their first use."""
        sources, self._sources = self._sources, []
        return "\n\n\n".join(s.strip("\n") for s in sources) + "\n" if sources else ""

    def source(self) -> str:
        return "\n\n\n".join(s.strip("\n") for s in self._sources) + "\n" if self._sources else ""


def template_key(v) -> tuple:
    """What an object template computes (its keys, expressions and literals), whatever its
    place: two places with the same key build the same object from the same element."""
    if isinstance(v, ir.Expr):
        return ("expr", v.text)
    if isinstance(v, ir.Literal):
        return ("literal", repr(v.value))
    if isinstance(v, ir.ObjectTemplate):
        return ("object", tuple((k, template_key(x)) for k, x in v.items), v.keep)
    if isinstance(v, ir.ArrayTemplate):
        return ("array", tuple(template_key(x) for x in v.items))
    return ("other", repr(v))


def _identifiers(v: ir.ObjectTemplate) -> bool:
    """Whether every key of an object template is a Python keyword argument name."""
    return all(k.isidentifier() and not keyword.iskeyword(k) for k, _ in v.items)


def prefixes(v: ir.ObjectTemplate, templates) -> list[tuple]:
    """The keys (:func:`template_key`) of ``templates`` whose members begin ``v``'s."""
    return [key for key in map(template_key, templates) if _begins_with(v, key)]


def _begins_with(v: ir.ObjectTemplate, key: tuple) -> bool:
    """Whether ``v``'s members begin with those of the template ``key`` (one without
    ``keep``), and ``v`` has more."""
    lead = key[1]
    return (not key[2] and len(v.items) > len(lead)
            and template_key(ir.ObjectTemplate(v.items[:len(lead)], v.path)) == key)


def _in_line(v) -> bool:
    """Whether every expression of a value template compiles to one Python expression (one
    that cannot raise: see InlineCompiler)."""
    return all(e.compiled.inline_source("data", "scope") is not None for e in iter_exprs(v))
