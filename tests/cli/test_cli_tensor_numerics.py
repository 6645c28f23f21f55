"""Issue 35, tensor numerics: the softmax family at extreme logits through eval (reverse and
forward mode) and the eager Tensor; one rule for a reduction of an empty selection (refused
where it is written, before anything runs, as max of nothing was)."""

from __future__ import annotations

import json
import math

import pytest

from autodiff_cli.cli import main
from autodiff_cli.engine.tensor import ShapeMismatch, Tensor
from autodiff_cli.engine.tensor_nn import cross_entropy


def _eval_json(runner, source: str, *args: str) -> dict:
    result = runner.invoke(main, ["eval", source, "--format", "json", *args])
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    return json.loads(result.stdout)


def _value(document: dict, name: str):
    return document["values"][name]


def _grad(document: dict, name: str):
    return document["grads"][name]


@pytest.mark.parametrize("mode", ["reverse", "forward"])
@pytest.mark.parametrize("big", ["1e15", "1e16", "1e308", "-1e308"])
def test_cross_entropy_of_two_equal_huge_logits_is_log_2(runner, mode, big) -> None:
    # softmax of two equal logits is [1/2, 1/2], whatever they are: the loss is -log(1/2)
    document = _eval_json(runner, f"x = [{big}, {big}]; L = cross_entropy(x, 0)", "--mode", mode)
    assert _value(document, "L") == pytest.approx(math.log(2.0), rel=1e-15)
    assert _grad(document, "x") == [-0.5, 0.5]  # softmax - onehot(0)


@pytest.mark.parametrize("mode", ["reverse", "forward"])
@pytest.mark.parametrize("big", ["1e16", "1e308", "-1e308"])
def test_the_gradient_of_logsumexp_of_equal_huge_logits_is_softmax(runner, mode, big) -> None:
    document = _eval_json(runner, f"x = [{big}, {big}]; L = logsumexp(x)", "--mode", mode)
    assert _grad(document, "x") == [0.5, 0.5]


def test_cross_entropy_at_huge_logits_over_rows_of_a_batch(runner, tmp_path) -> None:
    """The same numbers through batch (the executor's batch axis), with no NumPy warning
    (the finiteness check summed -1e308 + -1e308 and NumPy said so on stderr)."""
    rows = tmp_path / "rows.csv"
    rows.write_text("x[0],x[1]\n1e16,1e16\n-1e308,-1e308\n1e308,1e308\n")
    result = runner.invoke(main, ["batch", "x = [0, 0]; L = cross_entropy(x, 0)", str(rows), "--to", "csv"])
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    assert lines[0] == "x[0],x[1],L,dL/dx[0],dL/dx[1]"
    for line in lines[1:]:
        loss, d0, d1 = (float(cell) for cell in line.split(",")[2:])
        assert (loss, d0, d1) == (pytest.approx(math.log(2.0), rel=1e-15), -0.5, 0.5)


def test_the_eager_tensor_shares_the_stable_kernels() -> None:
    x = Tensor([1e16, 1e16], requires_grad=True)
    x.logsumexp().backward()
    assert x.grad.tolist() == [0.5, 0.5]
    logits = Tensor([[1e16, 1e16], [1e308, 1e308]], requires_grad=True)
    loss = cross_entropy(logits, [0, 1])
    assert loss.item() == pytest.approx(math.log(2.0), rel=1e-15)
    loss.backward()
    assert logits.grad.tolist() == [[-0.25, 0.25], [0.25, -0.25]]  # (softmax - onehot) / 2


# --- a reduction of an empty selection --------------------------------------------------------------


@pytest.mark.parametrize("source, column, message", [
    ("x = [1, 2, 3]; L = mean(x[2:1])", 20, "mean((...)): [0]: mean of no elements has no value"),
    ("M = [[1, 2], [3, 4]]; L = sum(mean(M[:, 2:], 1))", 31,
     "mean((...), 1): [2, 0]: mean along axis 1 of size 0 has no value"),
    ("W = zeros([0, 3]); L = mean(W)", 24, "mean(W): [0, 3]: mean of no elements has no value"),
    ("x = [1, 2, 3]; L = mse(x[2:1], x[1:0])", 20, "mse((...), (...)): [0] and [0]: mse of no elements has no value"),
    ("x = [1, 2, 3]; L = logsumexp(x[2:1])", 20,
     "logsumexp((...)): [0]: logsumexp along a last axis of size 0 has no value"),
    ("x = [1, 2, 3]; L = sum(softmax(x[2:1]))", 24,
     "softmax((...)): [0]: softmax along a last axis of size 0 has nothing to normalize"),
    ("W = zeros([2, 0]); L = sum(log_softmax(W))", 28,
     "log_softmax(W): [2, 0]: log_softmax along a last axis of size 0 has nothing to normalize"),
    ("x = [1, 2, 3]; L = cross_entropy(x[0:0], 0)", 20,
     "cross_entropy((...), 0): [0] and []: the logits have no classes (a last axis of size 0)"),
    ("W = zeros([0, 3]); y = zeros([0]); L = cross_entropy(W, y)", 40,
     "cross_entropy(W, y): [0, 3] and [0]: cross_entropy of no examples has no value"),
])
def test_a_reduction_of_nothing_is_refused_where_it_is_written(runner, source, column, message) -> None:
    result = runner.invoke(main, ["eval", source, "--format", "plain"])
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.startswith(f"<expr>:1:{column}: error: {message}\n")  # no NumPy warning before it
    assert "Traceback" not in result.stderr and "RuntimeWarning" not in result.stderr


