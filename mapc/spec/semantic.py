"""Second validation layer: meaning. Builds the IR while collecting problems.

Runs only on data that passed the JSON Schema, so shapes are known here; what
is checked is what a schema cannot say: expressions compile (errors pointed at
the column inside the expression), variables are in scope, ids are unique,
ranges make sense, names follow each host's rules, placeholders exist, files
referenced by the spec exist, and rules are reachable.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import re
import string
from pathlib import Path
from typing import Any

from mapc.core import fieldpath
from mapc.core.diagnostics import Diagnostic, Findings, TooManyErrors, format_path
from mapc.expressions import ExpressionError, compile_expression
from mapc.spec import ir
from mapc.spec.loader import LoadedSpec
from mapc.spec.schema import MAX_FIXTURES
from mapc.spec.schema_check import suggest

LEVELS = ("run", "case", "group", "trajectory")
#: Variables every records expression may use.
BASE_VARIABLES = frozenset({"source", "tables", "siblings", "root"})
RESERVED = frozenset(
    BASE_VARIABLES
    | set(LEVELS)
    | {"event", "index", "ordinal", "task", "score", "signals", "output", "events", "carry", "merged"}
)
#: Longest expression (or template placeholder) compiled; real specs use well under 1 KiB.
MAX_EXPRESSION_CHARS = 16 * 1024
#: All expressions of a spec together, each counted as at least EXPRESSION_MIN_COST characters
#: (compiling one costs about that much however short it is). The library's largest spec
#: uses about 4 KiB; this bounds compiling at under a second (bench/hostile_specs.py).
MAX_SPEC_EXPRESSION_CHARS = 32 * 1024
EXPRESSION_MIN_COST = 32
#: A tasks file is read whole, like a sibling file of a trace.
MAX_TASKS_BYTES = 64 << 20
_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89abAB]")
_SURROGATE = re.compile("[\ud800-\udfff]")
PLACEHOLDERS = ("task_id", "seed", "candidate", "trace", "input_file", "project_root")
#: The fields of the record (or value) a variable holds; any other always reads null.
VARIABLE_FIELDS = {
    "run": ("record_type", "id", "name", "started_at", "metadata"),
    "case": ("record_type", "id", "run_id", "name", "input", "metadata"),
    "group": ("record_type", "id", "case_id", "name", "metadata"),
    "trajectory": ("record_type", "id", "group_id", "parent_id", "branch_id", "status", "termination",
                   "metadata"),
    "source": ("path", "name", "stem", "line", "byte_offset", "byte_length"),
    "merged": ("key", "lines", "first_line", "last_line"),
}
_EXPR_CODES = {
    "syntax": "expression_syntax",
    "unknown-function": "unknown_function",
    "unknown-variable": "unknown_variable",
    "invalid-arity": "invalid_arity",
    "invalid-type": "invalid_argument",
    "invalid-value": "invalid_argument",
}
# RELAI naming rules (contracts/relai.md)
_TAG_RE = re.compile(r"^[A-Za-z0-9._-]+$")
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")


def task_id_problem(task_id: str) -> str | None:
    """Why a task id breaks RELAI's rules, or None when it is fine."""
    if not task_id:
        return "must not be empty"
    if task_id == "*":
        return "must not be exactly `*` (that selects every task)"
    if task_id.startswith("/"):
        return "must not be absolute"
    if "::" in task_id:
        return "must not contain `::` (it separates adapter and task in selectors)"
    if "," in task_id:
        return "must not contain a comma"
    if "\\" in task_id:
        return "must not contain a backslash"
    if _CONTROL_RE.search(task_id):
        return "must not contain control characters"
    for seg in task_id.split("/"):
        if seg in ("", ".", ".."):
            return "must not have empty, `.` or `..` path segments"
    return None


def path_problem(path: str) -> str | None:
    """Why the operating system could not even look ``path`` up (a NUL, names over its limits)."""
    if "\0" in path:
        return "contains a NUL character"
    if len(path.encode("utf-8", "surrogatepass")) > 4096:
        return "is longer than 4096 bytes"
    if any(len(part.encode("utf-8", "surrogatepass")) > 255 for part in re.split(r"[/\\]", path)):
        return "has a part longer than 255 bytes (the file system's limit for one name)"
    return None


def tag_problem(tag: str) -> str | None:
    if not _TAG_RE.match(tag or ""):
        return "tags use ASCII letters, digits, `.`, `_` and `-` only"
    if tag in (".", ".."):
        return "a tag must not be `.` or `..`"
    return None


def _digest(data: Any, extra_files: list[Path]) -> str:
    h = hashlib.sha256()
    h.update(json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str).encode())
    hashed: dict[Path, bytes] = {}  # a file named twice is read once
    for f in extra_files:
        if f not in hashed:
            try:
                with open(f, "rb") as stream:  # in chunks: a fixture may be large
                    hashed[f] = hashlib.file_digest(stream, "sha256").hexdigest().encode()
            except OSError:
                hashed[f] = b""
        if hashed[f]:
            h.update(b"\0" + f.name.encode() + b"\0" + hashed[f])
    return h.hexdigest()


