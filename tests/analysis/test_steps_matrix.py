"""The backward pass of a tensor program in matrix form (analysis/steps.py, its matrix form).

Expected numbers are computed independently: the post's gradient 2/N X^T (XW - Y) by hand in
NumPy, the MLP's gradients by HIPS autograd.  The two zoom levels are held to each other: for
every statement ("layer"), the scalar view of each row (execute/unroll.layer_view, weighted
by the row's upstream gradient) explained by analysis/steps.py, summed over the rows, gives the
matrix-form shares to 1e-12.
"""

from pathlib import Path

import autograd.numpy as anp
import numpy as np
import pytest
from autograd import grad

from autodiff_cli.analysis.steps import (
    MatrixStep,
    Seed,
    Total,
    explain,
    explain_program,
    statement_registers,
)
from autodiff_cli.errors import InputError
from autodiff_cli.execute import evaluate
from autodiff_cli.execute.interpreter import input_arrays
from autodiff_cli.execute.unroll import layer_view
from autodiff_cli.language import parse
from autodiff_cli.language.program import ArrayLiteral

SAMPLES = Path(__file__).resolve().parents[2] / "samples"

# The moons MLP in matrix style: a row axis, X is N x 2; biases added to every row.
MATRIX_MLP = """\
X = [[0.5, -1.0], [1.5, 0.25], [-0.75, 2.0], [0.1, 0.3], [-1.2, -0.4]]
y = [1, -1, 1, -1, 1]
W1 = [[0.3, -0.8, 0.5, 0.1], [0.9, 0.2, -0.4, 0.7]]
b1 = [0.1, -0.2, 0.05, 0.3]
W2 = [[0.6, -0.3, 0.2], [-0.5, 0.8, 0.1], [0.4, 0.2, -0.9], [0.3, -0.6, 0.5]]
b2 = [0.0, 0.1, -0.1]
W3 = [[0.7], [-0.4], [0.9]]
b3 = [0.2]
H1 = relu(X @ W1 + b1)
H2 = tanh(H1 @ W2 + b2)
S = (H2 @ W3 + b3)[:, 0]
L = mean(relu(1 - y * S)) + 0.001 * sum(W1**2)
"""


def steps_of(explanation):
    return [item for item in explanation.steps if isinstance(item, MatrixStep)]


def step(explanation, child, statement=None):
    found = [s for s in steps_of(explanation) if s.child == child and (statement is None or s.statement == statement)]
    assert len(found) == 1, found
    return found[0]


def regression():
    program = parse((SAMPLES / "regression_matrix.ad").read_text())
    arrays = input_arrays(program, {})
    return program, arrays["X"], arrays["Y"]


def mlp_inputs(program):
    return {name: np.asarray(value) for name, value in input_arrays(program, {}).items()}


def mlp_loss(params, X, y):
    W1, b1, W2, b2, W3, b3 = params
    H1 = anp.maximum(X @ W1 + b1, 0.0)
    H2 = anp.tanh(H1 @ W2 + b2)
    S = (H2 @ W3 + b3)[:, 0]
    return anp.mean(anp.maximum(1 - y * S, 0.0)) + 0.001 * anp.sum(W1**2)


# --- the post's regression ------------------------------------------------------------------------


def test_regression_gradient_is_the_posts_formula_in_matrix_form() -> None:
    program, X, Y = regression()
    W = np.array([[2.5], [-1.25]])
    explanation = explain_program(program, {"W": ArrayLiteral((2, 1), (2.5, -1.25))})
    expected = 2.0 / 8 * X.T @ (X @ W - Y)  # the post's dL/dW = (2/N) X^T (P - Y)
    w = step(explanation, "W")
    assert w.formula == "transpose(X) @ dL/dP"
    assert w.computation == "[2, 8] @ [8, 1] -> [2, 1]"
    np.testing.assert_allclose(w.product, expected, rtol=1e-13)
    assert dict(explanation.gradients)["W"].tolist() == w.total.tolist()
    assert explanation.value == pytest.approx(np.mean((X @ W - Y) ** 2), rel=1e-14)


