"""``autodiff explain``: the backward pass as chain-rule steps (``analysis.steps.explain_program``, which
picks the scalar or the matrix form by the run's shapes; ``render.explain``, ``render.explain_json``)."""

from __future__ import annotations

import sys

import click

from ..files.stdout import emit
from .console import Progress, layout_for, print_rich, warn
from .options import (
    CONTEXT_SETTINGS,
    EXIT_CODES_HELP,
    Command,
    load_inputs,
    program_options,
    reporting_errors,
    text_options,
)
from .process import collector_off_until_exit, keep_until_exit

__all__ = ["explain_command"]

@click.command("explain", cls=Command, context_settings=CONTEXT_SETTINGS, epilog=EXIT_CODES_HELP,
               short_help="Show the backward pass as chain-rule steps.")
@program_options
@click.option("--format", "output_format", type=click.Choice(["rich", "plain", "markdown", "json"]),
              help="Output format [default: rich on a terminal, plain when piped]; json: both "
                   "passes as data.")
# The default is steps.DEFAULT_MAX_STEPS, applied in the command: importing it here
# would cost every command start-up, which is measured.
@click.option("--max-steps", type=click.IntRange(min=0), metavar="N",
              help="Show at most N lines of each pass; the rest are counted (0 = show all) [default: 500].")
@click.option("--scalar", is_flag=True,
              help="A tensor program: each statement's matrix-form steps, then one row of it in scalars "
                   "(micrograd's chain rule, entry by entry).")
@click.option("--row", type=click.IntRange(min=0), metavar="I",
              help="With --scalar: the row of each matrix shown in scalars [default: 0].")
@text_options
@reporting_errors
def explain_command(
    source: str | None, expr: str | None, file: str | None, assignments: dict[str, float],
    values_file: str | None, output: str | None, output_format: str | None, max_steps: int | None,
    scalar: bool, row: int | None, precision: int | None, no_color: bool,
) -> None:
    """Show the backward pass as chain-rule steps, one per edge of the graph.

    SOURCE, --set and --values work as for 'autodiff eval'.  The forward pass
    comes first; then each backward step reads

    \b
      dy/da += ∂t1/∂a * dy/dt1 = 3 * 1 = 3   [∂t1/∂a = a]

    gradient = local derivative * upstream gradient, the rule on the right; a
    value used twice gets one '+=' per use.  A tensor program is explained in
    matrix form (dL/dW = transpose(X) @ dL/dP); --scalar adds one row of each
    statement in scalars.

    \b
    Examples:
      autodiff explain "y = a*a + a" --set a=3
      autodiff explain samples/neuron.ad --format markdown > neuron.md
      autodiff explain samples/regression_matrix.ad --scalar --row 3
      autodiff explain samples/regression_matrix.ad --format json

    The steps, the matrix form and the JSON schema: docs/explain.md.
    """
    from ..analysis.steps import DEFAULT_MAX_STEPS, OptionConflict, explain_program
    from ..engine.graph import paused_cycle_collector
    from ..render import explain as render_explain

    collector_off_until_exit()  # one build, kept to the end: nothing for the collector to do
    program, values = load_inputs(source, expr, file, assignments, values_file)
    if max_steps is None:  # a script reading JSON gets every step unless it asks for fewer
        max_steps = 0 if output_format == "json" else DEFAULT_MAX_STEPS
    # A limit beyond any graph is the same as none (and islice takes at most sys.maxsize).
    limit = 0 if max_steps > sys.maxsize else max_steps
    try:
        with Progress("evaluating") as progress:
            explanation = explain_program(program, values, output, max_steps=limit, scalar=scalar, row=row,
                                          progress=progress)
    except OptionConflict as error:
        raise click.UsageError(str(error)) from None
    keep_until_exit(program, explanation)  # not freed node by node when the command returns
    warn(explanation.warnings)
    lines = len(explanation.definitions) + len(explanation.steps)
    output_format = layout_for(output_format, "rich", lines)
    if output_format == "rich":
        print_rich(render_explain.to_rich(explanation, precision), no_color)
        return
    with paused_cycle_collector():  # a line apiece for millions of steps: acyclic, and linear so
        if output_format == "json":
            from ..render.explain_json import explanation_json

            text = explanation_json(explanation)
        elif output_format == "plain":
            text = render_explain.to_plain(explanation, precision)
        else:
            text = render_explain.to_markdown(explanation, precision)
    emit(text)
