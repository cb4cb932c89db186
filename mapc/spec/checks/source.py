"""`source`: the probe, csv options and sibling files; and which level reads the lines
of a jsonl or csv source (no level above it may read a line's fields)."""

from __future__ import annotations

from mapc.spec import ir
from mapc.spec.checks.context import Context
from mapc.spec.checks.exprs import compile_expr
from mapc.spec.checks.names import path_problem, template_problem
from mapc.spec.checks.values import iter_exprs


def build_source(ctx: Context, data: dict) -> ir.Source:
    """`source`: the probe (field paths and `when`), csv-only keys, sibling file names."""
    path = ("source",)
    probe = data.get("probe") or {}
    require, require_text = [], []
    for i, text in enumerate(probe.get("require") or []):
        e = compile_expr(ctx, text, path + ("probe", "require", i), frozenset())
        if e is None:
            continue
        if e.compiled.path is None:
            ctx.error("invalid_value", path + ("probe", "require", i),
                      f"{text!r} is not a field path", hint="use dotted field names such as `eval.task`")
            continue
        require.append(tuple(e.compiled.path))
        require_text.append(text)
    when = compile_expr(ctx, probe["when"], path + ("probe", "when"), {"tables"}) if "when" in probe else None
    if not require and when is None:
        ctx.error("weak_probe", path + ("probe",),
                  "the probe has no `require` or `when`, so it accepts any JSON",
                  hint="add `require:` with keys specific to this format", severity="warning")
    if data.get("container") != "csv":
        for key in ("columns", "delimiter"):
            if key in data:
                ctx.error("invalid_value", path + (key,),
                          f"`{key}` applies to `container: csv` only (this source is {data.get('container')})",
                          hint=f"remove `{key}`, or write `container: csv`")
    siblings = _siblings(ctx, data.get("siblings") or {}, path)
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


def _check_no_line_fields(ctx: Context, levels, name: str, container: str = "jsonl") -> None:
    """Level ``name`` is above the lines: none of its values may read a field of the line."""
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
                _no_line_field(ctx, e, name, container, on_line)


def _no_line_field(ctx: Context, e: ir.Expr, name: str, container: str, attached: bool) -> None:
    """A `jsonl_above_lines` error when ``e`` reads a field of the (absent) current line."""
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
    ctx.error("jsonl_above_lines", e.path,
              f"reads `{word}`, but on a {container} source records.{name} is above the "
              "lines, so there is no current line here", hint=hint)


def find_line_level(ctx: Context, source: ir.Source, levels, events) -> str | None:
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
            ctx.error("jsonl_lines", first.path,
                      f"on a {source.container} source the first loop must read the lines: `each: \"@\"` "
                      f"(found {first.text!r})",
                      hint=f"set `each: \"@\"` on the level each line becomes (here: {name}), and iterate "
                      "nested arrays below it")
            return None
        # levels above the line level see no line: they cannot read fields of @
        _check_no_line_fields(ctx, levels, name, source.container)
    ctx.error("jsonl_lines", ("records",),
              f"a {source.container} source needs one level with `each: \"@\"` to read its lines",
              hint="usually `events: {each: \"@\", ...}` (one event per line) or "
              "`trajectory: {each: \"@\"}` (one rollout per line)")
    return None


def _siblings(ctx: Context, data: dict, path: tuple) -> list[tuple[str, tuple]]:
    """`source.siblings`: name -> candidate file names next to the source, with `{stem}`-style
    placeholders; a path or a name the OS cannot look up is an error."""
    out = []
    for name, cands in data.items():
        cands = [cands] if isinstance(cands, str) else cands
        for i, c in enumerate(cands):
            sp = path + ("siblings", name) + ((i,) if isinstance(data[name], list) else ())
            bad = template_problem(c, ("stem", "prefix", "name"))
            if bad:
                ctx.error("invalid_placeholder", sp, bad)
            if "/" in c or "\\" in c or c in (".", ".."):
                ctx.error("invalid_sibling", sp, f"{c!r} must be a file name next to the source, not a path",
                          hint="siblings are looked up in the source's own folder only")
            elif path_problem(c):
                ctx.error("invalid_sibling", sp, f"the sibling file name {path_problem(c)}")
        out.append((name, tuple(cands)))
    return out
