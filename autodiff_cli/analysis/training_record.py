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

The model is run on the tensor interpreter (``execute.tensor.run_forward``) in both cases: a
scalar program is a tensor program whose shapes are all ``()``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..language.program import INPUT, Initializer, Program

if TYPE_CHECKING:
    from ..execute.fit import FitPlan, FitResult

__all__ = [
    "ACTIVATIONS",
    "DataView",
    "LayerActivity",
    "ParameterGroup",
    "Recording",
    "TrainingRecorder",
    "default_every",
    "diagnose",
]

ACTIVATIONS = ("relu", "tanh", "sigmoid")
GRID = 24  # points per axis of a two-input view: 576 rows per recorded step (drawn smoothed)
CURVE_POINTS = 200  # points along a one-input view
MAX_POINTS = 600  # data points shown (every k-th row beyond)
KEPT_BYTES = 64 * 2**20  # parameters and gradients kept, at most (every other one is let go beyond)
FRAME_BATCH = 8  # frames of a scalar program computed in one run of the executor
MAX_VIEW_FRAMES = 60  # recorded steps that get a boundary or curve (evenly chosen beyond)
MAX_HEAT_FRAMES = 20  # recorded steps that get heat maps of a matrix
MAX_HEAT_ENTRIES = 4096  # matrices larger than this get histograms only
BINS = 24
SATURATED = 0.9  # the share of a tanh/sigmoid layer's activations near its limits that is saturation
NEAR_LIMIT = 0.01  # "near": within this of -1 or 1 (tanh), of 0 or 1 (sigmoid)
ANALYSIS_ROWS = 4000  # training rows the activations are measured on (evenly chosen beyond)
GRAPH_INSTRUCTIONS = 300  # larger scalar programs get no drawn graph (it would be unreadable)


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
class DataView:
    """The model over its inputs at recorded steps: a boundary, classes, a surface or a curve."""

    kind: str  # "boundary" (sign or 0.5 level), "classes" (argmax), "surface" (a number), "curve" (one input)
    features: list[str]  # the axes: 'x1', 'x2', or 'x[0]', 'x[1]'
    prediction: str  # the variable drawn
    label: str | None  # the data input it is compared with
    level: float  # the boundary's level ("boundary")
    x_range: list[float]
    y_range: list[float]  # of the grid ("boundary", "classes", "surface"), of the values ("curve")
    size: int  # grid points per axis, or points along the curve
    points: list[list[float]]  # [x, y, label] or [x, label] of shown data rows
    steps: list[int]  # the recorded steps with a frame
    frames: list[np.ndarray]  # per step: the grid row by row (y outer), or the curve's values; NaN where a row fails
    classes: int = 0  # "classes": how many
    validation_points: list[list[float]] = field(default_factory=list)  # held-out rows, as ``points``


@dataclass
class LayerActivity:
    """An activation layer's units at one step, measured over the training rows."""

    name: str  # the variable, or the name prefix of a scalar program's units
    op: str  # relu, tanh or sigmoid
    units: int
    dead: int  # relu units that are 0 on every row
    near_limit: float  # tanh/sigmoid: the share of activations within NEAR_LIMIT of a limit
    zero_share: float  # relu: the share of activations that are 0


@dataclass
class Recording:
    """Everything the training report shows, as plain data."""

    meta: dict[str, Any]  # command, seed, versions, program, data: shown as given
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
    graph: Any = None  # one row's graph: a GraphModel (scalar program), a tensor_graph.TensorGraph, or None
    graph_note: str = ""  # which row and step, or why there is no graph
    diagnoses: list[str] = field(default_factory=list)
    finished: bool = False
    reason: str = ""  # FitResult.reason once finished
    steps_done: int = 0
    final_loss: float | None = None
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
        self.model = _Model(program, plan, given_values, train_columns, seed, validation_columns)
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
        self._view: Any = None  # _ViewPlan once worked out
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
                           grad_norm=list(self.grad_norm))
        result = self.result
        if result is not None:
            record.finished = True
            record.reason = result.reason
            record.steps_done = result.steps_done
            record.bad_step = result.bad_step
            record.final_loss = float(result.loss) if math.isfinite(result.loss) else None
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
                chosen = _evenly(len(self.kept), MAX_HEAT_FRAMES)
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
            self._view = _ViewPlan.of(self.model, self.params[0])
        plan = self._view
        if isinstance(plan, str):
            return None, plan
        chosen = [self.kept[i] for i in _evenly(len(self.kept), MAX_VIEW_FRAMES)]
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


