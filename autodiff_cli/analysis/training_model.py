"""The model a training report looks at: the program as a function of its flat parameter vector,
with its fixed inputs and its training (and held-out) rows.

``TrainingModel`` runs the program at given parameters: the prediction over rows
(``predict``, ``predict_frames``: a scalar program on the vectorized executor, the rest on the
tensor interpreter), its parameter groups and layers, the activity of its relu, tanh and
sigmoid layers over the training rows (``activity``), and the graph of one row
(``row_graph``).  ``_Masks`` finds which variable predicts: it depends on the parameters and
on some but not all of the data inputs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..engine.registry import activations
from ..language.program import INPUT, Initializer, Program

if TYPE_CHECKING:
    from ..execute.fit import FitPlan

__all__ = ["NEAR_LIMIT", "LayerActivity", "TrainingModel", "evenly", "name_prefix"]

# The activation ops whose layers are measured (dead relu units, saturated tanh and sigmoid).
# A table of op names outside the op registry: the registry will say which ops are activations.
ACTIVATIONS = activations()  # each with the limits where its gradient vanishes
NEAR_LIMIT = 0.01  # "near": within this of -1 or 1 (tanh), of 0 or 1 (sigmoid)
ANALYSIS_ROWS = 4000  # training rows the activations are measured on (evenly chosen beyond)
GRAPH_INSTRUCTIONS = 300  # larger scalar programs get no drawn graph (it would be unreadable)


@dataclass
class LayerActivity:
    """An activation layer's units at one step, measured over the training rows."""

    name: str  # the variable, or the name prefix of a scalar program's units
    op: str  # relu, tanh or sigmoid
    units: int
    dead: int  # relu units that are 0 on every row
    near_limit: float  # tanh/sigmoid: the share of activations within NEAR_LIMIT of a limit
    zero_share: float  # relu: the share of activations that are 0




class TrainingModel:
    """The program as a function of the flat parameter vector: a scalar program on the vectorized
    executor (its pictures and named layers), the rest on the tensor interpreter."""

    def __init__(self, program: Program, plan: FitPlan, given: Mapping[str, Any], columns: Mapping[str, Any],
                 seed: int, validation: Mapping[str, Any] | None = None) -> None:
        from ..execute.columns import input_rows
        from ..execute.interpreter import as_array, input_arrays
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
        self.layout: Any = None  # a tensor program's parameters laid end to end
        if self.tensors:
            from ..execute.objective import starting_parameters

            self.layout = starting_parameters(program, plan.parameters, plan.start, "normal", seed)[0]
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
        from ..execute.interpreter import run_forward

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
            from ..execute.batch_evaluator import BatchEvaluator

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
        rows = evenly(self.rows, ANALYSIS_ROWS)
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
            low, high = ACTIVATIONS[op]
            if high is None:  # held at its one limit, a unit is dead: relu at 0
                dead = int(np.sum(np.all(finite == low, axis=0)))
                activity.append(LayerActivity(name, op, units.shape[1], dead, 0.0, float(np.mean(finite == low))))
            else:
                near = np.mean((finite <= low + NEAR_LIMIT) | (finite >= high - NEAR_LIMIT))
                activity.append(LayerActivity(name, op, units.shape[1], 0, float(near), 0.0))
        return activity

    def row_to_draw(self, params: np.ndarray) -> int:
        """The training row whose loss is largest at ``params``: the one whose graph shows most of
        the gradient (a row the model already gets right, with a hinge at 0, shows none)."""
        try:
            losses = np.asarray(self.predict(params, self.data, self.plan.output), dtype=np.float64).reshape(-1)
        except Exception:  # noqa: BLE001 - any failure to rank the rows leaves the first row drawn
            return 0
        finite = np.isfinite(losses)
        return int(np.argmax(np.where(finite, losses, -np.inf))) if finite.any() else 0

    def row_graph(self, params: np.ndarray, step: int) -> tuple[Any, str]:
        """The graph of the loss at ``step`` on the training row with the largest loss then (a
        scalar program small enough to read), or None and why not."""
        from ..errors import AutodiffError

        row = self.row_to_draw(params) if self.rows else 0
        which = "the first row" if row == 0 else f"row {row + 1}"
        said = f"{which} of the data (the largest loss at step {step})"
        if self.layout is not None:
            from .graph_model import layer_graph

            given: dict[str, Any] = dict(self.fixed)
            given.update(self.parameters(params))
            given.update({name: rows[row] for name, rows in self.data.items()})
            try:
                graph = layer_graph(self.program, given, self.plan.output, parameters=self.plan.parameters,
                                    seed=self.seed)
            except AutodiffError as error:
                return None, f"{which} could not be evaluated: {error.message}"
            return graph, f"{said}, layer by layer"
        if len(self.program) > GRAPH_INSTRUCTIONS:
            return None, (f"the program has {len(self.program)} instructions, too many to draw here: "
                          f"'autodiff graph' draws it")
        from ..execute.scalar import evaluate
        from .graph_model import GraphModel

        values: dict[str, float] = {name: float(value) for name, value in self.fixed.items()}
        values.update({name: float(value) for name, value in zip(self.plan.parameters, params)})
        values.update({name: float(rows[row]) for name, rows in self.data.items()})
        try:
            evaluation = evaluate(self.program, values, self.plan.output)
        except AutodiffError as error:
            return None, f"{which} could not be evaluated: {error.message}"
        return GraphModel.of(evaluation), said


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


def evenly(count: int, most: int) -> list[int]:
    """Indices of ``count`` items, all of them up to ``most``, else ``most`` evenly spread
    (the first and the last among them)."""
    if count <= most:
        return list(range(count))
    return sorted(set(np.linspace(0, count - 1, most).round().astype(int).tolist()))

