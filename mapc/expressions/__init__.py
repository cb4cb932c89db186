"""JMESPath expressions compiled to plain Python.

Specs use JMESPath (https://jmespath.org/specification.html) plus ``$name``
variables and mapc's own functions (see ``docs/expressions.md``).  An
expression is parsed with the ``jmespath`` package and compiled to a Python
function whose source is self-contained: it only calls runtime units from
:mod:`mapc.runtime.jmespath_rt`, which generated adapters carry along, so
generated code never imports ``jmespath``. In process the compiled code runs with the
runtime modules themselves (``mapc.core.runtime_files.namespace``); its ``python_source`` pastes
the helpers it calls, so that text runs without mapc and without ``mapc_runtime/``.

>>> ce = compile_expression("people[?age > `30`].name")
>>> ce({"people": [{"name": "Ada", "age": 36}, {"name": "Bob", "age": 20}]})
['Ada']
"""

from __future__ import annotations

import functools
import types

from mapc.core import runtime_files as _runtime
from mapc.runtime import jmespath_rt as _rt

from .checks import CheckContext, check
from .compiler import FunctionCompiler, InlineCompiler, _runtime_units as _runtime_unit_names, helpers_in, literal_source
from .errors import ERROR_KINDS, ExpressionError
from .functions import FUNCTIONS, FunctionSignature, Param
from .parser import parse
from .paths import (
    builds_values, field_paths, is_constant, outer_function, plain_path, reads_root_as_object,
    string_test, tested_paths,
)
from .variables import rewrite_variables

ExpressionTypeError = _rt.ExpressionTypeError
ExpressionValueError = _rt.ExpressionValueError

__all__ = [
    "ERROR_KINDS",
    "FUNCTIONS",
    "CompiledExpression",
    "ExpressionError",
    "ExpressionTypeError",
    "ExpressionValueError",
    "FunctionSignature",
    "Param",
    "compile_expression",
    "compile_part",
]

#: Exceptions shared between the in-process runtime and this package, so that
#: ``except ExpressionTypeError`` works for errors raised by compiled code.
_SHARED_UNITS = {
    "ExpressionTypeError": ExpressionTypeError,
    "ExpressionValueError": ExpressionValueError,
}


@functools.lru_cache(maxsize=256)
def _runtime_namespace(helpers: tuple[str, ...]) -> dict:
    ns = _runtime.namespace(helpers)
    for name, value in _SHARED_UNITS.items():
        if name in ns:
            ns[name] = value
    return ns


class CompiledExpression:
    """A compiled expression: call it with ``(data, scope=None)``.

    Attributes:
        text: the original expression text.
        variables: names of the ``$variables`` used (sorted, without ``$``).
        functions: names of the functions called (sorted).
        helpers: runtime units (:mod:`mapc.runtime.jmespath_rt`) the function calls.
        field_paths: source field paths read, e.g. ``("messages[].role",)``.
        tested_paths: those read only in tests or alternatives (``x == 'a'``, ``a || b``).
        builds_values: the expression builds lists or objects (``[a, b]``, ``{k: a}``).
        path: field names when the expression is a plain chain like ``a.b``, else None.
        string_test: ``(field names, text)`` when the expression is ``a.b == 'text'``, else None.
        outer_function: the function whose result is the value (``iso8601(ts)``), else None.
        boolean: the value is always true, false or null, so Python truthiness is JMESPath's.
        constant: ``(True, value)`` when the value does not depend on the input.
        python_source: a self-contained module defining ``expression(data, scope=None)``.
    """

    def __init__(self, text: str, ast: dict, *, body: list[str], helpers: tuple[str, ...],
                 variables: tuple[str, ...], functions: tuple[str, ...],
                 constant: tuple[bool, object], boolean: bool = False, code=None):
        self.text = text
        self.variables = variables
        self.functions = functions
        self.helpers = helpers
        self.constant = constant
        self.boolean = boolean
        self.field_paths = field_paths(ast)
        self.tested_paths = tested_paths(ast)
        self.builds_values = builds_values(ast)
        self.path = plain_path(ast)
        self.string_test = string_test(ast)
        self.outer_function = outer_function(ast)
        self._ast = ast
        self._body = body
        ns = dict(_runtime_namespace(helpers))
        # the very function text that python_source shows (``code``: already compiled from it)
        exec(code or _module_code(self._module_function()), ns)
        self._function = ns["expression"]
        #: The compiled function itself, ``evaluate(data, scope)``: the fastest way to call it.
        self.evaluate = self._function

    def __call__(self, data, scope=None):
        return self._function(data, scope)

    @property
    def ast(self) -> dict:
        """The checked syntax tree; ``position`` keys are columns of the variable-rewritten text."""
        return self._ast

    def __repr__(self) -> str:
        return f"CompiledExpression({self.text!r})"

    def function_source(self, name: str, *, scope_given: bool = False,
                        object_root: bool = False) -> str:
        """``def <name>(data, scope):`` with the compiled body (calls ``self.helpers``);
        ``scope_given``: every caller passes a scope dict, so None needs no test;
        ``object_root``: every caller passes an object as ``data`` (field reads unguarded)."""
        if not name.isidentifier():
            raise ValueError(f"not a Python identifier: {name!r}")
        body = self._object_body if object_root and not self.constant[0] else self._body
        if scope_given and body[:2] == ["if scope is None:", "    scope = {}"]:
            body = body[3:] if body[2:3] == [""] else body[2:]
        lines = [f"def {name}(data, scope):"]
        lines += [("    " + line) if line else "" for line in body]
        return "\n".join(lines) + "\n"

    @functools.cached_property
    def reads_root_as_object(self) -> bool:
        """The value for a root that is not an object is the value for ``{}`` (see
        :func:`paths.reads_root_as_object`): callers may pass the root's object alias."""
        return reads_root_as_object(self._ast)

    @functools.cached_property
    def _object_body(self) -> list[str]:
        """The body compiled for an object ``data`` (``function_source(object_root=True)``)."""
        compiler = FunctionCompiler()
        compiler._dicts.add("data")
        compiler._nonnull.add("data")
        return compiler.function_body(self._ast)

    @property
    def python_source(self) -> str:
        """A standalone module: imports, the runtime units used, and ``expression()``."""
        parts = [f"# Compiled by mapc from the JMESPath expression {self.text!r}"]
        imports, helpers = _runtime.extract(self.helpers)
        if imports:
            parts.append("\n".join(imports))
        if self.helpers:
            parts.append(helpers.rstrip("\n"))
        parts.append(self._module_function().rstrip("\n"))
        return "\n\n\n".join(parts) + "\n"

    def _module_function(self) -> str:
        return _module_function(self._body)

    def inline_source(self, data_var: str = "data", scope_var: str = "scope") -> str | None:
        """A single Python expression computing the value, for simple expressions.

        ``data_var`` and ``scope_var`` are the names (or other cheap, side-effect
        free expressions) holding the current value and the scope dict; the
        expression may call the runtime units listed by :meth:`inline_helpers`.
        Returns None when the expression needs statements (use
        :meth:`function_source` then).
        """
        result = self._inline(data_var, scope_var)
        return None if result is None else result[0]

    def inline_helpers(self, data_var: str = "data", scope_var: str = "scope") -> tuple[str, ...]:
        """Runtime units that :meth:`inline_source` calls (empty when it is None)."""
        result = self._inline(data_var, scope_var)
        return () if result is None else result[1]

    def _inline(self, data_var: str, scope_var: str):
        if self.constant[0]:
            try:
                return literal_source(self.constant[1]), ()
            except TypeError:
                return None
        compiler = InlineCompiler(data_var, scope_var)
        e = compiler.compile(self._ast)
        if e is None:
            return None
        return e.src, helpers_in(e.src)


