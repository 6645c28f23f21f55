"""The step-through page: one self-contained HTML file that plays both passes over the graph.

Three parts, each built and tested on its own:

* ``page_data``: the frames to step through, as JSON-ready data.  Frame 0 is the graph
  before anything is computed; then one frame per line of explain's forward pass (a node
  gets its value), one per line of its backward pass (the seed, each edge's
  ``local * upstream = contribution`` with ``+=`` for a further use, each sum), and a last
  frame with every gradient.  The sentence of each frame is explain's own line
  (``render.explain.step_sentence``), so the page says what ``autodiff explain`` says.
* ``inline_svg``: the SVG that ``autodiff graph`` draws from the same DOT, marked up so that
  the script can find each value box, its data and grad fields, each operation and each edge,
  and so that every box can take the keyboard focus.
* ``to_html``: the two put together with the page's script and style (``page.js`` and
  ``page.css`` next to this module).  No network, no external file; the same input gives
  the same bytes.

A tensor program's page (``tensor_to_html``) is built the same way from the layer graph
(``analysis.graph_model``): ``tensor_page_data`` steps a layer at a time through both
passes, each layer's value and gradient a grid of numbers on ``render.dot``'s
colours; ``tensor_inline_svg`` marks up the layer boxes; each statement's scalar graph is
put on the page, hidden until its layer is chosen.  ``page.js`` runs either page.

Pure: nothing here runs the renderer or writes files; the CLI passes the SVG bytes in.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
from importlib import resources
from typing import TYPE_CHECKING, Any

from ..analysis.steps import Definition, Place, Seed, Step, Total, Walkthrough
from ..errors import AutodiffError
from .dot import KIND_LEGEND, KIND_STYLES, OP_FILL, format_number
from .explain import (
    BACKWARD_HEADING,
    FORWARD_HEADING,
    definition_sentence,
    gradients_line,
    header_line,
    step_sentence,
)
from .palette import PASSES, hex_colour

if TYPE_CHECKING:
    from ..analysis.graph_model import LayerGraph, LayerNode

__all__ = ["GRID_ENTRIES", "PAGE_COLOURS", "PageError", "asset", "inline_svg", "json_for_script", "page_data",
           "tensor_inline_svg", "tensor_page_data", "tensor_to_html", "to_html"]

SVG_NS = "http://www.w3.org/2000/svg"

# The colours the page adds to the graph's own (render.dot.KIND_STYLES): the passes' colours
# of render.palette, from Okabe and Ito's and Paul Tol's palettes for colour-blind readers,
# darkened where needed.  Each state also has
# its own line width and dash pattern (page.css), so none is told by colour alone;
# tests/render/test_page_colours.py simulates the three kinds of dichromacy and checks that
# each colour keeps a 3:1 contrast with every fill it is drawn on and that the three pass
# colours stay apart.
PAGE_COLOURS: dict[str, str] = PASSES

START_TEXT = "Nothing is computed yet. Press \u2192 (Next) to run the forward pass, one node at a time."
NO_BACKWARD_TEXT = "The backward pass is left out (--no-grad)."
OTHER_RENDERER = "try the other renderer (--renderer system or --renderer bundled)"
CONSTANT_TEXT = "a number written in the program: nothing to learn, so it gets no gradient steps"


class PageError(AutodiffError):
    """The renderer's SVG is not shaped as the page expects, so the page cannot drive it."""


# --- the frames ----------------------------------------------------------------------------


