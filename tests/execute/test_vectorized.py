"""The vectorized executor's API: inputs, outputs, reductions, failed rows, chunks and memory.

Expected numbers are derived by hand or from closed forms; agreement with the scalar
engine on random programs is tests/properties/test_vectorized.py's job.
"""

from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import autodiff_cli
from autodiff_cli.errors import EvaluationError, InputError
from autodiff_cli.execute import evaluate, vectorized
from autodiff_cli.execute.batch_evaluator import BatchEvaluator, RowError, evaluate_batch, gradient_column
from autodiff_cli.language import parse

KARPATHY = "e = a*b\nd = e + c\nL = d*f"


def test_columns_and_numbers_broadcast_like_rows_of_eval() -> None:
    # L = (a*b + c)*f: dL/da = b*f, dL/db = a*f, dL/dc = f, dL/df = a*b + c.
    a = np.array([2.0, 1.0, -1.0])
    result = evaluate_batch(KARPATHY, {"a": a, "b": -3.0, "c": 10, "f": [-2.0, 1.0, 0.5]})
    f = np.array([-2.0, 1.0, 0.5])
    assert result.output == "L" and result.rows == 3 and result.count == 3
    np.testing.assert_array_equal(result.value, (a * -3.0 + 10) * f)
    np.testing.assert_array_equal(result.grads["a"], -3.0 * f)
    np.testing.assert_array_equal(result.grads["b"], a * f)
    np.testing.assert_array_equal(result.grads["c"], f)
    np.testing.assert_array_equal(result.grads["f"], a * -3.0 + 10)
    assert list(result.grads) == ["a", "b", "c", "f"]  # every input, in program order, by default


def test_defaults_fill_inputs_no_column_gives() -> None:
    result = evaluate_batch("w = 3\ny = w*x", {"x": [1.0, 2.0]})
    np.testing.assert_array_equal(result.value, [3.0, 6.0])
    np.testing.assert_array_equal(result.grads["w"], [1.0, 2.0])


def test_only_numbers_is_one_row() -> None:
    result = evaluate_batch("y = x*x", {"x": 3.0})
    assert result.rows == 1
    np.testing.assert_array_equal(result.grads["x"], [6.0])


def test_columns_names_are_stable() -> None:
    result = evaluate_batch(KARPATHY, {"a": [2.0], "b": -3, "c": 10, "f": -2}, wrt=["a", "e"], values_of=["d"])
    assert list(result.columns()) == ["L", "d", "dL/da", "dL/de"]
    assert gradient_column("L", "a") == "dL/da"
    assert result.columns()["dL/de"][0] == -2.0  # dL/de = f


def test_wrt_intermediates_values_of_and_another_output() -> None:
    result = evaluate_batch(KARPATHY, {"a": [2.0, 3.0], "b": -3, "c": 10, "f": -2},
                            output="d", wrt=["e", "a"], values_of=["e", "d"])
    assert result.output == "d"
    np.testing.assert_array_equal(result.values["d"], [4.0, 1.0])  # a*b + c
    np.testing.assert_array_equal(result.values["e"], [-6.0, -9.0])
    np.testing.assert_array_equal(result.grads["e"], [1.0, 1.0])
    np.testing.assert_array_equal(result.grads["a"], [-3.0, -3.0])
    assert list(result.values) == ["d", "e"]


def test_values_only_skips_the_reverse_sweep() -> None:
    result = evaluate_batch("y = log(x)", {"x": [1.0, math.e]}, wrt=())
    assert result.grads == {}
    np.testing.assert_allclose(result.value, [0.0, 1.0], rtol=1e-15)


def test_gradient_of_a_variable_the_output_does_not_use_is_zero() -> None:
    result = evaluate_batch("u = 2*z\ny = 3*x", {"x": [1.0, 2.0], "z": [5.0, 6.0]})
    np.testing.assert_array_equal(result.grads["z"], [0.0, 0.0])
    assert not np.signbit(result.grads["z"]).any()


