"""The computational graph as Graphviz DOT text, in either form of ``analysis.graph_model``.

**A box per value**, in the style of micrograd's ``draw_dot`` (``to_dot``, ``model_to_digraph``):
every value is a record ``{ name | data 2.0000 | grad -3.0000 }`` and every operation a small node
of its own between its operands and its result.  Node ids come from the topological order (``v0``,
``v1``, ... and ``v3_op`` for the operation producing ``v3``), never from ``id()``, so the same
graph gives the same DOT bytes on every run.  The traversal is the engine's iterative one: no
recursion limit.

**A box per statement or tensor operation** (``layer_dot``): one box per node of a ``LayerGraph``
in the same colours (``KIND_STYLES``): its name and expression, its shape, a parameter's count of
entries, its value and, with gradients, its gradient.  A tensor of at most
``report.SHOWN_WHOLE`` entries is a grid of its numbers, each cell tinted by its sign and
size; a larger one is ``report``'s summary (mean, std, min, max) over a tiny heat map of its
entries (up to ``HEAT_ENTRIES``).  Each edge says the shape that flows along it.  Ids are ``t`` and
the register (``t8``).  A statement opened into its boxes per value (``Expansion``) is a cluster
holding the first form's boxes for one row, ids prefixed by ``x`` and its number, in place of the
statement's box; the edges from and to its neighbours end at the cluster's border.

``graph_dot`` draws either model by its form.  Both forms share the colours, the legend, the
graph's, edges' and attributes' text.  Pure: the functions here build text (or a
``graphviz.Digraph``) and never print, write files or run Graphviz; ``render`` turns the text into
pictures and the CLI decides where they go.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..analysis.graph_model import GraphModel
from ..engine.ops import short_number
from .numbers import format_number as significant
from .palette import KIND_FILLS, NEGATIVE, OP_FILL, POSITIVE, heat_colour

if TYPE_CHECKING:
    import graphviz

    from ..analysis.graph_model import Expansion, LayerGraph, LayerNode
    from ..engine.value import Value
    from ..execute.scalar import Evaluation

__all__ = [
    "HEAT_ENTRIES", "KIND_LEGEND", "KIND_STYLES", "NEGATIVE", "NUMBER_TINT", "OP_FILL", "POSITIVE", "RANKDIRS",
    "as_rows", "draw_dot", "format_number", "graph_dot", "graph_size", "heat_colour", "in_order", "largest_size",
    "layer_dot",
    "layer_id", "layer_label", "model_to_digraph", "omitted_names", "scalar_dot", "shape_words", "to_digraph",
    "to_dot",
]

RANKDIRS = ("LR", "TB")

# How each kind of value node (``graph_model.KINDS``) is filled (``palette.KIND_FILLS``); the
# README's legend describes the same colours.
KIND_STYLES: dict[str, dict[str, str]] = {
    "input": {"fillcolor": KIND_FILLS["input"]},
    "intermediate": {"fillcolor": KIND_FILLS["intermediate"]},
    "output": {"fillcolor": KIND_FILLS["output"], "penwidth": "2"},  # a heavier border
    "result": {"fillcolor": KIND_FILLS["result"]},
    "constant": {"fillcolor": KIND_FILLS["constant"], "fontcolor": "#555555"},
}
# What each colour means, in the words of the README's legend and the step-through page's.
KIND_LEGEND: dict[str, str] = {
    "input": "input",
    "intermediate": "named intermediate",
    "output": "output (heavier border)",
    "result": "unnamed sub-expression",
    "constant": "constant written in the program",
}
# The DOT text lists every value record first, then the operation nodes and the edges; the
# defaults are switched in between so that no node repeats them (the text stays short).
_GRAPH_ATTR = {"nodesep": "0.2", "ranksep": "0.35", "bgcolor": "white", "nslimit": "1"}
_RECORD_ATTR = {"shape": "record", "style": "filled", "color": "#333333", "fontname": "Helvetica",
                "fontsize": "12"}
_OP_ATTR = {"shape": "circle", "fillcolor": OP_FILL, "color": "#777777", "fontsize": "11",
            "width": "0.3", "margin": "0.02"}
_EDGE_ATTR = {"fontname": "Helvetica", "fontsize": "10", "fontcolor": "#555555", "color": "#555555",
              "arrowsize": "0.7"}


def format_number(x: float, precision: int = 4) -> str:
    """``precision`` decimal places, like micrograd's ``%.4f``.

    Numbers that fixed point would show as all zeros (0.00001 at 4 places) or as a
    long row of digits (above a million) are written in scientific notation with the
    same number of decimals, so a small gradient never reads as exactly zero.
    """
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if x == 0.0:
        return f"{0.0:.{precision}f}"  # also turns -0.0 into 0.0000: the sign of zero is noise here
    magnitude = abs(x)
    if magnitude >= 1e6 or magnitude < 0.5 * 10.0**-precision:
        return f"{x:.{precision}e}"
    return f"{x:.{precision}f}"


def _record_field(text: str) -> str:
    r"""A name as it must be written inside one field of a Graphviz record label.

    Backslash starts an escape sequence and ``{ } | < >`` structure the record, so each
    is escaped with a backslash, and so is ``"``, which would end the quoted string.  A
    line break becomes Graphviz's ``\n``.  Spaces are left alone: a run of them shows as
    one, which is harmless, while escaping them makes Graphviz keep stray spaces at the
    end of every field of the record.
    """
    if text.isidentifier():  # every name the language makes: nothing to escape
        return text
    out = []
    for char in text:
        if char in '\\{}|<>"':
            out.append("\\" + char)
        elif char == "\n":
            out.append("\\n")
        elif char != "\r":
            out.append(char)
    return "".join(out)


def _plain_label(text: str) -> str:
    """Text as it must be written inside a quoted ordinary label: only \\ and " are special."""
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "")


