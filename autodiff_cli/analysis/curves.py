"""The data of ``autodiff plot``: an output and its derivatives along one input, with gaps reported.

``sample_curves`` evaluates the program on an evenly spaced grid of one input (the others
fixed) and returns, per point, the output f, its derivative f' = d output / d input from
reverse mode, and with ``order=2`` the second derivative f''.  Points where the program is
undefined (log of a negative number, division by zero, overflow) are NaN, so a plot leaves
a gap there, and every run of such points is reported with its reason; nothing fails.

Where the points come from is one object, a sampler: the program's output and its gradient at
every x of a column (``along``) and at one point (``point``).  For a scalar program it is one
pass of the vectorized executor (``execute.vectorized``: the op table's vector kernels, forward
and reverse over NumPy columns), so thousands of points cost about as much as a few scalar
evaluations.  For a tensor program, where the varied input is a number or one entry of a tensor
(``W[0, 1]``), it is the tensor interpreter with that input on a batch axis, one row per point
(``execute.interpreter.run_forward``): again one forward and one reverse sweep for the whole column.

f'' is the central difference of the exact f' (reverse mode) at x +- h, with check's step
h = eps**(1/3) * max(1, |x|): its error is about 1e-10 relative where f is smooth.  Where f'
jumps (relu's and abs's kinks) the difference with 4h disagrees and f'' is left out and
reported, instead of drawing a spike of height 1/h.  (``execute.symbolic`` could give f''
exactly, as the derivative of the derivative program; plot does not use it.)

``tangent`` gives the line touching f at one point, from one reverse-mode evaluation there.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import AutodiffError, InputError, Source, variables_hint
from ..execute.columns import entry_column
from ..language.program import (
    INPUT,
    Program,
    input_value,
    missing_inputs,
    missing_inputs_error,
    output_name,
)
from .check import step_size

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "DEFAULT_POINTS", "Curves", "Gap", "Tangent", "check_variable", "describe_gaps", "describe_tangents",
    "sample_curves", "tangent",
]

DEFAULT_POINTS = 1001
# Where the one-sided differences of f' disagree by more than this (relative), f' has a kink.
KINK_TOLERANCE = 1e-2


@dataclass(frozen=True)
class Gap:
    """A run of consecutive grid points where a curve is undefined, and why (from the first)."""

    curve: str  # "f", "df" or "d2f"
    start: float
    end: float
    count: int
    reason: str


@dataclass(frozen=True)
class Tangent:
    """The line y = value + slope * (x - at) touching f at ``at``."""

    at: float
    value: float
    slope: float
    kink: tuple[float, float] | None = None  # the slopes just left and right of a kink at ``at``

    def __call__(self, x: Any) -> Any:
        return self.value + self.slope * (x - self.at)


@dataclass
class Curves:
    """The output ``output`` and its derivatives along ``variable`` (an input, or one entry of a
    tensor input: ``W[0, 1]``), on the grid ``x``.

    ``f``, ``df`` and (with order 2) ``d2f`` are float64 arrays with NaN where undefined;
    ``gaps`` lists every run of undefined points of each curve; ``fixed`` the values of the
    other inputs (given or default: numbers, or arrays in a tensor program); ``tangents`` the
    lines asked for.
    """

    program: Program
    output: str
    variable: str
    x: np.ndarray
    f: np.ndarray
    df: np.ndarray
    d2f: np.ndarray | None
    gaps: list[Gap]
    fixed: dict[str, Any]
    tangents: list[Tangent] = field(default_factory=list)
    # Poles between neighbouring points: (i, where) for a pole between x[i] and x[i + 1], near
    # ``where``.  The curves are drawn broken there, not joined by a line through the pole.
    poles: list[tuple[int, float]] = field(default_factory=list)

    @property
    def order(self) -> int:
        return 1 if self.d2f is None else 2


def check_variable(program: Program, variable: str) -> None:
    """``variable`` must be an input of ``program``: what a plot varies."""
    found = program.variables.get(variable)
    if found is None:
        raise InputError(
            f"--range {variable}: the program has no variable {variable!r}",
            source=Source(program.source.name, ""),
            hint=variables_hint([v.name for v in program.inputs], [variable]),
        )
    if found.kind != INPUT:
        raise InputError(
            f"--range {variable}: {variable!r} is computed by the program, so it cannot be varied",
            found.position, program.source,
            f"'{variable}' is assigned on line {found.position.line}; vary one of its inputs instead",
        )


def sample_curves(
    program: Program,
    values: Mapping[str, float],
    variable: str,
    low: float,
    high: float,
    *,
    points: int = DEFAULT_POINTS,
    order: int = 1,
    output: str | None = None,
    tangents_at: Iterable[float] = (),
) -> Curves:
    """f, f' (and f'') of ``output`` over ``points`` evenly spaced values of ``variable`` in [low, high].

    ``values`` fixes the other inputs (their defaults fill the rest).  Raises an
    AutodiffError for a bad request (an unknown or computed variable, a missing input, a
    tangent where f is undefined); points outside the domain only leave gaps.
    """
    import numpy as np

    if order not in (1, 2):
        raise ValueError(f"order must be 1 or 2, not {order}")
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise ValueError(f"need finite low < high, not {low}, {high}")
    if points < 2:
        raise ValueError(f"need at least 2 points, not {points}")
    sampler = _sampler(program, values, variable, output)
    x = np.linspace(low, high, points)
    column = sampler.along(x)
    gaps = _gaps("f", x, column.failed, column.why)
    # Each derivative is reported where it fails on its own: no derivative where no f goes without saying.
    with np.errstate(all="ignore"):
        infinite = ~column.failed & ~np.isfinite(column.grad)
    gaps += _gaps("df", x, infinite, lambda i: _not_finite("derivative", float(column.grad[i])))
    df_defined = ~column.failed & ~infinite
    df = np.where(df_defined, column.grad, np.nan)
    d2f = None
    if order == 2:
        d2f, left_out, why = _second_derivative(sampler.along, x, df, df_defined)
        gaps += _gaps("d2f", x, left_out, why)
    curves = Curves(program, sampler.output, variable, x, column.value, df, d2f, gaps, sampler.fixed)
    curves.poles = _poles_between(sampler.along, x, column.value, df)
    curves.tangents = [_tangent(sampler, at) for at in tangents_at]
    return curves


def tangent(program: Program, values: Mapping[str, Any], variable: str, at: float,
            output: str | None = None) -> Tangent:
    """The tangent of the output at ``variable = at``: one evaluation, reverse mode.

    An error (EvaluationError, with the program position) where the output is undefined;
    an InputError where it has no finite derivative.
    """
    return _tangent(_sampler(program, values, variable, output), at)


def _tangent(sampler: _Sampler, at: float) -> Tangent:
    variable = sampler.variable
    try:
        value, slope = sampler.point(at)
    except AutodiffError as error:  # the output is undefined there: say which option asked for it
        error.notes.append(f"--tangent-at {variable}={at:g} asks for the tangent at this point; choose one "
                           "where the output is defined")
        raise
    if not (math.isfinite(value) and math.isfinite(slope)):
        raise InputError(
            f"--tangent-at {variable}={at:g}: the slope there is {slope:g}, so there is no tangent line",
            source=Source(sampler.program.source.name, ""),
            hint="choose a point where the output has a finite derivative",
        )
    return Tangent(at, value, slope, _kink_at(sampler, at))


def _kink_at(sampler: _Sampler, at: float) -> tuple[float, float] | None:
    """The slopes just left and right of ``at`` if the output has a kink there (abs at 0), else None.

    Where f is smooth the gap between the two one-sided slopes shrinks with the step (it is
    about 2 h f''); at a kink it stays: so the gap is measured at two steps, h and h / 10.
    """

    def slopes(step: float) -> tuple[float, float] | None:
        found = []
        for x in (at - step, at + step):
            try:
                found.append(sampler.point(x)[1])
            except AutodiffError:
                return None  # an edge of the domain on one side: no tangent question to ask
        return found[0], found[1]

    # A million ulps of ``at``, at least 1e-7: well clear of rounding, and far below any period
    # the curve can show near ``at`` (a step of 1e-7 * |at| spans sin's period at 1e8).
    step = max(1e-7, 1e6 * math.ulp(at))
    wide, narrow = slopes(step), slopes(step / 10)
    if wide is None or narrow is None:
        return None
    gap, narrow_gap = abs(wide[1] - wide[0]), abs(narrow[1] - narrow[0])
    scale = max(1.0, *map(abs, narrow))
    if narrow_gap > KINK_TOLERANCE * scale and narrow_gap > 0.5 * gap:
        return narrow
    return None


def describe_tangents(curves: Curves) -> list[str]:
    """A warning for each tangent asked for at a kink, where no line is tangent to the curve."""
    return [f"--tangent-at {curves.variable}={t.at:g}: {curves.output} has a kink at or next to this point "
            f"(slope {t.kink[0]:g} just left, {t.kink[1]:g} just right), so the curve has no tangent line "
            f"there; the line drawn uses reverse mode's slope, {t.slope:g}" for t in curves.tangents if t.kink]


# --- evaluating along a column -----------------------------------------------------------------


@dataclass
class _Column:
    """The output and its gradient at every point of a column; ``failed`` marks the points where
    the program is undefined (value and gradient NaN there) and ``why(i)`` says why for one."""

    value: np.ndarray
    grad: np.ndarray
    failed: np.ndarray
    why: Callable[[int], str]


Along = Callable[["np.ndarray"], _Column]  # the output and its derivative at every x of a column


class _Sampler:
    """Where a plot's numbers come from: ``along(xs)`` for a column of points, ``point(x)`` for one
    (value and slope, raising the AutodiffError of an undefined point); ``fixed`` is what the
    picture holds fixed (every other input), ``output`` the output's name."""

    program: Program
    variable: str
    output: str
    fixed: dict[str, Any]

    def along(self, xs: np.ndarray) -> _Column:
        raise NotImplementedError

    def point(self, x: float) -> tuple[float, float]:
        raise NotImplementedError


