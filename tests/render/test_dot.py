"""The DOT builder: golden files for the samples, labels, kinds, determinism, escaping, size."""

import math
import re
import subprocess
import sys
from pathlib import Path

import graphviz
import pytest

from autodiff_cli.engine import Value
from autodiff_cli.execute import evaluate
from autodiff_cli.language import parse
from autodiff_cli.render import backends as render
from autodiff_cli.render.dot import (
    KIND_STYLES,
    draw_dot,
    format_number,
    graph_size,
    omitted_names,
    to_digraph,
    to_dot,
)

GOLDEN = Path(__file__).parent / "golden"
SAMPLES = Path(__file__).resolve().parents[2] / "samples"

# Worked by hand (see the comments in the sample files): name -> (data, grad).
KARPATHY = {"a": (2.0, 6.0), "b": (-3.0, -4.0), "c": (10.0, -2.0), "e": (-6.0, -2.0),
            "d": (4.0, -2.0), "f": (-2.0, 4.0), "L": (-8.0, 1.0)}
# o = tanh(n), n = 0.8814 = atanh(1/sqrt 2); do/dn = 1 - o**2 = 0.5, passed unchanged through
# the sums; d(x1*w1)/dx1 = w1, d/dw1 = x1, and likewise for x2*w2.
NEURON = {"x1": (2.0, -1.5), "w1": (-3.0, 1.0), "x2": (0.0, 0.5), "w2": (1.0, 0.0),
          "x1w1": (-6.0, 0.5), "x2w2": (0.0, 0.5), "x1w1x2w2": (-6.0, 0.5), "b": (6.8814, 0.5),
          "n": (0.8814, 0.5), "o": (0.7071, 1.0)}

RECORD = re.compile(r'^\t(v\d+) \[label="\{ (.*?) \}" (.*)\]$', re.MULTILINE)
EDGE = re.compile(r'^\t(v\d+(?:_op)?) -> (v\d+(?:_op)?)(?: \[label="([^"]*)"\])?$', re.MULTILINE)


def sample(name: str, **options):
    path = SAMPLES / f"{name}.ad"
    return evaluate(parse(path.read_text(), str(path)), **options)


def records(text: str) -> dict[str, list[str]]:
    """Record title -> its fields, from DOT text; titles must be unique where this is used."""
    found = {}
    for _, label, _ in RECORD.findall(text):
        fields = label.split(" | ")
        assert fields[0] not in found, f"two records titled {fields[0]}"
        found[fields[0]] = fields[1:]
    return found


def fill_of(text: str, title: str) -> str:
    for _, label, attributes in RECORD.findall(text):
        if label.split(" | ")[0] == title:
            return attributes
    raise AssertionError(f"no record {title}")


# --- golden files (each reviewed by hand against the numbers above) ---------------------------


@pytest.mark.parametrize(
    ("golden", "build"),
    [
        ("karpathy.dot", lambda: to_dot(sample("karpathy"))),
        ("neuron.dot", lambda: to_dot(sample("neuron"))),
        ("neuron_edge_grads.dot", lambda: to_dot(sample("neuron"), edge_grads=True)),
        ("neuron_exp_tb_forward.dot",
         lambda: to_dot(sample("neuron_exp", backward=False), rankdir="TB", show_grad=False, precision=3)),
        ("karpathy_structure.dot", lambda: to_dot(evaluate(parse("L = (a*b + c)*f"), allow_missing=True))),
    ],
)
def test_golden(golden, build) -> None:
    assert build() == (GOLDEN / golden).read_text()


def test_karpathy_records_match_hand_worked_numbers() -> None:
    found = records(to_dot(sample("karpathy")))
    assert set(found) == set(KARPATHY)
    for name, (data, grad) in KARPATHY.items():
        assert found[name] == [f"data {data:.4f}", f"grad {grad:.4f}"], name


def test_neuron_records_match_hand_worked_numbers() -> None:
    found = records(to_dot(sample("neuron")))
    assert set(found) == set(NEURON)
    for name, (data, grad) in NEURON.items():
        assert found[name] == [f"data {data:.4f}", f"grad {grad:.4f}"], name


def test_every_op_is_its_own_node_between_operands_and_result() -> None:
    text = to_dot(sample("karpathy"))
    edges = [(a, b) for a, b, _ in EDGE.findall(text)]
    ids = {label.split(" | ")[0]: node for node, label, _ in RECORD.findall(text)}
    e, d, L = ids["e"], ids["d"], ids["L"]
    assert edges == [
        (ids["a"], f"{e}_op"), (ids["b"], f"{e}_op"), (f"{e}_op", e),
        (e, f"{d}_op"), (ids["c"], f"{d}_op"), (f"{d}_op", d),
        (d, f"{L}_op"), (ids["f"], f"{L}_op"), (f"{L}_op", L),
    ]
    assert re.findall(r'^\t(v\d+_op) \[label="([^"]*)"\]$', text, re.MULTILINE) == [
        (f"{e}_op", "*"), (f"{d}_op", "+"), (f"{L}_op", "*")]


