"""``autodiff explain``: the backward pass as chain-rule steps (``analysis.steps``, ``render.explain``)."""

from __future__ import annotations

import sys

import click

from ..files.stdout import emit
from .console import Progress, layout_for, print_rich, warn
from .options import (
    Command,
    CONTEXT_SETTINGS,
    EXIT_CODES_HELP,
    load_inputs,
    refuse_tensors,
    program_options,
    reporting_errors,
    text_options,
)
from .process import collector_off_until_exit, keep_until_exit

__all__ = ["explain_command"]

@click.command("explain", cls=Command, context_settings=CONTEXT_SETTINGS, epilog=EXIT_CODES_HELP,
               short_help="Show the backward pass as chain-rule steps.")
@program_options
@click.option("--format", "output_format", type=click.Choice(["rich", "plain", "markdown"]),
              help="Output format [default: rich on a terminal, plain when piped].")
# The default is steps.DEFAULT_MAX_STEPS, applied in the command: importing it here
# would cost every command start-up, which is measured.
@click.option("--max-steps", type=click.IntRange(min=0), metavar="N",
              help="Show at most N lines of each pass; the rest are counted (0 = show all) [default: 500].")
@text_options
@reporting_errors
def explain_command(
    source: str | None, expr: str | None, file: str | None, assignments: dict[str, float],
    values_file: str | None, output: str | None, output_format: str | None, max_steps: int | None,
    precision: int | None, no_color: bool,
) -> None:
    """Show the backward pass as chain-rule steps, one per edge of the graph.

    SOURCE, --set and --values work as for 'autodiff eval'.  The forward pass is
    listed first; unnamed intermediate results are called t1, t2, ... in the
    order they are computed.  Each backward step reads

    \b
      dL/dc = ∂d/∂c * dL/dd = 1 * -2 = -2     [∂d/∂c = 1]

    that is: gradient of c = local derivative * upstream gradient, with the
    local derivative's rule on the right.  d/d is a gradient (through every
    path to the output), ∂/∂ a local derivative (of one operation alone).  A variable used in several places
    gets one '+=' step per use, then a line with the sum.

    \b
    Examples:
      autodiff explain "L = (a*b + c)*f" --set a=2 --set b=-3 --set c=10 --set f=-2
      autodiff explain samples/neuron.ad --format markdown > neuron.md
      autodiff explain big.ad --max-steps 50 | less
    """
    from ..analysis import steps
    from ..engine.graph import paused_cycle_collector
    from ..execute import evaluate
    from ..render import explain as render_explain

    collector_off_until_exit()  # one build, kept to the end: nothing for the collector to do
    program, values = load_inputs(source, expr, file, assignments, values_file)
    refuse_tensors(program, values, "explain")
    # The explainer sums the gradients itself, step by step; the engine's pass is not needed.
    with Progress("evaluating") as progress:
        evaluation = evaluate(program, values, output, backward=False, progress=progress)
    keep_until_exit(program, evaluation)  # not freed node by node when the command returns
    warn(evaluation.warnings)
    if max_steps is None:
        max_steps = steps.DEFAULT_MAX_STEPS
    # A limit beyond any graph is the same as none (and islice takes at most sys.maxsize).
    explanation = steps.explain(evaluation, 0 if max_steps > sys.maxsize else max_steps)
    keep_until_exit(explanation)
    lines = len(explanation.definitions) + len(explanation.steps)
    output_format = layout_for(output_format, "rich", lines)
    if output_format == "plain":
        with paused_cycle_collector():  # a line apiece for millions of steps: acyclic, and linear so
            text = render_explain.to_plain(explanation, precision)
        emit(text)
    elif output_format == "markdown":
        with paused_cycle_collector():
            text = render_explain.to_markdown(explanation, precision)
        emit(text)
    else:
        print_rich(render_explain.to_rich(explanation, precision), no_color)
