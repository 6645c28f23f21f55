"""The gradient check library: three derivatives per input, verdicts and reasons, renderers.

The finite differences in the expected values are worked out by hand: they are
exact where the program is linear in the input or where the kink sits exactly
at the point, and otherwise bounded by the known truncation error h**2 * f'''/6.
"""

import json
import math
import sys

import pytest

from autodiff_cli.analysis import check as check_module
from autodiff_cli.analysis.check import (
    DEFAULT_ATOL,
    DEFAULT_RTOL,
    check_gradients,
    failure_messages,
    step_size,
)
from autodiff_cli.render.check import to_json, to_plain, to_table
from autodiff_cli.engine.forward import ForwardResult
from autodiff_cli.execute import evaluate
from autodiff_cli.language import parse

H = sys.float_info.epsilon ** (1 / 3)  # the step at |x| <= 1


def checked(text: str, values=None, **tolerances):
    return check_gradients(evaluate(parse(text), values), **tolerances)


def test_defaults_are_gradchecks() -> None:
    assert (DEFAULT_RTOL, DEFAULT_ATOL) == (1e-3, 1e-5)


@pytest.mark.parametrize(
    ("x", "step"),
    [(0.0, H), (0.5, H), (-1.0, H), (3.0, 3 * H), (-1000.0, 1000 * H)],
    ids=["zero", "half", "minus_one", "three", "minus_thousand"],
)
def test_step_scales_with_the_input(x: float, step: float) -> None:
    assert step_size(x) == pytest.approx(step, rel=1e-15)


def test_quadratic_passes() -> None:
    # f = 3x^2 + xy + 5y^2 at (2, 3): df/dx = 6x + y = 15, df/dy = x + 10y = 32.
    # f is quadratic, so the central difference has no truncation error: only rounding.
    result = checked("x = 2\ny = 3\nf = 3*x**2 + x*y + 5*y**2")
    assert result.ok and result.failures == []
    assert [(c.name, c.value, c.reverse, c.forward) for c in result.inputs] == [
        ("x", 2.0, 15.0, 15.0), ("y", 3.0, 32.0, 32.0)]
    for c in result.inputs:
        assert abs(c.finite_difference - c.reverse) < 1e-8
        assert c.reason is None
    assert [c.step for c in result.inputs] == [2 * H, 3 * H]


def test_linear_program_has_an_exact_difference() -> None:
    # y = 2*x: 2(x+h) - 2(x-h) = 2((x+h) - (x-h)) exactly, divided by (x+h) - (x-h): 2.
    (c,) = checked("y = 2*x", {"x": 1.0}).inputs
    assert (c.reverse, c.forward, c.finite_difference, c.abs_error, c.rel_error) == (2.0, 2.0, 2.0, 0.0, 0.0)


def test_relu_at_zero_is_a_disagreement() -> None:
    # relu(0 + h) = h, relu(0 - h) = 0: the central difference is h / 2h = 0.5, while
    # reverse (and forward) mode use relu'(0) = 0.
    result = checked("y = relu(x)", {"x": 0.0})
    assert not result.ok
    (c,) = result.failures
    assert (c.reverse, c.forward, c.finite_difference, c.abs_error, c.rel_error) == (0.0, 0.0, 0.5, 0.5, 1.0)
    assert c.reason.startswith("reverse mode gives 0 but the central difference gives 0.5")
    assert "one-sided slopes differ (left 0, right 1)" in c.reason
    assert "kink at or near x = 0" in c.reason
    assert failure_messages(result) == [f"x: {c.reason}"]


def test_abs_at_zero_is_a_kink_even_though_the_central_difference_agrees() -> None:
    # |h| - |-h| = 0: the central difference is 0 = abs'(0) by convention, but the
    # one-sided slopes are -1 and 1, at every step size.
    (c,) = checked("y = abs(x)", {"x": 0.0}).inputs
    assert (c.reverse, c.finite_difference, c.ok) == (0.0, 0.0, False)
    assert "one-sided slopes differ (left -1, right 1)" in c.reason
    assert c.reason.endswith("0 is only a convention")


def test_just_beside_a_kink_is_reported_too() -> None:
    # relu at x = 1e-7 < h: reverse mode says 1, the difference straddles the kink.
    (c,) = checked("y = relu(x)", {"x": 1e-7}).inputs
    assert c.reverse == 1.0 and not c.ok
    assert c.finite_difference == pytest.approx((1e-7 + H) / (2 * H), rel=1e-6)
    assert "kink at or near x = 1e-07" in c.reason


@pytest.mark.parametrize(
    ("program", "x"),
    [("y = x**2", 0.0), ("y = 1e8*x**2", 0.0), ("y = x**3", 0.0), ("y = cos(x)", 0.0)],
    ids=["square_at_0", "steep_square_at_0", "cube_at_0", "cos_at_0"],
)
def test_smooth_minima_and_saddles_are_not_kinks(program: str, x: float) -> None:
    # The one-sided slopes of a smooth f differ by about h*|f''|, which can exceed the
    # tolerance (1e8*x**2: 2e8*h ~ 1200), but an eighth of the step shrinks the gap
    # eightfold, which a kink's gap does not: no kink.
    (c,) = checked(program, {"x": x}).inputs
    assert c.ok, c.reason


