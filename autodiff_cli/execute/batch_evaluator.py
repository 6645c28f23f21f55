"""A program run over the rows of a batch, forward and reverse: one evaluator for every shape.

``BatchEvaluator`` (and ``evaluate_batch``, its one-call form, both exported by ``autodiff_cli``)
takes columns of rows, runs the program on each row and returns a ``BatchResult``: the output,
chosen values and gradients, one per row or summed / averaged over the rows, and which rows
failed.  What every program shares is written here once: the names (output, ``wrt``,
``values_of``), the columns read (a mapping or a DataFrame; numbers, lists, nullable columns;
text, booleans and dates refused with the column's name), the modes (``reduce``, ``on_error``),
the result columns (``L``, ``h[3]``, ``dL/dW[0, 1]``) and the error of a failed row.

Two executors run the rows, picked by the program and the inputs, not by the caller:

* **The column sweep** (``vectorized.py``): a float64 program of numbers given columns of
  numbers.  Each register is a column; the forward and reverse sweeps follow the scalar
  engine's order row by row, so its results are the engine's bit for bit where both use the
  same IEEE operations, and a failed row's message is the engine's own.
* **The interpreter** (``interpreter.py``) for the rest: a program that writes a tensor, a
  value given as a tensor, entry columns (``x[0]``, ``x[1]`` give the rows of a vector ``x``),
  or float32.  The rows are its leading batch axis; without ``reduce`` every row has its own
  gradient (what is differentiated, and the inputs an intermediate differentiated is computed
  from, are given the batch axis, repeated as a view); with ``reduce`` the reverse sweep sums
  over the rows itself, except in float32, whose rows' own values and gradients are added up in
  float64 (``_sums_in_float64``: a float32 running sum would lose 1 next to 1e8).

The sweep stays beside the interpreter, measured (``bench_batch.py backends``: 1e6 rows of its
network in batch's 16,384-line chunks, three runs on a loaded 2-core VM): the interpreter took
1.17-1.44x the sweep's time per row and 1.04-1.38x with ``--reduce mean``, whose sums then differ
in the last bit (4 of 1,302 chunk sums), and a failed row's message would be the interpreter's ("log is
undefined, where x = -2 ...") rather than ``eval``'s ("log of -2 is undefined ...").

This module imports NumPy, so nothing imports it at start-up.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import EvaluationError, InputError, Source, variables_hint
from ..language.program import (
    INPUT,
    Program,
    TensorConstant,
    check_inputs,
    missing_inputs,
    missing_inputs_error,
    output_name,
)
from .columns import entry_columns, input_rows, split_column

if TYPE_CHECKING:
    from ..language.shapes import Shape
    from .interpreter import TensorRun

__all__ = [
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

_FLOAT = np.float64
# The most numbers of per-row gradients a float32 --reduce run holds at once (64 MiB of float64
# sums' inputs at most): more rows than fit are run a group at a time.
_GRADIENT_ENTRIES = 1 << 22


def gradient_column(output: str, name: str) -> str:
    """The stable name of the gradient column d output / d name, e.g. ``dL/da``."""
    return f"d{output}/d{name}"


@dataclass(eq=False)
class RowError(EvaluationError):
    """An operation failed on one row: the program's message for that row, and which row.

    ``row`` counts from 0 in the columns given; ``inputs`` holds the row's value of every
    input given per row (and, for a program of numbers, of the numbers every row shares); a
    float32 run's as the float nearest float32's shortest text (-3.48, whose float32 is the row's).
    """

    row: int = 0
    inputs: dict[str, Any] = field(default_factory=dict)


def row_error(error: EvaluationError, row: int, inputs: Mapping[str, Any]) -> RowError:
    """``error`` (what the program says on that row alone) as the error of row ``row``."""
    return RowError(error.message, error.position, error.source, error.hint, [*error.notes, *_row_notes(row, inputs)],
                    row=row, inputs=dict(inputs))


def _row_notes(row: int, inputs: Mapping[str, Any]) -> list[str]:
    shown = ", ".join(f"{name}={value!r}" for name, value in list(inputs.items())[:20])
    more = f" and {len(inputs) - 20} more" if len(inputs) > 20 else ""
    return [f"in row {row} (counting from 0): {shown}{more}"]


@dataclass
class BatchResult:
    """Values and gradients over a batch of rows.

    Per row (``reduce`` None) each entry of ``values`` and ``grads`` is an array whose first
    axis is the rows of the result (a number's: one element per row); with ``reduce`` it is
    the sum or mean over the rows counted (a float for a number).

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
    _executor: Any = field(repr=False)  # the one that ran the rows: it explains a failed one
    _inputs: Any = field(repr=False)
    _failed_at: np.ndarray | None = field(repr=False)  # the column sweep's instruction per row, if one failed

    @property
    def value(self) -> Any:
        """The output's value: one per row, or its sum or mean."""
        return self.values[self.output]

    @property
    def failures(self) -> int:
        return int(np.count_nonzero(self.failed))

    def error(self, row: int) -> RowError:
        """Why ``row`` (an index into the rows given) failed, as the program says on that row alone."""
        if not 0 <= row < self.rows or not self.failed[row]:
            raise ValueError(f"row {row} did not fail")
        instruction = -1 if self._failed_at is None else int(self._failed_at[row])
        return self._executor.row_error(self._inputs, row, instruction)  # type: ignore[no-any-return]

    def columns(self) -> dict[str, Any]:
        """The results under their stable column names: the output (e.g. ``L``), each
        ``values_of`` name, then ``dL/da`` for each gradient; a tensor's one column per entry
        (``h[0]``..., ``dL/dW[0, 0]``...)."""
        named: dict[str, Any] = {}
        lead = 1 if self.reduce is None else 0
        for name, value in self.values.items():
            named.update(_entries(name, value, lead))
        for name, grad in self.grads.items():
            named.update(_entries(gradient_column(self.output, name), grad, lead))
        return named

    def entries(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """Values and gradients entry by entry (``W[0, 1]``), as ``--reduce``'s report lists them."""
        values: dict[str, Any] = {}
        grads: dict[str, Any] = {}
        for name, value in self.values.items():
            values.update(_entries(name, value, 0))
            if name in self.grads:
                grads.update(_entries(name, self.grads[name], 0))
        return values, grads


def _entries(name: str, array: Any, lead: int) -> dict[str, Any]:
    shape = np.shape(array)[lead:]
    if not shape:
        return {name: array}
    return {column: array[(slice(None),) * lead + index]
            for column, index in zip(entry_columns(name, shape), itertools.product(*map(range, shape)))}


class BatchEvaluator:
    """A program prepared for evaluation over batches of rows: plan once, evaluate many times.

    ``output`` is the variable to differentiate (default: the program's result); ``wrt``
    the variables to differentiate with respect to (default: every input; ``()`` for
    values only, which skips the reverse sweep); ``values_of`` the variables whose values
    to return besides the output.  Unknown names raise ``InputError``.  ``advice``: what
    hints suggest (Python arguments by default; the command line passes its options).
    ``dtype``: float64 (None) or ``"float32"``, to which every input is converted and in
    which every value and gradient comes back; a sum or mean over the rows (``reduce``) of
    float32 rows is added up in float64 from each row's float32 numbers, then rounded once.
    """

    def __init__(self, program: Program | str, *, output: str | None = None,
                 wrt: Iterable[str] | None = None, values_of: Iterable[str] = (),
                 advice: Advice = PYTHON_ADVICE, dtype: Any = None) -> None:
        if isinstance(program, str):
            from ..language import parse

            program = parse(program, "<program>")
        self.program = program
        self.advice = advice
        self.dtype = np.dtype(_FLOAT) if dtype is None else _float_type(dtype)
        self.output = output_name(program, output, advice.output(output))
        self.inputs = [variable.name for variable in program.inputs]
        self.wrt = self.inputs if wrt is None else self._names(wrt, "wrt")
        self.values_of = list(dict.fromkeys([self.output, *self._names(values_of, "values_of")]))
        self._sweep = None  # the column sweep, for a float64 program of numbers
        if not program.has_tensors and self.dtype == _FLOAT:
            from .vectorized import ColumnSweep

            self._sweep = ColumnSweep(program, self.output, self.wrt, self.values_of, advice)
        self._interpreter: _InterpreterRows | None = None  # made when a run needs it

    def _names(self, names: Iterable[str], option: str) -> list[str]:
        names = list(dict.fromkeys([names] if isinstance(names, str) else names))
        unknown = [name for name in names if name not in self.program.variables]
        if unknown:
            raise InputError(f"{option} names {', '.join(map(str, unknown))}, which the program does not define",
                             source=Source(self.program.source.name, ""),
                             hint=variables_hint(list(self.program.variables), [str(name) for name in unknown]))
        return names

    def column_names(self, shapes: Mapping[str, Shape] | None = None) -> list[str]:
        """The names ``BatchResult.columns()`` will have for variables of ``shapes`` (None: every
        one a number): the output, each ``values_of`` name, then ``dL/da`` per ``wrt`` name
        (e.g. for a Dask ``meta``)."""
        def shape(name: str) -> Shape:
            return () if shapes is None else shapes[name]

        names = [column for name in self.values_of for column in entry_columns(name, shape(name))]
        return names + [column for name in self.wrt
                        for column in entry_columns(gradient_column(self.output, name), shape(name))]

    def shapes(self, given: Mapping[str, Any]) -> dict[str, Shape]:
        """Each variable's shape (per row) for inputs given as ``evaluate`` takes them."""
        if self._sweeps(given):
            return dict.fromkeys(self.program.variables, ())
        return self._interpreting().shapes(given)

    def check_output(self, shapes: Mapping[str, Shape], reduce: str | None = None) -> None:
        """A gradient, and a reduction's report, are of a number per row: a vector or matrix output
        is refused unless each row's entries are written as columns, with no gradient (--wrt '')."""
        shape = shapes[self.output]
        if shape and reduce is not None:
            raise InputError(f"--reduce reports one number, and '{self.output}' has shape {_shape_text(shape)} on "
                             f"each row", self.program.variables[self.output].position, self.program.source,
                             f"reduce sum({self.output}), mean({self.output}) or an entry such as "
                             f"{self.output}[0]; without --reduce (and with --wrt '') each entry is a column")
        if shape and self.wrt:
            raise InputError(f"'{self.output}' has shape {_shape_text(shape)} on each row, and a gradient is of a "
                             f"number", self.program.variables[self.output].position, self.program.source,
                             f"differentiate sum({self.output}), mean({self.output}) or an entry such as "
                             f"{self.output}[0]; asked for no gradients (batch --wrt ''), its entries are "
                             f"written as columns")

    def evaluate(self, inputs: Any, *, reduce: str | None = None, on_error: str = "raise",
                 float64_sums: bool = False) -> BatchResult:
        """Run the program over ``inputs`` (see ``evaluate_batch``).  ``float64_sums``: with ``reduce``
        in float32, the sums as they were added up, in float64, not rounded to float32 (for a
        caller that adds up the sums of many batches itself, as ``autodiff batch`` does)."""
        if reduce not in (None, *REDUCTIONS):
            raise ValueError(f"reduce must be None, 'sum' or 'mean', not {reduce!r}")
        if on_error not in ON_ERROR:
            raise ValueError(f"on_error must be 'raise', 'nan' or 'skip', not {on_error!r}")
        given = _as_mapping(inputs)
        if self._sweeps(given):
            assert self._sweep is not None
            columns, warnings = self._columns(given)
            rows = _row_count(columns)
            values, grads, failed, kept, count, failed_at = self._sweep.run(columns, rows, reduce, on_error)
            return BatchResult(self.output, values, grads, rows, failed, kept, count, reduce, warnings,
                               self._sweep, columns, failed_at)
        return self._interpreting().evaluate(given, reduce, on_error, float64_sums)

    def _sweeps(self, given: Mapping[Any, Any]) -> bool:
        """Whether the column sweep runs these inputs: a float64 program of numbers given numbers,
        not tensors, nor the entry columns of one (``x[0]``)."""
        if self._sweep is None:
            return False
        variables = self.program.variables
        for name, value in given.items():
            if name in variables:
                if isinstance(value, TensorConstant):
                    return False
            elif isinstance(name, str) and (entry := split_column(name)) is not None and entry[0] in self.inputs:
                return False
        return True

    def _interpreting(self) -> _InterpreterRows:
        if self._interpreter is None:
            self._interpreter = _InterpreterRows(self)
        return self._interpreter

    def _columns(self, given: Mapping[Any, Any]) -> tuple[dict[str, Any], list[str]]:
        """Every input's column (a 1-D float64 array) or broadcast number (a NumPy scalar)."""
        program = self.program
        warnings = check_inputs(program, {name: None for name in given if isinstance(name, str)})
        warnings += [f"column {name!r} is not a variable name; it is ignored"
                     for name in given if not isinstance(name, str)]
        self._refuse_missing(given)
        columns: dict[str, Any] = {}
        for variable in program.inputs:
            if variable.name in given:
                columns[variable.name] = _as_column(variable.name, given[variable.name])
            else:
                columns[variable.name] = _FLOAT(variable.default)
        return columns, warnings

    def _refuse_missing(self, given: Mapping[Any, Any]) -> None:
        missing = missing_inputs(self.program, given)
        if missing:
            raise missing_inputs_error(self.program, missing, self.advice.give([v.name for v in missing]))


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


def _float_type(dtype: Any) -> Any:
    from .interpreter import float_type

    return float_type(dtype)


def _shape_text(shape: Shape) -> str:
    from ..language.shapes import shape_text

    return shape_text(shape)


# --- the interpreter's rows --------------------------------------------------------------------


class _InterpreterRows:
    """The rows of a program on the interpreter, as its leading batch axis: ``evaluate``'s
    executor for a program that writes a tensor, tensor inputs, entry columns or float32."""

    def __init__(self, evaluator: BatchEvaluator) -> None:
        self.evaluator = evaluator
        self.program = evaluator.program
        self.dtype = evaluator.dtype
        self._shapes: dict[Any, Any] = {}  # run_forward's shapes_cache: every chunk has the same shapes
        self._variable_shapes: dict[Any, dict[str, Shape]] = {}  # ``_shapes_of``, by the inputs' shapes
        self._defaults: dict[str, Any] | None = None  # every input's default (initializers drawn from seed 0)
        self._reaching: list[str] | None = None  # ``_differentiated_inputs``, found once

    def shapes(self, given: Mapping[str, Any]) -> dict[str, Shape]:
        return dict(self._shapes_of(*self._arrays(given)))  # (a copy: the kept one serves every chunk)

    def evaluate(self, inputs: Mapping[str, Any], reduce: str | None, on_error: str,
                 float64_sums: bool = False) -> BatchResult:
        """The rows of ``inputs``: each input by name (a number or tensor every row shares) or by
        entry columns (``x[0]``... of one value per row)."""
        evaluator = self.evaluator
        arrays, batched = self._arrays(inputs)
        rows = len(next(iter(arrays[name] for name in batched))) if batched else 1
        per_row = reduce is None
        # A narrower float's sums are made in float64 from each row's own values and gradients; in
        # groups of rows when those gradients would take much memory (then broadcast group by group).
        wide = not per_row and self.dtype.itemsize < 8
        one_pass = wide and rows * self._gradient_entries(arrays, batched) <= _GRADIENT_ENTRIES
        if per_row or one_pass:  # every row its own gradient: what is differentiated gets the batch axis
            arrays, batched = self._rows_own(arrays, batched, rows)
        evaluator.check_output(self._shapes_of(arrays, batched), reduce)
        given = (arrays, batched)  # every row, for the errors of failed ones

        def result(values: dict[str, Any], grads: dict[str, Any], kept: Any, count: int) -> BatchResult:
            return BatchResult(evaluator.output, values, grads, rows, failed, kept, count, reduce, [], self, given,
                               None)

        failed, run = self._raising_rows(arrays, batched, rows)  # rows an op refuses outright (a bad label)
        if run is None and not failed.any():  # the whole batch raised, yet no part alone: its error, raised
            run = self._run(arrays, batched)
        if run is not None:
            failed = self._failed_rows(run, rows, bool(batched))
        if failed.any() and on_error == "raise":
            raise self.row_error(given, int(np.argmax(failed)))
        if failed.any() and on_error == "nan" and not per_row:  # a sum over a row that failed is NaN
            shapes = self._shapes_of(arrays, batched)
            return result({name: np.full(shapes[name], np.nan, self.dtype) for name in evaluator.values_of},
                          {name: np.full(shapes[name], np.nan, self.dtype) for name in evaluator.wrt}, None, rows)
        kept = np.flatnonzero(~failed) if failed.any() else None
        count = rows if kept is None else len(kept)
        if wide:
            good = given if kept is None else _rows_of(given, kept)
            values, grads = self._sums_in_float64(run if one_pass and kept is None else None, good, count, reduce)
            if not float64_sums:  # rounded once, to the precision asked for
                with np.errstate(over="ignore"):  # a sum beyond float32's range is inf, as float32 gives it
                    values, grads = ({name: np.asarray(number).astype(self.dtype)[()] for name, number in table.items()}
                                     for table in (values, grads))
            return result(values, grads, kept, count)
        if kept is not None:  # the results of the good rows only
            run = self._run(*_rows_of(given, kept)) if len(kept) else None
        values, grads = self._results(run, per_row, reduce, count)
        if kept is not None and on_error == "nan":  # per row: every row, NaN where it failed
            values, grads = (_scattered(table, kept, rows) for table in (values, grads))
            kept, count = None, rows
        return result(values, grads, kept, count)

    def _rows_own(self, arrays: dict[str, Any], batched: set[str], rows: int) -> tuple[dict[str, Any], set[str]]:
        """The inputs with what is differentiated given the batch axis (a view repeating it), so that
        the reverse sweep gives each row its own gradient instead of their sum."""
        wrt = [name for name in self._differentiated_inputs() if name in arrays and name not in batched]
        if not wrt:
            return arrays, batched
        arrays = {**arrays, **{name: np.broadcast_to(arrays[name], (rows, *np.shape(arrays[name]))) for name in wrt}}
        return arrays, batched | set(wrt)

    def _differentiated_inputs(self) -> list[str]:
        """The inputs differentiated, and those an intermediate differentiated is computed from: given
        the batch axis, each of them has a value, and so a gradient, per row (an intermediate of
        values every row shares would otherwise get the sum of the rows' gradients)."""
        if self._reaching is None:
            program = self.program
            instructions = program.instructions
            stack = [program.variables[name].register for name in self.evaluator.wrt]
            seen: set[int] = set()
            while stack:
                register = stack.pop()
                if register not in seen:
                    seen.add(register)
                    stack.extend(instructions[register].args)
            self._reaching = [variable.name for variable in program.inputs if variable.register in seen]
        return self._reaching

    def _gradient_entries(self, arrays: dict[str, Any], batched: set[str]) -> int:
        """Numbers in one row's gradients."""
        shapes = self._shapes_of(arrays, batched)
        return sum(int(np.prod(shapes[name])) for name in self.evaluator.wrt)

    def _sums_in_float64(self, run: TensorRun | None, given: tuple[dict[str, Any], set[str]], count: int,
                         reduce: str | None) -> tuple[dict[str, Any], dict[str, Any]]:
        """The sums (or means) over the ``count`` rows of ``given`` of every value and gradient, each
        row's as the run's precision gives it (float32), added up in float64: what float32 would
        round row by row (1e8 + 1 - 1e8 is 0 there) is kept.  ``run``: the rows already run with
        their own gradients; None to run them here, in groups whose gradients fit in memory."""
        evaluator = self.evaluator
        if count == 0:
            return self._results(None, False, reduce, 0)
        arrays, batched = given
        group = count if run is not None else max(1, _GRADIENT_ENTRIES // max(1, self._gradient_entries(arrays,
                                                                                                          batched)))
        values: dict[str, Any] = {}
        grads: dict[str, Any] = {}
        for start in range(0, count, group):
            if run is None or start:
                part = _rows_of(given, slice(start, start + group)) if group < count else given
                size = min(group, count - start)
                run = self._run(*self._rows_own(*part, size))
            else:
                size = count
            found = ({name: run.value(name) for name in evaluator.values_of},
                     _gradients(run, evaluator))
            for table, part_table in zip((values, grads), found):
                for name, value in part_table.items():
                    batch = run.leads[run.register(name)]
                    total = np.sum(value, axis=0, dtype=np.float64) if batch else np.asarray(value, np.float64) * (
                        size if table is values else 1)
                    table[name] = table[name] + total if name in table else total
            run = None
        scale = 1.0 / count if reduce == "mean" else 1.0
        return ({name: value * scale for name, value in values.items()},
                {name: grad * scale for name, grad in grads.items()})

    def _shapes_of(self, arrays: dict[str, Any], batched: set[str]) -> dict[str, Shape]:
        """Each variable's per-row shape, inferred once for each set of the inputs' shapes (every
        chunk of a file has the same ones)."""
        from ..language.shapes import infer

        given = {name: np.shape(value)[1:] if name in batched else np.shape(value) for name, value in arrays.items()}
        key = tuple(given.items())
        shapes = self._variable_shapes.get(key)
        if shapes is None:
            registers = infer(self.program, given)
            shapes = self._variable_shapes[key] = {name: registers[v.register]
                                                   for name, v in self.program.variables.items()}
        return shapes

    def _raising_rows(self, arrays: dict[str, Any], batched: set[str], rows: int) -> tuple[Any, TensorRun | None]:
        """The rows on which an op raises rather than giving NaN (cross_entropy's labels), found by
        halving the rows that raise; none at all in the common case, whose one run of the whole
        batch is returned with them (None when some row raised)."""
        raising = np.zeros(rows, dtype=bool)
        whole = None
        try:  # the whole batch first: the common case, whose run the caller keeps
            whole = self._run(arrays, batched)
            pending = []
        except EvaluationError:
            if not batched:
                raising[:] = True
                return raising, None
            pending = [np.arange(rows)[rows // 2:], np.arange(rows)[:rows // 2]] if rows > 1 else []
            raising[:] = rows == 1
        while pending:
            part = pending.pop()
            try:
                self._run(*_rows_of((arrays, batched), part))
            except EvaluationError:
                if len(part) == 1 or not batched:
                    raising[part] = True
                else:
                    half = len(part) // 2
                    pending += [part[half:], part[:half]]
        return raising, whole

    def _run(self, arrays: dict[str, Any], batched: set[str]) -> TensorRun:
        from . import interpreter

        with np.errstate(all="ignore"):
            return interpreter.run_forward(self.program, arrays, frozenset(batched), check=False,
                                           shapes_cache=self._shapes, dtype=self.dtype)

    def _results(self, run: TensorRun | None, per_row: bool, reduce: str | None,
                 count: int) -> tuple[dict[str, Any], dict[str, Any]]:
        evaluator = self.evaluator
        if run is None:  # every row failed and was left out
            nan = self.dtype.type(np.nan)
            return {name: nan for name in evaluator.values_of}, {name: nan for name in evaluator.wrt}
        values = {name: run.value(name) for name in evaluator.values_of}
        grads = _gradients(run, evaluator)
        if per_row:
            return values, grads
        scale = 1.0 / count if reduce == "mean" and count else 1.0

        def lead(name: str) -> int:
            return run.leads[run.register(name)]

        with np.errstate(over="ignore"):  # a float32 sum beyond its range is inf, as float32 gives it
            values = {name: (np.sum(value, axis=0) if lead(name) else value * count) * scale
                      for name, value in values.items()}
            grads = {name: (np.sum(grad, axis=0) if lead(name) else np.asarray(grad)) * scale
                     for name, grad in grads.items()}
        return values, grads

    def _arrays(self, inputs: Mapping[str, Any]) -> tuple[dict[str, Any], set[str]]:
        """Every input as an array, and which carry the batch axis (those read from entry columns
        or given as a column of numbers, each read as ``_as_column`` reads one)."""
        from .interpreter import as_array, in_precision, in_precision_columns, input_arrays

        program = self.program
        columns = {name: _as_entry_column(name, value)
                   for name, value in inputs.items() if _is_column(name, value, program)}
        rows = input_rows(program, columns)
        arrays = {name: as_array(value) for name, value in inputs.items() if name not in columns}
        arrays.update(rows)
        batched = set(rows)
        self.evaluator._refuse_missing(arrays)
        dtype = self.dtype  # (no copy in float64, the default)
        if self._defaults is None:  # drawn once, not per chunk (no kernel writes into an input)
            self._defaults = input_arrays(program, {}, 0, dtype)
        defaults = self._defaults
        narrowed = in_precision_columns({name: arrays[name] for name in batched}, dtype, _row_counted)
        for name, array in arrays.items():
            if name not in batched:
                narrowed[name] = in_precision(array, dtype, name, source=program.source, given=True)
        for variable in program.inputs:
            if variable.name not in narrowed:
                narrowed[variable.name] = defaults[variable.name]
        return narrowed, batched

    def _failed_rows(self, run: TensorRun, rows: int, any_batched: bool) -> Any:
        """Rows where a value computed from them is not finite; an unbatched value that is not
        finite fails every row (its error is raised as the program gives it)."""
        from .interpreter import check_register, covered_registers

        failed = np.zeros(rows, dtype=bool)
        covered = covered_registers(run)
        for register, value in enumerate(run.values):
            if run.rows[register][0] == INPUT and not run.leads[register]:
                continue
            if covered[register] and run.leads[register]:  # a later register is not finite on its rows too
                continue
            with np.errstate(over="ignore"):  # finite values whose sum overflows: looked at one by one below
                total = float(np.sum(value)) if np.size(value) else 0.0
            if np.isfinite(total) or np.isfinite(value).all():
                continue
            if not run.leads[register]:  # no row's own: the program fails whatever the rows
                check_register(run, register)
            failed |= ~np.isfinite(np.reshape(value, (rows, -1))).all(axis=1)
        return failed

    def row_error(self, given: tuple[dict[str, Any], set[str]], row: int, instruction: int = -1) -> RowError:
        """Why ``row`` fails: the program run on that row alone, with its error's place."""
        from . import interpreter

        inputs, batched = given
        one = {name: value[row] if name in batched else value for name, value in inputs.items()}
        order = [variable.name for variable in self.program.inputs]  # as the column sweep lists them
        shown = {name: _as_written(one[name]) for name in sorted(batched, key=order.index) if name in one}
        try:
            interpreter.run_forward(self.program, one)
        except EvaluationError as error:
            return row_error(error, row, shown)
        return row_error(EvaluationError("a value computed on this row is not a finite number", None,
                                         self.program.source, "check the row's values"), row, shown)


def _as_written(value: Any) -> Any:
    """A row's value as a note shows it: a float, or nested lists of them for a tensor, whose repr is
    the shortest text of its precision (float32's -3.48, not float64's -3.4800000190734863)."""
    array = np.asarray(value)
    if array.dtype.kind != "f" or array.dtype.itemsize >= 8:
        return array.tolist()
    return np.array([float(str(number)) for number in array.flat]).reshape(array.shape).tolist()


def _gradients(run: Any, evaluator: BatchEvaluator) -> dict[str, Any]:
    """The run's gradients of ``wrt``, a -0.0 made +0.0 (adding a zero does exactly that): the
    engine and the column sweep start every gradient at +0.0, so a gradient of "-0" would read
    as a sign it does not have (relu(x) * -1 at x < 0)."""
    if not evaluator.wrt:
        return {}
    return {name: np.add(grad, np.asarray(grad).dtype.type(0))
            for name, grad in run.gradients(evaluator.output, evaluator.wrt).items()}


def _as_entry_column(name: str, value: np.ndarray) -> np.ndarray:
    """A column of rows for the interpreter: floats as they are (converted to the run's precision
    later, without a detour through float64), anything else read as ``_as_column`` reads one."""
    if (type(value) is np.ndarray and value.dtype.kind == "f") or value.ndim != 1:
        return value
    return _as_column(name, value)  # type: ignore[no-any-return]


def _row_counted(row: int) -> str:
    return f"row {row} (counting from 0)"


def _rows_of(given: tuple[dict[str, Any], set[str]], rows: Any) -> tuple[dict[str, Any], set[str]]:
    """The inputs of some rows only (those with the batch axis are cut; the others are shared)."""
    arrays, batched = given
    return {name: value[rows] if name in batched else value for name, value in arrays.items()}, batched


def _scattered(table: dict[str, Any], kept: Any, rows: int) -> dict[str, Any]:
    """Per-row results of the ``kept`` rows laid out over every row, NaN on the others."""
    spread = {}
    for name, value in table.items():
        full = np.full((rows, *np.shape(value)[1:]), np.nan, np.asarray(value).dtype)  # (float32 stays float32)
        full[kept] = value
        spread[name] = full
    return spread


def _is_column(name: str, value: Any, program: Program) -> bool:
    """A column of rows (a NumPy array of one value per row, or of an entry per row: ``x[0]``),
    not one value every row shares (a number, a list literal)."""
    return isinstance(value, np.ndarray) and value.ndim >= 1 and (
        name in program.variables or split_column(name) is not None)


# --- reading the columns ---------------------------------------------------------------------

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


