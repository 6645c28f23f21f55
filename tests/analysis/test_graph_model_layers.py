"""The layer graph of a tensor program: nodes, operands, shapes, values and gradients against NumPy."""

from pathlib import Path

import numpy as np
import pytest

from autodiff_cli.analysis.graph_model import expand, layer_graph, parameters_of, statement_text
from autodiff_cli.errors import InputError
from autodiff_cli.language import parse

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
W_GIVEN = {"W": [[2.5], [-1.25]]}


def regression():
    return parse((SAMPLES / "regression_matrix.ad").read_text(), "regression_matrix.ad")


def moons():
    return parse((SAMPLES / "moons_mlp.ad").read_text(), "moons_mlp.ad")


def regression_arrays():
    program = regression()
    graph = layer_graph(program, {"W": _literal(W_GIVEN["W"])})
    X, Y = graph.run.value("X"), graph.run.value("Y")
    return graph, X, Y, np.array(W_GIVEN["W"])


def _literal(nested):
    from autodiff_cli.language.program import ArrayLiteral

    return ArrayLiteral.from_nested(nested)


def test_layers_are_the_inputs_and_the_statements() -> None:
    graph, X, Y, W = regression_arrays()
    assert [(n.name, n.kind, n.shape) for n in graph.nodes] == [
        ("X", "input", (8, 2)), ("Y", "input", (8, 1)), ("W", "input", (2, 1)),
        ("P", "intermediate", (8, 1)), ("L", "output", ())]
    P, L = graph.nodes[3], graph.nodes[4]
    assert P.expression == "X @ W" and L.expression == "mean((P - Y)**2)"
    names = {n.register: n.name for n in graph.nodes}
    assert [names[r] for r in P.operands] == ["X", "W"]
    assert [names[r] for r in L.operands] == ["P", "Y"]
    assert [(names[a], names[b], shape) for a, b, shape in graph.edges()] == [
        ("X", "P", (8, 2)), ("W", "P", (2, 1)), ("P", "L", (8, 1)), ("Y", "L", (8, 1))]


def test_values_and_gradients_are_the_posts_matrix_formulas() -> None:
    graph, X, Y, W = regression_arrays()
    P = X @ W
    residual = P - Y
    n = len(X)
    by_name = {node.name: node for node in graph.nodes}
    np.testing.assert_allclose(by_name["P"].value, P)
    assert float(by_name["L"].value) == pytest.approx(np.mean(residual ** 2))
    np.testing.assert_allclose(by_name["P"].grad, 2 / n * residual)
    np.testing.assert_allclose(by_name["W"].grad, 2 / n * X.T @ residual)  # dL/dW = (2/N) X^T (P - Y)
    np.testing.assert_allclose(by_name["X"].grad, 2 / n * residual @ W.T)
    np.testing.assert_allclose(by_name["Y"].grad, -2 / n * residual)
    assert float(by_name["L"].grad) == 1.0


def test_without_gradients_the_nodes_have_none() -> None:
    graph = layer_graph(regression(), {}, gradients=False)
    assert all(node.grad is None for node in graph.nodes) and not graph.has_grad


def test_ops_level_has_a_node_per_tensor_operation() -> None:
    graph = layer_graph(moons(), {}, level="ops")
    computed = [(n.name, n.expression) for n in graph.nodes if n.kind != "input"]
    assert computed[:9] == [
        (None, "W1 @ x"), (None, "\u00b7 + b1"), ("h1", "relu(\u00b7)"),
        (None, "W2 @ h1"), (None, "\u00b7 + b2"), ("h2", "relu(\u00b7)"),
        (None, "W3 @ h2"), (None, "\u00b7 + b3"), ("score", "\u00b7[0]")]
    # Numbers written in the program are no nodes: their uses write them.
    assert (None, "y * score") in computed and (None, "1 - \u00b7") in computed
    assert all(node.kind != "constant" for node in graph.nodes)
    assert [graph.node(r).expression for r in graph.statement("h1")] == ["W1 @ x", "\u00b7 + b1", "relu(\u00b7)"]


def test_moons_layers_values_against_numpy() -> None:
    program = moons()
    x = np.array([1.2, -0.4])
    graph = layer_graph(program, {"x": _literal(x.tolist()), "y": 1.0})  # the hinge active: d/d score = -1
    value = {node.name: node.value for node in graph.nodes}
    h1 = np.maximum(value["W1"] @ x + value["b1"], 0)
    h2 = np.maximum(value["W2"] @ h1 + value["b2"], 0)
    score = (value["W3"] @ h2 + value["b3"])[0]
    np.testing.assert_allclose(value["h1"], h1)
    np.testing.assert_allclose(value["h2"], h2)
    assert float(value["score"]) == pytest.approx(score)
    hinge = max(0.0, 1 - score)
    grad = {node.name: node.grad for node in graph.nodes}
    # d loss / d h2 = d hinge / d score * W3[0], with d hinge / d score = -1 while the hinge is active
    assert hinge > 0
    np.testing.assert_allclose(grad["h2"], -value["W3"][0])
    np.testing.assert_allclose(grad["b3"], [-1.0])
    assert [node.name for node in graph.nodes if node.kind != "input"] == ["h1", "h2", "score", "hinge", "loss"]


