"""Check a spec against its fixtures, statically, before anything is built.

Fixtures are samples of the source a spec maps. ``mapc check`` (and so
``build`` and ``run``) profiles them (:mod:`mapc.analysis.profile`: shape only, bounded)
and looks up every field path the spec reads (:mod:`mapc.analysis.reads`):

- ``container_mismatch`` (error): the fixture is JSON Lines and the spec says
  ``container: json``, or it is one JSON document over several lines and the
  spec says ``jsonl``; the diagnostic names the key and the right value.
- ``not_in_fixtures`` (warning): a field the spec reads that no fixture has, at
  the column of the first missing name in the expression, with a did-you-mean
  over the fields the fixtures have there. A bare word under a key whose values
  come from a fixed set (``status: completed``) is taken for the text it looks
  like: the hint says how to quote it.
- ``type_mismatch`` (warning): a function argument of a type the fixtures prove
  wrong (``lower(n)`` where ``n`` is a number or null in every fixture), with
  the fix.

Only what the fixtures prove is reported. A field read in a test or an
alternative (``x == 'a'``, ``a || b``, ``when``) may be absent by design: it is
reported only when a fixture has a field with a close name there (a typo). Paths
through computed values (``parse_json(x).y``) are not checked, a profile cut by
its bound proves no absence, and fields read by a spec this one extends are the
library's business (their types are still checked: a wrong type fails at run
time whoever wrote the expression). The work is linear in the spec and bounded
in the fixtures (``CHECK_BYTES``, ``CHECK_LINES``, ``MAX_FIXTURES``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from mapc.core.diagnostics import Diagnostic, WARNING
from mapc.analysis.profile import PathIndex
from mapc.core.fieldpath import key as field_key
from mapc.core.fieldpath import literal_dots, render, segments
from mapc.core.fieldpath import variable as fieldpath_variable
from mapc.core.fieldpath import render as _join
from mapc.expressions import FUNCTIONS
from mapc.expressions.paths import plain_path
from mapc.expressions.variables import rewrite_variables
from mapc.analysis.profile import Profile, ProfileError, profile
from mapc.analysis.reads import Read, spec_reads
from mapc.runtime.mapping_rt import STATUSES
from mapc.spec import ir

CHECK_BYTES = 4 << 20  # per fixture
CHECK_LINES = 2000
MAX_FIXTURES = 8
MAX_LISTED = 8  # fields named in a hint

#: Keys whose values usually come from a fixed set of texts: a bare word there is a text.
LITERAL_KEYS = {
    "status": STATUSES,
    "role": ("user", "assistant", "system", "tool", "developer", "environment"),
    "termination": ("completed", "done", "stop", "stopped", "error", "failed", "timeout", "max_steps",
                    "max_turns", "max_tokens", "length", "submitted", "cancelled", "truncated", "terminated"),
}
#: JMESPath has no keywords: `null` reads a field named null, which specs use as the null value.
_KEYWORDS = frozenset({"null", "true", "false"})
_TEST_KEYS = (".when", ".where")
_DEFAULTS = {"string": "''", "number": "`0`", "array": "`[]`", "object": "`{}`"}


def check_fixtures(spec: ir.Spec) -> list[Diagnostic]:
    """Diagnostics for ``spec`` against its fixtures (none without fixtures)."""
    container = spec.source.container
    if not spec.fixtures or container not in ("json", "jsonl", "csv"):
        return []
    diags: list[Diagnostic] = []
    samples: list[tuple[str, Profile]] = []
    for i, fx in enumerate(spec.fixtures[:MAX_FIXTURES]):
        problem = container_problem(Path(fx.resolved), container)
        if problem is not None:
            diags.append(_container_diag(spec, i, fx.path, problem))
            continue
        try:
            columns = dict(spec.source.columns) if container == "csv" else None
            samples.append((Path(fx.path).name, profile(fx.resolved, container=container, max_bytes=CHECK_BYTES,
                                                        max_lines=CHECK_LINES, columns=columns,
                                                        delimiter=spec.source.delimiter)))
        except (ProfileError, OSError):
            continue  # the build's validator says what it cannot read
    if diags or not samples:
        return diags
    return _ReadCheck(spec, samples).run()


# -- the container ------------------------------------------------------------------------------
def sniff(text: str, cut: bool) -> str | None:
    """``json`` (one document over several lines), ``json-line`` (one document on one line),
    ``jsonl`` (a JSON value per line), ``other``, or None when the prefix cannot tell."""
    decoder = json.JSONDecoder()
    start = len(text) - len(text.lstrip())
    if start == len(text):
        return None
    try:
        _, end = decoder.raw_decode(text, start)
    except (ValueError, RecursionError):
        lines = [ln for ln in text.split("\n")[:50] if ln.strip()]
        parsed = sum(1 for ln in lines if _is_json(ln))
        if len(lines) >= 2 and _is_json(lines[0]) and parsed >= 2:
            return "jsonl"  # the first line is a value, the text as a whole is not
        if parsed >= 2:
            return "jsonl"
        if cut:
            return "json" if not _is_json(lines[0]) else None  # a document cut by the bound
        return "other"
    rest = text[end:]
    stripped = rest.lstrip()
    if not stripped:
        return "json" if "\n" in text[start:end] else "json-line"
    if "\n" in rest[: len(rest) - len(stripped)] and "\n" not in text[start:end]:
        return "jsonl"
    return "other"


def _is_json(line: str) -> bool:
    try:
        json.loads(line)
        return True
    except (ValueError, RecursionError):
        return False


def container_problem(path: Path, container: str) -> tuple[str, str | None] | None:
    """``(what the fixture is, the right container)`` when ``container`` cannot read it."""
    if container == "csv":
        return None  # a table: reading it (profile, the build's validator) says what is wrong
    try:
        with open(path, "rb") as fh:
            data = fh.read(CHECK_BYTES + 1)
    except OSError:
        return None
    if data[:2] == b"\x1f\x8b":
        return None  # compressed: not for a text sniffer to judge
    cut = len(data) > CHECK_BYTES
    text = data[:CHECK_BYTES].decode("utf-8", "ignore").lstrip("\ufeff")
    kind = sniff(text, cut)
    if container == "json" and kind == "jsonl":
        return "JSON Lines (one JSON value per line)", "jsonl"
    if container == "jsonl" and kind == "json":
        return "one JSON document over several lines", "json"
    if kind == "other":
        return "neither a JSON document nor JSON Lines", None
    return None


def _container_diag(spec: ir.Spec, index: int, name: str, problem: tuple[str, str | None]) -> Diagnostic:
    what, right = problem
    if right is None:
        return spec.diag("invalid_fixture", ("fixtures", index), f"the fixture {name} is {what}",
                         hint="a fixture is a sample of the source: give a trace the adapter will read")
    return spec.diag("container_mismatch", ("source", "container"),
                     f"container: {spec.source.container}, but the fixture {name} is {what}",
                     hint=f"write `container: {right}` under `source:`")


# -- field reads ------------------------------------------------------------------------------------
def _cut(path: str, limit: int = 80) -> str:
    """A path quoted in a message, cut to ``limit`` characters (a path may be 16 KiB long)."""
    return path if len(path) <= limit else path[: limit - 1] + "…"


def _relative(written: str) -> str:
    """The part of a written path after its variable (``$step.a.b`` -> ``a.b``)."""
    if not written.startswith("$"):
        return written
    body = written[1:]
    for i, ch in enumerate(body):
        if ch in ".[":
            return body[i + 1:] if ch == "." else body[i:]
    return ""


class _ReadCheck:
    def __init__(self, spec: ir.Spec, samples: list[tuple[str, Profile]]):
        self.spec = spec
        self.names = ", ".join(dict.fromkeys(name for name, _ in samples))
        self.complete = not any(p.truncated for _, p in samples)
        self.indexes = [PathIndex(p) for _, p in samples]
        self.own = {str(Path(spec.file).resolve())}
        self.reported: set[tuple[str, str]] = set()
        self.kids: dict[tuple[str, ...], set[str]] | None = None
        self.diags: list[Diagnostic] = []

    def run(self) -> list[Diagnostic]:
        if not self.complete:
            return []  # a prefix proves no absence and no type
        reads = [r for r in spec_reads(self.spec) if r.source == "trace" and r.exact]
        self.optional = _optional_places(self.spec)
        groups: dict[tuple[str, str], list[Read]] = {}
        by_expr: dict[str, list[Read]] = {}
        for r in reads:
            for written in r.fields or (r.path,):
                groups.setdefault((r.where, written), []).append(r)
            if r.expr is not None:
                by_expr.setdefault(r.where, []).append(r)
        for (_, written), group in groups.items():
            # one written path may stand for several (a loop over `concat(a, b)`): all must be absent
            if not any(self.types(r.path) is not None for r in group):
                self.missing(group[0], written)
        for expr_reads in by_expr.values():
            self.argument_types(expr_reads[0].expr, expr_reads)
        return self.diags

    # -- lookups ----------------------------------------------------------------
    def types(self, path: str) -> set[str] | None:
        """JSON types at ``path`` over every fixture; None when no fixture has it."""
        found = [ix.lookup(path) for ix in self.indexes]
        if not any(found):
            return None
        return set().union(*(f[1] for f in found if f))

    def children(self, segs: tuple[str, ...]) -> list[str]:
        """Field names the fixtures have in the objects at ``segs`` (one pass over the profiles,
        then a lookup: linear however many reads are missing)."""
        if self.kids is None:
            self.kids = {}
            for ix in self.indexes:
                for path_segs in ix.fields:
                    if path_segs and path_segs[-1] != "[]":
                        self.kids.setdefault(path_segs[:-1], set()).add(path_segs[-1])
        if "*" not in segs:
            return sorted(self.kids.get(segs, ()))
        return sorted({n for parent, names in self.kids.items() if len(parent) == len(segs) and all(
            p == q or p == "*" for p, q in zip(segs, parent)) for n in names})

    def mark(self, expr: ir.Expr | None, path: tuple, offset: int):
        if expr is not None and self.spec.locate_in is not None:
            return self.spec.locate_in(expr.path, offset)
        return self.spec.locate(path) if self.spec.locate else None

    def diag(self, code: str, path: tuple, message: str, hint: str | None, mark) -> None:
        from mapc.core.diagnostics import format_path

        self.diags.append(Diagnostic(code=code, message=message, severity=WARNING,
                                     file=mark.file if mark else self.spec.file,
                                     line=mark.line if mark else None, column=mark.column if mark else None,
                                     path=format_path(path) or None, hint=hint))

    # -- a read no fixture has ---------------------------------------------------------
    def missing(self, r: Read, written: str) -> None:
        segs = segments(r.path)
        k = next((n for n in range(len(segs)) if self.types(_join(segs[: n + 1])) is None), None)
        if k is None or (segs[k] in _KEYWORDS and k == len(segs) - 1):
            return
        parent = self.types(_join(segs[:k])) or set()
        if not parent - {"null"}:
            return  # only ever null there: the fixtures say nothing about its fields
        expr = r.expr
        if expr is None:  # source.probe.require
            self.require_missing(r, segs, k)
            return
        if str(Path(expr.file).resolve()) not in self.own:
            return  # written in a spec this one extends
        rel = segments(_relative(written))
        k_rel = k - (len(segs) - len(rel))
        key = segs[k]
        if k_rel < 0 or key == "[]" or segments(written)[0] in _KEYWORDS:
            # the loop's own array (reported where the loop reads it), or elements of a
            # projection's result, which field paths only approximate
            return
        if (r.where, _join(segs[: k + 1])) in self.reported:
            return
        self.reported.add((r.where, _join(segs[: k + 1])))
        if self.dotted_key(r, expr, written, segs, rel):
            return
        optional = (r.where.endswith(_TEST_KEYS) or r.where == "source.probe.when"
                    or written in expr.compiled.tested_paths or _inside(expr.path, self.optional))
        here = self.children(segs[:k])
        close = typo_of(key, here)
        spec_key = next((p for p in reversed(expr.path) if isinstance(p, str)), "")
        bare = expr.text.strip() == written and len(rel) == 1 and not written.startswith("$")
        literal = bare and key in LITERAL_KEYS.get(spec_key, ())
        if optional and not close and not literal:
            return
        shown, above = _cut(written), _cut(_join(segs[:k]))
        if "object" not in parent:
            what = _a(parent - {"null"})
            message = (f"reads `{shown}`, but `{above or '@'}` is {what} in every fixture, never an "
                       f"object with a field `{field_key(key)}` ({self.names})")
            hint = "write `[]` to read the elements of an array (`a[].b`)" if "array" in parent else None
        else:
            where = f": `{above}` never has `{field_key(key)}`" if k else ""
            message = f"reads a field `{shown}` that no fixture has{where} ({self.names})"
            if literal:
                hint = f"did you mean the text '{key}'? write \"'{key}'\""
            elif close:
                hint = f"did you mean `{field_key(close[0])}`?" + (f" (the fixtures have `{_join(segs[:k] + (close[0],))}`)"
                                                       if k else "")
            else:
                listed = ", ".join(map(field_key, here[:MAX_LISTED])) + (", ..." if len(here) > MAX_LISTED else "")
                hint = f"fields there: {listed}" if here else None
        column = _field_column(expr.text, rel, k_rel)
        self.diag("not_in_fixtures", expr.path, message, hint, self.mark(expr, expr.path, column))

    def dotted_key(self, r: Read, expr: ir.Expr, written: str, segs: tuple, rel: tuple) -> bool:
        """Report a read whose names, joined by their dots, are one key the fixtures have
        (``attributes.eval.score`` for the key ``eval.score``); True when reported."""
        above = segs[: len(segs) - len(rel)]
        fixed = literal_dots(rel, lambda c: self.types(_join(above + c)) is not None,
                             lambda prefix: self.children(above + prefix))
        if fixed is None:
            return False
        variable = written[: len(written) - len(_relative(written))].rstrip(".") if written.startswith("$") else ""
        fix = render(((fieldpath_variable(variable),) if variable else ()) + fixed)
        start = next(i for i, (s, t) in enumerate(zip(fixed, rel)) if s != t)
        name = fixed[start]
        under = render(((fieldpath_variable(variable),) if variable else ()) + fixed[:start])
        message = (f"reads `{_cut(written)}`, which no fixture has: a path reads each dot as a step, and the fixtures "
                   f"have one key `{name}`, dots and all, " + (f"under `{under}`" if under else "at the top")
                   + f" ({self.names})")
        hint = f"write `{fix}` (a key that is not a plain name is quoted in a path)"
        column = _field_column(expr.text, rel, start)
        self.diag("dotted_key", expr.path, message, hint, self.mark(expr, expr.path, column))
        return True

    def require_missing(self, r: Read, segs: tuple, k: int) -> None:
        probe = self.spec.source.probe
        index = next((i for i, keys in enumerate(probe.require) if render(keys) == r.path), 0)
        path = ("source", "probe", "require", index)
        if str(Path(self.spec.locate(path).file).resolve()) not in self.own:
            return
        fixed = literal_dots(segs, lambda c: self.types(_join(c)) is not None, self.children)
        if fixed is not None:
            self.diag("dotted_key", path, f"the probe requires `{r.path}`, which no fixture has: a path reads each "
                      f"dot as a step, and the fixtures have `{render(fixed)}`, a key with dots in its name "
                      f"({self.names})",
                      f"write `'{render(fixed)}'` (the key quoted inside the YAML string)", self.spec.locate(path))
            return
        here = self.children(segs[:k])
        close = typo_of(segs[k], here)
        hint = f"did you mean `{field_key(close[0])}`?" if close else "require only keys every source file has"
        self.diag("not_in_fixtures", path, f"the probe requires `{r.path}`, which no fixture has, so it rejects "
                  f"them ({self.names})", hint, self.spec.locate(path))

    # -- argument types ------------------------------------------------------------------
    def argument_types(self, expr: ir.Expr, reads: list[Read]) -> None:
        for node, written, accepted, column in field_arguments(expr):
            paths = [r.path for r in reads if written in r.fields]
            seen = [self.types(p) for p in paths]
            if not seen or any(t is None for t in seen):
                continue  # absent somewhere: reported as a missing read, if at all
            types = set().union(*seen)
            if types & accepted:
                continue
            if "operator" in node:  # `end - start` on two timestamps
                wants = f"`{node['operator']}` computes on numbers"
                fix = (f"write epoch({written}) for a time, to_number({written}) for digits"
                       if "string" in types else "read another field, or convert it first")
            else:
                wants = f"{node['value']}() expects {_a(accepted)}"
                fix = _fix(_call_text(expr.text, column), written, types, accepted)
            self.diag("type_mismatch", expr.path,
                      f"{wants}, but `{written}` is {_a(types)} in every fixture ({self.names}): "
                      "it fails at run time", fix, self.mark(expr, expr.path, column))


def field_arguments(expr: ir.Expr):
    """``(call node, field path written, types accepted, column of the call)`` for each field
    argument of a function ``expr`` always calls, where null is not accepted."""
    offsets = None
    for node in _unconditional_calls(expr.compiled.ast):
        sig = FUNCTIONS.get(node["value"])
        if sig is None:
            continue
        for i, arg in enumerate(node["children"]):
            param = sig.param_for(i)
            accepted = {t.split("-")[0] for t in param.types}
            if not accepted or "null" in accepted or param.literal:
                continue
            written = _written_path(arg)
            if not written:
                continue
            if offsets is None:
                _, offsets = rewrite_variables(expr.text)
            yield node, written, accepted, offsets.to_original(node.get("position", 0))


def argument_hints(expr: ir.Expr) -> dict[str, tuple[str | None, str | None]]:
    """Per function ``expr`` calls on a field: the fix when that field is null at run time
    (`lower(x || '')`) and when it has another wrong type (`lower(to_string(x))`), worded as
    `check` words them when the fixtures prove the type."""
    hints: dict[str, tuple[str | None, str | None]] = {}
    for node, written, accepted, column in field_arguments(expr):
        if node["value"] not in hints and "operator" not in node:  # null operands give null
            call = _call_text(expr.text, column)
            other = "string" if "string" not in accepted else "number"
            hints[node["value"]] = (_fix(call, written, {"null"}, accepted), _fix(call, written, {other}, accepted))
    return hints


def typo_of(word: str, names: list[str]) -> list[str]:
    """The name ``word`` is most likely a typo of (one or two edits, transpositions count one)."""
    limit = 1 if len(word) <= 4 else 2
    best = sorted((_distance(word, n), n) for n in names if n != word and abs(len(n) - len(word)) <= limit)
    return [best[0][1]] if best and best[0][0] <= limit else []


def _distance(a: str, b: str) -> int:
    """Optimal string alignment distance (Levenshtein plus adjacent transpositions)."""
    prev2, prev = None, list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb))
            if prev2 is not None and i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        prev2, prev = prev, cur
    return prev[len(b)]


def _optional_places(spec: ir.Spec) -> set[tuple]:
    """Spec paths whose reads may be absent by design: rules and emits with a `when` (they may
    match only elements the fixtures lack) and object templates (null members are dropped)."""
    places: set[tuple] = set()

    def visit(node) -> None:
        if isinstance(node, ir.ObjectTemplate):
            places.add(tuple(node.path))
            return
        if isinstance(node, (ir.Rule, ir.EventTemplate)) and node.when is not None:
            places.add(tuple(node.path))
            return
        if isinstance(node, tuple):
            for item in node:
                visit(item)
        elif hasattr(node, "__dataclass_fields__") and not isinstance(node, ir.Expr):
            for name in node.__dataclass_fields__:
                visit(getattr(node, name))

    visit(spec.levels)
    visit(spec.events)
    return places


def _inside(path: tuple, places: set[tuple]) -> bool:
    return any(tuple(path[:n]) in places for n in range(len(path) + 1))


def _unconditional_calls(node: dict):
    """Function calls evaluated on the expression's own ``@`` whenever it is evaluated."""
    kind = node["type"]
    children = [c for c in node.get("children", []) if isinstance(c, dict)]
    if kind == "function_expression":
        yield node
        for c in children:
            if c["type"] != "expref":
                yield from _unconditional_calls(c)
    elif kind in ("subexpression", "index_expression", "pipe", "projection", "filter_projection",
                  "value_projection", "flatten", "and_expression", "or_expression"):
        if children:  # the rest runs on another `@`, or only sometimes
            yield from _unconditional_calls(children[0])
    elif kind in ("comparator", "not_expression", "multi_select_list", "multi_select_dict", "key_val_pair"):
        for c in children:
            yield from _unconditional_calls(c)


