"""The judgement of one input's derivative by a finite difference with an error bar: what
every row of a gradient check (``analysis.check``: an input, an entry of a tensor, a random
direction) is decided by, in float64 or float32.

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
  domain, the difference's error bar is larger than the tolerance at every step tried, or
  the estimates still change with the step down to the smallest step tried (the output
  varies on a smaller scale than any step: sin at x = 1e7 in float32, whose floats are 1
  apart).  In the last case the error bar is infinite: the table's own, however small,
  measures nothing there.  The reason says which; the gradient is neither confirmed nor
  accused.

A point near a kink but not at it (relu at x = 1e-7) is differentiable, and passes once
the steps are smaller than the distance to the kink (down to about 2e-10 * max(1, |x|)).

In float32 (``Precision``) the points x +- h are float32 numbers (the difference divides by
the step they really are apart), the first and smallest steps are float32's own, and the
rounding floor is float32's.  The judgement is written as a generator (``Steps``), so that a
caller can compute the points of many inputs together.  Standard library only (NumPy for
float32's numbers, when asked).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Generator
from dataclasses import dataclass, replace
from typing import Any, NamedTuple, TypeVar

from ..errors import AutodiffError
from .precision import EPSILON, step_for

__all__ = [
    "DEFAULT_ATOL",
    "DEFAULT_RTOL",
    "DIRECTION",
    "FAIL",
    "FLOAT64",
    "INCONCLUSIVE",
    "OK",
    "InputCheck",
    "Precision",
    "Steps",
    "answer_one_by_one",
    "judge_input",
    "judge_steps",
    "precision_of",
    "step_size",
]

DEFAULT_RTOL = 1e-3
DEFAULT_ATOL = 1e-5
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
    value: float | None  # None for a random direction, which moves every input from where it is
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
    # FAIL because the difference refutes reverse mode (not a kink, a jump or the modes'
    # disagreement): what the derivative's own variation over the step may still explain.
    refuted: bool = False


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


def judge_input(
    name: str, x: float, reverse: float, forward: float, f0: float, f: Function, rtol: float, atol: float,
    rounding: float, precision: Precision = FLOAT64, slope: Callable[[float], float] | None = None,
) -> InputCheck:
    """One input's check, its points computed one by one by ``f(name, value)``.  ``slope(value)``,
    when given, is reverse mode's derivative at another value of the input: a refutation is
    then kept only if the derivative does not itself vary over the step as much (``_varying``)."""
    check = answer_one_by_one(judge_steps(name, x, reverse, forward, f0, rtol, atol, rounding, precision),
                              lambda value: f(name, value))
    if not check.refuted or slope is None:
        return check
    return _varying(check, slope, precision) or check


def _varying(check: InputCheck, slope: Callable[[float], float], precision: Precision) -> InputCheck | None:
    """The refuting ``check`` made inconclusive when the derivative, as the program computes it,
    varies within the step the difference was taken at by as much as the gap; else None.

    A central difference over [x - h, x + h] is the mean of the derivative over it, which is
    the mean over s in [0, h] of its even part, (f'(x + s) + f'(x - s)) / 2 (a slope that
    changes linearly, as a quadratic's does, cancels).  When that even part itself (however
    right or wrong the derivative) changes by more than the gap as s runs from 0 to h, the mean
    is no measure of its value at s = 0, f'(x): x**2 * 1e-6 + sin(x) at x = 2.2e6 in float32,
    whose rounding (about 2 in the output) hides sin below steps of a few hundred, while its
    derivative swings by 2 over every step of 6.  It is sampled at s = h, h/2, h/4, ... down
    to the smallest step the floats at x allow."""
    assert check.value is not None and check.finite_difference is not None
    x, gap = check.value, abs(check.reverse - check.finite_difference)
    smallest = _ULPS * precision.ulp(x)
    even: list[float] = []
    s = check.step
    while s >= smallest and len(even) < _MAX_ROWS:
        try:
            both = (slope(precision.stored(x + s)) + slope(precision.stored(x - s))) / 2.0
        except AutodiffError:
            both = math.nan  # the program fails there: nothing to compare
        if math.isfinite(both):
            even.append(both)
        s /= 2.0
    if len(even) < 2 or max(even) - min(even) < gap:
        return None
    spread = max(even) - min(even)
    shown_reverse, shown_fd = _fmt_pair(check.reverse, check.finite_difference)
    reason = (f"reverse mode gives {shown_reverse} but the central difference gives {shown_fd}; yet the derivative "
              f"itself, as the program computes it, varies by {spread:.3g} within the step {check.step:.3g} the "
              f"difference was taken at, more than that gap, so the difference (a mean of the derivative over the "
              f"step) can neither confirm nor refute reverse mode's {shown_reverse} at {check.name} = {_fmt(x)}: "
              f"the output varies on a scale smaller than the steps {precision.name}'s rounding lets it resolve")
    return replace(check, verdict=INCONCLUSIVE, ok=False, refuted=False, reason=reason,
                   fd_error=max(check.fd_error or 0.0, spread))


def answer_one_by_one(steps: Steps[InputCheck], f: Callable[[float], float]) -> InputCheck:
    """Run a check, computing each point it asks for with ``f`` (its error, if it fails)."""
    try:
        request = next(steps)
        while True:
            answers: list[float | AutodiffError] = []
            for value in request:
                try:
                    answers.append(f(value))
                except AutodiffError as error:
                    answers.append(error)
            request = steps.send(tuple(answers))
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]


def judge_steps(
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
        reason: str | None = unbounded or (f"cannot estimate the finite difference's error at {name} = {_fmt(x)}: the "
                               f"difference could be taken at {len(sweep.rows)} step(s) from {h0:.3g} down, "
                               "and an error estimate needs two")
        verdict = FAIL if unbounded else INCONCLUSIVE
        return InputCheck(name, x, reverse, forward, None, h0, None, None, False, reason, verdict)
    size = max([abs(f0)] + [max(abs(r.up), abs(r.down)) for r in sweep.rows])
    noisy = rounding > _NOISE_SHARE * size
    estimate, decision = _judge(sweep.estimates, settled, reverse, rtol, atol, noisy)
    # Unless some estimate settled to within rounding, the steps never became small against the
    # scale on which the output varies, and the table's error bar measures nothing.
    resolved = any(e.converging for e in sweep.estimates)
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
    # Nor, when no smaller step exists, do one-sided slopes tell a kink from an output that varies
    # between neighbouring floats (sin at x = 2e17, whose floats are 32 apart).
    at_spacing = sweep.rows[-1].step <= 2.0 * _ULPS * precision.ulp(x)
    slopes = None if not resolved and at_spacing else (
        yield from _kink(x, probe.step, f0, probe.up, probe.down, rounding,
                         max(atol + rtol * abs(fd), DEFAULT_ATOL + DEFAULT_RTOL * abs(fd)), precision))
    verdict, reason, refuted = _verdict(name, x, reverse, forward, estimate, decision, slopes, sweep.rows,
                                        rounding, noisy, rtol, atol, _Scale(resolved, precision.ulp(x)))
    if verdict == INCONCLUSIVE and not resolved:
        fd_error = math.inf  # no error bar can be given: the difference may be off by any amount
    if unbounded:
        verdict, reason, refuted = FAIL, unbounded, False
    return InputCheck(name, x, reverse, forward, fd, row.step, abs_error, rel_error, verdict == OK, reason,
                      verdict, fd_error, refuted)


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
    is refuted either.  The smallest row, which nothing smaller backs, refutes only when it
    is not still changing either: at the smallest step float32 allows at x = 1e7 (6.0, where
    its floats are 1 apart) the difference of sin settles on 0.043 +-1.5e-6, a precise-looking
    average over a step nearly a period long, while cos(1e7) = -0.91.
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
                    and estimate.error <= max(_PRECISION_SHARE * tolerance, 0.01 * abs(estimate.value))
                    and (smaller or estimate.converging)):
                # A difference known to 1% is enough to refute a gradient far outside it.
                return estimate, FAIL
        smaller.append(estimate)
    return min(estimates, key=lambda e: e.error), None


class _Scale(NamedTuple):
    """Whether the steps became small against the output's scale (some estimate settled to
    within rounding), and the gap between floats at x, which bounds how small a step can be."""

    resolved: bool
    spacing: float


def _verdict(
    name: str, x: float, reverse: float, forward: float, estimate: _Estimate, decision: str | None,
    slopes: _Slopes | None, rows: list[_Row], rounding: float, noisy: bool, rtol: float, atol: float,
    scale: _Scale,
) -> tuple[str, str | None, bool]:
    """The verdict, its reason, and whether it is the difference's refutation of reverse mode."""
    verdict, reason = _verdict_and_reason(name, x, reverse, forward, estimate, decision, slopes, rows, rounding,
                                          noisy, rtol, atol, scale)
    return (FAIL, reason, True) if verdict == _REFUTED else (verdict, reason, False)


