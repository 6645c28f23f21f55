"""``autodiff check``: every input's gradient three ways (``analysis.check``, ``render.check``)."""

from __future__ import annotations

from typing import Any

import click

from ..files.stdout import emit
from ..files.streams import names_stdin, stdout_is_terminal
from .console import Progress, notify, print_rich, warn
from .options import (
    CONTEXT_SETTINGS,
    Command,
    FiniteFloat,
    ReportedError,
    complete_file_name,
    dtype_option,
    load_inputs,
    program_options,
    reporting_errors,
    text_options,
)
from .process import collector_off_until_exit, keep_until_exit

__all__ = ["check_command"]

# Exit status of a check that found no wrong gradient but could not verify every one: not 0
# (a script must not take it for a pass) and not 1 (nothing was found wrong).
INCONCLUSIVE_EXIT = 3

CHECK_EXIT_HELP = """\b
Exit status:
  0    every gradient agrees; with claims, every claim is proved or agrees
  1    a gradient disagrees or a claim is wrong (said on stderr), or an error
       in the program or its inputs
  2    usage error, or a claim that cannot be read or judged as written
  3    nothing is wrong, but something is inconclusive (said on stderr)
  130  interrupted by Ctrl-C (143: stopped by SIGTERM)
  docs/check.md and docs/check-claims.md tell the whole story."""


@click.command("check", cls=Command, context_settings={**CONTEXT_SETTINGS, "max_content_width": 80},
               epilog=CHECK_EXIT_HELP, short_help="Check every input's gradient against a finite difference.")
@program_options
@click.option("--rtol", type=FiniteFloat(min=0.0), default=1e-3, show_default=True,
              help="Relative tolerance, as gradcheck's.")
@click.option("--atol", type=FiniteFloat(min=0.0), default=1e-5, show_default=True,
              help="Absolute tolerance, as gradcheck's.")
@click.option("--fast", is_flag=True, help="Check along random directions only.")
@click.option("--directions", type=click.IntRange(1, 1000), default=2, show_default=True, metavar="N",
              help="How many random directions.")
@click.option("--seed", type=click.IntRange(0, 2**32 - 1), default=0, show_default=True, metavar="N",
              help="Seed of the random draws.")
@click.option("--entries", type=click.IntRange(0, 100_000), default=16, show_default=True, metavar="N",
              help="Tensors: input entries checked one by one.")
@click.option("--claim", "claim_texts", multiple=True, metavar="CLAIM",
              help="Your derivative, 'dL/dw = 2*x' (repeatable).")
@click.option("--claims", "claims_file", metavar="FILE", shell_complete=complete_file_name,
              help="A file of claims, or a backward pass (dW = ...), one a line ('-': stdin).")
@click.option("--claim-latex", "claim_latex", multiple=True, metavar="LATEX",
              help="A claim in LaTeX (as diff --format latex).")
@click.option("--format", "output_format", type=click.Choice(["table", "plain", "json", "csv"]),
              help="Output [default: table; plain when piped].")
