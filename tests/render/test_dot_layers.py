"""The layer graph's DOT text: boxes, numbers, summaries, heat maps, shapes on edges, clusters."""

import re
from pathlib import Path

import numpy as np
import pytest

from autodiff_cli.analysis.graph_model import expand, layer_graph
from autodiff_cli.language import parse
from autodiff_cli.language.program import ArrayLiteral
from autodiff_cli.render import backends
from autodiff_cli.render.dot import NEGATIVE, POSITIVE, heat_colour, layer_dot

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
    ids = re.findall(r"^\t(t\d+) \[label=<", text, re.MULTILINE)
    assert ids == ["t0", "t1", "t2", "t3", "t6"]  # X, Y, W, P, L: the registers
    edges = re.findall(r'^\t(t\d+) -> (t\d+) \[label="([^"]*)"', text, re.MULTILINE)
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
    assert re.search(r"^\t\tx0v\d+ \[label=", text, re.MULTILINE)
    assert re.search(r"^\t\tx0v\d+ -> x0v\d+_op$", text, re.MULTILINE)
    # edges from X and W end at the cluster's border, and the one to L starts there
    assert re.search(r'^\tt0 -> x0v\d+ \[label="\[8, 2\]" lhead="cluster_x0"\]', text, re.MULTILINE)
    assert re.search(r'^\tx0v\d+ -> t6 \[label="\[8, 1\]" ltail="cluster_x0"[^\n]*\]$', text, re.MULTILINE)


@pytest.mark.skipif(backends.bundled_program() is None, reason="graphviz-pure is not installed")
def test_the_bundled_renderer_draws_it() -> None:
    graph = regression_graph()
    svg = backends.render(layer_dot(graph, expansions=[expand(graph, "P")]), "svg", "bundled").decode()
    assert "<svg" in svg and "cluster_x0" in svg


def moons_graph():
    return layer_graph(parse((SAMPLES / "moons_mlp.ad").read_text(), "moons_mlp.ad"), {})


def test_each_parameter_sits_beside_the_layer_that_reads_it() -> None:
    graph = moons_graph()
    ids = {node.title: f"t{node.register}" for node in graph.nodes}
    text = layer_dot(graph, rankdir="TB")
    for weight, bias, layer in (("W1", "b1", "h1"), ("W2", "b2", "h2"), ("W3", "b3", "score")):
        assert f"{{rank=same; {ids[weight]}; {ids[layer]}}}" in text
        assert f"{{rank=same; {ids[bias]}; {ids[layer]}}}" in text
        # the weight on the left (an edge into the layer), the bias on the right (drawn from it, backwards)
        assert re.search(rf"^\t{ids[weight]} -> {ids[layer]} \[", text, re.MULTILINE)
        assert re.search(rf'^\t{ids[layer]} -> {ids[bias]} \[dir="back"', text, re.MULTILINE)
    # x starts the column, above h1; y sits beside hinge, the statement that reads it
    assert f"{ids['x']}; " not in text and f"{{rank=same; {ids['y']}; {ids['hinge']}}}" in text


def test_a_later_use_of_a_parameter_is_a_note_not_an_edge_across_the_picture() -> None:
    graph = moons_graph()
    ids = {node.title: f"t{node.register}" for node in graph.nodes}
    text = layer_dot(graph, rankdir="TB")
    assert not re.search(rf"^\t{ids['W1']} -> {ids['loss']}\b", text, re.MULTILINE)
    assert 'label="reads W1, b1, W2, b2, W3, b3 (drawn above)"' in text
    assert f"{{rank=same; {ids['loss']}; u{ids['loss'][1:]}}}" in text


def test_a_number_s_shape_reads_scalar() -> None:
    text = layer_dot(moons_graph(), rankdir="TB")
    assert ">[]<" not in text and 'label="[]"' not in text
    assert '>scalar</TD>' in text and 'label="scalar"' in text


