"""Runtime units for compiled JMESPath expressions.

Every function here is copied verbatim into generated adapters that use it, so
each unit must stay standard-library only and self-explanatory.  Semantics
follow the reference ``jmespath`` package (1.x) exactly, with one difference:
where the reference implementation crashes with a bare Python exception (for
example comparing a string with a number using ``<``), these helpers raise
:class:`ExpressionTypeError` / :class:`ExpressionValueError` instead.

Naming: ``_jp_<function>`` implements the JMESPath (or mapc) function of that
name; other ``_jp_`` units are shared building blocks.
"""

import json
import math
import posixpath
import re
from datetime import datetime, timedelta, timezone


class ExpressionTypeError(TypeError):
    """A value had the wrong type for a function or operator (JMESPath invalid-type)."""


class ExpressionValueError(ValueError):
    """A value was of the right type but not acceptable (JMESPath invalid-value)."""


# ---------------------------------------------------------------------------
# Building blocks


def _jp_typename(value):
    """The JMESPath type name of ``value`` (Python type name for non-JSON values)."""
    if isinstance(value, str):
        return "string"
    if value is True or value is False:
        return "boolean"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, (int, float)):
        return "number"
    if value is None:
        return "null"
    return type(value).__name__


def _jp_type_error(where, value, expected):
    """Build the error raised when ``value`` is not of the ``expected`` type."""
    return ExpressionTypeError(f"{where} must be {expected}, got {_jp_typename(value)}")


def _jp_is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _jp_truthy(value):
    """JMESPath truthiness: false, null, "", [] and {} are false; 0 is true."""
    if value is None or value is False:
        return False
    if isinstance(value, (str, list, dict)):
        return len(value) > 0
    return True


def _jp_or(left, right):
    """``left || right`` for operands that are already evaluated."""
    return left if _jp_truthy(left) else right


def _jp_and(left, right):
    """``left && right`` for operands that are already evaluated."""
    return right if _jp_truthy(left) else left


def _jp_eq(left, right):
    """JMESPath ``==``: Python equality, except that a boolean only equals itself."""
    if left.__class__ is bool or right.__class__ is bool:
        return left is right
    return left == right


def _jp_comparable(left, right, operator):
    """Whether ``left operator right`` is defined: both numbers or both strings.

    Other operand types make the comparison null; mixing a string with a number
    is an error (the reference implementation crashes on it).
    """
    if isinstance(left, str):
        if isinstance(right, str):
            return True
        if _jp_is_number(right):
            raise ExpressionTypeError(f"cannot compare string {operator} number")
        return False
    if _jp_is_number(left):
        if _jp_is_number(right):
            return True
        if isinstance(right, str):
            raise ExpressionTypeError(f"cannot compare number {operator} string")
    return False


def _jp_lt(left, right):
    return left < right if _jp_comparable(left, right, "<") else None


def _jp_le(left, right):
    return left <= right if _jp_comparable(left, right, "<=") else None


def _jp_gt(left, right):
    return left > right if _jp_comparable(left, right, ">") else None


def _jp_ge(left, right):
    return left >= right if _jp_comparable(left, right, ">=") else None


def _jp_path(value, keys):
    """Follow ``keys`` (strings: object fields, ints: array indexes); null if absent."""
    for key in keys:
        if key.__class__ is str:
            if not isinstance(value, dict):
                return None
            value = value.get(key)
        else:
            if not isinstance(value, list) or not -len(value) <= key < len(value):
                return None
            value = value[key]
    return value


def _jp_pluck(value, key):
    """``value[*].key``: the non-null ``key`` fields of the objects in array ``value``; null
    if ``value`` is not an array."""
    if not isinstance(value, list):
        return None
    out = []
    for element in value:
        if isinstance(element, dict):
            field = element.get(key)
            if field is not None:
                out.append(field)
    return out


def _jp_flatten(value):
    """Flatten one level of nesting (``expr[]``); null if ``value`` is not an array."""
    if not isinstance(value, list):
        return None
    merged = []
    for element in value:
        if isinstance(element, list):
            merged.extend(element)
        else:
            merged.append(element)
    return merged


def _jp_check_array(function, value):
    if not isinstance(value, list):
        raise _jp_type_error(f"{function}() argument", value, "an array")


def _jp_check_numbers(function, value):
    if not isinstance(value, list):
        raise _jp_type_error(f"{function}() argument", value, "an array of numbers")
    for element in value:
        if not _jp_is_number(element):
            raise _jp_type_error(f"{function}() array element", element, "a number")


