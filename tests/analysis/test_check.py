"""The gradient check library: three derivatives per input, verdicts and reasons, renderers.

The finite differences in the expected values are worked out by hand: they are
exact where the program is linear in the input or where the kink sits exactly
at the point, exact after one Richardson step where it is a polynomial of degree
three or less (the central difference is f' + h**2 f'''/6, whose h**2 term the
step cancels), and otherwise compared with the closed-form derivative within the
error bar the check reports.
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
from autodiff_cli.execute import evaluate
from autodiff_cli.language import parse
from autodiff_cli.render.check import to_json, to_plain, to_table

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
        assert c.reason is None and c.verdict == "ok"
    # The first two steps (eps**(1/3) * |x| and half that) settle it: the step reported is the second.
    assert [c.step for c in result.inputs] == [2 * H / 2, 3 * H / 2]


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


def test_near_a_kink_but_not_at_it_the_derivative_is_checked() -> None:
    # relu at x = 1e-7 is differentiable, with derivative 1.  The first step (6e-6) straddles
    # the kink at 0, but the steps keep halving: below 1e-7 both x +- h are positive and the
    # difference is ((x+h) - (x-h)) / 2h = 1 exactly, which agrees with reverse mode.
    (c,) = checked("y = relu(x)", {"x": 1e-7}).inputs
    assert c.verdict == "ok" and c.reason is None
    assert c.reverse == 1.0 and c.finite_difference == 1.0
    assert c.step < 1e-7


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


def test_sharp_curvature_is_extrapolated_away() -> None:
    # y = x**100000 at x = 1: dy/dx = 1e5, but the third derivative ~1e15 puts a single central
    # difference at h = 6e-6 off by ~h^2 * 1e15 / 6 ~ 6e3.  Smaller steps and Richardson
    # extrapolation cancel the h^2 and h^4 terms: the estimate is within its error bar of 1e5.
    (c,) = checked("y = x**100000", {"x": 1.0}).inputs
    assert c.reverse == 1e5 and c.verdict == "ok", c.reason
    assert abs(c.finite_difference - 1e5) <= c.fd_error < 1e2


def test_tolerances_decide() -> None:
    # y = x**3 at x = 1: the central difference is 3 + h^2 (exactly: ((1+h)^3 - (1-h)^3) / 2h),
    # so one Richardson step gives 3 up to rounding.  A strict tolerance raises the first step
    # until rounding (~4e-16 in the output, over the step) is far below it, and still agrees.
    loose = checked("y = x**3", {"x": 1.0}, rtol=1e-9, atol=0.0)
    strict = checked("y = x**3", {"x": 1.0}, rtol=1e-13, atol=0.0)
    assert loose.ok and strict.ok
    (c,) = strict.inputs
    assert abs(c.finite_difference - 3.0) <= c.fd_error <= 3e-13


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


def test_domain_edge_is_inconclusive_not_raised() -> None:
    # (x-1)**1.5 needs x >= 1 and (1-x)**1.5 needs x <= 1: no step gives two points in the
    # domain, so nothing can be said of the gradient: inconclusive, with the reason.
    (c,) = checked("y = (x-1)**1.5 + (1-x)**1.5", {"x": 1.0}).inputs
    assert not c.ok and c.verdict == "inconclusive"
    assert (c.finite_difference, c.abs_error, c.rel_error) == (None, None, None)
    assert c.reverse == 0.0
    assert c.reason.startswith("cannot take the finite difference: the program fails at x = ")
    assert "(x + step" in c.reason and "non-integer power" in c.reason
    assert c.reason.endswith("fail too")


def test_overflow_at_every_perturbed_point_is_reported() -> None:
    # exp(log(max float)) is finite, and any step up, however small, overflows.
    (c,) = checked("y = exp(x)", {"x": 709.782712893384}).inputs
    assert not c.ok and c.finite_difference is None and c.verdict == "inconclusive"
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
    def wrong(tape, seed, textbook=True):  # a forward pass with a bug: d(x*x)/dx = 7 at 3
        return 7.0

    monkeypatch.setattr(check_module, "tangent_at_root", wrong)
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
    "input  value  reverse  forward  finite diff  fd ±  abs err  rel err  result\n"
    "x        0.0      0.0      0.0          0.5     0      0.5        1  FAIL\n"
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
    # Both differences are exact and their outputs are 0, so no rounding either: fd ± 0.
    assert rows == [
        ["x", "0.0", "0.0", "0.0", "0.5", "0", "0.5", "1", "FAIL"],
        ["z", "0.0", "2.0", "2.0", "2.0", "0", "0", "0", "ok"],
    ]
    assert "1 of 2 disagree" in text


def test_values_come_from_the_evaluation_point() -> None:
    # Defaults and given values both count: f = a*b at a = 2 (default), b = 5 (given).
    result = checked("a = 2\ny = a*b", {"b": 5.0})
    assert [(c.name, c.value, c.reverse) for c in result.inputs] == [("a", 2.0, 5.0), ("b", 5.0, 2.0)]
    assert all(math.isclose(c.finite_difference, c.reverse, rel_tol=1e-9) for c in result.inputs)


def test_zero_tolerance_is_inconclusive_unless_exact() -> None:
    # x**3 at 1: the extrapolated difference is 3 only up to rounding (an error bar ~5e-10),
    # and a tolerance of 0 leaves no room for that: neither confirmed nor refuted.
    (c,) = checked("y = x**3", {"x": 1.0}, rtol=0.0, atol=0.0).inputs
    assert c.verdict == "inconclusive"
    assert c.reason.startswith("the finite difference ")
    assert "more than the tolerance 0" in c.reason and "a tolerance of 0" in c.reason
    # Even a difference that happens to be exact (y = 2*x gives 2) carries the rounding
    # bound of its error analysis, which cannot prove exactness: still inconclusive.
    assert checked("y = 2*x", {"x": 1.0}, rtol=0.0, atol=0.0).inputs[0].verdict == "inconclusive"


def test_a_nan_error_has_a_nan_relative_error() -> None:
    # sqrt(x*x) at 0: the gradient is NaN (0 * inf), the difference is 0.
    (c,) = checked("y = sqrt(x*x)", {"x": 0.0}).inputs
    assert math.isnan(c.reverse) and c.finite_difference == 0.0
    assert math.isnan(c.abs_error) and math.isnan(c.rel_error)
    assert json.loads(to_json(check_gradients(evaluate(parse("y = sqrt(x*x)"), {"x": 0.0}))))["inputs"][0][
        "rel_error"] == "NaN"


# --- steps that fit the output's scale ---------------------------------------


@pytest.mark.parametrize(
    ("program", "x", "derivative"),
    [
        ("y = sin(x)", 1e6, math.cos(1e6)),
        ("y = cos(x)", 1e6, -math.sin(1e6)),
        ("y = tanh(x - 1000000)", 1e6, 1.0),
        ("y = sigmoid(x - 1000000)", 1e6, 0.25),
        ("y = sin(x)", 1e9, math.cos(1e9)),
        ("y = sin(x)", -1e6, math.cos(-1e6)),
        ("y = exp(sin(x))", 1e6, math.cos(1e6) * math.exp(math.sin(1e6))),
        ("y = sin(1000*x)", 1e6, 1000 * math.cos(1e9)),
        ("y = x*x", 1e6, 2e6),
        ("y = log(x)", 1e6, 1e-6),
        ("y = sqrt(x)", 1e12, 0.5e-6),
    ],
    ids=["sin_1e6", "cos_1e6", "tanh_shifted", "sigmoid_shifted", "sin_1e9", "sin_minus_1e6", "exp_sin",
         "sin_1000x", "square_1e6", "log_1e6", "sqrt_1e12"],
)
def test_large_inputs_pass_with_an_honest_error_bar(program, x, derivative) -> None:
    # The first step eps**(1/3) * |x| is 6.06 at 1e6, nearly a period of sin; the smaller steps
    # of the sweep see the derivative, and the error bar covers the distance to the truth.
    (c,) = checked(program, {"x": x}).inputs
    assert c.verdict == "ok", c.reason
    assert abs(c.finite_difference - derivative) <= c.fd_error + 1e-15 * abs(derivative)
    assert c.fd_error <= 1e-4 * abs(derivative) + 1e-6


@pytest.mark.parametrize(
    ("program", "x", "why"),
    [
        ("y = tanh(1e12*x)", 0.0, "still change from step to step"),   # varies on a scale of 1e-12
        ("y = sin(1e9*x)", 1e6, "mostly rounding error"),              # 1e9*x = 1e15, off by ~0.1
        ("y = sin(x)", 1e15, "still change from step to step"),        # floats are 0.125 apart there
        ("y = sin(10*x)", 1e15, "mostly rounding error"),              # 10*x has lost every digit
        # floats are 32 apart: the smallest step, 256, spans 40 periods (the check failed it)
        ("y = sin(x)", 2e17, "(8 times the gap between floats there, 32)"),
        ("y = sin(x)", 1e16, "still change from step to step"),
    ],
    ids=["tanh_1e12x", "sin_1e9x", "sin_1e15", "sin_10x_1e15", "sin_2e17", "sin_1e16"],
)
def test_what_no_step_can_resolve_is_inconclusive_not_a_failure(program, x, why) -> None:
    (c,) = checked(program, {"x": x}).inputs
    assert c.verdict == "inconclusive", c.reason
    assert "can be neither confirmed nor refuted" in c.reason or "no finite difference can" in c.reason
    assert why in c.reason and "kink" not in c.reason and "jump" not in c.reason


@pytest.mark.parametrize(("program", "x", "derivative"), [
    ("y = tanh(1e12*x)", 0.0, 1e12), ("y = sin(x)", 1e15, math.cos(1e15)), ("y = sin(x)", 2e17, math.cos(2e17)),
    ("y = sin(x)", 1e16, math.cos(1e16)), ("y = sin(x)", 3.1e15, math.cos(3.1e15))],
    ids=["tanh_1e12x", "sin_1e15", "sin_2e17", "sin_1e16", "sin_3.1e15"])
def test_an_undecided_difference_claims_no_accuracy_it_lacks(program, x, derivative) -> None:
    # The true derivative (the closed form, by the C library's cos) lies within the error bar
    # shown, however far the difference is from it: an error bar that claimed +-5e-13 about a
    # difference of 2.5e-13, where the derivative is 0.57, would be a false certainty.
    (c,) = checked(program, {"x": x}).inputs
    assert c.verdict == "inconclusive", c.reason
    assert abs(c.finite_difference - derivative) <= c.fd_error


# Points exactly at a kink (or within rounding of one): each has no derivative, and each must
# be reported as a kink, whatever the scale of x.
KINKS = [
    ("y = relu(x)", {"x": 0.0}),
    ("y = relu(x)", {"x": -0.0}),
    ("y = abs(x)", {"x": 0.0}),
    ("y = relu(-x)", {"x": 0.0}),
    ("y = abs(x - 3)", {"x": 3.0}),
    ("y = relu(x - 0.1)", {"x": 0.1}),
    ("y = relu(3*x - 0.3)", {"x": 0.1}),            # 3*0.1 - 0.3 = 5.6e-17: a kink within rounding
    ("y = abs(sin(x))", {"x": math.pi}),           # sin(pi) = 1.2e-16 in floats
    ("y = relu(x) + relu(-x)", {"x": 0.0}),         # = abs(x)
    ("y = 2*abs(x)", {"x": 0.0}),
    ("y = abs(x) + abs(x - 1)", {"x": 1.0}),
    ("y = abs(relu(x) - 1)", {"x": 1.0}),
    ("y = relu(tanh(x))", {"x": 0.0}),
    ("y = step(x)*x", {"x": 0.0}),                  # = relu(x)
    ("y = abs(x) + 1e8*x**2", {"x": 0.0}),          # a kink under strong curvature
    ("y = relu(x - 1000000)", {"x": 1e6}),
    ("y = abs(x - 1e9)", {"x": 1e9}),
    ("y = abs(x)", {"x": 5e-324}),                  # the kink is one subnormal away
    ("y = relu(x)*3 + x", {"x": 0.0}),
    ("y = abs(x*x - 4)", {"x": 2.0}),
    ("y = relu(sin(x))", {"x": 0.0}),
]


@pytest.mark.parametrize(("program", "values"), KINKS, ids=[f"{p}@{next(iter(v.values()))!r}" for p, v in KINKS])
def test_every_kink_is_caught(program, values) -> None:
    (c,) = checked(program, values).inputs
    assert c.verdict == "fail", (c.verdict, c.reason)
    assert "kink at or near x" in c.reason


def test_a_kink_in_two_inputs_is_caught_for_both() -> None:
    result = checked("y = abs(a - b)", {"a": 2.0, "b": 2.0})
    assert [(c.name, c.verdict) for c in result.inputs] == [("a", "fail"), ("b", "fail")]
    assert all("kink" in c.reason for c in result.inputs)


@pytest.mark.parametrize(
    ("program", "x"),
    [("y = x*abs(x)", 0.0), ("y = relu(x)**2", 0.0), ("y = abs(x)**3", 0.0), ("y = relu(x)", 1.0),
     ("y = relu(x)", -1.0), ("y = abs(x)", 2.5), ("y = relu(x)", 1e-7), ("y = abs(x - 1e-6)", 0.0)],
    ids=["x_abs_x", "relu_squared", "abs_cubed", "relu_at_1", "relu_at_minus_1", "abs_at_2_5",
         "relu_beside_kink", "abs_kink_1e-6_away"],
)
def test_smooth_points_near_kinks_pass(program, x) -> None:
    # Each is differentiable at x: x|x|, relu^2 and |x|^3 have derivative 0 at 0 (one-sided
    # slopes +-h and +-h^2 shrink with the step); the others are a step or more from the kink.
    (c,) = checked(program, {"x": x}).inputs
    assert c.verdict == "ok", c.reason


@pytest.mark.parametrize(("program", "height"), [("y = sign(x)", "2"), ("y = step(x)", "1"),
                                                 ("y = 3*step(x) - x", "3")],
                         ids=["sign", "step", "scaled_step"])
def test_a_jump_is_a_failure(program, height) -> None:
    # sign(x+h) - sign(x-h) = 2 for every h: the difference never shrinks with the step.
    (c,) = checked(program, {"x": 0.0}).inputs
    assert c.verdict == "fail"
    assert c.reason.startswith(f"the output jumps at x = 0: f(x+h) - f(x-h) stays about {height} ")


def test_autodiff_convention_on_a_smooth_sum_of_kinks_is_refuted() -> None:
    # relu(x) - relu(-x) is x itself, derivative 1; reverse mode adds relu'(0) = 0 twice and
    # says 0.  The difference is exactly 1 at every step: a real disagreement.
    (c,) = checked("y = relu(x) - relu(-x)", {"x": 0.0}).inputs
    assert (c.reverse, c.finite_difference, c.verdict) == (0.0, 1.0, "fail")
    assert "kink" not in c.reason and "accurate to +-0" in c.reason


@pytest.mark.parametrize(
    ("program", "x", "wrong", "truth"),
    [("y = x*x", 1e6, 2.5e6, 2e6), ("y = cos(x)", 0.0, 1.0, 0.0), ("y = sin(x)", 1e6, 0.0, math.cos(1e6)),
     ("y = 0*x", 3.0, 1.0, 0.0)],
    ids=["square_at_1e6", "cos_at_0", "sin_at_1e6", "flat"],
)
def test_a_wrong_gradient_is_refuted_at_any_scale(program, x, wrong, truth) -> None:
    evaluation = evaluate(parse(program), {"x": x})
    evaluation.nodes["x"].grad = wrong
    (c,) = check_gradients(evaluation).inputs
    assert c.verdict == "fail", c.reason
    assert abs(c.finite_difference - truth) <= c.fd_error + 1e-12
    assert c.reason.startswith("reverse mode gives ")


def test_rounding_error_is_first_order_error_analysis() -> None:
    # y = (x + 1e10) - 1e10 at x = 1: the sum rounds by up to eps * 1e10 (its gradient is 1);
    # the difference is 1 (exact, gradient 1); the output itself 1.  So about eps * (1e10 + 2).
    from autodiff_cli.analysis.check import rounding_error

    evaluation = evaluate(parse("y = (x + 1e10) - 1e10"), {"x": 1.0})
    assert rounding_error(evaluation) == pytest.approx(sys.float_info.epsilon * (1e10 + 1 + 1), rel=1e-12)


def test_cancellation_raises_the_first_step_instead_of_failing() -> None:
    # Rounding of ~2e-6 in the output swamps a step of 6e-6 (the difference would be off by
    # ~0.4); the check starts from a larger step and agrees with the gradient 1.
    (c,) = checked("y = (x + 1e10) - 1e10", {"x": 1.0}).inputs
    assert c.verdict == "ok", c.reason
    assert c.step > 1e-4
