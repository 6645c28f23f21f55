"""What every ``autodiff`` subcommand shares: the common options and their parsing, reading the
program and its inputs (through ``files``), and the conversion of library errors.

Library errors (``AutodiffError``) become a compiler-style message on stderr and
exit status 1 here, at the CLI edge; Click reports misuse of the command line
with status 2.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from ..errors import AutodiffError, Source, format_error
from ..files import atomic
from ..files.formats import format_by_extension
from .console import Progress, notify, warn

if TYPE_CHECKING:
    from ..language.program import Program

atomic.tell_with(lambda message: warn([message]))  # where a file overwritten in place keeps its old content

EXIT_CODES_HELP = """\b
Exit status:
  0    success
  1    an error in the program or its inputs (syntax, unknown name, missing
       input, domain error such as log of a negative number)
  2    command-line usage error (unknown option, malformed --set, ...)
  130  interrupted by Ctrl-C (143: stopped by SIGTERM)"""

# --help at most 80 columns a line, whatever the terminal's width (issue 36: a help people scan).
CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 80}


class Command(click.Command):
    """A subcommand whose single-valued options may be given once: Click's default, the last
    one wins, would let ``--output y1 --output y2`` silently answer for y2.  Options that take
    several values (``--set``, ``--wrt``) and plain flags (``-q``) may repeat; a flag pair
    (``--grad``/``--no-grad``) may not, since its two halves disagree."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not ctx.resilient_parsing:
            refuse_repeated_options(self, ctx, args)
        return super().parse_args(ctx, args)

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The options as Click writes them, with their names in at most ``OPTION_COLUMN`` columns
        (a longer one has its own line), so that the help beside them has more of the 80."""
        records = [param.get_help_record(ctx) for param in self.get_params(ctx)
                   if not isinstance(param, click.Argument)]
        if any(records):
            with formatter.section("Options"):
                formatter.write_dl([record for record in records if record is not None], col_max=OPTION_COLUMN)


# The width of --help's column of option names (Click's is 30): at 80 columns their help has 54.
OPTION_COLUMN = 22


def refuse_repeated_options(command: click.Command, ctx: click.Context, args: list[str]) -> None:
    """A usage error naming the first single-valued option of ``command`` that ``args`` give twice."""
    from click.parser import _OptionParser

    parser = _OptionParser(ctx)
    for param in command.get_params(ctx):
        param.add_to_parser(parser, ctx)
    try:
        _, _, order = parser.parse_args(args=list(args))
    except click.UsageError:
        return  # the real parse says what is wrong
    seen: set[str] = set()
    for param in order:
        if (not isinstance(param, click.Option) or param.multiple or param.count
                or (param.is_flag and not param.secondary_opts) or param.name is None):
            continue
        if param.name in seen:
            spelled = "/".join(param.opts + param.secondary_opts)
            raise click.UsageError(f"{spelled} is given more than once; it takes one value: give it once", ctx)
        seen.add(param.name)


class Unranged(click.Option):
    """An option whose --help leaves out Click's range ('[x>=1]'), which its metavar and help
    already say (N steps); an out-of-range value is still refused, with the range."""

    def get_help_extra(self, ctx: click.Context) -> Any:
        extra = super().get_help_extra(ctx)
        extra.pop("range", None)
        return extra


class ReportedError(click.ClickException):
    """An AutodiffError on its way out: printed as ``FILE:LINE:COL: error: ...``, exit 1."""

    exit_code = 1

    def __init__(self, error: AutodiffError) -> None:
        super().__init__(error.message)
        self.error = error

    def show(self, file: Any = None) -> None:
        click.echo(format_error(self.error), err=True)


def reporting_errors(command: Callable[..., None]) -> Callable[..., None]:
    """Turn library errors raised by ``command`` into ReportedError at the CLI edge."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        try:
            command(*args, **kwargs)
        except AutodiffError as error:
            raise ReportedError(error) from None

    return wrapper


# --- reading the program and its inputs (``files.program_inputs``, ``files.set_values``) ----------

# Where parse_assignments notes the .npy files it read, for refuse_overwriting_inputs.
NPY_FILES_READ = "autodiff_cli.npy_files_read"  # the .npy files --set read, for the overwrite checks