def _jp_check_sortable(function, value):
    """An array of numbers or an array of strings (the first element decides)."""
    if not isinstance(value, list):
        raise _jp_type_error(f"{function}() argument", value, "an array of numbers or of strings")
    if value:
        if isinstance(value[0], str):
            for element in value:
                if not isinstance(element, str):
                    raise _jp_type_error(f"{function}() array element", element, "a string")
        elif _jp_is_number(value[0]):
            for element in value:
                if not _jp_is_number(element):
                    raise _jp_type_error(f"{function}() array element", element, "a number")
        else:
            raise _jp_type_error(f"{function}() array element", value[0], "a number or a string")


def _jp_sort_key(function, key):
    """Wrap an ``&expr`` key so that every key is a number or a string, never both."""
    kinds = []

    def checked(item):
        result = key(item)
        if isinstance(result, str):
            kind = "string"
        elif _jp_is_number(result):
            kind = "number"
        else:
            raise _jp_type_error(f"{function}() key", result, "a number or a string")
        if not kinds:
            kinds.append(kind)
        elif kinds[0] != kind:
            raise _jp_type_error(f"{function}() key", result, f"a {kinds[0]} like the others")
        return result

    return checked


# ---------------------------------------------------------------------------
# JMESPath built-in functions


def _jp_abs(value):
    if not _jp_is_number(value):
        raise _jp_type_error("abs() argument", value, "a number")
    return abs(value)


def _jp_avg(value):
    _jp_check_numbers("avg", value)
    if not value:
        return None
    return sum(value) / len(value)


def _jp_ceil(value):
    if not _jp_is_number(value):
        raise _jp_type_error("ceil() argument", value, "a number")
    try:
        return math.ceil(value)
    except (OverflowError, ValueError):
        raise ExpressionValueError(f"ceil() cannot round {value!r}") from None


def _jp_contains(subject, search):
    if isinstance(subject, str):
        if not isinstance(search, str):
            raise _jp_type_error("contains() search value for a string", search, "a string")
        return search in subject
    if isinstance(subject, list):
        return search in subject
    raise _jp_type_error("contains() argument 1", subject, "an array or a string")


def _jp_ends_with(subject, suffix):
    if not isinstance(subject, str):
        raise _jp_type_error("ends_with() argument 1", subject, "a string")
    if not isinstance(suffix, str):
        raise _jp_type_error("ends_with() argument 2", suffix, "a string")
    return subject.endswith(suffix)


def _jp_floor(value):
    if not _jp_is_number(value):
        raise _jp_type_error("floor() argument", value, "a number")
    try:
        return math.floor(value)
    except (OverflowError, ValueError):
        raise ExpressionValueError(f"floor() cannot round {value!r}") from None


def _jp_join(glue, value):
    if not isinstance(glue, str):
        raise _jp_type_error("join() argument 1", glue, "a string")
    if not isinstance(value, list):
        raise _jp_type_error("join() argument 2", value, "an array of strings")
    for element in value:
        if not isinstance(element, str):
            raise _jp_type_error("join() array element", element, "a string")
    return glue.join(value)


def _jp_keys(value):
    if not isinstance(value, dict):
        raise _jp_type_error("keys() argument", value, "an object")
    return list(value)


def _jp_length(value):
    if not isinstance(value, (str, list, dict)):
        raise _jp_type_error("length() argument", value, "a string, an array or an object")
    return len(value)


def _jp_map(function, value):
    _jp_check_array("map", value)
    return [function(element) for element in value]


def _jp_max(value):
    _jp_check_sortable("max", value)
    return max(value) if value else None


def _jp_max_by(value, key):
    _jp_check_array("max_by", value)
    return max(value, key=_jp_sort_key("max_by", key)) if value else None


def _jp_merge(*objects):
    merged = {}
    for position, value in enumerate(objects, 1):
        if not isinstance(value, dict):
            raise _jp_type_error(f"merge() argument {position}", value, "an object")
        merged.update(value)
    return merged


def _jp_min(value):
    _jp_check_sortable("min", value)
    return min(value) if value else None


def _jp_min_by(value, key):
    _jp_check_array("min_by", value)
    return min(value, key=_jp_sort_key("min_by", key)) if value else None


def _jp_not_null(*values):
    for value in values:
        if value is not None:
            return value
    return None


def _jp_reverse(value):
    if isinstance(value, str):
        return value[::-1]
    if isinstance(value, list):
        return value[::-1]
    raise _jp_type_error("reverse() argument", value, "a string or an array")


