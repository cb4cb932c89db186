"""Load a YAML spec into plain data while remembering where every node was.

PyYAML's composer gives nodes with marks; we construct plain Python values
(dict, list, str, int, float, bool, None) and keep, per spec path, the file,
line and column of the value and of its key. Expressions get one more level of
precision: :meth:`LoadedSpec.expression_mark` maps an offset *inside* a scalar
(after YAML unquoting) back to the line and column in the file, so a JMESPath
syntax error points at the offending character.
"""

from __future__ import annotations

import bisect
import datetime as _dt
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import yaml

from mapc.core.diagnostics import Diagnostic, Findings, TooManyErrors, format_path, shown, suggest

MAX_SPEC_BYTES = 4 * 1024 * 1024
MAX_NODES = 50_000
#: Characters of keys and scalars once aliases are expanded (each use of an alias counts):
#: the data a spec can make later stages hold, digest and write is no larger than its text.
MAX_EXPANDED_CHARS = MAX_SPEC_BYTES
MAX_DEPTH = 64
#: YAML tags a spec may use (docs/spec-reference.md): ``!override`` replaces an inherited value
#: instead of merging into it (`extends`); ``!keep_nulls`` keeps the null members of a mapping.
TAGS = ("!override", "!keep_nulls")
_STANDARD_TAG = "tag:yaml.org,2002:"
#: Positions inside a scalar are found up to this length; a longer one is pointed at as a whole.
MAX_LOCATED_SCALAR = 64 * 1024
#: libyaml parses about ten times faster than PyYAML's Python parser; both give the same events.
_PARSER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
#: What YAML refuses outright (PyYAML's and libyaml's reader agree on this set).
_NON_PRINTABLE = re.compile("[^\x09\x0A\x0D\x20-\x7E\x85\xA0-\uD7FF\uE000-\uFFFD\U00010000-\U0010FFFF]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_STR_TAG = "tag:yaml.org,2002:str"

PathT = tuple  # tuple[str | int, ...]


@dataclass
class Budget:
    """What loading may still consume: one budget is shared by a spec and its `extends` chain,
    so sixteen files cost no more than one spec at the limits."""

    bytes: int = MAX_SPEC_BYTES
    nodes: int = MAX_NODES  # each use of an alias counts again
    chars: int = MAX_EXPANDED_CHARS  # of keys and scalars, likewise


class Mark(NamedTuple):  # a tuple: one is made per node, and that is most of loading
    file: str
    line: int  # 1-based
    column: int  # 1-based


class _Scalar(NamedTuple):
    file: str
    start: int  # buffer index of the first character of the node (quote included)
    end: int
    style: str | None


@dataclass
class LoadedSpec:
    """Plain spec data plus positions. ``data`` is None when loading failed."""

    file: str
    text: str
    data: Any = None
    values: dict[PathT, Mark] = field(default_factory=dict)
    keys: dict[PathT, Mark] = field(default_factory=dict)
    scalars: dict[PathT, _Scalar] = field(default_factory=dict)
    # file -> (text, line start offsets); several files once specs are merged
    texts: dict[str, tuple[str, list[int]]] = field(default_factory=dict)
    # spec path -> one of TAGS, for the nodes the spec tagged
    tags: dict[PathT, str] = field(default_factory=dict)

    def mark(self, path: PathT, *, key: bool = False) -> Mark:
        """Position of ``path`` (its key when ``key``), else of its nearest ancestor."""
        path = tuple(path)
        table = self.keys if key else self.values
        while True:
            if path in table:
                return table[path]
            if key and path in self.values:
                return self.values[path]
            if not path:
                return Mark(self.file, 1, 1)
            path = path[:-1]

    def diag(self, code: str, path: PathT, message: str, *, hint: str | None = None,
             severity: str = "error", key: bool = False, mark: Mark | None = None) -> Diagnostic:
        m = mark or self.mark(path, key=key)
        return Diagnostic(
            code=code,
            message=message,
            severity=severity,
            file=m.file,
            line=m.line,
            column=m.column,
            path=format_path(path) or None,
            hint=hint,
        )

    def expression_mark(self, path: PathT, offset: int) -> Mark:
        """Where character ``offset`` of the scalar value at ``path`` sits in its file."""
        path = tuple(path)
        sc = self.scalars.get(path)
        if sc is None or sc.file not in self.texts or sc.end - sc.start > MAX_LOCATED_SCALAR:
            return self.mark(path)  # (mapping an offset walks the scalar: not megabytes of it)
        text, starts = self.texts[sc.file]
        index = _value_offset_to_index(text, sc, offset)
        line = bisect.bisect_right(starts, index) - 1
        return Mark(sc.file, line + 1, index - starts[line] + 1)


def _value_offset_to_index(text: str, sc: _Scalar, offset: int) -> int:
    """Map an offset in the unquoted scalar value to an index in the file text."""
    raw = text[sc.start : sc.end]
    style = sc.style
    i = 0
    produced = 0
    if style in ("'", '"'):
        i = 1
    elif style in ("|", ">"):
        # skip the indicator line; then content lines lose their indentation
        nl = raw.find("\n")
        if nl < 0:
            return sc.start
        i = nl + 1
        indent = len(raw[i:]) - len(raw[i:].lstrip(" "))
        while i < len(raw):
            line_end = raw.find("\n", i)
            line_end = len(raw) if line_end < 0 else line_end
            content_start = min(i + indent, line_end)
            length = line_end - content_start
            if offset <= produced + length:
                return sc.start + content_start + (offset - produced)
            produced += length + 1
            i = line_end + 1
        return sc.start
    while i < len(raw):
        if produced >= offset:
            return sc.start + i
        ch = raw[i]
        if style == "'" and ch == "'" and raw[i + 1 : i + 2] == "'":
            i += 2
        elif style == '"' and ch == "\\":
            nxt = raw[i + 1 : i + 2]
            i += {"x": 4, "u": 6, "U": 10}.get(nxt, 2)
        elif ch == "\n":
            # folded line break: newline plus the next line's indentation
            i += 1
            while i < len(raw) and raw[i] in " \t":
                i += 1
        else:
            i += 1
        produced += 1
    return sc.start + min(i, max(len(raw) - 1, 0))


class _Builder:
    def __init__(self, spec: LoadedSpec, diags: list[Diagnostic], budget: Budget):
        self.spec = spec
        self.diags = diags
        self.budget = budget  # spent as nodes and characters are built
        self.active: set = set()
        self.constructor = yaml.SafeLoader("")

    def mark_of(self, node) -> Mark:
        return Mark(self.spec.file, node.start_mark.line + 1, node.start_mark.column + 1)

    def error(self, code: str, node, path: PathT, message: str, hint: str | None = None) -> None:
        m = self.mark_of(node)
        self.diags.append(
            Diagnostic(code=code, message=message, file=m.file, line=m.line, column=m.column,
                       path=format_path(path) or None, hint=hint)
        )

    def build(self, node, path: PathT, depth: int = 0) -> Any:
        self.budget.nodes -= 1
        if self.budget.nodes < 0:
            raise _TooLarge("nodes", node.start_mark, path)
        if depth > MAX_DEPTH:
            self.error("spec_too_deep", node, path, f"nesting deeper than {MAX_DEPTH} levels")
            return None
        if node in self.active:
            self.error("recursive_alias", node, path, "a YAML alias refers to itself")
            return None
        self.spec.values[path] = self.mark_of(node)
        if node.tag and node.tag.startswith("!") and not node.tag.startswith(_STANDARD_TAG):
            if self._tag(node, path) and isinstance(node, yaml.ScalarNode):
                # read the scalar as if it carried no tag
                node = yaml.ScalarNode(self.constructor.resolve(yaml.ScalarNode, node.value, (node.style is None, False)),
                                       node.value, node.start_mark, node.end_mark, node.style)
        if isinstance(node, yaml.MappingNode):
            return self._mapping(node, path, depth)
        if isinstance(node, yaml.SequenceNode):
            self.active.add(node)
            out = [self.build(item, path + (i,), depth + 1) for i, item in enumerate(node.value)]
            self.active.discard(node)
            return out
        self.spec.scalars[path] = _Scalar(self.spec.file, node.start_mark.index, node.end_mark.index, node.style)
        return self._scalar(node, path)

    def _tag(self, node, path: PathT) -> bool:
        """Record a tag mapc knows; report any other (YAML would refuse or ignore it)."""
        if node.tag in TAGS:
            self.spec.tags[path] = node.tag
            return True
        guess = suggest(node.tag, TAGS)
        self.error("unknown_tag", node, path, f"unknown YAML tag {node.tag}",
                   hint=(f"{guess} " if guess else "") + "mapc knows " + " and ".join(TAGS)
                   + " (docs/spec-reference.md)")
        node.tag = None
        return True

    def _mapping(self, node, path: PathT, depth: int) -> dict:
        out: dict[str, Any] = {}
        merged: dict[str, Any] = {}
        seen: dict[str, Mark] = {}
        self.active.add(node)  # the collections being built: an alias to one of them is a cycle
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                self._merge(value_node, path, depth, merged)
                continue
            if not isinstance(key_node, yaml.ScalarNode):
                self.error("invalid_key", key_node, path, "mapping keys must be plain strings")
                continue
            self.budget.nodes -= 1  # a key is a node too (the composer counts it)
            key = self._scalar(key_node, path)
            if not isinstance(key, str):
                key = str(key).lower() if isinstance(key, bool) else str(key)
            child = path + (key,)
            km = self.mark_of(key_node)
            if key in seen:
                first = seen[key]
                self.error("duplicate_key", key_node, child,
                           f"key {shown(key)} appears twice (first at line {first.line})",
                           hint="remove one of them; YAML would silently keep only the last")
                continue
            seen[key] = km
            self.spec.keys[child] = km
            out[key] = self.build(value_node, child, depth + 1)
        self.active.discard(node)
        # YAML's merge: the merged keys first, each written key in place of a merged one
        return {**merged, **out} if merged else out

    def _merge(self, value_node, path: PathT, depth: int, merged: dict) -> None:
        """``<<: *common`` (or ``<<: [*a, *b]``): the keys of those mappings, for the mapping at
        ``path``; of two that have a key, the first gives it, as YAML says. Their marks stay
        where they are written, so a diagnostic names the line of the shared block."""
        sources = value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
        for src in sources:
            if not isinstance(src, yaml.MappingNode):
                self.error("invalid_merge", src, path, "a merge key (<<) takes a mapping or a list "
                           "of mappings", hint="write `<<: *name` with an anchor `&name` on a mapping")
                continue
            mark = self.spec.values.get(path)
            built = self.build(src, path, depth + 1)
            if mark is not None:
                self.spec.values[path] = mark  # the mapping itself is still where it is written
            for key, value in (built or {}).items():
                merged.setdefault(key, value)

    def _scalar(self, node, path: PathT) -> Any:
        self.budget.chars -= len(node.value)
        if self.budget.chars < 0:
            raise _TooLarge("chars", node.start_mark, path)
        if node.tag == _STR_TAG:  # most scalars: no constructor needed
            value = node.value
            if _SURROGATE.search(value):
                self.error("invalid_character", node, path, "a lone surrogate (\\ud800-\\udfff) is not a character",
                           hint="write the character itself, or its \\U0001xxxx escape for one beyond U+FFFF")
                return None
            return value
        try:
            value = self.constructor.construct_object(node, deep=True)
        except yaml.YAMLError as exc:
            self.error("yaml_syntax", node, path, str(getattr(exc, "problem", exc) or exc))
            return None
        if isinstance(value, (_dt.datetime, _dt.date)):
            return value.isoformat()
        if isinstance(value, bytes):
            self.error("unsupported_yaml", node, path, "binary scalars are not supported")
            return None
        if isinstance(value, float) and value != value:
            return value
        return value


class _TooLarge(Exception):
    """The budget ran out: ``what`` ran out (nodes, chars, bytes), at ``mark`` (a YAML mark) and
    spec path ``path`` when known."""

    def __init__(self, what: str, mark=None, path: PathT = ()):
        super().__init__(what)
        self.what, self.mark, self.path = what, mark, path


def _too_large(what: str, file: str, mark=None, path: PathT = ()) -> Diagnostic:
    """``spec_too_large`` where the budget ran out: which limit, and how to stay within it."""
    message = {
        "nodes": f"the spec has more than {MAX_NODES} YAML nodes (keys included)",
        "chars": f"the spec's keys and values hold more than {MAX_EXPANDED_CHARS} characters",
        "bytes": f"the spec is larger than {MAX_SPEC_BYTES} bytes",
    }[what]
    return Diagnostic(code="spec_too_large", message=message + ", counted after alias expansion (each use "
                      "of an alias counts again) and over the whole `extends` chain; the limit was "
                      "reached here", file=file,
                      line=mark.line + 1 if mark is not None else 1,
                      column=mark.column + 1 if mark is not None else 1, path=format_path(path) or None,
                      hint="a spec is a few kilobytes: keep data in fixtures or a tasks file, and write a "
                      "long text once instead of aliasing it (the limits are fixed: "
                      "docs/spec-reference.md, Limits)")


class _TooDeep(Exception):
    def __init__(self, mark):
        self.mark = mark


def _compose(text: str, parser=None, max_nodes: int = MAX_NODES) -> list:
    """YAML text -> the node of each document, composed from parser events without recursion.

    Equivalent to PyYAML's composer (same nodes, tags, marks and errors) but bounded while it
    reads: it stops at the first collection nested deeper than MAX_DEPTH and after ``max_nodes``
    nodes, so neither a deep nor a long document costs more than those bounds allow.
    """
    loader = (parser or _PARSER)(text)
    resolve = loader.resolve
    docs: list = []
    stack: list = []  # open collections, innermost last
    keys: list = []  # per open mapping: its pending key node, or None
    anchors: dict = {}
    count = 0
    try:
        while loader.check_event():
            event = loader.get_event()
            kind = type(event)
            if kind is yaml.AliasEvent:
                node = anchors.get(event.anchor)
                if node is None:
                    raise yaml.composer.ComposerError(None, None, f"found undefined alias {event.anchor!r}",
                                                      event.start_mark)
            elif kind in (yaml.ScalarEvent, yaml.SequenceStartEvent, yaml.MappingStartEvent):
                count += 1
                if count > max_nodes:
                    raise _TooLarge("nodes", event.start_mark, _open_path(stack, keys))
                anchor = event.anchor
                if anchor is not None and anchor in anchors:
                    raise yaml.composer.ComposerError(
                        f"found duplicate anchor {anchor!r}; first occurrence", anchors[anchor].start_mark,
                        "second occurrence", event.start_mark)
                tag = event.tag
                if kind is yaml.ScalarEvent:
                    if tag is None or tag == "!":
                        tag = resolve(yaml.ScalarNode, event.value, event.implicit)
                    node = yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark, style=event.style or None)
                else:
                    if len(stack) > MAX_DEPTH:
                        raise _TooDeep(event.start_mark)
                    node_type = yaml.SequenceNode if kind is yaml.SequenceStartEvent else yaml.MappingNode
                    if tag is None or tag == "!":
                        tag = resolve(node_type, None, event.implicit)
                    node = node_type(tag, [], event.start_mark, None, flow_style=event.flow_style)
                if anchor is not None:
                    anchors[anchor] = node
            elif kind in (yaml.SequenceEndEvent, yaml.MappingEndEvent):
                stack.pop().end_mark = event.end_mark
                keys.pop()
                continue
            else:
                if kind is yaml.DocumentEndEvent:
                    anchors = {}
                continue
            # attach the node to its parent (or make it a document)
            if not stack:
                docs.append(node)
            elif keys[-1] is not None:
                stack[-1].value.append((keys[-1], node))
                keys[-1] = None
            elif isinstance(stack[-1], yaml.MappingNode):
                keys[-1] = node
            else:
                stack[-1].value.append(node)
            if kind is not yaml.ScalarEvent and kind is not yaml.AliasEvent:
                stack.append(node)
                keys.append(None)
    finally:
        loader.dispose()
    return docs


