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


def posts_gradient() -> np.ndarray:
    """(2/N) Xᵀ(P − Y) at the sample's values, W = 0, from the numbers written in the program."""
    text = MATRIX.read_text()
    rows = [line for line in text.splitlines() if not line.startswith("#")]
    program = "\n".join(rows)
    x = np.array(json.loads(program.split("X =")[1].split("Y =")[0]))
    y = np.array(json.loads(program.split("Y =")[1].split("W =")[0]))
    return 2 / len(x) * x.T @ (x @ np.zeros((2, 1)) - y)


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