def parse_assignments(ctx: click.Context, param: click.Parameter, items: tuple[str, ...]) -> dict[str, Any]:
    """``--set a=2 --set b=-3`` -> {'a': 2.0, 'b': -3.0}; a later --set for a name wins.  A tensor is
    JSON's nested arrays (``--set W='[[1, 2], [3, 4]]'``) or a ``.npy`` file (``--set W=w.npy``)."""
    from ..files.set_values import NAME, BadValue, parse_value

    values: dict[str, Any] = {}
    for item in items:
        name, sep, text = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise click.BadParameter(f"expected NAME=VALUE (e.g. a=2.5), got {item!r}", ctx, param)
        if not NAME.match(name):  # in NAME=VALUE form, but no program can have that name: '1x', 'é'
            raise click.BadParameter(f"{name!r} is not a name of the language, whose names are ASCII letters, "
                                     f"digits and _, and start with a letter or _ (got {item!r})", ctx, param)
        try:
            values[name], npy_file = parse_value(name, text.strip(), warn)
        except BadValue as error:
            raise click.BadParameter(str(error), ctx, param) from None
        if npy_file is not None:
            ctx.meta.setdefault(NPY_FILES_READ, {})[f"the .npy file of --set {name}"] = npy_file
    return values


def parse_number(text: str, what: str) -> float:
    """``text`` as a number of the language, or a usage error saying how to write one."""
    from ..files.set_values import BadValue
    from ..files.set_values import parse_number as number

    try:
        return number(text, what, warn)
    except BadValue as error:
        raise click.BadParameter(str(error)) from None


