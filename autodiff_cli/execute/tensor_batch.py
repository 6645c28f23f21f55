"""``batch`` of a tensor program: rows become the leading batch dimension.

``TensorBatchEvaluator`` has the interface of ``vectorized.BatchEvaluator`` (``evaluate``
over a chunk of rows, a ``BatchResult`` with per-row columns or sums), so ``batch`` runs
either the same way.  What differs:

* **Columns.**  A tensor input is read from one column per entry, named by the rule of
  ``tensor_fit.column_name``: ``x[0]``, ``x[1]`` for a vector ``x``; ``W[0, 1]`` for a
  matrix.  Results are written the same way: ``h[3]``, ``dL/dW[0, 1]``.
* **Per-row gradients.**  Without ``reduce`` every row has its own gradient, so the inputs
  differentiated are given the batch axis (a parameter is repeated on every row, as a view);
  with ``reduce`` they are not, and the reverse sweep sums over the rows itself.
* **Failed rows.**  A row fails where any value computed from it is not finite.  Its error
  is the one the program gives on that row alone (``tensor.run_forward``'s, with line and
  column); ``on_error`` "nan" and "skip" work as for scalar programs.
* **Precision.**  float64, or float32 with ``dtype="float32"``: the inputs are converted to
  it and every value and gradient is in it.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from ..errors import EvaluationError, InputError, Source, variables_hint
from ..language.program import INPUT, Program, TensorConstant, missing_inputs, missing_inputs_error, output_name
from ..language.shapes import Shape, infer, refuse_other_column_shapes, shape_text
from .interpreter import (TensorRun, as_array, check_register, covered_registers, float_type, in_precision,
                          in_precision_columns, input_arrays, run_forward)
from .columns import entry_column, split_column
from .vectorized import PYTHON_ADVICE, REDUCTIONS, Advice, BatchResult, RowError, gradient_column

__all__ = ["TensorBatchEvaluator", "TensorBatchResult", "entry_columns"]

def entry_columns(name: str, shape: Shape) -> list[str]:
    """Every entry of a variable of ``shape`` as a column name, in row-major order."""
    return [entry_column(name, index) for index in itertools.product(*map(range, shape))]


class TensorBatchResult(BatchResult):
    """``vectorized.BatchResult`` for a tensor program: ``values`` and ``grads`` by variable, each
    ``(rows, *shape)`` per row or ``shape`` reduced; its columns are the entries'."""

    def error(self, row: int) -> RowError:
        """Why ``row`` failed: the program's error on that row alone."""
        if not 0 <= row < self.rows or not self.failed[row]:
            raise ValueError(f"row {row} did not fail")
        return self._evaluator.row_error(self._inputs, row)  # type: ignore[no-any-return]

    def columns(self) -> dict[str, Any]:
        """One column per entry: ``y``, ``h[0]``..., then ``dL/dW[0, 0]``..."""
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