def _jp_sort(value):
    _jp_check_sortable("sort", value)
    return sorted(value)


def _jp_sort_by(value, key):
    _jp_check_array("sort_by", value)
    if not value:
        return value
    return sorted(value, key=_jp_sort_key("sort_by", key))


def _jp_starts_with(subject, prefix):
    if not isinstance(subject, str):
        raise _jp_type_error("starts_with() argument 1", subject, "a string")
    if not isinstance(prefix, str):
        raise _jp_type_error("starts_with() argument 2", prefix, "a string")
    return subject.startswith(prefix)


def _jp_sum(value):
    _jp_check_numbers("sum", value)
    return sum(value)


def _jp_to_array(value):
    return value if isinstance(value, list) else [value]


def _jp_to_number(value):
    if isinstance(value, (list, dict, bool)) or value is None:
        return None
    if isinstance(value, (int, float)):
        return value
    try:
        return int(value)
    except ValueError:
        try:
            return float(value)
        except ValueError:
            return None


def _jp_to_string(value):
    if isinstance(value, str):
        return value
    if (
        type(value) is int
    ):  # ids are often numbers: the digits json.dumps writes, without an encoder
        return str(value)
    return json.dumps(value, separators=(",", ":"), default=str)


def _jp_type(value):
    name = _jp_typename(value)
    return name if name in ("string", "boolean", "array", "object", "number", "null") else None


def _jp_values(value):
    if not isinstance(value, dict):
        raise _jp_type_error("values() argument", value, "an object")
    return list(value.values())


# ---------------------------------------------------------------------------
# mapc functions


