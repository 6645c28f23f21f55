"""`autodiff graph`: formats, destinations, options, limits, errors and exit codes."""

import json
import os
import re
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import click
import pytest

from autodiff_cli.cli import graph as cli_graph
from autodiff_cli.cli import main
from autodiff_cli.cli.graph import DEFAULT_MAX_NODES
from autodiff_cli.render import backends as render

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "render" / "golden"
SVG = "{http://www.w3.org/2000/svg}"
KARPATHY = "L = (a*b + c)*f"
KARPATHY_SETS = ["--set", "a=2", "--set", "b=-3", "--set", "c=10", "--set", "f=-2"]


@pytest.fixture
def app() -> click.Group:
    return main


@pytest.fixture
def run(runner, app):
    def invoke(*args, input=None):
        return runner.invoke(app, ["graph", *args], input=input, catch_exceptions=False)

    return invoke


def svg_texts(svg: bytes) -> list[str]:
    return [(t.text or "").strip() for t in ET.fromstring(svg).iter(f"{SVG}text")]


def no_traceback(result) -> None:
    assert "Traceback" not in result.output and "Traceback" not in result.stderr


# --- formats and destinations ------------------------------------------------------------------


def test_dot_file_matches_the_golden(run, samples, tmp_path) -> None:
    out = tmp_path / "karpathy.dot"
    result = run(str(samples / "karpathy.ad"), "-o", str(out))
    assert result.exit_code == 0, result.output
    assert out.read_text() == (GOLDEN / "karpathy.dot").read_text()
    assert result.stdout == ""


def test_format_follows_the_extension(run, samples, tmp_path) -> None:
    for name, start in [("g.svg", b"<?xml"), ("g.png", b"\x89PNG"), ("g.gv", b"digraph o {"),
                        ("G.SVG", b"<?xml")]:
        result = run(str(samples / "neuron.ad"), "-o", str(tmp_path / name), "--renderer", "bundled")
        assert result.exit_code == 0, result.output
        assert (tmp_path / name).read_bytes().startswith(start), name


def test_svg_names_every_variable_with_its_numbers(run, samples, tmp_path) -> None:
    out = tmp_path / "neuron.svg"
    run(str(samples / "neuron.ad"), "-o", str(out), "--renderer", "bundled")
    texts = svg_texts(out.read_bytes())
    # Hand-worked: x1 -1.5, w1 1.0, x2 0.5, w2 0.0; o = tanh(0.8814) = 0.7071.
    for name, data, grad in [("x1", "2.0000", "-1.5000"), ("w1", "-3.0000", "1.0000"),
                             ("x2", "0.0000", "0.5000"), ("w2", "1.0000", "0.0000"),
                             ("o", "0.7071", "1.0000")]:
        index = texts.index(name)
        assert texts[index + 1:index + 3] == [f"data {data}", f"grad {grad}"]


def test_stdout_defaults_to_svg(run) -> None:
    result = run(KARPATHY, *KARPATHY_SETS, "--renderer", "bundled")
    assert result.exit_code == 0
    assert result.stdout_bytes.startswith(b"<?xml")
    assert "grad 6.0000" in svg_texts(result.stdout_bytes)


def test_explicit_format_to_stdout(run) -> None:
    assert run(KARPATHY, *KARPATHY_SETS, "--format", "dot").stdout.startswith("digraph L {")
    assert run(KARPATHY, *KARPATHY_SETS, "--format", "dot", "-o", "-").stdout.startswith("digraph L {")


def test_png_to_a_pipe_is_written_as_bytes(run) -> None:
    # CliRunner's stdout is not a terminal, like a pipe.
    result = run(KARPATHY, *KARPATHY_SETS, "--format", "png", "--renderer", "bundled")
    assert result.exit_code == 0
    assert result.stdout_bytes.startswith(b"\x89PNG\r\n\x1a\n")


