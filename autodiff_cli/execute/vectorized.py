"""The vectorized interpreter: a ``Program`` run over columns of rows with NumPy, forward and reverse.

Where the scalar interpreter builds one graph of ``Value`` nodes per set of inputs,
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

The public entry points are ``evaluate_batch`` and ``BatchEvaluator`` (also exported
by ``autodiff_cli``); this module imports NumPy, so nothing imports it at start-up.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..engine.graph import paused_cycle_collector
from ..engine.ops import OPS, overflow_advice
from ..errors import EvaluationError, InputError, Source, variables_hint
from ..language.program import (
    CONST,
    INPUT,
    POWER_CONST,
    Program,
    check_inputs,
    missing_inputs,
    missing_inputs_error,
    output_name,
)
from .scalar import evaluate

__all__ = [
    "CHUNK_BYTES",
    "ON_ERROR",
    "PYTHON_ADVICE",
    "REDUCTIONS",
    "Advice",
    "BatchEvaluator",
    "BatchResult",
    "RowError",
    "evaluate_batch",
    "gradient_column",
]

ON_ERROR = ("raise", "nan", "skip")
REDUCTIONS = ("sum", "mean")


@dataclass(frozen=True)
class Advice:
    """What hints suggest, in the caller's terms: Python arguments here, options at the command
    line (``autodiff batch`` and ``fit`` pass their own).  The executor does not guess which."""

    # Ends "every input must be a finite number: drop or fill the missing values".
    missing_values: str
    # How to give inputs no value reaches, for "no value for input w": (names) -> "give ...".
    give_inputs: Any
    # How the option naming the output is written with its value, for "output='q' is not a
    # variable of the program": (name) -> "output='q'".  None: the command line's --output 'q'.
    output_option: Any = None

    def give(self, names: Sequence[str]) -> str:
        return str(self.give_inputs(list(names)))

    def output(self, name: str | None) -> str | None:
        return None if self.output_option is None or name is None else str(self.output_option(name))


def _python_give(names: list[str]) -> str:
    shown = ", ".join(f"{name!r}: VALUE" for name in names[:3]) + (", ..." if len(names) > 3 else "")
    them = "them" if len(names) > 1 else "it"
    return f"give {them} in the inputs, a column or one number for every row ({{{shown}}})"


def _python_output(name: str) -> str:
    return f"output={name!r}"


# Functions, not lambdas: an evaluator and its advice are pickled to Dask's workers.
PYTHON_ADVICE = Advice(", or skip the rows that have them (on_error='skip')", _python_give, _python_output)

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


def gradient_column(output: str, name: str) -> str:
    """The stable name of the gradient column d output / d name, e.g. ``dL/da``."""
    return f"d{output}/d{name}"


@dataclass(eq=False)
class RowError(EvaluationError):
    """An operation failed on one row: the scalar engine's message for that row, and which row.

    ``row`` counts from 0 in the columns given; ``inputs`` holds the row's value of every
    input (columns and broadcast numbers alike).
    """

    row: int = 0
    inputs: dict[str, float] = field(default_factory=dict)


@dataclass
class BatchResult:
    """Values and gradients over a batch of rows.

    Per row (``reduce`` None) each entry of ``values`` and ``grads`` is a float64 array
    with one element per row of the result; with ``reduce`` it is one float, the sum or
    mean over the rows counted.

    * ``output``: the differentiated variable; ``value`` is its entry of ``values``.
    * ``values``: the output, then each ``values_of`` name, by variable name.
    * ``grads``: d output / d name for each ``wrt`` name.
    * ``rows``: how many rows were given; ``failed``: a boolean array over them, True
      where an op failed (outside its domain, or a result too large for a float).
    * ``kept``: with ``on_error="skip"``, the indices of the rows the results hold (the
      rows that did not fail); otherwise None, and result row ``r`` is input row ``r``
      (a failed row holds NaN).
    * ``count``: the rows in the results (reduced over, with ``reduce``).
    * ``warnings``: columns the program does not use, as the scalar ``Evaluation`` has.
    """

    output: str
    values: dict[str, Any]
    grads: dict[str, Any]
    rows: int
    failed: np.ndarray
    kept: np.ndarray | None
    count: int
    reduce: str | None
    warnings: list[str]
    _evaluator: BatchEvaluator = field(repr=False)
    _inputs: dict[str, Any] = field(repr=False)
    _failed_at: np.ndarray | None = field(repr=False)  # None when no row failed

    @property
    def value(self) -> Any:
        """The output's value: one per row, or its sum or mean."""
        return self.values[self.output]

    @property
    def failures(self) -> int:
        return int(np.count_nonzero(self.failed))

    def error(self, row: int) -> RowError:
        """Why ``row`` (an index into the rows given) failed, as the scalar engine says it."""
        if not 0 <= row < self.rows or not self.failed[row]:
            raise ValueError(f"row {row} did not fail")
        assert self._failed_at is not None  # a row failed
        return self._evaluator.row_error(self._inputs, row, int(self._failed_at[row]))

    def columns(self) -> dict[str, Any]:
        """The results under their stable column names: the output (e.g. ``L``), each
        ``values_of`` name, then ``dL/da`` for each gradient."""
        named = dict(self.values)
        named.update((gradient_column(self.output, name), grad) for name, grad in self.grads.items())
        return named


