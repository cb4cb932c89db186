"""Lower evaluators, tasks-independent scoring and usage to Python.

Generates ``EVALUATORS`` (id, description, range, primary, direction, weight)
and one function per evaluator that computes ``(score, feedback)`` from the
evaluation scope: ``{signals, signal_list, output, events, trajectory, status,
task}``. A target whose entry scores trajectories includes it
(``module_source(with_evaluation=True)``); the others leave it out.
"""

from __future__ import annotations

from mapc.codegen.expressions import ExprTable
from mapc.codegen.pysrc import Writer, docstring_text, identifier, literal
from mapc.spec import ir


def generate_evaluation(spec: ir.Spec, exprs: ExprTable) -> str:
    w = Writer()
    table = []
    for ev in spec.evaluators:
        table.append(
            {
                "id": ev.id,
                "description": ev.description,
                "min": ev.low,
                "max": ev.high,
                "primary": ev.primary,
                "direction": ev.direction,
                "weight": ev.weight,
            }
        )
    w.line(f"EVALUATORS = {literal(table)}")
    w.line(f"COMBINE = {literal(spec.combine)}")
    names = []
    for ev in spec.evaluators:
        fname = "evaluate_" + identifier(ev.id)
        while fname in names:
            fname += "_"
        names.append(fname)
        w.line("")
        w.line("")
        w.line(f"def {fname}(scope, variables):")
        with w.indent():
            w.docstring(f"evaluators[{ev.path[1]}] {docstring_text(ev.id)}: {docstring_text(ev.description)}")
            w.comment(f"score (line {ev.score.line}): {ev.score.text}")
            w.line(f"score = {exprs.call(ev.score, 'scope', 'variables')}")
            # a true/false check scores its range's ends, in the feedback too (`score == 1` holds)
            w.line("if isinstance(score, bool):")
            with w.indent():
                w.line(f"score = {literal(ev.high)} if score else {literal(ev.low)}")
            w.line("feedback_scope = dict(scope, score=score)")
            first = True
            for rule in ev.feedback:
                text = _template(rule.parts, exprs)
                if rule.when is not None:
                    kw = "if" if first else "elif"
                    w.line(f"{kw} truthy({exprs.call(rule.when, 'feedback_scope', 'variables')}):")
                    with w.indent():
                        w.line(f"return score, {text}")
                    first = False
                else:
                    if first:
                        w.line(f"return score, {text}")
                    else:
                        w.line("else:")
                        with w.indent():
                            w.line(f"return score, {text}")
                    break
            else:
                w.line("return score, None")
    w.line("")
    w.line("")
    w.line(f"EVALUATOR_FUNCTIONS = ({', '.join(names)}{',' if len(names) == 1 else ''})")
    for key, e in spec.usage:
        w.line("")
        w.line("")
        w.line(f"def usage_{key}(scope, variables):")
        with w.indent():
            w.comment(f"usage.{key}: {e.text}")
            w.line(f"return {exprs.call(e, 'scope', 'variables')}")
    usage = {k: f"usage_{k}" for k, _ in spec.usage}
    if spec.usage:  # after the functions (without them, next to EVALUATOR_FUNCTIONS)
        w.line("")
        w.line("")
    pairs = ", ".join(f"{literal(k)}: {v}" for k, v in usage.items())
    w.line(f"USAGE = {{{pairs}}}")
    return w.text()


def _template(parts, exprs: ExprTable) -> str:
    """A feedback template as a Python expression building the string."""
    pieces = []
    for part in parts:
        if isinstance(part, str):
            pieces.append(literal(part))
        else:
            pieces.append(f"template_text({exprs.call(part, 'feedback_scope', 'variables')})")
    if not pieces:
        return literal("")
    return pieces[0] if len(pieces) == 1 else "(" + " + ".join(pieces) + ")"
