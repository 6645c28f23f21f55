"""`autodiff batch`: rows in, values and gradients out; formats, reductions, errors, streams, files."""

from __future__ import annotations

import csv
import io
import json
import math
import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from autodiff_cli.cli import main
from autodiff_cli.execute import evaluate
from autodiff_cli.language import parse
from files import rows_paths

rows_path = rows_paths.rows_path  # autouse: every test here runs on both rows paths (Arrow, pure Python)

REPO = Path(__file__).resolve().parents[2]
LINE = "L = (w*x - y)**2"  # dL/dw = 2(wx - y)x, dL/dx = 2(wx - y)w, dL/dy = -2(wx - y)
ROWS = "x,y\n1,2\n3,4\n0.5,-1\n"


def run(runner, *args, input=None):
    return runner.invoke(main, ["batch", *args], input=input, catch_exceptions=False)


def table(text: str, separator: str = ",") -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text), delimiter=separator))


def by_hand(w: float, x: float, y: float) -> dict[str, float]:
    r = w * x - y
    return {"L": r * r, "dL/dw": 2 * r * x, "dL/dx": 2 * r * w, "dL/dy": -2 * r}


def test_one_row_out_per_row_in_with_hand_derived_gradients(runner) -> None:
    result = run(runner, LINE, "-", "--set", "w=0.5", input=ROWS)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "x,y,L,dL/dw,dL/dx,dL/dy"
    for row, (x, y) in zip(table(result.stdout), [(1, 2), (3, 4), (0.5, -1)]):
        want = by_hand(0.5, x, y)
        assert (float(row["x"]), float(row["y"])) == (x, y)
        assert {k: float(row[k]) for k in want} == pytest.approx(want, rel=1e-15)
    assert result.stderr == ""


def test_rows_from_a_pipe_without_a_dash(runner) -> None:
    # CliRunner's stdin is not a terminal, like a pipe.
    assert run(runner, LINE, "--set", "w=0.5", input=ROWS).stdout == run(runner, LINE, "-", "--set", "w=0.5",
                                                                          input=ROWS).stdout


def test_numbers_round_trip_to_the_bit(runner) -> None:
    rng = np.random.default_rng(2)
    xs = rng.standard_normal(500)
    text = "x\n" + "\n".join(repr(float(x)) for x in xs) + "\n"
    result = run(runner, "y = exp(sin(x))/3", "-", input=text)
    program = parse("y = exp(sin(x))/3")
    for row, x in zip(table(result.stdout), xs):
        assert float(row["x"]) == x
        scalar = evaluate(program, {"x": float(x)})
        # exp and sin may differ from the scalar engine's in the last bit (see test_vectorized_ops).
        assert float(row["y"]) == pytest.approx(scalar.root.data, rel=4e-16)
        assert float(row["dy/dx"]) == pytest.approx(scalar.nodes["x"].grad, rel=1e-15)


def test_precision_rounds_computed_columns_only(runner) -> None:
    result = run(runner, "y = x/3", "-", "--precision", "3", input="x\n1.23456789\n")
    assert result.stdout == "x,y,dy/dx\n1.23456789,0.412,0.333\n"


def test_wrt_keep_and_values_of_choose_the_columns(runner) -> None:
    text = "id,x,y\nA,1,2\n\"B, 2\",3,4\n"
    program = "r = w*x - y\nL = r*r"
    result = run(runner, program, "-", "--set", "w=0.5", "--keep", "id", "--wrt", "w", "--values-of", "r",
                 input=text)
    assert result.exit_code == 0, result.output
    assert result.stdout == ('id,L,r,dL/dw\n'
                             'A,2.25,-1.5,-3.0\n'
                             '"B, 2",6.25,-2.5,-15.0\n')


def test_keep_nothing_and_gradients_of_intermediates(runner) -> None:
    result = run(runner, "r = w*x - y\nL = r*r", "-", "--set", "w=2", "--keep", "", "--wrt", "r,x",
                 input="x,y\n1,1\n")
    assert result.stdout == "L,dL/dr,dL/dx\n1.0,2.0,4.0\n"  # r = 1: dL/dr = 2r, dL/dx = 2r*w


@pytest.mark.parametrize("suffix, separator", [(".csv", ","), (".tsv", "\t")], ids=["csv", "tsv"])
def test_formats_follow_the_file_extensions(runner, tmp_path, suffix, separator) -> None:
    rows = tmp_path / f"rows{suffix}"
    rows.write_text(ROWS.replace(",", separator))
    out = tmp_path / f"out{suffix}"
    result = run(runner, LINE, str(rows), "--set", "w=0.5", "-o", str(out))
    assert result.exit_code == 0 and result.stdout == ""
    assert out.read_text().splitlines()[0] == separator.join(["x", "y", "L", "dL/dw", "dL/dx", "dL/dy"])
    assert float(table(out.read_text(), separator)[1]["dL/dw"]) == by_hand(0.5, 3, 4)["dL/dw"]


