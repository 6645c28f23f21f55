"""Gradient check: reverse mode, forward mode and a finite difference, for every input.

One entry, ``check(program, values)``, for every program: an all-scalar float64 program is
checked on the compiled engine's evaluation, input by input (``check_evaluation``); a tensor
program, or any program in float32, on the NumPy interpreter, along random directions and at
sampled input entries (``check_arrays``, at the end of this module).  Each input, entry or
direction is judged the same way, by the finite difference described here.

For each input x the program is evaluated again at x +- h (all other inputs fixed)
and the derivative is estimated from central differences at a sequence of steps
h0, h0/2, h0/4, ... combined by Richardson extrapolation (Ridders' method): each
halving of the step lets the leading h**2, h**4, ... error terms cancel, and the
disagreement between neighbouring entries of the extrapolation table estimates the
error of each entry.  A rounding floor is added to that estimate: the program's own
rounding error at x, found by first-order error analysis (each computed value is off
by up to eps * |value|, felt at the output with weight |its gradient|), divided by the
step.  The result is a derivative *with an error bar*, so the check knows when its own
number cannot be trusted.

The first step is h0 = eps**(1/3) * max(1, |x|) (larger when the program's rounding
error would swamp it), cut tenfold while x +- h0 leaves the domain or overflows.  A
fixed step of that size fails for large |x|: at x = 1e6 it is 6.06, nearly a period of
sin; the halving sequence reaches steps where the output is smooth.

Verdicts, per input (``InputCheck.verdict``):

* ``ok``: reverse and forward mode agree with the finite difference,
  |analytic - numerical| <= atol + rtol * |numerical| (``torch.autograd.gradcheck``'s
  test and defaults, atol = 1e-5 and rtol = 1e-3), and there is no kink;
* ``fail``: an analytic gradient is infinite or NaN; forward and reverse mode disagree;
  the disagreement with the finite difference exceeds the tolerance by more than the
  difference's own error bar; the output jumps at x; or there is a kink at x: one-sided
  slopes whose gap does not shrink with the step (relu or abs at 0), reported even when
  the central difference happens to agree (abs at 0, whose derivative 0 is a convention);
* ``inconclusive``: the finite difference cannot decide: no step keeps both points in the
  domain, or the difference's error bar is larger than the tolerance at every step tried.
  The reason says which; the gradient is neither confirmed nor accused.

A point near a kink but not at it (relu at x = 1e-7) is differentiable, and passes once
the steps are smaller than the distance to the kink (down to about 2e-10 * max(1, |x|)).
The renderers are in ``render/check.py``.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, NamedTuple, TypeVar

from ..engine.forward import tangent_along, tangent_at_root
from ..engine.graph import Tape, topological_order
from ..engine.ops import OPS
from ..engine.registry import is_exact
from ..engine.tensor_ops import TENSOR_OPS
from ..errors import AutodiffError, InputError, Source
from ..execute.floats import FloatPoint
from ..execute.scalar import Evaluation
from ..language.program import CONST, INPUT, Program, runs_as_tensors
from .precision import EPSILON, step_for, unresolved_warning

__all__ = [
    "DEFAULT_ATOL",
    "DEFAULT_DIRECTIONS",
    "DEFAULT_ENTRIES",
    "DEFAULT_RTOL",
    "FAIL",
    "FLOAT64",
    "INCONCLUSIVE",
    "OK",
    "CheckResult",
    "InputCheck",
    "Precision",
    "check",
    "check_arrays",
    "check_directions",
    "check_evaluation",
    "check_gradients",
    "failure_messages",
    "inconclusive_messages",
    "label_inputs",
    "precision_of",
    "rounding_error",
    "step_size",
]

DEFAULT_RTOL = 1e-3
DEFAULT_ATOL = 1e-5
DEFAULT_ENTRIES = 16  # tensor inputs: how many entries are checked one by one
DIRECTION = "direction "  # the fast check's rows are named "direction 1", "direction 2", ...

OK, FAIL, INCONCLUSIVE = "ok", "fail", "inconclusive"

_EPS = sys.float_info.epsilon
_CUBE_ROOT_EPS = _EPS ** (1.0 / 3.0)
# How many times the first step may be cut tenfold to keep x +- h inside the domain.
_MAX_SHRINKS = 8
# The sweep's smallest step: eps**(1/3) / 2**15 (about 2e-10 in float64), or a few units in
# the last place of x when that is larger.  The derivative is local: however large |x| is, the
# output may vary on a scale of 1 (sin at x = 1e12), and only small steps see that.
_ULPS = 8.0
# Rows of the extrapolation table: at most this many steps, each half the last or less.
_MAX_ROWS = 24
# An estimate is good enough to decide with when its error bar is below this share of the tolerance.
_PRECISION_SHARE = 0.1
# A disagreement is a failure only when it exceeds the tolerance by this many error bars.
_CONFIDENCE = 3.0
# The difference of two rounded outputs is off by up to twice their rounding error; a margin on that.
_ROUNDING_SAFETY = 3.0
# A jump is claimed only when it persists down to a step this small.
_JUMP_RESOLUTION = 1e-6
# The output is mostly rounding noise when its rounding error exceeds this share of its size.
_NOISE_SHARE = 0.01
# Operations whose result is exact (no rounding): a leaf, and the op table's exact ops (a copy,
# a sign change, relu, abs, sign, step).
_EXACT_OPS = frozenset(("", *(op.name for op in OPS.values() if op.exact)))


def step_size(x: float) -> float:
    """The first finite-difference step for an input at x: eps**(1/3) * max(1, |x|)."""
    return _CUBE_ROOT_EPS * max(1.0, abs(x))


class Precision(NamedTuple):
    """The floats a check runs in: their name (``analysis.precision``), their eps, how a number
    is stored in them (the point a step really reaches) and the gap between floats near it."""

    name: str
    eps: float
    stored: Callable[[float], float]
    ulp: Callable[[float], float]


FLOAT64 = Precision("float64", _EPS, float, math.ulp)


def _float32() -> Precision:
    import numpy as np

    def stored(x: float) -> float:
        with np.errstate(over="ignore"):  # beyond float32's range: infinite, as the program would see it
            return float(np.float32(x))

    def ulp(x: float) -> float:
        with np.errstate(over="ignore"):
            return float(np.spacing(np.abs(np.float32(x))))

    return Precision("float32", EPSILON["float32"], stored, ulp)


def precision_of(dtype: str | None) -> Precision:
    """The ``Precision`` named by ``dtype`` (None: float64); a ValueError names the choices."""
    if dtype is None or dtype == "float64":
        return FLOAT64
    if dtype == "float32":
        return _float32()
    raise ValueError(f"a check runs in {' or '.join(EPSILON)}, not {dtype!r}")


def _starting_point(
    evaluation: Evaluation, rtol: float, atol: float, caller: str
) -> tuple[Program, str, dict[str, float], float, float]:
    """What both checks start from: the program, the output, every input's value, the output's
    value and its rounding error; a ValueError for an evaluation without gradients."""
    if evaluation.root.grad != 1.0:
        raise ValueError(f"{caller} needs an evaluation with gradients: evaluate(..., backward=True)")
    if not (rtol >= 0.0 and atol >= 0.0):
        raise ValueError("rtol and atol must be non-negative numbers")
    program = evaluation.program
    point = {variable.name: evaluation.nodes[variable.name].data for variable in program.inputs}
    return program, evaluation.output, point, evaluation.root.data, rounding_error(evaluation)


def rounding_error(evaluation: Evaluation) -> float:
    """About how far the output's computed value may be from its exact value, by rounding.

    First-order error analysis over the graph: every computed value is rounded by up to
    eps * |value|, and reaches the output multiplied by d output / d value (its
    ``grad``).  Inputs and constants are exact; so are copies, negations, relu, abs,
    sign and step.  Needs an evaluation with gradients.
    """
    # eps first: near the top of the float range the sum of |value * grad| itself overflows.
    # A NaN or infinite gradient (sqrt at 0) says nothing about rounding: it is left out.
    total = _EPS * abs(evaluation.root.data)
    isfinite = math.isfinite
    for node in topological_order(evaluation.root):
        if node._op not in _EXACT_OPS and isfinite(node.grad):
            total += _EPS * abs(node.data) * abs(node.grad)
    return total if isfinite(total) else math.inf


@dataclass(frozen=True)
class InputCheck:
    """The three derivatives of the output with respect to one input, and the verdict.

    ``finite_difference`` is the extrapolated estimate (None when the program cannot be
    evaluated at any x +- h) and ``fd_error`` its estimated error.  ``step`` is the
    smallest step that estimate used.  ``abs_error`` and ``rel_error`` compare the
    analytic gradients with the finite difference (the larger of the two, should forward
    mode differ).  ``verdict`` is ``ok``, ``fail`` or ``inconclusive``; ``reason`` says
    why for the last two (None for ``ok``).
    """

    name: str
    value: float
    reverse: float
    forward: float
    finite_difference: float | None
    step: float
    abs_error: float | None
    rel_error: float | None
    ok: bool
    reason: str | None = None
    verdict: str = OK
    fd_error: float | None = None


@dataclass(frozen=True)
class CheckResult:
    """The checks of one output: one per input (``mode`` "inputs"), or one per random
    direction (``mode`` "directions", the fast mode, with the ``seed`` of the directions).
    ``notes`` say how the result was reached (a fast check that fell back to the full one)."""

    output: str
    value: float
    rtol: float
    atol: float
    inputs: list[InputCheck]
    warnings: list[str] = field(default_factory=list)
    mode: str = "inputs"
    seed: int | None = None
    input_count: int | None = None
    notes: list[str] = field(default_factory=list)
    dtype: str = "float64"  # the precision the program ran in, and its finite differences
    run: Any = field(default=None, repr=False, compare=False)  # the run checked (an Evaluation or a TensorRun)

    @property
    def ok(self) -> bool:
        return all(check.ok for check in self.inputs)

    @property
    def failures(self) -> list[InputCheck]:
        """The inputs whose gradient is shown wrong (or has no derivative): verdict ``fail``."""
        return [check for check in self.inputs if check.verdict == FAIL]

    @property
    def inconclusive(self) -> list[InputCheck]:
        """The inputs the finite difference could not decide: verdict ``inconclusive``."""
        return [check for check in self.inputs if check.verdict == INCONCLUSIVE]

    @property
    def verdict(self) -> str:
        """``fail`` if any input fails, else ``inconclusive`` if any is, else ``ok``."""
        return FAIL if self.failures else INCONCLUSIVE if self.inconclusive else OK


def _agree(analytic: float, numerical: float, rtol: float, atol: float) -> bool:
    return math.isfinite(numerical) and abs(analytic - numerical) <= atol + rtol * abs(numerical)


def _relative(error: float, reference: float) -> float:
    if math.isnan(error):
        return math.nan
    if error == 0.0:
        return 0.0
    return error / abs(reference) if reference else math.inf


def _fmt(x: float) -> str:
    return f"{x:.6g}"


def _fmt_pair(x: float, y: float) -> tuple[str, str]:
    """Two numbers to 6 digits, or in full where 6 digits would make them look equal."""
    short = _fmt(x), _fmt(y)
    return short if short[0] != short[1] or x == y else (repr(float(x)), repr(float(y)))


Function = Callable[[str, float], float]
T = TypeVar("T")
# A check written as a generator: it yields the points (values of the input being moved)
# whose outputs it needs, and is sent back one output per point, or the AutodiffError
# raised there; it returns its result.
Steps = Generator[tuple[float, ...], tuple[Any, ...], T]


# From this many inputs on, the points of all inputs are computed together by the
# vectorized executor (NumPy) rather than one by one on floats.
BATCH_INPUTS = 64
# The most input values a batch of points may hold (rows x moved inputs): about 32 MB.
_BATCH_CELLS = 4_000_000


def check_gradients(
    evaluation: Evaluation, *, rtol: float = DEFAULT_RTOL, atol: float = DEFAULT_ATOL,
    progress: Callable[[int, int], None] | None = None, batch: bool | None = None,
) -> CheckResult:
    """Check d output / d input for every input of an evaluation made with ``backward=True``.

    The program is re-evaluated (values only) at x +- h for a few steps h per input:
    four evaluations when the first two steps settle it, up to 2 * 24 when they do not.
    With ``batch`` (the default from ``BATCH_INPUTS`` inputs on, when NumPy is there) the
    points that every input needs next are computed together, a few rounds of one
    vectorized evaluation each; otherwise one by one, recomputing only the instructions
    that depend on the moved input.  ``progress(done, total)`` is called as inputs finish.
    """
    program, output, point, f0, rounding = _starting_point(evaluation, rtol, atol, "check_gradients")
    tape = Tape.of(evaluation.root)
    seeds = [tape.index.get(evaluation.nodes[name]) for name in point]
    if batch is None:
        batch = len(point) >= BATCH_INPUTS and _numpy_available()
    if batch:
        forwards = dict(zip(point, forward_tangents(tape, seeds)))
    else:
        forwards = {name: 0.0 if seed is None else tangent_at_root(tape, seed, textbook=False)
                    for name, seed in zip(point, seeds)}

    def steps(name: str, x: float, base: float) -> Steps[InputCheck]:
        reverse = evaluation.nodes[name].grad
        return _check_steps(name, x, reverse, forwards[name], base, rtol, atol, rounding)

    if batch and point:
        together = _Together(evaluation, point)
        checks = together.answer({name: steps(name, x, together.base) for name, x in point.items()}, progress)
    else:
        # Values only, recomputing just the instructions that depend on the input being moved;
        # bit for bit what evaluate() gives, errors included.
        floats = FloatPoint(program, point, output)
        checks = []
        for done, (name, x) in enumerate(point.items()):
            checks.append(_answer_one_by_one(steps(name, x, f0), partial(floats.output_with, name)))
            if progress is not None:
                progress(done + 1, len(point))
    return CheckResult(output, f0, rtol, atol, checks, list(evaluation.warnings))


# Seeds per vectorized forward pass: the tangents of a chunk of seeds take nodes x seeds floats.
_FORWARD_SEEDS = 256


def forward_tangents(tape: Tape, seeds: list[int | None]) -> list[float]:
    """Forward mode for many seeds at once with NumPy: d root / d node for each seed node.

    Each seed gets a column; each node's tangent is a row of columns, computed front to
    back with exactly the scalar pass's operations for every column (``tangent_at_root``):
    a node's tangent is the sum of d node / d operand * tangent(operand) over the operands
    the seed reaches, and nothing from an operand it does not reach (so an infinite local
    derivative off the seed's paths makes no NaN).  A seed of None (a node the root does
    not depend on) gets 0.  Tangents are dropped after their last use.
    """
    import numpy as np

    results = [0.0] * len(seeds)
    a_of, da_of, b_of, db_of = tape.a, tape.da, tape.b, tape.db
    size = tape.size
    last_use = list(range(size))
    for i in range(size):
        for operand in (a_of[i], b_of[i]):
            if operand >= 0:
                last_use[operand] = i
    valid = [(k, seed) for k, seed in enumerate(seeds) if seed is not None]
    with np.errstate(all="ignore"):
        for start in range(0, len(valid), _FORWARD_SEEDS):
            chunk = valid[start:start + _FORWARD_SEEDS]
            width = len(chunk)
            column_of = {seed: column for column, (_, seed) in enumerate(chunk)}
            tangent: dict[int, Any] = {}
            reached: dict[int, Any] = {}
            for i in range(min(column_of), size):
                column = column_of.get(i)
                if column is not None:
                    tangent[i] = np.zeros(width)
                    tangent[i][column] = 1.0
                    reached[i] = np.zeros(width, dtype=bool)
                    reached[i][column] = True
                    continue
                a, b = a_of[i], b_of[i]
                ra = reached.get(a) if a >= 0 else None
                rb = reached.get(b) if b >= 0 else None
                if ra is not None:
                    part_a = da_of[i] * tangent[a]
                if rb is not None:
                    part_b = db_of[i] * tangent[b]
                if ra is not None and rb is not None:
                    total = np.where(ra & rb, part_a + part_b, np.where(ra, part_a, part_b))
                    either = ra | rb
                elif ra is not None:
                    total, either = part_a, ra
                elif rb is not None:
                    total, either = part_b, rb
                else:
                    continue
                tangent[i] = np.where(either, total, 0.0)
                reached[i] = either
                for operand in (a, b):
                    if operand >= 0 and last_use[operand] == i and operand != size - 1:
                        tangent.pop(operand, None)
                        reached.pop(operand, None)
            root = tangent.get(size - 1)
            for column, (k, _) in enumerate(chunk):
                results[k] = 0.0 if root is None else float(root[column])
    return results


def _numpy_available() -> bool:
    from importlib.util import find_spec

    return find_spec("numpy") is not None


class _Together:
    """Answers the point requests of every input's check at once, by the vectorized executor.

    Each round collects the points every unfinished check asks for next (x +- h of one
    input, the others at the base point) and evaluates them as the rows of one batch: a
    column for each input moved in the batch, one number for every other.  The outputs
    are NumPy's (a few ulps from the C library's in exp, log, sin, cos, tanh and powers,
    which the error bar's rounding floor covers), so the base output is taken from the
    batch too, for the slopes of the kink test to compare like with like.  A row where
    the program fails is answered with the scalar engine's error for that point.
    """

    def __init__(self, evaluation: Evaluation, point: dict[str, float]) -> None:
        from ..execute.vectorized import BatchEvaluator

        self.point = point
        self.output = evaluation.output
        self.evaluator = BatchEvaluator(evaluation.program, output=evaluation.output, wrt=())
        name = next(iter(point))
        self.base = self._evaluate([(name, point[name])])[0]
        if isinstance(self.base, AutodiffError):
            raise self.base

    def answer(self, checks: dict[str, Steps[InputCheck]],
               progress: Callable[[int, int], None] | None) -> list[InputCheck]:
        results: dict[str, InputCheck] = {}
        pending: dict[str, tuple[float, ...]] = {}

        def advance(name: str, reply: tuple[Any, ...] | None) -> None:
            try:
                request = next(checks[name]) if reply is None else checks[name].send(reply)
            except StopIteration as done:
                results[name] = done.value
                if progress is not None:
                    progress(len(results), len(checks))
            else:
                pending[name] = request

        for name in checks:
            advance(name, None)
        while pending:
            asked = list(pending.items())
            pending = {}
            answers = iter(self._evaluate([(name, value) for name, request in asked for value in request]))
            for name, request in asked:
                advance(name, tuple(next(answers) for _ in request))
        return [results[name] for name in checks]

    def _evaluate(self, points: list[tuple[str, float]]) -> list[Any]:
        """The output at each point (the input ``name`` moved to ``value``), or its error."""
        import numpy as np

        answers: list[Any] = []
        size = max(1, int(math.sqrt(_BATCH_CELLS)))  # rows per batch: moved inputs <= rows
        for start in range(0, len(points), size):
            group = points[start:start + size]
            columns: dict[str, Any] = dict(self.point)
            for row, (name, value) in enumerate(group):
                column = columns[name]
                if not isinstance(column, np.ndarray):
                    column = columns[name] = np.full(len(group), column)
                column[row] = value
            result = self.evaluator.evaluate(columns, on_error="nan")
            values = np.broadcast_to(result.value, (len(group),))
            answers.extend(result.error(row) if result.failed[row] else float(values[row])
                           for row in range(len(group)))
        return answers


DEFAULT_DIRECTIONS = 2


def check_directions(
    evaluation: Evaluation, *, count: int = DEFAULT_DIRECTIONS, seed: int = 0, rtol: float = DEFAULT_RTOL,
    atol: float = DEFAULT_ATOL, progress: Callable[[int, int], None] | None = None,
) -> CheckResult:
    """The fast check: the gradient along ``count`` random directions, as
    ``torch.autograd.gradcheck``'s fast mode does.

    For a direction v (Gaussian, of unit length, each component scaled by max(1, |x_i|) so
    that a step moves every input in proportion to its size), reverse mode predicts the
    directional derivative grad . v, forward mode computes it in one pass seeded with v,
    and the finite difference of t -> f(x + t v) is taken exactly as for one input, with
    its error bar, kinks and jumps.  The cost does not grow with the number of inputs: a
    few evaluations of the whole program per direction.  A wrong gradient can hide if its
    error happens to be nearly orthogonal to every direction, or is small next to the
    directional derivative that the tolerance scales with (one input's kink next to another
    input's large gradient); the directions are drawn from ``random.Random(seed)``, so a run
    is reproducible.
    """
    import random

    program, output, point, f0, rounding = _starting_point(evaluation, rtol, atol, "check_directions")
    floats = FloatPoint(program, point, output)
    tape = Tape.of(evaluation.root)
    generator = random.Random(seed)
    checks = []
    for k in range(count if point else 0):
        draws = [generator.gauss(0.0, 1.0) for _ in point]
        norm = math.sqrt(math.fsum(d * d for d in draws)) or 1.0
        direction = {name: d / norm * max(1.0, abs(x)) for (name, x), d in zip(point.items(), draws)}
        reverse = math.fsum(evaluation.nodes[name].grad * v for name, v in direction.items())
        seeds = {}
        for name, v in direction.items():
            index = tape.index.get(evaluation.nodes[name])
            if index is not None:
                seeds[index] = seeds.get(index, 0.0) + v
        forward = tangent_along(tape, seeds)

        def along(_name: str, t: float, direction: dict[str, float] = direction) -> float:
            return floats.output_along(direction, t)

        checks.append(_check_one(f"{DIRECTION}{k + 1}", 0.0, reverse, forward, f0, along, rtol, atol, rounding))
        if progress is not None:
            progress(k + 1, count)
    return CheckResult(output, f0, rtol, atol, checks, list(evaluation.warnings), mode="directions", seed=seed,
                       input_count=len(point))


def check(
    program: Program, given: Mapping[str, Any], output: str | None = None, *, fast: bool = False,
    directions: int = DEFAULT_DIRECTIONS, entries: int = DEFAULT_ENTRIES, seed: int = 0, rtol: float = DEFAULT_RTOL,
    atol: float = DEFAULT_ATOL, dtype: str | None = None, progress: Callable[[int, int], None] | None = None,
) -> CheckResult:
    """The gradient check of ``output`` (default: the result) at the ``given`` values, in ``dtype``
    (float64 when None, or float32).

    An all-scalar float64 program is evaluated by the compiled engine and checked input by input
    (``check_evaluation``: every input, or ``directions`` random directions when ``fast``); any
    other (a tensor, or float32) runs on the NumPy interpreter and is checked along ``directions``
    random directions and at ``entries`` sampled input entries (``check_arrays``).  Either way the
    verdicts are one judgement's (``_check_steps``), and the result the same type."""
    precision = precision_of(dtype)
    if precision is FLOAT64 and not runs_as_tensors(program, given):
        from ..execute import evaluate

        evaluation = evaluate(program, given, output, progress=progress)
        result = check_evaluation(evaluation, fast=fast, directions=directions, seed=seed, rtol=rtol, atol=atol,
                                  progress=progress)
        return replace(result, run=evaluation)
    return check_arrays(program, given, output, fast=fast, directions=directions, entries=entries, seed=seed,
                        rtol=rtol, atol=atol, precision=precision, progress=progress)


def check_evaluation(
    evaluation: Evaluation, *, fast: bool = False, directions: int = DEFAULT_DIRECTIONS, seed: int = 0,
    rtol: float = DEFAULT_RTOL, atol: float = DEFAULT_ATOL, progress: Callable[[int, int], None] | None = None,
) -> CheckResult:
    """The full check (``check_gradients``), or the fast one (``check_directions``) that falls
    back to the full check when a direction is not ok, to name the inputs responsible."""
    if not fast:
        return check_gradients(evaluation, rtol=rtol, atol=atol, progress=progress)
    quick = check_directions(evaluation, count=directions, seed=seed, rtol=rtol, atol=atol, progress=progress)
    if quick.verdict == OK:
        return quick
    failing = [c.name for c in quick.inputs if c.verdict != OK]
    full = check_gradients(evaluation, rtol=rtol, atol=atol, progress=progress)
    note = (f"the fast check found {len(failing)} of {len(quick.inputs)} random directions not ok; "
            "the full check, one input at a time, follows")
    return CheckResult(full.output, full.value, rtol, atol, full.inputs, full.warnings, notes=[note])


# --- the sweep: central differences, extrapolated, with an error bar -------------------------


class _Row(NamedTuple):
    """One step of the sweep: the step, the outputs at x + h and x - h, and the central difference."""

    step: float
    up: float
    down: float
    difference: float


class _Estimate(NamedTuple):
    """An entry of the extrapolation table: the derivative, its error bar, the row it ends on,
    and the part of the error bar that is the rounding floor."""

    value: float
    error: float
    row: int
    floor: float = 0.0

    @property
    def converging(self) -> bool:
        """Whether the table's own disagreement is within the rounding floor: the estimate is
        as good as rounding allows, rather than still changing with the step."""
        return self.error - self.floor <= self.floor


class _Sweep(NamedTuple):
    rows: list[_Row]
    estimates: list[_Estimate]


def _schedule(x: float, h0: float, precision: Precision = FLOAT64) -> tuple[float, int]:
    """The ratio between successive steps and the number of steps, from h0 down to the smallest.

    Halving for |x| up to about 3e4; beyond, a larger ratio, so that at most ``_MAX_ROWS``
    steps span h0 = eps**(1/3) * |x| down to the smallest step.
    """
    # Below a first step cut for a domain edge (log at 1e-7), as many halvings as usual.
    smallest = max(min(step_for(precision.name, 0.0) / 2.0**15, h0 / 2.0**15), _ULPS * precision.ulp(x))
    span = h0 / smallest
    if span <= 2.0:
        return 2.0, 2
    ratio = max(2.0, span ** (1.0 / (_MAX_ROWS - 1)))
    return ratio, min(_MAX_ROWS, 1 + math.ceil(math.log(span) / math.log(ratio) - 1e-9))


def _sweep(x: float, h0: float, rounding: float, settled: Callable[[_Estimate], bool],
           first: tuple[float, float] | None = None, precision: Precision = FLOAT64) -> Steps[_Sweep]:
    """Central differences at h0, h0/r, h0/r**2, ..., and Ridders' extrapolation table over them.

    Stops early once ``settled`` accepts an estimate, at the first step where x - h and
    x + h round to the same float, or where the program cannot be evaluated.  ``first``
    holds f(x + h0) and f(x - h0) when they are known already.  A generator: it yields the
    points it needs and is sent their outputs (see ``Steps``).
    """
    rows: list[_Row] = []
    table: list[list[float]] = []
    estimates: list[_Estimate] = []
    ratio, count = _schedule(x, h0, precision)
    h = h0
    for k in range(count):
        up, down = precision.stored(x + h), precision.stored(x - h)
        if up == down:
            break
        f_up, f_down = first if (k == 0 and first is not None) else (yield (up, down))
        if isinstance(f_up, AutodiffError) or isinstance(f_down, AutodiffError):
            break
        # Dividing by the step actually taken, (x+h) - (x-h) as stored, rather than 2h removes
        # the rounding of x +- h from the quotient.
        difference = (f_up - f_down) / (up - down)
        if not math.isfinite(difference):
            break
        rows.append(_Row(h, f_up, f_down, difference))
        floor = _ROUNDING_SAFETY * rounding / h
        entries = [difference]
        found = []
        if k:
            found.append(_Estimate(difference, abs(difference - table[k - 1][0]) + floor, k, floor))
        factor = ratio * ratio  # the central difference's error is even in h: h**2, h**4, ...
        for j in range(1, k + 1):
            # (factor * a - b) / (factor - 1), written so as not to overflow near 1e308.
            value = entries[j - 1] + (entries[j - 1] - table[k - 1][j - 1]) / (factor - 1.0)
            error = max(abs(value - entries[j - 1]), abs(value - table[k - 1][j - 1])) + floor
            entries.append(value)
            found.append(_Estimate(value, error, k, floor))
            factor *= ratio * ratio
        # Near the top of the float range the extrapolation itself can overflow.
        estimates.extend(e for e in found if math.isfinite(e.value) and math.isfinite(e.error))
        table.append(entries)
        if any(settled(estimate) for estimate in found):
            break
        h /= ratio
    return _Sweep(rows, estimates)


def _check_one(
    name: str, x: float, reverse: float, forward: float, f0: float, f: Function, rtol: float, atol: float,
    rounding: float, precision: Precision = FLOAT64,
) -> InputCheck:
    """One input's check, its points computed one by one by ``f(name, value)``."""
    return _answer_one_by_one(_check_steps(name, x, reverse, forward, f0, rtol, atol, rounding, precision),
                              lambda value: f(name, value))


def _answer_one_by_one(steps: Steps[InputCheck], f: Callable[[float], float]) -> InputCheck:
    """Run a check, computing each point it asks for with ``f`` (its error, if it fails)."""
    try:
        request = next(steps)
        while True:
            answers = []
            for value in request:
                try:
                    answers.append(f(value))
                except AutodiffError as error:
                    answers.append(error)
            request = steps.send(tuple(answers))
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]