def _sampler(program: Program, values: Mapping[str, Any], variable: str, output: str | None) -> _Sampler:
    """The scalar sampler for a scalar program and input; the tensor one for a tensor program, or
    for one entry of a tensor input (``W[0, 1]``)."""
    from ..execute.columns import split_column
    from ..language.program import runs_as_tensors

    entry = split_column(variable)
    name, index = entry if entry is not None else (variable, ())
    check_variable(program, name)
    output = output_name(program, output)
    if entry is None and not runs_as_tensors(program, values):
        return _ScalarSampler(program, values, variable, output)
    return _TensorSampler(program, values, variable, name, index, output)


class _ScalarSampler(_Sampler):
    """A scalar program: the vectorized executor over a column, the scalar engine at one point."""

    def __init__(self, program: Program, values: Mapping[str, Any], variable: str, output: str) -> None:
        from ..execute.batch_evaluator import BatchEvaluator

        missing = [v for v in missing_inputs(program, values) if v.name != variable]
        if missing:
            raise missing_inputs_error(program, missing)
        self.program, self.variable, self.output = program, variable, output
        # Every other input at its given or default value: what the picture holds fixed.
        self.fixed = {v.name: input_value(v, values) for v in program.inputs if v.name != variable}
        self.evaluator = BatchEvaluator(program, output=output, wrt=[variable])  # planned once, run per column

    def along(self, xs: np.ndarray) -> _Column:
        """One pass of the vectorized executor (execute/vectorized.py) over the column, the other
        inputs broadcast: the op table's vector kernels forward, adjoints back.  A failed point
        (outside an op's domain, or overflowing) is NaN; its reason is the scalar engine's message
        for that point, worked out only when a gap is reported."""
        result = self.evaluator.evaluate({**self.fixed, self.variable: xs}, on_error="nan")

        def why(row: int) -> str:
            return result.error(row).message

        return _Column(result.value, result.grads[self.variable], result.failed, why)

    def point(self, x: float) -> tuple[float, float]:
        from ..execute import evaluate

        evaluation = evaluate(self.program, {**self.fixed, self.variable: x}, self.output)
        return evaluation.root.data, evaluation.nodes[self.variable].grad


