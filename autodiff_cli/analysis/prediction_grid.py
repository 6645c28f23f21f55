"""The model over its inputs, for the training report: a decision boundary, predicted classes,
a fitted surface or a fitted curve, on a grid of the one or two numbers each row gives it.

``ViewPlan.of(model, params)`` works out what can be drawn (which variable predicts, which
inputs are the axes, what the labels are), or says why nothing can; ``frames`` runs the model
over the grid at recorded parameters, and ``view`` packs the frames as a ``DataView``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .training_model import evenly

if TYPE_CHECKING:
    from .training_model import TrainingModel

__all__ = ["CURVE_POINTS", "GRID", "MAX_POINTS", "DataView", "ViewPlan"]

GRID = 24  # points per axis of a two-input view: 576 rows per recorded step (drawn smoothed)
CURVE_POINTS = 200  # points along a one-input view
MAX_POINTS = 600  # data points shown (every k-th row beyond)


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



class ViewPlan:
    """How to draw the model over its inputs: which variable, which axes, which grid."""

    def __init__(self, kind: str, prediction: str, label: str | None,
                 features: list[tuple[str, tuple[int, ...], str]],
                 level: float, bounds: list[list[float]], points: list[list[float]], classes: int,
                 entry: int | None) -> None:
        self.kind, self.prediction, self.label = kind, prediction, label
        self.features = features  # (input, entry index, column name) per axis
        self.level, self.bounds, self.points, self.classes = level, bounds, points, classes
        self.entry = entry  # the entry of a [1]-shaped prediction
        self.validation_points: list[list[float]] = []
        self.grid = self._grid()

    @classmethod
    def of(cls, model: TrainingModel, params: np.ndarray) -> ViewPlan | str:
        """The view of the model, or why it has none."""
        masks = model.masks
        prediction = masks.prediction
        if prediction is None or not model.data:
            return "no variable was found that depends on the inputs read from the data and not on the label"
        inputs = masks.inputs_of(prediction, model.program)
        others = [name for name in model.plan.data_inputs if name not in inputs]
        label = others[0] if others else None
        features: list[tuple[str, tuple[int, ...]]] = []
        for name in inputs:
            entries = model.data[name].shape[1:]
            features += [(name, index) for index in np.ndindex(*entries)] if entries else [(name, ())]
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

    def frame(self, model: TrainingModel, params: np.ndarray) -> np.ndarray:
        """The prediction over the grid at ``params`` (the class numbers, for "classes")."""
        return self.frames(model, [params])[0]

    def frames(self, model: TrainingModel, params: list[np.ndarray]) -> list[np.ndarray]:
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
    table = np.stack([*columns, labels], axis=1)[evenly(count, most)]
    return [[_round(x, 5) for x in row] for row in table[np.all(np.isfinite(table), axis=1)].tolist()]


def _flat(index: tuple[int, ...], rows: Any) -> int:
    return int(np.ravel_multi_index(index, rows.shape[1:])) if index else 0


def _class_numbers(labels: np.ndarray, classes: int) -> bool:
    return bool(np.all(labels == np.round(labels)) and labels.min() >= 0 and labels.max() < classes)


def _binary(labels: np.ndarray) -> bool:
    kinds = set(np.unique(labels).tolist())
    return kinds in ({-1.0, 1.0}, {0.0, 1.0})


def _round(x: float, digits: int) -> float:
    return float(f"{x:.{digits}g}")



def _padded(column: np.ndarray) -> list[float]:
    finite = column[np.isfinite(column)]
    if not finite.size:
        return [-1.0, 1.0]
    low, high = float(finite.min()), float(finite.max())
    pad = 0.1 * (high - low) if high > low else 1.0
    return [low - pad, high + pad]