def _check_steps(
    name: str, x: float, reverse: float, forward: float, f0: float, rtol: float, atol: float, rounding: float,
    precision: Precision = FLOAT64,
) -> Steps[InputCheck]:
    """One input's check as a generator: it yields the values of the input at which it needs
    the output, and is sent the outputs (an ``AutodiffError`` for a point where the program
    fails).  Written so, the points of every input can be computed together (see
    ``check_gradients``), or one at a time."""
    unbounded = _unbounded(name, x, reverse, forward)
    # The accuracy the finite difference needs: a share of the tolerance at the gradient.
    target = _PRECISION_SHARE * (atol + rtol * abs(reverse))
    h0, failure, first = yield from _first_step(name, x, rounding, target, precision)
    if failure is not None:
        verdict = FAIL if unbounded else INCONCLUSIVE
        return InputCheck(name, x, reverse, forward, None, h0, None, None, False, unbounded or failure, verdict)

    def settled(estimate: _Estimate) -> bool:  # agreement, precisely enough to stop looking
        return (estimate.error <= _PRECISION_SHARE * (atol + rtol * abs(estimate.value))
                and _agree(reverse, estimate.value, rtol, atol) and _agree(forward, estimate.value, rtol, atol))

    sweep = yield from _sweep(x, h0, rounding, settled, first, precision)
    if not sweep.estimates:  # one step at most could be taken: no error estimate
        reason = unbounded or (f"cannot estimate the finite difference's error at {name} = {_fmt(x)}: the "
                               f"difference could be taken at {len(sweep.rows)} step(s) from {h0:.3g} down, "
                               "and an error estimate needs two")
        verdict = FAIL if unbounded else INCONCLUSIVE
        return InputCheck(name, x, reverse, forward, None, h0, None, None, False, reason, verdict)
    size = max([abs(f0)] + [max(abs(r.up), abs(r.down)) for r in sweep.rows])
    noisy = rounding > _NOISE_SHARE * size
    estimate, decision = _judge(sweep.estimates, settled, reverse, rtol, atol, noisy)
    fd, fd_error = estimate.value, estimate.error
    row = sweep.rows[estimate.row]
    errors = [abs(reverse - fd), abs(forward - fd)]
    abs_error = math.nan if any(math.isnan(e) for e in errors) else max(errors)
    rel_error = _relative(abs_error, fd)
    # Slopes are compared at the judged estimate's step when it is precise, else at the
    # smallest step tried: the most local view, where a smooth output looks smoothest.
    probe = row if decision is not None else sweep.rows[-1]
    # Below the default tolerance a gap between the one-sided slopes is ordinary curvature
    # (about h * |f''|), not worth a diagnosis, however strict the caller's tolerance.
    slopes = yield from _kink(x, probe.step, f0, probe.up, probe.down, rounding,
                              max(atol + rtol * abs(fd), DEFAULT_ATOL + DEFAULT_RTOL * abs(fd)), precision)
    verdict, reason = _verdict(name, x, reverse, forward, estimate, decision, slopes, sweep.rows, rounding,
                               noisy, rtol, atol)
    if unbounded:
        verdict, reason = FAIL, unbounded
    return InputCheck(name, x, reverse, forward, fd, row.step, abs_error, rel_error, verdict == OK, reason,
                      verdict, fd_error)


