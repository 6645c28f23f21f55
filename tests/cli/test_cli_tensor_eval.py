"""Tensor programs through `eval` and `check` from the command line (and through graph, explain,
diff and plot, which have tests of their own, once each).

Expected numbers are computed here, independently of the tool: the minigrad post's
dL/dW = (2/N) Xᵀ(P − Y) with NumPy, Jacobians by hand and with HIPS autograd.  X and Y are read
from the sample's text with `ast.literal_eval`, not from any output of ours.
"""

from __future__ import annotations

import ast
import csv
import io
import json
import re
from pathlib import Path

import numpy as np
import pytest

from autodiff_cli.cli import main

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
MATRIX = SAMPLES / "regression_matrix.ad"
ROWS_PROGRAM = SAMPLES / "regression_rows.ad"
MOONS_MLP = SAMPLES / "moons_mlp.ad"
LOCATED = re.compile(r"^(?P<file>[^\s:]+):(?P<line>\d+):(?P<col>\d+): error: ", re.MULTILINE)


def run(runner, *args, input=None, env=None):
    return runner.invoke(main, [str(a) for a in args], input=input, env=env, catch_exceptions=False)


def literal(text: str, name: str):
    """The list literal assigned to `name` in a program's text, as Python lists."""
    found = re.search(rf"^{name} = (\[.*?\])\n(?=\S)", text, re.MULTILINE | re.DOTALL)
    assert found is not None, name
    return ast.literal_eval(found.group(1))


def matrix_sample() -> tuple[np.ndarray, np.ndarray]:
    text = MATRIX.read_text()
    return np.array(literal(text, "X"), dtype=float), np.array(literal(text, "Y"), dtype=float)


def post_gradient(X: np.ndarray, Y: np.ndarray, W: np.ndarray) -> tuple[float, np.ndarray]:
    """The minigrad post: L = mean((XW - Y)^2), dL/dW = (2/N) Xᵀ(P - Y)."""
    P = X @ W
    return float(np.mean((P - Y) ** 2)), 2.0 / len(X) * X.T @ (P - Y)


def document(result) -> dict:
    assert result.exit_code == 0, result.output + result.stderr
    return json.loads(result.stdout)


# --- eval: the minigrad post's gradient --------------------------------------------------------------


@pytest.mark.parametrize("W, sets", [
    ([[1.0], [-1.0]], []),  # the sample's start, the line y = x - 1
    ([[2.5], [-1.25]], ["--set", "W=[[2.5], [-1.25]]"]),
], ids=["W=start", "W=generating"])
def test_matrix_sample_gradient_is_the_posts_formula(runner, W, sets) -> None:
    X, Y = matrix_sample()
    assert X.shape == (8, 2) and Y.shape == (8, 1)
    loss, grad = post_gradient(X, Y, np.array(W))
    doc = document(run(runner, "eval", MATRIX, *sets, "--wrt", "W", "--format", "json"))
    assert doc["output"] == "L" and doc["shape"] == []
    assert doc["value"] == pytest.approx(loss, rel=1e-13)
    assert np.array(doc["values"]["W"]) == pytest.approx(np.array(W))
    assert np.shape(doc["grads"]["W"]) == (2, 1)  # nested lists, the shape of W
    np.testing.assert_allclose(np.array(doc["grads"]["W"]), grad, rtol=1e-12, atol=1e-14)
    assert doc["shapes"] == {"W": [2, 1], "L": []}
    assert doc["kinds"] == {"W": "input", "L": "output"}


