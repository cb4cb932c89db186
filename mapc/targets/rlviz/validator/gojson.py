"""How RLViz reads JSON: Go's ``encoding/json``, modelled where it differs from Python's.

RLViz decodes probe answers, canonical records and JSON manifests with Go's
decoder into typed structs. Measured against the real ``rlviz-validate``, that
differs from ``json.loads`` in ways that change verdicts:

- struct fields match keys case-insensitively (Unicode simple folding: ``ID``,
  ``Record_Type``, even ``ſource`` with a long s) when no key matches exactly;
- an invalid UTF-8 byte inside a string becomes one U+FFFD per byte, and an
  unpaired ``\\uD800``-style escape becomes U+FFFD (so ``"a\\ud800"`` and
  ``"a\\udc00"`` are the same id);
- nesting may go 10000 levels deep (Python's parser stops near 1000), and
  numbers of any size are valid JSON (an ``any`` field keeps the literal);
- a typed field is strict: ``int64`` takes integer literals within range only
  (``1.0`` and 2**63 are errors), a string field takes only strings;
- ``null`` leaves a string or integer field as it was, and clears a pointer,
  map, slice or ``any``; a repeated key decodes again into the same field, so
  two ``source`` objects merge;
- only space, tab, CR and LF are whitespace between tokens.

:func:`parse` reads bytes into Python values with objects kept as ordered
key/value pairs (:class:`Obj`), exactly accepting what Go accepts;
:func:`decode_struct` applies Go's struct decoding to such an object.
"""

from __future__ import annotations

import codecs
import json
import re
from typing import Any, Callable

MAX_DEPTH = 10000
GO_WHITESPACE = " \t\r\n"
#: What Go's strings.TrimSpace / bytes.TrimSpace remove (Python's str.strip also removes U+001C-U+001F).
GO_SPACE = " \t\n\v\f\r\x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
           "\u2028\u2029\u202f\u205f\u3000"
#: The non-ASCII letters whose simple case folding reaches an ASCII letter (Kelvin sign, long s).
_FOLD_TO_ASCII = str.maketrans({"\u212a": "K", "\u017f": "S"})
_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")


class GoJSONError(ValueError):
    """A value Go's decoder rejects (syntax or type); the message follows Go's."""


class Obj(list):
    """A JSON object as its ``(key, value)`` pairs, in order, repeated keys kept."""

    __slots__ = ()

    def last(self) -> dict:
        """The object as most JSON tools see it: the last value of each key wins."""
        return dict(self)


class BigNumber(str):
    """An integer literal too long for Python's int() (Go keeps it as a json.Number)."""

    __slots__ = ()


def _fffd_per_byte(exc: UnicodeDecodeError):
    return "\ufffd", exc.start + 1


codecs.register_error("mapc-go-fffd", _fffd_per_byte)


def go_utf8(data: bytes) -> str:
    """Bytes as Go reads them inside a JSON string: each invalid UTF-8 byte is one U+FFFD."""
    return data.decode("utf-8", "mapc-go-fffd")


def go_trim_space(text: str) -> str:
    """``strings.TrimSpace``."""
    return text.strip(GO_SPACE)


def fold_key(key: str) -> str | None:
    """The key folded as Go compares it with an ASCII field name, or None when it cannot match one."""
    if not key.isascii():
        key = key.translate(_FOLD_TO_ASCII)
        if not key.isascii():
            return None
    return key.upper()


def _reject_constant(name: str):
    raise GoJSONError(f"invalid character {name[0]!r} looking for beginning of value")


_DECODER = json.JSONDecoder(object_pairs_hook=Obj, parse_constant=_reject_constant)
_scan_once = json.scanner.make_scanner(_DECODER)


_WHITESPACE_RUN = re.compile(r"[ \t\r\n]*")


def _skip_ws(text: str, pos: int) -> int:
    return _WHITESPACE_RUN.match(text, pos).end()


def scan_value(text: str, pos: int = 0) -> tuple[Any, int]:
    """One JSON value at ``pos`` (after Go whitespace): ``(value, end)``; raises GoJSONError.

    Python's C scanner does the common case; values nested deeper than it
    recurses or holding integers too long for int() go to :func:`_scan_slow`.
    """
    pos = _skip_ws(text, pos)
    if pos >= len(text):
        raise GoJSONError("unexpected end of JSON input")
    try:
        value, end = _scan_once(text, pos)
    except StopIteration:
        raise GoJSONError(f"invalid character {text[pos]!r} looking for beginning of value") from None
    except json.JSONDecodeError as exc:
        raise GoJSONError(exc.msg) from None
    except (RecursionError, ValueError):  # deep nesting; an integer past int()'s digit limit
        value, end = _scan_slow(text, pos)
    return value, end


