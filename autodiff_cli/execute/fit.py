"""Training: move a program's parameters downhill on the mean of its output over data rows.

``train`` is the loop behind ``autodiff fit``: at each step it asks an ``Objective`` for the
mean loss and its gradient at the current parameters (over all rows, or a shuffled
mini-batch), records them, and applies an optimizer's update rule from ``engine.optim``
(the same rule objects ``autodiff_cli.optim`` applies to Values) to the array of every
parameter.  It stops when the steps run out, when the loss stops improving (``tol``: for
``PATIENCE`` steps in a row, or epochs with mini-batches), when the caller asks it to
(Ctrl-C), or when the loss, its gradient or the parameters stop being finite; the
``FitResult`` says which, and holds the parameters to keep: the last ones, the best ones
seen when interrupted or on a plateau, the last ones with a finite loss after a divergence.

A ``Monitor`` adds what is measured besides the training loss (``execute.metrics.Measurer``:
the loss of held-out rows, metrics): at step 1, then as ``metrics.measure_interval`` says
(every ``measure_every`` steps, else at most eight times a run in whole epochs, or once an
epoch when measurements decide what training does), and at the parameters kept; the steps its
``also_at`` asks for (a recording's) are observed without a measurement.  The validation loss can then be what ``tol``
watches (``watch_validation``), and the parameters with the lowest validation loss the ones
kept (``keep_best_validation``).

Nothing here prints or knows about files: progress goes to a callback.  NumPy is
imported by the caller's objective; this module needs it only for its arrays.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from ..engine.optim import AdamRule, SGDRule, scheduled_lr
from ..errors import AutodiffError, InputError, Source, listed, variables_hint
from ..language.program import Initializer, Program, check_inputs, missing_inputs_error, output_name
from .columns import ColumnPlan, plan_columns

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "INITS",
    "OPTIMIZERS",
    "FitPlan",
    "FitResult",
    "FitSettings",
    "Measurement",
    "Monitor",
    "Objective",
    "Step",
    "StopReason",
    "initial_values",
    "plan_fit",
    "train",
    "values_to_write",
]

OPTIMIZERS = ("sgd", "momentum", "adam")
INITS = ("normal", "uniform")


class Objective(Protocol):
    """The mean loss over rows of data and its gradient with respect to the parameters."""

    rows: int

    def loss_and_grad(self, params: np.ndarray, rows: np.ndarray | None) -> tuple[float, np.ndarray]:
        """Mean loss and mean gradient over ``rows`` (indices; None for every row)."""

    def loss(self, params: np.ndarray) -> float:
        """Mean loss over every row (no gradient)."""


@dataclass(frozen=True)
class FitSettings:
    """How to train; the defaults are ``autodiff fit``'s."""

    optimizer: str = "sgd"
    lr: float = 0.01
    lr_schedule: str = "constant"
    final_lr: float | None = None  # where linear/cosine schedules end; None: lr / 10
    momentum: float = 0.9  # of the "momentum" optimizer
    weight_decay: float = 0.0
    steps: int = 1000
    batch_size: int | None = None  # None: every row at every step
    tol: float = 0.0  # 0: never stop early
    seed: int = 0
    measure_every: int | None = None  # a Monitor's measurements: None, metrics.measure_interval's default
    watch_validation: bool = False  # tol watches the validation loss instead of the training loss
    keep_best_validation: bool = False  # keep the parameters with the lowest validation loss measured

    def rule(self) -> SGDRule | AdamRule:
        """The update rule of ``optimizer``: PyTorch's SGD, SGD with momentum, or Adam."""
        if self.optimizer == "sgd":
            return SGDRule(weight_decay=self.weight_decay)
        if self.optimizer == "momentum":
            return SGDRule(momentum=self.momentum, weight_decay=self.weight_decay)
        if self.optimizer == "adam":
            return AdamRule(weight_decay=self.weight_decay)
        raise ValueError(f"unknown optimizer {self.optimizer!r}: choose one of {', '.join(OPTIMIZERS)}")

    def lr_at(self, step: int) -> float:
        """The learning rate of step ``step`` (counted from 1)."""
        final = self.lr / 10 if self.final_lr is None else self.final_lr
        return scheduled_lr(self.lr_schedule, self.lr, final, step - 1, self.steps)


