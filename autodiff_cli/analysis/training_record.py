"""The training flight recorder: what ``fit --report`` shows, recorded while training runs.

``TrainingRecorder`` is told about every recorded step (``wants`` says which: the first, every
``every``-th, and the last) with the parameters the step started from, their gradient, the
training and validation loss there and the metrics.  ``observe`` only copies what it is given,
so recording costs training little; the work of the report is done in ``recording()``: the
model's prediction over a grid of its two inputs or along its one input (each recorded step's
once, however often the report is rewritten), histograms, and once training has ended the
activations of its relu, tanh and sigmoid layers over the training rows and one row's graph.

``Recording`` is plain data for ``render.training_report``: the loss, metric and gradient-norm
curves, per parameter group (a tensor, or the scalars sharing a name prefix: ``w1_3_2`` is in
``w1``) the histograms and heat maps of values and gradients, the data view (decision boundary,
fitted surface or fitted curve) at the recorded steps, the graph of one row, and ``diagnoses``:
sentences naming what went wrong (a learning rate too high, saturated or dead layers,
vanishing or exploding gradients), for the report and ``fit``'s final line.

The work is shared with three modules: ``training_model`` runs the program at recorded
parameters (and measures its activation layers), ``prediction_grid`` draws the model over its
inputs, ``training_diagnoses`` names what went wrong.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..language.program import Program
from .prediction_grid import DataView, ViewPlan
from .training_diagnoses import diagnose
from .training_model import LayerActivity, TrainingModel, evenly

if TYPE_CHECKING:
    from ..execute.fit import FitPlan, FitResult

__all__ = [
    "DataView",
    "LayerActivity",
    "ParameterGroup",
    "Recording",
    "TrainingRecorder",
    "default_every",
]

KEPT_BYTES = 64 * 2**20  # parameters and gradients kept, at most (every other one is let go beyond)
FRAME_BATCH = 8  # frames of a scalar program computed in one run of the executor
MAX_VIEW_FRAMES = 60  # recorded steps that get a boundary or curve (evenly chosen beyond)
MAX_HEAT_FRAMES = 20  # recorded steps that get heat maps of a matrix
MAX_HEAT_ENTRIES = 4096  # matrices larger than this get histograms only
BINS = 24


FRAMES = 30  # recorded steps at the default interval


def default_every(steps: int) -> int:
    """The default recording interval: about ``FRAMES`` recorded steps over a run of ``steps``."""
    return max(1, math.ceil(steps / FRAMES))


@dataclass
class ParameterGroup:
    """One parameter tensor, or the scalar parameters sharing a name prefix, over the recorded steps."""

    name: str
    shape: list[int]  # the tensor's shape; [count] for a group of scalars
    members: list[str]  # the parameters in the group
    value_range: list[float]  # [low, high] of every histogram of values, so that their moves show
    grad_range: list[list[float]]  # per kept step, [low, high] of its histogram of gradients (they shrink)
    value_hist: list[list[int]]  # per kept step (Recording.kept_steps), BINS counts
    grad_hist: list[list[int]]
    grad_norm: list[float]  # per kept step, the norm of the group's gradient
    value_rms: list[float]  # per kept step
    heat_steps: list[int] = field(default_factory=list)  # the steps of heat_values
    heat_values: list[np.ndarray] = field(default_factory=list)  # a matrix's entries, flat, row by row
    heat_grads: list[np.ndarray] = field(default_factory=list)
    image_side: int = 0  # >0: each row of the matrix is a side x side image (the first layer of digits)



@dataclass
class Recording:
    """Everything the training report shows, as plain data."""

    meta: dict[str, Any]  # command, seed, versions, program, data: shown as given
    rows: int = 0  # the training rows
    validation_rows: int = 0  # the validation rows (0: none)
    steps: list[int] = field(default_factory=list)  # the recorded steps: the losses, metrics and grad_norm's
    kept_steps: list[int] = field(default_factory=list)  # those whose parameters were kept: the groups', the view's
    train_loss: list[float] = field(default_factory=list)
    validation_loss: list[float | None] = field(default_factory=list)
    metrics: dict[str, list[float | None]] = field(default_factory=dict)
    grad_norm: list[float] = field(default_factory=list)
    history_steps: list[int] = field(default_factory=list)  # every step's loss, once training ends
    history_loss: list[float] = field(default_factory=list)
    groups: list[ParameterGroup] = field(default_factory=list)
    view: DataView | None = None
    view_note: str = ""  # why there is no view
    layers: list[list[str]] = field(default_factory=list)  # a tensor program's [name, op, shape] rows
    activity_step: int = 0
    activity: list[LayerActivity] = field(default_factory=list)
    graph: Any = None  # one row's graph: a GraphModel (scalar program), a graph_model.LayerGraph, or None
    graph_note: str = ""  # which row and step, or why there is no graph
    diagnoses: list[str] = field(default_factory=list)
    finished: bool = False
    reason: str = ""  # FitResult.reason once finished
    steps_done: int = 0
    final_loss: float | None = None  # the training loss of the parameters kept (fit writes them)
    # Those parameters: the step they started (steps_done + 1: after the last update), and their
    # measurement, the final line's: validation loss (None without one) and metrics by name.
    final_step: int = 0
    final_validation_loss: float | None = None
    final_metrics: dict[str, float] = field(default_factory=dict)
    bad_step: int | None = None  # a diverged run's step whose loss, gradient or update was not finite


class TrainingRecorder:
    """Records a training run for ``fit --report`` (see the module docstring)."""

    def __init__(self, program: Program, plan: FitPlan, given_values: Mapping[str, Any],
                 train_columns: Mapping[str, Any], validation_columns: Mapping[str, Any] | None, *,
                 every: int, meta: Mapping[str, Any], seed: int, steps: int | None = None) -> None:
        self.program = program
        self.plan = plan
        self.every = max(1, int(every))
        self.last_step = steps if steps is not None else meta.get("steps")
        self.meta = dict(meta)
        self.seed = seed
        self.model = TrainingModel(program, plan, given_values, train_columns, seed, validation_columns)
        self.rows = _count(train_columns)
        self.validation_rows = _count(validation_columns) if validation_columns else 0
        self.steps: list[int] = []
        self.train_loss: list[float] = []
        self.validation_loss: list[float | None] = []
        self.metrics: dict[str, list[float | None]] = {}
        self.grad_norm: list[float] = []
        self.kept: list[int] = []  # the recorded steps whose parameters and gradient are kept
        self.params: list[np.ndarray] = []
        self.grads: list[np.ndarray] = []
        self.result: FitResult | None = None
        self._frames: dict[int, np.ndarray] = {}  # the view's frame of each step, computed once
        self._view: Any = None  # ViewPlan once worked out
        self._activity: tuple[int, list[LayerActivity]] | None = None
        self._graph: tuple[int, Any, str] | None = None

    def wants(self, step: int) -> bool:
        """Whether step ``step`` (from 1) is recorded: the first, every ``every``-th, the last."""
        return step == 1 or step % self.every == 0 or (self.last_step is not None and step == self.last_step)

    def observe(self, step: int, params: np.ndarray, grad: np.ndarray, train_loss: float,
                validation_loss: float | None, metrics: Mapping[str, float]) -> None:
        """Record step ``step``: the parameters it started from, their gradient and loss, the
        validation loss there (None without validation data) and the metrics."""
        if self.steps and step <= self.steps[-1]:
            return  # told twice about a step (the last, say): the first word stands
        self.steps.append(int(step))
        self.train_loss.append(float(train_loss))
        self.validation_loss.append(None if validation_loss is None else float(validation_loss))
        for name in metrics:
            self.metrics.setdefault(name, [None] * (len(self.steps) - 1))
        for name, series in self.metrics.items():
            value = metrics.get(name)
            series.append(None if value is None else float(value))
        self.grad_norm.append(float(np.linalg.norm(grad)) if np.all(np.isfinite(grad)) else math.inf)
        self.kept.append(int(step))
        self.params.append(np.array(params, dtype=np.float64))
        self.grads.append(np.array(grad, dtype=np.float64))
        if len(self.kept) > _most_kept(np.size(params)):
            self._thin()

    def _thin(self) -> None:
        """Keep every other step's parameters and gradient (and the last's): memory stays bounded
        however many steps are recorded, and the kept ones stay spread over the whole run."""
        keep = sorted({*range(0, len(self.kept), 2), len(self.kept) - 1})
        self.kept = [self.kept[i] for i in keep]
        self.params = [self.params[i] for i in keep]
        self.grads = [self.grads[i] for i in keep]

    def finish(self, result: FitResult) -> None:
        """Training ended with ``result``: its full loss history and its reason join the recording."""
        self.result = result

    # --- the recording ------------------------------------------------------------------------

    def recording(self) -> Recording:
        """What has been recorded so far, with the views and analyses worked out.  Before
        ``finish`` the activation layers and the row's graph are left out: they need a run over
        every training row, which a page rewritten while training runs would pay again and again."""
        record = Recording(meta=dict(self.meta), steps=list(self.steps), kept_steps=list(self.kept),
                           train_loss=list(self.train_loss),
                           validation_loss=list(self.validation_loss),
                           metrics={name: list(values) for name, values in sorted(self.metrics.items())},
                           grad_norm=list(self.grad_norm), rows=self.rows, validation_rows=self.validation_rows)
        result = self.result
        if result is not None:
            record.finished = True
            record.reason = result.reason
            record.steps_done = result.steps_done
            record.bad_step = result.bad_step
            record.final_loss = float(result.loss) if math.isfinite(result.loss) else None
            record.final_step = result.params_step
            if result.measurement is not None:
                record.final_validation_loss = result.measurement.validation_loss
                record.final_metrics = dict(result.measurement.metrics())
            record.history_steps = [s.step for s in result.history]
            record.history_loss = [float(s.loss) for s in result.history]
        else:
            record.steps_done = self.steps[-1] if self.steps else 0
        record.groups = self._groups()
        record.layers = self.model.layers()
        if self.steps:
            record.view, record.view_note = self._data_view()
            if result is not None:  # once, at the end: a page rewritten while training runs goes without
                record.activity_step, record.activity = self._layer_activity()
                record.graph, record.graph_note = self._row_graph()
            else:
                record.graph_note = "drawn when training ends"
        else:
            record.view_note = "nothing recorded yet"
        record.diagnoses = diagnose(record)
        return record

    def _groups(self) -> list[ParameterGroup]:
        groups = []
        params = np.array(self.params) if self.params else np.zeros((0, 0))
        grads = np.array(self.grads) if self.grads else np.zeros((0, 0))
        for name, shape, members, where in self.model.groups():
            values = params[:, where]
            gradients = grads[:, where]
            value_range = _range(values)
            grad_range = [_range(row) for row in gradients]
            group = ParameterGroup(
                name=name, shape=list(shape), members=members, value_range=value_range, grad_range=grad_range,
                value_hist=_histograms(values, [value_range] * len(values)),
                grad_hist=_histograms(gradients, grad_range),
                grad_norm=[_finite(np.linalg.norm(row)) for row in gradients],
                value_rms=[_finite(np.sqrt(np.mean(row * row))) if row.size else 0.0 for row in values])
            if len(shape) == 2 and values.shape[1] <= MAX_HEAT_ENTRIES and self.kept:
                chosen = evenly(len(self.kept), MAX_HEAT_FRAMES)
                group.heat_steps = [self.kept[i] for i in chosen]
                group.heat_values = [values[i].copy() for i in chosen]
                group.heat_grads = [gradients[i].copy() for i in chosen]
                # A row of weights on a square image read from the data (digits' 64 pixels) is drawn
                # as that image: the strokes each unit responds to.
                side = math.isqrt(shape[1])
                square = side * side == shape[1] and side >= 4
                group.image_side = side if square and shape[1] in self.model.entries_per_row() else 0
            groups.append(group)
        return groups

    def _data_view(self) -> tuple[DataView | None, str]:
        if self._view is None:
            self._view = ViewPlan.of(self.model, self.params[0])
        plan = self._view
        if isinstance(plan, str):
            return None, plan
        chosen = [self.kept[i] for i in evenly(len(self.kept), MAX_VIEW_FRAMES)]
        by_step = dict(zip(self.kept, self.params))
        missing = [step for step in chosen if step not in self._frames]
        for start in range(0, len(missing), FRAME_BATCH):
            batch = missing[start:start + FRAME_BATCH]
            self._frames.update(zip(batch, plan.frames(self.model, [by_step[step] for step in batch])))
        frames = [self._frames[step] for step in chosen]
        return plan.view(chosen, frames), ""

    def _layer_activity(self) -> tuple[int, list[LayerActivity]]:
        step = self.kept[-1]
        if self._activity is None or self._activity[0] != step:
            self._activity = (step, self.model.activity(self.params[-1]))
        return self._activity

    def _row_graph(self) -> tuple[Any, str]:
        step = self.kept[-1]
        if self._graph is None or self._graph[0] != step:
            graph, note = self.model.row_graph(self.params[-1], step)
            self._graph = (step, graph, note)
        return self._graph[1], self._graph[2]




def _count(columns: Mapping[str, Any]) -> int:
    return len(next(iter(columns.values()))) if columns else 0


def _most_kept(size: int) -> int:
    """How many steps' parameters and gradient (``size`` numbers each) are kept: ``KEPT_BYTES``'
    worth, and at least 16."""
    return max(16, KEPT_BYTES // (16 * max(1, size)))



def _finite(x: Any) -> float:
    value = float(x)
    return value if math.isfinite(value) else math.inf


def _range(values: np.ndarray) -> list[float]:
    finite = values[np.isfinite(values)]
    if not finite.size:
        return [-1.0, 1.0]
    low, high = float(finite.min()), float(finite.max())
    scale = max(abs(low), abs(high))
    if high - low <= scale * 1e-9:  # one value (or nearly): a range around it that bins can split
        pad = scale * 1e-6 if scale else 0.5
        low, high = low - pad, high + pad
    return [low, high]


def _histograms(rows: np.ndarray, bounds: list[list[float]]) -> list[list[int]]:
    """``_histogram`` of each row with its bounds, in one pass over the matrix when the bounds
    allow it (every row's range finite): the bin of each entry, then one count of them all."""
    if not len(rows):
        return []
    lows, highs = np.array(bounds, dtype=np.float64).T
    spans = highs - lows
    if not np.all(np.isfinite(spans)):
        return [_histogram(row, row_bounds) for row, row_bounds in zip(rows, bounds)]
    with np.errstate(invalid="ignore"):
        place = (rows - lows[:, None]) * (BINS / spans)[:, None]  # as np.histogram places them
    inside = np.isfinite(place) & (place >= 0) & (place <= BINS)
    bins = np.minimum(np.where(inside, place, 0).astype(np.int64), BINS - 1)  # the high edge is in the last bin
    flat = (bins + BINS * np.arange(len(rows))[:, None])[inside]
    return np.bincount(flat, minlength=BINS * len(rows)).reshape(len(rows), BINS).tolist()  # type: ignore[no-any-return]


def _histogram(row: np.ndarray, bounds: list[float]) -> list[int]:
    finite = row[np.isfinite(row)]
    if not math.isfinite(bounds[1] - bounds[0]):  # a diverged run: split the range as halves
        finite, bounds = finite / 2, [bounds[0] / 2, bounds[1] / 2]
    counts, _edges = np.histogram(finite, bins=BINS, range=(bounds[0], bounds[1]))
    return [int(c) for c in counts]

