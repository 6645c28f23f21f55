"""Tensor programs through `batch` and `fit`, from the command line, on the samples.

Expected numbers are computed here with NumPy from the CSV files: the minigrad post's
dL/dW = (2/N) Xᵀ(P − Y), per-row gradients 2(p − y)x, least squares by `np.linalg.lstsq`,
the MLPs' forward passes and the digits' argmax.  The samples' header commands are read
from the sample files and run as written (an output file moved to tmp_path).
"""

from __future__ import annotations

import csv
import io
import json
import re
import shlex
from pathlib import Path

import numpy as np
import pytest

from autodiff_cli.cli import main

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "samples"
ROWS_PROGRAM = SAMPLES / "regression_rows.ad"
MATRIX = SAMPLES / "regression_matrix.ad"
LINE_ONES = SAMPLES / "line_ones.csv"


def run(runner, *args, input=None):
    return runner.invoke(main, [str(a) for a in args], input=input, catch_exceptions=False)


def ok(result):
    assert result.exit_code == 0, result.output + result.stderr
    return result


def table(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def line_ones() -> tuple[np.ndarray, np.ndarray]:
    data = np.loadtxt(LINE_ONES, delimiter=",", skiprows=1)
    return data[:, :2], data[:, 2:3]


def header_commands(sample: Path) -> list[list[str]]:
    """The `autodiff ...` commands in a sample's header comment, split as a shell would, with
    paths made absolute (the commands are written from the repository's root)."""
    commands = []
    for line in sample.read_text().splitlines():
        found = re.match(r"#\s+autodiff (.*)$", line)
        if found:
            commands.append([str(REPO / word) if word.startswith("samples/") else word
                             for word in shlex.split(found.group(1))])
    return commands


# --- batch ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("W", [None, [[2.0], [-1.0]]], ids=["default W=0", "W set"])
def test_reduce_mean_is_the_posts_batch_gradient(runner, W) -> None:
    X, Y = line_ones()
    sets = [] if W is None else ["--set", f"W={json.dumps(W)}"]
    Wa = np.zeros((2, 1)) if W is None else np.array(W, dtype=float)
    P = X @ Wa
    grad = 2.0 / len(X) * X.T @ (P - Y)
    doc = json.loads(ok(run(runner, "batch", ROWS_PROGRAM, LINE_ONES, *sets, "--reduce", "mean", "--wrt", "W",
                            "--format", "json")).stdout)
    assert doc["rows"] == 200 and doc["failed"] == 0 and doc["reduce"] == "mean"
    assert doc["value"] == pytest.approx(float(np.mean((P - Y) ** 2)), rel=1e-13)
    assert doc["grads"]["W[0, 0]"] == pytest.approx(grad[0, 0], rel=1e-12)
    assert doc["grads"]["W[1, 0]"] == pytest.approx(grad[1, 0], rel=1e-12)
    assert doc["values"]["W[0, 0]"] == Wa[0, 0] and doc["values"]["W[1, 0]"] == Wa[1, 0]


def test_reduce_sum_is_n_times_the_mean(runner) -> None:
    X, Y = line_ones()
    W = np.array([[2.0], [-1.0]])
    doc = json.loads(ok(run(runner, "batch", ROWS_PROGRAM, LINE_ONES, "--set", "W=[[2], [-1]]",
                            "--reduce", "sum", "--wrt", "W", "--format", "json")).stdout)
    grad = 2.0 * X.T @ (X @ W - Y)
    assert [doc["grads"]["W[0, 0]"], doc["grads"]["W[1, 0]"]] == pytest.approx(grad[:, 0], rel=1e-12)


def test_the_header_command_gives_the_posts_gradient(runner) -> None:
    batch = next(c for c in header_commands(ROWS_PROGRAM) if c[0] == "batch")
    X, Y = line_ones()
    doc = json.loads(ok(run(runner, *batch, "--format", "json")).stdout)
    grad = 2.0 / len(X) * X.T @ (0 - Y)  # W starts at 0
    assert [doc["grads"]["W[0, 0]"], doc["grads"]["W[1, 0]"]] == pytest.approx(grad[:, 0], rel=1e-12)


def test_per_row_columns_are_entries_and_gradients_are_per_row(runner) -> None:
    X, Y = line_ones()
    W = np.array([[2.0], [-1.0]])
    result = ok(run(runner, "batch", ROWS_PROGRAM, LINE_ONES, "--set", "W=[[2], [-1]]", "--wrt", "W"))
    assert result.stdout.splitlines()[0] == 'x[0],x[1],y,L,"dL/dW[0, 0]","dL/dW[1, 0]"'
    rows = table(result.stdout)
    assert list(rows[0]) == ["x[0]", "x[1]", "y", "L", "dL/dW[0, 0]", "dL/dW[1, 0]"]
    assert len(rows) == 200
    got = np.array([[float(r[c]) for c in rows[0]] for r in rows])
    np.testing.assert_array_equal(got[:, :2], X)
    np.testing.assert_array_equal(got[:, 2], Y[:, 0])
    residual = (X @ W - Y)[:, 0]
    np.testing.assert_allclose(got[:, 3], residual ** 2, rtol=1e-12)
    np.testing.assert_allclose(got[:, 4:6], 2 * residual[:, None] * X, rtol=1e-12, atol=1e-15)


def test_per_row_gradients_of_the_data_inputs(runner) -> None:
    X, Y = line_ones()
    W = np.array([[2.0], [-1.0]])
    rows = table(ok(run(runner, "batch", ROWS_PROGRAM, LINE_ONES, "--set", "W=[[2], [-1]]")).stdout)
    assert list(rows[0]) == ["x[0]", "x[1]", "y", "L", "dL/dx[0]", "dL/dx[1]", "dL/dy", "dL/dW[0, 0]",
                             "dL/dW[1, 0]"]
    residual = (X @ W - Y)[:, 0]
    got = np.array([[float(r[c]) for c in ("dL/dx[0]", "dL/dx[1]", "dL/dy")] for r in rows])
    np.testing.assert_allclose(got[:, :2], 2 * residual[:, None] * W[:, 0], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(got[:, 2], -2 * residual, rtol=1e-12, atol=1e-15)


def test_json_lines_rows_with_entry_columns(runner) -> None:
    X, Y = line_ones()
    W = np.array([[2.0], [-1.0]])
    lines = "".join(json.dumps({"x[0]": x0, "x[1]": x1, "y": y}) + "\n"
                    for (x0, x1), (y,) in zip(X[:5], Y[:5]))
    result = ok(run(runner, "batch", ROWS_PROGRAM, "-", "--from", "jsonl", "--to", "jsonl", "--set",
                    "W=[[2], [-1]]", "--wrt", "W", input=lines))
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(records) == 5
    assert list(records[0]) == ["x[0]", "x[1]", "y", "L", "dL/dW[0, 0]", "dL/dW[1, 0]"]
    residual = (X[:5] @ W - Y[:5])[:, 0]
    got = np.array([[r["dL/dW[0, 0]"], r["dL/dW[1, 0]"]] for r in records])
    np.testing.assert_allclose(got, 2 * residual[:, None] * X[:5], rtol=1e-12)
    reduced = json.loads(ok(run(runner, "batch", ROWS_PROGRAM, "-", "--from", "jsonl",
                                "--set", "W=[[2], [-1]]", "--reduce", "mean", "--wrt", "W",
                                "--format", "json", input=lines)).stdout)
    assert reduced["grads"]["W[0, 0]"] == pytest.approx(np.mean(got[:, 0]), rel=1e-12)


def test_json_lines_lists_give_a_vector_input_written_back_as_entries(runner) -> None:
    lines = '{"x": [1.5, 1], "y": 2}\n{"x": [-0.5, 1], "y": 0.25}\n'
    result = ok(run(runner, "batch", ROWS_PROGRAM, "-", "--from", "jsonl", "--to", "jsonl",
                    "--set", "W=[[2], [-1]]", "--wrt", "W", input=lines))
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert list(records[0]) == ["x[0]", "x[1]", "y", "L", "dL/dW[0, 0]", "dL/dW[1, 0]"]
    # p = 2 x0 - 1; L = (p - y)^2; dL/dW = 2 (p - y) x
    assert [r["L"] for r in records] == [0.0, (-2.0 - 0.25) ** 2]
    assert [records[1]["dL/dW[0, 0]"], records[1]["dL/dW[1, 0]"]] == [2 * -2.25 * -0.5, 2 * -2.25 * 1]


def test_an_entry_column_missing_before_others_is_named(runner) -> None:
    result = run(runner, "batch", ROWS_PROGRAM, "-", "--wrt", "W", input="x[1],y\n1,2\n")
    assert result.exit_code == 1
    first = result.stderr.splitlines()[0]
    assert first.startswith(f"{ROWS_PROGRAM}:8:1: error: ") and "x[0] is missing" in first


def test_an_entry_column_missing_at_the_end_is_named(runner) -> None:
    result = run(runner, "batch", ROWS_PROGRAM, "-", "--wrt", "W", input="x[0],y\n1.5,2\n")
    assert result.exit_code == 1
    assert "x[1]" in result.stderr


def test_a_missing_entry_column_is_never_a_silent_answer(runner) -> None:
    result = run(runner, "batch", "x = [1, 1]\nL = sum(x*x)", "-", input="x[0]\n3\n")
    assert result.exit_code == 1
    assert "x[1]" in result.stderr


def test_an_entry_column_missing_at_the_end_is_an_error_not_an_answer(runner) -> None:
    result = run(runner, "batch", ROWS_PROGRAM, "-", "--wrt", "W", input="x[0],y\n1.5,2\n")
    assert result.exit_code == 1 and result.stdout.count("\n") <= 1
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(("header", "first", "second", "column"), [
    ("x[0],x[00],x[1],y", "x[0]", "x[00]", 6),
    ('x[0],x[1],y,"W[0,0]","W[1,0]","W[1, 0]"', "W[1,0]", "W[1, 0]", 31),
])
def test_two_columns_of_one_entry_are_an_error_naming_both(runner, tmp_path, header, first, second, column) -> None:
    rows = tmp_path / "rows.csv"
    cells = next(csv.reader([header]))
    rows.write_text(header + "\n" + ",".join(["1"] * len(cells)) + "\n")
    result = run(runner, "batch", ROWS_PROGRAM, rows)
    assert result.exit_code == 1 and result.stdout == ""
    said = result.stderr.splitlines()[0]
    assert said.startswith(f"{rows}:1:{column}: error: ") and f"'{first}' and '{second}'" in said


def test_a_whole_column_beside_its_entries_is_an_error(runner, tmp_path) -> None:
    rows = tmp_path / "rows.csv"
    rows.write_text("x,x[0],x[1],y\n9,1,1,3\n")
    result = run(runner, "batch", ROWS_PROGRAM, rows)
    assert result.exit_code == 1 and result.stdout == ""
    said = result.stderr.splitlines()[0]
    assert said.startswith(f"{rows}:1:3: error: ") and "'x'" in said and "'x[0]'" in said


def test_two_parquet_columns_of_one_entry_are_an_error(runner, tmp_path) -> None:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    rows = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"x[0]": [1.0], "x[00]": [2.0], "x[1]": [1.0], "y": [3.0]}), rows)
    result = run(runner, "batch", ROWS_PROGRAM, rows)
    assert result.exit_code == 1 and result.stdout == ""
    assert "'x[0]' and 'x[00]'" in result.stderr and str(rows) in result.stderr