def test_a_reduction_of_nothing_is_found_before_anything_runs(runner) -> None:
    # check infers the shapes first: the same located error, not a verdict on a 0.0
    result = runner.invoke(main, ["check", "x = [1, 2, 3]; L = mean(x[2:1])"])
    assert result.exit_code == 1
    assert "<expr>:1:20: error: mean((...)): [0]: mean of no elements has no value" in result.stderr


def test_an_empty_result_of_a_reduction_along_another_axis_is_not_refused(runner) -> None:
    # mean along axis 1 of [0, 3]: no row to average, so no mean of nothing: an empty result, summing to 0
    document = _eval_json(runner, "W = zeros([0, 3]); L = sum(mean(W, 1))")
    assert _value(document, "L") == 0.0


@pytest.mark.parametrize("make", [
    lambda: Tensor([1.0, 2.0])[2:].mean(),
    lambda: Tensor([[1.0, 2.0]])[:, 2:].mean(1),
    lambda: Tensor([1.0, 2.0])[2:].logsumexp(),
    lambda: Tensor([1.0, 2.0])[2:].softmax(),
    lambda: cross_entropy(Tensor([[1.0, 2.0]])[:0], Tensor([0.0])[:0]),
], ids=["mean", "mean-axis", "logsumexp", "softmax", "cross_entropy"])
def test_the_eager_tensor_refuses_a_reduction_of_nothing(make) -> None:
    with pytest.raises(ShapeMismatch, match="has no value|nothing to normalize"):
        make()


# --- forward mode and an infinite slope that no seed reaches (found by the adversarial pass) -------


def test_forward_mode_adds_nothing_through_an_infinite_slope_no_seed_reaches() -> None:
    """d sum(sqrt(x)) / d x[1] at x = [0, 2] is 1/(2 sqrt 2): x[0]'s infinite slope (sqrt at 0) is
    not on the path from x[1], so 0 * inf must not make it NaN (it did: forward mode gave
    [inf, nan] where reverse mode gives [inf, 0.3536])."""
    from autodiff_cli.execute.interpreter import input_arrays, run_forward
    from autodiff_cli.language import parse

    program = parse("x = [0, 2]\ny = sum(sqrt(x))")
    run = run_forward(program, input_arrays(program, {}, seed=0))
    import numpy as np

    along_second = run.jvp("y", {"x": np.array([0.0, 1.0])})
    assert along_second == pytest.approx(1.0 / (2.0 * np.sqrt(2.0)), rel=1e-15)
    along_first = run.jvp("y", {"x": np.array([1.0, 0.0])})
    assert along_first == np.inf
    jacobian_columns = [run.jvp("y", {"x": np.eye(2)[k]}) for k in range(2)]
    assert np.isinf(jacobian_columns[0]) and np.isfinite(jacobian_columns[1])


def test_a_jacobian_row_adds_nothing_through_an_infinite_slope_its_seed_does_not_reach() -> None:
    """The Jacobian of sqrt at x = [0, 2] is diag(inf, 1/(2 sqrt 2)) in both modes: row 1's seed
    is 0 on y[0], whose slope is inf (reverse mode gave NaN there, forward mode the transpose)."""
    import numpy as np

    from autodiff_cli.execute.interpreter import evaluate_tensors
    from autodiff_cli.language import parse

    program = parse("x = [0, 2]\ny = sqrt(x)")
    want = np.array([[np.inf, 0.0], [0.0, 1.0 / (2.0 * np.sqrt(2.0))]])
    for forward in (False, True):
        jacobian = np.asarray(evaluate_tensors(program, {}, forward=forward).derivatives["x"])
        np.testing.assert_array_equal(jacobian, want)
