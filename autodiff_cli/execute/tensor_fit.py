"""Training tensor programs: the parameters as one flat vector, and the mean loss over rows.

``fit``'s loop (``execute.fit.train``) steps an optimiser's rule on one array of every
parameter.  A tensor program's parameters have shapes, so ``ParameterLayout`` lays them
end to end in that array (each a view of its slice, no copy) and back.  ``TensorObjective``
runs the program over a batch of data rows with the tensor interpreter: the inputs read
from the data carry the batch axis, the parameters do not, so one forward and one reverse
sweep give every row's loss and the gradient summed over the rows.

A data input of shape ``[2]`` is read from the columns ``x[0]`` and ``x[1]`` of the data
(``columns.entry_column``); a matrix input ``[2, 3]`` from ``W[0, 0]`` ... ``W[1, 2]``.

**Precision.**  The layout's ``dtype`` (float64, or float32 from ``starting_parameters``) is
the objective's: the data and fixed inputs are converted to it once, when the objective is
made, and every step's values and gradient are in it.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import EvaluationError, InputError, Source
from ..language.program import Initializer, Program
from ..language.shapes import Shape, shape_text
from .interpreter import float_type, in_precision, in_precision_columns, input_arrays, run_forward
from .vectorized import _let_the_heap_hold

__all__ = ["ParameterLayout", "TensorObjective", "starting_parameters"]


class ParameterLayout:
    """Where each parameter lies in the flat vector the optimiser steps."""

    def __init__(self, names: Sequence[str], shapes: Sequence[Shape], dtype: Any = np.float64) -> None:
        self.names = list(names)
        self.dtype = np.dtype(dtype)  # the flat vector's precision: float64, or float32
        self.shapes = [tuple(shape) for shape in shapes]
        sizes = [int(np.prod(shape)) for shape in self.shapes]
        self.offsets = [0, *itertools.accumulate(sizes)]
        self.size = self.offsets[-1]

    def unpack(self, flat: Any) -> dict[str, Any]:
        """Each parameter as a view of its slice of ``flat``."""
        return {name: flat[start:end].reshape(shape)
                for name, shape, start, end in zip(self.names, self.shapes, self.offsets, self.offsets[1:])}

    def pack(self, arrays: Mapping[str, Any]) -> Any:
        """The arrays of ``arrays`` end to end in a new vector of the layout's precision."""
        if not self.names:
            return np.empty(0, self.dtype)
        flat = np.concatenate([a.reshape(-1) if a.__class__ is np.ndarray else np.reshape(a, -1)
                               for a in map(arrays.__getitem__, self.names)], dtype=self.dtype)
        if flat.size != self.size:  # an array of another shape than its parameter's: a bug, said here
            raise ValueError(f"{flat.size} numbers for a layout of {self.size}")
        return flat

    def nested(self, flat: Any) -> dict[str, Any]:
        """Each parameter as a number or nested lists, as a values file holds it."""
        return {name: value.tolist() if value.ndim else float(value) for name, value in self.unpack(flat).items()}


def starting_parameters(program: Program, names: Sequence[str], given: Mapping[str, Any], init: str,
                        seed: int, dtype: Any = None) -> tuple[ParameterLayout, Any]:
    """The layout of the parameters and their starting vector: a value given (``--values``,
    ``--set``), else the program's default (an initializer is drawn from ``seed``), else a draw
    of ``init`` (``normal``: standard normal; ``uniform``: on [-1, 1]) for a number.  ``dtype``:
    the vector's precision, float64 (None) or float32 (the float64 values rounded)."""
    from .fit import initial_values

    variables = program.variables
    dtype = float_type(dtype)
    defaults = input_arrays(program, {}, seed, dtype)  # (a default too large for dtype is refused here)
    starts = {}
    missing = [name for name in names if name not in given and variables[name].default is None]
    drawn = iter(initial_values(len(missing), init, seed))
    for name in names:
        if name in given and not isinstance(given[name], Initializer):  # a draw is made from the seed
            starts[name] = in_precision(given[name], dtype, name, source=program.source, given=True)
        elif variables[name].default is not None:
            starts[name] = defaults[name]
        else:
            starts[name] = np.float64(next(drawn))
    layout = ParameterLayout(names, [np.shape(starts[name]) for name in names], dtype)
    return layout, layout.pack(starts)


