"""The slips of a backward pass's lines (``analysis.backward_claims``), each found by its values:
a shape that a sum or a transposition would fix, a transposed square result, a flipped sign, a
constant ratio, a product with an operand transposed, and local derivatives written wrong (the
formulas of ``check --claim``'s table, evaluated on arrays by the language itself).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from ..engine.registry import ENTRIES
from ..engine.tensor_ops import argument_values, pack_arguments, unbroadcast
from ..errors import AutodiffError, Position, ShapeError
from ..execute.interpreter import run_forward
from ..language.program import CONST, INPUT, Instruction, Program, Variable
from ..language.shapes import shape_text
from .claim_text import RESULT_PREFIX
from .claims import SIGN_SLIP, Slip

if TYPE_CHECKING:
    from .backward_claims import GradientLine

__all__ = ["OPERATOR_SLIPS", "axis_changes", "broadcasts", "constant_ratio", "entries_close", "evaluate_formula",
           "operand_text", "shape_slip", "sign_slip", "summed_axes", "transposed_slip", "with_names", "with_product"]

# Two arrays agree entry by entry when |a - b| <= ABSOLUTE * scale + RELATIVE * max(|a|, |b|), with
# scale the largest entry of the true gradient (at least 1): rounding written two ways.
RELATIVE = 1e-8
ABSOLUTE = 1e-10


def entries_close(a: Any, b: Any) -> Any:
    scale = max(1.0, float(np.max(np.abs(b)))) if np.size(b) else 1.0
    with np.errstate(all="ignore"):
        return np.isfinite(a) & (np.abs(a - b) <= ABSOLUTE * scale + RELATIVE * np.maximum(np.abs(a), np.abs(b)))


def shape_slip(line: GradientLine, pairs: Sequence[tuple[Any, Any]]) -> Slip:
    claimed_shape, shape = np.shape(pairs[0][0]), np.shape(pairs[0][1])
    said = f"the line has shape {shape_text(claimed_shape)}, and {line.gradient} has {line.variable}'s shape " \
           f"{shape_text(shape)}"
    axes = summed_axes(claimed_shape, shape)
    if axes is not None and all(np.all(entries_close(unbroadcast(np, c, shape, 0), t)) for c, t in pairs):
        keep = len(claimed_shape) == len(shape)
        written = ", ".join(map(str, axes))
        how = f"sum(..., {written}{', keepdim' if keep else ''})" if len(axes) == 1 else f"a sum over axes {written}"
        return Slip("missing sum", f"a missing sum over the broadcast axis {written}: {said}; summed over it "
                                   f"({how}) the line agrees")
    for axis in range(len(claimed_shape)):  # a reduction forgotten along an axis broadcasting did not add
        if np.shape(np.sum(pairs[0][0], axis=axis)) == shape and \
                all(np.all(entries_close(np.sum(c, axis=axis), t)) for c, t in pairs):
            return Slip("missing sum", f"a missing sum over axis {axis}: {said}; summed over it (sum(..., {axis})) "
                                       "the line agrees")
    if broadcasts(claimed_shape, shape) and all(np.all(entries_close(np.broadcast_to(c, shape), t)) for c, t in pairs):
        return Slip("missing sum", f"{said}: right only by broadcasting, its values agree once stretched to "
                                   f"{shape_text(shape)} (a gradient has its variable's shape)")
    if len(shape) == 2 and claimed_shape == shape[::-1] and all(np.all(entries_close(c.T, t)) for c, t in pairs):
        return Slip("transposed", f"the line is transposed: {said}")
    if axes is not None:
        return Slip("missing sum", f"{said}: a sum over axis {', '.join(map(str, axes))} would give the shape, "
                                   "but its values would still differ")
    return Slip("shape", said)


def summed_axes(claimed: tuple[int, ...], shape: tuple[int, ...]) -> list[int] | None:
    """The axes of ``claimed`` a sum over which gives ``shape`` as broadcasting undoes it, or None."""
    extra = len(claimed) - len(shape)
    if extra < 0:
        return None
    axes = list(range(extra))
    for i, size in enumerate(shape):
        if claimed[extra + i] == size:
            continue
        if size != 1:
            return None
        axes.append(extra + i)
    return axes or None


def broadcasts(claimed: tuple[int, ...], shape: tuple[int, ...]) -> bool:
    try:
        return np.broadcast_shapes(claimed, shape) == tuple(shape)
    except ValueError:
        return False


def transposed_slip(line: GradientLine, pairs: Sequence[tuple[Any, Any]]) -> Slip | None:
    if all(np.ndim(t) == 2 and np.shape(t)[0] == np.shape(t)[1] and np.all(entries_close(c, t.T)) and
           not np.all(entries_close(t, t.T)) for c, t in pairs):
        return Slip("transposed", f"the line is transposed: it is the transpose of {line.gradient} (a square "
                                  "matrix, so the shapes agree)")
    return None


def sign_slip(line: GradientLine, pairs: Sequence[tuple[Any, Any]]) -> Slip | None:
    if all(np.all(entries_close(c, -t)) for c, t in pairs) and any(np.any(t != 0) for _, t in pairs):
        return Slip(SIGN_SLIP, f"the sign is flipped: the line is -{line.gradient}")
    return None


def constant_ratio(pairs: Sequence[tuple[Any, Any]]) -> float | None:
    ratios = []
    with np.errstate(all="ignore"):
        for claimed, truth in pairs:
            usable = np.abs(truth) > 1e-9 * max(1.0, float(np.max(np.abs(truth))))
            ratios.extend((claimed[usable] / truth[usable]).ravel().tolist())
    if len(ratios) < 2:
        return None
    ratio = float(np.median(ratios))
    if not np.all(np.abs(np.array(ratios) - ratio) <= 1e-8 * abs(ratio)) or abs(ratio - 1.0) < 1e-9 or ratio == 0:
        return None
    return ratio


def with_product(expression: Program, register: int, inputs: Mapping[str, Any], change: Any) -> Any:
    """The expression's value with the product at ``register`` replaced by ``change(a, b)`` of its
    operands (an error where that cannot be computed)."""
    a, b = expression.instructions[register].args
    try:
        before = run_forward(_cut(expression, register), inputs)
        x, y = before.values[a], before.values[b]
        if np.ndim(x) != 2 or np.ndim(y) != 2:
            raise ValueError("a product of a vector has no transposed form")
        product = change(x, y)
        changed = _replaced(expression, register)
        return np.asarray(run_forward(changed, {**inputs, _PRODUCT: product}).value(expression.result), dtype=float)
    except (AutodiffError, ValueError) as error:
        return error if isinstance(error, AutodiffError) else ShapeError(str(error))


_PRODUCT = "__product__"


def axis_changes(expression: Program, inputs: Mapping[str, Any]) -> list[tuple[int, int, int, Program]]:
    """Each reduction of the expression over one axis (``sum(x, 1)``) with that axis changed to
    another of its operand: (register, axis written, other axis, the expression so changed)."""
    found = []
    try:
        values = run_forward(expression, inputs).values
    except AutodiffError:
        return []
    for register, instruction in enumerate(expression.instructions):
        schema = getattr(ENTRIES.get(instruction.op), "arguments", ())
        if not schema or schema[0].name != "axis" or len(instruction.args) != 1:
            continue
        arguments = argument_values(schema, instruction.param)
        axis, rank = arguments[0], np.ndim(values[instruction.args[0]])
        if not isinstance(axis, int) or rank < 2:
            continue
        for other in range(rank):
            if other == axis % rank:
                continue
            instructions = list(expression.instructions)
            param = pack_arguments(schema, (other, *arguments[1:]))
            instructions[register] = instruction._replace(param=param)
            found.append((register, axis, other, replace(expression, instructions=instructions)))
    return found


def _cut(expression: Program, register: int) -> Program:
    """The expression's instructions before ``register``."""
    kept = {name: v for name, v in expression.variables.items() if v.register < register}
    result = max(kept.values(), key=lambda v: v.register).name
    return replace(expression, instructions=list(expression.instructions)[:register], variables=kept, result=result)


