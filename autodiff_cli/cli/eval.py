"""``autodiff eval``: a program's value and the gradient of its output, as a table, text, JSON or CSV."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from ..errors import InputError, Source
from ..files.stdout import emit
from .console import Progress, layout_for, print_rich, warn
from .options import (
    Command,
    dtype_option,
    CONTEXT_SETTINGS,
    EXIT_CODES_HELP,
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

    from ..execute import Evaluation
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
    from ..execute import evaluate
    from ..render import report

    from ..language.program import runs_as_tensors

    collector_off_until_exit()  # one build, kept to the end: nothing for the collector to do
    if tangents:
        _refuse_with_tangent(wrt, mode)
        if dtype != "float64":
            raise click.UsageError("--tangent computes in float64; leave out --dtype")
    program, values = load_inputs(source, expr, file, assignments, values_file)
    if tangents:
        _eval_along(program, values, output, tangents, output_format, precision, no_color)
        return
    if dtype != "float64" or runs_as_tensors(program, values):  # float32 runs on the tensor executor
        _eval_tensors(program, values, output, wrt, mode, output_format, precision, no_color, dtype)
        return
    from ..analysis.gradient_warnings import non_finite_gradient_warnings

    forward = mode == "forward"
    with Progress("evaluating") as progress:
        evaluation = evaluate(program, values, output, backward=not forward, progress=progress)
    keep_until_exit(program, evaluation)  # not freed node by node when the command returns
    warn(evaluation.warnings)
    names = _wrt_names(wrt, evaluation)
    work_text = work_data = None
    if forward:
        from ..execute import apply_grads, forward_gradients

        result = forward_gradients(evaluation, names)
        apply_grads(evaluation, result)
        names = list(result.grads)
        work_text, work_data = report.work_summary(result), report.work_dict(result)
    warn(non_finite_gradient_warnings(evaluation, names))  # y = sqrt(x) at 0: where it came from
    output_format = layout_for(output_format, "table", len(names) if names is not None else len(evaluation.nodes))
    if output_format == "table":
        print_rich(report.to_table(evaluation, names, precision, note=work_text), no_color)
    else:
        # Written a slice at a time: the report of a million variables is ~100 MB of text.
        if output_format == "json":
            chunks = report.json_chunks(evaluation, names, mode=mode, work=work_data)
        elif output_format == "csv":
            chunks = report.csv_chunks(evaluation, names)
        else:
            chunks = report.plain_chunks(evaluation, names, precision)
        for chunk in chunks:
            emit(chunk)
        if work_text and output_format != "json":
            click.echo(f"note: {work_text}", err=True)


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
    from ..execute.directional import scalar_directional, tensor_directional
    from ..language.program import check_inputs, runs_as_tensors
    from ..render import directional

    if runs_as_tensors(program, values) or runs_as_tensors(program, tangents):
        result = tensor_directional(program, values, tangents, output)
    else:
        from ..execute import evaluate

        evaluation = evaluate(program, values, output, backward=False)
        keep_until_exit(program, evaluation)
        warn(evaluation.warnings)
        result = scalar_directional(evaluation, tangents)
    warn(check_inputs(program, values))
    if not result.finite:
        warn([f"the derivative of {result.output} along the tangent is not finite: a local derivative on its "
              "path is infinite or undefined at these values (sqrt or log at 0, a power of 0...); "
              "explain shows each step's local derivative"])
    output_format = layout_for(output_format, "table", 1)
    if output_format == "json":
        emit(directional.directional_json(result))
    elif output_format == "csv":
        emit(directional.directional_csv(result))
    elif output_format == "table":
        print_rich(directional.directional_table(result, precision), no_color)
    else:
        emit(directional.directional_text(result, precision))


def _eval_tensors(program: Program, values: dict[str, Any], output: str | None, wrt: tuple[str, ...], mode: str,
                  output_format: str | None, precision: int | None, no_color: bool, dtype: str = "float64") -> None:
    """eval of a tensor program: each variable's shape, value and gradient (or the Jacobian of a
    vector output); --mode forward computes the same derivatives with JVPs, one per input entry."""
    from ..execute.interpreter import evaluate_tensors, non_finite_gradient_warnings as tensor_gradient_warnings
    from ..language.program import check_inputs
    from ..render import tensor_report

    names = _known_names(wrt, list(program.variables), program.source.name)
    evaluation = evaluate_tensors(program, values, output, forward=mode == "forward", wrt=names, dtype=dtype)
    if evaluation.forward_inputs is not None and names is None:
        names = list(evaluation.forward_inputs)  # forward mode shows what it differentiated, as for scalars
    warn(check_inputs(program, values))  # a value for a name the program does not use: a typo?
    warn(tensor_gradient_warnings(evaluation, names))
    output_format = layout_for(output_format, "table", len(names) if names is not None else len(evaluation.names))
    work = tensor_report.tensor_work_summary(evaluation) if mode == "forward" else None
    if output_format == "table":
        print_rich(tensor_report.tensor_table(evaluation, names, precision), no_color)
        if work:
            click.echo(work)  # below the table, as for a scalar program
    elif output_format == "json":  # the work is in the document
        emit(tensor_report.tensor_json(evaluation, names, mode))
    elif output_format == "csv":
        emit(tensor_report.tensor_csv(evaluation, names))
    else:
        emit(tensor_report.tensor_plain(evaluation, names, precision))
    if work and output_format in ("csv", "plain"):
        click.echo(f"note: {work}", err=True)


def _wrt_names(wrt: tuple[str, ...], evaluation: Evaluation) -> list[str] | None:
    return _known_names(wrt, list(evaluation.nodes), evaluation.program.source.name)


def _known_names(wrt: tuple[str, ...], known: list[str], program_name: str) -> list[str] | None:
    """The --wrt names, each once, all of them variables of the program (None: every variable)."""
    from ..errors import variables_hint

    names = name_list(wrt)
    unknown = [name for name in names if name not in known]
    if unknown:
        raise InputError(
            f"--wrt names {', '.join(unknown)}, which the program does not define",
            source=Source(program_name, ""),
            hint=variables_hint(known, unknown),
        )
    return list(dict.fromkeys(names)) or None
