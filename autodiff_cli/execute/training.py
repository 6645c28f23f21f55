"""Training a program on rows: the one pipeline ``autodiff fit``, ``autodiff_cli.fit`` and the
Dask path share.

``plan_training`` takes the program, its rows (a ``DataSet``, in memory, or ``Partitions`` held
on a cluster), the values given and the options, and gives a ``Training``: the parameters and
their starting values (``execute.fit.plan_fit``), the objective (``execute.objective``, or
``execute.distributed`` over partitions) and what is measured besides the loss
(``execute.metrics.Measurer``).  ``run_training`` runs it (``execute.fit.train``) and returns
the ``FitResult``; progress, measurements and recorded steps go to callbacks.  ``learned_values``
and ``execute.training_text`` turn the result into what is written and said.

Nothing here reads a file, prints or exits: the caller reads the rows (``files.training_rows``),
shows progress and writes the results (``files.training_outputs``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import InputError, Source, listed
from .fit import FitPlan, FitResult, FitSettings, Measurement, Monitor, Step, initial_values, plan_fit, train

if TYPE_CHECKING:
    import numpy as np

    from ..language.program import Program
    from .columns import ColumnPlan
    from .metrics import Metric

__all__ = ["DataSet", "Partitions", "Training", "batch_settings", "check_same_columns", "learned_values",
           "plan_training", "report_meta", "run_training", "split_rows", "versions"]


class DataSet:
    """Every row of the data in memory (training passes over them again and again), by column,
    with the line (or Parquet row) each came from (``lines`` None: rows given from Python)."""

    def __init__(self, name: str, columns: dict[str, np.ndarray], lines: np.ndarray | None, unit: str,
                 plan: ColumnPlan) -> None:
        self.name, self.columns, self.lines, self.unit, self.plan = name, columns, lines, unit, plan
        self.held_out: float | None = None  # the fraction of the data file these rows are, when held out of it

    def label(self, index: int) -> str:
        """Where row ``index`` (from 0) is: 'line 12 of rows.csv'."""
        assert self.lines is not None
        return f"{self.unit} {int(self.lines[index])} of {self.name}"

    @property
    def row_label(self) -> Callable[[int], str] | None:
        return None if self.lines is None else self.label

    @property
    def count(self) -> int:
        return len(next(iter(self.columns.values()))) if self.lines is None else len(self.lines)

    def rows(self, indices: np.ndarray) -> DataSet:
        """The rows at ``indices``, still named by their lines in the file."""
        return DataSet(self.name, {column: values[indices] for column, values in self.columns.items()},
                       None if self.lines is None else self.lines[indices], self.unit, self.plan)


@dataclass
class Partitions:
    """Rows held in partitions on ``cluster`` (``execute.distributed``): the files ``paths``,
    each loaded by ``reader`` on the worker that holds it."""

    cluster: Any
    paths: list[str]
    reader: Any


def split_rows(data_set: DataSet, fraction: float, seed: int) -> tuple[DataSet, DataSet]:
    """The training rows and the validation rows: ``fraction`` of them (rounded), drawn with
    ``seed`` from NumPy's legacy ``RandomState`` (the same on every installation); each part
    keeps the file's order."""
    import numpy as np

    count = data_set.count
    held = int(round(fraction * count))
    if held == 0 or held == count:
        which = "no row for validation" if held == 0 else "no row to train on"
        raise InputError(f"--validation {fraction:g} of {count:,} row{'s' * (count != 1)} leaves {which}",
                         source=Source(data_set.name, ""),
                         hint="choose a fraction that leaves rows on both sides, or give --validation-data FILE")
    chosen = np.zeros(count, dtype=bool)
    chosen[np.random.RandomState(seed).permutation(count)[:held]] = True
    validation = data_set.rows(np.flatnonzero(chosen))
    validation.held_out = fraction
    return data_set.rows(np.flatnonzero(~chosen)), validation