@dtype_option
@text_options
@click.pass_context
@reporting_errors
def check_command(
    ctx: click.Context, source: str | None, expr: str | None, file: str | None,
    assignments: dict[str, float], values_file: str | None, output: str | None, rtol: float,
    atol: float, fast: bool, directions: int, seed: int, entries: int, claim_texts: tuple[str, ...],
    claims_file: str | None, claim_latex: tuple[str, ...], output_format: str | None, dtype: str,
    precision: int | None, no_color: bool,
) -> None:
    """Check the gradient of every input three ways: reverse mode, forward mode
    and a central finite difference; or check derivatives you worked out.

    SOURCE, --set and --values work as for 'autodiff eval'.  An input passes
    when |gradient - difference| <= atol + rtol * |difference| (gradcheck's
    test), fails where it is refuted or at a kink (relu at 0), and is
    inconclusive where the difference cannot decide.  A claim is proved,
    WRONG (where, and the likely slip), agrees at every point tried, or
    inconclusive.  A --claims file of gradient lines (dprobs = dlogprobs /
    probs, dcounts += ...) is a backward pass, judged line by line.

    \b
    Examples:
      autodiff check samples/mlp.ad
      autodiff check "y = relu(x)" --set x=0          # exit 1: a kink at 0
      autodiff check samples/mlp.ad --fast --directions 4
      autodiff check samples/moons_mlp.ad --set x='[0.5, -0.3]' --entries 32
      autodiff check samples/karpathy.ad --claim "dL/da = b*f"
      autodiff check samples/quadratic.ad --claim "df/dx = 6*x"   # exit 1
      autodiff check samples/quadratic.ad --dtype float32   # in single precision
    """
    from ..analysis import check as ck
    from ..render import check as render_check

    collector_off_until_exit()  # one build, kept to the end: nothing for the collector to do
    if claim_texts or claims_file is not None or claim_latex:
        if dtype != "float64":
            raise click.UsageError("claims are judged in float64: leave out --dtype")
        _check_claims(ctx, source, expr, file, assignments, values_file, claim_texts, claims_file, claim_latex,
                      seed, output_format, precision, no_color, output)
        return
    if output_format == "csv":
        raise click.UsageError("--format csv is for claims (--claim, --claims, --claim-latex); "
                               "the gradient check writes table, plain or json")
    program, values = load_inputs(source, expr, file, assignments, values_file)
    with Progress("checking gradients") as progress:
        result = ck.check(program, values, output, fast=fast, directions=directions, entries=entries, seed=seed,
                          rtol=rtol, atol=atol, dtype=dtype, progress=progress)
    keep_until_exit(program, result.run)  # not freed node by node when the command returns
    warn(result.warnings)
    for note in result.notes:
        click.echo(f"note: {note}", err=True)
    output_format = output_format or ("table" if stdout_is_terminal() else "plain")
    if output_format == "json":
        emit(render_check.to_json(result))
    elif output_format == "plain":
        emit(render_check.to_plain(result, precision))
    else:
        print_rich(render_check.to_table(result, precision), no_color)
    for message in ck.failure_messages(result):
        click.echo(f"check failed: {message}", err=True)
    for message in ck.inconclusive_messages(result):
        click.echo(f"check inconclusive: {message}", err=True)
    if result.verdict != ck.OK:
        ctx.exit(1 if result.verdict == ck.FAIL else INCONCLUSIVE_EXIT)


class ClaimError(ReportedError):
    """A claim that does not parse or names what the program lacks: exit 2, a usage error."""

    exit_code = 2


def _check_claims(
    ctx: click.Context, source: str | None, expr: str | None, file: str | None, assignments: dict[str, float],
    values_file: str | None, claim_texts: tuple[str, ...], claims_file: str | None, claim_latex: tuple[str, ...],
    seed: int, output_format: str | None, precision: int | None, no_color: bool, output: str | None = None,
) -> None:
    """``check --claim``: each claim's verdict against the symbolic derivative (``analysis.claims``);
    a claims file of gradient lines is a backward pass, checked line by line (``_check_backward``)."""
    from ..analysis import claims as cl
    from ..errors import AutodiffError, Source
    from ..render import claims as render_claims

    if claims_file is not None and names_stdin(claims_file):
        _stdin_for_claims_only(source, expr, file, values_file)
    program, values = load_inputs(source, expr, file, assignments, values_file)
    sources: list[tuple[Source, bool]] = []
    for number, text in enumerate(claim_texts, start=1):
        sources.append((Source("<claim>" if len(claim_texts) == 1 else f"<claim {number}>", text), False))
    for number, text in enumerate(claim_latex, start=1):
        sources.append((Source("<claim-latex>" if len(claim_latex) == 1 else f"<claim-latex {number}>", text), True))
    if claims_file is not None:
        text = _read_claims_file(claims_file)
        name = "<stdin>" if names_stdin(claims_file) else claims_file
        first_line = next((line.strip() for line in text.splitlines() if line.strip()), "")
        latex = claims_file.endswith(".tex") or first_line.startswith("\\")
        if not latex and cl.is_backward_pass_of(program, values, text):
            if claim_texts or claim_latex:
                raise click.UsageError("a backward pass (--claims FILE of gradient lines, dNAME = ...) is checked "
                                       "on its own: give --claim and --claim-latex in another run")
            _check_backward(ctx, program, values, Source(name, text), output, seed, output_format, precision,
                            no_color)
            return
        sources.append((Source(name, text), latex))
    items = []
    try:
        for claim_source, latex in sources:
            items.extend(cl.read_program_claims(program, values, claim_source, latex=latex))
    except AutodiffError as error:
        raise ClaimError(error) from None
    with Progress("checking claims") as progress:
        progress(0, 1)
        try:
            report = cl.check_claims(program, values, items, seed=seed)
        except cl.UnjudgedClaim as error:  # an error in the program itself is reported as one (exit 1)
            raise ClaimError(error) from None
    keep_until_exit(program)
    _show_verdicts(ctx, render_claims, report, output_format, precision, no_color)


