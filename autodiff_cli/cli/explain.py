"""``autodiff explain``: the backward pass as chain-rule steps (``analysis.steps``, ``render.explain``;
a tensor program's in matrix form: ``analysis.tensor_steps``, ``render.tensor_explain``)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from ..language.program import Program

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
    from ..analysis import steps
    from ..engine.graph import paused_cycle_collector
    from ..execute import evaluate
    from ..language.program import runs_as_tensors
    from ..render import explain as render_explain

    collector_off_until_exit()  # one build, kept to the end: nothing for the collector to do
    program, values = load_inputs(source, expr, file, assignments, values_file)
    if max_steps is None:  # a script reading JSON gets every step unless it asks for fewer
        max_steps = 0 if output_format == "json" else steps.DEFAULT_MAX_STEPS
    if runs_as_tensors(program, values):
        _explain_tensors(program, values, output, output_format, max_steps, scalar, row, precision, no_color)
        return
    if scalar or row is not None:
        raise click.UsageError(f"{'--scalar' if scalar else '--row'} shows one row of a tensor program in "
                               "scalars, and this program is already scalar; drop it")
    # The explainer sums the gradients itself, step by step; the engine's pass is not needed.
    with Progress("evaluating") as progress:
        evaluation = evaluate(program, values, output, backward=False, progress=progress)
    keep_until_exit(program, evaluation)  # not freed node by node when the command returns
    warn(evaluation.warnings)
    # A limit beyond any graph is the same as none (and islice takes at most sys.maxsize).
    explanation = steps.explain(evaluation, 0 if max_steps > sys.maxsize else max_steps)
    keep_until_exit(explanation)
    lines = len(explanation.definitions) + len(explanation.steps)
    output_format = layout_for(output_format, "rich", lines)
    if output_format == "json":
        from ..render.explain_json import explanation_json

        with paused_cycle_collector():
            text = explanation_json(explanation)
        emit(text)
    elif output_format == "plain":
        with paused_cycle_collector():  # a line apiece for millions of steps: acyclic, and linear so
            text = render_explain.to_plain(explanation, precision)
        emit(text)
    elif output_format == "markdown":
        with paused_cycle_collector():
            text = render_explain.to_markdown(explanation, precision)
        emit(text)
    else:
        print_rich(render_explain.to_rich(explanation, precision), no_color)


def _explain_tensors(program: Program, values: dict[str, Any], output: str | None, output_format: str | None,
                     max_steps: int, scalar: bool, row: int | None, precision: int | None, no_color: bool) -> None:
    """explain of a tensor program: the chain rule in matrix form; with --scalar, each statement's
    steps and one row of it as scalar chain-rule lines."""
    from ..analysis.tensor_steps import explain_tensors, scalar_layers
    from ..language.program import check_inputs
    from ..render import tensor_explain

    if row is not None and not scalar:
        raise click.UsageError("--row chooses the row --scalar shows; add --scalar", ctx=None)
    limit = 0 if max_steps > sys.maxsize else max_steps
    explanation = explain_tensors(program, values, output, max_steps=limit)
    warn(check_inputs(program, values))  # a value for a name the program does not use: a typo?
    layers = scalar_layers(program, values, explanation, row or 0, max_steps=limit) if scalar else None
    if layers and row is not None and all(layer.row is None for layer in layers):
        warn([f"--row {row} is not used: no statement's value has rows (two or more axes), so each is shown whole"])
    lines = len(explanation.definitions) + len(explanation.steps)
    output_format = layout_for(output_format, "rich", lines)
    if output_format == "json":
        from ..render.explain_json import tensor_explanation_json

        emit(tensor_explanation_json(explanation, layers))
    elif output_format == "plain":
        emit(tensor_explain.to_plain(explanation, precision, layers))
    elif output_format == "markdown":
        emit(tensor_explain.to_markdown(explanation, precision, layers))
    else:
        print_rich(tensor_explain.to_rich(explanation, precision, layers), no_color)