def test_sharp_curvature_is_told_apart_from_a_kink() -> None:
    # y = x**100000 at x = 1: dy/dx = 1e5, but the third derivative ~1e15 puts the central
    # difference off by ~h^2 * 1e15 / 6 ~ 6e3.  The one-sided slopes differ by ~h * y'' ~ 6e4,
    # and by an eighth of that at an eighth of the step: smooth, so no kink is claimed.
    (c,) = checked("y = x**100000", {"x": 1.0}).inputs
    assert c.reverse == 1e5 and not c.ok
    assert "converge as the step shrinks" in c.reason and "kink" not in c.reason


def test_tolerances_decide() -> None:
    # y = x**3 at x = 1: ((1+h)^3 - (1-h)^3) / 2h = 3 + h^2, an error of ~3.7e-11 plus rounding.
    loose = checked("y = x**3", {"x": 1.0}, rtol=1e-9, atol=0.0)
    strict = checked("y = x**3", {"x": 1.0}, rtol=1e-13, atol=0.0)
    assert loose.ok
    assert not strict.ok
    (c,) = strict.inputs
    # Truncation h^2 ~ 3.7e-11 plus rounding: each cube is off by <= ~1 ulp (2.2e-16), over 2h.
    assert 1e-13 < c.abs_error < H * H + 4 * sys.float_info.epsilon / (2 * H)
    assert "> atol + rtol*|fd|" in c.reason


@pytest.mark.parametrize(
    ("program", "x", "derivative"),
    [("y = log(x)", 1e-7, 1e7), ("y = log(x - 3)", 3.0000001, 1 / (3.0000001 - 3)),
     ("y = exp(x)", 709.78, math.exp(709.78))],
    ids=["log_near_0", "log_near_3", "exp_near_overflow"],
)
def test_step_shrinks_to_stay_in_the_domain(program: str, x: float, derivative: float) -> None:
    # The standard step (6e-6 * max(1, |x|)) leaves log's domain or overflows exp; a
    # step cut until both points are inside still gives the derivative to 1e-4.
    (c,) = checked(program, {"x": x}).inputs
    assert c.ok, c.reason
    assert c.step < step_size(x)
    assert c.finite_difference == pytest.approx(derivative, rel=1e-4)


def test_domain_edge_is_reported_not_raised() -> None:
    # (x-1)**1.5 needs x >= 1 and (1-x)**1.5 needs x <= 1: no step gives two points in the domain.
    (c,) = checked("y = (x-1)**1.5 + (1-x)**1.5", {"x": 1.0}).inputs
    assert not c.ok
    assert (c.finite_difference, c.abs_error, c.rel_error) == (None, None, None)
    assert c.reverse == 0.0
    assert c.reason.startswith("cannot take the finite difference: the program fails at x = ")
    assert "(x + step" in c.reason and "non-integer power" in c.reason
    assert c.reason.endswith("fail too")


def test_overflow_at_every_perturbed_point_is_reported() -> None:
    # exp(log(max float)) is finite, and any step up, however small, overflows.
    (c,) = checked("y = exp(x)", {"x": 709.782712893384}).inputs
    assert not c.ok and c.finite_difference is None
    assert "(x + step" in c.reason and "overflow" in c.reason


@pytest.mark.parametrize(
    ("program", "values", "name", "mode_value"),
    [
        ("y = sqrt(x)", {"x": 0.0}, "x", "inf"),  # slope of sqrt at 0 is vertical
        ("y = a ** b", {"a": -2.0, "b": 2.0}, "b", "nan"),  # d/db of (-2)**b needs ln(-2)
    ],
    ids=["sqrt_at_0", "negative_base_exponent"],
)
def test_non_finite_gradients_fail(program: str, values: dict, name: str, mode_value: str) -> None:
    result = checked(program, values)
    failing = {c.name: c for c in result.failures}
    assert list(failing) == [name]
    assert failing[name].reason.startswith(f"reverse mode gives {mode_value} for d/d{name}")


def test_negative_base_other_input_still_checks() -> None:
    # y = a**b at a = -2, b = 2: dy/da = b * a**(b-1) = 2 * -2 = -4 is fine.
    result = checked("y = a ** b", {"a": -2.0, "b": 2.0})
    assert [(c.name, c.ok) for c in result.inputs] == [("a", True), ("b", False)]


def test_a_wrong_reverse_gradient_is_caught() -> None:
    # Simulate a backpropagation bug: overwrite the gradient reverse mode left on x.
    evaluation = evaluate(parse("y = x*x"), {"x": 3.0})
    evaluation.nodes["x"].grad = 3.0  # the classic bug: = instead of +=; the truth is 2x = 6
    (c,) = check_gradients(evaluation).inputs
    assert not c.ok
    assert c.reason.startswith("reverse mode gives 3 but the central difference gives 6")