def _first_step(
    name: str, x: float, rounding: float, target: float, precision: Precision = FLOAT64,
) -> Steps[tuple[float, str | None, tuple[float, float] | None]]:
    """The first step of the sweep, why there is none (None when there is one), and the
    outputs at x + h and x - h (None when there is no step).

    eps**(1/3) * max(1, |x|), or larger when the program's rounding error over that step
    would exceed the accuracy needed (a sum of numbers much larger than the result).
    Near the edge of a domain (log at x = 1e-7) or of the float range (exp near 709.78)
    the step leaves it, and is cut tenfold until both points can be evaluated; the
    halving sequence then continues below the edge's distance.
    """
    h = step_for(precision.name, x)  # float64's is step_size(x)
    if target > 0.0 and math.isfinite(rounding):
        h = max(h, min(4.0 * _ROUNDING_SAFETY * rounding / target, 0.1 * max(1.0, abs(x))))
    first_failure = None
    for _ in range(_MAX_SHRINKS + 1):
        up, down = precision.stored(x + h), precision.stored(x - h)
        f_up, f_down = yield (up, down)
        failed = [(at, side, out) for at, side, out in ((up, "+", f_up), (down, "-", f_down))
                  if isinstance(out, AutodiffError)]
        if failed:
            failed_at, side, error = failed[0]
            if first_failure is None:
                # The library message already says which operation failed and why; add where.
                first_failure = (f"cannot take the finite difference: the program fails at {name} = "
                                 f"{_fmt(failed_at)} ({name} {side} step {h:.3g}): {error.message}")
            h /= 10.0
            continue
        return h, None, (f_up, f_down)
    assert first_failure is not None
    return h * 10.0, f"{first_failure}; steps down to {h * 10.0:.3g} fail too", None


