"""What a training run writes and says, as text: the learned values (the ``--values`` format),
the history CSV, the measurements as the progress lines show them, the last line's summary and
the error of a run that diverged.  Pure functions of ``execute.fit``'s results: nothing here
prints or writes a file.
"""

from __future__ import annotations

import math
from typing import Any

from ..errors import EvaluationError
from .fit import PATIENCE, FitResult, FitSettings, Measurement, Step, StopReason

__all__ = ["conclusion", "divergence_error", "full_batch", "history_csv", "interrupted_line", "learned_text",
           "measured_text", "pace", "read_literal", "values_json"]


def measured_text(measurement: Measurement, separator: str = "  ") -> str:
    """'validation loss 0.31  accuracy 0.9  validation accuracy 0.85': a measurement as the
    progress line and the final line show it."""
    parts = [] if measurement.validation_loss is None else [f"validation loss {measurement.validation_loss:.6g}"]
    for name, value in measurement.training.items():
        parts.append(f"{name} {value:.6g}")
        if name in measurement.validation:
            parts.append(f"validation {name} {measurement.validation[name]:.6g}")
    return separator.join(parts)


def values_json(values: dict[str, float], literals: dict[str, str], dtype: str = "float64") -> str:
    """``values`` as ``--values`` reads them: a JSON object, every digit kept.  A value that
    equals its number in ``literals`` (the values file's, as written there) keeps that text, so
    writing over the values file changes only what training changed (``3`` stays ``3``, not ``3.0``).
    In float32 a number is written with float32's shortest digits (1.7286425, not
    1.728642463684082), as eval writes it: the digits float32 holds, read back to the same bits."""
    import json

    from ..language.program import ArrayLiteral

    number_dumps = json.dumps if dtype == "float64" else _float32_dumps
    lines = []
    for name, value in values.items():
        literal = literals.get(name)
        if isinstance(value, ArrayLiteral):
            value = value.nested()
        if isinstance(value, list):  # a tensor: nested arrays, written out in full
            text = number_dumps(value)
        else:
            same = isinstance(literal, str) and float(literal).hex() == value.hex()
            text = literal if same else number_dumps(value)  # type: ignore[assignment]
        lines.append(f"  {json.dumps(name)}: {text}")
    return "{\n" + ",\n".join(lines) + "\n}\n" if lines else "{}\n"


def _float32_dumps(value: Any) -> str:
    """JSON of a number or nested lists of them, each number as float32's shortest text."""
    import json

    import numpy as np

    def held(item: Any) -> Any:
        return [held(entry) for entry in item] if isinstance(item, list) else float(str(np.float32(item)))

    return json.dumps(held(value))


def read_literal(text: Any) -> Any:
    """A value of the values file as ``value_literals`` gives it (numbers as their text): a float,
    or nested lists of them for a tensor."""
    return [read_literal(item) for item in text] if isinstance(text, list) else float(text)


def history_csv(history: list[Step], measurements: list[Measurement] | None = None,
                held_out: bool = False, metrics: list[str] | None = None, dtype: str = "float64") -> str:
    """Every step's loss, gradient norm and learning rate; with ``held_out`` the validation
    loss, and each of ``metrics`` on the training then the validation rows, at the steps
    measured (empty cells at the others).  Every digit kept: float64's shortest text, or in a
    float32 run (``dtype``) float32's, as ``values_json`` writes its numbers."""
    number = repr if dtype == "float64" else _float32_text
    header = ["step", "loss", "grad_norm", "lr"]
    measured_columns = (["validation_loss"] if held_out else []) + list(metrics or [])
    measured_columns += [f"validation_{name}" for name in metrics or [] if held_out]
    by_step = {measurement.step: _measured_cells(measurement) for measurement in measurements or []}
    lines = [",".join(header + [_csv_field(name) for name in measured_columns])]
    for s in history:
        cells = [str(s.step), number(s.loss), number(s.grad_norm), number(s.lr)]
        if measured_columns:
            measured = by_step.get(s.step, {})
            cells += [number(measured[name]) if name in measured else "" for name in measured_columns]
        lines.append(",".join(cells))
    return "\n".join(lines) + "\n"


def _float32_text(value: float) -> str:
    """float32's shortest text of ``value`` ('0.9970973'), which reads back to the same float32; a
    number beyond float32's range (a gradient norm summed in float64) keeps float64's text."""
    import numpy as np

    with np.errstate(over="ignore"):
        single = np.float32(value)
    return str(single) if np.isfinite(single) or not math.isfinite(value) else repr(value)


def _measured_cells(measurement: Measurement) -> dict[str, float]:
    cells = measurement.metrics()
    if measurement.validation_loss is not None:
        cells["validation_loss"] = measurement.validation_loss
    return cells


def _csv_field(text: str) -> str:
    """A header cell, quoted if it needs to be (a metric named by its text holds colons only)."""
    return '"' + text.replace('"', '""') + '"' if any(c in text for c in ',"\n') else text


def learned_text(result: FitResult, rows: int | None = None) -> str:
    """'loss 0.09, validation loss 0.12, accuracy 0.97, validation accuracy 0.95': the
    parameters written, on the training rows and on the validation rows.  Given the number of
    training ``rows``, the loss is followed by where it started: 'loss 0.09 (8.8 before
    training; each the mean over the 40 training rows)'."""
    loss = f"loss {result.loss:.6g}" if math.isfinite(result.loss) else "loss not measured"
    if rows is not None and math.isfinite(result.start_loss):
        each = "each" if math.isfinite(result.loss) else "it"
        loss += (f" ({result.start_loss:.6g} before training; {each} the mean over the {rows:,} training "
                 f"row{'s' * (rows != 1)})")
    if result.measurement is None:
        return loss
    measured = measured_text(result.measurement, ", ")
    return f"{loss}, {measured}" if measured else loss


