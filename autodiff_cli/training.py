"""``autodiff_cli.fit``: training from Python, shown in a notebook as ``fit --report``'s page.

::

    from autodiff_cli import fit
    run = fit("samples/line.ad", {"x": xs, "y": ys}, lr=0.1, steps=200, validation={"x": vx, "y": vy},
              metrics=["mae:prediction:y"])
    run            # in Jupyter: the training report (curves, the fitted curve, parameters, diagnoses)
    run.values     # the learned parameters, by name
    run.result     # the FitResult: history, measurements, why training stopped

It composes what ``autodiff fit`` composes (the column plan, the parameters, the objective, the
optimiser's loop, the measurements and the recorder) on columns already in memory; it reads
and writes no file.
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
    tensors as nested lists) and its recording, which a notebook shows as the training report."""

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
        init: str | None = None, metrics: Sequence[str] = (), report_every: int | None = None) -> Training:
    """Train ``program`` (its text, or the path of a ``.ad`` file) on the columns of ``data`` (a
    name -> sequence of numbers mapping, named as a rows file's columns are: ``x``, or ``x[0]``
    for an entry of a tensor input), as ``autodiff fit`` does with the same options; ``validation``
    holds held-out columns, ``metrics`` are ``--metric`` texts (``accuracy:score:y``)."""
    import numpy as np

    from .analysis.training_record import TrainingRecorder, default_every
    from .execute.columns import plan_columns
    from .execute.fit import FitSettings, Monitor, initial_values, plan_fit, train, values_to_write
    from .execute.metrics import Measurer, check_metrics, parse_metric
    from .execute.objective import objective_for
    from .language import parse

    text, name = _program_text(program)
    parsed = parse(text, name)
    given = dict(values or {})
    columns = {column: np.asarray(cells, dtype=float) for column, cells in data.items()}
    column_plan = plan_columns(parsed, list(columns), given, data_name="the data")
    plan = plan_fit(parsed, column_plan, given, output, list(params) if params else None, "the data")
    missing = plan.without_start
    drawn = iter(initial_values(len(missing), init or "normal", seed).tolist()) if missing else iter(())
    start = np.array([plan.start[p] if p in plan.start else next(drawn) for p in plan.parameters])
    objective = objective_for(parsed, plan, columns, column_plan, given, init, seed)
    if getattr(objective, "layout", None) is not None:
        start = objective.start
    held_out = None
    if validation is not None:
        held_out = {column: np.asarray(cells, dtype=float) for column, cells in validation.items()}
        validation_plan = plan_columns(parsed, list(held_out), given, data_name="the validation data")
        held_out_objective = objective_for(parsed, plan, held_out, validation_plan, given, init, seed)
    chosen = check_metrics(parsed, [parse_metric(text) for text in metrics])
    measurer = Measurer(parsed, chosen, objective, held_out_objective if held_out is not None else None) \
        if chosen or held_out is not None else None
    settings = FitSettings(optimizer=optimizer, lr=lr, steps=steps, batch_size=batch_size, seed=seed,
                           watch_validation=held_out is not None)
    meta = {"command": f"autodiff_cli.fit({name!r}, ...)", "seed": seed, "versions": {}, "steps": steps,
            "program": name, "data": "the data", "validation": None if held_out is None else "the validation data",
            "optimizer": optimizer, "lr": lr, "lr_schedule": settings.lr_schedule, "batch_size": batch_size}
    recorder = TrainingRecorder(parsed, plan, given, columns, held_out, every=report_every or default_every(steps),
                                meta=meta, seed=seed, steps=steps)

    def record(step: Any, measurement: Any, at: Any, grad: Any) -> None:
        validation_loss = None if measurement is None else measurement.validation_loss
        recorder.observe(step.step, at, grad, step.loss, validation_loss,
                         {} if measurement is None else measurement.metrics())

    def observe(step: Any, measurement: Any, at: Any, grad: Any) -> None:
        if recorder.wants(step.step) or measurement is not None:  # its own steps and every measured one
            record(step, measurement, at, grad)

    monitor = Monitor(measure=measurer, also_at=recorder.wants, observe=observe, observe_last=record)
    result = train(objective, start, settings, monitor=monitor)
    recorder.finish(result)
    learned: dict[str, Any] = {}
    if result.params is not None:
        layout = getattr(objective, "layout", None)
        learned = values_to_write(plan, result.params, given,
                                  learned=None if layout is None else layout.nested(result.params))
    return Training(result, learned, recorder.recording())


def _program_text(program: str) -> tuple[str, str]:
    """A program given as text, or as the path of a file holding it."""
    if "\n" not in program and program.endswith(".ad") and os.path.exists(program):
        with open(program, encoding="utf-8") as file:
            return file.read(), program
    return program, "<program>"
