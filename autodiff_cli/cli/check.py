"""``autodiff check``: every input's gradient three ways (``analysis.check``, ``render.check``)."""

from __future__ import annotations

import click

from .common import (
    CONTEXT_SETTINGS,
    FiniteFloat,
    load_inputs,
    program_options,
    reporting_errors,
    text_options,
    warn,
)
from .output import emit, print_rich, stdout_is_terminal

__all__ = ["check_command"]

CHECK_EXIT_HELP = """\b
Exit status:
  0    every input's gradient agrees with the finite difference
  1    some input disagrees (listed on stderr, with the reason), or an error
       in the program or its inputs
  2    command-line usage error (unknown option, malformed --set, ...)
  130  interrupted by Ctrl-C (143: stopped by SIGTERM)"""


@click.command("check", context_settings=CONTEXT_SETTINGS, epilog=CHECK_EXIT_HELP,
               short_help="Check every input's gradient against a finite difference.")
@program_options
@click.option("--rtol", type=FiniteFloat(min=0.0), default=1e-3, show_default=True,
              help="Relative tolerance, as in torch.autograd.gradcheck.")
@click.option("--atol", type=FiniteFloat(min=0.0), default=1e-5, show_default=True,
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
    from ..analysis import check as ck
    from ..execute import evaluate
    from ..render import check as render_check

    program, values = load_inputs(source, expr, file, assignments, values_file)
    evaluation = evaluate(program, values, output)
    warn(evaluation.warnings)
    result = ck.check_gradients(evaluation, rtol=rtol, atol=atol)
    output_format = output_format or ("table" if stdout_is_terminal() else "plain")
    if output_format == "json":
        emit(render_check.to_json(result))
    elif output_format == "plain":
        emit(render_check.to_plain(result, precision))
    else:
        print_rich(render_check.to_table(result, precision), no_color)
    if not result.ok:
        for message in ck.failure_messages(result):
            click.echo(f"check failed: {message}", err=True)
        ctx.exit(1)