@pytest.mark.parametrize("fmt", ["png", "pdf"])
def test_binary_to_a_terminal_is_refused(run, monkeypatch, fmt) -> None:
    monkeypatch.setattr(cli_graph, "stdout_is_terminal", lambda: True)
    result = run(KARPATHY, *KARPATHY_SETS, "--format", fmt)
    assert result.exit_code == 2
    assert f"refusing to write binary {fmt.upper()} to a terminal" in result.stderr
    assert f"-o graph.{fmt}" in result.stderr
    assert result.stdout_bytes == b""


def test_svg_to_a_terminal_is_fine(run, monkeypatch) -> None:
    monkeypatch.setattr(cli_graph, "stdout_is_terminal", lambda: True)
    assert run(KARPATHY, *KARPATHY_SETS, "--format", "dot").exit_code == 0


def test_svg_text_at_a_terminal_says_how_to_draw_a_picture(run, monkeypatch) -> None:
    monkeypatch.setattr(cli_graph, "stdout_is_terminal", lambda: True)
    result = run(KARPATHY, *KARPATHY_SETS)
    assert result.exit_code == 0 and result.stdout_bytes.startswith(b"<?xml")
    assert "-o graph.svg" in result.stderr
    monkeypatch.undo()
    piped = run(KARPATHY, *KARPATHY_SETS)  # not a terminal: the SVG alone, for the pipe
    assert "-o graph.svg" not in piped.stderr


def test_unknown_extension_is_a_usage_error(run, tmp_path) -> None:
    result = run(KARPATHY, *KARPATHY_SETS, "-o", str(tmp_path / "graph.jpg"))
    assert result.exit_code == 2
    assert "cannot tell the format from the file name" in result.stderr
    assert "--format svg|png|pdf|dot" in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_format_option_wins_over_the_extension_with_a_warning(run, tmp_path) -> None:
    out = tmp_path / "graph.svg"
    result = run(KARPATHY, *KARPATHY_SETS, "-o", str(out), "--format", "dot")
    assert result.exit_code == 0
    assert out.read_text().startswith("digraph L {")
    assert "warning: writing DOT to" in result.stderr


# --- options -----------------------------------------------------------------------------------


def test_values_from_json_and_output(run, tmp_path) -> None:
    values = tmp_path / "values.json"
    values.write_text(json.dumps({"a": 2, "b": -3, "c": 10, "f": -2}))
    result = run("e = a*b; d = e + c; L = d*f", "--values", str(values), "--output", "d", "--format", "dot")
    assert result.exit_code == 0, result.output
    assert '"{ d | data 4.0000 | grad 1.0000 }"' in result.stdout
    assert "{ L" not in result.stdout and "{ f" not in result.stdout
    assert "warning: f, L do not affect d, so they are not drawn" in result.stderr


def test_unset_inputs_draw_the_structure(run, tmp_path) -> None:
    out = tmp_path / "structure.svg"
    result = run(KARPATHY, "--set", "a=2", "-o", str(out), "--renderer", "bundled")
    assert result.exit_code == 0, result.output
    assert "no value for b, c, f: drawing the structure only" in result.stderr
    texts = svg_texts(out.read_bytes())
    assert {"a", "b", "c", "f", "L", "*", "+"} <= set(texts)
    assert not [t for t in texts if t.startswith(("data", "grad"))]


def test_structure_matches_the_golden(run) -> None:
    result = run(KARPATHY, "--format", "dot", "--edge-grads")
    assert result.stdout == (GOLDEN / "karpathy_structure.dot").read_text()
    assert "--edge-grads needs values" in result.stderr


def test_no_grad_edge_grads_precision_rankdir(run, samples) -> None:
    result = run(str(samples / "neuron.ad"), "--format", "dot", "--edge-grads")
    assert result.stdout == (GOLDEN / "neuron_edge_grads.dot").read_text()
    result = run(str(samples / "neuron_exp.ad"), "--format", "dot", "--no-grad", "--rankdir", "TB",
                 "--precision", "3")
    assert result.stdout == (GOLDEN / "neuron_exp_tb_forward.dot").read_text()