def parse_text(text: str) -> tuple[Any, bool]:
    """Exactly one JSON value (surrounded by Go whitespace only): ``(value, had_lone_surrogates)``.

    Unpaired surrogates are already replaced by U+FFFD in the value.
    """
    value, end = scan_value(text)
    end = _skip_ws(text, end)
    if end != len(text):
        raise GoJSONError(f"invalid character {text[end]!r} after top-level value")
    if "\\u" in text and _SURROGATE_ESCAPE.search(text) and has_surrogates(value):
        return fix_surrogates(value), True
    return value, False


def parse(data: bytes) -> Any:
    """One JSON document read from bytes as Go reads it."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = go_utf8(data)
    return parse_text(text)[0]


# -- the rare paths ---------------------------------------------------------------------
def _scan_slow(text: str, pos: int) -> tuple[Any, int]:
    """An iterative parser for what the C scanner cannot take: depth up to Go's 10000, huge integers."""
    scanstring = json.decoder.scanstring
    stack: list[list] = []  # [container, key-or-None]

    def fail(at: int, what: str = "looking for beginning of value"):
        if at >= len(text):
            raise GoJSONError("unexpected end of JSON input")
        raise GoJSONError(f"invalid character {text[at]!r} {what}")

    def string_at(at: int) -> tuple[str, int]:
        try:
            return scanstring(text, at + 1, True)
        except json.JSONDecodeError as exc:
            raise GoJSONError(exc.msg) from None

    def key_at(at: int) -> int:
        """Read ``"key":`` at ``at`` into the open object; returns where its value starts."""
        at = _skip_ws(text, at)
        if at >= len(text) or text[at] != '"':
            fail(at, "looking for beginning of object key string")
        key, at = string_at(at)
        at = _skip_ws(text, at)
        if at >= len(text) or text[at] != ":":
            fail(at, "after object key")
        stack[-1][1] = key
        return at + 1

    while True:
        pos = _skip_ws(text, pos)
        ch = text[pos] if pos < len(text) else ""
        # a value starts here
        if ch == "{" or ch == "[":
            if len(stack) >= MAX_DEPTH:
                raise GoJSONError("exceeded max depth")
            container = Obj() if ch == "{" else []
            pos = _skip_ws(text, pos + 1)
            closer = "}" if ch == "{" else "]"
            if pos < len(text) and text[pos] == closer:
                value, pos = container, pos + 1
            else:
                stack.append([container, None])
                if ch == "{":
                    pos = key_at(pos)
                continue
        elif ch == '"':
            value, pos = string_at(pos)
        elif text.startswith("true", pos):
            value, pos = True, pos + 4
        elif text.startswith("false", pos):
            value, pos = False, pos + 5
        elif text.startswith("null", pos):
            value, pos = None, pos + 4
        else:
            match = _NUMBER.match(text, pos)
            if match is None:
                fail(pos)
            literal = match.group()
            if match.group(1) or match.group(2):
                value = float(literal)
            else:
                value = int(literal) if len(literal) < 4000 else BigNumber(literal)
            pos = match.end()
        # a value is complete: attach it, then close containers that end here
        while True:
            if not stack:
                return value, pos
            container, key = stack[-1]
            if isinstance(container, Obj):
                container.append((key, value))
            else:
                container.append(value)
            pos = _skip_ws(text, pos)
            ch = text[pos] if pos < len(text) else ""
            if ch == ",":
                pos = key_at(pos + 1) if isinstance(container, Obj) else pos + 1
                break
            if ch == ("}" if isinstance(container, Obj) else "]"):
                stack.pop()
                value, pos = container, pos + 1
                continue
            fail(pos, "after object key:value pair" if isinstance(container, Obj) else "after array element")


def fix_surrogates(value: Any) -> Any:
    """Every unpaired surrogate (from a lone ``\\uD800`` escape) in keys and strings becomes U+FFFD."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value) if _SURROGATE.search(value) else value
    if not isinstance(value, list):
        return value
    out = type(value)()
    todo = [(value, out)]
    while todo:
        src, dst = todo.pop()
        for item in src:
            if isinstance(src, Obj):
                key, item = item
                key = _SURROGATE.sub("\ufffd", key)
            if isinstance(item, list):
                copy = type(item)()
                todo.append((item, copy))
                item = copy
            elif isinstance(item, str) and _SURROGATE.search(item):
                item = _SURROGATE.sub("\ufffd", item)
            dst.append((key, item) if isinstance(src, Obj) else item)
    return out


def has_surrogates(value: Any) -> bool:
    """Whether a string anywhere in ``value`` (keys included) holds an unpaired surrogate."""
    todo = [value]
    while todo:
        item = todo.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return True
        elif isinstance(item, Obj):
            for key, sub in item:
                if _SURROGATE.search(key):
                    return True
                todo.append(sub)
        elif isinstance(item, list):
            todo.extend(item)
    return False


# -- struct decoding ---------------------------------------------------------------------
# Field kinds: how a Go field of that type takes a JSON value.
STR, I64, PI64, F64P, BOOLP, MAP, STRS, ANY, RAW = "str", "i64", "*i64", "*f64", "*bool", "map", "[]str", "any", "raw"
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


class Struct:
    """A Go struct's JSON fields: name -> kind (a kind string, or a nested :class:`Struct` behind a pointer)."""

    def __init__(self, go_name: str, fields: dict[str, Any]):
        self.go_name = go_name
        self.fields = fields
        self.folded = {name.upper(): name for name in fields}

    def field(self, key: str) -> str | None:
        if key in self.fields:
            return key
        folded = fold_key(key)
        return self.folded.get(folded) if folded is not None else None