def _written_path(arg: dict) -> str | None:
    """``a.b`` or ``$v.a.b`` for a plain field chain argument."""
    names = plain_path(arg)
    if names is not None:
        return render(names)
    if arg["type"] == "subexpression" and arg["children"] and arg["children"][0]["type"] == "variable":
        rest = [plain_path(c) for c in arg["children"][1:]]
        if all(r is not None for r in rest) and rest:
            return render((fieldpath_variable(arg["children"][0]["value"]), *(n for r in rest for n in r)))
    return None


def _a(types: set[str]) -> str:
    """``{'number', 'null'}`` -> ``a number or null``."""
    words = sorted(types, key=lambda t: (t == "null", t))
    return " or ".join(w if w == "null" else ("an " if w[0] in "aeiou" else "a ") + w for w in words)


def _call_text(text: str, column: int) -> str:
    """The call starting at ``column`` (``lower(x)``), up to its closing parenthesis."""
    depth, quote = 0, None
    for i in range(column, len(text)):
        ch = text[i]
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"`":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return text[column:i + 1]
    return text[column:]


def _fix(call: str, written: str, types: set[str], accepted: set[str]) -> str | None:
    """The call with its argument made acceptable, as a hint."""
    name, _, args = call.partition("(")

    def with_arg(new: str) -> str:
        pattern = r"(?<![\w$.'\"`])" + re.escape(written) + r"(?![\w])"
        return f"{name}({re.sub(pattern, lambda _: new, args, count=1)}"

    default = next((_DEFAULTS[t] for t in sorted(accepted) if t in _DEFAULTS), None)
    nullable = f"{written} || {default}" if "null" in types and default else written
    if not types - {"null"}:
        return f"write {with_arg(nullable)} to map null as {default}" if default else None
    if "string" in accepted:
        return f"write {with_arg(f'to_string({nullable})')}, or read another field"
    if "number" in accepted and "string" in types:
        return f"write {with_arg(f'to_number({nullable})')}, or read another field"
    return "read another field, or convert it first"


