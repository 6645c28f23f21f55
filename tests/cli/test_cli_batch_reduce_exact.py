"""batch --reduce: an input no column gives has the same value on every row, and the report
gives that value exactly (mean), or the exactly rounded sum of it over the rows (sum)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from autodiff_cli.cli import main
from files import rows_paths

rows_path = rows_paths.rows_path  # autouse: every test here runs on both rows paths (Arrow, pure Python)

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
ROWS = 12  # samples/regression.csv


@pytest.mark.parametrize("program, options, how, expected", [
    ("L = (w*x + b - y)**2", ["--set", "w=0.3", "--set", "b=0.1"], "mean", {"w": 0.3, "b": 0.1}),
    ("b = 0.1; w = 0.7; L = (w*x + b - y)**2", [], "mean", {"w": 0.7, "b": 0.1}),
    ("L = (w*x + b - y)**2", ["--set", "w=0.3", "--set", "b=0.1"], "sum",
     {"w": math.fsum([0.3] * ROWS), "b": math.fsum([0.1] * ROWS)}),
], ids=["set-mean", "default-mean", "set-sum"])
def test_broadcast_input_is_reported_exactly(runner, program, options, how, expected) -> None:
    result = runner.invoke(main, ["batch", program, str(SAMPLES / "regression.csv"), "--reduce", how,
                                  "--format", "json", "--wrt", "w,b", *options])
    assert result.exit_code == 0, result.stderr
    values = json.loads(result.stdout)["values"]
    assert {name: values[name] for name in expected} == expected  # exactly: no tolerance


def test_column_inputs_are_still_averaged(runner) -> None:
    # x's mean over the twelve points of regression.csv, which are symmetric about 0.
    result = runner.invoke(main, ["batch", "L = (w*x + b - y)**2", str(SAMPLES / "regression.csv"), "--reduce",
                                  "mean", "--format", "json", "--set", "w=0.3", "--set", "b=0.1"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["values"]["x"] == pytest.approx(0.0, abs=1e-15)


# Rows (x, y) = (1, 2) and (3, 4) of c = (x*y + 1)**2, by hand: dc/da = dc/db = 2b is 6 and 26,
# dc/dx = 2b*y is 12 and 104, dc/dy = 2b*x is 6 and 78.
@pytest.mark.parametrize("options, how, expected", [
    (["--values-of", "a,b", "--wrt", "x"], "sum", {"c": 2.0, "x": 116.0, "a": 32.0, "b": 32.0}),
    (["--wrt", "x", "--values-of", "y"], "mean", {"c": 1.0, "x": 58.0, "y": 42.0}),
    (["--values-of", "c"], "mean", {"c": 1.0, "x": 58.0, "y": 42.0}),
], ids=["intermediates-not-in-wrt", "input-not-in-wrt", "the-output-itself"])
def test_every_listed_variable_gets_its_own_gradient(runner, tmp_path, options, how, expected) -> None:
    rows = tmp_path / "xy.csv"
    rows.write_text("x,y\n1,2\n3,4\n")
    result = runner.invoke(main, ["batch", "a = x*y; b = a + 1; c = b*b", str(rows), "--reduce", how,
                                  "--format", "json", *options])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["grads"] == expected
