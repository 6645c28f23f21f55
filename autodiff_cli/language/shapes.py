"""The shape of every register of a program, checked before anything runs.

An input takes the shape of the value given for it, else of its default (a number is a
scalar, ``()``).  Each instruction's shape follows from its operands' by the op's own
rule: elementwise ops (``engine.ops``) broadcast as NumPy does, tensor ops
(``engine.tensor_ops``) have a ``shape`` rule each.  An operand that does not fit is a
``ShapeError`` at the op's line and column, naming both shapes, so a mismatch never
becomes a NumPy traceback or a silently broadcast answer.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..engine.ops import OPS
from ..engine.tensor_ops import TENSOR_OPS, ShapeMismatch, broadcast_shape, format_shape, write
from ..errors import ShapeError
from .program import CONST, INPUT, POWER_CONST, Program, TensorConstant

__all__ = ["Shape", "infer", "shape_text"]

Shape = tuple[int, ...]


shape_text = format_shape  # ``[4, 3]``; a scalar is ``[]``


def infer(program: Program, input_shapes: Mapping[str, Shape]) -> list[Shape]:
    """The shape of every register, in order; ``input_shapes`` holds the shapes of the values
    given for inputs (the others take their default's)."""
    variables = program.variables
    names: dict[int, str] = {}
    shapes: list[Shape] = []
    for register, (op, first, second, param, where) in enumerate(program.rows()):
        if op == INPUT:
            shape = input_shapes.get(param)
            if shape is None:
                default = variables[param].default
                shape = default.shape if isinstance(default, TensorConstant) else ()
        elif op == CONST:
            shape = param.shape if isinstance(param, TensorConstant) else ()
        elif op == POWER_CONST or (op in OPS and OPS[op].arity == 1):
            shape = shapes[first]
        else:
            operands = (shapes[first],) if second < 0 else (shapes[first], shapes[second])
            try:
                shape = broadcast_shape(operands) if op in OPS else TENSOR_OPS[op].shape(operands, param)
            except ShapeMismatch as mismatch:
                if not names:
                    names = program.names_by_register()
                    _name_constants(program, names)
                raise ShapeError(f"{_written(op, first, second, param, names)}: {mismatch.message}", where,
                                 program.source, mismatch.hint) from None
        shapes.append(shape)
    return shapes


_SHOWN_ENTRIES = 6  # a literal of up to this many numbers is written out in messages


def _name_constants(program: Program, names: dict[int, str]) -> None:
    """Name the constants without a name by how they are written: ``2``, ``[1, 2, 3]`` (``[...]``
    for a longer literal), so a message writes ``W @ [1, 2, 3]`` rather than ``W @ (...)``."""
    from .program import ArrayLiteral, _number_text

    for register, (op, _, _, param, _) in enumerate(program.rows()):
        if op != CONST or register in names:
            continue
        if isinstance(param, ArrayLiteral):
            names[register] = param.written() if len(param.values) <= _SHOWN_ENTRIES else "[...]"
        elif not isinstance(param, TensorConstant):
            names[register] = _number_text(param)


def _written(op: str, first: int, second: int, param: object, names: Mapping[int, str]) -> str:
    """The op with its operands' names (``X @ W``), ``(...)`` for an operand without one."""
    operands = (names.get(first, "(...)"), names.get(second, "(...)"))
    if op in OPS:
        return OPS[op].written.format(x=operands[0], y=operands[1], c=param)
    return write(op, operands, param)
