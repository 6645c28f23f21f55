"""check --claim on a tensor program: matrix-form claims judged by their values.

The minigrad post's gradient of the mean squared error, dL/dW = (2/N) Xᵀ(P − Y) with N = 8 rows,
on samples/regression_matrix.ad: the right formula agrees at every point tried; the usual slips
(the 2/N's 2 forgotten, a transposed product, Y − P for P − Y) are each named.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from autodiff_cli.cli import main

MATRIX = Path(__file__).resolve().parents[2] / "samples" / "regression_matrix.ad"


def check(runner, claim: str, *more: str):
    return runner.invoke(main, ["check", str(MATRIX), "--claim", claim, *more], catch_exceptions=False)


def sample_x_y() -> tuple[np.ndarray, np.ndarray]:
    """X and Y as the numbers written in the program."""
    text = MATRIX.read_text()
    rows = [line for line in text.splitlines() if not line.startswith("#")]
    program = "\n".join(rows)
    x = np.array(json.loads(program.split("X =")[1].split("Y =")[0]))
    y = np.array(json.loads(program.split("Y =")[1].split("W =")[0]))
    return x, y


def sample_w() -> np.ndarray:
    """W's starting value as written in the program ([[1], [-1]], the line y = x - 1)."""
    return np.array(json.loads(MATRIX.read_text().split("\nW =")[1].split("\nP =")[0]), dtype=float)


def posts_gradient() -> np.ndarray:
    """(2/N) Xᵀ(P − Y) at the sample's values, from the numbers written in the program."""
    x, y = sample_x_y()
    return 2 / len(x) * x.T @ (x @ sample_w() - y)


def test_the_posts_formula_agrees(runner) -> None:
    result = check(runner, "dL/dW = transpose(X) @ (P - Y) * 2 / 8")
    assert result.exit_code == 0 and "agrees" in result.stdout and "equal at 8 points" in result.stdout


@pytest.mark.parametrize(("claim", "slip", "factor"), [
    ("dL/dW = transpose(X) @ (P - Y) / 8", "off by a factor of 1/2", 0.5),
    ("dL/dW = transpose(X) @ (Y - P) * 2 / 8", "the sign of the whole derivative is flipped", -1.0),
])
def test_a_wrong_formula_is_wrong_with_its_slip_and_the_entry_that_differs(runner, claim, slip, factor) -> None:
    result = check(runner, claim, "--format", "json")
    assert result.exit_code == 1
    verdict = json.loads(result.stdout)["claims"][0]
    assert verdict["verdict"] == "wrong" and slip in verdict["slip"]["message"]
    example = verdict["counterexample"]
    truth = posts_gradient()
    worst = np.unravel_index(np.argmax(np.abs((factor - 1) * truth)), truth.shape)
    assert example["entry"] == f"W[{worst[0]}, {worst[1]}] at the given values"
    assert example["correct"] == pytest.approx(truth[worst], rel=1e-12)
    assert example["claimed"] == pytest.approx(factor * truth[worst], rel=1e-12)


def test_a_transposed_formula_is_named(runner) -> None:
    result = check(runner, "dL/dW = transpose(P - Y) @ X * 2 / 8")
    assert result.exit_code == 1 and "your formula is transposed: it has shape [1, 2]" in result.stdout


def test_a_second_derivative_of_a_tensor_program_is_a_usage_error(runner) -> None:
    result = check(runner, "d2L/dW2 = 2")
    assert result.exit_code == 2 and "second derivatives of a tensor program are not checked" in result.stderr


def invoke(runner, program: str, claim: str, *more: str):
    return runner.invoke(main, ["check", "-e", program, "--claim", claim, *more], catch_exceptions=False)


def test_a_shape_error_in_the_program_is_reported_at_its_place_not_inconclusive(runner) -> None:
    # A is 2 x 2 and b has 3 entries: A @ b cannot be computed, whatever the claim says.
    result = invoke(runner, "A = [[1, 2], [3, 4]]\nb = [1, 2, 3]\nL = sum(A @ b)", "dL/dA = A")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.startswith("<expr>:3:11: error: A @ b: [2, 2] @ [3]: the inner sizes 2 and 3 differ\n")


