"""`autodiff diff` of a tensor program: its formats, the program fed back into eval and diff,
--order 2, and the errors.  Expected numbers are the post's formulas computed with NumPy."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from autodiff_cli.cli import main
from autodiff_cli.execute.interpreter import input_arrays, run_forward
from autodiff_cli.language.compiler import parse

REPO = Path(__file__).resolve().parents[2]
REGRESSION = REPO / "samples" / "regression_matrix.ad"


def run(runner, *args, input=None):  # type: ignore[no-untyped-def]
    return runner.invoke(main, list(args), input=input, catch_exceptions=False)


def shell(command: str) -> subprocess.CompletedProcess[str]:
    command = command.replace("autodiff ", f"{sys.executable} -m autodiff_cli ")
    return subprocess.run(command, shell=True, cwd=REPO, capture_output=True, text=True, check=False)


def regression_data() -> tuple[Any, Any]:
    program = parse(REGRESSION.read_text())
    return (np.array(program.variables["X"].default.nested()), np.array(program.variables["Y"].default.nested()))


def posts_gradient(w: Any) -> Any:
    """The post's dL/dW = (2/N) X^T (X W - Y)."""
    x, y = regression_data()
    return 2 / len(x) * x.T @ (x @ w - y)


def test_text_is_the_matrix_chain_rule_with_shapes(runner) -> None:
    result = run(runner, "diff", str(REGRESSION), "--wrt", "W", "--format", "text")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == (
        "# inputs: X [8, 2], Y [8, 1], W [2, 1]\n"
        "P = X @ W                     # [8, 1]\n"
        "t1 = P - Y                    # [8, 1]\n"
        "dL_dP = 0.125 * (2 * t1)      # [8, 1]\n"
        "dL_dW = transpose(X) @ dL_dP  # [2, 1]\n"
        "L = mean(t1**2)               # []\n"
        "# gradients: W -> dL_dW\n"
    )


SAMPLE_W = np.array([[1.0], [-1.0]])  # W's start in the sample, the line y = x - 1


@pytest.mark.parametrize("w", [None, [[2.5], [-1.25]]])
def test_program_feeds_eval(w: Any) -> None:
    given = "" if w is None else f" --set W='{json.dumps(w)}'"
    result = shell(f"autodiff diff samples/regression_matrix.ad --wrt W | autodiff eval -{given} --format json")
    assert result.returncode == 0, result.stderr
    values = json.loads(result.stdout)["values"]
    want = posts_gradient(SAMPLE_W if w is None else np.array(w))
    np.testing.assert_allclose(values["dL_dW"], want, rtol=1e-12, atol=1e-12)


def test_program_feeds_diff_itself() -> None:
    """The derivative program's own gradient of L is the same gradient again."""
    result = shell("autodiff diff samples/regression_matrix.ad --wrt W | autodiff diff - --wrt W "
                   "| autodiff eval - --format json")
    assert result.returncode == 0, result.stderr
    values = json.loads(result.stdout)["values"]
    np.testing.assert_allclose(values["dL_dW_2"], posts_gradient(SAMPLE_W), rtol=1e-12, atol=1e-12)


def test_hessian_vector_product_of_the_regression(runner) -> None:
    # L is quadratic in W: H = (2/N) X^T X, and v is ones by default
    result = shell("autodiff diff samples/regression_matrix.ad --wrt W --order 2 "
                   "| autodiff eval - --set v_W='[[1], [-2]]' --format json")
    assert result.returncode == 0, result.stderr
    x, _ = regression_data()
    np.testing.assert_allclose(json.loads(result.stdout)["values"]["Hv_W"], 2 / 8 * x.T @ x @ [[1], [-2]],
                               rtol=1e-12, atol=1e-12)


def test_latex_is_matrix_notation(runner) -> None:
    result = run(runner, "diff", str(REGRESSION), "--wrt", "W", "--format", "latex")
    assert result.exit_code == 0, result.stderr
    assert r"\frac{\partial L}{\partial W} &= X^\top \frac{\partial L}{\partial P}" in result.stdout
    assert result.stdout.startswith("\\begin{aligned}\n") and result.stdout.endswith("\\end{aligned}\n")
    mlp = run(runner, "diff", str(REPO / "samples" / "moons_mlp.ad"), "--wrt", "W1", "--format", "latex")
    assert r"\odot" in mlp.stdout


