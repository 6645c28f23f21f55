"""``autodiff_cli.fit``: training from Python, shown in a notebook as ``fit --report``'s page.

::

    from autodiff_cli import fit
    run = fit("samples/line.ad", {"x": xs, "y": ys}, lr=0.1, steps=200, validation={"x": vx, "y": vy},
              metrics=["mae:prediction:y"])
    run            # in Jupyter: the training report (curves, the fitted curve, parameters, diagnoses)
    run.values     # the learned parameters, by name
    run.result     # the FitResult: history, measurements, why training stopped

It runs the training ``autodiff fit`` runs (``execute.training``: the parameters, the objective,
the optimiser's loop and the measurements), with the report's recorder, on columns already in
memory; it reads and writes no file.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Training", "fit"]


@dataclass
class Training:
    """A finished training run: its ``FitResult``, the learned ``values`` (parameters by name,
    tensors as nested lists, with the fixed inputs drawn from the seed: what ``fit -o`` writes)
    and its recording, which a notebook shows as the training report."""

    result: Any
    values: dict[str, Any]
    recording: Any

    @property
    def diagnoses(self) -> list[str]:
        return list(self.recording.diagnoses)

    def report(self) -> Any:
        """The training report (``render.training_report.Report``): ``.html()`` gives the page."""
        from .render.backends import RenderError
        from .render.training_report import Report, row_graph_svg

        try:
            svg = row_graph_svg(self.recording)
        except RenderError:
            svg = None
        return Report(self.recording, svg)

    def _repr_html_(self) -> str:
        return self.report()._repr_html_()  # type: ignore[no-any-return]


def fit(program: str, data: Mapping[str, Any], *, validation: Mapping[str, Any] | None = None,
        values: Mapping[str, Any] | None = None, params: Sequence[str] | None = None, output: str | None = None,
        optimizer: str = "sgd", lr: float = 0.01, steps: int = 1000, batch_size: int | None = None, seed: int = 0,
        init: str | None = None, metrics: Sequence[str] = (), report_every: int | None = None,
        dtype: str | None = None) -> Training:
    """Train ``program`` (its text, or the path of a ``.ad`` file) on the columns of ``data`` (a
    name -> sequence of numbers mapping, named as a rows file's columns are: ``x``, or ``x[0]``
    for an entry of a tensor input), as ``autodiff fit`` does with the same options; ``validation``
    holds held-out columns, ``metrics`` are ``--metric`` texts (``accuracy:score:y``).  ``dtype``
    ``"float32"`` trains in single precision (the parameters, the data and every step); the
    default is float64."""
    import numpy as np

    from .execute.columns import plan_columns
    from .execute.fit import FitSettings
    from .execute.metrics import check_metrics, parse_metric
    from .execute.training import DataSet, learned_values, plan_training, run_training
    from .files.training_outputs import recorder_for
    from .language import parse

    text, name = _program_text(program)
    parsed = parse(text, name)
    given = {name: _given_value(name, value) for name, value in (values or {}).items()}

    def data_set(columns: Mapping[str, Any], data_name: str) -> DataSet:
        arrays = {column: np.asarray(cells, dtype=float) for column, cells in columns.items()}
        return DataSet(data_name, arrays, None, "row", plan_columns(parsed, list(arrays), given, data_name=data_name))

    rows = data_set(data, "the data")
    held_out = None if validation is None else data_set(validation, "the validation data")
    chosen = check_metrics(parsed, [parse_metric(text) for text in metrics])
    training = plan_training(parsed, rows, given, validation=held_out,
                             params=list(params) if params else None, init=init or "normal", seed=seed,
                             output=output, metrics=chosen, dtype=dtype)
    settings = FitSettings(optimizer=optimizer, lr=lr, steps=steps, batch_size=batch_size, seed=seed,
                           watch_validation=held_out is not None)
    recorder = recorder_for(training, settings, report_every, f"autodiff_cli.fit({name!r}, ...)", {})
    result = run_training(training, settings, recorder=recorder)
    recorder.finish(result)
    learned = {} if result.params is None else learned_values(training, result.params)
    return Training(result, learned, recorder.recording())


def _program_text(program: str) -> tuple[str, str]:
    """A program given as text, or as the path of a file holding it."""
    if "\n" not in program and program.endswith(".ad") and os.path.exists(program):
        with open(program, encoding="utf-8") as file:
            return file.read(), program
    return program, "<program>"


def _given_value(name: str, value: Any) -> Any:
    """A value given for an input, as ``--values`` reads one: a number, or a tensor from nested
    lists or an array (``Training.values`` of an earlier run gives them so); anything else is an
    ``InputError`` naming the input."""
    import numpy as np

    from .errors import InputError
    from .language.program import ArrayLiteral, TensorConstant

    if isinstance(value, TensorConstant):
        return value
    if isinstance(value, list):  # nested lists, as a values file holds them (ragged rows said as it says them)
        try:
            return ArrayLiteral.from_nested(value)
        except ValueError as error:
            raise InputError(f"values[{name!r}] is not a tensor: {error}") from None
    if not isinstance(value, (str, bytes, bool)):
        try:
            array = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            array = None
        if array is not None and array.ndim == 0 and np.isfinite(array):
            return float(array)
        if array is not None and array.ndim:
            try:
                return ArrayLiteral.from_nested(array.tolist())
            except ValueError as error:
                raise InputError(f"values[{name!r}] is not a tensor: {error}") from None
    raise InputError(f"values[{name!r}] is {value!r}, not a number or a tensor",
                     hint="give a number, nested lists of numbers or a NumPy array (as Training.values holds them)")
