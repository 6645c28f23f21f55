"""Gradient check: reverse mode, forward mode and a finite difference, for every input.

One entry, ``check(program, values)``, for every program: an all-scalar float64 program is
checked on the compiled engine's evaluation, input by input (``check_evaluation``: every input,
or random directions with ``fast``); a tensor program, or any program in float32, on the NumPy
interpreter, along random directions and at sampled input entries (``check_arrays``, at the end
of this module).  Each input, entry or direction gets one verdict, ``ok``, ``fail`` or
``inconclusive``, from one judgement: a central difference with an error bar, extrapolated over
a sweep of steps (``analysis.finite_difference``, which says how).  Whatever ran it, the result
is one ``CheckResult``, with the precision it ran in; the renderers are in ``render/check.py``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from ..engine.forward import tangent_along, tangent_at_root
from ..engine.graph import Tape, topological_order
from ..engine.ops import OPS
from ..engine.registry import ENTRIES, is_exact
from ..errors import AutodiffError
from ..execute.columns import entry_column
from ..execute.floats import FloatPoint
from ..execute.run import runs_on_engine
from ..execute.scalar import Evaluation
from ..language.program import CONST, INPUT, Program, runs_as_tensors
from .finite_difference import (
    DEFAULT_ATOL,
    DEFAULT_RTOL,
    DIRECTION,
    FAIL,
    FLOAT64,
    INCONCLUSIVE,
    OK,
    InputCheck,
    Precision,
    Steps,
    answer_one_by_one,
    judge_input,
    judge_steps,
    precision_of,
    step_size,
)
from .precision import EPSILON, unresolved_warning

__all__ = [
    "DEFAULT_ATOL",
    "DEFAULT_DIRECTIONS",
    "DEFAULT_ENTRIES",
    "DEFAULT_RTOL",
    "DIRECTION",
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

DEFAULT_ENTRIES = 16  # tensor inputs: how many entries are checked one by one

_EPS = EPSILON["float64"]
# Operations whose result is exact (no rounding): a leaf, and the op table's exact ops (a copy,
# a sign change, relu, abs, sign, step).
_EXACT_OPS = frozenset(("", *(op.name for op in OPS.values() if op.exact)))


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
        return judge_steps(name, x, reverse, forwards[name], base, rtol, atol, rounding)

    if batch and point:
        together = _Together(evaluation, point)
        checks = together.answer({name: steps(name, x, together.base) for name, x in point.items()}, progress)
    else:
        # Values only, recomputing just the instructions that depend on the input being moved;
        # bit for bit what evaluate() gives, errors included.
        floats = FloatPoint(program, point, output)
        checks = []
        for done, (name, x) in enumerate(point.items()):
            checks.append(answer_one_by_one(steps(name, x, f0), partial(floats.output_with, name)))
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
        from ..execute.batch_evaluator import BatchEvaluator

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
        seeds: dict[int, float] = {}
        for name, v in direction.items():
            index = tape.index.get(evaluation.nodes[name])
            if index is not None:
                seeds[index] = seeds.get(index, 0.0) + v
        forward = tangent_along(tape, seeds)

        def along(_name: str, t: float, direction: dict[str, float] = direction) -> float:
            return floats.output_along(direction, t)

        checks.append(judge_input(f"{DIRECTION}{k + 1}", 0.0, reverse, forward, f0, along, rtol, atol, rounding))
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
    verdicts are one judgement's (``judge_steps``), and the result the same type."""
    precision = precision_of(dtype)
    if runs_on_engine(program, given, precision.name):
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
    full = check_gradients(evaluation, rtol=rtol, atol=atol, progress=progress)
    return CheckResult(full.output, full.value, rtol, atol, full.inputs, full.warnings,
                       notes=[_fell_back(quick.inputs)])


def _fell_back(directions: list[InputCheck]) -> str:
    """The note of a fast check that found a direction not ok, and so checks every input."""
    failing = sum(check.verdict != OK for check in directions)
    return (f"the fast check found {failing} of {len(directions)} random directions not ok; "
            "the full check, one input at a time, follows")


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
# (the judgement of each is ``judge_steps``, as for one scalar input):
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

    from ..execute.interpreter import input_arrays, number_output_error, run_forward
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
        raise number_output_error(program, output, np.shape(run.value(output)),
                                  f"check sum({output}), mean({output}) or one entry such as {output}[0]")
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

        def slope(t: float) -> float:  # reverse mode's derivative along the direction, t along it
            inputs = {**point, **{name: np.asarray(point[name] + t * v, dtype=dtype) for name, v in direction.items()}}
            moved_grads = run_forward(program, inputs, dtype=dtype).gradients(output, list(direction))
            return math.fsum(float(np.sum(moved_grads[name] * v)) for name, v in direction.items())

        check = judge_input(f"{DIRECTION}{number}", 0.0, reverse, forward, f0, moved, rtol, atol, rounding, precision,
                            slope)
        _tell(progress, number, total)
        return replace(check, value=None)  # a direction has no input value of its own (shown "-")

    def at_entry(name: str, index: tuple[int, ...]) -> InputCheck:
        label = entry_column(name, index)
        basis = np.zeros_like(point[name])
        basis[index] = 1.0
        forward = float(run.jvp(output, {name: basis}))

        def moved(_label: str, value: float) -> float:
            array = np.array(point[name], dtype=float)
            array[index] = value
            return value_at({name: array})

        def slope(value: float) -> float:  # reverse mode's derivative with the entry at value
            array = np.array(point[name], dtype=float)
            array[index] = value
            inputs = {**point, name: np.asarray(array, dtype=dtype)}
            return float(run_forward(program, inputs, dtype=dtype).gradients(output, [name])[name][index])

        return judge_input(label, float(point[name][index]), float(grads[name][index]), forward, f0, moved, rtol,
                          atol, rounding, precision, slope)

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
                notes.append(_fell_back(checks))
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
    found = set()
    for op, first, second, _, _ in run.rows:
        for slot in getattr(ENTRIES.get(op), "indices", ()):
            operand = (first, second)[slot]
            if operand in inputs:
                found.add(inputs[operand])
    return found


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
    chosen for it, and none for a row that fails (its difference refutes the gradient, or
    something other than the difference does)."""
    if precision is FLOAT64:
        return []
    said = [(check.name, message) for check in checks if check.finite_difference is not None and check.verdict != FAIL
            for message in [unresolved_warning(precision.name, f0, check.step, check.reverse, rtol, atol, rounding)]
            if message is not None]
    warnings = [f"{name}: {message}" for name, message in said[:_WARNINGS_SHOWN]]
    if len(said) > _WARNINGS_SHOWN:
        warnings.append(f"and {len(said) - _WARNINGS_SHOWN} more rows whose {precision.name} finite difference "
                        "cannot confirm the derivative")
    return warnings
