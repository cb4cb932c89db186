"""The errors compiled JMESPath expressions raise, and the type names they print (a module
of its own so that `timestamps` and `jmespath_more` use them without importing `jmespath_rt`)."""


class ExpressionTypeError(TypeError):
    """A value had the wrong type for a function or operator (JMESPath invalid-type)."""


class ExpressionValueError(ValueError):
    """A value was of the right type but not acceptable (JMESPath invalid-value)."""


def jp_typename(value):
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


def jp_type_error(where, value, expected):
    """Build the error raised when ``value`` is not of the ``expected`` type."""
    return ExpressionTypeError(f"{where} must be {expected}, got {jp_typename(value)}")