# --- the model: the program with its parameters, fixed inputs and data -------------------------


class _Model:
    """The program as a function of the flat parameter vector: a scalar program on the vectorized
    executor (its pictures and named layers), the rest on the tensor interpreter."""

    def __init__(self, program: Program, plan: FitPlan, given: Mapping[str, Any], columns: Mapping[str, Any],
                 seed: int, validation: Mapping[str, Any] | None = None) -> None:
        from ..execute.tensor import as_array, input_arrays
        from ..execute.tensor_batch import input_rows
        from ..language.program import runs_as_tensors

        self.program = program
        self.plan = plan
        self.seed = seed
        data_inputs = set(plan.data_inputs)
        self.data = {name: rows for name, rows in input_rows(program, dict(columns)).items() if name in data_inputs}
        self.rows = len(next(iter(self.data.values()))) if self.data else 0
        self.validation = ({name: rows for name, rows in input_rows(program, dict(validation)).items()
                            if name in data_inputs} if validation else {})
        drawn = input_arrays(program, {}, seed)  # a fixed input may be declared with an initializer
        self.fixed = {name: drawn[name] if isinstance(value, Initializer) else as_array(value)
                      for name, value in plan.fixed.items()}
        self.tensors = runs_as_tensors(program, given) or any(np.ndim(rows) > 1 for rows in self.data.values())
        if self.tensors:
            from ..execute.tensor_fit import starting_parameters

            self.layout = starting_parameters(program, plan.parameters, plan.start, "normal", seed)[0]
        else:
            self.layout = None
        self._shapes: dict[Any, Any] = {}
        self._evaluators: dict[str, Any] = {}
        self._layer_names: list[str] | None = None
        self.masks = _Masks(program, plan)

    def entries_per_row(self) -> set[int]:
        """The number of entries each data input has in a row (1 for a number)."""
        return {int(np.prod(rows.shape[1:])) for rows in self.data.values()}

    def parameters(self, params: np.ndarray) -> dict[str, Any]:
        if self.layout is not None:
            return self.layout.unpack(params)
        return {name: np.float64(value) for name, value in zip(self.plan.parameters, params)}

    def run(self, params: np.ndarray, data: Mapping[str, Any]) -> Any:
        """The tensor interpreter's run over rows of ``data`` (one array per data input), unchecked:
        a row outside an op's domain gives NaN, which the pictures leave blank."""
        from ..execute.tensor import run_forward

        inputs = dict(self.fixed)
        inputs.update(self.parameters(params))
        inputs.update(data)
        return run_forward(self.program, inputs, frozenset(data), check=False, shapes_cache=self._shapes)

    def predict(self, params: np.ndarray, data: Mapping[str, Any], name: str) -> np.ndarray:
        """The values of variable ``name`` over the rows of ``data``, NaN where a row fails: for a
        scalar program on the vectorized executor, which runs only what ``name`` needs."""
        if self.layout is not None:
            run = self.run(params, data)
            out = np.asarray(run.value(name), dtype=np.float64)
            if not run.leads[run.register(name)]:
                out = np.broadcast_to(out, (len(next(iter(data.values()))), *out.shape))
            return out
        result = self._evaluator(name).evaluate(self._scalar_inputs(params, data), on_error="nan")
        return np.asarray(result.values[name], dtype=np.float64)

    def predict_frames(self, params: list[np.ndarray], data: Mapping[str, Any], name: str) -> list[np.ndarray]:
        """``predict`` at each of ``params``.  A scalar program runs them all at once, each parameter
        a column (its value at each step, repeated over the rows): the vectorized executor's cost
        per call, a walk of the program, is paid once rather than per step."""
        if self.layout is not None or len(params) == 1:
            return [self.predict(one, data, name) for one in params]
        count = len(next(iter(data.values())))
        by_parameter = np.repeat(np.array(params).T, count, axis=1)  # one contiguous row per parameter
        columns: dict[str, Any] = dict(zip(self.plan.parameters, by_parameter))
        columns.update({key: np.tile(values, len(params)) for key, values in data.items()})
        inputs = self._scalar_inputs([], columns)
        out = np.asarray(self._evaluator(name).evaluate(inputs, on_error="nan").values[name], dtype=np.float64)
        return list(out.reshape(len(params), count))

    def _evaluator(self, name: str) -> Any:
        """The vectorized executor for ``name``, which also gives the named activation layers'
        values: one plan of the program serves the pictures and the layers."""
        evaluator = self._evaluators.get(name)
        if evaluator is None:
            from ..execute.vectorized import BatchEvaluator

            evaluator = self._evaluators[name] = BatchEvaluator(self.program, output=name, wrt=(),
                                                                values_of=self._named_layers())
        return evaluator

    def _named_layers(self) -> list[str]:
        """The names of the activation registers when every one has a name (``h1_3 = relu(...)``);
        else none, and the tensor interpreter, which sees every register, measures them."""
        if self._layer_names is None:
            names = self.program.names_by_register()
            wanted = self.masks.layer_registers(self.program)
            self._layer_names = [names[r] for r in wanted] if all(r in names for r in wanted) else []
        return self._layer_names

    def _scalar_inputs(self, params: Any, data: Mapping[str, Any]) -> dict[str, Any]:
        """A scalar program's inputs for the vectorized executor: numbers or columns."""
        inputs: dict[str, Any] = {key: float(value) for key, value in self.fixed.items()}
        inputs.update(zip(self.plan.parameters, params.tolist() if isinstance(params, np.ndarray) else params))
        inputs.update(data)
        return inputs

    def groups(self) -> list[tuple[str, tuple[int, ...], list[str], Any]]:
        """(name, shape, members, positions in the flat vector) of each parameter group."""
        if self.layout is not None:
            layout = self.layout
            return [(name, shape, [name], slice(start, end))
                    for name, shape, start, end in zip(layout.names, layout.shapes, layout.offsets, layout.offsets[1:])]
        by_prefix: dict[str, list[int]] = {}
        for index, name in enumerate(self.plan.parameters):
            by_prefix.setdefault(name_prefix(name), []).append(index)
        names = self.plan.parameters
        return [(prefix, (len(where),), [names[i] for i in where], np.array(where))
                for prefix, where in by_prefix.items()]

    def layers(self) -> list[list[str]]:
        """A tensor program's activation and product layers as [name, op, shape] rows."""
        if self.layout is None or not self.data:
            return []
        from ..language.shapes import shape_text

        run = self.run(self._params_guess(), {name: rows[:1] for name, rows in self.data.items()})
        names = self.program.names_by_register()
        target = self.masks.prediction or self.plan.output
        needed = self.program.dependencies(target)
        table = []
        for register, (op, _first, _second, _param, _where) in enumerate(run.rows):
            if register in names and needed[register] and op != INPUT and run.shapes[register]:
                table.append([names[register], op, shape_text(run.shapes[register])])
        return table

    def _params_guess(self) -> np.ndarray:
        return np.zeros(self.layout.size if self.layout is not None else len(self.plan.parameters))

    def activity(self, params: np.ndarray) -> list[LayerActivity]:
        """The relu, tanh and sigmoid layers the prediction (else the output) depends on, over the training rows."""
        if not self.data:
            return []
        rows = _evenly(self.rows, ANALYSIS_ROWS)
        data = {name: values[rows] for name, values in self.data.items()}
        wanted = self.masks.layer_registers(self.program)
        names = self.program.names_by_register()
        ops = [op for op, *_rest in self.program.rows()] if wanted else []
        if self.layout is None and self._named_layers():
            target = self.masks.prediction or self.plan.output
            found = self._evaluator(target).evaluate(self._scalar_inputs(params, data), on_error="nan").values
            measured = [(register, np.broadcast_to(np.asarray(found[names[register]], dtype=np.float64),
                                                   (len(rows),)).reshape(len(rows), 1)) for register in wanted]
        else:
            run = self.run(params, data)
            measured = [(register, np.asarray(run.values[register], dtype=np.float64).reshape(len(rows), -1)
                         if run.leads[register] else np.broadcast_to(
                             np.reshape(run.values[register], (1, -1)), (len(rows), max(1, np.size(run.values[register])))))
                        for register in wanted]
        layers: dict[tuple[str, str], list[Any]] = {}
        for register, value in measured:
            name = names.get(register) or f"line {self.program.position(self.program.instructions[register].position).line}"
            key = (name if self.layout is not None else name_prefix(name), ops[register])
            layers.setdefault(key, []).append(value)
        activity = []
        for (name, op), parts in layers.items():
            units = np.concatenate(parts, axis=1)
            finite = np.where(np.isfinite(units), units, 0.0)
            if op == "relu":
                dead = int(np.sum(np.all(finite == 0.0, axis=0)))
                activity.append(LayerActivity(name, op, units.shape[1], dead, 0.0, float(np.mean(finite == 0.0))))
            else:
                low = -1.0 if op == "tanh" else 0.0
                near = np.mean((finite <= low + NEAR_LIMIT) | (finite >= 1.0 - NEAR_LIMIT))
                activity.append(LayerActivity(name, op, units.shape[1], 0, float(near), 0.0))
        return activity

    def row_graph(self, params: np.ndarray, step: int) -> tuple[Any, str]:
        """The graph of the loss on the first training row at ``step`` (a scalar program small
        enough to read), or None and why not."""
        from ..errors import AutodiffError

        if self.layout is not None:
            from .tensor_graph import layer_graph

            given: dict[str, Any] = dict(self.fixed)
            given.update(self.parameters(params))
            given.update({name: rows[0] for name, rows in self.data.items()})
            try:
                graph = layer_graph(self.program, given, self.plan.output, parameters=self.plan.parameters,
                                    seed=self.seed)
            except AutodiffError as error:
                return None, f"the first row could not be evaluated: {error.message}"
            return graph, f"the first row of the data at step {step}, layer by layer"
        if len(self.program) > GRAPH_INSTRUCTIONS:
            return None, (f"the program has {len(self.program)} instructions, too many to draw here: "
                          f"'autodiff graph' draws it")
        from ..execute.scalar import evaluate
        from .graph_model import GraphModel

        values: dict[str, float] = {name: float(value) for name, value in self.fixed.items()}
        values.update({name: float(value) for name, value in zip(self.plan.parameters, params)})
        values.update({name: float(rows[0]) for name, rows in self.data.items()})
        try:
            evaluation = evaluate(self.program, values, self.plan.output)
        except AutodiffError as error:
            return None, f"the first row could not be evaluated: {error.message}"
        return GraphModel.of(evaluation), f"the first row of the data at step {step}"


