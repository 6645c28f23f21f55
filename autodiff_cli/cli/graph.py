"""``autodiff graph``: draw a program's computational graph as SVG, PNG, PDF, DOT or a step-through page.

A thin Click layer: ``render.dot`` builds the text from the graph model and
``render.backends`` lays it out; this command picks the format, checks the request before
any slow work, and decides where the result goes.  A tensor program takes the other branch:
``analysis.tensor_graph`` (its layers, and the statements ``--expand`` opens) drawn by
``render.tensor_dot``, or at ``--level scalar`` ``execute.unroll``'s program drawn as above.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import click

from ..errors import NAMES_SHOWN, AutodiffError, InputError, listed
from ..files.atomic import check_writable, write_atomic
from ..files.stdout import emit
from ..files.streams import is_stream, is_terminal, stdout_is_terminal
from .console import Progress, warn
from .options import (
    Command,
    CONTEXT_SETTINGS,
    EXIT_CODES_HELP,
    FiniteFloat,
    complete_file_name,
    format_of_file,
    load_inputs,
    name_list,
    program_options,
    program_title,
    refuse_overwriting_inputs,
    reporting_errors,
    set_advice,
)
from .process import keep_until_exit

if TYPE_CHECKING:
    from ..analysis.graph_model import GraphModel
    from ..analysis.tensor_graph import Expansion, TensorGraph
    from ..execute.scalar import Evaluation
    from ..language import Program

__all__ = ["BINARY_FORMATS", "DEFAULT_MAX_NODES", "EXTENSIONS", "GraphTooLarge", "graph_command"]

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
# The longest --timeout (about 11.5 days): far beyond any layout, and within what the
# operating system's timers take (an infinite or 1e300-second wait overflows them).
MAX_TIMEOUT = 1_000_000.0

BINARY_FORMATS = ("png", "pdf")
EXTENSIONS = {".svg": "svg", ".png": "png", ".pdf": "pdf", ".dot": "dot", ".gv": "dot", ".html": "html",
              ".htm": "html"}

GRAPH_EXIT_HELP = EXIT_CODES_HELP + """

