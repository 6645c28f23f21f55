"""`autodiff graph` of a tensor program: the layer graph, expansions, the scalar level, limits."""

import re

import pytest

from autodiff_cli.cli import main
from autodiff_cli.render import backends

needs_bundled = pytest.mark.skipif(backends.bundled_program() is None, reason="graphviz-pure is not installed")


@pytest.fixture
def run(runner):
    def invoke(*args):
        return runner.invoke(main, ["graph", *args], catch_exceptions=False)

    return invoke


def test_the_layer_graph_as_dot(run, samples) -> None:
    result = run(str(samples / "moons_mlp.ad"), "--format", "dot")
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert 'rankdir="TB"' in text
    for layer in ("<B>h1</B> = relu(W1 @ x + b1)", "<B>h2</B> = relu(W2 @ h1 + b2)",
                  "<B>score</B> = (W3 @ h2 + b3)[0]"):
        assert layer in text
    assert len(re.findall(r"^\tt\d+ \[label=<", text, re.M)) == 13  # 8 inputs and 5 statements
    assert '[label="[16, 2]"]' in text  # W1 -> h1


@needs_bundled
@pytest.mark.parametrize("name, start", [("g.svg", b"<?xml"), ("g.png", b"\x89PNG"), ("g.dot", b"digraph")])
def test_formats(run, samples, tmp_path, name, start) -> None:
    out = tmp_path / name
    result = run(str(samples / "regression_matrix.ad"), "--renderer", "bundled", "-o", str(out))
    assert result.exit_code == 0, result.output
    assert out.read_bytes().startswith(start)


@pytest.mark.skipif(backends.system_program() is None, reason="no system Graphviz for PDF")
def test_pdf_with_the_system_graphviz(run, samples, tmp_path) -> None:
    out = tmp_path / "g.pdf"
    result = run(str(samples / "regression_matrix.ad"), "-o", str(out))
    assert result.exit_code == 0, result.output
    assert out.read_bytes().startswith(b"%PDF")


@needs_bundled
def test_the_same_program_gives_the_same_svg(run, samples, tmp_path) -> None:
    first, second = tmp_path / "a.svg", tmp_path / "b.svg"
    for out in (first, second):
        assert run(str(samples / "moons_mlp.ad"), "--renderer", "bundled", "-o", str(out)).exit_code == 0
    assert first.read_bytes() == second.read_bytes()


def test_ops_level_draws_each_tensor_operation(run, samples) -> None:
    result = run(str(samples / "moons_mlp.ad"), "--level", "ops", "--format", "dot")
    assert result.exit_code == 0, result.output
    assert "W1 @ x" in result.stdout and "\u00b7 + b1" in result.stdout


def test_expand_opens_a_layer_for_one_row(run, samples) -> None:
    result = run(str(samples / "regression_matrix.ad"), "--expand", "P", "--row", "3", "--format", "dot")
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert "subgraph cluster_x0" in text and "row 3" in text
    assert "P[3, 0]" in text and "P[0, 0]" not in text
    assert "X[3, 1]" in text


def test_level_scalar_is_todays_graph_of_every_entry(run, samples) -> None:
    result = run(str(samples / "regression_matrix.ad"), "--level", "scalar", "--format", "dot")
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert "shape=record" in text and "rankdir=LR" in text  # render.dot's graph, as for a scalar program
    for entry in ("P[0, 0]", "P[7, 0]", "W[1, 0]", "X[7, 1]"):
        assert entry in text


def test_max_nodes_names_the_ways_out(run, samples) -> None:
    result = run(str(samples / "regression_matrix.ad"), "--expand", "P", "--max-nodes", "6", "-o", "-",
                 "--format", "svg")
    assert result.exit_code == 1
    assert "more than --max-nodes 6" in result.stderr
    assert "--expand" in result.stderr and "--format dot" in result.stderr


def test_tensor_options_on_a_scalar_program_are_a_usage_error(run) -> None:
    result = run("-e", "y = x*2", "--set", "x=1", "--expand", "y", "--format", "dot")
    assert result.exit_code == 2
    assert "--expand is for tensor programs" in result.stderr


