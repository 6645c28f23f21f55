"""Forward mode (tangent propagation): gradients, the work it reports, deep graphs.

Expected numbers are derived by hand in the comments (or from the samples'
documented results), never taken from our own output.
"""

import math

import pytest

from autodiff_cli.engine import Value
from autodiff_cli.engine.forward import forward_derivative
from autodiff_cli.execute import apply_grads, evaluate, forward_gradients
from autodiff_cli.language import parse
from autodiff_cli.render.report import work_dict, work_summary

QUADRATIC = "x = 2\ny = 3\nf = 3*x**2 + x*y + 5*y**2"


def test_quadratic_forward_vs_reverse_example() -> None:
    # The tutorial's example: f = 3x^2 + xy + 5y^2 at (2, 3) is 12 + 6 + 45 = 63,
    # df/dx = 6x + y = 15 and df/dy = x + 10y = 32.
    evaluation = evaluate(parse(QUADRATIC), backward=False)
    result = forward_gradients(evaluation)
    assert evaluation.root.data == 63.0
    assert result.grads == {"x": 15.0, "y": 32.0}
    # The graph: x, y, the constants 3 and 5, x**2, 3*x**2, x*y, their sum, y**2, 5*y**2
    # and f: 11 nodes.  Two inputs, so two full forward passes.
    assert (result.passes, result.graph_size, result.node_visits) == (2, 11, 22)
    assert (result.reverse_passes, result.reverse_node_visits) == (1, 11)


def test_work_summary_line() -> None:
    result = forward_gradients(evaluate(parse(QUADRATIC), backward=False))
    assert work_summary(result) == (
        "forward mode: 2 passes (one per input) x 11 nodes = 22 node visits; "
        "reverse mode: 1 backward pass x 11 nodes = 11 node visits"
    )
    assert work_dict(result) == {
        "forward": {"passes": 2, "node_visits": 22},
        "reverse": {"passes": 1, "node_visits": 11},
        "graph_size": 11,
    }


def test_work_summary_singular_and_variables() -> None:
    # y = 2*x: nodes 2, x, y.  Asking for an intermediate makes the passes "per variable".
    evaluation = evaluate(parse("y = 2*x"), {"x": 1.0}, backward=False)
    assert work_summary(forward_gradients(evaluation)) == (
        "forward mode: 1 pass (one per input) x 3 nodes = 3 node visits; "
        "reverse mode: 1 backward pass x 3 nodes = 3 node visits"
    )
    both = forward_gradients(evaluation, wrt=["x", "y"])
    assert work_summary(both).startswith("forward mode: 2 passes (one per variable) x 3 nodes = 6 node visits")


def test_karpathy_inputs_and_intermediates() -> None:
    # L = (a*b + c)*f with e = a*b, d = e + c: dL/da = b*f = 6, dL/db = a*f = -4,
    # dL/dc = f = -2, dL/df = d = 4, and for the intermediates dL/dd = dL/de = f = -2.
    evaluation = evaluate(parse("a = 2\nb = -3\nc = 10\ne = a*b\nd = e + c\nf = -2\nL = d*f"), backward=False)
    assert forward_gradients(evaluation).grads == {"a": 6.0, "b": -4.0, "c": -2.0, "f": 4.0}
    result = forward_gradients(evaluation, wrt=["d", "e", "a", "L"])
    assert result.grads == {"a": 6.0, "e": -2.0, "d": -2.0, "L": 1.0}  # program order
    assert result.passes == 4
    assert result.wrt_inputs_only is False


def test_neuron_sample(samples) -> None:
    # From the sample's comment: x1 -1.5, w1 1.0, x2 0.5, w2 0.0 (o = tanh(n) = 1/sqrt(2),
    # so tanh'(n) = 1/2 and dn/dx1 = w1 = -3 etc.).
    evaluation = evaluate(parse((samples / "neuron.ad").read_text()), backward=False)
    grads = forward_gradients(evaluation).grads
    for name, want in {"x1": -1.5, "w1": 1.0, "x2": 0.5, "w2": 0.0, "b": 0.5}.items():
        assert math.isclose(grads[name], want, rel_tol=1e-12, abs_tol=1e-15), name


def test_softmax_cross_entropy_sample(samples) -> None:
    # dloss/dz_i = softmax(z)_i - [i is the true class], the true class being 2.
    evaluation = evaluate(parse((samples / "softmax_xent.ad").read_text()), backward=False)
    z = {"z1": 1.0, "z2": 2.0, "z3": 0.5}
    total = sum(math.exp(v) for v in z.values())
    want = {name: math.exp(v) / total - (name == "z2") for name, v in z.items()}
    grads = forward_gradients(evaluation).grads
    for name in z:
        assert math.isclose(grads[name], want[name], rel_tol=1e-12), name