def _open_path(stack: list, keys: list) -> PathT:
    """The spec path of the node ``_compose`` is adding (for a diagnostic)."""
    path: list = []
    for depth, node in enumerate(stack):
        innermost = depth == len(stack) - 1
        if isinstance(node, yaml.MappingNode):  # the pending key, or the key of the open child
            key = keys[depth] if innermost else (node.value[-1][0] if node.value else None)
            if key is None:
                break  # the node is a key itself
            path.append(key.value if isinstance(key, yaml.ScalarNode) else "?")
        else:
            path.append(len(node.value) - (0 if innermost else 1))
    return tuple(path)


def _invalid_character(spec: LoadedSpec, file: str, index: int, char: str) -> Diagnostic:
    """A located diagnostic for a character YAML refuses."""
    starts = spec.texts[file][1]
    line = bisect.bisect_right(starts, index) - 1
    return Diagnostic(
        code="invalid_character", message=f"the character U+{ord(char):04X} is not allowed in YAML", file=file,
        line=line + 1, column=index - starts[line] + 1,
        hint="remove it; inside a double-quoted string write it as an escape such as \\u0008 or \\t",
    )


def _line_starts(text: str) -> list[int]:
    return [0] + [m.end() for m in re.finditer("\n", text)]


def load_text(text: str, file: str, budget: Budget | None = None) -> tuple[LoadedSpec, list[Diagnostic]]:
    """Parse YAML text; returns the spec (``data`` None on failure) and diagnostics.

    ``budget`` (a fresh one by default) is spent by what is built."""
    budget = budget or Budget()
    spec = LoadedSpec(file=file, text=text)
    spec.texts[file] = (text, _line_starts(text))
    diags: list[Diagnostic] = []
    bad = _NON_PRINTABLE.search(text)
    if bad:  # control characters (ESC, NUL...) and lone surrogates
        diags.append(_invalid_character(spec, file, bad.start(), bad.group()))
        return spec, diags
    try:
        try:
            nodes = _compose(text, max_nodes=budget.nodes)
        except yaml.MarkedYAMLError as exc:
            if "maximum nesting depth" not in str(exc.problem):
                raise
            # libyaml reads ahead and stops at its own limit (1000 levels): PyYAML's parser
            # finds the first node deeper than ours
            nodes = _compose(text, yaml.SafeLoader, max_nodes=budget.nodes)
    except _TooDeep as exc:
        diags.append(Diagnostic(code="spec_too_deep", message=f"nesting deeper than {MAX_DEPTH} levels", file=file,
                                line=exc.mark.line + 1, column=exc.mark.column + 1,
                                hint="a spec needs only a few levels; flatten this value"))
        return spec, diags
    except _TooLarge as exc:
        diags.append(_too_large(exc.what, file, exc.mark, exc.path))
        return spec, diags
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or str(exc)
        context = f" ({exc.context})" if exc.context else ""
        if "invalid Unicode character escape" in problem:  # libyaml refuses \ud800: say it as PyYAML's path does
            diags.append(Diagnostic(code="invalid_character", message=f"invalid YAML: {problem}{context}", file=file,
                                    line=(mark.line + 1) if mark else 1, column=(mark.column + 1) if mark else 1,
                                    hint="escapes name characters: \\u0041, or \\U0001F600 beyond U+FFFF; "
                                    "surrogates (\\ud800-\\udfff) are not characters"))
            return spec, diags
        diags.append(
            Diagnostic(
                code="yaml_syntax",
                message=f"invalid YAML: {problem}{context}",
                file=file,
                line=(mark.line + 1) if mark else None,
                column=(mark.column + 1) if mark else None,
                hint="check indentation and quoting; expressions containing `: ` or starting "
                "with `[`, `{`, `*`, `&`, `!`, `|`, `>`, `@` or a quote must be quoted",
            )
        )
        return spec, diags
    except yaml.YAMLError as exc:
        diags.append(Diagnostic(code="yaml_syntax", message=f"invalid YAML: {' '.join(str(exc).split())}",
                                file=file, line=1, column=1))
        return spec, diags
    except ValueError:  # PyYAML's own parser (no libyaml) on an escape beyond U+10FFFF
        diags.append(Diagnostic(code="invalid_character", message="an escape names no Unicode character",
                                file=file, line=1, column=1, hint="escapes go up to \\U0010FFFF"))
        return spec, diags
    if not nodes:
        diags.append(Diagnostic(code="empty_spec", message="the spec is empty", file=file, line=1, column=1,
                                hint="start from `mapc init --from SAMPLE` or an example under examples/"))
        return spec, diags
    if len(nodes) > 1:
        second = nodes[1]
        diags.append(Diagnostic(code="multiple_documents", message="a spec file holds one YAML document",
                                file=file, line=second.start_mark.line + 1, column=1,
                                hint="remove the `---` separator and what follows, or split the file"))
    findings = Findings(diags)  # stops building past MAX_REPORTED errors
    builder = _Builder(spec, findings, budget)
    try:
        spec.data = builder.build(nodes[0], ())
    except _TooLarge as exc:
        spec.data = None
        return spec, list(findings) + [_too_large(exc.what, spec.file, exc.mark, exc.path)]
    except TooManyErrors:
        spec.data = None
    return spec, list(findings)


