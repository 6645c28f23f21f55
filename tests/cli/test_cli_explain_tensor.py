"""`autodiff explain` of a tensor program: the matrix form, --scalar --row, formats and errors.

The post's gradient is computed by hand in NumPy, 2/N X^T (X W - Y), and compared to the numbers
the command prints (round-trip text, so equal to the last bit or within rounding of a sum).
"""

import re

import numpy as np
import pytest

from autodiff_cli.cli import main


def run(runner, *args, input=None):
    return runner.invoke(main, ["explain", *args], input=input, catch_exceptions=False)


def numbers(text: str) -> list[float]:
    return [float(x) for x in re.findall(r"-?\d+\.\d+(?:e-?\d+)?", text)]


def spaced(text: str) -> str:
    """Runs of spaces as one: the columns' padding depends on the other lines."""
    return re.sub(r" +", " ", text)


def post_data(samples):
    from autodiff_cli.execute.interpreter import input_arrays
    from autodiff_cli.language import parse

    arrays = input_arrays(parse((samples / "regression_matrix.ad").read_text()), {})
    return arrays["X"], arrays["Y"]


def test_regression_in_matrix_form_with_the_posts_gradient(runner, samples) -> None:
    result = run(runner, str(samples / "regression_matrix.ad"), "--set", "W=[[2.5], [-1.25]]")
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    X, Y = post_data(samples)
    W = np.array([[2.5], [-1.25]])
    expected = 2 / 8 * X.T @ (X @ W - Y)
    line = next(line for line in result.stdout.splitlines() if line.startswith("  dL/dW "))
    assert "dL/dW = transpose(X) @ dL/dP [2, 8] @ [8, 1] -> [2, 1]" in spaced(line)
    np.testing.assert_allclose(numbers(line.split("= [[")[1]), expected.ravel(), rtol=1e-13)
    assert "  dL/dX  = dL/dP @ transpose(W)" in result.stdout
    assert "  P = X @ W      [8, 2] @ [2, 1] -> [8, 1]" in result.stdout
    assert result.stdout.splitlines()[0].startswith("L = ")


@pytest.mark.parametrize("sample", ["moons_mlp.ad", "regression_rows.ad"])
def test_the_posts_other_samples(runner, samples, sample) -> None:
    result = run(runner, str(samples / sample), "--precision", "4")
    assert result.exit_code == 0, result.output
    assert "backward pass (reverse order, in matrix form" in result.stdout
    assert "gradients:" in result.stdout


def test_moons_mlp_says_how_a_vector_enters_a_product(runner, samples) -> None:
    result = run(runner, str(samples / "moons_mlp.ad"), "--precision", "3")
    out = spaced(result.stdout)
    assert "dloss/dW1 += dloss/dt1 @ transpose(x) [16, 1] @ [1, 2] -> [16, 2]" in out
    assert "x [2] as a column [2, 1]" in out
    assert "dloss/dW1 = sum of its 2 contributions" in out


def test_bias_broadcast_is_explained(runner) -> None:
    program = "X = [[1, 2], [3, 4], [5, 6]]\nb = [0.5, -0.5]\nZ = X + b\nL = sum(Z * Z)"
    result = run(runner, "-e", program)
    assert result.exit_code == 0, result.output
    assert "b was added to every row of Z, so dL/db sums dL/dZ over the rows" in result.stdout
    # dL/dZ = 2Z; dL/db sums it over the three rows: 2 * (1.5 + 3.5 + 5.5, 1.5 + 3.5 + 5.5)
    line = next(line for line in result.stdout.splitlines() if line.startswith("  dL/db "))
    assert "sum(dL/dZ, 0)" in line and "[21.0, 21.0]" in line


def test_markdown_and_rich_formats(runner, samples) -> None:
    markdown = run(runner, str(samples / "regression_matrix.ad"), "--format", "markdown", "--precision", "4")
    assert markdown.exit_code == 0
    X, Y = post_data(samples)
    gradient = 2 / 8 * X.T @ (X @ np.array([[1.0], [-1.0]]) - Y)  # at the sample's start
    value = f"[[{gradient[0, 0]:.4g}], [{gradient[1, 0]:.4g}]]"
    assert f"| `dL/dW =` | `transpose(X) @ dL/dP` | `[2, 8] @ [8, 1] -> [2, 1]` | {value} |  |" in markdown.stdout
    rich = run(runner, str(samples / "regression_matrix.ad"), "--format", "rich", "--no-color", "--precision", "4")
    assert rich.exit_code == 0
    assert "┃ gradient" in rich.stdout and "transpose(X) @" in rich.stdout
    assert max(map(len, rich.stdout.splitlines())) <= 80  # piped, Rich has 80 columns: the tables fit them


def test_scalar_row_shows_each_statement_in_scalars(runner, samples) -> None:
    result = run(runner, str(samples / "regression_matrix.ad"), "--scalar", "--row", "3", "--precision", "6")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "statement P (row 3)" in out and "statement L (every entry)" in out
    X, Y = post_data(samples)
    W = np.array([[1.0], [-1.0]])  # the sample's start, the line y = x - 1
    # Row 3: P[3] = X[3] @ W, dL/dP[3] = 2/8 (P[3] - Y[3]), and W[0, 0]'s share is X[3, 0] times it.
    product = X[3, 0] * W[0, 0]
    p3 = product + X[3, 1] * W[1, 0]
    upstream = 2 / 8 * (p3 - Y[3, 0])
    share = X[3, 0] * upstream
    scalars = out.split("statement P")[1]
    # The products the row's scalars show are not 0 (as they were when W started at 0).
    assert re.search(rf"t1 = X\[3, 0\] \* W\[0, 0\] += {product:.6g}\n", scalars)
    assert re.search(rf"P\[3, 0\] = t1 \+ t2 += {p3:.6g}\n", scalars)
    assert f"= [{upstream:.6g}]" in out
    match = re.search(r"/dW\[0, 0\] = (-?[\d.e-]+)", scalars)
    assert match is not None and float(match.group(1)) == pytest.approx(share, rel=1e-5)