def page_data(walk: Walkthrough, *, precision: int = 4, backward: bool = True) -> dict[str, Any]:
    """The page's content as data: nodes, frames and the texts, every number already written.

    Box numbers use ``precision`` decimal places, as ``autodiff graph`` draws them; the
    sentences are explain's, with its round-trip numbers.  ``backward=False`` stops after the
    forward pass.
    """
    model, explanation = walk.model, walk.explanation
    names = model.names

    def number(x: float) -> str:
        return format_number(x, precision)

    nodes: list[dict[str, Any]] = []
    for i, node in enumerate(model.order):
        constant = node._a is None and not node.label
        nodes.append({
            "name": names[i],
            "kind": model.kinds[i],
            "constant": constant,
            "data": number(node.data),
            "grad": None if constant or not backward else number(walk.grads[i]),
            "about": CONSTANT_TEXT if constant else "",
            "uses": [],
            "sum": "",
        })
    frames: list[dict[str, Any]] = [{"pass": "start", "text": START_TEXT}]
    for definition, place in zip(explanation.definitions, walk.definition_places):
        frames.append({"pass": "forward", "node": place.node, "text": definition_sentence(definition)})
        nodes[place.node]["about"] = _about(definition)
    if backward:
        for item, place in zip(explanation.steps, walk.step_places):
            frame = _backward_frame(item, place, number)
            nodes[place.node]["uses"].append(len(frames))
            frames.append(frame)
        _sums(nodes, frames)
        frames.append({"pass": "end", "text": gradients_line(explanation)})
    else:
        frames.append({"pass": "end", "text": f"{header_line(explanation)}. {NO_BACKWARD_TEXT}"})
    return {
        "output": model.output,
        "header": header_line(explanation),
        "headings": {"forward": FORWARD_HEADING, "backward": BACKWARD_HEADING},
        "zero": number(0.0),
        "backward": backward,
        "nodes": nodes,
        "frames": frames,
    }


def _about(definition: Definition) -> str:
    """What a computed node is, ``e = a * b``; nothing for an input (its kind says it)."""
    return f"{definition.name} = {definition.expression}" if definition.expression else ""


def _backward_frame(item: Seed | Step | Total, place: Place, number: Any) -> dict[str, Any]:
    text = step_sentence(item)
    if isinstance(item, Seed):
        return {"pass": "backward", "kind": "seed", "node": place.node, "grad": number(1.0), "text": text}
    if isinstance(item, Step):
        callout = f"{number(item.local)} \u00d7 {number(item.upstream)} = {number(item.product)}"
        if item.accumulate:
            callout = f"+= {callout}, total {number(item.total)}"
        return {
            "pass": "backward", "kind": "step", "node": place.node, "parent": place.parent,
            "operand": place.operand, "accumulate": item.accumulate, "grad": number(item.total),
            "callout": callout, "text": text,
        }
    return {"pass": "backward", "kind": "total", "node": place.node, "grad": number(item.total), "text": text}


def _sums(nodes: list[dict[str, Any]], frames: list[dict[str, Any]]) -> None:
    """Each node's gradient as the sum over its uses: the Total line, or its only step's line.

    A Total frame is listed among the node's uses by ``page_data``; here it becomes the sum
    and leaves the list, which then holds the contributions alone.
    """
    for node in nodes:
        uses = node["uses"]
        if uses and frames[uses[-1]].get("kind") == "total":
            node["sum"] = frames[uses.pop()]["text"]
        elif len(uses) == 1:
            node["sum"] = frames[uses[0]]["text"]


# --- the picture ---------------------------------------------------------------------------

_NODE_ID = re.compile(r"v(\d+)(_op)?")
_EDGE_ID = re.compile(r"v(\d+)(_op)?->v(\d+)(_op)?")


