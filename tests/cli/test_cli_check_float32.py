"""`autodiff check --dtype float32` (issue 34): the check runs in float32, says so, and warns
where float32 cannot resolve a finite difference.  Expected numbers are NumPy's float32
arithmetic, computed here independently of the program."""

import json
from pathlib import Path

import numpy as np
import pytest

from autodiff_cli.cli import main

RTOL, ATOL = 1e-3, 1e-5  # check's defaults
F32 = np.float32


def run(runner, *args):
    return runner.invoke(main, ["check", *args], catch_exceptions=False)


def test_a_scalar_program_runs_in_float32(runner) -> None:
    result = run(runner, "y = x*x", "--set", "x=0.1", "--dtype", "float32", "--format", "json")
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    document = json.loads(result.stdout)
    assert document["dtype"] == "float32"
    assert document["verdict"] == "ok"
    x = F32(0.1)
    # float32 numbers written as eval writes them, their shortest text: x*x is 0.010000001 in
    # float32 (0.010000000707805157 as a float64), where float64 gives 0.010000000000000002
    assert document["value"] == float(str(x * x)) == 0.010000001
    (row,) = document["inputs"]
    assert row["value"] == float(str(x)) == 0.1
    assert row["reverse"] == row["forward"] == float(str(x + x)) == 0.2
    assert abs(row["finite_difference"] - float(x + x)) <= ATOL + RTOL * float(x + x)


def test_float64_says_no_dtype_as_before(runner) -> None:
    result = run(runner, "y = x*x", "--set", "x=0.1", "--format", "json")
    document = json.loads(result.stdout)
    assert "dtype" not in document
    assert document["value"] == 0.1 * 0.1


def test_the_text_and_table_say_the_precision(runner) -> None:
    plain = run(runner, "y = x*x", "--set", "x=3", "--dtype", "float32")
    assert plain.stdout.splitlines()[-1] == "dy/d input, 1 input: all agree (in float32: rtol 0.001, atol 1e-05)"
    table = run(runner, "y = x*x", "--set", "x=0.1", "--dtype", "float32", "--format", "table", "--no-color")
    assert "gradient check of y = 0.010000001, in float32" in table.stdout  # float32's shortest text
    assert str(F32(0.1) * F32(0.1)) == "0.010000001"


def _central32(x: float, h: float) -> float:
    """The central difference of 1000 + 0.001*x in float32, as NumPy computes it."""
    f = lambda t: F32(1000) + F32(0.001) * t
    up, down = F32(x) + F32(h), F32(x) - F32(h)
    return float((f(up) - f(down)) / (up - down))


def test_a_difference_float32_cannot_resolve_is_warned_and_inconclusive(runner) -> None:
    # Near 1000, float32 numbers are 6.1e-5 apart: the difference of two outputs is off by about
    # that, which over any step up to 0.1 is far more than the tolerance 1.1e-5 of the slope 0.001.
    slope = float(F32(0.001))
    allowed = ATOL + RTOL * slope
    errors = [abs(_central32(1.0, h) - slope) for h in np.geomspace(1e-4, 0.1, 40)]
    assert np.median(errors) > 3 * allowed
    result = run(runner, "y = 1000 + 0.001*x", "--set", "x=1", "--dtype", "float32", "--format", "json")
    assert result.exit_code == 3, result.output  # inconclusive, not a failure
    assert "warning: x: in float32, a finite difference of step" in result.stderr
    assert "leave out --dtype" in result.stderr
    assert "check inconclusive: x:" in result.stderr
    (row,) = json.loads(result.stdout)["inputs"]
    assert abs(_central32(1.0, row["step"]) - slope) > allowed  # at the step the check used, too
    float64 = run(runner, "y = 1000 + 0.001*x", "--set", "x=1")
    assert float64.exit_code == 0 and float64.stderr == ""


@pytest.mark.parametrize("x", ["1e7", "3.1e7"])
def test_a_step_nearly_a_period_of_sin_is_inconclusive_not_a_failure(runner, x) -> None:
    # float32's numbers near 1e7 are 1 apart (2 near 3.1e7), so no step is smaller than a few
    # units: every difference averages sin over most of a period and none is its slope.  The
    # gradient, cos(x) in float32, is right; the check must not fail it (it did, at exit 1,
    # with a difference "accurate to +-1.5e-06" that was 0.95 away from cos(1e7)).
    point = F32(float(x))
    assert np.spacing(point) >= 1.0
    result = run(runner, "y = sin(x)", "--set", f"x={x}", "--dtype", "float32", "--format", "json")
    assert result.exit_code == 3, result.output
    (row,) = json.loads(result.stdout)["inputs"]
    assert row["verdict"] == "inconclusive"
    assert row["reverse"] == pytest.approx(float(np.cos(point)), rel=1e-6)  # float32's cos, by NumPy
    assert row["step"] >= 4 * float(np.spacing(point))
    truth = float(np.cos(np.float64(point)))
    assert row["fd_error"] == "Infinity" or abs(row["finite_difference"] - truth) <= row["fd_error"]
    assert "check inconclusive: x: " in result.stderr and "times the gap between floats there" in result.stderr