def _attributes(attributes: Mapping[str, str]) -> str:
    """``name="value" ...``: a node's attributes as DOT text (every value quoted, always valid)."""
    return " ".join(f'{key}="{_plain_label(value)}"' for key, value in sorted(attributes.items()))


def graph_size(root: Value) -> int:
    """The number of values in the graph of ``root`` (each drawn as a record; op nodes not counted)."""
    return GraphModel(root).size


def omitted_names(evaluation: Evaluation) -> list[str]:
    """The program's variables that the output does not depend on, so its graph leaves out."""
    return GraphModel.of(evaluation).omitted


def to_digraph(
    root: Value,
    *,
    kinds: Mapping[Value, str] | None = None,
    rankdir: str = "LR",
    precision: int = 4,
    show_values: bool = True,
    show_grad: bool = True,
    edge_grads: bool = False,
    name: str | None = None,
) -> graphviz.Digraph:
    """The graph of ``root`` as a ``graphviz.Digraph`` (``.source`` is the DOT text).

    ``kinds`` maps nodes to keys of ``KIND_STYLES`` (``input``, ``intermediate``, ``output``...);
    nodes it leaves out are classified from the graph itself.  ``show_values=False`` draws the
    structure alone: names, ops and constants.  ``edge_grads`` labels each operand's edge
    with d result / d operand.
    """
    model = GraphModel(root, kinds)
    return model_to_digraph(model, rankdir=rankdir, precision=precision, show_values=show_values,
                            show_grad=show_grad, edge_grads=edge_grads, name=name)


_EXPRESSION_LIMIT = 24  # characters of an operand's expression shown inside another's
_BINDING = {"+": 1, "-": 1, "*": 2, "/": 2, "neg": 3, "**": 4}  # names, numbers and calls: 5


def _binding(node: Value) -> int:
    op = node._op
    if node.label or node._a is None:
        return 5
    return _BINDING.get("**" if op.startswith("**") else op, 5)


def _expression(op: str, shown: list[str], order: Sequence[Value], a: int, b: int) -> str:
    """An unnamed node as an expression of its operands' names or expressions: ``a*b + c``,
    ``tanh(n)``, ``x**2``, ``(a + b)*c``; an operand whose expression is too long is '…'."""
    mine = _BINDING.get("**" if op.startswith("**") else op, 5)

    def operand(position: int, right: bool = False) -> str:
        text = shown[position]
        if not text:
            return "…"
        binding = _binding(order[position])
        tighter = binding > mine or (binding == mine and not right and op != "**") or mine == 5
        return text if tighter else f"({text})"

    if b >= 0:
        spaced = f" {op} " if op in ("+", "-") else op
        return f"{operand(a)}{spaced}{operand(b, right=True)}"
    if op.startswith("**"):
        return f"{operand(a, right=True)}{op}"
    if op == "neg":
        return f"-{operand(a)}"
    return f"{op}({operand(a)})"


def _check_options(rankdir: str, precision: int) -> None:
    if rankdir not in RANKDIRS:
        raise ValueError(f"rankdir must be one of {', '.join(RANKDIRS)}, not {rankdir!r}")
    if precision < 0:
        raise ValueError(f"precision must be >= 0, not {precision}")


def model_to_digraph(
    model: GraphModel,
    *,
    rankdir: str = "LR",
    precision: int = 4,
    show_values: bool = True,
    show_grad: bool = True,
    edge_grads: bool = False,
    name: str | None = None,
) -> graphviz.Digraph:
    """A graph model as a ``graphviz.Digraph``; the options are ``to_digraph``'s."""
    from graphviz import escape

    _check_options(rankdir, precision)
    dot = _digraph_class()(
        name=None if name is None else escape(name),
        graph_attr={"rankdir": rankdir, **_GRAPH_ATTR},
        node_attr=_RECORD_ATTR,
        edge_attr=_EDGE_ATTR,
    )
    # The statements are appended to ``body`` as text rather than through ``node()`` and
    # ``edge()``: their per-call quoting costs ~50 us a value (7 s at 1e5 values, 100 s at
    # 1e6), and nothing here needs it.  Ids are ours (v0, v1, ...), every label is escaped
    # above and always quoted, and attribute values are the constants of this module.
    tape = model.tape
    order, a_of, b_of = tape.order, tape.a, tape.b
    ids = [f"v{index}" for index in range(len(order))]
    styles = {kind: _attributes(style) for kind, style in KIND_STYLES.items()}
    kinds = model.kinds
    body = dot.body
    fmt = format_number
    # Structure only: an unnamed box shows what it computes from its operands ("a*b + c"), not
    # its op alone, which the circle beside it already shows.
    shown: list[str] = [] if show_values else [""] * len(order)
    for index, node in enumerate(order):
        if node.label:
            title = node.label
        elif node._a is None:
            title = short_number(node.data)
        elif show_values:
            title = node._op
        else:
            title = _expression(node._op, shown, order, a_of[index], b_of[index])
        if not show_values and not shown[index]:
            shown[index] = title if len(title) <= _EXPRESSION_LIMIT else ""
        label = _record_field(title)
        if show_values:  # our own text: nothing in it needs escaping
            label += f" | data {fmt(node.data, precision)}"
            if show_grad:
                label += f" | grad {fmt(node.grad, precision)}"
        body.append(f'\t{ids[index]} [label="{{ {label} }}" {styles[kinds[index]]}]\n')
    dot.attr("node", **_OP_ATTR)
    labelled = edge_grads and show_values
    op_labels: dict[str, str] = {}
    for index, node in enumerate(order):
        a = a_of[index]
        if a < 0:
            continue
        op_id = ids[index] + "_op"
        op_label = op_labels.get(node._op)
        if op_label is None:
            op_label = op_labels[node._op] = _plain_label(node._op)
        lines = [f'\t{op_id} [label="{op_label}"]\n']
        b = b_of[index]
        operands = ((a, node._da),) if b < 0 else ((a, node._da), (b, node._db))
        for operand, local in operands:
            attributes = f' [label="{fmt(local, precision)}"]' if labelled else ""
            lines.append(f"\t{ids[operand]} -> {op_id}{attributes}\n")
        lines.append(f"\t{op_id} -> {ids[index]}\n")
        body.append("".join(lines))
    return dot


