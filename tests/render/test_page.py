"""The step-through page as data and as markup (render/page.py); the browser tests drive it.

Expected frames and numbers are worked by hand in the comments; sentences are compared with
what `autodiff explain` prints, since the page must say the same.
"""

import base64
import hashlib
import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest

from autodiff_cli.analysis.graph_model import GraphModel
from autodiff_cli.analysis.steps import Place, explain, walkthrough
from autodiff_cli.execute import evaluate
from autodiff_cli.language import parse
from autodiff_cli.render import backends, page
from autodiff_cli.render.dot import to_dot
from autodiff_cli.render.explain import to_plain

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
ACCUMULATION = "y = a*a + a"

RENDERERS = ["bundled", pytest.param("system", marks=pytest.mark.skipif(
    shutil.which("dot") is None, reason="the system Graphviz 'dot' is not installed"))]


def walk_of(text: str, values=None, name: str = "<expr>"):
    evaluation = evaluate(parse(text, name), values)
    return evaluation, walkthrough(evaluation)


def svg_of(walk, renderer: str = "bundled", **options) -> bytes:
    return backends.render(to_dot(walk.model, **options), "svg", renderer)


def sample(name: str) -> str:
    return (SAMPLES / f"{name}.ad").read_text()


# --- the frames ----------------------------------------------------------------------------


def test_accumulation_frames_by_hand() -> None:
    # y = t1 + a with t1 = a*a, a = 3: t1 = 9, y = 12.  Topological positions a 0, t1 1, y 2.
    # Backward: dy/dt1 = 1 (from +), dy/da = 1 (from +, operand 1), then a gets 3 = a * 1
    # from each operand slot of t1 = a*a: running totals 1, 4, 7.
    _, walk = walk_of(ACCUMULATION, {"a": 3.0})
    frames = page.page_data(walk)["frames"]
    shape = [(f["pass"], f.get("kind"), f.get("node"), f.get("parent"), f.get("operand"), f.get("grad"))
             for f in frames]
    assert shape == [
        ("start", None, None, None, None, None),
        ("forward", None, 0, None, None, None),
        ("forward", None, 1, None, None, None),
        ("forward", None, 2, None, None, None),
        ("backward", "seed", 2, None, None, "1.0000"),
        ("backward", "step", 1, 2, 0, "1.0000"),
        ("backward", "step", 0, 2, 1, "1.0000"),
        ("backward", "step", 0, 1, 0, "4.0000"),
        ("backward", "step", 0, 1, 1, "7.0000"),
        ("backward", "total", 0, None, None, "7.0000"),
        ("end", None, None, None, None, None),
    ]
    assert [f["text"] for f in frames[1:4]] == ["a = 3   input", "t1 = a * a = 9", "y = t1 + a = 12"]
    assert [f.get("accumulate") for f in frames[5:9]] == [False, False, True, True]
    assert frames[6]["callout"] == "1.0000 \u00d7 1.0000 = 1.0000"
    assert frames[7]["callout"] == "+= 3.0000 \u00d7 1.0000 = 3.0000, total 4.0000"
    assert frames[9]["text"] == "dy/da = 1 + 3 + 3 = 7   sum of 3 contributions"
    assert frames[10]["text"] == "gradients: dy/da = 7"


def test_each_node_knows_its_uses_and_their_sum() -> None:
    _, walk = walk_of(ACCUMULATION, {"a": 3.0})
    data = page.page_data(walk)
    a, t1, y = data["nodes"]
    assert (a["name"], a["kind"], a["data"], a["grad"]) == ("a", "input", "3.0000", "7.0000")
    assert a["uses"] == [6, 7, 8] and a["sum"] == data["frames"][9]["text"]
    assert (t1["name"], t1["kind"], t1["about"], t1["grad"]) == ("t1", "result", "t1 = a * a", "1.0000")
    assert t1["uses"] == [5]
    assert t1["sum"] == "dy/dt1 = ∂y/∂t1 * dy/dy = 1 * 1 = 1   [∂y/∂t1 = 1]"  # explain's words
    assert (y["kind"], y["grad"], y["uses"], y["sum"]) == ("output", "1.0000", [4], "dy/dy = 1   seed")


