"""`autodiff check`: exit 0 when every input agrees, 1 (with reasons on stderr) otherwise."""

import json
import sys

import click
import pytest

from autodiff_cli.cli import main

H = sys.float_info.epsilon ** (1 / 3)


@pytest.fixture
def cli() -> click.Group:
    return main


def run(runner, cli, *args, input=None):
    return runner.invoke(cli, ["check", *args], input=input, catch_exceptions=False)


@pytest.mark.parametrize(
    "sample", ["karpathy.ad", "neuron.ad", "neuron_exp.ad", "mlp.ad", "quadratic.ad", "softmax_xent.ad"],
    ids=lambda name: name.removesuffix(".ad"),
)
def test_every_sample_passes(runner, cli, samples, sample: str) -> None:
    result = run(runner, cli, str(samples / sample))
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    assert result.stdout.splitlines()[-1].endswith(": all agree (rtol 0.001, atol 1e-05)")


def test_plain_when_piped(runner, cli) -> None:
    # y = 2*x: both differences are exact (see tests/language/test_check.py).
    result = run(runner, cli, "y = 2*x", "--set", "x=1")
    assert result.stdout == (
        "input  value  reverse  forward  finite diff  abs err  rel err  result\n"
        "x        1.0      2.0      2.0          2.0        0        0  ok\n"
        "dy/d input, 1 input: all agree (rtol 0.001, atol 1e-05)\n"
    )


def test_relu_at_zero_fails_saying_why(runner, cli) -> None:
    result = run(runner, cli, "y = relu(x)", "--set", "x=0")
    assert result.exit_code == 1
    # The table still goes to stdout; the verdict and the reason to stderr.
    assert "x        0.0      0.0      0.0          0.5      0.5        1  FAIL\n" in result.stdout
    assert result.stderr.startswith(
        "check failed: x: reverse mode gives 0 but the central difference gives 0.5 ")
    assert "kink at or near x = 0" in result.stderr
    assert "Traceback" not in result.stderr


def test_only_the_disagreeing_input_is_named(runner, cli) -> None:
    result = run(runner, cli, "y = abs(a) + 3*b", "--set", "a=0", "--set", "b=1")
    assert result.exit_code == 1
    assert [line.split(":")[1].strip() for line in result.stderr.splitlines()] == ["a"]


def test_json(runner, cli) -> None:
    result = run(runner, cli, "y = relu(x) + 2*z", "--set", "x=0", "--set", "z=0", "--format", "json")
    assert result.exit_code == 1
    document = json.loads(result.stdout)
    assert document["ok"] is False
    assert [(i["name"], i["ok"], i["finite_difference"]) for i in document["inputs"]] == [
        ("x", False, 0.5), ("z", True, 2.0)]


def test_table_format_without_colour(runner, cli) -> None:
    result = run(runner, cli, "y = x/3", "--set", "x=1", "--format", "table", "--no-color")
    assert result.exit_code == 0
    assert "\x1b[" not in result.stdout
    assert "0.3333333333333333" in result.stdout  # dy/dx = 1/3, never cropped


@pytest.mark.parametrize(
    ("tolerances", "exit_code"),
    # y = x**3 at 1: the difference is off by h^2 ~ 3.7e-11 plus rounding (< 1e-10).
    [(["--rtol", "1e-9", "--atol", "0"], 0), (["--rtol", "1e-13", "--atol", "0"], 1), ([], 0)],
    ids=["loose", "strict", "defaults"],
)
def test_tolerances(runner, cli, tolerances, exit_code) -> None:
    result = run(runner, cli, "y = x**3", "--set", "x=1", *tolerances)
    assert result.exit_code == exit_code


def test_domain_edge_fails_cleanly(runner, cli) -> None:
    result = run(runner, cli, "y = (x-1)**1.5 + (1-x)**1.5", "--set", "x=1")
    assert result.exit_code == 1
    assert result.stderr.startswith("check failed: x: cannot take the finite difference: the program fails at x = ")
    assert "non-integer power" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["y = log(x)", "--set", "x=0"], "<expr>:1:5: error: log of 0 is undefined"),
        (["y = (x"], "<expr>:1:7: error: unexpected end of input"),
        (["y = x"], "<expr>:1:5: error: no value for input x"),
    ],
    ids=["domain_at_the_point", "syntax", "missing_input"],
)
def test_program_errors_exit_1(runner, cli, args, message) -> None:
    result = run(runner, cli, *args)
    assert result.exit_code == 1
    assert result.stderr.startswith(message)


@pytest.mark.parametrize(
    "args",
    [["--rtol", "-1"], ["--atol", "abc"], ["--rtol", "nan"], ["--format", "csv"]],
    ids=["negative_rtol", "atol_not_a_number", "nan_rtol", "format"],
)
def test_usage_errors_exit_2(runner, cli, args) -> None:
    result = run(runner, cli, "y = 2*x", "--set", "x=1", *args)
    assert result.exit_code == 2
    assert "Usage:" in result.stderr


def test_help(runner, cli) -> None:
    result = run(runner, cli, "-h")
    assert result.exit_code == 0
    assert "reverse mode, forward mode" in result.stdout
    assert 'autodiff check "y = relu(x)" --set x=0' in result.stdout
    assert "0    every input's gradient agrees" in result.stdout