class BatchEvaluator:
    """A program prepared for evaluation over batches of rows: plan once, evaluate many times.

    ``output`` is the variable to differentiate (default: the program's result); ``wrt``
    the variables to differentiate with respect to (default: every input; ``()`` for
    values only, which skips the reverse sweep); ``values_of`` the variables whose values
    to return besides the output.  Unknown names raise ``InputError``.  ``advice``: what
    hints suggest (Python arguments by default; the command line passes its options).
    """

    def __init__(self, program: Program | str, *, output: str | None = None,
                 wrt: Iterable[str] | None = None, values_of: Iterable[str] = (),
                 advice: Advice = PYTHON_ADVICE) -> None:
        if isinstance(program, str):
            from ..language import parse

            program = parse(program, "<program>")
        self.program = program
        self.advice = advice
        self.output = output_name(program, output, advice.output(output))
        self.inputs = [variable.name for variable in program.inputs]
        self.wrt = self.inputs if wrt is None else self._names(wrt, "wrt")
        reported = [self.output] + self._names(values_of, "values_of")
        self.values_of = list(dict.fromkeys(reported))
        with paused_cycle_collector():  # per-register lists of a large program: no cycles to find
            self._plan = _Plan(program, self.output, self.wrt, self.values_of)

    def column_names(self) -> list[str]:
        """The names ``BatchResult.columns()`` will have: the output, each ``values_of`` name,
        then ``dL/da`` per ``wrt`` name (e.g. for a Dask ``meta``)."""
        return self.values_of + [gradient_column(self.output, name) for name in self.wrt]

    def _names(self, names: Iterable[str], option: str) -> list[str]:
        if isinstance(names, str):
            names = [names]
        names = list(dict.fromkeys(names))
        unknown = [name for name in names if name not in self.program.variables]
        if unknown:
            raise InputError(
                f"{option} names {', '.join(map(str, unknown))}, which the program does not define",
                source=Source(self.program.source.name, ""),
                hint=variables_hint(list(self.program.variables), [str(name) for name in unknown]),
            )
        return names

    # --- evaluating ----------------------------------------------------------------------------

    def evaluate(self, inputs: Any, *, reduce: str | None = None, on_error: str = "raise") -> BatchResult:
        """Run the program over ``inputs`` (see ``evaluate_batch``)."""
        if reduce not in (None, *REDUCTIONS):
            raise ValueError(f"reduce must be None, 'sum' or 'mean', not {reduce!r}")
        if on_error not in ON_ERROR:
            raise ValueError(f"on_error must be 'raise', 'nan' or 'skip', not {on_error!r}")
        columns, warnings = self._columns(inputs)
        rows = _row_count(columns)
        plan = self._plan
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
        return BatchResult(self.output, values, grads, rows, collected.failed, kept, count, reduce, warnings,
                           self, columns, collected.failed_at if collected.failures else None)

    def _columns(self, inputs: Any) -> tuple[dict[str, Any], list[str]]:
        """Every input's column (a 1-D float64 array) or broadcast number (a NumPy scalar)."""
        given = _as_mapping(inputs)
        program = self.program
        warnings = check_inputs(program, {name: None for name in given if isinstance(name, str)})
        warnings += [f"column {name!r} is not a variable name; it is ignored"
                     for name in given if not isinstance(name, str)]
        missing = missing_inputs(program, given)
        if missing:
            raise missing_inputs_error(program, missing, self.advice.give([v.name for v in missing]))
        columns: dict[str, Any] = {}
        for variable in program.inputs:
            if variable.name in given:
                columns[variable.name] = _as_column(variable.name, given[variable.name])
            else:
                columns[variable.name] = _FLOAT(variable.default)
        return columns, warnings

    # --- explaining a failed row -------------------------------------------------------------

    def row_error(self, columns: Mapping[str, Any], row: int, instruction: int) -> RowError:
        """The error of a failed row: the scalar engine's message, or one made from the
        failing instruction where the scalar engine disagrees (a result at the very edge
        of the float range, where NumPy's and the C library's last bits differ)."""
        inputs = {name: float(column if np.ndim(column) == 0 else column[row])
                  for name, column in columns.items()}
        program = self.program
        op, _args, param, position = program.instructions[instruction]
        if op == INPUT:
            return RowError(
                f"the input '{param}' is {inputs[param]!r}, not a finite number",
                program.variables[param].position, program.source,
                "every input must be a finite number: drop or fill the missing values"
                + self.advice.missing_values,
                _row_notes(row, inputs), row=row, inputs=inputs)
        try:
            evaluate(program, inputs, self.output, backward=False)
        except EvaluationError as error:
            return RowError(error.message, error.position, error.source, error.hint,
                            [*error.notes, *_row_notes(row, inputs)], row=row, inputs=inputs)
        shown = {POWER_CONST: "power", "neg": "neg", "=": "copy"}.get(op, op)
        return RowError(
            f"the result of '{shown}' is not a finite number", position, program.source,
            overflow_advice(OPS.get(op)),
            _row_notes(row, inputs), row=row, inputs=inputs)