def test_karpathy_frames_by_hand() -> None:
    # Forward a, b, e = -6, c, d = 4, f, L = -8; backward from L: d, f, e, c, a (6), b (-4).
    _, walk = walk_of(sample("karpathy"), name="karpathy.ad")
    data = page.page_data(walk)
    frames, nodes = data["frames"], data["nodes"]
    assert len(frames) == 1 + 7 + 7 + 1
    assert [nodes[f["node"]]["name"] for f in frames[1:8]] == ["a", "b", "e", "c", "d", "f", "L"]
    assert [nodes[f["node"]]["name"] for f in frames[8:15]] == ["L", "d", "f", "e", "c", "a", "b"]
    assert [f["grad"] for f in frames[8:15]] == ["1.0000", "-2.0000", "4.0000", "-2.0000", "-2.0000",
                                                 "6.0000", "-4.0000"]
    assert frames[13]["callout"] == "-3.0000 \u00d7 -2.0000 = 6.0000"
    assert {n["name"]: n["grad"] for n in nodes} == {"a": "6.0000", "b": "-4.0000", "e": "-2.0000",
                                                     "c": "-2.0000", "d": "-2.0000", "f": "4.0000",
                                                     "L": "1.0000"}
    assert data["header"] == "L = -8"


@pytest.mark.parametrize("name", ["karpathy", "neuron", "neuron_exp", "mlp", "quadratic", "softmax_xent"])
def test_every_sentence_is_explains_line(name: str) -> None:
    # The page writes explain's lines unpadded: the same words once runs of spaces are one.
    _, walk = walk_of(sample(name), name=f"{name}.ad")
    plain = to_plain(explain(evaluate(parse(sample(name)), backward=False), 0)).splitlines()
    forward = plain[plain.index("forward pass (topological order)") + 1:]
    forward = forward[:forward.index("")]
    backward = plain[plain.index(next(line for line in plain if line.startswith("backward pass"))) + 1:]
    backward = backward[:backward.index("")]
    frames = page.page_data(walk)["frames"]
    texts = [" ".join(f["text"].split()) for f in frames[1:-1]]
    assert texts == [" ".join(line.split()) for line in forward + backward]
    assert frames[-1]["text"] == plain[-1]  # the gradients line


def test_constants_are_known_from_the_start_and_get_no_gradient() -> None:
    # y = 2*x: the constant 2 is a box of its own, with no steps.
    _, walk = walk_of("y = 2*x", {"x": 5.0})
    data = page.page_data(walk)
    constant = next(n for n in data["nodes"] if n["constant"])
    assert (constant["name"], constant["grad"], constant["uses"]) == ("2", None, [])
    assert constant["about"] == page.CONSTANT_TEXT
    assert all(f.get("node") != data["nodes"].index(constant) for f in data["frames"])


def test_without_the_backward_pass_the_frames_stop_after_the_forward_pass() -> None:
    _, walk = walk_of(ACCUMULATION, {"a": 3.0})
    data = page.page_data(walk, backward=False)
    assert [f["pass"] for f in data["frames"]] == ["start", "forward", "forward", "forward", "end"]
    assert all(n["grad"] is None for n in data["nodes"])
    assert data["frames"][-1]["text"] == "y = 12. " + page.NO_BACKWARD_TEXT


def test_precision_sets_the_box_numbers_not_the_sentences() -> None:
    _, walk = walk_of("y = x/3", {"x": 1.0})
    data = page.page_data(walk, precision=2)
    assert data["nodes"][-1]["data"] == "0.33"
    output = len(data["nodes"]) - 1
    definition = next(f for f in data["frames"] if f["pass"] == "forward" and f["node"] == output)
    assert definition["text"].endswith(" = 0.3333333333333333")