@pytest.mark.parametrize("claim", ["dL/dW = W/0", "dL/dW = log(-1 - W*W)"])
def test_a_claim_undefined_everywhere_is_wrong_as_a_scalar_one_is(runner, claim) -> None:
    # The gradient is defined at the given values: (2/8) Xᵀ(X W − Y); the claim is not.
    result = check(runner, claim, "--format", "json")
    assert result.exit_code == 1, result.output
    verdict = json.loads(result.stdout)["claims"][0]
    assert verdict["verdict"] == "wrong"
    assert verdict["counterexample"]["claimed"] is None
    assert verdict["counterexample"]["entry"] == "W[0, 0] at the given values"
    assert verdict["counterexample"]["correct"] == pytest.approx(posts_gradient()[0, 0], rel=1e-12)
    assert verdict["slip"]["kind"] == "undefined"


def test_a_transposed_claim_for_a_square_matrix_is_named(runner) -> None:
    # L = sum(A * B): dL/dA = B entry by entry; B is not symmetric, so transpose(B) is wrong, and
    # wrong by exactly a transposition.
    program = "A = [[1, 2], [3, 4]]\nB = [[0.5, -1], [2, 1.5]]\nL = sum(A * B)"
    assert invoke(runner, program, "dL/dA = B").exit_code == 0
    result = invoke(runner, program, "dL/dA = transpose(B)", "--format", "json")
    assert result.exit_code == 1
    slip = json.loads(result.stdout)["claims"][0]["slip"]
    assert slip["kind"] == "transposed" and slip["message"].startswith("your formula is transposed")


def test_a_claim_of_zero_says_so_not_a_factor_of_zero(runner) -> None:
    result = check(runner, "dL/dW = 0*W")
    assert result.exit_code == 1
    assert "factor of 0" not in result.stdout
    assert "likely slip: your formula is 0 at every point tried, but dL/dW is not 0 everywhere" in result.stdout


def test_a_claim_right_only_at_the_given_values_is_wrong_around_them(runner) -> None:
    # At the given W = [1, -1], P = X @ W is X @ [[1], [-1]], so (2/8) Xᵀ(X @ [[1], [-1]] − Y) equals
    # the gradient there; at any other W it misses (2/8) Xᵀ X (W − [1, -1]), so the points around
    # the given values refute it.
    x, y = sample_x_y()
    assert sample_w().tolist() == [[1.0], [-1.0]]
    assert np.allclose(2 / 8 * x.T @ (x @ [[1], [-1]] - y), posts_gradient(), rtol=1e-14)  # right at the given W
    result = check(runner, "dL/dW = transpose(X) @ (X @ [[1], [-1]] - Y) * 2 / 8", "--format", "json")
    assert result.exit_code == 1, result.output
    verdict = json.loads(result.stdout)["claims"][0]
    assert verdict["verdict"] == "wrong"
    assert verdict["counterexample"]["entry"].endswith("at a random point near the given values")


def test_a_tiny_constant_claim_is_no_factor_of_the_gradient(runner) -> None:
    # 1e-300 everywhere against a gradient whose entries differ: no constant ratio, so no factor
    # (the ratios, all below 1e-8, once passed an absolute test of equality and read "factor of 0").
    result = check(runner, "dL/dW = W - W + 1e-300", "--format", "json")
    assert result.exit_code == 1
    assert json.loads(result.stdout)["claims"][0]["slip"]["kind"] == "unknown"


@pytest.mark.parametrize(("claims", "error"), [
    ("dP/dW = X", "<claim>:1:1: error: dP/dW: 'P' has shape [8, 1]; a gradient is of a number\n"),
    ("d2L/dW2 = 2", "<claim>:1:1: error: d2L/dW2: second derivatives of a tensor program are not checked\n"),
])
def test_a_tensor_claim_that_cannot_be_judged_is_located_at_its_head(runner, claims, error) -> None:
    result = check(runner, claims)
    assert result.exit_code == 2
    assert result.stderr.startswith(error)


def test_a_point_where_the_gradient_is_infinite_is_not_held_against_the_claim(runner) -> None:
    # d/dW sum(sqrt(W)) = 0.5/sqrt(W): infinite at the given W = 0, where the claim divides by 0;
    # judged where both are finite (the random points with W > 0), as a scalar claim is.
    program = "W = [[0], [0]]\nL = sum(sqrt(W))"
    result = invoke(runner, program, "dL/dW = 0.5/sqrt(W)")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("dL/dW = 0.5/sqrt(W): agrees\n")
    result = invoke(runner, program, "dL/dW = 0.25/sqrt(W)", "--format", "json")
    assert result.exit_code == 1
    verdict = json.loads(result.stdout)["claims"][0]
    assert verdict["counterexample"]["entry"].endswith("at a random point near the given values")
    assert verdict["slip"]["message"].startswith("off by a factor of 1/2")