class Builder:
    """Turns schema-valid spec data into :class:`ir.Spec`, collecting diagnostics."""

    def __init__(self, spec: LoadedSpec, base_dir: Path):
        self.spec = spec
        self.base_dir = base_dir
        self.diags: list[Diagnostic] = Findings()  # stops the build past MAX_REPORTED errors
        self.bound: dict[str, tuple] = {}  # user variable name -> path where bound
        self.expression_chars = 0  # toward MAX_SPEC_EXPRESSION_CHARS
        self.referenced_files: list[Path] = []
        self.used_tags: set[tuple] = set()
        self.carry_names: dict[str, tuple] = {}  # $carry.<name> in scope -> where declared

    # -- helpers -----------------------------------------------------------
    def dir_of(self, path: tuple) -> Path:
        """Folder that relative paths at ``path`` resolve against: that of the file that
        wrote them (a spec built with `extends` mixes files), else the spec's folder."""
        written = self.spec.mark(path).file
        if written != self.spec.file and Path(written).is_file():
            return Path(written).resolve().parent
        return self.base_dir

    def error(self, code: str, path: tuple, message: str, *, hint: str | None = None,
              key: bool = False, severity: str = "error") -> None:
        self.diags.append(self.spec.diag(code, path, message, hint=hint, key=key, severity=severity))

    def expr(self, text: str, path: tuple, variables, *, offset: int = 0, raw_path: tuple | None = None,
             template: bool = False) -> ir.Expr | None:
        """Compile one expression; ``offset`` locates it inside a larger string (``template``)."""
        where = raw_path or path
        if len(text) > MAX_EXPRESSION_CHARS:  # compiling takes time in proportion: bound it
            self.diags.append(self.spec.diag(
                "expression_too_long", path, f"the expression is {len(text)} characters long; the limit is "
                f"{MAX_EXPRESSION_CHARS}", hint="name its parts with `let` variables", mark=self.spec.mark(where)))
            return None
        if not self.spend(text, path, where):
            return None
        try:
            compiled = compile_expression(text, variables=frozenset(variables))
        except ExpressionError as exc:
            mark = self.spec.expression_mark(where, offset + max(exc.column or 0, 0))
            hint = exc.hint
            if exc.kind == "unknown-variable":
                hint = _stream_variable_hint(exc.message) or hint
            if exc.kind in ("syntax", "invalid-arity"):  # `'it's'`, or `'it''s'` (two arguments)
                from mapc.tools.traps import apostrophe_hint

                hint = apostrophe_hint(text) or hint
            if template and hint is None and exc.kind == "syntax":  # `{% ... %}` meant as text
                hint = "a template's `{...}` holds an expression; write `{{` and `}}` for literal braces"
            self.diags.append(
                self.spec.diag(_EXPR_CODES.get(exc.kind, "expression_error"), path, exc.message,
                               hint=hint, mark=mark)
            )
            return None
        self.unknown_record_fields(text, compiled.field_paths, path, where, offset)
        mark = self.spec.mark(where)
        return ir.Expr(text=text, path=path, compiled=compiled, line=mark.line, file=mark.file)

    def unknown_record_fields(self, text: str, field_paths, path: tuple, where: tuple, offset: int) -> None:
        """``$case.model``: a field the record a variable holds never has, so it always maps to null."""
        for read in field_paths:
            segs = fieldpath.segments(read) if read.startswith("$") else ("",)
            name = segs[0][1:]
            known = tuple(self.carry_names) if name == "carry" else VARIABLE_FIELDS.get(name)
            field = segs[1] if len(segs) > 1 and segs[1] not in (fieldpath.ANY, fieldpath.STAR) else ""
            if known is None or not field or field in known or name in self.bound:
                continue
            found = re.search(r"\$" + name + r"\s*\.\s*[\"']?(" + re.escape(field) + ")", text)
            column = found.start(1) if found else 0
            self.diags.append(self.spec.diag(
                "unknown_field", path, f"${name} has no field `{field}`: it would always be null",
                hint=" ".join(filter(None, [suggest(field, known), f"${name} has {', '.join(known)}"
                                            + ("; other values go in its metadata" if "metadata" in known else "")])),
                mark=self.spec.expression_mark(where, offset + column)))

    def spend(self, text: str, path: tuple, where: tuple | None = None) -> bool:
        """Count ``text`` toward MAX_SPEC_EXPRESSION_CHARS; False (reported once) past it."""
        before = self.expression_chars
        self.expression_chars += max(len(text), EXPRESSION_MIN_COST)
        if self.expression_chars <= MAX_SPEC_EXPRESSION_CHARS:
            return True
        if before <= MAX_SPEC_EXPRESSION_CHARS:
            self.diags.append(self.spec.diag(
                "expressions_too_large", path, f"the spec's expressions and templates add up to more than "
                f"{MAX_SPEC_EXPRESSION_CHARS} characters (each counts at least {EXPRESSION_MIN_COST}); "
                "the rest are not checked", mark=self.spec.mark(where or path),
                hint="a spec needs a few hundred short expressions at most; keep data in tables or tasks"))
        return False

    def value(self, data: Any, path: tuple, variables) -> ir.Value | None:
        if isinstance(data, str):
            return self.expr(data, path, variables)
        if isinstance(data, dict):
            items, keep = [], []
            keep_all = self._tag(path, "!keep_nulls")
            for k, v in data.items():
                val = self.value(v, path + (k,), variables)
                if val is not None:
                    items.append((k, val))
                    if keep_all or not isinstance(v, dict) and self._tag(path + (k,), "!keep_nulls"):
                        keep.append(k)
            return ir.ObjectTemplate(tuple(items), path, tuple(keep))
        if isinstance(data, list):
            vals = [self.value(v, path + (i,), variables) for i, v in enumerate(data)]
            return ir.ArrayTemplate(tuple(v for v in vals if v is not None), path)
        if isinstance(data, float) and not math.isfinite(data):
            self.error("invalid_value", path, "non-finite numbers cannot appear in JSON output", hint=_FINITE_HINT)
            return None
        return ir.Literal(data, path)

    def _tag(self, path: tuple, tag: str) -> bool:
        """Whether the node at ``path`` carries ``tag``; a tag read here counts as used."""
        if self.spec.tags.get(path) != tag:
            return False
        self.used_tags.add(path)
        return True

    def unused_tags(self) -> None:
        """`!keep_nulls` where no object is built: it would do nothing, so say so."""
        for path, tag in self.spec.tags.items():
            if tag == "!keep_nulls" and path not in self.used_tags:
                self.error("misplaced_tag", path, "`!keep_nulls` keeps the null members of an object built "
                           "from a mapping; here it has no effect",
                           hint="tag a mapping (`output: !keep_nulls {result: result}`) or one member of it "
                           "(`{result: !keep_nulls result}`)")

    def finite(self, data: Any, path: tuple) -> None:
        """Every number of the spec is finite: NaN and infinity have no JSON or Python literal."""
        if isinstance(data, float) and not math.isfinite(data):
            if not (len(path) == 4 and path[0] == "evaluators" and path[2] == "range"):  # invalid_range says it
                self.error("invalid_value", path, "non-finite numbers cannot appear in JSON output", hint=_FINITE_HINT)
        elif isinstance(data, dict):
            for k, v in data.items():
                self.finite(v, path + (k,))
        elif isinstance(data, list):
            for i, v in enumerate(data):
                self.finite(v, path + (i,))

    def bind(self, name: str, path: tuple, variables: set) -> None:
        if name in RESERVED:
            self.error("reserved_name", path, f"${name} is a built-in variable and cannot be rebound",
                       hint=f"pick another name, e.g. {name}_item")
            return
        if name in self.bound:
            first = self.spec.mark(self.bound[name])
            self.error("duplicate_name", path, f"${name} is already bound (line {first.line})",
                       hint="give each `as`/`let` name its own identifier")
            return
        self.bound[name] = path
        variables.add(name)

    # -- records -----------------------------------------------------------
    def loops(self, data: Any, path: tuple, variables: set) -> tuple[ir.Loop, ...]:
        if data is None:
            return ()
        items = [{"each": data}] if isinstance(data, str) else data
        out = []
        for i, item in enumerate(items):
            lpath = path if isinstance(data, str) else path + (i,)
            epath = lpath if isinstance(data, str) else lpath + ("each",)
            e = self.expr(item["each"], epath, variables)
            merge = self.merge(item.get("merge"), lpath + ("merge",), variables, item.get("as"))
            name = item.get("as")
            if name:
                self.bind(name, lpath + ("as",), variables)
                variables.add(f"{name}_index")
            variables.add("index")
            carry = self.carry(item.get("carry"), lpath + ("carry",), variables)
            if e is not None:
                out.append(ir.Loop(e, name, lpath, merge, carry))
        return tuple(out)

    def scope(self, data: dict, path: tuple, variables: set) -> ir.Scope:
        loops = self.loops(data.get("each"), path + ("each",), variables)
        loops = self.level_stream(data, path, loops, variables, "merge")
        if data.get("as") and isinstance(data.get("each"), str):
            name = data["as"]
            self.bind(name, path + ("as",), variables)
            variables.add(f"{name}_index")
            loops = tuple(dataclasses.replace(lp, as_name=name) for lp in loops)
        elif data.get("as"):
            self.error("invalid_value", path + ("as",), "`as` needs a single `each` expression",
                       hint="with a list of loops, put `as` inside each loop")
        loops = self.level_stream(data, path, loops, variables, "carry")
        where = self.expr(data["where"], path + ("where",), variables) if "where" in data else None
        lets = []
        for name, val in (data.get("let") or {}).items():
            v = self.value(val, path + ("let", name), variables)
            self.bind(name, path + ("let", name), variables)
            if v is not None:
                lets.append((name, v))
        ordinal = None
        if "ordinal_by" in data:
            ordinal = self.expr(data["ordinal_by"], path + ("ordinal_by",), variables)
            variables.add("ordinal")
        return ir.Scope(loops, where, tuple(lets), ordinal)

    # -- event streams: merge, carry (issue 27) ----------------------------------------
    def level_stream(self, data: dict, path: tuple, loops: tuple, variables: set, key: str) -> tuple:
        """``loops`` with the level's `merge` (before `as` binds the element) or `carry` (after)
        on its loop: the one `each` beside them; with a list of loops, each item says its own."""
        if key not in data:
            return loops
        each = data.get("each")
        if not isinstance(each, str):
            where = "a list of loops: write it inside the loop item it belongs to" if each else "no loop"
            self.error("misplaced_key", path + (key,), f"`{key}` belongs to a loop, and this level has {where}",
                       key=True, hint=f"e.g. `each: [{{each: turns}}, {{each: \"@\", {key}: ...}}]`" if each
                       else f"give the level `each:` (a jsonl source: `each: \"@\"`), or move `{key}` to the "
                       "level that loops over the elements")
            return loops
        if not loops:  # the loop did not compile (reported)
            return loops
        if key == "merge":
            merge = self.merge(data["merge"], path + ("merge",), variables, data.get("as"))
            return (dataclasses.replace(loops[0], merge=merge),)
        carry = self.carry(data["carry"], path + ("carry",), variables)
        return (dataclasses.replace(loops[0], carry=carry),)

    def merge(self, data: dict | None, path: tuple, variables: set, as_name: str | None = None) -> ir.Merge | None:
        """`merge` of a loop. Its `by` and `when` read the element as it comes (`@`) and the
        variables of the levels above: not this loop's own (they name the merged element)."""
        if data is None:
            return None
        outer = set(variables) - {"index"}
        own = {f"${name}" for name in (as_name, f"{as_name}_index") if as_name} | {"$index"}
        for key in ("by", "when", "until"):
            used = sorted(own & set(re.findall(r"\$\w+", data.get(key) or "")))
            if used:
                self.error("unknown_variable", path + (key,), f"merge.{key} is read on each element as it comes, "
                           f"before the loop names it: {used[0]} is not set yet",
                           hint="read the element with `@`: e.g. `message.id`, not `$line.message.id`")
                variables.add("merged")
                return None
        if not self._merge_mode(data, path):
            variables.add("merged")
            return None
        by = self.expr(data["by"], path + ("by",), outer) if "by" in data else None
        when = self.expr(data["when"], path + ("when",), outer) if "when" in data else None
        until = self.expr(data["until"], path + ("until",), outer) if "until" in data else None
        fields, seen = [], {}
        for text, strategy in (data.get("fields") or {}).items():
            fpath = path + ("fields", text)
            keys = self._merge_field(text, fpath)
            if keys is None:
                continue
            clash = next((other for other, k in seen.items()
                          if k[:len(keys)] == keys or keys[:len(k)] == k), None)
            if clash is not None:
                self.error("conflicting_keys", fpath, f"`{text}` and `{clash}` overlap: one is inside the other, "
                           "so the merged element cannot take both", key=True,
                           hint="merge the outer field only, or name only fields that do not contain each other")
                continue
            seen[text] = keys
            fields.append((keys, strategy))
        variables.add("merged")
        if by is None if "by" in data else when is None:  # an expression that did not compile (reported)
            return None
        return ir.Merge(by, when, tuple(fields), int(data.get("open", 1)), path, until)

    def _merge_mode(self, data: dict, path: tuple) -> bool:
        """`merge` groups by a key (`by`) or runs of consecutive elements (`when`, `until`):
        false, with an error, when it says neither or mixes the two."""
        if "by" not in data and "when" not in data:
            self.error("missing_key", path, "merge needs `by` (the key lines share) or `when` (which "
                       "consecutive lines form one element)", key=bool(path),
                       hint="e.g. `by: message.id`, or `when: \"type == 'response_item'\"` for runs of lines "
                       "with no shared id")
            return False
        clash = "until" if "by" in data and "until" in data else "open" if "by" not in data and "open" in data else None
        if clash == "until":
            self.error("conflicting_keys", path + ("until",), "merge.until ends a run of consecutive elements "
                       "(a merge without `by`); with `by`, lines merge by their key wherever they are", key=True,
                       hint="remove `until`, or remove `by` to merge runs of consecutive elements")
        elif clash == "open":
            self.error("conflicting_keys", path + ("open",), "merge.open counts the keys open at once: a merge "
                       "without `by` has one run open at a time", key=True, hint="remove `open`, or give `by`")
        return clash is None
        return True

    def _merge_field(self, text: str, path: tuple) -> tuple[str, ...] | None:
        """The keys of a `merge.fields` key: a plain field path (`message.usage`,
        `attributes."gen_ai.usage"`), or None with an error at the key."""
        try:
            keys = compile_expression(text).path
        except ExpressionError as exc:
            keys, why = None, exc.message
        else:
            why = "it is not a plain field path"
        if keys is None or not all(isinstance(k, str) for k in keys):
            self.error("invalid_merge_field", path, f"`{text}` cannot be merged: {why}", key=True,
                       hint="name a field by its path, as expressions write it: `message.content`, "
                       "`attributes.\"gen_ai.usage\"` (no index, filter, function or variable)")
            return None
        return tuple(keys)

    def carry(self, data: dict | None, path: tuple, variables: set) -> tuple[ir.CarryValue, ...]:
        """`carry` of a loop: each name's value (and its `when`) read on the element, after
        `merge` and `as`; then $carry.<name> is in scope for the level and below."""
        if data is None:
            return ()
        out = []
        before = set(variables) - {"carry"}  # a carried value is read from the element, not $carry
        for name, spec in data.items():
            npath = path + (name,)
            if name in self.carry_names:
                first = self.spec.mark(self.carry_names[name])
                self.error("duplicate_name", npath, f"$carry.{name} is already carried (line {first.line})",
                           key=True, hint="give each carried value its own name")
                continue
            long = isinstance(spec, dict)
            texts = {"value": spec["value"] if long else spec, "when": spec.get("when") if long else None}
            reads = [k for k, text in texts.items() if text and re.search(r"\$carry\b", text)]
            if reads:
                at = npath + ((reads[0],) if long else ())
                self.error("unknown_variable", at, f"$carry.{name} is read from the element: $carry is not set "
                           "while `carry` is computed", hint="read the element's own field (e.g. `cwd`, "
                           "`payload.model`); its latest non-null value is kept for you")
                self.carry_names[name] = npath
                continue
            value = self.expr(texts["value"], npath + (("value",) if long else ()), before)
            when = self.expr(spec["when"], npath + ("when",), before) if long and "when" in spec else None
            self.carry_names[name] = npath
            if value is not None:
                out.append(ir.CarryValue(name, value, when, npath))
        variables.add("carry")
        return tuple(out)

    def signals(self, data: Any, path: tuple, variables: set) -> tuple[ir.SignalSpec, ...]:
        if data is None:
            return ()
        out = []
        if isinstance(data, dict):
            for name, spec in data.items():
                spath = path + (name,)
                if isinstance(spec, dict):
                    out.append(self._signal(dict(spec, name=None), spath, variables, literal_name=name))
                else:
                    out.append(self._signal({"value": spec}, spath, variables, literal_name=name,
                                            value_path=spath))
        else:
            for i, spec in enumerate(data):
                out.append(self._signal(spec, path + (i,), variables))
        return tuple(s for s in out if s is not None)

    def _signal(self, spec: dict, path: tuple, variables: set, literal_name: str | None = None,
                value_path: tuple | None = None):
        local = set(variables)
        loops = self.loops(spec.get("each"), path + ("each",), local)
        if spec.get("as"):
            name = spec["as"]
            self.bind(name, path + ("as",), local)
            loops = tuple(ir.Loop(lp.each, name, lp.path) for lp in loops)
        when = self.expr(spec["when"], path + ("when",), local) if "when" in spec else None
        if literal_name is not None:
            name_v: ir.Value | None = ir.Literal(literal_name, path)
        elif "name" in spec:
            name_v = self.value(spec["name"], path + ("name",), local)
        else:
            self.error("missing_key", path, "a signal in list form needs `name`",
                       hint="e.g. `name: \"'reward'\"` (a literal needs quotes) or a mapping `reward: expr`")
            return None
        # the shorthand `name: expr` has its value at the signal's own path
        value = self.value(spec["value"], value_path or path + ("value",), local)
        unit = self.value(spec["unit"], path + ("unit",), local) if "unit" in spec else None
        meta = self.value(spec["metadata"], path + ("metadata",), local) if "metadata" in spec else None
        event_id = self.owning_event(spec, path, local)
        counter, total = self.counter(spec, path, local, unit, meta)
        if name_v is None or value is None:
            return None
        return ir.SignalSpec(name_v, value, unit, meta, loops, when, path, event_id, counter, total)

    def counter(self, spec: dict, path: tuple, variables: set, unit, meta) -> tuple[str, bool]:
        """`counter` and `total` of a signal: an event rule's only (a trajectory's signal is one
        value already); a total's unit is one text and it has no metadata (one record per
        trajectory sums the events')."""
        counter, total = spec.get("counter", "per_step"), bool(spec.get("total", False))
        if "counter" not in spec and "total" not in spec:
            return counter, total
        if "event" not in variables:
            key = "counter" if "counter" in spec else "total"
            self.error("invalid_key", path + (key,), f"`{key}` belongs to an event rule's signal: a trajectory's "
                       "signal is one value per trajectory already", key=True,
                       hint="declare the signal on the event rule whose elements carry the value "
                       "(`signals:` of a rule with `when:`); `total: true` there gives one signal on the trajectory")
            return "per_step", False
        if total and unit is not None and not (isinstance(unit, ir.Literal) or
                                               isinstance(unit, ir.Expr) and unit.compiled.constant[0]):
            self.error("invalid_value", path + ("unit",), "a total is one signal: its unit must be a literal",
                       hint="write the unit as text, e.g. `unit: \"'tokens'\"`")
        if total and meta is not None:
            self.error("invalid_key", path + ("metadata",), "a total is one signal summing the events': it "
                       "has no metadata of its own", key=True, hint="remove `metadata`, or drop `total: true`")
        return counter, total

    def check_totals(self, levels, events) -> None:
        """Totals of one name are one signal on the trajectory: every rule's must count the same
        way, and no trajectory signal may have that name (their ids would be the same)."""
        totals: dict[str, ir.SignalSpec] = {}
        for rule in events.rules if events is not None else ():
            for t in rule.emits:
                for sig in t.signals:
                    name = sig.name.value if isinstance(sig.name, ir.Literal) else None
                    if not sig.total or not isinstance(name, str):
                        continue
                    first = totals.setdefault(name, sig)
                    if first.counter != sig.counter:
                        self.error("conflicting_keys", sig.path, f"the total `{name}` is counted `{first.counter}` "
                                   f"at {format_path(first.path)} and `{sig.counter}` here; a total is one sum",
                                   hint="give both the same `counter`, or give the totals different names")
        for lv in levels:
            for sig in lv.signals if lv is not None and lv.name == "trajectory" else ():
                if isinstance(sig.name, ir.Literal) and sig.name.value in totals:
                    self.error("duplicate_id", sig.path, f"the trajectory already gets a signal `{sig.name.value}`: "
                               f"the total of {format_path(totals[sig.name.value].path)}",
                               hint="rename one of them")

    def owning_event(self, spec: dict, path: tuple, variables: set):
        """`event_id` of a trajectory's signal or artifact: `last`, or a value giving an event id."""
        if "event_id" not in spec:
            return None
        if "event" in variables:  # declared on an event rule
            self.error("invalid_key", path + ("event_id",), "a signal or artifact declared on an event rule "
                       "belongs to that event already", key=True,
                       hint="remove `event_id`; it names an event from the trajectory's signals and artifacts")
            return None
        if spec["event_id"] == "last":
            return "last"
        return self.value(spec["event_id"], path + ("event_id",), variables)

    def artifacts(self, data: Any, path: tuple, variables: set) -> tuple[ir.ArtifactSpec, ...]:
        out = []
        for i, spec in enumerate(data or []):
            apath = path + (i,)
            local = set(variables)
            loops = self.loops(spec.get("each"), apath + ("each",), local)
            if spec.get("as"):
                self.bind(spec["as"], apath + ("as",), local)
                loops = tuple(ir.Loop(lp.each, spec["as"], lp.path) for lp in loops)
            when = self.expr(spec["when"], apath + ("when",), local) if "when" in spec else None
            contents = [k for k in ("text", "json", "path") if k in spec]
            if len(contents) != 1:
                self.error("artifact_content", apath,
                           "an artifact needs exactly one of `text`, `json` or `path`"
                           + (f" (found {', '.join(contents)})" if contents else ""))
                continue
            fields = []
            for k in ("name", "media_type", "text", "json", "path", "sha256", "metadata"):
                if k in spec:
                    v = self.value(spec[k], apath + (k,), local)
                    if v is not None:
                        fields.append((k, v))
            out.append(ir.ArtifactSpec(tuple(fields), loops, when, apath, self.owning_event(spec, apath, local)))
        return tuple(out)

    def level(self, name: str, records: dict, variables: set) -> ir.Level:
        path = ("records", name)
        data = records.get(name) or {}
        scope = self.scope(data, path, variables)
        id_v = self.value(data["id"], path + ("id",), variables) if "id" in data else None
        own = set(variables) | {name}
        fields = []
        allowed = {
            "run": ("name", "started_at", "metadata"),
            "case": ("name", "input", "metadata"),
            "group": ("name", "metadata"),
            "trajectory": ("status", "termination", "parent", "branch_id", "metadata"),
        }[name]
        if name == "trajectory" and "name" in data:
            self.error("invalid_key", path + ("name",), "trajectory records have no `name` in the canonical schema",
                       hint="put it in metadata, e.g. `metadata: {name: ...}`", key=True)
        for key in allowed:
            if key in data:
                v = self.value(data[key], path + (key,), own)
                if v is not None:
                    fields.append((key, v))
        if isinstance(data.get("status"), str) and name == "trajectory":
            self._check_status_literal(data["status"], path + ("status",))
        sigs = self.signals(data.get("signals"), path + ("signals",), own)
        arts = self.artifacts(data.get("artifacts"), path + ("artifacts",), own)
        final = self.value(data["final_output"], path + ("final_output",), own) if "final_output" in data else None
        variables.add(name)
        return ir.Level(name, scope, id_v, tuple(fields), sigs, arts, final, name in records, path)

    def _check_status_literal(self, text: str, path: tuple) -> None:
        m = re.fullmatch(r"'([^']*)'", text.strip())
        if m and m.group(1) not in ("running", "completed", "failed", "cancelled"):
            self.error("invalid_value", path, f"status {m.group(1)!r} is not one of running, completed, failed, cancelled",
                       hint=suggest(m.group(1), ["running", "completed", "failed", "cancelled"]))

    def event_template(self, data: dict, path: tuple, variables: set, *, kind: str, when_key: bool) -> ir.EventTemplate:
        when = self.expr(data["when"], path + ("when",), variables) if (when_key and "when" in data) else None
        sem = []
        for key in ir.SEMANTIC_FIELDS:
            if key in data:
                v = self.value(data[key], path + (key,), variables)
                if v is not None:
                    sem.append((key, v))
        can = []
        for key in ir.CANONICAL_EVENT_FIELDS:
            if key in data:
                v = self.value(data[key], path + (key,), variables)
                if v is not None:
                    can.append((key, v))
        id_v = self.value(data["id"], path + ("id",), variables) if "id" in data else None
        ts = self.value(data["timestamp"], path + ("timestamp",), variables) if "timestamp" in data else None
        parent = self.parent(data, path, variables)
        with_event = set(variables) | {"event"}
        sigs = self.signals(data.get("signals"), path + ("signals",), with_event)
        arts = self.artifacts(data.get("artifacts"), path + ("artifacts",), with_event)
        sub = self.subtrajectory(data["subtrajectory"], path + ("subtrajectory",), variables) \
            if "subtrajectory" in data else None
        return ir.EventTemplate(kind, when, id_v, ts, parent, data.get("raw"), tuple(sem), tuple(can), sigs, arts, path,
                                sub)

    def subtrajectory(self, data: dict, path: tuple, variables: set) -> ir.Subtrajectory | None:
        """`subtrajectory: {path: ...}` of an event rule (D109)."""
        e = self.expr(data["path"], path + ("path",), variables)
        return ir.Subtrajectory(e, path) if e is not None else None

    def _check_subtrajectories(self, levels, events: ir.Events) -> None:
        """A subtrajectory's file is mapped as one trajectory with the spec's trajectory level:
        no level down to the trajectory may loop (one trajectory per source)."""
        subs = [t.subtrajectory for r in events.rules for t in r.emits if t.subtrajectory is not None]
        for lv in levels if subs else ():
            if lv is not None and lv.scope.loops:
                each = lv.scope.loops[0].each
                self.error("subtrajectory_loop", each.path,
                           f"records.{lv.name} loops (`each: {each.text}`), but `subtrajectory` at "
                           f"{format_path(subs[0].at)} maps a file as one trajectory: a spec with "
                           "`subtrajectory` needs one trajectory per source",
                           hint=f"remove `each` from records.{lv.name} (a trajectory then covers the whole "
                           "source, as a session log's does), or drop `subtrajectory`")

    def parent(self, data: dict, path: tuple, variables: set):
        if "parent" not in data:
            return None
        if data["parent"] == "previous":
            return "previous"
        return self.value(data["parent"], path + ("parent",), variables) or None

    def _event_defaults(self, rule: ir.Rule, default_id: ir.Value | None, timestamp: ir.Value | None) -> ir.Rule:
        """``rule`` with ``events.id`` and ``events.timestamp`` for the events that give none.
        The id goes only to a rule's one event: a rule that emits several from one element
        keeps derived ids for those without their own (one id for two events would rename the
        second ``id~2``), with a warning that says so."""
        emits = list(rule.emits)
        if timestamp is not None:
            emits = [t if t.timestamp is not None else dataclasses.replace(t, timestamp=timestamp) for t in emits]
        lacking = [t for t in emits if t.id is None]
        if default_id is not None and lacking and len(emits) == 1:
            emits = [dataclasses.replace(emits[0], id=default_id)]
        elif default_id is not None and lacking:
            self.error("event_id_not_applied", rule.path + ("emit",),
                       f"records.events.id is not used here: this rule emits {len(emits)} events from one element "
                       f"and one id for all would rename the others `id~2`; {len(lacking)} of them without `id` "
                       "get derived ids", severity="warning", key=True,
                       hint="give each emitted event its own `id` (e.g. `id: \"join('-', [span_id, 'tool'])\"`)")
        return dataclasses.replace(rule, emits=tuple(emits))

    def rule(self, data: dict, path: tuple, variables: set) -> ir.Rule | None:
        when = self.expr(data["when"], path + ("when",), variables) if "when" in data else None
        for key in ("before", "after", "remove"):
            if key in data:
                self.error("invalid_key", path + (key,), f"`{key}` places a rule among the rules of the spec "
                           "this one extends, and this spec extends none", key=True,
                           hint="add `extends:`, or remove the key and write the rules in the order they apply")
        extra = [k for k in data if k not in ("when", "skip", "emit", "name", "before", "after", "remove")]
        if data.get("skip"):
            if extra or "emit" in data:
                self.error("conflicting_keys", path, "a `skip: true` rule takes only `when`",
                           hint="remove " + ", ".join(f"`{k}`" for k in (extra + (["emit"] if "emit" in data else []))))
            return ir.Rule(when, True, (), path)
        if "emit" in data:
            if extra:
                self.error("conflicting_keys", path + (extra[0],),
                           "with `emit`, put the event fields inside each emitted event", key=True)
            emits = tuple(
                self.event_template(e, path + ("emit", i), variables, kind=e["kind"], when_key=True)
                for i, e in enumerate(data["emit"])
            )
            return ir.Rule(when, False, emits, path)
        if "kind" not in data:
            self.error("missing_key", path, "a rule needs `kind` (or `skip: true`, or `emit: [...]`)",
                       hint="kinds: message, generation, tool, observation, environment_action, state, "
                       "reward, grader, artifact, error, log", key=bool(path))
            return None
        tmpl = self.event_template(data, path, variables, kind=data["kind"], when_key=False)
        return ir.Rule(when, False, (tmpl,), path)

    def events(self, records: dict, variables: set) -> ir.Events:
        path = ("records", "events")
        data = records.get("events")
        if data is None:
            self.error("missing_key", ("records",), "records need `events` (how source elements become events)",
                       hint='e.g. events: {each: messages, kind: message, role: role, content: content}')
            return ir.Events(ir.Scope((), None, (), None), None, False, (), path)
        scope = self.scope(data, path, variables)
        parent = self.parent(data, path, variables)
        level_keys = ("each", "as", "where", "let", "ordinal_by", "parent", "raw", "rules", "merge", "carry")
        if "rules" in data:  # `id`, `timestamp` beside `rules`: for every event without its own
            level_keys += ("id", "timestamp")
        rule_keys = [k for k in data if k not in level_keys]
        rules = []
        events_id = events_ts = None
        if "rules" in data and "id" in data:
            events_id = self.value(data["id"], path + ("id",), variables)
        if "rules" in data and "timestamp" in data:
            events_ts = self.value(data["timestamp"], path + ("timestamp",), variables)
        if "rules" in data:
            if rule_keys:
                self.error("conflicting_keys", path + (rule_keys[0],),
                           f"`{rule_keys[0]}` belongs inside a rule when `rules` is given", key=True,
                           hint="move it into the rule(s), or drop `rules` for the single-rule shorthand")
            unconditional_at = None
            names: dict[str, int] = {}
            for i, rd in enumerate(data["rules"]):
                rpath = path + ("rules", i)
                if isinstance(rd.get("name"), str):
                    if rd["name"] in names:
                        self.error("duplicate_id", rpath + ("name",), f"rule name {rd['name']!r} is already "
                                   f"used by rules[{names[rd['name']]}]", hint="give each rule its own name")
                    names.setdefault(rd["name"], i)
                if unconditional_at is not None:
                    self.error("unreachable_rule", rpath,
                               f"this rule can never match: rules[{unconditional_at}] has no `when` and matches everything",
                               hint=self._unreachable_hint(data["rules"][unconditional_at], rpath,
                                                           path + ("rules", unconditional_at)),
                               severity="warning")
                r = self.rule(rd, rpath, variables)
                if r is not None:
                    rules.append(self._event_defaults(r, events_id, events_ts))
                if "when" not in rd and unconditional_at is None:
                    unconditional_at = i
        else:
            r = self.rule({k: data[k] for k in rule_keys}, path, variables)
            if r is not None:
                rules.append(r)
        return ir.Events(scope, parent, bool(data.get("raw", False)), tuple(rules), path)

    def _unreachable_hint(self, catch_all: dict, rpath: tuple, cpath: tuple) -> str:
        hint = "move the catch-all rule last, or give it a `when`"
        if self.spec.mark(rpath).file != self.spec.mark(cpath).file and isinstance(catch_all.get("name"), str):
            hint += f"; to add a rule to inherited ones, write `before: {catch_all['name']}` in it"
        return hint

    # -- source ------------------------------------------------------------
    def source(self, data: dict) -> ir.Source:
        path = ("source",)
        probe = data.get("probe") or {}
        require, require_text = [], []
        for i, text in enumerate(probe.get("require") or []):
            e = self.expr(text, path + ("probe", "require", i), frozenset())
            if e is None:
                continue
            if e.compiled.path is None:
                self.error("invalid_value", path + ("probe", "require", i),
                           f"{text!r} is not a field path", hint="use dotted field names such as `eval.task`")
                continue
            require.append(tuple(e.compiled.path))
            require_text.append(text)
        when = self.expr(probe["when"], path + ("probe", "when"), {"tables"}) if "when" in probe else None
        if not require and when is None:
            self.error("weak_probe", path + ("probe",),
                       "the probe has no `require` or `when`, so it accepts any JSON",
                       hint="add `require:` with keys specific to this format", severity="warning")
        if data.get("container") != "csv":
            for key in ("columns", "delimiter"):
                if key in data:
                    self.error("invalid_value", path + (key,),
                               f"`{key}` applies to `container: csv` only (this source is {data.get('container')})",
                               hint=f"remove `{key}`, or write `container: csv`")
        siblings = []
        for name, cands in (data.get("siblings") or {}).items():
            cands = [cands] if isinstance(cands, str) else cands
            for i, c in enumerate(cands):
                sp = path + ("siblings", name) + ((i,) if isinstance(data["siblings"][name], list) else ())
                bad = self._template_problem(c, ("stem", "prefix", "name"))
                if bad:
                    self.error("invalid_placeholder", sp, bad)
                if "/" in c or "\\" in c or c in (".", ".."):
                    self.error("invalid_sibling", sp, f"{c!r} must be a file name next to the source, not a path",
                               hint="siblings are looked up in the source's own folder only")
                elif path_problem(c):
                    self.error("invalid_sibling", sp, f"the sibling file name {path_problem(c)}")
            siblings.append((name, tuple(cands)))
        return ir.Source(
            format=data["format"],
            container=data["container"],
            probe=ir.Probe(
                bytes=int(probe.get("bytes", 65536)),
                lines=int(probe.get("lines", 8)),
                require=tuple(require),
                require_text=tuple(require_text),
                when=when,
                confidence=float(probe.get("confidence", 0.9)),
            ),
            max_bytes=int(data.get("max_bytes", 1 << 30)),
            max_line_bytes=int(data.get("max_line_bytes", 64 << 20)),
            invalid_lines=data.get("invalid_lines", "error"),
            siblings=tuple(siblings),
            columns=tuple((str(k), v) for k, v in (data.get("columns") or {}).items()),
            delimiter=data.get("delimiter", ","),
        )

    def _check_no_line_fields(self, levels, name: str, container: str = "jsonl") -> None:
        for lv in levels:
            if lv.name != name:
                continue
            values = [lv.id] + [v for _, v in lv.fields] + [v for _, v in lv.scope.lets] + [lv.final_output]
            attached = []  # a trajectory's signal or artifact read from a line would be dropped silently
            for sig in lv.signals:
                attached += [sig.name, sig.value, sig.unit, sig.metadata, sig.when, sig.event_id]
                attached += [loop.each for loop in sig.loops]
            for art in lv.artifacts:
                attached += [v for _, v in art.fields] + [art.when, art.event_id] + [lp.each for lp in art.loops]
            for value, on_line in [(v, False) for v in values] + [(v, True) for v in attached]:
                for e in iter_exprs(value) if value is not None else []:
                    self._no_line_field(e, name, container, on_line)

    def _no_line_field(self, e: ir.Expr, name: str, container: str, attached: bool) -> None:
        relative = [p for p in e.compiled.field_paths if not p.startswith("$")]
        if not relative:
            return
        word = relative[0]
        bare = e.text.strip() == word and word.isidentifier()  # `status: completed`
        if attached:
            hint = ("declare it on the event rule for the lines that carry it (`signals:` or "
                    "`artifacts:` of a rule with `when:`), or use $source (e.g. $source.name)")
        elif bare:
            hint = (f"did you mean the text '{word}'? write \"'{word}'\"; to read a field of each "
                    "line, move this key to the level with `each: \"@\"`")
        else:
            hint = "use $source (e.g. $source.name) or move this field to the level with `each: \"@\"`"
        self.error("jsonl_above_lines", e.path,
                   f"reads `{word}`, but on a {container} source records.{name} is above the "
                   "lines, so there is no current line here", hint=hint)

    @staticmethod
    def _template_problem(text: str, allowed) -> str | None:
        try:
            parsed = list(string.Formatter().parse(text))
        except ValueError as exc:
            return f"invalid placeholder syntax: {exc} (write {{{{ and }}}} for literal braces)"
        for _, field, spec, conv in parsed:
            if field is None:
                continue
            if field not in allowed:
                hint = suggest(field, allowed)
                return f"unknown placeholder {{{field}}}; known: " + ", ".join(f"{{{a}}}" for a in allowed) + (
                    f" ({hint})" if hint else "")
            if spec or conv:
                return f"placeholder {{{field}}} takes no format spec or conversion"
        return None

    # -- evaluation ----------------------------------------------------------
    def feedback(self, data: Any, path: tuple, variables) -> tuple[ir.FeedbackRule, ...]:
        if data is None:
            return ()
        rules = [(None, data, path)] if isinstance(data, str) else [
            (r.get("when"), r["text"], path + (i,)) for i, r in enumerate(data)
        ]
        out = []
        for when_text, text, rpath in rules:
            tpath = rpath if isinstance(data, str) else rpath + ("text",)
            when = self.expr(when_text, rpath + ("when",), variables) if when_text else None
            parts = self.template(text, tpath, variables)
            if parts is not None:
                out.append(ir.FeedbackRule(when, parts, rpath))
        return tuple(out)

    def template(self, text: str, path: tuple, variables) -> tuple | None:
        """Split ``"text {expr} text"`` into parts; ``{{`` and ``}}`` are literal braces."""
        if not self.spend(text, path):  # templates count like expressions: they are scanned and compiled
            return None
        parts: list = []
        buf = ""
        i = 0
        ok = True
        while i < len(text):
            brace = _BRACE.search(text, i)  # jump over plain text
            if brace is None:
                buf += text[i:]
                break
            buf += text[i : brace.start()]
            i = brace.start()
            ch = text[i]
            if text.startswith("{{", i) or text.startswith("}}", i):
                buf += ch
                i += 2
                continue
            if ch == "}":
                self.diags.append(self.spec.diag("template_syntax", path, "unmatched `}` in template",
                                                 hint="write `}}` for a literal brace",
                                                 mark=self.spec.expression_mark(path, i)))
                return None
            if ch == "{":
                end = _find_close(text, i + 1)
                if end < 0:
                    self.diags.append(self.spec.diag("template_syntax", path, "unclosed `{` in template",
                                                     hint="close it with `}`, or write `{{` for a literal brace",
                                                     mark=self.spec.expression_mark(path, i)))
                    return None
                if buf:
                    parts.append(buf)
                    buf = ""
                inner = text[i + 1 : end]
                lead = len(inner) - len(inner.lstrip())
                e = self.expr(inner.strip(), path, variables, offset=i + 1 + lead, template=True)
                if e is None:
                    ok = False
                else:
                    parts.append(e)
                i = end + 1
                continue
        if buf:
            parts.append(buf)
        return tuple(parts) if ok else None

    def evaluators(self, data: list) -> tuple[ir.Evaluator, ...]:
        out = []
        seen: dict[str, int] = {}
        variables = {"task", "tables"}
        primaries = []
        for i, ev in enumerate(data or []):
            path = ("evaluators", i)
            if ev["id"] in seen:
                self.error("duplicate_id", path + ("id",),
                           f"evaluator id {ev['id']!r} is already used by evaluators[{seen[ev['id']]}]")
            seen.setdefault(ev["id"], i)
            if _CONTROL_RE.search(ev["id"]) or ev["id"] != ev["id"].strip():
                self.error("invalid_name", path + ("id",), "evaluator ids must not contain control characters or surrounding spaces")
            lo, hi = ev.get("range", [0, 1])
            if not (math.isfinite(lo) and math.isfinite(hi)) or lo >= hi:
                self.error("invalid_range", path + ("range",), f"range [{lo}, {hi}] must be finite with min < max",
                           hint="e.g. range: [0, 5]")
            if ev.get("primary"):
                primaries.append(i)
            score = self.expr(ev["score"], path + ("score",), variables)
            fb = self.feedback(ev.get("feedback"), path + ("feedback",), variables)
            if score is None:
                continue
            out.append(ir.Evaluator(
                id=ev["id"], description=ev["description"], low=float(lo), high=float(hi), score=score,
                feedback=fb, primary=bool(ev.get("primary")), direction=ev.get("direction", "higher"),
                weight=float(ev.get("weight", 1.0)), path=path,
            ))
        if len(primaries) > 1:
            self.error("multiple_primary", ("evaluators", primaries[1], "primary"),
                       f"evaluators[{primaries[0]}] is already primary", hint="mark exactly one evaluator primary")
        if out and not any(e.primary for e in out):
            first = out[0]
            out[0] = ir.Evaluator(**{**first.__dict__, "primary": True})
        return tuple(out)

    # -- tasks / agent ---------------------------------------------------------
    def tasks(self, data: Any) -> ir.Tasks | None:
        if data is None:
            return None
        path = ("tasks",)
        items_path = path if isinstance(data, list) else path + ("items",)
        if isinstance(data, list):
            data = {"items": data}
        suite = tuple(data.get("suite_tags") or [])
        for i, tag in enumerate(suite):
            p = tag_problem(tag)
            if p:
                self.error("invalid_tag", path + ("suite_tags", i), f"tag {tag!r}: {p}")
        if "items" in data and "from" in data:
            self.error("conflicting_keys", path + ("from",), "give tasks inline (`items`) or from a file (`from`), not both", key=True)
            return None
        items: list[ir.Task] = []
        if "items" in data:
            for i, t in enumerate(data["items"]):
                items.append(self._task(t, items_path + (i,), literal=True))
        elif "from" in data:
            items = self._tasks_from_file(data, path)
        else:
            self.error("missing_key", path, "tasks need `items` (inline) or `from` (a tasks file)",
                       hint='e.g. `items: [{id: t1, input: "..."}]` or `from: tasks.jsonl` (one task per line)')
            return None
        seen: dict[str, int] = {}
        for i, t in enumerate(items):
            if t is None:
                continue
            if t.id in seen:
                self.error("duplicate_id", path, f"task id {t.id!r} appears twice (tasks {seen[t.id]} and {i})")
            seen.setdefault(t.id, i)
        if not items:
            self.error("empty_value", path, "no tasks")
        return ir.Tasks(tuple(t for t in items if t is not None), suite, path)

    def _task(self, t: dict, path: tuple, literal: bool, file_mark=None) -> ir.Task | None:
        tid = t.get("id")
        if isinstance(tid, int) and not isinstance(tid, bool):
            tid = str(tid)

        def err(code, sub, msg, hint=None):
            if file_mark:
                self.diags.append(Diagnostic(code=code, message=msg, hint=hint, **file_mark))
            else:
                self.error(code, path + (sub if isinstance(sub, tuple) else (sub,)), msg, hint=hint)

        if not isinstance(tid, str):
            err("invalid_task_id", "id", f"task id must be a string, got {type(tid).__name__}")
            return None
        problem = task_id_problem(tid)
        if problem:
            err("invalid_task_id", "id", f"task id {tid!r} {problem}",
                hint="RELAI selects tasks as ADAPTER::ID, so ids must stay selector-safe")
            return None
        tags = t.get("tags") or []
        if not isinstance(tags, list) or not all(isinstance(x, str) for x in tags):
            err("invalid_tag", "tags", "tags must be a list of strings")
            tags = []
        for j, tag in enumerate(tags):
            p = tag_problem(tag)
            if p:
                err("invalid_tag", ("tags", j), f"tag {tag!r}: {p}")
        split = t.get("split")
        if split is not None and split not in ("train", "val", "test"):
            err("invalid_value", "split", f"split {split!r} is not one of train, val, test")
            split = None
        desc = t.get("description")
        if desc is not None and not isinstance(desc, str):
            desc = json.dumps(desc, ensure_ascii=False)
        meta = t.get("metadata")
        if meta is not None and not isinstance(meta, dict):
            err("wrong_type", "metadata", "task metadata must be an object")
            meta = None
        return ir.Task(tid, desc, t.get("input"), t.get("target"), tuple(tags), split, meta)

    def input_file(self, rel: str, path: tuple, what: str) -> Path | None:
        """A file the spec reads (fixture, tasks file), resolved: a regular file inside the
        folder of the spec file that names it (or an allowed root); else a diagnostic."""
        from mapc.core import safeio

        if path_problem(rel):
            self.error("invalid_value", path, f"the {what} path {path_problem(rel)}")
            return None
        folder = self.dir_of(path)
        try:
            found = safeio.contained_file(folder / rel, safeio.input_roots(folder))
        except FileNotFoundError:
            self.error("missing_file", path, f"{what} not found: {rel}",
                       hint=f"paths are relative to the spec's folder ({folder})")
            return None
        except safeio.UnsafePath as exc:
            outside = "spec's folder" in str(exc)
            self.error("file_outside_spec" if outside else "not_a_file", path,
                       f"the {what} {rel} {exc}; mapc reads only regular files inside the spec's folder",
                       hint=safeio.outside_hint(folder) if outside else
                       f"name a regular file (a named pipe, device or folder cannot be a {what}); "
                       "copy the data into a file")
            return None
        except OSError as exc:
            self.error("unreadable", path, f"cannot read {rel}: {exc.strerror or exc}")
            return None
        self.referenced_files.append(found)
        return found

    def _tasks_from_file(self, data: dict, path: tuple) -> list[ir.Task]:
        rel = data["from"]
        f = self.input_file(rel, path + ("from",), "tasks file")
        if f is None:
            return []
        exprs = {}
        for key, default in (("id", "id"), ("input", "input"), ("target", "target"), ("tags", "tags"),
                             ("description", "description"), ("split", "split"), ("metadata", "metadata")):
            e = self.expr(data.get(key, default), path + (key,), {"tables"})
            if e is None:
                return []
            exprs[key] = e
        from mapc.core import safeio

        try:
            if f.stat().st_size > MAX_TASKS_BYTES:
                self.error("file_too_large", path + ("from",), f"{rel} is larger than {MAX_TASKS_BYTES} bytes",
                           hint="a tasks file lists tasks; keep their data in files the tasks name")
                return []
            text = safeio.read_contained(f, [f.parent], MAX_TASKS_BYTES).decode("utf-8")
        except (OSError, UnicodeDecodeError, safeio.UnsafePath) as exc:
            self.error("unreadable", path + ("from",), f"cannot read {rel}: {exc}")
            return []
        rows: list[tuple[int | None, Any]] = []
        try:
            if f.suffix == ".jsonl":
                for n, line in enumerate(text.splitlines(), 1):
                    if line.strip():
                        rows.append((n, json.loads(line)))
            else:
                doc = json.loads(text)
                if not isinstance(doc, list):
                    self.error("wrong_type", path + ("from",), f"{rel} must hold a JSON array of tasks (or use .jsonl)")
                    return []
                rows = [(None, x) for x in doc]
        except json.JSONDecodeError as exc:
            self.diags.append(Diagnostic(code="invalid_json", message=f"{rel}: {exc.msg}", file=str(f),
                                         line=exc.lineno if f.suffix != ".jsonl" else n, column=exc.colno,
                                         path="tasks.from"))
            return []
        out = []
        scope = {"tables": dict(self._tables)}  # once: copying the tables per row was rows x tables
        escapes = _ESCAPED_SURROGATE.search(text) is not None
        for idx, (line, row) in enumerate(rows):
            if escapes and _SURROGATE.search(json.dumps(row, ensure_ascii=False)):
                # JSON can escape half a character (\ud800); no file, catalog or trace could hold it
                self.diags.append(Diagnostic(
                    code="invalid_character", message=f"{rel}: a lone surrogate (\\ud800-\\udfff) is not a "
                    "character", file=str(f), line=line or 1, column=1, path=f"tasks.from[{idx}]",
                    hint="write the character itself, or both halves of its surrogate pair"))
                continue
            t = {}
            for key, e in exprs.items():
                try:
                    t[key] = e.compiled(row, scope)
                except Exception as exc:  # a runtime type error in a task expression
                    self.diags.append(Diagnostic(code="task_expression", message=f"{key}: {exc}", file=str(f),
                                                 line=line, path=f"tasks.from[{idx}]"))
            fm = {"file": str(f), "line": line, "path": f"tasks.from[{idx}]"}
            out.append(self._task(t, path, literal=False, file_mark=fm))
        return out

    def agent(self, data: dict | None) -> ir.Agent | None:
        if data is None:
            return None
        path = ("agent",)
        has_cmd, has_replay = "command" in data, "replay" in data
        if has_cmd == has_replay:
            self.error("agent_mode", path, "an agent needs exactly one of `command` (run it) or `replay` (a recorded trace)",
                       key=bool(path))
        if has_cmd and "trace" not in data:
            self.error("missing_key", path, "`command` needs `trace`: where the run leaves its trace",
                       hint='e.g. trace: "runs/{task_id}.jsonl"')
        for i, arg in enumerate(data.get("command") or []):
            self._placeholders(arg, path + ("command", i), PLACEHOLDERS)
            self._process_text(arg, path + ("command", i), "an argument")
        for i, arg in enumerate(data.get("prepare") or []):
            self._placeholders(arg, path + ("prepare", i), ("project_root",))
            self._process_text(arg, path + ("prepare", i), "an argument")
        for k, v in (data.get("env") or {}).items():
            self._placeholders(v, path + ("env", k), PLACEHOLDERS)
            self._process_text(v, path + ("env", k), "an environment value")
            if not k or "=" in k or "\0" in k:
                self.error("invalid_name", path + ("env", k), f"{k!r} cannot be an environment variable name",
                           hint="a name is not empty and holds no `=` or NUL character", key=True)
        for key in ("trace", "replay"):
            if key in data:
                self._placeholders(data[key], path + (key,), tuple(p for p in PLACEHOLDERS if p != "trace"))
                self._process_text(data[key], path + (key,), "a file path")
        req = data.get("requires") or {}
        envs, names = [], set()
        for i, e in enumerate(req.get("env") or []):
            if e["name"] in names:
                self.error("duplicate_id", path + ("requires", "env", i, "name"), f"variable {e['name']} is declared twice")
            names.add(e["name"])
            envs.append(ir.EnvRequirement(e["name"], e.get("required", True), e.get("sensitive", False), e["reason"]))
        files = [ir.FileRequirement(f["path_env"], f.get("required", True), f["reason"]) for f in req.get("files") or []]
        return ir.Agent(
            command=tuple(data["command"]) if has_cmd else None,
            timeout=float(data.get("timeout", 600)),
            trace=data.get("trace"),
            replay=data.get("replay"),
            env=tuple(sorted((data.get("env") or {}).items())),
            seed_env=data.get("seed_env"),
            prepare=tuple(data["prepare"]) if "prepare" in data else None,
            requires_env=tuple(envs),
            requires_files=tuple(files),
            path=path,
        )

    def _process_text(self, text: str, path: tuple, what: str) -> None:
        """The operating system cannot pass a NUL character in argv or the environment."""
        if isinstance(text, str) and "\0" in text:
            self.error("invalid_value", path, f"{what} cannot contain a NUL character (the operating system refuses it)",
                       hint="remove the \\0 (NUL) from the string")

    def _placeholders(self, text: str, path: tuple, allowed) -> None:
        problem = self._template_problem(text, allowed)
        if problem:
            col = text.find("{")
            self.diags.append(self.spec.diag("unknown_placeholder", path, problem,
                                             mark=self.spec.expression_mark(path, max(col, 0))))

    def fixtures(self, data: list | None) -> tuple[ir.Fixture, ...]:
        out = []
        for i, f in enumerate((data or [])[:MAX_FIXTURES]):  # the schema reports any beyond
            spec = {"path": f} if isinstance(f, str) else f
            p = self.input_file(spec["path"], ("fixtures", i), "fixture")
            if p is not None:
                out.append(ir.Fixture(spec["path"], str(p), spec.get("min_records")))
        return tuple(out)

    def tests(self, data: list | None, tasks: ir.Tasks | None, agent: ir.Agent | None,
              evaluators) -> tuple[ir.SpecTest, ...]:
        """`tests:` entries written in the spec file itself: a base spec's tests map with the base's
        rules, so an extending spec does not inherit them. Paths stay inside the spec's folder."""
        if not data or self.spec.mark(("tests",)).file != self.spec.file:
            return ()
        task_ids = {t.id for t in tasks.items} if tasks else set()
        out = []
        for i, t in enumerate(data):
            path = ("tests", i)
            if ("source" in t) == ("task" in t):
                self.error("invalid_value", path, "a test gives `source` (a trace to map) or `task` (a task "
                           "whose recorded trace is scored), exactly one of them")
                continue
            if "expected" in t and "expect" in t:
                self.error("conflicting_keys", path + ("expect",), "give `expected` (a file of expected "
                           "output) or `expect` (a partial expectation), not both", key=True)
                continue
            for key in ("source", "trace", "expected"):
                if key in t and self._test_path(t[key], path + (key,), must_exist=key != "expected") is None:
                    break
            else:
                case = self._test_case(t, path, task_ids, agent, evaluators)
                if case is not None:
                    out.append(case)
        return tuple(out)

    def _test_case(self, t: dict, path: tuple, task_ids: set, agent: ir.Agent | None,
                   evaluators) -> ir.SpecTest | None:
        expect = t.get("expect")
        if "source" in t:
            if "trace" in t:
                self.error("invalid_value", path + ("trace",), "`trace` belongs to a task test; this test maps "
                           "`source`", key=True)
                return None
            resolved = self._test_path(t["source"], path + ("source",), must_exist=True)
            return ir.SpecTest(t.get("name") or t["source"], t["source"], str(resolved), None,
                               t.get("expected"), expect, path)
        task = str(t["task"])
        if task not in task_ids:
            known = ", ".join(sorted(task_ids)[:8]) or "none: the spec has no tasks"
            self.error("unknown_task", path + ("task",), f"no task {task!r} in `tasks` (known: {known})")
            return None
        if not evaluators:
            self.error("missing_key", path + ("task",), "a task test scores the trace, but the spec has no "
                       "`evaluators`", hint="add evaluators, or test the records with `source:`")
            return None
        trace = t.get("trace")
        if trace is None:
            if agent is None or not agent.replay:
                self.error("missing_key", path, "which recorded trace should be scored? give `trace:` (the spec's "
                           "agent replays none)", hint='e.g. `trace: traces/t1.jsonl` (relative to the spec), '
                           'or give the agent `replay: "traces/{task_id}.jsonl"`')
                return None
            from mapc.runtime.agent_rt import fill_placeholders

            try:
                trace = fill_placeholders(agent.replay, {"task_id": task, "seed": 0})
            except ValueError:
                trace = agent.replay
        resolved = self._test_path(trace, path + (("trace",) if "trace" in t else ("task",)), must_exist=True,
                                   what=None if "trace" in t else "agent.replay for this task")
        if resolved is None:
            return None
        return ir.SpecTest(t.get("name") or f"task {task}", None, str(resolved), task, t.get("expected"),
                           expect, path)

    def _test_path(self, rel: str, path: tuple, *, must_exist: bool, what: str | None = None) -> Path | None:
        """A test's file, resolved inside the spec's folder (None, with a diagnostic, when it is not)."""
        problem = path_problem(rel)
        if problem:
            self.error("invalid_value", path, f"the path {problem}")
            return None
        folder = self.base_dir.resolve()
        p = (folder / rel).resolve()
        label = f"{rel} ({what})" if what else rel
        if p != folder and folder not in p.parents:
            self.error("invalid_value", path, f"{label} is outside the spec's folder",
                       hint="test files live in the spec's folder or below it")
            return None
        if must_exist and not p.is_file():
            self.error("missing_file", path, f"test trace not found: {label}",
                       hint=f"paths are relative to the spec's folder ({self.base_dir})")
            return None
        return p

    # -- whole spec --------------------------------------------------------------
    def _section(self, fn, default=None):
        """Run one part of the build; in tolerant mode a shape error skips just that part."""
        if not self.tolerant:
            return fn()
        try:
            return fn()
        except TooManyErrors:
            raise
        except Exception:  # data the schema already rejected; its diagnostics are reported
            return default

    def build(self, tolerant: bool = False) -> ir.Spec | None:
        """Build the IR. ``tolerant`` (after schema errors) only collects what it can."""
        try:
            return self._build(tolerant)
        except TooManyErrors:  # enough to report; the rest would cost time, not help
            return None

    def _build(self, tolerant: bool) -> ir.Spec | None:
        self.tolerant = tolerant
        data = self.spec.data
        self.finite(data, ())
        self._tables = data.get("tables") if isinstance(data.get("tables"), dict) else {}
        source = self._section(lambda: self.source(data["source"]))
        records = data.get("records") if isinstance(data.get("records"), dict) else {}
        if "records" not in data:
            self.error("missing_key", (), "missing required key 'records'",
                       hint="records say how source values become run/case/group/trajectory/events")
        variables = set(BASE_VARIABLES)
        levels = [self._section(lambda n=name: self.level(n, records, variables)) for name in LEVELS]
        events = self._section(lambda: self.events(records, variables)) if "records" in data else None
        # without events (no `records`, or they did not compile) that is the error to report, not this one
        line_level = self._section(lambda: self._line_level(source, levels, events)) if events is not None else None
        self._section(lambda: self.check_totals(levels, events))
        if events is not None:
            self._section(lambda: self._check_subtrajectories(levels, events))
        evaluators = self._section(lambda: self.evaluators(data.get("evaluators")), ())
        usage = []
        usage_data = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        for key in ("cost_usd", "tokens"):
            if key in usage_data:
                e = self._section(lambda k=key: self.expr(data["usage"][k], ("usage", k), {"task", "tables"}))
                if e is not None:
                    usage.append((key, e))
        tasks = self._section(lambda: self.tasks(data.get("tasks")))
        agent = self._section(lambda: self.agent(data.get("agent")))
        fixtures = self._section(lambda: self.fixtures(data.get("fixtures")), ())
        tests = self._section(lambda: self.tests(data.get("tests"), tasks, agent, evaluators), ())
        self.unused_tags()
        if tolerant or any(d.is_error for d in self.diags) or events is None:
            return None
        return ir.Spec(
            name=data["name"],
            version=data.get("version", "0.1.0"),
            description=data.get("description", ""),
            source=source,
            tables=tuple(self._tables.items()),
            levels=tuple(levels),
            events=events,
            line_level=line_level,
            evaluators=evaluators,
            combine=(data.get("reward") or {}).get("combine", "mean"),
            usage=tuple(usage),
            tasks=tasks,
            agent=agent,
            fixtures=fixtures,
            targets=tuple(sorted((data.get("targets") or {}).items())),
            file=self.spec.file,
            files=tuple(sorted(self.spec.texts)),
            # tests check the output, they do not shape it: a build is current whatever they say
            digest=_digest(self._digested(data), self.referenced_files),
            inputs=tuple(str(f) for f in self.referenced_files),
            locate=self.spec.mark,
            locate_in=self.spec.expression_mark,
            tests=tests,
        )

    def _digested(self, data: dict) -> dict:
        """What the digest covers: the spec without its tests, plus the tags that shape the output."""
        out = {k: v for k, v in data.items() if k != "tests"}
        tags = sorted((list(p), t) for p, t in self.spec.tags.items() if t == "!keep_nulls")
        if tags:  # only then: the digests of specs without tags stay as they were
            out["\0tags"] = tags
        return out

    def _line_level(self, source: ir.Source, levels, events) -> str | None:
        """jsonl, csv: which level reads lines (`each: "@"` before any other loop)."""
        if not source.streams_lines:
            return None
        chain = [(lv.name, lv.scope, lv.path) for lv in levels]
        if events is not None:
            chain.append(("events", events.scope, events.path))
        for name, scope, path in chain:
            if scope.loops:
                first = scope.loops[0].each
                if first.text.strip() == "@":
                    return name
                self.error("jsonl_lines", first.path,
                           f"on a {source.container} source the first loop must read the lines: `each: \"@\"` "
                           f"(found {first.text!r})",
                           hint=f"set `each: \"@\"` on the level each line becomes (here: {name}), and iterate "
                           "nested arrays below it")
                return None
            # levels above the line level see no line: they cannot read fields of @
            self._check_no_line_fields(levels, name, source.container)
        self.error("jsonl_lines", ("records",),
                   f"a {source.container} source needs one level with `each: \"@\"` to read its lines",
                   hint="usually `events: {each: \"@\", ...}` (one event per line) or "
                   "`trajectory: {each: \"@\"}` (one rollout per line)")
        return None


