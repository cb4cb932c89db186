"""Signatures of the functions expressions may call: JMESPath built-ins and mapc's.

Each function is implemented by a runtime unit ``jp_<name>`` in
:mod:`mapc.runtime.jmespath_rt`; the signatures here drive compile-time checks
(unknown function, arity, literal argument types) and the documentation.

Type names are JMESPath's: ``string``, ``number``, ``boolean``, ``array``,
``object``, ``null``, ``expref`` (an ``&expression``), ``array-number`` and
``array-string`` (arrays whose elements all have that type).  An empty type
tuple means any value.
"""

from __future__ import annotations

from dataclasses import dataclass
from mapc.runtime.jmespath_rt import jp_typename


@dataclass(frozen=True)
class Param:
    name: str
    types: tuple[str, ...] = ()  # () = any value
    optional: bool = False
    variadic: bool = False
    literal: bool = False  # must be written as a literal in the expression


@dataclass(frozen=True)
class FunctionSignature:
    name: str
    params: tuple[Param, ...]
    returns: str
    summary: str
    origin: str  # "jmespath" or "mapc"

    @property
    def min_args(self) -> int:
        return sum(1 for p in self.params if not p.optional)

    @property
    def max_args(self) -> int | None:
        """Maximum number of arguments, None for variadic functions."""
        if self.params and self.params[-1].variadic:
            return None
        return len(self.params)

    @property
    def helper(self) -> str:
        """The runtime unit that implements the function."""
        return f"jp_{self.name}"

    def param_for(self, index: int) -> Param:
        if index < len(self.params):
            return self.params[index]
        return self.params[-1]  # variadic tail

    def usage(self) -> str:
        parts = []
        for p in self.params:
            text = p.name
            if p.variadic:
                text += ", ..."
            if p.optional and not p.variadic:
                text = f"[{text}]"
            parts.append(text)
        return f"{self.name}({', '.join(parts)})"


def _p(name, *types, optional=False, variadic=False, literal=False) -> Param:
    return Param(name, tuple(types), optional, variadic, literal)


_ANY = ()

