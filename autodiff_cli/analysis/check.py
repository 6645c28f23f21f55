"""Gradient check: reverse mode, forward mode and a finite difference, for every input.

For each input x the program is evaluated again at x + h and x - h (all other
inputs fixed) and the central difference (f(x+h) - f(x-h)) / (2h) is compared
with the gradient from reverse mode and from forward mode.  The step is
h = eps**(1/3) * max(1, |x|): with float64's eps that is about 6e-6 for |x| <= 1,
the step that balances the difference's truncation error (~h**2) against its
rounding error (~eps/h), scaled so that x + h differs from x for large |x|.

Agreement is judged as ``torch.autograd.gradcheck`` does,
|analytic - numerical| <= atol + rtol * |numerical|, with its defaults
atol = 1e-5 and rtol = 1e-3.  A point where f is not differentiable (relu at 0)
gives a central difference that no one-sided rule matches (0.5 against relu'(0) = 0)
and is reported as a disagreement.  Because a symmetric kink (abs at 0) fools the
central difference, the one-sided slopes are compared too, at two step sizes:
a gap that does not shrink with the step is a kink, reported even when the
central difference happens to agree.

A perturbed point can leave the domain (log of x - h for x near 0) or overflow:
the step is then cut until both points are inside; if none is, that input cannot
be checked, which is a failure with the reason, never an exception.  So is an infinite or NaN gradient (sqrt at 0).  When the difference
disagrees with smooth but sharply curved output, the reason says that the
difference may be the inaccurate one.  The renderers are in ``render/check.py``.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ..errors import AutodiffError
from ..execute.scalar import Evaluation, evaluate, forward_gradients

__all__ = [
    "DEFAULT_ATOL",
    "DEFAULT_RTOL",
    "CheckResult",
    "InputCheck",
    "check_gradients",
    "failure_messages",
    "step_size",
]

DEFAULT_RTOL = 1e-3
DEFAULT_ATOL = 1e-5

_CUBE_ROOT_EPS = sys.float_info.epsilon ** (1.0 / 3.0)
# How many times the step may be cut tenfold to keep x +- h inside the domain.
_MAX_SHRINKS = 8


def step_size(x: float) -> float:
    """The finite-difference step for an input at x: eps**(1/3) * max(1, |x|)."""
    return _CUBE_ROOT_EPS * max(1.0, abs(x))


@dataclass(frozen=True)
class InputCheck:
    """The three derivatives of the output with respect to one input, and the verdict.

    ``finite_difference`` is None when the program cannot be evaluated at x + h or
    x - h.  ``abs_error`` and ``rel_error`` compare reverse mode with the finite
    difference (the larger of the two analytic errors, should forward mode differ).
    ``reason`` says why the input fails; it is None when it passes.
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


@dataclass(frozen=True)
class CheckResult:
    output: str
    value: float
    rtol: float
    atol: float
    inputs: list[InputCheck]
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(check.ok for check in self.inputs)

    @property
    def failures(self) -> list[InputCheck]:
        return [check for check in self.inputs if not check.ok]


def _agree(analytic: float, numerical: float, rtol: float, atol: float) -> bool:
    return abs(analytic - numerical) <= atol + rtol * abs(numerical)


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


def check_gradients(
    evaluation: Evaluation, *, rtol: float = DEFAULT_RTOL, atol: float = DEFAULT_ATOL
) -> CheckResult:
    """Check d output / d input for every input of an evaluation made with ``backward=True``.

    The program is re-evaluated (values only) at two perturbed points per input.
    """
    if evaluation.root.grad != 1.0:
        raise ValueError("check_gradients needs an evaluation with gradients: evaluate(..., backward=True)")
    if not (rtol >= 0.0 and atol >= 0.0):
        raise ValueError("rtol and atol must be non-negative numbers")
    program, output = evaluation.program, evaluation.output
    point = {variable.name: evaluation.nodes[variable.name].data for variable in program.inputs}
    forward = forward_gradients(evaluation).grads
    f0 = evaluation.root.data

    def f(name: str, x: float) -> float:
        return evaluate(program, {**point, name: x}, output, backward=False).root.data

    checks = []
    for name, x in point.items():
        reverse = evaluation.nodes[name].grad
        checks.append(_check_one(name, x, reverse, forward[name], f0, f, rtol, atol))
    return CheckResult(output, f0, rtol, atol, checks, list(evaluation.warnings))


def _check_one(
    name: str, x: float, reverse: float, forward: float, f0: float, f: Any, rtol: float, atol: float
) -> InputCheck:
    h, failure = _usable_step(name, x, f)
    if failure is not None:
        reason = _unbounded(name, x, reverse, forward) or failure
        return InputCheck(name, x, reverse, forward, None, h, None, None, False, reason)
    up, down = x + h, x - h
    f_up, f_down = f(name, up), f(name, down)
    # Dividing by the step actually taken, (x+h) - (x-h), rather than 2h removes the
    # rounding of x + h from the quotient.
    fd = (f_up - f_down) / (up - down)
    errors = [abs(reverse - fd), abs(forward - fd)]
    abs_error = math.nan if any(math.isnan(e) for e in errors) else max(errors)
    rel_error = _relative(abs_error, fd)
    # Below the default tolerance a gap between the one-sided slopes is ordinary curvature
    # (about h * |f''|), not worth a diagnosis, however strict the caller's tolerance.
    slopes = _kink(name, x, h, f0, f_up, f_down, f,
                   max(atol + rtol * abs(fd), DEFAULT_ATOL + DEFAULT_RTOL * abs(fd)))
    reason = _unbounded(name, x, reverse, forward) or _disagreement(
        name, x, reverse, forward, fd, slopes, rtol, atol)
    return InputCheck(name, x, reverse, forward, fd, h, abs_error, rel_error, reason is None, reason)


