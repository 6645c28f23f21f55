"""`batch --dtype float32` writes one spelling of a float32 number whatever --on-error says, its
--reduce report is in float32's digits and says float32, and Parquet keeps the results float32
(issue 34).  Expected numbers are NumPy's float32 arithmetic, computed here."""

import json

import numpy as np
import pytest

from autodiff_cli.cli import main

F32 = np.float32
X, Y = F32(2), F32(3)
L = np.log(X) * Y  # the row 2,3 of L = log(x)*y in float32
DL_DX, DL_DY = Y / X, np.log(X)


def run(runner, *args):
    return runner.invoke(main, ["batch", *args], catch_exceptions=False)


@pytest.fixture
def rows(tmp_path):
    path = tmp_path / "nan2.csv"
    path.write_text("x,y\n2,3\n-3,5\n")
    return path


def test_the_expected_numbers_are_float32s() -> None:
    assert L.dtype == np.float32 and str(L) == "2.0794415" and str(DL_DY) == "0.6931472"


@pytest.mark.parametrize("on_error", ["skip", "nan"])
def test_a_row_is_written_in_float32s_shortest_digits_whatever_on_error_says(runner, rows, on_error) -> None:
    result = run(runner, "L = log(x)*y", str(rows), "--dtype", "float32", "--on-error", on_error)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[1] == f"2.0,3.0,{L!s},{DL_DX!s},{DL_DY!s}"  # (str: an f-string writes a float32 as a float64)
    if on_error == "nan":
        assert lines[2] == "-3.0,5.0,nan,nan,nan"


def test_nan_rows_in_json_lines_are_float32s_digits_too(runner, rows) -> None:
    result = run(runner, "L = log(x)*y", str(rows), "--dtype", "float32", "--on-error", "nan", "--to", "jsonl")
    first = json.loads(result.stdout.splitlines()[0])
    assert first["L"] == float(str(L)) and first["dL/dy"] == float(str(DL_DY))


def test_the_reduced_json_is_in_float32_and_says_so(runner, rows) -> None:
    result = run(runner, "L = log(x)*y", str(rows), "--dtype", "float32", "--on-error", "skip",
                 "--reduce", "mean", "--format", "json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["dtype"] == "float32"
    assert document["value"] == document["values"]["L"] == float(str(L)) == 2.0794415
    assert document["grads"] == {"L": 1.0, "x": float(str(DL_DX)), "y": float(str(DL_DY))}


def test_the_reduced_table_says_float32(runner, rows) -> None:
    result = run(runner, "L = log(x)*y", str(rows), "--dtype", "float32", "--on-error", "skip",
                 "--reduce", "mean", "--format", "table")
    words = " ".join(result.stdout.split())  # (rich wraps the title at the runner's width)
    assert words.startswith(f"mean over 1 row: L = {L!s} (grad = mean of dL/d name, in float32)")
    assert f"│ y │ input │ 3.0 │ {DL_DY!s} │" in words


def test_a_sum_beyond_float32s_range_is_inf_without_a_warning(runner, tmp_path) -> None:
    path = tmp_path / "big.csv"
    path.write_text("x\n3e38\n3e38\n")
    result = run(runner, "L = x", str(path), "--dtype", "float32", "--reduce", "sum", "--format", "json")
    with np.errstate(over="ignore"):
        assert np.isinf(F32(6e38))
    assert json.loads(result.stdout)["value"] == "Infinity"


def test_float64_reports_say_no_precision_as_before(runner, rows) -> None:
    result = run(runner, "L = log(x)*y", str(rows), "--on-error", "skip", "--reduce", "mean", "--format", "json")
    document = json.loads(result.stdout)
    assert "dtype" not in document and document["value"] == np.log(2.0) * 3.0
    table = run(runner, "L = log(x)*y", str(rows), "--on-error", "skip", "--reduce", "mean", "--format", "table")
    assert " ".join(table.stdout.split()).startswith(f"mean over 1 row: L = {float(np.log(2.0)) * 3.0!r} "
                                                     "(grad = mean of dL/d name) ┏")


def test_parquet_keeps_a_float32_runs_results_float32(runner, rows, tmp_path) -> None:
    parquet = pytest.importorskip("pyarrow.parquet")
    out = tmp_path / "out.parquet"
    result = run(runner, "L = log(x)*y", str(rows), "--dtype", "float32", "--on-error", "nan", "-o", str(out))
    assert result.exit_code == 0, result.output
    table = parquet.read_table(out)
    types = {field.name: str(field.type) for field in table.schema}
    assert types == {"x": "double", "y": "double", "L": "float", "dL/dx": "float", "dL/dy": "float"}
    columns = table.to_pydict()
    assert F32(columns["L"][0]) == L and np.isnan(columns["L"][1])
    assert F32(columns["dL/dy"][0]) == DL_DY
    out64 = tmp_path / "out64.parquet"
    run(runner, "L = log(x)*y", str(rows), "--on-error", "nan", "-o", str(out64))
    assert {str(field.type) for field in parquet.read_table(out64).schema} == {"double"}


# --- --precision: the digits asked for are float32's own, not its shortest text's ---------------------


def _exact32(number: float) -> np.float32:
    return np.float32(number)


def test_eval_with_a_precision_shows_the_float32_numbers_exact_digits(runner) -> None:
    # Padding the shortest text 0.1 out to 17 digits once showed 0.10000000000000001, a number
    # float32 does not hold; float32's 0.1 is 0.10000000149011612.
    result = runner.invoke(main, ["eval", "y = exp(x)", "--set", "x=0.1", "--dtype", "float32", "--precision", "17",
                                  "--format", "plain"])
    assert result.exit_code == 0, result.output
    x, y = _exact32(0.1), np.exp(_exact32(0.1))
    assert f"{float(x):.17g}" in result.stdout and f"{float(y):.17g}" in result.stdout
    assert "0.10000000000000001" not in result.stdout


def test_batch_with_a_precision_writes_the_float32_numbers_exact_digits(runner, tmp_path) -> None:
    rows = tmp_path / "rows.csv"
    rows.write_text("x\n0.1\n")
    result = run(runner, "y = exp(x)", str(rows), "--dtype", "float32", "--precision", "17")
    assert result.exit_code == 0, result.output
    y = float(np.exp(_exact32(0.1)))
    assert result.stdout.splitlines()[1] == f"0.1,{y:.17g},{y:.17g}"
    reduced = run(runner, "y = exp(x)", str(rows), "--dtype", "float32", "--precision", "17", "--reduce", "mean",
                  "--format", "plain")
    assert f"{y:.17g}" in reduced.stdout, reduced.stdout


def test_check_with_a_precision_shows_the_float32_numbers_exact_digits(runner) -> None:
    result = runner.invoke(main, ["check", "y = exp(x)", "--set", "x=0.1", "--dtype", "float32", "--precision", "17"])
    assert result.exit_code == 0, result.output
    assert f"{float(_exact32(0.1)):.17g}" in result.stdout