def check_same_columns(data_set: DataSet, validation_set: DataSet) -> None:
    """The validation rows must have the training rows' columns, no more and no fewer: an entry
    column missing (``x[1]``) would silently make the input of another shape.  Entry columns
    are matched by the entry they name (``x[ 1]`` is ``x[1]``)."""
    given, held = _fed_columns(data_set.plan), _fed_columns(validation_set.plan)
    if given.keys() == held.keys():
        return
    missing = sorted(given[key] for key in given.keys() - held.keys())
    extra = sorted(held[key] for key in held.keys() - given.keys())
    lacking = f"have no column for {listed(missing, 5)}, which {data_set.name} gives" if missing else ""
    adding = f"give {listed(extra, 5)}, which {'it' if missing else data_set.name} does not" if extra else ""
    what = f"{lacking}, and {adding}" if lacking and adding else lacking or adding
    raise InputError(f"the validation rows {what}", source=Source(validation_set.name, ""),
                     hint="validation rows have the training rows' columns (in any order)")


def _fed_columns(plan: ColumnPlan) -> dict[Any, str]:
    """The columns that feed the program's inputs, keyed by the input and entry each names."""
    from .columns import split_column

    return {(split_column(column) if column in plan.entries else column): column for column in plan.numeric}


@dataclass
class Training:
    """A training run ready to go: the plan of inputs, the starting parameters (one flat vector;
    a tensor program's laid end to end by its objective's ``layout``), the objective, the
    ``Measurer`` (None: only the training loss is measured) and the fixed inputs drawn from the
    seed (``objective.seeded_inputs``), which the values written must hold to be this model."""

    program: Program
    values: dict[str, Any]
    data: DataSet
    validation: DataSet | None
    plan: FitPlan
    start: np.ndarray
    objective: Any
    measurer: Any
    seeded: dict[str, Any] = field(default_factory=dict)

    @property
    def layout(self) -> Any:
        """A tensor program's ``ParameterLayout`` (None for a program of numbers)."""
        return getattr(self.objective, "layout", None)

    @property
    def dtype(self) -> str:
        """The precision of the parameters and every step: 'float64', or 'float32'."""
        layout = self.layout
        return "float64" if layout is None else layout.dtype.name  # (a program of numbers runs in float64)

    @property
    def batch_rows(self) -> int | None:
        """The rows a program written for a whole batch takes at once (None: one row a run)."""
        return getattr(self.objective, "batch_rows", None)

    @property
    def measured_rows(self) -> int:
        """The training rows the loss is the mean over: every one, or a batch program's whole batches."""
        return getattr(self.objective, "measured_rows", self.objective.rows)  # type: ignore[no-any-return]

    @property
    def warnings(self) -> list[str]:
        return self.plan.warnings


def plan_training(program: Program, data: DataSet, values: dict[str, Any], *, validation: DataSet | None = None,
                  params: list[str] | None = None, init: str | None = None, seed: int = 0,
                  output: str | None = None, metrics: Sequence[Metric] = (),
                  advice: Callable[[str], Any] | None = None,
                  partitions: Partitions | None = None, warn: Callable[[list[str]], None] | None = None,
                  dtype: Any = None) -> Training:
    """The ``Training`` of ``program`` on ``data`` (or on ``partitions``, ``data`` then holding
    only the first partition's column plan), starting from ``values`` and the defaults.

    Raises ``InputError`` when the validation rows' columns are not the training rows', when a
    parameter has no starting value and ``init`` draws none, and whatever ``plan_fit`` and the
    objectives raise.  ``advice``: the executor's hints in the caller's terms for the rows of a
    file (its name -> an ``execute.vectorized.Advice``); ``warn`` is told the plan's warnings as soon as they are
    known (before the objective is built, which may fail).  ``dtype``: the precision of the
    parameters, data and every step, float64 (None) or float32 (``interpreter.FLOAT_TYPES``);
    float32 runs every program with the tensor executor, and not with ``partitions``."""
    if validation is not None:
        check_same_columns(data, validation)
    compared = [metric.variables[1] for metric in metrics if len(metric.variables) > 1]
    plan = plan_fit(program, data.plan, values, output, params, data.name, compared)
    start = _start(plan, init, seed, data.name)
    if warn is not None:
        warn(plan.warnings)
    if partitions is not None:
        from .interpreter import float_type

        if float_type(dtype).name != "float64":
            raise InputError("training over partitions runs in float64 only", hint="leave the precision at float64")
        hints = None if advice is None else advice(partitions.paths[0])
        objective = _distributed_objective(partitions, program, plan, data.plan, values, init, seed, hints)
    else:
        objective = _objective(program, plan, data, values, init, seed, advice, dtype)
    if getattr(objective, "layout", None) is not None:
        start = objective.start
    if metrics and getattr(objective, "batch_rows", None) is not None:
        raise InputError(f"--metric measures a program's variables row by row, and this program takes "
                         f"{objective.batch_rows} rows at once", source=Source(program.source.name, ""),
                         hint="leave --metric out: the validation loss (--validation-data) is measured batch by "
                              "batch")
    measurer = None
    if metrics or validation is not None:
        from .metrics import Measurer

        held_out = None if validation is None else _objective(program, plan, validation, values, init, seed, advice,
                                                              dtype)
        measurer = Measurer(program, list(metrics), objective, held_out)
    from .objective import seeded_inputs

    return Training(program, values, data, validation, plan, start, objective, measurer,
                    seeded_inputs(program, plan, seed))


