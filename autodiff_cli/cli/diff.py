"""``autodiff diff``: the derivatives of a program as a program (``execute.symbolic``,
written by ``render.formulas``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from ..errors import InputError, Source
from ..files.stdout import emit
from ..files.streams import stdout_is_terminal
from .console import Progress, warn
from .options import (
    CONTEXT_SETTINGS,
    EXIT_CODES_HELP,
    Command,
    ReportedError,
    load_inputs,
    name_list,
    program_options,
    reporting_errors,
)

if TYPE_CHECKING:
    from typing import Any

    from ..language.program import Program

__all__ = ["MAX_ORDER", "diff_command"]

# Each order differentiates every derivative of the one before: the work and the size of
# the result grow geometrically with the order, so it is bounded.
MAX_ORDER = 10

FORMATS = ("text", "program", "latex", "python", "json")


def parse_shapes(ctx: click.Context, param: click.Parameter, items: tuple[str, ...]) -> dict[str, tuple[int, ...]]:
    """``--shapes X=8,2`` (or ``X=[8, 2]``; ``x=`` or ``x=[]`` for a number) as {name: shape}."""
    shapes: dict[str, tuple[int, ...]] = {}
    for item in items:
        name, equals, text = item.partition("=")
        words = text.strip().removeprefix("[").removesuffix("]").replace(",", " ").split()
        if not equals or not name.strip().isidentifier() or not all(word.isdigit() for word in words):
            raise click.BadParameter(f"{item!r} is not NAME=SHAPE; write the shape as whole numbers, "
                                     "e.g. --shapes X=8,2 (a matrix of 8 rows and 2 columns)", ctx, param)
        shape = tuple(int(word) for word in words)
        earlier = shapes.setdefault(name.strip(), shape)
        if earlier != shape:  # the last one winning would hide a typo
            raise click.BadParameter(f"--shapes gives {name.strip()} two shapes, {list(earlier)} and {list(shape)}; "
                                     "give it one", ctx, param)
    return shapes


@click.command("diff", cls=Command, context_settings=CONTEXT_SETTINGS, epilog=EXIT_CODES_HELP,
               short_help="Write the derivatives as formulas or as a program.")
@program_options
@click.option("--shapes", "shapes", multiple=True, metavar="NAME=SHAPE", callback=parse_shapes,
              help="An input's shape without a value, e.g. X=8,2 (repeatable).")
@click.option(
    "--wrt",
    "wrt",
    multiple=True,
    metavar="NAMES",
    help="Differentiate with respect to these variables (comma-separated, repeatable) "
    "[default: every input the output depends on].",
)
@click.option(
    "--order",
    type=click.IntRange(1, MAX_ORDER),
    default=1,
    show_default=True,
    metavar="N",
    help="Differentiate N times: 2 gives the Hessian (of a tensor program, Hessian-vector products).",
)
@click.option("--hessian", is_flag=True,
              help="The whole Hessian (of a tensor program: block by block, by stacking H v "
                   "along each entry); implies --order 2.")
@click.option(
    "--format",
    "output_format",
    type=click.Choice(FORMATS),
    help="Output format [default: text on a terminal, program when piped].",
)
@reporting_errors
def diff_command(
    source: str | None,
    expr: str | None,
    file: str | None,
    assignments: dict[str, Any],
    values_file: str | None,
    output: str | None,
    shapes: dict[str, tuple[int, ...]],
    wrt: tuple[str, ...],
    order: int,
    hessian: bool,
    output_format: str | None,
) -> None:
    """Differentiate a program symbolically: its derivatives as formulas, or as a
    program to run.

    SOURCE is as for 'autodiff eval'.  Reverse mode is applied to the program
    text and simplified.  A tensor program gets its gradient in matrix form,
    dL_dW = transpose(X) @ dL_dP, with shapes from the inputs' values (--set,
    --values, the program's defaults) or from --shapes.  Formats: text,
    program (pipe it into eval, graph or diff), latex, python, json.

    \b
    Examples:
      autodiff diff "f = 3*x**2 + x*y + 5*y**2"
      autodiff diff samples/neuron.ad --wrt x1,w1 | autodiff eval -
      autodiff diff "y = tanh(x)" --order 2
      autodiff diff -e "L = sum((X @ W)**2)" --shapes X=8,2 --shapes W=2,1

    Orders, tensor rules and every format: docs/diff.md.
    """
    from ..execute.symbolic import RequestTooLarge, ShapeNeeded, plan_diff
    from ..render import formulas

    if hessian and order not in (1, 2):
        raise click.UsageError(f"--hessian is the second derivative; leave out --order {order}")
    program, values = load_inputs(source, expr, file, assignments, values_file)
    try:
        _take_given_values(program, values, shapes)
        request = plan_diff(program, output, name_list(wrt) or None, order, shapes, hessian)
        warn(request.warnings)
        with Progress("differentiating (sweeps)") as progress:
            result = request.run(progress)
    except RequestTooLarge as error:
        raise click.UsageError(error.message) from None
    except ShapeNeeded as error:
        raise ShapeNeededError(error) from None
    emit(formulas.write_derivatives(result, output_format or ("text" if stdout_is_terminal() else "program")))


class ShapeNeededError(ReportedError):
    """An input used as a tensor with neither a value nor a shape: said where, exit 2 (what is
    missing is on the command line)."""

    exit_code = 2


def _take_given_values(program: Program, values: dict[str, Any], shapes: dict[str, tuple[int, ...]]) -> None:
    """The values given (--set, --values) become the inputs' defaults, as the program eval runs:
    the derivatives take their shapes, and the program written carries them.  An input given
    only a shape that its default does not have keeps no default (a value is given when it runs)."""
    from ..errors import variables_hint
    from ..language.program import INPUT, check_inputs

    warn(check_inputs(program, values))
    for name, shape in shapes.items():
        given = tuple(getattr(values[name], "shape", ())) if name in values else shape
        if given != shape:  # which one was meant cannot be guessed
            raise click.UsageError(f"the value given for {name} has shape {list(given)}, and --shapes says "
                                   f"{list(shape)}: leave one of them out, or make them agree")
    for name, value in values.items():
        if name in program.variables:
            program.variables[name].default = value
    inputs = [name for name, variable in program.variables.items() if variable.kind == INPUT]
    for name, shape in shapes.items():
        variable = program.variables.get(name)
        if variable is None or variable.kind != INPUT:
            raise InputError(f"--shapes names '{name}', which is not an input of the program",
                             source=Source(program.source.name, ""), hint=variables_hint(inputs, [name]))
        if tuple(getattr(variable.default, "shape", ())) != shape:
            variable.default = None