def name_prefix(name: str) -> str:
    """The group of a scalar parameter or unit: its name without trailing ``_<number>`` parts
    (``w1_3_2`` -> ``w1``, ``h2_16`` -> ``h2``, ``b`` -> ``b``)."""
    prefix = re.sub(r"(_\d+)+$", "", name)
    return prefix or name


class _Masks:
    """For every register: which data inputs (bits 0...) and whether any parameter (the top bit)
    it depends on, worked out in one pass front to back."""

    def __init__(self, program: Program, plan: FitPlan) -> None:
        data_bit = {name: 1 << i for i, name in enumerate(plan.data_inputs)}
        self.param_bit = 1 << len(plan.data_inputs)
        self.all_data = self.param_bit - 1
        parameters = set(plan.parameters)
        masks: list[int] = []
        for op, first, second, param, _where in program.rows():
            if op == INPUT:
                masks.append(data_bit.get(param, self.param_bit if param in parameters else 0))
            else:
                masks.append((masks[first] if first >= 0 else 0) | (masks[second] if second >= 0 else 0))
        self.masks = masks
        self.data_inputs = list(plan.data_inputs)
        self.prediction = self._prediction(program)

    def _prediction(self, program: Program) -> str | None:
        """The variable that predicts: the latest one, of those that depend on the parameters
        and on some but not all data inputs, with the most data inputs (``score`` beside the
        label ``y``; ``prediction`` beside ``y``)."""
        best: tuple[int, int] | None = None
        name = None
        for variable in program.variables.values():
            if variable.kind == INPUT:
                continue
            mask = self.masks[variable.register]
            data = mask & self.all_data
            if not mask & self.param_bit or not data or data == self.all_data:
                continue
            key = (bin(data).count("1"), variable.register)
            if best is None or key > best:
                best, name = key, variable.name
        return name

    def inputs_of(self, name: str, program: Program) -> list[str]:
        mask = self.masks[program.variables[name].register]
        return [data for i, data in enumerate(self.data_inputs) if mask & (1 << i)]

    def layer_registers(self, program: Program) -> list[int]:
        """The activation registers that depend on a parameter and that the prediction (else the
        output) depends on: not a hinge on the label."""
        target = self.prediction or None
        needed = program.dependencies(target) if target else [True] * len(self.masks)
        return [register for register, (op, *_rest) in enumerate(program.rows())
                if op in ACTIVATIONS and needed[register] and self.masks[register] & self.param_bit]


