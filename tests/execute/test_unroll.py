"""The scalar view: a tensor program unrolled into scalar instructions, run by the scalar
executor, gives the values and gradients HIPS autograd gives the tensor program; one layer's
view, weighted by the layer's adjoint and summed over rows, gives the matrix-form gradient."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from autodiff_cli.errors import AutodiffError
from autodiff_cli.execute.columns import entry_column
from autodiff_cli.execute.scalar import evaluate
from autodiff_cli.execute.unroll import TooLarge, layer_view, scalar_view
from autodiff_cli.execute.interpreter import input_arrays, run_forward
from autodiff_cli.language.compiler import parse
from properties.test_tensor_random import Gen, Tie, reference_gradients

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
TOLERANCE = 1e-10  # sums are added in another order than NumPy's pairwise ones


def close(got: float, want: float, what: str) -> None:
    assert abs(got - want) <= TOLERANCE * max(1.0, abs(want)), f"{what}: {got!r} != {want!r}"


def entries_grads(evaluation, name: str, shape: tuple[int, ...]) -> np.ndarray:
    grads = evaluation.grads()
    out = np.zeros(shape)
    for index in np.ndindex(shape):
        out[index] = grads.get(entry_column(name, index), 0.0)
    return out


def test_an_entry_is_named_as_its_column() -> None:
    assert entry_column("W", (0, 1)) == "W[0, 1]"
    assert entry_column("x", (3,)) == "x[3]"
    assert entry_column("b", ()) == "b"


def test_the_posts_regression_unrolls_to_its_scalar_graph() -> None:
    program = parse((SAMPLES / "regression_matrix.ad").read_text(), "regression_matrix.ad")
    given = {"W": [[2.5], [-1.25]]}
    view = scalar_view(program, given)
    evaluation = evaluate(view.program, view.values)
    X = np.array(program.variables["X"].default.nested())
    Y = np.array(program.variables["Y"].default.nested())
    W = np.array(given["W"])
    P = X @ W
    close(evaluation.nodes["L"].data, float(np.mean((P - Y) ** 2)), "L")
    want = 2 / len(X) * X.T @ (P - Y)  # the post's dL/dW = (2/N) X^T (P - Y)
    got = entries_grads(evaluation, "W", (2, 1))
    for index in np.ndindex(2, 1):
        close(got[index], want[index], f"dL/dW{list(index)}")
    # P[i, 0] = X[i, 0] W[0, 0] + X[i, 1] W[1, 0]: two products and one sum per entry
    instructions = view.program.instructions
    p0 = instructions[view.program.variables["P[0, 0]"].register]
    assert p0.op == "+" and [instructions[a].op for a in p0.args] == ["*", "*"]


CHUNKS, PER_CHUNK = 40, 50  # 2,000 random programs


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_random_programs_match_autograd(chunk: int) -> None:
    for seed in range(chunk * PER_CHUNK, (chunk + 1) * PER_CHUNK):
        check_random_program(seed)


def check_random_program(seed: int) -> None:
    while True:
        spec = Gen(seed).program()
        program = parse(spec.text)
        given = {name: spec.values[name] for name, _, kind in spec.inputs if kind == "given"}
        given.update({name: spec.values[name] for name, _, kind in spec.inputs
                      if kind == "label" and program.variables[name].default is None})
        arrays = input_arrays(program, given, seed=3)
        for name, _, kind in spec.inputs:
            if kind == "init":
                spec.values[name] = arrays[name]  # drawn data: both sides get it
        try:
            spec.reference(dict(spec.values))
            break
        except Tie:
            seed += 7_919_000
    want_value, want_grads = reference_gradients(spec, spec.values)
    view = scalar_view(program, given, seed=3)
    evaluation = evaluate(view.program, view.values)
    close(evaluation.nodes[view.output].data, float(want_value), "output")
    for name, want in want_grads.items():
        got = entries_grads(evaluation, name, np.shape(want))
        scale = max(1.0, float(np.max(np.abs(want)))) if np.size(want) else 1.0
        np.testing.assert_allclose(got, want, rtol=TOLERANCE, atol=TOLERANCE * scale, err_msg=name)


MATRIX_MLP = """
X = [[0.5, -1.0], [1.5, 0.25], [-0.75, 2.0]]
Y = [[1.0], [-1.0], [0.5]]
W1 = [[0.3, -0.2, 0.9], [0.4, 0.7, -0.6]]
b1 = [0.1, -0.1, 0.05]
W2 = [[0.5], [-0.4], [0.8]]
H = tanh(X @ W1 + b1)
P = H @ W2
L = mean((P - Y)**2)
"""


def layer_shares(program, name: str, operand: str, rows: int | None) -> np.ndarray:
    """The sum over rows of each row's layer view gradients of ``operand``'s entries, each row
    weighted by the tensor program's adjoint of ``name`` there."""
    arrays = input_arrays(program, {})
    run = run_forward(program, arrays)
    adjoint = run.gradients(program.result, [name])[name]
    shape = np.shape(run.value(operand))
    total = np.zeros(shape)
    for row in range(rows) if rows is not None else [None]:
        upstream = adjoint if row is None else adjoint[row]
        view = layer_view(program, {}, name, row=row, upstream=upstream)
        evaluation = evaluate(view.program, view.values)
        total += entries_grads(evaluation, operand, shape)
    return total