def inline_svg(svg: bytes, walk: Walkthrough, *, precision: int = 4, show_grad: bool = True) -> str:
    """The graph's SVG as markup to put inside the page, with hooks for the script.

    Value boxes get ``data-node`` (their topological position), focus (``tabindex``), a role
    and a label for screen readers; their data and grad fields get the classes ``ad-data``
    and ``ad-grad``.  Operations get ``data-op``; an operand's edge gets ``data-child``,
    ``data-parent`` and ``data-operand`` (0 or 1: ``x*x`` has two edges from x), the edge
    into a result ``data-result``.  Comments, the XML declaration and the DOCTYPE go; every
    text is written back escaped.  A picture that does not have the boxes and fields of the
    graph model is a PageError, not a page whose script silently does nothing.
    """
    root = _read_svg(svg)
    model, names = walk.model, walk.model.names
    about = {place.node: _about(d) for d, place in zip(walk.explanation.definitions, walk.definition_places)}
    tag_g, tag_title, tag_text = f"{{{SVG_NS}}}g", f"{{{SVG_NS}}}title", f"{{{SVG_NS}}}text"
    found: set[int] = set()
    operand_counts: dict[tuple[int, int], int] = {}
    for group in root.iter(tag_g):
        kind = group.get("class")
        title = group.find(tag_title)
        if kind not in ("node", "edge") or title is None or title.text is None:
            continue
        if kind == "node":
            match = _NODE_ID.fullmatch(title.text)
            if match is None:
                continue
            i = int(match.group(1))
            if i >= model.size:
                raise PageError(f"the renderer's SVG has a node {title.text} that the graph does not have")
            if match.group(2):
                group.set("data-op", str(i))
                title.text = about.get(i) or names[i]
            else:
                _mark_value(group, i, walk, precision, show_grad, tag_text)
                constant = model.order[i]._a is None and not model.order[i].label
                title.text = about.get(i) or (f"{names[i]}: {CONSTANT_TEXT}" if constant
                                              else f"{names[i]} ({model.kinds[i]})")
                found.add(i)
        else:
            match = _EDGE_ID.fullmatch(title.text)
            if match is None:
                continue
            tail, tail_op, head, head_op = match.groups()
            if tail_op:  # the operation -> its result
                group.set("data-result", tail)
                title.text = about.get(int(tail)) or names[int(tail)]
            elif head_op:  # an operand -> the operation that uses it
                child, parent = int(tail), int(head)
                if model.tape.a[parent] == model.tape.b[parent]:  # x*x: two edges, in DOT order
                    operand = operand_counts.get((child, parent), 0)
                    operand_counts[child, parent] = operand + 1
                else:
                    operand = 0 if model.tape.a[parent] == child else 1
                group.set("data-child", tail)
                group.set("data-parent", head)
                group.set("data-operand", str(operand))
                title.text = f"{names[child]} \u2192 {names[parent]}"
    if len(found) != model.size:
        first = min(set(range(model.size)) - found)
        raise PageError(f"the renderer's SVG lacks the boxes of {model.size - len(found)} values "
                        f"(the first is {names[first]})", hint=OTHER_RENDERER)
    root.set("role", "group")
    root.set("aria-label", f"the computational graph of {model.output}")
    return _html_svg(root)


def _html_svg(root: Any) -> str:
    """An SVG element tree as markup for an HTML page.

    HTML has no namespace prefixes: every element is written by its plain name, and the one
    namespace the page needs is declared on <svg> (ElementTree would write ns0:svg)."""
    import xml.etree.ElementTree as ET

    prefix = f"{{{SVG_NS}}}"
    for element in root.iter():
        if isinstance(element.tag, str) and element.tag.startswith(prefix):
            element.tag = element.tag[len(prefix):]
    root.set("xmlns", SVG_NS)
    return ET.tostring(root, encoding="unicode")


def _read_svg(svg: bytes) -> Any:
    import xml.etree.ElementTree as ET

    try:
        return ET.fromstring(svg)
    except ET.ParseError as error:
        raise PageError(f"the renderer's SVG cannot be read: {error}", hint=OTHER_RENDERER) from None


def _mark_value(
    group: Any, i: int, walk: Walkthrough, precision: int, show_grad: bool, tag_text: str
) -> None:
    node = walk.model.order[i]
    expected = {f"data {format_number(node.data, precision)}": "ad-data"}
    if show_grad:
        expected[f"grad {format_number(node.grad, precision)}"] = "ad-grad"
    marked = set()
    for text in group.iter(tag_text):
        field = expected.get((text.text or "").strip())
        if field is not None and field not in marked:
            text.set("class", field)
            marked.add(field)
    if len(marked) != len(expected):
        raise PageError(f"the renderer's SVG has no data or grad field in the box of {walk.model.names[i]}",
                        hint=OTHER_RENDERER)
    if walk.model.order[i]._a is not None and not walk.model.order[i].label:
        _tag(group, walk.model.names[i])
    group.set("data-node", str(i))
    group.set("tabindex", "0")
    group.set("role", "button")
    group.set("aria-label", walk.model.names[i])


def _tag(group: Any, name: str) -> None:
    """Write explain's name of an unnamed result (t1, t2...) just above its box's left corner.

    The box itself shows the operation, as in the SVG; the sentences call it t1.
    """
    import xml.etree.ElementTree as ET

    outline = group.find(f"{{{SVG_NS}}}polygon")
    if outline is None:
        return
    try:
        points = [tuple(float(v) for v in pair.split(",")) for pair in outline.get("points", "").split()]
    except ValueError:
        return
    if not points:
        return
    tag = ET.SubElement(group, f"{{{SVG_NS}}}text")
    tag.set("class", "ad-tag")
    tag.set("x", f"{min(x for x, _ in points) + 1:g}")
    tag.set("y", f"{min(y for _, y in points) - 3:g}")
    tag.text = name


