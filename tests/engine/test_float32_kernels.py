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


# One program per op that is not elementwise, differentiated through it; together they use every
# such op of the registry (a new one must add its program here).
THROUGH_EVERY_OP = {
    "x = [[0.1, -1], [2, 3]]; y = sum(sum(x, 0)*x) + sum(mean(x, 1, keepdim)*x)": ("sum", "mean"),
    "x = [[0.1, -1], [2, 2]]; y = sum(max(x, 1)) + min(x)": ("max", "min"),  # a tie in each
    "x = [[0.1, -1], [2, 3]]; y = sum(var(x, 0)) + std(x)": ("var", "std"),
    "x = [[0.1, -1], [2, 3]]; y = sum(softmax(x)*x) + sum(log_softmax(x)) + sum(logsumexp(x))":
        ("softmax", "log_softmax", "logsumexp"),
    "x = [0.1, -1]; t = [0.3, 0.2]; y = mse(x, t)": ("mse",),
    "x = [[0.1, -1], [2, 3]]; t = [1, 0]; y = cross_entropy(x, t)": ("cross_entropy",),
    "x = [0.1, -1]; y = sum(where(x < 0, x*x, 0.3*x)) + sum(clip(x, -0.5, 0.05)) + sum((x <= 0)*x)"
    " + sum((x > 0)*x) + sum((x >= 0)*x) + sum((x == 0.1)*x) + sum((x != 0.1)*x)":
        ("where", "clip", "<", "<=", ">", ">=", "==", "!="),
    "x = [0.1, -1]; s = [x, 2*x]; y = sum(concat([x, x*x])) + sum(s*s)": ("stack", "concat"),
    "x = [0.1, -1, 2, 3]; r = reshape(x, [2, 2]); y = sum(transpose(r) @ cumsum(r))": ("reshape", "transpose", "@",
                                                                                      "cumsum"),
    "x = [0.1, -1, 2]; i = [2, 0]; y = sum(x[i]*x[0:2]) + x[1]": ("index", "pick", "gather"),
    "C = [[0.1, -1], [2, 3], [0.3, 0.7]]; X = [[0, 2], [1, 1]]; e = C[X]; y = sum(e*e)": ("gather",),
    "x = [[0.1, -1], [2, 3]]; t = [1, 0]; y = sum(one_hot(t, 2)*x) + sum(ones_like(x)*x)"
    " + sum(zeros_like(x)*x) + sum(argmax(x, 1)*arange(2))": ("one_hot", "ones_like", "zeros_like", "argmax", "arange"),
}


@pytest.mark.parametrize("source", sorted(THROUGH_EVERY_OP))
def test_a_float32_run_through_each_op_is_float32_throughout(source: str) -> None:
    run = run_program(parse(source), dtype="float32")
    for name in run.names:
        value, derivative = np.asarray(run.value(name)), run.derivative(name)
        assert value.dtype in (np.float32, np.int64), (name, value.dtype)
        assert derivative is None or np.asarray(derivative).dtype == np.float32, (name, np.asarray(derivative).dtype)
    forward = run_program(parse(source), dtype="float32", forward=True)
    for name in forward.names:
        derivative = forward.derivative(name)
        assert derivative is None or np.asarray(derivative).dtype == np.float32, (name, "forward mode")


def test_scatter_keeps_float32() -> None:
    """``scatter`` is written only by diff (the adjoint of a pick): its entry is called directly.
    [0.5, 2] scattered to the places [2, 0] of rows of 3 is [[0, 0, 0.5], [2, 0, 0]]."""
    from autodiff_cli.engine.registry import ENTRIES

    entry = ENTRIES["scatter"]
    g, places = np.array([0.5, 2.0], dtype=np.float32), np.array([2.0, 0.0], dtype=np.float32)
    out = entry.forward(np, (g, places), (0, 0), 3)
    np.testing.assert_array_equal(out, [[0.0, 0.0, 0.5], [2.0, 0.0, 0.0]])
    adjoint = np.arange(6, dtype=np.float32).reshape(2, 3)
    made = [out, *entry.vjp(np, adjoint, out, (g, places), (0, 0), 3),
            entry.jvp(np, (None, None), out, (g, places), (0, 0), 3), entry.jvp(np, (g, None), out, (g, places), (0, 0), 3)]
    assert [array.dtype for array in made] == [np.float32] * 5
    np.testing.assert_array_equal(made[1], [2.0, 3.0])  # each row's adjoint read back where it was put


def test_the_float32_programs_go_through_every_op() -> None:
    from autodiff_cli.engine.registry import ENTRIES

    covered = {op for ops in THROUGH_EVERY_OP.values() for op in ops} | {"scatter"}
    assert set(ENTRIES) - set(OPS) <= covered, sorted(set(ENTRIES) - set(OPS) - covered)
