"""What only a probe runs: reading and parsing the first bytes of a source."""

import json
import os
import re

from .mapping_rt import GZIP_MAGIC, MappingError, gzip_read, missing_required


def unparsed(exc, where, otherwise):
    """A probe's reason for JSON it could not parse: too deep a nesting in the words
    ``stream`` uses (:func:`json_error`), anything else ``otherwise``."""
    if isinstance(exc, RecursionError) or "nested too deeply" in str(exc):
        return f"{where}JSON nested too deeply"
    return otherwise


def read_prefix(path, limit):
    """At most ``limit`` bytes of the file (decompressed when it is gzipped) and whether
    there is more; a plain file is read once, ``limit + 1`` bytes at most."""
    with open(path, "rb") as fh:
        data = fh.read(limit + 1)
    if data[:2] == GZIP_MAGIC:
        import gzip

        with gzip.open(path, "rb") as fh:
            data = gzip_read(fh.read, limit + 1)
    truncated = len(data) > limit
    return data[:limit], truncated


def parse_prefix(text):
    """Parse a possibly truncated JSON text into what it holds so far.

    Returns ``(value, complete)``. Containers cut off by the end of the text
    are closed; a scalar or key cut off is dropped. Raises ValueError when the
    text is not the beginning of a JSON document.
    """
    try:
        return json.loads(text), True
    except RecursionError:
        raise ValueError("nested too deeply") from None
    except json.JSONDecodeError:
        pass
    parser = _PrefixParser(text)
    try:
        value = parser.value(0)
    except EOFError:
        raise ValueError("no complete JSON value in the prefix") from None
    if not parser.at_end():
        raise ValueError("extra data after the JSON value")
    return value, False


class _PrefixParser:
    """A small JSON reader that stops quietly at the end of its input."""

    _scalar = re.compile(r'-?\d+(\.\d+)?([eE][+-]?\d+)?|true|false|null|"(?:[^"\\]|\\.)*"')

    def __init__(self, text):
        self.text = text
        self.i = 0

    def _ws(self):
        while self.i < len(self.text) and self.text[self.i] in " \t\r\n":
            self.i += 1

    def at_end(self):
        self._ws()
        return self.i >= len(self.text)

    def value(self, depth):
        if depth > 200:
            raise ValueError("nested too deeply")
        self._ws()
        if self.i >= len(self.text):
            raise EOFError
        ch = self.text[self.i]
        if ch == "{":
            return self._object(depth)
        if ch == "[":
            return self._array(depth)
        m = self._scalar.match(self.text, self.i)
        if not m:
            rest = self.text[self.i :].rstrip()
            if ch == '"' or any(word.startswith(rest) for word in ("true", "false", "null", "-")):
                raise EOFError  # a scalar cut off by the end of the prefix
            raise ValueError(f"unexpected {ch!r} at offset {self.i}")
        self.i = m.end()
        if self.i >= len(self.text) and m.group(0)[0] in "-0123456789":
            raise EOFError  # a number may continue past the cut
        return json.loads(m.group(0))

    def _object(self, depth):
        out = {}
        self.i += 1
        while True:
            self._ws()
            if self.i >= len(self.text):
                return out
            if self.text[self.i] == "}":
                self.i += 1
                return out
            if self.text[self.i] == ",":
                self.i += 1
                continue
            try:
                key = self.value(depth + 1)
            except EOFError:
                self.i = len(self.text)  # the cut: nothing after it to parse
                return out
            if not isinstance(key, str):
                raise ValueError("object keys must be strings")
            self._ws()
            if self.i >= len(self.text):
                return out
            if self.text[self.i] != ":":
                raise ValueError(f"expected ':' at offset {self.i}")
            self.i += 1
            try:
                out[key] = self.value(depth + 1)
            except EOFError:
                self.i = len(self.text)  # the cut: nothing after it to parse
                return out

    def _array(self, depth):
        out = []
        self.i += 1
        while True:
            self._ws()
            if self.i >= len(self.text):
                return out
            if self.text[self.i] == "]":
                self.i += 1
                return out
            if self.text[self.i] == ",":
                self.i += 1
                continue
            try:
                out.append(self.value(depth + 1))
            except EOFError:
                self.i = len(self.text)  # the cut: nothing after it to parse
                return out


def probe_source(
    path, container, limit, max_lines, required, when, confidence, fmt, require_text,
    csv_format=None,
):
    """Answer an RLViz probe from a bounded prefix of ``path`` (of its decompressed bytes
    when it is gzipped); ``csv_format`` is ``(columns, delimiter)`` of a csv container."""
    if os.path.isdir(path):
        return {"supported": False, "confidence": 0.0, "reason": "source is a directory"}
    if not os.path.isfile(path):  # a named pipe or device: reading could block or never end
        return {"supported": False, "confidence": 0.0, "reason": "source is not a regular file"}
    try:
        data, truncated = read_prefix(path, limit)
    except MappingError as exc:
        return {"supported": False, "confidence": 0.0, "reason": str(exc)}
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if not data.strip():
        return {"supported": False, "confidence": 0.0, "reason": "source is empty"}
    try:
        text = data.decode("utf-8", "ignore" if truncated else "strict")
    except UnicodeDecodeError:
        return {"supported": False, "confidence": 0.0, "reason": "source is not UTF-8 text"}
    if container == "jsonl":
        lines = text.split("\n")
        tail = lines.pop()  # after the last newline: empty, or a line that may be cut off
        values = []
        for number, line in enumerate(lines, start=1):
            if len(values) >= max_lines:
                break
            if not line.strip():
                continue
            try:
                values.append(json.loads(line))
            except (ValueError, RecursionError) as exc:
                return {
                    "supported": False,
                    "confidence": 0.0,
                    "reason": unparsed(exc, f"line {number}: ", f"line {number} is not JSON"),
                }
        if not values and tail.strip():
            try:  # the only line, possibly cut: judge what it holds so far
                values.append(parse_prefix(tail)[0])
            except (ValueError, RecursionError) as exc:
                where = f"line {len(lines) + 1}"
                return {
                    "supported": False,
                    "confidence": 0.0,
                    "reason": unparsed(exc, where + ": ", where + " is not JSON"),
                }
        if not values:
            return {
                "supported": False,
                "confidence": 0.0,
                "reason": "no complete JSON line in the probed prefix",
            }
    elif container == "csv":
        from .csv import csv_probe_values

        values = csv_probe_values(text, truncated, max_lines, csv_format)
        if isinstance(values, str):
            return {"supported": False, "confidence": 0.0, "reason": values}
    else:
        try:
            value, _ = parse_prefix(text)
        except (ValueError, RecursionError) as exc:
            reason = unparsed(exc, "", "not a JSON document")
            return {"supported": False, "confidence": 0.0, "reason": reason}
        values = [value]
    for value in values:
        missing = missing_required(value, required)
        if missing is not None:
            return {"supported": False, "confidence": 0.0, "reason": f"missing field {missing}"}
        if when is not None:
            try:
                ok = when(value)
            except (TypeError, ValueError):
                ok = False
            if not ok:
                return {
                    "supported": False,
                    "confidence": 0.0,
                    "reason": "probe condition does not hold",
                }
    what = ", ".join(require_text) if require_text else "the probe condition"
    unit = {"jsonl": f"{len(values)} line(s)", "csv": f"{len(values)} row(s)"}.get(
        container, "the document"
    )
    return {
        "supported": True,
        "confidence": confidence,
        "format": fmt,
        "reason": f"{unit}: found {what}",
    }