def to_dot(
    evaluation: Evaluation | GraphModel,
    *,
    rankdir: str = "LR",
    precision: int = 4,
    show_values: bool = True,
    show_grad: bool = True,
    edge_grads: bool = False,
    rows: Sequence[Sequence[int]] = (),
) -> str:
    """DOT text for the graph of an evaluation's output (or of its ``GraphModel``).

    Without values (``has_values`` is False: inputs left unset) only the structure is
    drawn, whatever ``show_values`` says: the numbers would all be NaN.  Each of ``rows``
    (positions in the model of computed nodes, of one rank: a layer's units) is kept in its order.
    """
    model = evaluation if isinstance(evaluation, GraphModel) else GraphModel.of(evaluation)
    dot = model_to_digraph(
        model,
        rankdir=rankdir,
        precision=precision,
        show_values=show_values and model.has_values,
        show_grad=show_grad,
        edge_grads=edge_grads,
        name=model.output,
    )
    for number, row in enumerate(rows):
        # The circles of their ops chained (Graphviz loses a flat edge between two records), each
        # circle and its record in a group of their own: without it the records still crossed over.
        ids = [f"v{position}_op" for position in row]
        dot.body.append("\t{rank=same; " + "; ".join(ids) + "}\n")
        dot.body.extend(f'\t{a} -> {b} [style="invis"]\n' for a, b in zip(ids, ids[1:]))
        dot.body.extend(f'\tv{position} [group="r{number}_{i}"]\n\tv{position}_op [group="r{number}_{i}"]\n'
                        for i, position in enumerate(row))
    return dot.source


def graph_dot(model: GraphModel | LayerGraph, *, rankdir: str = "LR", precision: int = 4, show_grad: bool = True
              ) -> str:
    """DOT text for either form of graph: a box per value (``to_dot``) or per statement (``layer_dot``)."""
    if isinstance(model, GraphModel):
        return to_dot(model, rankdir=rankdir, precision=precision, show_grad=show_grad)
    return layer_dot(model, rankdir=rankdir, precision=precision, show_grad=show_grad)


def draw_dot(root: Value, format: str = "svg", rankdir: str = "LR") -> graphviz.Digraph:
    """micrograd's ``draw_dot``: the graph of ``root`` with data and grad, as a ``graphviz.Digraph``.

    A notebook shows the result inline.  Unlike a plain Digraph, its inline picture is
    drawn by the bundled renderer when no system Graphviz is installed; ``.render()`` and
    ``.pipe()`` are the ``graphviz`` package's own and need the system ``dot``.
    """
    dot = to_digraph(root, rankdir=rankdir, name=root.label or None)
    dot.format = format
    return dot


_DIGRAPH_CLASS: Any = None


def _digraph_class() -> Any:
    """A ``graphviz.Digraph`` whose notebook display falls back to the bundled renderer.

    Defined on first use so that importing this module does not import ``graphviz``.
    """
    global _DIGRAPH_CLASS
    if _DIGRAPH_CLASS is None:
        import graphviz

        class AutodiffDigraph(graphviz.Digraph):
            def _repr_image_svg_xml(self) -> str:
                from .backends import render

                return render(self.source, "svg").decode("utf-8")

            def _repr_image_png(self) -> bytes:
                from .backends import render

                return render(self.source, "png")

        _DIGRAPH_CLASS = AutodiffDigraph
    return _DIGRAPH_CLASS


# --- a box per statement or tensor operation ----------------------------------------------------

HEAT_ENTRIES = 256  # the most entries drawn as a heat map (16 x 16); larger tensors get the summary alone
HEAT_CELL = 5  # points a side
# The two ends of the diverging scale (blue for negative, orange for positive), mixed with white
# by the entry's size against the largest: palette.NEGATIVE, palette.POSITIVE, palette.heat_colour.
NUMBER_TINT = 0.55  # how far a grid cell of numbers goes towards the full colour: the text stays readable

_GRAPH = {**_GRAPH_ATTR, "compound": "true"}  # edges may end at a cluster's border
_NODE = {"shape": "box", "style": "filled", "color": "#333333", "fontname": "Helvetica", "fontsize": "10",
         "margin": "0.05,0.04"}
_CLUSTER = {"style": "dashed", "color": "#777777", "fontname": "Helvetica", "fontsize": "12", "labeljust": "l"}


def shape_words(shape: Sequence[int]) -> str:
    """A shape as a box or an edge says it: ``[16, 2]``, and a number's ``[]`` as "scalar" (an
    empty pair of brackets reads as a glyph that failed to draw)."""
    from ..language.shapes import shape_text

    return shape_text(tuple(shape)) if len(shape) else "scalar"


def layer_id(register: int) -> str:
    """The DOT id of a layer box: ``t`` and its register."""
    return f"t{register}"


def largest_size(array: Any) -> float:
    """The largest entry in size: the end of the heat scale (0 for no entries)."""
    import numpy as np

    return float(np.max(np.abs(array))) if array.size else 0.0


def as_rows(array: Any) -> Any:
    """The entries as a matrix to lay out: a vector is one row, a matrix itself, more axes folded."""
    if array.ndim == 1:
        return array.reshape(1, -1)
    return array.reshape(-1, array.shape[-1])


def _grid(array: Any, precision: int) -> str:
    """A small tensor as a table of its numbers, each cell tinted by its value."""
    largest = largest_size(array)
    rows = []
    for row in as_rows(array):
        cells = "".join(f'<TD BGCOLOR="{heat_colour(float(x), largest, NUMBER_TINT)}">'
                        f"{html.escape(significant(float(x), precision))}</TD>" for x in row)
        rows.append(f"<TR>{cells}</TR>")
    return (f'<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="0" CELLPADDING="2" COLOR="#999999">'
            f'{"".join(rows)}</TABLE>')


