"""iso8601() with what only it needs (``datetime``, 5 M instructions to import)."""

from datetime import datetime
from datetime import timedelta
from datetime import timezone

from .jmespath_errors import ExpressionValueError, jp_type_error


#: The Unix epoch as a naive datetime: moments below are naive UTC, which prints fastest.
_JP_EPOCH = datetime(1970, 1, 1)


_JP_EPOCH_UNITS = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}


def iso8601(value, unit="s"):
    """An RFC 3339 UTC timestamp from epoch numbers or ISO 8601 strings; else null."""
    if value.__class__ is float and unit == "s":  # the usual case first: epoch seconds
        try:
            return jp_epoch_text(round(value * 1_000_000))
        except (ValueError, OverflowError):
            return None
    per_second = jp_per_second("iso8601", unit)
    try:
        if value.__class__ is float:
            # timedelta(microseconds=x) rounds x half to even, as round() does
            return jp_epoch_text(round(value * 1_000_000 / per_second))
        if isinstance(value, int) and not isinstance(value, bool):
            seconds, rest = divmod(value, per_second)
            return jp_epoch_text(seconds * 1_000_000 + rest * 1_000_000 // per_second)
        if isinstance(value, float):
            moment = _JP_EPOCH + timedelta(microseconds=value * 1_000_000 / per_second)
        elif isinstance(value, str):
            moment = jp_utc(value)
        else:
            return None
    except (ValueError, OverflowError):
        return None
    # a naive datetime prints YYYY-MM-DDTHH:MM:SS, plus .ffffff when there are microseconds
    return moment.isoformat() + "Z"


def jp_per_second(name, unit):
    """How many of ``unit`` (an epoch unit of ``name()``: s, ms, us or ns) make a second."""
    if not isinstance(unit, str):
        raise jp_type_error(f"{name}() unit", unit, "a string")
    per_second = _JP_EPOCH_UNITS.get(unit)
    if per_second is None:
        raise ExpressionValueError(f"{name}() unit must be 's', 'ms', 'us' or 'ns', got {unit!r}")
    return per_second


def jp_utc(text):
    """The naive UTC datetime of ISO 8601 ``text`` (without an offset, the time is taken as
    UTC); ValueError or OverflowError when there is none."""
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is not None:
        moment = moment.astimezone(timezone.utc).replace(tzinfo=None)
    return moment


def jp_epoch_text(us):
    """``(_JP_EPOCH + timedelta(microseconds=us)).isoformat() + "Z"``, for integer ``us``,
    without building either object: the date's text is made once per day (datetime's own,
    in ``_JP_DAYS``) and the time of day from a table of two-digit numbers. ``datetime``
    took a tenth of a JSON Lines trace's instructions. Out of range: OverflowError, as
    ``datetime`` raises it."""
    day, us = divmod(us, 86_400_000_000)
    date = _JP_DAYS.get(day)
    if date is None:
        if len(_JP_DAYS) >= 4096:  # a trace spread over many days: keep the cache small
            _JP_DAYS.clear()
        date = _JP_DAYS[day] = (_JP_EPOCH + timedelta(days=day)).date().isoformat()
    seconds, us = divmod(us, 1_000_000)
    minutes, seconds = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    two = _JP_TWO_DIGITS
    if us:
        return f"{date}T{two[hours]}:{two[minutes]}:{two[seconds]}.{us:06d}Z"
    return f"{date}T{two[hours]}:{two[minutes]}:{two[seconds]}Z"


#: Date texts of the days jp_epoch_text has seen, by day number since the epoch.
_JP_DAYS = {}


_JP_TWO_DIGITS = tuple(f"{n:02d}" for n in range(60))
