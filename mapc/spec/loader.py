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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from mapc.diagnostics import Diagnostic, format_path

MAX_SPEC_BYTES = 4 * 1024 * 1024
MAX_NODES = 200_000
MAX_DEPTH = 64
#: YAML tags a spec may use (docs/spec-reference.md): ``!override`` replaces an inherited value
#: instead of merging into it (`extends`); ``!keep_nulls`` keeps the null members of a mapping.
TAGS = ("!override", "!keep_nulls")
_STANDARD_TAG = "tag:yaml.org,2002:"

PathT = tuple  # tuple[str | int, ...]


@dataclass(frozen=True)
class Mark:
    file: str
    line: int  # 1-based
    column: int  # 1-based


@dataclass
class _Scalar:
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
        if sc is None or sc.file not in self.texts:
            return self.mark(path)
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
    def __init__(self, spec: LoadedSpec, diags: list[Diagnostic]):
        self.spec = spec
        self.diags = diags
        self.count = 0
        self.constructor = yaml.SafeLoader("")

    def mark_of(self, node) -> Mark:
        return Mark(self.spec.file, node.start_mark.line + 1, node.start_mark.column + 1)

    def error(self, code: str, node, path: PathT, message: str, hint: str | None = None) -> None:
        m = self.mark_of(node)
        self.diags.append(
            Diagnostic(code=code, message=message, file=m.file, line=m.line, column=m.column,
                       path=format_path(path) or None, hint=hint)
        )

    def build(self, node, path: PathT, depth: int = 0, active: frozenset = frozenset()) -> Any:
        self.count += 1
        if self.count > MAX_NODES:
            raise _TooLarge()
        if depth > MAX_DEPTH:
            self.error("spec_too_deep", node, path, f"nesting deeper than {MAX_DEPTH} levels")
            return None
        if id(node) in active:
            self.error("recursive_alias", node, path, "a YAML alias refers to itself")
            return None
        self.spec.values[path] = self.mark_of(node)
        if node.tag and node.tag.startswith("!") and not node.tag.startswith(_STANDARD_TAG):
            if self._tag(node, path) and isinstance(node, yaml.ScalarNode):
                # read the scalar as if it carried no tag
                node = yaml.ScalarNode(self.constructor.resolve(yaml.ScalarNode, node.value, (node.style is None, False)),
                                       node.value, node.start_mark, node.end_mark, node.style)
        if isinstance(node, yaml.MappingNode):
            out: dict[str, Any] = {}
            seen: dict[str, Mark] = {}
            inner = active | {id(node)}
            for key_node, value_node in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    self.error("unsupported_yaml", key_node, path, "YAML merge keys (<<) are not supported",
                               hint="repeat the keys, or use `extends:` to build on another spec")
                    continue
                if not isinstance(key_node, yaml.ScalarNode):
                    self.error("invalid_key", key_node, path, "mapping keys must be plain strings")
                    continue
                key = self._scalar(key_node, path)
                if not isinstance(key, str):
                    key = str(key).lower() if isinstance(key, bool) else str(key)
                child = path + (key,)
                km = self.mark_of(key_node)
                if key in seen:
                    first = seen[key]
                    self.error("duplicate_key", key_node, child,
                               f"key {key!r} appears twice (first at line {first.line})",
                               hint="remove one of them; YAML would silently keep only the last")
                    continue
                seen[key] = km
                self.spec.keys[child] = km
                out[key] = self.build(value_node, child, depth + 1, inner)
            return out
        if isinstance(node, yaml.SequenceNode):
            inner = active | {id(node)}
            return [self.build(item, path + (i,), depth + 1, inner) for i, item in enumerate(node.value)]
        self.spec.scalars[path] = _Scalar(self.spec.file, node.start_mark.index, node.end_mark.index, node.style)
        return self._scalar(node, path)

    def _tag(self, node, path: PathT) -> bool:
        """Record a tag mapc knows; report any other (YAML would refuse or ignore it)."""
        if node.tag in TAGS:
            self.spec.tags[path] = node.tag
            return True
        from mapc.spec.schema_check import suggest

        guess = suggest(node.tag, TAGS)
        self.error("unknown_tag", node, path, f"unknown YAML tag {node.tag}",
                   hint=(f"{guess} " if guess else "") + "mapc knows " + " and ".join(TAGS)
                   + " (docs/spec-reference.md)")
        node.tag = None
        return True

    def _scalar(self, node, path: PathT) -> Any:
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
    pass