def _heat(array: Any) -> str:
    """A tensor of up to ``HEAT_ENTRIES`` entries as a map of small squares, one per entry."""
    largest = largest_size(array)
    matrix = as_rows(array)
    rows = []
    for row in matrix:
        cells = "".join(f'<TD BGCOLOR="{heat_colour(float(x), largest)}" WIDTH="{HEAT_CELL}" '
                        f'HEIGHT="{HEAT_CELL}" FIXEDSIZE="TRUE"></TD>' for x in row)
        rows.append(f"<TR>{cells}</TR>")
    # A fixed size (the cells and the border), or the table would stretch to the width of its cell.
    height, width = (n * HEAT_CELL + 2 for n in matrix.shape)
    return (f'<TABLE BORDER="1" CELLBORDER="0" CELLSPACING="0" CELLPADDING="0" COLOR="#999999" FIXEDSIZE="TRUE" '
            f'WIDTH="{width}" HEIGHT="{height}">{"".join(rows)}</TABLE>')


def _tensor_cell(array: Any, precision: int) -> str:
    """What a box shows of one tensor: the number, the grid, or the summary over its heat map."""
    array = array + 0.0  # -0.0 becomes 0.0: a zero's sign (relu's gradient, say) says nothing here
    if not array.size:  # zeros([0, 3]), x[2:1]: an empty table is not valid DOT, and shows nothing anyway
        return "<I>no entries</I>"
    if array.ndim == 0:
        return html.escape(significant(float(array), precision))
    from .report import SHOWN_WHOLE, tensor_text

    if array.size <= SHOWN_WHOLE:
        return _grid(array, precision)
    parts = tensor_text(array, precision).split(", ")  # mean, std, min, max
    text = "".join(html.escape("  ".join(parts[i:i + 2])) + '<BR ALIGN="LEFT"/>' for i in range(0, len(parts), 2))
    if array.size > HEAT_ENTRIES:
        return text
    return (f'<TABLE BORDER="0" CELLSPACING="0" CELLPADDING="1"><TR><TD ALIGN="LEFT" BALIGN="LEFT">{text}</TD>'
            f'</TR><TR><TD ALIGN="LEFT">{_heat(array)}</TD></TR></TABLE>')


def layer_label(node: LayerNode, precision: int, show_grad: bool, reads: str = "") -> str:
    """The HTML-like label of a layer box (without the enclosing ``<`` ``>``); ``reads`` names the
    inputs it reads that are not drawn (a large scalar program drawn by statement)."""
    title = f"<B>{html.escape(node.name)}</B>" if node.name else ""
    if node.expression and node.kind != "constant":
        title += (" = " if title else "") + _wrapped(node.expression)
    elif not title:
        title = _wrapped(node.expression)
    rows = [f'<TR><TD ALIGN="LEFT" BALIGN="LEFT">{title}</TD>'
            f'<TD ALIGN="RIGHT" VALIGN="TOP">{shape_words(node.shape)}</TD></TR>']
    if node.parameters is not None:
        count = f"{node.parameters:,} parameter{'s' * (node.parameters != 1)}"
        rows.append(f'<TR><TD ALIGN="LEFT" COLSPAN="2"><I>{count}</I></TD></TR>')
    if reads:
        rows.append(f'<TR><TD ALIGN="LEFT" BALIGN="LEFT" COLSPAN="2"><I>{_wrapped(reads)}</I></TD></TR>')
    fields = [_field("data", node.value, precision)]
    if show_grad and node.grad is not None:
        fields.append(_field("grad", node.grad, precision))
    # The value and the gradient side by side: a box grows wider rather than twice as tall.
    rows.append(f'<TR><TD COLSPAN="2" ALIGN="LEFT"><TABLE BORDER="0" CELLSPACING="0" CELLPADDING="1"><TR>'
                f'{"".join(fields)}</TR></TABLE></TD></TR>')
    return f'<TABLE BORDER="0" CELLSPACING="0" CELLPADDING="1">{"".join(rows)}</TABLE>'


WRAP = 44  # characters of an expression on one line of a box


def _wrapped(text: str) -> str:
    """An expression escaped, its long lines broken at spaces (left-aligned line breaks)."""
    lines: list[str] = []
    for word in text.split(" "):
        if lines and len(lines[-1]) + 1 + len(word) <= WRAP:
            lines[-1] += " " + word
        else:
            lines.append(word)
    text = '<BR ALIGN="LEFT"/>'.join(html.escape(line) for line in lines)
    return text + '<BR ALIGN="LEFT"/>' if len(lines) > 1 else text  # a last break aligns the last line too


def _field(word: str, array: Any, precision: int) -> str:
    """One cell: ``data`` or ``grad`` and the tensor under it (beside it, for a number)."""
    if array.ndim == 0:
        return f'<TD ALIGN="LEFT" VALIGN="TOP">{word} {_tensor_cell(array, precision)}</TD>'
    return (f'<TD ALIGN="LEFT" VALIGN="TOP"><TABLE BORDER="0" CELLSPACING="0" CELLPADDING="0">'
            f'<TR><TD ALIGN="LEFT">{word}</TD></TR>'
            f'<TR><TD ALIGN="LEFT">{_tensor_cell(array, precision)}</TD></TR>'
            f"</TABLE></TD>")


