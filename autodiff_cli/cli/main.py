"""The ``autodiff`` command group: one module per subcommand, registered here.

Each command reads its input (``common``), calls the library and hands the rendered
result to ``output``; nothing below this layer prints or exits.
"""

from __future__ import annotations

import sys

import click

from .check import check_command
from .common import CONTEXT_SETTINGS, EXIT_CODES_HELP
from .eval import eval_command
from .explain import explain_command
from .fit import fit_command
from .graph import graph_command

__all__ = ["CONTEXT_SETTINGS", "EXIT_CODES_HELP", "main", "run"]

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


main.add_command(eval_command)
main.add_command(graph_command)
main.add_command(explain_command)
main.add_command(check_command)
main.add_command(fit_command)
