"""``autodiff explain`` and ``autodiff check``: Click commands over explain.py and check.py.

Registered on the main group by cli.py.  Like ``eval``, each reads the program
and its inputs with the shared helpers, calls the library and prints what the
renderers return; library errors become exit status 1 through ``reporting_errors``.
"""

from __future__ import annotations

import math

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

CHECK_EXIT_HELP = """\b
Exit status:
  0  every input's gradient agrees with the finite difference
  1  some input disagrees (listed on stderr, with the reason), or an error
     in the program or its inputs
  2  command-line usage error (unknown option, malformed --set, ...)"""


@click.command("explain", context_settings=CONTEXT_SETTINGS, epilog=EXIT_CODES_HELP)
@program_options
@click.option("--format", "output_format", type=click.Choice(["rich", "plain", "markdown"]),
              help="Output format [default: rich on a terminal, plain when piped].")
# The default is explain.DEFAULT_MAX_STEPS, applied in the command: importing explain here
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
      dL/dc = dd/dc * dL/dd = 1 * -2 = -2     [dd/dc = 1]

    that is: gradient of c = local derivative * upstream gradient, with the
    local derivative's rule on the right.  A variable used in several places
    gets one '+=' step per use, then a line with the sum.

    \b
    Examples:
      autodiff explain "L = (a*b + c)*f" --set a=2 --set b=-3 --set c=10 --set f=-2
      autodiff explain samples/neuron.ad --format markdown > neuron.md
      autodiff explain big.ad --max-steps 50 | less
    """
    from . import explain as ex
    from .language import evaluate

    program, values = load_inputs(source, expr, file, assignments, values_file)
    # The explainer sums the gradients itself, step by step; the engine's pass is not needed.
    evaluation = evaluate(program, values, output, backward=False)
    warn(evaluation.warnings)
    explanation = ex.explain(evaluation, ex.DEFAULT_MAX_STEPS if max_steps is None else max_steps)
    output_format = output_format or ("rich" if stdout_is_terminal() else "plain")
    if output_format == "plain":
        emit(ex.to_plain(explanation, precision))
    elif output_format == "markdown":
        emit(ex.to_markdown(explanation, precision))
    else:
        print_rich(ex.to_rich(explanation, precision), no_color)


@click.command("check", context_settings=CONTEXT_SETTINGS, epilog=CHECK_EXIT_HELP)
@program_options
@click.option("--rtol", type=click.FloatRange(min=0.0), default=1e-3, show_default=True,
              help="Relative tolerance, as in torch.autograd.gradcheck.")
@click.option("--atol", type=click.FloatRange(min=0.0), default=1e-5, show_default=True,
              help="Absolute tolerance, as in torch.autograd.gradcheck.")
@click.option("--format", "output_format", type=click.Choice(["table", "plain", "json"]),
              help="Output format [default: table on a terminal, plain when piped].")
@text_options
@click.pass_context
@reporting_errors
def check_command(
    ctx: click.Context, source: str | None, expr: str | None, file: str | None,
    assignments: dict[str, float], values_file: str | None, output: str | None, rtol: float,
    atol: float, output_format: str | None, precision: int | None, no_color: bool,
) -> None:
    """Check the gradient of every input three ways: reverse mode, forward mode
    and a central finite difference.

    SOURCE, --set and --values work as for 'autodiff eval'.  The finite
    difference (f(x+h) - f(x-h)) / 2h uses h = eps**(1/3) * max(1, |x|).  An input
    passes when |gradient - difference| <= atol + rtol * |difference| for both
    modes (torch.autograd.gradcheck's test and defaults).  A kink, such as relu
    or abs at 0, has no derivative and fails, as does a point next to the edge of
    a function's domain, where the difference cannot be taken.

    \b
    Examples:
      autodiff check samples/mlp.ad
      autodiff check "y = relu(x)" --set x=0          # exit 1: a kink at 0
      autodiff check model.ad --rtol 1e-6 --format json
    """
    from . import check as ck
    from .language import evaluate

    if math.isnan(rtol) or math.isnan(atol):  # FloatRange lets NaN through
        raise click.BadParameter("--rtol and --atol must be numbers, not nan")
    program, values = load_inputs(source, expr, file, assignments, values_file)
    evaluation = evaluate(program, values, output)
    warn(evaluation.warnings)
    result = ck.check_gradients(evaluation, rtol=rtol, atol=atol)
    output_format = output_format or ("table" if stdout_is_terminal() else "plain")
    if output_format == "json":
        emit(ck.to_json(result))
    elif output_format == "plain":
        emit(ck.to_plain(result, precision))
    else:
        print_rich(ck.to_table(result, precision), no_color)
    if not result.ok:
        for message in ck.failure_messages(result):
            click.echo(f"check failed: {message}", err=True)
        ctx.exit(1)