def test_expanding_an_unknown_name(run, samples) -> None:
    result = run(str(samples / "regression_matrix.ad"), "--expand", "Q", "--format", "dot")
    assert result.exit_code == 2 or result.exit_code == 1
    assert "no variable 'Q'" in result.stderr and "Traceback" not in result.output


def test_a_vector_output_needs_no_grad(run) -> None:
    result = run("-e", "x = [1, 2]\ny = x*3", "--format", "dot")
    assert result.exit_code != 0 and "--no-grad" in result.stderr
    assert run("-e", "x = [1, 2]\ny = x*3", "--no-grad", "--format", "dot").exit_code == 0


def test_params_names_the_parameters(run, samples) -> None:
    result = run(str(samples / "regression_matrix.ad"), "--params", "W", "--format", "dot")
    assert result.exit_code == 0, result.output
    assert result.stdout.count("parameters</I>") == 1 and "<I>2 parameters</I>" in result.stdout
    wrong = run(str(samples / "regression_matrix.ad"), "--params", "P", "--format", "dot")
    assert wrong.exit_code != 0 and "'P' is computed by the program" in wrong.stderr


def test_a_missing_input_is_an_error_naming_it(run) -> None:
    result = run("-e", "x = [1, 2]\ny = sum(x*w)", "--format", "dot")
    assert result.exit_code == 1
    assert "no value for input w" in result.stderr and "--set w=" in result.stderr


@pytest.mark.parametrize("row", ["3", "0"])
def test_row_of_a_vector_warns_that_it_is_drawn_whole(run, samples, row) -> None:
    result = run(str(samples / "moons_mlp.ad"), "--expand", "h1", "--row", row, "--format", "dot")
    assert result.exit_code == 0, result.output
    assert f"--row {row}: h1 has no rows to choose from (it is a vector), so all of it is drawn" in result.stderr
    assert "h1[15]" in result.stdout


def test_edge_grads_label_the_expanded_edges_only(run, samples) -> None:
    plain = run(str(samples / "regression_matrix.ad"), "--edge-grads", "--format", "dot")
    assert plain.exit_code == 0 and "the layer graph's edges say the shapes" in plain.stderr
    expanded = run(str(samples / "regression_matrix.ad"), "--set", "W=[[2.5], [-1.25]]", "--expand", "P",
                   "--edge-grads", "--format", "dot")
    # d(X[0, 0]*W[0, 0]) / dX[0, 0] = W[0, 0] = 2.5
    assert expanded.exit_code == 0 and 'label="2.5000"' in expanded.stdout


def test_level_scalar_with_expand_is_a_usage_error(run, samples) -> None:
    result = run(str(samples / "regression_matrix.ad"), "--level", "scalar", "--expand", "P", "--format", "dot")
    assert result.exit_code == 2 and "--expand is for the layer graph" in result.stderr


def test_the_scalar_level_of_a_number_output(run, samples) -> None:
    result = run(str(samples / "moons_mlp.ad"), "--level", "scalar", "--output", "score", "--format", "dot")
    assert result.exit_code == 0, result.output
    assert "score" in result.stdout and "hinge" not in result.stdout


def test_a_gradient_that_is_not_finite_is_named(run) -> None:
    # d sum(sqrt(x)) / dx = 1 / (2 sqrt(x)): infinite at x = 0, 0.5 at x = 1
    result = run("-e", "x = [0, 1]\ny = sum(sqrt(x))", "--format", "dot")
    assert result.exit_code == 0, result.output
    assert "a gradient is not finite: dy/dx[0] = inf" in result.stderr
    assert ">inf</TD>" in result.stdout and ">0.5</TD>" in result.stdout


def test_the_page_names_the_command_for_a_layer_too_large_to_lay_out(run, tmp_path) -> None:
    out = tmp_path / "page.html"
    result = run("-e", "W = uniform([30, 40], -1, 1)\ny = mean(W**2)", "--renderer", "bundled", "-o", str(out))
    assert result.exit_code == 0, result.output
    html = out.read_text()
    assert "its scalar graph has more than 400 values, too many to lay out here" in html
    # 1,200 squares and their sum are more values than --max-nodes allows by default: lifted
    assert "--expand y --max-nodes 0 -o y.svg" in html and "may take minutes" in html


