"""Every op's vector kernel at kinks, domain edges and the ends of the float range.

Each op runs alone (``y = op(x)``, ``y = x op z``, ``y = x ** c`` for many ``c``) over
rows of awkward values (zeros of both signs, subnormals, the kinks, 709.78 and 709.79
around exp's overflow, 1e154 and 1e155 around a square's, the largest float), through
``evaluate_batch``, and every row is compared with the scalar engine's ``evaluate``:

* the same rows fail, with the same message;
* elsewhere, for + - * / neg sqrt abs relu sign step and copies, the value and both
  slopes are bit-identical (the sign of zero, infinities and NaNs included);
* for exp, log, sin, cos, tanh, sigmoid and powers, NumPy's routine and the C
  library's may differ in the last bits: the value within 4 ulps, a slope within
  8 ulps of the larger of |slope| and |value| (a slope made from the value, like
  tanh's 1 - t*t, inherits the value's error in absolute terms, not relative ones);
  non-finite results must match exactly.

The slopes at the kinks follow the op table's conventions (relu'(0) = abs'(0) = 0,
sqrt'(0) = inf, x**y's slopes at a zero base), which the scalar engine's tests pin
down against PyTorch; here they are checked to be the same in both interpreters, and
a few are spelled out by hand below.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from autodiff_cli.engine import OPS
from autodiff_cli.errors import EvaluationError
from autodiff_cli.execute import evaluate
from autodiff_cli.execute.batch_evaluator import evaluate_batch
from autodiff_cli.language import parse

EXACT = {"+", "-", "*", "/", "neg", "=", "sqrt", "abs", "relu", "sign", "step", "maximum", "minimum"}
TINY, MAX = 5e-324, 1.7976931348623157e308
EDGES = (0.0, -0.0, TINY, -TINY, 2.2250738585072014e-308, -2.2250738585072014e-308, 1e-300, -1e-300,
         1e-8, -1e-8, 0.25, -0.25, 0.5, -0.5, 1.0, -1.0, 2.0, -2.0, 3.0, -3.0, 19.5, -19.5, 40.0, -40.0,
         709.78, -709.78, 709.79, -709.79, 745.2, -745.2, 1e154, -1e154, 1e155, -1e155, 1e300, -1e300,
         MAX, -MAX)
EXPONENTS = (2.0, 3.0, -1.0, -2.0, 0.5, 1.5, 0.0, 1.0, 2.5, -0.5, 4.0, 0.25, 7.0, -3.0)

PROGRAMS = {
    **{op: f"y = x {op} z" for op in ("+", "-", "*", "/", "**")},
    "neg": "y = -x",
    "=": "y = x",
    **{name: f"y = {name}(x)" for name in ("tanh", "exp", "log", "sqrt", "relu", "sigmoid", "softplus", "sin", "cos", "abs",
                                            "sign", "step")},
    **{name: f"y = {name}(x, z)" for name in ("maximum", "minimum")},  # the grid holds every tie x = z
}


def test_every_op_has_a_vector_kernel_returning_its_slopes() -> None:
    assert set(PROGRAMS) | {"**c"} == set(OPS)
    x, y = np.array([0.5, 1.5]), np.array([2.0, 3.0])
    for name, op in OPS.items():
        operands = (x, 2.0) if name == "**c" else (x, y)[: op.arity]
        out, slopes = op.vector(np, *operands)
        assert np.shape(out) == (2,) and len(slopes()) == op.arity, name
        scalar_out, *_ = op.scalar(*(0.5, 2.0)[: max(op.arity, 2 if name == "**c" else 1)])
        assert out[0] == pytest.approx(scalar_out, rel=1e-15), name


def ulp(x: float) -> float:
    return math.ulp(x) if math.isfinite(x) else math.inf


def ulps(got: float, want: float) -> float:
    return abs(got - want) / ulp(abs(want))


def agree(got: float, want: float, exact: bool, scale: float, allowed: float) -> bool:
    if math.isnan(want) or math.isinf(want) or exact:
        return (math.isnan(got) and math.isnan(want)) or (
            got == want and math.copysign(1.0, got) == math.copysign(1.0, want))
    return abs(got - want) <= allowed * ulp(max(abs(want), scale))


def check_program(text: str, columns: dict[str, np.ndarray], exact: bool) -> None:
    program = parse(text, "<program>")
    names = [v.name for v in program.inputs]
    result = evaluate_batch(program, columns, on_error="nan")
    for row in range(result.rows):
        values = {name: float(columns[name][row]) for name in names}
        try:
            evaluation = evaluate(program, values)
        except EvaluationError as error:
            assert result.failed[row], (text, values, error.message)
            assert result.error(row).message == error.message, (text, values)
            continue
        assert not result.failed[row], (text, values, str(result.error(row)))
        want = evaluation.root.data
        got = float(result.value[row])
        assert agree(got, want, exact, 0.0, 4), (text, values, got, want, ulps(got, want))
        for name in names:
            want_slope, got_slope = evaluation.nodes[name].grad, float(result.grads[name][row])
            assert agree(got_slope, want_slope, exact, abs(want), 8), (text, values, name, got_slope, want_slope)


def grid(names: tuple[str, ...], values: tuple[float, ...]) -> dict[str, np.ndarray]:
    mesh = np.meshgrid(*[np.array(values)] * len(names), indexing="ij")
    return {name: m.ravel() for name, m in zip(names, mesh)}


@pytest.mark.parametrize("op", list(PROGRAMS), ids=list(PROGRAMS))
def test_op_at_the_edges(op: str) -> None:
    text = PROGRAMS[op]
    names = ("x", "z") if " z" in text else ("x",)
    check_program(text, grid(names, EDGES), op in EXACT)


@pytest.mark.parametrize("c", EXPONENTS, ids=[f"c={c:g}" for c in EXPONENTS])
def test_constant_power_at_the_edges(c: float) -> None:
    check_program(f"y = x ** ({c!r})", grid(("x",), EDGES), exact=False)


@pytest.mark.parametrize(
    "text, x, value, slope",
    [("y = relu(x)", 0.0, 0.0, 0.0), ("y = relu(x)", -0.0, 0.0, 0.0), ("y = abs(x)", -0.0, 0.0, 0.0),
     ("y = sqrt(x)", 0.0, 0.0, math.inf), ("y = sqrt(x)", -0.0, -0.0, math.inf),
     ("y = sqrt(relu(x))", 0.0, 0.0, math.nan),  # relu'(0) * sqrt'(0) = 0 * inf
     ("y = step(x)*x", 0.0, 0.0, 0.0), ("y = sign(x)", -0.0, 0.0, 0.0),
     ("y = x ** 0.5", 0.0, 0.0, math.inf), ("y = x ** 0", 0.0, 1.0, 0.0), ("y = x ** 1", -0.0, -0.0, 1.0),
     ("y = tanh(x)", 40.0, 1.0, 0.0), ("y = sigmoid(x)", -745.2, 0.0, 0.0), ("y = exp(x)", -745.2, 0.0, 0.0)],
    ids=["relu0", "relu-0", "abs-0", "sqrt0", "sqrt-0", "sqrt-relu0", "step0", "sign-0", "pow-half0",
         "pow-zero0", "pow-one-0", "tanh-saturated", "sigmoid-underflow", "exp-underflow"],
)
def test_conventions_by_hand(text: str, x: float, value: float, slope: float) -> None:
    result = evaluate_batch(text, {"x": [x]})
    got_value, got_slope = float(result.value[0]), float(result.grads["x"][0])
    assert agree(got_value, value, True, 0.0, 0) and agree(got_slope, slope, True, 0.0, 0), (got_value, got_slope)


@pytest.mark.parametrize(
    "x, z, dx, dz",
    [(0.0, 2.0, 0.0, 0.0),         # y*x**(y-1) = 0; dz: 0 at a zero base
     (0.0, 0.0, 0.0, 0.0),         # 0**0 = 1, both slopes 0 by convention
     (0.0, 0.5, math.inf, 0.0),    # vertical at 0
     (-2.0, 3.0, 12.0, math.nan),  # no real log of -2
     (2.0, 0.0, 0.0, math.log(2.0))],
    ids=["zero-base", "zero-zero", "vertical", "negative-base", "zero-exponent"],
)
def test_computed_power_slopes_by_hand(x: float, z: float, dx: float, dz: float) -> None:
    result = evaluate_batch("y = x ** z", {"x": [x], "z": [z]})
    assert agree(float(result.grads["x"][0]), dx, True, 0, 0), result.grads
    assert agree(float(result.grads["z"][0]), dz, math.isnan(dz), 1.0, 1), result.grads


@pytest.mark.parametrize(
    "text, x, message",
    [("y = log(x)", 0.0, "log of 0 is undefined"), ("y = log(x)", -0.0, "log of -0 is undefined"),
     ("y = sqrt(x)", -TINY, "sqrt of -4.94066e-324 is undefined"), ("y = 1/x", -0.0, "division by zero"),
     ("y = x ** -1", 0.0, "0 raised to the negative power -1"), ("y = x ** 0.5", -1.0, "negative base -1"),
     ("y = exp(x)", 709.79, "exp(709.79) overflows"), ("y = x*x", 1e155, "the result of '*' overflows")],
    ids=["log0", "log-0", "sqrt-tiny", "div-0", "pow-zero", "pow-negative", "exp-overflow", "mul-overflow"],
)
def test_domain_edges_fail_the_row(text: str, x: float, message: str) -> None:
    result = evaluate_batch(text, {"x": [1.0, x]}, on_error="nan")
    assert result.failed.tolist() == [False, True]
    assert message in result.error(1).message
