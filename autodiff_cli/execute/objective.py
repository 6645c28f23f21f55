"""A program's mean loss over rows of data, as a function of its parameters: fit's objectives.

``execute.fit.train`` steps an optimiser's rule on one flat vector of every parameter and asks
an ``Objective`` for the mean loss over rows (all, or a mini-batch's) and its gradient there.
``objective_for`` makes it from a program, its plan of inputs (``fit.plan_fit``) and the data's
columns, on the executor the program calls for:

* ``ProgramObjective``: a float64 program of numbers on number columns, on the vectorized
  executor (``execute.vectorized``: a column per register, the sum over rows added exactly).
  The interpreter computes the same loss over 0-d parameters, but neither bit for bit (its
  gradient is summed over the rows in another order: moons' 100 steps end 9e-15 apart) nor as
  fast (1.3x the time on moons' 337 parameters, 2x on a million rows of line.ad), so a program
  of numbers keeps the executor made for it.
* ``TensorObjective``: any other program (tensors, entry columns ``x[0]``, float32), on the
  NumPy interpreter: the inputs read from the data carry the batch axis and the parameters do
  not, so one forward and one reverse sweep give every row's loss and the gradient summed over
  the rows.
* ``BatchObjective``: a program written for a whole batch of rows at once (makemore's
  ``ninja.ad``: ``Xb`` of [32, 3], ``Yb`` of [32], batch normalisation over the batch): each
  step stacks that many rows into its batch inputs and runs the program once; its output is
  already the batch's loss.

What they share is written once: the inputs of a step (fixed, parameters, the data's rows), a
row named by its place in the data, the parameters laid end to end in the flat vector
(``ParameterLayout``: each a view of its slice; a program of numbers' vector is its parameters
in order) and their start with the fixed inputs drawn (``laid_out``), and the data's columns
read into inputs (``columns.input_rows``: ``x[0]`` and ``x[1]`` give ``x`` of shape [2]).

**Precision.**  The layout's ``dtype`` (float64, or float32) is the interpreter's objectives':
the data and fixed inputs are converted to it once, when the objective is made, and every
step's values and gradient are in it.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import EvaluationError, InputError, Source, listed
from ..language.program import Initializer, Program, runs_as_tensors
from ..language.shapes import Shape, shape_text
from .columns import feeds_tensors, input_rows, split_column
from .fit import FitPlan
from .interpreter import float_type, in_precision, in_precision_columns, input_arrays, run_forward
from .vectorized import _let_the_heap_hold

__all__ = ["BatchObjective", "ParameterLayout", "ProgramObjective", "TensorObjective", "batch_rows", "laid_out",
           "objective_for", "on_the_interpreter", "row_objective", "seeded_inputs", "starting_parameters"]


def objective_for(program: Program, plan: FitPlan, columns: Mapping[str, np.ndarray], column_plan: Any,
                  values: Mapping[str, Any], init: str | None, seed: int,
                  row_label: Callable[[int], str] | None = None, advice: Any = None, dtype: Any = None) -> Any:
    """The mean loss over the rows of ``columns`` as a function of the parameters, on the executor
    the program calls for (see the module docstring).  The interpreter's objectives have a
    ``layout`` of the parameters in one vector and a ``start`` (initializers drawn from ``seed``,
    missing values by ``init``).  ``dtype`` float32 runs any program on the interpreter in that
    precision (None: float64); ``ValueError`` for a type that is not one of ``FLOAT_TYPES``."""
    if dtype is not None:
        dtype = float_type(dtype)
    single = dtype is not None and dtype.name == "float32"
    given = {name: columns[name] for name in column_plan.numeric}
    batch = batch_rows(program, plan.data_inputs, column_plan)
    if batch is not None:
        layout, start, fixed = laid_out(program, plan, init, seed, dtype)
        data = input_rows(program, given, _row_shapes(program, plan.data_inputs, column_plan))
        data = {name: data[name] for name in plan.data_inputs}  # in program order: the first is named
        objective: Any = BatchObjective(program, plan.output, layout, fixed, data, batch, row_label)
    elif single or on_the_interpreter(program, values, column_plan):
        layout, start, fixed = laid_out(program, plan, init, seed, dtype)
        objective = row_objective(program, plan, given, layout, fixed, row_label)
    else:
        return row_objective(program, plan, given, row_label=row_label, advice=advice)
    objective.start = start
    return objective


def row_objective(program: Program, plan: FitPlan, columns: Mapping[str, Any], layout: ParameterLayout | None = None,
                  fixed: Mapping[str, Any] | None = None, row_label: Callable[[int], str] | None = None,
                  advice: Any = None) -> Any:
    """The mean loss over the rows of ``columns`` (those that feed inputs: ``x``, or ``x[0]`` and
    ``x[1]``) of a program that takes one row a run: on the interpreter, its parameters laid out
    by ``layout`` and its fixed inputs ``fixed`` as ``laid_out`` gives them; without a layout, a
    program of numbers on the vectorized executor (``advice``: the hints its errors give)."""
    if layout is None:
        return ProgramObjective(program, plan, columns, row_label, advice)
    return TensorObjective(program, plan.output, layout, fixed or {}, input_rows(program, columns), row_label)


def on_the_interpreter(program: Program, values: Mapping[str, Any], column_plan: Any) -> bool:
    """Whether a row program's loss runs on the interpreter: the values given or declared make it
    a tensor program, or its columns give entries of a tensor (``x[0]``); else its numbers run on
    the vectorized executor (a float32 run is the interpreter's too, whatever the program)."""
    return runs_as_tensors(program, values) or feeds_tensors(program, column_plan)


# --- the parameters in one vector ----------------------------------------------------------------


class ParameterLayout:
    """Where each parameter lies in the flat vector the optimiser steps."""

    def __init__(self, names: Sequence[str], shapes: Sequence[Shape], dtype: Any = np.float64) -> None:
        self.names = list(names)
        self.dtype = np.dtype(dtype)  # the flat vector's precision: float64, or float32
        self.shapes = [tuple(shape) for shape in shapes]
        sizes = [int(np.prod(shape)) for shape in self.shapes]
        self.offsets = [0, *itertools.accumulate(sizes)]
        self.size = self.offsets[-1]

    def unpack(self, flat: Any) -> dict[str, Any]:
        """Each parameter as a view of its slice of ``flat``."""
        return {name: flat[start:end].reshape(shape)
                for name, shape, start, end in zip(self.names, self.shapes, self.offsets, self.offsets[1:])}

    def pack(self, arrays: Mapping[str, Any]) -> Any:
        """The arrays of ``arrays`` end to end in a new vector of the layout's precision."""
        if not self.names:
            return np.empty(0, self.dtype)
        flat = np.concatenate([a.reshape(-1) if a.__class__ is np.ndarray else np.reshape(a, -1)
                               for a in map(arrays.__getitem__, self.names)], dtype=self.dtype)
        if flat.size != self.size:  # an array of another shape than its parameter's: a bug, said here
            raise ValueError(f"{flat.size} numbers for a layout of {self.size}")
        return flat

    def nested(self, flat: Any) -> dict[str, Any]:
        """Each parameter as a number or nested lists, as a values file holds it."""
        return {name: value.tolist() if value.ndim else float(value) for name, value in self.unpack(flat).items()}


def starting_parameters(program: Program, names: Sequence[str], given: Mapping[str, Any], init: str,
                        seed: int, dtype: Any = None) -> tuple[ParameterLayout, Any]:
    """The layout of the parameters and their starting vector: a value given (``--values``,
    ``--set``), else the program's default (an initializer is drawn from ``seed``), else a draw
    of ``init`` (``normal``: standard normal; ``uniform``: on [-1, 1]) for a number.  ``dtype``:
    the vector's precision, float64 (None) or float32 (the float64 values rounded)."""
    from .fit import initial_values

    variables = program.variables
    dtype = float_type(dtype)
    defaults = input_arrays(program, {}, seed, dtype)  # (a default too large for dtype is refused here)
    starts = {}
    missing = [name for name in names if name not in given and variables[name].default is None]
    drawn = iter(initial_values(len(missing), init, seed))
    for name in names:
        if name in given and not isinstance(given[name], Initializer):  # a draw is made from the seed
            starts[name] = in_precision(given[name], dtype, name, source=program.source, given=True)
        elif variables[name].default is not None:
            starts[name] = defaults[name]
        else:
            starts[name] = np.float64(next(drawn))
    layout = ParameterLayout(names, [np.shape(starts[name]) for name in names], dtype)
    return layout, layout.pack(starts)


def laid_out(program: Program, plan: FitPlan, init: str | None, seed: int, dtype: Any = None
             ) -> tuple[ParameterLayout, Any, dict[str, Any]]:
    """What the interpreter's objectives start from: the parameters' layout and starting vector
    (``starting_parameters``; without ``init``, missing ones drawn from the normal) and the fixed
    inputs, those declared with an initializer drawn from ``seed``."""
    layout, start = starting_parameters(program, plan.parameters, plan.start, init or "normal", seed, dtype)
    drawn = input_arrays(program, {}, seed)
    fixed = {name: drawn[name] if isinstance(value, Initializer) else value for name, value in plan.fixed.items()}
    return layout, start, fixed


def seeded_inputs(program: Program, plan: FitPlan, seed: int) -> dict[str, Any]:
    """The fixed inputs whose value the run drew from ``seed`` (``W1 = uniform([16, 2], -1, 1)``
    that ``--params`` leaves unlearned), in float64 as ``laid_out`` draws them.  A ``zeros`` input
    depends on no seed: like a written-out default, the program alone gives it back."""
    names = [name for name, value in plan.fixed.items() if isinstance(value, Initializer) and value.kind != "zeros"]
    if not names:
        return {}
    drawn = input_arrays(program, {}, seed)
    return {name: drawn[name] for name in names}


# --- what every objective holds ------------------------------------------------------------------


def data_row(index: int) -> str:
    """How a row is named when the caller gives no name (rows given from Python)."""
    return f"row {index} of the data (counting from 0)"


class _MeanOverRows:
    """The program, its output, the fixed inputs, the data's inputs (an array of rows each), how
    many rows there are and how one is named; and a step's inputs made from them."""

    def __init__(self, program: Program, output: str, fixed: Mapping[str, Any], data: Mapping[str, Any],
                 row_label: Callable[[int], str]) -> None:
        self.program, self.output, self.row_label = program, output, row_label
        self.fixed = dict(fixed)
        self.data = dict(data)
        self.rows = len(next(iter(self.data.values()))) if self.data else 1
        self.start: Any = None  # the starting vector, when the objective laid the parameters out

    def _inputs(self, parameters: Mapping[str, Any] | Iterable[tuple[str, Any]], rows: Any) -> dict[str, Any]:
        """The program's inputs at a step: the fixed ones, the parameters, and the data at ``rows``
        (indices; None: every row)."""
        inputs = dict(self.fixed)
        inputs.update(parameters)
        for name, column in self.data.items():
            inputs[name] = column if rows is None else column[rows]
        return inputs

    @staticmethod
    def _in_the_data(row: int, rows: Any) -> int:
        """Row ``row`` of a step's ``rows`` (None: every row) counted in the data."""
        return row if rows is None else int(rows[row])


# --- a program of numbers, on the vectorized executor --------------------------------------------


class ProgramObjective(_MeanOverRows):
    """The mean of a program's output over data rows, as a function of its parameters.

    Each call runs the vectorized executor over the rows (all, or a mini-batch's) with
    the parameters and fixed inputs given as numbers every row shares, reducing to the
    mean loss and the mean gradient.  A row where an op fails raises the executor's
    ``RowError``, naming the row of the data (``row_label``) rather than of the batch.
    """

    def __init__(self, program: Program, plan: FitPlan, columns: Mapping[str, np.ndarray],
                 row_label: Callable[[int], str] | None = None, advice: Any = None) -> None:
        from .batch_evaluator import PYTHON_ADVICE, BatchEvaluator

        super().__init__(program, plan.output, plan.fixed, {name: columns[name] for name in plan.data_inputs},
                         row_label or data_row)
        advice = advice or PYTHON_ADVICE  # what hints suggest: the command line passes its own
        self.plan = plan
        self.columns = self.data  # (by the name the metrics read)
        self._gradients = BatchEvaluator(program, output=plan.output, wrt=plan.parameters, advice=advice)
        self._values = BatchEvaluator(program, output=plan.output, wrt=(), advice=advice)

    def loss_and_grad(self, params: np.ndarray, rows: np.ndarray | None) -> tuple[float, np.ndarray]:
        result = self._evaluate(self._gradients, params, rows)
        return result.value, np.array([result.grads[name] for name in self.plan.parameters])

    def loss(self, params: np.ndarray) -> float:
        return self._evaluate(self._values, params, None).value  # type: ignore[no-any-return]

    def _evaluate(self, evaluator: Any, params: np.ndarray, rows: np.ndarray | None) -> Any:
        from .batch_evaluator import RowError

        try:
            return evaluator.evaluate(self._inputs(zip(self.plan.parameters, params.tolist()), rows), reduce="mean")
        except RowError as error:
            raise self._named(error, rows) from None

    def _named(self, error: Any, rows: np.ndarray | None) -> Any:
        """The error with its row counted in the data, shown by its data values (the
        executor's own note counts rows of the batch and lists the parameters first)."""
        index = self._in_the_data(error.row, rows)
        shown = [f"{name}={float(column[index])!r}" for name, column in self.data.items()]
        error.notes = [note for note in error.notes if not note.startswith("in row ")]
        error.notes.append(f"in {self.row_label(index)}: {listed(shown, 20)}")
        error.row = index
        return error


# --- any other program, on the interpreter -------------------------------------------------------


class _OnTheInterpreter(_MeanOverRows):
    """An objective run by the NumPy interpreter: the parameters laid out by ``layout``, whose
    precision the fixed inputs and the data are converted to, once, here."""

    def __init__(self, program: Program, output: str, layout: ParameterLayout, fixed: Mapping[str, Any],
                 data: Mapping[str, Any], row_label: Callable[[int], str] | None) -> None:
        dtype = layout.dtype
        row_label = row_label or data_row
        super().__init__(program, output,
                         {name: in_precision(value, dtype, name, source=program.source, given=True)
                          for name, value in fixed.items()},
                         in_precision_columns(data, dtype, row_label), row_label)
        self.layout, self.dtype = layout, dtype
        self.batched = frozenset(self.data)  # the inputs with a leading axis of rows
        self._shapes: dict[Any, Any] = {}  # run_forward's shapes_cache: every step has the same shapes

    def _parameters(self, params: Any) -> dict[str, Any]:
        return self.layout.unpack(np.asarray(params, self.dtype))  # (no copy in the run's precision)


class TensorObjective(_OnTheInterpreter):
    """The mean of a program's output over data rows, as a function of the flat parameter
    vector (``execute.fit.Objective``), one row a batch entry."""

    def __init__(self, program: Program, output: str, layout: ParameterLayout, fixed: Mapping[str, Any],
                 data: Mapping[str, Any], row_label: Callable[[int], str] | None = None) -> None:
        super().__init__(program, output, layout, fixed, data, row_label)
        self._checked = False
        self._seed_array: Any = None  # ``_seed``'s, for batches of ``_seed_count`` rows
        self._seed_count = 0

    def loss_and_grad(self, params: Any, rows: Any) -> tuple[float, Any]:
        run, count = self._run(params, rows)
        out = run.value(self.output)
        flat = np.empty(self.layout.size, self.dtype)  # the gradient: the sweep writes what it can straight in
        slots = self.layout.unpack(flat)
        grads = run.gradients(self.output, self.layout.names, self._seed(out.shape, count), seed_nonzero=True,
                              into=slots)
        for name, grad in grads.items():
            slot = slots[name]
            if grad is not slot:
                if np.shape(grad) != slot.shape:  # a gradient of another shape than its parameter's: a bug
                    raise ValueError(f"a gradient of shape {np.shape(grad)} for '{name}' of {slot.shape}")
                slot[...] = grad
        return float(np.add.reduce(out, axis=None) / out.size), flat  # np.mean's own steps

    def _seed(self, shape: Any, count: int) -> Any:
        """d mean / d each row's output, 1 / rows everywhere: made once per batch size and shared by
        the steps (the sweep never writes into a gradient; read-only, so that none can)."""
        if self._seed_array is None or self._seed_array.shape != shape or self._seed_count != count:
            self._seed_array = np.full(shape, 1.0 / count, self.dtype)
            self._seed_array.flags.writeable = False
            self._seed_count = count
        return self._seed_array

    def loss(self, params: Any) -> float:
        run, _ = self._run(params, None)
        return float(np.mean(run.value(self.output)))

    def _run(self, params: Any, rows: Any) -> tuple[Any, int]:
        inputs = self._inputs(self._parameters(params), rows)
        try:
            run = run_forward(self.program, inputs, self.batched, shapes_cache=self._shapes, dtype=self.dtype)
        except EvaluationError as error:
            if getattr(error, "row", None) is None and self.data:
                error.row = self._first_failing_row(inputs, rows)
            raise self._named(error, rows) from None
        if not self._checked:
            self._check_output(run)
            # every step makes and frees the registers and the flat gradient, many alive at once:
            # kept in glibc's heap rather than mapped afresh with page faults each time, and the
            # heap's top not trimmed between steps (it is when twice the held size is free there;
            # holding only twice the largest block let a 64-128-10 step fault 240 pages, 1.5x its time)
            working = 8 * self.layout.size + sum(np.size(value) * 8 for value in run.values)  # (float64's)
            _let_the_heap_hold(2 * working)
        return run, (self.rows if rows is None else len(rows)) if self.data else 1

    def _check_output(self, run: Any) -> None:
        shape = run.shapes[run.register(self.output)]
        if shape:
            raise InputError(f"fit minimises a number, and '{self.output}' has shape {shape_text(shape)} per row",
                             source=Source(self.program.source.name, ""),
                             hint="make the loss a number: mean(...), sum(...), mse(p, y) or cross_entropy(z, y)")
        self._checked = True

    def _first_failing_row(self, inputs: Mapping[str, Any], rows: Any) -> int | None:
        """The first row of the batch the program fails on, when an op refused the batch as a
        whole (a label that is no class): found by halving, a few runs on the error's path only."""
        count = self.rows if rows is None else len(rows)

        def fails(stop: int) -> bool:
            part = {name: value[:stop] if name in self.batched else value for name, value in inputs.items()}
            try:
                run_forward(self.program, part, self.batched, shapes_cache=self._shapes, dtype=self.dtype)
            except EvaluationError:
                return True
            return False

        if not fails(count):
            return None
        low, high = 0, count  # rows [0, low) run; rows [0, high) fail
        while high - low > 1:
            middle = (low + high) // 2
            low, high = (low, middle) if fails(middle) else (middle, high)
        return low

    def _named(self, error: EvaluationError, rows: Any) -> EvaluationError:
        """A failing row of the batch named as its row of the data."""
        row = getattr(error, "row", None)
        if row is not None:
            error.notes.append(f"in {self.row_label(self._in_the_data(row, rows))}")
        return error


# --- a program of a whole batch of rows ---------------------------------------------------------


def _row_shapes(program: Program, names: Sequence[str], column_plan: Any) -> dict[str, tuple[int, ...]]:
    """The shape one data row gives each input: () from a column of its name, else the shape
    its entry columns span (``x[0]``, ``x[1]``: (2,))."""
    spans: dict[str, list[tuple[int, ...]]] = {name: [] for name in names}
    for column, name in getattr(column_plan, "entries", {}).items():  # (a stand-in plan may have none)
        entry = split_column(column)
        if name in spans and entry is not None:
            spans[name].append(entry[1])
    return {name: tuple(max(index[axis] for index in found) + 1 for axis in range(len(found[0]))) if found else ()
            for name, found in spans.items()}


def batch_rows(program: Program, data_inputs: Sequence[str], column_plan: Any) -> int | None:
    """How many rows a program written for a whole batch takes at once: its data inputs are
    declared with one axis more than a row gives them, in front (``Xb = [[0, 0, 5], ...]`` of
    [32, 3] for the columns ``Xb[0]`` to ``Xb[2]``), all of the same length; None for a program
    of one row.  ``InputError`` when some data inputs are a batch's and others a row's, or the
    batches' lengths differ."""
    from ..language.program import TensorConstant

    if column_plan is None or not data_inputs:
        return None
    variables = program.variables
    row_shapes = _row_shapes(program, data_inputs, column_plan)
    lengths = {}
    for name in data_inputs:
        default = variables[name].default
        shape = default.shape if isinstance(default, TensorConstant) else ()
        if len(shape) == len(row_shapes[name]) + 1 and tuple(shape[1:]) == row_shapes[name]:
            lengths[name] = shape[0]
    if not lengths:
        return None
    rowwise = [name for name in data_inputs if name not in lengths]
    if rowwise and not any(row_shapes[name] for name in lengths):
        # A vector input given one number a row beside inputs of one row (moons' x of [2] from a
        # column x) is far likelier a row program missing entry columns than half a batch program:
        # the row path's column check says so.
        return None
    if rowwise or len(set(lengths.values())) > 1:
        first = next(iter(lengths))
        other = rowwise[0] if rowwise else next(name for name in lengths if lengths[name] != lengths[first])
        raise InputError(f"'{first}' takes a batch of {lengths[first]} rows at once, and '{other}' "
                         + ("one row" if rowwise else f"a batch of {lengths[other]}"),
                         variables[other].position, program.source,
                         "a program takes its data one row at a time or a batch of rows at once: declare every "
                         "data input with the batch's rows in front, all of the same number")
    return next(iter(lengths.values()))


# How many batches ``BatchObjective.loss`` runs at once: ninja.ad's widest register is then
# 64 x 32 x 64 floats, a megabyte.
BATCHES_A_RUN = 64


class BatchObjective(_OnTheInterpreter):
    """The loss of a program that takes ``batch_rows`` rows at once, as a function of the flat
    parameter vector (``execute.fit.Objective``): ``train`` draws batches of exactly that many
    rows (an epoch leaves out the rows a whole batch would not take); ``loss`` over every row is
    the mean of the program's output over the rows' consecutive batches, in their order (the
    rows after the last whole batch left out)."""

    def __init__(self, program: Program, output: str, layout: ParameterLayout, fixed: Mapping[str, Any],
                 data: Mapping[str, np.ndarray], batch_rows: int,
                 row_label: Callable[[int], str] | None = None) -> None:
        super().__init__(program, output, layout, fixed, data, row_label)
        self.batch_rows = batch_rows
        self.measured_rows = self.rows - self.rows % batch_rows  # those of whole batches, which loss() takes
        if self.rows < batch_rows:
            first = next(iter(self.data))
            raise InputError(f"the program takes {batch_rows} rows at once ('{first}' is declared with "
                             f"{batch_rows} rows), and the data has {self.rows}",
                             source=Source(program.source.name, ""), hint=f"give at least {batch_rows} rows")

    def loss_and_grad(self, params: Any, rows: Any) -> tuple[float, Any]:
        run = self._run(params, self._batch(rows))
        out = run.value(self.output)
        grads = run.gradients(self.output, self.layout.names, np.ones(np.shape(out), self.dtype))
        return float(out), self.layout.pack(grads)

    def loss(self, params: Any) -> float:
        """The mean of the output over the rows' consecutive whole batches, a group of them a run
        (the batches laid along a leading axis, as ``TensorObjective`` lays rows)."""
        size, batches = self.batch_rows, self.rows // self.batch_rows
        inputs = self._inputs(self._parameters(params), None)
        losses = []
        for first in range(0, batches, BATCHES_A_RUN):
            last = min(first + BATCHES_A_RUN, batches)
            for name, column in self.data.items():
                inputs[name] = column[first * size:last * size].reshape(last - first, size, *column.shape[1:])
            try:
                run = run_forward(self.program, inputs, self.batched, shapes_cache=self._shapes, dtype=self.dtype)
            except EvaluationError as error:
                error.notes.append(f"in the batches of {size} rows from {self.row_label(first * size)} to "
                                   f"{self.row_label(last * size - 1)}")
                raise
            losses.extend(np.reshape(run.value(self.output), -1).tolist())
        return math.fsum(losses) / batches

    def _batch(self, rows: Any) -> Any:
        if rows is None:  # every row: only when they are one batch
            rows = np.arange(self.rows)
        if len(rows) != self.batch_rows:
            raise ValueError(f"a batch of {len(rows)} rows for a program of {self.batch_rows}")  # train's bug
        return rows

    def _run(self, params: Any, rows: Any) -> Any:
        try:
            run = run_forward(self.program, self._inputs(self._parameters(params), rows), frozenset(),
                              shapes_cache=self._shapes, dtype=self.dtype)
        except EvaluationError as error:
            shown = ", ".join(self.row_label(int(row)) for row in rows[:3])
            error.notes.append(f"in a batch of {len(rows)} rows: {shown}, ...")
            raise
        if np.shape(run.value(self.output)):
            raise InputError(f"fit minimises a number, and '{self.output}' has shape "
                             f"{list(np.shape(run.value(self.output)))}", source=Source(self.program.source.name, ""),
                             hint="make the loss a number: mean(...) over the batch")
        return run