@pytest.mark.parametrize("command", ["batch", "fit"])
@pytest.mark.parametrize("given", [["--set", "x=[1, 2]"], ["--values", "VALUES"]])
def test_entry_columns_and_a_value_for_the_same_input_are_a_located_error(runner, tmp_path, command, given) -> None:
    rows = tmp_path / "rows.csv"
    rows.write_text("y,x[0],x[1]\n3,1,1\n")
    values = tmp_path / "values.json"
    values.write_text('{"x": [1, 2]}')
    given = [str(values) if word == "VALUES" else word for word in given]
    args = [rows] if command == "batch" else ["--data", rows, "--steps", "1"]
    result = run(runner, command, ROWS_PROGRAM, *args, *given)
    assert result.exit_code == 1 and "Traceback" not in result.stderr
    said = result.stderr.splitlines()[0]
    assert said.startswith(f"{rows}:1:3: error: 'x' is both given by columns of ")


LOG_PROGRAM = "x = [1, 1]\nw = [1, 2]\nL = sum(w * log(x))\n"
LOG_ROWS = "x[0],x[1]\n1,2\n3,-4\n5,6\n"


def log_by_hand(x: list[float]) -> list[float]:
    """L = log x0 + 2 log x1; dL/dx = [1/x0, 2/x1]; dL/dw = [log x0, log x1]."""
    return [np.log(x[0]) + 2 * np.log(x[1]), 1 / x[0], 2 / x[1], np.log(x[0]), np.log(x[1])]


