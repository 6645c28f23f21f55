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
    load_inputs,
    name_list,
    program_options,
    reporting_errors,
)

if TYPE_CHECKING:
    from typing import Any

    from ..language.program import Program

__all__ = ["MAX_DERIVATIVES", "MAX_ORDER", "diff_command"]

# Each order differentiates every derivative of the one before: the work and the size of
# the result grow geometrically with the order, so it is bounded.
MAX_ORDER = 10
# How many derivatives one command may ask for (--order 2 over 140 variables is 9,870).
MAX_DERIVATIVES = 10_000

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
    from ..execute.symbolic import derivative_count, differentiate, unused_variables, wrt_names
    from ..language.program import runs_as_tensors

    if hessian and order not in (1, 2):
        raise click.UsageError(f"--hessian is the second derivative; leave out --order {order}")
    order = 2 if hessian else order
    program, values = load_inputs(source, expr, file, assignments, values_file)
    _take_given_values(program, values, shapes)
    chosen = wrt_names(program, output, name_list(wrt) or None)
    if runs_as_tensors(program, values) or any(shapes.values()):
        _diff_tensors(program, output, chosen, order, output_format, shapes, hessian)
        return
    from ..render import formulas

    count = derivative_count(len(chosen), order)
    if count > MAX_DERIVATIVES:
        raise click.UsageError(
            f"--order {order} with respect to {len(chosen)} variables gives {count:,} derivatives "
            f"(at most {MAX_DERIVATIVES:,}); name fewer variables with --wrt or lower --order"
        )
    warn(
        [
            f"'{result}' does not depend on '{name}': its derivatives with respect to it are 0"
            for result, name in unused_variables(program, output, chosen)
        ]
    )
    with Progress("differentiating (sweeps)") as progress:
        result = differentiate(program, chosen, order, output, progress=progress)
    output_format = output_format or ("text" if stdout_is_terminal() else "program")
    writers = {
        "text": formulas.derivatives_text,
        "program": formulas.derivatives_program,
        "latex": formulas.derivatives_latex,
        "python": formulas.derivatives_python,
        "json": formulas.derivatives_json,
    }
    emit(writers[output_format](result))


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


def _diff_tensors(program: Program, output: str | None, chosen: list[str], order: int,
                  output_format: str | None, shapes: dict[str, tuple[int, ...]], hessian: bool = False) -> None:
    """diff of a tensor program: its gradient (or Hessian-vector product) as a program."""
    from ..errors import ShapeError
    from ..execute.symbolic import unused_variables
    from ..execute.tensor_symbolic import MAX_ORDER as MAX_TENSOR_ORDER
    from ..execute.tensor_symbolic import differentiate_tensors, full_hessian
    from ..render import tensor_formulas

    if order > MAX_TENSOR_ORDER:
        raise click.UsageError(
            f"--order {order} on a tensor program: diff writes its gradient (--order 1) and its "
            "Hessian-vector product (--order 2); differentiate the --order 2 program again for more"
        )
    warn(
        [
            f"'{result}' does not depend on '{name}': its gradient with respect to it is 0"
            for result, name in unused_variables(program, output, chosen)
        ]
    )
    try:
        result = differentiate_tensors(program, chosen, output, 1 if hessian else order, shapes)
        if hessian:
            result = full_hessian(result)
    except ValueError as error:  # too many entries for a whole Hessian
        raise click.UsageError(str(error)) from None
    except ShapeError as error:
        unsized = [v.name for v in program.inputs if v.default is None and v.name not in shapes]
        if unsized:
            error.notes.append(
                f"diff takes the inputs' shapes from their values (in the program, --set or --values) "
                f"or from --shapes; {', '.join(unsized)} "
                f"{'has' if len(unsized) == 1 else 'have'} none, so {'it is a number' if len(unsized) == 1 else 'they are numbers'} "
                f"here: give one a value (--set X='[[1, 2], [3, 4]]') or a shape (--shapes X=2,2)"
            )
        raise
    output_format = output_format or ("text" if stdout_is_terminal() else "program")
    writers = {
        "text": tensor_formulas.tensor_text,
        "program": tensor_formulas.tensor_program,
        "latex": tensor_formulas.tensor_latex,
        "python": tensor_formulas.tensor_python,
        "json": tensor_formulas.tensor_json,
    }
    emit(writers[output_format](result))