def test_bad_option_values_are_usage_errors(run) -> None:
    for args in (["--rankdir", "RL"], ["--precision", "-1"], ["--format", "gif"], ["--renderer", "cairo"],
                 ["--max-nodes", "-5"], ["--set", "a"]):
        result = run(KARPATHY, *KARPATHY_SETS, *args)
        assert result.exit_code == 2, args
        no_traceback(result)


# --- limits ------------------------------------------------------------------------------------


def test_more_nodes_than_the_limit_is_refused(run, samples, tmp_path) -> None:
    out = tmp_path / "graph.svg"
    result = run(str(samples / "karpathy.ad"), "-o", str(out), "--max-nodes", "6")
    assert result.exit_code == 1
    assert "error: the graph of L has 7 values, more than --max-nodes 6" in result.stderr
    assert "--max-nodes 0 for none" in result.stderr and "--format dot" in result.stderr
    assert not out.exists()


def test_the_limit_is_inclusive_and_can_be_lifted(run, samples, tmp_path) -> None:
    for limit in ("7", "0"):
        result = run(str(samples / "karpathy.ad"), "-o", str(tmp_path / "g.svg"), "--max-nodes", limit,
                     "--renderer", "bundled")
        assert result.exit_code == 0, result.output


def _reusing_chain(statements: int) -> str:
    # y_i = y_(i-1)*x + x: x feeds 2 operations a statement, spread along the whole chain.
    return "\n".join(["x = 0.5", "y0 = x", *(f"y{i} = y{i - 1}*x + x" for i in range(1, statements + 1))])


@pytest.mark.parametrize(("statements", "max_nodes", "refused"),
                         [(120, "300", True), (40, "300", False), (300, None, True)],
                         ids=["over-a-limit", "under-it", "over-the-default"])
def test_long_edges_count_against_the_limit(run, statements: int, max_nodes: str | None, refused: bool) -> None:
    # n statements make 2n + 2 values, under the limits, but x's edges pass 4n**2 + 2n points of
    # the layout (tests/analysis/test_graph_model.py works them out): 6,480 for 40 statements,
    # 57,840 for 120 (dot: ~13 s), 360,600 for 300 (more than 200 s); 150 are allowed a value.
    args = ["-e", _reusing_chain(statements), "--format", "svg"]
    if max_nodes is not None:
        args += ["--max-nodes", max_nodes]
    result = run(*args)
    if refused:
        assert result.exit_code == 1, result.output
        points = {120: "57,840", 300: "360,600"}[statements]
        assert (f"has {2 * statements + 2} values, but its edges are long: laid out, they would pass "
                f"{points} points") in result.stderr
        assert f"the longest start at 'x', used by {2 * statements + 1} operations far from it" in result.stderr
        assert "--max-nodes 0 for none" in result.stderr
    else:
        assert result.exit_code == 0, result.output
        assert "<svg" in result.stdout


@pytest.mark.parametrize("sample", ["moons", "mlp", "softmax_xent", "karpathy"])
def test_the_samples_are_within_the_default_limits(sample: str, samples) -> None:
    # moons.ad's long sum passes ~120,000 points: 21 s of Graphviz, which the limit must allow.
    from autodiff_cli.analysis.graph_model import GraphModel
    from autodiff_cli.render.graph_drawing import DEFAULT_MAX_NODES, POINTS_PER_NODE, check_layout_size
    from autodiff_cli.execute import evaluate
    from autodiff_cli.language import parse

    path = samples / f"{sample}.ad"
    model = GraphModel.of(evaluate(parse(path.read_text(), str(path)), allow_missing=True))
    check_layout_size(model, DEFAULT_MAX_NODES)  # raises GraphTooLarge if refused
    assert model.long_edges.points <= POINTS_PER_NODE * DEFAULT_MAX_NODES


def test_dot_output_has_no_limit(run, samples) -> None:
    assert run(str(samples / "karpathy.ad"), "--format", "dot", "--max-nodes", "1").exit_code == 0


