"""The reader of a JSON document streamed one element at a time (never JSON Lines).

Imported on the first such document.
"""

import json

from .mapping_rt import MappingError, _LONGER, StreamedArray, open_source, json_error


_JSON_SPACE = json.decoder.WHITESPACE  # [ \t\n\r]*, compiled when json is imported


class JsonDocumentReader:
    """Reads a JSON document whose top level is an object, member by member, and one of its
    arrays element by element, with bounded memory.

    A value the mapping reads (an element of the array, a member read before it) is decoded
    by the standard library's ``raw_decode`` straight from the buffer, and may be at most
    ``source.max_line_bytes`` characters of JSON text. A value it does not read is checked as
    ``json.loads`` checks it and skipped (:meth:`skip`), never held whole. Memory is a
    window or two (``CHUNK``) plus the value being read; errors carry the line and column
    ``json.loads`` would report for the whole document.
    """

    CHUNK = 1 << 20
    opened = 0  # documents read this way (tests check the streamed path was taken)
    #: a value must end this far before the buffer's end (unless the file ends): a number
    #: cut by the buffer's end would otherwise decode as a shorter one
    MARGIN = 64
    #: arrays and objects a skipped value may nest (json.loads stops near this depth too)
    MAX_DEPTH = 1000

    def __init__(self, src, st):
        self.src = src
        self.limit = src.max_line_bytes  # characters of one value read at once
        self.st = st
        self.pending = []  # non-finite numbers of the value being decoded
        self.array_at = None  # where the streamed array is: "here" or (occurrence, key)
        self.key = None  # the streamed array's member (None: the document is the array)
        self.rest = None  # reads the members after the array, when it streams in one pass
        self.decode_value = json.JSONDecoder(parse_constant=self.constant).raw_decode
        self.keep = None  # buffer index where a value longer than a window starts (read_long)
        self.open()

    def open(self):
        import codecs

        JsonDocumentReader.opened += 1
        self.fh, gz = open_source(self.src.path)
        self.read = self.src.counted(self.fh.read) if gz else self.fh.read
        self.utf8 = codecs.getincrementaldecoder("utf-8")()
        head = self.read(3)
        self.fed = 0  # bytes given to the UTF-8 decoder (a BOM is not)
        self.buf = ""
        self.i = 0
        self.eof = False
        self.base = 0  # absolute index of buf[0] in the document's text
        self.lines_before = 0  # newlines before buf[0]
        self.last_newline = -1  # absolute index of the last newline before buf[0]
        if head != b"\xef\xbb\xbf":
            self.feed(head)

    def constant(self, name):
        self.pending.append(name)
        return None

    def feed(self, data):
        try:
            text = self.utf8.decode(data, final=not data)
        except UnicodeDecodeError as exc:
            start = self.fed - len(self.utf8.getstate()[0]) + exc.start
            raise MappingError(f"invalid UTF-8 at byte {max(start, 0)}") from None
        self.fed += len(data)
        i = self.i
        if i:
            k = self.buf.rfind("\n", 0, i)
            if k >= 0:
                self.last_newline = self.base + k
                self.lines_before += self.buf.count("\n", 0, k + 1)
            if self.keep is not None:  # the text of the value being kept leaves the buffer
                self.kept.append(self.buf[self.keep : i])
                self.kept_size += i - self.keep
                self.keep = 0
            self.base += i
            self.buf = self.buf[i:] + text
            self.i = 0
        else:
            self.buf += text
        if not data:
            self.eof = True

    def more(self):
        """Read the next chunk (at least as much as is buffered: a large value is read in
        O(size) however many times it is retried); False at the end of the file."""
        if self.eof:
            return False
        if self.keep is not None and self.kept_size + self.i - self.keep > self.limit:
            raise self.too_long(*self.keeping)  # the value being kept has passed the bound
        self.feed(self.read(max(self.CHUNK, len(self.buf) - self.i)))
        return True

    def place(self, pos):
        """``(line, column)`` of buffer index ``pos``, as json.loads counts them."""
        buf = self.buf
        k = buf.rfind("\n", 0, pos)
        column = pos - k if k >= 0 else self.base + pos - self.last_newline
        return self.lines_before + buf.count("\n", 0, pos) + 1, column

    def fail(self, message, pos):
        """A MappingError for ``message`` at buffer index ``pos``, placed as json.loads does."""
        exc = json.JSONDecodeError(message, "", 0)
        exc.lineno, exc.colno = self.place(pos)
        return json_error(exc, "")

    def too_long(self, what, at):
        """The MappingError for a value the mapping reads that is longer than ``limit``."""
        if what.__class__ is int:
            what = f"element {what} of {'the document' if self.key is None else repr(self.key)}"
        return MappingError(
            f"line {at[0]} column {at[1]}: {what} is longer than {self.limit} characters; a "
            "streamed JSON document's elements, and the members the mapping reads, are bounded "
            "by source.max_line_bytes; hint: raise source.max_line_bytes in the spec and rebuild"
        )

    def space(self):
        """Skip whitespace; the next character, or "" at the end of the file."""
        while True:
            i = _JSON_SPACE.match(self.buf, self.i).end()
            self.i = i
            if i < len(self.buf):
                return self.buf[i]
            if not self.more():
                return ""

    def attempt(self, warn, limit):
        """Decode the value at the cursor and move past it, reading on while its text may
        end within ``limit`` characters; ``_LONGER``, the cursor left on it, when it does not.
        ``self.size``: the decoded value's length."""
        self.space()
        while True:
            self.pending.clear()
            buf, i = self.buf, self.i
            if len(buf) - i < self.CHUNK >> 4 and not self.eof:
                self.more()  # read on first: a value cut short raises an error whose place
                continue  # json finds by counting the buffer's lines (a 1 MiB scan each time)
            try:
                value, end = self.decode_value(buf, i)
            except json.JSONDecodeError as exc:
                if not self.eof and (
                    exc.pos >= len(buf) - self.MARGIN or exc.msg.startswith("Unterminated")
                ):  # the value may go on in the next chunk
                    if len(buf) - i > limit:
                        return _LONGER
                    self.more()
                    continue
                raise self.fail(exc.msg, exc.pos) from None
            except (ValueError, RecursionError) as exc:
                raise json_error(exc, "") from None
            if end > len(buf) - self.MARGIN and not self.eof:
                if len(buf) - i > limit:
                    return _LONGER
                self.more()
                continue
            self.i = end
            self.size = end - i
            if warn:
                for name in self.pending:
                    self.st.warn("source", f"non-finite number {name} read as null")
            return value

    def value(self, warn=True, what="a value"):
        """Decode the value at the cursor and move past it (at most ``limit`` characters:
        ``what`` names it in the error, an int the streamed array's element)."""
        from .document_long import read_long

        value = self.attempt(warn, self.CHUNK)
        if value is _LONGER:
            return read_long(self, warn, what)
        if self.size > self.limit:
            raise self.too_long(what, self.place(self.i - self.size))
        return value

    def skip(self, warn=True):
        """Move past the value at the cursor without keeping it, checked as json.loads checks
        it (the same errors; non-finite numbers warned when ``warn``): decoded and dropped
        when it fits in a window (``CHUNK``), else :func:`skip_long`."""
        from .document_long import skip_long

        if self.attempt(warn, self.CHUNK) is _LONGER:
            skip_long(self, warn)

    def expect(self, chars, message):
        ch = self.space()
        if not ch or ch not in chars:
            raise self.fail(message, self.i)
        self.i += 1
        return ch

    def members(self, after_comma=False):
        """Yield each member's key, the cursor on its value, up to the ``}`` that ends the
        object (the cursor after its ``{``, or after a ``,`` with ``after_comma``)."""
        if not after_comma and self.space() == "}":
            self.i += 1
            return
        while True:
            if self.space() != '"':
                raise self.fail("Expecting property name enclosed in double quotes", self.i)
            name = self.value(True, "a member name")
            self.expect(":", "Expecting ':' delimiter")
            yield name
            if self.expect(",}", "Expecting ',' delimiter") == "}":
                return

    def elements(self):
        """Yield the elements of the array at the cursor, then read the rest of the document."""
        if self.array_at is None:
            raise MappingError("internal error: the streamed array was read twice")
        if self.array_at != "here":
            self.reopen_at(*self.array_at)
        self.array_at = None
        self.expect("[", "Expecting value")
        if self.space() == "]":
            self.i += 1
        else:
            n = 0
            while True:
                yield self.value(True, n)
                if self.expect(",]", "Expecting ',' delimiter") == "]":
                    break
                n += 1
        if self.rest is not None:
            self.rest()

    def end(self):
        """After the top-level value: only whitespace may follow."""
        if self.space():
            raise self.fail("Extra data", self.i)
        self.fh.close()

    def top_level(self, key, needed):
        """The document's members the mapping reads (``needed``), ``key`` a
        :class:`StreamedArray` when it is an array (read later by :meth:`elements`); with
        ``key`` None, the document as a StreamedArray when it is an array. None for any other
        document (to be parsed whole: :func:`whole_document`)."""
        from .document_long import whole_document

        self.key = key
        ch = self.space()
        if ch == "[" and key is None:
            return self.stream("here", self.end)
        if ch != "{" or key is None:
            return whole_document(self, ch)
        self.i += 1
        doc = {}
        wanted = set(needed)
        occurrence = 0  # of `key` holding an array
        for name in self.members():
            if name != key:
                if name in wanted:
                    doc[name] = self.value(True, f"member {name!r}")
                else:
                    self.skip()
                continue
            if self.space() != "[":
                doc[name] = self.value(True, f"member {name!r}")
                continue
            occurrence += 1
            if wanted.issubset(doc):
                doc[key] = self.stream("here", lambda: self.rest_after(key, needed))
                return doc
            self.skip(False)
            doc[key] = StreamedArray()
        self.end()
        if occurrence and type(doc.get(key)) is StreamedArray:
            doc[key] = self.stream((occurrence, key))
        return doc

    def stream(self, at, rest=None):
        """A :class:`StreamedArray` for the array at ``at`` ("here": the cursor; else
        ``(occurrence, key)``); ``rest`` reads what follows it, in one pass."""
        array = StreamedArray()
        array.reader = self
        self.array_at = at
        self.rest = rest
        return array

    def reopen_at(self, occurrence, key):
        """Second pass: back to the ``occurrence``-th array member named ``key``."""
        self.fh.close()
        self.open()
        self.expect("{", "Expecting value")
        for name in self.members():
            if name == key and self.space() == "[":
                occurrence -= 1
                if not occurrence:
                    return
            self.skip(False)

    def rest_after(self, key, needed):
        """The members after a streamed array: checked, and refused when they repeat one the
        mapping already read (read whole, the later member would have counted)."""
        if self.expect(",}", "Expecting ',' delimiter") == ",":
            for name in self.members(after_comma=True):
                if name == key or name in needed:
                    raise MappingError(
                        f"the document repeats its member {name!r} after the array "
                        f"{key!r}; this adapter reads {key!r} one element at a time and "
                        "cannot tell which one counts"
                    )
                self.skip()
        self.end()