\b
A failed render or an output file that cannot be written is also status 1
(nothing is written then); PNG or PDF to a terminal is a usage error (2)."""


@click.command("graph", cls=Command, context_settings=CONTEXT_SETTINGS, epilog=GRAPH_EXIT_HELP,
               short_help="Draw the computational graph as SVG, PNG, PDF or DOT.")
@program_options
@click.option("-o", "--out", "out", metavar="FILE", shell_complete=complete_file_name,
              help="Write to FILE, in the format of its extension (.svg .png .pdf .dot .html) "
                   "[default: standard output].")
@click.option("--format", "output_format", type=click.Choice(["svg", "png", "pdf", "dot", "html"]),
              help="Output format [default: from FILE, else svg]. html: a step-through page.")
@click.option("--rankdir", type=click.Choice(["LR", "TB"]),
              help="Left to right or top to bottom [default: LR; TB for layers].")
@click.option("--precision", type=click.IntRange(0, 17), default=4, show_default=True, metavar="N",
              help="Decimal places of the numbers.")
@click.option("--no-grad", is_flag=True, help="Forward pass only: data, no gradients.")
@click.option("--edge-grads", is_flag=True, help="Label each edge with its local derivative.")
@click.option("--renderer", type=click.Choice(["auto", "system", "bundled"]), default="auto",
              show_default=True, help="The system Graphviz, or the bundled graphviz-pure.")
@click.option("--max-nodes", type=click.IntRange(min=0), default=DEFAULT_MAX_NODES, show_default=True,
              metavar="N", help="Refuse to lay out more than N values (0: no limit).")
@click.option("--timeout", type=FiniteFloat(min=0, max=MAX_TIMEOUT, meaning="0 for no limit"), default=120.0,
              show_default=True, metavar="SECONDS", help="Stop a longer layout (0: no limit).")
@click.option("--level", type=click.Choice(["layers", "ops", "scalar"]),
              help="A box per statement, per tensor op, or per scalar [default: layers for tensors; "
                   "scalar unless large].")
@click.option("--expand", "expand", multiple=True, metavar="NAME",
              help="Tensor programs: open the statement computing NAME into scalars (repeatable).")
@click.option("--row", type=click.IntRange(min=0), default=None, metavar="I",
              help="With --expand: the row of a matrix to open [default: 0].")
@click.option("--params", "params", multiple=True, metavar="NAMES",
              help="Tensor programs: the inputs counted as parameters [default: initialized ones].")
@reporting_errors
def graph_command(
    source: str | None, expr: str | None, file: str | None, assignments: dict[str, float],
    values_file: str | None, output: str | None, out: str | None, output_format: str | None,
    rankdir: str | None, precision: int, no_grad: bool, edge_grads: bool, renderer: str, max_nodes: int, timeout: float,
    level: str | None = None, expand: tuple[str, ...] = (), row: int | None = None, params: tuple[str, ...] = (),
) -> None:
    """Draw the computational graph: a box per value (name, data, gradient) and
    a small node per operation.

    SOURCE, --set, --values and --output work as for 'autodiff eval'; inputs
    without a value draw the structure alone.  SVG, PNG and DOT need nothing
    beyond this package; PDF needs the system Graphviz.  An .html file steps
    through the forward and backward passes (arrow keys, space, Home, End).

    A tensor program is drawn as its layers, each with its shape, values and
    gradient; --expand NAME opens one into its scalar graph.  More in
    docs/graph.md.

    \b
    Examples:
      autodiff graph samples/karpathy.ad -o karpathy.svg
      autodiff graph samples/karpathy.ad -o steps.html   # step through
      autodiff graph "L = (a*b + c)*f" -o structure.png  # no values
      autodiff graph samples/mlp.ad -o mlp.png
      autodiff graph samples/mlp.ad --format dot > mlp.dot
      autodiff graph samples/moons_mlp.ad -o moons.svg   # layers
      autodiff graph samples/moons_mlp.ad --expand h1 -o h1.svg
    """
    from ..analysis.graph_model import GraphModel
    from ..execute import evaluate
    from ..language.program import runs_as_tensors
    from ..render import backends, dot

    to_stdout = out is None or out == "-"
    # /dev/stdout, /dev/fd/3, a pipe or a device: a stream, with no extension to read a format from.
    to_stream = to_stdout or is_stream(out)  # type: ignore[arg-type]
    fmt = _choose_format(out, output_format, to_stream)
    at_terminal = stdout_is_terminal() if to_stdout else is_terminal(out)  # type: ignore[arg-type]
    if fmt in BINARY_FORMATS and at_terminal:
        raise click.UsageError(
            f"refusing to write binary {fmt.upper()} to a terminal; "
            f"write it to a file with -o graph.{fmt}, or redirect: ... > graph.{fmt}"
        )
    # Everything that can be checked cheaply is checked before evaluating and laying out.
    page = fmt == "html"  # the page draws the graph as SVG
    backend = backends.choose_renderer("svg" if page else fmt, renderer) if fmt != "dot" else None
    if not to_stdout:
        assert out is not None
        check_writable(out, "graph.svg")
        refuse_overwriting_inputs("-o", out, {"the program": file or source, "the --values file": values_file})

    program, values = load_inputs(source, expr, file, assignments, values_file)
    if runs_as_tensors(program, values):
        level = level or "layers"
        if row is not None and not expand and not page:
            raise click.UsageError("--row chooses the row --expand opens (or the page's scalar views); add --expand NAME")
        layers_rankdir = "TB" if level != "scalar" else "LR"  # so that a network's layers fit a screen
        request = TensorRequest(output, level, name_list(expand), row, name_list(params) if params else None,
                                rankdir or layers_rankdir, precision, not no_grad, edge_grads, max_nodes)
        data = _tensor_graph(program, values, request, fmt, backend, timeout)
        _write(data, out, to_stdout)
        return
    _refuse_tensor_options(level, expand, params, row)
    if level == "layers" and page:
        raise click.UsageError("the page of a scalar program steps through every value; leave out --level layers")
    rankdir = rankdir or "LR"
    # The page steps through numbers, so it needs them all: a missing input is an error there.
    with Progress("evaluating") as progress:
        evaluation = evaluate(program, values, output, backward=not no_grad, allow_missing=not page,
                              progress=progress)
    keep_until_exit(program, evaluation)  # not freed node by node when the command returns
    warn(evaluation.warnings)
    if not evaluation.has_values:
        warn([_structure_only_warning(program, values)])
        if edge_grads:
            warn(["--edge-grads needs values; the edges are not labelled"])
    model = GraphModel.of(evaluation)
    omitted = model.omitted
    if omitted:
        verb, pronoun = ("does", "it is") if len(omitted) == 1 else ("do", "they are")
        warn([f"{listed(omitted, NAMES_SHOWN)} {verb} not affect {evaluation.output}, so {pronoun} not drawn"])

    if level == "layers" or (level is None and not page and _drawn_by_statement(model, program)):
        data = _scalar_statements(program, values, evaluation, model, fmt, backend, timeout, precision,
                                  rankdir, not no_grad, explicit=level == "layers")
        _write(data, out, to_stdout)
        return
    if backend is not None and max_nodes:
        _check_layout_size(model, max_nodes)
    text = dot.to_dot(model, rankdir=rankdir, precision=precision, show_grad=not no_grad,
                      edge_grads=edge_grads)
    data = text.encode("utf-8") if backend is None else _laid_out(text, "svg" if page else fmt, backend, timeout)
    if page:
        data = _page(evaluation, model, data, precision, not no_grad)
    _write(data, out, to_stdout)


def _write(data: bytes, out: str | None, to_stdout: bool) -> None:
    if to_stdout:
        emit(data)
    else:
        assert out is not None
        write_atomic(out, data)


# A scalar program of more values than this is drawn a box per statement, when that makes a
# tenth as many boxes or fewer: samples/moons.ad's 1,660 values took Graphviz 21-26 s to lay out
# (3.3 MB of SVG), its 35 statements take well under a second.
STATEMENTS_ABOVE = 1000


def _drawn_by_statement(model: GraphModel, program: Program) -> bool:
    statements = sum(1 for v in program.variables.values() if v.kind != "input")
    return model.size > STATEMENTS_ABOVE and statements * 10 <= model.size and model.has_values


def _scalar_statements(program: Program, values: dict[str, Any], evaluation: Evaluation, model: GraphModel,
                       fmt: str, backend: Any, timeout: float, precision: int, rankdir: str, grads: bool,
                       explicit: bool) -> bytes:
    """A large scalar program a box per statement, its inputs named in the boxes that read them;
    stderr says so, and how to draw every value."""
    from ..analysis.tensor_graph import layer_graph
    from ..render import tensor_dot

    graph = layer_graph(program, values, evaluation.output, gradients=grads)
    drawn = sum(1 for node in graph.nodes if node.kind != "input")
    if not explicit:
        warn([f"{evaluation.output} has {model.size:,} values: drawn a box per statement ({drawn:,}), each "
              f"naming the inputs it reads; --level scalar draws every value (a layout of minutes), or "
              f"--output NAME a part"])
    text = tensor_dot.layer_dot(graph, rankdir=rankdir, precision=precision, show_grad=grads, inputs_drawn=False)
    return text.encode("utf-8") if backend is None else _laid_out(text, fmt, backend, timeout)


def _refuse_tensor_options(level: str | None, expand: tuple[str, ...], params: tuple[str, ...],
                           row: int | None) -> None:
    """--level ops, --expand, --row and --params are about tensors: asking for them of a scalar
    program is a mistake worth saying."""
    used = [option for option, given in ((f"--level {level}", level == "ops"), ("--expand", bool(expand)),
                                         ("--row", row is not None), ("--params", bool(params))) if given]
    if used:
        raise click.UsageError(f"{' and '.join(used)} {'is' if len(used) == 1 else 'are'} for tensor programs; "
                               "this one is drawn value by value already")


@dataclass(frozen=True)
class TensorRequest:
    """What the options ask of a tensor program's picture."""

    output: str | None
    level: str
    expand: list[str]
    row: int | None  # None: not given (the first row)
    params: list[str] | None
    rankdir: str
    precision: int
    grads: bool
    edge_grads: bool
    max_nodes: int