_REFUTED = "refuted"  # _verdict_and_reason's FAIL by the difference alone (see ``InputCheck.refuted``)


def _verdict_and_reason(
    name: str, x: float, reverse: float, forward: float, estimate: _Estimate, decision: str | None,
    slopes: _Slopes | None, rows: list[_Row], rounding: float, noisy: bool, rtol: float, atol: float,
    scale: _Scale,
) -> tuple[str, str | None]:
    fd, fd_error = estimate.value, estimate.error
    tolerance = atol + rtol * abs(fd)
    kink_text = ""
    if slopes is not None and slopes.kink and name.startswith(DIRECTION):
        kink_text = (f"the one-sided slopes differ (left {_fmt(slopes.left)}, right {_fmt(slopes.right)}): "
                     f"{name} crosses a kink of the output at the given values, so the finite difference "
                     "along it is not a derivative there")
    elif slopes is not None and slopes.kink:
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
        return _REFUTED, f"{why}, and the difference is accurate to +-{fd_error:.2g}"
    return INCONCLUSIVE, _uncertain(name, x, reverse, fd, fd_error, tolerance, rows, rounding, noisy, estimate,
                                    scale)


def _uncertain(
    name: str, x: float, reverse: float, fd: float, fd_error: float, tolerance: float, rows: list[_Row],
    rounding: float, noisy: bool, estimate: _Estimate, scale: _Scale,
) -> str:
    """Why the finite difference cannot decide, with the cause: noise, rounding or the step."""
    shown_reverse, shown_fd = _fmt_pair(reverse, fd)
    smallest = rows[-1].step
    if noisy:
        return (f"the program's output at {name} = {_fmt(x)} is mostly rounding error (about {rounding:.2g}), "
                f"so no finite difference can confirm or refute reverse mode's {shown_reverse} (the best "
                f"estimate is {shown_fd} +-{fd_error:.2g})")
    if not scale.resolved:
        # The table's own error bar (however small) is not shown: it measures nothing here.
        floats = (f" ({smallest / scale.spacing:.3g} times the gap between floats there, {scale.spacing:.3g})"
                  if smallest <= 2.0 * _ULPS * scale.spacing else "")
        return (f"the finite difference {shown_fd} has no error bar to trust: the estimates still change from step "
                f"to step down to the smallest step tried, {smallest:.3g}{floats}, so the output varies on a scale "
                f"smaller than the steps, and reverse mode's {shown_reverse} can be neither confirmed nor refuted "
                f"at {name} = {_fmt(x)}")
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
    known = {h: (f_up, f_down)}
    found, noisy = yield from _kink_at(x, steps, known, f0, rounding, tolerance, precision)
    if found is None and noisy:
        # The gap held steady at every step, but the steps were so small (the sweep went down
        # to them) that rounding could explain it: look again at 64h, 8h and h, farther from it.
        found, _ = yield from _kink_at(x, [64.0 * h, 8.0 * h, h], known, f0, rounding, tolerance, precision)
    return found or _Slopes(left, right, False)


def _kink_at(
    x: float, steps: list[float], known: dict[float, Any], f0: float, rounding: float, tolerance: float,
    precision: Precision,
) -> Steps[tuple[_Slopes | None, bool]]:
    """The slopes at the smallest of ``steps`` (each 8 times the next) when their gap is a
    kink's, else None; and whether only the rounding noise at these steps ruled a kink out."""
    gaps = []
    slopes = (math.nan, math.nan)
    for step in steps:
        up, down = known[step] if step in known else (
            yield (precision.stored(x + step), precision.stored(x - step)))
        if isinstance(up, AutodiffError) or isinstance(down, AutodiffError):
            return None, False  # cannot look closer; the comparison still applies
        slopes = _one_sided(x, step, f0, up, down, precision)
        gaps.append(abs(slopes[1] - slopes[0]))
    coarse = (8.0 * gaps[1] - gaps[0]) / 7.0
    fine = (8.0 * gaps[2] - gaps[1]) / 7.0
    noise = 2.0 * _ROUNDING_SAFETY * rounding / steps[-1]
    steady = fine > tolerance and abs(coarse - fine) <= 0.25 * fine
    if steady and fine > 10.0 * noise:
        return _Slopes(slopes[0], slopes[1], True), False
    return None, steady
