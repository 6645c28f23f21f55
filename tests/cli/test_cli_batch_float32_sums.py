"""`batch --dtype float32 --reduce sum|mean` adds the rows' float32 values and gradients up in
float64, as docs/batch.md says (adversary F3): each row's numbers are float32's, their sum is
not rounded to float32 row by row.  Expected numbers: each row's float32 result by NumPy, then
``math.fsum`` (exact) and one rounding to float32 at the end, as the report shows it."""

import json
import math

import numpy as np
import pytest

from autodiff_cli.cli import main
from autodiff_cli.execute.batch_evaluator import BatchEvaluator

F32 = np.float32
XS = [1e8] + [1.0] * 1000 + [-1e8]  # every one exact in float32; float32's running sum loses the ones


def run(runner, *args):
    return runner.invoke(main, ["batch", *args, "--dtype", "float32", "--format", "json"], catch_exceptions=False)


def shown(number: float) -> float:
    """A float64 total as the float32 report writes it: float32's shortest digits."""
    return float(str(F32(number)))


@pytest.fixture
def rows(tmp_path):
    path = tmp_path / "acc.csv"
    path.write_text("x\n" + "\n".join(map(repr, XS)) + "\n")
    return path


def test_float32_itself_loses_the_ones() -> None:
    assert F32(np.sum(np.array(XS, F32), dtype=F32)) != 1000  # why this test exists
    assert math.fsum(float(F32(x)) for x in XS) == 1000.0


def test_a_sum_over_rows_is_made_in_float64(runner, rows) -> None:
    result = run(runner, "-e", "L = w*x", str(rows), "--set", "w=1", "--reduce", "sum")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["value"] == document["values"]["L"] == 1000.0  # sum of w*x, each row exact
    assert document["values"]["x"] == 1000.0
    assert document["grads"]["w"] == 1000.0  # dL/dw = x on each row, summed
    assert document["grads"]["x"] == 1002.0  # dL/dx = w = 1 on each of 1002 rows


def test_a_mean_over_rows_is_made_in_float64(runner, rows) -> None:
    result = run(runner, "-e", "L = w*x", str(rows), "--set", "w=1", "--reduce", "mean")
    document = json.loads(result.stdout)
    assert document["value"] == shown(1000 / 1002) and document["grads"]["w"] == shown(1000 / 1002)


def test_a_tensor_parameters_gradient_is_summed_in_float64(runner, tmp_path) -> None:
    path = tmp_path / "acc2.csv"
    path.write_text("x[0],x[1]\n" + "\n".join(f"{x!r},{-x!r}" for x in XS) + "\n")
    program = "W = [[1, 2]]; x = [0, 0]; h = W @ x; L = sum(h)"
    result = run(runner, "-e", program, str(path), "--reduce", "sum", "--wrt", "W", "--values-of", "h")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    # Per row dL/dW = [x0, x1] and h = x0 + 2*x1 = -x0, all exact in float32.
    assert document["grads"]["W[0, 0]"] == 1000.0 and document["grads"]["W[0, 1]"] == -1000.0
    assert document["values"]["h[0]"] == -1000.0 and document["value"] == -1000.0


def test_a_shared_parameters_gradient_adds_the_rows_in_float64() -> None:
    # The rows' own dL/dw (x on each row) add up in float64, where these sums are exact; float32
    # would lose the fractions next to 1e8.
    x = np.array([0.5, 1e8, 0.25, -1e8, 0.75] * 3)
    evaluator = BatchEvaluator("w = 1; L = w*x", dtype="float32", wrt=["w"])
    result = evaluator.evaluate({"x": x}, reduce="sum")
    assert float(result.grads["w"]) == float(result.value) == math.fsum(x) == 4.5
    assert F32(np.sum(x.astype(F32), dtype=F32)) != 4.5
    assert result.grads["w"].dtype == np.float32  # rounded once, to the precision asked for