def test_json_lines_in_and_out(runner, tmp_path) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"x": 1, "y": 2}\n\n{"y": 4, "x": 3.0}\n')
    result = run(runner, LINE, str(rows), "--set", "w=0.5", "--to", "jsonl", "--wrt", "w")
    assert result.exit_code == 0, result.output
    documents = [json.loads(line) for line in result.stdout.splitlines()]
    assert documents == [{"x": 1.0, "y": 2.0, "L": 2.25, "dL/dw": -3.0},
                         {"x": 3.0, "y": 4.0, "L": 6.25, "dL/dw": -15.0}]


def test_json_lines_write_non_finite_numbers_as_strings(runner) -> None:
    result = run(runner, "y = sqrt(x)", "-", "--to", "jsonl", input="x\n0\n4\n")
    assert [json.loads(line) for line in result.stdout.splitlines()] == [
        {"x": 0.0, "y": 0.0, "dy/dx": "Infinity"}, {"x": 4.0, "y": 2.0, "dy/dx": 0.25}]


def test_json_lines_output_reads_back(runner) -> None:
    first = run(runner, "y = sqrt(x)", "-", "--to", "jsonl", "--keep", "", input="x\n0\n4\n").stdout
    assert first == '{"y": 0.0, "dy/dx": "Infinity"}\n{"y": 2.0, "dy/dx": 0.25}\n'
    again = run(runner, "z = 2*y", "-", "--from", "jsonl", "--to", "jsonl", "--keep", "y,dy/dx", input=first)
    assert again.stdout == ('{"y": 0.0, "dy/dx": "Infinity", "z": 0.0, "dz/dy": 2.0}\n'
                            '{"y": 2.0, "dy/dx": 0.25, "z": 4.0, "dz/dy": 2.0}\n')
    infinite = run(runner, "z = 2*y", "-", "--from", "jsonl", "--on-error", "nan", input='{"y": "Infinity"}\n')
    assert infinite.stdout == "y,z,dz/dy\ninf,nan,nan\n"
    assert "the input 'y' is inf" in infinite.stderr


def test_from_and_to_override_the_extensions(runner, tmp_path) -> None:
    rows = tmp_path / "rows.txt"
    rows.write_text('{"x": 2}\n')
    result = run(runner, "y = x*x", str(rows), "--from", "jsonl", "--to", "tsv")
    assert result.stdout == "x\ty\tdy/dx\n2.0\t4.0\t4.0\n"


def test_passed_columns_keep_their_text_across_formats(runner) -> None:
    result = run(runner, "y = 2*x", "-", "--from", "jsonl", "--keep", "id,x", input='{"id": [1, "a"], "x": 1}\n')
    assert result.stdout == 'id,x,y,dy/dx\n"[1, ""a""]",1.0,2.0,2.0\n'


# --- --reduce ------------------------------------------------------------------------------


def test_reduce_sums_and_means_the_per_row_results(runner) -> None:
    per_row = table(run(runner, LINE, "-", "--set", "w=0.5", input=ROWS).stdout)
    for how in ("sum", "mean"):
        document = json.loads(run(runner, LINE, "-", "--set", "w=0.5", "--reduce", how, "--format", "json",
                                  input=ROWS).stdout)
        divide = 3 if how == "mean" else 1
        assert document["output"] == "L" and document["reduce"] == how and document["rows"] == 3
        assert document["value"] == pytest.approx(math.fsum(float(r["L"]) for r in per_row) / divide, rel=1e-15)
        for name in ("w", "x", "y"):
            want = math.fsum(float(r[f"dL/d{name}"]) for r in per_row) / divide
            assert document["grads"][name] == pytest.approx(want, rel=1e-15)
        assert document["values"]["w"] == (0.5 if how == "mean" else 1.5)
        assert document["kinds"] == {"L": "output", "w": "input", "x": "input", "y": "input"}


