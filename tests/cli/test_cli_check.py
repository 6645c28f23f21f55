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
    # y = 2*x: the difference is exact (see tests/analysis/test_check.py); its error bar is the
    # rounding floor 3 * eps * (|2*x| + |y|) / h at the second step h = H/2: 8.8e-10.
    assert f"{3 * sys.float_info.epsilon * 4 / (H / 2):.2g}" == "8.8e-10"
    result = run(runner, cli, "y = 2*x", "--set", "x=1")
    assert result.stdout == (
        "input  value  reverse  forward  finite diff     fd ±  abs err  rel err  result\n"
        "x        1.0      2.0      2.0          2.0  8.8e-10        0        0  ok\n"
        "dy/d input, 1 input: all agree (rtol 0.001, atol 1e-05)\n"
    )


def test_relu_at_zero_fails_saying_why(runner, cli) -> None:
    result = run(runner, cli, "y = relu(x)", "--set", "x=0")
    assert result.exit_code == 1
    # The table still goes to stdout; the verdict and the reason to stderr.
    # relu(+-h) = h, 0 at every step: the difference is exactly 0.5, with no error (fd ± 0).
    assert "x        0.0      0.0      0.0          0.5     0      0.5        1  FAIL\n" in result.stdout
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
    # y = x**3 at 1: one Richardson step makes the difference exact up to rounding (~2e-13 at the
    # larger first step a strict tolerance asks for); a tolerance of 0 leaves no room for rounding.
    [(["--rtol", "1e-9", "--atol", "0"], 0), (["--rtol", "1e-13", "--atol", "0"], 0), ([], 0),
     (["--rtol", "0", "--atol", "0"], 3)],
    ids=["loose", "strict", "defaults", "zero"],
)
def test_tolerances(runner, cli, tolerances, exit_code) -> None:
    result = run(runner, cli, "y = x**3", "--set", "x=1", *tolerances)
    assert result.exit_code == exit_code


def test_domain_edge_is_inconclusive(runner, cli) -> None:
    result = run(runner, cli, "y = (x-1)**1.5 + (1-x)**1.5", "--set", "x=1")
    assert result.exit_code == 3
    assert result.stderr.startswith(
        "check inconclusive: x: cannot take the finite difference: the program fails at x = ")
    assert "non-integer power" in result.stderr and "Traceback" not in result.stderr
    assert result.stdout.splitlines()[-1] == "dy/d input, 1 input: 1 of 1 inconclusive (rtol 0.001, atol 1e-05)"


@pytest.mark.parametrize(
    ("program", "x", "exit_code"),
    [("y = sin(x)", "1e6", 0), ("y = cos(x)", "1e6", 0), ("y = tanh(x - 1000000)", "1e6", 0),
     ("y = tanh(1e12*x)", "0", 3), ("y = relu(x)", "0", 1)],
    ids=["sin_1e6", "cos_1e6", "tanh_shifted", "unresolvable", "kink"],
)
def test_large_inputs_unresolvable_steps_and_kinks(runner, cli, program, x, exit_code) -> None:
    result = run(runner, cli, program, "--set", f"x={x}")
    assert result.exit_code == exit_code, result.stderr
    if exit_code == 0:
        assert result.stderr == ""
    elif exit_code == 3:
        assert result.stderr.startswith("check inconclusive: x: the finite difference ")
        assert "neither confirmed nor refuted" in result.stderr and "kink" not in result.stderr


def test_failures_and_inconclusive_inputs_together_exit_1(runner, cli) -> None:
    result = run(runner, cli, "y = relu(a) + tanh(1e12*b)", "--set", "a=0", "--set", "b=0")
    assert result.exit_code == 1
    assert [line.split(":")[0] for line in result.stderr.splitlines()] == ["check failed", "check inconclusive"]
    assert result.stdout.splitlines()[-1].endswith("1 of 2 disagree, 1 of 2 inconclusive (rtol 0.001, atol 1e-05)")


def test_json_has_the_verdicts_and_error_bars(runner, cli) -> None:
    result = run(runner, cli, "y = relu(a) + tanh(1e12*b) + 2*c", "--set", "a=0", "--set", "b=0", "--set", "c=1",
                 "--format", "json")
    document = json.loads(result.stdout)
    assert (document["ok"], document["verdict"]) == (False, "fail")
    assert [(i["name"], i["verdict"], i["ok"]) for i in document["inputs"]] == [
        ("a", "fail", False), ("b", "inconclusive", False), ("c", "ok", True)]
    a = document["inputs"][0]  # relu: 0.5 at every step, up to the other terms' rounding
    assert abs(a["finite_difference"] - 0.5) <= a["fd_error"] < 1e-4
    assert isinstance(a["fd_error"], float) and isinstance(document["inputs"][2]["fd_error"], float)
    # tanh(1e12*b) varies on a scale of 1e-12, below every step: the difference (about 3e5, where
    # the derivative is 1e12) has no error bar to give, rather than one that claims +-1.7e5
    assert document["inputs"][1]["fd_error"] == "Infinity"


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
    assert "0    every gradient agrees" in result.stdout


@pytest.mark.parametrize("columns", ["80", "200"])
def test_help_fits_80_columns_and_a_screen(runner, cli, columns) -> None:
    result = runner.invoke(cli, ["check", "--help"], env={"COLUMNS": columns})
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert max(map(len, lines)) <= 80, [line for line in lines if len(line) > 80]
    assert len(lines) <= 65
    assert "docs/check.md" in result.stdout  # where the rest is


def test_a_direction_across_a_kink_says_so_and_does_not_blame_reverse_mode(runner, cli) -> None:
    # relu's kink is at x[0] = 0, and both random directions move x[0]: along them the one-sided
    # slopes differ by the direction's x[0] component times relu's jump, 1, so no derivative exists.
    result = run(runner, cli, "-e", "x = [0, 2, 3]; L = sum(relu(x) * [1, 1, 0]) + sum(x[1:]**2)")
    assert result.exit_code == 1
    directions = [line for line in result.stderr.splitlines() if line.startswith("check failed: direction")]
    assert len(directions) == 2
    for line in directions:
        assert "crosses a kink of the output at the given values" in line, line
        assert "is accurate" not in line