def test_a_failing_row_stops_the_run_naming_its_line(runner, tmp_path) -> None:
    rows = tmp_path / "rows.csv"
    rows.write_text(LOG_ROWS)
    result = run(runner, "batch", LOG_PROGRAM, rows)
    assert result.exit_code == 1
    assert result.stderr.startswith("<expr>:3:13: error: log")
    assert f"{rows} line 3" in result.stderr
    assert "Traceback" not in result.stderr


def test_on_error_skip_leaves_the_row_out(runner, tmp_path) -> None:
    rows = tmp_path / "rows.csv"
    rows.write_text(LOG_ROWS)
    result = ok(run(runner, "batch", LOG_PROGRAM, rows, "--on-error", "skip"))
    out = table(result.stdout)
    assert list(out[0]) == ["x[0]", "x[1]", "L", "dL/dx[0]", "dL/dx[1]", "dL/dw[0]", "dL/dw[1]"]
    assert [(r["x[0]"], r["x[1]"]) for r in out] == [("1.0", "2.0"), ("5.0", "6.0")]
    for r, x in zip(out, ([1, 2], [5, 6])):
        assert [float(r[c]) for c in list(r)[2:]] == pytest.approx(log_by_hand(x), rel=1e-14)
    assert "skipped 1 of 3 rows" in result.stderr and f"{rows} line 3" in result.stderr


