"""--dtype float32 on eval, batch and fit: numbers computed in float32 and shown with the digits
float32 holds; float64 stays the default, byte for byte."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from autodiff_cli.cli import main


def run(runner, *args):
    result = runner.invoke(main, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_eval_in_float32_shows_float32s_digits(runner):
    out = run(runner, "eval", "x = [1.1, 2.2]; y = sum(x*x)", "--dtype", "float32", "--format", "plain")
    assert "in float32" in out.splitlines()[0]
    x = np.float32([1.1, 2.2])
    y = np.float32(x[0] * x[0]) + np.float32(x[1] * x[1])  # float32 arithmetic, as NumPy does it
    assert f"[1.1, 2.2]  [{str(np.float32(2) * x[0])}, {str(np.float32(2) * x[1])}]" in out  # str: float32's digits
    assert str(np.float32(y)) in out and "1.100000023841858" not in out


def test_eval_json_says_its_precision(runner):
    document = json.loads(run(runner, "eval", "x = 1.1; y = x*x", "--dtype", "float32", "--format", "json"))
    assert document["dtype"] == "float32"
    assert document["value"] == float(str(np.float32(1.1) * np.float32(1.1)))
    assert "dtype" not in json.loads(run(runner, "eval", "x = 1.1; y = x*x", "--format", "json"))


def test_float64_is_the_default_byte_for_byte(runner, samples):
    for program in ("karpathy.ad", "regression_matrix.ad"):
        assert run(runner, "eval", samples / program, "--format", "json") == \
            run(runner, "eval", samples / program, "--format", "json", "--dtype", "float64")


def test_batch_in_float32_writes_float32s_digits(runner, tmp_path):
    rows = tmp_path / "rows.csv"
    rows.write_text("x\n1.1\n2.2\n")
    out = run(runner, "batch", "w = 0.3; y = w*x", rows, "--dtype", "float32", "--wrt", "w").splitlines()
    want = [np.float32(0.3) * np.float32(v) for v in (1.1, 2.2)]
    assert out == ["x,y,dy/dw", f"1.1,{str(want[0])},1.1", f"2.2,{str(want[1])},2.2"]


def test_fit_in_float32_learns_what_float64_learns(runner, samples, tmp_path):
    learned = {}
    for dtype in ("float32", "float64"):
        out = tmp_path / f"{dtype}.json"
        run(runner, "fit", samples / "line.ad", "--data", samples / "line.csv", "--steps", "200", "--dtype", dtype,
            "-o", out, "-q")
        learned[dtype] = json.loads(out.read_text())
    for name, value in learned["float64"].items():
        assert learned["float32"][name] == pytest.approx(value, rel=1e-4, abs=1e-5)


def test_tangent_with_float32_is_a_usage_error(runner):
    result = runner.invoke(main, ["eval", "x = [1, 2]; y = sum(x*x)", "--tangent", "x=[1, 0]", "--dtype", "float32"])
    assert result.exit_code == 2 and "--tangent computes in float64" in result.output


@pytest.mark.parametrize("args", [["y = 3*x**2", "--set", "x=1e30", "--dtype", "float32"],
                                  ["y = sum(3*x**2)", "--set", "x=[1e300]"]], ids=["float32", "tensor"])
def test_an_overflowing_power_is_named_as_written_not_by_its_internal_op(args) -> None:
    from click.testing import CliRunner

    from autodiff_cli.cli import main

    result = CliRunner().invoke(main, ["eval", *args])
    assert result.exit_code == 1, result.output
    assert "error: power overflows" in result.stderr and "**c" not in result.stderr


def test_fit_in_float32_writes_float32s_shortest_digits(tmp_path) -> None:
    # The values file once held float32 numbers in float64's digits (1.728642463684082).
    from click.testing import CliRunner

    from autodiff_cli.cli import main

    samples = Path(__file__).resolve().parents[2] / "samples"
    out = tmp_path / "v.json"
    result = CliRunner().invoke(main, ["fit", str(samples / "line.ad"), "--data", str(samples / "line.csv"),
                                       "--steps", "20", "--dtype", "float32", "-q", "-o", str(out)])
    assert result.exit_code == 0, result.output
    text = out.read_text()
    for value in json.loads(text).values():
        assert repr(value) == str(np.float32(value)), (value, text)  # the shortest text float32 gives it