def layer_dot(graph: LayerGraph, *, rankdir: str = "LR", precision: int = 4, show_grad: bool = True,
              expansions: Sequence[Expansion] = (), edge_grads: bool = False, inputs_drawn: bool = True) -> str:
    """DOT text for ``graph``: a box per node, the ``expansions`` as clusters of scalar boxes in
    place of their statements' boxes.  ``precision`` is significant digits in layer boxes (as
    ``eval``'s table of a tensor program) and decimal places in scalar boxes (as today's graph);
    ``edge_grads`` labels the scalar edges with their local derivatives (layer edges say shapes)."""
    _check_options(rankdir, precision)
    if not inputs_drawn:
        return _statements_dot(graph, rankdir, precision, show_grad)
    replaced: dict[int, int] = {}  # register -> the expansion drawn in its place
    for number, expansion in enumerate(expansions):
        for register in expansion.registers:
            replaced.setdefault(register, number)
    lines = [f"digraph {_quoted(graph.output)} {{",
             f"\tgraph [{_attributes({'rankdir': rankdir, **_GRAPH})}]",
             f"\tnode [{_attributes(_NODE)}]",
             f"\tedge [{_attributes(_EDGE_ATTR)}]"]
    # A statement reading an expansion whose boxes sit in one rank (its entries computed from
    # nothing there) stays out of the column: with it in, Graphviz lost the edges around them.
    beside_leaves = {head for tail, head, _ in graph.edges()
                     if tail in replaced and expansions[replaced[tail]].leaves and head not in replaced}
    for node in graph.nodes:
        if node.register in replaced:
            continue
        style = dict(KIND_STYLES[node.kind])
        if node.kind != "input" and node.register not in beside_leaves:
            style["group"] = "data"  # the statements in one straight column
        lines.append(f"\t{layer_id(node.register)} [label=<{layer_label(node, precision, show_grad)}> "
                     f"{_attributes(style)}]")
    for number, expansion in enumerate(expansions):
        lines.extend(_cluster(number, expansion, precision, show_grad, edge_grads, banded=rankdir == "TB"))
    beside = _parameters_beside(graph, replaced)
    lines.extend(f"\t{{rank=same; {layer_id(parameter)}; {layer_id(consumer)}}}"
                 for parameter, (consumer, side) in beside.items() if side != "above")
    above: dict[int, list[int]] = {}  # an expanded statement -> the inputs it reads first, in a row above it
    for parameter, (consumer, side) in beside.items():
        if side == "above":
            above.setdefault(consumer, []).append(parameter)
    lines.extend("\t{rank=same; " + "; ".join(map(layer_id, inputs)) + "}" for inputs in above.values()
                 if len(inputs) > 1)
    seen: set[tuple[str, str]] = set()
    later: dict[int, list[int]] = {}  # a statement -> the inputs it reads that sit beside another
    for tail, head, shape in graph.edges():
        into, out_of = replaced.get(head), replaced.get(tail)
        if tail in beside and beside[tail][0] != head and into is None:
            later.setdefault(head, []).append(tail)
            continue
        if into is not None and into == out_of:
            continue  # inside one expansion: its scalar graph draws it
        tail_id = layer_id(tail) if out_of is None else _anchor(out_of, expansions[out_of], tail, last=True)
        head_id = layer_id(head) if into is None else _anchor(into, expansions[into], tail, last=False)
        attributes = {"label": shape_words(shape)}
        if (tail, head) in graph.index_reads:  # C[Xb]: the table looked up by the index, along which no gradient flows
            attributes.update(label=f"index {shape_words(shape)}", style="dashed")
        if out_of is not None:
            attributes["ltail"] = f"cluster_x{out_of}"
        if into is not None:
            attributes["lhead"] = f"cluster_x{into}"
            if (tail_id, head_id) in seen:
                continue  # one edge per operand into a cluster
        seen.add((tail_id, head_id))
        attributes.update(_edge_placement(graph, tail, head, beside))
        if attributes.get("dir") == "back":  # drawn from the consumer, so that the parameter sits right of it
            tail_id, head_id = head_id, tail_id
        lines.append(f"\t{tail_id} -> {head_id} [{_attributes(attributes)}]")
    lines.extend(_also_reads(graph, later))
    lines.append("}")
    return "\n".join(lines) + "\n"


SPINE_WEIGHT = "8"  # data edges between statements pull harder than others: the data runs in a column


def _parameters_beside(graph: LayerGraph, replaced: dict[int, int]) -> dict[int, tuple[int, str]]:
    """Where each input sits: beside the first statement that reads it, in its rank (the register
    of that statement, and "left" or "right": the first input a statement reads on its left, the
    next on its right, and so on), as torchview draws a layer's weights.  Only drawn boxes are
    placed; a data input (not a parameter) read by a statement that reads only inputs stays
    above it, where the column of data starts."""
    readers: dict[int, list[int]] = {}
    for node in graph.nodes:
        for operand in node.operands:
            readers.setdefault(operand, []).append(node.register)
    beside: dict[int, tuple[int, str]] = {}
    count: dict[int, int] = {}
    for node in graph.nodes:
        if node.kind != "input" or node.register in replaced or node.register not in readers:
            continue
        consumer = readers[node.register][0]
        starts_the_column = all(graph.node(r).kind == "input" for r in graph.node(consumer).operands)
        if consumer in replaced:  # above the expansion it feeds; its later readers name it in a note
            beside[node.register] = (consumer, "above")
            continue
        if node.parameters is None and starts_the_column:
            continue
        side = "left" if count.get(consumer, 0) % 2 == 0 else "right"
        count[consumer] = count.get(consumer, 0) + 1
        beside[node.register] = (consumer, side)
    return beside


_NOTE = {"shape": "note", "style": "filled", "fillcolor": "#ffffff", "color": "#999999", "fontcolor": "#555555"}


def also_reads_id(register: int) -> str:
    """The DOT id of the note beside a statement that lists the inputs it reads from afar."""
    return f"u{register}"