class _ViewPlan:
    """How to draw the model over its inputs: which variable, which axes, which grid."""

    def __init__(self, kind: str, prediction: str, label: str | None, features: list[tuple[str, tuple[int, ...]]],
                 level: float, bounds: list[list[float]], points: list[list[float]], classes: int,
                 entry: int | None) -> None:
        self.kind, self.prediction, self.label = kind, prediction, label
        self.features = features  # (input, entry index) per axis
        self.level, self.bounds, self.points, self.classes = level, bounds, points, classes
        self.entry = entry  # the entry of a [1]-shaped prediction
        self.validation_points: list[list[float]] = []
        self.grid = self._grid()

    @classmethod
    def of(cls, model: _Model, params: np.ndarray) -> _ViewPlan | str:
        """The view of the model, or why it has none."""
        masks = model.masks
        prediction = masks.prediction
        if prediction is None or not model.data:
            return "no variable was found that depends on the inputs read from the data and not on the label"
        inputs = masks.inputs_of(prediction, model.program)
        others = [name for name in model.plan.data_inputs if name not in inputs]
        label = others[0] if others else None
        features = []
        for name in inputs:
            shape = model.data[name].shape[1:]
            features += [(name, index) for index in np.ndindex(*shape)] if shape else [(name, ())]
        if len(features) not in (1, 2):
            return (f"'{prediction}' depends on {len(features)} numbers of each row; the picture of the model "
                    f"is drawn for one or two")
        shape: tuple[int, ...] = ()
        if model.layout is not None:  # a scalar program's every shape is ()
            run = model.run(params, {name: rows[:1] for name, rows in model.data.items()})
            shape = run.shapes[run.register(prediction)]
        labels = _entry(model.data[label], ()) if label else None
        entry = None
        classes = 0
        level = 0.0
        if len(shape) == 1 and shape[0] == 1:
            entry = 0
        elif shape:
            if len(shape) == 1 and labels is not None and len(features) == 2 and _class_numbers(labels, shape[0]):
                classes = shape[0]
            else:
                return f"'{prediction}' has shape {list(shape)} per row; the picture is drawn for a number or classes"
        columns = [_entry(model.data[name], index) for name, index in features]
        bounds = [_padded(column) for column in columns]
        points = _points(model.data, features, label, MAX_POINTS)
        if len(features) == 1:
            kind = "curve"
        elif classes:
            kind = "classes"
        elif labels is not None and _binary(labels):
            kind = "boundary"
            if set(np.unique(labels).tolist()) == {0.0, 1.0}:  # 0.5 for probabilities, 0 for scores
                first = cls("surface", prediction, label, _spelled(features), 0.0, bounds, points, 0, entry)
                values = first.frame(model, params)
                finite = values[np.isfinite(values)]
                if finite.size and finite.min() >= 0 and finite.max() <= 1:
                    level = 0.5
        else:
            kind = "surface"
        plan = cls(kind, prediction, label, _spelled(features), level, bounds, points, classes, entry)
        if model.validation:
            plan.validation_points = _points(model.validation, features, label, MAX_POINTS // 2)
        return plan

    def _grid(self) -> dict[str, Any]:
        """The rows the model is run on: each axis's values, as feature columns."""
        if len(self.features) == 1:
            low, high = self.bounds[0]
            return {"axes": [np.linspace(low, high, CURVE_POINTS)]}
        (x_low, x_high), (y_low, y_high) = self.bounds
        xs = np.linspace(x_low, x_high, GRID)
        ys = np.linspace(y_low, y_high, GRID)
        grid_x, grid_y = np.meshgrid(xs, ys)  # row by row, y outer
        return {"axes": [grid_x.ravel(), grid_y.ravel()]}

    def frame(self, model: _Model, params: np.ndarray) -> np.ndarray:
        """The prediction over the grid at ``params`` (the class numbers, for "classes")."""
        return self.frames(model, [params])[0]

    def frames(self, model: _Model, params: list[np.ndarray]) -> list[np.ndarray]:
        """``frame`` at each of ``params``, in one run of the executor where it can."""
        axes = self.grid["axes"]
        count = len(axes[0])
        data: dict[str, Any] = {}
        for name, rows in model.data.items():
            data[name] = np.zeros((count, *rows.shape[1:]))
        for (name, index), values in zip(self.feature_places, axes):
            data[name][(slice(None), *index)] = values
        return [self._shown(out) for out in model.predict_frames(params, data, self.prediction)]

    def _shown(self, out: np.ndarray) -> np.ndarray:
        if self.classes:
            finite = np.where(np.isfinite(out), out, -np.inf)
            return np.argmax(finite, axis=1).astype(np.float64)
        if self.entry is not None:
            out = out[:, self.entry]
        return np.array(out, dtype=np.float64)

    @property
    def feature_places(self) -> list[tuple[str, tuple[int, ...]]]:
        return [(name, index) for name, index, _spelled_name in self.features]

    def view(self, steps: list[int], frames: list[np.ndarray]) -> DataView:
        if self.kind == "curve":
            y_range = _padded(np.concatenate([*frames, np.array([p[1] for p in self.points])]))
            size = CURVE_POINTS
        else:
            y_range = self.bounds[1]
            size = GRID
        return DataView(kind=self.kind, features=[spelled for _n, _i, spelled in self.features],
                        prediction=self.prediction, label=self.label, level=self.level,
                        x_range=self.bounds[0], y_range=y_range, size=size, points=self.points,
                        steps=list(steps), frames=frames, classes=self.classes,
                        validation_points=self.validation_points)


def _spelled(features: list[tuple[str, tuple[int, ...]]]) -> list[tuple[str, tuple[int, ...], str]]:
    from ..execute.columns import entry_column

    return [(name, index, entry_column(name, index)) for name, index in features]


def _entry(rows: Any, index: tuple[int, ...]) -> np.ndarray:
    """One entry of an input over the rows: ``x[1]`` of each row; a number input's own column."""
    rows = np.asarray(rows, dtype=np.float64)
    return rows.reshape(len(rows), -1)[:, _flat(index, rows)]


def _points(data: Mapping[str, Any], features: list[tuple[str, tuple[int, ...]]], label: str | None,
            most: int) -> list[list[float]]:
    """Up to ``most`` rows (evenly chosen) as [feature..., label] (label 0 without one), finite ones only."""
    columns = [_entry(data[name], index) for name, index in features]
    count = len(columns[0])
    labels = _entry(data[label], ()) if label is not None else np.zeros(count)  # a tensor label: its first entry
    table = np.stack([*columns, labels], axis=1)[_evenly(count, most)]
    return [[_round(x, 5) for x in row] for row in table[np.all(np.isfinite(table), axis=1)].tolist()]


def _flat(index: tuple[int, ...], rows: Any) -> int:
    return int(np.ravel_multi_index(index, rows.shape[1:])) if index else 0


def _class_numbers(labels: np.ndarray, classes: int) -> bool:
    return bool(np.all(labels == np.round(labels)) and labels.min() >= 0 and labels.max() < classes)


def _binary(labels: np.ndarray) -> bool:
    kinds = set(np.unique(labels).tolist())
    return kinds in ({-1.0, 1.0}, {0.0, 1.0})


# --- diagnostics -------------------------------------------------------------------------------

EXPLODING = 1e3  # the gradient norm grew this many times over
VANISHING = 1e-6  # a group's gradient norm, relative to the largest group's, below this


def diagnose(record: Recording) -> list[str]:
    """Sentences naming what went wrong in the run ``record`` holds; empty when nothing did."""
    found = []
    found += _learning_rate(record)
    found += _layers(record)
    found += _gradients(record)
    return found


def _learning_rate(record: Recording) -> list[str]:
    losses = record.history_loss or record.train_loss
    lr = record.meta.get("lr")
    lower = f" (try --lr {_short(lr / 10)})" if isinstance(lr, (int, float)) and lr > 0 else ""
    if record.reason == "diverged":
        where = f" at step {record.bad_step}" if record.bad_step is not None else ""
        return [f"training diverged{where}: the learning rate is probably too high{lower}"]
    if len(losses) < 4:
        return []
    first, last = losses[0], losses[-1]
    if last > first:
        return [f"the loss rose from {_short(first)} to {_short(last)}: the learning rate is probably too high{lower}"]
    rises = sum(1 for a, b in zip(losses, losses[1:]) if b > a)
    full_batch = record.meta.get("batch_size") in (None, 0)
    if full_batch and rises / (len(losses) - 1) > 0.3 and last > 0.5 * first:
        return [f"the loss went up at {rises} of {len(losses) - 1} steps and ended at {_short(last)} from "
                f"{_short(first)}: it oscillates, the learning rate is probably too high{lower}"]
    return []


def _layers(record: Recording) -> list[str]:
    found = []
    for layer in record.activity:
        if layer.op == "relu" and layer.dead:
            one = layer.dead == 1  # "1 of the 16 units is dead", "2 of them are"
            found.append(f"{layer.dead} of the {layer.units} relu units of '{layer.name}' {'is' if one else 'are'} "
                         f"dead: 0 on every training row at step {record.activity_step}, so "
                         f"{'it no longer learns' if one else 'they no longer learn'}")
        elif layer.op in ("tanh", "sigmoid") and layer.near_limit >= SATURATED:
            limits = "-1 or 1" if layer.op == "tanh" else "0 or 1"
            found.append(f"the {layer.op} layer '{layer.name}' is saturated: {_percent(layer.near_limit)} of its "
                         f"activations are within {NEAR_LIMIT:g} of {limits} at step {record.activity_step}, "
                         f"where its gradient vanishes (scale the inputs, or start the weights smaller)")
    return found


def _gradients(record: Recording) -> list[str]:
    found = []
    norms = [n for n in record.grad_norm if math.isfinite(n)]
    if len(norms) >= 2 and norms[0] > 0 and max(norms[1:]) > EXPLODING * norms[0]:
        found.append(f"the gradient norm exploded from {_short(norms[0])} to {_short(max(norms[1:]))}")
    if len(record.groups) >= 2 and record.steps:
        # Per entry, so a big matrix is not favoured over a bias; at every recorded step, so a
        # group that has merely converged before the others is not mistaken for one starved.
        sizes = [math.sqrt(max(1, int(np.prod(group.shape)))) for group in record.groups]
        starved = set(range(len(record.groups)))
        for index in range(len(record.kept_steps)):
            norms = [group.grad_norm[index] / size for group, size in zip(record.groups, sizes)]
            largest = max(norms)
            if not largest > 0 or not math.isfinite(largest):
                continue
            starved &= {k for k, norm in enumerate(norms) if norm < VANISHING * largest}
        if starved:
            names = ", ".join(repr(record.groups[k].name) for k in sorted(starved))
            found.append(f"the gradients of {names} vanish: under {VANISHING:g} of the largest group's "
                         f"(per entry) at every recorded step")
    return found


def _short(x: float) -> str:
    return f"{x:.4g}"


def _percent(share: float) -> str:
    return f"{100 * share:.0f}%"


# --- numbers for the page ----------------------------------------------------------------------


def _most_kept(size: int) -> int:
    """How many steps' parameters and gradient (``size`` numbers each) are kept: ``KEPT_BYTES``'
    worth, and at least 16."""
    return max(16, KEPT_BYTES // (16 * max(1, size)))


def _evenly(count: int, most: int) -> list[int]:
    """Indices of ``count`` items, all of them up to ``most``, else ``most`` evenly spread
    (the first and the last among them)."""
    if count <= most:
        return list(range(count))
    return sorted(set(np.linspace(0, count - 1, most).round().astype(int).tolist()))


def _round(x: float, digits: int) -> float:
    return float(f"{x:.{digits}g}")


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


def _padded(column: np.ndarray) -> list[float]:
    finite = column[np.isfinite(column)]
    if not finite.size:
        return [-1.0, 1.0]
    low, high = float(finite.min()), float(finite.max())
    pad = 0.1 * (high - low) if high > low else 1.0
    return [low - pad, high + pad]