class _TensorSampler(_Sampler):
    """A tensor program: the tensor interpreter with the varied input (``name``, or its entry
    ``index``) on a batch axis, one row per point, so a column is one forward and one reverse
    sweep; one point is an unbatched run, whose error is the one ``eval`` gives there."""

    def __init__(self, program: Program, values: Mapping[str, Any], variable: str, name: str,
                 index: tuple[int, ...], output: str) -> None:
        from ..execute.interpreter import input_arrays

        declared = input_arrays(program, values).get(name)  # its shape: given, or its default's
        _check_entry(program, name, index, () if declared is None else declared.shape)
        given = dict(values) if index else {**values, name: 0.0}  # a number varied: its own value is not used
        missing = missing_inputs(program, given)
        if missing:
            raise missing_inputs_error(program, missing)
        self.arrays = input_arrays(program, given)
        self.program, self.variable, self.output = program, variable, output
        self.name, self.index = name, index
        self.fixed = {v.name: self.arrays[v.name] for v in program.inputs if v.name != name}
        self.fixed.update(_other_entries(name, index, self.arrays[name]))
        self.shapes: dict[Any, Any] = {}  # shapes inferred once for every column (run_forward's cache)
        self.depends = program.dependencies(output)
        self._check_number_output()

    def _check_number_output(self) -> None:
        from ..language.shapes import infer, shape_text

        shapes = infer(self.program, {name: array.shape for name, array in self.arrays.items()})
        shape = shapes[self.program.variables[self.output].register]
        if shape:
            raise InputError(f"{self.output} is a tensor of shape {shape_text(shape)}; a plot draws a number "
                             f"along --range {self.variable}", self.program.variables[self.output].position,
                             self.program.source, f"plot sum({self.output}), mean({self.output}) or an entry such "
                             f"as {self.output}[{', '.join('0' * len(shape))}] (--output names another variable)")

    def _inputs(self, varied: Any, batched: bool) -> dict[str, Any]:
        import numpy as np

        if not self.index:
            return {**self.arrays, self.name: np.asarray(varied, dtype=float)}
        base = self.arrays[self.name]
        if not batched:
            value = np.array(base, dtype=float)
            value[self.index] = varied
            return {**self.arrays, self.name: value}
        stacked = np.repeat(base[None], len(varied), axis=0)
        stacked[(slice(None), *self.index)] = varied
        return {**self.arrays, self.name: stacked}

    def along(self, xs: np.ndarray) -> _Column:
        import numpy as np

        from ..execute.interpreter import run_forward

        try:
            run = run_forward(self.program, self._inputs(np.asarray(xs, dtype=float), True),
                              batched=frozenset([self.name]), check=False, shapes_cache=self.shapes)
        except AutodiffError:  # an op that refuses some point outright (a label that is no class): one by one
            return self._point_by_point(xs)
        count = len(xs)
        out = run.register(self.output)
        with np.errstate(all="ignore"):
            value = np.array(np.broadcast_to(run.values[out], (count,)), dtype=float)
            grad = run.gradients(self.output, [self.name])[self.name][(slice(None), *self.index)]
            grad = np.array(np.broadcast_to(grad, (count,)), dtype=float)
            failed = np.zeros(count, dtype=bool)
            for register in range(out + 1):  # a point fails where any value the output reads is not finite
                if self.depends[register] and run.leads[register]:
                    rows = np.reshape(run.values[register], (count, -1))
                    failed |= ~np.isfinite(rows).all(axis=1)
        value[failed] = np.nan
        grad[failed] = np.nan
        return _Column(value, grad, failed, lambda i: self._why(float(xs[i])))

    def _point_by_point(self, xs: np.ndarray) -> _Column:
        import numpy as np

        value, grad = np.full(len(xs), np.nan), np.full(len(xs), np.nan)
        failed = np.zeros(len(xs), dtype=bool)
        reasons: dict[int, str] = {}
        for i, x in enumerate(xs):
            try:
                value[i], grad[i] = self.point(float(x))
            except AutodiffError as error:
                failed[i], reasons[i] = True, error.message
        return _Column(value, grad, failed, reasons.__getitem__)

    def point(self, x: float) -> tuple[float, float]:
        import numpy as np

        from ..execute.interpreter import run_forward

        run = run_forward(self.program, self._inputs(x, False))
        with np.errstate(all="ignore"):
            slope = run.gradients(self.output, [self.name])[self.name][self.index]
        return float(run.value(self.output)), float(slope)

    def _why(self, x: float) -> str:
        try:
            self.point(x)
        except AutodiffError as error:
            return error.message
        return "the output is not finite here"  # the batched run saw what one point does not