def evaluate_batch(program: Program | str, inputs: Any, *, output: str | None = None,
                   wrt: Iterable[str] | None = None, values_of: Iterable[str] = (),
                   reduce: str | None = None, on_error: str = "raise") -> BatchResult:
    """Evaluate ``program`` and its gradients over many rows at once.

    ``inputs`` maps input names to columns of real numbers (a NumPy array of any float or
    integer type, a list, a pandas or polars Series, nullable ones included), or to a
    single number, which every row shares.  A pandas or polars DataFrame works as it is.
    Missing values (None, pandas' NA, a masked array's masked entries) are NaN, which
    fails their rows (see ``on_error``); text, booleans, complex numbers, dates and times
    raise ``InputError`` naming the column.  Inputs given nowhere take the program's
    defaults; columns the program does not use are ignored (``BatchResult.warnings``
    names them).  All columns have the same length.

    ``output``, ``wrt`` and ``values_of``: see ``BatchEvaluator``.  ``reduce`` ``"sum"``
    or ``"mean"`` returns sums or means over the rows instead of one value per row (the
    mean gradient is batch backpropagation's).  ``on_error`` says what a row where an
    op fails does: ``"raise"`` raises ``RowError`` for the first such row; ``"nan"`` gives
    it NaN results (a sum or mean over it is then NaN too); ``"skip"`` leaves it out of
    the results and of the reduction.  ``BatchResult.failed`` marks those rows and
    ``BatchResult.error(row)`` says what went wrong in each.
    """
    evaluator = BatchEvaluator(program, output=output, wrt=wrt, values_of=values_of)
    return evaluator.evaluate(inputs, reduce=reduce, on_error=on_error)


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


# --- inputs ----------------------------------------------------------------------------------


def _as_mapping(inputs: Any) -> dict[Any, Any]:
    """Name -> column from a mapping, or from a pandas or polars DataFrame."""
    if isinstance(inputs, Mapping):
        return dict(inputs)
    names = getattr(inputs, "columns", None)
    if names is not None and hasattr(inputs, "__getitem__"):
        return {name: inputs[name] for name in names}
    raise TypeError(f"inputs must map names to columns (a dict or a DataFrame), not {type(inputs).__name__}")