def _jp_stable_id(prefix, *parts):
    """``prefix-<16 hex digits>``: sha256 of the canonical JSON of ``parts``."""
    if not isinstance(prefix, str):
        raise _jp_type_error("stable_id() prefix", prefix, "a string")
    import hashlib  # here, not at module top: loading OpenSSL costs every adapter start-up

    canonical = json.dumps(list(parts), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return prefix + "-" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def _jp_parse_json_number(text):
    number = float(text)
    if math.isinf(number):
        raise ValueError("number out of range")
    return number


def _jp_parse_json_constant(text):
    raise ValueError(f"{text} is not valid JSON")


def _jp_parse_json(value):
    """Parse a JSON string (null if invalid); other values are returned unchanged."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(
            value,
            parse_float=_jp_parse_json_number,
            parse_constant=_jp_parse_json_constant,
        )
    except ValueError:
        return None


def _jp_to_json(value):
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except ValueError:
        raise ExpressionValueError("to_json() cannot encode NaN or Infinity") from None


#: The Unix epoch as a naive datetime: moments below are naive UTC, which prints fastest.
_JP_EPOCH = datetime(1970, 1, 1)

_JP_EPOCH_UNITS = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}


def _jp_iso8601(value, unit="s"):
    """An RFC 3339 UTC timestamp from epoch numbers or ISO 8601 strings; else null."""
    if value.__class__ is float and unit == "s":  # the usual case first: epoch seconds
        try:
            return _jp_epoch_text(round(value * 1_000_000))
        except (ValueError, OverflowError):
            return None
    per_second = _jp_per_second("iso8601", unit)
    try:
        if value.__class__ is float:
            # timedelta(microseconds=x) rounds x half to even, as round() does
            return _jp_epoch_text(round(value * 1_000_000 / per_second))
        if isinstance(value, int) and not isinstance(value, bool):
            seconds, rest = divmod(value, per_second)
            return _jp_epoch_text(seconds * 1_000_000 + rest * 1_000_000 // per_second)
        if isinstance(value, float):
            moment = _JP_EPOCH + timedelta(microseconds=value * 1_000_000 / per_second)
        elif isinstance(value, str):
            moment = _jp_utc(value)
        else:
            return None
    except (ValueError, OverflowError):
        return None
    # a naive datetime prints YYYY-MM-DDTHH:MM:SS, plus .ffffff when there are microseconds
    return moment.isoformat() + "Z"


def _jp_per_second(name, unit):
    """How many of ``unit`` (an epoch unit of ``name()``: s, ms, us or ns) make a second."""
    if not isinstance(unit, str):
        raise _jp_type_error(f"{name}() unit", unit, "a string")
    per_second = _JP_EPOCH_UNITS.get(unit)
    if per_second is None:
        raise ExpressionValueError(f"{name}() unit must be 's', 'ms', 'us' or 'ns', got {unit!r}")
    return per_second


def _jp_utc(text):
    """The naive UTC datetime of ISO 8601 ``text`` (without an offset, the time is taken as
    UTC); ValueError or OverflowError when there is none."""
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is not None:
        moment = moment.astimezone(timezone.utc).replace(tzinfo=None)
    return moment


def _jp_epoch_text(us):
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


#: Date texts of the days _jp_epoch_text has seen, by day number since the epoch.
_JP_DAYS = {}
_JP_TWO_DIGITS = tuple(f"{n:02d}" for n in range(60))


def _jp_get(value, key):
    """``value[key]`` for an object and string key or an array and integer key; else null."""
    if isinstance(value, dict):
        return value.get(key) if isinstance(key, str) else None
    if isinstance(value, list) and isinstance(key, int) and not isinstance(key, bool):
        return value[key] if -len(value) <= key < len(value) else None
    return None


def _jp_items(value):
    if not isinstance(value, dict):
        raise _jp_type_error("items() argument", value, "an object")
    return [[key, item] for key, item in value.items()]


def _jp_from_items(value):
    if not isinstance(value, list):
        raise _jp_type_error("from_items() argument", value, "an array of [key, value] pairs")
    result = {}
    for pair in value:
        if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)):
            raise _jp_type_error("from_items() element", pair, "a [string, value] pair")
        result[pair[0]] = pair[1]
    return result


def _jp_split(subject, separator):
    if not isinstance(subject, str):
        raise _jp_type_error("split() argument 1", subject, "a string")
    if not isinstance(separator, str):
        raise _jp_type_error("split() argument 2", separator, "a string")
    if not separator:
        return list(subject)
    return subject.split(separator)


def _jp_replace(subject, old, new):
    if not isinstance(subject, str):
        raise _jp_type_error("replace() argument 1", subject, "a string")
    if not isinstance(old, str):
        raise _jp_type_error("replace() argument 2", old, "a string")
    if not isinstance(new, str):
        raise _jp_type_error("replace() argument 3", new, "a string")
    return subject.replace(old, new)


def _jp_lower(value):
    if not isinstance(value, str):
        raise _jp_type_error("lower() argument", value, "a string")
    return value.lower()


def _jp_upper(value):
    if not isinstance(value, str):
        raise _jp_type_error("upper() argument", value, "a string")
    return value.upper()


def _jp_trim(value):
    if not isinstance(value, str):
        raise _jp_type_error("trim() argument", value, "a string")
    return value.strip()


_JP_REGEX_CACHE = {}


def _jp_regex(pattern):
    """The compiled form of a (literal, already validated) regex pattern."""
    compiled = _JP_REGEX_CACHE.get(pattern)
    if compiled is None:
        compiled = _JP_REGEX_CACHE[pattern] = re.compile(pattern)
    return compiled


def _jp_regex_extract(subject, pattern, group=None):
    """First match: ``group`` if given, else group 1 if any, else the whole match."""
    if group is not None and (isinstance(group, bool) or not isinstance(group, (int, str))):
        raise _jp_type_error("regex_extract() group", group, "an integer or a string")
    if not isinstance(subject, str):
        return None
    compiled = _jp_regex(pattern)
    match = compiled.search(subject)
    if match is None:
        return None
    if group is None:
        group = 1 if compiled.groups else 0
    try:
        return match.group(group)
    except IndexError:
        raise ExpressionValueError(f"regex_extract() has no group {group!r}") from None


def _jp_regex_findall(subject, pattern):
    """Every match (group 1 if the pattern has groups); null if not a string."""
    if not isinstance(subject, str):
        return None
    compiled = _jp_regex(pattern)
    group = 1 if compiled.groups else 0
    return [match.group(group) for match in compiled.finditer(subject)]


def _jp_regex_test(subject, pattern):
    if not isinstance(subject, str):
        return False
    return _jp_regex(pattern).search(subject) is not None


def _jp_group_key(function, key):
    """The object key for a ``*_by`` key value: strings as-is, numbers as text."""
    if isinstance(key, str):
        return key
    if _jp_is_number(key):
        return json.dumps(key)
    if key is None:
        return None
    raise _jp_type_error(f"{function}() key", key, "a string, a number or null")


def _jp_index_by(value, key):
    _jp_check_array("index_by", value)
    result = {}
    for item in value:
        name = _jp_group_key("index_by", key(item))
        if name is not None and name not in result:
            result[name] = item
    return result


def _jp_unique_by(value, key):
    _jp_check_array("unique_by", value)
    seen = set()
    result = []
    for item in value:
        name = _jp_group_key("unique_by", key(item))
        if name not in seen:
            seen.add(name)
            result.append(item)
    return result


def _jp_merge_by(value, key):
    _jp_check_array("merge_by", value)
    merged = {}
    for item in value:
        if not isinstance(item, dict):
            raise _jp_type_error("merge_by() array element", item, "an object")
        name = _jp_group_key("merge_by", key(item))
        if name is None:
            continue
        target = merged.get(name)
        if target is None:
            merged[name] = dict(item)
        else:
            for field, field_value in item.items():
                if field_value is not None or field not in target:
                    target[field] = field_value
    return list(merged.values())


def _jp_group_by(value, key):
    _jp_check_array("group_by", value)
    groups = {}
    for item in value:
        name = _jp_group_key("group_by", key(item))
        if name is not None:
            groups.setdefault(name, []).append(item)
    return groups


def _jp_coalesce(*values):
    for value in values:
        if value is not None:
            return value
    return None


def _jp_concat(*arrays):
    result = []
    for position, value in enumerate(arrays, 1):
        if isinstance(value, list):
            result.extend(value)
        elif value is not None:
            raise _jp_type_error(f"concat() argument {position}", value, "an array or null")
    return result


def _jp_sha256(value):
    if not isinstance(value, str):
        raise _jp_type_error("sha256() argument", value, "a string")
    import hashlib

    return hashlib.sha256(value.encode("utf-8")).hexdigest()


def _jp_basename(value):
    if not isinstance(value, str):
        raise _jp_type_error("basename() argument", value, "a string")
    return posixpath.basename(value)


def _jp_dirname(value):
    if not isinstance(value, str):
        raise _jp_type_error("dirname() argument", value, "a string")
    return posixpath.dirname(value)


def _jp_numbers(name, left, right):
    """Whether ``name(left, right)`` can be computed: False when either side is null (the
    result is null: a field the trace left out), True for two numbers; anything else is an
    invalid-type error."""
    if left is None or right is None:
        return False
    if not _jp_is_number(left):
        raise _jp_type_error(f"{name}() argument 1", left, "a number")
    if not _jp_is_number(right):
        raise _jp_type_error(f"{name}() argument 2", right, "a number")
    return True


def _jp_finite(value):
    """A float result that overflowed (inf) or has no value (nan) is null: JSON has neither."""
    return value if value.__class__ is not float or math.isfinite(value) else None


def _jp_add(left, right):
    return _jp_finite(left + right) if _jp_numbers("add", left, right) else None


def _jp_subtract(left, right):
    return _jp_finite(left - right) if _jp_numbers("subtract", left, right) else None


def _jp_multiply(left, right):
    return _jp_finite(left * right) if _jp_numbers("multiply", left, right) else None


def _jp_divide(left, right):
    if not _jp_numbers("divide", left, right) or right == 0:
        return None
    try:
        return _jp_finite(left / right)
    except OverflowError:  # an integer too large for a float
        return None


def _jp_modulo(left, right):
    if not _jp_numbers("modulo", left, right) or right == 0:
        return None
    return _jp_finite(left % right)


def _jp_floor_divide(left, right):
    if not _jp_numbers("floor_divide", left, right) or right == 0:
        return None
    return _jp_finite(left // right)


def _jp_negate(value):
    if value is None:
        return None
    if not _jp_is_number(value):
        raise _jp_type_error("negate() argument", value, "a number")
    return -value


def _jp_epoch(value, unit="s"):
    """Seconds since the Unix epoch: of an ISO 8601 string (read as ``iso8601()`` reads
    it: without an offset, UTC), or of an epoch number in ``unit``; else null. A whole
    number of seconds is an integer."""
    per_second = _jp_per_second("epoch", unit)
    if isinstance(value, str):
        try:
            delta = _jp_utc(value) - _JP_EPOCH
        except (ValueError, OverflowError):
            return None
        seconds, us = delta.days * 86_400 + delta.seconds, delta.microseconds
        return seconds + us / 1_000_000 if us else seconds
    if not _jp_is_number(value):
        return None
    if value.__class__ is int and value % per_second == 0:
        return value // per_second
    return _jp_finite(value / per_second)


def _jp_round(value, digits=None):
    if not _jp_is_number(value):
        raise _jp_type_error("round() argument 1", value, "a number")
    if digits is not None and (isinstance(digits, bool) or not isinstance(digits, int)):
        raise _jp_type_error("round() digits", digits, "an integer")
    try:
        return round(value) if digits is None else round(value, digits)
    except (OverflowError, ValueError):
        raise ExpressionValueError(f"round() cannot round {value!r}") from None
