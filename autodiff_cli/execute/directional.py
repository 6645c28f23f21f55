"""One forward-mode pass along a direction: ``eval --tangent W='[[1], [0]]'``.

Forward mode computes a Jacobian-vector product, d output along a tangent given for some of the
inputs (the others' tangents are zero), in one pass over the program, however many entries the
inputs have.  ``eval --mode forward`` without a tangent runs one such pass per input entry to
build every gradient; with a tangent it runs just this one.  ``along`` takes the values of one
run (``execute.run``): a run of numbers goes through the engine's tape
(``engine.forward.tangent_along``), any other through the interpreter's JVPs (``TensorRun.jvp``):
the same rules the other forward passes use.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import InputError, Source

if TYPE_CHECKING:
    from ..language.program import Program
    from .run import Run
    from .scalar import Evaluation

__all__ = ["Directional", "along"]


@dataclass(frozen=True)
class Directional:
    """``derivative`` is d ``output`` along ``tangents`` (the output's shape); ``value`` the
    output's value; ``steps`` how many nodes (scalar) or ops (tensor) the one pass visited."""

    output: str
    value: Any
    derivative: Any
    tangents: dict[str, Any]
    steps: int
    unit: str

    @property
    def finite(self) -> bool:
        """Whether every entry of the derivative is a finite number."""
        if isinstance(self.derivative, float):
            import math

            return math.isfinite(self.derivative)
        import numpy as np

        return bool(np.all(np.isfinite(self.derivative)))


def _check_names(program: Program, tangents: Mapping[str, Any]) -> None:
    from ..errors import variables_hint
    from ..language.program import INPUT

    inputs = [variable.name for variable in program.inputs]
    for name in tangents:
        variable = program.variables.get(name)
        if variable is None or variable.kind != INPUT:
            what = "is computed by the program" if variable is not None else "is not a variable of the program"
            raise InputError(f"--tangent gives a direction for '{name}', which {what}; a tangent is given "
                             "for inputs", source=Source(program.source.name, ""),
                             hint=variables_hint(inputs, [name]) if variable is None else
                             f"give tangents for inputs: {', '.join(inputs[:8])}")


def _shape_error(program: Program, name: str, shape: tuple[int, ...], given: tuple[int, ...]) -> InputError:
    def text(s: tuple[int, ...]) -> str:
        return "a number" if not s else "[" + ", ".join(map(str, s)) + "]"

    example = "1" if not shape else "'" + _ones_text(shape) + "'"
    variable = program.variables.get(name)
    position = None if variable is None else variable.position  # the input, where the program has it
    return InputError(f"the tangent of '{name}' is {text(given)}, but '{name}' is {text(shape)}", position,
                      program.source if position is not None else Source(program.source.name, ""),
                      hint=f"a tangent has its input's shape: --tangent {name}={example}")


def _ones_text(shape: tuple[int, ...]) -> str:
    text = "1"
    for size in reversed(shape):
        text = "[" + ", ".join([text] * size) + "]"
    return text


def along(run: Run, tangents: Mapping[str, Any]) -> Directional:
    """d ``run.output`` along ``tangents`` (numbers, or list literals shaped like their inputs; 0 for
    the inputs not named) in one forward pass over the run: the engine's tape for a run of
    numbers, the interpreter's JVPs otherwise.  The run needs values only
    (``run_program(..., differentiate=False)``).  A derivative that is exactly zero is +0.0."""
    _check_names(run.program, tangents)
    if run.evaluation is not None:
        return _along_tape(run.evaluation, tangents)
    return _along_jvp(run, tangents)


def _along_tape(evaluation: Evaluation, tangents: Mapping[str, Any]) -> Directional:
    from ..engine.forward import tangent_along
    from ..engine.graph import Tape
    from ..language.program import TensorConstant

    program = evaluation.program
    for name, tangent in tangents.items():
        if isinstance(tangent, TensorConstant):
            raise _shape_error(program, name, (), tuple(tangent.shape))
    tape = Tape.of(evaluation.root)
    seeds = {tape.index[evaluation.nodes[name]]: float(tangent) for name, tangent in tangents.items()
             if evaluation.nodes[name] in tape.index}  # an input the output does not read adds nothing
    derivative = tangent_along(tape, seeds) + 0.0  # -0.0 + 0.0 is +0.0
    return Directional(evaluation.output, evaluation.root.data, derivative,
                       {name: float(t) for name, t in tangents.items()}, tape.size, "nodes")


def _along_jvp(run: Run, tangents: Mapping[str, Any]) -> Directional:
    import numpy as np

    from .interpreter import as_array

    values = run.tensors.run  # type: ignore[union-attr]
    arrays = {}
    for name, tangent in tangents.items():
        array = as_array(tangent)
        shape = tuple(np.shape(values.value(name)))
        if array.shape != shape:
            raise _shape_error(run.program, name, shape, array.shape)
        arrays[name] = array
    derivative = np.asarray(values.jvp(run.output, arrays)) + 0.0  # -0.0 + 0.0 is +0.0
    return Directional(run.output, values.value(run.output), derivative, arrays, run.ops, "ops")

