"""Whether a JSON document can be read one element at a time, and which array.

An eval log or a results document is one JSON object whose size is almost all
one array (``samples``, ``outputs``). When the spec's first loop iterates that
array straight from the document (``each: samples``, ``samples[]`` or
``samples[*]``) and nothing else reads the array whole, the generated code
reads the other top-level members first and then the array element by element
(``JsonDocumentReader`` in the runtime): memory stays bounded however large
the document. Otherwise the document is parsed whole, and :func:`stream_plan`
says why (``mapc review``, the build output).
"""

from __future__ import annotations

from dataclasses import dataclass

from mapc.core import fieldpath
from mapc.analysis.reads import spec_reads
from mapc.spec import ir

#: How the loop's expression gives the array's elements (``streamed_elements`` mode).
PLAIN, FLATTEN, PROJECT = 0, 1, 2


@dataclass(frozen=True)
class StreamPlan:
    level: str  # the level whose first loop reads the array ("case", ...)
    key: str | None  # the document's top-level member holding the array; None: the document
    mode: int  # PLAIN, FLATTEN or PROJECT
    needed: tuple[str, ...]  # the other top-level members the mapping reads
    where: str  # spec path of the loop, e.g. records.case.each
    text: str  # the loop's expression


@dataclass(frozen=True)
class StreamVerdict:
    plan: StreamPlan | None
    #: why a JSON document is parsed whole (None when it streams, or for JSON Lines)
    reason: str | None

    def describe(self) -> str | None:
        """One line for reviews and build notes; None for JSON Lines."""
        if self.plan is not None:
            p = self.plan
            what = f"`{p.key}`" if p.key is not None else "the document's array"
            return (f"streams {what} one element at a time ({p.where}: each {p.text}); "
                    "memory stays bounded however large the document")
        if self.reason is not None:
            return f"parses the whole document at once (memory grows with it): {self.reason}"
        return None


def _loop_array(e: ir.Expr) -> tuple[str | None, int] | None:
    """``(member, mode)`` when the loop's expression is ``m``, ``m[]`` or ``m[*]``
    (member None: ``@``, the document itself)."""
    node = e.compiled._ast
    if node["type"] == "current":
        return None, PLAIN
    if node["type"] == "field":
        return node["value"], PLAIN
    if node["type"] == "projection" and node["children"][1]["type"] == "identity":
        inner = node["children"][0]
        if inner["type"] == "flatten" and inner["children"][0]["type"] == "field":
            return inner["children"][0]["value"], FLATTEN
        if inner["type"] == "field":
            return inner["value"], PROJECT
    return None


def _top(path: str) -> str:
    """The document member ``path`` starts with (its key as the source has it)."""
    first = fieldpath.segments(path)[0]
    return "" if first == fieldpath.ANY else first


def stream_plan(spec: ir.Spec) -> StreamVerdict:
    """Whether (and how) ``spec``'s generated code streams its source document."""
    if spec.source.container != "json":
        return StreamVerdict(None, None)
    names = [lv.name for lv in spec.levels] + ["events"]
    scopes = [lv.scope for lv in spec.levels] + [spec.events.scope]
    first = next((i for i, sc in enumerate(scopes) if sc.loops), None)
    if first is None:
        return StreamVerdict(None, "no level iterates an array of the document (`each`)")
    loop = scopes[first].loops[0]
    where = loop.each.where
    found = _loop_array(loop.each)
    if found is None:
        return StreamVerdict(None, f"{where} iterates `{loop.each.text}`, not an array member of the "
                                   "document as it is (`name`, `name[]` or `name[*]`): it needs the whole "
                                   "array at once")
    key, mode = found
    inside = tuple(f"records.{n}" for n in names[first:])
    needed = {keys[0] for keys in spec.source.probe.require if keys}
    for r in spec_reads(spec):
        if r.source != "trace" or r.where.startswith("source.probe.when") or r.where == where:
            continue
        if r.where.startswith("source.probe"):
            continue  # probe.require: in `needed` above
        if not r.path:
            return StreamVerdict(None, f"{r.where} reads the whole document")
        top = _top(r.path)
        if top != (key or ""):
            if key is not None:
                needed.add(top)
            continue
        is_inside = any(r.where == p or r.where.startswith(p + ".") for p in inside)
        through_root = any(f.startswith("$root") for f in r.fields)
        if not is_inside or through_root or not r.path.startswith(fieldpath.key(key or "") + "[]" if key else "[]"):
            return StreamVerdict(None, f"{r.where} reads `{r.path}`: the whole array "
                                       f"`{key or '@'}` at once")
    needed.discard(key)
    if key is None:
        needed.clear()
    return StreamVerdict(StreamPlan(names[first], key, mode, tuple(sorted(needed)), where, loop.each.text), None)