def test_python_returns_the_gradients(runner) -> None:
    result = run(runner, "diff", str(REGRESSION), "--wrt", "W", "--format", "python")
    assert result.exit_code == 0, result.stderr
    namespace: dict[str, Any] = {}
    exec(compile(result.stdout, "gradient.py", "exec"), namespace)  # noqa: S102 - the output under test
    w = np.array([[0.5], [3.0]])
    np.testing.assert_allclose(namespace["derivatives"](W=w)["W"], posts_gradient(w), rtol=1e-12, atol=1e-12)


def test_json_names_each_gradient_and_its_shape(runner) -> None:
    result = run(runner, "diff", str(REGRESSION), "--wrt", "W", "--format", "json")
    document = json.loads(result.stdout)
    assert document["derivatives"] == {"W": "dL_dW"}
    assert {"name": "dL_dW", "shape": [2, 1], "expression": "transpose(X) @ dL_dP"} in document["statements"]


def test_moons_mlp_program_gives_evals_gradients() -> None:
    # eval's reverse mode on the original program against eval of the derivative program
    want = shell("autodiff eval samples/moons_mlp.ad --set x='[0.5, -0.25]' --format json")
    got = shell("autodiff diff samples/moons_mlp.ad --wrt W1,b3 | autodiff eval - --set x='[0.5, -0.25]' "
                "--format json")
    assert got.returncode == 0, got.stderr
    grads, values = json.loads(want.stdout)["grads"], json.loads(got.stdout)["values"]
    np.testing.assert_allclose(values["dloss_dW1"], grads["W1"], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(values["dloss_db3"], grads["b3"], rtol=1e-12, atol=1e-15)


def test_order_above_two_is_a_usage_error(runner) -> None:
    result = run(runner, "diff", str(REGRESSION), "--order", "3")
    assert result.exit_code == 2
    assert "--order 3 on a tensor program" in result.stderr


def test_matrix_output_says_what_to_differentiate(runner) -> None:
    result = run(runner, "diff", "-e", "W = [[1, 2], [3, 4]]\nM = W * 2")
    assert result.exit_code != 0
    assert "<expr>:2:1: error: 'M' has shape [2, 2]; diff writes the gradient of a number" in result.stderr
    assert "M[0, 0]" in result.stderr


def test_a_form_the_language_cannot_write_is_refused_at_its_op(runner) -> None:
    # an inner axis of three (now written with reshape); cross_entropy of 3-axis logits is still refused
    result = run(runner, "diff", "-e", "A = [[[1, 2], [3, 4]], [[5, 6], [7, 8]]]\nL = sum(sum(A, 1)**2)")
    assert result.exit_code == 0 and "dL_dA = " in result.stdout
    result = run(runner, "diff", "-e", "Z = [[[1, 2], [3, 4]]]\nL = cross_entropy(Z, [[0, 1]])")
    assert result.exit_code != 0
    assert "<expr>:2:5: error: diff cannot write the adjoint of cross_entropy of logits of 3 axes" in result.stderr
    assert "Traceback" not in result.stderr


def test_an_inner_axis_and_an_index_of_a_three_axis_tensor_are_written(runner) -> None:
    """Formerly refused (issue 33): the adjoints are written with scatter, and run again give
    2 * sum(A, 1) spread along axis 1, plus 1 at the entries A[1, :, 0] took."""
    text = "A = [[[1, 2], [3, 4]], [[5, 6], [7, 8]]]\nL = sum(sum(A, 1)**2) + sum(A[1, :, 0])"
    result = run(runner, "diff", "-e", text, "--format", "program")
    assert result.exit_code == 0, result.stderr
    a = np.arange(1.0, 9.0).reshape(2, 2, 2)
    want = np.broadcast_to(2 * a.sum(1, keepdims=True), a.shape).copy()
    want[1, :, 0] += 1
    written = parse(result.stdout)
    run_ = run_forward(written, input_arrays(written, {}, 0))
    np.testing.assert_array_equal(run_.value("dL_dA"), want)


def test_an_input_the_output_does_not_use_gets_zeros_and_a_warning(runner) -> None:
    result = run(runner, "diff", "-e", "W = [1, 2]\nU = [3, 4]\nL = sum(W**2)", "--wrt", "W,U",
                 "--format", "program")
    assert "'L' does not depend on 'U'" in result.stderr
    assert "dL_dU = 0 * U\n" in result.stdout


@pytest.mark.parametrize(("program", "column", "names"), [
    ("L = sum(X @ W)", 11, "X and W have"),       # @
    ("L = sum(x[0])", 10, "x has"),               # indexing
    ("L = sum(2 * x)", 5, "x has"),               # a reduction, through an elementwise op
    ("L = sum(x, 0)", 5, "x has"),                # a reduction along an axis
    ("L = sum(softmax(x + 1))", 9, "x has"),      # an op along an axis
    ("L = mean(transpose(x))", 10, "x has"),
])
def test_an_input_used_as_a_tensor_without_a_shape_is_refused_where_it_is_used(runner, program, column,
                                                                                  names) -> None:
    # Before, such an input was taken for a number: sum(2 * x) gave dL_dx = 2, and the others an
    # error about scalars ("drop the [...]") with exit 1.
    result = run(runner, "diff", "-e", program)
    assert result.exit_code == 2, result.stderr
    assert result.stderr.startswith(f"<expr>:1:{column}: error: {names} neither a value nor a shape")
    assert "--shapes" in result.stderr and "--set" in result.stderr and "Traceback" not in result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize("program", ["v = [a, b]\nL = sum(v**2)", "L = a * b + where(a < b, a, b)",
                                     "W = [1, 2]\nL = sum(W * b)"])  # W gives W * b its shape
def test_inputs_used_as_numbers_without_a_value_are_numbers(runner, program) -> None:
    result = run(runner, "diff", "-e", program, "--format", "program")
    assert result.exit_code == 0, result.stderr


def test_an_empty_shape_says_an_input_is_a_number(runner) -> None:
    result = run(runner, "diff", "-e", "L = sum(2 * x)", "--shapes", "x=", "--format", "text")
    assert result.exit_code == 0, result.stderr
    assert "dL_dx = 2" in result.stdout  # d sum(2x) / dx for a number x, by hand


def test_a_variable_after_the_output_keeps_the_output_in_place(runner) -> None:
    # M is computed from L: the output cannot move after it
    result = run(runner, "diff", "-e", "W = [1, 2]; L = sum(W**2); M = L*2", "--output", "L", "--wrt", "W,M",
                 "--format", "program")
    assert result.stdout == "W = [1, 2]\nL = sum(W**2)\nM = L * 2\ndL_dW = 2 * W\ndL_dM = 0 * M\n"


def test_program_feeds_graph(tmp_path: Path) -> None:
    """graph draws the gradient program (a matrix output is drawn without gradients)."""
    picture = tmp_path / "dL_dW.svg"
    result = shell(f"autodiff diff samples/regression_matrix.ad --wrt W "
                   f"| autodiff graph - --output dL_dW --no-grad -o {picture}")
    assert result.returncode == 0, result.stderr
    svg = picture.read_text()
    assert svg.startswith(("<?xml", "<svg"))
    assert "dL_dP" in svg and "transpose" in svg


def test_initializers_are_drawn_as_eval_draws_them(runner) -> None:
    """A: drawn first though L does not use it, so B takes the same (second) draw in both."""
    text = "A = normal([2], 1)\nB = normal([2], 1)\nL = sum(B**3)\n"
    program = run(runner, "diff", "-e", text, "--wrt", "B", "--format", "program").stdout
    assert program.startswith("A = normal([2], 1)\nB = normal([2], 1)\n")
    b = np.random.default_rng(0).normal(0.0, 1.0, (2, 2))[1]  # eval's seed 0, the second draw
    values = json.loads(run(runner, "eval", "-e", program, "--format", "json").stdout)["values"]
    np.testing.assert_allclose(values["dL_dB"], 3 * b**2, rtol=1e-12)


# --- shapes from --set, --values and --shapes (issue 36) -----------------------------------------

UNSIZED = "P = X @ W\nL = mean((P - Y)**2)\n"
X3 = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
W2 = [[1.0], [2.0]]
Y3 = [[1.0], [1.0], [2.0]]


def _least_squares_gradient() -> np.ndarray:
    X, W, Y = np.array(X3), np.array(W2), np.array(Y3)
    return 2 / len(X) * X.T @ (X @ W - Y)  # d mean((XW - Y)^2) / dW, by hand


def _gradient_of_written_program(runner, program_text: str) -> np.ndarray:
    result = runner.invoke(main, ["eval", "-", "--format", "json"], input=program_text)
    assert result.exit_code == 0, result.stderr
    return np.array(json.loads(result.stdout)["values"]["dL_dW"])


def test_diff_takes_shapes_and_values_from_set(runner) -> None:
    result = runner.invoke(main, ["diff", UNSIZED, "--wrt", "W", "--format", "program",
                                  "--set", f"X={X3}", "--set", f"W={W2}", "--set", f"Y={Y3}"])
    assert result.exit_code == 0, result.stderr
    assert "X = [[1, 2], [3, 4], [5, 6]]" in result.stdout  # the given values are the written defaults
    np.testing.assert_allclose(_gradient_of_written_program(runner, result.stdout), _least_squares_gradient())


def test_diff_takes_shapes_and_values_from_a_values_file(runner, tmp_path) -> None:
    values = tmp_path / "values.json"
    values.write_text(json.dumps({"X": X3, "W": W2, "Y": Y3}))
    result = runner.invoke(main, ["diff", UNSIZED, "--wrt", "W", "--values", str(values), "--format", "program"])
    assert result.exit_code == 0, result.stderr
    np.testing.assert_allclose(_gradient_of_written_program(runner, result.stdout), _least_squares_gradient())


def test_diff_takes_shapes_alone_from_shapes(runner) -> None:
    result = runner.invoke(main, ["diff", UNSIZED, "--wrt", "W", "--format", "text",
                                  "--shapes", "X=8,2", "--shapes", "W=[2, 1]", "--shapes", "Y=8,1"])
    assert result.exit_code == 0, result.stderr
    assert "dL_dW = transpose(X) @ dL_dP" in result.stdout
    assert "0.125 * (2 * t1)" in result.stdout  # the mean over 8 rows: 1/8
    program = runner.invoke(main, ["diff", UNSIZED, "--wrt", "W", "--format", "program",
                                   "--shapes", "X=3,2", "--shapes", "W=2,1", "--shapes", "Y=3,1"]).stdout
    given = runner.invoke(main, ["eval", "-", "--format", "json", "--set", f"X={X3}",
                                 "--set", f"W={W2}", "--set", f"Y={Y3}"], input=program)
    assert given.exit_code == 0, given.stderr
    np.testing.assert_allclose(json.loads(given.stdout)["values"]["dL_dW"], _least_squares_gradient())


def test_a_shape_unlike_the_default_drops_the_default(runner) -> None:
    result = runner.invoke(main, ["diff", "W = [[1], [2]]\nL = sum(W**2)", "--shapes", "W=3,1", "--format", "program"])
    assert result.exit_code == 0, result.stderr
    assert "W = [[1], [2]]" not in result.stdout


@pytest.mark.parametrize(("shapes", "code", "said"), [
    (["--shapes", "X=8;2"], 2, "is not NAME=SHAPE"),
    (["--shapes", "X"], 2, "is not NAME=SHAPE"),
    (["--shapes", "Z=2,2"], 1, "--shapes names 'Z', which is not an input of the program"),
    (["--shapes", "P=2,2"], 1, "--shapes names 'P', which is not an input of the program"),
])
def test_a_bad_shape_is_a_message(runner, shapes: list[str], code: int, said: str) -> None:
    result = runner.invoke(main, ["diff", UNSIZED, *shapes])
    assert result.exit_code == code and said in result.stderr and "Traceback" not in result.stderr


def test_without_shapes_the_error_says_how_to_give_them(runner) -> None:
    result = runner.invoke(main, ["diff", UNSIZED])
    assert result.exit_code == 2
    assert "--shapes X=" in result.stderr and "--set" in result.stderr


def test_two_different_shapes_for_one_input_are_a_usage_error(runner) -> None:
    # Before, the last --shapes won without a word: W=3,1 after W=2,1 then failed at X @ W.
    result = runner.invoke(main, ["diff", UNSIZED, "--shapes", "W=2,1", "--shapes", "W=3,1"])
    assert result.exit_code == 2, result.stderr
    assert "--shapes gives W two shapes, [2, 1] and [3, 1]" in result.stderr
    assert "Traceback" not in result.stderr


def test_the_same_shape_twice_is_fine(runner) -> None:
    result = runner.invoke(main, ["diff", "L = sum(W**2)", "--shapes", "W=2,1", "--shapes", "W=[2, 1]",
                                  "--format", "program"])
    assert result.exit_code == 0, result.stderr


@pytest.mark.parametrize("given", [["--set", "W=[[1], [2]]"], ["--values", "-"]])
def test_a_value_given_unlike_its_shape_is_a_usage_error(runner, given) -> None:
    # The value [2, 1] was dropped for the shape [3, 1] without a word, and the error then named X @ W.
    result = runner.invoke(main, ["diff", "L = sum(W**2)", "--shapes", "W=3,1", *given],
                           input='{"W": [[1], [2]]}')
    assert result.exit_code == 2, result.stderr
    assert "the value given for W has shape [2, 1], and --shapes says [3, 1]" in result.stderr
    assert "Traceback" not in result.stderr
