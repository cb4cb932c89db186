"""First validation layer: the JSON Schema, with messages written for people.

jsonschema's own messages describe the schema ("... is not valid under any of
the given schemas"); users need to hear about their spec. Each validator
keyword is translated into one diagnostic with a stable code, pointed at the
offending key or value, with a did-you-mean where a name was mistyped.
"""

from __future__ import annotations

import itertools
from typing import Any, Iterable, Iterator

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from mapc.core.diagnostics import MAX_REPORTED, Diagnostic, format_path, shown, suggest
from mapc.spec.loader import LoadedSpec
from mapc.spec.schema import NAME_PATTERN, SCHEMA, SEMVER_PATTERN, VARIABLE_PATTERN

_VALIDATOR = Draft202012Validator(SCHEMA)
#: jsonschema errors translated at most (one error can become several diagnostics).
MAX_SCHEMA_ERRORS = 10 * MAX_REPORTED

_JSON_TYPES = {
    dict: "a mapping",
    list: "a list",
    str: "a string",
    bool: "a boolean",
    int: "an integer",
    float: "a number",
    type(None): "null",
}

_PATTERN_TEXT = {
    NAME_PATTERN: (
        "must be 1-64 characters of lowercase a-z, 0-9, `-` or `_`, starting with a letter or digit",
        "RLViz plugin names and RELAI adapter names share this rule; e.g. `my-agent`",
    ),
    SEMVER_PATTERN: ("must be a semantic version such as 0.1.0", None),
    VARIABLE_PATTERN: ("must be an identifier (letters, digits, `_`; not starting with a digit)", None),
}


def _describe(value: Any) -> str:
    return _JSON_TYPES.get(type(value), type(value).__name__)


def _type_names(schema_type: Any) -> str:
    names = {
        "object": "a mapping",
        "array": "a list",
        "string": "a string",
        "integer": "an integer",
        "number": "a number",
        "boolean": "a boolean",
        "null": "null",
    }
    types = schema_type if isinstance(schema_type, list) else [schema_type]
    return " or ".join(names.get(t, t) for t in types)


def _branch_type_matches(branch: dict, value: Any) -> bool:
    t = branch.get("type")
    if t is None:
        return True
    types = t if isinstance(t, list) else [t]
    checks = {
        "object": lambda v: isinstance(v, dict),
        "array": lambda v: isinstance(v, list),
        "string": lambda v: isinstance(v, str),
        "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
        "boolean": lambda v: isinstance(v, bool),
        "null": lambda v: v is None,
    }
    return any(checks[x](value) for x in types if x in checks)


def _resolve(schema: dict) -> dict:
    ref = schema.get("$ref")
    if ref and ref.startswith("#/$defs/"):
        return SCHEMA["$defs"][ref.split("/")[-1]]
    return schema


def _unknown_keys(inst: dict, allowed: list, path: tuple, spec: LoadedSpec) -> Iterator[Diagnostic]:
    for key in inst:
        if key in allowed:
            continue
        hint = suggest(key, allowed)
        if hint is None and allowed:
            hint = "allowed keys here: " + ", ".join(allowed)
        yield spec.diag("unknown_key", path + (key,), f"unknown key {shown(key)}", hint=hint, key=True)


def _required_hint(key: str, path: tuple, schema: dict) -> str:
    """Where to add a required key, what it holds, and that nothing makes it optional."""
    prop = schema.get("properties", {}).get(key, {})
    where = f"under `{format_path(path)}`" if path else "at the top level of the spec"
    what = prop.get("description", "").rstrip(".")
    values = " (one of " + ", ".join(map(str, prop["enum"])) + ")" if "enum" in prop else ""
    return (f"add `{key}:` {where}{values}" + (f": {what[0].lower()}{what[1:]}" if what else "")
            + "; it is required here and has no default")