# --- the page ------------------------------------------------------------------------------


def asset(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


def json_for_script(data: Any) -> str:
    """JSON that can sit inside a <script> element: no '<', '>' or '&' survive unescaped."""
    text = json.dumps(data, ensure_ascii=True, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _legend() -> str:
    items = []
    for kind, words in KIND_LEGEND.items():
        style = KIND_STYLES[kind]
        border = "3px" if style.get("penwidth") == "2" else "1px"
        items.append(
            f'<li><span class="swatch" style="background:{html.escape(style["fillcolor"])};'
            f'border-width:{border}"></span>{html.escape(words)}</li>'
        )
    items.append(f'<li><span class="swatch op" style="background:{html.escape(OP_FILL)}"></span>'
                 "operation</li>")
    # Each line is drawn by the same CSS rules as the graph's edges in that state.
    lines = [
        ("ad-flow", "being computed: the node and the edges into it"),
        ("ad-now", "the gradient flowing now: local \u00d7 upstream"),
        ("ad-passed", "edges the gradient has already passed"),
        ("ad-summed", "+= a further use, and the sum of all uses"),
        ("ad-use", "the uses of the box you chose"),
    ]
    for state, words in lines:
        items.append(f'<li><svg class="sample" width="32" height="10" aria-hidden="true">'
                     f'<g class="edge {state}"><path d="M2 5H30" stroke="#555555"/></g></svg>'
                     f"{html.escape(words)}</li>")
    return "\n".join(items)


def to_html(walk: Walkthrough, svg: bytes, *, title: str, precision: int = 4, backward: bool = True) -> str:
    """The whole page: ``svg`` is the graph drawn from the same model (``autodiff graph``'s DOT)."""
    data = page_data(walk, precision=precision, backward=backward)
    picture = inline_svg(svg, walk, precision=precision, show_grad=backward)
    return _assemble(title, picture, data, _SCALAR_BELOW.format(legend=_legend()), SCALAR_NOSCRIPT, "")


def _assemble(title: str, picture: str, data: dict[str, Any], below: str, noscript: str, now_extra: str) -> str:
    """The page around its picture, data and the parts below the picture."""
    colours = "".join(f"--{name}:{value};" for name, value in PAGE_COLOURS.items())
    script = asset("page.js")
    if "</script" in script.lower():  # the script is ours; this only guards against a careless edit
        raise PageError("page.js contains '</script', which would end the script element early")
    # The page may run its own script and nothing else, and may load nothing at all: the
    # browser enforces "self-contained" (and would block anything injected despite the escaping).
    digest = base64.b64encode(hashlib.sha256(("\n" + script).encode("utf-8")).digest()).decode("ascii")
    return _TEMPLATE.format(
        script_hash=f"sha256-{digest}",
        title=html.escape(title),
        colours=colours,
        style=asset("page.css"),
        picture=picture,
        below=below,
        noscript=noscript,
        now_extra=now_extra,
        data=json_for_script(data),
        script=script,
    )


# --- the page of a tensor program ----------------------------------------------------------

GRID_ENTRIES = 256  # a tensor of up to this many entries (and at most two axes) is a grid of numbers
TENSOR_START_TEXT = "Nothing is computed yet. Press \u2192 (Next) to run the forward pass, one layer at a time."
TENSOR_NOSCRIPT = "Stepping needs JavaScript; the graph below shows every layer's value."


def tensor_page_data(graph: LayerGraph, *, precision: int = 4, scalar_notes: dict[int, str] | None = None,
                     scalar_titles: dict[int, str] | None = None) -> dict[str, Any]:
    """The tensor page's content as data: a layer per node of ``graph`` (its value and gradient
    as grids of numbers with their colours, or summaries), and the frames: the forward pass a
    layer at a time, then the backward pass from the output back, each layer getting its
    gradient from its uses.  ``scalar_notes`` says, by layer position, why a layer has no
    scalar view, ``scalar_titles`` what the view of those that have one shows."""
    from ..language.shapes import shape_text

    output = graph.output
    uses: list[list[int]] = [[] for _ in graph.nodes]
    for i, node in enumerate(graph.nodes):
        for operand in dict.fromkeys(node.operands):
            uses[graph.index[operand]].append(i)
    layers = []
    for i, node in enumerate(graph.nodes):
        layers.append({
            "name": node.title,
            "kind": node.kind,
            "shape": shape_text(node.shape),
            "about": _layer_about(node),
            "parameters": node.parameters,
            "value": _tensor_view(node.value, precision),
            "grad": None if node.grad is None else _tensor_view(node.grad, precision),
            "uses": uses[i],
            "scalarNote": (scalar_notes or {}).get(i, ""),
            "scalarTitle": (scalar_titles or {}).get(i, ""),
        })
    frames: list[dict[str, Any]] = [{"pass": "start", "text": TENSOR_START_TEXT}]
    for i, node in enumerate(graph.nodes):
        frames.append({"pass": "forward", "layer": i, "text": _forward_sentence(graph, node)})
    if graph.has_grad:
        for i in range(len(graph.nodes) - 1, -1, -1):
            node = graph.nodes[i]
            frames.append({"pass": "backward", "layer": i,
                           "text": _gradient_sentence(output, node, [graph.nodes[u] for u in uses[i]])})
        frames.append({"pass": "end", "text": f"Every layer has its gradient d{output}/d(layer); click one for "
                                              "its numbers and its scalar graph."})
    else:
        frames.append({"pass": "end", "text": f"{output} is computed. {NO_BACKWARD_TEXT}"})
    return {"kind": "tensor", "output": output, "backward": graph.has_grad, "layers": layers, "frames": frames,
            "headings": {"forward": "forward pass (layer by layer)",
                         "backward": "backward pass (layer by layer)"}}


def _gradient_sentence(output: str, node: LayerNode, users: list[LayerNode]) -> str:
    """Where a layer's gradient comes from: the seed at the output, else its uses (summed)."""
    from ..language.shapes import shape_text

    gradient = f"d{output}/d{node.title} {shape_text(node.shape)}"
    if not users:
        return f"{gradient} = 1: the backward pass starts at the output"
    if len(users) == 1:
        return f"{gradient}: from its use in {_layer_about(users[0])}"
    shares = "; ".join(_layer_about(user) for user in users)
    return f"{gradient}: the sum of the shares of its {len(users)} uses: {shares}"


def _layer_about(node: LayerNode) -> str:
    if node.kind == "input":
        count = f", {node.parameters:,} parameters" if node.parameters is not None else ""
        return f"an input{count}"
    return f"{node.name} = {node.expression}" if node.name else node.expression


def _forward_sentence(graph: LayerGraph, node: LayerNode) -> str:
    from ..language.shapes import shape_text

    if node.kind == "input":
        return f"{node.title} {shape_text(node.shape)}: {_layer_about(node)}"
    read = [graph.node(r) for r in dict.fromkeys(node.operands)]
    operands = ", ".join(f"{operand.title} {shape_text(operand.shape)}" for operand in read)
    return f"{_layer_about(node)}   from {operands} -> {shape_text(node.shape)}"


def _tensor_view(array: Any, precision: int) -> dict[str, Any]:
    """A tensor for the page: its numbers and their colours as rows when it is small enough
    (``GRID_ENTRIES``, two axes at most), always its summary."""
    from .dot import NUMBER_TINT, as_rows, heat_colour, largest_size
    from .report import tensor_text as summary_text

    array = array + 0.0  # -0.0 becomes 0.0, as in the picture
    view: dict[str, Any] = {"summary": summary_text(array, precision), "rows": None, "colours": None}
    if array.ndim <= 2 and array.size <= GRID_ENTRIES:
        from .numbers import format_number as significant

        largest = largest_size(array)
        matrix = as_rows(array) if array.ndim else array.reshape(1, 1)
        view["rows"] = [[significant(float(x), precision) for x in row] for row in matrix]
        view["colours"] = [[heat_colour(float(x), largest, NUMBER_TINT if array.ndim else 0.0) for x in row]
                           for row in matrix]
    return view


def tensor_inline_svg(svg: bytes, graph: LayerGraph) -> str:
    """The layer graph's SVG as page markup: each layer box gets ``data-layer`` (its position),
    focus, a role and a label; each edge ``data-from`` and ``data-to``.  A picture without a box
    for every layer is a PageError."""
    from .dot import layer_id

    root = _read_svg(svg)
    positions = {layer_id(node.register): i for i, node in enumerate(graph.nodes)}
    tag_g, tag_title = f"{{{SVG_NS}}}g", f"{{{SVG_NS}}}title"
    found = set()
    for group in root.iter(tag_g):
        kind = group.get("class")
        title = group.find(tag_title)
        if kind not in ("node", "edge") or title is None or title.text is None:
            continue
        if kind == "node" and title.text in positions:
            i = positions[title.text]
            node = graph.nodes[i]
            group.set("data-layer", str(i))
            group.set("tabindex", "0")
            group.set("role", "button")
            group.set("aria-label", f"{node.title}: {_layer_about(node)}")
            title.text = _layer_about(node) if node.kind != "input" else node.title
            _tag_gradient_field(group)
            found.add(i)
        elif kind == "edge":
            tail, _, head = title.text.partition("->")
            if tail in positions and head in positions:
                # An operand comes before its use; an edge drawn backwards (an input on the right
                # of the layer that reads it) is written from the use.
                tail, head = sorted((tail, head), key=positions.__getitem__)
                group.set("data-from", str(positions[tail]))
                group.set("data-to", str(positions[head]))
                title.text = f"{graph.nodes[positions[tail]].title} \u2192 {graph.nodes[positions[head]].title}"
    if len(found) != len(graph.nodes):
        first = min(set(range(len(graph.nodes))) - found)
        raise PageError(f"the renderer's SVG lacks the boxes of {len(graph.nodes) - len(found)} layers "
                        f"(the first is {graph.nodes[first].title})", hint=OTHER_RENDERER)
    root.set("role", "group")
    root.set("aria-label", f"the layer graph of {graph.output}")
    return _html_svg(root)


GRADIENT_PART = "ad-grad-part"


def _tag_gradient_field(group: Any) -> None:
    """Class ``GRADIENT_PART`` on what a layer box draws of its gradient, so the page shows it only
    once the backward pass has reached the layer.  ``render.dot`` writes the gradient field
    last in the box, headed "grad": every element from the last text that starts with it on."""
    elements = [element for element in group.iter() if element is not group]
    heads = [n for n, element in enumerate(elements)
             if element.tag == f"{{{SVG_NS}}}text" and (element.text or "").strip().split(" ")[0] == "grad"]
    if not heads:
        return  # drawn without gradients (--no-grad)
    for element in elements[heads[-1]:]:
        if element.tag != f"{{{SVG_NS}}}title":
            classes = element.get("class")
            element.set("class", f"{classes} {GRADIENT_PART}" if classes else GRADIENT_PART)


def _scalar_svg(svg: bytes, i: int, name: str) -> str:
    """A layer's scalar graph for the page, hidden until its layer is chosen: the renderer's ids
    go (every picture numbers its nodes from 1, and a page's ids must differ)."""
    root = _read_svg(svg)
    for element in root.iter():
        element.attrib.pop("id", None)
    root.set("role", "img")
    root.set("aria-label", f"the scalar graph of {name}")
    return f'<div class="scalar-svg" data-layer="{i}" hidden>{_html_svg(root)}</div>'


def tensor_to_html(graph: LayerGraph, svg: bytes, scalar_views: dict[int, tuple[str, bytes]], *, title: str,
                   precision: int = 4, scalar_notes: dict[int, str] | None = None) -> str:
    """The whole page of a tensor program: ``svg`` is its layer graph (``render.dot``, without
    gradients: the page shows them as they arrive), ``scalar_views`` each layer's scalar graph by
    position (its title and ``autodiff graph --expand``'s SVG of it), ``scalar_notes`` why the
    others have none."""
    titles = {i: view_title for i, (view_title, _) in scalar_views.items()}
    data = tensor_page_data(graph, precision=precision, scalar_notes=scalar_notes, scalar_titles=titles)
    picture = tensor_inline_svg(svg, graph)
    views = "".join(_scalar_svg(scalar_views[i][1], i, graph.nodes[i].title) for i in sorted(scalar_views))
    return _assemble(title, picture, data, _TENSOR_BELOW.format(legend=_tensor_legend(), views=views),
                     TENSOR_NOSCRIPT, _TENSOR_NOW)


def _tensor_legend() -> str:
    from .palette import NEGATIVE, POSITIVE

    items = []
    for kind in ("input", "intermediate", "output"):
        style = KIND_STYLES[kind]
        border = "3px" if style.get("penwidth") == "2" else "1px"
        items.append(f'<li><span class="swatch" style="background:{html.escape(style["fillcolor"])};'
                     f'border-width:{border}"></span>{html.escape(KIND_LEGEND[kind])}</li>')
    for words, colour in (("negative entries (the deepest: the largest in size)", NEGATIVE),
                          ("positive entries", POSITIVE)):
        items.append(f'<li><span class="swatch" style="background:{hex_colour(colour)}">'
                     f"</span>{html.escape(words)}</li>")
    lines = [("ad-flow", "forward: the layer being computed and the edges into it"),
             ("ad-now", "backward: the edges its gradient comes back along")]
    for state, words in lines:
        items.append(f'<li><svg class="sample" width="32" height="10" aria-hidden="true">'
                     f'<g class="edge {state}"><path d="M2 5H30" stroke="#555555"/></g></svg>'
                     f"{html.escape(words)}</li>")
    return "\n".join(items)


_TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="autodiff-cli">
<meta http-equiv="Content-Security-Policy"
 content="default-src 'none'; style-src 'unsafe-inline'; script-src '{script_hash}'">
<title>{title}</title>
<style>
:root {{{colours}}}
{style}</style>
</head>
<body>
<header>
<h1>{title}</h1>
<div class="controls" role="toolbar" aria-label="step through the passes">
<button type="button" id="first" aria-label="first step (Home)" title="first step (Home)"
>|&#x25C0; First</button>
<button type="button" id="previous" aria-label="previous step (left arrow)" title="previous step (←)"
>&#x25C0; Back</button>
<button type="button" id="play" aria-label="play (space)" aria-pressed="false" title="play / pause (space)"
>Play</button>
<button type="button" id="next" aria-label="next step (right arrow)" title="next step (→)"
>Next &#x25B6;</button>
<button type="button" id="last" aria-label="last step (End)" title="last step (End)"
>Last &#x25B6;|</button>
<label>speed <select id="speed" aria-label="steps per second">
<option value="0.5">0.5 steps/s</option>
<option value="1" selected>1 step/s</option>
<option value="2">2 steps/s</option>
<option value="4">4 steps/s</option>
</select></label>
<label><input type="checkbox" id="large"> large text</label>
<span id="counter"></span>
</div>
</header>
<main>
<section id="now" aria-label="the current step">
<p id="phase"></p>
<p id="step-text" aria-live="polite"></p>
<noscript><p>{noscript}</p></noscript>
{now_extra}</section>
<div id="graph">
{picture}
</div>
<div id="below">
{below}</div>
</main>
<script type="application/json" id="autodiff-data">{data}</script>
<script>
{script}</script>
</body>
</html>
"""

SCALAR_NOSCRIPT = "Stepping needs JavaScript; the graph below shows the final values and gradients."

_SCALAR_BELOW = """<section id="node-detail" hidden aria-live="polite">
<h2 id="node-title"></h2>
<p id="node-sum"></p>
<ol id="node-uses"></ol>
<p id="node-total"></p>
</section>
<section>
<h2>Legend</h2>
<ul class="legend">
{legend}
</ul>
</section>
<p class="keys">Keys: → next, ← back, space play/pause, Home first, End last. Tab to a box and
press Enter (or click it) for its gradient as the sum over its uses; Escape closes that.</p>
"""

_TENSOR_NOW = """<div id="step-grid" aria-live="polite"></div>
"""

_TENSOR_BELOW = """<section id="layer-detail" hidden aria-live="polite">
<h2 id="layer-title"></h2>
<p id="layer-about"></p>
<div class="grids">
<figure><figcaption>value</figcaption><div id="layer-value"></div></figure>
<figure><figcaption id="layer-grad-caption">gradient</figcaption><div id="layer-grad"></div></figure>
</div>
<h3 id="scalar-heading"></h3>
<p id="scalar-note"></p>
<div id="scalar-views">{views}</div>
</section>
<section>
<h2>Legend</h2>
<ul class="legend">
{legend}
</ul>
</section>
<p class="keys">Keys: → next, ← back, space play/pause, Home first, End last. Tab to a layer and
press Enter (or click it) for its numbers and its scalar graph (row 0); Escape closes that.</p>
"""