_FINITE_HINT = "use a finite number or null (YAML reads .nan and .inf as NaN and infinity)"


def _stream_variable_hint(message: str) -> str | None:
    """The fix for ``$carry`` or ``$merged`` where no loop above declares them."""
    if re.search(r"\$carry\b", message):
        return ("$carry holds what `carry:` on a loop declares (e.g. `records.events.carry: {model: "
                "message.model}`), visible at that loop's level and below")
    if re.search(r"\$merged\b", message):
        return "$merged describes the element a loop's `merge:` made: it exists at that loop's level and below"
    return None


def iter_exprs(value) -> list[ir.Expr]:
    """Every expression inside a value template."""
    if isinstance(value, ir.Expr):
        return [value]
    if isinstance(value, ir.ObjectTemplate):
        return [e for _, v in value.items for e in iter_exprs(v)]
    if isinstance(value, ir.ArrayTemplate):
        return [e for v in value.items for e in iter_exprs(v)]
    return []


_BRACE = re.compile(r"[{}]")
_PLACEHOLDER_SPECIAL = re.compile(r"[\\'\"`{}]")


def _find_close(text: str, start: int) -> int:
    """Index of the `}` closing a template placeholder, skipping JMESPath quotes."""
    depth = 0
    i = start
    quote = None
    while i < len(text):
        special = _PLACEHOLDER_SPECIAL.search(text, i)  # only these characters matter
        if special is None:
            return -1
        i = special.start()
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if ch == quote:
                quote = None
        elif ch in "'\"`":
            quote = ch
        elif ch == "{":
            depth += 1
        elif ch == "}":
            if depth == 0:
                return i
            depth -= 1
        i += 1
    return -1