def _boxes(svg: str) -> dict[str, tuple[float, float, float, float]]:
    """Each node's title -> (left, top, right, bottom) of its outline, from a Graphviz SVG."""
    import xml.etree.ElementTree as ET

    ns = {"s": "http://www.w3.org/2000/svg"}
    boxes = {}
    for group in ET.fromstring(svg).iter("{http://www.w3.org/2000/svg}g"):
        title = group.find("s:title", ns)
        shape = group.find("s:polygon", ns)
        if group.get("class") != "node" or title is None or shape is None:
            continue
        points = [tuple(map(float, p.split(","))) for p in shape.get("points").split()]
        xs, ys = [p[0] for p in points], [p[1] for p in points]
        boxes[title.text] = (min(xs), min(ys), max(xs), max(ys))
    return boxes


@pytest.mark.parametrize("renderer", ["system", "bundled"])
def test_the_layers_are_laid_out_as_one_column_read_top_to_bottom(renderer) -> None:
    if (backends.system_program() if renderer == "system" else backends.bundled_program()) is None:
        pytest.skip(f"the {renderer} renderer is not installed")
    graph = moons_graph()
    ids = {node.title: f"t{node.register}" for node in graph.nodes}
    boxes = _boxes(backends.render(layer_dot(graph, rankdir="TB"), "svg", renderer).decode())
    centre = {name: ((b[0] + b[2]) / 2, (b[1] + b[3]) / 2) for name, b in boxes.items()}
    column = [ids[name] for name in ("x", "h1", "h2", "score", "hinge", "loss")]
    assert all(abs(centre[i][0] - centre[column[0]][0]) < 1 for i in column)  # one straight column
    assert all(centre[a][1] < centre[b][1] for a, b in zip(column, column[1:]))  # top to bottom
    for weight, bias, layer in (("W1", "b1", "h1"), ("W2", "b2", "h2"), ("W3", "b3", "score")):
        assert abs(centre[ids[weight]][1] - centre[ids[layer]][1]) < 1  # beside it
        assert boxes[ids[weight]][2] < boxes[ids[layer]][0] < boxes[ids[layer]][2] < boxes[ids[bias]][0]


def _svg_size_px(svg: str) -> tuple[float, float]:
    """The picture's width and height in pixels at 100% zoom (Graphviz writes points: 96/72 px each)."""
    width, height = (float(re.search(r'<svg width="([\d.]+)pt" height="([\d.]+)pt"', svg).group(i)) for i in (1, 2))
    return width * 96 / 72, height * 96 / 72


@pytest.mark.parametrize("renderer", ["system", "bundled"])
def test_an_expanded_vector_layer_is_read_in_bands_in_row_major_order(renderer) -> None:
    if (backends.system_program() if renderer == "system" else backends.bundled_program()) is None:
        pytest.skip(f"the {renderer} renderer is not installed")
    graph = moons_graph()
    expansion = expand(graph, "h1")
    text = layer_dot(graph, rankdir="TB", expansions=[expansion])
    svg = backends.render(text, "svg", renderer).decode()
    width, _ = _svg_size_px(svg)
    assert width <= 1600  # readable at 100% zoom: it was about 5,000 px wide, 16 entries side by side
    names = expansion.model.names
    boxes = _boxes(svg)
    ids = {names[int(title[3:])]: box for title, box in boxes.items() if re.fullmatch(r"x0v\d+", title)}
    centre = {name: ((b[0] + b[2]) / 2, (b[1] + b[3]) / 2) for name, b in ids.items()}

    def reading_order(entries: list[str]) -> list[str]:  # band by band, top to bottom; left to right in one
        rows: list[list[str]] = []
        for name in sorted(entries, key=lambda n: centre[n][1]):
            if rows and abs(centre[rows[-1][0]][1] - centre[name][1]) < 1:
                rows[-1].append(name)
            else:
                rows.append([name])
        return [name for row in rows for name in sorted(row, key=lambda n: centre[n][0])]

    outputs = [f"h1[{i}]" for i in range(16)]
    assert reading_order(outputs) == outputs
    weights = [f"W1[{i}, {j}]" for i in range(16) for j in range(2)]
    assert reading_order(weights) == weights
    # 16 entries of 10 boxes at their widest rank: 4 a band, so 4 rows of outputs
    assert len({round(centre[name][1]) for name in outputs}) == 4
    assert "4 bands of entries, a dashed box repeats a value drawn in a band above" in text