def load_file(path: str | Path, budget: Budget | None = None) -> tuple[LoadedSpec, list[Diagnostic]]:
    """Read and parse a spec file, turning I/O problems into diagnostics."""
    budget = budget or Budget()
    p = Path(path)
    name = str(path)
    try:
        if p.is_dir():
            return LoadedSpec(file=name, text=""), [
                Diagnostic(code="not_a_file", message=f"{name} is a directory, not a spec file", file=name)
            ]
        size = p.stat().st_size
        if size > budget.bytes:
            if budget.bytes < MAX_SPEC_BYTES:  # earlier files of an `extends` chain used the rest
                return LoadedSpec(file=name, text=""), [_too_large("bytes", name)]
            return LoadedSpec(file=name, text=""), [
                Diagnostic(code="spec_too_large", message=f"spec is {size} bytes; the limit is {MAX_SPEC_BYTES}", file=name,
                           line=1, column=1, hint="a spec is a few kilobytes; keep data in fixtures or tasks files")
            ]
        with p.open("rb") as stream:  # no more than was measured, should the file grow meanwhile
            raw = stream.read(budget.bytes + 1)
        if len(raw) > budget.bytes:
            return LoadedSpec(file=name, text=""), [_too_large("bytes", name)]
        budget.bytes -= len(raw)
    except FileNotFoundError:
        return LoadedSpec(file=name, text=""), [
            Diagnostic(code="file_not_found", message=f"spec file not found: {name}", file=name)
        ]
    except OSError as exc:
        return LoadedSpec(file=name, text=""), [
            Diagnostic(code="unreadable", message=f"cannot read spec: {exc.strerror or exc}", file=name)
        ]
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        line_start = raw.rfind(b"\n", 0, exc.start) + 1
        column = len(raw[line_start : exc.start].decode("utf-8", "replace")) + 1
        return LoadedSpec(file=name, text=""), [
            Diagnostic(code="invalid_encoding", message=f"the spec is not valid UTF-8 (byte 0x{raw[exc.start]:02x})",
                       file=name, line=line, column=column, hint="save the file as UTF-8")
        ]
    return load_text(text, name, budget)
