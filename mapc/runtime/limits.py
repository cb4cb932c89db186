"""What a stream runs only when its output reaches a host's limits."""

import json

from .mapping_rt import MappingError


def output_limit(data, written, room, limits):
    """``(head, error)`` for the lines ``data`` (after ``written`` records) when they may break
    a host's ``limits`` (:func:`write_canonical`; ``room``: what is left after ``data``): the
    whole lines ``head`` that keep within them, and the MappingError for the line after them,
    None when every line does (a record longer than the host reads, or the output passing
    what its reader takes)."""
    max_output, max_record, host = limits
    room += len(data)  # what was left before ``data``
    end = count = 0
    while end < len(data):
        stop = data.index(b"\n", end)
        if stop - end > max_record:
            return data[:end], MappingError(
                f"record {written + count + 1}{record_label(data[end:stop])} is {stop - end} "
                f"bytes; {host} reads at most {max_record} bytes a record; hint: leave large "
                "source values (raw, content, input) out of the spec's records"
            )
        if stop + 1 > room:
            return data[:end], MappingError(
                f"the output would pass {host}'s limit of {max_output} bytes: stopped after "
                f"{written + count} records; hint: emit less per event (no raw, fewer fields "
                "and signals) or split the trace"
            )
        end, count = stop + 1, count + 1
    return data, None


def record_label(line):
    """`` (event 'evt@L2')``: the type and id of the record on the canonical line ``line``."""
    try:
        record = json.loads(line)
        return f" ({record['record_type']} {record.get('id', '')!r})"
    except (ValueError, KeyError, TypeError, RecursionError):
        return ""
