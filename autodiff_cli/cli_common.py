"""What every ``autodiff`` subcommand shares: reading the program and its inputs,
the common options, warnings, Rich output and the conversion of library errors.

Library errors (``AutodiffError``) become a compiler-style message on stderr and
exit status 1 here, at the CLI edge; Click reports misuse of the command line
with status 2.
"""

from __future__ import annotations

import functools
import math
import os
import re
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from .errors import AutodiffError, InputError, Position, Source, format_error

if TYPE_CHECKING:
    from .language import Program

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
    """A JSON object mapping input names to numbers ('-' reads it from stdin)."""
    import json

    text = _read_stdin() if path == "-" else _read_file(path)
    source = Source("<stdin>" if path == "-" else path, text)
    example = 'the values file is a JSON object of numbers, e.g. {"a": 2, "b": -3}'
    try:
        # Integers are read as floats: a 400-digit integer then becomes inf (rejected
        # below) instead of an int that Python refuses to convert.
        document = json.loads(text, parse_int=float)
    except json.JSONDecodeError as error:
        raise InputError(f"invalid JSON: {error.msg}", Position(error.lineno, error.colno), source,
                         example) from None
    except RecursionError:
        raise InputError("invalid values file: the JSON is nested too deeply", Position(1, 1), source,
                         example) from None
    if not isinstance(document, dict):
        kind = {list: "an array", str: "a string", bool: "a boolean", float: "a number"}.get(
            type(document), "null")
        raise InputError(f"expected a JSON object of numbers, got {kind}", Position(1, 1), source, example)
    values = {}
    for key, value in document.items():
        if isinstance(value, bool) or not isinstance(value, float) or not math.isfinite(value):
            shown = json.dumps(value, allow_nan=True)
            raise InputError(
                f"the value of {key!r} is not a finite number: {shown[:40]}{'...' if len(shown) > 40 else ''}",
                _key_position(text, key), source,
                'every value must be a finite number, e.g. {"a": 2.5}')
        values[key] = value
    return values


def _key_position(text: str, key: str) -> Position:
    """Where ``"key":`` is written (JSON keeps no positions; the first match is good enough)."""
    import json

    found = re.search(re.escape(json.dumps(key)) + r"\s*:", text) or re.search(
        re.escape(json.dumps(key, ensure_ascii=False)) + r"\s*:", text)
    if found is None:
        return Position(1, 1)
    line = text.count("\n", 0, found.start()) + 1
    column = found.start() - (text.rfind("\n", 0, found.start()) + 1) + 1
    return Position(line, column, len(json.dumps(key, ensure_ascii=False)))


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


def load_program(source: str | None, expr: str | None, file: str | None) -> Program:
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




def print_rich(renderable: Any, no_color: bool) -> None:
    """Print a Rich renderable to stdout, never cutting it to the terminal's width.

    The Console is built here, at the edge: colour and terminal detection are fixed
    when it is created.  Rich crops lines to the console width (80 when piped); a
    table whose number columns cannot shrink is given the width it needs instead,
    since a line the terminal wraps is untidy but a cut-off number is wrong.
    """
    from rich.console import Console
    from rich.measure import Measurement

    console = Console(no_color=no_color or None, highlight=False)
    needed = Measurement.get(console, console.options.update_width(1 << 16), renderable).minimum
    console.width = max(console.width, needed)
    console.print(renderable)
