"""The column sweep: a float64 ``Program`` of numbers over columns of rows, forward and reverse.

``batch_evaluator.BatchEvaluator`` runs a program of numbers given columns of numbers here (the
interpreter runs the rest).  Where the scalar interpreter builds one graph of ``Value`` nodes per set of inputs,
this one runs the same instruction list once per *chunk* of rows: each register
holds a float64 column (one element per row) instead of a number.  The forward
sweep applies each op's ``vector`` kernel from the op table, front to back; the
reverse sweep multiplies adjoint columns by the local derivatives the kernels
return, back to front.  Rows never mix, so row ``r`` of every result is what the
scalar engine computes for row ``r`` of the inputs.

Conventions are the scalar engine's, row by row:

* The maths is the op table's (relu'(0) = abs'(0) = 0, sqrt'(0) = inf, ``x**y``'s
  slopes, overflow-safe tanh and sigmoid), and the reverse sweep adds the
  contributions to each adjoint in the order ``Value.backward`` does.  Where both use
  the same IEEE operations (+ - * /, neg, sqrt, abs, relu, sign, step, copies, the
  constant-exponent slopes 0, 1 and 2x) the results are bit-identical; exp, log, sin,
  cos, tanh and powers come from NumPy's routines rather than the C library's, which
  may differ in the last bit or two (a few ulps, tested).
* A row *fails* where the scalar engine raises: at the first instruction whose value
  is not finite (every op gives NaN or an infinity outside its domain, and the scalar
  engine rejects any non-finite value).  Nothing is raised mid-sweep: the failed rows
  are a mask, each with the instruction where it failed, and ``on_error`` decides
  what happens to them.  The message for a failed row is the scalar engine's own,
  got by evaluating that one row again.  A value whose NaN or infinity would reach the
  output through ops that keep one (+ - * and the like) is not checked on its own: the
  output's check stands for it, and a chunk where that fails is swept again with every
  value checked, which finds the instruction where each row failed.
* Gradients of variables the output does not depend on are 0.

Memory: rows are processed in chunks sized so that the live registers, the stored
local derivatives and the adjoints of one chunk fit in ``CHUNK_BYTES``; a register's
values are dropped after their last use, its local derivatives and its adjoint as
soon as the reverse sweep has passed it; adjoints accumulate in place; results go
into arrays allocated once.  Registers that do not depend on any column (constants,
inputs given as one number, and what is computed from them only) are computed once
per call, not once per chunk.  A sum or mean adds runs of ``SUM_ROWS`` rows, then their
sums exactly, so its last bits do not depend on how many rows a chunk has.

``ColumnSweep`` is the executor ``BatchEvaluator`` calls; the inputs are read, the modes checked
and the result made there.  This module imports NumPy, so nothing imports it at start-up.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..engine.graph import paused_cycle_collector
from ..engine.ops import OPS, overflow_advice
from ..errors import EvaluationError
from ..language.program import CONST, INPUT, POWER_CONST, Program
from .batch_evaluator import RowError, row_error
from .scalar import evaluate

__all__ = ["CHUNK_BYTES", "CHUNK_SUMS", "SUM_ROWS", "ColumnSweep"]


# Working memory of one chunk (registers, local derivatives, adjoints).
CHUNK_BYTES = 48 * 2**20
# A sum or mean over the rows adds each run of SUM_ROWS rows with NumPy's pairwise sum, then
# adds those sums exactly (fsum).  The last bits of every reduced result (what `fit` trains
# on) depend on it, so it stays put; only a program too large for CHUNK_BYTES makes it smaller.
SUM_ROWS = 16_384
# A chunk is up to CHUNK_SUMS such runs (1 MiB a column): the Python work per instruction is paid
# per chunk, and it cost as much as the arithmetic on 16,384 rows (a training step over 1e6 rows
# was 1.2-1.4x faster with 4-16 runs a chunk than with 1; which of 4, 8 or 16, lost in the noise).
CHUNK_SUMS = 8

_FLOAT = np.float64
_ONE = _FLOAT(1.0)


# glibc's malloc gives a block of 128 KiB or more its own mmap, unmapped when it is freed,
# until the process frees a larger mmapped block: from then on blocks up to that size come
# from the heap, which is trimmed only when twice that is free at its top.  A chunk's
# columns are such blocks, made and freed at every instruction; in a process that had
# freed no large array each of them cost page faults (a step over 131,072 rows took 3.7x
# its time).  One block the size of a chunk's working memory, allocated and freed without
# being touched, raises the threshold; with another allocator it costs nothing.
_MMAP_THRESHOLD_MAX = 32 * 2**20  # glibc's ceiling on 64-bit systems: a larger block is ignored
_heap_holds = 0


def _let_the_heap_hold(size: int) -> None:
    """Make blocks of up to ``size`` bytes come from the heap and stay there once freed (see above)."""
    global _heap_holds
    size = min(size, _MMAP_THRESHOLD_MAX - 2**16)
    if size > _heap_holds and size >= 2**17:
        np.empty(size, dtype=np.uint8)  # freed at once, its pages never touched
        _heap_holds = size


class ColumnSweep:
    """A float64 program of numbers planned once for its output, ``wrt`` and ``values_of`` names:
    ``run`` sweeps columns of rows through it; ``row_error`` says why a row failed."""

    def __init__(self, program: Program, output: str, wrt: Sequence[str], values_of: Sequence[str],
                 advice: Any) -> None:
        self.program, self.output, self.advice = program, output, advice
        self.wrt, self.values_of = list(wrt), list(values_of)
        with paused_cycle_collector():  # per-register lists of a large program: no cycles to find
            self.plan = _Plan(program, output, self.wrt, self.values_of)

    def run(self, columns: Mapping[str, Any], rows: int, reduce: str | None,
            on_error: str) -> tuple[dict[str, Any], dict[str, Any], np.ndarray, np.ndarray | None, int, Any]:
        """Values and gradients over the ``rows`` rows of ``columns`` (each input's 1-D float64
        column, or a NumPy float64 every row shares): per row, or summed (``reduce``); the rows
        that failed, those kept and counted, and the instruction where each failed (None: none did).
        With ``on_error`` "raise", the first failed row's ``RowError``."""
        plan = self.plan
        collected = _Collected(plan, rows, reduce, on_error)
        _let_the_heap_hold(8 * plan.peak_columns * min(rows, plan.chunk_rows))
        # Outside its domain an op gives NaN or inf, which the sweeps check for: NumPy's
        # warnings would only repeat it.  The sweeps make no reference cycles either.
        with np.errstate(all="ignore"), paused_cycle_collector():
            uniform = plan.uniform(columns)
            sum_rows = plan.sum_rows if reduce is not None else None
            # The output's check stands for the values it covers, until a chunk has a row
            # that is not finite: from there on every value is checked (see _Chunk.forward).
            check_each = plan.output_register in uniform
            for start in range(0, rows, plan.chunk_rows):
                stop = min(rows, start + plan.chunk_rows)
                chunk = _Chunk(plan, uniform, columns, start, stop, sum_rows)
                if not chunk.forward(check_each):
                    check_each = True
                    chunk = _Chunk(plan, uniform, columns, start, stop, sum_rows)
                    chunk.forward(check_each)
                if plan.wrt_registers:
                    chunk.reverse()
                collected.add(chunk)
                if on_error == "raise" and chunk.failed is not None:
                    row = start + int(np.argmax(chunk.failed))
                    raise self.row_error(columns, row, int(collected.failed_at[row]))
        results, kept, count = collected.finish()
        values = {name: results[plan.result_key(name)] for name in self.values_of}
        grads = {name: results[plan.gradient_key(name)] for name in self.wrt}
        return values, grads, collected.failed, kept, count, collected.failed_at if collected.failures else None

    def row_error(self, columns: Mapping[str, Any], row: int, instruction: int) -> RowError:
        """The error of a failed row: the scalar engine's message, or one made from the
        failing instruction where the scalar engine disagrees (a result at the very edge
        of the float range, where NumPy's and the C library's last bits differ)."""
        inputs = {name: float(column if np.ndim(column) == 0 else column[row])
                  for name, column in columns.items()}
        program = self.program
        op, _args, param, position = program.instructions[instruction]
        if op == INPUT:
            return row_error(EvaluationError(
                f"the input '{param}' is {inputs[param]!r}, not a finite number",
                program.variables[param].position, program.source,
                "every input must be a finite number: drop or fill the missing values"
                + self.advice.missing_values), row, inputs)
        try:
            evaluate(program, inputs, self.output, backward=False)
        except EvaluationError as error:
            return row_error(error, row, inputs)
        shown = {POWER_CONST: "power", "neg": "neg", "=": "copy"}.get(op, op)
        return row_error(EvaluationError(f"the result of '{shown}' is not a finite number", position, program.source,
                                         overflow_advice(OPS.get(op))), row, inputs)


