"""The mean of a program's output over data rows, as a function of its parameters.

``ProgramObjective`` is the ``Objective`` (see ``execute.fit``) of a scalar program: the
vectorized executor run over the data's columns with the parameters shared by every row.
A tensor program's objective is ``execute.tensor_fit.TensorObjective``.

``BatchObjective`` is that of a program written for a whole batch of rows at once (makemore's
``ninja.ad``: ``Xb`` of shape [32, 3], ``Yb`` of [32], batch normalisation over the batch): each
step stacks that many rows into its batch inputs and runs the program once; its output is
already the batch's loss.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import listed
from ..language.program import Program
from .fit import FitPlan

if TYPE_CHECKING:
    import numpy as np

__all__ = ["BatchObjective", "ProgramObjective", "batch_rows", "objective_for"]


def objective_for(program: Program, plan: FitPlan, columns: Mapping[str, np.ndarray], column_plan: Any,
                  values: Mapping[str, Any], init: str | None, seed: int,
                  row_label: Callable[[int], str] | None = None, advice: Any = None, dtype: Any = None) -> Any:
    """The mean loss over the rows of ``columns`` as a function of the parameters: the vectorized
    executor's (``ProgramObjective``), or for a tensor program (or tensor data: columns x[0],
    x[1]) the tensor executor's (``TensorObjective``), whose ``layout`` lays the parameters end to
    end in one vector and whose ``start`` is their starting values (initializers drawn from
    ``seed``, missing ones by ``init``).  ``dtype`` float32 runs any program with the tensor
    executor in that precision (None: float64)."""
    from ..language.program import Initializer, runs_as_tensors
    from .columns import feeds_tensors

    if dtype is not None:
        from .interpreter import float_type

        dtype = float_type(dtype)  # ValueError for a type that is not one of FLOAT_TYPES
    single = dtype is not None and dtype.name == "float32"
    batch = batch_rows(program, plan.data_inputs, column_plan)
    if batch is not None:
        return _batch_objective(program, plan, columns, column_plan, batch, init, seed, row_label, dtype)
    if not (single or runs_as_tensors(program, values) or feeds_tensors(program, column_plan)):
        return ProgramObjective(program, plan, columns, row_label, advice)
    from .batch_evaluator import input_rows
    from .interpreter import input_arrays
    from .tensor_fit import TensorObjective, starting_parameters

    layout, start = starting_parameters(program, plan.parameters, plan.start, init or "normal", seed, dtype)
    data = input_rows(program, {name: columns[name] for name in column_plan.numeric})
    drawn = input_arrays(program, {}, seed)  # an input left fixed may be declared with an initializer
    fixed = {name: drawn[name] if isinstance(value, Initializer) else value for name, value in plan.fixed.items()}
    objective = TensorObjective(program, plan.output, layout, fixed, data, row_label)
    objective.start = start
    return objective


class ProgramObjective:
    """The mean of a program's output over data rows, as a function of its parameters.

    Each call runs the vectorized executor over the rows (all, or a mini-batch's) with
    the parameters and fixed inputs given as numbers every row shares, reducing to the
    mean loss and the mean gradient.  A row where an op fails raises the executor's
    ``RowError``, naming the row of the data (``row_label``) rather than of the batch.
    """

    def __init__(self, program: Program, plan: FitPlan, columns: Mapping[str, np.ndarray],
                 row_label: Callable[[int], str] | None = None, advice: Any = None) -> None:
        from .batch_evaluator import PYTHON_ADVICE, BatchEvaluator

        advice = advice or PYTHON_ADVICE  # what hints suggest: the command line passes its own
        self.plan = plan
        self.columns = {name: columns[name] for name in plan.data_inputs}
        self.rows = len(next(iter(self.columns.values()))) if self.columns else 1
        self.row_label = row_label or (lambda index: f"row {index} of the data (counting from 0)")
        self._gradients = BatchEvaluator(program, output=plan.output, wrt=plan.parameters, advice=advice)
        self._values = BatchEvaluator(program, output=plan.output, wrt=(), advice=advice)

    def loss_and_grad(self, params: np.ndarray, rows: np.ndarray | None) -> tuple[float, np.ndarray]:
        import numpy as np

        result = self._evaluate(self._gradients, params, rows)
        return result.value, np.array([result.grads[name] for name in self.plan.parameters])

    def loss(self, params: np.ndarray) -> float:
        return self._evaluate(self._values, params, None).value  # type: ignore[no-any-return]

    def _evaluate(self, evaluator: Any, params: np.ndarray, rows: np.ndarray | None) -> Any:
        from .batch_evaluator import RowError

        inputs: dict[str, object] = dict(self.plan.fixed)
        inputs.update(zip(self.plan.parameters, params.tolist()))
        for name, column in self.columns.items():
            inputs[name] = column if rows is None else column[rows]
        try:
            return evaluator.evaluate(inputs, reduce="mean")
        except RowError as error:
            raise self._in_the_data(error, rows) from None

    def _in_the_data(self, error: Any, rows: np.ndarray | None) -> Any:
        """The error with its row counted in the data, shown by its data values (the
        executor's own note counts rows of the batch and lists the parameters first)."""
        index = error.row if rows is None else int(rows[error.row])
        shown = [f"{name}={float(column[index])!r}" for name, column in self.columns.items()]
        error.notes = [note for note in error.notes if not note.startswith("in row ")]
        error.notes.append(f"in {self.row_label(index)}: {listed(shown, 20)}")
        error.row = index
        return error


# --- a program of a whole batch of rows ---------------------------------------------------------


def _row_shapes(program: Program, names: Sequence[str], column_plan: Any) -> dict[str, tuple[int, ...]]:
    """The shape one data row gives each input: () from a column of its name, else the shape
    its entry columns span (``x[0]``, ``x[1]``: (2,))."""
    from .columns import split_column

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
    from ..errors import InputError
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


def _batch_objective(program: Program, plan: FitPlan, columns: Mapping[str, np.ndarray], column_plan: Any,
                     batch: int, init: str | None, seed: int, row_label: Callable[[int], str] | None,
                     dtype: Any) -> BatchObjective:
    import numpy as np

    from ..language.program import Initializer
    from .interpreter import input_arrays
    from .tensor_fit import starting_parameters

    layout, start = starting_parameters(program, plan.parameters, plan.start, init or "normal", seed, dtype)
    row_shapes = _row_shapes(program, plan.data_inputs, column_plan)
    by_input: dict[str, dict[tuple[int, ...], np.ndarray]] = {name: {} for name in plan.data_inputs}
    for column in column_plan.numeric:
        name = column_plan.entries.get(column)
        if name is None:
            by_input[column][()] = columns[column]
        else:
            from .columns import split_column

            by_input[name][split_column(column)[1]] = columns[column]  # type: ignore[index]
    data = {}
    for name, entries in by_input.items():
        shape = row_shapes[name]
        rows = len(next(iter(entries.values())))
        stacked = np.empty((rows, *shape))
        for index, column in entries.items():
            stacked[(slice(None), *index)] = column
        data[name] = stacked
    drawn = input_arrays(program, {}, seed)
    fixed = {name: drawn[name] if isinstance(value, Initializer) else value for name, value in plan.fixed.items()}
    objective = BatchObjective(program, plan.output, layout, fixed, data, batch, row_label)
    objective.start = start
    return objective


# How many batches ``BatchObjective.loss`` runs at once: ninja.ad's widest register is then
# 64 x 32 x 64 floats, a megabyte.
BATCHES_A_RUN = 64


class BatchObjective:
    """The loss of a program that takes ``batch_rows`` rows at once, as a function of the flat
    parameter vector (``execute.fit.Objective``): ``train`` draws batches of exactly that many
    rows (an epoch leaves out the rows a whole batch would not take); ``loss`` over every row is
    the mean of the program's output over the rows' consecutive batches, in their order (the
    rows after the last whole batch left out)."""

    def __init__(self, program: Program, output: str, layout: Any, fixed: Mapping[str, Any],
                 data: Mapping[str, np.ndarray], batch_rows: int,
                 row_label: Callable[[int], str] | None = None) -> None:
        from ..errors import InputError, Source
        from .interpreter import in_precision, in_precision_columns

        self.program, self.output, self.layout = program, output, layout
        self.dtype = layout.dtype
        self.row_label = row_label or (lambda index: f"row {index} of the data (counting from 0)")
        self.fixed = {name: in_precision(value, self.dtype, name, source=program.source, given=True)
                      for name, value in fixed.items()}
        self.data = in_precision_columns(data, self.dtype, self.row_label)
        self.rows = len(next(iter(self.data.values())))
        self.batch_rows = batch_rows
        self.measured_rows = self.rows - self.rows % batch_rows  # those of whole batches, which loss() takes
        self.start: Any = None
        self.batched = frozenset(self.data)  # (loss's runs: the batches along a leading axis)
        self._shapes: dict[Any, Any] = {}
        if self.rows < batch_rows:
            first = next(iter(self.data))
            raise InputError(f"the program takes {batch_rows} rows at once ('{first}' is declared with "
                             f"{batch_rows} rows), and the data has {self.rows}",
                             source=Source(program.source.name, ""), hint=f"give at least {batch_rows} rows")

    def loss_and_grad(self, params: Any, rows: Any) -> tuple[float, Any]:
        import numpy as np

        run = self._run(params, self._batch(rows))
        out = run.value(self.output)
        grads = run.gradients(self.output, self.layout.names, np.ones(np.shape(out), self.dtype))
        return float(out), self.layout.pack(grads)

    def loss(self, params: Any) -> float:
        """The mean of the output over the rows' consecutive whole batches, a group of them a run
        (the batches laid along a leading axis, as ``TensorObjective`` lays rows)."""
        import math

        import numpy as np

        from ..errors import EvaluationError
        from .interpreter import run_forward

        size, batches = self.batch_rows, self.rows // self.batch_rows
        inputs = dict(self.fixed)
        inputs.update(self.layout.unpack(np.asarray(params, self.dtype)))
        losses = []
        for first in range(0, batches, BATCHES_A_RUN):
            last = min(first + BATCHES_A_RUN, batches)
            for name, column in self.data.items():
                inputs[name] = column[first * size:last * size].reshape(last - first, size, *column.shape[1:])
            try:
                run = run_forward(self.program, inputs, self.batched, shapes_cache=self._shapes, dtype=self.dtype)
            except EvaluationError as error:
                rows = np.arange(first * size, last * size)
                error.notes.append(f"in the batches of {size} rows from {self.row_label(int(rows[0]))} to "
                                   f"{self.row_label(int(rows[-1]))}")
                raise
            losses.extend(np.reshape(run.value(self.output), -1).tolist())
        return math.fsum(losses) / batches

    def _batch(self, rows: Any) -> Any:
        import numpy as np

        if rows is None:  # every row: only when they are one batch
            rows = np.arange(self.rows)
        if len(rows) != self.batch_rows:
            raise ValueError(f"a batch of {len(rows)} rows for a program of {self.batch_rows}")  # train's bug
        return rows

    def _run(self, params: Any, rows: Any) -> Any:
        import numpy as np

        from ..errors import EvaluationError, InputError, Source
        from .interpreter import run_forward

        inputs = dict(self.fixed)
        inputs.update(self.layout.unpack(np.asarray(params, self.dtype)))
        inputs.update((name, column[rows]) for name, column in self.data.items())
        try:
            run = run_forward(self.program, inputs, frozenset(), shapes_cache=self._shapes, dtype=self.dtype)
        except EvaluationError as error:
            shown = ", ".join(self.row_label(int(row)) for row in rows[:3])
            error.notes.append(f"in a batch of {len(rows)} rows: {shown}, ...")
            raise
        if np.shape(run.value(self.output)):
            raise InputError(f"fit minimises a number, and '{self.output}' has shape "
                             f"{list(np.shape(run.value(self.output)))}", source=Source(self.program.source.name, ""),
                             hint="make the loss a number: mean(...) over the batch")
        return run