def _also_reads(graph: LayerGraph, later: dict[int, list[int]]) -> list[str]:
    """A note beside each statement that reads inputs drawn beside an earlier one (the L2 term
    reads every weight): their names, one dashed edge, in place of edges from all over the
    picture that would cross the column."""
    lines = []
    for head, tails in later.items():
        names = ", ".join(dict.fromkeys(graph.node(tail).title for tail in tails))
        note = also_reads_id(head)
        lines.append(f"\t{note} [{_attributes({**_NOTE, 'label': f'reads {names} (drawn above)'})}]")
        lines.append(f"\t{{rank=same; {layer_id(head)}; {note}}}")
        lines.append(f'\t{layer_id(head)} -> {note} [color="#999999" dir="back" style="dashed"]')
    return lines


def _edge_placement(graph: LayerGraph, tail: int, head: int, beside: dict[int, tuple[int, str]]) -> dict[str, str]:
    """How an edge shapes the layout: an input's edge to the statement it sits beside runs flat
    (on the right, drawn backwards); an edge from one statement to the next is heavy, so that
    the statements line up."""
    placed = beside.get(tail)
    if placed is not None and placed[1] != "above":
        return {"dir": "back"} if placed[1] == "right" else {}
    if graph.node(tail).kind != "input" and graph.node(head).kind != "input":
        return {"weight": SPINE_WEIGHT}
    return {}


READS_NAMED = 6  # the most names of unseen inputs a statement's box lists
SHORT_EXPRESSION = 2 * WRAP  # the most characters of a statement a box writes, in that picture


def _statements_dot(graph: LayerGraph, rankdir: str, precision: int, show_grad: bool) -> str:
    """A box per statement and none per input: each box names the inputs it reads.  For a scalar
    program of many inputs (samples/moons.ad reads 337 weights one by one), whose every value as
    a box takes Graphviz minutes to lay out."""
    lines = [f"digraph {_quoted(graph.output)} {{",
             f"\tgraph [{_attributes({'rankdir': rankdir, **_GRAPH})}]",
             f"\tnode [{_attributes(_NODE)}]",
             f"\tedge [{_attributes(_EDGE_ATTR)}]"]
    for node in graph.nodes:
        if node.kind == "input":
            continue
        read = [graph.node(r).title for r in node.operands if graph.node(r).kind == "input"]
        reads = ""
        if read:
            shown = ", ".join(read[:READS_NAMED]) + (", …" if len(read) > READS_NAMED else "")
            reads = f"reads {len(read)} input{'s' * (len(read) != 1)}: {shown}"
        if len(node.expression) > SHORT_EXPRESSION:  # the loss's sum of 337 squares: its program line says it
            node = replace(node, expression=node.expression[:SHORT_EXPRESSION].rsplit(" ", 1)[0] + " …")
        style = dict(KIND_STYLES[node.kind])
        lines.append(f"\t{layer_id(node.register)} [label=<{layer_label(node, precision, show_grad, reads)}> "
                     f"{_attributes(style)}]")
    for tail, head, shape in graph.edges():
        if graph.node(tail).kind != "input":  # a number's edge says nothing: every value here is one
            label = f" [label=\"{shape_words(shape)}\"]" if shape else ""
            lines.append(f"\t{layer_id(tail)} -> {layer_id(head)}{label}")
    lines.extend(_statements_in_order(graph))
    lines.append("}")
    return "\n".join(lines) + "\n"


def _statements_in_order(graph: LayerGraph) -> list[str]:
    """The statements at one depth (as many statements before them) in one rank, in the program's
    order, chained by invisible edges: Graphviz alone drew h1_11 ... h1_16 above h1_1."""
    depth: dict[int, int] = {}
    ranks: dict[int, list[int]] = {}
    for node in graph.nodes:  # operands first
        if node.kind == "input":
            continue
        depth[node.register] = 1 + max((depth[r] for r in node.operands if r in depth), default=-1)
        ranks.setdefault(depth[node.register], []).append(node.register)
    lines = []
    for registers in ranks.values():
        if len(registers) > 1:
            ids = [layer_id(register) for register in registers]
            lines.append("\t{rank=same; " + "; ".join(ids) + "}")
            lines.extend(f'\t{a} -> {b} [style="invis"]' for a, b in zip(ids, ids[1:]))
    return lines


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


_SCALAR_ID = re.compile(r"^\t(v\d+(?:_op|_[rc]\d+)?)(?: -> (v\d+(?:_op|_[rc]\d+)?))?(?= |$)")


def _cluster(number: int, expansion: Expansion, precision: int, show_grad: bool, edge_grads: bool,
             banded: bool) -> list[str]:
    """The expansion's scalar graph, drawn by ``render.dot`` with its ids prefixed, as a cluster;
    ``banded`` (top to bottom) folds its entries into bands stacked one under the other."""
    digraph = _scalar_digraph(expansion, "LR", precision, show_grad, edge_grads)
    layout = _Bands.of(expansion, BAND_WIDTH if banded else None)
    body = layout.statements([statement.rstrip("\n") for statement in digraph.body])
    prefix = f"x{number}"

    def prefixed(match: re.Match[str]) -> str:
        tail, head = match.groups()
        return f"\t{prefix}{tail}" + (f" -> {prefix}{head}" if head else "")

    title = expansion.title
    if len(layout.bands) > 1:
        title += f"; {len(layout.bands)} bands of entries, a dashed box repeats a value drawn in a band above"
    elif layout.picked_again():
        title += "; a dashed box is an entry picked again"
    lines = [f"\tsubgraph cluster_{prefix} {{",
             f"\t\tgraph [{_attributes({**_CLUSTER, 'label': title})}]",
             f"\t\tnode [{_attributes(digraph.node_attr)}]",
             f"\t\tedge [{_attributes(digraph.edge_attr)}]"]
    lines.extend("\t" + _SCALAR_ID.sub(prefixed, statement) for statement in body)
    lines.extend("\t\t" + statement for statement in layout.order(prefix))
    lines.append("\t}")
    return lines


BAND_WIDTH = 10  # the most scalar boxes side by side in a band of an expanded layer: about 1,300 px