def test_a_value_read_by_a_later_band_is_drawn_again_there_dashed() -> None:
    graph = moons_graph()
    expansion = expand(graph, "h1")
    text = layer_dot(graph, rankdir="TB", expansions=[expansion])
    x0 = expansion.model.names.index("x[0]")
    copies = re.findall(rf'^\t\tx0v{x0}_r(\d) \[label="\{{ x\[0\] \| data 0\.0981 \| grad 0\.3774 }}"[^\n]*'
                        r'style="filled,dashed"\]$', text, re.MULTILINE)
    assert copies == ["1", "2", "3"]  # once in each band after the first, with the value's own numbers
    # each product of a later band reads the copy in its band, not the box three bands up
    for band in (1, 2, 3):
        assert len(re.findall(rf"^\t\tx0v{x0}_r{band} -> x0v\d+_op$", text, re.MULTILINE)) == 4
    assert len(re.findall(rf"^\t\tx0v{x0} -> x0v\d+_op$", text, re.MULTILINE)) == 4


def test_left_to_right_an_expansion_is_one_band() -> None:
    graph = moons_graph()
    text = layer_dot(graph, rankdir="LR", expansions=[expand(graph, "h1")])
    assert "_r1" not in text and "bands of entries" not in text


@pytest.mark.parametrize("renderer", ["system", "bundled"])
@pytest.mark.parametrize("names", [("W2",), ("h1", "W1"), ("b1",)])
def test_expanded_inputs_and_layers_lay_out_with_either_renderer(renderer, names) -> None:
    # rank constraints among an input's entries made Graphviz stop with "trouble in init_rank"
    if (backends.system_program() if renderer == "system" else backends.bundled_program()) is None:
        pytest.skip(f"the {renderer} renderer is not installed")
    graph = moons_graph()
    expansions = [expand(graph, name) for name in names]
    svg = backends.render(layer_dot(graph, rankdir="TB", expansions=expansions), "svg", renderer).decode()
    assert all(f"cluster_x{number}" in svg for number in range(len(names)))


def _installed(renderer: str) -> None:
    if (backends.system_program() if renderer == "system" else backends.bundled_program()) is None:
        pytest.skip(f"the {renderer} renderer is not installed")


COMPARED = """x = [1, -2, 3]
W = [[1, 2, 3], [4, 5, 6]]
h = W @ x
m = h > 0
y = where(m, h, 0)
L = sum(y * y)
"""


@pytest.mark.parametrize("renderer", ["system", "bundled"])
@pytest.mark.parametrize("rankdir", ["TB", "LR"])
def test_an_expanded_comparison_is_laid_out(renderer, rankdir) -> None:
    # A comparison's entries are constants to the gradient: leaves of the scalar view with an edge
    # in from h and one out to y.  Top to bottom, the system Graphviz stopped with "lost x0v4 t6 edge".
    _installed(renderer)
    graph = layer_graph(parse(COMPARED, "compared.ad"), {})
    expansion = expand(graph, "m")
    svg = backends.render(layer_dot(graph, rankdir=rankdir, expansions=[expansion]), "svg", renderer).decode()
    titles = set(_boxes(svg))
    names = expansion.model.names
    assert {f"x0v{names.index(f'm[{i}]')}" for i in range(2)} <= titles  # W @ x = [14, 32]: both entries drawn


GATHERED = """C = [[0.1, 0.2], [1.1, 1.2], [2.1, 2.2], [3.1, 3.2]]
X = [[2, 0, 3], [1, 1, 0]]
emb = C[X]
L = sum(emb * emb)
"""


