"""The mean of a program's output over data rows, as a function of its parameters.

``ProgramObjective`` is the ``Objective`` (see ``execute.fit``) of a scalar program: the
vectorized executor run over the data's columns with the parameters shared by every row.
A tensor program's objective is ``execute.tensor_fit.TensorObjective``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..errors import listed
from ..language.program import Program
from .fit import FitPlan

if TYPE_CHECKING:
    import numpy as np

__all__ = ["ProgramObjective", "objective_for"]


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
    if not (single or runs_as_tensors(program, values) or feeds_tensors(program, column_plan)):
        return ProgramObjective(program, plan, columns, row_label, advice)
    from .interpreter import input_arrays
    from .tensor_batch import input_rows
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
        from .vectorized import PYTHON_ADVICE, BatchEvaluator

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
        from .vectorized import RowError

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
