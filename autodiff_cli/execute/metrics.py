"""What ``fit`` measures besides the loss: metrics over rows, and the loss of held-out rows.

A metric is written as ``fit --metric`` takes it (``parse_metric``):

* ``NAME``: the mean over rows of the program's variable ``NAME`` (a number per row);
* ``accuracy:PRED:TARGET``: the fraction of rows classified right.  A number per row is a
  binary prediction by its sign (``PRED > 0`` is the positive class) against the target's
  (``TARGET > 0``: labels 1/0 and 1/-1 both work); a vector per row predicts the class of its
  largest entry (the first, on a tie), against the target's class number (0, 1, ...);
* ``mse:PRED:TARGET`` and ``mae:PRED:TARGET``: the mean squared and absolute difference, over
  rows and over the entries of a vector.

``PRED`` and ``TARGET`` are variables of the program (a data input, such as the label, is
one).  ``Measurer`` computes the validation loss and every metric, on the training and the
validation rows, at the parameters it is given: ``train``'s ``measure`` hook.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np

from ..errors import EvaluationError, InputError, Source, variables_hint
from ..language.program import Program
from .fit import FitSettings, Measurement
from .objective import ProgramObjective

__all__ = ["METRIC_KINDS", "Measurer", "Metric", "RowValues", "check_metrics", "measure_interval", "metric_value",
           "parse_metric"]

METRIC_KINDS = ("accuracy", "mse", "mae")  # the metrics of a prediction against a target
METRIC_FORMS = "NAME (a variable's mean over rows), accuracy:PRED:TARGET, mse:PRED:TARGET or mae:PRED:TARGET"


@dataclass(frozen=True)
class Metric:
    """One metric: ``kind`` is ``"mean"`` (of ``variables[0]``) or one of ``METRIC_KINDS``
    (of ``variables``, the prediction and the target); ``text`` is how it was written."""

    kind: str
    variables: tuple[str, ...]
    text: str

    @property
    def name(self) -> str:
        """Its short name, a history column's: the variable's, or the kind's."""
        return self.variables[0] if self.kind == "mean" else self.kind


def parse_metric(text: str) -> Metric:
    """A metric from its ``--metric`` text; ``InputError`` saying the forms when it is none of them."""
    parts = [part.strip() for part in text.split(":")]
    if len(parts) == 1 and parts[0] and parts[0] not in METRIC_KINDS:
        return Metric("mean", (parts[0],), text)
    if len(parts) == 3 and parts[0] in METRIC_KINDS and parts[1] and parts[2]:
        return Metric(parts[0], (parts[1], parts[2]), text)
    if parts[0] in METRIC_KINDS:
        example = "accuracy:z:label" if parts[0] == "accuracy" else f"{parts[0]}:prediction:y"
        raise InputError(f"--metric {text} needs the prediction and the target it compares",
                         hint=f"write --metric {parts[0]}:PRED:TARGET with two variables of the program, "
                              f"e.g. --metric {example}")
    raise InputError(f"--metric {text} is not a metric", hint=f"write {METRIC_FORMS}")


def check_metrics(program: Program, metrics: Sequence[Metric]) -> list[Metric]:
    """``metrics`` without repeats, each naming variables of ``program`` (``InputError`` if not)."""
    unique = list(dict.fromkeys(metrics))
    variables = list(program.variables)
    for metric in unique:
        unknown = [name for name in metric.variables if name not in program.variables]
        if unknown:
            raise InputError(f"--metric {metric.text} names '{unknown[0]}', which the program does not define",
                             source=Source(program.source.name, ""), hint=variables_hint(variables, unknown))
    return unique


# The history's own columns, which a metric's name must not repeat.
RESERVED = frozenset({"step", "loss", "grad_norm", "lr", "validation_loss"})


def column_names(metrics: Sequence[Metric]) -> list[str]:
    """Each metric's name in the history and on the progress line: its short name; its text
    where two metrics share a short name (two accuracies of different predictions); and
    ``mean:NAME`` for a variable named as one of the history's own columns (``loss``)."""
    short = [metric.name for metric in metrics]
    names = [name if short.count(name) == 1 else metric.text for name, metric in zip(short, metrics)]
    return [f"mean:{name}" if name in RESERVED else name for name in names]


# Measurements over a run at the default schedule, besides step 1's and the last parameters'.
# Measuring runs the model over every training row (for the metrics) and every validation row,
# about ten steps' worth of work for digits: once an epoch (18 steps), its run spent half its
# time measuring; eight times, under a tenth.
MEASUREMENTS = 8