def test_on_error_nan_writes_nan_for_the_row(runner, tmp_path) -> None:
    rows = tmp_path / "rows.csv"
    rows.write_text(LOG_ROWS)
    result = ok(run(runner, "batch", LOG_PROGRAM, rows, "--on-error", "nan"))
    out = table(result.stdout)
    assert len(out) == 3
    assert (out[1]["x[0]"], out[1]["x[1]"]) == ("3.0", "-4.0")
    assert all(out[1][c] == "nan" for c in list(out[1])[2:])
    assert [float(out[2][c]) for c in list(out[2])[2:]] == pytest.approx(log_by_hand([5, 6]), rel=1e-14)
    assert "wrote NaN for 1 of 3 rows" in result.stderr


def test_on_error_skip_with_reduce_means_the_good_rows(runner, tmp_path) -> None:
    rows = tmp_path / "rows.csv"
    rows.write_text(LOG_ROWS)
    doc = json.loads(ok(run(runner, "batch", LOG_PROGRAM, rows, "--on-error", "skip", "--reduce", "mean",
                            "--format", "json")).stdout)
    want = (np.array(log_by_hand([1, 2])) + np.array(log_by_hand([5, 6]))) / 2
    assert doc["rows"] == 2 and doc["failed"] == 1
    assert doc["value"] == pytest.approx(want[0], rel=1e-14)
    assert [doc["grads"][k] for k in ("x[0]", "x[1]", "w[0]", "w[1]")] == pytest.approx(want[1:], rel=1e-14)


def test_on_error_nan_with_reduce_is_nan_as_for_a_scalar_program(runner, tmp_path) -> None:
    rows = tmp_path / "rows.csv"
    rows.write_text(LOG_ROWS)
    scalar = json.loads(ok(run(runner, "batch", "L = log(x)", "-", "--on-error", "nan", "--reduce", "mean",
                               "--format", "json", input="x\n1\n-4\n5\n")).stdout)
    assert scalar["value"] == "NaN" and scalar["rows"] == 3  # the established behaviour
    doc = json.loads(ok(run(runner, "batch", LOG_PROGRAM, rows, "--on-error", "nan", "--reduce", "mean",
                            "--format", "json")).stdout)
    assert doc["value"] == "NaN" and doc["rows"] == 3


# --- fit --------------------------------------------------------------------------------------------------


def lstsq() -> np.ndarray:
    X, Y = line_ones()
    solution, *_ = np.linalg.lstsq(X, Y, rcond=None)
    return solution


def test_fit_recovers_the_least_squares_weights(runner) -> None:
    fit = next(c for c in header_commands(ROWS_PROGRAM) if c[0] == "fit")
    params = json.loads(ok(run(runner, *fit, "-q")).stdout)
    assert list(params) == ["W"]
    assert np.shape(params["W"]) == (2, 1)  # nested arrays, the shape of W
    np.testing.assert_allclose(np.array(params["W"]), lstsq(), rtol=0, atol=1e-6)
    assert params["W"][0][0] == pytest.approx(2.5, abs=0.05)
    assert params["W"][1][0] == pytest.approx(-1.25, abs=0.05)


