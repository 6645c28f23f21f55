"""The computational graph as Graphviz DOT text, in the style of micrograd's ``draw_dot``.

Every value is a record ``{ name | data 2.0000 | grad -3.0000 }`` and every operation a
small node of its own between its operands and its result.  Pure: the functions here
build text (or a ``graphviz.Digraph``) and never print, write files or run Graphviz;
``render`` turns the text into pictures and the CLI decides where they go.

Node ids come from the topological order (``v0``, ``v1``, ... and ``v3_op`` for the
operation producing ``v3``), never from ``id()``, so the same graph gives the same DOT
bytes on every run.  The traversal is the engine's iterative one: no recursion limit.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..analysis.graph_model import GraphModel
from ..engine.ops import short_number
from .palette import KIND_FILLS, OP_FILL

if TYPE_CHECKING:
    import graphviz

    from ..engine.value import Value
    from ..execute.scalar import Evaluation

__all__ = [
    "KIND_LEGEND", "KIND_STYLES", "OP_FILL", "RANKDIRS", "draw_dot", "format_number", "graph_size",
    "model_to_digraph", "omitted_names", "to_digraph", "to_dot",
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
) -> str:
    """DOT text for the graph of an evaluation's output (or of its ``GraphModel``).

    Without values (``has_values`` is False: inputs left unset) only the structure is
    drawn, whatever ``show_values`` says: the numbers would all be NaN.
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
    return dot.source


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