class TensorBatchEvaluator:
    """A tensor program prepared for batches of rows (see ``vectorized.BatchEvaluator``), in
    float64 or, with ``dtype="float32"``, in single precision: the inputs are converted to it
    and every value and gradient comes back in it."""

    def __init__(self, program: Program, *, output: str | None = None, wrt: Iterable[str] | None = None,
                 values_of: Iterable[str] = (), advice: Advice = PYTHON_ADVICE, dtype: Any = None) -> None:
        self.program = program
        self.advice = advice
        self.dtype = float_type(dtype)  # every input is converted to it, and every result is in it
        self.output = output_name(program, output, advice.output(output))
        self.inputs = [variable.name for variable in program.inputs]
        self.wrt = self.inputs if wrt is None else self._names(wrt, "wrt")
        self.values_of = list(dict.fromkeys([self.output, *self._names(values_of, "values_of")]))
        self._shapes: dict[Any, Any] = {}  # run_forward's shapes_cache: every chunk has the same shapes
        self._variable_shapes: dict[Any, dict[str, Shape]] = {}  # ``_shapes_of``, by the inputs' shapes
        self._defaults: dict[str, Any] | None = None  # every input's default (initializers drawn from seed 0)

    def _names(self, names: Iterable[str], option: str) -> list[str]:
        names = list(dict.fromkeys([names] if isinstance(names, str) else names))
        unknown = [name for name in names if name not in self.program.variables]
        if unknown:
            raise InputError(f"{option} names {', '.join(unknown)}, which the program does not define",
                             source=Source(self.program.source.name, ""),
                             hint=variables_hint(list(self.program.variables), unknown))
        return names

    def column_names(self, shapes: Mapping[str, Shape]) -> list[str]:
        """The result columns for variables of ``shapes`` (see ``TensorBatchResult.columns``)."""
        names = [column for name in self.values_of for column in entry_columns(name, shapes[name])]
        return names + [column for name in self.wrt
                        for column in entry_columns(gradient_column(self.output, name), shapes[name])]

    def shapes(self, given: Mapping[str, Any]) -> dict[str, Shape]:
        """Each variable's shape (per row) for inputs given as ``evaluate`` takes them."""
        return dict(self._shapes_of(*self._arrays(given)))  # (a copy: the kept one serves every chunk)

    # --- evaluating ----------------------------------------------------------------------------

    def evaluate(self, inputs: Mapping[str, Any], *, reduce: str | None = None,
                 on_error: str = "raise") -> TensorBatchResult:
        """Run the program over the rows of ``inputs``: each input by name (a number or tensor every
        row shares) or by entry columns (``x[0]``... of one value per row)."""
        if reduce not in (None, *REDUCTIONS):
            raise ValueError(f"reduce must be None, 'sum' or 'mean', not {reduce!r}")
        arrays, batched = self._arrays(inputs)
        rows = len(next(iter(arrays[name] for name in batched))) if batched else 1
        per_row = reduce is None
        if per_row:  # every row its own gradient: what is differentiated gets the batch axis
            for name in self.wrt:
                if name in arrays and name not in batched:
                    arrays[name] = np.broadcast_to(arrays[name], (rows, *np.shape(arrays[name])))
            batched = batched | {name for name in self.wrt if name in arrays}
        self.check_output(self._shapes_of(arrays, batched), reduce)
        given = (arrays, batched)  # every row, for the errors of failed ones
        failed, run = self._raising_rows(arrays, batched, rows)  # rows an op refuses outright (a bad label)
        if run is None and not failed.any():  # the whole batch raised, yet no part alone: its error, raised
            run = self._run(arrays, batched)
        if run is not None:
            failed = self._failed_rows(run, rows, bool(batched))
        if failed.any() and on_error == "raise":
            raise self.row_error(arrays, int(np.argmax(failed)), batched)
        if failed.any() and on_error == "nan" and not per_row:  # a sum over a row that failed is NaN
            shapes = self._shapes_of(arrays, batched)
            values = {name: np.full(shapes[name], np.nan, self.dtype) for name in self.values_of}
            grads = {name: np.full(shapes[name], np.nan, self.dtype) for name in self.wrt}
            return TensorBatchResult(self.output, values, grads, rows, failed, None, rows, reduce, [], self, given,
                                     None)
        kept = np.flatnonzero(~failed) if failed.any() else None
        if kept is not None:  # the results of the good rows only
            run = self._run(*_rows_of(given, kept)) if len(kept) else None
        count = rows if kept is None else len(kept)
        values, grads = self._results(run, per_row, reduce, count)
        if kept is not None and on_error == "nan":  # per row: every row, NaN where it failed
            values, grads = (_scattered(table, kept, rows) for table in (values, grads))
            kept, count = None, rows
        return TensorBatchResult(self.output, values, grads, rows, failed, kept, count, reduce, [], self, given,
                                 None)

    def check_output(self, shapes: Mapping[str, Shape], reduce: str | None = None) -> None:
        """A gradient, and a --reduce report, are of a number per row: a vector or matrix output is
        refused unless each row's entries are written as columns, with no gradient (--wrt '')."""
        shape = shapes[self.output]
        if shape and reduce is not None:
            raise InputError(f"--reduce reports one number, and '{self.output}' has shape {shape_text(shape)} on "
                             f"each row", self.program.variables[self.output].position, self.program.source,
                             f"reduce sum({self.output}), mean({self.output}) or an entry such as "
                             f"{self.output}[0]; without --reduce (and with --wrt '') each entry is a column")
        if shape and self.wrt:
            raise InputError(f"'{self.output}' has shape {shape_text(shape)} on each row, and a gradient is of a "
                             f"number", self.program.variables[self.output].position, self.program.source,
                             f"differentiate sum({self.output}), mean({self.output}) or an entry such as "
                             f"{self.output}[0]; asked for no gradients (batch --wrt ''), its entries are "
                             f"written as columns")

    def _shapes_of(self, arrays: dict[str, Any], batched: set[str]) -> dict[str, Shape]:
        """Each variable's per-row shape, inferred once for each set of the inputs' shapes (every
        chunk of a file has the same ones)."""
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
        with np.errstate(all="ignore"):
            return run_forward(self.program, arrays, frozenset(batched), check=False, shapes_cache=self._shapes,
                               dtype=self.dtype)

    def _results(self, run: TensorRun | None, per_row: bool, reduce: str | None,
                 count: int) -> tuple[dict[str, Any], dict[str, Any]]:
        if run is None:  # every row failed and was left out
            nan = self.dtype.type(np.nan)
            return {name: nan for name in self.values_of}, {name: nan for name in self.wrt}
        values = {name: run.value(name) for name in self.values_of}
        grads = run.gradients(self.output, self.wrt) if self.wrt else {}
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
        or given as a column of numbers)."""
        program = self.program
        columns = {name: value for name, value in inputs.items() if _is_column(name, value, program)}
        rows = input_rows(program, columns)
        arrays = {name: as_array(value) for name, value in inputs.items() if name not in columns}
        arrays.update(rows)
        batched = set(rows)
        missing = missing_inputs(program, arrays)
        if missing:
            raise missing_inputs_error(program, missing, self.advice.give([v.name for v in missing]))
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

    def row_error(self, inputs: Any, row: int, batched: set[str] | None = None) -> RowError:
        """Why ``row`` fails: the program run on that row alone, with its error's place."""
        if batched is None:
            inputs, batched = inputs
        one = {name: value[row] if name in batched else value for name, value in inputs.items()}
        shown = {name: np.asarray(value).tolist() for name, value in one.items() if name in batched}
        try:
            run_forward(self.program, one)
        except EvaluationError as error:
            return RowError(error.message, error.position, error.source, error.hint,
                            [*error.notes, f"in row {row}"], row=row, inputs=shown)
        return RowError("a value computed on this row is not a finite number", None, self.program.source,
                        "check the row's values", [f"in row {row}"], row=row, inputs=shown)


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


