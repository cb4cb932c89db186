"""Semantic checks on the parsed AST, done once at compile time.

:func:`check` returns a normalized copy of the jmespath AST in which the
variable pseudo-calls are ``{"type": "variable", "value": name}`` nodes, and
raises :class:`ExpressionError` for unknown functions and variables, wrong
arity, ``&expr`` where none is allowed, literal arguments of the wrong type,
invalid regex patterns and a slice step of 0.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field

from .errors import ExpressionError
from .functions import FUNCTIONS, describe_types, value_matches
from .variables import VAR_FUNCTION, OffsetMap

_EPOCH_UNITS = ("s", "ms", "us", "ns")


def did_you_mean(name: str, candidates) -> str | None:
    matches = difflib.get_close_matches(name, sorted(candidates), n=1, cutoff=0.6)
    return f"did you mean {matches[0]!r}?" if matches else None


@dataclass
class CheckContext:
    offsets: OffsetMap
    allowed_variables: frozenset[str] | None
    variables: set[str] = field(default_factory=set)
    functions: set[str] = field(default_factory=set)

    def column(self, node_or_position) -> int:
        if isinstance(node_or_position, dict):
            node_or_position = node_or_position.get("position", 0)
        return self.offsets.to_original(node_or_position)


def check(node: dict, ctx: CheckContext, *, expref_allowed: bool = False,
          position: int | None = None) -> dict:
    kind = node["type"]
    if kind == "expref":
        if not expref_allowed:
            raise ExpressionError(
                "invalid-type",
                "an &expression is only allowed as the argument of a function that expects one",
                column=ctx.column(node),
            )
        return {"type": "expref", "children": [check(node["children"][0], ctx)],
                "position": node.get("position", 0)}
    if kind == "function_expression":
        return _check_function(node, ctx)
    if kind == "slice":
        start, stop, step = node["children"]
        if step == 0:
            raise ExpressionError("invalid-value", "a slice step cannot be 0",
                                  column=ctx.column(node))
        return dict(node)
    out = {k: v for k, v in node.items() if k != "children"}
    out["children"] = [check(child, ctx) for child in node.get("children", [])]
    return out


def _check_function(node: dict, ctx: CheckContext) -> dict:
    name = node["value"]
    position = node.get("position", 0)
    column = ctx.offsets.to_original(position)
    args = node["children"]
    arg_positions = node.get("arg_positions") or [position] * len(args)
    if name == VAR_FUNCTION and ctx.offsets.is_variable_call(position):
        variable = args[0]["value"]
        if ctx.allowed_variables is not None and variable not in ctx.allowed_variables:
            allowed = sorted(ctx.allowed_variables)
            hint = did_you_mean(variable, allowed)
            if hint is None:
                hint = ("available: " + ", ".join(f"${v}" for v in allowed)) if allowed else (
                    "no variables are available here")
            elif hint is not None:
                hint = hint.replace("did you mean '", "did you mean '$")
            raise ExpressionError("unknown-variable", f"unknown variable ${variable}",
                                  column=column, hint=hint)
        ctx.variables.add(variable)
        return {"type": "variable", "value": variable, "children": [], "position": position}
    sig = FUNCTIONS.get(name)
    if sig is None:
        raise ExpressionError("unknown-function", f"unknown function {name}()", column=column,
                              hint=did_you_mean(name, FUNCTIONS))
    n = len(args)
    if n < sig.min_args or (sig.max_args is not None and n > sig.max_args):
        if sig.max_args is None:
            expected = f"at least {sig.min_args}"
        elif sig.min_args == sig.max_args:
            expected = str(sig.min_args)
        else:
            expected = f"{sig.min_args} to {sig.max_args}"
        plural = "" if expected == "1" else "s"
        raise ExpressionError(
            "invalid-arity",
            f"{name}() takes {expected} argument{plural} but {n} were given"
            if n != 1 else f"{name}() takes {expected} argument{plural} but 1 was given",
            column=column, hint=f"usage: {sig.usage()}")
    ctx.functions.add(name)
    checked = []
    for i, arg in enumerate(args):
        param = sig.param_for(i)
        arg_column = ctx.offsets.to_original(arg_positions[i])
        wants_expref = "expref" in param.types
        if wants_expref and arg["type"] != "expref":
            raise ExpressionError(
                "invalid-type",
                f"argument {i + 1} of {name}() must be an &expression such as &field",
                column=arg_column, hint=f"usage: {sig.usage()}")
        if param.literal and not (arg["type"] == "literal" and isinstance(arg["value"], str)):
            raise ExpressionError(
                "invalid-value",
                f"the {param.name} of {name}() must be a literal string such as 'a+'",
                column=arg_column)
        if arg["type"] == "literal" and not value_matches(arg["value"], param.types):
            if "operator" in node:
                raise ExpressionError("invalid-type", f"`{node['operator']}` computes on numbers",
                                      column=arg_column)
            raise ExpressionError(
                "invalid-type",
                f"argument {i + 1} of {name}() must be {describe_types(param.types)}",
                column=arg_column, hint=f"usage: {sig.usage()}")
        checked.append(check(arg, ctx, expref_allowed=wants_expref))
    _check_literal_values(name, args, arg_positions, ctx)
    out = {"type": "function_expression", "value": name, "children": checked, "position": position}
    if "operator" in node:  # `a - b`, written as an operator: messages say `-`
        out["operator"] = node["operator"]
    return out


def _check_literal_values(name, args, arg_positions, ctx) -> None:
    """Value checks on literal arguments (regex patterns, units, groups, digits)."""
    def literal(i):
        if i < len(args) and args[i]["type"] == "literal":
            return True, args[i]["value"]
        return False, None

    def fail(i, message, kind="invalid-value"):
        raise ExpressionError(kind, message,
                              column=ctx.offsets.to_original(arg_positions[i]))

    if name in ("regex_extract", "regex_findall", "regex_test"):
        _, pattern = literal(1)
        try:
            compiled = re.compile(pattern)
        except re.error as e:
            fail(1, f"invalid regular expression for {name}(): {e}")
        if name == "regex_extract":
            known, group = literal(2)
            if known and group is not None:
                if isinstance(group, str) and group not in compiled.groupindex:
                    fail(2, f"the pattern has no group named {group!r}")
                if isinstance(group, (float, bool)):
                    fail(2, "the group must be an integer or a group name", "invalid-type")
                if isinstance(group, int) and not 0 <= group <= compiled.groups:
                    fail(2, f"the pattern has no group {group}")
    elif name in ("iso8601", "epoch"):
        known, unit = literal(1)
        if known and unit not in _EPOCH_UNITS:
            fail(1, f"the unit of {name}() must be 's', 'ms', 'us' or 'ns'")
    elif name == "round":
        known, digits = literal(1)
        if known and not isinstance(digits, int):
            fail(1, "the digits of round() must be an integer", "invalid-type")
