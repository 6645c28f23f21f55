"""`autodiff explain`: sources and inputs as for eval, formats, the step cap, errors and exit codes."""

import click
import pytest

from autodiff_cli.cli import main

KARPATHY = "L = (a*b + c)*f"
KARPATHY_SETS = ["--set", "a=2", "--set", "b=-3", "--set", "c=10", "--set", "f=-2"]


@pytest.fixture
def cli() -> click.Group:
    return main


def run(runner, cli, *args, input=None):
    return runner.invoke(cli, ["explain", *args], input=input, catch_exceptions=False)


def test_sample_file_piped_is_plain(runner, cli, samples) -> None:
    result = run(runner, cli, str(samples / "karpathy.ad"))
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    assert lines[0] == "L = -8"
    # The example step, with the rule of + on the right.
    assert "  dL/dc = ∂d/∂c * dL/dd = 1 * -2 = -2   [∂d/∂c = 1]" in lines
    assert lines[-1] == "gradients: dL/da = 6, dL/db = -4, dL/dc = -2, dL/df = 4"
    assert "\x1b[" not in result.stdout and "┃" not in result.stdout


def test_expression_with_set_and_temporaries(runner, cli) -> None:
    # L = (a*b + c)*f without names: a*b is t1, t1 + c is t2.
    result = run(runner, cli, KARPATHY, *KARPATHY_SETS, "--format", "plain")
    assert result.exit_code == 0
    assert "  t1 = a * b  = -6\n" in result.stdout
    # The = signs line up under the longest target, dL/dt1.
    assert "  dL/dc  = ∂t2/∂c * dL/dt2 = 1 * -2 = -2" in result.stdout


def test_values_file_and_stdin(runner, cli, tmp_path) -> None:
    values = tmp_path / "v.json"
    values.write_text('{"x": 3}')
    result = run(runner, cli, "-", "--values", str(values), input="y = x*x\n")
    assert result.exit_code == 0
    # dy/dx = x + x = 6, shown as two contributions and their sum.
    assert "dy/dx =  3 + 3 = 6" in result.stdout


def test_markdown(runner, cli) -> None:
    result = run(runner, cli, "y = x*x", "--set", "x=3", "--format", "markdown")
    assert result.exit_code == 0
    assert result.stdout.startswith("**`y = 9`**\n")
    assert "| `dy/dx +=` | `∂y/∂x * dy/dy` | `∂y/∂x = x` | 3 | 1 | 3 | 6 |\n" in result.stdout


def test_rich_without_colour(runner, cli) -> None:
    result = run(runner, cli, KARPATHY, *KARPATHY_SETS, "--format", "rich", "--no-color")
    assert result.exit_code == 0
    assert "\x1b[" not in result.stdout
    assert "∂d/∂c * dL/dd" not in result.stdout  # unnamed: the + node is t2
    assert "∂t2/∂c * dL/dt2" in result.stdout


def test_rich_is_never_cut_to_eighty_columns(runner, cli) -> None:
    # A piped console is 80 columns; full-precision numbers make the table wider,
    # and a cropped number would be a wrong one.
    result = run(runner, cli, "y = x/3", "--set", "x=1", "--format", "rich", "--no-color")
    assert "0.3333333333333333" in result.stdout
    assert "…" not in result.stdout


def test_output_picks_another_variable(runner, cli, samples) -> None:
    result = run(runner, cli, str(samples / "karpathy.ad"), "--output", "d")
    assert result.exit_code == 0
    # d = e + c with e = a*b: dd/da = b = -3.
    assert result.stdout.splitlines()[-1] == "gradients: dd/da = -3, dd/db = 2, dd/dc = 1, dd/df = 0"


def test_max_steps(runner, cli) -> None:
    result = run(runner, cli, "y = x*x + 3*x**2", "--set", "x=3", "--max-steps", "3")
    assert result.exit_code == 0
    assert "... 5 more steps not shown (--max-steps 3; use --max-steps 0 to show all)" in result.stdout
    assert result.stdout.endswith("gradients: dy/dx = 24\n")


def test_precision(runner, cli) -> None:
    result = run(runner, cli, "y = x/3", "--set", "x=1", "--precision", "3")
    assert result.stdout.startswith("y = 0.333\n")


def test_unused_set_is_a_warning(runner, cli) -> None:
    result = run(runner, cli, "y = 2*x", "--set", "x=1", "--set", "zz=5")
    assert result.exit_code == 0
    assert result.stderr == "warning: 'zz' is not used by the program; its value is ignored\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["y = (a*b + c"], "<expr>:1:13: error: unexpected end of input"),
        (["y = log(x)", "--set", "x=-1"], "<expr>:1:5: error: log of -1 is undefined"),
        (["y = a*b", "--set", "a=1"], "<expr>:1:7: error: no value for input b"),
        (["y = 2*x", "--set", "x=1", "--output", "q"], "<expr>: error: --output 'q' is not a variable"),
        (["missing_file.ad"], "error: no such file: missing_file.ad"),
    ],
    ids=["syntax", "domain", "missing_input", "unknown_output", "missing_file"],
)
def test_errors_exit_1_with_a_located_message(runner, cli, args, message) -> None:
    result = run(runner, cli, *args)
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.startswith(message)
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    "args",
    [["y = x", "--format", "html"], ["y = x", "--max-steps", "-1"], ["y = x", "--set", "x"],
     ["y = x", "--precision", "0"], ["y = x", "--bogus"]],
    ids=["format", "max_steps", "set", "precision", "unknown_option"],
)
def test_usage_errors_exit_2(runner, cli, args) -> None:
    result = run(runner, cli, *args)
    assert result.exit_code == 2
    assert "Usage:" in result.stderr


def test_help_has_examples_and_exit_codes(runner, cli) -> None:
    for flag in ("-h", "--help"):
        result = run(runner, cli, flag)
        assert result.exit_code == 0
        assert "Show the backward pass as chain-rule steps" in result.stdout
        assert "autodiff explain samples/neuron.ad --format markdown" in result.stdout
        assert "Exit status:" in result.stdout


def test_help_shows_the_default_step_cap_that_applies(runner, cli) -> None:
    from autodiff_cli.analysis.steps import DEFAULT_MAX_STEPS

    assert f"[default: {DEFAULT_MAX_STEPS}" in run(runner, cli, "--help").stdout
    program = "y = x" + " + x" * DEFAULT_MAX_STEPS
    result = run(runner, cli, program, "--set", "x=1", "--format", "plain")
    assert "more steps not shown (--max-steps 500;" in result.stdout