@pytest.mark.parametrize("name, operand, rows", [("H", "W1", 3), ("H", "b1", 3), ("P", "W2", 3), ("P", "H", 3)])
def test_a_layers_shares_over_rows_sum_to_the_matrix_gradient(name: str, operand: str, rows: int) -> None:
    program = parse(MATRIX_MLP)
    run = run_forward(program, input_arrays(program, {}))
    want = run.gradients(program.result, [operand])[operand]
    got = layer_shares(program, name, operand, rows)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def test_a_vector_layer_is_shown_whole() -> None:
    program = parse((SAMPLES / "moons_mlp.ad").read_text())
    arrays = input_arrays(program, {"x": [0.5, -0.25]})
    run = run_forward(program, arrays)
    adjoint = run.gradients(program.result, ["h2"])["h2"]
    # h2 = relu(W2 @ h1 + b2): W2's share through h2 (its L2 term is another statement's)
    h1 = run.value("h1")
    z = arrays["W2"] @ h1 + arrays["b2"]
    want = np.outer(adjoint * (z > 0), h1)
    view = layer_view(program, {"x": [0.5, -0.25]}, "h2", upstream=adjoint)
    assert view.row is None and view.entries["h2"].shape == (16,)
    evaluation = evaluate(view.program, view.values)
    got = entries_grads(evaluation, "W2", (16, 16))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    assert arrays["W1"].shape == (16, 2)
    # the layer's view reads h1 as inputs: it does not unroll the layer before it
    assert "h1[0]" in view.values and not any(name.startswith("W1[") for name in view.values)


def test_one_row_of_a_layer_over_many_rows_unrolls_that_row_alone() -> None:
    rng = np.random.default_rng(5)
    X = rng.normal(size=(300, 2))
    W1, W2 = rng.normal(size=(2, 16)), rng.normal(size=(16, 16))
    text = "H1 = relu(X @ W1 + b1)\nH2 = tanh(H1 @ W2 + b2)\nL = mean(H2)"
    given = {"X": X.tolist(), "W1": W1.tolist(), "W2": W2.tolist(), "b1": [0.1] * 16, "b2": [-0.2] * 16}
    program = parse(text)
    view = layer_view(program, given, "H2", row=123)
    # one row: 16 entries, each 16 products, 15 additions, a bias and a tanh, and the sum of them
    assert len(view.program.instructions) < 1_000
    assert sorted(name for name in view.values if name.startswith("H1[")) == \
        sorted(f"H1[123, {j}]" for j in range(16))  # the row's own inputs, not the other 299
    evaluation = evaluate(view.program, view.values)
    H1 = np.maximum(X @ W1 + 0.1, 0)
    want = np.tanh(H1[123] @ W2 - 0.2)
    got = [evaluation.nodes[f"H2[123, {j}]"].data for j in range(16)]
    np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("chunk", range(8))
def test_each_rows_layer_view_gives_the_rows_values_on_random_programs(chunk: int) -> None:
    for seed in range(chunk * 50, (chunk + 1) * 50):
        spec = Gen(seed).program()
        program = parse(spec.text)
        given = {name: spec.values[name] for name, _, kind in spec.inputs if kind == "given"}
        given.update({name: spec.values[name] for name, _, kind in spec.inputs
                      if kind == "label" and program.variables[name].default is None})
        run = run_forward(program, input_arrays(program, given, seed=3), check=False)
        for name, variable in program.variables.items():
            if variable.kind == "input":
                continue
            value = np.asarray(run.value(name))
            for row in range(value.shape[0]) if value.ndim >= 2 else [None]:
                view = layer_view(program, given, name, row=row, seed=3)
                evaluation = evaluate(view.program, view.values, backward=False)
                want = value if row is None else value[row]
                for index in np.ndindex(want.shape):
                    shown = view.names[int(view.entries[name][index])]  # an operand's entry, if only moved
                    got = evaluation.nodes[shown].data
                    assert got == pytest.approx(float(want[index]), rel=1e-9, abs=1e-12, nan_ok=True), \
                        (seed, name, row, index)


def test_the_limit_names_the_ways_out() -> None:
    program = parse((SAMPLES / "moons_mlp.ad").read_text())
    with pytest.raises(TooLarge) as caught:
        scalar_view(program, {}, limit=100)
    assert "--expand" in caught.value.hint and "--row" in caught.value.hint


def test_a_row_out_of_range_is_refused() -> None:
    program = parse(MATRIX_MLP)
    with pytest.raises(AutodiffError, match="there is no row 3"):
        layer_view(program, {}, "H", row=3)
    with pytest.raises(AutodiffError, match="no variable 'Q'"):
        layer_view(program, {}, "Q")


@pytest.mark.parametrize("text, name, want", [
    ("x = [1, 3, 3]\nL = max(x)", "x", [0.0, 0.5, 0.5]),
    ("x = [2, -1, -1, -1]\nL = min(x)", "x", [0.0, 1 / 3, 1 / 3, 1 / 3]),
    ("M = [[1, 3, 3], [2, 2, 0]]\nL = sum(max(M, 1) * [1, 10])", "M", [[0.0, 0.5, 0.5], [5.0, 5.0, 0.0]]),
])
def test_a_tie_shares_the_gradient_as_the_tensor_op_does(text: str, name: str, want: list) -> None:
    program = parse(text)
    view = scalar_view(program, {})
    evaluation = evaluate(view.program, view.values)
    np.testing.assert_allclose(entries_grads(evaluation, name, np.shape(want)), want, rtol=1e-15)
    run = run_forward(program, input_arrays(program, {}))
    np.testing.assert_allclose(run.gradients(program.result, [name])[name], want, rtol=1e-15)