@pytest.mark.parametrize(
    "sample", ["karpathy.ad", "neuron.ad", "neuron_exp.ad", "mlp.ad", "quadratic.ad", "softmax_xent.ad"],
    ids=lambda name: name.removesuffix(".ad"),
)
def test_forward_matches_reverse_on_every_sample(samples, sample: str) -> None:
    evaluation = evaluate(parse((samples / sample).read_text()))
    result = forward_gradients(evaluation, wrt=list(evaluation.nodes))
    for name, node in evaluation.nodes.items():
        # The same products, summed in another order: equal to a few ulps.
        assert math.isclose(result.grads[name], node.grad, rel_tol=1e-13, abs_tol=1e-15), name


def test_an_input_the_output_ignores_still_costs_a_pass() -> None:
    evaluation = evaluate(parse("b = 1\nunused = b*b\ny = 2*a"), {"a": 5.0}, backward=False)
    result = forward_gradients(evaluation)
    assert result.grads == {"b": 0.0, "a": 2.0}
    assert result.passes == 2


def test_unknown_wrt_name_is_a_key_error() -> None:
    evaluation = evaluate(parse("y = 2*x"), {"x": 1.0}, backward=False)
    with pytest.raises(KeyError, match="zz"):
        forward_gradients(evaluation, wrt=["x", "zz"])


def test_zero_tangent_does_not_meet_an_infinite_slope() -> None:
    # f = sqrt(x) + y at x = 0: df/dy = 1 exactly.  The sqrt node has slope inf; a naive
    # pass seeded at y would compute inf * 0 = NaN there and carry it to f.
    evaluation = evaluate(parse("f = sqrt(x) + y"), {"x": 0.0, "y": 1.0})
    result = forward_gradients(evaluation)
    assert result.grads["y"] == 1.0 == evaluation.nodes["y"].grad
    assert result.grads["x"] == math.inf == evaluation.nodes["x"].grad


def test_apply_grads_feeds_the_reports() -> None:
    evaluation = evaluate(parse(QUADRATIC), backward=False)
    assert evaluation.nodes["x"].grad == 0.0  # no backward pass ran
    result = forward_gradients(evaluation)
    apply_grads(evaluation, result)
    assert (evaluation.nodes["x"].grad, evaluation.nodes["y"].grad) == (15.0, 32.0)


def test_forward_derivative_on_engine_values() -> None:
    # micrograd-style code: out = a*b + b**3 at a = 2, b = -3:
    # dout/da = b = -3; dout/db = a + 3b^2 = 2 + 27 = 29.
    a, b = Value(2.0, label="a"), Value(-3.0, label="b")
    out = a * b + b**3
    assert forward_derivative(out, a) == -3.0
    assert forward_derivative(out, b) == 29.0
    assert forward_derivative(out, Value(1.0)) == 0.0  # not in the graph
    assert forward_derivative(out, out) == 1.0


def test_a_million_uses_of_one_input() -> None:
    # y = x + x + ... + x with 10**6 + 1 terms, built as a chain 10**6 nodes deep:
    # dy/dx = 10**6 + 1, exactly (integers below 2**53 add exactly).
    n = 10**6
    x = Value(0.25, label="x")
    y = x
    for _ in range(n):
        y = y + x
    assert forward_derivative(y, x) == n + 1


@pytest.mark.parametrize(
    ("program", "x"),
    [("y = sqrt(x*x)", 0.0), ("y = sqrt(0*x)", 0.0), ("y = sqrt(relu(x))", 0.0), ("y = -(relu(x))**0.5", -1.5)],
    ids=["sqrt_of_square", "sqrt_of_zero_times", "sqrt_of_relu", "relu_power_half"],
)
def test_zero_times_infinite_slope_on_the_path_is_nan_in_both_modes(program: str, x: float) -> None:
    # Every path from x to y multiplies a zero local derivative by an infinite one: the
    # backward pass gives NaN, as PyTorch does, and forward mode must agree, not say 0.
    evaluation = evaluate(parse(program), {"x": x})
    assert math.isnan(evaluation.nodes["x"].grad)
    assert math.isnan(forward_gradients(evaluation).grads["x"])


def test_a_program_without_inputs_has_no_forward_passes() -> None:
    result = forward_gradients(evaluate(parse("f = sqrt(2)"), backward=False))
    assert (result.grads, result.passes, result.node_visits) == ({}, 0, 0)