def _judge(
    estimates: list[_Estimate], settled: Callable[[_Estimate], bool], reverse: float, rtol: float, atol: float,
    noisy: bool,
) -> tuple[_Estimate, str | None]:
    """The estimate to judge reverse mode by, and the decision it supports: OK, FAIL or None.

    An agreement that settled the sweep decides OK.  Otherwise the rows are scanned from
    the smallest step up, and the first row whose best estimate is precise enough decides:
    OK if reverse mode agrees with it, FAIL if it refutes reverse mode.  A row decides
    only when every smaller step tried backs it: each agrees with it within the error
    bars, and none is still changing with the step beyond its rounding floor.  A step too
    large for the output's scale (many periods of sin at x = 1e12) gives differences that
    are small, steady and precise-looking, yet are no derivative; the smaller steps either
    contradict them or show that the output is not smooth at their scale either (sin at
    x = 1e15, where floats are 0.125 apart).  No decision: the estimate with the smallest
    error bar is shown and the input is inconclusive.  When the output itself is mostly
    rounding noise (sin(10*x) at x = 1e15, whose argument has lost every digit), nothing
    is refuted either.
    """
    agreeing = [estimate for estimate in estimates if settled(estimate)]
    if agreeing:
        return min(agreeing, key=lambda e: e.error), OK
    best_of_row: dict[int, _Estimate] = {}
    for estimate in estimates:
        known = best_of_row.get(estimate.row)
        if known is None or estimate.error < known.error:
            best_of_row[estimate.row] = estimate
    smaller: list[_Estimate] = []
    for row in sorted(best_of_row, reverse=True):
        estimate = best_of_row[row]
        if all(abs(estimate.value - other.value) <= _CONFIDENCE * (estimate.error + other.error)
               and other.converging for other in smaller):
            tolerance = atol + rtol * abs(estimate.value)
            if _agree(reverse, estimate.value, rtol, atol) and estimate.error <= tolerance:
                return estimate, OK
            if (not noisy and abs(reverse - estimate.value) > tolerance + _CONFIDENCE * estimate.error
                    and estimate.error <= max(_PRECISION_SHARE * tolerance, 0.01 * abs(estimate.value))):
                # A difference known to 1% is enough to refute a gradient far outside it.
                return estimate, FAIL
        smaller.append(estimate)
    return min(estimates, key=lambda e: e.error), None