def test_row_without_scalar_is_a_usage_error(runner, samples) -> None:
    result = run(runner, str(samples / "regression_matrix.ad"), "--row", "1")
    assert result.exit_code == 2
    assert "--row chooses the row --scalar shows; add --scalar" in result.stderr


def test_scalar_on_a_scalar_program_is_a_usage_error(runner) -> None:
    result = run(runner, "-e", "y = x * 2", "--set", "x=1", "--scalar")
    assert result.exit_code == 2
    assert "already scalar" in result.stderr


def test_row_beyond_the_matrix_is_located(runner, samples) -> None:
    result = run(runner, str(samples / "regression_matrix.ad"), "--scalar", "--row", "8")
    assert result.exit_code == 1, result.output
    assert "--row 8: P has 8 rows (0 to 7)" in result.stderr
    assert "regression_matrix.ad:" in result.stderr and "choose a row from 0 to 7" in result.stderr


def test_vector_output_is_refused_with_the_way_out(runner) -> None:
    result = run(runner, "-e", "x = [1, 2]\ny = x * 2")
    assert result.exit_code == 1, result.output
    assert "<expr>:2:1: error: 'y' has shape [2], and a gradient is of a number" in result.stderr
    assert "sum(y)" in result.stderr
    assert "Traceback" not in result.output


def test_shape_error_is_located(runner) -> None:
    result = run(runner, "-e", "X = [[1, 2], [3, 4]]\nW = [[1, 2, 3]]\nL = sum(X @ W)")
    assert result.exit_code == 1, result.output  # as eval: the program is fine, these values' shapes are not
    assert "<expr>:3:11: error: X @ W: [2, 2] @ [1, 3]: the inner sizes 2 and 1 differ" in result.stderr


def test_one_row_of_a_statement_over_many_rows_is_written_in_scalars(runner) -> None:
    program = ("X = normal([300, 2], 1); W1 = normal([2, 16], 1); W2 = normal([16, 16], 1); "
               "H1 = relu(X @ W1); H2 = relu(H1 @ W2); L = mean(H2)")
    result = run(runner, "-e", program, "--scalar", "--row", "123")
    assert result.exit_code == 0, result.output + result.stderr
    assert "H1[123, 0]" in result.stdout and "H1[122, 0]" not in result.stdout


def test_a_statement_too_large_for_scalars_names_explains_way_out(runner) -> None:
    # one row of H2 is 400 sums of 400 products: 320,000 scalar operations
    program = "X = normal([2, 400], 1); W2 = normal([400, 400], 1); H2 = relu(X @ W2); L = mean(H2)"
    result = run(runner, "-e", program, "--scalar")
    assert result.exit_code == 1, result.output
    assert "--scalar: statement H2 is too large to write out in scalars" in result.stderr
    assert "explain fewer rows, or the matrix form alone (without --scalar)" in result.stderr
    assert "--max-nodes" not in result.stderr  # graph's option, not explain's


def test_a_row_of_a_program_without_rows_is_said_unused(runner, samples) -> None:
    result = run(runner, str(samples / "moons_mlp.ad"), "--scalar", "--row", "2", "--precision", "3")
    assert result.exit_code == 0, result.output
    assert "--row 2 is not used: no statement's value has rows" in result.stderr
    assert "statement h1 (every entry)" in result.stdout


@pytest.mark.parametrize("text, gradient", [
    ("x = [1, 2]; y = sum(x[0:0])", "dy/dx = [0.0, 0.0]"),
    ("x = [[1, 2], [3, 4]]; y = sum(x[:, 5:])", "dy/dx = [[0.0, 0.0], [0.0, 0.0]]"),
    ("x = [1, 2]; y = sum(x[0:0]) + x[0]", "dy/dx = [1.0, 0.0]"),
], ids=["empty", "empty-columns", "empty-plus-entry"])
def test_scalar_form_of_a_sum_over_an_empty_slice_is_zero(runner, text, gradient) -> None:
    # The one-row scalar view once summed no entries with an IndexError traceback.
    result = run(runner, "--scalar", "-e", text)
    assert result.exit_code == 0, result.output
    assert gradient in result.stdout


@pytest.mark.parametrize("command", ["explain", "check", "graph"])
def test_a_vector_output_is_refused_alike_and_located_by_every_command(runner, command) -> None:
    # explain, check and graph once said it three ways, two of them with no line and column.
    result = runner.invoke(main, [command, "-e", "x = [1, 2]\ny = logsumexp([[1, 2], [3, 4]])"])
    assert result.exit_code == 1, result.output
    assert "<expr>:2:1: error: 'y' has shape [2], and a gradient is of a number" in result.stderr


def test_a_row_of_a_program_with_a_keepdim_statistic_shows_the_one_row_it_reads(runner) -> None:
    # Batch norm's mean and variance over the rows have one row, which every row reads; --row 1 once
    # stopped at them ("m has 1 rows"), so such a program could be explained at row 0 only.
    result = run(runner, "--scalar", "--row", "1", "-e", "X = [[1, 2], [3, 4]]\nm = mean(X, 0, keepdim)\n"
                 "L = sum((X - m)**2)")
    assert result.exit_code == 0, result.output
    assert "statement m (row 0)" in result.stdout