def _as_column(name: str, data: Any) -> Any:
    """A 1-D float64 array, or a NumPy float64 for one number shared by every row.

    Taken: floats and integers of any width (NumPy arrays and scalars, Python numbers,
    lists of them, numeric pandas or polars columns, nullable ones too), and object arrays
    or lists whose elements are real numbers (``Decimal`` and ``Fraction`` included).
    Missing values (``None``, pandas' ``NA``, a masked array's masked entries) become NaN,
    which fails its row like any NaN input (``on_error`` decides).  Refused, with an
    ``InputError`` naming the column: text, booleans, complex numbers, dates and times
    (which ``asarray(..., dtype=float64)`` would turn into numbers without a word),
    anything else, and integers too large for a float.  A float or integer array is judged
    by its dtype alone; only objects (object arrays, lists) are looked at one by one.
    """
    mask = None
    if isinstance(data, np.ma.MaskedArray):
        mask = np.ma.getmaskarray(data)
        data = data.data if data.dtype != object else np.where(mask, None, data.data)
    else:
        data = _nullable_as_float(data)
    try:
        array = _as_array(data)
    except (TypeError, ValueError) as error:
        raise InputError(f"the column '{name}' is not numeric: {error}", hint=_OTHER_HINT) from None
    if array.ndim > 1:
        raise InputError(f"the column '{name}' has shape {array.shape}; a column is one-dimensional",
                         hint="give one array per input, with one element per row")
    kind = array.dtype.kind
    if kind == "f" or kind == "i" or kind == "u":
        if array.dtype == _FLOAT:
            column = array
        else:
            with np.errstate(over="ignore"):  # a long double beyond float64 is inf: its row fails
                column = array.astype(_FLOAT)
    elif kind == "O":
        column = _real_objects(name, array)
    else:
        raise _refused(name, _DTYPE_KINDS.get(kind, "other"), array, dtype=array.dtype)
    if mask is not None and mask.any():
        column = np.where(mask, np.nan, column)  # a new array: the caller's is left as it was
    return _FLOAT(column) if column.ndim == 0 else column


def _nullable_as_float(data: Any) -> Any:
    """A pandas column of a nullable numeric dtype (``Float64``, ``Int64``, Arrow's) as float64,
    its ``NA`` as NaN; anything else as it is."""
    dtype = getattr(data, "dtype", None)
    if (dtype is None or isinstance(dtype, np.dtype) or getattr(dtype, "kind", None) not in ("f", "i", "u")
            or not hasattr(data, "to_numpy")):
        return data
    return data.to_numpy(dtype=_FLOAT, na_value=np.nan)


def _as_array(data: Any) -> np.ndarray:
    """``data`` as an array whose dtype tells what it holds.  A list keeps its elements as
    objects unless they are all floats and ints: ``numpy.asarray`` would make ``[True, 2.0]``
    floats and ``[1, "a"]`` text."""
    if type(data) is np.ndarray:
        return data
    if isinstance(data, (list, tuple)):
        kinds = set(map(type, data))
        if not kinds <= {float, int} and not any(issubclass(kind, (list, tuple, np.ndarray)) for kind in kinds):
            return np.array(data, dtype=object)
    return np.asarray(data)


def _real_objects(name: str, array: np.ndarray) -> np.ndarray:
    """An object array of real numbers and missing values as float64; anything else refused."""
    flat = array.reshape(-1)
    kinds = set(map(type, flat))
    wrong = {kind: what for kind in kinds if (what := _object_kind(kind)) not in (None, "missing")}
    if wrong:
        row = next(row for row, value in enumerate(flat) if type(value) in wrong)
        raise _refused(name, wrong[type(flat[row])], array, flat[row], row)
    not_available = {kind for kind in kinds if _object_kind(kind) == "missing"} - {type(None)}
    if not_available:  # pandas' NA, which float() refuses: None (then NaN) from here on
        flat = np.array([None if type(value) in not_available else value for value in flat], dtype=object)
    try:
        return flat.astype(_FLOAT).reshape(array.shape)
    except (OverflowError, ValueError, TypeError):
        for row, value in enumerate(flat):
            try:
                float(value) if value is not None else None
            except OverflowError:
                raise _refused(name, "huge", array, value, row) from None
            except (ValueError, TypeError):  # Decimal('sNaN')
                raise _refused(name, "unconvertible", array, value, row) from None
        raise