def measure_interval(settings: FitSettings, steps_per_epoch: int) -> int | None:
    """The steps between the measurements ``train``'s ``Monitor`` schedules: ``--eval-every``'s;
    once an epoch (None) when measurements decide what training does (``--tol`` watching the
    validation loss, ``--keep best-validation``); otherwise at most ``MEASUREMENTS`` over the run,
    at the end of an epoch, at least once an epoch."""
    if settings.measure_every is not None:
        return settings.measure_every
    if settings.keep_best_validation or (settings.tol > 0 and settings.watch_validation):
        return None
    epochs = max(1, -(-settings.steps // (MEASUREMENTS * steps_per_epoch)))
    return None if epochs == 1 else epochs * steps_per_epoch


RowValues = Callable[[np.ndarray], dict[str, np.ndarray]]  # parameters -> each variable's rows (rows, *shape)


def metric_value(metric: Metric, values: dict[str, np.ndarray], row_label: Callable[[int], str]) -> float:
    """``metric`` over the rows of ``values`` (each variable's, with the rows along axis 0)."""
    if metric.kind == "mean":
        column = values[metric.variables[0]]
        if column.ndim > 1:
            raise _not_a_number(metric, metric.variables[0], column)
        return float(np.mean(column))
    prediction, target = (values[name] for name in metric.variables)
    if metric.kind == "accuracy":
        return _accuracy(metric, prediction, target, row_label)
    if prediction.shape != target.shape:
        raise InputError(f"--metric {metric.text} compares '{metric.variables[0]}' of shape "
                         f"{_shape(prediction)} per row with '{metric.variables[1]}' of shape {_shape(target)}",
                         hint="compare a prediction with a target of the same shape")
    difference = prediction - target
    return float(np.mean(difference * difference if metric.kind == "mse" else np.abs(difference)))


def _accuracy(metric: Metric, prediction: np.ndarray, target: np.ndarray, row_label: Callable[[int], str]) -> float:
    if target.ndim > 1:
        raise _not_a_number(metric, metric.variables[1], target, hint=(
            "the target is one number per row: a class number (0, 1, ...) for a vector of scores, or the "
            "label itself for one score; a one-hot vector's class is the variable holding its index"))
    if prediction.ndim == 1:  # binary: by the sign
        return float(np.mean((prediction > 0) == (target > 0)))
    if prediction.ndim > 2:
        raise _not_a_number(metric, metric.variables[0], prediction, "a number or a vector")
    classes = prediction.shape[1]
    bad = np.flatnonzero((target != np.round(target)) | (target < 0) | (target >= classes))
    if bad.size:
        row = int(bad[0])
        raise InputError(f"--metric {metric.text}: '{metric.variables[1]}' is {float(target[row])!r} in "
                         f"{row_label(row)}, which is not a class of '{metric.variables[0]}'",
                         hint=f"with a vector of {classes} scores per row, the target is a class number "
                              f"from 0 to {classes - 1}")
    return float(np.mean(np.argmax(prediction, axis=1) == target))


def _shape(column: np.ndarray) -> str:
    return "[" + ", ".join(map(str, column.shape[1:])) + "]"


def _not_a_number(metric: Metric, name: str, column: np.ndarray, wanted: str = "a number",
                  hint: str = "average a variable that is a number per row, e.g. mean(...) or sum(...) of it"
                  ) -> InputError:
    return InputError(f"--metric {metric.text} needs {wanted} per row, and '{name}' has shape {_shape(column)}",
                      hint=hint)


def program_row_values(program: Program, objective: Any, names: Sequence[str]) -> RowValues:
    """The rows of ``names`` over every row of a scalar program's ``ProgramObjective``, in one
    pass of the vectorized executor; a failing row is named by its place in the data."""
    from .batch_evaluator import BatchEvaluator, RowError

    names = list(dict.fromkeys(names))
    evaluator = BatchEvaluator(program, output=names[0], wrt=(), values_of=names[1:])
    rows = objective.rows

    def values(params: np.ndarray) -> dict[str, np.ndarray]:
        inputs: dict[str, Any] = dict(objective.plan.fixed)
        inputs.update(zip(objective.plan.parameters, params.tolist()))
        inputs.update(objective.columns)
        try:
            result = evaluator.evaluate(inputs)
        except RowError as error:
            error.notes.append(f"in {objective.row_label(error.row)}")
            raise
        return {name: np.broadcast_to(np.asarray(result.values[name], dtype=float), (rows,)) for name in names}

    return values


# Rows run through a tensor program at once when measuring.  Measuring runs the model over every
# training and validation row; in one run, a layer's matrix product over all of them is large
# enough for the BLAS to start its threads, which on a busy machine made a measurement several
# times slower than the same rows in pieces of a mini-batch's size.  Pieces also bound memory.
MEASURE_ROWS = 128


def tensor_row_values(objective: Any, names: Sequence[str], chunk_rows: int = MEASURE_ROWS) -> RowValues:
    """The rows of ``names`` over every row of a ``TensorObjective``, from forward passes over
    ``chunk_rows`` rows at a time; a failing row is named by its place in the data."""
    from .interpreter import run_forward

    names = list(dict.fromkeys(names))
    rows = objective.rows
    shapes: dict[Any, Any] = {}

    def values(params: np.ndarray) -> dict[str, np.ndarray]:
        inputs = dict(objective.fixed)
        inputs.update(objective.layout.unpack(params))
        parts: dict[str, list[np.ndarray]] = {name: [] for name in names}
        for start in range(0, rows, chunk_rows):
            stop = min(rows, start + chunk_rows)
            inputs.update((name, column[start:stop]) for name, column in objective.data.items())
            try:
                run = run_forward(objective.program, inputs, objective.batched, shapes_cache=shapes,
                                  dtype=objective.dtype)
            except EvaluationError as error:
                row = getattr(error, "row", None)
                if row is not None:
                    error.row = start + row  # type: ignore[attr-defined]
                    error.notes.append(f"in {objective.row_label(start + row)}")
                raise
            for name in names:
                value = np.asarray(run.value(name), dtype=float)
                if not run.leads[run.register(name)]:  # the same for every row
                    value = np.broadcast_to(value, (stop - start, *value.shape))
                parts[name].append(value)
        return {name: np.concatenate(found) for name, found in parts.items()}

    return values


@dataclass
class _Rows:
    """One set of rows: its objective (the mean loss), the rows of the metrics' variables, and
    how a row is named."""

    objective: Any
    values: RowValues | None
    row_label: Callable[[int], str]
    output: str | None = None  # the loss's variable, among the values: the validation loss from the same pass


class Measurer:
    """The validation loss and the metrics at given parameters (``train``'s ``measure``).

    ``training`` and ``validation`` are objectives (``ProgramObjective``, ``TensorObjective``);
    the training rows' loss is not measured again (``train`` has it).  A tensor program's
    validation loss and metrics come from one pass over the validation rows (the loss is the
    mean of the output's rows, as the objective's is).
    """

    def __init__(self, program: Program, metrics: Sequence[Metric], training: Any, validation: Any | None) -> None:
        self.metrics = list(metrics)
        self.names = column_names(self.metrics)
        variables = [name for metric in self.metrics for name in metric.variables]
        self._training = self._rows(program, training, variables)
        self._validation = None if validation is None else self._rows(program, validation, variables, loss=True)
        self._joint = None
        if isinstance(training, ProgramObjective) and isinstance(validation, ProgramObjective) and variables:
            self._joint = _joint_rows(program, training, validation, [*variables, training.plan.output])

    @staticmethod
    def _rows(program: Program, objective: Any, variables: list[str], loss: bool = False) -> _Rows:
        from .objective import TensorObjective

        values = None
        output = None
        if isinstance(objective, TensorObjective):
            output = objective.output if loss else None
            wanted = variables + ([output] if output is not None else [])
            values = tensor_row_values(objective, wanted) if wanted else None
        elif variables:
            values = program_row_values(program, objective, variables)
        return _Rows(objective, values, objective.row_label, output)

    def __call__(self, params: np.ndarray, step: int) -> Measurement:
        if self._joint is not None:
            measured = self._jointly(params, step)
            if measured is not None:
                return measured
        validation_loss = None
        validation: dict[str, float] = {}
        if self._validation is not None:
            rows = self._validation
            if rows.output is None:
                validation_loss = rows.objective.loss(params)
                validation = self._metrics(rows, self._values(rows, params))
            else:
                values = self._values(rows, params)
                assert values is not None  # the output is among them
                validation_loss = float(np.mean(values[rows.output]))
                validation = self._metrics(rows, values)
        return Measurement(step, validation_loss, self._metrics(self._training, self._values(self._training, params)),
                           validation)

    @staticmethod
    def _values(rows: _Rows, params: np.ndarray) -> dict[str, np.ndarray] | None:
        if rows.values is None:
            return None
        if rows.output is None:
            return rows.values(params)
        try:
            return rows.values(params)
        except EvaluationError:
            rows.objective.loss(params)  # the objective's own message when the loss fails (the failing row found)
            raise  # the loss is fine: a metric's variable failed

    def _metrics(self, rows: _Rows, values: dict[str, np.ndarray] | None) -> dict[str, float]:
        if values is None or not self.metrics:
            return {}
        return {name: metric_value(metric, values, rows.row_label) for name, metric in zip(self.names, self.metrics)}

    def _jointly(self, params: np.ndarray, step: int) -> Measurement | None:
        """A scalar program measured in one pass over the training rows and the validation rows
        together (a pass costs about the same for 80 rows or 800: the executor's walk of the
        program); None when a row fails, for the passes one by one to say where."""
        assert self._joint is not None and self._validation is not None
        try:
            values = self._joint(params)
        except EvaluationError:
            return None
        split = self._training.objective.rows
        training = {name: column[:split] for name, column in values.items()}
        validation = {name: column[split:] for name, column in values.items()}
        loss = float(np.mean(validation[self._validation.objective.plan.output]))
        return Measurement(step, loss, self._metrics(self._training, training),
                           self._metrics(self._validation, validation))


def _joint_rows(program: Program, training: ProgramObjective, validation: ProgramObjective,
                names: list[str]) -> RowValues:
    """``program_row_values`` over the training rows followed by the validation rows."""
    both = SimpleNamespace(plan=training.plan, rows=training.rows + validation.rows, row_label=training.row_label,
                           columns={name: np.concatenate([column, validation.columns[name]])
                                    for name, column in training.columns.items()})
    return program_row_values(program, both, names)
