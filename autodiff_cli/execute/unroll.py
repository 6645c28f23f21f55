"""The scalar view of a tensor program: the same computation unrolled into scalar instructions.

A tensor program's ``P = X @ W`` is, entry by entry, micrograd's graph: ``P[i, 0] = X[i, 0] *
W[0, 0] + X[i, 1] * W[1, 0]``.  ``scalar_view`` writes that graph as a scalar ``Program`` (ops of
``engine.ops.OPS`` only, every register a number), so the scalar machinery draws and explains
it unchanged: ``execute.scalar.evaluate`` builds its ``Value`` graph, ``render.dot`` draws it,
``analysis.steps`` explains it.  ``layer_view`` does the same for one statement ("a layer") and
one row of it, with the entries it reads as inputs.

Each tensor op is unrolled into the scalar ops of its definition:

- elementwise ops: one op per entry of the broadcast result;
- ``@``: each entry is a sum of products, added left to right;
- ``sum``/``mean``: sums left to right (``mean`` then divides by the count);
- ``softmax``, ``log_softmax``, ``logsumexp``, ``cross_entropy``: ``exp``, sums and ``log`` around
  a shift ``m`` (the row's maximum), a constant as in the tensor op; the results do not depend on
  ``m``, so neither do the derivatives;
- ``max``/``min``: the entry that is the extreme; at a tie of k entries, their sum divided by k
  (the same value), which shares the gradient among them as the tensor op does;
- ``transpose``, indexing and slicing: no op, the entries are the operand's own;
- ``mse``: differences, squares, a sum and a division.

Values agree with the tensor interpreter's to rounding (sums are added in a different order).
Nothing is recursive: each tensor instruction is unrolled with NumPy index arrays in one pass.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..engine.registry import ENTRIES
from ..errors import ProgramError
from ..language.program import (
    CONST,
    INPUT,
    INTERMEDIATE,
    Instruction,
    Program,
    Variable,
    missing_inputs,
    missing_inputs_error,
)
from .columns import entry_column
from .interpreter import input_arrays, run_forward

__all__ = ["DEFAULT_LIMIT", "ScalarView", "TooLarge", "layer_view", "scalar_view", "statement_names", "statement_start"]

DEFAULT_LIMIT = 100_000


class TooLarge(ProgramError):
    """The scalar view would hold more scalar operations than the caller allows."""


@dataclass
class ScalarView:
    """A scalar program equivalent to (part of) a tensor program.

    ``entries`` maps each variable of the tensor program shown to the registers of ``program``
    holding its entries (an int array shaped like the variable, or like its chosen row);
    ``names`` maps registers to the entry names they are shown by (``W1[3, 0]``, ``b``)."""

    program: Program
    values: dict[str, float]
    entries: dict[str, Any]
    names: dict[int, str]
    row: int | None
    output: str


class _Emitter:
    """Appends scalar instructions, counting them against the limit."""

    def __init__(self, program: Program, limit: int) -> None:
        self.source = program.source
        self.instructions: list[Instruction] = []
        self.variables: dict[str, Variable] = {}
        self.values: dict[str, float] = {}
        self.limit = limit

    def emit(self, op: str, args: tuple[int, ...], param: Any, where: Any) -> int:
        if len(self.instructions) >= self.limit:
            raise TooLarge(
                f"the scalar view has more than {self.limit:,} scalar operations", None, self.source,
                "show one layer (--expand NAME) for one row (--row i), or allow more with --max-nodes")
        assert min(args, default=0) >= 0, f"{op} reads an entry that was not unrolled"  # a bug in _needed
        self.instructions.append(Instruction(op, args, param, where))
        return len(self.instructions) - 1

    def const(self, number: float, where: Any) -> int:
        return self.emit(CONST, (), float(number), where)

    def input(self, name: str, value: float, where: Any, declared: Any) -> int:
        register = self.emit(INPUT, (), name, where)
        self.variables[name] = Variable(name, INPUT, declared, register, float(value), self.source)
        self.values[name] = float(value)
        return register

    def name(self, name: str, register: int, declared: Any) -> None:
        if name not in self.variables:
            self.variables[name] = Variable(name, INTERMEDIATE, declared, register, source=self.source)

    @staticmethod
    def indices(shape: tuple[int, ...], mask: Any) -> Any:
        """Every index of ``shape``, or those ``mask`` marks (for the registry's unrollings)."""
        return _indices(shape, mask)

    def fold(self, registers: Any, where: Any) -> int:
        """The sum of ``registers``, added left to right; 0 for none (a sum over an empty slice)."""
        flat = [int(r) for r in np.ravel(registers)]
        if not flat:
            return self.const(0.0, where)
        total = flat[0]
        for register in flat[1:]:
            total = self.emit("+", (total, register), None, where)
        return total


def scalar_view(program: Program, given: Mapping[str, Any], *, seed: int | None = 0,
                limit: int = DEFAULT_LIMIT) -> ScalarView:
    """The whole program, every entry of every tensor, as one scalar program."""
    arrays, run = _forward(program, given, seed)
    emitter = _Emitter(program, limit)
    declared = {v.register: v for v in program.variables.values()}
    ids: list[Any] = []
    for register, (op, first, second, param, where) in enumerate(run.rows):
        if op == INPUT:
            ids.append(_entry_inputs(emitter, param, arrays[param], where, declared[register]._where))
        else:
            ids.append(_unroll(emitter, run, ids, register, op, first, second, param, where))
    entries = _name_entries(emitter, program, ids)
    output = program.result
    out = ids[program.variables[output].register]
    if np.ndim(out):
        raise ProgramError(f"the output {output} is a tensor of shape {list(np.shape(out))}", None, program.source,
                           "the scalar view follows one number back: give the program a scalar output")
    return _view(emitter, program, entries, None, output)


def layer_view(program: Program, given: Mapping[str, Any], name: str, *, row: int | None = None,
               upstream: Any = None, label: str | None = None, seed: int | None = 0,
               limit: int = DEFAULT_LIMIT) -> ScalarView:
    """The statement that defines ``name`` alone, for one row of it.

    The entries of ``name`` (row ``row`` of its first axis when it has two or more axes, every
    entry otherwise) are computed from the entries of the registers the statement reads, which
    become inputs holding their forward values.  The view's output adds those entries, each
    weighted by ``upstream`` when it is given (the tensor program's dL/d``name`` for that row),
    so that its backward pass gives each operand entry's share of dL/d operand through this
    statement and row; summed over the rows, the shares are the matrix-form gradient.  The
    output is named ``label``: by default ``sum(NAME)``, or with ``upstream`` ``L_via_NAME``
    (``L`` the program's output)."""
    variable = program.variables.get(name)
    if variable is None:
        raise ProgramError(f"there is no variable {name!r} to expand", None, program.source,
                           "name a variable the program writes or takes as an input")
    arrays, run = _forward(program, given, seed)
    target = variable.register
    first_of_statement = statement_start(program, target)
    emitter = _Emitter(program, limit)
    declared = {v.register: v for v in program.variables.values()}
    names = program.names_by_register()
    chosen, row = _row_of(run.shapes[target], row, name, program)
    masks = _needed(run, first_of_statement, target, chosen)
    ids: dict[int, Any] = {}
    for register in range(first_of_statement, target + 1):
        op, first, second, param, where = run.rows[register]
        if register not in masks or not masks[register].any():
            continue  # the chosen entries do not depend on it (a comparison reads values, not entries)
        for operand in program.operands(register, first, second):
            if operand not in ids:
                shown = names.get(operand) or f"({_operand_text(run, operand)})"
                ids[operand] = _entry_inputs(emitter, shown, np.asarray(run.values[operand]), where,
                                             (declared.get(operand) or variable)._where, masks.get(operand))
        if op == INPUT:
            ids[register] = _entry_inputs(emitter, param, arrays[param], where, declared[register]._where,
                                          masks[register])
        else:
            ids[register] = _unroll(emitter, run, ids, register, op, first, second, param, where, masks[register])
    mine = np.asarray(ids[target])[chosen]
    entries = {name: mine}
    base = (row,) if row is not None else ()
    for index in np.ndindex(np.shape(mine)):
        register = int(mine[index])
        if emitter.instructions[register].op != INPUT:
            emitter.name(entry_column(name, base + index), register, variable._where)
    weights = None if upstream is None else np.broadcast_to(np.asarray(upstream, dtype=float), np.shape(mine))
    root = _weighted_sum(emitter, mine, weights, run.rows[target][4])
    label = label or (f"sum({name})" if weights is None else f"{program.result}_via_{name}")
    emitter.name(label, root, variable._where)
    return _view(emitter, program, entries, row, label)


def _forward(program: Program, given: Mapping[str, Any], seed: int | None) -> tuple[dict[str, Any], Any]:
    """Every input's array and the forward run: the values constants are taken from (a row's
    shift, an extreme's position, a label)."""
    arrays = input_arrays(program, given, seed)
    missing = missing_inputs(program, arrays)
    if missing:
        raise missing_inputs_error(program, missing)
    return arrays, run_forward(program, arrays, check=False)


def _view(emitter: _Emitter, program: Program, entries: dict[str, Any], row: int | None, output: str) -> ScalarView:
    scalar = Program(program.source, emitter.instructions, emitter.variables, output, tensor_syntax=False)
    names = {v.register: v.name for v in reversed(list(emitter.variables.values()))}
    return ScalarView(scalar, emitter.values, entries, names, row, output)


def statement_start(program: Program, target: int) -> int:
    """The first register of the statement whose value is ``target``: just after the value of
    the previous statement that computes something (a statement's operands that are names are
    read, not recomputed).  An input is an instruction of its own where it is first written:
    inside the statement (``b`` in ``relu(X @ W + b)``), or before it, in statements of their
    own, which are left out."""
    computed = {v.register for v in program.variables.values() if v.kind != INPUT}
    rows = program.instructions
    start = target
    while start > 0 and (start - 1) not in computed:
        start -= 1
    while start < target and rows[start].op == INPUT:
        start += 1
    return start


def statement_names(program: Program) -> dict[int, str]:
    """The statement (the named variable it computes) of every register an instruction computes,
    by ``statement_start``; an input's register is its own name's."""
    statement: dict[int, str] = {}
    for variable in program.variables.values():
        if variable.kind == INPUT:
            statement.setdefault(variable.register, variable.name)
            continue
        for register in range(statement_start(program, variable.register), variable.register + 1):
            if program.instructions[register].op != INPUT:
                statement.setdefault(register, variable.name)
    return statement


def _row_of(shape: tuple[int, ...], row: int | None, name: str, program: Program) -> tuple[Any, int | None]:
    """The index of the entries shown: one row of the first axis of a matrix (or higher), all of
    a vector or a scalar."""
    if len(shape) < 2:
        return (), None
    row = 0 if row is None else row
    if not -shape[0] <= row < shape[0]:
        raise ProgramError(f"{name} has {shape[0]} rows: there is no row {row}", None, program.source,
                           f"rows of {name} run from 0 to {shape[0] - 1}")
    return (row % shape[0],), row % shape[0]


def _operand_text(run: Any, register: int) -> str:
    op = run.rows[register][0]
    return "..." if op != CONST else "constant"


def _entry_inputs(emitter: _Emitter, name: str, value: Any, where: Any, declared: Any, mask: Any = None) -> Any:
    """An input for each entry of ``value`` (each one ``mask`` marks needed; -1 for the others)."""
    value = np.asarray(value, dtype=float)
    registers = np.full(value.shape, -1, dtype=np.int64)
    for index in _indices(value.shape, mask):
        registers[index] = emitter.input(entry_column(name, index), value[index], where, declared)
    return registers


def _indices(shape: tuple[int, ...], mask: Any) -> Any:
    """Every index of ``shape``, or those ``mask`` marks."""
    if mask is None:
        return np.ndindex(shape)
    return (tuple(int(i) for i in index) for index in np.argwhere(mask))


def _name_entries(emitter: _Emitter, program: Program, ids: list[Any]) -> dict[str, Any]:
    """Give every entry of every named variable its name, in the order the program writes them."""
    entries = {}
    for variable in sorted(program.variables.values(), key=lambda v: v.register):
        registers = np.asarray(ids[variable.register])
        entries[variable.name] = registers
        for index in np.ndindex(registers.shape):
            emitter.name(entry_column(variable.name, index), int(registers[index]), variable._where)
    return entries


def _weighted_sum(emitter: _Emitter, registers: Any, weights: Any, where: Any) -> int:
    flat = [int(r) for r in np.ravel(registers)]
    if weights is not None:
        flat = [emitter.emit("*", (emitter.const(w, where), r), None, where)
                for w, r in zip(np.ravel(weights), flat)]
    return emitter.fold(np.asarray(flat), where)


# --- which entries one row needs -------------------------------------------------------------------


def _needed(run: Any, start: int, target: int, chosen: Any) -> dict[int, Any]:
    """For each register from ``start`` to ``target`` that the ``chosen`` entries of ``target``
    depend on, and for the registers before ``start`` they read, a boolean mask of the entries
    needed: walked back from the target, op by op, so one row of a layer over many rows unrolls
    that row alone."""
    masks: dict[int, Any] = {}
    top = np.zeros(run.shapes[target], dtype=bool)
    top[chosen] = True
    masks[target] = top
    for register in range(target, start - 1, -1):
        mask = masks.get(register)
        op, first, second, param, _ = run.rows[register]
        if mask is None or first < 0 or not mask.any():
            continue
        operands = run.program.operands(register, first, second)
        shapes = [run.shapes[r] for r in operands]
        reads = _reads(run, op, param, mask, shapes, operands)
        for operand, needed in zip(operands, reads):
            if operand in masks:
                masks[operand] = masks[operand] | needed
            else:
                masks[operand] = needed
    return masks


def _reads(run: Any, op: str, param: Any, mask: Any, shapes: list[Any], operands: tuple[int, ...]) -> list[Any]:
    """The entries of each operand that the ``mask`` entries of the result read.  An op that
    reads an operand's values as indices (gather) is given the operands' values too."""
    reads = ENTRIES[op].reads
    if getattr(reads, "takes_values", False):
        return reads(np, param, mask, shapes, [run.values[r] for r in operands])  # type: ignore[no-any-return]
    return reads(np, param, mask, shapes)  # type: ignore[no-any-return]


# --- unrolling one tensor instruction -------------------------------------------------------------


def _unroll(emitter: _Emitter, run: Any, ids: Any, register: int, op: str, first: int, second: int,
            param: Any, where: Any, mask: Any = None) -> Any:
    """The registers of the entries of one tensor instruction (those ``mask`` marks needed when
    it is given; -1 for the others)."""
    if op == CONST:
        value = np.asarray(run.values[register])
        out = np.full(value.shape, -1, dtype=np.int64)
        for index in _indices(value.shape, mask):
            out[index] = emitter.const(value[index], where)
        return out
    more = run.program.more_operands.get(register)
    if more:  # where(c, a, b), clip(x, lo, hi): the operands past the second
        return ENTRIES[op].unroll(np, emitter, run, ids, first, second, param, where, mask, more=more)
    return ENTRIES[op].unroll(np, emitter, run, ids, first, second, param, where, mask)