def _module_function(body: list[str]) -> str:
    lines = ["def expression(data, scope=None):"] + [("    " + line) if line else "" for line in body]
    return "\n".join(lines) + "\n"


def _module_code(source: str):
    return compile(source, "<mapc-expression>", "exec")


def _global_names(code) -> set[str]:
    """Names a compiled function's code looks up (globals and attributes), nested code included."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


def _normalize_variables(variables) -> frozenset[str] | None:
    if variables is None:
        return None
    if isinstance(variables, str):
        variables = [variables]
    return frozenset(v[1:] if v.startswith("$") else v for v in variables)


def compile_expression(text: str, variables=None) -> CompiledExpression:
    """Compile a JMESPath (+ mapc extensions) expression.

    ``variables``: None allows any ``$name``; otherwise the collection of
    allowed variable names (without ``$``).  Raises :class:`ExpressionError`.
    """
    if not isinstance(text, str):
        raise TypeError(f"expression text must be a string, not {type(text).__name__}")
    return _compile(text, _normalize_variables(variables))


@functools.lru_cache(maxsize=1024)
def _compile(text: str, allowed: frozenset[str] | None) -> CompiledExpression:
    try:
        return _compile_text(text, allowed)
    except ExpressionError as e:
        raise e.with_text(text) from None
    except (RecursionError, SyntaxError, MemoryError):
        # Python limits nesting (20 nested loops, 100 indentation levels), and every walk of
        # the tree (CompiledExpression's field paths too) recurses once a level.
        raise ExpressionError("syntax", "the expression is nested too deeply to compile", 0,
                              text=text) from None


def _compile_text(text: str, allowed: frozenset[str] | None) -> CompiledExpression:
    """:func:`_compile` without its error translation."""
    rewritten, offsets = rewrite_variables(text)
    tree = parse(rewritten, offsets, text)
    ctx = CheckContext(offsets=offsets, allowed_variables=allowed)
    ast = check(tree, ctx)
    compiler = FunctionCompiler()
    body = compiler.function_body(ast)
    code = _module_code(_module_function(body))  # compiled once: checked here, run below
    # the runtime units it calls: every name a unit has is a global the code looks up
    # (generated code has no attribute or local named like a unit; tests/test_expressions.py)
    helpers = tuple(sorted(_global_names(code) & _runtime_unit_names()))
    boolean = compiler.result_boolean
    constant: tuple[bool, object] = (False, None)
    if is_constant(ast):
        probe = CompiledExpression(
            text, ast, body=body, helpers=helpers, variables=(), functions=(),
            constant=(False, None), code=code,
        )
        try:
            value = probe(None)
            literal_source(value)  # only JSON values can be folded
        except (TypeError, ValueError):
            pass
        else:
            constant = (True, value)
            body = FunctionCompiler().constant_body(value)
            helpers = ()
            boolean = value is None or isinstance(value, bool)
    return CompiledExpression(
        text,
        ast,
        body=body,
        helpers=helpers,
        variables=tuple(sorted(ctx.variables)),
        functions=tuple(sorted(ctx.functions)),
        constant=constant,
        boolean=boolean,
        code=None if constant[0] else code,
    )


def compile_part(ast: dict) -> CompiledExpression:
    """One node of a compiled expression's ``ast`` (an operand, a function's argument),
    compiled on its own: ``mapc check`` evaluates the parts of an expression on the
    fixtures' values to say which part holds the value that springs a trap."""
    body = FunctionCompiler().function_body(ast)
    code = _module_code(_module_function(body))
    helpers = tuple(sorted(_global_names(code) & _runtime_unit_names()))
    return CompiledExpression("<part>", ast, body=body, helpers=helpers, variables=(), functions=(),
                              constant=(False, None), code=code)