def _field_column(text: str, rel: tuple[str, ...], k_rel: int) -> int:
    """Column (0-based) of the name ``rel[k_rel]`` (or the last name before it) in ``text``."""
    from jmespath.lexer import Lexer

    names = [(i, s) for i, s in enumerate(rel[: k_rel + 1]) if s not in ("[]", "*")]
    if not names:
        return 0
    target = names[-1][1]
    previous = names[-2][1] if len(names) > 1 else None
    try:
        rewritten, offsets = rewrite_variables(text)
        tokens = list(Lexer().tokenize(rewritten))
    except Exception:  # the expression compiled, so this is not expected; point at its start
        return 0
    idents = [i for i, t in enumerate(tokens) if t["type"] in ("unquoted_identifier", "quoted_identifier")
              and not (i + 1 < len(tokens) and tokens[i + 1]["type"] == "lparen")]
    best = None
    for i in idents:
        if tokens[i]["value"] != target:
            continue
        before = _previous_name(tokens, i)
        score = 2 if before == previous else (1 if previous is None and before is None else 0)
        if best is None or score > best[0]:
            best = (score, i)
    return offsets.to_original(tokens[best[1]]["start"]) if best else 0


def _previous_name(tokens: list[dict], i: int) -> str | None:
    """The field name just before token ``i`` in the same chain (``a.b``, ``a[0].b``), if any."""
    j = i - 1
    if j < 0 or tokens[j]["type"] != "dot":
        return None
    j -= 1
    while j >= 0 and tokens[j]["type"] in ("rbracket", "number", "lbracket", "star", "flatten", "colon", "filter"):
        j -= 1
    if j >= 0 and tokens[j]["type"] in ("unquoted_identifier", "quoted_identifier"):
        return tokens[j]["value"]
    return None