def _verdict(
    name: str, x: float, reverse: float, forward: float, estimate: _Estimate, decision: str | None,
    slopes: _Slopes | None, rows: list[_Row], rounding: float, noisy: bool, rtol: float, atol: float,
) -> tuple[str, str | None]:
    fd, fd_error = estimate.value, estimate.error
    tolerance = atol + rtol * abs(fd)
    kink_text = ""
    if slopes is not None and slopes.kink:
        kink_text = (f"the one-sided slopes differ (left {_fmt(slopes.left)}, right {_fmt(slopes.right)}): "
                     f"the output has a kink at or near {name} = {_fmt(x)} and no derivative there")
    jump = _jump(name, x, reverse, rows, rounding)
    if jump is not None:
        return FAIL, jump
    reverse_agrees = _agree(reverse, fd, rtol, atol)
    if reverse_agrees and kink_text:
        return FAIL, (f"reverse mode and the central difference agree ({_fmt(reverse)}), but {kink_text}; "
                      f"{_fmt(reverse)} is only a convention")
    if not _agree(forward, reverse, rtol, atol) and not _agree(forward, fd, rtol, atol):
        shown_forward, shown_reverse = _fmt_pair(forward, reverse)
        if reverse_agrees:
            return FAIL, (f"forward mode gives {shown_forward} but reverse mode and the central difference "
                          f"give {shown_reverse} and {_fmt_pair(reverse, fd)[1]}")
        return FAIL, f"forward mode gives {shown_forward} but reverse mode gives {shown_reverse}"
    if decision == OK:
        return OK, None
    shown_reverse, shown_fd = _fmt_pair(reverse, fd)
    gap = abs(reverse - fd)
    why = (f"reverse mode gives {shown_reverse} but the central difference gives {shown_fd} "
           f"(|error| {gap:.3g} > atol + rtol*|fd| = {tolerance:.3g})")
    if kink_text:
        return FAIL, f"{why}; {kink_text}"
    if decision == FAIL:
        return FAIL, f"{why}, and the difference is accurate to +-{fd_error:.2g}"
    return INCONCLUSIVE, _uncertain(name, x, reverse, fd, fd_error, tolerance, rows, rounding, noisy, estimate)