class Step(NamedTuple):
    """One step as the history records it: the loss and gradient norm at the parameters the
    step started from, and the learning rate of its update."""

    step: int
    loss: float
    grad_norm: float
    lr: float


class Measurement(NamedTuple):
    """What a ``Monitor`` measured at the parameters where step ``step`` started: the mean loss
    over the validation rows (None without them) and each metric over the training rows and
    over the validation rows, by name."""

    step: int
    validation_loss: float | None
    training: Mapping[str, float]
    validation: Mapping[str, float]

    def metrics(self) -> dict[str, float]:
        """The metrics by one name each: the training rows' as named, the validation rows'
        prefixed with ``validation_``."""
        values = dict(self.training)
        values.update((f"validation_{name}", value) for name, value in self.validation.items())
        return values


@dataclass
class Monitor:
    """What ``train`` measures and shows besides the training loss.

    ``measure(params, step)`` gives the ``Measurement`` at ``params`` (None: measure nothing);
    ``also_at(step)`` asks ``observe`` to be called at more steps than the schedule's (without a
    measurement there: measuring costs several steps, and the schedule's are what decide);
    ``observe(record, measurement, params, grad)`` is called at each measured step, before its
    update, with the parameters the step started from and their gradient (not to be changed; no
    later update writes into an array given here, so ``observe`` may keep it).
    """

    measure: Callable[[np.ndarray, int], Measurement] | None = None
    also_at: Callable[[int], bool] | None = None
    observe: Callable[[Step, Measurement | None, np.ndarray, np.ndarray], None] | None = None
    # Told the kept parameters, as a step, when training ends before its last step (early stop,
    # Ctrl-C, divergence): a recording then ends where training did.
    observe_last: Callable[[Step, Measurement | None, np.ndarray, np.ndarray], None] | None = None

    def scheduled(self, step: int, epoch_ends: bool, every: int | None) -> bool:
        """A measurement of the schedule (step 1, then once an epoch or every ``every`` steps):
        these, and only these, are measured, so that a recording (``also_at``) changes neither
        what training costs nor what --tol and --keep best-validation decide."""
        return step == 1 or (epoch_ends if every is None else step % every == 0)

    def due(self, step: int, epoch_ends: bool, every: int | None) -> bool:
        return self.scheduled(step, epoch_ends, every) or (self.also_at is not None and self.also_at(step))


class StopReason:
    STEPS = "steps"  # every step was taken
    TOL = "tol"  # the loss stopped improving by more than tol (for PATIENCE checks)
    INTERRUPTED = "interrupted"  # the caller asked to stop (Ctrl-C)
    DIVERGED = "diverged"  # the loss or its gradient became NaN or infinite


@dataclass
class FitResult:
    params: np.ndarray | None  # the parameters to keep (see the module docstring); None: nothing to keep
    loss: float  # their mean loss over every row (NaN when unknown)
    reason: str  # a StopReason
    steps_done: int
    history: list[Step] = field(default_factory=list)
    params_step: int = 0  # params are where step params_step started: after params_step - 1 updates
    bad_step: int | None = None  # DIVERGED: the step whose loss or gradient was not finite
    bad_value: str = ""  # DIVERGED: what was not finite, e.g. "the loss is nan"
    error: AutodiffError | None = None  # DIVERGED: the error the objective raised, if it raised one
    mid_step: bool = False  # INTERRUPTED: during a step rather than after one
    in_measurement: bool = False  # DIVERGED: in a Monitor's measurement (validation rows, metrics), not training's
    measurements: list[Measurement] = field(default_factory=list)  # a Monitor's, by step
    measurement: Measurement | None = None  # a Monitor's of the parameters kept (None: not measured)
    measure_error: AutodiffError | None = None  # why the parameters kept could not be measured
    # The mean loss over every training row at the starting parameters (NaN: unknown): step 1's
    # loss without mini-batches; with them, measured over every row, as ``loss`` is.
    start_loss: float = math.nan


def initial_values(count: int, init: str, seed: int) -> np.ndarray:
    """``count`` starting values: standard normal, or uniform on [-1, 1] (micrograd's).

    Drawn with NumPy's legacy ``RandomState``, whose streams NumPy keeps unchanged across
    versions, so a seed gives the same numbers on every installation.
    """
    import numpy as np

    rng = np.random.RandomState(seed)
    if init == "normal":
        return rng.standard_normal(count)
    if init == "uniform":
        return rng.uniform(-1.0, 1.0, count)
    raise ValueError(f"unknown init {init!r}: choose one of {', '.join(INITS)}")