def _too_deep(text: str, file: str) -> Diagnostic:
    """Where nesting first goes past MAX_DEPTH, found with PyYAML's (iterative) event parser."""
    depth = 0
    line = column = 1
    try:
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
                depth += 1
                if depth > MAX_DEPTH:
                    line, column = event.start_mark.line + 1, event.start_mark.column + 1
                    break
            elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
                depth -= 1
    except yaml.YAMLError:
        pass
    return Diagnostic(code="spec_too_deep", message=f"nesting deeper than {MAX_DEPTH} levels", file=file,
                      line=line, column=column, hint="a spec needs only a few levels; flatten this value")


def _reader_error(exc, spec: LoadedSpec, file: str) -> Diagnostic:
    """A located diagnostic for a character YAML refuses (PyYAML gives a buffer position)."""
    index = exc.position if isinstance(exc.position, int) and 0 <= exc.position <= len(spec.text) else 0
    starts = spec.texts[file][1]
    line = bisect.bisect_right(starts, index) - 1
    char = exc.character
    what = f"U+{char:04X}" if isinstance(char, int) else repr(char)
    return Diagnostic(
        code="invalid_character", message=f"the character {what} is not allowed in YAML", file=file,
        line=line + 1, column=index - starts[line] + 1,
        hint="remove it; inside a double-quoted string write it as an escape such as \\u0008 or \\t",
    )


def load_text(text: str, file: str) -> tuple[LoadedSpec, list[Diagnostic]]:
    """Parse YAML text; returns the spec (``data`` None on failure) and diagnostics."""
    spec = LoadedSpec(file=file, text=text)
    spec.texts[file] = (text, [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"])
    diags: list[Diagnostic] = []
    try:
        nodes = list(yaml.compose_all(text, Loader=yaml.SafeLoader))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or str(exc)
        context = f" ({exc.context})" if exc.context else ""
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
    except RecursionError:  # PyYAML composes nodes recursively: a few hundred levels exhaust the stack
        diags.append(_too_deep(text, file))
        return spec, diags
    except yaml.reader.ReaderError as exc:  # a character YAML does not allow (control characters)
        diags.append(_reader_error(exc, spec, file))
        return spec, diags
    except yaml.YAMLError as exc:
        diags.append(Diagnostic(code="yaml_syntax", message=f"invalid YAML: {' '.join(str(exc).split())}",
                                file=file, line=1, column=1))
        return spec, diags
    nodes = [n for n in nodes if n is not None]
    if not nodes:
        diags.append(Diagnostic(code="empty_spec", message="the spec is empty", file=file, line=1, column=1,
                                hint="start from `mapc init --from SAMPLE` or an example under examples/"))
        return spec, diags
    if len(nodes) > 1:
        second = nodes[1]
        diags.append(Diagnostic(code="multiple_documents", message="a spec file holds one YAML document",
                                file=file, line=second.start_mark.line + 1, column=1,
                                hint="remove the `---` separator and what follows, or split the file"))
    builder = _Builder(spec, diags)
    try:
        spec.data = builder.build(nodes[0], ())
    except _TooLarge:
        diags.append(Diagnostic(code="spec_too_large", message=f"more than {MAX_NODES} YAML nodes",
                                file=file, line=1, column=1))
        spec.data = None
    return spec, diags


def load_file(path: str | Path) -> tuple[LoadedSpec, list[Diagnostic]]:
    """Read and parse a spec file, turning I/O problems into diagnostics."""
    p = Path(path)
    name = str(path)
    try:
        if p.is_dir():
            return LoadedSpec(file=name, text=""), [
                Diagnostic(code="not_a_file", message=f"{name} is a directory, not a spec file", file=name)
            ]
        size = p.stat().st_size
        if size > MAX_SPEC_BYTES:
            return LoadedSpec(file=name, text=""), [
                Diagnostic(code="spec_too_large", message=f"spec is {size} bytes; the limit is {MAX_SPEC_BYTES}", file=name,
                           line=1, column=1, hint="a spec is a few kilobytes; keep data in fixtures or tasks files")
            ]
        raw = p.read_bytes()
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
    return load_text(text, name)
