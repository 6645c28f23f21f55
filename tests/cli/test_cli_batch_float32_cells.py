"""`batch --dtype float32`: a cell float32 cannot hold (1e40) is a bad cell like any other
(adversary F13): every row before it is computed and written, then the error is said at the
file, line and column with a caret under the cell, exit 1, whatever --on-error says; in CSV
and TSV (with and without Arrow), JSON Lines and Parquet.  Expected rows are NumPy's float32."""

import json

import numpy as np
import pytest

from autodiff_cli.cli import main

F32 = np.float32
LARGEST = f"{float(np.finfo(np.float32).max):.2g}".replace("e+", "e")  # 3.4e38
ROW_2 = f"2.0,3.0,{np.log(F32(2)) * F32(3)!s},{F32(3) / F32(2)!s},{np.log(F32(2))!s}"


def run(runner, *args):
    return runner.invoke(main, ["batch", "L = log(x)*y", *args, "--dtype", "float32"], catch_exceptions=False)


@pytest.fixture(params=["1", "0"], ids=["arrow", "csv-module"])
def arrow(request, monkeypatch):
    monkeypatch.setenv("AUTODIFF_ROWS_ARROW", request.param)


@pytest.mark.parametrize("on_error", ["fail", "skip", "nan"])
def test_a_csv_cell_beyond_float32_is_a_bad_cell(runner, tmp_path, arrow, on_error) -> None:
    rows = tmp_path / "bigcell.csv"
    rows.write_text("x,y\n2,3\n1e40,5\n")
    result = run(runner, str(rows), "--on-error", on_error)
    assert result.exit_code == 1, result.output
    assert result.stdout.splitlines() == ["x,y,L,dL/dx,dL/dy", ROW_2]  # the row before it, written
    lines = result.stderr.splitlines()
    assert lines[0] == f"{rows}:3:1: error: the column 'x' holds 1e40, beyond float32's range (about {LARGEST})"
    assert lines[1:3] == [" 3 | 1e40,5", "   | ^~~~"]
    assert "float32 holds numbers up to about 3.4e38" in result.stderr and "Traceback" not in result.output


def test_the_caret_is_under_the_cell_in_its_column(runner, tmp_path, arrow) -> None:
    rows = tmp_path / "bigcell.tsv"
    rows.write_text("x\ty\n2\t3\n4\t-7e39\n")
    result = run(runner, str(rows))
    assert result.exit_code == 1, result.output
    lines = result.stderr.splitlines()
    assert lines[0] == f"{rows}:3:3: error: the column 'y' holds -7e39, beyond float32's range (about {LARGEST})"
    assert lines[1] == " 3 | 4\t-7e39" and lines[2].endswith("^~~~~")


def test_a_cell_float32_rounds_to_its_largest_number_still_runs(runner, tmp_path) -> None:
    rows = tmp_path / "edge.csv"
    rows.write_text("x,y\n3.4e38,1\n")
    assert np.isfinite(F32(3.4e38))
    result = run(runner, str(rows))
    assert result.exit_code == 0, result.output


def test_a_json_line_beyond_float32_is_located_at_its_number(runner, tmp_path) -> None:
    rows = tmp_path / "big.jsonl"
    rows.write_text('{"x": 2, "y": 3}\n{"x": 4, "y": 1e40}\n')
    result = run(runner, str(rows), "--to", "jsonl")
    assert result.exit_code == 1, result.output
    first = json.loads(result.stdout.splitlines()[0])
    assert first["L"] == float(str(np.log(F32(2)) * F32(3)))
    assert len(result.stdout.splitlines()) == 1
    assert result.stderr.startswith(f"{rows}:2:15: error: the column 'y' holds 1e40, beyond float32's range")
    assert "^~~~" in result.stderr


def test_a_json_array_entry_beyond_float32_is_located_at_its_number(runner, tmp_path) -> None:
    rows = tmp_path / "big.jsonl"
    rows.write_text('{"x": [1, 2]}\n{"x": [3, 1e39]}\n')
    result = runner.invoke(main, ["batch", "x = [1, 1]; L = sum(x)", str(rows), "--dtype", "float32"],
                           catch_exceptions=False)
    assert result.exit_code == 1, result.output
    assert result.stdout.splitlines() == ["x[0],x[1],L,dL/dx[0],dL/dx[1]", "1.0,2.0,3.0,1.0,1.0"]
    assert result.stderr.startswith(f"{rows}:2:11: error: the column 'x[1]' holds 1e39, beyond float32's range")


