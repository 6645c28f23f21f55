"""The ``autodiff`` command group: one module per subcommand, registered here.

Each command reads its options and inputs (``options``, over ``files``), calls the library
and hands the rendered result to ``console`` or ``files``; nothing below this layer prints or
exits.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from ..errors import printable, shorten
from ..files.stdout import stdout_closed
from . import process
from .batch import batch_command
from .check import check_command
from .options import CONTEXT_SETTINGS, EXIT_CODES_HELP
from .diff import diff_command
from .eval import eval_command
from .explain import explain_command
from .fit import fit_command
from .graph import graph_command
from .plot import plot_command

__all__ = ["CONTEXT_SETTINGS", "EXIT_CODES_HELP", "main", "run"]

INTERRUPTED = 128 + 2  # 128 + SIGINT: the shell's status for a program stopped by Ctrl-C
OUT_OF_MEMORY = object()  # what a command that ran out of memory returns, to be said without a traceback


class AutodiffGroup(click.Group):
    """The command group, with the exits the CLI promises rather than Click's defaults.

    Ctrl-C anywhere (parsing, evaluating, rendering, printing) ends with status 130 and
    the word "interrupted", where Click says "Aborted!" and exits 1; and Click's own
    messages (an unknown option, a bad value) echo what the user typed, so they are made
    printable like every other message.
    """

    def invoke(self, ctx: click.Context) -> Any:
        # Click ends a closed pipe with status 1; `autodiff ... | head` is a normal way to stop
        # reading, so every command ends it alike, with 0.
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            stdout_closed()
            return None

    def main(self, args: Any = None, prog_name: str | None = None, complete_var: str | None = None,
             standalone_mode: bool = True, **extra: Any) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        try:
            try:
                status = super().main(args, prog_name, complete_var, False, **extra)
            except click.Abort as abort:
                if not isinstance(abort.__cause__, KeyboardInterrupt):
                    raise
                raise KeyboardInterrupt from None
            except click.ClickException as error:
                # Line by line: a usage error can be a whole help text (autodiff with no command).
                error.message = "\n".join(printable(shorten(line)) for line in error.message.split("\n"))
                error.show()
                sys.exit(error.exit_code)
            except MemoryError:
                status = OUT_OF_MEMORY  # said below, once the frames that held the memory are gone
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            sys.exit(INTERRUPTED)
        if status is OUT_OF_MEMORY:
            click.echo("error: out of memory: the input is too large for the memory this process may use\n"
                       "  hint: give a smaller input (fewer statements or rows, or --batch-size with fit), "
                       "or run where more memory is free", err=True)
            sys.exit(1)
        sys.exit(status if isinstance(status, int) else 0)


def _show_version(context: click.Context, _parameter: click.Parameter, value: bool) -> None:
    """``--version``: the version, and which build of the engine this install runs."""
    if not value or context.resilient_parsing:
        return
    from importlib.metadata import PackageNotFoundError, version

    from ..engine.value import COMPILED

    try:
        number = version("autodiff-cli")
    except PackageNotFoundError:  # run from a checkout that was never installed
        number = "unknown (not installed)"
    engine = "compiled with mypyc" if COMPILED else "pure Python"
    click.echo(f"autodiff, version {number} (engine: {engine})")
    context.exit()


@click.group(cls=AutodiffGroup, context_settings=CONTEXT_SETTINGS, epilog=EXIT_CODES_HELP.replace(
    "\n  130", "\n  3    check: inconclusive (none fails; some input or claim is undecided)\n  130"))
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_show_version,
              help="Show the version, and whether the engine is compiled, and exit.")
def main() -> None:
    """Differentiate expressions and see how backpropagation flows through them.

    \b
    Examples:
      autodiff eval "L = (a*b + c)*f" --set a=2 --set b=-3 --set c=10 --set f=-2
      autodiff graph samples/karpathy.ad -o karpathy.svg
      autodiff explain "y = a*a + a" --set a=3
      autodiff diff "f = 3*x**2 + x*y + 5*y**2"

    'autodiff COMMAND --help' for a command; every page is in docs/.
    """


def run() -> None:
    """The ``autodiff`` program: ``main`` with a SIGTERM that unwinds like Ctrl-C.

    By default SIGTERM ends Python on the spot, which would orphan a Graphviz layout
    still running and leave its temporary file; raising SystemExit instead lets the
    renderer kill its child and the file writer clean up.  Only the program does this,
    not ``main`` itself, which tests and other programs call in their own process.
    """
    import signal

    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    _escape_what_stdout_cannot_encode()
    # The process ends with os._exit, so the commands can leave their graphs to it rather
    # than free millions of nodes one by one after the output is written (process.keep_until_exit).
    process.EXIT_FAST = True
    try:
        main(prog_name="autodiff")
    except SystemExit as ended:
        process.exit_now(ended.code)
    except KeyboardInterrupt:  # Ctrl-C outside the command (while Click sets up or exits)
        process.exit_now(INTERRUPTED)
    process.exit_now(0)


def _escape_what_stdout_cannot_encode() -> None:
    """On a stdout that is not UTF-8 (PYTHONIOENCODING=ascii, a legacy code page), write
    characters it cannot take (explain's ∂, a comment's letters) as escapes such as
    \\u2202 instead of failing with UnicodeEncodeError, as stderr already does."""
    stream = sys.stdout
    encoding = (getattr(stream, "encoding", None) or "").lower().replace("-", "")
    if encoding != "utf8" and hasattr(stream, "reconfigure"):
        stream.reconfigure(errors="backslashreplace")


main.add_command(eval_command)
main.add_command(graph_command)
main.add_command(explain_command)
main.add_command(check_command)
main.add_command(fit_command)
main.add_command(plot_command)
main.add_command(batch_command)
main.add_command(diff_command)