def test_the_default_limit_refuses_a_generated_program(run) -> None:
    # x0**2 + x1**2 + ...: x0**2 is 2 values, and each further term adds x_i, its square and a
    # sum, so n terms make 2 + 3(n - 1) = 3n - 1 values: just over the limit for this n.
    n = (DEFAULT_MAX_NODES + 1) // 3 + 1
    assert 3 * n - 1 > DEFAULT_MAX_NODES >= 3 * (n - 1) - 1
    program = " + ".join(f"x{i}**2" for i in range(n))
    result = run(program, "--renderer", "bundled")
    assert result.exit_code == 1
    assert f"has {3 * n - 1:,} values, more than --max-nodes {DEFAULT_MAX_NODES:,}" in result.stderr


# --- errors: exit 1, no traceback, nothing written ------------------------------------------------


def test_program_error_writes_nothing(run, tmp_path) -> None:
    out = tmp_path / "graph.svg"
    out.write_text("old")
    result = run("y = (a*b + c", "-o", str(out))
    assert result.exit_code == 1
    assert "<expr>:1:13: error: unexpected end of input" in result.stderr
    no_traceback(result)
    assert out.read_text() == "old"


def test_domain_error_writes_nothing(run, tmp_path) -> None:
    out = tmp_path / "graph.png"
    result = run("y = log(x)", "--set", "x=-1", "-o", str(out))
    assert result.exit_code == 1
    assert "log" in result.stderr and "hint:" in result.stderr
    assert not out.exists()


def test_pdf_without_system_graphviz(run, monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(render, "system_program", lambda: None)
    out = tmp_path / "graph.pdf"
    result = run(KARPATHY, *KARPATHY_SETS, "-o", str(out))
    assert result.exit_code == 1
    assert "error: PDF output needs the system Graphviz" in result.stderr
    assert "apt-get install graphviz" in result.stderr and "brew install graphviz" in result.stderr
    assert not out.exists()


@pytest.mark.skipif(os.name == "nt", reason="uses a shell script as a fake renderer")
def test_a_failed_render_keeps_the_existing_file(run, monkeypatch, tmp_path) -> None:
    broken = tmp_path / "graphviz-pure"
    broken.write_text("#!/bin/sh\necho 'Error: layout failed' >&2\nexit 1\n")
    broken.chmod(0o755)
    monkeypatch.setattr(render, "bundled_program", lambda: str(broken))
    out = tmp_path / "graph.svg"
    out.write_bytes(b"<svg>old</svg>")
    result = run(KARPATHY, *KARPATHY_SETS, "-o", str(out), "--renderer", "bundled")
    assert result.exit_code == 1
    assert "failed to render SVG: Error: layout failed" in result.stderr
    no_traceback(result)
    assert out.read_bytes() == b"<svg>old</svg>"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["graph.svg", "graphviz-pure"]


@pytest.mark.skipif(os.name == "nt", reason="uses a shell script as a fake renderer")
def test_a_render_past_the_timeout_is_stopped(run, monkeypatch, tmp_path) -> None:
    slow = tmp_path / "graphviz-pure"
    slow.write_text("#!/bin/sh\nwhile :; do :; done\n")  # built-ins only: no child to outlive the kill
    slow.chmod(0o755)
    monkeypatch.setattr(render, "bundled_program", lambda: str(slow))
    out = tmp_path / "graph.svg"
    result = run(KARPATHY, *KARPATHY_SETS, "-o", str(out), "--renderer", "bundled", "--timeout", "0.5")
    assert result.exit_code == 1
    assert "did not finish within 0.5 seconds, so it was stopped" in result.stderr
    assert "hint: allow more time with --timeout 2 (0: no limit)" in result.stderr
    assert not out.exists()


def test_unwritable_destination_is_reported_before_rendering(run, tmp_path) -> None:
    result = run(KARPATHY, *KARPATHY_SETS, "-o", str(tmp_path / "missing" / "g.svg"))
    assert result.exit_code == 1
    assert "does not exist" in result.stderr
    result = run(KARPATHY, *KARPATHY_SETS, "-o", str(tmp_path), "--format", "svg")
    assert result.exit_code == 1
    assert "it is a directory" in result.stderr


def test_missing_source_file(run) -> None:
    result = run("no/such/file.ad", "--format", "dot")
    assert result.exit_code == 1
    assert "no such file: no/such/file.ad" in result.stderr


# --- determinism and help ----------------------------------------------------------------------


def test_same_bytes_on_every_run(run, samples, tmp_path) -> None:
    outputs = []
    for index in range(2):
        out = tmp_path / f"run{index}.svg"
        run(str(samples / "mlp.ad"), "-o", str(out), "--renderer", "bundled", "--edge-grads")
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1]