def test_parquet_writes_the_rows_before_and_names_the_row(runner, tmp_path) -> None:
    pa = pytest.importorskip("pyarrow")
    parquet = pytest.importorskip("pyarrow.parquet")
    rows = tmp_path / "big.parquet"
    parquet.write_table(pa.table({"x": [2.0, 1e40], "y": [3.0, 5.0]}), rows)
    result = run(runner, str(rows))
    assert result.exit_code == 1, result.output
    assert result.stdout.splitlines() == ["x,y,L,dL/dx,dL/dy", ROW_2]
    assert f"{rows}: error: the column 'x' holds 1e40 in row 2, beyond float32's range" in result.stderr


def test_reduce_refuses_it_too(runner, tmp_path) -> None:
    rows = tmp_path / "bigcell.csv"
    rows.write_text("x,y\n2,3\n1e40,5\n")
    result = run(runner, str(rows), "--reduce", "sum")
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.startswith(f"{rows}:3:1: error: the column 'x' holds 1e40, beyond float32's range")


def test_float64_reads_the_same_cell(runner, tmp_path) -> None:
    rows = tmp_path / "bigcell.csv"
    rows.write_text("x,y\n2,3\n1e40,5\n")
    result = runner.invoke(main, ["batch", "L = log(x)*y", str(rows)], catch_exceptions=False)
    assert result.exit_code == 0, result.output


def test_the_parquet_reader_yields_the_rows_before_then_names_the_row() -> None:
    from autodiff_cli.errors import InputError
    from autodiff_cli.files.rows.lines import Chunk
    from autodiff_cli.files.rows.parquet import ParquetReader

    reader = object.__new__(ParquetReader)  # (no file: the check alone, which needs no pyarrow)
    reader.name = "big.parquet"
    chunk = Chunk({"x": np.array([2.0, 4.0, 1e40]), "y": np.array([3.0, -1e39, 5.0])}, {"id": ["a", "b", "c"]},
                  np.array([7, 8, 9]), unit="row")
    parts = reader._refuse_beyond_precision(chunk, "float32")
    before = next(parts)
    assert before.lines.tolist() == [7] and before.numbers["x"].tolist() == [2.0] and before.passed == {"id": ["a"]}
    with pytest.raises(InputError) as raised:
        next(parts)
    assert raised.value.message == f"the column 'y' holds -1e39 in row 8, beyond float32's range (about {LARGEST})"


# --- a failed row's note shows float32's digits (adversary F14, batch's part) ------------------


def test_a_failed_rows_note_shows_float32s_shortest_digits(runner, tmp_path) -> None:
    rows = tmp_path / "rows.csv"
    rows.write_text("x,y\n-2,-3.48\n")
    assert repr(float(F32(-3.48))) == "-3.4800000190734863" and str(F32(-3.48)) == "-3.48"
    result = runner.invoke(main, ["batch", "L = sqrt(x)*y", str(rows), "--dtype", "float32"], catch_exceptions=False)
    assert result.exit_code == 1
    assert f"  note: in {rows} line 2: x=-2.0, y=-3.48\n" in result.stderr  # the inputs' order, as in float64


def test_a_tensor_rows_note_shows_float32s_shortest_digits(runner, tmp_path) -> None:
    rows = tmp_path / "rows.csv"
    rows.write_text("x[0],x[1]\n0.1,-0.3\n")
    result = runner.invoke(main, ["batch", "-e", "x = [0, 0]; L = sqrt(sum(x))", str(rows), "--dtype", "float32"],
                           catch_exceptions=False)
    assert f"  note: in {rows} line 2: x=[0.1, -0.3]\n" in result.stderr


def test_the_row_error_of_the_python_api_holds_those_numbers() -> None:
    from autodiff_cli.execute.batch_evaluator import BatchEvaluator

    result = BatchEvaluator("L = sqrt(x)*y", dtype="float32").evaluate(
        {"x": np.array([4.0, -2.0]), "y": np.array([1.0, -3.48])}, on_error="nan")
    error = result.error(1)
    assert error.inputs == {"x": -2.0, "y": -3.48} and F32(error.inputs["y"]) == F32(-3.48)
    assert error.notes[-1] == "in row 1 (counting from 0): x=-2.0, y=-3.48"