def _check_backward(ctx: click.Context, program: object, values: dict, source: object, output: str | None, seed: int,
                    output_format: str | None, precision: int | None, no_color: bool) -> None:
    """``check --claims FILE`` of gradient lines: each line's verdict with the true gradients it
    uses and in the person's own chain (``analysis.backward_claims``)."""
    from ..analysis import backward_claims as bc
    from ..analysis.claims import UnjudgedClaim
    from ..errors import AutodiffError
    from ..language.program import output_name
    from ..render import backward_claims as render

    loss = output_name(program, output)  # type: ignore[arg-type]
    try:
        lines = bc.read_backward(source, program, loss)  # type: ignore[arg-type]
    except AutodiffError as error:
        raise ClaimError(error) from None
    with Progress("checking the backward pass") as progress:
        progress(0, 1)
        try:
            report = bc.check_backward(program, values, lines, loss, seed=seed)  # type: ignore[arg-type]
        except UnjudgedClaim as error:  # an error in the program itself is reported as one (exit 1)
            raise ClaimError(error) from None
    keep_until_exit(program)
    _show_verdicts(ctx, render, report, output_format, precision, no_color)


def _stdin_for_claims_only(source: str | None, expr: str | None, file: str | None, values_file: str | None) -> None:
    """``--claims -``: a usage error when the program or the values are read from stdin too."""
    program_from_stdin = names_stdin(file) if file is not None else (
        names_stdin(source) if source is not None else expr is None)
    if program_from_stdin or names_stdin(values_file):
        raise click.UsageError("standard input can carry one of the program, the --values and the --claims: "
                               "name a file for the others")


def _read_claims_file(path: str) -> str:
    """The text of ``--claims PATH``; '-' reads standard input."""
    from ..files.text import read_file, read_stdin

    if names_stdin(path):
        return read_stdin("claims", notify)
    return read_file(path, "claims file")


def _show_verdicts(ctx: click.Context, renderer: Any, report: Any, output_format: str | None,
                   precision: int | None, no_color: bool) -> None:
    """A claims report (``--claim`` or a backward pass) in its format, then its exit status:
    1 for a wrong claim, 3 for one that could not be judged."""
    from ..analysis.claims import INCONCLUSIVE, WRONG

    output_format = output_format or ("table" if stdout_is_terminal() else "plain")
    if output_format == "json":
        emit(renderer.to_json(report))
    elif output_format == "csv":
        emit(renderer.to_csv(report, precision))
    elif output_format == "plain":
        emit(renderer.to_plain(report, precision))
    else:
        print_rich(renderer.to_table(report, precision), no_color)
    if report.verdict == WRONG:
        ctx.exit(1)
    if report.verdict == INCONCLUSIVE:
        ctx.exit(INCONCLUSIVE_EXIT)