def test_same_svg_from_two_processes(samples) -> None:
    command = [sys.executable, "-m", "autodiff_cli", "graph", str(samples / "neuron_exp.ad"), "--renderer", "bundled"]
    first, second = (subprocess.run(command, capture_output=True, check=True) for _ in range(2))
    assert first.stdout == second.stdout
    assert first.stdout.startswith(b"<?xml") and first.stderr == b""


def test_help_has_examples_and_exit_codes(run) -> None:
    result = run("--help")
    assert result.exit_code == 0
    for text in ("Examples:", "autodiff graph samples/karpathy.ad -o karpathy.svg", "--max-nodes",
                 "--renderer [auto|system|bundled]", "Exit status:", "usage error (2)"):
        assert text in result.stdout, text


@pytest.mark.parametrize(("name", "hand_worked"), [("karpathy", "grad 6.0000"), ("neuron", "grad -1.5000")])
def test_committed_sample_images_are_current(run, samples, tmp_path, name, hand_worked) -> None:
    # The README shows samples/karpathy.svg: it must be what the tool draws today.  Texts, not
    # bytes, are compared, so a newer graphviz-pure with another layout does not fail this.
    out = tmp_path / f"{name}.svg"
    assert run(str(samples / f"{name}.ad"), "-o", str(out), "--renderer", "bundled").exit_code == 0
    committed = svg_texts((samples / f"{name}.svg").read_bytes())
    assert committed == svg_texts(out.read_bytes())
    assert hand_worked in committed  # dL/da = 6, do/dx1 = -1.5


def _children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(child) for child in path.read_text().split()] if path.exists() else []


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc to find the child")
def test_sigterm_stops_the_layout_and_leaves_no_file(tmp_path) -> None:
    # A chain of ~4,000 values takes seconds to lay out: long enough to be caught in the act.
    lines = ["y0 = 0.5"] + [f"y{i} = tanh(y{i - 1}*0.9 + 0.1)" for i in range(1, 1000)]
    program = tmp_path / "big.ad"
    program.write_text("\n".join(lines) + "\n")
    out = tmp_path / "big.svg"
    process = subprocess.Popen([sys.executable, "-m", "autodiff_cli", "graph", str(program), "-o", str(out),
                                "--max-nodes", "0"], stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while not _children(process.pid) and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    layout = _children(process.pid)
    assert layout, "the renderer never started"
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=30) == 128 + signal.SIGTERM
    assert not Path(f"/proc/{layout[0]}").exists()  # the renderer was killed and reaped, not orphaned
    assert list(tmp_path.iterdir()) == [program]


def test_help_fits_80_columns_and_shows_what_works_after_pip_install(runner) -> None:
    from autodiff_cli.cli import main

    result = runner.invoke(main, ["graph", "--help"], terminal_width=80)
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80, max(lines, key=len)
    assert "dot -T" not in result.stdout  # the system Graphviz is not there after a plain pip install
    assert "autodiff graph samples/mlp.ad -o mlp.png" in result.stdout


