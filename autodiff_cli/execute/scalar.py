"""The scalar interpreter: a ``Program`` and one set of input values -> a graph of ``Value`` nodes.

Each instruction becomes one node, made by the ``Value`` method of its op (so the
maths is the op table's), front to back; then the output backpropagates.  Domain
errors come back with the position of the instruction that failed and the op's hint.
Forward mode runs over the same graph (``forward_gradients``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from itertools import islice
from typing import TYPE_CHECKING, Any

from ..engine.graph import backpropagate, new_graph_order, paused_cycle_collector
from ..engine.ops import OPS, OVERFLOW_HINT, DomainError, op_key, overflow_advice
from ..engine.value import METHODS, Value
from ..errors import EvaluationError
from ..language.program import (
    CONST,
    INPUT,
    OUTPUT,
    POWER_CONST,
    Program,
    Row,
    check_inputs,
    input_value,
    missing_inputs,
    missing_inputs_error,
    output_name,
)

if TYPE_CHECKING:
    from ..engine.forward import ForwardResult

__all__ = ["Evaluation", "apply_grads", "evaluate", "forward_gradients"]


@dataclass
class Evaluation:
    """The graph built for one set of input values, after backpropagation."""

    program: Program
    output: str
    nodes: dict[str, Value]
    warnings: list[str] = field(default_factory=list)
    has_values: bool = True

    @property
    def root(self) -> Value:
        return self.nodes[self.output]

    def kind(self, name: str) -> str:
        return OUTPUT if name == self.output else self.program.variables[name].kind

    def values(self) -> dict[str, float]:
        return {name: node.data for name, node in self.nodes.items()}

    def grads(self) -> dict[str, float]:
        return {name: node.grad for name, node in self.nodes.items()}


def evaluate(
    program: Program,
    values: Mapping[str, float] | None = None,
    output: str | None = None,
    *,
    backward: bool = True,
    allow_missing: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> Evaluation:
    """Build the graph for ``values`` (overriding the defaults) and backpropagate from ``output``.

    With ``allow_missing``, inputs without a value are NaN and no domain checks run:
    the graph then shows structure only (``Evaluation.has_values`` is False).
    ``progress`` is told (done, total) steps now and then: building the graph is the first
    half of the steps, the backward pass the second.
    """
    values = dict(values or {})
    warnings = check_inputs(program, values)
    output = output_name(program, output)
    missing = missing_inputs(program, values)
    if missing and not allow_missing:
        raise missing_inputs_error(program, missing)
    building = None
    if progress is not None:
        def building(done: int, total: int) -> None:
            progress(done, 2 * total)  # one step per node built, one per node differentiated

    with paused_cycle_collector():  # a graph of Values has no cycles for the collector to find
        registers = _execute(program, values, checked=not missing, progress=building)
    nodes = {name: registers[v.register] for name, v in program.variables.items()}
    root = registers[program.variables[output].register]
    del registers  # the graph lives on in its nodes; a list of all of them is ~8 bytes a node
    if backward and not missing:
        _backward(program, root, progress)
    return Evaluation(program, output, nodes, warnings, has_values=not missing)


def _backward(program: Program, root: Value, progress: Callable[[int, int], None] | None) -> None:
    """``root.backward()``: the same order, found without a set of millions of nodes
    (``engine.graph.new_graph_order``: the graph was just built, its gradients are 0)."""
    order = new_graph_order(root)
    differentiating = None
    if progress is not None:
        built = len(program.instructions)

        def differentiating(done: int, total: int) -> None:
            progress(built + done * built // total, 2 * built)

    backpropagate(order, differentiating)


def _execute(program: Program, values: Mapping[str, float], checked: bool,
             progress: Callable[[int, int], None] | None = None) -> list[Value]:
    registers: list[Value] = []
    emit = registers.append
    isfinite = math.isfinite
    variables = program.variables
    rows = program.rows()  # columns, not Instruction tuples
    total = len(program.instructions)
    step = max(1, total if progress is None else _PROGRESS_STEP)
    for start in range(0, total, step):  # in slices, to report progress between them
        _run(islice(rows, step), registers, emit, variables, values, checked, isfinite, program)
        if progress is not None:
            progress(min(total, start + step), total)
    for variable in variables.values():
        node = registers[variable.register]
        if not node.label:
            node.label = variable.name
    return registers


_PROGRESS_STEP = 1 << 16


def _run(rows: Iterable[Row], registers: list[Value], emit: Callable[[Value], None], variables: Mapping[str, Any],
         values: Mapping[str, float], checked: bool, isfinite: Callable[[float], bool], program: Program) -> None:
    """Build the nodes of ``rows``, appending each to ``registers``."""
    for op, first, second, param, position in rows:
        try:
            if second >= 0:
                node = METHODS[op](registers[first], registers[second])
            elif op == INPUT:
                node = Value(input_value(variables[param], values), label=param)
            elif op == CONST:
                node = Value(param)
            elif op == POWER_CONST:
                node = METHODS[POWER_CONST](registers[first], param)
            else:
                node = METHODS[op](registers[first])
        except DomainError as error:
            raise _domain_error(error, position, program) from None
        if checked and not isfinite(node.data):
            raise EvaluationError(
                f"the result of '{_shown_op(op)}' overflows a float ({node.data})",
                position, program.source, OVERFLOW_HINT,
            )
        emit(node)


def _shown_op(op: str) -> str:
    """How an overflow message names the op: as written for + - * / ** and functions."""
    return {POWER_CONST: "power", "=": "copy"}.get(op, op)


def _domain_error(error: DomainError, position: object, program: Program) -> EvaluationError:
    op = OPS.get(op_key(error.op))
    hint: str | None = overflow_advice(op) if error.overflow else op.hint if op is not None else None
    return EvaluationError(f"{error.message} (in '{error.op}')", position, program.source,  # type: ignore[arg-type]
                           hint)


# --- forward mode ----------------------------------------------------------------------------


def forward_gradients(evaluation: Evaluation, wrt: Iterable[str] | None = None) -> ForwardResult:
    """d output / d variable by forward mode: one pass per variable in ``wrt``.

    ``wrt`` defaults to the program's inputs (the tutorials' comparison: one pass per
    input).  Naming an intermediate works too: its tangent is seeded with 1
    regardless of its operands, which gives the same partial derivative as its
    reverse-mode ``grad``.  Unknown names raise KeyError (the CLI checks them first).
    The evaluation needs values, not gradients: ``evaluate(..., backward=False)`` is enough.
    """
    from ..engine import forward  # only forward mode and check need it: not at start-up

    nodes = evaluation.nodes
    if wrt is None:
        names = [variable.name for variable in evaluation.program.inputs]
        inputs_only = True
    else:
        wanted = set(wrt)
        missing = wanted - nodes.keys()
        if missing:
            raise KeyError(f"not variables of the program: {', '.join(sorted(missing))}")
        names = [name for name in nodes if name in wanted]  # program order, like the reports
        input_names = {variable.name for variable in evaluation.program.inputs}
        inputs_only = wanted <= input_names
    return forward.forward_gradients(
        evaluation.root, {name: nodes[name] for name in names}, output=evaluation.output,
        wrt_inputs_only=inputs_only,
    )


def apply_grads(evaluation: Evaluation, result: ForwardResult) -> None:
    """Store forward-mode gradients in the named nodes' ``grad``, so the eval reports show them.

    Only the variables in ``result.grads`` are set; report them with ``wrt=list(result.grads)``.
    A gradient that is exactly zero is stored as +0.0: a tangent carried through a flat op and a
    negative factor arrives as -0.0 (``relu(x) * -1`` at x = -1), which reverse mode, summing
    from +0.0, never gives.
    """
    for name, grad in result.grads.items():
        evaluation.nodes[name].grad = grad + 0.0  # -0.0 + 0.0 is +0.0; every other number is unchanged