def test_regression_steps_in_backward_order_with_rules_from_the_tables() -> None:
    program, X, Y = regression()
    explanation = explain_program(program, {})
    assert isinstance(explanation.steps[0], Seed)
    lines = [(s.child, s.formula, s.computation, s.notes) for s in steps_of(explanation)]
    assert lines == [
        ("t2", "dL/dL / n copied to every element averaged (n of them)", "[] -> [8, 1]", ("n = 8",)),
        ("t1", "dL/dt2 * (2 * t1**(2-1))", "[8, 1] -> [8, 1]", ()),
        ("P", "dL/dt1", "[8, 1] -> [8, 1]", ()),
        ("Y", "-dL/dt1", "[8, 1] -> [8, 1]", ()),
        ("X", "dL/dP @ transpose(W)", "[8, 1] @ [1, 2] -> [8, 2]", ()),
        ("W", "transpose(X) @ dL/dP", "[2, 8] @ [8, 1] -> [2, 1]", ()),
    ]
    np.testing.assert_allclose(step(explanation, "t2").product, np.full((8, 1), 1 / 8))
    P = X @ np.array([[1.0], [-1.0]])  # the sample's start, the line y = x - 1
    np.testing.assert_allclose(step(explanation, "Y").product, -2 / 8 * (P - Y), rtol=1e-14)
    definitions = [(d.name, d.expression, d.shapes) for d in explanation.definitions]
    assert definitions[3:] == [("P", "X @ W", "[8, 2] @ [2, 1] -> [8, 1]"), ("t1", "P - Y", "[8, 1] - [8, 1] -> [8, 1]"),
                               ("t2", "t1**2", "[8, 1]**2 -> [8, 1]"), ("L", "mean(t2)", "mean([8, 1]) -> []")]


def test_each_instruction_s_vjp_is_computed_once_and_the_gradients_are_eval_s(monkeypatch) -> None:
    """The steps read the record of the interpreter's one reverse sweep instead of sweeping again
    (issue 32): one VJP per instruction between the inputs and L, and the gradients are eval's, bit
    for bit (the same VJPs summed in the same order)."""
    from autodiff_cli.execute.interpreter import TensorRun, evaluate_tensors

    program = parse(MATRIX_MLP)
    calls = []
    vjp = TensorRun._vjp
    monkeypatch.setattr(TensorRun, "_vjp", lambda run, step, g, *outs: calls.append(step[0]) or vjp(run, step, g, *outs))
    explanation = explain_program(program, {})
    # Every instruction of this program reads a variable, so each lies on a path to L: one VJP apiece.
    instructions = [register for register, row in enumerate(program.rows()) if row[1] >= 0]
    assert sorted(calls) == instructions
    monkeypatch.setattr(TensorRun, "_vjp", vjp)
    derivatives = evaluate_tensors(program, {}).derivatives
    for name, gradient in explanation.gradients:
        np.testing.assert_array_equal(gradient, derivatives[name], err_msg=name)


# --- broadcasting, accumulation --------------------------------------------------------------------


def test_mlp_gradients_match_autograd() -> None:
    program = parse(MATRIX_MLP)
    arrays = mlp_inputs(program)
    params = [arrays[name] for name in ("W1", "b1", "W2", "b2", "W3", "b3")]
    expected = grad(mlp_loss)(params, arrays["X"], arrays["y"])
    explanation = explain_program(program, {})
    gradients = dict(explanation.gradients)
    for name, want in zip(("W1", "b1", "W2", "b2", "W3", "b3"), expected):
        np.testing.assert_allclose(gradients[name], want, rtol=1e-12, atol=1e-15, err_msg=name)
    assert explanation.value == pytest.approx(mlp_loss(params, arrays["X"], arrays["y"]), rel=1e-14)