def _tensor_graph(program: Program, values: dict[str, Any], request: TensorRequest, fmt: str,
                  backend: Any, timeout: float) -> bytes:
    """A tensor program's layer graph (with its expansions), or its whole scalar graph, as ``fmt``."""
    from ..analysis.tensor_graph import layer_graph
    from ..language.program import check_inputs
    from ..render import tensor_dot

    limit = request.max_nodes if backend is not None and request.max_nodes else None
    if request.level == "scalar":
        warn(check_inputs(program, values))
        return _scalar_level(program, values, request, fmt, backend, timeout, limit)
    with Progress("evaluating") as progress:
        progress(0, 1)
        graph = layer_graph(program, values, request.output, level=request.level, gradients=request.grads,
                            parameters=request.params)
    warn(check_inputs(program, values))  # a value for a name the program does not use: a typo?
    warn(_non_finite_gradients(graph))
    if graph.omitted:
        omitted = graph.omitted
        verb, pronoun = ("does", "it is") if len(omitted) == 1 else ("do", "they are")
        warn([f"{listed(omitted, NAMES_SHOWN)} {verb} not affect {graph.output}, so {pronoun} not drawn"])
    if fmt == "html":
        return _tensor_page(program, graph, request, backend, timeout)
    expansions = _expansions(graph, request)
    size = graph.size + sum(expansion.size for expansion in expansions)
    if limit and size > limit:
        _refuse_layers(graph.output, size, graph.size, limit)
    if request.edge_grads and not expansions:
        warn(["--edge-grads labels the edges of scalar graphs; the layer graph's edges say the shapes that flow "
              "(open a layer with --expand NAME to see its local derivatives)"])
    text = tensor_dot.layer_dot(graph, rankdir=request.rankdir, precision=request.precision,
                                show_grad=request.grads, expansions=expansions, edge_grads=request.edge_grads)
    if backend is None:
        return text.encode("utf-8")
    return _laid_out(text, fmt, backend, timeout)