def test_reduce_mean_is_the_least_squares_closed_form(runner, samples) -> None:
    # The minigrad post: the mean gradient of (w*x + b - y)**2 is 2/N X^T (XW - Y) with X = [x, 1].
    data = np.loadtxt(samples / "regression.csv", delimiter=",", skiprows=1)
    X, Y, W = np.column_stack([data[:, 0], np.ones(len(data))]), data[:, 1], np.array([0.5, 0.0])
    result = run(runner, str(samples / "regression.ad"), str(samples / "regression.csv"), "--reduce", "mean",
                 "--wrt", "w,b", "--format", "json")
    document = json.loads(result.stdout)
    closed = 2 / len(data) * X.T @ (X @ W - Y)
    assert [document["grads"]["w"], document["grads"]["b"]] == pytest.approx(list(closed), rel=1e-13)
    assert document["value"] == pytest.approx(float(np.mean((X @ W - Y) ** 2)), rel=1e-13)


def test_reduce_formats(runner) -> None:
    plain = run(runner, LINE, "-", "--set", "w=0.5", "--reduce", "mean", "--wrt", "w", input=ROWS).stdout
    assert plain.splitlines()[0].split() == ["name", "kind", "value", "grad"]
    assert plain.splitlines()[1].split()[:2] == ["L", "output"]
    csv_text = run(runner, LINE, "-", "--set", "w=0.5", "--reduce", "sum", "--wrt", "w", "--format", "csv",
                   input=ROWS).stdout
    assert [row["name"] for row in table(csv_text)] == ["L", "w"]
    assert table(csv_text)[0]["grad"] == "3.0"  # dL/dL summed over 3 rows
    tabled = run(runner, LINE, "-", "--set", "w=0.5", "--reduce", "mean", "--format", "table", "--no-color",
                 input=ROWS).stdout
    assert tabled.startswith("mean over 3 rows: L = ")


def test_reduce_is_the_same_however_the_rows_arrive(tmp_path) -> None:
    rows = tmp_path / "rows.csv"
    rng = np.random.default_rng(4)
    rows.write_text("x,y\n" + "".join(f"{x!r},{y!r}\n" for x, y in rng.standard_normal((200_000, 2)).tolist()))
    args = [sys.executable, "-m", "autodiff_cli", "batch", "L = tanh(w*x) - y", "--set", "w=0.3", "--reduce",
            "mean", "--format", "json"]
    from_file = subprocess.run([*args, str(rows)], capture_output=True, check=True).stdout
    with open(rows, "rb") as handle:  # through a pipe, in whatever pieces the pipe delivers
        from_pipe = subprocess.run(["bash", "-c", f"cat {rows} | {' '.join(map(_quote, args))} -"],
                                   capture_output=True, check=True, stdin=handle).stdout
    assert from_file == from_pipe


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


# --- failed rows ---------------------------------------------------------------------------

FAILING = "x,y\n1,2\n-3,4\n0.5,-1\n-1,0\n"


def test_fail_names_the_line_the_values_and_the_program_position(runner) -> None:
    result = run(runner, "L = log(x)*y", "-", input=FAILING)
    assert result.exit_code == 1
    assert result.stderr == (
        "<expr>:1:5: error: log of -3 is undefined (log needs a positive argument) (in 'log')\n"
        " 1 | L = log(x)*y\n"
        "   |     ^~~\n"
        "  note: in <stdin> line 3: x=-3.0, y=4.0\n"
        "  note: --on-error skip leaves out the rows where the program fails; --on-error nan writes NaN\n"
        "  hint: keep its argument above 0 for these inputs: maximum(p, 1e-12) for a probability, or log_softmax or cross_entropy of the logits, which never take log 0\n")


def test_skip_leaves_rows_out_and_counts_them(runner) -> None:
    result = run(runner, "L = log(x)*y", "-", "--on-error", "skip", input=FAILING)
    assert result.exit_code == 0
    assert [row["x"] for row in table(result.stdout)] == ["1.0", "0.5"]
    assert result.stderr == ("warning: skipped 2 of 4 rows where the program failed; the first, <stdin> line 3: "
                             "log of -3 is undefined (log needs a positive argument) (in 'log')\n")


def test_nan_keeps_every_row(runner) -> None:
    result = run(runner, "L = log(x)*y", "-", "--on-error", "nan", input=FAILING)
    rows = table(result.stdout)
    assert [row["L"] for row in rows] == ["0.0", "nan", "0.6931471805599453", "nan"]
    assert rows[1]["x"] == "-3.0"  # the inputs are written as they were
    assert "wrote NaN for 2 of 4 rows" in result.stderr