def _uncertain(
    name: str, x: float, reverse: float, fd: float, fd_error: float, tolerance: float, rows: list[_Row],
    rounding: float, noisy: bool, estimate: _Estimate,
) -> str:
    """Why the finite difference cannot decide, with the cause: noise, rounding or the step."""
    shown_reverse, shown_fd = _fmt_pair(reverse, fd)
    smallest = rows[-1].step
    if noisy:
        return (f"the program's output at {name} = {_fmt(x)} is mostly rounding error (about {rounding:.2g}), "
                f"so no finite difference can confirm or refute reverse mode's {shown_reverse} (the best "
                f"estimate is {shown_fd} +-{fd_error:.2g})")
    if tolerance == 0.0:
        cause = "a tolerance of 0 needs a difference without any error, which rounding rules out"
    elif estimate.floor >= 0.5 * fd_error:
        cause = (f"the program's rounding error (about {rounding:.2g} in the output) swamps the difference "
                 f"at steps small enough for the output's curvature")
    else:
        cause = (f"the estimates still change from step to step down to {smallest:.3g}: the output varies on "
                 f"a scale smaller than the steps, or is not smooth here")
    return (f"the finite difference {shown_fd} is uncertain by +-{fd_error:.2g}, more than the tolerance "
            f"{tolerance:.3g}, so reverse mode's {shown_reverse} can be neither confirmed nor refuted at "
            f"{name} = {_fmt(x)}: {cause}")


def _jump(name: str, x: float, reverse: float, rows: list[_Row], rounding: float) -> str | None:
    """A jump in the output at x (sign or step at 0): f(x+h) - f(x-h) stays put as h shrinks.

    A smooth output's difference shrinks with the step, about 2h * |f'|; a jump's stays
    near the height of the jump.  Four steps down must leave it above half its size, and
    far above both rounding and what the gradient explains, at a smallest step of at most
    1e-6 (at |x| = 1e15, where floats are 0.125 apart, sin looks like that too).
    """
    if len(rows) < 5 or rows[-1].step > _JUMP_RESOLUTION:
        return None  # steps that large cannot tell a jump from an output that varies fast
    first, last = rows[-5], rows[-1]
    height = abs(last.up - last.down)
    expected = 2.0 * last.step * abs(reverse) + 2.0 * rounding
    if not (height > 0.5 * abs(first.up - first.down) and height > 10.0 * expected):
        return None
    return (f"the output jumps at {name} = {_fmt(x)}: f({name}+h) - f({name}-h) stays about {_fmt(height)} "
            f"for steps h from {first.step:.3g} down to {last.step:.3g}, so there is no derivative there")


