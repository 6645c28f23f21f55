"""The ``autodiff`` command line: a thin Click layer over the library.

This module holds the command group and ``eval``; ``graph`` lives in
``cli_graph`` and ``explain``/``check`` in ``cli_explain``, and all of them
share ``cli_common``.  Each command reads its input, calls the library and
sends the rendered result to stdout; nothing below this layer prints or exits.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from .cli_common import (
    CONTEXT_SETTINGS,
    EXIT_CODES_HELP,
    emit,
    load_inputs,
    print_rich,
    program_options,
    reporting_errors,
    stdout_is_terminal,
    text_options,
    warn,
)
from .cli_explain import check_command, explain_command
from .cli_graph import graph_command
from .errors import InputError, Source

if TYPE_CHECKING:
    from .language import Evaluation

__all__ = ["CONTEXT_SETTINGS", "EXIT_CODES_HELP", "main", "run"]

# --- commands -----------------------------------------------------------------------------


@click.group(context_settings=CONTEXT_SETTINGS, epilog=EXIT_CODES_HELP)
@click.version_option(package_name="autodiff-cli", prog_name="autodiff")
def main() -> None:
    """Differentiate expressions and see how backpropagation flows through them.

    \b
    Examples:
      autodiff eval "L = (a*b + c)*f" --set a=2 --set b=-3 --set c=10 --set f=-2
      autodiff eval samples/neuron.ad --format json
      cat model.ad | autodiff eval - --format csv
    """


@main.command("eval", epilog=EXIT_CODES_HELP)
@program_options
@click.option("--wrt", "wrt", multiple=True, metavar="NAMES",
              help="Only show gradients with respect to these variables (comma-separated, repeatable).")
@click.option("--mode", type=click.Choice(["reverse", "forward"]), default="reverse", show_default=True,
              help="Reverse mode: one backward pass for every gradient.  Forward mode (dual numbers): "
                   "one pass per input (per --wrt name), and a report of the work each mode does.")
@click.option("--format", "output_format", type=click.Choice(["table", "plain", "json", "csv"]),
              help="Output format [default: table on a terminal, plain when piped].")
@text_options
@reporting_errors
def eval_command(
    source: str | None, expr: str | None, file: str | None, assignments: dict[str, float],
    values_file: str | None, output: str | None, wrt: tuple[str, ...], mode: str,
    output_format: str | None, precision: int | None, no_color: bool,
) -> None:
    """Evaluate a program and print its value and the gradient of the output.

    SOURCE is an expression, a file, or '-' for stdin (also read when SOURCE is
    omitted and stdin is a pipe).  A program is statements separated by new
    lines or ';'; 'name = 2.5' declares an input with a default value.

    The gradient column is d output / d variable for every named variable.  With
    --mode forward only the inputs (or the --wrt names) are differentiated, one
    forward pass each, and the work of both modes is reported (below the table,
    under "work" in JSON, on stderr for plain and CSV).

    \b
    Examples:
      autodiff eval "L = (a*b + c)*f" --set a=2 --set b=-3 --set c=10 --set f=-2
      autodiff eval samples/mlp.ad --wrt w11,w12 --format json
      autodiff eval samples/quadratic.ad --mode forward
      echo "y = 3*x**2" | autodiff eval --set x=2 --format csv
    """
    from . import report
    from .language import evaluate

    program, values = load_inputs(source, expr, file, assignments, values_file)
    forward = mode == "forward"
    evaluation = evaluate(program, values, output, backward=not forward)
    warn(evaluation.warnings)
    names = _wrt_names(wrt, evaluation)
    work_text = work_data = None
    if forward:
        from .forward import apply_grads, forward_gradients, work_dict, work_summary

        result = forward_gradients(evaluation, names)
        apply_grads(evaluation, result)
        names = list(result.grads)
        work_text, work_data = work_summary(result), work_dict(result)
    output_format = output_format or ("table" if stdout_is_terminal() else "plain")
    if output_format == "json":
        emit(report.to_json(evaluation, names, mode=mode, work=work_data))
    elif output_format == "table":
        print_rich(report.to_table(evaluation, names, precision, note=work_text), no_color)
    else:
        emit(report.to_csv(evaluation, names) if output_format == "csv"
             else report.to_plain(evaluation, names, precision))
        if work_text:
            click.echo(f"note: {work_text}", err=True)


def _wrt_names(wrt: tuple[str, ...], evaluation: Evaluation) -> list[str] | None:
    from .language import variables_hint

    names = [name.strip() for item in wrt for name in item.split(",") if name.strip()]
    unknown = [name for name in names if name not in evaluation.nodes]
    if unknown:
        raise InputError(
            f"--wrt names {', '.join(unknown)}, which the program does not define",
            source=Source(evaluation.program.source.name, ""),
            hint=variables_hint(list(evaluation.nodes), unknown),
        )
    return list(dict.fromkeys(names)) or None


def run() -> None:
    """The ``autodiff`` program: ``main`` with a SIGTERM that unwinds like Ctrl-C.

    By default SIGTERM ends Python on the spot, which would orphan a Graphviz layout
    still running and leave its temporary file; raising SystemExit instead lets the
    renderer kill its child and the file writer clean up.  Only the program does this,
    not ``main`` itself, which tests and other programs call in their own process.
    """
    import signal

    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    main(prog_name="autodiff")


main.add_command(graph_command)
main.add_command(explain_command)
main.add_command(check_command)
