"""One forward-mode pass along a direction: ``eval --tangent W='[[1], [0]]'``.

Forward mode computes a Jacobian-vector product, d output along a tangent given for some of the
inputs (the others' tangents are zero), in one pass over the program, however many entries the
inputs have.  ``eval --mode forward`` without a tangent runs one such pass per input entry to
build every gradient; with a tangent it runs just this one.  A scalar program goes through the
engine's tape (``engine.forward.tangent_along``), a tensor program through the tensor
interpreter's JVPs (``TensorRun.jvp``): the same rules the other forward passes use.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import InputError, Source

if TYPE_CHECKING:
    from ..language.program import Program
    from .scalar import Evaluation

__all__ = ["Directional", "scalar_directional", "tensor_directional"]


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


def scalar_directional(evaluation: Evaluation, tangents: Mapping[str, Any]) -> Directional:
    """d output along ``tangents`` (numbers, by input name) in one forward pass over the tape."""
    from ..engine.forward import tangent_along
    from ..engine.graph import Tape
    from ..language.program import TensorConstant

    program = evaluation.program
    _check_names(program, tangents)
    for name, tangent in tangents.items():
        if isinstance(tangent, TensorConstant):
            raise _shape_error(program, name, (), tuple(tangent.shape))
    tape = Tape.of(evaluation.root)
    seeds = {tape.index[evaluation.nodes[name]]: float(tangent) for name, tangent in tangents.items()
             if evaluation.nodes[name] in tape.index}  # an input the output does not read adds nothing
    return Directional(evaluation.output, evaluation.root.data, tangent_along(tape, seeds),
                       {name: float(t) for name, t in tangents.items()}, tape.size, "nodes")


def tensor_directional(program: Program, given: Mapping[str, Any], tangents: Mapping[str, Any],
                       output: str | None = None, seed: int | None = 0) -> Directional:
    """d output along ``tangents`` (numbers or list literals shaped like their inputs) in one JVP
    sweep of the tensor interpreter; the output may have any shape."""
    import numpy as np

    from ..language.program import missing_inputs, missing_inputs_error, output_name
    from .interpreter import as_array, input_arrays, run_forward

    missing = missing_inputs(program, given)
    if missing:
        raise missing_inputs_error(program, missing)
    output = output_name(program, output)
    _check_names(program, tangents)
    run = run_forward(program, input_arrays(program, given, seed))
    arrays = {}
    for name, tangent in tangents.items():
        array = as_array(tangent)
        shape = tuple(np.shape(run.value(name)))
        if array.shape != shape:
            raise _shape_error(program, name, shape, array.shape)
        arrays[name] = array
    ops = sum(1 for _, first, *_ in run.rows if first >= 0)
    return Directional(output, run.value(output), run.jvp(output, arrays), arrays, ops, "ops")