def _unbounded(name: str, x: float, reverse: float, forward: float) -> str | None:
    for mode, grad in (("reverse", reverse), ("forward", forward)):
        if not math.isfinite(grad) and name.startswith(DIRECTION):  # a direction's x is its step, 0
            return f"{mode} mode gives {grad} along {name}: the derivative along it is unbounded or undefined here"
        if not math.isfinite(grad):
            return (f"{mode} mode gives {grad} for d/d{name} at {name} = {_fmt(x)}: "
                    "the derivative is unbounded or undefined here")
    return None


def _one_sided(x: float, h: float, f0: float, f_up: float, f_down: float,
               precision: Precision = FLOAT64) -> tuple[float, float]:
    return (f0 - f_down) / (x - precision.stored(x - h)), (f_up - f0) / (precision.stored(x + h) - x)


class _Slopes(NamedTuple):
    """One-sided slopes whose gap exceeds the tolerance, and whether the gap is a kink's."""

    left: float
    right: float
    kink: bool


def _kink(
    x: float, h: float, f0: float, f_up: float, f_down: float, rounding: float, tolerance: float,
    precision: Precision = FLOAT64,
) -> Steps[_Slopes | None]:
    """The one-sided slopes when they differ by more than the tolerance, else None.

    For a smooth output the one-sided slopes differ by about h * |f''|, so the gap
    shrinks in proportion to the step; at a kink it tends to the jump in slope, J.  The
    gap is measured at h, h/8 and h/64 and extrapolated to h = 0 twice, as J + c*h,
    from (h, h/8) and from (h/8, h/64): a kink when both limits agree and exceed the
    tolerance.  The extrapolation finds a kink under strong curvature (abs(x) + 1e8*x**2
    at 0, whose gap at h is mostly curvature), and the agreement rules out an output too
    rough at these steps to say (sin(1e9*x) at 1e6).  A symmetric kink (abs at 0) has a
    central difference equal to the mean of the slopes and would pass unnoticed without
    this test.
    """
    left, right = _one_sided(x, h, f0, f_up, f_down, precision)
    gap = abs(right - left)
    if not gap > tolerance:  # also False for NaN: nothing reliable to report
        return None
    # h, h/8, h/64; where x + h/64 rounds to x (h is a few ulps of a large x), 8h, h, h/8.
    steps = [h, h / 8.0, h / 64.0]
    while precision.stored(x + steps[-1]) == x and steps[0] < 1e300:
        steps = [8.0 * steps[0]] + steps[:2]
    if precision.stored(x + steps[-1]) == x:
        return _Slopes(left, right, False)
    gaps = []
    slopes = (left, right)
    for step in steps:
        up, down = (f_up, f_down) if step == h else (
            yield (precision.stored(x + step), precision.stored(x - step)))
        if isinstance(up, AutodiffError) or isinstance(down, AutodiffError):
            return _Slopes(left, right, False)  # cannot look closer; the comparison still applies
        slopes = _one_sided(x, step, f0, up, down, precision)
        gaps.append(abs(slopes[1] - slopes[0]))
    coarse = (8.0 * gaps[1] - gaps[0]) / 7.0
    fine = (8.0 * gaps[2] - gaps[1]) / 7.0
    noise = 2.0 * _ROUNDING_SAFETY * rounding / steps[-1]
    kink = (fine > tolerance and fine > 10.0 * noise and abs(coarse - fine) <= 0.25 * fine)
    return _Slopes(slopes[0], slopes[1], kink) if kink else _Slopes(left, right, False)


def failure_messages(result: CheckResult) -> list[str]:
    """One line per failing input: ``NAME: reason``."""
    return [f"{check.name}: {check.reason}" for check in result.failures]


def inconclusive_messages(result: CheckResult) -> list[str]:
    """One line per input the finite difference could not decide: ``NAME: reason``."""
    return [f"{check.name}: {check.reason}" for check in result.inconclusive]


# --- programs the NumPy interpreter runs: tensors, and any program in float32 --------------
#
# A tensor program may have thousands of input entries, and a finite difference costs a few
# runs of the whole program per entry, so it is checked two ways that cost the same at any size
# (the judgement of each is ``_check_steps``, as for one scalar input):
#
# * directions: for a random direction v over every input at once (Gaussian, of unit length,
#   each entry scaled by max(1, |x|)), reverse mode predicts grad . v, forward mode computes
#   the JVP along v, and the finite difference is taken of t -> f(x + t v);
# * entries: up to ``entries`` entries of the inputs, drawn at random (every entry when there
#   are that few), each checked as one scalar input: its gradient entry, the JVP along it, and
#   the finite difference of moving it alone.  They name the entry that is wrong where a
#   direction only says that something is.
#
# A program whose inputs are all numbers (a scalar program in float32) is checked as the
# compiled engine's check does it: every input, or only directions when ``fast``.  The draws
# come from ``numpy.random.default_rng(seed)``: the same seed, the same check.  In float32 the
# points are float32 numbers, the rounding floor is float32's, and each input whose finite
# difference float32 cannot resolve to the tolerance is said in a warning.

# The most inputs a float32 warning names one by one before it counts the rest.
_WARNINGS_SHOWN = 3


