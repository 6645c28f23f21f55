"""``autodiff eval``: a program's value and the gradient of its output, as a table, text, JSON or CSV."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from ..files.stdout import emit
from .console import Progress, layout_for, print_rich, warn
from .options import (
    CONTEXT_SETTINGS,
    EXIT_CODES_HELP,
    Command,
    dtype_option,
    load_inputs,
    name_list,
    parse_assignments,
    program_options,
    reporting_errors,
    text_options,
)
from .process import collector_off_until_exit, keep_until_exit

if TYPE_CHECKING:
    from typing import Any

    from ..language.program import Program

__all__ = ["eval_command"]


@click.command("eval", cls=Command, context_settings=CONTEXT_SETTINGS, epilog=EXIT_CODES_HELP,
               short_help="Print a program's value and the gradient of its output.")
@program_options
@click.option("--wrt", "wrt", multiple=True, metavar="NAMES",
              help="Only show gradients with respect to these variables (comma-separated, repeatable).")
@click.option("--mode", type=click.Choice(["reverse", "forward"]), default="reverse", show_default=True,
              help="reverse: one backward pass for every gradient; forward: one pass per input "
                   "entry, and the work of each mode.")
@click.option("--tangent", "tangents", multiple=True, metavar="NAME=VALUE", callback=parse_assignments,
              help="Forward mode's one pass: d output along this direction (repeatable; 0 for the "
                   "inputs not named).")
@click.option("--format", "output_format", type=click.Choice(["table", "plain", "json", "csv"]),
              help="Output format [default: table on a terminal, plain when piped].")
@text_options
@dtype_option
@reporting_errors
def eval_command(
    source: str | None, expr: str | None, file: str | None, assignments: dict[str, float],
    values_file: str | None, output: str | None, wrt: tuple[str, ...], mode: str,
    tangents: dict[str, Any], output_format: str | None, precision: int | None, no_color: bool, dtype: str,
) -> None:
    """Evaluate a program and print its value and the gradient of the output.

    SOURCE is an expression, a file, or '-' for stdin (also read when SOURCE is
    omitted and stdin is a pipe).  Statements are separated by new lines or ';';
    'name = 2.5' declares an input with a default value.  The grad column is
    d output / d variable for every variable.

    \b
    Examples:
      autodiff eval "L = (a*b + c)*f" --set a=2 --set b=-3 --set c=10 --set f=-2
      autodiff eval samples/mlp.ad --wrt w11,w12 --format json
      autodiff eval samples/quadratic.ad --mode forward
      autodiff eval samples/regression_matrix.ad --tangent W='[[1], [0]]'
      echo "y = 3*x**2" | autodiff eval --set x=2 --format csv

    Forward mode, tensors and the formats: docs/eval.md.
    """
    from ..analysis.gradient_warnings import flat_op_notes, gradient_warnings
    from ..execute.run import run_program
    from ..render import report

    collector_off_until_exit()  # one build, kept to the end: nothing for the collector to do
    if tangents:
        _refuse_with_tangent(wrt, mode)
        if dtype != "float64":
            raise click.UsageError("--tangent computes in float64; leave out --dtype")
    program, values = load_inputs(source, expr, file, assignments, values_file)
    if tangents:
        _eval_along(program, values, output, tangents, output_format, precision, no_color)
        return
    with Progress("evaluating") as progress:
        run = run_program(program, values, output, dtype=dtype, forward=mode == "forward", wrt=name_list(wrt),
                          progress=progress)
    keep_until_exit(program, run)  # not freed node by node when the command returns
    warn(run.warnings)  # a value for a name the program does not use: a typo?
    warn(gradient_warnings(run))  # y = sqrt(x) at 0: where it came from
    for note in flat_op_notes(run):  # dy/dx is 0 through argmax by construction, not by chance
        click.echo(f"note: {note}", err=True)
    output_format = layout_for(output_format, "table", run.rows)
    work = report.work_note(run)
    if output_format == "table":
        print_rich(report.table(run, precision), no_color)
        return
    for chunk in report.chunks(run, output_format, precision):  # a slice at a time: a million variables
        emit(chunk)  # make ~100 MB of text
    if work and output_format != "json":  # the JSON document holds it
        click.echo(f"note: {work}", err=True)


def _refuse_with_tangent(wrt: tuple[str, ...], mode: str) -> None:
    """--tangent asks for one directional derivative, in forward mode: not gradients, not reverse."""
    context = click.get_current_context()
    if wrt:
        raise click.UsageError("--tangent gives one derivative along a direction and --wrt chooses gradients: "
                               "give one of them", context)
    if mode == "reverse" and context.get_parameter_source("mode") != click.core.ParameterSource.DEFAULT:
        raise click.UsageError("--tangent is forward mode's (one pass along the direction): leave out "
                               "--mode reverse", context)


def _eval_along(program: Program, values: dict[str, Any], output: str | None, tangents: dict[str, Any],
                output_format: str | None, precision: int | None, no_color: bool) -> None:
    """eval --tangent: the output's value and its derivative along the tangent, from one forward pass."""
    from ..analysis.gradient_warnings import flat_op_notes
    from ..execute.directional import along
    from ..execute.run import run_program
    from ..render import directional

    run = run_program(program, values, output, differentiate=False)
    keep_until_exit(program, run)
    warn(run.warnings)  # a value for a name the program does not use: a typo?
    result = along(run, tangents)
    for note in flat_op_notes(run, list(tangents)):  # the derivative along them stops at argmax, as a gradient
        click.echo(f"note: {note}", err=True)
    if not result.finite:
        warn([(f"the derivative of {result.output} along the tangent is not finite: a local derivative on its "
               "path is infinite or undefined at these values (sqrt or log at 0, a power of 0...); "
               "explain shows each step's local derivative")])
    output_format = layout_for(output_format, "table", 1)
    if output_format == "json":
        emit(directional.directional_json(result))
    elif output_format == "csv":
        emit(directional.directional_csv(result))
    elif output_format == "table":
        print_rich(directional.directional_table(result, precision), no_color)
    else:
        emit(directional.directional_text(result, precision))