def test_reduce_with_skip_and_nan(runner) -> None:
    skipped = json.loads(run(runner, "L = log(x)*y", "-", "--on-error", "skip", "--reduce", "mean", "--format",
                             "json", input=FAILING).stdout)
    assert skipped["rows"] == 2 and skipped["failed"] == 2
    assert skipped["value"] == pytest.approx((0.0 + math.log(0.5) * -1) / 2, rel=1e-15)
    with_nan = json.loads(run(runner, "L = log(x)*y", "-", "--on-error", "nan", "--reduce", "sum", "--format",
                              "json", input=FAILING).stdout)
    assert with_nan["value"] == "NaN"


def test_mean_over_no_rows_is_an_error(runner) -> None:
    result = run(runner, "L = log(x)", "-", "--on-error", "skip", "--reduce", "mean", input="x\n-1\n")
    assert result.exit_code == 1
    assert "no rows to average in <stdin> (every row failed; the first, <stdin> line 2: log of -1" in result.stderr


def test_a_nan_cell_fails_its_row(runner) -> None:
    result = run(runner, "y = 2*x", "-", input="x\n1\nnan\n")
    assert result.exit_code == 1
    assert "error: the input 'x' is nan, not a finite number" in result.stderr
    assert "in <stdin> line 3: x=nan" in result.stderr
    skipped = run(runner, "y = 2*x", "-", "--on-error", "skip", input="x\n1\nnan\n")
    assert skipped.stdout == "x,y,dy/dx\n1.0,2.0,2.0\n"


# --- errors in the rows --------------------------------------------------------------------


@pytest.mark.parametrize(
    "rows, args, expected",
    [("x,y,z\n1,2,3\n", [], "<stdin>:1:5: error: the column 'z' is not an input of the program"),
     ("x,y,z\n1,2,3\n", [], "pass the column through to the output with --keep z,..., or remove it"),
     ("x,y,z\n1,2,3\n", ["--reduce", "sum"], "remove it (--reduce writes no rows to keep it in)"),
     ("x,x,y\n1,2,3\n", [], "<stdin>:1:3: error: the column 'x' appears twice (columns 1 and 2)"),
     ("x,y\n1,2\n3,abc\n", [], "<stdin>:3:3: error: the column 'y' holds 'abc', not a number"),
     ("x,y\n1,2\n3,\n", [], "<stdin>:3:3: error: the column 'y' is empty"),
     ("x,y\n1,2\n3\n", [], "<stdin>:3:2: error: this line has 1 cell, but the first line names 2 columns"),
     ("x,y\n1,2\n1_000,2\n", [], "<stdin>:3:1: error: the column 'x' holds '1_000', not a number"),
     ("x,y\n\"1,2\n", [], "<stdin>:2:1: error: this line is not valid CSV"),
     ("x\n1\n", [], "error: no value for input y: <stdin> has no such column"),
     ("x,y\n1,2\n", ["--set", "x=1"], "<stdin>:1:1: error: 'x' is both a column of <stdin> and given by --set"),
     ("x,y,r\n1,2,3\n", ["--values-of", "r"], "the column 'r' names a variable the program computes"),
     ("", [], "<stdin>:1:1: error: there are no rows: the input is empty"),
     ('{"x": 1, "y": 2}\n{"x": "a", "y": 2}\n', ["--from", "jsonl"],
      "<stdin>:2:2: error: the key 'x' holds \"a\", not a number"),
     ('{"x": 1, "y": 2}\n{"x": 1}\n', ["--from", "jsonl"], "<stdin>:2:1: error: this object has no 'y'"),
     ('{"x": 1, "y": 2}\n{"x": 1, "y": 2, "q": 3}\n', ["--from", "jsonl"],
      "<stdin>:2:18: error: this object has 'q', which the first line does not"),
     ('{"x": 1, "y": 2}\n{"x": 1, "x": 2, "y": 0}\n', ["--from", "jsonl"],
      "<stdin>:2:2: error: the key 'x' appears twice in this object"),
     ('{"x": 1, "y": 2}\n{"x": 1,\n', ["--from", "jsonl"], "<stdin>:2:9: error: not valid JSON"),
     ('[1, 2]\n', ["--from", "jsonl"], "<stdin>:1:1: error: expected a JSON object, got an array"),
     ('{"x": true, "y": 2}\n', ["--from", "jsonl"], "<stdin>:1:2: error: the key 'x' holds true, not a number"),
     ("x,y\n1,2\n", ["--keep", "q"], "error: --keep names 'q', which is not a column of <stdin>"),
     ("x,y\n1,2\n", ["--wrt", "q"], "error: --wrt names q, which the program does not define")],
    ids=["unknown", "unknown-hint", "unknown-hint-with-reduce", "duplicate", "text", "empty-cell", "short-line", "underscore", "open-quote", "missing",
         "column-and-set", "computed", "empty-input", "json-text", "json-missing-key", "json-extra-key",
         "json-duplicate-key", "json-broken", "json-array", "json-bool", "keep-unknown", "wrt-unknown"],
)
def test_bad_rows_name_the_file_line_and_column(runner, rows, args, expected) -> None:
    result = run(runner, "r = w*x - y\nL = r*r", "-", "--set", "w=1", *args, input=rows)
    assert result.exit_code == 1, result.output
    assert expected in result.stderr
    assert "Traceback" not in result.stderr


