"""A float32 run stays in float32 (issue 34): every elementwise kernel of the registry gives its
value and its local derivatives in the operands' precision, so no float64 array joins a float32
sweep and turns its values and gradients into float64 ones."""

from __future__ import annotations

import numpy as np
import pytest

from autodiff_cli.engine.ops import OPS
from autodiff_cli.execute.run import run_program
from autodiff_cli.language import parse

X = np.array([-1.5, 0.0, 0.5, 2.0, 0.5], dtype=np.float32)
Y = np.array([2.0, 1.0, 3.0, -0.5, 0.5], dtype=np.float32)  # the last pair ties


def _kernel_results(name: str) -> list:
    op = OPS[name]
    if name == "**c":
        operands = (X, 2.0)
    elif op.arity == 1:
        operands = (X,)
    else:
        operands = (np.abs(X) + np.float32(0.5), Y)
    with np.errstate(all="ignore"):
        out, slopes = op.vector(np, *operands)
        slopes = slopes() if callable(slopes) else slopes
    return [out, *(slopes if isinstance(slopes, tuple) else (slopes,))]


@pytest.mark.parametrize("name", sorted(OPS))
def test_an_elementwise_kernel_keeps_float32(name: str) -> None:
    for array in _kernel_results(name):
        if isinstance(array, np.ndarray) and array.dtype.kind == "f":  # a Python float or a mask is weak
            assert array.dtype == np.float32, name


def test_a_float32_run_of_step_maximum_and_powers_is_float32_throughout() -> None:
    # y = sum(maximum(x, 0.3x) + step(x)*x) + sum(2**x) at x = [0.1, -1]:
    # dy/dx = (1 or 0.3) + step(x) + 2**x * ln 2 = [2 + 2**0.1 ln 2, 0.3 + 0.5 ln 2], in float32.
    run = run_program(parse("x = [0.1, -1]; s = step(x); y = sum(maximum(x, 0.3*x) + s*x) + sum(2**x)"),
                      dtype="float32")
    for name in ("x", "s", "y"):
        assert run.value(name).dtype == np.float32
        assert run.derivative(name).dtype == np.float32
    x = np.array([0.1, -1.0])
    expected = np.array([1.0, 0.3]) + (x > 0) + 2.0**x * np.log(2.0)
    np.testing.assert_allclose(run.derivative("x"), expected, rtol=1e-6)