def test_fit_with_adam_and_mini_batches_also_gets_there(runner) -> None:
    params = json.loads(ok(run(runner, "fit", ROWS_PROGRAM, "--data", LINE_ONES, "--optimizer", "adam",
                               "--lr", "0.05", "--steps", "1500", "--batch-size", "200", "-q")).stdout)
    np.testing.assert_allclose(np.array(params["W"]), lstsq(), rtol=0, atol=1e-6)


def test_fitted_parameters_read_back_give_the_reported_loss(runner, tmp_path) -> None:
    out, history = tmp_path / "params.json", tmp_path / "history.csv"
    result = ok(run(runner, "fit", ROWS_PROGRAM, "--data", LINE_ONES, "--lr", "0.1", "--steps", "300",
                    "-o", out, "--history", history))
    text = out.read_text()
    assert re.search(r'"W": \[\[[-0-9.e]+\], \[[-0-9.e]+\]\]', text)  # nested arrays
    W = np.array(json.loads(text)["W"])
    X, Y = line_ones()
    by_numpy = float(np.mean((X @ W - Y) ** 2))
    last = table(history.read_text())[-1]
    assert float(last["loss"]) == pytest.approx(by_numpy, rel=1e-12)
    reported = re.search(r"finished 300 steps: loss ([0-9.e+-]+)", result.stderr)
    assert reported and float(reported.group(1)) == pytest.approx(by_numpy, rel=1e-5)
    # read back by batch, the per-row form ...
    doc = json.loads(ok(run(runner, "batch", ROWS_PROGRAM, LINE_ONES, "--values", out, "--reduce", "mean",
                            "--format", "json")).stdout)
    assert doc["value"] == pytest.approx(by_numpy, rel=1e-12)
    # ... and by eval of the matrix form over the same rows (X, Y as .npy files)
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "Y.npy", Y)
    evaluated = json.loads(ok(run(runner, "eval", MATRIX, "--values", out,
                                  "--set", f"X={tmp_path / 'X.npy'}", "--set", f"Y={tmp_path / 'Y.npy'}",
                                  "--wrt", "W", "--format", "json")).stdout)
    assert evaluated["value"] == pytest.approx(by_numpy, rel=1e-12)
    assert np.abs(np.array(evaluated["grads"]["W"])).max() < 1e-9  # a minimum


def moons_header_fit(runner, out: Path, *extra: str):
    fit = next(c for c in header_commands(SAMPLES / "moons_mlp.ad") if c[0] == "fit")
    return ok(run(runner, *fit, "-o", out, "-q", *extra))


def test_moons_mlp_reaches_full_training_accuracy(runner, tmp_path) -> None:
    params_file = tmp_path / "moons.json"
    moons_header_fit(runner, params_file)
    params = {k: np.array(v, dtype=float) for k, v in json.loads(params_file.read_text()).items()}
    assert {k: v.shape for k, v in params.items()} == {"W1": (16, 2), "b1": (16,), "W2": (16, 16),
                                                         "b2": (16,), "W3": (1, 16), "b3": (1,)}
    data = np.loadtxt(SAMPLES / "moons_xy.csv", delimiter=",", skiprows=1)
    x, y = data[:, :2], data[:, 2]
    rows = table(ok(run(runner, "batch", SAMPLES / "moons_mlp.ad", SAMPLES / "moons_xy.csv",
                        "--values", params_file, "--values-of", "score", "--wrt", "")).stdout)
    assert len(rows) == 100
    score = np.array([float(r["score"]) for r in rows])
    assert np.all(np.sign(score) == y)  # 100% of the training rows
    # the same scores by a NumPy forward pass of the written parameters
    h1 = np.maximum(x @ params["W1"].T + params["b1"], 0)
    h2 = np.maximum(h1 @ params["W2"].T + params["b2"], 0)
    np.testing.assert_allclose(score, (h2 @ params["W3"].T + params["b3"])[:, 0], rtol=1e-10, atol=1e-12)


def test_the_same_seed_writes_the_same_bytes(runner, tmp_path) -> None:
    first, second, other = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "c.json"
    moons_header_fit(runner, first)
    moons_header_fit(runner, second)
    moons_header_fit(runner, other, "--seed", "1")
    assert first.read_bytes() == second.read_bytes()
    assert first.read_bytes() != other.read_bytes()