def _replaced(expression: Program, register: int) -> Program:
    """The expression with the instruction at ``register`` made an input named ``_PRODUCT``."""
    instructions = list(expression.instructions)
    position = instructions[register].position
    instructions[register] = Instruction(INPUT, (), _PRODUCT, position)
    variables = dict(expression.variables)
    variables[_PRODUCT] = Variable(_PRODUCT, INPUT, Position(1, 1), register)
    return replace(expression, instructions=instructions, variables=variables)


def operand_text(expression: Program, register: int, depth: int = 0) -> str:
    """An operand of the line as written: a name, a number, or a one-operand op of one (transpose(h))."""
    for variable in expression.variables.values():
        if variable.register == register and variable.kind == INPUT:
            return variable.name
    instruction = expression.instructions[register]
    if instruction.op == CONST:
        return f"{instruction.param:g}"
    tensor_op = ENTRIES.get(instruction.op)
    if tensor_op is not None and not tensor_op.elementwise and tensor_op.arity == 1 and instruction.param is None and depth < 3:
        return tensor_op.written.format(x=operand_text(expression, instruction.args[0], depth + 1))
    return "(...)"


def with_names(formula: str, words: Mapping[str, str], written: str) -> str:
    """A local derivative's formula in x, y, c and out, with the operands' names put in."""
    def word(found: re.Match[str]) -> str:
        name = found.group()
        if name == "out":
            return written
        return words.get(name, name)

    return re.sub(r"\b(?:x|y|c|out)\b", word, formula)


def evaluate_formula(formula: str, given: Mapping[str, Any]) -> Any:
    """A local derivative's formula (in x, y, c, out) at the given arrays, or None where undefined."""
    from ..language.compiler import parse

    program = _FORMULAS.get(formula)
    if program is None:
        program = _FORMULAS[formula] = parse(f"{RESULT_PREFIX}{formula}", "<formula>")
    try:
        run = run_forward(program, {v.name: np.asarray(given[v.name], dtype=float) for v in program.inputs})
    except AutodiffError:
        return None
    return run.value(program.result)


_FORMULAS: dict[str, Program] = {}

# Slips of the operators' local derivatives, beside check --claim's table (claims.WRONG_RULES):
# a product's own operand in place of the other.
OPERATOR_SLIPS: dict[tuple[str, int], tuple[tuple[str, str], ...]] = {
    ("*", 0): (("x", "x (its own operand, not the other one)"),),
    ("*", 1): (("y", "y (its own operand, not the other one)"),),
}
