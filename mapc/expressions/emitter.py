"""The statement emitter under :class:`~mapc.expressions.compiler.FunctionCompiler`.

It holds the state of one function body being written: its lines and indentation,
fresh temporaries, the values known not to be None or to be objects, and the
common subexpressions already held in variables (``_memo``). The node compilers
(:mod:`.compile_paths`, :mod:`.compile_projections`, :mod:`.compile_logic`,
:mod:`.compile_calls`) are mixins over it: ``compile`` dispatches on the node type
to their ``_<type>`` methods.
"""

from __future__ import annotations

import re
from contextlib import contextmanager

from .layout import _ASSIGNED, _conjuncts, _renumber, _WORD
from .paths import CHAIN_TYPES, chain_key, root_fields
from .pyexpr import AND, ATOM, COND, LINE_LENGTH, OR, Expr, _name, literal_source, truth


class Emitter:
    """Writes the body of ``def <name>(data, scope)``; see :class:`FunctionCompiler`."""

    def __init__(self) -> None:
        self.helpers: set[str] = set()
        self.uses_scope = False
        self._counters: dict[str, int] = {}
        self._lines: list[tuple[int, str]] = []
        self._depth = 0
        self._prelude: list[tuple[int, str]] = []
        self._nonnull: set[str] = set()  # names known not to be None where code goes now
        self._dicts: set[str] = set()  # names known to hold an object where code goes now
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