def _usable_step(name: str, x: float, f: Any) -> tuple[float, str | None]:
    """The step to difference with, and why there is none (None when there is one).

    Near the edge of a domain (log at x = 1e-7) or of the float range (exp near 709.78)
    the standard step leaves it.  The edge is then closer than the step, so the step is
    cut tenfold until both points can be evaluated, and twice more after that, which
    leaves it at most a hundredth of the distance to the edge: the truncation error,
    about (step / distance)**2 of the derivative, stays below about 1e-4.
    """
    h = step_size(x)
    first_failure = None
    for _ in range(_MAX_SHRINKS + 1):
        failed_at, side = x + h, "+"
        try:
            f(name, x + h)
            failed_at, side = x - h, "-"
            f(name, x - h)
        except AutodiffError as error:
            if first_failure is None:
                # The library message already says which operation failed and why; add where.
                first_failure = (f"cannot take the finite difference: the program fails at {name} = "
                                 f"{_fmt(failed_at)} ({name} {side} step {h:.3g}): {error.message}")
            h /= 10.0
            continue
        if first_failure is None:
            return h, None
        # The edge lies between h and 10h away; two more tenths keep the truncation error
        # (about (h / distance)**2) near 1e-4 of the derivative.
        for _ in range(2):
            try:
                f(name, x + h / 10.0)
                f(name, x - h / 10.0)
            except AutodiffError:
                break
            h /= 10.0
        return h, None
    assert first_failure is not None
    return h * 10.0, f"{first_failure}; steps down to {h * 10.0:.3g} fail too"


def _unbounded(name: str, x: float, reverse: float, forward: float) -> str | None:
    for mode, grad in (("reverse", reverse), ("forward", forward)):
        if not math.isfinite(grad):
            return (f"{mode} mode gives {grad} for d/d{name} at {name} = {_fmt(x)}: "
                    "the derivative is unbounded or undefined here")
    return None


def _one_sided(x: float, h: float, f0: float, f_up: float, f_down: float) -> tuple[float, float]:
    return (f0 - f_down) / (x - (x - h)), (f_up - f0) / ((x + h) - x)


class _Slopes(NamedTuple):
    """One-sided slopes whose gap exceeds the tolerance, and whether the gap is a kink's."""

    left: float
    right: float
    kink: bool


def _kink(
    name: str, x: float, h: float, f0: float, f_up: float, f_down: float, f: Any, tolerance: float
) -> _Slopes | None:
    """The one-sided slopes when they differ by more than the tolerance, else None.

    For a smooth output the one-sided slopes differ by about h * |f''|, so the gap
    shrinks in proportion when the step does; at a kink it is the jump in slope,
    whatever the step.  Testing with h and h/8 tells the two apart without
    guessing the scale of f''.  A symmetric kink (abs at 0) has a central difference
    equal to the mean of the slopes and would pass unnoticed without this test.
    """
    left, right = _one_sided(x, h, f0, f_up, f_down)
    gap = abs(right - left)
    if not gap > tolerance:  # also False for NaN: nothing reliable to report
        return None
    small = h / 8.0
    try:
        small_left, small_right = _one_sided(x, small, f0, f(name, x + small), f(name, x - small))
    except AutodiffError:
        return None  # cannot look closer; the central-difference comparison still applies
    if abs(small_right - small_left) > 0.5 * gap:
        return _Slopes(small_left, small_right, True)
    return _Slopes(left, right, False)


def _disagreement(
    name: str, x: float, reverse: float, forward: float, fd: float,
    slopes: _Slopes | None, rtol: float, atol: float,
) -> str | None:
    """Why this input fails, in words, or None when the three derivatives agree."""
    if not math.isfinite(fd):
        return f"the finite difference is {fd} at {name} = {_fmt(x)}"
    kink_text = ""
    if slopes is not None and slopes.kink:
        kink_text = (f"the one-sided slopes differ (left {_fmt(slopes.left)}, right {_fmt(slopes.right)}): "
                     f"the output has a kink at or near {name} = {_fmt(x)} and no derivative there")
    if not _agree(reverse, fd, rtol, atol):
        shown_reverse, shown_fd = _fmt_pair(reverse, fd)
        why = (f"reverse mode gives {shown_reverse} but the central difference gives {shown_fd} "
               f"(|error| {abs(reverse - fd):.3g} > atol + rtol*|fd| = {atol + rtol * abs(fd):.3g})")
        if kink_text:
            return f"{why}; {kink_text}"
        if slopes is not None:
            # A smooth but sharply curved output: the difference itself may be what is off.
            why += (f"; the one-sided slopes ({_fmt(slopes.left)}, {_fmt(slopes.right)}) differ but "
                    "converge as the step shrinks: the output curves sharply here, so the finite "
                    "difference may be the inaccurate one")
        return why
    if kink_text:
        return (f"reverse mode and the central difference agree ({_fmt(reverse)}), but {kink_text}; "
                f"{_fmt(reverse)} is only a convention")
    if not _agree(forward, fd, rtol, atol):
        shown_forward, shown_fd = _fmt_pair(forward, fd)
        return (f"forward mode gives {shown_forward} but reverse mode and the central difference "
                f"give {_fmt_pair(reverse, fd)[0]} and {shown_fd}")
    return None


def failure_messages(result: CheckResult) -> list[str]:
    """One line per failing input: ``NAME: reason``."""
    return [f"{check.name}: {check.reason}" for check in result.failures]