# --- the plan: what a program needs, worked out once ---------------------------------------


class _Plan:
    """Everything about the instruction list that does not depend on the rows."""

    def __init__(self, program: Program, output: str, wrt: Sequence[str], reported: Sequence[str]) -> None:
        instructions = program.instructions
        count = len(instructions)
        self.program = program
        self.instructions = instructions
        self.output_register = program.variables[output].register
        registers = {name: program.variables[name].register for name in (*wrt, *reported)}
        # Results are kept per register (two names of one register share it).
        self.reported = {}
        for name in reported:
            self.reported[("value", registers[name])] = None
        self.value_reported = [False] * count
        for name in reported:
            self.value_reported[registers[name]] = True
        wanted = {registers[name] for name in wrt}
        self.wrt_registers = sorted(wanted)
        for register in self.wrt_registers:
            self.reported[("grad", register)] = None
        self._registers = registers

        # Which adjoints the reverse sweep needs: registers the output depends on that
        # depend on a wrt register themselves.  (Plain loops: a program can have a
        # million instructions.)
        depends_on_wrt = [False] * count
        for register in wanted:
            depends_on_wrt[register] = True
        for register, instruction in enumerate(instructions):
            for a in instruction.args:
                if depends_on_wrt[a]:
                    depends_on_wrt[register] = True
        output_needs = program.dependencies(output)
        on_path = [d and o for d, o in zip(depends_on_wrt, output_needs)]
        # The registers that push an adjoint to an operand, in Value.backward's order.
        pushes = [False] * count
        for register, instruction in enumerate(instructions):
            if on_path[register]:
                for a in instruction.args:
                    if on_path[a]:
                        pushes[register] = True
        self.on_path, self.pushes = on_path, pushes
        self.reverse_order = [r for r in reversed(_backward_order(instructions, self.output_register)) if pushes[r]]

        # Forward liveness: a register's values are dropped after the last instruction
        # that reads them.
        last_use = list(range(count))
        for register, instruction in enumerate(instructions):
            for a in instruction.args:
                last_use[a] = register
        self.dies_at: list[list[int]] = [[] for _ in range(count)]
        for register, last in enumerate(last_use):
            self.dies_at[last].append(register)

        self.kernels = [None if op in (INPUT, CONST) else OPS[op].vector for op, *_ in instructions]
        # The instruction list as plain lists: a chunk reads them at every instruction, and
        # indexing ``Program.instructions`` builds an ``Instruction`` each time.
        self.ops = [op for op, *_ in instructions]
        self.args: list[tuple[int, ...]] = [args for _op, args, *_ in instructions]
        self.params: list[Any] = [param for _op, _args, param, _where in instructions]
        # The reverse sweep's steps: a register and the (position, operand) pairs it pushes to.
        self.reverse_steps = [(r, [(i, a) for i, a in enumerate(self.args[r]) if on_path[a]])
                              for r in self.reverse_order]
        self.covered = _covered_by_output(self.ops, self.args, self.params, self.output_register)
        self.nothing_covered = [False] * count
        self._uniform_registers: dict[frozenset[str], list[int]] = {}  # by the inputs given as numbers
        self.wrt_set = frozenset(self.wrt_registers)
        self.peak_columns = peak = self._peak_columns(last_use)
        self.sum_rows = max(1, min(SUM_ROWS, CHUNK_BYTES // (8 * peak)))
        pieces = max(1, min(CHUNK_SUMS, CHUNK_BYTES // (8 * peak * self.sum_rows)))
        self.chunk_rows = self.sum_rows * pieces

    def result_key(self, name: str) -> tuple[str, int]:
        return ("value", self._registers[name])

    def gradient_key(self, name: str) -> tuple[str, int]:
        return ("grad", self._registers[name])

    def _peak_columns(self, last_use: list[int]) -> int:
        """An upper bound on the columns one chunk holds at once: live values and stored
        local derivatives in the forward sweep; derivatives not yet used and live
        adjoints in the reverse sweep; the gradients kept; two temporaries."""
        instructions, pushes, on_path = self.instructions, self.pushes, self.on_path
        ending = [0] * len(instructions)
        for last in last_use:
            ending[last] += 1
        live = slopes = forward = 0
        for register, instruction in enumerate(instructions):
            live += 1
            if pushes[register]:
                slopes += len(instruction.args)
            forward = max(forward, live + slopes)
            live -= ending[register]
        alive = [False] * len(instructions)
        adjoints = backward = 0
        for register in self.reverse_order:
            for a in instructions[register].args:
                if on_path[a] and not alive[a]:
                    alive[a] = True
                    adjoints += 1
            backward = max(backward, slopes + adjoints)
            slopes -= len(instructions[register].args)
            adjoints -= alive[register]
            alive[register] = False
        return max(forward, backward) + len(self.reported) + 2

    def uniform(self, columns: Mapping[str, Any]) -> dict[int, tuple[Any, Any, bool]]:
        """The registers that are the same on every row, computed once: register ->
        (value, local derivatives or None, whether the value is finite)."""
        numbers = frozenset(name for name, column in columns.items() if np.ndim(column) == 0)
        registers = self._uniform_registers.get(numbers)
        if registers is None:
            registers = self._uniform_registers[numbers] = self._registers_of(numbers)
        ops, operands, params, kernels, pushes = self.ops, self.args, self.params, self.kernels, self.pushes
        done: dict[int, tuple[Any, Any, bool]] = {}
        for register in registers:
            op = ops[register]
            if op == INPUT:
                value, slopes = columns[params[register]], None
            elif op == CONST:
                value, slopes = _FLOAT(params[register]), None
            else:
                args = operands[register]
                kernel = kernels[register]
                value, make_slopes = (kernel(np, done[args[0]][0], params[register]) if op == POWER_CONST
                                      else kernel(np, *[done[a][0] for a in args]))
                value = _FLOAT(value)
                slopes = make_slopes() if pushes[register] else None
            finite = math.isfinite(value)
            done[register] = (value if finite else _ONE, slopes, finite)
        return done

    def _registers_of(self, numbers: frozenset[str]) -> list[int]:
        """The registers that depend on no column when the inputs ``numbers`` are numbers (one
        value for every row): constants, those inputs, and what is computed from them only."""
        ops, params = self.ops, self.params
        uniform = [False] * len(ops)
        for register, args in enumerate(self.args):
            op = ops[register]
            uniform[register] = (params[register] in numbers if op == INPUT else op == CONST or
                                 all(uniform[a] for a in args))
        return [register for register, same in enumerate(uniform) if same]




def _covered_by_output(ops: list[str], args: list[tuple[int, ...]], params: list[Any], output: int) -> list[bool]:
    """For each register, whether the output's values are not finite on every row where its own
    values are not: the output, and each register with a path to it through propagating operands
    (each op entry's ``propagates``; x ** c propagates for c > 0).  Checking the output then checks
    them all, as long as none of them is checked (and a failed row's value replaced by 1.0) on its own."""
    covered = [False] * len(ops)
    covered[output] = True
    for register in range(output, -1, -1):  # operands come before the instructions that use them
        if not covered[register]:
            continue
        op = ops[register]
        positions = ((0,) if params[register] > 0 else ()) if op == POWER_CONST else (
            OPS[op].propagates if op in OPS else ())
        for position in positions:
            covered[args[register][position]] = True
    return covered


def _run_sums(column: Any, rows: int, size: int) -> list[float]:
    """NumPy's pairwise sum of each run of ``size`` rows of a chunk's column (or of one number
    on each of ``rows`` rows), from the chunk's start; the last run may be shorter."""
    if np.ndim(column) == 0:
        column = np.broadcast_to(column, (rows,))
    if rows <= size:
        return [float(np.add.reduce(column))]
    whole = rows // size * size
    if column.flags.c_contiguous and whole:
        # The rows of a (runs, size) view are summed exactly as each run alone would be.
        sums: list[float] = np.add.reduce(column[:whole].reshape(-1, size), axis=1).tolist()
    else:
        sums = [float(np.add.reduce(column[start:start + size])) for start in range(0, whole, size)]
    if whole < rows:
        sums.append(float(np.add.reduce(column[whole:])))
    return sums


def _backward_order(instructions: Sequence[Any], root: int) -> list[int]:
    """``engine.graph.topological_order`` on registers: the same depth-first walk, so the
    reverse sweep adds each adjoint's contributions in the order ``Value.backward`` does
    (float addition is not associative: another order could change the last bit)."""
    order: list[int] = []
    done = [False] * len(instructions)
    stack = [root]
    while stack:
        node = stack[-1]
        if done[node]:
            stack.pop()
            continue
        args = instructions[node].args
        pending = False
        if len(args) == 2 and not done[args[1]]:
            stack.append(args[1])
            pending = True
        if args and not done[args[0]]:
            stack.append(args[0])
            pending = True
        if not pending:
            done[node] = True
            order.append(node)
            stack.pop()
    return order


# --- one chunk of rows ---------------------------------------------------------------------


class _Chunk:
    """The forward and reverse sweeps over rows ``start:stop``.

    ``sum_rows``: with a reduction, the length of its runs (see ``SUM_ROWS``); the output's
    run sums, which its check computes, are then kept in ``sums`` for ``_Collected``."""

    def __init__(self, plan: _Plan, uniform: dict[int, tuple[Any, Any, bool]], columns: Mapping[str, Any],
                 start: int, stop: int, sum_rows: int | None) -> None:
        self.plan = plan
        self.uniform = uniform
        self.columns = columns
        self.start, self.stop = start, stop
        self.sum_rows = sum_rows
        self.slopes: list[Any] = [None] * len(plan.ops)
        self.results: dict[tuple[str, int], Any] = {}
        self.sums: dict[tuple[str, int], list[float]] = {}
        self.failed: np.ndarray | None = None  # created when a row fails
        self.failed_at: np.ndarray | None = None

    def forward(self, check_each: bool) -> bool:
        """The forward sweep.  Each value not finite on some row fails that row (``_mark``).

        With ``check_each`` False, the values the output's check covers (``_Plan.covered``)
        are not checked one by one: if the output is finite on every row, so are they, and
        the sweep returns True; if it is not, the sweep stops and returns False, and the
        chunk is to be swept again with ``check_each``, which finds the instruction where
        each row failed.  The output must not be uniform then (it has no check per chunk)."""
        plan, uniform, slopes = self.plan, self.uniform, self.slopes
        start, stop, columns = self.start, self.stop, self.columns
        ops, operands, params, kernels = plan.ops, plan.args, plan.params, plan.kernels
        pushes, dies_at, reported = plan.pushes, plan.dies_at, plan.value_reported
        output = plan.output_register
        unchecked = plan.nothing_covered if check_each else plan.covered
        registers: list[Any] = [None] * len(ops)
        isfinite, add_reduce = math.isfinite, np.add.reduce
        for register, op in enumerate(ops):
            known = uniform.get(register)
            if known is not None:
                value, slopes[register], finite = known
                if not finite:
                    self._fail_everywhere(register)
            else:
                args = operands[register]
                if op == INPUT:
                    value = columns[params[register]][start:stop]
                elif op == POWER_CONST:
                    value, make_slopes = kernels[register](np, registers[args[0]], params[register])
                elif len(args) == 2:
                    value, make_slopes = kernels[register](np, registers[args[0]], registers[args[1]])
                else:
                    value, make_slopes = kernels[register](np, registers[args[0]])
                if not unchecked[register]:
                    # One cheap sum tells whether every row is finite; only when one is not
                    # are the rows looked at one by one.
                    if not isfinite(add_reduce(value)):
                        value = self._fail_where_not_finite(register, value)
                elif register == output and not self._output_is_finite(value):
                    return False
                if op != INPUT and pushes[register]:
                    slopes[register] = make_slopes()
            registers[register] = value
            if reported[register]:
                self.results[("value", register)] = value
            for dead in dies_at[register]:
                registers[dead] = None
        return True

    def _output_is_finite(self, value: np.ndarray) -> bool:
        """Whether the output is finite on every row (a sum that overflows says no, wrongly but
        safely), by its sum, or its run sums when they are wanted for a reduction."""
        if self.sum_rows is None:
            return math.isfinite(np.add.reduce(value))
        sums = _run_sums(value, self.stop - self.start, self.sum_rows)
        self.sums[("value", self.plan.output_register)] = sums
        return all(map(math.isfinite, sums))

    def _mark(self, register: int, rows: np.ndarray) -> None:
        if self.failed is None:
            size = self.stop - self.start
            self.failed = np.zeros(size, dtype=bool)
            self.failed_at = np.full(size, -1, dtype=np.intp)
        new = rows & ~self.failed
        self.failed |= new
        self.failed_at[new] = register

    def _fail_everywhere(self, register: int) -> None:
        self._mark(register, np.ones(self.stop - self.start, dtype=bool))

    def _fail_where_not_finite(self, register: int, value: np.ndarray) -> np.ndarray:
        bad = ~np.isfinite(value)
        if not bad.any():  # the sum overflowed, not a value
            return value
        self._mark(register, bad)
        # The failed rows carry on with 1.0, so that they do not set off this check again
        # at every later instruction; their results are discarded.
        return np.where(bad, 1.0, value)

    def reverse(self) -> None:
        plan, slopes = self.plan, self.slopes
        count = len(plan.ops)
        adjoints: list[Any] = [None] * count
        owned = [False] * count  # adjoints this sweep allocated, safe to add into
        adjoints[plan.output_register] = _ONE
        keep = plan.wrt_set
        for register, targets in plan.reverse_steps:
            g = adjoints[register]
            local = slopes[register]
            for position, a in targets:
                slope = local[position]
                # slope * g, without the multiplications that change nothing: a constant
                # slope of 1 or -1 (+ - neg =, a parameter equal to 1), or g = 1 at the top.
                if isinstance(slope, float) and (slope == 1.0 or slope == -1.0):
                    contribution, fresh = (g, False) if slope == 1.0 else (-g, True)
                elif g is _ONE and (isinstance(slope, float) or slope.dtype == _FLOAT):  # not relu's booleans
                    contribution, fresh = slope, False
                else:
                    contribution, fresh = slope * g, True
                current = adjoints[a]
                if current is None:
                    adjoints[a], owned[a] = contribution, fresh and _ndim(contribution) == 1
                elif owned[a] and _ndim(contribution) <= 1:
                    np.add(current, contribution, out=current)
                else:
                    adjoints[a] = current + contribution
                    owned[a] = _ndim(adjoints[a]) == 1
            slopes[register] = None
            if register not in keep:
                adjoints[register] = None
        for register in plan.wrt_registers:
            gradient = adjoints[register]
            self.results[("grad", register)] = _FLOAT(0.0) if gradient is None else gradient


def _ndim(value: Any) -> int:
    """``np.ndim`` without its conversion of a Python float to an array."""
    return getattr(value, "ndim", 0)  # type: ignore[no-any-return]


class _Collected:
    """The results of the chunks: one array per result (written chunk by chunk), or the
    chunks' sums; which rows failed, and at which instruction."""

    def __init__(self, plan: _Plan, rows: int, reduce: str | None, on_error: str) -> None:
        self.rows, self.reduce, self.on_error = rows, reduce, on_error
        self.sum_rows = plan.sum_rows
        self.failed = np.zeros(rows, dtype=bool)  # calloc'd: free until written
        # Filled with -1 only once a row fails: filling it at every call was 15% of a
        # training step over 1e6 rows (autodiff fit calls this once per step).
        self._failed_at: np.ndarray | None = None
        self.arrays = {key: np.empty(rows) for key in plan.reported} if reduce is None else {}
        self.sums: dict[tuple[str, int], list[float]] = {key: [] for key in plan.reported}

    @property
    def failures(self) -> bool:
        return self._failed_at is not None

    @property
    def failed_at(self) -> np.ndarray:
        """For each row, the instruction where it failed (-1: it did not)."""
        if self._failed_at is None:
            self._failed_at = np.full(self.rows, -1, dtype=np.intp)
        return self._failed_at

    def add(self, chunk: _Chunk) -> None:
        start, stop, failed = chunk.start, chunk.stop, chunk.failed
        if failed is not None:
            self.failed[start:stop] = failed
            if self._failed_at is None:
                self._failed_at = np.full(self.rows, -1, dtype=np.intp)
            self._failed_at[start:stop] = chunk.failed_at
        for key, column in chunk.results.items():
            if self.reduce is None:
                target = self.arrays[key][start:stop]
                if key[0] == "grad":
                    # Value.backward adds every contribution to a grad that starts at +0.0, so
                    # it never ends at -0.0; adding 0.0 does the same here.
                    np.add(column, 0.0, out=target)
                else:
                    target[...] = column
                if failed is not None:
                    target[failed] = np.nan
            elif failed is None:
                sums = chunk.sums.get(key)
                self.sums[key] += _run_sums(column, stop - start, self.sum_rows) if sums is None else sums
            else:
                self.sums[key] += self._sums_without(column, failed)

    def _sums_without(self, column: Any, failed: np.ndarray) -> list[float]:
        """A chunk's run sums over its rows that did not fail (``skip``), or with NaN on them."""
        full = np.broadcast_to(column, failed.shape)
        if self.on_error != "skip":
            return _run_sums(np.where(failed, np.nan, full), len(failed), self.sum_rows)
        size = self.sum_rows
        return [float(np.add.reduce(full[start:start + size][~failed[start:start + size]]))
                for start in range(0, len(failed), size)]

    def finish(self) -> tuple[dict[tuple[str, int], Any], np.ndarray | None, int]:
        """The results by key, the rows kept (``skip``) and how many rows the results hold."""
        kept, count = None, self.rows
        if self.on_error == "skip":
            kept = np.flatnonzero(~self.failed)
            count = len(kept)
        if self.reduce is None:
            arrays = self.arrays
            if kept is not None and count < self.rows:
                arrays = {key: column[kept] for key, column in arrays.items()}
            return arrays, kept, count
        # Each run's sum is NumPy's pairwise sum; fsum adds the runs' sums exactly.
        divisor = count if self.reduce == "mean" else None
        return {key: _total(parts, divisor) for key, parts in self.sums.items()}, kept, count


_SCALE = 2.0**-64  # multiplying a large float by it is exact


def _total(parts: list[float], count: int | None) -> float:
    """The exact sum of the runs' sums, rounded (a mean: divided by ``count``).  Infinities of both
    signs among them give NaN; finite sums whose total is beyond the float range give an infinite
    sum, and a mean computed from the sums scaled down, where the total fits."""
    try:
        total = math.fsum(parts) + 0.0
    except ValueError:  # fsum refuses inf + -inf
        return math.nan
    except OverflowError:  # fsum refuses a finite total beyond the float range
        scaled = math.fsum(part * _SCALE for part in parts)
        return math.copysign(math.inf, scaled) if count is None else scaled / count / _SCALE
    if count is None:
        return total
    return total / count if count else math.nan
