"""What the JSON document reader needs for a value longer than a window, or another shape.

Imported only when a document needs it.
"""

import json
import re

from .mapping_rt import MappingError, _LONGER, json_error


#: the inside of a JSON string, up to its closing quote or to what json refuses in it
_STRING_BODY = re.compile(
    r'[^"\\\x00-\x1f]*(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})[^"\\\x00-\x1f]*)*'
)


def skip_long(reader, warn):
    """Move past the value at the reader's cursor, longer than a window: an array or object is
    entered and its elements or members taken one at a time (each decoded and dropped when it
    fits in a window, entered in turn when it does not), a string scanned
    (:func:`skip_long_string`): memory stays a window or two however large the value."""
    closers = []  # "]" or "}" of each array and object entered
    long = True  # the value at the cursor is known to be longer than a window
    while True:
        ch = reader.space()
        if long or reader.attempt(warn, reader.CHUNK) is _LONGER:
            if ch == '"':
                skip_long_string(reader)
            elif ch == "[" or ch == "{":
                if len(closers) >= reader.MAX_DEPTH:
                    raise json_error(RecursionError(), "")
                reader.i += 1
                close = "]" if ch == "[" else "}"
                long = False
                if reader.space() != close:
                    closers.append(close)
                    if close == "}":
                        skip_member_name(reader)
                    continue
                reader.i += 1
            elif reader.attempt(warn, reader.limit) is _LONGER:  # a number that long
                raise reader.too_long("a number", reader.place(reader.i))
        long = False
        while closers:  # after a value: the delimiters of what it ends
            close = closers[-1]
            if reader.expect("," + close, "Expecting ',' delimiter") == ",":
                if close == "}":
                    skip_member_name(reader)
                break
            closers.pop()
        if not closers:
            return


def skip_member_name(reader):
    """Move past a skipped object's member name and its colon."""
    if reader.space() != '"':
        raise reader.fail("Expecting property name enclosed in double quotes", reader.i)
    if reader.attempt(False, reader.CHUNK) is _LONGER:
        skip_long_string(reader)
    reader.expect(":", "Expecting ':' delimiter")


def skip_long_string(reader):
    """Move past the string at the reader's cursor, however long: its text is matched a
    buffer at a time; what json refuses in it is reported as json reports it."""
    unterminated = reader.fail("Unterminated string starting at", reader.i)
    reader.i += 1
    while True:
        buf, run = reader.buf, reader.i  # ``run``: between two characters (or escapes)
        end = _STRING_BODY.match(buf, run).end()
        if end < len(buf) and buf[end] == '"':
            reader.i = end + 1
            return
        reader.i = end
        if len(buf) - end < 6 and not reader.eof:  # the buffer ends in it (maybe in an escape)
            if end - 6 >= run and buf[end - 6 : end - 4] == "\\u":
                k = end - 6  # a \uXXXX escape just before: json refuses one that ends the
                while k > run and buf[k - 1] == "\\":  # file, so it is read again with
                    k -= 1  # what follows (when its backslash is not one escaped)
                if (end - 6 - k) % 2 == 0:
                    reader.i = end - 6
            reader.more()
            continue
        # a control character or a bad escape at ``end``, or the end of the file: json's own
        # message for it (an escape that ends the file is one, where it starts)
        try:
            reader.i = json.decoder.scanstring(buf, run)[1]
            return
        except json.JSONDecodeError as exc:
            if exc.msg.startswith("Unterminated"):
                raise unterminated from None
            raise reader.fail(exc.msg, exc.pos) from None


def read_long(reader, warn, what):
    """The value at the reader's cursor when it is longer than a window: its end found by
    :func:`skip_long`, its text kept meanwhile (``JsonDocumentReader.feed``; at most
    ``limit`` characters, ``more``), then decoded at once."""
    reader.keeping = (what, reader.place(reader.i))
    reader.keep, reader.kept, reader.kept_size = reader.i, [], 0
    try:
        skip_long(reader, False)
        text = "".join(reader.kept) + reader.buf[reader.keep : reader.i]
    finally:
        reader.keep = reader.kept = None
    if len(text) > reader.limit:
        raise reader.too_long(*reader.keeping)
    reader.pending.clear()
    try:
        value = reader.decode_value(text)[0]
    except (ValueError, RecursionError) as exc:
        raise json_error(exc, "") from None
    if warn:
        for name in reader.pending:
            reader.st.warn("source", f"non-finite number {name} read as null")
    return value


def whole_document(reader, ch):
    """None, for a document that is not the object (or array) the spec streams, to be
    parsed whole, when it is at most ``limit`` characters; checked first (skipped), and
    refused when it is longer."""
    if not ch:
        reader.fh.close()
        raise MappingError("source is empty")
    start = reader.base + reader.i
    reader.skip(False)
    size = reader.base + reader.i - start
    reader.end()
    if size > reader.limit:
        wanted = "an array" if reader.key is None else f"an object with the array {reader.key!r}"
        raise MappingError(
            f"the document is {'an array' if ch == '[' else 'not an object'} of more than "
            f"{reader.limit} characters, where this adapter reads {wanted} one element at a "
            "time; hint: check the source is the spec's format, or raise source.max_line_bytes "
            "in the spec and rebuild"
        )
    return None