def test_json_gives_every_variables_shape_kind_and_gradient(runner) -> None:
    X, Y = matrix_sample()
    W = np.array([[2.5], [-1.25]])
    doc = document(run(runner, "eval", MATRIX, "--set", "W=[[2.5], [-1.25]]", "--format", "json"))
    assert doc["shapes"] == {"X": [8, 2], "Y": [8, 1], "W": [2, 1], "P": [8, 1], "L": []}
    assert doc["kinds"] == {"X": "input", "Y": "input", "W": "input", "P": "intermediate", "L": "output"}
    P = X @ W
    np.testing.assert_allclose(np.array(doc["values"]["P"]), P, rtol=1e-14)
    g = 2.0 / len(X) * (P - Y)  # dL/dP
    grads = {name: np.array(value) for name, value in doc["grads"].items()}
    np.testing.assert_allclose(grads["P"], g, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(grads["X"], g @ W.T, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(grads["Y"], -g, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(grads["W"], X.T @ g, rtol=1e-12, atol=1e-15)
    assert doc["mode"] == "reverse"


def test_forward_mode_gives_the_same_numbers_as_reverse(runner) -> None:
    args = ["eval", MATRIX, "--set", "W=[[2.5], [-1.25]]", "--format", "json"]
    reverse, forward = document(run(runner, *args)), document(run(runner, *args, "--mode", "forward"))
    assert (reverse["mode"], forward["mode"]) == ("reverse", "forward")
    assert forward["value"] == reverse["value"]
    # forward mode differentiates the inputs only (eval --help), one pass per input; the
    # output's derivative with respect to itself is 1 without a pass
    assert set(forward["grads"]) == {"X", "Y", "W", "L"} and forward["grads"]["L"] == 1.0
    for name, grad in forward["grads"].items():
        assert forward["shapes"][name] == reverse["shapes"][name]
        np.testing.assert_allclose(np.array(grad), np.array(reverse["grads"][name]), rtol=1e-12, atol=1e-15)


def test_a_tensor_set_with_numbers_below_the_smallest_float_warns(runner) -> None:
    result = run(runner, "eval", "y = sum(x)", "--set", "x=[1e-400, 2, 3e-999]", "--format", "json")
    assert result.exit_code == 0
    assert "1e-400, 3e-999 are smaller than the smallest float" in result.stderr
    assert document(result)["values"]["x"] == [0.0, 2.0, 0.0]


def test_forward_mode_with_wrt_takes_one_pass_per_entry_of_those_inputs(runner) -> None:
    text = "y = W @ x"
    args = ["eval", text, "--set", "W=[[1, 2], [3, 4]]", "--set", "x=[1, 1]", "--mode", "forward"]
    doc = document(run(runner, *args, "--wrt", "x", "--format", "json"))
    assert doc["work"]["forward"]["passes"] == 2  # x has 2 entries; W's 4 are not differentiated
    assert doc["jacobian"]["inputs"] == ["x[0]", "x[1]"]  # W's entries are not differentiated
    assert doc["jacobian"]["rows"] == [[1.0, 2.0], [3.0, 4.0]]  # d(W x)/dx = W
    table = run(runner, *args, "--wrt", "x", "--format", "plain").stdout
    assert "[[1.0, 0.0], [0.0, 1.0]]" in table  # the output's own rows: the identity, not blank
    assert document(run(runner, *args, "--format", "json"))["work"]["forward"]["passes"] == 6


def test_forward_mode_reports_its_work_for_a_tensor_program(runner) -> None:
    result = run(runner, "eval", MATRIX, "--mode", "forward", "--format", "csv")
    assert "forward mode" in result.stderr
    doc = document(run(runner, "eval", MATRIX, "--mode", "forward", "--format", "json"))
    assert "work" in doc


# --- eval: the Jacobian of a vector output -----------------------------------------------------------


W3 = [[0.5, -1.0], [2.0, 0.25], [-0.75, 1.5]]
X2 = [0.8, -0.4]


def hand_jacobian_tanh(W: np.ndarray, x: np.ndarray) -> np.ndarray:
    """y = tanh(W x): dy_i/dW_kj = δ_ik (1 - y_i²) x_j, dy_i/dx_j = (1 - y_i²) W_ij."""
    d = 1.0 - np.tanh(W @ x) ** 2
    jac_w = np.zeros((3, 3, 2))
    for i in range(3):
        jac_w[i, i, :] = d[i] * x
    return np.concatenate([jac_w.reshape(3, 6), d[:, None] * W], axis=1)


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_vector_output_gives_its_jacobian_rows_outputs_columns_inputs(runner, mode) -> None:
    doc = document(run(runner, "eval", "h = W @ x\ny = tanh(h)", "--set", f"W={json.dumps(W3)}",
                       "--set", f"x={json.dumps(X2)}", "--format", "json", "--mode", mode))
    assert doc["output"] == "y" and doc["shape"] == [3]
    assert "grads" not in doc
    jac = doc["jacobian"]
    assert jac["outputs"] == ["y[0]", "y[1]", "y[2]"]
    assert jac["inputs"] == ["W[0, 0]", "W[0, 1]", "W[1, 0]", "W[1, 1]", "W[2, 0]", "W[2, 1]", "x[0]", "x[1]"]
    rows = np.array(jac["rows"])
    assert rows.shape == (3, 8)
    np.testing.assert_allclose(rows, hand_jacobian_tanh(np.array(W3), np.array(X2)), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(np.array(doc["value"]), np.tanh(np.array(W3) @ np.array(X2)), rtol=1e-14)


def test_softmax_jacobian_agrees_with_hips_autograd(runner) -> None:
    autograd = pytest.importorskip("autograd")
    anp = pytest.importorskip("autograd.numpy")

    def f(x):
        z = anp.dot(np.array(W3), x)
        e = anp.exp(z - anp.max(z))
        return e / anp.sum(e)

    x = np.array(X2)
    doc = document(run(runner, "eval", "y = softmax(W @ x)", "--set", f"W={json.dumps(W3)}",
                       "--set", f"x={json.dumps(X2)}", "--wrt", "x", "--format", "json"))
    assert doc["jacobian"]["inputs"] == ["x[0]", "x[1]"]
    np.testing.assert_allclose(np.array(doc["jacobian"]["rows"]), autograd.jacobian(f)(x),
                               rtol=1e-10, atol=1e-14)


def test_csv_long_form_has_one_line_per_entry(runner) -> None:
    X, Y = matrix_sample()
    W = np.array([[2.5], [-1.25]])
    result = run(runner, "eval", MATRIX, "--set", "W=[[2.5], [-1.25]]", "--format", "csv")
    assert result.exit_code == 0, result.stderr
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert list(rows[0]) == ["name", "kind", "op", "index", "value", "grad"]
    counts = {name: sum(r["name"] == name for r in rows) for name in ("X", "Y", "W", "P", "L")}
    assert counts == {"X": 16, "Y": 8, "W": 2, "P": 8, "L": 1}
    assert len(rows) == 35 and len(result.stdout.splitlines()) == 36
    by_entry = {(r["name"], r["index"]): r for r in rows}
    _, grad = post_gradient(X, Y, W)
    assert float(by_entry["W", "0 0"]["grad"]) == pytest.approx(grad[0, 0], rel=1e-12)
    assert float(by_entry["W", "1 0"]["grad"]) == pytest.approx(grad[1, 0], rel=1e-12)
    assert float(by_entry["X", "3 0"]["value"]) == X[3, 0]
    assert by_entry["L", ""]["kind"] == "output" and by_entry["P", "0 0"]["op"] == "@"


def test_csv_of_a_jacobian_has_a_column_per_output_entry(runner) -> None:
    result = run(runner, "eval", "y = W @ x", "--set", f"W={json.dumps(W3)}", "--set", f"x={json.dumps(X2)}",
                 "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert list(rows[0]) == ["name", "kind", "op", "index", "value", "d y[0]", "d y[1]", "d y[2]"]
    x_rows = {r["index"]: r for r in rows if r["name"] == "x"}
    for j in range(2):  # dy_i/dx_j = W_ij
        assert [float(x_rows[str(j)][f"d y[{i}]"]) for i in range(3)] == [W3[i][j] for i in range(3)]
    w12 = next(r for r in rows if r["name"] == "W" and r["index"] == "1 1")  # dy_i/dW_11 = δ_i1 x_1
    assert [float(w12[f"d y[{i}]"]) for i in range(3)] == [0.0, X2[1], 0.0]


def test_table_at_a_fixed_width_has_the_shape_column(runner) -> None:
    result = run(runner, "eval", MATRIX, "--set", "W=[[2.5], [-1.25]]", "--format", "table", "--no-color",
                 env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.stderr
    header = next(line for line in result.stdout.splitlines() if "name" in line and "shape" in line)
    cells = [cell.strip() for cell in re.split(r"[┃│|]", header) if cell.strip()]
    assert cells == ["name", "kind", "op", "shape", "value", "grad"]
    assert re.search(r"│ X\s+│ input\s+│\s+│ \[8, 2\]", result.stdout)
    assert re.search(r"│ W\s+│ input\s+│\s+│ \[2, 1\]", result.stdout)
    assert re.search(r"│ L\s+│ output\s+│ mean\s+│ \[\]", result.stdout)
    assert "[[2.5], [-1.25]]" in result.stdout  # a small tensor is shown whole
    assert "\x1b[" not in result.stdout


def test_table_at_80_columns_never_cuts_a_number(runner) -> None:
    result = run(runner, "eval", MATRIX, "--set", "W=[[2.5], [-1.25]]", "--format", "table", "--no-color",
                 env={"COLUMNS": "80"})
    assert result.exit_code == 0
    assert "…" not in result.stdout


# --- eval: errors --------------------------------------------------------------------------------------


def test_a_matrix_output_is_an_error_suggesting_sum_mean_or_an_index(runner) -> None:
    result = run(runner, "eval", "W = [[1, 2], [3, 4]]\nY = W * 2")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert "'Y' is a matrix ([2, 2])" in result.stderr
    hint = result.stderr.split("hint:")[1]
    assert "sum(Y)" in hint and "mean(Y)" in hint and re.search(r"Y\[0, 0\]", hint)
    assert "Traceback" not in result.stderr


def test_a_shape_mismatch_is_located_with_both_shapes(runner, tmp_path) -> None:
    program = tmp_path / "mismatch.ad"
    program.write_text("X = [[1, 2, 3], [4, 5, 6]]\nW = [[1], [2]]\nP = X @ W\nL = sum(P)\n")
    result = run(runner, "eval", program)
    assert result.exit_code == 1 and result.stdout == ""
    first = result.stderr.splitlines()[0]
    assert first.startswith(f"{program}:3:7: error: ")  # the '@' of line 3
    assert "[2, 3]" in first and "[2, 1]" in first
    assert "Traceback" not in result.stderr


def test_a_set_that_makes_the_shapes_mismatch_is_located_at_the_operator(runner) -> None:
    # (3 rows where W has 2: a size the operator checks; [[1, 2, 3]] is refused at W, see language/shapes)
    result = run(runner, "eval", MATRIX, "--set", "W=[[1], [2], [3]]")
    assert result.exit_code == 1
    first = result.stderr.splitlines()[0]
    assert first.startswith(f"{MATRIX}:24:7: error: ") and "[8, 2]" in first and "[3, 1]" in first


@pytest.mark.parametrize("value, words", [
    ("[1, 2", "not a JSON array"),
    ("[[1], [2, 3]]", "rows differ in length"),
    ('[1, "a"]', "W"),
], ids=["unclosed", "ragged", "not-numbers"])
def test_a_bad_tensor_set_is_a_usage_error(runner, value, words) -> None:
    result = run(runner, "eval", MATRIX, "--set", f"W={value}")
    assert result.exit_code == 2
    assert "Invalid value for '--set'" in result.stderr and words in result.stderr
    assert "Traceback" not in result.stderr


def test_nested_arrays_in_values_give_the_posts_gradient(runner, tmp_path) -> None:
    X, Y = matrix_sample()
    values = tmp_path / "values.json"
    values.write_text(json.dumps({"W": [[1.5], [0.5]]}))
    loss, grad = post_gradient(X, Y, np.array([[1.5], [0.5]]))
    doc = document(run(runner, "eval", MATRIX, "--values", values, "--wrt", "W", "--format", "json"))
    assert doc["value"] == pytest.approx(loss, rel=1e-13)
    np.testing.assert_allclose(np.array(doc["grads"]["W"]), grad, rtol=1e-12)


def test_set_overrides_values_for_a_tensor(runner, tmp_path) -> None:
    X, Y = matrix_sample()
    values = tmp_path / "values.json"
    values.write_text(json.dumps({"W": [[1.5], [0.5]]}))
    loss, _ = post_gradient(X, Y, np.array([[-1.0], [3.0]]))
    doc = document(run(runner, "eval", MATRIX, "--values", values, "--set", "W=[[-1], [3]]",
                       "--format", "json"))
    assert doc["value"] == pytest.approx(loss, rel=1e-13)


def test_a_ragged_array_in_values_points_at_its_key(runner, tmp_path) -> None:
    values = tmp_path / "ragged.json"
    values.write_text('{\n  "W": [[2.5],\n        [-1.25, 3]]\n}\n')
    result = run(runner, "eval", MATRIX, "--values", values)
    assert result.exit_code == 1
    first = result.stderr.splitlines()[0]
    assert first.startswith(f"{values}:2:3: error: ") and "'W'" in first and "differ in length" in first
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("dtype", [float, int, np.float32], ids=["float64", "int", "float32"])
def test_a_npy_file_gives_a_tensor_input(runner, tmp_path, dtype) -> None:
    X, Y = matrix_sample()
    W = np.array([[2.0], [-1.0]], dtype=dtype)
    path = tmp_path / "w.npy"
    np.save(path, W)
    loss, grad = post_gradient(X, Y, W.astype(float))
    doc = document(run(runner, "eval", MATRIX, "--set", f"W={path}", "--wrt", "W", "--format", "json"))
    assert doc["shapes"]["W"] == [2, 1]
    assert doc["value"] == pytest.approx(loss, rel=1e-13)
    np.testing.assert_allclose(np.array(doc["grads"]["W"]), grad, rtol=1e-12)


def test_a_npy_file_of_one_number_is_a_number(runner, tmp_path) -> None:
    path = tmp_path / "x.npy"
    np.save(path, np.float64(3.5))
    doc = document(run(runner, "eval", "y = 2*x", "--set", f"x={path}", "--format", "json"))
    assert doc["value"] == 7.0 and doc["grads"]["x"] == 2.0


@pytest.mark.parametrize("array, said", [
    (np.array([True, False]), "it holds booleans"),
    (np.array([1, "a"], dtype=object), "holds Python objects, which are never loaded"),
    (np.array([1.0, np.nan]), "holds nan at entry [1], not a finite number"),
], ids=["bool", "object", "nan"])
def test_a_npy_file_not_of_finite_numbers_is_refused(runner, tmp_path, array, said) -> None:
    path = tmp_path / "x.npy"
    np.save(path, array, allow_pickle=True)
    result = run(runner, "eval", "y = sum(x)", "--set", f"x={path}")
    assert result.exit_code == 2 and said in result.stderr
    assert "astype(float)" in result.stderr or "finite" in said  # how to save numbers, or which entry is not one
    assert "Traceback" not in result.stderr


def test_a_missing_npy_file_is_a_usage_error(runner, tmp_path) -> None:
    result = run(runner, "eval", MATRIX, "--set", f"W={tmp_path / 'absent.npy'}")
    assert result.exit_code == 2 and "absent.npy" in result.stderr


# --- check -------------------------------------------------------------------------------------------


def test_check_of_a_correct_tensor_program_passes(runner) -> None:
    result = run(runner, "check", MATRIX, "--set", "W=[[2.5], [-1.25]]")
    assert result.exit_code == 0, result.output + result.stderr
    assert "check failed" not in result.stderr


def test_check_json_lists_directions_and_sampled_entries_with_hand_gradients(runner) -> None:
    X, Y = matrix_sample()
    W = np.array([[2.5], [-1.25]])
    g = 2.0 / len(X) * (X @ W - Y)
    expected = {"X": g @ W.T, "Y": -g, "W": X.T @ g}
    doc = document(run(runner, "check", MATRIX, "--set", "W=[[2.5], [-1.25]]", "--entries", "5",
                       "--directions", "3", "--format", "json"))
    names = [item["name"] for item in doc["inputs"]]
    assert names[:3] == ["direction 1", "direction 2", "direction 3"]
    entries = names[3:]
    assert len(entries) == 5 and len(set(entries)) == 5
    assert doc["ok"] is True and doc["verdict"] == "ok"
    for item in doc["inputs"][3:]:
        found = re.fullmatch(r"([XYW])\[(\d+), (\d+)\]", item["name"])
        assert found, item["name"]
        name, i, j = found.group(1), int(found.group(2)), int(found.group(3))
        assert item["reverse"] == pytest.approx(expected[name][i, j], rel=1e-10, abs=1e-14)
        assert item["ok"] is True
    assert any("3 random directions" in note and "5 of the 26" in note for note in doc["notes"])


def test_check_with_a_relu_kink_in_a_tensor_fails_naming_the_entry(runner) -> None:
    result = run(runner, "check", "y = sum(relu(x))", "--set", "x=[1, 0, -2]", "--entries", "3")
    assert result.exit_code == 1
    failed = re.findall(r"^check failed: ([^:]+):", result.stderr, re.MULTILINE)
    assert "x[1]" in failed
    assert "x[0]" not in failed and "x[2]" not in failed
    assert "kink" in result.stderr


def test_check_leaves_cross_entropy_labels_alone(runner) -> None:
    # a label is a class number: moving it by a finite difference's step makes it no class at all
    text = "z = [2, -1, 0.5]\nlabel = 1\nL = cross_entropy(z, label)"
    doc = document(run(runner, "check", text, "--format", "json"))
    assert doc["ok"] is True and doc["verdict"] == "ok"
    assert not any("label" in item["name"] for item in doc["inputs"])
    z = np.array([2.0, -1.0, 0.5])
    softmax = np.exp(z) / np.exp(z).sum()
    want = softmax - np.eye(3)[1]  # d/dz of logsumexp(z) - z[1]
    for item in doc["inputs"]:
        found = re.fullmatch(r"z\[(\d)\]", item["name"])
        if found:
            assert item["reverse"] == pytest.approx(want[int(found.group(1))], rel=1e-12)
    assert any("not moved: label" in note for note in doc["notes"])


def test_check_is_seeded(runner) -> None:
    args = ["check", MOONS_MLP, "--set", "x=[0.5, -0.3]", "--entries", "8", "--format", "json"]
    first, second = run(runner, *args), run(runner, *args)
    assert first.exit_code == second.exit_code
    assert [i["name"] for i in json.loads(first.stdout)["inputs"]] == \
        [i["name"] for i in json.loads(second.stdout)["inputs"]]


# --- every command takes a tensor program ----------------------------------------------------------


@pytest.mark.parametrize("command, extra", [
    ("graph", ["-o", "{tmp}/g.svg"]),
    ("explain", []),
    ("diff", []),
    ("plot", ["--range", "W[0,0]=0:5", "-o", "{tmp}/p.svg"]),
])
def test_every_command_takes_the_posts_regression(runner, tmp_path, command, extra) -> None:
    result = run(runner, command, MATRIX, *[word.format(tmp=tmp_path) for word in extra])
    assert result.exit_code == 0, result.output + result.stderr
    assert "Traceback" not in result.stderr


# --- scalar programs are unchanged ------------------------------------------------------------------


def test_karpathy_sample_is_unchanged(runner) -> None:
    doc = document(run(runner, "eval", SAMPLES / "karpathy.ad", "--format", "json"))
    assert doc["value"] == -8.0
    assert doc["grads"] == {"a": 6.0, "b": -4.0, "c": -2.0, "e": -2.0, "d": -2.0, "f": 4.0, "L": 1.0}
    assert "shapes" not in doc and "jacobian" not in doc


def test_scalar_plain_output_has_no_shape_column(runner) -> None:
    result = run(runner, "eval", SAMPLES / "karpathy.ad", "--format", "plain")
    assert result.stdout.splitlines()[0].split() == ["name", "kind", "op", "value", "grad"]


def test_an_empty_vector_output_has_an_empty_jacobian_in_every_format(runner) -> None:
    for fmt in ("json", "csv", "plain", "table"):
        result = run(runner, "eval", "x = [1, 2, 3]\ny = x[2:1]", "--format", fmt)
        assert result.exit_code == 0, (fmt, result.output)
    assert json.loads(run(runner, "eval", "x = [1, 2, 3]\ny = x[2:1]", "--format", "json").stdout)["value"] == []


def test_a_jacobian_too_large_is_refused_with_the_way_out(runner) -> None:
    result = run(runner, "eval", "x = zeros([5000])\ny = x*2", "--format", "json")
    assert result.exit_code == 1 and "would hold 50,000,000 numbers" in result.stderr
    assert "sum(y), mean(y) or an entry such as y[0]" in result.stderr


def test_a_value_for_a_name_the_program_does_not_use_is_warned_about(runner) -> None:
    typo = run(runner, "eval", str(MATRIX), "--set", "w=[[2.5], [-1.25]]", "--wrt", "W", "--format", "json")
    assert typo.exit_code == 0 and "'w' is not used by the program" in typo.stderr
    scalar = run(runner, "eval", "y = x*x", "--set", "x=2", "--set", "z=[1, 2]", "--format", "json")
    assert json.loads(scalar.stdout)["grads"]["x"] == 4.0  # still the scalar report: z is no input
    assert "'z' is not used by the program" in scalar.stderr


@pytest.mark.parametrize("source, message, hint", [
    # 5,000 output entries x (5,000 of x + 5,000 of d y / d y): 50,000,000 numbers, as reverse mode counts
    ("x = zeros([5000])\ny = x*2", "the Jacobian of 'y' (5,000 entries) would hold 50,000,000 numbers, over the "
     "limit of 10,000,000", "sum(y), mean(y) or an entry such as y[0]; --wrt NAMES narrows the inputs"),
    # a number output: one JVP per entry of x, 10,000,001 of them
    ("x = zeros([10000001])\ny = sum(x)", "forward mode would run 10,000,001 passes for the gradient of 'y' "
     "(one per input entry), over the limit of 10,000,000", "reverse mode (the default) gives the gradient of a "
     "number in one pass"),
], ids=["jacobian", "passes"])
def test_forward_mode_keeps_the_limit_of_reverse_mode(runner, source, message, hint) -> None:
    import resource
    import time

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.monotonic()
    result = run(runner, "eval", source, "--mode", "forward", "--format", "json")
    assert result.exit_code == 1 and result.stdout == ""
    assert message in result.stderr and hint in result.stderr
    assert time.monotonic() - started < 20  # refused before the passes; it ran to 3.1 GB before
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 1_000_000  # KB: well under 1 GB


def test_wrt_narrows_a_jacobian_under_the_limit_as_its_hint_says(runner) -> None:
    # d y / d c for y = x*2 + c: 3,000 x 1 ones; all variables would be 3,000 x 6,001 numbers
    for mode in ("reverse", "forward"):
        result = run(runner, "eval", "x = zeros([3000]); c = [1]; y = x*2 + c", "--wrt", "c", "--mode", mode,
                     "--format", "json")
        assert result.exit_code == 0, result.stderr
        jacobian = json.loads(result.stdout)["jacobian"]
        assert jacobian["inputs"] == ["c[0]"] and np.array_equal(jacobian["rows"], np.ones((3000, 1)))


def test_the_variables_after_the_output_count_toward_the_limit(runner) -> None:
    # d y / d z, d v and d w are zeros, but 3,000 x 3,000 numbers each
    result = run(runner, "eval", "x = zeros([3000]); y = x*2; w = zeros([3000]); z = w * 3; v = z + 1",
                 "--output", "y", "--format", "json")
    assert result.exit_code == 1 and "would hold 45,000,000 numbers" in result.stderr