def pace(result: FitResult, elapsed: float | None) -> str:
    """'; 1.23 ms a step': the time of training (measurements included) over the steps taken."""
    if elapsed is None or not result.steps_done:
        return ""
    seconds = elapsed / result.steps_done
    text = f"{seconds:.3g} s" if seconds >= 1 else f"{seconds * 1000:.3g} ms"
    return f"; {text} a step"


def full_batch(settings: FitSettings, rows: int) -> bool:
    """Whether every step used every row (``execute.fit``'s batches are then the whole data)."""
    return settings.batch_size is None or settings.batch_size >= rows


def _divergence_hint(result: FitResult, settings: FitSettings) -> str:
    """The setting that most likely made the numbers overflow: the one that is out of range."""
    step = result.bad_step or 1
    lr = settings.lr_at(step)
    if settings.weight_decay > 0 and settings.weight_decay * lr >= 1:
        return (f"--weight-decay {settings.weight_decay:g} is too large for a learning rate of {lr:g}: each step "
                f"scales the parameters by 1 - lr * weight_decay = {1 - lr * settings.weight_decay:g}; keep "
                f"--weight-decay well below 1/lr, e.g. --weight-decay {0.01 / lr:g}")
    if lr > settings.lr:  # a schedule rising to --final-lr
        final = settings.final_lr if settings.final_lr is not None else settings.lr / 10
        return (f"the learning rate had risen to {lr:g} by step {step:,} on its way to --final-lr {final:g}, "
                f"which is probably too large: try --final-lr {settings.lr / 10:g} (at most --lr {settings.lr:g})")
    return f"the learning rate {settings.lr:g} is probably too large: try --lr {settings.lr / 10:g}"


def divergence_error(result: FitResult, settings: FitSettings, where: str) -> EvaluationError:
    """What went wrong at which step, what was kept, and the usual cure; at the program's
    position when the executor named one (a domain error)."""
    position = source = None
    notes: list[str] = []
    if result.error is not None:
        position, source, notes = result.error.position, result.error.source, list(result.error.notes)
    if result.params is None:
        return EvaluationError(
            f"{result.bad_value} at step {result.bad_step}, the starting point: nothing was written",
            position, source, "check the starting values and the data: the loss must be finite where training starts",
            notes)
    if result.in_measurement:  # the training rows were fine: a held-out row or a metric failed
        return EvaluationError(
            f"{result.bad_value} when measuring step {result.bad_step:,} (the validation loss or a metric), so "
            f"training stopped; wrote the parameters of step {result.params_step:,}, the last measured{where}",
            position, source, "the row named is one the model cannot be measured on at these parameters: check it, "
            "or leave it out of the validation data", notes)
    return EvaluationError(
        f"{result.bad_value} at step {result.bad_step:,}, so training stopped; wrote the parameters of step "
        f"{result.params_step:,}, the last with a finite loss ({result.loss:.6g}){where}",
        position, source, _divergence_hint(result, settings), notes)


def interrupted_line(result: FitResult, settings: FitSettings, where: str, rows: int, pace_text: str,
                     terminated: bool) -> str:
    """The last line of a run stopped by Ctrl-C or SIGTERM: when, and what was written."""
    learned = learned_text(result)
    when = (f"during step {result.steps_done + 1:,}" if result.mid_step else f"after step {result.steps_done:,}")
    if result.params is None:
        kept = "no step was complete, so nothing was written"
    else:
        # Mini-batch step losses are of different rows, so train keeps the latest parameters.
        which = "the best parameters so far" if full_batch(settings, rows) else "the latest parameters"
        if settings.keep_best_validation and result.measurements:
            which = "the parameters with the lowest validation loss so far"
        kept = (f"wrote {which} ({learned}, after {result.params_step - 1:,} "
                f"update{'s' if result.params_step != 2 else ''}){where}")
    stopped = "stopped by SIGTERM" if terminated else "interrupted"
    return f"{stopped} {when} of {settings.steps:,}: {kept}{pace_text}"


def conclusion(result: FitResult, settings: FitSettings, where: str, rows: int, pace_text: str) -> str:
    """The last line of a run that finished or stopped on a plateau (--tol): what was learned
    (the losses and metrics of the parameters written), why training stopped, and ``where``
    the parameters went."""
    learned = learned_text(result, rows)
    if result.reason == StopReason.TOL:
        if settings.watch_validation and result.measurements:
            return (f"stopped at step {result.steps_done:,} of {settings.steps:,}: the validation loss has not "
                    f"improved by more than --tol {settings.tol:g} of itself for {PATIENCE} measurements; kept "
                    f"the best, of step {result.params_step:,}: {learned}{where}{pace_text}")
        every_row = full_batch(settings, rows)
        checks = "steps" if every_row else "epochs"
        kept = f"kept the best, {learned}" if every_row else learned
        return (f"stopped at step {result.steps_done:,} of {settings.steps:,}: the loss has not improved by more "
                f"than --tol {settings.tol:g} of itself for {PATIENCE} {checks}; {kept}{where}{pace_text}")
    finished = f"finished {settings.steps:,} step{'s' * (settings.steps != 1)}"
    if settings.keep_best_validation and result.params_step != result.steps_done + 1:
        finished += f", kept step {result.params_step:,}'s parameters, the lowest validation loss"
    return f"{finished}: {learned}{where}{pace_text}"