def _translate(err: ValidationError, spec: LoadedSpec) -> Iterable[Diagnostic]:
    path = tuple(err.absolute_path)
    kw = err.validator
    inst = err.instance
    schema = err.schema
    if kw == "additionalProperties":  # lazily: the caller stops after MAX_REPORTED
        return _unknown_keys(inst, list(schema.get("properties", {})), path, spec)
    if kw == "required":
        missing = [k for k in err.validator_value if k not in inst]
        return [
            spec.diag("missing_key", path, f"missing required key {k!r}", key=bool(path),
                      hint=_required_hint(k, path, schema))
            for k in missing
        ]
    if kw == "type":
        hint = None
        if isinstance(inst, float) and "string" in str(err.validator_value):
            hint = f'quote it: "{inst}" (YAML reads unquoted 1.0 as a number)'
        elif isinstance(inst, bool) and "string" in str(err.validator_value):
            hint = "YAML reads yes/no/on/off/true/false as booleans; quote the value"
        return [spec.diag("wrong_type", path,
                          f"expected {_type_names(err.validator_value)}, got {_describe(inst)}", hint=hint)]
    if kw == "enum":
        options = [str(o) for o in err.validator_value]
        hint = suggest(str(inst), options) if isinstance(inst, str) else None
        return [spec.diag("invalid_value", path,
                          f"{shown(inst)} is not one of: " + ", ".join(options), hint=hint)]
    if kw == "const":
        return [spec.diag("invalid_value", path, f"must be {err.validator_value!r}, got {shown(inst)}",
                          hint=f"set it to {err.validator_value!r}")]
    if kw == "pattern":
        text, hint = _PATTERN_TEXT.get(err.validator_value, (f"must match {err.validator_value}", None))
        code = "invalid_name" if err.validator_value == NAME_PATTERN else "invalid_value"
        return [spec.diag(code, path, f"{shown(inst)} {text}", hint=hint)]
    if kw == "propertyNames":
        bad = err.instance
        return [spec.diag("invalid_name", path, f"{shown(bad)} is not a valid name here", key=True,
                          hint="names must be identifiers: letters, digits, `_`, not starting with a digit")]
    if kw in ("minLength",):
        return [spec.diag("empty_value", path, "must not be empty")]
    if kw in ("minItems",):
        return [spec.diag("empty_value", path, f"needs at least {err.validator_value} item(s)")]
    if kw in ("maxItems",):
        return [spec.diag("invalid_value", path, f"allows at most {err.validator_value} item(s)")]
    if kw in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        rel = {"minimum": ">=", "exclusiveMinimum": ">", "maximum": "<=", "exclusiveMaximum": "<"}[kw]
        return [spec.diag("out_of_range", path, f"must be {rel} {err.validator_value}, got {shown(inst)}")]
    if kw in ("anyOf", "oneOf"):
        branches = [_resolve(b) for b in err.validator_value]
        matching = [i for i, b in enumerate(branches) if _branch_type_matches(b, inst)]
        if len(matching) == 1:
            idx = matching[0]
            sub = [e for e in (err.context or []) if e.relative_schema_path and e.relative_schema_path[0] == idx]
            out: list[Diagnostic] = []
            for e in sub:
                out.extend(itertools.islice(_translate(e, spec), MAX_REPORTED + 1))
            if out:
                return out
        expected = " or ".join(_type_names(b.get("type", "object")) for b in branches)
        desc = schema.get("description")
        return [spec.diag("wrong_type", path, f"expected {expected}, got {_describe(inst)}", hint=desc)]
    return [spec.diag("invalid_value", path, shown(err.message, 300)[1:-1])]


def check_schema(spec: LoadedSpec) -> list[Diagnostic]:
    """Validate ``spec.data`` against the spec schema; [] when it conforms."""
    if not isinstance(spec.data, dict):
        return [spec.diag("wrong_type", (), f"a spec is a mapping of keys, got {_describe(spec.data)}",
                          hint="start with `mapc: 1`, `name:` and `source:`")]
    # more errors than are reported would only cost time (jsonschema makes each lazily)
    errors = itertools.islice(_VALIDATOR.iter_errors(spec.data), MAX_SCHEMA_ERRORS)
    out: dict[Diagnostic, None] = {}  # ordered and duplicate-free in linear time
    for err in sorted(errors, key=lambda e: (list(map(str, e.absolute_path)), e.validator)):
        for d in _translate(err, spec):
            out[d] = None
            if len(out) > MAX_REPORTED:
                return list(out)
    return list(out)