def test_parameters_are_the_drawn_inputs_or_those_named() -> None:
    program = moons()
    assert parameters_of(program) == {"W1", "b1", "W2", "b2", "W3", "b3"}
    graph = layer_graph(program, {})
    counts = {node.name: node.parameters for node in graph.nodes if node.kind == "input"}
    assert counts == {"x": None, "y": None, "W1": 32, "b1": 16, "W2": 256, "b2": 16, "W3": 16, "b3": 1}
    named = layer_graph(regression(), {}, parameters=["W"])
    assert {n.name: n.parameters for n in named.nodes if n.kind == "input"} == {"X": None, "Y": None, "W": 2}
    with pytest.raises(InputError, match="'P' is computed by the program"):
        parameters_of(regression(), ["P"])


def test_statement_text_is_the_right_hand_side_as_written() -> None:
    program = parse("a = [1, 2]  # a vector\nb = sum(a *\n  a)  # two lines\nc = b; d = c*2\n")
    assert statement_text(program, "b") == "sum(a * a)"
    assert statement_text(program, "c") == "b"
    assert statement_text(program, "d") == "c*2"


def test_a_vector_output_has_no_gradient_to_draw() -> None:
    program = parse("x = [1, 2]\ny = x*3\n")
    with pytest.raises(InputError, match="a gradient is of a number") as caught:
        layer_graph(program, {})
    assert "--no-grad" in caught.value.hint
    assert layer_graph(program, {}, gradients=False).nodes[-1].shape == (2,)


def test_variables_the_output_does_not_use_are_omitted() -> None:
    graph = layer_graph(parse("x = [1, 2]\nunused = x*2\ny = sum(x)\n"), {})
    assert graph.omitted == ["unused"] and [n.name for n in graph.nodes] == ["x", "y"]


def test_expanding_a_statement_gives_one_rows_scalar_graph_with_the_layer_gradients() -> None:
    graph, X, Y, W = regression_arrays()
    expansion = expand(graph, "P", row=2)
    assert expansion.registers == [graph.program.variables["P"].register]
    assert "row 2" in expansion.title
    model = expansion.model
    by_name = {name: model.order[i] for i, name in enumerate(model.names)}
    p2 = X[2] @ W[:, 0]
    assert by_name["P[2, 0]"].data == pytest.approx(p2)
    residual = X @ W - Y
    assert by_name["P[2, 0]"].grad == pytest.approx(2 / 8 * residual[2, 0])
    # W's share through row 2 alone: X[2, k] * dL/dP[2]
    assert by_name["W[0, 0]"].grad == pytest.approx(X[2, 0] * 2 / 8 * residual[2, 0])
    assert set(expansion.anchors) == {graph.program.variables["X"].register, graph.program.variables["W"].register}


def test_expanding_an_unknown_name_says_which_there_are() -> None:
    graph = layer_graph(regression(), {})
    with pytest.raises(InputError, match="no variable 'Q'"):
        expand(graph, "Q")


def test_an_expansion_shows_the_layer_not_the_weighting_that_finds_its_gradients() -> None:
    graph, X, Y, W = regression_arrays()
    expansion = expand(graph, "P", row=0)
    names = expansion.model.names
    # P[0, 0] = X[0, 0]*W[0, 0] + X[0, 1]*W[1, 0]: four inputs, two products and the sum
    assert expansion.size == 7
    assert sorted(names[i] for i in expansion.shown if names[i][0] in "PXW") == [
        "P[0, 0]", "W[0, 0]", "W[1, 0]", "X[0, 0]", "X[0, 1]"]
    assert names[expansion.exit] == "P[0, 0]"
    assert expansion.model.size > expansion.size  # the weighted sum to the root is there, not shown


def test_a_vector_layer_is_expanded_whole_and_an_input_into_its_entries() -> None:
    graph = layer_graph(moons(), {"x": _literal([1.8, -0.1])})
    h1 = expand(graph, "h1", row=5)
    assert h1.view.row is None and "all 16 entries" in h1.title
    assert sum(1 for i in h1.shown if h1.model.names[i].startswith("h1[")) == 16
    w1 = expand(graph, "W1")
    assert "row 0" in w1.title and w1.size == 2  # W1[0, 0] and W1[0, 1]


def test_both_forms_give_a_named_value_the_same_kind() -> None:
    # karpathy.ad a box per value (the engine's graph) and a box per statement (the interpreter's
    # run): a, b, c, f are inputs, e and d named intermediates, L the output, in either form.
    from autodiff_cli.analysis.graph_model import GraphModel
    from autodiff_cli.execute import evaluate

    program = parse((SAMPLES / "karpathy.ad").read_text(), "karpathy.ad")
    model = GraphModel.of(evaluate(program, {}))
    by_value = {name: kind for name, kind in zip(model.names, model.kinds) if name in program.variables}
    by_statement = {node.name: node.kind for node in layer_graph(program, {}).nodes}
    expected = {"a": "input", "b": "input", "c": "input", "f": "input", "e": "intermediate", "d": "intermediate",
                "L": "output"}
    assert by_value == expected and by_statement == expected
