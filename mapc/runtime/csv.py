"""Reading CSV sources: their rows as records, and the values a probe checks."""

import json
import re

from .mapping_rt import MappingError, open_source


_CSV_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_CSV_BOOLEANS = {"true": True, "false": False, "1": True, "0": False}


def csv_number(cell):
    """A number cell: an integer when it is written as one, else a finite float."""
    if not _CSV_NUMBER.fullmatch(cell):
        raise ValueError
    if cell.lstrip("+-").isdigit():
        return int(cell)
    return float(cell)


def csv_integer(cell):
    """An integer cell (``3`` or ``3.0``, as pandas writes integers beside empty cells)."""
    value = csv_number(cell)
    if isinstance(value, float):
        if not value.is_integer():
            raise ValueError
        return int(value)
    return value


def csv_boolean(cell):
    """A boolean cell: true/false in any case (Python's True/False) or 1/0."""
    return _CSV_BOOLEANS[cell.lower()]


def csv_json(cell):
    """A cell that holds JSON text (an object, a list, ...)."""
    return json.loads(cell)


CSV_TYPE_TEXT = {"number": "a number", "integer": "an integer", "boolean": "true or false",
                 "json": "JSON"}


CSV_CONVERTERS = {
    "number": csv_number,
    "integer": csv_integer,
    "boolean": csv_boolean,
    "json": csv_json,
}


def csv_header(row, columns, where):
    """``(names, typed)`` from a header row: ``typed`` lists ``(index, name, type)`` of
    the columns that ``columns`` (name -> type) declares; a bad header is a MappingError."""
    seen = set()
    for i, name in enumerate(row):
        if not name.strip():
            raise MappingError(f"{where}the header's column {i + 1} has no name")
        if name in seen:
            raise MappingError(f"{where}the header names column {name!r} twice")
        seen.add(name)
    for name in columns:
        if name not in seen:
            raise MappingError(
                f"{where}source.columns names {name!r}, which is not in the header"
            )
    typed = [(i, name, columns[name]) for i, name in enumerate(row) if name in columns]
    return list(row), typed


def csv_record(names, typed, row, where):
    """One data row as an object (header names as keys); a typed column's empty cell is
    null. Raises ValueError with a one-line message for a ragged row or a bad cell."""
    if len(row) != len(names):
        raise ValueError(f"{where}{len(row)} fields, the header has {len(names)}")
    rec = dict(zip(names, row))
    for i, name, kind in typed:
        cell = row[i].strip()
        if not cell:
            rec[name] = None
            continue
        try:
            rec[name] = CSV_CONVERTERS[kind](cell)
        except (ValueError, KeyError, RecursionError):
            shown = cell if len(cell) <= 40 else cell[:37] + "..."
            what = CSV_TYPE_TEXT[kind]
            raise ValueError(f"{where}column {name}: {shown!r} is not {what}") from None
    return rec


def csv_rows(src, st, columns, delimiter, invalid="error"):
    """Yield ``(line, row, location)`` per data row of a CSV source with a header row,
    streaming. Each physical line, and each row (quoted cells may span lines), is bounded
    by ``max_line_bytes``; ``line`` is where the row starts."""
    import csv  # here, not at module top: adapters of other containers never load it

    limit = src.max_line_bytes
    pos = [0, 0, 0, 0]  # lines read, bytes read, end-of-line bytes of the last line, row start
    src.check_size()
    fh, gz = open_source(src.path)
    readline = src.counted(fh.readline) if gz else fh.readline

    def physical_lines():
        while True:
            raw = readline(limit + 1)
            if not raw:
                return
            pos[0] += 1
            if len(raw) > limit and not raw.endswith(b"\n"):
                raise MappingError(f"line {pos[0]}: longer than {limit} bytes")
            pos[1] += len(raw)
            pos[2] = len(raw) - len(raw.rstrip(b"\r\n"))
            if pos[1] - pos[3] > limit:
                raise MappingError(f"line {pos[0]}: a row longer than {limit} bytes")
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise MappingError(f"line {pos[0]}: invalid UTF-8") from None
            yield text[1:] if pos[0] == 1 and text.startswith("\ufeff") else text

    csv.field_size_limit(max(csv.field_size_limit(), limit))
    reader = csv.reader(physical_lines(), delimiter=delimiter, strict=True)
    names = None
    rows = 0
    with fh:
        while True:
            line, pos[3] = pos[0] + 1, pos[1]
            try:
                row = next(reader, None)
            except csv.Error as exc:
                raise MappingError(f"line {line}: not valid CSV: {exc}") from None
            if row is None:
                break
            if not row:
                continue  # a blank line
            if names is None:
                names, typed = csv_header(row, columns, f"line {line}: ")
                continue
            try:
                rec = csv_record(names, typed, row, f"line {line}: ")
            except ValueError as exc:
                if invalid == "skip":
                    st.warn("source", f"{exc}; skipped")
                    continue
                raise MappingError(str(exc)) from None
            rows += 1
            if gz:
                yield line, rec, {"path": src.rel, "line": line}
            else:
                length = pos[1] - pos[3] - pos[2]
                yield line, rec, {"path": src.rel, "line": line, "byte_offset": pos[3],
                                  "byte_length": length}
    if names is None:
        raise MappingError("source is empty")
    if not rows:
        raise MappingError("source has a header row and no data rows")


def csv_probe_values(text, truncated, max_rows, csv_format):
    """The first rows of a CSV prefix as objects, or a reason string when they are not
    CSV the adapter reads (a row cut off by the end of the prefix is left out)."""
    import csv

    columns, delimiter = csv_format
    lines = text.splitlines(keepends=True)
    if truncated and lines and not lines[-1].endswith(("\n", "\r")):
        lines.pop()
    reader = csv.reader(lines, delimiter=delimiter, strict=True)
    names, values = None, []
    try:
        for row in reader:
            if not row:
                continue
            where = f"line {reader.line_num}: "
            if names is None:
                names, typed = csv_header(row, columns, where)
            elif len(values) < max_rows:
                values.append(csv_record(names, typed, row, where))
            else:
                break
    except csv.Error as exc:
        if truncated:  # a quoted cell cut by the end of the prefix
            return values or "no complete CSV row in the probed prefix"
        return f"line {reader.line_num}: not valid CSV: {exc}"
    except (MappingError, ValueError) as exc:
        return str(exc)
    return values or "no complete CSV row in the probed prefix"