_OTHER_HINT = "give numbers: a float or integer array, a list of numbers, or a numeric column of a DataFrame"
# What a column holds instead of numbers: the words for one value and for a column, and the hint.
_REFUSED = {
    "text": ("text", "text", ("convert the text to numbers first, e.g. pd.to_numeric(column) or "
                              "np.asarray(column, dtype=float) (float(text) for one value)")),
    "bool": ("a boolean", "booleans", ("booleans are not taken as 1 and 0 (batch refuses them in rows too); "
                                       "convert with .astype(float) (float(flag) for one value) if that is "
                                       "what they mean")),
    "complex": ("a complex number", "complex numbers", ("float64 would drop the imaginary parts; give the "
                                                        "real numbers meant, e.g. .real or abs(...)")),
    "datetime": ("a date or time", "dates and times", ("give numbers, e.g. seconds since a start: "
                                                       "(t - t0) / np.timedelta64(1, 's')")),
    "timedelta": ("a time span", "time spans", ("give numbers, e.g. seconds: d / np.timedelta64(1, 's') "
                                                "(series.dt.total_seconds() in pandas)")),
    "huge": ("an integer too large for a float", "an integer too large for a float",
             "a float holds at most about 1.8e308: scale the values down first"),
    "unconvertible": ("a number float() refuses", "a number float() refuses", _OTHER_HINT),
}
_SAYS_ITSELF = ("huge", "unconvertible")  # no ", not a number" after these
_DTYPE_KINDS = {"U": "text", "S": "text", "b": "bool", "c": "complex", "M": "datetime", "m": "timedelta"}


def _refused(name: str, what: str, array: np.ndarray, value: Any = None, row: int | None = None,
             dtype: Any = None) -> InputError:
    """'the column 'x' holds text, not numbers: '1.5' in row 0', or for one number shared by
    every row, 'the value of 'w' is text, not a number: '2''."""
    one, many, hint = _REFUSED.get(what, (None, None, _OTHER_HINT))
    real = " real" if what == "complex" else ""
    if array.ndim == 0:
        # As the caller wrote it: a Python number or text; dates stay NumPy's (.item() makes
        # datetime64[ns] an int).
        shown = value if value is not None else array[()] if what in ("datetime", "timedelta") else array.item()
        one = one or f"a {type(shown).__name__}"
        instead = "" if what in _SAYS_ITSELF else f", not a{real} number"
        return InputError(f"the value of '{name}' is {one}{instead}: {shown!r}", hint=hint)
    if many is None:
        many = f"values of dtype {dtype}" if dtype is not None else f"{type(value).__name__} values"
    elif dtype is not None:
        many += f" (dtype {dtype})"
    instead = "" if what in _SAYS_ITSELF else f", not{real} numbers"
    where = f": {value!r} in row {row} (counting from 0)" if row is not None else ""
    return InputError(f"the column '{name}' holds {many}{instead}{where}", hint=hint)


_OBJECT_KINDS: dict[type, str | None] = {float: None, int: None, type(None): "missing"}


def _object_kind(kind: type) -> str | None:
    """What an element of an object array is: None for a real number, "missing" for None or
    pandas' NA, else a key of ``_REFUSED`` ("other" for the rest)."""
    known = _OBJECT_KINDS.get(kind, "")
    if known != "":
        return known
    import datetime
    import decimal
    import numbers

    if issubclass(kind, (bool, np.bool_)):
        found: str | None = "bool"
    elif issubclass(kind, (str, bytes)):
        found = "text"
    elif issubclass(kind, (datetime.timedelta, np.timedelta64)):  # before Real: timedelta64 is an integer
        found = "timedelta"
    elif issubclass(kind, (datetime.date, np.datetime64)) or kind.__name__ == "NaTType":
        found = "datetime"
    elif issubclass(kind, (numbers.Real, decimal.Decimal)):
        found = None
    elif issubclass(kind, numbers.Complex):
        found = "complex"
    elif kind.__name__ == "NAType" and kind.__module__.startswith("pandas"):
        found = "missing"
    else:
        found = "other"
    _OBJECT_KINDS[kind] = found
    return found


def _row_count(columns: Mapping[str, Any]) -> int:
    lengths = {name: len(column) for name, column in columns.items() if np.ndim(column) == 1}
    if not lengths:
        return 1  # every input is one number: one row
    if len(set(lengths.values())) > 1:
        shown = ", ".join(f"'{name}' has {length:,}" for name, length in lengths.items())
        raise InputError(f"the columns have different lengths: {shown}",
                         hint="every column needs one value per row")
    return next(iter(lengths.values()))


def _row_notes(row: int, inputs: Mapping[str, float]) -> list[str]:
    shown = ", ".join(f"{name}={value!r}" for name, value in list(inputs.items())[:20])
    more = f" and {len(inputs) - 20} more" if len(inputs) > 20 else ""
    return [f"in row {row} (counting from 0): {shown}{more}"]