_SIGNATURES = [
    # --- JMESPath built-ins (https://jmespath.org/specification.html#built-in-functions)
    ("abs", [_p("value", "number")], "number", "Absolute value.", "jmespath"),
    ("avg", [_p("values", "array-number")], "number|null",
     "Average of an array of numbers; null for an empty array.", "jmespath"),
    ("ceil", [_p("value", "number")], "number", "Smallest integer not below the value.",
     "jmespath"),
    ("contains", [_p("subject", "array", "string"), _p("search")], "boolean",
     "Whether an array has an element equal to search, or a string contains it.",
     "jmespath"),
    ("ends_with", [_p("subject", "string"), _p("suffix", "string")], "boolean",
     "Whether the string ends with suffix.", "jmespath"),
    ("floor", [_p("value", "number")], "number", "Largest integer not above the value.",
     "jmespath"),
    ("join", [_p("glue", "string"), _p("values", "array-string")], "string",
     "Join an array of strings with glue.", "jmespath"),
    ("keys", [_p("object", "object")], "array", "The keys of an object.", "jmespath"),
    ("length", [_p("value", "string", "array", "object")], "number",
     "Length of a string, array or object.", "jmespath"),
    ("map", [_p("expr", "expref"), _p("values", "array")], "array",
     "Apply &expr to every element (nulls kept).", "jmespath"),
    ("max", [_p("values", "array-number", "array-string")], "number|string|null",
     "Largest element of an array of numbers or of strings.", "jmespath"),
    ("max_by", [_p("values", "array"), _p("expr", "expref")], "any",
     "Element with the largest &expr value.", "jmespath"),
    ("merge", [_p("object", "object", variadic=True)], "object",
     "Merge objects; later keys win.", "jmespath"),
    ("min", [_p("values", "array-number", "array-string")], "number|string|null",
     "Smallest element of an array of numbers or of strings.", "jmespath"),
    ("min_by", [_p("values", "array"), _p("expr", "expref")], "any",
     "Element with the smallest &expr value.", "jmespath"),
    ("not_null", [_p("value", variadic=True)], "any", "First argument that is not null.",
     "jmespath"),
    ("reverse", [_p("value", "string", "array")], "string|array",
     "Reverse a string or an array.", "jmespath"),
    ("sort", [_p("values", "array-number", "array-string")], "array",
     "Sort an array of numbers or of strings.", "jmespath"),
    ("sort_by", [_p("values", "array"), _p("expr", "expref")], "array",
     "Sort an array by &expr (stable).", "jmespath"),
    ("starts_with", [_p("subject", "string"), _p("prefix", "string")], "boolean",
     "Whether the string starts with prefix.", "jmespath"),
    ("sum", [_p("values", "array-number")], "number", "Sum of an array of numbers.",
     "jmespath"),
    ("to_array", [_p("value")], "array", "The value if it is an array, else [value].",
     "jmespath"),
    ("to_number", [_p("value")], "number|null",
     "Numbers as-is, numeric strings parsed, anything else null.", "jmespath"),
    ("to_string", [_p("value")], "string", "Strings as-is, anything else as compact JSON.",
     "jmespath"),
    ("type", [_p("value")], "string", "The JMESPath type name of the value.", "jmespath"),
    ("values", [_p("object", "object")], "array", "The values of an object.", "jmespath"),
    # --- mapc functions (docs/expressions.md)
    ("stable_id", [_p("prefix", "string"), _p("part", optional=True, variadic=True)], "string",
     "prefix + '-' + the first 16 hex digits of sha256(canonical JSON of [parts]).", "mapc"),
    ("parse_json", [_p("value")], "any",
     "Parse a JSON string (null if invalid); other values unchanged.", "mapc"),
    ("to_json", [_p("value")], "string", "Compact JSON text of the value.", "mapc"),
    ("iso8601", [_p("value"), _p("unit", "string", optional=True)], "string|null",
     "RFC 3339 UTC timestamp from epoch numbers or ISO 8601 strings; null otherwise.",
     "mapc"),
    ("get", [_p("value"), _p("key")], "any",
     "Dynamic lookup: object[string] or array[integer]; null otherwise.", "mapc"),
    ("items", [_p("object", "object")], "array", "[[key, value], ...] of an object.", "mapc"),
    ("from_items", [_p("pairs", "array")], "object", "Object from [[key, value], ...].",
     "mapc"),
    ("split", [_p("subject", "string"), _p("separator", "string")], "array",
     "Split a string on a separator (an empty separator splits into characters).", "mapc"),
    ("replace", [_p("subject", "string"), _p("old", "string"), _p("new", "string")],
     "string", "Replace every occurrence of old with new.", "mapc"),
    ("lower", [_p("value", "string")], "string", "Lower-case a string.", "mapc"),
    ("upper", [_p("value", "string")], "string", "Upper-case a string.", "mapc"),
    ("trim", [_p("value", "string")], "string", "Strip leading and trailing whitespace.",
     "mapc"),
    ("regex_extract",
     [_p("subject"), _p("pattern", "string", literal=True),
      _p("group", "number", "string", optional=True)],
     "string|null", "First regex match (a group if given, else group 1 if any).", "mapc"),
    ("regex_findall", [_p("subject"), _p("pattern", "string", literal=True)], "array|null",
     "All regex matches (group 1 if the pattern has groups).", "mapc"),
    ("regex_test", [_p("subject"), _p("pattern", "string", literal=True)], "boolean",
     "Whether the regex matches anywhere in the string.", "mapc"),
    ("index_by", [_p("values", "array"), _p("expr", "expref")], "object",
     "Object keyed by &expr of each element (first occurrence wins).", "mapc"),
    ("unique_by", [_p("values", "array"), _p("expr", "expref")], "array",
     "Elements with the first occurrence of each &expr key.", "mapc"),
    ("merge_by", [_p("values", "array"), _p("expr", "expref")], "array",
     "Shallow-merge the objects that share an &expr key.", "mapc"),
    ("group_by", [_p("values", "array"), _p("expr", "expref")], "object",
     "Object mapping each &expr key to the elements that have it.", "mapc"),
    ("coalesce", [_p("value", variadic=True)], "any", "First argument that is not null.",
     "mapc"),
    ("concat", [_p("array", "array", "null", variadic=True)], "array",
     "Concatenate arrays, skipping nulls.", "mapc"),
    ("sha256", [_p("value", "string")], "string", "Hex sha256 digest of the UTF-8 string.",
     "mapc"),
    ("basename", [_p("path", "string")], "string", "Last component of a POSIX path.", "mapc"),
    ("dirname", [_p("path", "string")], "string", "Directory part of a POSIX path.", "mapc"),
    ("round", [_p("value", "number"), _p("digits", "number", optional=True)], "number",
     "Round half to even; an integer when digits is omitted.", "mapc"),
    ("epoch", [_p("value"), _p("unit", "string", optional=True)], "number|null",
     "Seconds since the Unix epoch of an ISO 8601 string, or of an epoch number in unit; "
     "null otherwise.", "mapc"),
    # --- arithmetic (JMESPath Community JEP-16): the operators `+ - * / % //` and a unary
    # `-` are calls of these; a null operand gives null, and so does a division by zero
    ("add", [_p("left", "number"), _p("right", "number")], "number|null",
     "left + right (the + operator).", "mapc"),
    ("subtract", [_p("left", "number"), _p("right", "number")], "number|null",
     "left - right (the - operator).", "mapc"),
    ("multiply", [_p("left", "number"), _p("right", "number")], "number|null",
     "left * right (the * operator).", "mapc"),
    ("divide", [_p("left", "number"), _p("right", "number")], "number|null",
     "left / right (the / operator); null when right is 0.", "mapc"),
    ("modulo", [_p("left", "number"), _p("right", "number")], "number|null",
     "left % right, with the sign of right (the % operator); null when right is 0.", "mapc"),
    ("floor_divide", [_p("left", "number"), _p("right", "number")], "number|null",
     "left / right rounded down (the // operator); null when right is 0.", "mapc"),
    ("negate", [_p("value", "number")], "number|null", "-value (the unary - operator).",
     "mapc"),
]