def _check_entry(program: Program, name: str, index: tuple[int, ...], shape: tuple[int, ...]) -> None:
    """``--range W[i, j]`` names an entry that ``W``'s value has; a tensor input is varied one entry at
    a time, a number as itself."""
    variable = program.variables[name]
    where = variable.position, program.source
    shape_text = "[" + ", ".join(map(str, shape)) + "]"
    written = entry_column(name, index)
    if not index and shape:
        first = f"{name}[{', '.join('0' * len(shape))}]"
        raise InputError(f"--range {name}: {name} is a tensor of shape {shape_text}; a plot varies one number",
                         *where, f"vary one entry, e.g. --range {first}=-1:1 (the others keep their values)")
    if index and not shape:
        raise InputError(f"--range {written}: {name} is a number, with no entries to index",
                         *where, f"vary it as a whole: --range {name}=LOW:HIGH")
    if len(index) != len(shape):
        axes = f"{len(shape)} ax{'is' if len(shape) == 1 else 'es'}"
        raise InputError(f"--range {written}: {name} has {axes} (shape {shape_text}), and {written} gives "
                         f"{len(index)} ind{'ex' if len(index) == 1 else 'ices'}", *where,
                         f"name one entry with {len(shape)} ind{'ex' if len(shape) == 1 else 'ices'}, e.g. "
                         f"{name}[{', '.join('0' * len(shape))}]")
    for axis, (i, size) in enumerate(zip(index, shape)):
        if i >= size:
            raise InputError(f"--range {written}: index {i} is out of range for axis {axis} of {name}, of size {size} "
                             f"(shape {shape_text})", *where,
                             f"indices of axis {axis} run from 0 to {size - 1}")


