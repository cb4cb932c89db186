"""Event streams: merged elements, carried values, counters and totals (issue 27).

Only an entry file whose spec has `merge` on a loop, or a signal with `counter: cumulative` or
`total: true`, imports these units, so they are a part of the runtime package of their own
that other adapters never compile (D72). The loop's `merge` holds in memory only its open
groups (the first element and what each merged field has gathered) and the elements held back
behind them, bounded by ``MERGE_HELD_LINES`` and ``MERGE_HELD_BYTES``.

"""

import math

from .mapping_rt import json_type
from .records_rt import _emit_signal


class SignalCounters:
    """Per trajectory and signal name: a cumulative counter's last value, a total's sum so
    far (and unit), in the order the totals were first counted."""

    __slots__ = ("last", "sums")

    def __init__(self):
        self.last, self.sums = {}, {}


def signal_counters(st):
    """The counters of this mapping (made on first use)."""
    counters = st.__dict__.get("signal_counters")
    if counters is None:
        counters = st.signal_counters = SignalCounters()
    return counters


def counted_value(st, tid, name, value, where, cumulative):
    """A counter signal's value for this event: the value itself, or for a ``cumulative`` one
    its increase since the signal's last value in trajectory ``tid`` (None when it did not
    grow; after a decrease, a reset, the value itself and a warning). None for a null value;
    a value that is not a number is skipped with a warning at ``where``."""
    if value is None:
        return None
    if value.__class__ not in (int, float) or not math.isfinite(value):
        what = json_type(value)
        st.warn(where, f"a counter is a number, got {what}; skipped")
        return None
    if not cumulative:
        return value
    last = signal_counters(st).last
    before = last.get((tid, name))
    last[(tid, name)] = value
    if before is None:
        return value or None
    if value < before:
        st.warn(where, f"the counter went down from {before} to {value}: a reset; counted from 0")
        return value or None
    return value - before or None


def count_total(st, tid, name, value, where, cumulative, unit=None):
    """Add an event's value (a ``cumulative`` one's increase) to the total ``name`` of trajectory
    ``tid``, written by :func:`emit_totals` at the end of the source."""
    value = counted_value(st, tid, name, value, where, cumulative)
    if value is None:
        return
    sums = signal_counters(st).sums
    total = sums.get((tid, name))
    if total is None:
        sums[(tid, name)] = [value, unit]
    else:
        total[0] += value


def emit_totals(st):
    """Each trajectory's totals (``total: true``), as signals of the trajectory, in the order
    they were first counted: after every event of the source, before ``complete``."""
    for (tid, name), (value, unit) in signal_counters(st).sums.items():
        _emit_signal(st, st.child_id(tid, name), tid, None, name, value, unit)


def carried(carry, /, **values):
    """``$carry`` after an element: ``carry`` with each name's value that is not null in
    ``values`` (a new object when one is: a record built before may hold the old one)."""
    new = None
    for name, value in values.items():
        if value is not None:
            if new is None:
                new = dict(carry)
            new[name] = value
    return carry if new is None else new


def MergedElements(st, key_of, scope, where, fields, most=1, runs=False):
    """A loop's merged elements: :class:`merge.MergedElements`, imported on the first call (17 M
    instructions to compile, D104: only specs that merge elements pay it)."""
    from .merge import MergedElements as merged

    return merged(st, key_of, scope, where, fields, most, runs)