def _start(plan: FitPlan, init: str | None, seed: int, data_name: str = "the data") -> np.ndarray:
    """The parameters' starting values (``init`` draws the missing ones)."""
    import numpy as np

    missing = plan.without_start
    if missing and init is None:
        raise InputError(
            f"no starting value for parameter{'s' if len(missing) > 1 else ''} {listed(missing, 10)}, which no "
            f"column of {data_name} gives",
            hint=f"add the column of any that is data to {data_name}; start a parameter with a default in the "
                 f"program ('{missing[0]} = 0'), --set {missing[0]}=VALUE or --values FILE.json, or draw them with "
                 "--init normal|uniform",
        )
    if init is not None and not missing:
        plan.warnings.append("--init is not used: every parameter has a starting value")
    drawn = iter(initial_values(len(missing), init, seed).tolist()) if missing and init else iter(())
    return np.array([plan.start[name] if name in plan.start else next(drawn) for name in plan.parameters])


def _objective(program: Program, plan: FitPlan, data: DataSet, values: dict[str, Any], init: str | None,
               seed: int, advice: Callable[[str], Any] | None, dtype: Any = None) -> Any:
    """The mean loss over the data set's rows (``execute.objective.objective_for``), its
    executor's hints naming the data set."""
    from .objective import objective_for

    hints = None if advice is None else advice(data.name)
    return objective_for(program, plan, data.columns, data.plan, values, init, seed, data.row_label, hints, dtype)


def _distributed_objective(partitions: Partitions, program: Program, plan: FitPlan, column_plan: ColumnPlan,
                           values: dict[str, Any], init: str | None, seed: int, advice: Any) -> Any:
    """The mean loss over every partition's rows, computed where they are held; for a tensor
    program with ``layout`` and ``start`` as ``objective_for`` gives them."""
    from .distributed import DistributedObjective, PartitionObjective, partition_labels
    from .objective import batch_rows, laid_out, on_the_interpreter

    if batch_rows(program, plan.data_inputs, column_plan) is not None:
        raise InputError("the program takes a batch of rows at once, and training over partitions takes them row "
                         "by row", source=Source(program.source.name, ""),
                         hint="train it on one file of rows (not --dask, a glob or a directory)")
    layout = fixed = start = None
    if on_the_interpreter(program, values, column_plan):
        layout, start, fixed = laid_out(program, plan, init, seed)
    make = PartitionObjective(program, plan, column_plan.numeric, layout, fixed, advice)
    paths = partitions.paths
    objective = DistributedObjective(partitions.cluster, paths, partitions.reader, make, partition_labels(paths))
    objective.layout, objective.start = layout, start
    return objective


