"""`autodiff plot` of a tensor program: a number input or one entry of a tensor input.

Values are checked against the post's loss worked in NumPy by hand: with W = [[w], [0]], the
regression's loss is mean((X[:, 0] w - Y)^2) and its slope 2/N sum((X[:, 0] w - Y) X[:, 0]).
"""

import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from autodiff_cli.cli import main


@pytest.fixture
def run(runner):
    def invoke(*args, input=None):
        return runner.invoke(main, ["plot", *args], input=input, catch_exceptions=False)

    return invoke


def regression(samples):
    from autodiff_cli.execute.interpreter import input_arrays
    from autodiff_cli.language import parse

    arrays = input_arrays(parse((samples / "regression_matrix.ad").read_text()), {})
    return arrays["X"], arrays["Y"]


def test_an_entry_as_text_with_its_tangent(run, samples) -> None:
    result = run(str(samples / "regression_matrix.ad"), "--range", "W[0,0]=0:5", "--format", "text",
                 "--points", "51", "--tangent-at", "W[0, 0]=2")
    assert result.exit_code == 0, result.output
    assert result.stderr == ""  # W's value is used (its other entry), so no warning that it is not
    X, Y = regression(samples)
    residual = X[:, 0] * 2.0 + X[:, 1] * -1.0 - Y[:, 0]  # W[1, 0] keeps the sample's -1
    value, slope = np.mean(residual**2), 2 / 8 * np.sum(residual * X[:, 0])
    line = result.stdout.splitlines()[-1]
    assert line.startswith("tangent at W[0, 0] = 2: L = ")
    found = re.match(r"tangent at W\[0, 0\] = 2: L = (\S+), slope dL/dW\[0, 0\] = (\S+) ", line)
    assert found is not None
    assert float(found.group(1)) == pytest.approx(value, rel=1e-5)
    assert float(found.group(2)) == pytest.approx(slope, rel=1e-5)
    assert "dL/dW[0, 0]" in result.stdout and "with X = [8, 2] tensor, Y = [8, 1] tensor" in result.stdout


def test_an_entry_as_svg(run, samples, tmp_path) -> None:
    out = tmp_path / "w.svg"
    result = run(str(samples / "moons_mlp.ad"), "--range", "W3[0, 4]=-1:1", "-o", str(out), "--order", "2",
                 "--points", "101")
    assert result.exit_code == 0, result.output
    ids = {g.get("id") for g in ET.parse(out).getroot().iter("{http://www.w3.org/2000/svg}g")}
    assert {"curve-f", "curve-df", "curve-d2f"} <= ids


def test_a_number_input_of_a_tensor_program(run, samples) -> None:
    result = run(str(samples / "moons_mlp.ad"), "--range", "y=-2:2", "--format", "text", "--points", "41")
    assert result.exit_code == 0, result.output
    assert "\nloss\n" in result.stdout and "\ndloss/dy\n" in result.stdout


def test_a_value_given_for_a_varied_number_is_said_unused(run) -> None:
    result = run("-e", "x = [1, 2]\nL = sum(x * a)", "--set", "a=3", "--range", "a=0:1", "--format", "text")
    assert result.exit_code == 0, result.output
    assert "the value given for a is not used" in result.stderr


def test_gaps_of_a_tensor_program_are_reported(run) -> None:
    result = run("-e", "x = [1, 2]\nL = sum(log(x * a))", "--range", "a=-1:1", "--format", "text", "--points", "21")
    assert result.exit_code == 0, result.output
    assert "L is undefined at a from -1 to 0 (11 of 21 points): log is undefined at entry [0]" in result.stderr


@pytest.mark.parametrize("span, message, hint", [
    ("W[2, 0]=0:1", "error: --range W[2, 0]: index 2 is out of range for axis 0 of W, of size 2",
     "hint: indices of axis 0 run from 0 to 1"),
    ("W[0]=0:1", "error: --range W[0]: W has 2 axes (shape [2, 1]), and W[0] gives 1 index",
     "hint: name one entry with 2 indices, e.g. W[0, 0]"),
    ("W=0:1", "error: --range W: W is a tensor of shape [2, 1]; a plot varies one number",
     "hint: vary one entry, e.g. --range W[0, 0]=-1:1"),
], ids=["out-of-range", "arity", "whole"])
def test_a_bad_entry_is_located_with_a_hint(run, samples, span, message, hint) -> None:
    program = samples / "regression_matrix.ad"
    result = run(str(program), "--range", span, "--format", "text")
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith(f"{program}:23:1: {message}")  # W = [[1], [-1]] is on line 23
    assert hint in result.stderr and "Traceback" not in result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize("args, message", [
    (["--range", "W[a]=0:1"], "expected NAME=LOW:HIGH or NAME[i, j]=LOW:HIGH"),
    (["--range", "W[-1, 0]=0:1"], "expected NAME=LOW:HIGH or NAME[i, j]=LOW:HIGH"),
    (["--range", "W[0, 0]=0:1", "--tangent-at", "W[1, 0]=0.5"],
     "the tangent point names W[1, 0], but --range varies W[0, 0]"),
], ids=["letter", "negative", "tangent-elsewhere"])
def test_a_malformed_entry_is_a_usage_error(run, samples, args, message) -> None:
    result = run(str(samples / "regression_matrix.ad"), *args, "--format", "text")
    assert result.exit_code == 2, result.output
    assert message in result.stderr


def test_a_tensor_output_is_refused_with_the_way_out(run) -> None:
    result = run("-e", "x = [1, 2]\ny = x * a", "--range", "a=0:1", "--format", "text")
    assert result.exit_code == 1
    assert "y is a tensor of shape [2]; a plot draws a number along --range a" in result.stderr
    assert "plot sum(y)" in result.stderr