def test_a_bias_added_to_every_row_sums_its_gradient_over_the_rows() -> None:
    program = parse(MATRIX_MLP)
    explanation = explain_program(program, {})
    b1 = step(explanation, "b1")
    upstream = step(explanation, "t1", "H1")  # dL/d(X @ W1): the other operand of the same +
    assert b1.formula == "sum(dL/dt2, 0)"
    assert b1.broadcast is not None and (b1.broadcast.unit, b1.broadcast.units) == ("row", "rows")
    assert b1.broadcast.verb == "added to" and b1.broadcast.inner == "dL/dt2"
    assert b1.computation == "[5, 4] -> [4]"
    np.testing.assert_allclose(b1.product, upstream.product.sum(axis=0), rtol=1e-15)
    assert step(explanation, "t1", "H1").broadcast is None


def test_a_variable_used_twice_gets_a_further_step_and_a_total() -> None:
    program = parse(MATRIX_MLP)
    explanation = explain_program(program, {})
    uses = [s for s in steps_of(explanation) if s.child == "W1"]
    assert [s.accumulate for s in uses] == [False, True]
    assert uses[0].formula == "dL/dt11 * (2 * W1**(2-1))"  # the penalty, met first going back
    assert uses[1].formula == "transpose(X) @ dL/dt1"
    totals = [item for item in explanation.steps if isinstance(item, Total) and item.name == "W1"]
    assert len(totals) == 1 and totals[0].count == 2
    np.testing.assert_allclose(totals[0].total, uses[0].product + uses[1].product, rtol=1e-15)
    assert explanation.steps.index(totals[0]) > explanation.steps.index(uses[1])


def test_vectors_in_a_product_are_said_to_be_a_row_or_a_column() -> None:
    explanation = explain_program(parse((SAMPLES / "moons_mlp.ad").read_text()), {})
    w1 = next(s for s in steps_of(explanation) if s.child == "W1" and s.op == "@")
    assert w1.formula == "dloss/dt1 @ transpose(x)"
    assert w1.computation == "[16, 1] @ [1, 2] -> [16, 2]"
    assert w1.notes == ("x [2] as a column [2, 1]",)
    score = step(explanation, "t6")
    assert score.formula == "zeros shaped like t6, with dloss/dscore at t6[0]"


def test_statements_group_instructions_as_layer_view_does() -> None:
    program = parse(MATRIX_MLP)
    statements = statement_registers(program)
    named = {v.register: v.name for v in program.variables.values()}
    h1 = [r for r, name in statements.items() if name == "H1"]
    assert named[max(h1)] == "H1" and len(h1) == 3  # X @ W1, + b1, relu


def test_vector_output_is_refused_with_the_way_out() -> None:
    with pytest.raises(InputError) as error:
        explain_program(parse("x = [1, 2]\ny = x * 2"), {})
    assert "'y' has shape [2], and a gradient is of a number" in error.value.message and "sum(y)" in error.value.hint
    assert error.value.position.line == 2  # at the statement that makes y


def test_max_steps_keeps_the_first_lines_and_counts_the_rest() -> None:
    program, _, _ = regression()
    explanation = explain_program(program, {}, max_steps=3)
    assert len(explanation.steps) == 3 and explanation.steps_omitted == 4
    assert len(explanation.definitions) == 3 and explanation.definitions_omitted == 4


# --- the two zoom levels agree -----------------------------------------------------------------------


def scalar_shares(program, given, explanation, name):
    """Each variable's share through statement ``name``, from the scalar view of every row."""
    adjoint = np.asarray(explanation.adjoints[name])
    rows = range(adjoint.shape[0]) if adjoint.ndim >= 2 else [None]
    sums = {}
    for row in rows:
        upstream = adjoint[row] if row is not None else adjoint
        view = layer_view(program, given, name, row=row, upstream=upstream)
        scalar = explain(evaluate(view.program, view.values, view.output, backward=False), 0)
        for entry, value in scalar.gradients:
            variable, _, index = entry.partition("[")
            sums.setdefault(variable, {})
            key = tuple(int(i) for i in index.rstrip("]").split(",")) if index else ()
            sums[variable][key] = sums[variable].get(key, 0.0) + value
    return sums


