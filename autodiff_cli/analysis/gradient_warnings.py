"""What ``eval`` says of a run's derivatives besides the numbers: a gradient that is not finite and
where it came from (``gradient_warnings``), and an op a gradient was asked through that passes
none on, such as argmax or a comparison (``flat_op_notes``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..execute import Evaluation
    from ..execute.run import Run

__all__ = ["flat_op_notes", "gradient_warnings", "non_finite_gradient_warnings"]


def gradient_warnings(run: Run) -> list[str]:
    """One warning when a derivative of the run is inf or NaN, whichever executor made it."""
    if run.evaluation is not None:
        return non_finite_gradient_warnings(run.evaluation, run.wrt)
    from ..execute.interpreter import non_finite_gradient_warnings as tensor_warnings

    return tensor_warnings(run.tensors, run.wrt)  # type: ignore[arg-type]


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


def flat_op_notes(run: Run, asked: Sequence[str] | None = None) -> list[str]:
    """A note for each op that the output's derivative reaches (it is not 0 there) but that passes
    no gradient on to operands computed from the inputs (``engine.tensor_ops.passes_no_gradient``:
    argmax, one_hot, comparisons): the derivatives behind it are 0 by construction, not by
    cancelling, and the note says so at the op's line and column, with the op's own rule.
    ``asked``: the variables differentiated (default: ``run.wrt``, or every input)."""
    if run.tensors is None:  # the engine's ops all have derivatives
        return []
    from ..engine.registry import ENTRIES, passes_no_gradient

    program, tensors = run.program, run.tensors
    rows = tensors.run.rows
    last = tensors.run.register(run.output)
    computed = _computed_from_inputs(run, last, run.wrt if asked is None else asked)
    flat = [register for register in range(last + 1) if passes_no_gradient(rows[register][0])
            and any(computed[r] for r in program.operands(register, rows[register][1], rows[register][2]))]
    if not flat:
        return []
    import numpy as np

    adjoints = tensors.run.adjoints(run.output)
    notes = []
    for register in flat:
        adjoint = adjoints.get(register)
        if adjoint is None or not np.any(np.asarray(adjoint) != 0.0):
            continue  # the output does not change with it (where's condition): nothing is lost there
        op = rows[register][0]
        place = program.position(program.instructions[register].position)
        notes.append(f"{program.source.name}:{place.line}:{place.column}: the gradient of {run.output} stops at "
                     f"'{op}', which passes none to what it reads{_reason(ENTRIES[op].rule[0])}")
    return notes


def _reason(rule: str) -> str:
    """The why of a rule such as "dL/dx = 0 (class labels are not differentiated)", as " (...)":
    the rule's own names (L, x) are the entry's, not the program's, so they are left out."""
    start = rule.find(" (")
    return rule[start:] if start >= 0 and rule.endswith(")") else ""


def _computed_from_inputs(run: Run, last: int, names: Sequence[str] | None) -> list[bool]:
    """For each register up to ``last``, whether the value of an input reaches it (of one of
    ``names`` when they are given)."""
    from ..language.program import INPUT

    program, rows = run.program, run.tensors.run.rows  # type: ignore[union-attr]
    asked = None if names is None else {program.variables[name].register for name in names}
    computed = [False] * (last + 1)
    for register in range(last + 1):
        op, first, second = rows[register][:3]
        seeded = op == INPUT if asked is None else register in asked
        computed[register] = seeded or any(computed[r] for r in program.operands(register, first, second))
    return computed
