"""The JMESPath functions fewer specs use (the others are in ``jmespath_rt``)."""

import json
import math
import posixpath
import re

from .jmespath_errors import ExpressionValueError, jp_type_error
from .jmespath_rt import jp_check_array, jp_check_numbers, jp_group_key, jp_is_number


def jp_check_sortable(function, value):
    """An array of numbers or an array of strings (the first element decides)."""
    if not isinstance(value, list):
        raise jp_type_error(f"{function}() argument", value, "an array of numbers or of strings")
    if value:
        if isinstance(value[0], str):
            for element in value:
                if not isinstance(element, str):
                    raise jp_type_error(f"{function}() array element", element, "a string")
        elif jp_is_number(value[0]):
            for element in value:
                if not jp_is_number(element):
                    raise jp_type_error(f"{function}() array element", element, "a number")
        else:
            raise jp_type_error(f"{function}() array element", value[0], "a number or a string")


def jp_sort_key(function, key):
    """Wrap an ``&expr`` key so that every key is a number or a string, never both."""
    kinds = []

    def checked(item):
        result = key(item)
        if isinstance(result, str):
            kind = "string"
        elif jp_is_number(result):
            kind = "number"
        else:
            raise jp_type_error(f"{function}() key", result, "a number or a string")
        if not kinds:
            kinds.append(kind)
        elif kinds[0] != kind:
            raise jp_type_error(f"{function}() key", result, f"a {kinds[0]} like the others")
        return result

    return checked


def jp_abs(value):
    if not jp_is_number(value):
        raise jp_type_error("abs() argument", value, "a number")
    return abs(value)


def jp_avg(value):
    jp_check_numbers("avg", value)
    if not value:
        return None
    return sum(value) / len(value)


def jp_ceil(value):
    if not jp_is_number(value):
        raise jp_type_error("ceil() argument", value, "a number")
    try:
        return math.ceil(value)
    except (OverflowError, ValueError):
        raise ExpressionValueError(f"ceil() cannot round {value!r}") from None


def jp_floor(value):
    if not jp_is_number(value):
        raise jp_type_error("floor() argument", value, "a number")
    try:
        return math.floor(value)
    except (OverflowError, ValueError):
        raise ExpressionValueError(f"floor() cannot round {value!r}") from None


def jp_keys(value):
    if not isinstance(value, dict):
        raise jp_type_error("keys() argument", value, "an object")
    return list(value)


def jp_map(function, value):
    jp_check_array("map", value)
    return [function(element) for element in value]


def jp_max(value):
    jp_check_sortable("max", value)
    return max(value) if value else None


def jp_max_by(value, key):
    jp_check_array("max_by", value)
    return max(value, key=jp_sort_key("max_by", key)) if value else None


def jp_merge(*objects):
    merged = {}
    for position, value in enumerate(objects, 1):
        if not isinstance(value, dict):
            raise jp_type_error(f"merge() argument {position}", value, "an object")
        merged.update(value)
    return merged


def jp_min(value):
    jp_check_sortable("min", value)
    return min(value) if value else None


def jp_min_by(value, key):
    jp_check_array("min_by", value)
    return min(value, key=jp_sort_key("min_by", key)) if value else None


def jp_not_null(*values):
    for value in values:
        if value is not None:
            return value
    return None


def jp_reverse(value):
    if isinstance(value, str):
        return value[::-1]
    if isinstance(value, list):
        return value[::-1]
    raise jp_type_error("reverse() argument", value, "a string or an array")


def jp_sort(value):
    jp_check_sortable("sort", value)
    return sorted(value)


def jp_sort_by(value, key):
    jp_check_array("sort_by", value)
    if not value:
        return value
    return sorted(value, key=jp_sort_key("sort_by", key))


def jp_to_array(value):
    return value if isinstance(value, list) else [value]


def jp_values(value):
    if not isinstance(value, dict):
        raise jp_type_error("values() argument", value, "an object")
    return list(value.values())


def jp_stable_id(prefix, *parts):
    """``prefix-<16 hex digits>``: sha256 of the canonical JSON of ``parts``."""
    if not isinstance(prefix, str):
        raise jp_type_error("stable_id() prefix", prefix, "a string")
    import hashlib  # here, not at module top: loading OpenSSL costs every adapter start-up

    canonical = json.dumps(list(parts), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return prefix + "-" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def jp_to_json(value):
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except ValueError:
        raise ExpressionValueError("to_json() cannot encode NaN or Infinity") from None


def jp_from_items(value):
    if not isinstance(value, list):
        raise jp_type_error("from_items() argument", value, "an array of [key, value] pairs")
    result = {}
    for pair in value:
        if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)):
            raise jp_type_error("from_items() element", pair, "a [string, value] pair")
        result[pair[0]] = pair[1]
    return result


def jp_split(subject, separator):
    if not isinstance(subject, str):
        raise jp_type_error("split() argument 1", subject, "a string")
    if not isinstance(separator, str):
        raise jp_type_error("split() argument 2", separator, "a string")
    if not separator:
        return list(subject)
    return subject.split(separator)


def jp_replace(subject, old, new):
    if not isinstance(subject, str):
        raise jp_type_error("replace() argument 1", subject, "a string")
    if not isinstance(old, str):
        raise jp_type_error("replace() argument 2", old, "a string")
    if not isinstance(new, str):
        raise jp_type_error("replace() argument 3", new, "a string")
    return subject.replace(old, new)


def jp_lower(value):
    if not isinstance(value, str):
        raise jp_type_error("lower() argument", value, "a string")
    return value.lower()


def jp_upper(value):
    if not isinstance(value, str):
        raise jp_type_error("upper() argument", value, "a string")
    return value.upper()