@pytest.mark.parametrize("text", [
    (SAMPLES / "regression_matrix.ad").read_text(),
    MATRIX_MLP,
    (SAMPLES / "moons_mlp.ad").read_text(),
], ids=["regression", "matrix MLP", "moons MLP"])
def test_matrix_form_equals_the_scalar_view_summed_over_rows(text) -> None:
    program = parse(text)
    explanation = explain_program(program, {})
    assert explanation.shares
    for statement, shares in explanation.shares.items():
        summed = scalar_shares(program, {}, explanation, statement)
        for variable, matrix in shares.items():
            scalar = np.zeros(np.shape(matrix))
            for index, value in summed.get(variable, {}).items():
                scalar[index] += value
            np.testing.assert_allclose(scalar, matrix, rtol=0, atol=1e-12, err_msg=f"{statement}: {variable}")


def test_scalar_layers_show_one_row_of_each_statement() -> None:
    program = parse(MATRIX_MLP)
    explanation = explain_program(program, {}, scalar=True, row=3)
    layers = explanation.layers
    assert [layer.name for layer in layers] == list(explanation.shares)
    h1 = next(layer for layer in layers if layer.name == "H1")
    assert h1.row == 3
    np.testing.assert_array_equal(h1.upstream, explanation.adjoints["H1"][3])
    assert {s.child for s in h1.steps} == {"t1", "t2", "b1", "X", "W1"}
    gradients = dict(h1.scalar.gradients)
    # Row 3 of H1 reads row 3 of X only: the other rows are not unrolled at all.
    assert "X[0, 0]" not in gradients and gradients["X[3, 0]"] != 0.0
    loss = next(layer for layer in layers if layer.name == "L")
    assert loss.row is None


def test_a_row_beyond_the_layer_is_an_error_with_the_rows_there_are() -> None:
    program = parse(MATRIX_MLP)
    with pytest.raises(InputError) as error:
        explain_program(program, {}, scalar=True, row=5)
    assert "5 rows" in error.value.message and "0 to 4" in error.value.hint


# --- one entry: the run's shapes pick the form ---------------------------------------------------------


def test_the_run_s_shapes_pick_the_form() -> None:
    """One entry: numbers run on the engine and are explained edge by edge; a tensor given for the
    same program's input runs on the interpreter and is explained in matrix form, with the same
    derivative entry by entry (d/dx of x*x + 3x is 2x + 3: 7 at 2, 1 at -1)."""
    from autodiff_cli.analysis.steps import MATRIX, SCALAR, OptionConflict, Step

    numbers = explain_program(parse("y = x*x + 3*x"), {"x": 2.0})
    assert numbers.form == SCALAR and any(isinstance(item, Step) for item in numbers.steps)
    assert numbers.gradients == [("x", 7.0)]
    tensors = explain_program(parse("y = sum(x*x + 3*x)"), {"x": ArrayLiteral((2,), (2.0, -1.0))})
    assert tensors.form == MATRIX and any(isinstance(item, MatrixStep) for item in tensors.steps)
    assert [(name, gradient.tolist()) for name, gradient in tensors.gradients] == [("x", [7.0, 1.0])]
    with pytest.raises(OptionConflict, match="already scalar"):
        explain_program(parse("y = x*x"), {"x": 2.0}, scalar=True)
    with pytest.raises(OptionConflict, match="add --scalar"):
        explain_program(parse("y = sum(x*x)"), {"x": ArrayLiteral((2,), (2.0, -1.0))}, row=1)