class _Batches:
    """Row indices for each step: every row, or mini-batches of a new shuffle each epoch.

    ``whole``: a program that takes exactly that many rows at once (``BatchObjective``) gets
    batches of that size only; an epoch leaves out the last rows of its shuffle, fewer than a
    batch (PyTorch's ``drop_last``), so every row is left out in some epochs and not others."""

    def __init__(self, rows: int, batch_size: int | None, seed: int, whole: int | None = None) -> None:
        import numpy as np

        self.rows = rows
        self.size = batch_size if batch_size is not None and batch_size < rows else None
        self.taken = rows  # the rows an epoch takes
        if whole is not None:
            self.size, self.taken = whole, rows - rows % whole
        self._rng = np.random.RandomState(seed)
        self._order: np.ndarray | None = None
        self._position = self.taken

    @property
    def full(self) -> bool:
        return self.size is None or (self.size == self.rows == self.taken)

    @property
    def per_epoch(self) -> int:
        return 1 if self.size is None else -(-self.taken // self.size)

    def next(self) -> tuple[np.ndarray | None, bool]:
        """The rows of the next step, and whether they end an epoch."""
        if self.size is None:
            return None, True
        if self._position >= self.taken:
            self._order = self._rng.permutation(self.rows)
            self._position = 0
        start = self._position
        self._position = min(start + self.size, self.taken)
        assert self._order is not None
        return self._order[start:self._position], self._position >= self.taken


# How many checks in a row (steps, or epochs with mini-batches) the loss may fail to improve
# before tol stops training: one would stop a noisy mini-batch run at its first unlucky epoch.
PATIENCE = 5


class _Plateau:
    """The tol test: the loss has not beaten its best by more than ``tol * max(|best|, 1)``
    (relative, absolute below 1) for ``PATIENCE`` checks in a row."""

    def __init__(self, tol: float) -> None:
        self.tol = tol
        self.best = math.inf
        self.stale = 0

    def reached(self, loss: float) -> bool:
        if self.tol <= 0:
            return False
        if loss < self.best - self.tol * max(abs(self.best), 1.0) or math.isinf(self.best):
            self.best, self.stale = min(loss, self.best), 0
            return False
        self.best = min(loss, self.best)
        self.stale += 1
        return self.stale >= PATIENCE


def train(
    objective: Objective,
    start: np.ndarray,
    settings: FitSettings,
    on_step: Callable[[Step], None] | None = None,
    stop_requested: Callable[[], bool] | None = None,
    monitor: Monitor | None = None,
) -> FitResult:
    """Minimise ``objective`` from ``start``; see the module docstring for when it stops and what it keeps.

    ``on_step`` is called after every step; ``stop_requested`` after every step too, and
    training ends there when it returns True.  A ``KeyboardInterrupt`` during a step ends
    training as well, keeping only what was complete before it.  ``monitor``: what else to
    measure, and when (see ``Monitor``); an error in a measurement at the start is raised, a
    later one stops training as a divergence does.
    """
    import numpy as np

    rule = settings.rule()
    rule.check()
    whole = getattr(objective, "batch_rows", None)  # a program of a whole batch takes that many rows a step
    if whole is not None and settings.batch_size not in (None, whole):
        raise InputError(f"--batch-size {settings.batch_size}: the program takes {whole} rows at once",
                         hint=f"leave --batch-size out (each step then takes {whole} rows), or change the "
                              "program's batch")
    batches = _Batches(objective.rows, settings.batch_size, settings.seed, whole)
    single = np.result_type(start) == np.float32  # a float32 objective's start (``dtype=``) stays float32
    run = _Run(np.array(start, dtype=np.float32 if single else np.float64), objective, batches.full, settings, monitor)
    state = None
    plateau = _Plateau(settings.tol)
    watching_validation = False  # tol watches the validation loss: once one is measured (at step 1)
    from .metrics import measure_interval

    every = measure_interval(settings, batches.per_epoch)
    epoch_losses: list[float] = []
    spare = None  # the parameters of the step before, unless lent to the monitor: the next update's output
    try:
        for step in range(1, settings.steps + 1):
            rows, epoch_ends = batches.next()
            params = run.params
            try:
                loss, grad = objective.loss_and_grad(params, rows)
            except AutodiffError as error:
                if not run.history:  # the starting point itself is wrong: an ordinary error
                    error.notes.append("at the starting values of the parameters, before any step")
                    raise
                return run.diverged(step, error.message, error)
            grad_norm = _norm(grad)
            if not math.isfinite(loss):
                return run.diverged(step, f"the loss is {loss}")
            if step == 1:
                run.start_loss = loss if batches.full else _start_loss(objective, params)
            if not math.isfinite(grad_norm):
                return run.diverged(step, f"the gradient's norm is {grad_norm}")
            record = Step(step, loss, grad_norm, settings.lr_at(step))
            converged = False
            lent = False  # whether the monitor was given params (it may keep them)
            if monitor is not None and monitor.due(step, epoch_ends, every):
                lent = True
                scheduled = monitor.scheduled(step, epoch_ends, every)
                try:
                    measurement = run.monitored(record, params, grad, scheduled)
                except AutodiffError as error:
                    if step == 1:
                        error.notes.append("at the starting values of the parameters, before any step")
                        raise
                    result = run.diverged(step, error.message, error)
                    result.in_measurement = True
                    return result
                if (scheduled and settings.watch_validation and measurement is not None
                        and measurement.validation_loss is not None):
                    watching_validation = True
                    converged = plateau.reached(measurement.validation_loss)
            run.measured(record, params, full_batch=batches.full)
            epoch_losses.append(loss)
            if epoch_ends and not watching_validation:
                converged = plateau.reached(math.fsum(epoch_losses) / len(epoch_losses))
            if epoch_ends:
                epoch_losses = []
            if converged:
                if on_step is not None:
                    on_step(record)
                return run.plateaued()
            # (into an old array only when it, the parameters and the gradient are of one precision:
            # the rule's result is then of it too, as a fresh array's would be)
            same = spare is not None and spare.dtype == params.dtype == np.result_type(grad)
            out = run.unkept(spare) if same else None
            with np.errstate(all="ignore"):  # an overflow is looked for below, not warned about
                new_params, state = rule.update(params, grad, state, step, record.lr, out=out)
                total = np.add.reduce(new_params, axis=None)  # a finite sum has finite terms: one pass
            if not math.isfinite(total) and not np.isfinite(new_params).all():
                return run.diverged(step, "the update made a parameter infinite or NaN")
            run.params, run.updated = new_params, True
            spare = None if lent else params
            if on_step is not None:
                on_step(record)
            if stop_requested is not None and stop_requested():
                return run.finish(StopReason.INTERRUPTED)
    except KeyboardInterrupt:
        return run.interrupted_mid_step()
    return run.finish(StopReason.STEPS)


def _start_loss(objective: Objective, params: np.ndarray) -> float:
    """The mean loss over every row at the start, comparable with the loss of the parameters
    kept (a mini-batch's is of its rows only); an error here is the starting point's."""
    try:
        return objective.loss(params)
    except AutodiffError as error:
        error.notes.append("at the starting values of the parameters, before any step")
        raise


def _norm(vector: np.ndarray) -> float:
    """The Euclidean norm, without overflow before the result does: ``math.hypot`` (correctly
    rounded) up to ``HYPOT_ENTRIES`` entries; beyond, a tensor program's thousands, the sum of
    squares scaled by the largest entry in NumPy (hypot over a list cost a third of a millisecond)."""
    import numpy as np

    if vector.size <= HYPOT_ENTRIES:
        return math.hypot(*vector.tolist())
    largest = float(np.max(np.abs(vector))) if vector.size else 0.0
    if largest == 0.0 or not math.isfinite(largest):
        return largest  # 0, inf, or NaN where an entry is NaN
    scaled = vector / largest
    return largest * math.sqrt(float(np.dot(scaled, scaled)))


HYPOT_ENTRIES = 4096


class _Run:
    """What a training run has seen: the history, the current, last measured and best parameters.

    Update rules never change their argument: they write the new parameters into another
    array, an earlier step's that nothing here keeps (``unkept``), or a fresh one.  So keeping a
    reference to a parameter array keeps those values, and a step allocates no new array.
    """

    def __init__(self, start: np.ndarray, objective: Objective, full_batch: bool, settings: FitSettings,
                 monitor: Monitor | None) -> None:
        self.objective, self.full_batch = objective, full_batch
        self.params = start  # the current parameters
        self.updated = False  # whether params moved since the last measurement
        self.history: list[Step] = []
        self.start_loss = math.nan  # over every row, at the start
        self.last_params = start  # where the last finite loss was measured
        self.best: tuple[float, np.ndarray, int] = (math.inf, start, 0)  # loss, params, step
        self.settings = settings
        self.monitor = monitor
        self.measurements: list[Measurement] = []
        self.last_measured: tuple[np.ndarray, Measurement] | None = None  # the latest parameters measured
        # the lowest validation loss measured: loss, params, step, and the measurement
        self.best_validation: tuple[float, np.ndarray, int, Measurement] | None = None

    def unkept(self, array: np.ndarray | None) -> np.ndarray | None:
        """``array`` (an earlier step's parameters) when the run keeps no reference to it (as the
        best, last or last measured parameters), so that an update may write into it; else None."""
        if array is None or array is self.params or array is self.last_params or array is self.best[1]:
            return None
        if self.last_measured is not None and array is self.last_measured[0]:
            return None
        if self.best_validation is not None and array is self.best_validation[1]:
            return None
        return array

    def measured(self, record: Step, params: np.ndarray, full_batch: bool) -> None:
        self.history.append(record)
        self.last_params = params
        self.updated = False
        if full_batch and record.loss < self.best[0]:
            self.best = (record.loss, params, record.step)

    def monitored(self, record: Step, params: np.ndarray, grad: np.ndarray, scheduled: bool = True
                  ) -> Measurement | None:
        """The monitor's measurement at the step's parameters, and its observer told; one not
        ``scheduled`` (made for the observer alone) is neither in the history nor a candidate
        for the best validation loss."""
        assert self.monitor is not None
        measurement = None
        if self.monitor.measure is not None and scheduled:  # also_at's steps are observed, not measured
            measurement = self._measure(params, record.step, scheduled)
        if self.monitor.observe is not None:
            self.monitor.observe(record, measurement, params, grad)
        return measurement

    def _measure(self, params: np.ndarray, step: int, scheduled: bool = True) -> Measurement:
        assert self.monitor is not None and self.monitor.measure is not None
        measurement = self.monitor.measure(params, step)
        self.last_measured = (params, measurement)
        if not scheduled:
            return measurement
        self.measurements.append(measurement)
        loss = measurement.validation_loss
        if loss is not None and math.isfinite(loss) and (self.best_validation is None
                                                         or loss < self.best_validation[0]):
            self.best_validation = (loss, params, step, measurement)
        return measurement

    @property
    def steps_done(self) -> int:
        return len(self.history)

    def result(self, params: np.ndarray | None, loss: float, reason: str, params_step: int,
               computing: bool = True, **details: Any) -> FitResult:
        """The result keeping ``params``: those of the lowest validation loss instead with
        ``keep_best_validation`` (not after a divergence), measured by the monitor (unless not
        ``computing``: a second Ctrl-C asks for nothing more to be computed)."""
        if (self.settings.keep_best_validation and self.best_validation is not None and params is not None
                and reason != StopReason.DIVERGED and self.best_validation[1] is not params):
            _, params, params_step, _ = self.best_validation
            loss = self._loss_of(params, params_step, computing)
        result = FitResult(params, loss, reason, self.steps_done, self.history, params_step=params_step,
                           measurements=self.measurements, start_loss=self.start_loss, **details)
        if params is None or self.monitor is None or self.monitor.measure is None:
            self._observe_last(result, computing or reason == StopReason.DIVERGED)
            return result
        result.measurement = self._measurement_of(params)
        if result.measurement is None and computing:
            try:
                result.measurement = self.monitor.measure(params, params_step)
            except AutodiffError as error:
                result.measure_error = error
        self._observe_last(result, computing or reason == StopReason.DIVERGED)
        return result

    def _observe_last(self, result: FitResult, may_compute: bool) -> None:
        """Tell ``Monitor.observe_last`` the parameters kept when training ended early (their loss
        and gradient computed once more, over every row); it ignores a step it has recorded."""
        monitor, params, step = self.monitor, result.params, result.params_step
        if (monitor is None or monitor.observe_last is None or params is None or not may_compute
                or result.reason == StopReason.STEPS):
            return
        try:
            loss, grad = self.objective.loss_and_grad(params, None)
        except AutodiffError:
            return
        monitor.observe_last(Step(step, loss, _norm(grad), self.settings.lr_at(step)), result.measurement, params, grad)

    def _measurement_of(self, params: np.ndarray) -> Measurement | None:
        """The measurement already made of ``params`` (the very array), if one was kept."""
        kept = [] if self.last_measured is None else [self.last_measured]
        if self.best_validation is not None:
            kept.append((self.best_validation[1], self.best_validation[3]))
        return next((measurement for measured, measurement in kept if measured is params), None)

    def _loss_of(self, params: np.ndarray, step: int, computing: bool) -> float:
        """The mean training loss over every row of ``params``, where step ``step`` started:
        the history's without mini-batches, else computed (NaN when it may not be)."""
        if self.full_batch and 1 <= step <= len(self.history):
            return self.history[step - 1].loss
        if not computing:
            return math.nan
        try:
            return self.objective.loss(params)
        except AutodiffError:
            return math.nan

    def plateaued(self) -> FitResult:
        """The loss stopped improving: keep the best parameters seen (full batch; by the validation
        loss when that is what stopped), or the current ones, measured over every row (mini-batches,
        whose step losses are of different rows)."""
        if self.settings.watch_validation and self.best_validation is not None:
            _, params, step, _ = self.best_validation
            return self.result(params, self._loss_of(params, step, True), StopReason.TOL, step)
        if self.full_batch:
            loss, params, step = self.best
            return self.result(params, loss, StopReason.TOL, step)
        try:
            loss = self.objective.loss(self.params)
        except AutodiffError as error:
            return self.diverged(self.steps_done, error.message, error)
        step = self.steps_done + (1 if self.updated else 0)
        return self.result(self.params, loss, StopReason.TOL, step)

    def finish(self, reason: str) -> FitResult:
        """After the last update: measure it; when interrupted, keep the best parameters seen."""
        try:
            loss = self.objective.loss(self.params)
        except AutodiffError as error:
            return self.diverged(self.steps_done, f"after its update, {error.message}", error)
        if not math.isfinite(loss):
            return self.diverged(self.steps_done, f"the loss after its update is {loss}")
        params, params_step = self.params, self.steps_done + 1
        if self.settings.keep_best_validation and self.monitor is not None and self.monitor.measure is not None:
            try:  # the last parameters may be the best: measured before choosing
                self._measure(params, params_step)
            except AutodiffError as error:
                return self.diverged(self.steps_done, f"after its update, {error.message}", error)
        best_loss, best_params, best_step = self.best
        if reason == StopReason.INTERRUPTED and self.full_batch and best_loss < loss:
            params, loss, params_step = best_params, best_loss, best_step
        return self.result(params, loss, reason, params_step)

    def interrupted_mid_step(self) -> FitResult:
        """A second Ctrl-C during a step: nothing more is computed (and nothing kept before a first step)."""
        if not self.history:
            return self.result(None, math.nan, StopReason.INTERRUPTED, 0, mid_step=True)
        if self.full_batch:
            loss, params, step = self.best
            return self.result(params, loss, StopReason.INTERRUPTED, step, computing=False, mid_step=True)
        step = self.steps_done + (1 if self.updated else 0)
        return self.result(self.params, math.nan, StopReason.INTERRUPTED, step, computing=False, mid_step=True)

    def diverged(self, step: int, bad: str, error: AutodiffError | None = None) -> FitResult:
        """Stop: keep the parameters where the loss was last finite (None if it never was)."""
        if not self.history:
            return self.result(None, math.nan, StopReason.DIVERGED, 0, bad_step=step, bad_value=bad, error=error)
        last = self.history[-1]
        return self.result(self.last_params, last.loss, StopReason.DIVERGED, last.step, computing=False,
                           bad_step=step, bad_value=bad, error=error)


# --- a program and its data as an objective ---------------------------------------------------


@dataclass
class FitPlan:
    """Which inputs are learned, which come from the data, and which stay fixed."""

    output: str
    parameters: list[str]  # learned, in program order
    data_inputs: list[str]  # supplied by a data column
    fixed: dict[str, float]  # every other input, with its value
    start: dict[str, float]  # starting values of the parameters that have one
    warnings: list[str] = field(default_factory=list)

    @property
    def without_start(self) -> list[str]:
        return [name for name in self.parameters if name not in self.start]


def plan_fit(program: Program, columns: list[str] | ColumnPlan, values: Mapping[str, float],
             output: str | None = None, parameters: list[str] | None = None, data_name: str = "the data",
             compared: Sequence[str] = ()) -> FitPlan:
    """Sort the program's inputs into parameters (every input no column supplies, or ``parameters``),
    data and fixed inputs, with the starting values ``values`` and the defaults give.

    ``columns`` are the data's column names, or their ``ColumnPlan`` when the caller has made it
    (``plan_columns``, whose checks this runs otherwise).  ``compared``: the inputs a metric
    compares its prediction with (``accuracy:z:y``'s ``y``), which are data.

    Raises ``InputError`` for a column that is not an input or is also given a value, a
    parameter that is not an input or is a column, nothing to learn, an input that is
    neither learned nor given a value, and, unless ``parameters`` names them, an input no
    column gives that looks like data (``data_like_inputs``): learning a missing label would
    drive the loss to nothing and say nothing.  A value for a name the program does not use is
    warned about (``check_inputs``, as every command does), not an error.
    """
    warnings = check_inputs(program, values)
    output = output_name(program, output)
    inputs = {v.name: v for v in program.inputs}
    if not isinstance(columns, ColumnPlan):
        columns = plan_columns(program, columns, values, data_name=data_name)
    column_set = set(columns.inputs_given)
    if parameters is None:
        learned = [name for name in inputs if name not in column_set]
        _refuse_learning_data(program, learned, columns, data_name, compared, values)
    else:
        learned = _checked_parameters(program, parameters, column_set, data_name)
    if not learned:
        raise InputError(f"nothing to fit: every input of the program is a column of {data_name}",
                         source=Source(program.source.name, ""),
                         hint="parameters are the inputs that no data column supplies; drop a column, "
                              "or name them with --params")
    learned_set = set(learned)
    needed = program.dependencies(output)
    warnings += [f"'{name}' does not affect '{output}', so fitting leaves it where it starts"
                 for name in learned if not needed[inputs[name].register]]
    fixed: dict[str, float] = {}
    missing = []
    for name, variable in inputs.items():
        if name in learned_set or name in column_set:
            continue
        if name in values:
            fixed[name] = _number_or_tensor(values[name])
        elif variable.default is not None:
            fixed[name] = _number_or_tensor(variable.default)
        else:
            missing.append(variable)
    if missing:
        raise missing_inputs_error(program, missing)
    start = {}
    for name in learned:
        if name in values:
            start[name] = _number_or_tensor(values[name])
        elif inputs[name].default is not None:
            start[name] = _number_or_tensor(inputs[name].default)
    data_inputs = [name for name in inputs if name in column_set]
    return FitPlan(output, learned, data_inputs, fixed, start, warnings)


# Names people give the value a loss compares its prediction with: an input so named that no
# column gives is a label the data lacks far more often than a parameter.
LABEL_NAMES = frozenset({"y", "ys", "yb", "label", "labels", "target", "targets"})
WHOLE_NUMBERS = "the program reads it as a class label or an index, a whole number no gradient moves"


def data_like_inputs(program: Program, names: Sequence[str], compared: Sequence[str] = ()) -> dict[str, str]:
    """Those of ``names`` (inputs) that look like data rather than parameters, each with why:
    a metric compares with it, the program reads it as a class label or an index (whole numbers,
    which gradient descent cannot move), its name is a label's, or the program starts its
    parameters from initializers (``normal([16, 2])``) and writes this one's values out, not all
    0, as a sample row's are."""
    from ..engine.registry import ENTRIES

    variables = program.variables
    by_register = {variables[name].register: name for name in names}
    read_whole = {by_register[second] for op, _, second, _, _ in program.rows()
                  if second in by_register and 1 in getattr(ENTRIES.get(op), "indices", ())}
    initialized = any(isinstance(v.default, Initializer) for v in program.inputs)
    reasons = {}
    for name in names:
        default = variables[name].default
        if name in compared:
            reasons[name] = "a --metric compares the prediction with it"
        elif name in read_whole:
            reasons[name] = WHOLE_NUMBERS
        elif name.lower() in LABEL_NAMES:
            reasons[name] = "its name is a label's"
        elif initialized and _written_sample(default):
            reasons[name] = "its value is written out, where the parameters start from initializers (normal, ...)"
    return reasons


def _written_sample(default: Any) -> bool:
    """Whether a written-out default reads as a sample row's values: some entry is not 0. A bias
    written as ``b = 0`` or ``b = [0, 0]`` beside initialized weights is a parameter's usual start."""
    from ..language.program import ArrayLiteral

    if isinstance(default, ArrayLiteral):
        return any(value != 0 for value in default.values)
    return isinstance(default, (int, float)) and default != 0


def _refuse_learning_data(program: Program, learned: list[str], columns: ColumnPlan, data_name: str,
                          compared: Sequence[str], values: Mapping[str, Any]) -> None:
    """An ``InputError`` for the first input of ``learned`` that looks like data, at its first use
    in the program, naming the columns the data has: most likely the data lacks its column."""
    data_like = data_like_inputs(program, learned, compared)
    if not data_like:
        return
    name, why = next(iter(data_like.items()))
    others = [other for other in learned if other not in data_like]
    value = "its value" if name in values or program.variables[name].default is not None else f"--set {name}=VALUE"
    keep = f"--params {','.join(others)} keeps it at {value}" if others else "--params names what to learn"
    where = (f"the columns of {data_name} are: " if columns.header_line is None else
             f"{data_name} line {columns.header_line}, its header, names the columns: ")
    shown = ", ".join(columns.columns[:20]) + (" ..." if len(columns.columns) > 20 else "")
    notes = [where + shown]
    if len(data_like) > 1:
        notes.append(f"{listed(list(data_like)[1:], 10)} look{'s' * (len(data_like) == 2)} like data too")
    variable = program.variables[name]
    learn = "" if why == WHOLE_NUMBERS else f"--params {','.join([*others, name])} learns it, "
    raise InputError(f"'{name}' looks like data ({why}), but {data_name} has no column {name}, so fit would "
                     "learn it as a parameter", variable.position, program.source,
                     f"add the column {name} to {data_name}; or name what to learn: {learn}{keep}", notes)


def _number_or_tensor(value: Any) -> Any:
    """A value given or declared for an input: a float, or a tensor as it was written (a list
    literal, an initializer) for ``objective`` to lay out."""
    from ..language.program import TensorConstant

    return value if isinstance(value, TensorConstant) else float(value)


def values_to_write(plan: FitPlan, params: np.ndarray, given: Mapping[str, Any],
                    kept: Mapping[str, Any] | None = None, learned: Mapping[str, Any] | None = None
                    ) -> dict[str, Any]:
    """The values ``fit`` writes, from which ``--values`` reproduces the trained model: those
    ``given`` (the values file's in its order, then ``--set``'s) for the program's inputs, and
    the values file's own (``kept``) for its names the program does not use, each parameter's
    replaced in its place by its learned value, and the parameters not given after them, in
    program order.  So writing over the values file that was read (a resume) loses nothing, and
    a ``--set`` for a name the program ignores is not written, nor written over the file's.
    ``learned``: the parameters' values when they are not one number each (tensors, as nested
    lists: ``objective.ParameterLayout.nested``); ``params`` is then not read.
    """
    kept = kept or {}
    inputs = set(plan.fixed).union(plan.parameters)
    values = {name: value if name in inputs else kept[name]
              for name, value in given.items() if name in inputs or name in kept}
    values.update(zip(plan.parameters, params.tolist()) if learned is None else learned)
    return values


def _checked_parameters(program: Program, names: list[str], columns: set[str], data_name: str) -> list[str]:
    inputs = [v.name for v in program.inputs]
    for name in names:
        if name in columns:
            raise InputError(f"--params names '{name}', which is a column of {data_name}",
                             source=Source(program.source.name, ""),
                             hint="a parameter is learned, a column is data: rename one of them")
        if name not in inputs:
            raise InputError(f"--params names '{name}', which is not an input of the program",
                             source=Source(program.source.name, ""), hint=variables_hint(inputs, [name]))
    wanted = set(names)
    return [name for name in inputs if name in wanted]