@pytest.mark.parametrize("args, said", [
    (["samples/quadratic.ad", "--row", "3"], "--row is for tensor programs"),
    (["samples/quadratic.ad", "--level", "ops"], "--level ops is for tensor programs"),
    (["samples/regression_matrix.ad", "--row", "3"], "--row chooses the row --expand opens"),
])
def test_options_that_do_nothing_here_are_usage_errors(run, tmp_path, samples, args, said) -> None:
    result = run(str(samples / args[0].split("/")[1]), *args[1:], "-o", str(tmp_path / "g.svg"))
    assert result.exit_code == 2 and said in result.stderr
    assert not (tmp_path / "g.svg").exists()


EMPTY_SLICE = "x = [1, 2, 3]\ns = x[2:1]\ny = sum(s)"


@pytest.mark.parametrize("program", ["x = zeros([0, 3])\ny = sum(x)", EMPTY_SLICE])
@pytest.mark.parametrize("renderer", ["system", "bundled"])
def test_a_tensor_with_no_entries_is_drawn_as_such(run, tmp_path, program, renderer) -> None:
    if renderer == "bundled" and backends.bundled_program() is None:
        pytest.skip("graphviz-pure is not installed")
    if renderer == "system" and backends.system_program() is None:
        pytest.skip("the system Graphviz is not installed")
    out = tmp_path / "empty.svg"
    result = run("-e", program, "--renderer", renderer, "-o", str(out))
    assert result.exit_code == 0, result.stderr
    assert "no entries" in out.read_text()


@pytest.mark.parametrize("args, said", [
    (["--expand", "s"], "--expand s: s (shape [0]) has no entries"),
    (["--expand", "y"], "--expand y: s (shape [0]) has no entries"),
    (["--level", "scalar"], "--level scalar: s (shape [0]) has no entries"),
])
def test_no_scalar_graph_of_a_tensor_with_no_entries(run, args, said) -> None:
    result = run("-e", EMPTY_SLICE, *args, "--format", "dot")
    assert result.exit_code == 1
    assert said in result.stderr and "Traceback" not in result.stderr


def test_the_page_of_a_tensor_with_no_entries_says_it_has_no_scalar_graph(run, tmp_path) -> None:
    out = tmp_path / "empty.html"
    result = run("-e", EMPTY_SLICE, "-o", str(out))
    assert result.exit_code == 0, result.stderr
    assert "no scalar graph: s (shape [0]) has no entries" in out.read_text()


LAYERED = """x = [0.5, -1.2]
W1 = uniform([16, 2], -1, 1)
b1 = zeros([16])
W2 = uniform([16, 16], -1, 1)
W3 = uniform([1, 16], -1, 1)
h1 = relu(W1 @ x + b1)
h2 = relu(W2 @ h1)
score = (W3 @ h2)[0]
loss = relu(1 - score)
"""


@pytest.mark.parametrize("renderer", ["system", "bundled"])
def test_level_scalar_draws_a_layer_s_entries_in_order(run, tmp_path, renderer) -> None:
    # Graphviz alone drew h1[13], h1[15], h1[11] ... top to bottom (moons_mlp.ad: h1[13] first).
    if (backends.system_program() if renderer == "system" else backends.bundled_program()) is None:
        pytest.skip(f"the {renderer} renderer is not installed")
    program = tmp_path / "layered.ad"
    program.write_text(LAYERED)
    result = run(str(program), "--level", "scalar", "--renderer", renderer)
    assert result.exit_code == 0, result.output
    for layer, size in (("h1", 16), ("h2", 16)):
        found = re.findall(rf'<text[^>]* y="([\d.-]+)"[^>]*>({layer}\[\d+\])</text>', result.stdout)
        top_to_bottom = [name for _, name in sorted(found, key=lambda found: float(found[0]))]
        assert top_to_bottom == [f"{layer}[{i}]" for i in range(size)]
