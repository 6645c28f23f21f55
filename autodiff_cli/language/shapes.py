"""The shape of every register of a program, checked before anything runs.

An input takes the shape of the value given for it, else of its default (a number is a
scalar, ``()``).  Each instruction's shape follows from its operands' by the op's own
rule: elementwise ops (``engine.ops``) broadcast as NumPy does, tensor ops
(``engine.tensor_ops``) have a ``shape`` rule each.  An operand that does not fit is a
``ShapeError`` at the op's line and column, naming both shapes, so a mismatch never
becomes a NumPy traceback or a silently broadcast answer.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from ..engine.ops import OPS
from ..engine.registry import ENTRIES, write
from ..engine.tensor_ops import ShapeMismatch, format_shape
from ..errors import ShapeError, printable
from .program import CONST, INPUT, MAX_AXES, POWER_CONST, ArrayLiteral, Program, TensorConstant

__all__ = ["Shape", "declared_at", "declared_shape", "example_of", "given_shape_mismatch", "infer",
           "refuse_other_column_shapes", "shape_text"]

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
            if shape is not None:
                _refuse_other_shape(program, param, shape)
            else:
                default = variables[param].default
                shape = default.shape if isinstance(default, TensorConstant) else ()
        elif op == CONST:
            shape = param.shape if isinstance(param, TensorConstant) else ()
        elif op == POWER_CONST or (op in OPS and OPS[op].arity == 1):
            shape = shapes[first]
        else:
            registers = program.operands(register, first, second)
            operands = tuple(shapes[r] for r in registers)
            try:
                shape = ENTRIES[op].shape(operands, param)
                if len(shape) > MAX_AXES:  # reshape and stack can make what no literal may
                    raise ShapeMismatch(f"its result would have {len(shape)} axes, more than a tensor may have "
                                        f"({MAX_AXES})", "a tensor of that many axes is no program's; check "
                                        "the shape it is given")
            except ShapeMismatch as mismatch:
                if not names:
                    names = program.names_by_register()
                    _name_constants(program, names)
                raise ShapeError(f"{_written(op, registers, param, names)}: {mismatch.message}", where,
                                 program.source, mismatch.hint) from None
        shapes.append(shape)
    return shapes


def declared_shape(program: Program, name: str) -> Shape | None:
    """The shape the program gives input ``name`` by its default, a list literal or an initializer
    (``W = [[0], [0]]``, ``W1 = uniform([16, 2], -1, 1)``); None for a number default or none:
    such an input takes any shape it is given."""
    variable = program.variables.get(name)
    if variable is None or variable.kind != INPUT or not isinstance(variable.default, TensorConstant):
        return None
    return tuple(variable.default.shape)


def given_shape_mismatch(program: Program, name: str, shape: Shape, given_by: str = "") -> tuple[str, str] | None:
    """(message, hint) when a value of ``shape`` given for input ``name`` does not fit its default's
    shape, None when it fits.  It fits when it has as many axes, and where either has an axis of
    size 1 the other's is 1 too: such axes are the ones broadcasting stretches, so a value that
    differs there is stretched into a silently wrong answer (``[1, 2]`` for a 2 x 1 ``W`` makes
    ``X @ W - Y`` 8 x 8; ``[[1, 2]]`` for a 16 x 2 ``W1`` makes 16 equal rows).  Other sizes may
    differ (200 rows of data where the default has 8): the ops' own shape rules check those.
    ``given_by`` (`` by --set``) says how the value was given; the caller says where, and may add
    an example of the fix (``example_of``)."""
    declared = declared_shape(program, name)
    if declared is None or _fits(tuple(shape), declared):
        return None
    if not shape:
        why = "a number where it has a tensor"
    elif len(shape) != len(declared):
        why = f"{len(shape)} ax{'i' if len(shape) == 1 else 'e'}s where it has {len(declared)}"
    else:
        axis = next(axis for axis, (g, d) in enumerate(zip(shape, declared)) if g != d and 1 in (g, d))
        why = f"axis {axis} of size {shape[axis]} where it has {declared[axis]}"
    message = (f"the value given for {name}{given_by} has shape {shape_text(shape)}, but {name}'s default has "
               f"shape {shape_text(declared)} ({why}: the value would be broadcast)")
    return message, f"give {name} a value of shape {shape_text(declared)}"


def _fits(shape: Shape, declared: Shape) -> bool:
    return len(shape) == len(declared) and all(g == d or (g != 1 and d != 1) for g, d in zip(shape, declared))


def declared_at(program: Program, name: str) -> str:
    """A note for an error said elsewhere (a values file): where input ``name``'s default is written."""
    variable = program.variables[name]
    default = variable.default
    written: str = getattr(default, "written", lambda: "")()  # a literal's or an initializer's text
    if len(written) > 40:
        written = written[:37] + "..."
    position = variable.position
    return f"{name} is declared at {printable(program.source.name)}:{position.line}:{position.column}: " \
           f"{name} = {written}"


def example_of(values: tuple[float, ...], shape: Shape) -> str | None:
    """``values`` (row-major) written as nested arrays of ``shape``, ``[[1], [2]]``, when they fill
    it and are few enough to read in a message; None otherwise."""
    if len(values) != math.prod(shape) or len(values) > _SHOWN_ENTRIES or not shape:
        return None
    return ArrayLiteral(tuple(shape), tuple(values)).written()


def refuse_other_column_shapes(program: Program, rows: Mapping[str, object]) -> None:
    """An error for a column of rows named after an input (``x``, one value a row) whose values
    have another shape than the input's default: a number a row for ``x = [0, 0]`` would be
    broadcast.  ``rows`` maps column names to arrays of shape ``(rows, *shape)``."""
    from itertools import product

    from ..errors import InputError

    for name, column in rows.items():
        shape = tuple(getattr(column, "shape", ())[1:])
        found = given_shape_mismatch(program, name, shape)
        if found is None:
            continue
        declared = declared_shape(program, name)
        assert declared is not None
        entries = [f"{name}[{', '.join(map(str, index))}]" for index in product(*map(range, declared))]
        what = "one number a row" if not shape else f"a {shape_text(shape)} value a row"
        raise InputError(f"the column {name} holds {what}, but {name}'s default has shape {shape_text(declared)}",
                         program.variables[name].position, program.source,
                         f"give {name} by one column per entry: {', '.join(entries[:3])}"
                         f"{' ... ' + entries[-1] if len(entries) > 3 else ''}")


def _refuse_other_shape(program: Program, name: str, shape: Shape) -> None:
    """``given_shape_mismatch`` as a ShapeError at the input's name in the program: where a value
    given by a column of rows, or by a caller of the library, reaches the program."""
    found = given_shape_mismatch(program, name, shape)
    if found is not None:
        raise ShapeError(found[0], program.variables[name].position, program.source, found[1])


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


def _written(op: str, registers: tuple[int, ...], param: object, names: Mapping[int, str]) -> str:
    """The op with its operands' names (``X @ W``), ``(...)`` for an operand without one."""
    operands = tuple(names.get(r, "(...)") for r in registers) + ("(...)",) * (2 - len(registers))
    if op in OPS:
        return OPS[op].written.format(x=operands[0], y=operands[1], c=param)
    return write(op, operands, param)