class TensorObjective:
    """The mean of a tensor program's output over data rows, as a function of the flat
    parameter vector (``execute.fit.Objective``)."""

    def __init__(self, program: Program, output: str, layout: ParameterLayout, fixed: Mapping[str, Any],
                 data: Mapping[str, Any], row_label: Callable[[int], str] | None = None) -> None:
        self.program = program
        self.output = output
        self.layout = layout
        self.dtype = dtype = layout.dtype  # the parameters' precision is the run's: data and fixed inputs
        self.row_label = row_label or (lambda index: f"row {index} of the data (counting from 0)")
        self.fixed = {name: in_precision(value, dtype, name, source=program.source, given=True)
                      for name, value in fixed.items()}  # converted once, here
        self.data = in_precision_columns(data, dtype, self.row_label)
        self.batched = frozenset(self.data)
        self.rows = len(next(iter(self.data.values()))) if self.data else 1
        self._checked = False
        self._seed_array: Any = None  # ``_seed``'s, for batches of ``_seed_count`` rows
        self._seed_count = 0
        self._shapes: dict[Any, Any] = {}  # run_forward's shapes_cache: every step has the same shapes

    def loss_and_grad(self, params: Any, rows: Any) -> tuple[float, Any]:
        run, count = self._run(params, rows)
        out = run.value(self.output)
        flat = np.empty(self.layout.size, self.dtype)  # the gradient: the sweep writes what it can straight in
        slots = self.layout.unpack(flat)
        grads = run.gradients(self.output, self.layout.names, self._seed(out.shape, count), seed_nonzero=True,
                              into=slots)
        for name, grad in grads.items():
            slot = slots[name]
            if grad is not slot:
                if np.shape(grad) != slot.shape:  # a gradient of another shape than its parameter's: a bug
                    raise ValueError(f"a gradient of shape {np.shape(grad)} for '{name}' of {slot.shape}")
                slot[...] = grad
        return float(np.add.reduce(out, axis=None) / out.size), flat  # np.mean's own steps

    def _seed(self, shape: Any, count: int) -> Any:
        """d mean / d each row's output, 1 / rows everywhere: made once per batch size and shared by
        the steps (the sweep never writes into a gradient; read-only, so that none can)."""
        if self._seed_array is None or self._seed_array.shape != shape or self._seed_count != count:
            self._seed_array = np.full(shape, 1.0 / count, self.dtype)
            self._seed_array.flags.writeable = False
            self._seed_count = count
        return self._seed_array

    def loss(self, params: Any) -> float:
        run, _ = self._run(params, None)
        return float(np.mean(run.value(self.output)))

    def _run(self, params: Any, rows: Any) -> tuple[Any, int]:
        inputs = dict(self.fixed)
        inputs.update(self.layout.unpack(np.asarray(params, self.dtype)))  # (no copy in the run's precision)
        for name, column in self.data.items():
            inputs[name] = column if rows is None else column[rows]
        try:
            run = run_forward(self.program, inputs, self.batched, shapes_cache=self._shapes, dtype=self.dtype)
        except EvaluationError as error:
            if getattr(error, "row", None) is None and self.data:
                error.row = self._first_failing_row(inputs, rows)
            raise self._in_the_data(error, rows) from None
        if not self._checked:
            self._check_output(run)
            # every step makes and frees blocks this large (the registers, the flat gradient):
            # kept in glibc's heap rather than mapped afresh with page faults each time
            largest = max([8 * self.layout.size] + [np.size(value) * 8 for value in run.values])  # (float64's)
            _let_the_heap_hold(2 * largest)
        return run, (self.rows if rows is None else len(rows)) if self.data else 1

    def _check_output(self, run: Any) -> None:
        shape = run.shapes[run.register(self.output)]
        if shape:
            raise InputError(f"fit minimises a number, and '{self.output}' has shape {shape_text(shape)} per row",
                             source=Source(self.program.source.name, ""),
                             hint="make the loss a number: mean(...), sum(...), mse(p, y) or cross_entropy(z, y)")
        self._checked = True

    def _first_failing_row(self, inputs: Mapping[str, Any], rows: Any) -> int | None:
        """The first row of the batch the program fails on, when an op refused the batch as a
        whole (a label that is no class): found by halving, a few runs on the error's path only."""
        count = self.rows if rows is None else len(rows)

        def fails(stop: int) -> bool:
            part = {name: value[:stop] if name in self.batched else value for name, value in inputs.items()}
            try:
                run_forward(self.program, part, self.batched, shapes_cache=self._shapes, dtype=self.dtype)
            except EvaluationError:
                return True
            return False

        if not fails(count):
            return None
        low, high = 0, count  # rows [0, low) run; rows [0, high) fail
        while high - low > 1:
            middle = (low + high) // 2
            low, high = (low, middle) if fails(middle) else (middle, high)
        return low

    def _in_the_data(self, error: EvaluationError, rows: Any) -> EvaluationError:
        """A failing row of the batch named as its row of the data."""
        row = getattr(error, "row", None)
        if row is not None:
            index = row if rows is None else int(rows[row])
            error.notes.append(f"in {self.row_label(index)}")
        return error