def test_a_wrong_forward_gradient_is_caught(monkeypatch) -> None:
    def wrong(evaluation, wrt=None):
        return ForwardResult(evaluation.output, {"x": 7.0}, 1, 2, 2)

    monkeypatch.setattr(check_module, "forward_gradients", wrong)
    (c,) = checked("y = x*x", {"x": 3.0}).inputs
    assert not c.ok
    assert c.reason == "forward mode gives 7 but reverse mode and the central difference give 6 and 6"


def test_unused_input_and_no_inputs() -> None:
    result = checked("b = 1\ny = 2*a", {"a": 4.0})
    assert [(c.name, c.reverse, c.finite_difference, c.ok) for c in result.inputs] == [
        ("b", 0.0, 0.0, True), ("a", 2.0, 2.0, True)]
    empty = checked("y = 2*3")
    assert empty.ok and empty.inputs == []
    assert to_plain(empty) == "nothing to check: the program has no inputs\n"


def test_warnings_are_passed_on() -> None:
    assert checked("y = 2*x", {"x": 1.0, "zz": 2.0}).warnings == [
        "'zz' is not used by the program; its value is ignored"]


def test_needs_gradients_and_sane_tolerances() -> None:
    with pytest.raises(ValueError, match="backward=True"):
        check_gradients(evaluate(parse("y = 2*x"), {"x": 1.0}, backward=False))
    with pytest.raises(ValueError, match="non-negative"):
        checked("y = 2*x", {"x": 1.0}, rtol=-1.0)


RELU_PLAIN = (
    "input  value  reverse  forward  finite diff  abs err  rel err  result\n"
    "x        0.0      0.0      0.0          0.5      0.5        1  FAIL\n"
    "dy/d input, 1 input: 1 of 1 disagree (rtol 0.001, atol 1e-05)\n"
)


def test_plain_golden() -> None:
    assert to_plain(checked("y = relu(x)", {"x": 0.0})) == RELU_PLAIN


def test_json_document() -> None:
    document = json.loads(to_json(checked("y = relu(x) + sqrt(z)", {"x": 0.0, "z": 0.0})))
    assert document["ok"] is False
    assert (document["rtol"], document["atol"], document["output"], document["value"]) == (1e-3, 1e-5, "y", 0.0)
    x, z = document["inputs"]
    assert (x["name"], x["reverse"], x["finite_difference"], x["abs_error"], x["ok"]) == ("x", 0.0, 0.5, 0.5, False)
    # sqrt at 0: infinite slope (a string in JSON) and no difference (sqrt of -h).
    assert (z["reverse"], z["forward"], z["finite_difference"], z["abs_error"]) == (
        "Infinity", "Infinity", None, None)
    assert z["reason"].startswith("reverse mode gives inf")


def test_table_marks_failures() -> None:
    import io

    from rich.console import Console

    console = Console(file=io.StringIO(), width=200, no_color=True, color_system=None)
    # At z = 0 both differences are exact: relu(+-h) + 0 and 0 + 2*(+-h).
    console.print(to_table(checked("y = relu(x) + 2*z", {"x": 0.0, "z": 0.0})))
    text = console.file.getvalue()
    rows = [[cell.strip() for cell in line.split("│")[1:-1]] for line in text.splitlines() if "│" in line]
    assert rows == [
        ["x", "0.0", "0.0", "0.0", "0.5", "0.5", "1", "FAIL"],
        ["z", "0.0", "2.0", "2.0", "2.0", "0", "0", "ok"],
    ]
    assert "1 of 2 disagree" in text


def test_values_come_from_the_evaluation_point() -> None:
    # Defaults and given values both count: f = a*b at a = 2 (default), b = 5 (given).
    result = checked("a = 2\ny = a*b", {"b": 5.0})
    assert [(c.name, c.value, c.reverse) for c in result.inputs] == [("a", 2.0, 5.0), ("b", 5.0, 2.0)]
    assert all(math.isclose(c.finite_difference, c.reverse, rel_tol=1e-9) for c in result.inputs)


def test_zero_tolerance_shows_the_digits_that_differ_and_no_curvature_story() -> None:
    (c,) = checked("y = x**3", {"x": 1.0}, rtol=0.0, atol=0.0).inputs
    assert not c.ok
    # 3 and 3.0000000000363... agree to 6 digits, so both are written in full.
    assert c.reason.startswith(f"reverse mode gives 3.0 but the central difference gives {c.finite_difference!r} ")
    assert "curves sharply" not in c.reason and "kink" not in c.reason


def test_a_nan_error_has_a_nan_relative_error() -> None:
    # sqrt(x*x) at 0: the gradient is NaN (0 * inf), the difference is 0.
    (c,) = checked("y = sqrt(x*x)", {"x": 0.0}).inputs
    assert math.isnan(c.reverse) and c.finite_difference == 0.0
    assert math.isnan(c.abs_error) and math.isnan(c.rel_error)
    assert json.loads(to_json(check_gradients(evaluate(parse("y = sqrt(x*x)"), {"x": 0.0}))))["inputs"][0][
        "rel_error"] == "NaN"
