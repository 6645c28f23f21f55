"""What ``eval`` warns of a scalar program's gradients: one that is not finite, and where it
came from (the tensor programs' warning is ``execute.interpreter``'s)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..execute import Evaluation

__all__ = ["non_finite_gradient_warnings"]


def non_finite_gradient_warnings(evaluation: Evaluation, names: list[str] | None = None) -> list[str]:
    """One warning when a gradient is inf or NaN (``y = sqrt(x)`` at x = 0): which variables'
    gradients, and the op whose local derivative made it so, where its operand was, and the
    statement it is in.  None of a derivative that is finite."""
    import math

    shown = names if names is not None else list(evaluation.nodes)
    bad = [name for name in shown if not math.isfinite(evaluation.nodes[name].grad)]
    if not bad:
        return []
    from ..engine.ops import short_number
    from .graph_model import non_finite_origin  # only now: start-up does not pay for it

    output = evaluation.output
    said = ", ".join(f"d{output}/d{name} = {evaluation.nodes[name].grad}" for name in bad[:5])
    more = f" and {len(bad) - 5:,} more" if len(bad) > 5 else ""
    message = f"a gradient is not finite: {said}{more}"
    origin = non_finite_origin(evaluation.root)
    if origin is not None:
        node = origin.node
        operand = node._a if origin.operand == 0 else node._b
        op = node._op if not node._op.startswith("**") or node._op == "**" else f"x{node._op}"
        where = f"at {short_number(operand.data)}" if operand is not None else ""
        if node._b is not None and operand is not None:
            other = node._b if origin.operand == 0 else node._a
            where = (f"at ({short_number(node._a.data)}, {short_number(node._b.data)})"
                     if other is not None else where)
        message += f"; the derivative of '{op}' {where} is {origin.local}"
        if origin.statement is not None and origin.statement.label in evaluation.program.variables:
            variable = evaluation.program.variables[origin.statement.label]
            position = variable.position
            message += (f" (in the statement of {variable.name}, {evaluation.program.source.name}:"
                        f"{position.line}:{position.column})")
    return [message]
