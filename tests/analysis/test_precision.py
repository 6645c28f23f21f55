"""When a float32 finite difference cannot confirm a derivative: the rounding the module
predicts is held against real float32 central differences of exp, sin and a cubic, computed
with NumPy in float32 and compared with their exact derivatives (math in float64)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from autodiff_cli.analysis.precision import EPSILON, difference_rounding, step_for, unresolved_warning

RTOL, ATOL = 1e-3, 1e-5  # check's defaults

CASES = [  # f in float32, its exact derivative, the point
    (lambda x: np.exp(x), math.exp, 1.0),
    (lambda x: np.sin(x), math.cos, 0.3),
    (lambda x: x**3 - 2 * x, lambda x: 3 * x * x - 2, 1.7),
]


def central32(f, x: float, h: float) -> float:
    x32, h32 = np.float32(x), np.float32(h)
    return float((f(x32 + h32) - f(x32 - h32)) / (np.float32(2) * h32))


def test_the_precisions_eps_are_numpys() -> None:
    assert EPSILON["float64"] == np.finfo(np.float64).eps
    assert EPSILON["float32"] == np.finfo(np.float32).eps


@pytest.mark.parametrize("f, exact, x", CASES)
def test_float64s_step_in_float32_misses_the_tolerance_and_is_said(f, exact, x) -> None:
    points = x + np.arange(200) * 1e-3  # rounding differs from point to point: look at many
    h = step_for("float64", x)  # what check uses today, about 6e-6
    errors = np.array([abs(central32(f, p, h) - exact(p)) for p in points])
    allowed = np.array([ATOL + RTOL * abs(exact(p)) for p in points])
    assert (errors > allowed).mean() > 0.2  # the float32 difference often fails a right derivative
    predicted = np.array([difference_rounding("float32", float(f(np.float32(p))), h) for p in points])
    assert 0.1 < np.max(errors) / np.max(predicted) < 10  # the prediction is of the errors' size
    for p in points[:5]:
        said = unresolved_warning("float32", float(f(np.float32(p))), h, exact(p), RTOL, ATOL)
        assert said is not None and "float32" in said and "float64" in said


@pytest.mark.parametrize("f, exact, x", CASES)
def test_float32s_own_step_resolves_and_nothing_is_said(f, exact, x) -> None:
    h = step_for("float32", x)  # about 5e-3
    for p in x + np.arange(50) * 1e-3:
        assert abs(central32(f, p, h) - exact(p)) <= ATOL + RTOL * abs(exact(p))
        assert unresolved_warning("float32", float(f(np.float32(p))), h, exact(p), RTOL, ATOL) is None


def test_float64_at_its_own_step_says_nothing() -> None:
    assert unresolved_warning("float64", math.exp(1.0), step_for("float64", 1.0), math.exp(1.0), RTOL, ATOL) is None


def test_an_unknown_precision_is_refused() -> None:
    with pytest.raises(ValueError, match="float64, float32"):
        step_for("float16", 1.0)
