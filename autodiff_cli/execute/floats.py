"""The float interpreter: a program's values at one point, and again with one input moved.

``evaluate`` (``scalar.py``) builds a ``Value`` node per instruction, which a gradient needs;
a finite difference needs only the output's value, at many points that differ from one
base point in a single input.  ``FloatPoint`` runs the program once on plain floats, then
answers "the output with input x set to v" by recomputing only the instructions that
depend on x (its *cone*), reading every other register from the base point.  The values
are the op table's kernels, the same ones ``Value`` uses, so each result is bit for bit
what ``evaluate`` would give, and so are the errors: a domain error or an overflow
anywhere in the cone raises the same ``EvaluationError``, at the same position.

Memory: one float per instruction, plus the cone of the input being moved (the
instructions after it that read it, directly or not), built when that input is first
moved and dropped when another one is.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from ..engine.ops import OPS, OVERFLOW_HINT, DomainError
from ..errors import EvaluationError
from ..language.program import (
    CONST,
    INPUT,
    POWER_CONST,
    Program,
    input_value,
    missing_inputs,
    missing_inputs_error,
    output_name,
)
from .scalar import _domain_error, _shown_op

__all__ = ["FloatPoint"]


class FloatPoint:
    """Every register of ``program`` at ``values`` (inputs missing from it take their defaults)."""

    def __init__(self, program: Program, values: Mapping[str, float] | None = None,
                 output: str | None = None) -> None:
        self.program = program
        self.output = output_name(program, output)
        self._result = program.variables[self.output].register
        values = dict(values or {})
        missing = missing_inputs(program, values)
        if missing:
            raise missing_inputs_error(program, missing)
        instructions = program.instructions
        # One (kernel, a, b, constant) row per instruction: a kernel and its operand registers
        # (b = -1 for one operand; a = -2 for a constant power, whose exponent is ``constant``),
        # or None for an input or a constant, whose value is fixed.
        self._rows: list[tuple[object, int, int, float]] = []
        registers: list[float] = []
        variables = program.variables
        for index, (op, args, param, _position) in enumerate(instructions):
            if op == INPUT:
                self._rows.append((None, -1, -1, 0.0))
                registers.append(input_value(variables[param], values))
                continue
            if op == CONST:
                self._rows.append((None, -1, -1, 0.0))
                registers.append(float(param))
                continue
            kernel = OPS[op].scalar
            a = args[0]
            b = args[1] if len(args) == 2 else (-2 if op == POWER_CONST else -1)
            constant = float(param) if op == POWER_CONST else 0.0
            self._rows.append((kernel, a, b, constant))
            registers.append(self._compute(index, registers))
        self.registers = registers
        self._work = list(registers)  # where moved points are computed; restored between inputs
        self._cone_of: int | None = None
        self._cone: list[tuple[int, object, int, int, float]] = []

    @property
    def value(self) -> float:
        """The output at the base point."""
        return self.registers[self._result]

    def output_with(self, name: str, value: float) -> float:
        """The output with input ``name`` set to ``value`` and every other input as at the base point.

        Raises ``EvaluationError`` exactly where ``evaluate`` would.
        """
        register = self.program.variables[name].register
        if self._cone_of != register:
            self._switch_to(register)
        work = self._work
        work[register] = float(value)
        isfinite = math.isfinite
        # The loop of _compute, inlined: it runs once per instruction of the cone, millions of
        # times when every input of a large program is checked.
        index = -1
        try:
            for index, kernel, a, b, constant in self._cone:
                if b >= 0:
                    result = kernel(work[a], work[b])[0]
                elif b == -1:
                    result = kernel(work[a])[0]
                else:
                    result = kernel(work[a], constant)[0]
                if not isfinite(result):
                    return self._compute(index, work)  # raises the overflow error
                work[index] = result
        except DomainError:
            self._compute(index, work)  # raises it as an EvaluationError with its position
            raise  # pragma: no cover - _compute raised above
        return work[self._result]

    def output_along(self, direction: Mapping[str, float], t: float) -> float:
        """The output with every input ``name`` moved to its base value + t * direction[name].

        The whole program is recomputed (every input moves), on floats.
        """
        registers = list(self.registers)
        variables = self.program.variables
        for name, component in direction.items():
            register = variables[name].register
            registers[register] = self.registers[register] + t * component
        for index, row in enumerate(self._rows):
            if row[0] is not None:
                registers[index] = self._compute(index, registers)
        return registers[self._result]

    def _switch_to(self, register: int) -> None:
        work, base = self._work, self.registers
        for row in self._cone:  # undo the last input's moves
            work[row[0]] = base[row[0]]
        if self._cone_of is not None:
            work[self._cone_of] = base[self._cone_of]
        self._cone = self._cone_from(register)
        self._cone_of = register

    def _cone_from(self, register: int) -> list[tuple[int, object, int, int, float]]:
        """The instructions after ``register`` that read it, directly or through others, in
        order, each as (index, kernel, a, b, constant)."""
        rows = self._rows
        reached = bytearray(len(rows))
        reached[register] = 1
        cone = []
        append = cone.append
        for index in range(register + 1, len(rows)):
            kernel, a, b, constant = rows[index]
            if kernel is not None and (reached[a] or (b >= 0 and reached[b])):
                reached[index] = 1
                append((index, kernel, a, b, constant))
        return cone

    def _compute(self, index: int, registers: list[float]) -> float:
        kernel, a, b, constant = self._rows[index]
        try:
            if b >= 0:
                result = kernel(registers[a], registers[b])[0]  # type: ignore[operator]
            elif b == -1:
                result = kernel(registers[a])[0]  # type: ignore[operator]
            else:
                result = kernel(registers[a], constant)[0]  # type: ignore[operator]
        except DomainError as error:
            instruction = self.program.instructions[index]
            raise _domain_error(error, instruction.position, self.program) from None
        if not math.isfinite(result):
            instruction = self.program.instructions[index]
            raise EvaluationError(
                f"the result of '{_shown_op(instruction.op)}' overflows a float ({result})",
                instruction.position, self.program.source, OVERFLOW_HINT,
            )
        return result