def test_places_point_at_the_nodes_the_items_name() -> None:
    _, walk = walk_of(sample("mlp"))
    names = walk.model.names
    for definition, place in zip(walk.explanation.definitions, walk.definition_places):
        assert names[place.node] == definition.name
    tape = walk.model.tape
    for item, place in zip(walk.explanation.steps, walk.step_places):
        if type(item).__name__ == "Step":
            assert (names[place.node], names[place.parent]) == (item.child, item.parent)
            assert (tape.a, tape.b)[place.operand][place.parent] == place.node
        elif type(item).__name__ == "Total":
            assert names[place.node] == item.name and place.parent == -1
        else:
            assert place == Place(walk.model.size - 1)


# --- the picture ---------------------------------------------------------------------------


@pytest.mark.parametrize("renderer", RENDERERS)
def test_svg_gets_a_hook_on_every_box_field_and_edge(renderer: str) -> None:
    _, walk = walk_of(ACCUMULATION, {"a": 3.0})
    markup = page.inline_svg(svg_of(walk, renderer), walk)
    assert markup.startswith("<svg ") and 'xmlns="http://www.w3.org/2000/svg"' in markup
    assert "<!--" not in markup and "<?xml" not in markup and "DOCTYPE" not in markup
    assert "ns0:" not in markup
    nodes = re.findall(r'<g id="node\d+" class="node" data-node="(\d)" tabindex="0" role="button"', markup)
    assert sorted(nodes) == ["0", "1", "2"]
    assert re.findall(r'class="ad-data">([^<]*)<', markup) == ["data 3.0000", "data 9.0000", "data 12.0000"]
    assert sorted(re.findall(r'class="ad-grad">([^<]*)<', markup)) == ["grad 1.0000", "grad 1.0000",
                                                                      "grad 7.0000"]
    # a*a has two edges from a, one per operand; t1 + a has t1 as operand 0 and a as operand 1.
    edges = re.findall(r'data-child="(\d)" data-parent="(\d)" data-operand="(\d)"', markup)
    assert sorted(edges) == [("0", "1", "0"), ("0", "1", "1"), ("0", "2", "1"), ("1", "2", "0")]
    assert sorted(re.findall(r'data-result="(\d)"', markup)) == ["1", "2"]
    assert sorted(re.findall(r'data-op="(\d)"', markup)) == ["1", "2"]
    assert ">t1</text>" in markup  # the unnamed result is tagged with explain's name


def test_svg_without_grad_fields_marks_the_data_only() -> None:
    _, walk = walk_of(ACCUMULATION, {"a": 3.0})
    markup = page.inline_svg(svg_of(walk, show_grad=False), walk, show_grad=False)
    assert markup.count('class="ad-data"') == 3 and 'class="ad-grad"' not in markup


@pytest.mark.parametrize("svg, message", [
    (b"<svg", "cannot be read"),
    (b'<svg xmlns="http://www.w3.org/2000/svg"><g class="graph"></g></svg>', "lacks the boxes of 3 values"),
], ids=["not-xml", "no-boxes"])
def test_an_unexpected_svg_is_an_error_not_a_dead_page(svg: bytes, message: str) -> None:
    _, walk = walk_of(ACCUMULATION, {"a": 3.0})
    with pytest.raises(page.PageError, match=message):
        page.inline_svg(svg, walk)


def test_a_box_without_its_data_field_is_an_error() -> None:
    _, walk = walk_of(ACCUMULATION, {"a": 3.0})
    svg = svg_of(walk).replace(b"data 9.0000", b"data 9.5")
    with pytest.raises(page.PageError, match="no data or grad field in the box of t1"):
        page.inline_svg(svg, walk)


# --- the page ------------------------------------------------------------------------------


class _Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.texts: dict[str, str] = {}
        self._open: str | None = None

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._open = tag

    def handle_data(self, data):
        if self._open in ("title", "script"):
            self.texts[self._open] = self.texts.get(self._open, "") + data

    def handle_endtag(self, tag):
        self._open = None


