"""The layer graph's DOT text: boxes, numbers, summaries, heat maps, shapes on edges, clusters."""

import re
from pathlib import Path

import numpy as np
import pytest

from autodiff_cli.analysis.tensor_graph import expand, layer_graph
from autodiff_cli.language import parse
from autodiff_cli.language.program import ArrayLiteral
from autodiff_cli.render import backends
from autodiff_cli.render.tensor_dot import NEGATIVE, POSITIVE, heat_colour, layer_dot

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


def regression_graph(**options):
    program = parse((SAMPLES / "regression_matrix.ad").read_text(), "regression_matrix.ad")
    return layer_graph(program, {"W": ArrayLiteral.from_nested([[2.5], [-1.25]])}, **options)


def test_heat_colour_runs_from_blue_through_white_to_orange() -> None:
    assert heat_colour(0.0, 2.0) == "#ffffff"
    assert heat_colour(2.0, 2.0) == "#%02x%02x%02x" % POSITIVE
    assert heat_colour(-5.0, 2.0) == "#%02x%02x%02x" % NEGATIVE  # beyond the largest: the full colour
    # halfway: the mean of white and the end, rounded
    assert heat_colour(-1.0, 2.0) == "#" + "".join(f"{round(255 + (c - 255) * 0.5):02x}" for c in NEGATIVE)
    assert heat_colour(1.0, 0.0) == "#ffffff"


def test_every_layer_is_a_box_and_every_edge_says_its_shape() -> None:
    text = layer_dot(regression_graph())
    ids = re.findall(r"^\t(t\d+) \[label=<", text, re.M)
    assert ids == ["t0", "t1", "t2", "t3", "t6"]  # X, Y, W, P, L: the registers
    edges = re.findall(r'^\t(t\d+) -> (t\d+) \[label="([^"]*)"\]', text, re.M)
    assert edges == [("t0", "t3", "[8, 2]"), ("t2", "t3", "[2, 1]"), ("t3", "t6", "[8, 1]"),
                     ("t1", "t6", "[8, 1]")]
    assert '<B>P</B> = X @ W' in text and '<B>L</B> = mean((P - Y)**2)' in text
    assert 'rankdir="LR"' in text  # the function's default; the command picks TB


def test_small_tensors_are_grids_of_their_numbers_and_gradients() -> None:
    graph = regression_graph()
    text = layer_dot(graph, precision=4)
    X, Y = graph.run.value("X"), graph.run.value("Y")
    W = np.array([[2.5], [-1.25]])
    residual = X @ W - Y
    grad_w = 2 / 8 * X.T @ residual
    for number in [*W.ravel(), *grad_w.ravel(), *(2 / 8 * residual).ravel()]:
        assert f">{number:.4g}</TD>" in text
    largest = float(np.max(np.abs(grad_w)))
    assert f'BGCOLOR="{heat_colour(grad_w[0, 0], largest, 0.55)}">{grad_w[0, 0]:.4g}</TD>' in text


def test_large_tensors_are_summaries_over_heat_maps() -> None:
    graph = regression_graph()
    X = graph.run.value("X")  # 16 entries: more than a grid shows
    text = layer_dot(graph)
    assert f"mean {X.mean():.4g}  std {X.std():.4g}" in text
    assert f"min {X.min():.4g}  max {X.max():.4g}" in text
    assert 'FIXEDSIZE="TRUE" WIDTH="12" HEIGHT="42"' in text  # 8 x 2 cells of 5 points, and the border


def test_no_grad_leaves_the_gradients_out() -> None:
    text = layer_dot(regression_graph(gradients=False), show_grad=False)
    assert ">grad<" not in text and "grad " not in text


def test_parameters_are_counted() -> None:
    program = parse((SAMPLES / "moons_mlp.ad").read_text())
    text = layer_dot(layer_graph(program, {}))
    assert "<I>256 parameters</I>" in text and "<I>1 parameter</I>" in text


def test_the_same_program_gives_the_same_bytes() -> None:
    assert layer_dot(regression_graph()) == layer_dot(regression_graph())


def test_an_expansion_is_a_cluster_of_todays_boxes_in_place_of_the_layer() -> None:
    graph = regression_graph()
    expansion = expand(graph, "P", row=0)
    text = layer_dot(graph, expansions=[expansion])
    assert "\tt3 [" not in text  # P's layer box gives way to its scalar graph
    assert "subgraph cluster_x0 {" in text
    # render.dot's record boxes, ids prefixed: P[0, 0] = X[0, 0]*W[0, 0] + X[0, 1]*W[1, 0]
    X = graph.run.value("X")
    p00 = X[0, 0] * 2.5 + X[0, 1] * -1.25
    assert f"{{ P[0, 0] | data {p00:.4f} | grad " in text.replace("\\[", "[").replace("\\]", "]")
    assert re.search(r"^\t\tx0v\d+ \[label=", text, re.M)
    assert re.search(r"^\t\tx0v\d+ -> x0v\d+_op$", text, re.M)
    # edges from X and W end at the cluster's border, and the one to L starts there
    assert re.search(r'^\tt0 -> x0v\d+ \[label="\[8, 2\]" lhead="cluster_x0"\]', text, re.M)
    assert re.search(r'^\tx0v\d+ -> t6 \[label="\[8, 1\]" ltail="cluster_x0"\]', text, re.M)


@pytest.mark.skipif(backends.bundled_program() is None, reason="graphviz-pure is not installed")
def test_the_bundled_renderer_draws_it() -> None:
    graph = regression_graph()
    svg = backends.render(layer_dot(graph, expansions=[expand(graph, "P")]), "svg", "bundled").decode()
    assert "<svg" in svg and "cluster_x0" in svg
