"""One run of a program, whatever its shapes: each named variable's value, shape and derivative.

``run_program`` is eval's one entry, and it picks the executor by ``runs_on_engine``, the rule
explain's, check's and graph's entries ask too: a program whose every value is a float64 number
runs on
the compiled ``Value`` engine (``execute.scalar.evaluate``: fast, and its graph is what explain's
steps and the page walk), anything else on the NumPy interpreter (``execute.interpreter``).  A
number is a 0-d value of the run, of shape ``()``, whichever executor ran it.

The run keeps what its executor made (``evaluation``: the graph of ``Value`` nodes; ``tensors``:
the interpreter's ``TensorEvaluation``) for the consumers that walk it, and answers the same
questions of both: ``value``, ``shape``, ``derivative`` and ``kind`` of a name.

A derivative that is exactly zero is +0.0 in a run: forward mode and NumPy's sweeps can make a
-0.0 (``relu(x) * -1`` at x = -1), and a gradient of "-0" reads as a sign it does not have.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import InputError, Source, variables_hint
from ..language.program import OUTPUT, POWER_CONST, Program, check_inputs, runs_as_tensors

if TYPE_CHECKING:
    from ..engine.forward import ForwardResult
    from .interpreter import TensorEvaluation
    from .scalar import Evaluation

__all__ = ["ENGINE", "NUMPY", "Run", "known_names", "run_program", "runs_on_engine"]

ENGINE = "engine"  # the compiled Value engine: every value a float64 number
NUMPY = "numpy"  # the NumPy interpreter: tensors, float32, and everything else


@dataclass
class Run:
    """One run of ``program``: the value of every named variable and, unless the run was asked
    for values only, the derivative of ``output`` with respect to each one that was asked for
    (``wrt``: None means every one; forward mode differentiates the inputs unless names are asked
    for, and then ``wrt`` is those it differentiated, in program order)."""

    program: Program
    output: str
    backend: str
    mode: str = "reverse"
    wrt: list[str] | None = None
    evaluation: Evaluation | None = None  # the Value graph (ENGINE)
    tensors: TensorEvaluation | None = None  # the interpreter's run and derivatives (NUMPY)
    forward_result: ForwardResult | None = None  # forward mode's gradients and work (ENGINE)
    warnings: list[str] = field(default_factory=list)  # of the values given (analysis.gradient_warnings:
    # of the derivatives)
    differentiated: bool = True  # False: values only, and no derivative at all

    @property
    def numbers_only(self) -> bool:
        """Whether every value is a number in float64, whichever executor ran it: eval's report then
        has no shape column, one line per variable (``number_graph``)."""
        if self.backend == ENGINE:
            return True
        tensors = self.tensors
        return (self.dtype == "float64" and not self.jacobian
                and all(not tensors.shape(name) for name in self.names))  # type: ignore[union-attr]

    def number_graph(self) -> Evaluation:
        """A run of numbers as eval's number layout reads it: the engine's graph of ``Value`` nodes,
        or, for the NumPy interpreter's run, one node per variable holding its value, its derivative
        (0.0 where none was computed, as the engine's nodes hold) and its op as the engine labels it."""
        if self.evaluation is not None:
            return self.evaluation
        from .scalar import Evaluation

        nodes = {name: _NumberNode(self, name) for name in self.names}
        return Evaluation(self.program, self.output, nodes, list(self.warnings))

    @property
    def dtype(self) -> str:
        if self.tensors is None:
            return "float64"
        return str(getattr(self.tensors.run.value(self.output), "dtype", "float64"))

    @property
    def jacobian(self) -> bool:
        """Whether the derivative is a Jacobian (the output is not a number)."""
        return self.tensors is not None and self.tensors.jacobian

    @property
    def names(self) -> list[str]:
        return list(self.program.variables)

    def kind(self, name: str) -> str:
        return OUTPUT if name == self.output else self.program.variables[name].kind

    def value(self, name: str) -> Any:
        if self.evaluation is not None:
            return self.evaluation.nodes[name].data
        return self.tensors.run.value(name)  # type: ignore[union-attr]

    def op_label(self, name: str) -> str:
        """The op that made ``name``, as the engine's node shows it: a constant power with its
        exponent (``**2``), nothing for an input or a constant."""
        variable = self.program.variables[name]
        if variable.kind == "input":
            return ""
        instruction = self.program.instructions[variable.register]
        if instruction.op == "const":
            return ""
        if instruction.op == POWER_CONST:  # its entry's written form without the operand: **2
            from ..engine.ops import OPS, short_number

            return OPS[POWER_CONST].written.format(x="", c=short_number(float(instruction.param)))
        return str(instruction.op)

    def shape(self, name: str) -> tuple[int, ...]:
        return () if self.evaluation is not None else tuple(self.tensors.shape(name))  # type: ignore[union-attr]

    def derivative(self, name: str) -> Any:
        """d output / d ``name`` (the variable's shape, or the output's shape then the variable's
        for a Jacobian), or None where none was computed."""
        if not self.differentiated:
            return None
        if self.evaluation is not None:
            if self.wrt is not None and name not in self.wrt:
                return None
            return self.evaluation.nodes[name].grad
        return self.tensors.derivatives.get(name)  # type: ignore[union-attr]

    @property
    def ops(self) -> int:
        """How many ops the interpreter ran (inputs and constants aside): the unit of its work."""
        if self.tensors is None:
            return 0
        return sum(1 for _, first, *_ in self.tensors.run.rows if first >= 0)

    @property
    def rows(self) -> int:
        """How many variables eval's report lists (for choosing its layout)."""
        return len(self.wrt) if self.wrt is not None else len(self.program.variables)


class _NumberNode:
    """A variable of a run of numbers, as the engine's ``Value`` node shows it to eval's report."""

    __slots__ = ("data", "grad", "_op")

    def __init__(self, run: Run, name: str) -> None:
        self.data = float(run.value(name))
        derivative = run.derivative(name)
        self.grad = 0.0 if derivative is None else float(derivative)
        self._op = run.op_label(name)


def runs_on_engine(program: Program, given: Mapping[str, Any], dtype: Any = None) -> bool:
    """Whether the compiled engine runs ``program`` on ``given``: every value a number, in float64."""
    return dtype in (None, "float64") and not runs_as_tensors(program, given)


def run_program(
    program: Program,
    given: Mapping[str, Any] | None = None,
    output: str | None = None,
    *,
    seed: int | None = 0,
    dtype: Any = None,
    forward: bool = False,
    wrt: Sequence[str] | None = None,
    differentiate: bool = True,
    progress: Callable[[int, int], None] | None = None,
) -> Run:
    """Run ``program`` on ``given`` values (the other inputs take their defaults, initializers drawn
    from ``seed``) and differentiate ``output`` (default: the result) with respect to the names of
    ``wrt`` (default: every variable), by one reverse sweep or, with ``forward``, one forward pass
    per input entry.  ``dtype``: float64 (None) or float32.  ``differentiate=False`` computes the
    values only (``eval --tangent`` differentiates along its direction itself).  ``progress`` is
    told (done, total) steps of a big program on the engine.

    Raises ``InputError`` for a ``wrt`` name the program does not define, and the executors'
    errors (``EvaluationError``, with the place of the op that failed)."""
    given = dict(given or {})
    names = known_names(program, wrt)
    mode = "forward" if forward else "reverse"
    if runs_on_engine(program, given, dtype):
        return _on_engine(program, given, output, mode, names, differentiate, progress)
    return _on_numpy(program, given, output, mode, names, differentiate, seed, dtype)


def known_names(program: Program, wrt: Sequence[str] | None) -> list[str] | None:
    """The names of ``wrt`` each once, in the order given, all variables of ``program`` (None for
    every variable); ``InputError`` naming those it does not define."""
    if not wrt:
        return None
    known = program.variables
    unknown = [name for name in wrt if name not in known]
    if unknown:
        raise InputError(f"--wrt names {', '.join(unknown)}, which the program does not define",
                         source=Source(program.source.name, ""), hint=variables_hint(list(known), unknown))
    return list(dict.fromkeys(wrt))


def _on_engine(program: Program, given: dict[str, Any], output: str | None, mode: str, names: list[str] | None,
               differentiate: bool, progress: Callable[[int, int], None] | None) -> Run:
    from .scalar import apply_grads, evaluate, forward_gradients

    reverse = differentiate and mode == "reverse"
    evaluation = evaluate(program, given, output, backward=reverse, progress=progress)
    run = Run(program, evaluation.output, ENGINE, mode, names, evaluation=evaluation,
              warnings=list(evaluation.warnings), differentiated=differentiate)
    if differentiate and mode == "forward":
        run.forward_result = result = forward_gradients(evaluation, names)
        apply_grads(evaluation, result)
        run.wrt = list(result.grads)
    return run


def _on_numpy(program: Program, given: dict[str, Any], output: str | None, mode: str, names: list[str] | None,
              differentiate: bool, seed: int | None, dtype: Any) -> Run:
    from .interpreter import TensorEvaluation, evaluate_tensors, forward_run

    if differentiate:
        tensors = evaluate_tensors(program, given, output, seed=seed, forward=mode == "forward", wrt=names,
                                   dtype=dtype)
        for name, derivative in tensors.derivatives.items():
            tensors.derivatives[name] = _without_negative_zero(derivative)
        if tensors.forward_names is not None:  # forward mode shows what it differentiated, in program order
            names = list(tensors.forward_names)
    else:
        output, dtype, values = forward_run(program, given, output, seed, dtype)
        tensors = TensorEvaluation(program, values, output, {}, jacobian=False)
    return Run(program, tensors.output, NUMPY, mode, names, tensors=tensors, warnings=check_inputs(program, given),
               differentiated=differentiate)


def _without_negative_zero(array: Any) -> Any:
    """``array`` with each -0.0 made +0.0 (adding a zero does exactly that, and nothing else)."""
    import numpy as np

    array = np.asarray(array)
    return array + array.dtype.type(0) if array.dtype.kind == "f" else array