@pytest.mark.parametrize("x", ["2.2e6", "7.77e6", "1.3e7", "3.1e7"])
def test_a_wiggle_below_float32s_rounding_is_inconclusive_not_a_failure(runner, x) -> None:
    # x**2 * 1e-6 is about 5e6 at 2.2e6, rounded in float32 by about 1: sin(x) beside it is
    # hidden at every step that rounding lets the difference resolve (a few hundred), and the
    # difference there is the mean slope, 2e-6*x, not the slope 2e-6*x + cos(x).  The gradient
    # is right; the check said FAIL (exit 1), "accurate to +-0.036" where it was 0.7 off.
    point = float(F32(float(x)))
    truth = 2e-6 * point + float(np.cos(point))  # the closed form, in float64
    result = run(runner, "y = x**2 * 1e-6 + sin(x)", "--set", f"x={x}", "--dtype", "float32", "--format", "json")
    assert result.exit_code == 3, result.output
    (row,) = json.loads(result.stdout)["inputs"]
    assert row["verdict"] == "inconclusive"
    assert row["reverse"] == pytest.approx(truth, rel=1e-5)
    assert abs(row["finite_difference"] - truth) <= row["fd_error"]  # the error bar covers the truth
    assert "check inconclusive: x: " in result.stderr and "the derivative itself" in result.stderr


def test_a_wiggle_below_rounding_fails_no_random_direction_either(runner) -> None:
    # A tensor program is checked along random directions too: along each, the derivative (by
    # reverse mode at points along it) swings as cos(x[0]) does, so no direction is refuted.
    result = run(runner, "y = sum(x**2 * 1e-6 + sin(x))", "--set", "x=[2.2e6, 2]", "--dtype", "float32",
                 "--format", "json")
    assert result.exit_code == 3, result.output
    rows = json.loads(result.stdout)["inputs"]
    assert [row["verdict"] for row in rows if row["name"].startswith("direction")] == ["inconclusive"] * 2
    assert "check failed" not in result.stderr


def test_a_refutation_stands_where_the_derivative_does_not_vary(runner) -> None:
    # relu(x) - relu(-x) is x: slope 1 on both sides of 0, where reverse mode says 0 (relu'(0) = 0
    # twice).  The derivative away from 0 is 1 at every step, so the difference of 1 refutes it.
    result = run(runner, "y = relu(x) - relu(-x)", "--set", "x=0", "--dtype", "float32")
    assert result.exit_code == 1, result.output
    assert "check failed: x: reverse mode gives 0 but the central difference gives 1" in result.stderr
    along = run(runner, "y = sum(relu(x) - relu(-x))", "--set", "x=[0, 0]", "--dtype", "float32")
    assert along.exit_code == 1 and "check failed: direction 1: reverse mode gives 0" in along.stderr


def test_ordinary_float32_checks_still_pass_and_fail(runner) -> None:
    for program, value in [("y = sin(x)", "1.5"), ("y = exp(x)*x", "0.3"), ("y = x*x*x", "20")]:
        result = run(runner, program, "--set", f"x={value}", "--dtype", "float32")
        assert result.exit_code == 0, (program, result.output)


def test_a_kink_still_fails_in_float32(runner) -> None:
    result = run(runner, "y = relu(x)", "--set", "x=0", "--dtype", "float32")
    assert result.exit_code == 1
    assert "kink" in result.stderr and "warning" not in result.stderr


def test_a_refuted_gradient_gets_no_float32_warning(runner) -> None:
    # relu's gradient 0 at its kink, against a difference of about 1/2 known to +-0.004: refuted,
    # so float32's rounding (too large to confirm a gradient to 1e-5) is no news to warn about.
    result = run(runner, "y = relu(k) + x", "--set", "k=0", "--set", "x=1", "--dtype", "float32")
    assert result.exit_code == 1
    assert "check failed: k:" in result.stderr and "warning" not in result.stderr


def test_a_tensor_program_in_float32(runner) -> None:
    result = run(runner, "y = sum(x * x)", "--set", "x=[0.1, 0.2, 0.3]", "--dtype", "float32", "--format", "json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["dtype"] == "float32"
    x = np.array([0.1, 0.2, 0.3], dtype=F32)
    assert document["value"] == float(str(np.sum(x * x)))
    entries = {row["name"]: row for row in document["inputs"] if row["name"].startswith("x[")}
    assert set(entries) == {"x[0]", "x[1]", "x[2]"}
    for i, value in enumerate(x):
        assert entries[f"x[{i}]"]["value"] == float(str(value))
        assert entries[f"x[{i}]"]["reverse"] == float(str(F32(2) * value))


def test_claims_are_judged_in_float64_only(runner) -> None:
    result = runner.invoke(main, ["check", "y = x*x", "--claim", "dy/dx = 2*x", "--dtype", "float32"])
    assert result.exit_code == 2
    assert "claims are judged in float64" in result.stderr


@pytest.mark.parametrize("name", ["check.py"])
def test_the_command_does_not_fork_on_shapes(name: str) -> None:
    # One library call per mode: the library picks the executor (issue 32).
    source = (Path(__file__).parents[2] / "autodiff_cli" / "cli" / name).read_text(encoding="utf-8")
    assert "runs_as_tensors" not in source and "tensor_" not in source