def embedded_data(html: str) -> dict:
    found = re.search(r'<script type="application/json" id="autodiff-data">(.*?)</script>', html, re.DOTALL)
    return json.loads(found.group(1))


def page_of(text: str = ACCUMULATION, values=None, title: str = "t") -> str:
    _, walk = walk_of(text, values if values is not None else {"a": 3.0})
    return page.to_html(walk, svg_of(walk), title=title)


def test_page_is_self_contained() -> None:
    html = page_of()
    # Nothing to fetch: no src, href, url() or @import, and no address but the SVG namespace.
    assert not re.search(r"\b(src|href)\s*=|url\(|@import", html)
    assert set(re.findall(r"https?://[^\s\"'<>]*", html)) == {"http://www.w3.org/2000/svg"}
    # ...and the browser is told so: the page may load nothing and run only its own script.
    policy = re.search(r'http-equiv="Content-Security-Policy"\s+content="([^"]*)"', html).group(1)
    assert "default-src 'none'" in policy
    script = re.search(r"<script>(.*?)</script>", html, re.DOTALL).group(1)
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in policy


def test_page_is_byte_identical_for_the_same_input() -> None:
    assert page_of() == page_of()


def test_page_data_round_trips_through_its_script_element() -> None:
    _, walk = walk_of(ACCUMULATION, {"a": 3.0})
    html = page.to_html(walk, svg_of(walk), title="t")
    assert embedded_data(html) == page.page_data(walk)


def test_json_for_a_script_element_escapes_what_could_end_it() -> None:
    data = {"name": "</script><script>alert(1)</script>", "and": "a & b", "line": "\u2028"}
    text = page.json_for_script(data)
    assert not set("<>&\u2028") & set(text)
    assert json.loads(text) == data


def test_markup_in_the_title_and_in_names_is_written_as_text() -> None:
    hostile = '</title><script>alert("x")</script>&amp;'
    evaluation = evaluate(parse(ACCUMULATION), {"a": 3.0})
    evaluation.nodes["a"].label = hostile  # the language cannot make such a name; a future one might
    walk = walkthrough(evaluation)
    assert walk.model.names[0] == hostile
    html = page.to_html(walk, backends.render(to_dot(walk.model), "svg"), title=hostile)
    parsed = _Elements()
    parsed.feed(html)
    assert [tag for tag, _ in parsed.tags].count("script") == 2  # the data and the page's script
    head = _Elements()
    head.feed(html[:html.index("</head>")])
    assert head.texts["title"] == hostile
    assert "<script>alert" not in html
    assert embedded_data(html)["nodes"][0]["name"] == hostile


def test_legend_lists_every_kind_of_the_svg_with_its_colour() -> None:
    from autodiff_cli.render.dot import KIND_LEGEND, KIND_STYLES

    html = page_of()
    legend = html[html.index('<ul class="legend">'):html.index("</ul>", html.index('<ul class="legend">'))]
    for kind, words in KIND_LEGEND.items():
        assert f'background:{KIND_STYLES[kind]["fillcolor"]};' in legend and words in legend, kind
    for state in ("ad-flow", "ad-now", "ad-passed", "ad-summed", "ad-use"):
        assert f'class="edge {state}"' in legend
        assert f"g.edge.{state} path" in page.asset("page.css"), state


def test_the_script_names_only_states_that_the_style_draws() -> None:
    script, style = page.asset("page.js"), page.asset("page.css")
    states = set(re.findall(r'"(ad-[a-z]+)"', script))
    assert {"ad-pending", "ad-current", "ad-now", "ad-summed", "ad-selected", "ad-use"} <= states
    for state in states:
        assert f".{state}" in style, state


def test_model_can_be_given_or_built() -> None:
    evaluation = evaluate(parse(ACCUMULATION), {"a": 3.0})
    model = GraphModel.of(evaluation)
    assert walkthrough(evaluation, model).model is model
    assert walkthrough(evaluation).model.names == model.names
