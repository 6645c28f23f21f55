"""What a finite difference can resolve in a given precision (``check`` of a float32 program).

A central difference (f(x + h) - f(x - h)) / 2h carries the rounding of the two values it
subtracts: about eps * |f| / h, where eps is the precision's unit roundoff (2**-52 in
float64, 2**-23 in float32).  ``check`` picks h for float64 (the cube root of its eps, about
6e-6, times the input's scale); in float32 the same h leaves a rounding error of a few
percent of |f|, far above ``check``'s tolerance, so a float32 finite difference at that step
says nothing about the derivative.  This module says when that is so, and the step float32
needs instead (the cube root of its own eps, about 5e-3).  Standard library only.
"""

from __future__ import annotations

import math

__all__ = ["EPSILON", "difference_rounding", "step_for", "unresolved_warning"]

EPSILON = {"float64": 2.0**-52, "float32": 2.0**-23}  # the gap between 1 and the next number


def _eps(dtype: str) -> float:
    try:
        return EPSILON[dtype]
    except KeyError:
        raise ValueError(f"a precision is one of {', '.join(EPSILON)}, not {dtype!r}") from None


def step_for(dtype: str, x: float) -> float:
    """The central difference's step at x in ``dtype``: the cube root of its eps (which balances
    the rounding error against the h**2 truncation error), times max(1, |x|)."""
    return _eps(dtype) ** (1.0 / 3.0) * max(1.0, abs(x))


def difference_rounding(dtype: str, value: float, step: float, output_rounding: float | None = None) -> float:
    """The rounding error of a central difference of step ``step`` of a function whose value is
    ``value``, in ``dtype``: each of f(x + h) and f(x - h) is off by up to ``output_rounding``
    (by default eps * |f| / 2, one rounding of the result; a program's own error analysis,
    as ``check`` makes it, counts every operation), and their difference is divided by 2h."""
    if output_rounding is None:
        output_rounding = _eps(dtype) * max(abs(value), math.ulp(0.0)) / 2.0
    return output_rounding / step


def unresolved_warning(dtype: str, value: float, step: float, derivative: float, rtol: float,
                       atol: float, output_rounding: float | None = None) -> str | None:
    """A warning when a central difference in ``dtype`` cannot resolve the derivative to the
    check's tolerance (atol + rtol * |derivative|) because rounding alone is larger; None when
    it can.  ``output_rounding``: as for ``difference_rounding``."""
    rounding = difference_rounding(dtype, value, step, output_rounding)
    allowed = atol + rtol * abs(derivative)
    if rounding <= allowed:
        return None
    return (f"in {dtype}, a finite difference of step {step:.3g} is rounded by about {rounding:.2g}, more than "
            f"the tolerance {allowed:.3g}: {dtype} cannot confirm this derivative; check in float64 (leave out "
            "--dtype), or loosen --atol and --rtol")
