"""Parsing with the ``jmespath`` package, plus source positions.

The reference parser's AST has no positions.  A small subclass records the
column of each function name and argument (and of slices and ``&`` exprefs)
so that compile-time errors can point at the right place.
"""

from __future__ import annotations

import warnings

from jmespath import ast as jp_ast
from jmespath import exceptions as jp_exceptions
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
}


class _PositionParser(jp_parser.Parser):
    _CACHE: dict = {}  # never shared with jmespath's own cache

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
        raise ExpressionError("syntax", message, column=column) from None
    except RecursionError:
        raise ExpressionError("syntax", "the expression is nested too deeply", column=0) from None
    except ValueError as e:  # e.g. an index with more digits than int() accepts
        raise ExpressionError("syntax", f"invalid expression: {e}", column=0) from None