class FiniteFloat(click.FloatRange):
    """A float option that refuses nan and the infinities as well as values out of range.

    click.FloatRange lets nan through (every comparison with it is false) and takes inf.
    ``meaning`` is added to the error, e.g. "0 for no limit".
    """

    def __init__(self, min: float | None = None, max: float | None = None, meaning: str = "",
                 min_open: bool = False, max_open: bool = False) -> None:
        super().__init__(min=min, max=max, min_open=min_open, max_open=max_open)
        self.meaning = meaning

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = click.types.FloatParamType.convert(self, value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number{self._range_text()}", param, ctx)
        try:
            return super().convert(number, param, ctx)
        except click.BadParameter as error:
            error.message = error.message.rstrip(".") + self._range_text(only_meaning=True)
            raise

    def _range_text(self, only_meaning: bool = False) -> str:
        parts = [] if only_meaning else [self._describe_range()]
        if self.meaning:
            parts.append(self.meaning)
        return f" ({'; '.join(parts)})" if parts else ""


def _finite_float_callback(low: float | None = None, low_open: bool = False) -> Callable[..., Any]:
    """A click callback: a finite number, at least (or above) ``low``."""

    def check(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
        if value is None:
            return None
        if not math.isfinite(value):
            raise click.BadParameter(f"{value} is not a finite number")
        if low is not None and (value < low or (low_open and value == low)):
            raise click.BadParameter(f"{value} must be {'above' if low_open else 'at least'} {low:g}")
        return value

    return check


def finite_number(default: float | None = None, low: float = 0.0, above: bool = False, **settings: Any) -> Any:
    """An option's settings (``**finite_number(0.01, above=True)``) for a finite number at least
    (``above``: above) ``low``, whose errors say "must be above 0" rather than a range."""
    shown = {"default": default, "show_default": True} if default is not None else {}
    return {"type": float, "callback": _finite_float_callback(low, above), **shown, **settings}


def complete_file_name(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    """Shell completion of a file name: the shell itself lists the matching files.

    Used instead of click.Path, which would also check the path (and turn a missing file
    into a usage error, where SOURCE may be program text and a missing file is exit 1).
    """
    from click.shell_completion import CompletionItem

    return [CompletionItem(incomplete, type="file")]


def program_options(command: Callable[..., None]) -> Callable[..., None]:
    """SOURCE, -e, -f, --set, --values and --output: shared by every command that runs a program."""
    decorators = [
        click.argument("source", required=False, shell_complete=complete_file_name),
        click.option("-e", "--expr", help="Read the program from this text."),
        click.option("-f", "--file", "file", metavar="FILE", shell_complete=complete_file_name,
                     help="Read the program from this file ('-' for stdin)."),
        click.option("--set", "assignments", multiple=True, metavar="NAME=VALUE", callback=parse_assignments,
                     help="Give an input a value (repeatable; wins over --values): x=2, W='[[1, 2]]' "
                          "(JSON) or W=w.npy."),
        click.option("--values", "values_file", metavar="FILE.json", shell_complete=complete_file_name,
                     help="Input values from a JSON object ('-' for stdin)."),
        click.option("--output", "output", metavar="NAME",
                     help="The variable to differentiate [default: the last]."),
    ]
    for decorator in reversed(decorators):
        command = decorator(command)
    return command


def dtype_option(command: Callable[..., None]) -> Callable[..., None]:
    """--dtype: the precision a program runs in (eval, batch and fit)."""
    return click.option("--dtype", type=click.Choice(["float64", "float32"]), default="float64",
                        metavar="NAME", help="float64 (the default) or float32 (about 7 digits).")(command)


def text_options(command: Callable[..., None]) -> Callable[..., None]:
    """--precision (significant digits) and --no-color: shared by eval, explain and check."""
    command = click.option("--no-color", is_flag=True, help="No colour (also when NO_COLOR is set).")(command)
    return click.option("--precision", type=click.IntRange(1, 17), metavar="N",
                        help="Significant digits of the numbers shown [default: all, round-trip].")(command)


def load_inputs(
    source: str | None, expr: str | None, file: str | None, assignments: dict[str, float],
    values_file: str | None,
) -> tuple[Program, dict[str, float]]:
    """The parsed program and the input values (--values, then --set on top): see
    ``files.program_inputs.load_program_and_values``."""
    program, values, _ = load_inputs_and_values_source(source, expr, file, assignments, values_file)
    return program, values


def load_inputs_and_values_source(
    source: str | None, expr: str | None, file: str | None, assignments: dict[str, float],
    values_file: str | None,
) -> tuple[Program, dict[str, float], Source | None]:
    """``load_inputs``, and the text of the values file as it was read (None without --values),
    for a command that writes the values back (``fit``: see ``value_literals``)."""
    from ..files.program_inputs import UsageMistake, load_program_and_values
    from ..files.set_values import BadValue

    # The values are checked in the precision the run takes them in: the command's --dtype.
    ctx = click.get_current_context(silent=True)
    dtype = (ctx.params.get("dtype") if ctx is not None else None) or "float64"
    try:
        return load_program_and_values(source, expr, file, assignments, values_file,
                                       warn=warn, notify=notify, progress=Progress, dtype=dtype)
    except UsageMistake as error:
        raise click.UsageError(str(error)) from None
    except BadValue as error:  # a --set value the precision cannot hold, said as the option's error
        raise click.BadParameter(str(error), ctx, param_hint="'--set'") from None


def name_list(items: tuple[str, ...]) -> list[str]:
    """The names of a repeatable, comma-separated option: ('a,b', 'c') -> ['a', 'b', 'c'], each
    once, in order (an empty item gives nothing: --keep '' keeps no column).  A comma inside
    brackets belongs to the name: 'W[0, 1],b' is W[0, 1] and b (a matrix entry's column)."""
    return list(dict.fromkeys(name.strip() for item in items for name in _BETWEEN_COMMAS.findall(item)
                              if name.strip()))


_BETWEEN_COMMAS = re.compile(r"(?:[^,\[]|\[[^\]]*\]?)+")


def set_advice(names: list[str]) -> str:
    """'--set a=VALUE --set b=VALUE --set c=VALUE ...': how to give ``names`` one value each."""
    return " ".join(f"--set {name}=VALUE" for name in names[:3]) + (" ..." if len(names) > 3 else "")


def format_of_file(path: str, given: str | None, extensions: dict[str, str], formats: str) -> str:
    """The format to write ``path`` in: ``given`` (``--format``), else the one its extension implies.

    A name whose extension says nothing is a usage error listing ``extensions`` and the
    ``formats`` of ``--format``; a ``--format`` that disagrees with the extension wins, with a warning.
    """
    implied = format_by_extension(path, extensions)
    if given is None:
        if implied is None:
            raise click.UsageError(
                f"cannot tell the format from the file name {path!r}: use one of the extensions "
                f"{' '.join(extensions)}, or give --format {formats}"
            )
        return implied
    if implied is not None and implied != given:
        warn([f"writing {given.upper()} to {path}, whose extension says {implied.upper()}"])
    return given


def refuse_overwriting_inputs(option: str, path: str | None, reads: dict[str, str | None]) -> None:
    """A usage error when ``path`` is a file this run reads (``files.atomic.overwritten_input``)."""
    from ..files.atomic import overwritten_input

    context = click.get_current_context(silent=True)
    if context is not None:  # --set W=w.npy reads w.npy too
        reads = {**reads, **context.meta.get(NPY_FILES_READ, {})}
    what = overwritten_input(path, reads)
    if what is not None:
        raise click.UsageError(f"{option} {path} is {what} this run reads: writing it would destroy it; "
                               "write the output somewhere else")