def test_errors_excerpt_the_line_with_a_caret(runner) -> None:
    result = run(runner, LINE, "-", "--set", "w=1", input="x,y\n1,2\n3,abc\n")
    assert result.stderr.splitlines()[1:3] == [" 3 | 3,abc", "   |   ^~~"]


def test_blank_lines_and_quoted_numbers_and_crlf(runner) -> None:
    result = run(runner, "y = 2*x", "-", input='x\r\n1\r\n\r\n"2"\r\n')
    assert result.stdout == "x,y,dy/dx\n1.0,2.0,2.0\n2.0,4.0,2.0\n"


def test_a_line_number_after_blank_lines_is_the_line_in_the_file(runner) -> None:
    result = run(runner, "y = log(x)", "-", input="x\n1\n\n\n-1\n")
    assert "in <stdin> line 5: x=-1.0" in result.stderr


def test_non_utf8_rows_are_an_error_with_the_line(runner, tmp_path) -> None:
    rows = tmp_path / "rows.csv"
    rows.write_bytes(b"x\n1\n2\xff\n")
    result = run(runner, "y = 2*x", str(rows))
    assert result.exit_code == 1
    assert f"{rows}:3:2: error: not valid UTF-8: byte 0xff" in result.stderr  # "2" then the byte


def test_header_only_gives_header_only(runner) -> None:
    assert run(runner, "y = 2*x", "-", input="x\n").stdout == "x,y,dy/dx\n"


@pytest.mark.parametrize(
    "args, message",
    [(["y = 2*x", "-", "--format", "json"], "--format chooses --reduce's report"),
     (["y = 2*x", "-", "--reduce", "sum", "--to", "jsonl"], "--to chooses the rows' format"),
     (["y = 2*x", "-", "--reduce", "sum", "--keep", "x"], "--keep chooses the columns"),
     (["-", "-"], "standard input can carry the rows or the program"),
     (["/dev/stdin", "-"], "standard input can carry the rows or the program"),
     (["-", "/dev/fd/0"], "standard input can carry the rows or the program"),
     (["y = 2*x", "-", "--reduce", "sum", "-o", "report.parquet"], "--reduce writes one report, as plain "
      "text, JSON or CSV, not .parquet"),
     (["y = 2*x", "-", "--reduce", "mean", "-o", "report.JSONL"], "not .jsonl: name the file .txt, .json or .csv"),
     (["y = 2*x", "-", "--on-error", "ignore"], "Invalid value for '--on-error'"),
     (["y = 2*x", "-", "--precision", "0"], "Invalid value for '--precision'")],
    ids=["format-without-reduce", "to-with-reduce", "keep-with-reduce", "stdin-twice", "program-dev-stdin",
         "rows-dev-fd-0", "reduce-to-parquet", "reduce-to-jsonl", "on-error", "precision"],
)
def test_usage_errors_exit_2(runner, args, message) -> None:
    result = run(runner, *args, input="x\n1\n")
    assert result.exit_code == 2
    assert message in result.stderr


def test_expr_option_takes_the_rows_as_the_argument(runner, samples) -> None:
    result = run(runner, "-e", "y = 2*x", "-", input="x\n1\n")
    assert result.stdout == "x,y,dy/dx\n1.0,2.0,2.0\n"
    from_file = run(runner, "-f", str(samples / "regression.ad"), str(samples / "regression.csv"), "--wrt", "w")
    assert from_file.stdout.splitlines()[0] == "x,y,L,dL/dw"


# --- files ---------------------------------------------------------------------------------


def test_output_file_is_whole_or_absent(runner, tmp_path) -> None:
    out = tmp_path / "out.csv"
    out.write_text("precious\n")
    result = run(runner, "y = log(x)", "-", "-o", str(out), input="x\n1\n-1\n")
    assert result.exit_code == 1
    assert out.read_text() == "precious\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.csv"]  # no temporary file left behind
    assert run(runner, "y = log(x)", "-", "-o", str(out), input="x\n1\n").exit_code == 0
    assert out.read_text() == "x,y,dy/dx\n1.0,0.0,1.0\n"


