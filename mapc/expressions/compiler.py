"""Code generation: checked JMESPath AST -> Python source.

The generated function mirrors the reference interpreter node by node, but as
straight-line Python: field chains become ``dict.get`` calls guarded by
``isinstance``, projections and filters become ``for`` loops (or list
comprehensions when simple), comparisons with literals are inlined, and only
the remaining operations call ``_jp_*`` runtime units.

Everything taken from the expression text (field names, string literals,
JSON literals) is embedded with :func:`literal_source`, which is built on
``repr()``, so no expression can inject code.
"""

from __future__ import annotations

import ast
import functools
import io
import math
import re
import tokenize
from contextlib import contextmanager
from dataclasses import dataclass, replace

from .functions import BOOLEAN_FUNCTIONS, FUNCTIONS, NON_NULL_FUNCTIONS
from .paths import CHAIN_TYPES, chain_key, chain_steps as _chain_steps, root_fields

#: Maximum line length the emitter aims for (black's default is 88; we allow 99).
LINE_LENGTH = 99
#: the longest one-line form of a projection or multiselect (the rest of the line is indentation)
_ONE_LINE = 75

# Python operator precedence levels used to decide on parentheses.
ATOM = 100
CMP = 50
NOT = 40
AND = 30
OR = 20
COND = 10


def string_source(text: str) -> str:
    """A Python string literal for ``text``: ``repr()``, in double quotes like black."""
    source = repr(text)
    if source[0] == "'" and '"' not in text and "'" not in text:
        # Without quote characters the escapes inside are the same for both styles.
        source = '"' + source[1:-1] + '"'
    return source


