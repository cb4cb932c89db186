"""Parsing with the ``jmespath`` package, plus source positions.

The reference parser's AST has no positions.  A small subclass records the
column of each function name and argument (and of slices and ``&`` exprefs)
so that compile-time errors can point at the right place.

It also reads JMESPath Community's arithmetic (JEP-16: ``+ - * / % //`` and a
unary ``-``), which the reference package lacks: each operator becomes a call
of the function that implements it (``end - start`` is ``subtract(end, start)``
marked with its ``operator``), so every later pass treats it as a call.
"""

from __future__ import annotations

import warnings

from jmespath import ast as jp_ast
from jmespath import exceptions as jp_exceptions
from jmespath import lexer as jp_lexer
from jmespath import parser as jp_parser

from .errors import ExpressionError
from .variables import OffsetMap

_TOKEN_WORDS = {
    "eof": "end of expression",
    "rbracket": "']'",
    "lbracket": "'['",
    "rparen": "')'",
    "lparen": "'('",
    "rbrace": "'}'",
    "lbrace": "'{'",
    "comma": "','",
    "colon": "':'",
    "dot": "'.'",
    "pipe": "'|'",
    "or": "'||'",
    "and": "'&&'",
    "not": "'!'",
    "star": "'*'",
    "flatten": "'[]'",
    "filter": "'[?'",
    "current": "'@'",
    "expref": "'&'",
    "plus": "'+'",
    "minus": "'-'",
    "divide": "'/'",
    "modulo": "'%'",
    "div": "'//'",
}

#: JEP-16's operators -> the function each one is (``*`` is the lexer's ``star``)
OPERATOR_FUNCTIONS = {"plus": "add", "minus": "subtract", "star": "multiply",
                      "divide": "divide", "modulo": "modulo", "div": "floor_divide"}
#: what an operator's function is written as, for messages
OPERATOR_TEXT = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/", "modulo": "%",
                 "floor_divide": "//", "negate": "-"}


class _Lexer(jp_lexer.Lexer):
    """jmespath's lexer plus the arithmetic operators (and JEP-16's Unicode spellings).

    A ``-`` is an operator unless it starts the number of an index or slice (``[-1]``,
    ``[1:-1]``), the only place JMESPath has bare numbers; ``//`` is one token."""

    SIMPLE_TOKENS = {**jp_lexer.Lexer.SIMPLE_TOKENS, "+": "plus", "-": "minus", "/": "divide",
                     "%": "modulo", "\u2212": "minus", "\u00d7": "star", "\u00f7": "divide"}

    def tokenize(self, expression):
        held, prev = None, None
        for token in super().tokenize(expression):
            if held is not None:
                first, held = held, None
                if first["type"] == "minus" and token["type"] == "number" and token["start"] == first["end"]:
                    token = {**token, "value": -token["value"], "start": first["start"]}
                elif first["type"] == "divide" and token["type"] == "divide" and token["start"] == first["end"]:
                    token = {"type": "div", "value": "//", "start": first["start"], "end": token["end"]}
                else:
                    yield first
            elif (token["type"] == "minus" and prev in ("lbracket", "colon")) or token["type"] == "divide":
                held = token
                continue
            prev = token["type"]
            yield token