@pytest.mark.parametrize(
    "inputs, message",
    [({"x": [1.0, 2.0], "y": [1.0]}, "the columns have different lengths: 'x' has 2, 'y' has 1"),
     ({"x": [[1.0, 2.0]], "y": 1}, "the column 'x' has shape (1, 2); a column is one-dimensional"),
     ({"x": ["a", "b"], "y": 1}, "the column 'x' holds text, not numbers"),
     ({"x": [[1.0], [2.0, 3.0]], "y": 1}, "the column 'x' is not numeric"),
     ({"x": [1.0]}, "no value for input y")],
    ids=["lengths", "two-dimensional", "text", "ragged", "missing"],
)
def test_bad_inputs_are_input_errors(inputs: dict, message: str) -> None:
    with pytest.raises(InputError) as raised:
        evaluate_batch("z = x*y", inputs)
    assert raised.value.message.startswith(message)


def test_a_computed_name_cannot_be_a_column() -> None:
    with pytest.raises(InputError, match="'e' is computed by the program"):
        evaluate_batch(KARPATHY, {"a": [1.0], "b": 1, "c": 1, "f": 1, "e": [2.0]})


def test_unused_columns_are_ignored_with_a_warning() -> None:
    result = evaluate_batch("y = 2*x", {"x": [1.0], "id": [7.0]})
    assert result.warnings == ["'id' is not used by the program; its value is ignored"]


@pytest.mark.parametrize("option", ["wrt", "values_of"])
def test_unknown_names_are_input_errors(option: str) -> None:
    with pytest.raises(InputError, match=f"{option} names q, which the program does not define") as raised:
        evaluate_batch("y = 2*x", {"x": [1.0]}, **{option: ["q"]})
    assert "the variables are: x, y" in raised.value.hint


def test_a_dataframe_like_object_is_read_by_its_columns() -> None:
    class Frame:  # what pandas and polars DataFrames offer: .columns and [name]
        columns = ("x", "y")

        def __getitem__(self, name: str) -> np.ndarray:
            return {"x": np.array([1.0, 2.0]), "y": np.array([3.0, 4.0])}[name]

    np.testing.assert_array_equal(evaluate_batch("z = x*y", Frame()).value, [3.0, 8.0])


# --- reductions ----------------------------------------------------------------------------


def test_reduce_is_the_sum_and_mean_of_the_rows() -> None:
    rng = np.random.default_rng(3)
    inputs = {"x": rng.standard_normal(5000), "y": rng.standard_normal(5000), "w": 0.7}
    program = "L = tanh(w*x - y)**2"
    rows = evaluate_batch(program, inputs)
    total = evaluate_batch(program, inputs, reduce="sum")
    mean = evaluate_batch(program, inputs, reduce="mean")
    for name in ("x", "y", "w"):
        assert total.grads[name] == pytest.approx(math.fsum(rows.grads[name]), rel=1e-13, abs=1e-13)
        assert mean.grads[name] == pytest.approx(math.fsum(rows.grads[name]) / 5000, rel=1e-13, abs=1e-16)
    assert total.value == pytest.approx(math.fsum(rows.value), rel=1e-13)
    assert isinstance(mean.value, float) and mean.count == 5000 and mean.reduce == "mean"


def test_mean_gradient_of_least_squares_is_the_closed_form() -> None:
    # The minigrad post's batch backprop: for L = (x1*w1 + x2*w2 + x3*w3 - y)**2 averaged
    # over N rows, the gradient is 2/N X^T (XW - Y).
    rng = np.random.default_rng(11)
    n = 4000
    X, Y, W = rng.standard_normal((n, 3)), rng.standard_normal(n), np.array([0.5, -1.25, 2.0])
    inputs = {"x1": X[:, 0], "x2": X[:, 1], "x3": X[:, 2], "y": Y, "w1": W[0], "w2": W[1], "w3": W[2]}
    result = evaluate_batch("L = (x1*w1 + x2*w2 + x3*w3 - y)**2", inputs, wrt=["w1", "w2", "w3"], reduce="mean")
    closed_form = 2.0 / n * X.T @ (X @ W - Y)
    np.testing.assert_allclose([result.grads[f"w{i}"] for i in (1, 2, 3)], closed_form, rtol=1e-12)
    assert result.value == pytest.approx(np.mean((X @ W - Y) ** 2), rel=1e-12)