def test_edge_grads_are_the_local_derivatives() -> None:
    # e = a*b: de/da = b = -3, de/db = a = 2; d = e + c: 1, 1; L = d*f: dL/dd = f = -2, dL/df = d = 4.
    text = to_dot(sample("karpathy"), edge_grads=True)
    labels = [label for _, target, label in EDGE.findall(text) if target.endswith("_op")]
    assert labels == ["-3.0000", "2.0000", "1.0000", "1.0000", "-2.0000", "4.0000"]
    # The op -> result edges carry no label.
    assert all(label == "" for _, target, label in EDGE.findall(text) if not target.endswith("_op"))


def test_a_repeated_operand_gets_one_edge_per_use() -> None:
    text = to_dot(evaluate(parse("y = x*x"), {"x": 3.0}), edge_grads=True)
    assert EDGE.findall(text) == [("v0", "v1_op", "3.0000"), ("v0", "v1_op", "3.0000"), ("v1_op", "v1", "")]
    assert records(text) == {"x": ["data 3.0000", "grad 6.0000"], "y": ["data 9.0000", "grad 1.0000"]}


# --- what the records say --------------------------------------------------------------------


def test_kinds_are_told_apart_by_fill() -> None:
    text = to_dot(sample("neuron_exp"))
    assert f'fillcolor="{KIND_STYLES["input"]["fillcolor"]}"' in fill_of(text, "x1")
    assert f'fillcolor="{KIND_STYLES["intermediate"]["fillcolor"]}"' in fill_of(text, "n")
    assert fill_of(text, "o") == f'fillcolor="{KIND_STYLES["output"]["fillcolor"]}" penwidth="2"'
    fills = {KIND_STYLES[kind]["fillcolor"] for kind in KIND_STYLES}
    assert len(fills) == len(KIND_STYLES)  # five kinds, five colours


def test_unnamed_results_show_their_op_and_constants_their_value() -> None:
    # y = 2*x + 0.5: the product and the constants have no name.
    text = to_dot(evaluate(parse("y = 2*x + 0.5"), {"x": 3.0}))
    found = {label.split(" | ")[0]: (label.split(" | ")[1:], attributes)
             for _, label, attributes in RECORD.findall(text)}
    assert set(found) == {"2", "x", "*", "0.5", "y"}
    assert found["*"][0] == ["data 6.0000", "grad 1.0000"]
    assert found["2"][0] == ["data 2.0000", "grad 3.0000"]  # d y / d 2 = x
    assert KIND_STYLES["constant"]["fillcolor"] in found["0.5"][1]
    assert KIND_STYLES["result"]["fillcolor"] in found["*"][1]


def test_without_values_only_the_structure_is_drawn() -> None:
    evaluation = evaluate(parse("y = 2*x + w"), {"w": 1.0}, allow_missing=True)
    assert not evaluation.has_values
    text = to_dot(evaluation, edge_grads=True)
    assert "data" not in text and "grad" not in text and "nan" not in text
    assert records(text) == {"2": [], "x": [], "2*x": [], "w": [], "y": []}  # the box says what it holds
    assert "label" not in "".join(line for line in text.splitlines() if "->" in line)


def test_no_grad_shows_data_only() -> None:
    assert records(to_dot(sample("karpathy", backward=False), show_grad=False))["L"] == ["data -8.0000"]


def test_output_option_draws_that_variables_graph() -> None:
    evaluation = sample("karpathy", output="d")
    assert set(records(to_dot(evaluation))) == {"a", "b", "e", "c", "d"}
    assert records(to_dot(evaluation))["d"] == ["data 4.0000", "grad 1.0000"]
    assert omitted_names(evaluation) == ["f", "L"]
    assert omitted_names(sample("karpathy")) == []


def test_precision() -> None:
    assert records(to_dot(sample("neuron"), precision=2))["o"] == ["data 0.71", "grad 1.00"]
    assert records(to_dot(sample("neuron"), precision=6))["n"] == ["data 0.881374", "grad 0.500000"]


@pytest.mark.parametrize(
    ("x", "precision", "text"),
    [
        (2.0, 4, "2.0000"), (-3.0, 4, "-3.0000"), (0.70710678, 4, "0.7071"), (2.0, 0, "2"),
        (-0.0, 4, "0.0000"), (0.0, 2, "0.00"),
        # Too small for 4 places, or too long: scientific, never a misleading 0.0000.
        (0.00001234, 4, "1.2340e-05"), (-0.00004, 4, "-4.0000e-05"), (0.00005, 4, "0.0001"),
        (1234567.0, 2, "1.23e+06"), (999999.0, 1, "999999.0"),
        (math.nan, 4, "nan"), (math.inf, 4, "inf"), (-math.inf, 4, "-inf"),
    ],
)
def test_format_number(x, precision, text) -> None:
    assert format_number(x, precision) == text