def test_initializers_are_drawn_from_the_seed(runner, tmp_path) -> None:
    program = tmp_path / "normal.ad"
    program.write_text("x = [0, 1]\ny = 0\nW = normal([2, 1], 0.5)\nL = ((x @ W)[0] - y)**2\n")

    def start(seed: int) -> np.ndarray:  # one vanishing step: the starting values
        out = ok(run(runner, "fit", program, "--data", LINE_ONES, "--lr", "1e-300", "--steps", "1",
                     "--seed", seed, "-q")).stdout
        return np.array(json.loads(out)["W"])

    a, b, c = start(0), start(0), start(7)
    assert a.shape == (2, 1)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    assert np.all(np.abs(a) < 0.5 * 6)  # drawn with std 0.5, not unit


def test_init_draws_a_parameter_without_a_value_in_a_tensor_program(runner, tmp_path) -> None:
    program = tmp_path / "bias.ad"
    program.write_text("x = [0, 1]\ny = 0\nW = [[0], [0]]\nL = ((x @ W)[0] + b - y)**2\n")
    missing = run(runner, "fit", program, "--data", LINE_ONES, "-q")
    assert missing.exit_code == 1 and "no starting value for parameter b" in missing.stderr
    assert "--init" in missing.stderr

    def fitted(*extra):
        return json.loads(ok(run(runner, "fit", program, "--data", LINE_ONES, "-q", *extra)).stdout)

    start = [fitted("--init", kind, "--lr", "1e-300", "--steps", "1", "--seed", "5")
             for kind in ("normal", "uniform")]
    for params in start:
        assert list(params) == ["W", "b"] and isinstance(params["b"], float)
        assert np.abs(np.array(params["W"])).max() < 1e-290  # W starts at its default
    assert -1 <= start[1]["b"] <= 1
    assert start[0]["b"] != start[1]["b"]
    # trained, the intercept is shared by W[1, 0] and b: only their sum is determined
    params = fitted("--init", "uniform", "--lr", "0.1", "--steps", "2000", "--seed", "3")
    want = lstsq()
    assert params["W"][0][0] == pytest.approx(want[0, 0], abs=1e-6)
    assert params["W"][1][0] + params["b"] == pytest.approx(want[1, 0], abs=1e-6)


def test_digits_header_commands_reach_95_percent_held_out(runner, tmp_path, monkeypatch) -> None:
    commands = header_commands(SAMPLES / "digits.ad")
    fit = next(c for c in commands if c[0] == "fit")
    batch = next(c for c in commands if c[0] == "batch")
    monkeypatch.chdir(tmp_path)  # the header writes digits.json to the current directory
    ok(run(runner, *fit, "-q"))
    written = json.loads((tmp_path / "digits.json").read_text())
    params = {k: np.array(v, dtype=float) for k, v in written.items()}
    assert {k: v.shape for k, v in params.items()} == {"W1": (32, 64), "b1": (32,), "W2": (10, 32),
                                                         "b2": (10,)}
    reported = json.loads(ok(run(runner, *batch, "--format", "json")).stdout)

    test = np.loadtxt(SAMPLES / "digits_test.csv", delimiter=",", skiprows=1)
    x, label = test[:, :64], test[:, 64].astype(int)
    rows = table(ok(run(runner, "batch", SAMPLES / "digits.ad", SAMPLES / "digits_test.csv", "--values",
                        tmp_path / "digits.json", "--values-of", "z", "--wrt", "", "--keep", "label")).stdout)
    z = np.array([[float(r[f"z[{k}]"]) for k in range(10)] for r in rows])
    assert z.shape == (360, 10)
    assert [int(float(r["label"])) for r in rows] == label.tolist()
    accuracy = float(np.mean(np.argmax(z, axis=1) == label))
    assert accuracy >= 0.95
    assert reported["value"] == pytest.approx(accuracy, abs=1e-12)  # the program's `correct` agrees
    # the logits are the MLP's, by NumPy from the written parameters
    h = np.maximum((x / 16) @ params["W1"].T + params["b1"], 0)
    np.testing.assert_allclose(z, h @ params["W2"].T + params["b2"], rtol=1e-9, atol=1e-9)