def test_reduce_of_no_rows() -> None:
    assert evaluate_batch("y = 2*x", {"x": []}, reduce="sum").value == 0.0
    assert math.isnan(evaluate_batch("y = 2*x", {"x": []}, reduce="mean").value)
    assert evaluate_batch("y = 2*x", {"x": []}).value.shape == (0,)


@pytest.mark.parametrize("option, value", [("reduce", "median"), ("on_error", "ignore")])
def test_bad_options_are_value_errors(option: str, value: str) -> None:
    with pytest.raises(ValueError, match=option):
        evaluate_batch("y = x", {"x": [1.0]}, **{option: value})


# --- failed rows ---------------------------------------------------------------------------

LOGS = "a = log(x)\nb = sqrt(a)\ny = b*w"


def test_raise_names_the_first_failed_row_as_eval_would() -> None:
    with pytest.raises(RowError) as raised:
        evaluate_batch(LOGS, {"x": [2.0, 0.5, -1.0], "w": 2.0})
    error = raised.value
    # Row 1: log(0.5) < 0, so sqrt fails at line 2 (row 2 would fail earlier, at log).
    assert error.row == 1 and error.inputs == {"x": 0.5, "w": 2.0}
    with pytest.raises(EvaluationError) as scalar:
        evaluate(parse(LOGS, "<program>"), {"x": 0.5, "w": 2.0})
    assert (error.message, error.position, error.hint) == (scalar.value.message, scalar.value.position,
                                                          scalar.value.hint)
    assert error.position.line == 2
    assert error.notes[-1] == "in row 1 (counting from 0): x=0.5, w=2.0"
    assert " | b = sqrt(a)" in str(error) and "^~~~" in str(error)


def test_nan_keeps_every_row_and_marks_the_failed_ones() -> None:
    result = evaluate_batch(LOGS, {"x": [2.0, 0.5, -1.0, 0.0], "w": 2.0}, on_error="nan")
    assert result.failed.tolist() == [False, True, True, True]
    assert result.kept is None and result.count == 4 and result.failures == 3
    assert result.value[0] == pytest.approx(2 * math.sqrt(math.log(2.0)), rel=1e-15)
    assert all(np.isnan(column[1:]).all() for column in result.columns().values())
    assert result.error(1).position.line == 2   # sqrt of a negative
    assert result.error(2).position.line == 1   # log of a negative: the first failure
    assert "log of 0 is undefined" in result.error(3).message
    with pytest.raises(ValueError):
        result.error(0)


def test_skip_drops_failed_rows_from_results_and_reductions() -> None:
    xs = [2.0, 0.5, 3.0, -1.0]
    result = evaluate_batch(LOGS, {"x": xs, "w": 2.0}, on_error="skip")
    assert result.kept.tolist() == [0, 2] and result.count == 2 and result.rows == 4
    np.testing.assert_allclose(result.value, [2 * math.sqrt(math.log(x)) for x in (2.0, 3.0)], rtol=1e-15)
    mean = evaluate_batch(LOGS, {"x": xs, "w": 2.0}, on_error="skip", reduce="mean")
    assert mean.count == 2
    assert mean.value == pytest.approx((result.value[0] + result.value[1]) / 2, rel=1e-15)
    assert math.isnan(evaluate_batch(LOGS, {"x": xs, "w": 2.0}, on_error="nan", reduce="sum").value)


def test_a_number_that_fails_fails_every_row_at_its_instruction() -> None:
    result = evaluate_batch("a = log(x)\nb = exp(k)\ny = a*b", {"x": [-1.0, 1.0], "k": 1000.0}, on_error="nan")
    assert result.failed.tolist() == [True, True]
    assert result.error(0).position.line == 1  # log fails first on row 0
    assert "exp(1000) overflows" in result.error(1).message