def test_non_finite_values_are_shown_not_hidden() -> None:
    # sqrt'(0) is infinite: the record says so.
    assert records(to_dot(evaluate(parse("y = sqrt(x)"), {"x": 0.0})))["x"] == ["data 0.0000", "grad inf"]


# --- determinism, size, escaping ---------------------------------------------------------------


def test_ids_follow_topological_order_and_text_is_stable() -> None:
    first = to_dot(sample("mlp"))
    assert first == to_dot(sample("mlp"))
    ids = [int(node[1:]) for node, _, _ in RECORD.findall(first)]
    assert ids == list(range(len(ids)))
    for source, target, _ in EDGE.findall(first):  # every edge goes forward in the numbering
        assert int(source[1:].removesuffix("_op")) <= int(target[1:].removesuffix("_op"))
    assert "0x" not in first and str(id(sample)) not in first


def test_same_dot_bytes_in_another_process() -> None:
    code = (
        "import sys; from autodiff_cli.render.dot import to_dot; from autodiff_cli.language import parse; from autodiff_cli.execute import evaluate;"
        "p = parse(open(sys.argv[1]).read(), sys.argv[1]);"
        "sys.stdout.buffer.write(to_dot(evaluate(p), edge_grads=True).encode())"
    )
    path = str(SAMPLES / "mlp.ad")
    outputs = [subprocess.run([sys.executable, "-c", code, path], capture_output=True, check=True,
                              cwd=SAMPLES.parent, env={"PYTHONPATH": str(SAMPLES.parent),
                                                       "PYTHONHASHSEED": seed}).stdout
               for seed in ("1", "2")]
    assert outputs[0] == outputs[1]
    path_in_process = to_dot(evaluate(parse((SAMPLES / "mlp.ad").read_text(), path)), edge_grads=True)
    assert outputs[0].decode() == path_in_process


def test_a_graph_far_deeper_than_the_recursion_limit() -> None:
    depth = 10 * sys.getrecursionlimit()  # a recursive traversal would fail at 1 x
    x = Value(0.5, label="x")
    y = x
    for _ in range(depth):
        y = y * 1.0 + 0.0
    text = to_digraph(y).source
    assert graph_size(y) == 1 + 4 * depth  # x, then per step: 1.0, the product, 0.0, the sum
    assert text.count("_op [label=") == 2 * depth
    assert text.count(" -> ") == 6 * depth


def test_labels_are_escaped() -> None:
    a = Value(1.0, label='a{b}|<c> "d" \\e f')
    b = Value(2.0, label="<x>")
    y = a * b
    y.backward()
    text = to_digraph(y).source
    assert r'label="{ a\{b\}\|\<c\> \"d\" \\e f | data 1.0000 | grad 2.0000 }"' in text
    assert r'label="{ \<x\> | data 2.0000 | grad 1.0000 }"' in text


def test_rankdir_and_precision_are_checked() -> None:
    root = Value(1.0, label="x")
    with pytest.raises(ValueError, match="rankdir"):
        to_digraph(root, rankdir="RL")
    with pytest.raises(ValueError, match="precision"):
        to_digraph(root, precision=-1)


# --- the Python API ----------------------------------------------------------------------------


def test_draw_dot_is_a_digraph_like_micrographs() -> None:
    a, b = Value(2.0, label="a"), Value(-3.0, label="b")
    c = Value(10.0, label="c")
    e = a * b
    e.label = "e"
    d = e + c
    d.label = "d"
    f = Value(-2.0, label="f")
    L = d * f
    L.label = "L"
    L.backward()
    dot = draw_dot(L, format="png", rankdir="TB")
    assert isinstance(dot, graphviz.Digraph)
    assert dot.format == "png"
    assert "rankdir=TB" in dot.source
    expected = {name: [f"data {v:.4f}", f"grad {g:.4f}"] for name, (v, g) in KARPATHY.items()}
    assert records(dot.source) == expected
    # The same graph as the language builds: kinds read off the structure agree.
    assert dot.source == to_dot(sample("karpathy")).replace("rankdir=LR", "rankdir=TB")


def test_draw_dot_shows_inline_without_a_system_graphviz(monkeypatch) -> None:
    monkeypatch.setattr(render, "system_program", lambda: None)
    svg = draw_dot(Value(2.0, label="a") * 3.0)._repr_image_svg_xml()
    assert svg.startswith("<?xml") and ">a</text>" in svg


def test_draw_dot_is_exported_by_the_package() -> None:
    import autodiff_cli

    assert autodiff_cli.draw_dot is draw_dot
    assert "draw_dot" in autodiff_cli.__all__
    with pytest.raises(AttributeError):
        autodiff_cli.no_such_name


def test_the_layout_search_is_capped() -> None:
    # Without the cap, dot's network simplex for x positions ran for minutes on graphs of ~200
    # values where a few inputs feed every statement (tanh(v)*x + y, 60 times: >120 s, now 3-6 s).
    x = Value(0.5)
    assert "nslimit=1" in draw_dot(x * x).source.splitlines()[1]