def test_a_large_scalar_program_is_drawn_a_box_per_statement(run, samples) -> None:
    # samples/moons.ad: 1,660 values took Graphviz 21-26 s; its 35 statements lay out in about a second.
    result = run(str(samples / "moons.ad"), "--format", "dot")
    assert result.exit_code == 0, result.stderr
    assert "loss has 1,660 values: drawn a box per statement (35)" in result.stderr
    assert "--level scalar draws every value" in result.stderr
    boxes = re.findall(r"^\t(t\d+) \[label=<", result.stdout, re.M)
    assert len(boxes) == 16 + 16 + 3  # h1_*, h2_*, score, hinge, loss: no box per weight
    assert "<B>h1_1</B> = relu(b1_1 + w1_1_1*x1 + w1_1_2*x2)" in result.stdout
    assert "reads 5 inputs: w1_1_1, x1, b1_1, w1_1_2, x2" in result.stdout  # as the program reads them
    svg = run(str(samples / "moons.ad"), "--renderer", "bundled")
    assert svg.exit_code == 0 and "<svg" in svg.stdout


def test_level_scalar_draws_every_value_of_a_large_scalar_program(run, samples) -> None:
    result = run(str(samples / "moons.ad"), "--level", "scalar", "--format", "dot")
    assert result.exit_code == 0, result.stderr
    assert "drawn a box per statement" not in result.stderr
    assert "w1_1_1" in result.stdout and result.stdout.count("_op [label=") > 1000


def test_level_layers_draws_a_small_scalar_program_by_statement(run, samples) -> None:
    result = run(str(samples / "karpathy.ad"), "--level", "layers", "--format", "dot")
    assert result.exit_code == 0, result.stderr
    boxes = re.findall(r"^\t(t\d+) \[label=<", result.stdout, re.M)
    assert len(boxes) == 3  # e, d, L
    assert run(str(samples / "karpathy.ad"), "--level", "ops", "--format", "dot").exit_code == 2


def _layered_scalar_program() -> str:
    """An MLP written out a scalar at a time, 2-16-6, with h1_1 ... h1_16 and h2_1 ... h2_6."""
    import random

    draw = random.Random(1)
    lines = ["x1 = 0.5", "x2 = -1.2"]
    for i in range(1, 17):
        lines += [f"w1_{i}_1 = {draw.uniform(-1, 1):.3f}", f"w1_{i}_2 = {draw.uniform(-1, 1):.3f}"]
    lines += [f"w2_{j}_{i} = {draw.uniform(-1, 1):.3f}" for j in range(1, 7) for i in range(1, 17)]
    lines += [f"h1_{i} = relu(w1_{i}_1*x1 + w1_{i}_2*x2)" for i in range(1, 17)]
    lines += [f"h2_{j} = relu(" + " + ".join(f"w2_{j}_{i}*h1_{i}" for i in range(1, 17)) + ")" for j in range(1, 7)]
    lines.append("loss = " + " + ".join(f"h2_{j}" for j in range(1, 7)))
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("renderer", ["system", "bundled"])
def test_numbered_values_are_drawn_in_natural_order(run, tmp_path, renderer) -> None:
    # Graphviz alone drew h2_1, h2_4, h2_2, h2_3, ... top to bottom; in a layout that sorts names as
    # text h1_11 would come before h1_2: they read 1, 2, ..., 16.
    if (render.system_program() if renderer == "system" else render.bundled_program()) is None:
        pytest.skip(f"the {renderer} renderer is not installed")
    program = tmp_path / "layered.ad"
    program.write_text(_layered_scalar_program())
    result = run(str(program), "--renderer", renderer)
    assert result.exit_code == 0, result.output
    for layer, size in (("h1", 16), ("h2", 6)):
        found = re.findall(rf'<text[^>]* y="([\d.-]+)"[^>]*>({layer}_\d+)</text>', result.stdout)
        top_to_bottom = [name for _, name in sorted(found, key=lambda found: float(found[0]))]
        assert top_to_bottom == [f"{layer}_{i}" for i in range(1, size + 1)]