def test_a_non_finite_input_fails_its_row_and_names_the_input() -> None:
    xs = np.array([1.0, np.nan, np.inf])
    result = evaluate_batch("y = 2*x", {"x": xs}, on_error="nan")
    assert result.failed.tolist() == [False, True, True]
    assert result.error(1).message == "the input 'x' is nan, not a finite number"
    assert result.error(2).message == "the input 'x' is inf, not a finite number"
    assert np.isnan(xs[1]) and np.isinf(xs[2])  # the caller's array is left as it was


def test_overflow_in_arithmetic_fails_the_row() -> None:
    result = evaluate_batch("y = x*x", {"x": [1e200, 2.0]}, on_error="nan")
    assert result.failed.tolist() == [True, False]
    assert result.error(0).message == "the result of '*' overflows a float (inf)"


# --- chunks, memory, size ------------------------------------------------------------------


def test_chunks_do_not_change_any_bit(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(5)
    xs = rng.uniform(-1, 3, 1000)
    inputs = {"x": xs, "w": rng.standard_normal(1000), "c": 0.5}
    text = "a = log(x)*w\nb = sqrt(a + c)\ny = b*b*w + relu(x - 1)"
    whole = evaluate_batch(text, inputs, on_error="nan", wrt=["x", "w", "c", "a"])
    whole_sum = evaluate_batch(text, inputs, on_error="skip", reduce="sum")
    monkeypatch.setattr(vectorized, "SUM_ROWS", 7)
    monkeypatch.setattr(vectorized, "CHUNK_SUMS", 3)
    chunked = BatchEvaluator(text, wrt=["x", "w", "c", "a"])
    assert (chunked._sweep.plan.sum_rows, chunked._sweep.plan.chunk_rows) == (7, 21)
    small = chunked.evaluate(inputs, on_error="nan")
    assert whole.failures > 100 and small.failed.tolist() == whole.failed.tolist()
    for name, column in whole.columns().items():
        np.testing.assert_array_equal(small.columns()[name], column)
    small_sum = evaluate_batch(text, inputs, on_error="skip", reduce="sum")
    # Sums are per chunk and then exactly rounded (fsum), so chunking changes at most the last bits.
    for name in whole_sum.grads:
        assert small_sum.grads[name] == pytest.approx(whole_sum.grads[name], rel=1e-13)


def test_chunks_shrink_for_large_programs_and_keep_memory_bounded() -> None:
    small = BatchEvaluator("y = 2*x")
    assert small._sweep.plan.sum_rows == vectorized.SUM_ROWS
    assert small._sweep.plan.chunk_rows == vectorized.SUM_ROWS * vectorized.CHUNK_SUMS
    chain = "x0 = 1\n" + "\n".join(f"x{i} = tanh(x{i - 1} * 1.01)" for i in range(1, 100_001))
    large = BatchEvaluator(chain, wrt=["x0"])
    rows = large._sweep.plan.chunk_rows
    assert rows * 8 * large._sweep.plan._peak_columns(list(range(len(large.program.instructions)))) <= \
        vectorized.CHUNK_BYTES * 3


def test_a_program_of_a_hundred_thousand_statements() -> None:
    # Deep: no recursion anywhere; the gradient is the product of 100,000 local slopes.
    chain = "x0 = 1\n" + "\n".join(f"x{i} = tanh(x{i - 1} * 1.01)" for i in range(1, 100_001))
    program = parse(chain)
    starts = np.array([0.5, -0.25, 1.0])
    result = evaluate_batch(program, {"x0": starts}, wrt=["x0"])
    for row, start in enumerate(starts):
        evaluation = evaluate(program, {"x0": float(start)})
        assert result.value[row] == pytest.approx(evaluation.root.data, rel=1e-12)
        assert result.grads["x0"][row] == pytest.approx(evaluation.nodes["x0"].grad, rel=1e-9, abs=1e-300)


def test_results_do_not_share_memory_with_the_inputs() -> None:
    xs = np.array([1.0, 2.0])
    result = evaluate_batch("b = x\ny = b", {"x": xs}, values_of=["x", "b"])
    result.values["x"][0] = 99.0
    result.value[1] = 99.0
    assert xs.tolist() == [1.0, 2.0]


def test_same_inputs_same_bits() -> None:
    rng = np.random.default_rng(1)
    inputs = {"x": rng.standard_normal(30_000), "w": 0.3}
    first = evaluate_batch("y = sigmoid(w*x)*exp(x)", inputs, reduce="mean")
    second = evaluate_batch("y = sigmoid(w*x)*exp(x)", inputs, reduce="mean")
    assert (first.value, first.grads) == (second.value, second.grads)


def test_the_evaluator_is_reusable_with_other_inputs() -> None:
    evaluator = BatchEvaluator("L = (w*x - y)**2", wrt=["w"])
    first = evaluator.evaluate({"x": [1.0, 2.0], "y": [0.0, 0.0], "w": 1.0}, reduce="mean")
    second = evaluator.evaluate({"x": [1.0, 2.0], "y": [0.0, 0.0], "w": 2.0}, reduce="mean")
    assert (first.grads["w"], second.grads["w"]) == (5.0, 10.0)  # mean of 2*w*x^2


# --- the package facade --------------------------------------------------------------------


def test_the_package_exports_the_batch_api_lazily() -> None:
    assert autodiff_cli.evaluate_batch is evaluate_batch
    assert autodiff_cli.BatchEvaluator is BatchEvaluator
    code = "import autodiff_cli, sys; assert 'numpy' not in sys.modules; autodiff_cli.evaluate_batch; " \
           "assert 'numpy' in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)
    with pytest.raises(AttributeError):
        autodiff_cli.no_such_thing


@pytest.mark.parametrize(
    "name, module",
    [("evaluate_batch", "autodiff_cli.execute.batch_evaluator"), ("BatchEvaluator", "autodiff_cli.execute.batch_evaluator"),
     ("BatchResult", "autodiff_cli.execute.batch_evaluator"), ("RowError", "autodiff_cli.execute.batch_evaluator"),
     ("InputError", "autodiff_cli.errors")],
    ids=["evaluate_batch", "BatchEvaluator", "BatchResult", "RowError", "InputError"],
)
def test_what_the_readme_names_can_be_imported_from_the_package(name: str, module: str) -> None:
    # README's evaluate_batch section names each of these; `from autodiff_cli import X` must work
    # (it asks the package's __getattr__, as getattr does).
    assert getattr(autodiff_cli, name) is getattr(sys.modules[module], name)
    assert name in autodiff_cli.__all__


def test_the_exported_input_error_is_what_evaluate_batch_raises() -> None:
    from autodiff_cli import InputError as Exported

    with pytest.raises(Exported, match="no value for input y"):
        evaluate_batch("z = x*y", {"x": [1.0]})


def test_the_readme_example_runs_and_means_what_it_says() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    block = re.search(r"```python\n(import numpy as np\nfrom autodiff_cli import evaluate_batch\n.*?)```",
                      readme, re.DOTALL)
    assert block is not None
    namespace: dict = {}
    exec(block.group(1), namespace)
    x = np.array([-1.0, 0.0, 0.5, 2.0])
    y = np.tanh(1.5 * x + 0.25)
    result = namespace["result"]
    assert list(result.columns()) == ["y", "dy/dw", "dy/dx", "dy/db"]
    np.testing.assert_allclose(result.value, y, rtol=1e-15)
    np.testing.assert_allclose(result.grads["w"], x * (1 - y * y), rtol=1e-14)
    # what its comment says of reduce="mean": batch backprop's mean gradient
    mean = evaluate_batch("y = tanh(w*x + b)", {"x": x, "w": 1.5, "b": 0.25}, wrt=["w", "b"], reduce="mean")
    assert mean.value == pytest.approx(np.mean(y), rel=1e-15)
    assert mean.grads == pytest.approx({"w": np.mean(x * (1 - y * y)), "b": np.mean(1 - y * y)}, rel=1e-14)