def literal_source(value) -> str:
    """Python source for a JSON value, safe for any content (built on repr())."""
    if value is None or value is True or value is False:
        return repr(value)
    if isinstance(value, str):
        return string_source(value)
    if isinstance(value, int):
        return repr(int(value))
    if isinstance(value, float):
        if math.isnan(value):
            return "float('nan')"
        if math.isinf(value):
            return "float('inf')" if value > 0 else "float('-inf')"
        return repr(float(value)).replace("e+", "e")  # 1e21, as black writes it
    if isinstance(value, list):
        return "[" + ", ".join(literal_source(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(
            f"{literal_source(str(k))}: {literal_source(v)}" for k, v in value.items()
        ) + "}"
    raise TypeError(f"not a JSON value: {value!r}")


@functools.lru_cache(maxsize=1)
def _runtime_units() -> frozenset[str]:
    from mapc import runtime_files

    return frozenset(runtime_files.unit_names())


def helpers_in(source: str) -> tuple[str, ...]:
    """The runtime units referenced by a piece of Python source, sorted."""
    names = {n.id for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name)}
    return tuple(sorted(names & _runtime_units()))


def _is_scalar(value) -> bool:
    return value is None or isinstance(value, (bool, int, float, str))


@dataclass(frozen=True)
class Expr:
    """A Python expression produced for an AST node."""

    src: str
    prec: int = ATOM
    name: bool = False  # src is a plain variable name
    simple: bool = False  # cheap to repeat: a name or a scalar literal
    pure: bool = False  # cannot raise and has no effects
    boolean: bool = False  # value is always True, False or None
    nonnull: bool = False  # value is never None
    const: tuple | None = None  # (value,) when the value is a known literal
    parts: tuple | None = None  # (open, items, close) for displays and calls

    def paren(self, level: int) -> str:
        """``src`` as an operand of an operator at ``level``."""
        if self.prec > level or (self.prec == level and level not in (CMP, COND)):
            return self.src
        return f"({self.src})"


def _name(src: str, **kw) -> Expr:
    return Expr(src, ATOM, name=True, simple=True, pure=True, **kw)


def _literal(value) -> Expr:
    return Expr(
        literal_source(value),
        ATOM,
        simple=_is_scalar(value),
        pure=True,
        boolean=value is None or isinstance(value, bool),
        nonnull=value is not None,
        const=(value,),
    )


def _display(open_: str, items: list[str], close: str, **kw) -> Expr:
    return Expr(open_ + ", ".join(items) + close, ATOM, parts=(open_, tuple(items), close), **kw)


def _call(function: str, args: list[str], **kw) -> Expr:
    return _display(f"{function}(", args, ")", **kw)


def truth(e: Expr) -> Expr:
    """A Python condition that is true exactly when ``e`` is JMESPath-truthy."""
    if e.const is not None:
        value = e.const[0]
        truthy = not (value is None or value is False or value in ("", [], {}))
        return Expr(repr(truthy), ATOM, pure=True, boolean=True, nonnull=True, const=(truthy,))
    if e.boolean:
        return e
    return Expr(f"_jp_truthy({e.src})", ATOM, pure=e.pure, boolean=True, nonnull=True)


_ORDERING = {"lt": ("<", "_jp_lt"), "lte": ("<=", "_jp_le"), "gt": (">", "_jp_gt"),
             "gte": (">=", "_jp_ge")}


#: A temporary's name, or what may hide one and must be skipped: a string literal
#: (``repr()`` writes only single-line '...' or "...") or a comment.
_TEMP_OR_SKIP = re.compile(
    r"""'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"|\#[^\n]*|(?<!\w)(v|out|item|expr)([0-9]+)(?!\w)"""
)
_ASSIGNED = re.compile(r"(\w+) = ")
_TEMP = re.compile(r"(v|out)[0-9]+")
_WORD = re.compile(r"\w+")


def _renumber(lines: list[str]) -> list[str]:
    """Number temporaries in order of first appearance (v1, v2, ... top to bottom).

    One regular-expression pass (the tokenizer it replaces took most of the time of
    compiling a long expression)."""
    mapping: dict[str, str] = {}
    counters: dict[str, int] = {}

    def rename(m: re.Match) -> str:
        prefix = m.group(1)
        if prefix is None:
            return m.group(0)
        old = m.group(0)
        new = mapping.get(old)
        if new is None:
            counters[prefix] = counters.get(prefix, 0) + 1
            new = mapping[old] = f"{prefix}{counters[prefix]}"
        return new

    return _TEMP_OR_SKIP.sub(rename, "\n".join(lines)).split("\n") if lines else []


def _conjuncts(src: str, word: str = "and") -> list[str]:
    """The operands of the top-level ``and`` (``word``) of ``src`` (an expression at that
    operator's level or above, so any ``or`` or conditional inside is in parentheses)."""
    parts, depth, start = [], 0, 0
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        if tok.type == tokenize.OP and tok.string in "([{":
            depth += 1
        elif tok.type == tokenize.OP and tok.string in ")]}":
            depth -= 1
            if depth == 0 and tok.string == word:
                parts.append(src[start:tok.start[1]].strip())
                start = tok.end[1]
        elif tok.type == tokenize.NAME and tok.string == word and depth == 0:
            parts.append(src[start:tok.start[1]].strip())
            start = tok.end[1]
    return parts + [src[start:].strip()]


def _path_keys(node: dict) -> tuple[dict | None, list] | None:
    """``x.a.b[0].c`` as the node ``x`` it starts from (None: the current value) and its field
    names and indexes; None when the chain has other steps after its first."""
    steps = _chain_steps(node)
    first = steps[0] if steps[0]["type"] not in ("field", "index") else None
    keys = [n["value"] for n in steps[1 if first else 0:] if n["type"] in ("field", "index")]
    if len(keys) != len(steps) - (1 if first else 0):
        return None
    return (first if first is not None and first["type"] not in ("current", "identity") else None), keys


def _split_or(line: str, room: int) -> list[str]:
    """A comprehension's test line ``if (a or b)`` longer than ``room``: ``if (a`` and
    ``    or b)``, one operand a line."""
    word, _, rest = line.partition(" ")
    if len(line) <= room or word not in ("if", "and") or not rest.startswith("("):
        return [line]
    # one group in parentheses: its last ")" is the only one that closes depth 0
    if _conjuncts(rest, ")")[1:] != [""]:
        return [line]
    parts = _conjuncts(rest[1:-1], "or")
    if len(parts) < 2:
        return [line]
    return [f"{word} ({parts[0]}"] + [f"    or {p}" for p in parts[1:-1]] + [f"    or {parts[-1]})"]


def _index_of_identity(node: dict) -> dict | None:
    """The ``index`` node of ``[0]`` or ``[-1]`` applied to ``@``, else None."""
    if node["type"] != "index_expression" or len(node["children"]) != 2:
        return None
    first, index = node["children"]
    if first["type"] in ("identity", "current") and index["type"] == "index" and index["value"] in (0, -1):
        return index
    return None


def _picks(children: list[dict]) -> list[dict]:
    """Pipe steps with ``x[?c] | [0].y`` written as the steps ``pick(x[?c], 0)``, ``y``."""
    out: list[dict] = []
    for child in children:
        head, rest = child, []
        if child["type"] == "subexpression":
            head, rest = child["children"][0], child["children"][1:]
        index = _index_of_identity(head)
        if index is not None and out and out[-1]["type"] == "filter_projection":
            out[-1] = {"type": "pick", "children": [out[-1], index]}
            if len(rest) > 1:  # `[0].function.arguments`: one chain, from the element picked
                out.append({"type": "subexpression", "children": [{"type": "current"}, *rest]})
            else:
                out.extend(rest)
        else:
            out.append(child)
    return out


#: a filter condition that reads nothing but fields of the element, literals, comparisons and
#: logic has one value for every element that is not an object (each field read is null)
_FIELDS_ONLY = frozenset({"comparator", "and_expression", "or_expression", "not_expression",
                          "literal", "field", "subexpression", "index_expression", "index"})


def _without_object(condition: dict) -> bool | None:
    """The truth of ``condition`` for an element that is not an object, when it reads only
    fields of the element (``parent_run_id == null``); else None."""
    def fields_only(node: dict, top: bool = True) -> bool:
        if node["type"] not in _FIELDS_ONLY:
            return False
        if node["type"] in ("subexpression", "index_expression"):
            first = node["children"][0]
            if first["type"] != "field" and not (first["type"] in ("subexpression", "index_expression")
                                                 and fields_only(first)):
                return False
        return all(fields_only(child, False) for child in node.get("children", ()))

    if not fields_only(condition):
        return None
    from jmespath.visitor import TreeInterpreter

    value = TreeInterpreter().visit(condition, {})
    return not (value is None or value is False or value in ("", [], {}))


def _proves_object(condition: dict) -> bool:
    """Whether a filter condition holds only for an object: a field of ``@`` compared equal to
    a literal that is not null (``role == 'user'``), possibly first in an ``&&``."""
    if condition["type"] == "and_expression":
        return _proves_object(condition["children"][0])
    if condition["type"] != "comparator" or condition["value"] != "eq":
        return False
    left, right = condition["children"]
    if left["type"] == "literal":
        left, right = right, left
    if right["type"] != "literal" or right["value"] is None:
        return False
    first = left["children"][0] if left["type"] == "subexpression" else left
    return first["type"] == "field"


class FunctionCompiler:
    """Compiles one checked AST into the body of ``def <name>(data, scope)``."""

    def __init__(self) -> None:
        self.helpers: set[str] = set()
        self.uses_scope = False
        self._counters: dict[str, int] = {}
        self._lines: list[tuple[int, str]] = []
        self._depth = 0
        self._prelude: list[tuple[int, str]] = []
        self._nonnull: set[str] = set()  # names known not to be None where code goes now
        self._dicts: set[str] = set()  # names known to hold an object where code goes now
        self._paths = False  # field chains as `_jp_path` calls (in a filter's test)
        self._root_fields: dict[str, int] = {}  # field of `data` -> times read (paths.root_fields)
        #: common subexpressions: the source of a pure value -> the variable that holds it,
        #: for the values computed on every path to where code goes now
        self._memo: dict[str, str] = {}
        #: name -> the memoized sources that mention it or are held in it (a superset: entries
        #: are never removed), so a new value for a name looks at those keys only, not at all
        self._mentions: dict[str, set[str]] = {}

    # -- emission ---------------------------------------------------------
    def new(self, prefix: str) -> str:
        n = self._counters.get(prefix, 0) + 1
        self._counters[prefix] = n
        return f"{prefix}{n}"

    def emit(self, line: str) -> None:
        assigned = _ASSIGNED.match(line)
        if assigned:
            self._forget(assigned.group(1))
        self._lines.append((self._depth, line))

    def _forget(self, var: str) -> None:
        """``var`` gets a new value: memoized values held in it or computed from it are stale."""
        word = re.compile(rf"\b{re.escape(var)}\b")
        for k in self._mentions.get(var, ()):
            if k in self._memo and (self._memo[k] == var or word.search(k)):
                del self._memo[k]

    def _remember(self, src: str, var: str) -> None:
        self._memo[src] = var
        for name in {var, *_WORD.findall(src)}:
            self._mentions.setdefault(name, set()).add(src)

    @contextmanager
    def _block(self, keep: bool = False):
        """Values memoized inside a block that may not run stay inside it (unless ``keep``:
        the block's lines are spliced where they always run); values forgotten stay forgotten."""
        saved = dict(self._memo)
        try:
            yield
        finally:
            if not keep:
                self._memo = {k: v for k, v in saved.items() if self._memo.get(k) == v}

    @contextmanager
    def indented(self):
        self._depth += 1
        try:
            with self._block():
                yield
        finally:
            self._depth -= 1

    @contextmanager
    def capture(self, keep: bool = False):
        """Collect the statements emitted inside the block instead of emitting them."""
        saved = self._lines, self._depth
        captured: list[tuple[int, str]] = []
        self._lines, self._depth = captured, 0
        try:
            with self._block(keep):
                yield captured
        finally:
            self._lines, self._depth = saved

    def splice(self, lines) -> None:
        for depth, line in lines:
            self._lines.append((self._depth + depth, line))

    def emit_statement(self, head: str, e: Expr) -> None:
        """Emit ``head + e.src``, exploding a long display/call one item per line."""
        line = head + e.src
        if 4 * (self._depth + 1) + len(line) > LINE_LENGTH and e.prec in (AND, OR):
            # `a and b and c`, too long for a line: one operand a line, in parentheses
            word = "and" if e.prec == AND else "or"
            first, *rest = _conjuncts(e.src, word)
            room = LINE_LENGTH - 4 * (self._depth + 4)  # (the lines may be spliced two deeper)
            if rest and all(len(f"{word} {part}") <= room for part in [first, *rest]):
                self.emit(head + "(")
                with self.indented():
                    self.emit(first)
                    for part in rest:
                        self.emit(f"{word} {part}")
                self.emit(")")
                return
        if 4 * (self._depth + 1) + len(line) <= LINE_LENGTH or not e.parts or not e.parts[1]:
            self.emit(line)
            return
        open_, items, close = e.parts
        rest = ", ".join(items[1:])
        room = LINE_LENGTH - 4 * (self._depth + 1)
        if (open_.endswith("(") and len(items) > 1 and "(" in items[0]
                and len(head + open_ + "v99, " + rest + close) <= room and len(items[0]) + 6 <= room):
            # `f(g(...), x)` too long: its first argument (evaluated first) on a line of its own
            var = self.new("v")
            self.emit(f"{var} = {items[0]}")
            self.emit(f"{head}{open_}{var}, {rest}{close}")
            return
        self.emit(head + open_)
        with self.indented():
            for item in items:
                self.emit(item + ",")
        self.emit(close)

    def bind(self, e: Expr, prefix: str = "v") -> Expr:
        """Evaluate ``e`` into a fresh variable (unless it already is a name); a pure value
        already held in a variable is not computed again."""
        if e.name:
            return e
        if e.pure and e.src in self._memo:
            return _name(self._memo[e.src], boolean=e.boolean, nonnull=e.nonnull)
        var = self.new(prefix)
        self.emit_statement(f"{var} = ", e)
        if e.pure:
            self._remember(e.src, var)
        return _name(var, boolean=e.boolean, nonnull=e.nonnull)

    def operands(self, exprs: list[Expr]) -> list[Expr]:
        """Operands with conditional or long expressions moved to variables first.

        Keeps lines short and readable.  Impure operands before a moved one are
        moved too, so the evaluation order stays left to right.
        """
        need = [not e.name and (e.prec <= COND or len(e.src) > 60) for e in exprs]
        if not any(need):
            return exprs
        last = max(i for i, n in enumerate(need) if n)
        return [
            self.bind(e) if need[i] or (i < last and not e.pure and not e.name) else e
            for i, e in enumerate(exprs)
        ]

    def truth(self, e: Expr) -> Expr:
        if e.const is None and not e.boolean and e.prec < ATOM:
            e = self.bind(e)  # used right away, so binding never reorders anything
        return truth(e)

    def use_helper(self, name: str) -> str:
        self.helpers.add(name)
        return name

    # -- entry point --------------------------------------------------------
    def function_body(self, node: dict) -> list[str]:
        self._root_fields = root_fields(node)
        result = self.compile(node, "data")
        #: the value is always True, False or None (Python truthiness is JMESPath's)
        self.result_boolean = result.boolean
        self.emit_statement("return ", result)
        body: list[tuple[int, str]] = []
        if self.uses_scope:
            body += [(0, "if scope is None:"), (1, "scope = {}")]
        if self._prelude:
            if body:
                body.append((0, ""))
            body += self._prelude
        body += self._lines
        return _renumber([("    " * depth + line) if line else "" for depth, line in body])

    def constant_body(self, value) -> list[str]:
        return [f"return {literal_source(value)}"]

    # -- nodes --------------------------------------------------------------
    def compile(self, node: dict, cur: str) -> Expr:
        e = getattr(self, "_" + node["type"])(node, cur)
        if e.pure and not e.name and e.src in self._memo:  # computed before: reuse it
            return _name(self._memo[e.src], boolean=e.boolean, nonnull=e.nonnull)
        if (cur == "data" and e.pure and not e.name and node["type"] in CHAIN_TYPES
                and self._root_fields.get(chain_key(node), 0) > 1):
            return self.bind(e)  # read again later: once, in a variable
        return e

    def compile_all(self, nodes: list[dict], cur: str) -> list[Expr]:
        """Compile sibling operands, keeping the reference's left-to-right evaluation order."""
        results: list[Expr] = []
        for node in nodes:
            with self.capture(keep=True) as lines:  # spliced right here: its values stay known
                e = self.compile(node, cur)
            if lines:
                results = [r if r.pure else self.bind(r) for r in results]
                self.splice(lines)
            results.append(e)
        return results

    def _literal(self, node, cur):
        return _literal(node["value"])

    def _current(self, node, cur):
        return _name(cur, nonnull=cur in self._nonnull)

    _identity = _current

    def _variable(self, node, cur):
        self.uses_scope = True
        return Expr(f"scope.get({string_source(node['value'])})", ATOM, pure=True)

    def _field(self, node, cur):
        key = literal_source(node["value"])
        guarded = Expr(f"{cur}.get({key}) if isinstance({cur}, dict) else None", COND, pure=True)
        if cur not in self._dicts or guarded.src in self._memo:  # (read before, held)
            return guarded
        return Expr(f"{cur}.get({key})", ATOM, pure=True)

    def _index(self, node, cur):
        i = node["value"]
        bound = f"len({cur}) > {i}" if i >= 0 else f"len({cur}) >= {-i}"
        return Expr(
            f"{cur}[{i}] if isinstance({cur}, list) and {bound} else None", COND, pure=True
        )

    def _slice(self, node, cur):
        start, stop, step = ("" if v is None else str(v) for v in node["children"])
        text = f"{start}:{stop}" + (f":{step}" if step else "")
        return Expr(f"{cur}[{text}] if isinstance({cur}, list) else None", COND, pure=True,
                    )

    def _chain(self, children: list[dict], cur: str) -> Expr:
        e = self.compile(children[0], cur)
        for child in children[1:]:
            e = self.compile(child, self.bind(e).src)
        return e

    def _subexpression(self, node, cur):
        # `a.b[0].c`: one `_jp_path` call, from the value of `a` when that is already held
        chain = _path_keys(node)
        if chain is not None and (len(chain[1]) > 1 or chain[0] and chain[0]["type"] == "variable"):
            first, keys = chain
            base = self.operands([self.compile(first, cur)])[0] if first else _name(cur)
            if isinstance(keys[0], str) and len(keys) > 2 and base.name:
                read = f"{base.src}.get({literal_source(keys[0])})"
                for src in (read, f"{read} if isinstance({base.src}, dict) else None"):
                    if src in self._memo:
                        base, keys = _name(self._memo[src]), keys[1:]
                        break
            tup = ", ".join(literal_source(k) for k in keys)
            tup = f"({tup},)" if len(keys) == 1 else f"({tup})"
            return _call(self.use_helper("_jp_path"), [base.src, tup], pure=base.pure)
        return self._chain(node["children"], cur)

    _index_expression = _subexpression

    def _pipe(self, node, cur):
        children = []
        stack = [node]
        while stack:  # flatten left-nested pipes: a | b | c
            n = stack.pop()
            if n["type"] == "pipe":
                stack.extend(reversed(n["children"]))
            else:
                children.append(n)
        return self._chain(_picks(children), cur)

    def _pick(self, node, cur):
        """``x[?c] | [0]`` (or ``[-1]``): the first (last) element that passes, found without
        testing the others when the tests cannot raise; else the whole list, indexed."""
        filtered, index = node["children"]
        left, right, condition = filtered["children"]
        base = self.bind(self.compile(left, cur))
        picked = self._project(base, right, False, condition, pick=index["value"])
        if picked is None:
            whole = self._project(base, right, False, condition)
            picked = self.compile(index, self.bind(whole).src)
        return picked

    def _flatten(self, node, cur):
        base = self.compile(node["children"][0], cur)
        return _call(self.use_helper("_jp_flatten"), [base.src], pure=base.pure)

    def _project(self, base: Expr, right: dict, is_object: bool,
                 condition: dict | None = None, pick: int | None = None) -> Expr | None:
        """Shared code for ``[*]``, ``.*``, ``[]`` and ``[?...]`` projections.

        ``pick`` (0 or -1, a filter piped into ``[0]`` or ``[-1]``): the first or last element
        only, found with ``next()``; None when that cannot be written exactly (then the caller
        compiles the whole list and indexes it)."""
        if not is_object and condition is None and right["type"] == "field" and pick is None:
            # the commonest projection, `items[*].name`: one runtime call (a long base first
            # in a variable of its own, so that a call around it still fits on a line)
            if len(base.src) > 60:
                base = self.bind(base)
            return _call(self.use_helper("_jp_pluck"), [base.src, literal_source(right["value"])],
                         pure=base.pure)
        b = self.bind(base).src
        kind = "dict" if is_object else "list"
        source = f"{b}.values()" if is_object else b
        item = self.new("item")
        # an element that passed `field == 'text'` is an object: its fields are read directly
        without = _without_object(condition) if condition is not None else None
        proven = condition is not None and (_proves_object(condition) or without is False)
        # `[*].{a: x, b: y}`: a multiselect of a null element is null, which is left out, so
        # only the other elements are mapped (one test instead of two)
        skip_null = (condition is None and not proven
                     and right["type"] in ("multi_select_list", "multi_select_dict"))
        with self._block():  # the condition's values are known in the body, in the loop only
            test, cond_lines = self._filter_test(condition, item, proven, without)
            if proven:
                self._dicts.add(item)
            if proven or skip_null:
                self._nonnull.add(item)
            try:
                with self.capture() as body_lines:
                    r = self.compile(right, item)
            finally:
                self._dicts.discard(item)
                self._nonnull.discard(item)
        if skip_null:
            test = Expr(f"{item} is not None", CMP, pure=True, boolean=True, nonnull=True)
            r = replace(r, nonnull=True)
        if not cond_lines and not body_lines:
            # one expression per element: a list comprehension (or a generator for `next()`)
            keep = [test.paren(AND)] if test is not None else []
            if r.name and r.src == item and not proven and not skip_null:
                keep.append(f"{item} is not None")
                value = item
            elif r.nonnull:
                value = r.src
            else:
                value = self.new("v")
                keep.append(f"({value} := {r.src}) is not None")
            pure = r.pure and (test is None or test.pure)
            if pick is not None and not pure:
                return None  # elements after the picked one must still be evaluated
            if test is not None and test.prec == AND:
                keep[:1] = _conjuncts(test.src)  # one line each where they do not fit on one
            comp = self._comprehension(value, item, f"reversed({b})" if pick == -1 else source,
                                       keep, b, kind, pick, pure)
            if comp is not None or pick is not None:
                return comp
        elif pick is not None:
            return None
        elif not cond_lines and r.nonnull and r.name:
            # `[*].{a: x, b: y}`: the element's display is the comprehension's value
            comp = self._display_comprehension(body_lines, r.src, item, source, test, b, kind)
            if comp is not None:
                return comp
        out = self.new("out")
        self.emit(f"if isinstance({b}, {kind}):")
        with self.indented():
            self.emit(f"{out} = []")
            self.emit(f"for {item} in {source}:")
            with self.indented():
                if test is not None:
                    self.splice(cond_lines)
                    self.emit(f"if {test.src}:")
                    self._depth += 1
                appended = _append_last(body_lines, r.src, out) if r.nonnull and r.name else None
                self.splice(appended or body_lines)
                if appended:
                    pass  # the value's own statement appends it
                elif r.nonnull:
                    self.emit(f"{out}.append({r.src})")
                else:
                    rn = self.bind(r)
                    self.emit(f"if {rn.src} is not None:")
                    with self.indented():
                        self.emit(f"{out}.append({rn.src})")
                if test is not None:
                    self._depth -= 1
        self.emit("else:")
        with self.indented():
            self.emit(f"{out} = None")
        return _name(out)

    def _filter_test(self, condition: dict | None, item: str, proven: bool, without):
        """A filter's test of ``item`` and the statements it needs first (captured).

        When the condition holds only for an object (``role == 'user' && ...``), it is
        written ``isinstance(item, dict) and <test with item read as a dict>`` when that needs
        no statements; when it reads only fields of the element, its value for an element
        that is not an object is known (``without``), and the test is written the same way:
        exactly the same truth for every element, in one expression."""
        if condition is None:
            return None, []
        self._paths = True  # `function.name` as one `_jp_path` call: a test in one expression
        try:
            if proven or without is not None:
                self._dicts.add(item)
                self._nonnull.add(item)
                try:
                    with self._block(), self.capture(keep=True) as lines:
                        test = self.truth(self.compile(condition, item))
                finally:
                    self._dicts.discard(item)
                    self._nonnull.discard(item)
                if not lines and (proven or not without):
                    return Expr(f"isinstance({item}, dict) and {test.paren(AND)}", AND,
                                pure=test.pure, boolean=True, nonnull=True), []
                if not lines:
                    return Expr(f"not isinstance({item}, dict) or {test.paren(OR)}", OR,
                                pure=test.pure, boolean=True, nonnull=True), []
            with self.capture(keep=True) as lines:
                test = self.truth(self.compile(condition, item))
            return test, lines
        finally:
            self._paths = False

    def _display_comprehension(self, lines, var: str, item: str, source: str,
                               test: Expr | None, b: str, kind: str) -> Expr | None:
        """``[{...} for item in source if test]`` when ``lines`` are one statement
        ``var = {...}`` (a display, written one member a line) and nothing else; else None."""
        head = f"{var} = "
        if not lines or lines[0][0] != 0 or not lines[0][1].startswith(head):
            return None
        first = lines[0][1][len(head):]
        if len(lines) == 1:
            keep = [test.paren(AND)] if test is not None else []
            return self._comprehension(first, item, source, keep, b, kind, None, False)
        close = lines[-1][1]
        if first not in ("{", "[") or lines[-1][0] != 0 or close != {"{": "}", "[": "]"}[first]:
            return None
        middle = lines[1:-1]
        name = re.compile(rf"(?<![\w.]){re.escape(var)}(?!\w)")
        if any(depth < 1 or name.search(text) for depth, text in middle):
            return None
        tail = f"{close} for {item} in {source}" + (f" if {test.src}" if test is not None else "")
        tail += f"] if isinstance({b}, {kind}) else None"
        if 4 * (self._depth + 3) + len(tail) > LINE_LENGTH:
            return None
        out = self.new("out")
        self.emit(f"{out} = [{first}")
        self.splice(middle)
        self.emit(tail)
        return _name(out)

    def _comprehension(self, value: str, item: str, source: str, keep: list[str], b: str,
                       kind: str, pick: int | None, pure: bool) -> Expr | None:
        """``[value for item in source if keep...]`` (``next((...), None)`` when picking one
        element) when ``b`` is a ``kind``, else None: on one line when it fits, else with the
        tests on lines of their own (joined where they fit); None when a test is too long."""
        guard = f" if isinstance({b}, {kind}) else None"
        loop = f"{value} for {item} in {source}"
        test = f" if {' and '.join(keep)}" if keep else ""
        open_, close = ("next((", "), None)") if pick is not None else ("[", "]")
        one_line = open_ + loop + test + close + guard
        if value == item and pick is None and len(one_line) <= 80:
            return Expr(one_line, COND, pure=pure)  # the elements themselves, as before
        var = self.new("v" if pick is not None else "out")
        if len(var) + 3 + len(one_line) <= _ONE_LINE:  # (captured lines may be spliced deeper)
            self.emit(f"{var} = {one_line}")
            return _name(var)
        room = LINE_LENGTH - 4 * (self._depth + 4)  # (the lines may be spliced two deeper)
        lines = [loop]
        for i, part in enumerate(keep):
            word = "if " if i == 0 else "and "
            if i > 0 and len(lines[-1]) + 1 + len(word) + len(part) <= room:
                lines[-1] += f" {word}{part}"
            else:
                lines.append(word + part)
        # the tests only: the loop line is no expression (``[a, b] for item in v`` would
        # tokenize unbalanced)
        lines = lines[:1] + [piece for line in lines[1:] for piece in _split_or(line, room)]
        if any(len(line) > room for line in lines) or len(close + guard) > room:
            return None
        self.emit(f"{var} = {open_}")
        with self.indented():
            for line in lines:
                self.emit(line)
        self.emit(close + guard)
        return _name(var)

    def _projection(self, node, cur):
        left, right = node["children"]
        return self._project(self.compile(left, cur), right, is_object=False)

    def _value_projection(self, node, cur):
        left, right = node["children"]
        return self._project(self.compile(left, cur), right, is_object=True)

    def _filter_projection(self, node, cur):
        left, right, condition = node["children"]
        return self._project(self.compile(left, cur), right, is_object=False,
                             condition=condition)

    def _multi_select(self, values: list[dict], cur: str, build) -> Expr:
        if cur in self._nonnull:  # nested in a multiselect of the same value
            display = build(self.compile_all(values, cur))
            return self.bind(display) if len(display.src) > 60 else display
        self._nonnull.add(cur)
        try:
            with self.capture() as lines:
                parts = self.compile_all(values, cur)
        finally:
            self._nonnull.discard(cur)
        display = build(parts)
        if not lines and len(display.src) <= 45:
            pure = all(p.pure for p in parts)
            return Expr(f"{display.src} if {cur} is not None else None", COND, pure=pure)
        out = self.new("v")
        if not lines:
            line = f"{out} = {display.src} if {cur} is not None else None"
            if len(line) <= _ONE_LINE:  # (captured lines may be spliced deeper)
                self.emit(line)
                return _name(out)
            open_, items, close = display.parts
            if len(", ".join(items)) <= LINE_LENGTH - 4 * (self._depth + 4):
                # its members on one line of their own: three lines, not an if/else of five
                self.emit(f"{out} = None if {cur} is None else {open_}")
                with self.indented():
                    self.emit(", ".join(items))
                self.emit(close)
                return _name(out)
        self.emit(f"if {cur} is None:")
        with self.indented():
            self.emit(f"{out} = None")
        self.emit("else:")
        with self.indented():
            self.splice(lines)
            self.emit_statement(f"{out} = ", display)
        return _name(out)

    def _multi_select_list(self, node, cur):
        return self._multi_select(
            node["children"], cur, lambda parts: _display("[", [p.src for p in parts], "]")
        )

    def _multi_select_dict(self, node, cur):
        keys = [literal_source(child["value"]) for child in node["children"]]
        values = [child["children"][0] for child in node["children"]]
        return self._multi_select(
            values,
            cur,
            lambda parts: _display("{", [f"{k}: {p.src}" for k, p in zip(keys, parts)], "}"),
        )

    def _comparator(self, node, cur):
        op = node["value"]
        left, right = self.operands(self.compile_all(node["children"], cur))
        if op in ("eq", "ne"):
            return self._equality(left, right, negate=op == "ne")
        symbol, helper = _ORDERING[op]
        return _call(self.use_helper(helper), [left.src, right.src], boolean=True)

    def _equality(self, left: Expr, right: Expr, negate: bool) -> Expr:
        if left.const is not None and right.const is None:
            left, right = right, left
        if right.const is None or left.const is not None:
            e = _call(self.use_helper("_jp_eq"), [left.src, right.src], pure=left.pure and
                      right.pure, boolean=True, nonnull=True)
            if negate:
                return Expr(f"not {e.src}", NOT, pure=e.pure, boolean=True, nonnull=True)
            return e
        value = right.const[0]
        flags = dict(pure=left.pure, boolean=True, nonnull=True)
        operand = left.paren(CMP)
        if value is None or value is True or value is False:
            return Expr(f"{operand} is {'not ' if negate else ''}{value!r}", CMP, **flags)
        if isinstance(value, (int, float)) and value in (0, 1):
            # 0 and 1 equal False and True in Python, never in JMESPath.
            if not left.simple:
                left = self.bind(left)
            excluded = "False" if value == 0 else "True"
            if negate:
                return Expr(f"{left.src} != {right.src} or {left.src} is {excluded}", OR,
                            **flags)
            return Expr(f"{left.src} == {right.src} and {left.src} is not {excluded}", AND,
                        **flags)
        return Expr(f"{operand} {'!=' if negate else '=='} {right.paren(CMP)}", CMP, **flags)

    def _and_expression(self, node, cur):
        return self._logical(node, cur, is_or=False)

    def _or_expression(self, node, cur):
        return self._logical(node, cur, is_or=True)

    def _logical(self, node, cur, is_or: bool) -> Expr:
        left_node, right_node = node["children"]
        left = self.compile(left_node, cur)
        level, word = (OR, "or") if is_or else (AND, "and")
        if not left.boolean and not left.simple and right_node["type"] in ("literal", "variable"):
            # `a || {}`: the right side cannot raise and costs nothing: one call, no temporary
            right = self.compile(right_node, cur)
            helper = self.use_helper("_jp_or" if is_or else "_jp_and")
            return _call(helper, [left.src, right.src], pure=left.pure and right.pure,
                         boolean=left.boolean and right.boolean)
        # a temporary that holds the left value only (none of the values memoized): it is
        # given the right side's value in the block below (no `v2 = out1` first)
        fresh = left.name and _TEMP.fullmatch(left.src) and left.src not in self._memo.values()
        if not left.boolean and not left.simple:
            left = self.bind(left)  # the right side reuses it (`parent_id && [..., parent_id]`)
            fresh = True
        # `a.b && <right>`: the right side runs only when a field of `cur` was truthy, so `cur`
        # is an object there (its field reads need no guard, a multiselect of it no null test)
        proves = not is_or and _chain_steps(left_node)[0]["type"] == "field"
        dicts, nonnull = ({cur} - self._dicts, {cur} - self._nonnull) if proves else (set(), set())
        self._dicts |= dicts
        self._nonnull |= nonnull
        try:
            with self.capture() as right_lines:
                right = self.compile(right_node, cur)
        finally:
            self._dicts -= dicts
            self._nonnull -= nonnull
        if left.boolean and not right_lines:
            # For True/False/None, Python's and/or are JMESPath's.
            return Expr(f"{left.paren(level)} {word} {right.paren(level)}", level,
                        pure=left.pure and right.pure, boolean=right.boolean,
                        nonnull=left.nonnull and right.nonnull)
        if not right_lines:
            if not left.simple:
                left = self.bind(left)
            test = truth(left).paren(COND)
            first, second = (left, right) if is_or else (right, left)
            return Expr(f"{first.paren(COND + 1)} if {test} else {second.paren(COND)}", COND,
                        pure=left.pure and right.pure,
                        boolean=left.boolean and right.boolean)
        if fresh:
            var = left.src  # bound above, for this value only: the right side's in the block
        else:
            var = self.new("v")
            self.emit_statement(f"{var} = ", left)
        test = truth(_name(var, boolean=left.boolean))
        self.emit(f"if not {test.paren(NOT)}:" if is_or else f"if {test.src}:")
        with self.indented():
            self.splice(right_lines)
            self.emit_statement(f"{var} = ", right)
        return _name(var, boolean=left.boolean and right.boolean)

    def _not_expression(self, node, cur):
        e = self.truth(self.compile(node["children"][0], cur))
        return Expr(f"not {e.paren(NOT)}", NOT, pure=e.pure, boolean=True, nonnull=True)

    def _expref(self, node, cur):
        """An ``&expr`` argument: a local function hoisted to the top of the body."""
        name = self.new("expr")
        saved, self._nonnull = self._nonnull, set()  # "value" is a new variable here
        memo, self._memo = self._memo, {}  # a function of its own, defined before the body
        try:
            with self.capture() as lines:
                body = self.compile(node["children"][0], "value")
                self.emit_statement("return ", body)
        finally:
            self._nonnull, self._memo = saved, memo
        self._prelude.append((0, f"def {name}(value):"))
        self._prelude.extend((depth + 1, line) for depth, line in lines)
        self._prelude.append((0, ""))
        return _name(name)

    def _function_expression(self, node, cur):
        name = node["value"]
        sig = FUNCTIONS[name]
        args = self.operands(self.compile_all(node["children"], cur))
        return _call(
            self.use_helper(sig.helper),
            [a.src for a in args],
            boolean=name in BOOLEAN_FUNCTIONS,
            nonnull=name in NON_NULL_FUNCTIONS,
        )


#: Functions that never raise, whatever their arguments: called in line (no function of
#: their own is needed to name the spec place of a failure)
_INLINE_FUNCTIONS = frozenset({"to_string", "type", "not_null", "to_number", "coalesce", "to_array",
                               "get", "parse_json"})
#: ``iso8601(value[, unit])`` never raises when the unit is left out or one of these literals
_ISO8601_UNITS = ("s", "ms", "us", "ns")
#: a field read's guard, left out when a line's length is judged: the generated code drops it
#: for a variable known to hold an object (``ExprTable.assume_dicts``)
_DICT_GUARD = re.compile(r" if isinstance\((\w+), dict\) else None")


def _append_last(lines: list[tuple[int, str]], var: str, out: str) -> list[tuple[int, str]] | None:
    """``lines`` whose last statement ``var = X`` (``var`` read nowhere else) is written
    ``out.append(X)``; None when they do not end that way."""
    head = f"{var} = "
    starts = [i for i, (depth, text) in enumerate(lines) if depth == 0 and not text.startswith((")", "]", "}"))]
    if not starts or not lines[starts[-1]][1].startswith(head):
        return None
    first = starts[-1]
    tail = lines[first + 1:]
    if tail and not (tail[-1][0] == 0 and tail[-1][1] in (")", "]", "}")):
        return None
    name = re.compile(rf"(?<![\w.]){re.escape(var)}(?!\w)")
    if any(name.search(text) for i, (_, text) in enumerate(lines) if i != first):
        return None
    out_lines = list(lines)
    text = lines[first][1][len(head):]
    if tail:
        out_lines[first] = (0, f"{out}.append({text}")
        out_lines[-1] = (0, tail[-1][1] + ")")
    else:
        out_lines[first] = (0, f"{out}.append({text})")
    return out_lines


#: Levels of the syntax tree one inline expression may nest (each adds up to a few parentheses).
MAX_INLINE_DEPTH = 32


class InlineCompiler:
    """Single Python expressions for simple ASTs (or None when not simple).

    Handles field chains, literals, variables, ``@``, and comparisons, ``!``,
    ``&&`` and ``||`` of those.  ``pure`` operands are evaluated eagerly where
    the reference would short-circuit; that is only done when it cannot change
    the result (they cannot raise).
    """

    def __init__(self, data_var: str, scope_var: str) -> None:
        self.data = data_var
        self.scope = scope_var
        self.helpers: set[str] = set()
        self.depth = 0

    def compile(self, node: dict) -> Expr | None:
        """The node as one expression, or None: also when it nests more than
        :data:`MAX_INLINE_DEPTH` levels (``a || b || ...`` nests a call a term, and Python
        refuses 200 nested parentheses; the statements of the function form do not nest)."""
        if self.depth >= MAX_INLINE_DEPTH:
            return None
        self.depth += 1
        try:
            return self._compile(node)
        finally:
            self.depth -= 1

    def _compile(self, node: dict) -> Expr | None:
        kind = node["type"]
        if kind == "literal":
            return _literal(node["value"])
        if kind in ("current", "identity"):
            return Expr(self.data, ATOM, simple=True, pure=True)
        if kind == "variable":
            return Expr(f"{self.scope}.get({string_source(node['value'])})", ATOM, pure=True)
        if kind in ("field", "subexpression", "index_expression"):
            return self._path(node)
        if kind == "comparator":
            return self._comparator(node)
        if kind == "not_expression":
            e = self.compile(node["children"][0])
            if e is None:
                return None
            t = self._truth(e)
            return Expr(f"not {t.paren(NOT)}", NOT, pure=e.pure, boolean=True, nonnull=True)
        if kind in ("and_expression", "or_expression"):
            return self._logical(node, kind == "or_expression")
        if kind in ("multi_select_dict", "multi_select_list"):
            return self._multi_select(node, kind == "multi_select_dict")
        if kind == "function_expression" and self._never_raises(node):
            args = [self.compile(child) for child in node["children"]]
            if any(a is None for a in args):
                return None
            helper = FUNCTIONS[node["value"]].helper
            src = f"{helper}({', '.join(a.src for a in args)})"
            # a long call in a longer statement: a function of its own (counted without the
            # guards of field reads, which are dropped when the value is known to be an object)
            if len(_DICT_GUARD.sub("", src)) > 60 or len(src) > 76:
                return None
            self.helpers.add(helper)
            return Expr(src, ATOM,
                        pure=all(a.pure for a in args), nonnull=node["value"] in NON_NULL_FUNCTIONS)
        return None

    def _multi_select(self, node: dict, is_dict: bool) -> Expr | None:
        """``{a: x, b: y}`` / ``[x, y]`` of the current value: a display, null for a null value
        (the guard goes where the value is known to be an object: ``ExprTable.assume_dicts``)."""
        children = [c["children"][0] for c in node["children"]] if is_dict else node["children"]
        parts = [self.compile(child) for child in children]
        if any(p is None for p in parts):
            return None
        if is_dict:
            items = [f"{literal_source(c['value'])}: {p.src}" for c, p in zip(node["children"], parts)]
            display = "{" + ", ".join(items) + "}"
        else:
            display = "[" + ", ".join(p.src for p in parts) + "]"
        if len(_DICT_GUARD.sub("", display)) > 120:
            return None  # a function of its own reads better
        return Expr(f"{display} if {self.data} is not None else None", COND,
                    pure=all(p.pure for p in parts))

    @staticmethod
    def _never_raises(node: dict) -> bool:
        """A call of a function that cannot raise with these arguments (see _INLINE_FUNCTIONS)."""
        name, args = node["value"], node["children"]
        if name == "iso8601":
            return len(args) == 1 or args[1]["type"] == "literal" and args[1]["value"] in _ISO8601_UNITS
        return name in _INLINE_FUNCTIONS

    def _truth(self, e: Expr) -> Expr:
        t = truth(e)
        if "_jp_truthy(" in t.src and not e.boolean:
            self.helpers.add("_jp_truthy")
        return t

    def _path(self, node: dict) -> Expr | None:
        flat = _chain_steps(node)
        base = self.data
        if flat and flat[0]["type"] == "variable":
            base = f"{self.scope}.get({string_source(flat[0]['value'])})"
            flat = flat[1:]
        elif flat and flat[0]["type"] in ("current", "identity"):
            flat = flat[1:]
        if any(n["type"] not in ("field", "index") for n in flat):
            return None
        keys = [n["value"] for n in flat]
        if not keys:
            return Expr(base, ATOM, simple=base == self.data, pure=True)
        if len(keys) == 1 and base == self.data and isinstance(keys[0], str):
            return Expr(
                f"{base}.get({literal_source(keys[0])}) if isinstance({base}, dict) else None",
                COND, pure=True)
        self.helpers.add("_jp_path")
        tup = "(" + ", ".join(literal_source(k) for k in keys) + ("," if len(keys) == 1 else "") + ")"
        return Expr(f"_jp_path({base}, {tup})", ATOM, pure=True)

    def _comparator(self, node: dict) -> Expr | None:
        left = self.compile(node["children"][0])
        right = self.compile(node["children"][1])
        if left is None or right is None:
            return None
        op = node["value"]
        if op in ("eq", "ne"):
            if left.const is not None and right.const is None:
                left, right = right, left
            if right.const is not None and left.const is None:
                value = right.const[0]
                negate = op == "ne"
                flags = dict(pure=left.pure, boolean=True, nonnull=True)
                if value is None or value is True or value is False:
                    return Expr(f"{left.paren(CMP)} is {'not ' if negate else ''}{value!r}",
                                CMP, **flags)
                if not (isinstance(value, (int, float)) and value in (0, 1)):
                    return Expr(f"{left.paren(CMP)} {'!=' if negate else '=='} "
                                f"{right.paren(CMP)}", CMP, **flags)
            self.helpers.add("_jp_eq")
            e = Expr(f"_jp_eq({left.src}, {right.src})", ATOM, pure=left.pure and right.pure,
                     boolean=True, nonnull=True)
            if op == "ne":
                return Expr(f"not {e.src}", NOT, pure=e.pure, boolean=True, nonnull=True)
            return e
        helper = _ORDERING[op][1]
        self.helpers.add(helper)
        return Expr(f"{helper}({left.src}, {right.src})", ATOM, pure=False, boolean=True)

    def _logical(self, node: dict, is_or: bool) -> Expr | None:
        left = self.compile(node["children"][0])
        right = self.compile(node["children"][1])
        if left is None or right is None:
            return None
        level, word = (OR, "or") if is_or else (AND, "and")
        if left.boolean:
            return Expr(f"{left.paren(level)} {word} {right.paren(level)}", level,
                        pure=left.pure and right.pure, boolean=right.boolean)
        if not right.pure:
            return None
        if left.simple:
            test = self._truth(left).paren(COND)
            first, second = (left, right) if is_or else (right, left)
            return Expr(f"{first.paren(COND + 1)} if {test} else {second.paren(COND)}", COND,
                        pure=left.pure, boolean=left.boolean and right.boolean)
        helper = "_jp_or" if is_or else "_jp_and"
        self.helpers.add(helper)
        return Expr(f"{helper}({left.src}, {right.src})", ATOM, pure=left.pure)