def jp_trim(value):
    if not isinstance(value, str):
        raise jp_type_error("trim() argument", value, "a string")
    return value.strip()


_JP_REGEX_CACHE = {}


def jp_regex(pattern):
    """The compiled form of a (literal, already validated) regex pattern."""
    compiled = _JP_REGEX_CACHE.get(pattern)
    if compiled is None:
        compiled = _JP_REGEX_CACHE[pattern] = re.compile(pattern)
    return compiled


def jp_regex_extract(subject, pattern, group=None):
    """First match: ``group`` if given, else group 1 if any, else the whole match."""
    if group is not None and (isinstance(group, bool) or not isinstance(group, (int, str))):
        raise jp_type_error("regex_extract() group", group, "an integer or a string")
    if not isinstance(subject, str):
        return None
    compiled = jp_regex(pattern)
    match = compiled.search(subject)
    if match is None:
        return None
    if group is None:
        group = 1 if compiled.groups else 0
    try:
        return match.group(group)
    except IndexError:
        raise ExpressionValueError(f"regex_extract() has no group {group!r}") from None


def jp_regex_findall(subject, pattern):
    """Every match (group 1 if the pattern has groups); null if not a string."""
    if not isinstance(subject, str):
        return None
    compiled = jp_regex(pattern)
    group = 1 if compiled.groups else 0
    return [match.group(group) for match in compiled.finditer(subject)]


def jp_regex_test(subject, pattern):
    if not isinstance(subject, str):
        return False
    return jp_regex(pattern).search(subject) is not None


def jp_unique_by(value, key):
    jp_check_array("unique_by", value)
    seen = set()
    result = []
    for item in value:
        name = jp_group_key("unique_by", key(item))
        if name not in seen:
            seen.add(name)
            result.append(item)
    return result


def jp_merge_by(value, key):
    jp_check_array("merge_by", value)
    merged = {}
    for item in value:
        if not isinstance(item, dict):
            raise jp_type_error("merge_by() array element", item, "an object")
        name = jp_group_key("merge_by", key(item))
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


def jp_group_by(value, key):
    jp_check_array("group_by", value)
    groups = {}
    for item in value:
        name = jp_group_key("group_by", key(item))
        if name is not None:
            groups.setdefault(name, []).append(item)
    return groups


def jp_sha256(value):
    if not isinstance(value, str):
        raise jp_type_error("sha256() argument", value, "a string")
    import hashlib

    return hashlib.sha256(value.encode("utf-8")).hexdigest()


def jp_basename(value):
    if not isinstance(value, str):
        raise jp_type_error("basename() argument", value, "a string")
    return posixpath.basename(value)


def jp_dirname(value):
    if not isinstance(value, str):
        raise jp_type_error("dirname() argument", value, "a string")
    return posixpath.dirname(value)


def jp_numbers(name, left, right):
    """Whether ``name(left, right)`` can be computed: False when either side is null (the
    result is null: a field the trace left out), True for two numbers; anything else is an
    invalid-type error."""
    if left is None or right is None:
        return False
    if not jp_is_number(left):
        raise jp_type_error(f"{name}() argument 1", left, "a number")
    if not jp_is_number(right):
        raise jp_type_error(f"{name}() argument 2", right, "a number")
    return True


def jp_finite(value):
    """A float result that overflowed (inf) or has no value (nan) is null: JSON has neither."""
    return value if value.__class__ is not float or math.isfinite(value) else None


def jp_add(left, right):
    return jp_finite(left + right) if jp_numbers("add", left, right) else None


def jp_subtract(left, right):
    return jp_finite(left - right) if jp_numbers("subtract", left, right) else None


def jp_multiply(left, right):
    return jp_finite(left * right) if jp_numbers("multiply", left, right) else None


def jp_divide(left, right):
    if not jp_numbers("divide", left, right) or right == 0:
        return None
    try:
        return jp_finite(left / right)
    except OverflowError:  # an integer too large for a float
        return None


def jp_modulo(left, right):
    if not jp_numbers("modulo", left, right) or right == 0:
        return None
    return jp_finite(left % right)


def jp_floor_divide(left, right):
    if not jp_numbers("floor_divide", left, right) or right == 0:
        return None
    return jp_finite(left // right)


def jp_negate(value):
    if value is None:
        return None
    if not jp_is_number(value):
        raise jp_type_error("negate() argument", value, "a number")
    return -value


def jp_epoch(value, unit="s"):
    """Seconds since the Unix epoch: of an ISO 8601 string (read as ``iso8601()`` reads
    it: without an offset, UTC), or of an epoch number in ``unit``; else null. A whole
    number of seconds is an integer."""
    from .timestamps import _JP_EPOCH, jp_per_second, jp_utc

    per_second = jp_per_second("epoch", unit)
    if isinstance(value, str):
        try:
            delta = jp_utc(value) - _JP_EPOCH
        except (ValueError, OverflowError):
            return None
        seconds, us = delta.days * 86_400 + delta.seconds, delta.microseconds
        return seconds + us / 1_000_000 if us else seconds
    if not jp_is_number(value):
        return None
    if value.__class__ is int and value % per_second == 0:
        return value // per_second
    return jp_finite(value / per_second)


def jp_round(value, digits=None):
    if not jp_is_number(value):
        raise jp_type_error("round() argument 1", value, "a number")
    if digits is not None and (isinstance(digits, bool) or not isinstance(digits, int)):
        raise jp_type_error("round() digits", digits, "an integer")
    try:
        return round(value) if digits is None else round(value, digits)
    except (OverflowError, ValueError):
        raise ExpressionValueError(f"round() cannot round {value!r}") from None