def check_arrays(
    program: Program, given: Mapping[str, Any], output: str | None = None, *, fast: bool = False,
    directions: int = DEFAULT_DIRECTIONS, entries: int = DEFAULT_ENTRIES, seed: int = 0, rtol: float = DEFAULT_RTOL,
    atol: float = DEFAULT_ATOL, precision: Precision = FLOAT64, progress: Callable[[int, int], None] | None = None,
) -> CheckResult:
    """The check of ``output`` (a number) run by the NumPy interpreter in ``precision``: along
    ``directions`` random directions and at ``entries`` sampled input entries (see above)."""
    import numpy as np

    from ..execute.interpreter import input_arrays, run_forward
    from ..language.program import check_inputs, missing_inputs, missing_inputs_error, output_name

    if not (rtol >= 0.0 and atol >= 0.0):
        raise ValueError("rtol and atol must be non-negative numbers")
    missing = missing_inputs(program, given)
    if missing:
        raise missing_inputs_error(program, missing)
    warnings = check_inputs(program, given)  # a value for a name the program does not use: a typo?
    output = output_name(program, output)
    dtype = precision.name
    point = input_arrays(program, given, seed, dtype=dtype)
    run = run_forward(program, point, dtype=dtype)
    if np.ndim(run.value(output)):
        raise InputError(f"check takes a number output, and '{output}' has shape {list(np.shape(run.value(output)))}",
                         source=Source(program.source.name, ""),
                         hint=f"check sum({output}), mean({output}) or one entry such as {output}[0]")
    f0 = float(run.value(output))
    labels = label_inputs(run)
    moving = {name: value for name, value in point.items() if name not in labels}
    grads = run.gradients(output, list(moving))
    rounding = _array_rounding_error(run, output, precision.eps)
    generator = np.random.default_rng(seed)
    count = sum(int(np.size(value)) for value in moving.values())

    def value_at(moved: Mapping[str, Any]) -> float:
        inputs = dict(point)
        inputs.update((name, np.asarray(value, dtype=dtype)) for name, value in moved.items())
        return float(run_forward(program, inputs, dtype=dtype).value(output))

    def along(number: int, total: int) -> InputCheck:
        direction = _direction(moving, generator)
        reverse = math.fsum(float(np.sum(grads[name] * v)) for name, v in direction.items())
        forward = float(run.jvp(output, {name: np.asarray(v, dtype=dtype) for name, v in direction.items()}))

        def moved(_name: str, t: float) -> float:
            return value_at({name: point[name] + t * v for name, v in direction.items()})

        check = _check_one(f"{DIRECTION}{number}", 0.0, reverse, forward, f0, moved, rtol, atol, rounding, precision)
        _tell(progress, number, total)
        return replace(check, value=None)  # a direction has no input value of its own (shown "-")

    def at_entry(name: str, index: tuple[int, ...]) -> InputCheck:
        label = f"{name}[{', '.join(map(str, index))}]" if index else name
        basis = np.zeros_like(point[name])
        basis[index] = 1.0
        forward = float(run.jvp(output, {name: basis}))

        def moved(_label: str, value: float) -> float:
            array = np.array(point[name], dtype=float)
            array[index] = value
            return value_at({name: array})

        return _check_one(label, float(point[name][index]), float(grads[name][index]), forward, f0, moved, rtol,
                          atol, rounding, precision)

    def at_entries(picked: list[tuple[str, tuple[int, ...]]], done: int, total: int) -> list[InputCheck]:
        checks = []
        for name, index in picked:
            checks.append(at_entry(name, index))
            _tell(progress, done + len(checks), total)
        return checks

    every = _sample_entries(moving, count, generator)
    notes = []
    if labels:
        notes.append(f"not moved: {', '.join(sorted(labels))}, read as class labels or indices (whole numbers, "
                     "with no derivative)")
    if not runs_as_tensors(program, given):  # a scalar program (in float32): checked as the engine's check is
        mode = "inputs"
        if fast:
            checks = [along(k + 1, directions) for k in range(directions if moving else 0)]
            mode = "directions"
            if any(check.verdict != OK for check in checks):
                notes.append(f"the fast check found {sum(c.verdict != OK for c in checks)} of {len(checks)} random "
                             "directions not ok; the full check, one input at a time, follows")
                checks, mode = at_entries(every, 0, len(every)), "inputs"
        else:
            checks = at_entries(every, 0, len(every))
    else:
        picked = every if len(every) <= entries else _sample_entries(moving, entries, generator)
        total = directions + len(picked)
        checks = [along(k + 1, total) for k in range(directions if moving else 0)]
        checks += at_entries(picked, len(checks), total)
        notes.insert(0, f"checked along {directions} random direction{'s' if directions != 1 else ''} (seed {seed}) "
                        f"and at {len(picked)} of the {count} input entr{'y' if count == 1 else 'ies'}")
        mode = "inputs"
    warnings.extend(_unresolved(checks, f0, rounding, precision, rtol, atol))
    return CheckResult(output, f0, rtol, atol, checks, warnings, mode=mode, seed=seed, input_count=count, notes=notes,
                       dtype=dtype, run=run)


def label_inputs(run: Any) -> set[str]:
    """The inputs of a ``TensorRun`` given to cross_entropy as its labels, or to an op that reads
    them as indices (its entry's ``indices``): whole numbers, which have no derivative there and
    which a finite difference cannot move (a label or an index must stay a whole number)."""
    inputs = {variable.register: variable.name for variable in run.program.inputs}
    return {inputs[second] for op, _, second, _, _ in run.rows
            if (op == "cross_entropy" or 1 in getattr(TENSOR_OPS.get(op), "indices", ())) and second in inputs}


def _tell(progress: Callable[[int, int], None] | None, done: int, total: int) -> None:
    if progress is not None:
        progress(done, total)


def _direction(point: Mapping[str, Any], generator: Any) -> dict[str, Any]:
    import numpy as np

    draws = {name: generator.standard_normal(np.shape(value)) for name, value in point.items()}
    norm = math.sqrt(sum(float(np.sum(d * d)) for d in draws.values())) or 1.0
    return {name: d / norm * np.maximum(1.0, np.abs(point[name])) for name, d in draws.items()}


def _sample_entries(point: Mapping[str, Any], entries: int, generator: Any) -> list[tuple[str, tuple[int, ...]]]:
    """``entries`` (name, index) pairs drawn without repeats over every input entry, in program
    order; all of them when there are no more."""
    import numpy as np

    every = [(name, index) for name, value in point.items() for index in np.ndindex(np.shape(value))]
    if len(every) <= entries:
        return every
    chosen = sorted(generator.choice(len(every), size=entries, replace=False).tolist())
    return [every[i] for i in chosen]


def _array_rounding_error(run: Any, output: str, eps: float) -> float:
    """``rounding_error`` for a ``TensorRun``: each computed entry is off by up to eps * |value|
    (times the number of terms an op adds up), felt at the output with weight |its adjoint|."""
    import numpy as np

    adjoints = run.adjoints(output)
    total = eps * abs(float(run.value(output)))
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
            total += eps * terms * contribution
    return total if math.isfinite(total) else math.inf


def _unresolved(checks: list[InputCheck], f0: float, rounding: float, precision: Precision, rtol: float,
                atol: float) -> list[str]:
    """Warnings for the rows whose finite difference the program's rounding in ``precision``
    (``rounding``, in the output) keeps from resolving the derivative to the tolerance at the
    step the row was judged at (``analysis.precision``): none in float64, whose steps are
    chosen for it."""
    if precision is FLOAT64:
        return []
    said = [(check.name, message) for check in checks if check.finite_difference is not None
            for message in [unresolved_warning(precision.name, f0, check.step, check.reverse, rtol, atol, rounding)]
            if message is not None]
    warnings = [f"{name}: {message}" for name, message in said[:_WARNINGS_SHOWN]]
    if len(said) > _WARNINGS_SHOWN:
        warnings.append(f"and {len(said) - _WARNINGS_SHOWN} more rows whose {precision.name} finite difference "
                        "cannot confirm the derivative")
    return warnings