class _PositionParser(jp_parser.Parser):
    _CACHE: dict = {}  # never shared with jmespath's own cache
    # JEP-16: arithmetic binds tighter than comparisons, looser than `.`; `*` keeps the
    # binding power a wildcard has (20), so `/ % //` share it and `+ -` sit below
    BINDING_POWER = {**jp_parser.Parser.BINDING_POWER,
                     "plus": 6, "minus": 6, "divide": 20, "modulo": 20, "div": 20}
    _NEGATE_POWER = 35  # `-a.b` negates `a.b`; `-a * b` multiplies `-a`

    def _parse(self, expression):  # jmespath's own, with the lexer above
        self.tokenizer = _Lexer().tokenize(expression)
        self._tokens = list(self.tokenizer)
        self._index = 0
        parsed = self._expression(binding_power=0)
        if not self._current_token() == "eof":
            t = self._lookahead_token(0)
            raise jp_exceptions.ParseError(t["start"], t["value"], t["type"],
                                           "Unexpected token: %s" % t["value"])
        return jp_parser.ParsedResult(expression, parsed)

    def _arithmetic(self, left, token_type):
        token = self._lookahead_token(-1)
        right = self._expression(self.BINDING_POWER[token_type])
        return _operator_call(OPERATOR_FUNCTIONS[token_type], [left, right], token["start"])

    def _token_led_plus(self, left):
        return self._arithmetic(left, "plus")

    def _token_led_minus(self, left):
        return self._arithmetic(left, "minus")

    def _token_led_star(self, left):
        return self._arithmetic(left, "star")

    def _token_led_divide(self, left):
        return self._arithmetic(left, "divide")

    def _token_led_modulo(self, left):
        return self._arithmetic(left, "modulo")

    def _token_led_div(self, left):
        return self._arithmetic(left, "div")

    def _token_nud_minus(self, token):
        return _operator_call("negate", [self._expression(self._NEGATE_POWER)], token["start"])

    def _token_nud_quoted_identifier(self, token):
        if self._current_token() == "lparen":
            raise jp_exceptions.ParseError(
                token["start"], token["value"], "quoted_identifier",
                "a quoted identifier cannot be a function name",
            )
        return super()._token_nud_quoted_identifier(token)

    def _token_nud_expref(self, token):
        node = super()._token_nud_expref(token)
        node["position"] = token["start"]
        return node

    def _parse_index_expression(self):
        start = self._lookahead_token(-1)["start"]
        node = super()._parse_index_expression()
        node["position"] = start
        return node

    def _token_led_lparen(self, left):
        if left["type"] != "field":
            return super()._token_led_lparen(left)
        name_token = self._lookahead_token(-2)
        args = []
        positions = []
        while not self._current_token() == "rparen":
            positions.append(self._lookahead_token(0)["start"])
            expression = self._expression()
            if self._current_token() == "comma":
                self._match("comma")
            args.append(expression)
        self._match("rparen")
        node = jp_ast.function_expression(left["value"], args)
        node["position"] = name_token["start"]
        node["arg_positions"] = positions
        return node


def _operator_call(name: str, args: list[dict], position: int) -> dict:
    node = jp_ast.function_expression(name, args)
    node["position"] = position
    node["arg_positions"] = [position] * len(args)
    node["operator"] = OPERATOR_TEXT[name]
    return node


def _describe(token_type, value) -> str:
    if token_type in ("unquoted_identifier", "quoted_identifier"):
        return f"identifier {value!r}"
    if token_type == "number":
        return f"number {value}"
    if token_type == "literal":
        return "literal"
    return _TOKEN_WORDS.get(token_type, repr(value))


def parse(rewritten: str, offsets: OffsetMap, original: str) -> dict:
    """Parse the (variable-rewritten) text; jmespath errors become ExpressionError."""
    if not original.strip():
        raise ExpressionError("syntax", "the expression is empty", column=0)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return _PositionParser()._do_parse(rewritten).parsed
    except jp_exceptions.EmptyExpressionError:
        raise ExpressionError("syntax", "the expression is empty", column=0) from None
    except jp_exceptions.IncompleteExpressionError:
        raise ExpressionError(
            "syntax", "the expression ends too early", column=len(original)
        ) from None
    except jp_exceptions.LexerError as e:
        column = offsets.to_original(e.lexer_position)
        message = e.message
        if message.startswith("Unclosed"):
            message = f"unclosed {message.split()[1]} quote"
        elif message.startswith("Bad token"):
            message = "invalid JSON literal between backticks"
        elif message.startswith("Unknown token"):
            message = f"unexpected character {e.lexer_value!r}"
        else:
            message = f"invalid token: {message}"
        raise ExpressionError("syntax", message, column=column) from None
    except jp_exceptions.ParseError as e:
        column = offsets.to_original(e.lex_position)
        token_type = (e.token_type or "").lower()
        what = _describe(token_type, e.token_value)
        msg = e.msg or ""
        if msg.startswith("a quoted identifier"):
            message = msg
        elif msg.startswith("Invalid function name"):
            message = f"{what} cannot be called as a function"
        elif token_type == "eof":
            message = "the expression ends too early"
        else:
            message = f"unexpected {what}"
        hint = None
        if token_type == "number":  # `a - 1`: JMESPath numbers are literals outside `[...]`
            hint = f"a number in an expression is a literal: write `{abs(e.token_value)}`"
        raise ExpressionError("syntax", message, column=column, hint=hint) from None
    except RecursionError:
        raise ExpressionError("syntax", "the expression is nested too deeply", column=0) from None
    except ValueError as e:  # e.g. an index with more digits than int() accepts
        raise ExpressionError("syntax", f"invalid expression: {e}", column=0) from None