def test_writing_over_the_rows_read_is_refused(runner, tmp_path) -> None:
    rows = tmp_path / "rows.csv"
    rows.write_text("x\n1\n2\n")
    result = run(runner, "y = 2*x", str(rows), "-o", str(rows))
    assert result.exit_code == 2
    assert "is the ROWS file this run reads" in result.stderr
    assert rows.read_text() == "x\n1\n2\n"


def test_reduce_report_to_a_file(runner, tmp_path) -> None:
    out = tmp_path / "report.json"
    assert run(runner, "y = 2*x", "-", "--reduce", "sum", "--format", "json", "-o", str(out),
               input="x\n1\n2\n").stdout == ""
    assert json.loads(out.read_text())["value"] == 6.0


def test_same_input_same_bytes(runner, samples) -> None:
    args = [str(samples / "regression.ad"), str(samples / "regression.csv")]
    assert run(runner, *args).stdout == run(runner, *args).stdout


# --- streams, as a user runs them ----------------------------------------------------------


def autodiff(*args: str, **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "autodiff_cli", "batch", *args], **kwargs)


def test_output_starts_before_the_input_ends() -> None:
    with autodiff("y = 2*x", stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as process:
        try:
            process.stdin.write(b"x\n1\n2\n")
            process.stdin.flush()
            ready, _, _ = select.select([process.stdout], [], [], 30)
            assert ready, "no output while the input is still open"
            assert process.stdout.readline() == b"x,y,dy/dx\n"
            assert process.stdout.readline() == b"1.0,2.0,2.0\n"
            process.stdin.write(b"3\n")
            process.stdin.close()
            assert process.stdout.read() == b"2.0,4.0,2.0\n3.0,6.0,2.0\n"
            assert process.wait(30) == 0
        finally:
            process.kill()


def test_head_ends_the_run_cleanly(tmp_path) -> None:
    rows = tmp_path / "rows.csv"
    rows.write_text("x\n" + "\n".join(str(i) for i in range(300_000)) + "\n")
    command = f"{sys.executable} -m autodiff_cli batch 'y = 2*x' {rows} | head -n 3; echo \"status ${{PIPESTATUS[0]}}\""
    result = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=120, check=False)
    assert result.stdout == "x,y,dy/dx\n0.0,0.0,2.0\n1.0,2.0,2.0\nstatus 0\n"
    assert result.stderr == ""


def _writes_in(pid: int, directory: Path) -> bool:
    """Whether process ``pid`` has a file open in ``directory``: one with a name there, or one
    without a name yet (O_TMPFILE, which /proc shows as '#inode (deleted)')."""
    if list(directory.iterdir()):
        return True
    fds = Path(f"/proc/{pid}/fd")
    try:
        links = [os.readlink(fd) for fd in fds.iterdir()]
    except OSError:
        return False
    return any(link.startswith(f"{directory}{os.sep}") for link in links)


def test_sigterm_leaves_no_partial_file(tmp_path) -> None:
    out = tmp_path / "out.csv"
    with autodiff("y = 2*x", "-", "-o", str(out), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                  stderr=subprocess.PIPE) as process:
        try:
            process.stdin.write(b"x\n" + b"1\n" * 100_000)
            process.stdin.flush()
            deadline = time.monotonic() + 30
            while not _writes_in(process.pid, tmp_path) and time.monotonic() < deadline:
                time.sleep(0.05)  # the temporary file exists: rows are being written
            assert _writes_in(process.pid, tmp_path), "no temporary file appeared"
            process.send_signal(signal.SIGTERM)
            assert process.wait(30) == 128 + signal.SIGTERM
        finally:
            process.kill()
    assert list(tmp_path.iterdir()) == []


def _with_terminal_stderr(args: list[str], stdin: bytes | None = None) -> str:
    """stderr as a terminal sees it (a pseudo-terminal), stdout to a pipe."""
    primary, secondary = pty.openpty()
    process = subprocess.Popen([sys.executable, "-m", "autodiff_cli", "batch", *args], stdin=subprocess.PIPE,
                               stdout=subprocess.DEVNULL, stderr=secondary, env={**os.environ, "TERM": "xterm"})
    os.close(secondary)
    process.communicate(stdin, timeout=60)
    seen = b""
    while select.select([primary], [], [], 0.5)[0]:
        try:
            data = os.read(primary, 65536)
        except OSError:
            break
        if not data:
            break
        seen += data
    os.close(primary)
    return seen.decode("utf-8", "replace")


