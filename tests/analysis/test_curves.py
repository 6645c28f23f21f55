"""The data of `autodiff plot` (analysis/curves.py): f, f' and f'' along one input, gaps, tangents.

Expected values are closed forms (tanh' = 1 - tanh**2, log'' = -1/x**2...), the engine's own
reverse mode at single points (the plotted derivative must be the one `eval` reports), and
HIPS autograd as an independent library.
"""

import math
from pathlib import Path

import numpy as np
import pytest

from autodiff_cli.analysis.curves import check_variable, describe_gaps, describe_tangents, sample_curves, tangent
from autodiff_cli.errors import EvaluationError, InputError
from autodiff_cli.execute import evaluate
from autodiff_cli.language import parse

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


def curves_of(text: str, variable: str = "x", low: float = -3.0, high: float = 3.0, values=None, **options):
    return sample_curves(parse(text), values or {}, variable, low, high, **options)


@pytest.mark.parametrize("sample, variable, low, high", [
    ("karpathy", "a", -4.0, 4.0),
    ("neuron", "x1", -2.0, 2.0),
    ("neuron_exp", "w1", -2.0, 2.0),
    ("mlp", "x1", -2.0, 2.0),
    ("softmax_xent", "z2", -3.0, 3.0),
    ("quadratic", "y", -5.0, 5.0),
], ids=lambda v: str(v))
def test_plotted_derivative_is_reverse_mode_at_sampled_points(sample, variable, low, high) -> None:
    # The curves come from the vectorized executor, whose tanh, exp and log are NumPy's: a few
    # ulps from the C library's that the scalar engine calls.  Where a derivative is a small
    # difference of such values (1 - tanh(n)**2 with tanh(n) within 1e-9 of 1) that is a large
    # relative error of a tiny number, so gradients are compared to 1e-12 of the curve's scale.
    program = parse((SAMPLES / f"{sample}.ad").read_text())
    curves = sample_curves(program, {}, variable, low, high, points=201)
    scale = float(np.nanmax(np.abs(curves.df)))
    for i in range(0, 201, 13):
        evaluation = evaluate(program, {variable: float(curves.x[i])})
        assert curves.f[i] == pytest.approx(evaluation.root.data, rel=1e-12, abs=1e-300)
        assert curves.df[i] == pytest.approx(evaluation.nodes[variable].grad, rel=1e-12, abs=1e-12 * scale)
    assert curves.gaps == []