def test_the_float64_sums_batch_adds_up_are_not_rounded_to_float32() -> None:
    evaluator = BatchEvaluator("w = 1; L = w*x", dtype="float32", wrt=["w"])
    columns = {"x": np.array([1e8, 0.5])}
    assert float(evaluator.evaluate(columns, reduce="sum").grads["w"]) == float(F32(1e8 + 0.5)) == 1e8
    wide = evaluator.evaluate(columns, reduce="sum", float64_sums=True)
    assert wide.grads["w"] == wide.value == 1e8 + 0.5 and wide.grads["w"].dtype == np.float64


def test_the_sum_is_the_same_in_small_groups_of_rows(monkeypatch) -> None:
    # Rows are run in groups when their gradients would take much memory: the same sums.
    from autodiff_cli.execute import batch_evaluator

    rng = np.random.default_rng(4)
    columns = {f"x[{i}]": rng.standard_normal(50) * 10.0 ** rng.integers(-3, 8, 50) for i in range(3)}
    program = "W = [[1, -2, 3], [0.5, 0.25, -1]]; x = [0, 0, 0]; L = sum(tanh(W @ x))"
    whole = BatchEvaluator(program, dtype="float32").evaluate(columns, reduce="sum")
    monkeypatch.setattr(batch_evaluator, "_GRADIENT_ENTRIES", 7)  # a few rows at a time
    grouped = BatchEvaluator(program, dtype="float32").evaluate(columns, reduce="sum")
    assert float(grouped.value) == float(whole.value)
    np.testing.assert_array_equal(grouped.grads["W"], whole.grads["W"])
    x = np.stack([columns[f"x[{i}]"] for i in range(3)], axis=1).astype(F32)
    W = np.array([[1, -2, 3], [0.5, 0.25, -1]], F32)
    g = (1 - np.tanh(x @ W.T) ** 2).astype(F32)  # per row, float32; the float64 sum of the rows
    want = np.sum((g[:, :, None] * x[:, None, :]).astype(np.float64), axis=0)  # each row's float32 dL/dW
    np.testing.assert_allclose(whole.grads["W"], want, rtol=1e-6)


# --- an intermediate computed from values every row shares has a gradient per row ----------------

@pytest.fixture
def k_rows(tmp_path):
    path = tmp_path / "k.csv"
    path.write_text("x\n1e8\n0.5\n-1e8\n")
    return path


def test_float32_per_row_gradient_of_an_intermediate_of_shared_values(runner, k_rows) -> None:
    # L = k*x, so dL/dk = x on each row (it was the rows' sum, 0 in float32, on every row).
    result = runner.invoke(main, ["batch", "-e", "k = w*2; L = k*x", str(k_rows), "--set", "w=1",
                                  "--dtype", "float32", "--wrt", "k"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert [line.split(",")[-1] for line in result.stdout.splitlines()[1:]] == ["100000000.0", "0.5", "-100000000.0"]


def test_a_tensor_intermediate_of_shared_values_gets_a_gradient_per_row(runner, k_rows) -> None:
    # float64, on the interpreter: was a traceback (one summed gradient where a row's was expected)
    result = runner.invoke(main, ["batch", "-e", "v = [1, 1]; k = v*2; L = sum(k)*x", str(k_rows), "--wrt", "k"],
                           catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[1:] == ["100000000.0,400000000.0,100000000.0,100000000.0",
                                              "0.5,2.0,0.5,0.5", "-100000000.0,-400000000.0,-100000000.0,-100000000.0"]


def test_its_float32_sum_is_made_in_float64(runner, k_rows) -> None:
    result = run(runner, "-e", "k = w*2; L = k*x", str(k_rows), "--set", "w=1", "--reduce", "sum", "--wrt", "",
                 "--values-of", "k")
    assert json.loads(result.stdout)["grads"]["k"] == 0.5  # 1e8 + 0.5 - 1e8, exact in float64