def _json_type(value: Any) -> str:
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, Obj):
        return "object"
    return "array"


def _type_error(value: Any, struct: Struct, name: str, go_type: str) -> GoJSONError:
    what = _json_type(value)
    if what == "number":
        what = f"number {value}"
    return GoJSONError(f"json: cannot unmarshal {what} into Go struct field {struct.go_name}.{name} of type {go_type}")


def decode_struct(struct: Struct, obj: Any, into: dict | None = None, *, strict: bool = True) -> dict:
    """Decode ``obj`` into ``struct`` as Go does; returns ``{field: value}`` (absent = Go's zero value).

    ``strict`` is ``DisallowUnknownFields``. Raises :class:`GoJSONError` at the
    first error Go would report (the record is then invalid whatever follows).
    """
    out = {} if into is None else into
    if obj is None:
        return out
    if not isinstance(obj, Obj):
        raise GoJSONError(f"json: cannot unmarshal {_json_type(obj)} into Go value of type {struct.go_name}")
    fields = struct.fields
    for key, value in obj:
        kind = fields.get(key)
        name = key
        if kind is None:  # not spelled exactly: Go also tries the case-folded name
            name = struct.field(key)
            if name is None:
                if strict:
                    raise GoJSONError(f"json: unknown field {key!r}".replace("'", '"'))
                continue
            kind = fields[name]
        if value is None:
            if kind is STR or kind is I64:
                continue  # null leaves a string or integer as it was
            if kind is RAW:
                out[name] = None  # a RawMessage holds the literal null
            else:
                out.pop(name, None)  # pointers, maps, slices and interfaces become nil
            continue
        if kind is STR:
            if type(value) is not str:
                raise _type_error(value, struct, name, "string")
            out[name] = value
        elif kind is ANY or kind is RAW:
            out[name] = value
        elif kind is I64 or kind is PI64:
            if type(value) is not int or not INT64_MIN <= value <= INT64_MAX:
                raise _type_error(value, struct, name, "int64")
            out[name] = value
        elif isinstance(kind, Struct):
            if not isinstance(value, Obj):
                raise _type_error(value, struct, name, kind.go_name)
            out[name] = decode_struct(kind, value, out.get(name), strict=strict)
        elif kind is MAP:
            if not isinstance(value, Obj):
                raise _type_error(value, struct, name, "map[string]interface {}")
            merged = out.get(name) or {}
            merged.update(value)
            out[name] = merged
        elif kind is STRS:
            if isinstance(value, Obj) or not isinstance(value, list):
                raise _type_error(value, struct, name, "[]string")
            old = out.get(name) or []
            items = []
            for i, item in enumerate(value):
                if item is None:
                    items.append(old[i] if i < len(old) else "")  # null keeps a reused element
                elif isinstance(item, str):
                    items.append(item)
                else:
                    raise _type_error(item, struct, name, "string")
            out[name] = items
        elif kind is F64P:
            if isinstance(value, bool) or not isinstance(value, (int, float, BigNumber)):
                raise _type_error(value, struct, name, "float64")
            try:
                number = float(value)
            except OverflowError:
                number = float("inf")
            if number in (float("inf"), float("-inf")):
                raise _type_error(value, struct, name, "float64")
            out[name] = number
        else:  # BOOLP
            if not isinstance(value, bool):
                raise _type_error(value, struct, name, "bool")
            out[name] = value
    return out


def envelope_type(value: Any, field: str = "record_type", others: frozenset = frozenset()) -> str:
    """What ``json.Unmarshal`` into ``struct{RecordType string}`` yields (unknown keys ignored).

    ``others``: exact names known not to fold to ``field`` (saves folding them).
    """
    if value is None:
        return ""
    if not isinstance(value, Obj):
        raise GoJSONError(f"json: cannot unmarshal {_json_type(value)} into Go value of type struct")
    found = ""
    folded = field.upper()
    for key, item in value:
        if key == field or (key not in others and fold_key(key) == folded):
            if item is None:
                continue
            if not isinstance(item, str):
                raise GoJSONError(f"json: cannot unmarshal {_json_type(item)} into Go struct field .{field}")
            found = item
    return found


def last_view(value: Any) -> Any:
    """A parsed value as ``json.loads`` would give it: objects as dicts, the last repeated key winning."""
    if isinstance(value, Obj):
        return {key: last_view(item) for key, item in value}
    if isinstance(value, list):
        return [last_view(item) for item in value]
    return value


Reader = Callable[[bytes], Any]