# A layer's scalar graph on the page is laid out when the page is written: above this many values
# it is left out (with the command that draws it), as a layout of thousands takes minutes.
PAGE_SCALAR_VALUES = 400
# Scalar operations a statement may unroll into per value --max-nodes allows: the view holds the
# weighting that finds the gradients too (a product and a sum per entry), which is not drawn.
UNROLLED_PER_VALUE = 4


def _tensor_page(program: Program, graph: TensorGraph, request: TensorRequest, backend: Any, timeout: float
                 ) -> bytes:
    """The step-through page of a tensor program: the layer graph, and each statement's scalar graph
    for row ``request.row``."""
    from ..render import page, tensor_dot

    if request.max_nodes and graph.size > request.max_nodes:
        _refuse_layers(graph.output, graph.size, graph.size, request.max_nodes)
    # With the gradients: the page shows each layer's once the backward pass reaches it.
    svg = _laid_out(tensor_dot.layer_dot(graph, rankdir=request.rankdir, precision=request.precision,
                                         show_grad=request.grads), "svg", backend, timeout)
    views: dict[int, tuple[str, bytes]] = {}
    notes: dict[int, str] = {}
    statements = [(i, node) for i, node in enumerate(graph.nodes) if node.kind != "input"]
    with Progress("drawing each layer's scalar graph") as progress:
        for done, (i, node) in enumerate(statements):
            progress(done, len(statements))
            if not node.name:
                notes[i] = f"a part of {graph.statement_name(node.register)}: its scalar graph shows this"
                continue
            view = _page_scalar_view(program, graph, node.name, request, backend, timeout)
            if isinstance(view, str):
                notes[i] = view
            else:
                views[i] = view
    title = program_title(program.source)
    return page.tensor_to_html(graph, svg, views, title=title, precision=request.precision,
                               scalar_notes=notes).encode("utf-8")


def _non_finite_gradients(graph: TensorGraph) -> list[str]:
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
    return [f"a gradient is not finite: d{graph.output}/d{entry} = {value} (the gradients of {names} are not "
            "finite everywhere; a derivative that does not exist, such as sqrt's at 0, makes them so)"]


def _page_scalar_view(program: Program, graph: TensorGraph, name: str, request: TensorRequest, backend: Any,
                      timeout: float) -> tuple[str, bytes] | str:
    """The page's scalar graph of the statement computing ``name`` (its title and SVG), or, for one
    too large to lay out here, the command that draws it."""
    from ..analysis.tensor_graph import expand
    from ..execute.unroll import TooLarge
    from ..render import tensor_dot

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
    text = tensor_dot.scalar_dot(expansion, precision=request.precision, show_grad=request.grads)
    return expansion.title, _laid_out(text, "svg", backend, timeout)


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


NO_LIMIT = 10**9  # --max-nodes 0: as many scalar operations as memory holds


def _expansions(graph: TensorGraph, request: TensorRequest) -> list[Expansion]:
    from ..analysis.tensor_graph import expand

    # Unrolling stops early for a statement far too large to draw (TooLarge names --max-nodes);
    # what is drawn is counted against --max-nodes by the caller.
    limit = UNROLLED_PER_VALUE * request.max_nodes if request.max_nodes else NO_LIMIT
    expansions = []
    for name in request.expand:
        expansion = expand(graph, name, request.row or 0, limit=limit)
        if request.row is not None and expansion.view.row is None:  # --row 0 too: it did nothing
            warn([f"--row {request.row}: {name} has no rows to choose from (it is "
                  f"{'a number' if not graph.node(expansion.registers[-1]).shape else 'a vector'}), so all of "
                  "it is drawn"])
        expansions.append(expansion)
    return expansions