def _second_derivative(
    along: Along, x: np.ndarray, df: np.ndarray, df_defined: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, Callable[[int], str]]:
    """f'' by central differences of the exact f', where f' is defined and smooth.

    The difference is taken with check's step h and with 4h.  Where f' is smooth the two agree
    to about h**2; where f' jumps within 4h of x (a kink of f: relu, abs, also one that falls
    between h and 4h) a difference grows like 1/h and they disagree, and f'' is left out.  So
    are points whose one-sided differences disagree.  Returns f'' (NaN where left out), the
    points where f' is defined but f'' is left out, and why for one of them.
    """
    import numpy as np

    h = step_size(1.0) * np.maximum(1.0, np.abs(x))  # check's step_size, for a column
    right, left, right_wide, left_wide = (along(x + s * h) for s in (1, -1, 4, -4))
    with np.errstate(all="ignore"):
        d2f = (right.grad - left.grad) / (2 * h)
        wide = (right_wide.grad - left_wide.grad) / (8 * h)
        slope_right, slope_left = (right.grad - df) / h, (df - left.grad) / h
        one_sided = np.abs(slope_right - slope_left) / np.maximum.reduce(
            [np.ones_like(h), np.abs(slope_left), np.abs(slope_right)])
        two_steps = np.abs(wide - d2f) / np.maximum.reduce([np.ones_like(h), np.abs(wide), np.abs(d2f)])
        neighbours = (right, left, right_wide, left_wide)
        outside = df_defined & np.logical_or.reduce([column.failed for column in neighbours])
        infinite = df_defined & ~outside & ~(np.isfinite(d2f) & np.isfinite(wide))
        kink = df_defined & ~outside & ~infinite & (np.maximum(one_sided, two_steps) > KINK_TOLERANCE)
    left_out = outside | infinite | kink

    def why(i: int) -> str:
        if outside[i]:
            reason = next(column.why(i) for column in neighbours if column.failed[i])
            return f"the derivative is undefined next to this point ({reason})"
        if infinite[i]:
            return "the derivative is not finite next to this point"
        return "the derivative has a kink or a jump here, so no second derivative"

    return np.where(df_defined & ~left_out, d2f, np.nan), left_out, why


# A pole is confirmed where, next to the place the derivative points at, |f| is this many times
# larger than at the two neighbouring points (or f is undefined there).
POLE_GROWTH = 100.0