@dataclass
class _Bands:
    """How an expansion's boxes are placed: its entries in row-major order, cut into ``bands``
    stacked top to bottom, each box in the band of the first entry computed from it (``band_of``);
    ``chain`` maps a box that one entry alone is computed from to that entry's number, ``depth``
    each box to its rank, ``uses`` each box to the boxes that read it."""

    expansion: Expansion
    bands: list[list[int]]
    band_of: dict[int, int]
    chain: dict[int, int]
    depth: dict[int, int]
    uses: dict[int, list[int]]
    ancestors: list[set[int]]  # per entry: it and every box it is computed from

    @classmethod
    def of(cls, expansion: Expansion, width: int | None) -> _Bands:
        """Bands as wide as fit ``width`` boxes at their widest rank (the values read from a band
        above count: they are drawn again), at least one entry each; one band if ``width`` is None."""
        from collections import Counter

        from ..analysis.graph_model import with_ancestors

        tape = expansion.model.tape
        uses: dict[int, list[int]] = {}
        for position in sorted(expansion.shown):
            for operand in (tape.a[position], tape.b[position]):
                if operand >= 0:
                    uses.setdefault(int(operand), []).append(position)
        depth = _depths(expansion, uses)
        ancestors = [with_ancestors(expansion.model, [entry]) for entry in expansion.entries]
        bands: list[list[int]] = []
        drawn: set[int] = set()
        if expansion.leaves:
            width = None  # an input's entries: one row (Graphviz fails on "init_rank" at their bands' constraints)
        for entry, needed in zip(expansion.entries, ancestors):
            together = drawn | needed
            if bands and (width is None or max(Counter(depth[p] for p in together).values()) <= width):
                bands[-1].append(entry)
                drawn = together
            else:
                bands.append([entry])
                drawn = set(needed)
        number_of = {entry: number for number, band in enumerate(bands) for entry in band}
        band_of: dict[int, int] = {}
        users: dict[int, list[int]] = {}
        for number, (entry, needed) in enumerate(zip(expansion.entries, ancestors)):
            for position in needed:  # the entries come in order: the first band to need a box draws it
                band_of.setdefault(position, number_of[entry])
                users.setdefault(position, []).append(number)
        chain = {position: numbers[0] for position, numbers in users.items() if len(numbers) == 1}
        return cls(expansion, bands, band_of, chain, depth, uses, ancestors)

    def statements(self, body: list[str]) -> list[str]:
        """``render.dot``'s statements of the expansion, each entry's own boxes in one group (a
        straight column), and an edge from a value drawn in an earlier band starting at a dashed
        copy of it (``v3_r1``) at the top of the reading band, in place of an edge back up across
        the bands between."""
        records: dict[int, str] = {}
        copies: dict[int, dict[str, str]] = {}  # a position -> its dashed copies, after its own record
        out: list[str] = []
        for statement in body:
            match = _SCALAR_ID.match(statement)
            if match is None:
                out.append(statement)
                continue
            tail, head = match.groups()
            position = _position(tail)
            if head is None:
                if position in self.chain:
                    statement = f'{statement[:-1]} group="e{self.chain[position]}"]'
                if not tail.endswith("_op"):
                    records[position] = statement
                out.append(statement)
                continue
            band = self.band_of[_position(head)]
            if tail.endswith("_op") or self.band_of[position] == band:
                out.append(statement)
                continue
            copy = f"v{position}_r{band}"
            copies.setdefault(position, {}).setdefault(copy, _dashed(records[position], copy))
            out.append(f"\t{copy}{statement[len(tail) + 1:]}")
        for copy, position in self.picked_again():
            copies.setdefault(position, {})[copy] = _dashed(records[position], copy)
        lines = []
        for statement in out:
            lines.append(statement)
            match = _SCALAR_ID.match(statement)
            if match is not None and match.group(2) is None and not match.group(1).endswith("_op"):
                lines.extend(copies.get(_position(match.group(1)), {}).values())
        return lines

    def picked_again(self) -> list[tuple[str, int]]:
        """(the id of a dashed copy, the position it repeats) for each entry that repeats an earlier
        one, where no op computes the entries (a gather picking one row of a table twice: the
        second pick is drawn again, ``v3_c1``); empty otherwise (an input has no repeats, and a
        computed entry is its own box)."""
        if not self.expansion.leaves or self.expansion.of_input:
            return []
        seen: dict[int, int] = {}
        copies = []
        for position in self.expansion.entries:
            seen[position] = seen.get(position, -1) + 1
            if seen[position]:
                copies.append((f"v{position}_c{seen[position]}", position))
        return copies

    def _entry_ids(self, band: list[int], prefix: str) -> list[str]:
        """The ids of a band's entries in order: a repeated pick by its dashed copy."""
        seen: dict[int, int] = {}
        ids = []
        for position in band:
            seen[position] = seen.get(position, -1) + 1
            ids.append(f"{prefix}v{position}" + (f"_c{seen[position]}" if seen[position] else ""))
        return ids

    def order(self, prefix: str) -> list[str]:
        """Invisible edges (ids ``prefix``ed) that keep each band's entries in one rank and their
        ops in row-major order, and each band below the one before: the boxes that start a band
        hang from the last entry above it."""
        tape = self.expansion.model.tape
        numbers = {entry: number for number, entry in enumerate(self.expansion.entries)}
        lines = []
        drawn: set[int] = set()
        for number, band in enumerate(self.bands):
            needed = set().union(*(self.ancestors[numbers[entry]] for entry in band))
            above = f"{prefix}v{self.bands[number - 1][-1]}" if number else None
            # Entries computed from one another (a running sum) cannot share a rank.
            if len(band) > 1 and not any(set(band) & (self.ancestors[numbers[entry]] - {entry}) for entry in band):
                if self.expansion.leaves and not self.expansion.of_input:  # an input's: "trouble in init_rank"
                    entries = self._entry_ids(band, prefix)
                    lines.append("{rank=same; " + "; ".join(entries) + "}")
                    lines.extend(in_order(entries, f"{prefix}b{number}_"))
                else:
                    lines.append("{rank=same; " + "; ".join(f"{prefix}v{entry}" for entry in band) + "}")
            lines.extend(self._ops_in_order({numbers[entry] for entry in band}, prefix))
            if above:
                # Hung from the last entry above by the boxes on the band's top rank: the rest
                # hang below them, every box near its use; few edges keep the layout quick.
                new = needed - drawn
                copied = sorted(p for p in needed & drawn if any(use in new for use in self.uses.get(p, ())))
                top = min(self.depth[p] for p in new | set(copied))
                lines.extend(f'{above} -> {prefix}v{p} [style="invis" weight="0"]' for p in sorted(new)
                             if tape.a[p] < 0 and self.depth[p] == top)
                lines.extend(f'{above} -> {prefix}v{p}_r{number} [style="invis" weight="0"]' for p in copied
                             if self.depth[p] == top)
            drawn |= needed
        return lines

    def _ops_in_order(self, owners: set[int], prefix: str) -> list[str]:
        """The circles of each entry's own ops left of the next entry's, at every depth: products,
        sums, activations in row-major order.  (Kept between circles: Graphviz loses a flat edge
        between two records.)"""
        tape = self.expansion.model.tape
        by_depth: dict[int, list[tuple[int, int]]] = {}
        for position, owner in self.chain.items():
            if owner in owners and tape.a[position] >= 0:
                by_depth.setdefault(self.depth[position], []).append((owner, position))
        lines = []
        for _, ops in sorted(by_depth.items()):
            if len({owner for owner, _ in ops}) > 1:
                ids = [f"{prefix}v{position}_op" for _, position in sorted(ops)]
                lines.append("{rank=same; " + "; ".join(ids) + "}")
                lines.extend(f'{a} -> {b} [style="invis"]' for a, b in zip(ids, ids[1:]))
        return lines


