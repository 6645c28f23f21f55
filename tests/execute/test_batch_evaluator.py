"""One ``BatchEvaluator`` for every program: a program of numbers on the column sweep, any other on
the interpreter's batch axis, through the same ``evaluate_batch`` and the same ``BatchResult``."""

from __future__ import annotations

import numpy as np
import pytest

from autodiff_cli import BatchEvaluator, InputError, RowError, evaluate_batch

MATRIX = "W = [[1, 2], [3, 4]]\nx = [0, 0]\nL = sum(tanh(W @ x))\n"
W = np.array([[1.0, 2.0], [3.0, 4.0]])


def entry_columns(x: np.ndarray) -> dict[str, np.ndarray]:
    return {"x[0]": x[:, 0], "x[1]": x[:, 1]}


def test_a_tensor_program_runs_through_evaluate_batch_row_by_row() -> None:
    x = np.array([[0.1, 0.3], [0.2, -1.0], [-0.5, 0.25]])
    result = evaluate_batch(MATRIX, entry_columns(x), wrt=["x"])
    h = np.tanh(x @ W.T)  # each row's W @ x
    gradient = (1.0 - h * h) @ W  # W^T (1 - tanh^2), row by row
    np.testing.assert_allclose(result.value, h.sum(axis=1), rtol=1e-15)
    np.testing.assert_allclose(result.grads["x"], gradient, rtol=1e-14)
    columns = result.columns()
    assert list(columns) == ["L", "dL/dx[0]", "dL/dx[1]"]
    np.testing.assert_allclose(columns["dL/dx[1]"], gradient[:, 1], rtol=1e-14)


def test_a_tensor_programs_mean_is_the_mean_of_its_rows() -> None:
    x = np.array([[0.1, 0.3], [0.2, -1.0], [-0.5, 0.25], [2.0, 1.0]])
    mean = evaluate_batch(MATRIX, entry_columns(x), wrt=["x"], reduce="mean")
    h = np.tanh(x @ W.T)
    assert mean.value == pytest.approx(h.sum(axis=1).mean(), rel=1e-15)
    np.testing.assert_allclose(mean.grads["x"], ((1.0 - h * h) @ W).mean(axis=0), rtol=1e-14)
    assert mean.count == 4


def test_a_failed_row_of_a_tensor_program_is_a_row_error_saying_its_row_as_a_number_programs_does() -> None:
    program = "x = [0, 0]\nL = log(x[0]) + x[1]\n"
    columns = {"x[0]": np.array([1.0, -2.0, 3.0]), "x[1]": np.array([0.5, 0.25, 4.0])}
    with pytest.raises(RowError) as raised:
        evaluate_batch(program, columns)
    assert raised.value.row == 1
    assert raised.value.notes[-1] == "in row 1 (counting from 0): x=[-2.0, 0.25]"
    assert raised.value.position is not None  # the caret under log, as eval gives it
    skipped = evaluate_batch(program, columns, on_error="skip")
    assert skipped.kept.tolist() == [0, 2]
    np.testing.assert_allclose(skipped.value, [np.log(1.0) + 0.5, np.log(3.0) + 4.0], rtol=1e-15)
    assert skipped.error(1).notes == raised.value.notes
    # the same failure in a program of numbers: the same note, from the column sweep
    with pytest.raises(RowError) as numbers:
        evaluate_batch("L = log(x) + y", {"x": [1.0, -2.0, 3.0], "y": [0.5, 0.25, 4.0]})
    assert numbers.value.notes[-1] == "in row 1 (counting from 0): x=-2.0, y=0.25"


def test_entry_columns_are_read_as_a_programs_number_columns_are() -> None:
    # Booleans are not taken as 1 and 0, in an entry column either (they were, silently).
    columns = {"x[0]": np.array([True, False]), "x[1]": np.array([0.5, 0.25])}
    with pytest.raises(InputError, match=r"the column 'x\[0\]' holds booleans"):
        evaluate_batch(MATRIX, columns)
    with pytest.raises(InputError, match=r"the column 'x' holds booleans"):
        evaluate_batch("L = 2*x", {"x": np.array([True, False])})


def test_the_executor_is_picked_by_the_program_and_its_inputs() -> None:
    numbers = BatchEvaluator("L = (w*x - y)**2")
    assert numbers._sweep is not None  # the column sweep: a float64 program of numbers
    assert BatchEvaluator("L = (w*x - y)**2", dtype="float32")._sweep is None
    assert BatchEvaluator(MATRIX)._sweep is None
    assert numbers.shapes({"x": np.zeros(1), "y": np.zeros(1)}) == {"w": (), "x": (), "y": (), "L": ()}
    assert BatchEvaluator(MATRIX).shapes(entry_columns(np.zeros((1, 2))))["x"] == (2,)
    assert numbers.column_names() == ["L", "dL/dw", "dL/dx", "dL/dy"]


def test_a_gradient_of_zero_is_positive_zero_on_the_interpreter_too() -> None:
    """At x = -2, w = 0.7: h = clip(-1.4, -1, 1) = -1 is saturated, so dL/dw is 0; the chain
    (2 * 0.1h * 0.1) * 0 * x gives -0.0 in floats, which the engine and the column sweep never
    show (every gradient starts at +0.0 there).  where() sends the program to the interpreter."""
    import math

    program = "x = 1.0\nw = 0.7\nh = clip(w*x, -1, 1)\nL = where(x > 0, h, 0.1*h)**2"
    for dtype in ("float64", "float32"):
        result = BatchEvaluator(program, wrt=["w"], dtype=dtype).evaluate({"x": np.array([-2.0, 0.5])}).columns()
        gradient = result["dL/dw"]
        assert gradient[0] == 0.0 and math.copysign(1.0, gradient[0]) == 1.0, dtype
        assert gradient[1] == pytest.approx(0.35)  # 2 * h * x = 2 * 0.35 * 0.5