def _scalar_level(program: Program, values: dict[str, Any], request: TensorRequest, fmt: str, backend: Any,
                  timeout: float, limit: int | None) -> bytes:
    """Every entry of every tensor as today's scalar graph (``execute.unroll``)."""
    from ..analysis.graph_model import GraphModel
    from ..execute import evaluate
    from ..execute.unroll import scalar_view
    from ..render import dot

    if request.expand:
        raise click.UsageError("--level scalar draws every statement entry by entry already; --expand is for "
                               "the layer graph")
    _refuse_empty_tensors(program, values, request.output)
    with Progress("unrolling") as progress:
        progress(0, 1)
        view = scalar_view(program, values, limit=limit or 10_000_000)
        evaluation = evaluate(view.program, view.values, request.output and _entry_output(view, request.output),
                              backward=request.grads)
    model = GraphModel.of(evaluation)
    if limit:
        _check_layout_size(model, limit)
    text = dot.to_dot(model, rankdir=request.rankdir, precision=request.precision, show_grad=request.grads,
                      edge_grads=request.edge_grads)
    if backend is None:
        return text.encode("utf-8")
    if fmt == "html":  # the scalar program's own page: every entry stepped through, value by value
        svg = _laid_out(text, "svg", backend, timeout, SMALLER_TENSOR_GRAPH)
        return _page(evaluation, model, svg, request.precision, request.grads)
    return _laid_out(text, fmt, backend, timeout, SMALLER_TENSOR_GRAPH)


def _refuse_empty_tensors(program: Program, values: dict[str, Any], output: str | None) -> None:
    """A tensor with no entries has no scalars to draw: say which, and what draws it."""
    from ..analysis.tensor_graph import layer_graph

    empty = layer_graph(program, values, output, gradients=False).empty_tensor()
    if empty is not None:
        raise InputError(f"--level scalar: {empty} has no entries, so it has no scalar graph",
                         hint="draw the layer graph instead (--level layers)")


def _entry_output(view: Any, output: str) -> str:
    """--output of the tensor program, as the scalar view names it (a number keeps its name)."""
    registers = view.entries.get(output)
    if registers is None or registers.ndim:
        raise click.UsageError(f"--level scalar draws the graph of a number; '{output}' is not one")
    return view.names[int(registers)]


SMALLER_GRAPH = "draw a smaller graph (--output NAME)"
SMALLER_TENSOR_GRAPH = "draw the layers and open one (--level layers --expand NAME)"


def _laid_out(text: str, fmt: str, backend: Any, timeout: float, smaller: str = SMALLER_GRAPH) -> bytes:
    """DOT text laid out as ``fmt``; a layout stopped by ``--timeout`` says what to do instead,
    ``smaller`` among it."""
    from ..render import backends

    try:
        return backends.render(text, fmt, backend, timeout=timeout or None)
    except backends.RenderTimeout as error:
        error.hint = (f"allow more time with --timeout {max(1, round(timeout * 4))} (0: no limit), {smaller}, "
                      "or write --format dot, which needs no layout")
        raise


def _page(evaluation: Evaluation, model: GraphModel, svg: bytes, precision: int, backward: bool) -> bytes:
    """The step-through page around the rendered SVG, titled by the program's file or text."""
    from ..analysis.steps import walkthrough
    from ..render import page

    walk = walkthrough(evaluation, model)
    title = program_title(evaluation.program.source)
    return page.to_html(walk, svg, title=title, precision=precision, backward=backward).encode("utf-8")


def _structure_only_warning(program: Program, values: dict[str, float]) -> str:
    """Which inputs lack a value, and which values (given or defaults) are therefore not drawn either."""
    from ..language import missing_inputs

    missing = [v.name for v in missing_inputs(program, values)]
    known = [v.name for v in program.inputs if v.name in values or v.default is not None]

    if not known:
        return (f"no value for {listed(missing, NAMES_SHOWN)}: drawing the structure only (give values with "
                "--set NAME=VALUE)")
    return (f"no value for {listed(missing, NAMES_SHOWN)}: drawing the structure only, without the values of "
            f"{listed(known, NAMES_SHOWN)} (give every input a value to see the numbers: {set_advice(missing)})")


class GraphTooLarge(AutodiffError):
    """The graph has more values, or longer edges, than --max-nodes allows to be laid out."""


def _choose_format(out: str | None, given: str | None, to_stream: bool) -> str:
    if to_stream:
        return given or "svg"
    assert out is not None
    return format_of_file(out, given, EXTENSIONS, "svg|png|pdf|dot|html")


def _check_layout_size(model: GraphModel, max_nodes: int) -> None:
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