def _poles_between(along: Along, x: np.ndarray, f: np.ndarray, df: np.ndarray) -> list[tuple[int, float]]:
    """The poles that fall between two neighbouring points, where a line would join the two
    branches (1/x sampled at +-0.001: -999 to 999).  Near a pole of order p at x0, f'/f is
    -p/(x - x0), so f/f' at each neighbour says how far off a pole would be: where |f| grows
    toward the inside from both ends and those distances meet within the step, a pole is
    likely.  A steep but continuous slope (tanh(1000*x)) does not grow toward the inside; a
    narrow peak (exp(-1e6*x**2)) does, so each candidate is refined: f is evaluated at the
    place and just either side of it, and only where |f| there is undefined or far larger than
    at the neighbours is it a pole."""
    import numpy as np

    with np.errstate(all="ignore"):
        left, right = f[:-1], f[1:]
        defined = (np.isfinite(left) & np.isfinite(right) & np.isfinite(df[:-1]) & np.isfinite(df[1:])
                   & (left != 0) & (right != 0))
        to_right, to_left = df[:-1] / left, df[1:] / right  # > 0: |f| grows to the right; < 0: to the left
        step = np.diff(x)
        reach_left, reach_right = 1.0 / to_right, -1.0 / to_left
        candidate = defined & (to_right > 0) & (to_left < 0) & (reach_left + reach_right <= 1.5 * step)
    indices = np.flatnonzero(candidate)
    if not indices.size:
        return []
    # The place each end points at, weighted by the distances (they agree for a simple pole).
    where = x[indices] + step[indices] * reach_left[indices] / (reach_left[indices] + reach_right[indices])
    offsets = (0.0, -1e-3, 1e-3)
    probes = np.concatenate([np.clip(where + o * step[indices], x[indices], x[indices + 1]) for o in offsets])
    column = along(probes)
    with np.errstate(all="ignore"):
        size = np.abs(column.value).reshape(len(offsets), -1)
        undefined = (column.failed | ~np.isfinite(column.value)).reshape(len(offsets), -1).any(axis=0)
        ends = np.maximum(np.abs(left[indices]), np.abs(right[indices]))
        grows = np.nanmax(np.where(np.isfinite(size), size, np.inf), axis=0) >= POLE_GROWTH * ends
    return [(int(i), float(w)) for i, w, pole in zip(indices, where, undefined | grows) if pole]


def _not_finite(what: str, value: float) -> str:
    return f"the {what} is {value:g}" if not math.isnan(value) else f"the {what} is not a number"


def _gaps(curve: str, x: np.ndarray, mask: np.ndarray, why: Callable[[int], str]) -> list[Gap]:
    """Every run of consecutive points where ``mask`` is true, with the reason of its first point."""
    import numpy as np

    edges = np.diff(np.concatenate(([0], mask.astype(np.int8), [0])))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    return [Gap(curve, float(x[start]), float(x[end - 1]), int(end - start), why(int(start)))
            for start, end in zip(starts, ends)]


def describe_gaps(curves: Curves, shown: int = 5) -> list[str]:
    """One warning line per gap, for the CLI: where, how many points, and why."""
    names = {"f": curves.output, "df": f"d{curves.output}/d{curves.variable}",
             "d2f": f"d\u00b2{curves.output}/d{curves.variable}\u00b2"}
    lines = []
    total = len(curves.x)
    for gap in curves.gaps[:shown]:
        where = (f"{curves.variable} = {gap.start:.6g}" if gap.count == 1
                 else f"{curves.variable} from {gap.start:.6g} to {gap.end:.6g}")
        points = "1 point" if gap.count == 1 else f"{gap.count:,} of {total:,} points"
        lines.append(f"{names[gap.curve]} is undefined at {where} ({points}): {gap.reason}; "
                     "the curve has a gap")
    if len(curves.gaps) > shown:
        lines.append(f"... and {len(curves.gaps) - shown:,} more gaps")
    for index, where in curves.poles[:shown]:
        low, high = curves.x[index], curves.x[index + 1]
        lines.append(f"{curves.output} has a pole between {curves.variable} = {low:.6g} and {high:.6g} "
                     f"(near {where:.6g}), between two points: {curves.f[index]:.4g} and {curves.f[index + 1]:.4g} "
                     "are not joined, the curves break there")
    if len(curves.poles) > shown:
        lines.append(f"... and {len(curves.poles) - shown:,} more poles")
    return lines


_ENTRIES_NAMED = 6  # the other entries of a varied tensor named one by one up to this many


def _other_entries(name: str, index: tuple[int, ...], array: Any) -> dict[str, Any]:
    """What stays fixed of the tensor one entry of which is varied: its other entries, by name
    when there are few (``x[0] = 3``), else the tensor (shown by its shape)."""
    import numpy as np

    if not index:
        return {}
    if array.size - 1 > _ENTRIES_NAMED:
        return {f"the other entries of {name}": array}
    return {entry_column(name, other): float(array[other])
            for other in np.ndindex(array.shape) if other != index}

