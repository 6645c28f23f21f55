"""``autodiff plot``: the output and its derivative along one input, as a picture or in characters.

A thin Click layer: ``analysis.curves`` computes the points and ``render.plot`` draws them;
this command reads the options, checks what it can before computing, reports gaps on
stderr and decides where the result goes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from ..files.atomic import check_writable, write_atomic
from ..files.stdout import emit
from ..files.streams import is_stream, is_terminal, stdout_is_terminal
from ..render.graph_drawing import program_title
from .console import warn
from .options import (
    CONTEXT_SETTINGS,
    EXIT_CODES_HELP,
    Command,
    complete_file_name,
    format_of_file,
    load_inputs,
    parse_number,
    program_options,
    refuse_overwriting_inputs,
    reporting_errors,
)

if TYPE_CHECKING:
    from ..language.program import Program

__all__ = ["plot_command"]

EXTENSIONS = {".svg": "svg", ".png": "png", ".pdf": "pdf", ".txt": "text"}
BINARY_FORMATS = ("png", "pdf")

PLOT_EXIT_HELP = EXIT_CODES_HELP + """

\b
Points where the output is undefined are not errors: they leave gaps,
reported on stderr.  A file that cannot be written is status 1 (nothing
is written then); PNG or PDF to a terminal is a usage error (2)."""


def _parse_range(
    ctx: click.Context, param: click.Parameter, items: tuple[str, ...]
) -> tuple[str, float, float] | None:
    # Declared repeatable only so that a second --range is seen: Click would keep the last one
    # of a plain option and drop the first without a word.
    if not items:
        return None  # Click reports the missing option
    if len(items) > 1:
        raise click.BadParameter(_one_range_only(items), ctx, param)
    item, = items
    name, sep, span = item.partition("=")
    low_text, colon, high_text = span.partition(":")
    name = _input_name(name)
    if not sep or not colon or name is None:
        raise click.BadParameter(f"expected NAME=LOW:HIGH or NAME[i, j]=LOW:HIGH for one entry of a tensor "
                                 f"(e.g. x=-3:3, W[0, 1]=-1:1), got {item!r}", ctx, param)
    low = parse_number(low_text.strip(), f"low end of {name}")
    high = parse_number(high_text.strip(), f"high end of {name}")
    if not low < high:
        raise click.BadParameter(f"the low end must be below the high end, got {low:g}:{high:g}", ctx, param)
    from ..render.plot import DRAWABLE

    if max(abs(low), abs(high)) > DRAWABLE:
        raise click.BadParameter(f"a plot's range stays within \u00b1{DRAWABLE:g} (its axis cannot be scaled "
                                 f"nearer the largest float), got {low:g}:{high:g}", ctx, param)
    return name, low, high


def _input_name(text: str) -> str | None:
    """What --range and --tangent-at vary: an input's name, or one entry of a tensor input written
    as entry columns are (``W[0,1]`` -> ``W[0, 1]``); None for anything else."""
    from ..execute.columns import entry_column, split_column

    text = text.strip()
    if text.isidentifier():
        return text
    entry = split_column(text)
    return None if entry is None else entry_column(*entry)


def _one_range_only(items: tuple[str, ...]) -> str:
    """Why a second --range is refused, naming every one given and what to do instead."""
    given = ", ".join(items[:-1]) + f" and {items[-1]}"
    names = list(dict.fromkeys(item.partition("=")[0].strip() for item in items))
    if len(names) == 1:
        return (f"it takes one input and one range (a plot is along one input), got {given}; "
                "give --range once")
    advice = (f"it takes one input (a plot is along one input), got {given}; vary one of them with --range "
              "and give the others with --set")
    if all(name.isidentifier() for name in names):
        advice += f", e.g. --range {items[0]} " + " ".join(f"--set {name}=VALUE" for name in names[1:])
    return advice


def _parse_points(
    ctx: click.Context, param: click.Parameter, items: tuple[str, ...]
) -> list[tuple[str, float]]:
    points = []
    for item in items:
        name, sep, text = item.partition("=")
        name = _input_name(name)
        if not sep or name is None:
            raise click.BadParameter(f"expected NAME=VALUE (e.g. x=0.5, W[0, 1]=0.5), got {item!r}", ctx, param)
        points.append((name, parse_number(text.strip(), f"tangent point of {name}")))
    return points


@click.command("plot", cls=Command, context_settings=CONTEXT_SETTINGS, epilog=PLOT_EXIT_HELP,
               short_help="Plot the output and its derivative along one input.")
@program_options
@click.option("--range", "span", required=True, multiple=True, metavar="NAME=LOW:HIGH", callback=_parse_range,
              help="The input to vary and its range: x=-3:3, or an entry of a tensor, W[0,1]=-1:1.")
@click.option("-o", "--out", "out", metavar="FILE", shell_complete=complete_file_name,
              help="Write to FILE, in the format of its extension (.svg .png .pdf .txt) "
                   "[default: standard output].")
@click.option("--format", "output_format", type=click.Choice(["svg", "png", "pdf", "text"]),
              help="Output format [default: FILE's extension; else text at a terminal, svg in a pipe].")
@click.option("--order", type=click.IntRange(1, 2), default=1, show_default=True, metavar="N",
              help="2 adds the second derivative.")
@click.option("--tangent-at", "tangents", multiple=True, metavar="NAME=VALUE", callback=_parse_points,
              help="Draw the output's tangent at this point (repeatable).")
@click.option("--points", type=click.IntRange(2, 1_000_000), default=1001, show_default=True, metavar="N",
              help="Evenly spaced points of the range to evaluate.")
@reporting_errors
def plot_command(
    source: str | None, expr: str | None, file: str | None, assignments: dict[str, float],
    values_file: str | None, output: str | None, span: tuple[str, float, float], out: str | None,
    output_format: str | None, order: int, tangents: list[tuple[str, float]], points: int,
) -> None:
    """Plot the output of a program and its derivative along one input, the
    others fixed.

    SOURCE, --set, --values and --output work as for 'autodiff eval'.  One
    panel shows the output, the next its derivative (--order 2: a third, the
    second); --tangent-at draws the tangent line, whose slope is the
    derivative.  In a tensor program --range may vary one entry, W[0, 1]=-1:1.

    \b
    Examples:
      autodiff plot "y = tanh(x)" --range x=-3:3 -o tanh.svg
      autodiff plot samples/neuron.ad --range x1=-2:2 --tangent-at x1=0.5 -o n.png
      autodiff plot "y = x**3 - 2*x" --range x=-2:2 --format text
      autodiff plot samples/regression_matrix.ad --range "W[0, 0]=0:5" -o w.svg

    Gaps, kinks and the text plot: docs/plot.md.
    """
    from ..analysis.curves import check_variable, describe_gaps, describe_tangents, sample_curves
    from ..execute.columns import split_column
    from ..language.program import check_inputs
    from ..render import plot

    variable, low, high = span
    for name, at in tangents:
        if name != variable:
            raise click.BadParameter(f"the tangent point names {name}, but --range varies {variable}",
                                     param_hint="'--tangent-at'")
        if not low <= at <= high:
            raise click.BadParameter(f"{name}={at:g} is outside --range {variable}={low:g}:{high:g}",
                                     param_hint="'--tangent-at'")
    to_stdout = out is None or out == "-"
    # /dev/stdout, /dev/fd/3, a pipe or a device: a stream, with no extension to read a format from.
    to_stream = not to_stdout and is_stream(out)  # type: ignore[arg-type]
    fmt = _choose_format(out, output_format, to_stdout, to_stream)
    at_terminal = stdout_is_terminal() if to_stdout else is_terminal(out)  # type: ignore[arg-type]
    if fmt in BINARY_FORMATS and at_terminal:
        raise click.UsageError(
            f"refusing to write binary {fmt.upper()} to a terminal; "
            f"write it to a file with -o plot.{fmt}, or redirect: ... > plot.{fmt}"
        )
    if not to_stdout:
        assert out is not None
        check_writable(out, "plot.svg")
        refuse_overwriting_inputs("-o", out, {"the program": file or source, "the --values file": values_file})

    program, values = load_inputs(source, expr, file, assignments, values_file)
    entry = split_column(variable)
    varied = variable if entry is None else entry[0]  # an entry's tensor keeps its other entries' values
    check_variable(program, varied)
    if entry is None and variable in values:
        warn([f"the value given for {variable} is not used: --range varies it from {low:g} to {high:g}"])
        values = {name: value for name, value in values.items() if name != variable}
    warn(check_inputs(program, values))
    warn(_independence_warning(program, output, varied))
    curves = sample_curves(program, values, variable, low, high, points=points, order=order, output=output,
                           tangents_at=[at for _, at in tangents])
    warn(describe_gaps(curves))
    warn(describe_tangents(curves))
    title = program_title(program.source)
    if fmt == "text":
        data: str | bytes = plot.to_text(curves, title=title)
    else:
        data = plot.to_image(curves, fmt, title=title)
    if to_stdout:
        emit(data)
    else:
        assert out is not None
        write_atomic(out, data.encode("utf-8") if isinstance(data, str) else data)


def _independence_warning(program: Program, output: str | None, variable: str) -> list[str]:
    """A warning when the output does not depend on the input --range varies: its curve is flat
    and its derivative 0 whatever the range (graph warns of the same)."""
    from ..language.program import output_name

    name = output_name(program, output)
    if program.dependencies(name)[program.variables[variable].register]:
        return []
    return [(f"{name} does not depend on {variable}: its curve is flat and its derivative 0 over the whole "
             f"range; plot another --output, or vary one of its inputs")]


def _choose_format(out: str | None, given: str | None, to_stdout: bool, to_stream: bool) -> str:
    if to_stdout:
        return given or ("text" if stdout_is_terminal() else "svg")
    if to_stream:
        return given or "svg"
    assert out is not None
    return format_of_file(out, given, EXTENSIONS, "svg|png|pdf|text")