# --- rows an op refuses, vector outputs, gradients that are not finite --------------------------------

CE = "z = [0, 0]\nlab = 0\nL = cross_entropy(z, lab)"
CE_ROWS = "z[0],z[1],lab\n1,2,0\n1,2,5\n1,3,1\n"


def ce_loss(z: list[float], label: int) -> float:
    z = np.array(z)
    return float(np.log(np.exp(z).sum()) - z[label])


@pytest.mark.parametrize("as_validation", [False, True], ids=["data", "validation-data"])
def test_fit_names_the_line_of_a_label_that_is_no_class(runner, tmp_path, as_validation) -> None:
    rows = tmp_path / "rows.csv"
    rows.write_text("z[0],z[1],lab\n1,2,0\n1,3,1\n2,1,0\n1,2,7\n1,1,1\n")
    good = tmp_path / "good.csv"
    good.write_text("z[0],z[1],lab\n1,2,0\n1,3,1\n")
    program = "z = [0, 0]\nlab = 0\nw = 1\nL = cross_entropy(z * w, lab)"
    data = ["--data", good, "--validation-data", rows] if as_validation else ["--data", rows]
    result = run(runner, "fit", program, *data, "--steps", "2", "-q", "-o", tmp_path / "p.json")
    assert result.exit_code == 1
    assert "label 7 is not a class" in result.stderr and f"in line 5 of {rows}" in result.stderr


def test_a_label_that_is_no_class_fails_its_row_only(runner) -> None:
    fail = run(runner, "batch", CE, "-", "--wrt", "z", input=CE_ROWS)
    assert fail.exit_code == 1 and "label 5 is not a class" in fail.stderr and "line 3" in fail.stderr
    skip = table(ok(run(runner, "batch", CE, "-", "--wrt", "z", "--on-error", "skip", input=CE_ROWS)).stdout)
    assert [float(r["L"]) for r in skip] == pytest.approx([ce_loss([1, 2], 0), ce_loss([1, 3], 1)], rel=1e-14)
    nan = table(ok(run(runner, "batch", CE, "-", "--wrt", "z", "--on-error", "nan", input=CE_ROWS)).stdout)
    assert [r["L"] for r in nan][1] == "nan" and float(nan[2]["L"]) == pytest.approx(ce_loss([1, 3], 1), rel=1e-14)
    mean = json.loads(ok(run(runner, "batch", CE, "-", "--wrt", "z", "--on-error", "skip", "--reduce", "mean",
                             "--format", "json", input=CE_ROWS)).stdout)
    assert mean["rows"] == 2 and mean["value"] == pytest.approx((ce_loss([1, 2], 0) + ce_loss([1, 3], 1)) / 2)


def test_a_vector_output_is_refused_for_gradients_and_written_without_them(runner) -> None:
    program = "W = [[1, 2], [3, 4]]\nx = [1, 1]\ny = W @ x"
    rows = "x[0],x[1]\n1,2\n"
    refused = run(runner, "batch", program, "-", input=rows)
    assert refused.exit_code == 1 and refused.stdout == ""
    assert "'y' has shape [2] on each row, and a gradient is of a number" in refused.stderr
    written = table(ok(run(runner, "batch", program, "-", "--wrt", "", input=rows)).stdout)
    assert (float(written[0]["y[0]"]), float(written[0]["y[1]"])) == (1 + 2 * 2, 3 + 4 * 2)
    reduced = run(runner, "batch", program, "-", "--wrt", "", "--reduce", "mean", input=rows)
    assert reduced.exit_code == 1 and "--reduce reports one number, and 'y' has shape [2]" in reduced.stderr


def test_rows_whose_gradient_is_not_finite_are_counted_and_the_first_named(runner) -> None:
    scalar = run(runner, "batch", "y = sqrt(x)", "-", input="x\n4\n0\n1\n")
    assert scalar.exit_code == 0 and "1 of 3 rows have a gradient that is inf or NaN" in scalar.stderr
    assert "line 3, where dy/dx is not finite" in scalar.stderr
    tensor = run(runner, "batch", "x = [1, 1]\ny = sum(sqrt(x))", "-", input="x[0],x[1]\n4,1\n0,1\n")
    assert tensor.exit_code == 0 and "1 of 2 rows have a gradient that is inf or NaN" in tensor.stderr
    assert "line 3, where dy/dx is not finite" in tensor.stderr
