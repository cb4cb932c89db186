"""What a JMESPath syntax tree lets the compiler assume: plain key paths, picks of one
element, filter conditions that hold only for objects.

Pure functions over the parser's nodes; the emitters use them to choose a shorter
form with the same result.
"""

from __future__ import annotations

from .paths import chain_steps as _chain_steps

def _path_keys(node: dict) -> tuple[dict | None, list] | None:
    """``x.a.b[0].c`` as the node ``x`` it starts from (None: the current value) and its field
    names and indexes; None when the chain has other steps after its first."""
    steps = _chain_steps(node)
    first = steps[0] if steps[0]["type"] not in ("field", "index") else None
    keys = [n["value"] for n in steps[1 if first else 0:] if n["type"] in ("field", "index")]
    if len(keys) != len(steps) - (1 if first else 0):
        return None
    return (first if first is not None and first["type"] not in ("current", "identity") else None), keys



def _index_of_identity(node: dict) -> dict | None:
    """The ``index`` node of ``[0]`` or ``[-1]`` applied to ``@``, else None."""
    if node["type"] != "index_expression" or len(node["children"]) != 2:
        return None
    first, index = node["children"]
    if first["type"] in ("identity", "current") and index["type"] == "index" and index["value"] in (0, -1):
        return index
    return None


def _picks(children: list[dict]) -> list[dict]:
    """Pipe steps with ``x[?c] | [0].y`` written as the steps ``pick(x[?c], 0)``, ``y``."""
    out: list[dict] = []
    for child in children:
        head, rest = child, []
        if child["type"] == "subexpression":
            head, rest = child["children"][0], child["children"][1:]
        index = _index_of_identity(head)
        if index is not None and out and out[-1]["type"] == "filter_projection":
            out[-1] = {"type": "pick", "children": [out[-1], index]}
            if len(rest) > 1:  # `[0].function.arguments`: one chain, from the element picked
                out.append({"type": "subexpression", "children": [{"type": "current"}, *rest]})
            else:
                out.extend(rest)
        else:
            out.append(child)
    return out


#: a filter condition that reads nothing but fields of the element, literals, comparisons and
#: logic has one value for every element that is not an object (each field read is null)
_FIELDS_ONLY = frozenset({"comparator", "and_expression", "or_expression", "not_expression",
                          "literal", "field", "subexpression", "index_expression", "index"})


def _without_object(condition: dict) -> bool | None:
    """The truth of ``condition`` for an element that is not an object, when it reads only
    fields of the element (``parent_run_id == null``); else None."""
    def fields_only(node: dict, top: bool = True) -> bool:
        if node["type"] not in _FIELDS_ONLY:
            return False
        if node["type"] in ("subexpression", "index_expression"):
            first = node["children"][0]
            if first["type"] != "field" and not (first["type"] in ("subexpression", "index_expression")
                                                 and fields_only(first)):
                return False
        return all(fields_only(child, False) for child in node.get("children", ()))

    if not fields_only(condition):
        return None
    from jmespath.visitor import TreeInterpreter

    value = TreeInterpreter().visit(condition, {})
    return not (value is None or value is False or value in ("", [], {}))


def _proves_object(condition: dict) -> bool:
    """Whether a filter condition holds only for an object: a field of ``@`` compared equal to
    a literal that is not null (``role == 'user'``), possibly first in an ``&&``."""
    if condition["type"] == "and_expression":
        return _proves_object(condition["children"][0])
    if condition["type"] != "comparator" or condition["value"] != "eq":
        return False
    left, right = condition["children"]
    if left["type"] == "literal":
        left, right = right, left
    if right["type"] != "literal" or right["value"] is None:
        return False
    first = left["children"][0] if left["type"] == "subexpression" else left
    return first["type"] == "field"