#: name -> :class:`FunctionSignature`, JMESPath built-ins first, then mapc's.
FUNCTIONS: dict[str, FunctionSignature] = {
    name: FunctionSignature(name, tuple(params), returns, summary, origin)
    for name, params, returns, summary, origin in _SIGNATURES
}

#: Functions whose result is always a boolean (lets the compiler skip truthiness tests).
BOOLEAN_FUNCTIONS = frozenset({"contains", "ends_with", "starts_with", "regex_test"})

#: Functions whose result is never null (when they return at all).
NON_NULL_FUNCTIONS = frozenset(
    {
        "abs", "ceil", "contains", "ends_with", "floor", "join", "keys", "length", "map",
        "merge", "reverse", "sort", "starts_with", "sum", "to_array", "to_string",
        "values", "stable_id", "to_json", "items", "from_items", "split", "replace",
        "lower", "upper", "trim", "regex_test", "index_by", "unique_by", "merge_by",
        "group_by", "concat", "sha256", "basename", "dirname", "round",
    }
)


# the JMESPath type name, as compiled code reports it at run time
_typename = jp_typename


def value_matches(value, types: tuple[str, ...]) -> bool:
    """Whether a (literal) value is acceptable for a parameter of ``types``.

    Mirrors the reference implementation's check, including the rule for
    ``array-number``/``array-string``: when both are allowed, the first element
    decides which one the whole array must be.
    """
    if not types:
        return True
    actual = _typename(value)
    subtypes = []
    plain = set()
    for t in types:
        if t.startswith("array-"):
            subtypes.append(t[len("array-"):])
            plain.add("array")
        else:
            plain.add(t)
    if actual not in plain:
        return False
    if actual != "array" or not subtypes or "array" in types:
        return True
    if len(subtypes) == 1:
        return all(_typename(v) == subtypes[0] for v in value)
    if not value:
        return True
    first = _typename(value[0])
    if first not in subtypes:
        return False
    return all(_typename(v) == first for v in value)


def describe_types(types: tuple[str, ...]) -> str:
    if not types:
        return "any value"
    words = []
    for t in types:
        if t.startswith("array-"):
            words.append(f"an array of {t[len('array-'):]}s")
        elif t == "expref":
            words.append("an &expression")
        elif t in ("array", "object"):
            words.append(f"an {t}")
        elif t == "null":
            words.append("null")
        else:
            words.append(f"a {t}")
    if len(words) == 1:
        return words[0]
    return ", ".join(words[:-1]) + " or " + words[-1]