def in_order(ids: Sequence[str], points: str) -> list[str]:
    """DOT statements that keep the boxes ``ids`` (of one rank) in this order, left to right (top
    to bottom, LR): each hangs below an invisible point (ids ``points`` and a number), and the
    points are chained.  Nothing else fixes their order (Graphviz drew the rows a gather picks
    right to left, and a layer's units as h1[13], h1[14], h1[11]...), and a flat edge between two
    records is lost by Graphviz, so the chain runs between the points."""
    chain = [f"{points}{i}" for i in range(len(ids))]
    lines = [f'{point} [height="0" shape="point" style="invis" width="0"]' for point in chain]
    lines.append("{rank=same; " + "; ".join(chain) + "}")
    lines.extend(f'{a} -> {b} [style="invis"]' for a, b in zip(chain, chain[1:]))
    lines.extend(f'{point} -> {box} [style="invis" weight="10"]' for point, box in zip(chain, ids))
    return lines


def _depths(expansion: Expansion, uses: dict[int, list[int]]) -> dict[int, int]:
    """Each shown box's rank as Graphviz gives it, near enough: the entries on one rank, below
    their deepest operand chain, and every other box just above its earliest use (Graphviz keeps
    edges short: a product sits above the sum it joins, a bias beside the sum it is added to)."""
    tape = expansion.model.tape
    longest: dict[int, int] = {}
    for position in sorted(expansion.shown):  # operands come before their uses
        operands = [o for o in (tape.a[position], tape.b[position]) if o >= 0]
        longest[position] = 1 + max((longest[o] for o in operands), default=-1)
    bottom = max(longest[entry] for entry in expansion.entries)
    depth: dict[int, int] = {}
    for position in sorted(expansion.shown, reverse=True):  # uses come after their operands
        shown_uses = uses.get(position, [])
        depth[position] = min((depth[use] - 1 for use in shown_uses), default=bottom)
    return depth


def _position(node_id: str) -> int:
    """The model position a scalar box's id names: 12 in ``v12``, ``v12_op`` and ``v12_r1``."""
    return int(node_id[1:].split("_")[0])


def _dashed(record: str, copy: str) -> str:
    """A value's record statement as a dashed copy with the id ``copy`` (in no entry's group)."""
    _, rest = record.split(" ", 1)
    rest = re.sub(r' group="[^"]*"', "", rest)
    return f'\t{copy} {rest[:-1]} style="filled,dashed"]'


def scalar_dot(expansion: Expansion, *, rankdir: str = "LR", precision: int = 4, show_grad: bool = True,
               edge_grads: bool = False) -> str:
    """An expansion's scalar graph alone, as DOT: ``render.dot``'s picture of the boxes it shows."""
    return _scalar_digraph(expansion, rankdir, precision, show_grad, edge_grads).source


def _scalar_digraph(expansion: Expansion, rankdir: str, precision: int, show_grad: bool, edge_grads: bool) -> Any:
    """``render.dot``'s Digraph of the expansion's model, its statements cut to one a line and to the
    boxes ``shown`` (the weighting that makes the root, and its edges, left out)."""
    digraph = model_to_digraph(expansion.model, rankdir=rankdir, precision=precision, show_grad=show_grad,
                               edge_grads=edge_grads, name=expansion.name)
    shown = expansion.shown
    kept = []
    for statements in digraph.body:  # an entry may hold several statements, one a line
        for statement in statements.rstrip("\n").split("\n"):
            match = _SCALAR_ID.match(statement)
            if match is None or all(int(_NUMBER.search(found).group()) in shown
                                     for found in match.groups() if found):
                kept.append(statement)
    digraph.body[:] = [statement + "\n" for statement in kept]
    return digraph


_NUMBER = re.compile(r"\d+")


def _anchor(number: int, expansion: Expansion, operand: int, last: bool) -> str:
    """The scalar box an edge into (or out of) a cluster is attached to: the first entry of the
    operand where the view has it, else the view's first box; out of it, its last entry."""
    position = expansion.exit if last else expansion.anchors.get(operand, min(expansion.shown))
    return f"x{number}v{position}"
