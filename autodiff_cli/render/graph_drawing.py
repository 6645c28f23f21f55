"""What ``autodiff graph`` draws, and the bytes of the picture: a program's graph a value per box
or a box per statement (``render.dot``), a tensor program's layers with the statements ``--expand``
opens, every entry of a tensor program (``execute.unroll``), or the step-through page
(``render.page``); laid out by ``render.backends``, after refusing a graph too large to lay out in
reasonable time.

The command parses the options into a ``GraphRequest`` and writes the bytes ``draw_graph`` returns;
``draw_graph`` runs the program on the backend its shapes call for (the compiled engine for an
all-scalar program, the NumPy interpreter for the rest) and draws it.  Nothing here prints: warnings go to ``tell.warn`` and the work's
progress to a bar made by ``tell.progress``.  A request that contradicts the program it is about
(``--output`` of a tensor at ``--level scalar``) is an ``OptionConflict``, which the command
shows as a usage error.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from ..errors import NAMES_SHOWN, AutodiffError, InputError, Source, listed

if TYPE_CHECKING:
    from ..analysis.graph_model import Expansion, GraphModel, LayerGraph
    from ..execute.scalar import Evaluation
    from ..language import Program

__all__ = ["DEFAULT_MAX_NODES", "POINTS_PER_NODE", "GraphRequest", "GraphTooLarge", "OptionConflict", "Tell",
           "check_layout_size", "draw_graph", "program_title", "scalar_picture", "tensor_picture"]

# Layout time grows faster than the graph (benchmarks/bench_render.py, SVG, results in
# benchmarks/README.md): 1,000 values take 0.2-0.5 s, 2,000 take 0.6-3.3 s and 10,000 take
# 30 s to 3 minutes, by renderer and shape.  2,000 is also about where a picture stops
# being readable.  Writing DOT needs no layout and has no limit.
DEFAULT_MAX_NODES = 2000
# Points on long edges allowed per value of --max-nodes (300,000 by default).  Measured with
# Graphviz 2.43: samples/moons.ad's 120,000 take 21 s, a 120-statement chain reusing one input
# (57,840) 13 s, a 300-statement one (360,600) more than 200 s; --timeout stops what is between.
POINTS_PER_NODE = 150
NAMED_KINDS = ("input", "intermediate", "output")  # GraphModel kinds of the program's variables
# A scalar program of more values than this is drawn a box per statement, when that makes a
# tenth as many boxes or fewer: samples/moons.ad's 1,660 values took Graphviz 21-26 s to lay out
# (3.3 MB of SVG), its 35 statements take well under a second.
STATEMENTS_ABOVE = 1000
# A layer's scalar graph on the page is laid out when the page is written: above this many values
# it is left out (with the command that draws it), as a layout of thousands takes minutes.
PAGE_SCALAR_VALUES = 400
# Scalar operations a statement may unroll into per value --max-nodes allows: the view holds the
# weighting that finds the gradients too (a product and a sum per entry), which is not drawn.
UNROLLED_PER_VALUE = 4
NO_LIMIT = 10**9  # --max-nodes 0: as many scalar operations as memory holds

SMALLER_GRAPH = "draw a smaller graph (--output NAME)"
SMALLER_TENSOR_GRAPH = "draw the layers and open one (--level layers --expand NAME)"


class GraphTooLarge(AutodiffError):
    """The graph has more values, or longer edges, than --max-nodes allows to be laid out."""


class OptionConflict(ValueError):
    """The options ask for something the program does not have; the message says what."""


class Tell(NamedTuple):
    """Where the drawing reports: warnings, and a progress bar by its description (a context
    giving a function told (done, total)); ``keep`` is given what is not worth freeing before
    the process ends (a large evaluation's graph)."""

    warn: Callable[[list[str]], None]
    progress: Callable[[str], AbstractContextManager[Callable[[int, int], None]]]
    keep: Callable[..., None] = lambda *objects: None


@dataclass(frozen=True)
class GraphRequest:
    """What the options ask of the picture."""

    output: str | None
    level: str | None  # layers, ops or scalar; None: chosen by the program
    expand: list[str]
    row: int | None  # None: not given (the first row)
    params: list[str] | None
    rankdir: str | None  # LR or TB; None: TB for a tensor program's layers, else LR
    precision: int
    grads: bool
    edge_grads: bool
    max_nodes: int
    fmt: str  # svg, png, pdf, dot or html (the page, drawn as SVG)
    backend: Any  # render.backends' Renderer; None for DOT, which needs no layout
    timeout: float  # seconds a layout may take (0: no limit)

    @property
    def direction(self) -> str:
        """The direction laid out: ``rankdir`` once ``draw_graph`` has chosen it, else LR."""
        return self.rankdir or "LR"


def draw_graph(program: Program, values: dict[str, Any], request: GraphRequest, tell: Tell) -> bytes:
    """The picture ``request`` asks of ``program`` run on ``values``: an all-scalar program on the
    compiled engine (a box per value, or per statement when it is large), any other on the NumPy
    interpreter (its layers).  ``OptionConflict`` for options the program has nothing to show for."""
    from dataclasses import replace

    from ..execute.run import runs_on_engine

    tensors = not runs_on_engine(program, values)
    if request.rankdir is None:  # top to bottom for a tensor program's layers, so that they fit a screen
        request = replace(request, rankdir="TB" if tensors and (request.level or "layers") != "scalar" else "LR")
    if tensors:
        if request.row is not None and not request.expand and request.fmt != "html":
            raise OptionConflict("--row chooses the row --expand opens (or the page's scalar views); add --expand NAME")
        return tensor_picture(program, values, request, tell)
    _refuse_tensor_options(request)
    if request.level == "layers" and request.fmt == "html":
        raise OptionConflict("the page of a scalar program steps through every value; leave out --level layers")
    return _evaluated_picture(program, values, request, tell)


def _refuse_tensor_options(request: GraphRequest) -> None:
    """--level ops, --expand, --row and --params are about tensors: asking for them of a scalar
    program is a mistake worth saying."""
    used = [option for option, given in ((f"--level {request.level}", request.level == "ops"),
                                         ("--expand", bool(request.expand)), ("--row", request.row is not None),
                                         ("--params", request.params is not None)) if given]
    if used:
        raise OptionConflict(f"{' and '.join(used)} {'is' if len(used) == 1 else 'are'} for tensor programs; "
                             "this one is drawn value by value already")


def _evaluated_picture(program: Program, values: dict[str, Any], request: GraphRequest, tell: Tell) -> bytes:
    """Evaluate a scalar program on the compiled engine (without values: its structure) and draw it."""
    from ..execute import evaluate

    # The page steps through numbers, so it needs them all: a missing input is an error there.
    with tell.progress("evaluating") as progress:
        evaluation = evaluate(program, values, request.output, backward=request.grads,
                              allow_missing=request.fmt != "html", progress=progress)
    tell.keep(program, evaluation)
    tell.warn(evaluation.warnings)
    if not evaluation.has_values:
        tell.warn([_structure_only_warning(program, values)])
        if request.edge_grads:
            tell.warn(["--edge-grads needs values; the edges are not labelled"])
    return scalar_picture(evaluation, values, request, tell)


def _structure_only_warning(program: Program, values: dict[str, Any]) -> str:
    """Which inputs lack a value, and which values (given or defaults) are therefore not drawn either."""
    from ..language import missing_inputs

    missing = [v.name for v in missing_inputs(program, values)]
    known = [v.name for v in program.inputs if v.name in values or v.default is not None]
    if not known:
        return (f"no value for {listed(missing, NAMES_SHOWN)}: drawing the structure only (give values with "
                "--set NAME=VALUE)")
    advice = " ".join(f"--set {name}=VALUE" for name in missing[:3]) + (" ..." if len(missing) > 3 else "")
    return (f"no value for {listed(missing, NAMES_SHOWN)}: drawing the structure only, without the values of "
            f"{listed(known, NAMES_SHOWN)} (give every input a value to see the numbers: {advice})")


# --- a scalar program --------------------------------------------------------------------------


def scalar_picture(evaluation: Evaluation, values: dict[str, Any], request: GraphRequest, tell: Tell) -> bytes:
    """A scalar program's graph, a box per value (or per statement when it is large), or its page."""
    from ..analysis.graph_model import GraphModel, numbered_groups
    from . import dot

    model = GraphModel.of(evaluation)
    tell.warn(_not_drawn(model.omitted, evaluation.output))
    page = request.fmt == "html"
    if request.level == "layers" or (request.level is None and not page and _drawn_by_statement(model, evaluation.program)):
        return _scalar_statements(evaluation, values, model, request, tell)
    if request.backend is not None and request.max_nodes:
        check_layout_size(model, request.max_nodes)
    # A layer written out a unit at a time reads h1_1, h1_2 ... h1_16 top to bottom.
    groups = [[evaluation.nodes[name] for name in group] for group in numbered_groups(evaluation.nodes)]
    text = dot.to_dot(model, rankdir=request.direction, precision=request.precision, show_grad=request.grads,
                      edge_grads=request.edge_grads, rows=model.side_by_side(groups) if groups else ())
    if request.backend is None:
        return text.encode("utf-8")
    data = _laid_out(text, "svg" if page else request.fmt, request)
    return _page(evaluation, model, data, request) if page else data


def _not_drawn(omitted: list[str], output: str) -> list[str]:
    if not omitted:
        return []
    verb, pronoun = ("does", "it is") if len(omitted) == 1 else ("do", "they are")
    return [f"{listed(omitted, NAMES_SHOWN)} {verb} not affect {output}, so {pronoun} not drawn"]


def _drawn_by_statement(model: GraphModel, program: Program) -> bool:
    statements = sum(1 for v in program.variables.values() if v.kind != "input")
    return model.size > STATEMENTS_ABOVE and statements * 10 <= model.size and model.has_values


def _scalar_statements(evaluation: Evaluation, values: dict[str, Any], model: GraphModel, request: GraphRequest,
                       tell: Tell) -> bytes:
    """A large scalar program a box per statement, its inputs named in the boxes that read them;
    a warning says so, and how to draw every value."""
    from ..analysis.graph_model import layer_graph
    from . import dot

    graph = layer_graph(evaluation.program, values, evaluation.output, gradients=request.grads)
    drawn = sum(1 for node in graph.nodes if node.kind != "input")
    if request.level != "layers":
        tell.warn([(f"{evaluation.output} has {model.size:,} values: drawn a box per statement ({drawn:,}), each "
                   f"naming the inputs it reads; --level scalar draws every value (a layout of minutes), or "
                   f"--output NAME a part")])
    text = dot.layer_dot(graph, rankdir=request.direction, precision=request.precision,
                                show_grad=request.grads, inputs_drawn=False)
    return text.encode("utf-8") if request.backend is None else _laid_out(text, request.fmt, request)


# --- a tensor program --------------------------------------------------------------------------


def tensor_picture(program: Program, values: dict[str, Any], request: GraphRequest, tell: Tell) -> bytes:
    """A tensor program's layer graph (with its expansions), its page, or its whole scalar graph."""
    from ..analysis.graph_model import layer_graph
    from ..language.program import check_inputs
    from . import dot

    limit = request.max_nodes if request.backend is not None and request.max_nodes else None
    if request.level == "scalar":
        tell.warn(check_inputs(program, values))
        return _scalar_level(program, values, request, tell, limit)
    with tell.progress("evaluating") as progress:
        progress(0, 1)
        graph = layer_graph(program, values, request.output, level=request.level or "layers", gradients=request.grads,
                            parameters=request.params)
    tell.warn(check_inputs(program, values))  # a value for a name the program does not use: a typo?
    tell.warn(_non_finite_gradients(graph))
    tell.warn(_not_drawn(graph.omitted, graph.output))
    if request.fmt == "html":
        return _tensor_page(program, graph, request, tell)
    expansions = _expansions(graph, request, tell)
    size = graph.size + sum(expansion.size for expansion in expansions)
    if limit and size > limit:
        _refuse_layers(graph.output, size, graph.size, limit)
    if request.edge_grads and not expansions:
        tell.warn([("--edge-grads labels the edges of scalar graphs; the layer graph's edges say the shapes that "
                   "flow (open a layer with --expand NAME to see its local derivatives)")])
    text = dot.layer_dot(graph, rankdir=request.direction, precision=request.precision,
                                show_grad=request.grads, expansions=expansions, edge_grads=request.edge_grads)
    if request.backend is None:
        return text.encode("utf-8")
    return _laid_out(text, request.fmt, request)


def _tensor_page(program: Program, graph: LayerGraph, request: GraphRequest, tell: Tell) -> bytes:
    """The step-through page of a tensor program: the layer graph, and each statement's scalar graph
    for row ``request.row``."""
    from . import dot, page

    if request.max_nodes and graph.size > request.max_nodes:
        _refuse_layers(graph.output, graph.size, graph.size, request.max_nodes)
    # With the gradients: the page shows each layer's once the backward pass reaches it.
    svg = _laid_out(dot.layer_dot(graph, rankdir=request.direction, precision=request.precision,
                                         show_grad=request.grads), "svg", request)
    views: dict[int, tuple[str, bytes]] = {}
    notes: dict[int, str] = {}
    statements = [(i, node) for i, node in enumerate(graph.nodes) if node.kind != "input"]
    with tell.progress("drawing each layer's scalar graph") as progress:
        for done, (i, node) in enumerate(statements):
            progress(done, len(statements))
            if not node.name:
                notes[i] = f"a part of {graph.statement_name(node.register)}: its scalar graph shows this"
                continue
            view = _page_scalar_view(program, graph, node.name, request)
            if isinstance(view, str):
                notes[i] = view
            else:
                views[i] = view
    title = program_title(program.source)
    return page.tensor_to_html(graph, svg, views, title=title, precision=request.precision,
                               scalar_notes=notes).encode("utf-8")


def _non_finite_gradients(graph: LayerGraph) -> list[str]:
    """One warning naming the layers whose gradient is inf or NaN somewhere (sqrt at 0), and the
    first such entry of the first: the picture shows them, but among many numbers."""
    import numpy as np

    bad = [node for node in graph.nodes if node.grad is not None and not np.isfinite(node.grad).all()]
    if not bad:
        return []
    first = bad[0]
    index = tuple(int(i) for i in np.argwhere(~np.isfinite(first.grad))[0])
    entry = f"{first.title}[{', '.join(map(str, index))}]" if index else first.title
    value = float(first.grad[index]) if index else float(first.grad)
    names = listed([node.title for node in bad], NAMES_SHOWN)
    return [(f"a gradient is not finite: d{graph.output}/d{entry} = {value} (the gradients of {names} are not "
            "finite everywhere; a derivative that does not exist, such as sqrt's at 0, makes them so)")]


def _page_scalar_view(program: Program, graph: LayerGraph, name: str, request: GraphRequest
                      ) -> tuple[str, bytes] | str:
    """The page's scalar graph of the statement computing ``name`` (its title and SVG), or, for one
    too large to lay out here, the command that draws it."""
    from ..analysis.graph_model import expand
    from ..execute.unroll import TooLarge
    from . import dot

    empty = graph.empty_tensor(graph.statement(name))
    if empty is not None:
        return f"no scalar graph: {empty} has no entries"
    try:
        expansion = expand(graph, name, request.row or 0, limit=UNROLLED_PER_VALUE * PAGE_SCALAR_VALUES)
    except TooLarge:
        expansion = None
    if expansion is None or expansion.size > PAGE_SCALAR_VALUES:
        size = f"{expansion.size:,}" if expansion is not None else f"more than {PAGE_SCALAR_VALUES:,}"
        same = " (with the same --set and --values)" if graph.given else ""
        over = expansion is None or expansion.size + len(graph.nodes) > DEFAULT_MAX_NODES
        limit = " --max-nodes 0" if over else ""
        slow = "; a layout of that many values may take minutes" if over else ""
        return (f"its scalar graph has {size} values, too many to lay out here: draw it with autodiff graph "
                f"{_program_argument(program)} --expand {name}{limit} -o {name}.svg{same}{slow}")
    text = dot.scalar_dot(expansion, precision=request.precision, show_grad=request.grads)
    return expansion.title, _laid_out(text, "svg", request)


def _program_argument(program: Program) -> str:
    """How a command names the program: its file, or -e with its text."""
    import shlex

    name = program.source.name
    return shlex.quote(name) if not name.startswith("<") else "-e " + shlex.quote(program.source.text.strip())


def _refuse_layers(output: str, size: int, layers: int, limit: int) -> None:
    raise GraphTooLarge(
        f"the layer graph of {output} has {size:,} boxes"
        + (f" ({layers:,} layers and {size - layers:,} scalar values)" if size != layers else "")
        + f", more than --max-nodes {limit:,}",
        hint=f"expand fewer layers (--expand; one row of a matrix with --row), raise the limit (--max-nodes "
             f"{_round_up(size)}, or 0 for none), or write --format dot, which needs no layout")


def _expansions(graph: LayerGraph, request: GraphRequest, tell: Tell) -> list[Expansion]:
    from ..analysis.graph_model import expand

    # Unrolling stops early for a statement far too large to draw (TooLarge names --max-nodes);
    # what is drawn is counted against --max-nodes by the caller.
    limit = UNROLLED_PER_VALUE * request.max_nodes if request.max_nodes else NO_LIMIT
    expansions = []
    for name in request.expand:
        expansion = expand(graph, name, request.row or 0, limit=limit)
        if request.row is not None and expansion.view.row is None:  # --row 0 too: it did nothing
            tell.warn([(f"--row {request.row}: {name} has no rows to choose from (it is "
                       f"{'a number' if not graph.node(expansion.registers[-1]).shape else 'a vector'}), so all "
                       "of it is drawn")])
        expansions.append(expansion)
    return expansions


def _scalar_level(program: Program, values: dict[str, Any], request: GraphRequest, tell: Tell,
                  limit: int | None) -> bytes:
    """Every entry of every tensor as a scalar program's graph (``execute.unroll``)."""
    from ..analysis.graph_model import GraphModel
    from ..execute import evaluate
    from ..execute.unroll import scalar_view
    from . import dot

    if request.expand:
        raise OptionConflict("--level scalar draws every statement entry by entry already; --expand is for "
                             "the layer graph")
    _refuse_empty_tensors(program, values, request.output)
    with tell.progress("unrolling") as progress:
        progress(0, 1)
        view = scalar_view(program, values, limit=limit or 10_000_000)
        evaluation = evaluate(view.program, view.values, request.output and _entry_output(view, request.output),
                              backward=request.grads)
    model = GraphModel.of(evaluation)
    if limit:
        check_layout_size(model, limit)
    import numpy as np

    # Each tensor's entries side by side in row-major order: h1[0] above h1[1] ... above h1[15].
    tensors = [[evaluation.nodes[view.names[int(r)]] for r in np.ravel(registers)]
               for registers in view.entries.values() if np.ndim(registers)]
    text = dot.to_dot(model, rankdir=request.direction, precision=request.precision, show_grad=request.grads,
                      edge_grads=request.edge_grads, rows=model.side_by_side(tensors))
    if request.backend is None:
        return text.encode("utf-8")
    if request.fmt == "html":  # the scalar program's own page: every entry stepped through, value by value
        svg = _laid_out(text, "svg", request, SMALLER_TENSOR_GRAPH)
        return _page(evaluation, model, svg, request)
    return _laid_out(text, request.fmt, request, SMALLER_TENSOR_GRAPH)


def _refuse_empty_tensors(program: Program, values: dict[str, Any], output: str | None) -> None:
    """A tensor with no entries has no scalars to draw: say which, and what draws it."""
    from ..analysis.graph_model import layer_graph

    empty = layer_graph(program, values, output, gradients=False).empty_tensor()
    if empty is not None:
        raise InputError(f"--level scalar: {empty} has no entries, so it has no scalar graph",
                         hint="draw the layer graph instead (--level layers)")


def _entry_output(view: Any, output: str) -> str:
    """--output of the tensor program, as the scalar view names it (a number keeps its name)."""
    registers = view.entries.get(output)
    if registers is None or registers.ndim:
        raise OptionConflict(f"--level scalar draws the graph of a number; '{output}' is not one")
    return view.names[int(registers)]


# --- laying out ----------------------------------------------------------------------------------


def _laid_out(text: str, fmt: str, request: GraphRequest, smaller: str = SMALLER_GRAPH) -> bytes:
    """DOT text laid out as ``fmt``; a layout stopped by ``--timeout`` says what to do instead,
    ``smaller`` among it."""
    from . import backends

    timeout = request.timeout
    try:
        return backends.render(text, fmt, request.backend, timeout=timeout or None)
    except backends.RenderTimeout as error:
        error.hint = (f"allow more time with --timeout {max(1, round(timeout * 4))} (0: no limit), {smaller}, "
                      "or write --format dot, which needs no layout")
        raise


def _page(evaluation: Evaluation, model: GraphModel, svg: bytes, request: GraphRequest) -> bytes:
    """The step-through page around the rendered SVG, titled by the program's file or text."""
    from ..analysis.steps import walkthrough
    from . import page

    walk = walkthrough(evaluation, model)
    title = program_title(evaluation.program.source)
    return page.to_html(walk, svg, title=title, precision=request.precision,
                        backward=request.grads).encode("utf-8")


def program_title(source: Source, limit: int = 80) -> str:
    """A title for a picture of the program: its file name, or its text when it came as text."""
    if not source.name.startswith("<"):
        return source.name
    text = " ".join(source.text.split())  # <expr>, <stdin>: the program itself says more
    return text if len(text) <= limit else text[: limit - 3] + "..."


def check_layout_size(model: GraphModel, max_nodes: int) -> None:
    """Refuse, before Graphviz spends minutes on it, a graph with more values than ``max_nodes``
    or whose edges cross more layout columns than ``POINTS_PER_NODE`` per value allowed."""
    size, output = model.size, model.output
    if size > max_nodes:
        raise GraphTooLarge(
            f"the graph of {output} has {size:,} values, more than --max-nodes {max_nodes:,}",
            hint=f"laying it out could take minutes: raise the limit (--max-nodes {_round_up(size)}, "
                 "or --max-nodes 0 for none), or write --format dot, which needs no layout",
        )
    long_edges = model.long_edges
    if long_edges.points > POINTS_PER_NODE * max_nodes:
        assert long_edges.widest is not None
        needed = _round_up(-(-long_edges.points // POINTS_PER_NODE))
        uses = f"{long_edges.uses:,} operation{'s' * (long_edges.uses != 1)}"
        start = (f"'{model.names[long_edges.widest]}'" if model.kinds[long_edges.widest] in NAMED_KINDS
                 else "a sub-expression without a name")
        raise GraphTooLarge(
            f"the graph of {output} has {size:,} values, but its edges are long: laid out, they would pass "
            f"{long_edges.points:,} points, more than --max-nodes {max_nodes:,} allows ({POINTS_PER_NODE} a "
            f"value); the longest start at {start}, used by {uses} far from it",
            hint=f"laying it out could take minutes: raise the limit (--max-nodes {needed}, or --max-nodes 0 "
                 "for none), or write --format dot, which needs no layout",
        )


def _round_up(size: int) -> int:
    """A round limit above ``size`` to suggest: 12,345 -> 13000."""
    step = int(10 ** max(0, len(str(size)) - 2))
    return (size // step + 1) * step
