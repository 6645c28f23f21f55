"""`autodiff explain`: sources and inputs as for eval, formats, the step cap, errors and exit codes."""

import json
from pathlib import Path

import click
import pytest

from autodiff_cli.cli import main

SAMPLES = Path(__file__).resolve().parents[2] / "samples"

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


# --- explain --format json (issue 36) ------------------------------------------------------------

def _document(runner, args: list[str]) -> dict:
    result = runner.invoke(main, args)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_explain_json_holds_both_passes_and_eval_s_gradients(runner) -> None:
    args = ["L = (a*b + c)*f + a*a", "--set", "a=2", "--set", "b=-3", "--set", "c=10", "--set", "f=-2"]
    document = _document(runner, ["explain", *args, "--format", "json"])
    grads = _document(runner, ["eval", *args, "--format", "json"])["grads"]
    # by hand: dL/da = b*f + 2a = 10, dL/db = a*f = -4, dL/dc = f = -2, dL/df = a*b + c = 4
    assert document["gradients"] == {"a": 10.0, "b": -4.0, "c": -2.0, "f": 4.0}
    assert all(document["gradients"][name] == grads[name] for name in document["gradients"])
    assert document["form"] == "scalar" and document["value"] == -4.0
    assert [d["name"] for d in document["forward"]][-1] == "L"
    steps = [item for item in document["backward"] if item["kind"] == "step"]
    assert document["backward"][0] == {"kind": "seed", "output": "L"}
    for step in steps:
        assert step["product"] == step["local"] * step["upstream"]
    last = {}
    for step in steps:
        last[step["child"]] = step["total"]
    assert {name: last[name] for name in grads if name in last} == {name: grads[name] for name in last if name in grads}
    assert any(item["kind"] == "total" and item["name"] == "a" for item in document["backward"])  # used twice


def test_explain_json_of_a_tensor_program_is_the_matrix_form(runner) -> None:
    import numpy as np

    program = str(SAMPLES / "regression_matrix.ad")
    document = _document(runner, ["explain", program, "--format", "json"])
    assert document["form"] == "matrix"
    X = np.array(next(d for d in document["forward"] if d["name"] == "X")["value"])
    Y = np.array(next(d for d in document["forward"] if d["name"] == "Y")["value"])
    W = np.array([[1.0], [-1.0]])  # the sample's start, the line y = x - 1
    expected = 2 / len(X) * X.T @ (X @ W - Y)  # the sample's dL/dW = (2/N) X^T (P - Y)
    np.testing.assert_allclose(document["gradients"]["W"], expected, rtol=1e-12)
    eval_grads = _document(runner, ["eval", program, "--format", "json"])["grads"]
    for name, grad in document["gradients"].items():
        np.testing.assert_allclose(grad, eval_grads[name], rtol=1e-12, atol=1e-15)
    matmul = next(item for item in document["backward"] if item["kind"] == "step" and item["child"] == "W")
    assert matmul["formula"] == "transpose(X) @ dL/dP" and matmul["computation"] == "[2, 8] @ [8, 1] -> [2, 1]"
    np.testing.assert_allclose(matmul["total"], expected, rtol=1e-12)
    assert next(d for d in document["forward"] if d["name"] == "P")["shape"] == [8, 1]


def test_explain_json_rows_in_scalars_sum_to_the_matrix_gradient(runner) -> None:
    """--scalar --row r gives row r of P = X @ W in scalars; over the rows, W's scalar gradients
    add up to the matrix form's dL/dW."""
    import numpy as np

    program = str(SAMPLES / "regression_matrix.ad")
    total = np.zeros(2)
    for row in range(8):
        document = _document(runner, ["explain", program, "--format", "json", "--scalar", "--row", str(row)])
        layer = next(layer for layer in document["layers"] if layer["name"] == "P")
        assert layer["row"] == row and layer["scalar"]["form"] == "scalar"
        total += [layer["scalar"]["gradients"]["W[0, 0]"], layer["scalar"]["gradients"]["W[1, 0]"]]
    np.testing.assert_allclose(total, np.ravel(document["gradients"]["W"]), rtol=1e-12)
