"""Runtime units for compiled JMESPath expressions.

Every function here is copied verbatim into generated adapters that use it, so
each unit must stay standard-library only and self-explanatory.  Semantics
follow the reference ``jmespath`` package (1.x) exactly, with one difference:
where the reference implementation crashes with a bare Python exception (for
example comparing a string with a number using ``<``), these helpers raise
:class:`ExpressionTypeError` / :class:`ExpressionValueError` instead.

Naming: ``jp_<function>`` implements the JMESPath (or mapc) function of that
name; other ``jp_`` units are shared building blocks.

"""

import json
import math


from .jmespath_errors import ExpressionTypeError, ExpressionValueError, jp_type_error, jp_typename


def jp_is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def jp_truthy(value):
    """JMESPath truthiness: false, null, "", [] and {} are false; 0 is true."""
    if value is None or value is False:
        return False
    if isinstance(value, (str, list, dict)):
        return len(value) > 0
    return True


def jp_or(left, right):
    """``left || right`` for operands that are already evaluated."""
    return left if jp_truthy(left) else right


def jp_and(left, right):
    """``left && right`` for operands that are already evaluated."""
    return right if jp_truthy(left) else left


def jp_eq(left, right):
    """JMESPath ``==``: Python equality, except that a boolean only equals itself."""
    if left.__class__ is bool or right.__class__ is bool:
        return left is right
    return left == right


def jp_comparable(left, right, operator):
    """Whether ``left operator right`` is defined: both numbers or both strings.

    Other operand types make the comparison null; mixing a string with a number
    is an error (the reference implementation crashes on it).
    """
    if isinstance(left, str):
        if isinstance(right, str):
            return True
        if jp_is_number(right):
            raise ExpressionTypeError(f"cannot compare string {operator} number")
        return False
    if jp_is_number(left):
        if jp_is_number(right):
            return True
        if isinstance(right, str):
            raise ExpressionTypeError(f"cannot compare number {operator} string")
    return False


def jp_lt(left, right):
    return left < right if jp_comparable(left, right, "<") else None


def jp_le(left, right):
    return left <= right if jp_comparable(left, right, "<=") else None


def jp_gt(left, right):
    return left > right if jp_comparable(left, right, ">") else None


def jp_ge(left, right):
    return left >= right if jp_comparable(left, right, ">=") else None


def jp_path(value, keys):
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


def jp_pluck(value, key):
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


def jp_flatten(value):
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


def jp_check_array(function, value):
    if not isinstance(value, list):
        raise jp_type_error(f"{function}() argument", value, "an array")


def jp_check_numbers(function, value):
    if not isinstance(value, list):
        raise jp_type_error(f"{function}() argument", value, "an array of numbers")
    for element in value:
        if not jp_is_number(element):
            raise jp_type_error(f"{function}() array element", element, "a number")


def jp_contains(subject, search):
    if isinstance(subject, str):
        if not isinstance(search, str):
            raise jp_type_error("contains() search value for a string", search, "a string")
        return search in subject
    if isinstance(subject, list):
        return search in subject
    raise jp_type_error("contains() argument 1", subject, "an array or a string")


def jp_ends_with(subject, suffix):
    if not isinstance(subject, str):
        raise jp_type_error("ends_with() argument 1", subject, "a string")
    if not isinstance(suffix, str):
        raise jp_type_error("ends_with() argument 2", suffix, "a string")
    return subject.endswith(suffix)


def jp_join(glue, value):
    if not isinstance(glue, str):
        raise jp_type_error("join() argument 1", glue, "a string")
    if not isinstance(value, list):
        raise jp_type_error("join() argument 2", value, "an array of strings")
    for element in value:
        if not isinstance(element, str):
            raise jp_type_error("join() array element", element, "a string")
    return glue.join(value)


def jp_length(value):
    if not isinstance(value, (str, list, dict)):
        raise jp_type_error("length() argument", value, "a string, an array or an object")
    return len(value)


def jp_starts_with(subject, prefix):
    if not isinstance(subject, str):
        raise jp_type_error("starts_with() argument 1", subject, "a string")
    if not isinstance(prefix, str):
        raise jp_type_error("starts_with() argument 2", prefix, "a string")
    return subject.startswith(prefix)


def jp_sum(value):
    jp_check_numbers("sum", value)
    return sum(value)


def jp_to_number(value):
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


def jp_to_string(value):
    if isinstance(value, str):
        return value
    if (
        type(value) is int
    ):  # ids are often numbers: the digits json.dumps writes, without an encoder
        return str(value)
    return json.dumps(value, separators=(",", ":"), default=str)


def jp_type(value):
    name = jp_typename(value)
    return name if name in ("string", "boolean", "array", "object", "number", "null") else None


def jp_parse_json_number(text):
    number = float(text)
    if math.isinf(number):
        raise ValueError("number out of range")
    return number


def jp_parse_json_constant(text):
    raise ValueError(f"{text} is not valid JSON")


def jp_parse_json(value):
    """Parse a JSON string (null if invalid); other values are returned unchanged."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(
            value,
            parse_float=jp_parse_json_number,
            parse_constant=jp_parse_json_constant,
        )
    except ValueError:
        return None


def jp_get(value, key):
    """``value[key]`` for an object and string key or an array and integer key; else null."""
    if isinstance(value, dict):
        return value.get(key) if isinstance(key, str) else None
    if isinstance(value, list) and isinstance(key, int) and not isinstance(key, bool):
        return value[key] if -len(value) <= key < len(value) else None
    return None


def jp_items(value):
    if not isinstance(value, dict):
        raise jp_type_error("items() argument", value, "an object")
    return [[key, item] for key, item in value.items()]


def jp_group_key(function, key):
    """The object key for a ``*_by`` key value: strings as-is, numbers as text."""
    if isinstance(key, str):
        return key
    if jp_is_number(key):
        return json.dumps(key)
    if key is None:
        return None
    raise jp_type_error(f"{function}() key", key, "a string, a number or null")


def jp_index_by(value, key):
    jp_check_array("index_by", value)
    result = {}
    for item in value:
        name = jp_group_key("index_by", key(item))
        if name is not None and name not in result:
            result[name] = item
    return result


def jp_coalesce(*values):
    for value in values:
        if value is not None:
            return value
    return None


def jp_concat(*arrays):
    result = []
    for position, value in enumerate(arrays, 1):
        if isinstance(value, list):
            result.extend(value)
        elif value is not None:
            raise jp_type_error(f"concat() argument {position}", value, "an array or null")
    return result


def jp_iso8601(value, unit="s"):
    """iso8601(): :func:`timestamps.iso8601`, imported on the first call (with ``datetime``,
    5 M instructions: a probe never pays it)."""
    from .timestamps import iso8601

    return iso8601(value, unit)