def test_derivative_of_tanh_is_its_closed_form_and_autograd() -> None:
    import autograd
    import autograd.numpy as anp

    curves = curves_of("y = tanh(x)", points=101)
    assert np.allclose(curves.f, np.tanh(curves.x), rtol=1e-14, atol=0)
    assert np.allclose(curves.df, 1 - np.tanh(curves.x) ** 2, rtol=1e-12, atol=1e-300)
    by_autograd = [autograd.grad(anp.tanh)(float(x)) for x in curves.x]
    assert np.allclose(curves.df, by_autograd, rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("text, low, high, second", [
    ("y = tanh(x)", -3.0, 3.0, lambda x: -2 * np.tanh(x) * (1 - np.tanh(x) ** 2)),
    ("y = x**3 - 2*x", -2.0, 2.0, lambda x: 6 * x),
    ("y = log(x)", 0.1, 3.0, lambda x: -1 / x**2),
    ("y = exp(2*x)", -1.0, 2.0, lambda x: 4 * np.exp(2 * x)),
    ("y = sin(x) * x", -4.0, 4.0, lambda x: 2 * np.cos(x) - x * np.sin(x)),
], ids=["tanh", "cubic", "log", "exp", "x-sin-x"])
def test_second_derivative_matches_the_closed_form(text, low, high, second) -> None:
    curves = curves_of(text, low=low, high=high, points=301, order=2)
    # Central differences of the exact f' with h ~ 6e-6 * max(1, |x|): about 1e-10 relative.
    assert np.allclose(curves.d2f, second(curves.x), rtol=1e-6, atol=1e-7)
    assert curves.order == 2 and curves.gaps == []


@pytest.mark.parametrize("text, kinks", [
    ("y = relu(x)", [0.0]),
    ("y = abs(x - 1)", [1.0]),  # symmetric: abs'(0) = 0 sits midway, the one-sided slopes agree
    ("y = relu(x) + abs(x + 2)", [-2.0, 0.0]),
], ids=["relu", "abs", "both"])
def test_a_kink_leaves_the_second_derivative_out_and_says_so(text, kinks) -> None:
    curves = curves_of(text, low=-3.0, high=3.0, points=601, order=2)  # the grid has -2, 0 and 1
    gaps = [gap for gap in curves.gaps if gap.curve == "d2f"]
    assert [(gap.start, gap.count) for gap in gaps] == [(k, 1) for k in kinks]
    assert all("kink" in gap.reason for gap in gaps)
    defined = ~np.isnan(curves.d2f)
    assert np.count_nonzero(~defined) == len(kinks)
    assert np.all(curves.d2f[defined] == 0.0)  # piecewise linear


def test_points_outside_the_domain_are_gaps_not_errors() -> None:
    curves = curves_of("y = log(x)", low=-1.0, high=3.0, points=401)  # a step of 0.01: x = 0 is a point
    assert np.isnan(curves.f[:101]).all() and np.isnan(curves.df[:101]).all()
    assert np.isfinite(curves.f[101:]).all() and np.isfinite(curves.df[101:]).all()
    [gap] = curves.gaps
    assert (gap.curve, gap.start, gap.end, gap.count) == ("f", -1.0, 0.0, 101)
    assert "log" in gap.reason
    [line] = describe_gaps(curves)
    assert line.startswith("y is undefined at x from -1 to 0 (101 of 401 points): ")


def test_a_derivative_that_is_infinite_where_f_is_defined_is_its_own_gap() -> None:
    # sqrt: undefined below 0; defined at 0 with an infinite derivative there.
    curves = curves_of("y = sqrt(x)", low=-1.0, high=1.0, points=201)
    assert [(g.curve, g.start, pytest.approx(g.end, abs=1e-15), g.count) for g in curves.gaps] == [
        ("f", -1.0, -0.01, 100), ("df", 0.0, 0.0, 1)]
    assert curves.f[100] == 0.0 and np.isnan(curves.df[100])
    assert describe_gaps(curves)[1] == (
        "dy/dx is undefined at x = 0 (1 point): the derivative is inf; the curve has a gap")


def test_overflow_is_a_gap_with_its_reason() -> None:
    curves = curves_of("y = exp(x)", low=700.0, high=720.0, points=21)  # exp overflows above ~709.78
    [gap] = curves.gaps
    assert (gap.start, gap.end, gap.count) == (710.0, 720.0, 11)
    assert "overflow" in gap.reason or "too large" in gap.reason


def test_many_gaps_are_summarised() -> None:
    curves = curves_of("y = log(sin(x))", low=-20.0, high=20.0, points=4001)
    assert len(curves.gaps) > 5
    lines = describe_gaps(curves)
    assert len(lines) == 6 and lines[-1] == f"... and {len(curves.gaps) - 5:,} more gaps"


def test_other_inputs_keep_their_given_or_default_values() -> None:
    program = parse((SAMPLES / "neuron.ad").read_text())
    curves = sample_curves(program, {"w1": 1.0}, "x1", -1.0, 1.0, points=3)
    assert curves.fixed == {"x2": 0.0, "w1": 1.0, "w2": 1.0, "b": 6.8813735870195432}
    # o = tanh(x1*w1 + b) with w1 = 1 now: at x1 = 1, o = tanh(7.88...).
    assert curves.f[2] == pytest.approx(math.tanh(1.0 + 6.8813735870195432), rel=1e-15)


def test_tangent_touches_f_with_the_slope_of_reverse_mode() -> None:
    curves = curves_of("y = tanh(x)", tangents_at=[0.5, -1.0])
    first, second = curves.tangents
    assert (first.at, first.value) == (0.5, math.tanh(0.5))
    assert first.slope == pytest.approx(1 - math.tanh(0.5) ** 2, rel=1e-15)
    assert first(0.5) == first.value and first(1.5) == pytest.approx(first.value + first.slope)
    assert second.slope == pytest.approx(1 - math.tanh(-1.0) ** 2, rel=1e-15)


def test_tangent_where_f_is_undefined_is_an_error_with_a_position() -> None:
    with pytest.raises(EvaluationError) as raised:
        tangent(parse("y = log(x)"), {}, "x", -1.0)
    assert raised.value.position is not None


def test_tangent_with_an_infinite_slope_is_an_error() -> None:
    with pytest.raises(InputError, match="no tangent line"):
        tangent(parse("y = sqrt(x)"), {}, "x", 0.0)


# One-sided slopes by hand: abs has -1 and 1 at 0, relu 0 and 1, and relu's kink is also "next
# to" 1e-8; smooth functions, however curved (1e9 x**2 changes slope by 200 within 1e-7), have none.
@pytest.mark.parametrize("text, at, kink", [
    ("y = abs(x)", 0.0, (-1.0, 1.0)),
    ("y = relu(x)", 0.0, (0.0, 1.0)),
    ("y = relu(x - 2) * 3", 2.0, (0.0, 3.0)),
    ("y = relu(x)", 1e-8, (0.0, 1.0)),
    ("y = abs(x)", 0.3, None),
    ("y = 1e9 * x**2", 0.0, None),
    ("y = tanh(x)", 0.5, None),
    ("y = log(x)", 1e-300, None),
    ("y = sin(x)", 1e8, None),
    ("y = sin(100*x)", 1e6, None),
    ("y = abs(x - 1e8)", 1e8, (-1.0, 1.0)),
], ids=["abs-at-0", "relu-at-0", "shifted-scaled-relu", "next-to-relu-kink", "abs-away", "steep-parabola",
        "tanh", "domain-edge-on-one-side", "sin-far-out", "fast-sin-far-out", "kink-far-out"])
def test_tangent_at_a_kink_says_so(text: str, at: float, kink: tuple[float, float] | None) -> None:
    assert tangent(parse(text), {}, "x", at).kink == kink


def test_kink_warning_names_both_slopes_and_the_one_drawn() -> None:
    curves = curves_of("y = abs(x)", tangents_at=[0.0, 0.5])
    assert describe_tangents(curves) == [
        "--tangent-at x=0: y has a kink at or next to this point (slope -1 just left, 1 just right), so the "
        "curve has no tangent line there; the line drawn uses reverse mode's slope, 0"]


@pytest.mark.parametrize("text, variable, message", [
    ("y = a*x", "z", "the program has no variable 'z'"),
    ("t = 2*x; y = t*t", "t", "'t' is computed by the program"),
], ids=["unknown", "computed"])
def test_the_varied_name_must_be_an_input(text, variable, message) -> None:
    with pytest.raises(InputError, match=message):
        check_variable(parse(text), variable)


def test_a_missing_other_input_is_an_error() -> None:
    with pytest.raises(InputError, match="no value for input a"):
        curves_of("y = a*x")


def test_the_grid_is_even_and_includes_both_ends() -> None:
    curves = curves_of("y = x", low=-1.0, high=1.0, points=5)
    assert curves.x.tolist() == [-1.0, -0.5, 0.0, 0.5, 1.0]
    assert curves.f.tolist() == curves.x.tolist() and curves.df.tolist() == [1.0] * 5 and curves.d2f is None


# --- tensor programs: a number input, or one entry of a tensor input ---------------------------------

MATRIX_MLP = """\
X = [[0.5, -1.0], [1.5, 0.25], [-0.75, 2.0]]
y = [[1], [-1], [1]]
W1 = [[0.3, -0.8, 0.5], [0.9, 0.2, -0.4]]
b1 = [0.1, -0.2, 0.05]
W2 = [[0.6], [-0.5], [0.4]]
H = tanh(X @ W1 + b1)
L = mean((H @ W2 - y)**2)
"""


def regression_arrays():
    from autodiff_cli.execute.interpreter import input_arrays

    program = parse((SAMPLES / "regression_matrix.ad").read_text())
    arrays = input_arrays(program, {})
    return program, arrays["X"], arrays["Y"]


def test_an_entry_of_a_tensor_is_varied_with_the_others_kept() -> None:
    # L(w) = mean((X[:, 0] w + X[:, 1] W[1, 0] - Y)^2), W[1, 0] = -1.25 given; by hand in NumPy.
    from autodiff_cli.language.program import ArrayLiteral

    program, X, Y = regression_arrays()
    given = {"W": ArrayLiteral((2, 1), (9.0, -1.25))}  # W[0, 0] = 9 is replaced by the range
    curves = sample_curves(program, given, "W[0, 0]", -1.0, 4.0, points=51, order=2)
    w = np.linspace(-1.0, 4.0, 51)
    residual = X[:, :1] * w + X[:, 1:] * -1.25 - Y  # [8, 51]: one column per point
    np.testing.assert_allclose(curves.f, np.mean(residual**2, axis=0), rtol=1e-13)
    np.testing.assert_allclose(curves.df, 2 / 8 * np.sum(residual * X[:, :1], axis=0), rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(curves.d2f, np.full(51, 2 / 8 * np.sum(X[:, 0] ** 2)), rtol=1e-6)
    assert curves.variable == "W[0, 0]" and curves.gaps == [] and curves.poles == []
    assert set(curves.fixed) == {"X", "Y", "W[1, 0]"} and curves.fixed["W[1, 0]"] == -1.25  # the other entry too


def test_an_entry_of_a_matrix_mlp_has_autograds_derivative() -> None:
    import autograd.numpy as anp
    from autograd import grad

    program = parse(MATRIX_MLP)
    curves = sample_curves(program, {}, "W1[1, 2]", -2.0, 2.0, points=9)
    X = np.array([[0.5, -1.0], [1.5, 0.25], [-0.75, 2.0]])
    y = np.array([1.0, -1.0, 1.0])
    b1 = np.array([0.1, -0.2, 0.05])
    W2 = np.array([[0.6], [-0.5], [0.4]])

    def loss(entry):
        W1 = anp.array([[0.3, -0.8, 0.5], [0.9, 0.2, 0.0]]) + entry * anp.array([[0, 0, 0], [0, 0, 1.0]])
        H = anp.tanh(X @ W1 + b1)
        return anp.mean((H @ W2 - y[:, None]) ** 2)

    for x, f, df in zip(curves.x, curves.f, curves.df):
        assert f == pytest.approx(loss(x), rel=1e-13)
        assert df == pytest.approx(grad(loss)(x), rel=1e-11, abs=1e-14)


def test_a_number_input_of_a_tensor_program() -> None:
    # L(a) = sum(tanh([1, 2] a)): L' = sum(x (1 - tanh(x a)^2)).
    curves = sample_curves(parse("x = [1, 2]\nL = sum(tanh(x * a))"), {}, "a", -2.0, 2.0, points=41)
    a = np.linspace(-2.0, 2.0, 41)
    np.testing.assert_allclose(curves.f, np.tanh(a) + np.tanh(2 * a), rtol=1e-14)
    np.testing.assert_allclose(curves.df, (1 - np.tanh(a) ** 2) + 2 * (1 - np.tanh(2 * a) ** 2), rtol=1e-13)


def test_a_tensor_programs_gaps_carry_the_interpreters_message() -> None:
    curves = sample_curves(parse("x = [1, 2]\nL = sum(log(x * a))"), {}, "a", -1.0, 1.0, points=21)
    gap = curves.gaps[0]
    assert (gap.curve, gap.start, gap.count) == ("f", -1.0, 11)  # -1 to 0: log of x*a <= 0
    assert "log is undefined at entry [0]" in gap.reason
    assert np.isnan(curves.f[:11]).all() and np.isfinite(curves.f[11:]).all()
    np.testing.assert_allclose(curves.df[11:], 2 / curves.x[11:], rtol=1e-13)  # d/da (log a + log 2a)


def test_an_op_that_refuses_some_points_is_sampled_point_by_point() -> None:
    # cross_entropy takes class labels 0, 1, 2: other values of c are gaps, each with its message.
    program = parse("z = [0.5, 1.5, -1]\nL = cross_entropy(z, c)")
    curves = sample_curves(program, {}, "c", 0.0, 2.0, points=5)  # 0, 0.5, 1, 1.5, 2
    assert [bool(np.isnan(f)) for f in curves.f] == [False, True, False, True, False]
    logsumexp = np.log(np.sum(np.exp([0.5, 1.5, -1.0])))
    assert curves.f[2] == pytest.approx(logsumexp - 1.5, rel=1e-14)
    assert "label 0.5 is not a class" in curves.gaps[0].reason


def test_tangent_at_an_entry() -> None:
    program, X, Y = regression_arrays()
    line = tangent(program, {}, "W[1, 0]", 0.5)
    residual = X[:, 0] * 1.0 + X[:, 1] * 0.5 - Y[:, 0]  # W[0, 0] keeps the sample's 1
    assert line.value == pytest.approx(np.mean(residual**2), rel=1e-14)
    assert line.slope == pytest.approx(2 / 8 * np.sum(residual * X[:, 1]), rel=1e-13)


@pytest.mark.parametrize("variable, message, hint", [
    ("W[2, 0]", "--range W[2, 0]: index 2 is out of range for axis 0 of W, of size 2 (shape [2, 1])",
     "indices of axis 0 run from 0 to 1"),
    ("W[0, 1]", "index 1 is out of range for axis 1 of W, of size 1", "indices of axis 1 run from 0 to 0"),
    ("W[0]", "--range W[0]: W has 2 axes (shape [2, 1]), and W[0] gives 1 index",
     "name one entry with 2 indices, e.g. W[0, 0]"),
    ("W[0, 0, 0]", "and W[0, 0, 0] gives 3 indices", "e.g. W[0, 0]"),
    ("W", "--range W: W is a tensor of shape [2, 1]; a plot varies one number", "--range W[0, 0]=-1:1"),
], ids=["row", "column", "too-few", "too-many", "whole"])
def test_a_bad_entry_is_located_at_the_input_with_a_hint(variable, message, hint) -> None:
    program, _, _ = regression_arrays()
    with pytest.raises(InputError) as error:
        sample_curves(program, {}, variable, 0.0, 1.0, points=3)
    assert message in error.value.message and hint in error.value.hint
    assert error.value.position is not None and error.value.position.line == 23  # W = [[1], [-1]]


def test_a_number_is_not_indexed() -> None:
    with pytest.raises(InputError) as error:
        sample_curves(parse("x = [1, 2]\nL = sum(x * a)"), {"a": 1.0}, "a[0]", 0.0, 1.0, points=3)
    assert "a is a number, with no entries to index" in error.value.message
    assert "--range a=LOW:HIGH" in error.value.hint


def test_a_tensor_output_is_refused_with_the_way_out() -> None:
    with pytest.raises(InputError) as error:
        sample_curves(parse("x = [1, 2]\ny = x * a"), {}, "a", 0.0, 1.0, points=3)
    assert "y is a tensor of shape [2]; a plot draws a number" in error.value.message
    assert "sum(y)" in error.value.hint and "y[0]" in error.value.hint