@pytest.mark.parametrize("renderer", ["system", "bundled"])
def test_the_rows_a_gather_picks_read_in_order(renderer) -> None:
    # Row 0 of X picks C's rows 2, 0 and 3: drawn right to left before, they must read left to right.
    _installed(renderer)
    graph = layer_graph(parse(GATHERED, "gathered.ad"), {})
    expansion = expand(graph, "emb", 0)
    svg = backends.render(layer_dot(graph, rankdir="TB", expansions=[expansion]), "svg", renderer).decode()
    names = expansion.model.names
    boxes = {names[int(title[3:])]: box for title, box in _boxes(svg).items() if re.fullmatch(r"x0v\d+", title)}
    picked = [f"C[{row}, {column}]" for row in (2, 0, 3) for column in (0, 1)]
    assert sorted(boxes) == sorted(picked)
    assert sorted(picked, key=lambda name: boxes[name][0]) == picked


@pytest.mark.parametrize("renderer", ["system", "bundled"])
def test_a_layer_of_scalar_statements_reads_in_the_program_s_order(renderer) -> None:
    # samples/moons.ad drawn a box per statement put h1_11 ... h1_16 above h1_1 ... h1_10.
    _installed(renderer)
    program = parse((SAMPLES / "moons.ad").read_text(), "moons.ad")
    graph = layer_graph(program, {})
    ids = {node.title: f"t{node.register}" for node in graph.nodes}
    boxes = _boxes(backends.render(layer_dot(graph, inputs_drawn=False), "svg", renderer).decode())
    for layer in ("h1", "h2"):
        names = [f"{layer}_{i}" for i in range(1, 17)]
        assert sorted(names, key=lambda name: boxes[ids[name]][1]) == names  # top to bottom, left to right


def test_a_gather_is_drawn_as_a_lookup_of_the_table_by_the_index() -> None:
    # emb = C[X]: C's edge says the table's shape; X's says it is an index, dashed (no gradient
    # flows along it), and X, read only as an index, has no gradient drawn.
    graph = layer_graph(parse(GATHERED, "gathered.ad"), {})
    ids = {node.title: f"t{node.register}" for node in graph.nodes}
    text = layer_dot(graph, rankdir="TB")
    assert re.search(rf'^\t{ids["C"]} -> {ids["emb"]} \[label="\[4, 2\]"', text, re.M)
    edge = re.search(rf'^\t{ids["X"]} -> {ids["emb"]} \[(.*)\]$', text, re.M).group(1)
    assert 'label="index [2, 3]"' in edge and 'style="dashed"' in edge
    x_box = re.search(rf"^\t{ids['X']} \[label=<(.*)> ", text, re.M).group(1)
    assert ">data<" in x_box and ">grad<" not in x_box
    c_box = re.search(rf"^\t{ids['C']} \[label=<(.*)> ", text, re.M).group(1)
    assert ">grad<" in c_box  # the table has one: 2 * C[r] summed over the times row r is picked


@pytest.mark.parametrize("renderer", ["system", "bundled"])
def test_a_row_a_gather_picks_twice_is_drawn_twice(renderer) -> None:
    # X's row 1 picks C's rows 1, 1 and 0: the repeated row was one set of boxes, so the picture did
    # not show three rows picked; the second pick is a dashed copy, in its place in row-major order.
    _installed(renderer)
    graph = layer_graph(parse(GATHERED, "gathered.ad"), {})
    expansion = expand(graph, "emb", 1)
    text = layer_dot(graph, rankdir="TB", expansions=[expansion])
    names = expansion.model.names
    first = {column: names.index(f"C[1, {column}]") for column in (0, 1)}
    for column, position in first.items():
        assert re.search(rf'^\t\tx0v{position}_c1 \[label="\{{ C\[1, {column}\] \|[^\n]*style="filled,dashed"\]$',
                         text, re.M)
    svg = backends.render(text, "svg", renderer).decode()
    boxes = _boxes(svg)
    order = [f"x0v{first[0]}", f"x0v{first[1]}", f"x0v{first[0]}_c1", f"x0v{first[1]}_c1",
             f"x0v{names.index('C[0, 0]')}", f"x0v{names.index('C[0, 1]')}"]
    assert sorted(order, key=lambda title: boxes[title][0]) == order