def input_rows(program: Program, columns: Mapping[str, Any]) -> dict[str, Any]:
    """The inputs that columns of rows give, each as ``(rows, *shape)``: a column named after an
    input gives it as it is; the entry columns of a tensor input (``x[0]``, ``x[1]``) are stacked."""
    by_input: dict[str, dict[tuple[int, ...], Any]] = {}
    rows: dict[str, Any] = {}
    for column, value in columns.items():
        entry = split_column(column)
        if column not in program.variables and entry is not None and entry[0] in program.variables:
            by_input.setdefault(entry[0], {})[entry[1]] = np.asarray(value, dtype=float)
        else:
            rows[column] = np.asarray(value, dtype=float)
    refuse_other_column_shapes(program, rows)
    for name, entries in by_input.items():
        rows[name] = _stacked(name, entries, program)
    return rows


def _stacked(name: str, entries: Mapping[tuple[int, ...], Any], program: Program) -> Any:
    """An input's rows ``(N, *shape)`` from its entry columns, which must cover its shape: the shape
    of its default when the program declares one (``x = [0, 0]``), else the one the columns span."""
    rank = {len(index) for index in entries}
    default = program.variables[name].default
    if isinstance(default, TensorConstant):
        shape = default.shape
    else:
        shape = tuple(max(index[axis] for index in entries) + 1 for axis in range(max(rank)))
    wanted = set(itertools.product(*map(range, shape)))
    if len(rank) > 1 or set(entries) != wanted:
        absent = sorted(wanted - set(entries))
        extra = sorted(set(entries) - wanted)
        problem = (f"the column {entry_column(name, absent[0])} is missing" if absent else
                   f"there is a column {entry_column(name, extra[0])}" if extra else "they mix numbers of indices")
        declared = f" (the program declares '{name}' of shape {shape_text(shape)})" if isinstance(
            default, TensorConstant) else ""
        raise InputError(f"the columns of input '{name}' do not make a tensor{declared}: {problem}",
                         program.variables[name].position, program.source,
                         f"an input of shape {shape_text(shape)} is read from the columns "
                         f"{', '.join(entry_column(name, index) for index in sorted(wanted)[:3])}"
                         f"{' ...' if len(wanted) > 3 else ''}"
                         f"{' ' + entry_column(name, max(wanted)) if len(wanted) > 3 else ''}")
    rows = len(next(iter(entries.values())))
    stacked = np.empty((rows, *shape))
    for index, column in entries.items():
        stacked[(slice(None), *index)] = column
    return stacked