def test_progress_only_at_a_terminal_for_a_file(tmp_path, rows_path) -> None:
    # The bar appears after the first second (console.PROGRESS_AFTER), so the file is large.
    if rows_path == "arrow":
        pytest.skip("through Arrow, batch reads this file in less than the second the bar waits for")
    rows = tmp_path / "rows.csv"
    values = np.random.default_rng(5).standard_normal((500_000, 3))
    rows.write_text("a,b,c\n" + ("%r,%r,%r\n" * len(values)) % tuple(values.ravel().tolist()))
    program = "y = tanh(a*b + c)"  # seven columns of full-precision numbers per row: a few seconds
    shown = _with_terminal_stderr([program, str(rows)])
    assert "reading rows.csv" in shown and "\x1b[" in shown  # a Rich bar, drawn with escape codes
    assert _with_terminal_stderr([program, str(rows), "--quiet"]) == ""
    assert _with_terminal_stderr(["y = 2*x", "-"], stdin=b"x\n1\n") == ""  # a pipe: size unknown


def test_help_has_examples(runner) -> None:
    result = runner.invoke(main, ["batch", "--help"])
    assert result.exit_code == 0
    assert "autodiff batch model.ad rows.csv > out.csv" in result.stdout
    assert "dL/da" in result.stdout


def test_help_fits_80_columns_and_one_screen_of_options(runner) -> None:
    result = runner.invoke(main, ["batch", "--help"], env={"COLUMNS": "200"})  # a wide terminal
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert max(map(len, lines)) <= 80, [line for line in lines if len(line) > 80]
    assert len(lines) <= 70


# --- Parquet (pyarrow: the [parquet] extra; installed for the tests with dask[dataframe]) ----------


def test_parquet_out_holds_the_same_numbers_as_csv(runner, samples, tmp_path) -> None:
    import pyarrow.parquet as pq

    args = [str(samples / "regression.ad"), str(samples / "regression.csv")]
    out = tmp_path / "out.parquet"
    assert run(runner, *args, "-o", str(out)).exit_code == 0
    written = pq.read_table(out).to_pydict()
    rows = table(run(runner, *args).stdout)
    assert list(written) == list(rows[0])
    for name, column in written.items():
        assert column == [float(row[name]) for row in rows]  # every bit, as the round-trip text says


def test_parquet_in_with_integers_text_and_nulls(runner, tmp_path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"id": ["a", "b", "c"], "x": pa.array([1, None, 4], pa.int64())}), rows)
    result = run(runner, "y = sqrt(x)", str(rows), "--keep", "id,x", "--on-error", "skip")
    assert result.stdout == "id,x,y,dy/dx\na,1.0,1.0,0.5\nc,4.0,2.0,0.25\n"
    assert "skipped 1 of 3 rows where the program failed; the first, " in result.stderr
    assert f"{rows} row 2: the input 'x' is nan, not a finite number" in result.stderr
    failing = run(runner, "y = sqrt(x)", str(rows), "--keep", "id,x")
    assert f"note: in {rows} row 2: x=nan" in failing.stderr


@pytest.mark.parametrize("kind, big", [("int64", 1_700_000_000_123_456_789), ("uint64", 2**64 - 1)],
                         ids=["int64-nanoseconds", "uint64-max"])
def test_parquet_integers_past_2_53_are_rounded_as_csv_rounds_them(runner, tmp_path, kind, big) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"t": pa.array([1, big], getattr(pa, kind)())}), rows)
    result = run(runner, "L = 2*t", str(rows))
    assert result.exit_code == 0, result.stderr
    assert result.stdout == f"t,L,dL/dt\n1.0,2.0,2.0\n{float(big)!r},{2 * float(big)!r},2.0\n"


def test_parquet_reduce_equals_csv_reduce(runner, samples, tmp_path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    data = np.loadtxt(samples / "regression.csv", delimiter=",", skiprows=1)
    parquet = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"x": data[:, 0], "y": data[:, 1]}), parquet)
    args = ["--reduce", "mean", "--format", "json"]
    from_csv = run(runner, str(samples / "regression.ad"), str(samples / "regression.csv"), *args).stdout
    from_parquet = run(runner, str(samples / "regression.ad"), str(parquet), *args).stdout
    assert from_csv == from_parquet


@pytest.mark.parametrize(
    "args, message, status",
    [(["y = 2*x", "-", "--from", "parquet"], "Parquet cannot be read from standard input", 1),
     (["y = 2*x", "-", "--to", "parquet", "--precision", "3"], "--precision rounds the numbers of text output", 2)],
    ids=["stdin", "precision"],
)
def test_parquet_misuse(runner, args, message, status) -> None:
    result = run(runner, *args, input="x\n1\n")
    assert result.exit_code == status and message in result.stderr