def batch_settings(training: Training, settings: FitSettings) -> FitSettings:
    """``settings`` with the batch size of a program that takes a whole batch of rows at once
    (``objective.BatchObjective``), when none was given: its steps take that many rows."""
    from dataclasses import replace

    whole = training.batch_rows
    return settings if whole is None or settings.batch_size is not None else replace(settings, batch_size=whole)


def run_training(training: Training, settings: FitSettings, *, on_step: Callable[[Step], None] | None = None,
                 stop_requested: Callable[[], bool] | None = None,
                 on_measured: Callable[[Measurement], None] | None = None, recorder: Any = None,
                 on_recorded: Callable[[], None] | None = None) -> FitResult:
    """Train: ``execute.fit.train`` over the training's objective from its start.

    ``on_step`` is told every step; ``on_measured`` every measurement; ``recorder`` (an
    ``analysis.training_record.TrainingRecorder``) the steps it wants, and ``on_recorded`` is
    called after each (to rewrite a report).  The caller finishes the recording."""
    monitor = None
    if training.measurer is not None or recorder is not None:
        def record(step: Step, measurement: Measurement | None, params: Any, grad: Any) -> None:
            validation_loss = None if measurement is None else measurement.validation_loss
            recorder.observe(step.step, params, grad, step.loss, validation_loss,
                             {} if measurement is None else measurement.metrics())

        def observe(step: Step, measurement: Measurement | None, params: Any, grad: Any) -> None:
            if measurement is not None and on_measured is not None:
                on_measured(measurement)
            if recorder is None or not (recorder.wants(step.step) or measurement is not None):
                return  # a recording takes its own steps and every measured one
            record(step, measurement, params, grad)
            if on_recorded is not None:
                on_recorded()

        monitor = Monitor(measure=training.measurer, also_at=recorder.wants if recorder is not None else None,
                          observe=observe, observe_last=record if recorder is not None else None)
    return train(training.objective, training.start, batch_settings(training, settings), on_step=on_step,
                 stop_requested=stop_requested, monitor=monitor)


def report_meta(training: Training, settings: FitSettings, command: str, versions: Mapping[str, str]
                ) -> dict[str, Any]:
    """What a training report says about the run: the command, the seed, the versions, and the
    settings its diagnoses read (``lr``, ``batch_size``)."""
    return {"command": command, "seed": settings.seed, "versions": dict(versions), "steps": settings.steps,
            "program": training.program.source.name, "data": training.data.name,
            "validation": None if training.validation is None else training.validation.name,
            # the fraction of the data held out for validation (None: rows of their own file)
            "held_out": None if training.validation is None else training.validation.held_out,
            "optimizer": settings.optimizer, "lr": settings.lr, "lr_schedule": settings.lr_schedule,
            "batch_size": settings.batch_size}


def versions() -> dict[str, str]:
    """This package's, Python's and NumPy's versions, as a report shows them."""
    import platform
    from importlib.metadata import PackageNotFoundError, version

    import numpy as np

    try:
        own = version("autodiff-cli")
    except PackageNotFoundError:  # run from a source tree that was not installed
        own = "unknown"
    return {"autodiff-cli": own, "python": platform.python_version(), "numpy": np.__version__}


def learned_values(training: Training, params: np.ndarray, kept: Mapping[str, Any] | None = None
                   ) -> dict[str, Any]:
    """The values to write after training (``execute.fit.values_to_write``): the values given,
    each parameter's replaced by its learned value (tensors as nested lists), then those not
    given in program order: the parameters and the fixed inputs drawn from the seed (``eval``
    draws an initializer from seed 0, so without them ``--seed 7`` would pair the learned
    parameters with other weights)."""
    from .fit import values_to_write

    layout = training.layout
    values = values_to_write(training.plan, params, training.values, kept,
                             None if layout is None else layout.nested(params))
    if not training.seeded:
        return values
    given = {name: value for name, value in values.items() if name in training.values}
    rest = {**values, **{name: drawn.tolist() for name, drawn in training.seeded.items()}}
    given.update((v.name, rest[v.name]) for v in training.program.inputs if v.name in rest and v.name not in given)
    return given
