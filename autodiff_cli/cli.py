"""The ``autodiff`` command line: a thin Click layer over the library.

Each subcommand reads its input, calls the library and sends the rendered result
to stdout.  Library errors (``AutodiffError``) become a compiler-style message on
stderr and exit status 1; Click reports misuse of the command line with status 2.
"""

from __future__ import annotations

import functools
import math
import os
import re
import sys
from collections.abc import Callable
from typing import Any

import click

from .errors import AutodiffError, InputError, Source, format_error

EXIT_CODES_HELP = """\b
Exit status:
  0  success
  1  an error in the program or its inputs (syntax, unknown name, missing
     input, domain error such as log of a negative number)
  2  command-line usage error (unknown option, malformed --set, ...)"""

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


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


# --- reading the program and its inputs --------------------------------------------------

_LOOKS_LIKE_PATH = re.compile(r"^[^\s()*+=;#^,]*(/|\\|\.[A-Za-z][A-Za-z0-9]*$)")


def _decode(data: bytes, name: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise InputError(
            f"{name} is not valid UTF-8 (byte {error.start + 1}, line {line})",
            hint="save the program as UTF-8 text",
        ) from None


def _read_stdin() -> str:
    return _decode(sys.stdin.buffer.read(), "standard input")


def _read_file(path: str) -> str:
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as error:
        raise InputError(f"cannot read {path}: {error.strerror}") from None
    return _decode(data, path)


def read_program(source: str | None, expr: str | None, file: str | None) -> Source:
    """The program text and its display name, from SOURCE, -e or -f."""
    given = [x for x in (source, expr, file) if x is not None]
    if len(given) > 1:
        raise click.UsageError("give the program once: as SOURCE, with -e/--expr or with -f/--file")
    if expr is not None:
        return Source("<expr>", expr)
    if file is not None:
        return Source("<stdin>", _read_stdin()) if file == "-" else Source(file, _read_file(file))
    if source is None:
        if sys.stdin is None or sys.stdin.isatty():
            raise click.UsageError("no program given: pass an expression, a file, or '-' for stdin")
        return Source("<stdin>", _read_stdin())
    if source == "-":
        return Source("<stdin>", _read_stdin())
    if os.path.isfile(source):
        return Source(source, _read_file(source))
    if _LOOKS_LIKE_PATH.match(source) and "\n" not in source:
        raise InputError(
            f"no such file: {source}",
            hint="to evaluate the text itself as an expression, pass it with -e/--expr",
        )
    return Source("<expr>", source)


def _parse_number(text: str, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise click.BadParameter(f"{what}: {text!r} is not a number") from None
    if not math.isfinite(value):
        raise click.BadParameter(f"{what}: {text!r} is not a finite number")
    return value


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def parse_assignments(ctx: click.Context, param: click.Parameter, items: tuple[str, ...]) -> dict[str, float]:
    """``--set a=2 --set b=-3`` -> {'a': 2.0, 'b': -3.0}; a later --set for a name wins."""
    values: dict[str, float] = {}
    for item in items:
        name, sep, text = item.partition("=")
        name = name.strip()
        if not sep or not _NAME.match(name):
            raise click.BadParameter(f"expected NAME=VALUE (e.g. a=2.5), got {item!r}", ctx, param)
        values[name] = _parse_number(text.strip(), f"value of {name}")
    return values


def load_values(path: str) -> dict[str, float]:
    """A JSON object mapping input names to numbers."""
    import json

    text = _read_stdin() if path == "-" else _read_file(path)
    name = "<stdin>" if path == "-" else path
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        from .errors import Position

        raise InputError(
            f"invalid JSON: {error.msg}",
            Position(error.lineno, error.colno),
            Source(name, text),
            'the values file is a JSON object such as {"a": 2, "b": -3}',
        ) from None
    if not isinstance(document, dict):
        raise InputError(f"{name}: expected a JSON object of numbers, got {type(document).__name__}",
                         hint='write it as {"a": 2, "b": -3}')
    values = {}
    for key, value in document.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise InputError(f"{name}: the value of {key!r} is not a finite number: {value!r}",
                             hint='every value must be a number, e.g. {"a": 2.5}')
        values[key] = float(value)
    return values


def program_options(command: Callable[..., None]) -> Callable[..., None]:
    """SOURCE, -e, -f, --set, --values and --output: shared by every command that runs a program."""
    decorators = [
        click.argument("source", required=False),
        click.option("-e", "--expr", help="Read the program from this text."),
        click.option("-f", "--file", "file", type=click.Path(dir_okay=False, allow_dash=True, exists=False),
                     help="Read the program from this file ('-' for stdin)."),
        click.option("--set", "assignments", multiple=True, metavar="NAME=VALUE", callback=parse_assignments,
                     help="Give an input a value (repeatable); overrides defaults and --values."),
        click.option("--values", "values_file", metavar="FILE.json",
                     help="Read input values from a JSON object ('-' for stdin)."),
        click.option("--output", "output", metavar="NAME",
                     help="The variable to differentiate (default: the last statement)."),
    ]
    for decorator in reversed(decorators):
        command = decorator(command)
    return command


def load_program(source: str | None, expr: str | None, file: str | None):  # type: ignore[no-untyped-def]
    from .language import parse

    program_source = read_program(source, expr, file)
    return parse(program_source.text, program_source.name)


def gather_values(assignments: dict[str, float], values_file: str | None) -> dict[str, float]:
    values = load_values(values_file) if values_file else {}
    values.update(assignments)
    return values


def warn(messages: list[str]) -> None:
    for message in messages:
        click.echo(f"warning: {message}", err=True)


# --- commands -----------------------------------------------------------------------------


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


@main.command("eval", epilog=EXIT_CODES_HELP)
@program_options
@click.option("--wrt", "wrt", multiple=True, metavar="NAMES",
              help="Only show gradients with respect to these variables (comma-separated, repeatable).")
@click.option("--format", "output_format", type=click.Choice(["table", "plain", "json", "csv"]),
              help="Output format [default: table on a terminal, plain when piped].")
@click.option("--precision", type=click.IntRange(1, 17), metavar="N",
              help="Significant digits in table and plain output [default: all, round-trip].")
@click.option("--no-color", is_flag=True, help="No colour (also when NO_COLOR is set).")
@reporting_errors
def eval_command(
    source: str | None, expr: str | None, file: str | None, assignments: dict[str, float],
    values_file: str | None, output: str | None, wrt: tuple[str, ...], output_format: str | None,
    precision: int | None, no_color: bool,
) -> None:
    """Evaluate a program and print its value and the gradient of the output.

    SOURCE is an expression, a file, or '-' for stdin (also read when SOURCE is
    omitted and stdin is a pipe).  A program is statements separated by new
    lines or ';'; 'name = 2.5' declares an input with a default value.

    \b
    Examples:
      autodiff eval "L = (a*b + c)*f" --set a=2 --set b=-3 --set c=10 --set f=-2
      autodiff eval samples/mlp.ad --wrt w1,w2 --format json
      echo "y = 3*x**2" | autodiff eval --set x=2 --format csv
    """
    from .language import evaluate

    program = load_program(source, expr, file)
    evaluation = evaluate(program, gather_values(assignments, values_file), output)
    warn(evaluation.warnings)
    names = _wrt_names(wrt, evaluation)
    output_format = output_format or ("table" if sys.stdout.isatty() else "plain")
    _emit_report(evaluation, names, output_format, precision, no_color)


def _wrt_names(wrt: tuple[str, ...], evaluation: Any) -> list[str] | None:
    names = [name.strip() for item in wrt for name in item.split(",") if name.strip()]
    unknown = [name for name in names if name not in evaluation.nodes]
    if unknown:
        raise InputError(
            f"--wrt names {', '.join(unknown)}, which the program does not define",
            hint=f"the variables are: {', '.join(evaluation.nodes)}",
        )
    return names or None


def _emit_report(evaluation: Any, wrt: list[str] | None, output_format: str, precision: int | None,
                 no_color: bool) -> None:
    from . import report

    if output_format == "json":
        click.echo(report.to_json(evaluation, wrt), nl=False)
    elif output_format == "csv":
        click.echo(report.to_csv(evaluation, wrt), nl=False)
    elif output_format == "plain":
        click.echo(report.to_plain(evaluation, wrt, precision), nl=False)
    else:
        from rich.console import Console

        console = Console(no_color=no_color or None, highlight=False)
        console.print(report.to_table(evaluation, wrt, precision))