def test_a_text_column_is_not_an_input(runner, tmp_path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"x": ["1", "2"]}), rows)
    result = run(runner, "y = 2*x", str(rows))
    assert result.exit_code == 1
    assert f"{rows}: error: the column 'x' of {rows} holds string values, not numbers" in result.stderr


def test_reduce_report_format_from_the_file_extension(runner, tmp_path) -> None:
    out = tmp_path / "report.csv"
    assert run(runner, "y = 2*x", "-", "--reduce", "mean", "-o", str(out), input="x\n1\n3\n").exit_code == 0
    assert out.read_text() == "name,kind,value,grad\ny,output,4.0,1.0\nx,input,2.0,2.0\n"


def test_output_to_an_open_descriptor_writes_into_it(tmp_path) -> None:
    log = tmp_path / "log.csv"
    log.write_text("kept\n")
    command = f"{sys.executable} -m autodiff_cli batch 'y = 2*x' - -o /dev/fd/3 3>>{log}"
    result = subprocess.run(["bash", "-c", command], input="x\n1\n", capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert log.read_text() == "kept\nx,y,dy/dx\n1.0,2.0,2.0\n"  # appended: the shell's >> is respected


def test_a_directory_that_takes_no_temporary_file(runner, tmp_path, monkeypatch) -> None:
    # Root ignores directory permissions, so the refusal is simulated where it happens.
    from autodiff_cli.files import atomic

    out = tmp_path / "out.csv"
    out.write_text("old\n")
    real = atomic._create_temporary

    def refuse_next_to_target(directory: str, base: str):
        if os.path.samefile(directory, tmp_path):
            raise PermissionError(13, "Permission denied")
        return real(directory, base)

    monkeypatch.setattr(atomic, "_create_temporary", refuse_next_to_target)
    assert run(runner, "y = log(x)", "-", "-o", str(out), input="x\n1\n-1\n").exit_code == 1
    assert out.read_text() == "old\n"  # a failed run leaves it as it was
    assert run(runner, "y = 2*x", "-", "-o", str(out), input="x\n1\n").exit_code == 0
    assert out.read_text() == "x,y,dy/dx\n1.0,2.0,2.0\n"  # filled in place
    new = tmp_path / "new.csv"
    result = run(runner, "y = 2*x", "-", "-o", str(new), input="x\n1\n")
    assert result.exit_code == 1 and "cannot create a file in" in result.stderr and not new.exists()


@pytest.mark.parametrize("pause_after", [20_000, 100_000, 250_000])
def test_on_a_pipe_every_row_before_the_failing_one_is_written(pause_after) -> None:
    """Rows arriving in bursts are computed as they come, in chunks that end wherever a burst
    ends; the rows written before a row that stops the run must not depend on that."""
    values = [1.0 + i for i in range(40_000)]
    text = ("x\n" + "".join(f"{v!r}\n" for v in values) + "-1.0\n" + "1.0\n" * 10).encode()
    process = subprocess.Popen([sys.executable, "-m", "autodiff_cli", "batch", "y = log(x)", "-"],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env={**os.environ, "PYTHONPATH": str(REPO)})
    import threading

    def feed() -> None:
        assert process.stdin is not None
        try:
            process.stdin.write(text[:pause_after])
            process.stdin.flush()
            time.sleep(0.3)  # the first burst is computed and written before the rest comes
            process.stdin.write(text[pause_after:])
            process.stdin.close()
        except BrokenPipeError:  # the run stopped before reading it all
            pass

    with process:
        feeder = threading.Thread(target=feed)
        feeder.start()
        assert process.stdout is not None and process.stderr is not None
        out, err = process.stdout.read(), process.stderr.read()
        process.wait(timeout=120)
        feeder.join()
    assert process.returncode == 1
    assert b"line 40002" in err
    rows = out.decode().splitlines()
    assert len(rows) == 1 + len(values)
    assert [float(row.split(",")[0]) for row in rows[1:]] == values


def test_a_missing_column_points_at_the_header_of_the_rows_too(runner, tmp_path) -> None:
    rows = tmp_path / "rows.csv"
    rows.write_text("\nx,z\n1,2\n")  # a blank line first: the header is line 2
    result = runner.invoke(main, ["batch", "L = x*y", str(rows), "--keep", "x,z"])
    assert result.exit_code == 1
    lines = result.stderr.splitlines()
    assert lines[0].startswith("<expr>:1:7: error: no value for input y")
    assert f"  note: {rows} line 2, its header, names the columns: x, z" in lines
