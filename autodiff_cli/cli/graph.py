"""``autodiff graph``: draw a program's computational graph as SVG, PNG, PDF, DOT or a step-through page.

A thin Click layer: it picks the format, checks the request before any slow work, and decides
where the result goes; ``render.graph_drawing.draw_graph`` runs the program and decides what is
drawn (a box per value or per statement, a tensor program's layers and the statements
``--expand`` opens, every entry at ``--level scalar``, the page) and lays it out.
"""

from __future__ import annotations

import click

from ..files.atomic import check_writable, write_atomic
from ..files.stdout import emit
from ..files.streams import is_stream, is_terminal, stdout_is_terminal
from ..render.graph_drawing import (
    DEFAULT_MAX_NODES,
    GraphRequest,
    OptionConflict,
    Tell,
    draw_graph,
)
from .console import Progress, notify, warn
from .options import (
    CONTEXT_SETTINGS,
    EXIT_CODES_HELP,
    Command,
    FiniteFloat,
    Unranged,
    complete_file_name,
    format_of_file,
    load_inputs,
    name_list,
    program_options,
    refuse_overwriting_inputs,
    reporting_errors,
)
from .process import keep_until_exit

__all__ = ["BINARY_FORMATS", "DEFAULT_MAX_NODES", "EXTENSIONS", "graph_command"]

# The longest --timeout (about 11.5 days): far beyond any layout, and within what the
# operating system's timers take (an infinite or 1e300-second wait overflows them).
MAX_TIMEOUT = 1_000_000.0
TELL = Tell(warn, Progress, keep_until_exit)

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
              help="Write to FILE, as its extension says [default: stdout].")
@click.option("--format", "output_format", type=click.Choice(["svg", "png", "pdf", "dot", "html"]),
              metavar="FORMAT", help="svg, png, pdf, dot or html (a step-through page) [default: by FILE, "
                                     "else svg].")
@click.option("--rankdir", type=click.Choice(["LR", "TB"]), help="Direction [default: LR; TB for layers].")
@click.option("--precision", type=click.IntRange(0, 17), default=4, show_default=True, metavar="N",
              cls=Unranged, help="Decimal places of the numbers.")
@click.option("--no-grad", is_flag=True, help="Forward pass only: data, no gradients.")
@click.option("--edge-grads", is_flag=True, help="Label each edge with its local derivative.")
@click.option("--renderer", type=click.Choice(["auto", "system", "bundled"]), default="auto",
              show_default=True, help="The system Graphviz, or the bundled graphviz-pure.")
@click.option("--max-nodes", type=click.IntRange(min=0), default=DEFAULT_MAX_NODES, show_default=True,
              metavar="N", cls=Unranged, help="Lay out at most N values (0: any).")
@click.option("--timeout", type=FiniteFloat(min=0, max=MAX_TIMEOUT, meaning="0 for no limit"), default=120.0,
              show_default=True, metavar="SECONDS", cls=Unranged, help="Stop a longer layout (0: none).")
@click.option("--level", type=click.Choice(["layers", "ops", "scalar"]), metavar="LEVEL",
              help="A box per statement (layers), tensor op (ops) or value (scalar) [default: layers for "
                   "tensors].")
@click.option("--expand", "expand", multiple=True, metavar="NAME",
              help="Open NAME's statement into scalars (repeatable).")
@click.option("--row", type=click.IntRange(min=0), default=None, metavar="I", cls=Unranged,
              help="The row of a matrix --expand opens [default: 0].")
@click.option("--params", "params", multiple=True, metavar="NAMES",
              help="Inputs counted as parameters [default: initialized].")
@reporting_errors
def graph_command(
    source: str | None, expr: str | None, file: str | None, assignments: dict[str, float],
    values_file: str | None, output: str | None, out: str | None, output_format: str | None,
    rankdir: str | None, precision: int, no_grad: bool, edge_grads: bool, renderer: str, max_nodes: int, timeout: float,
    level: str | None = None, expand: tuple[str, ...] = (), row: int | None = None, params: tuple[str, ...] = (),
) -> None:
    """Draw the computational graph: a box per value (name, data, gradient) and
    a small node per operation, or a tensor program's layers (--expand NAME
    opens one).  Inputs without a value draw the structure alone.  SVG, PNG
    and DOT need nothing beyond this package; PDF needs the system Graphviz;
    .html steps through both passes.  More in docs/graph.md.

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
    from ..render import backends

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
    request = GraphRequest(output, level, name_list(expand), row, name_list(params) if params else None, rankdir,
                           precision, not no_grad, edge_grads, max_nodes, fmt, backend, timeout)
    try:
        data = draw_graph(program, values, request, TELL)
    except OptionConflict as error:
        raise click.UsageError(str(error)) from None
    _write(data, out, to_stdout)
    if to_stdout and at_terminal and output_format is None:  # the SVG text a pipe wants, seen as a picture's
        notify(f"note: that was the graph as {fmt.upper()} text; draw it to a file with -o graph.svg "
               "(or .png, .pdf, .html to step through)")


def _write(data: bytes, out: str | None, to_stdout: bool) -> None:
    if to_stdout:
        emit(data)
    else:
        assert out is not None
        write_atomic(out, data)


def _choose_format(out: str | None, given: str | None, to_stream: bool) -> str:
    if to_stream:
        return given or "svg"
    assert out is not None
    return format_of_file(out, given, EXTENSIONS, "svg|png|pdf|dot|html")