def test_the_table_says_what_a_tensor_claim_is_judged_against(runner) -> None:
    result = check(runner, "dL/dW = transpose(X) @ (P - Y) * 2 / 8", "--format", "table", "--no-color")
    assert result.exit_code == 0
    assert result.stdout.startswith("claims checked against the gradient by reverse mode\n")


CLASSES = "Z = [[1, 2, 3], [1, 1, 1]]\nc = [2, 0]\nL = cross_entropy(Z, c)\n"
# dL/dZ = (softmax(Z) - onehot(c)) / N, N = 2 rows; the term in Z - Z0 is 0 at the given Z only.
RIGHT_ONLY_AT_Z0 = "dL/dZ = (softmax(Z) - [[0, 0, 1], [1, 0, 0]]) / 2 + (Z - [[1, 2, 3], [1, 1, 1]])"


def test_class_labels_given_as_an_input_are_not_moved(runner) -> None:
    # Moving the labels c made every random point fail (a label must be a class), so the claim
    # was judged at the given values alone, and a claim right only there "agreed".
    result = runner.invoke(main, ["check", "-e", CLASSES, "--claim", RIGHT_ONLY_AT_Z0, "--format", "json"])
    assert result.exit_code == 1, result.output
    (claim,) = json.loads(result.stdout)["claims"]
    assert claim["verdict"] == "wrong"
    result = runner.invoke(main, ["check", "-e", CLASSES, "--claim",
                                  "dL/dZ = (softmax(Z) - [[0, 0, 1], [1, 0, 0]]) / 2", "--format", "json"])
    assert result.exit_code == 0, result.output
    (claim,) = json.loads(result.stdout)["claims"]
    assert claim["verdict"] == "agrees" and claim["points"] == 8


def test_a_claim_judged_at_the_given_values_alone_does_not_agree(runner) -> None:
    # The labels are computed from c, so moving c makes them fractions at every random point:
    # only the given values can be tried, and one point cannot tell a claim right there only.
    program = CLASSES.replace("cross_entropy(Z, c)", "cross_entropy(Z, c * 1)")
    result = runner.invoke(main, ["check", "-e", program, "--claim", RIGHT_ONLY_AT_Z0, "--format", "json"])
    assert result.exit_code == 3, result.output
    (claim,) = json.loads(result.stdout)["claims"]
    assert claim["verdict"] == "inconclusive"
    assert "only at the given values" in claim["reason"]


ONE_HOT = "Z = [[1, 3, 3.5], [4, 0, 9]]\ny = [2, 0]\nL = sum(Z * one_hot(y, 3) * Z)\n"
# dL/dZ = 2 Z at each row's label (Z[0, 2] = 3.5 -> 7, Z[1, 0] = 4 -> 8), 0 elsewhere, by hand.
ONE_HOT_GRADIENT = "dL/dZ = 2 * Z * [[0, 0, 1], [1, 0, 0]]"


def test_one_hots_labels_are_not_moved_by_the_gradient_check(runner) -> None:
    # The finite difference moved y to 2.0000121, "not a class": 4 of 10 rows inconclusive.
    result = runner.invoke(main, ["check", "-e", ONE_HOT, "--format", "json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "not moved: y" in result.stderr
    rows = {row["name"]: row for row in json.loads(result.stdout)["inputs"]}
    assert not any(name.startswith("y") for name in rows)
    assert rows["Z[0, 2]"]["reverse"] == 7.0 and rows["Z[1, 0]"]["reverse"] == 8.0


def test_claim_and_claims_agree_on_one_hots_labels_and_on_one_point(runner, tmp_path) -> None:
    result = invoke(runner, ONE_HOT, ONE_HOT_GRADIENT, "--format", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["claims"][0]["points"] == 8
    lines = tmp_path / "lines.txt"
    lines.write_text(ONE_HOT_GRADIENT.replace("dL/dZ", "dZ") + "\n")
    result = runner.invoke(main, ["check", "-e", ONE_HOT, "--claims", str(lines)], catch_exceptions=False)
    assert result.exit_code == 0 and "sampled at 8 points" in result.stdout, result.output
    # labels computed from y are moved, so only the given values can be tried: both say so (exit 3)
    program = ONE_HOT.replace("one_hot(y, 3)", "one_hot(y * 1, 3)")
    assert invoke(runner, program, ONE_HOT_GRADIENT).exit_code == 3
    result = runner.invoke(main, ["check", "-e", program, "--claims", str(lines)], catch_exceptions=False)
    assert result.exit_code == 3, result.output
    assert "agrees only at the given values" in result.stdout
