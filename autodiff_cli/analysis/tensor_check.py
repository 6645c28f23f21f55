"""Gradient check of a tensor program: along random directions, and at sampled entries.

A tensor program may have thousands of input entries, and a finite difference costs a few
runs of the whole program per entry, so it is checked two ways that cost the same at any
size (the scalar check's judgement, ``analysis.check._check_one``, decides each):

* **directions**: for a random direction v over every input at once (Gaussian, of unit
  length, each entry scaled by max(1, |x|)), reverse mode predicts grad . v, forward mode
  computes the JVP along v, and the finite difference is taken of t -> f(x + t v);
* **entries**: up to ``entries`` entries of the inputs, drawn at random (every entry when
  there are that few), each checked as one scalar input: its gradient entry, the JVP along
  it, and the finite difference of moving it alone.  They name the entry that is wrong
  where a direction only says that something is.

The draws come from ``numpy.random.default_rng(seed)``: the same seed, the same check.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from ..engine.registry import is_exact
from ..engine.tensor_ops import TENSOR_OPS
from ..errors import InputError, Source
from ..execute.interpreter import TensorRun, input_arrays, run_forward
from ..language.program import CONST, INPUT, Program, missing_inputs, missing_inputs_error, output_name
from .check import DEFAULT_ATOL, DEFAULT_RTOL, DIRECTION, CheckResult, InputCheck, _check_one

__all__ = ["DEFAULT_ENTRIES", "check_tensors"]

DEFAULT_ENTRIES = 16
_EPS = sys.float_info.epsilon


def check_tensors(program: Program, given: Mapping[str, Any], output: str | None = None, *, directions: int = 2,
                  entries: int = DEFAULT_ENTRIES, seed: int = 0, rtol: float = DEFAULT_RTOL,
                  atol: float = DEFAULT_ATOL, progress: Callable[[int, int], None] | None = None) -> CheckResult:
    """The checks of ``output`` (a number) along ``directions`` random directions and at
    ``entries`` sampled input entries; their verdicts are the scalar check's."""
    missing = missing_inputs(program, given)
    if missing:
        raise missing_inputs_error(program, missing)
    output = output_name(program, output)
    point = input_arrays(program, given, seed)
    run = run_forward(program, point)
    f0 = run.value(output)
    if np.ndim(f0):
        raise InputError(f"check takes a number output, and '{output}' has shape {list(np.shape(f0))}",
                         source=Source(program.source.name, ""),
                         hint=f"check sum({output}), mean({output}) or one entry such as {output}[0]")
    labels = _labels(run)
    moving = {name: value for name, value in point.items() if name not in labels}
    names = list(moving)
    grads = run.gradients(output, names)
    rounding = _rounding_error(run, output)
    f0 = float(f0)

    def value_at(moved: Mapping[str, Any]) -> float:
        inputs = dict(point)
        inputs.update(moved)
        return float(run_forward(program, inputs).value(output))

    generator = np.random.default_rng(seed)
    picked = _sample_entries(moving, entries, generator)
    total = directions + len(picked)
    checks: list[InputCheck] = []
    for k in range(directions if names else 0):
        direction = _direction(moving, generator)
        reverse = math.fsum(float(np.sum(grads[name] * v)) for name, v in direction.items())
        forward = float(run.jvp(output, direction))

        def along(_name: str, t: float, direction: dict[str, Any] = direction) -> float:
            return value_at({name: point[name] + t * v for name, v in direction.items()})

        check = _check_one(f"{DIRECTION}{k + 1}", 0.0, reverse, forward, f0, along, rtol, atol, rounding)
        checks.append(replace(check, value=None))  # a direction has no input value of its own (shown "-")
        _tell(progress, len(checks), total)
    for name, index in picked:
        label = f"{name}[{', '.join(map(str, index))}]" if index else name
        x = float(point[name][index])
        basis = np.zeros_like(point[name])
        basis[index] = 1.0
        reverse = float(grads[name][index])
        forward = float(run.jvp(output, {name: basis}))

        def moved(_label: str, value: float, name: str = name, index: tuple[int, ...] = index) -> float:
            array = np.array(point[name], dtype=float)
            array[index] = value
            return value_at({name: array})

        checks.append(_check_one(label, x, reverse, forward, f0, moved, rtol, atol, rounding))
        _tell(progress, len(checks), total)
    count = sum(int(np.size(value)) for value in moving.values())
    notes = [f"checked along {directions} random direction{'s' if directions != 1 else ''} (seed {seed}) and at "
             f"{len(picked)} of the {count} input entr{'y' if count == 1 else 'ies'}"]
    if labels:
        notes.append(f"not moved: {', '.join(sorted(labels))}, read as class labels or indices (whole numbers, "
                     "with no derivative)")
    return CheckResult(output, f0, rtol, atol, checks, mode="inputs", seed=seed, input_count=count, notes=notes)


def _labels(run: TensorRun) -> set[str]:
    """The inputs given to cross_entropy as its labels, or to an op that reads them as indices
    (its entry's ``indices``): whole numbers, which have no derivative there and which a finite
    difference cannot move (a label or an index must stay a whole number)."""
    inputs = {variable.register: variable.name for variable in run.program.inputs}
    return {inputs[second] for op, _, second, _, _ in run.rows
            if (op == "cross_entropy" or 1 in getattr(TENSOR_OPS.get(op), "indices", ())) and second in inputs}


def _tell(progress: Callable[[int, int], None] | None, done: int, total: int) -> None:
    if progress is not None:
        progress(done, total)


def _direction(point: Mapping[str, Any], generator: Any) -> dict[str, Any]:
    draws = {name: generator.standard_normal(np.shape(value)) for name, value in point.items()}
    norm = math.sqrt(sum(float(np.sum(d * d)) for d in draws.values())) or 1.0
    return {name: d / norm * np.maximum(1.0, np.abs(point[name])) for name, d in draws.items()}


def _sample_entries(point: Mapping[str, Any], entries: int, generator: Any) -> list[tuple[str, tuple[int, ...]]]:
    """``entries`` (name, index) pairs drawn without repeats over every input entry, in program
    order; all of them when there are no more."""
    every = [(name, index) for name, value in point.items() for index in np.ndindex(np.shape(value))]
    if len(every) <= entries:
        return every
    chosen = sorted(generator.choice(len(every), size=entries, replace=False).tolist())
    return [every[i] for i in chosen]


def _rounding_error(run: TensorRun, output: str) -> float:
    """About how far the output may be from its exact value by rounding: each computed entry is
    off by up to eps * |value| (times the number of terms an op adds up), felt at the output
    with weight |its adjoint| (first-order error analysis, as the scalar check does)."""
    adjoints = run.adjoints(output)
    total = _EPS * abs(float(run.value(output)))
    for register, adjoint in adjoints.items():
        op = run.rows[register][0]
        if op in (INPUT, CONST) or is_exact(op):  # a given value, or an op that adds no rounding
            continue
        value = run.values[register]
        terms = max(1, max((int(np.size(run.values[r])) for r in run.rows[register][1:3] if r >= 0), default=1)
                    // max(1, int(np.size(value))))
        with np.errstate(all="ignore"):
            contribution = float(np.sum(np.abs(value) * np.abs(adjoint)))
        if math.isfinite(contribution):
            total += _EPS * terms * contribution
    return total if math.isfinite(total) else math.inf

