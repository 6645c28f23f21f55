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
import stat
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import click

from ..errors import AutodiffError, InputError, Position, Source, format_error, printable, shorten

if TYPE_CHECKING:
    from ..language.program import Program

EXIT_CODES_HELP = """\b
Exit status:
  0    success
  1    an error in the program or its inputs (syntax, unknown name, missing
       input, domain error such as log of a negative number)
  2    command-line usage error (unknown option, malformed --set, ...)
  130  interrupted by Ctrl-C (143: stopped by SIGTERM)"""

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
_BARE_NAME = re.compile(r"\s*[A-Za-z_][A-Za-z0-9_]*\s*\Z")


class LineSource(Source):
    """One line of a file, as an error excerpt shows it: the one line is all it holds."""

    def __init__(self, name: str, number: int, text: str) -> None:
        super().__init__(name, text)
        object.__setattr__(self, "number", number)

    def line(self, number: int) -> str:
        return self.text if number == self.number else ""  # type: ignore[attr-defined]


def not_utf8(data: bytes, start: int, name: str, what: str, line: int = 1, cr_ends_lines: bool = False) -> InputError:
    """The error for byte ``start`` of ``data``, which cannot start or continue a UTF-8 character.

    ``data`` begins at the start of line ``line`` (after any byte order mark); a line ends at LF,
    and also at CR when ``cr_ends_lines`` (CRLF then counts once).  The error points at the byte's
    line and column, counted in characters as the line is shown: decoded, with each byte that is
    not UTF-8 replaced by U+FFFD.
    """
    line += data.count(b"\n", 0, start)
    begin = data.rfind(b"\n", 0, start) + 1
    stop = data.find(b"\n", start)
    if cr_ends_lines:
        line += data.count(b"\r", 0, start) - data.count(b"\r\n", 0, start)
        begin = max(begin, data.rfind(b"\r", 0, start) + 1)
        cr = data.find(b"\r", start)
        stop = cr if stop < 0 or 0 <= cr < stop else stop
    stop = len(data) if stop < 0 else stop
    column = len(data[begin:start].decode("utf-8", "replace")) + 1
    shown = data[begin:stop].decode("utf-8", "replace").rstrip("\r")
    return InputError(f"not valid UTF-8: byte 0x{data[start]:02x} cannot start or continue a character",
                      Position(line, column), LineSource(name, line, shown), f"save the {what} as UTF-8 text")


def _decode(data: bytes, name: str, what: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        # error.object is what was decoded: ``data`` without its byte order mark, if it has one.
        raise not_utf8(error.object, error.start, name, what) from None


_WAITING_FOR = {"program": "the program", "values file": "the values (JSON)"}


def _read_stdin(what: str) -> str:
    if sys.stdin is None:
        raise InputError("standard input is closed, so the " + what + " cannot be read from it",
                         hint="pipe the " + what + " in, or name a file")
    say_when_waiting_at_terminal(_WAITING_FOR.get(what, what))
    return _decode(sys.stdin.buffer.read(), "<stdin>", what)


def say_when_waiting_at_terminal(what: str, it: str = "it") -> None:
    """Reading stdin at a terminal: say what the command waits for, and how to finish (otherwise
    it seems to hang)."""
    if sys.stdin is not None and _is_terminal(sys.stdin):
        end = "Ctrl-Z then Enter" if os.name == "nt" else "Ctrl-D"
        click.echo(f"reading {what} from the terminal; end {it} with {end} (Ctrl-C cancels)", err=True)


def stdin_is_piped() -> bool:
    """Whether standard input has something to read when no argument names it: a pipe or a file
    redirected to it does.  A terminal does not, nor /dev/null, which cron and CI jobs give a
    command (a character device that is not a terminal): a forgotten argument is then a usage
    error, not an empty program or no rows."""
    if sys.stdin is None or _is_terminal(sys.stdin):
        return False
    try:
        return not stat.S_ISCHR(os.fstat(sys.stdin.fileno()).st_mode)
    except (AttributeError, OSError, ValueError):  # a stream with no descriptor (an embedding program's)
        return True


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _read_file(path: str, what: str) -> str:
    if os.path.isdir(path):
        raise InputError(f"cannot read {path}: it is a directory",
                         hint=f"name the {what.removesuffix(' file')} file itself, not its directory")
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as error:
        raise InputError(f"cannot read {path}: {error.strerror or error}",
                         hint="check the path and its permissions") from None
    return _decode(data, path, what)


def read_program(source: str | None, expr: str | None, file: str | None) -> Source:
    """The program text and its display name, from SOURCE, -e or -f.

    SOURCE is read as a file when something of that name exists (pipes such as
    ``<(...)`` and ``/dev/stdin`` included), as stdin when it is ``-``, and as
    program text otherwise.
    """
    given = [x for x in (source, expr, file) if x is not None]
    if len(given) > 1:
        raise click.UsageError("give the program once: as SOURCE, with -e/--expr or with -f/--file")
    if expr is not None:
        return Source("<expr>", expr)
    if file is not None:
        return _program_from(file)
    if source is None:
        if not stdin_is_piped():
            raise click.UsageError("no program given: pass an expression, a file, or '-' for stdin")
        return Source("<stdin>", _read_stdin("program"))
    if source == "-" or ("\n" not in source and os.path.exists(source)):
        return _program_from(source)
    return Source("<expr>", source)


def _could_be_a_path(source: str | None) -> bool:
    """SOURCE text that names no file but looks like a file name: 'x/2', 'model.ad', 'model'."""
    if source is None or source == "-" or "\n" in source:
        return False
    return bool(_LOOKS_LIKE_PATH.match(source) or _BARE_NAME.match(source)) and not os.path.exists(source)


def _parse_source(source: str | None, program_source: Source) -> Program:
    """Parse the program; for SOURCE text that looks like a missing file, say which reading won.

    The rule: a SOURCE that names an existing file is that file.  Otherwise it is program
    text, and when that text could also be a file name ('x/2', 'model'), it is run if it
    parses, with a warning that no such file exists; if it does not parse either, the error
    is the missing file (with the parse error as a note), since that is the likelier intent.
    """
    from ..errors import ParseError
    from ..language import parse

    if not _could_be_a_path(source):
        from .output import Progress

        with Progress("parsing") as progress:  # a bar only at a terminal, and after a second
            return parse(program_source.text, program_source.name, progress=progress)
    assert source is not None
    try:
        program = parse(program_source.text, program_source.name)
    except ParseError as error:
        raise InputError(
            f"no such file: {source}",
            notes=[f"read as program text instead, it is not valid either: {error.message}"],
            hint="check the path; to evaluate the text itself, pass it with -e/--expr",
        ) from None
    warn([(f"there is no file named {source.strip()!r}; reading it as program text "
           "(-e/--expr says so and silences this)")])
    return program


def _program_from(path: str) -> Source:
    if path == "-":
        return Source("<stdin>", _read_stdin("program"))
    return Source(path, _read_file(path, "program"))


def names_stdin(path: str | None) -> bool:
    """'-', /dev/stdin, /dev/fd/0, /proc/self/fd/0: standard input however it is spelled."""
    from .output import descriptor_of

    return path is not None and (path == "-" or descriptor_of(path) == 0)


def _stdin_once(source: str | None, expr: str | None, file: str | None, values_file: str | None) -> None:
    if not names_stdin(values_file):
        return
    if file is not None:
        program_from_stdin = names_stdin(file)
    elif source is not None:
        program_from_stdin = names_stdin(source)
    else:  # no SOURCE, -e or -f: the program is read from a piped stdin
        program_from_stdin = expr is None and stdin_is_piped()
    if program_from_stdin:
        raise click.UsageError("standard input can carry the program or the --values, not both: "
                               "name a file for one of them")


def _parse_number(text: str, what: str) -> float:
    if not _NUMBER.match(text):
        raise click.BadParameter(f"{what}: {text!r} is not a number (write it as 2, -0.5 or 1e-3)")
    value = float(text)
    if not math.isfinite(value):
        raise click.BadParameter(f"{what}: {text!r} is too large for a float")
    if _underflows(text, value):
        warn([f"{what}: {text} is smaller than the smallest float (about 5e-324), so it is taken as 0"])
    return value


def _underflows(text: str, value: float) -> bool:
    """A number written with a non-zero digit that float() rounds to 0 (1e-400)."""
    mantissa = text.lower().partition("e")[0]
    return value == 0.0 and any(digit in mantissa for digit in "123456789")


def float_noting_underflows(found: list[str]) -> Callable[[str], float]:
    """``float`` for ``json.loads(parse_float=...)`` that appends to ``found`` each number it
    reads as 0 although it is not written as 0 (``_underflows``)."""
    def parse_float(literal: str) -> float:
        value = float(literal)
        if _underflows(literal, value):
            found.append(literal)
        return value

    return parse_float


# The numbers of the language (its NUMBER terminal, kept equal by a test), with a sign:
# float() alone would also take '1_000', 'inf' and digits of other scripts.
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def parse_assignments(ctx: click.Context, param: click.Parameter, items: tuple[str, ...]) -> dict[str, float]:
    """``--set a=2 --set b=-3`` -> {'a': 2.0, 'b': -3.0}; a later --set for a name wins."""
    values: dict[str, float] = {}
    for item in items:
        name, sep, text = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise click.BadParameter(f"expected NAME=VALUE (e.g. a=2.5), got {item!r}", ctx, param)
        if not _NAME.match(name):  # in NAME=VALUE form, but no program can have that name: '1x', 'é'
            raise click.BadParameter(f"{name!r} is not a name of the language, whose names are ASCII letters, "
                                     f"digits and _, and start with a letter or _ (got {item!r})", ctx, param)
        values[name] = _parse_number(text.strip(), f"value of {name}")
    return values


def load_values(path: str) -> dict[str, float]:
    """A JSON object mapping input names to numbers ('-' reads it from stdin)."""
    return _values_and_source(path)[0]


def _values_and_source(path: str) -> tuple[dict[str, float], Source]:
    import json

    text = _read_stdin("values file") if path == "-" else _read_file(path, "values file")
    source = Source("<stdin>" if path == "-" else path, text)
    example = 'the values file is a JSON object of numbers, e.g. {"a": 2, "b": -3}'
    try:
        # Integers are read as floats: a 400-digit integer then becomes inf (rejected
        # below) instead of an int that Python refuses to convert.
        underflows: list[str] = []
        document = json.loads(text, parse_int=float, parse_float=float_noting_underflows(underflows),
                              object_pairs_hook=object_without_duplicates)
    except DuplicateKey as duplicate:
        raise InputError(f"{duplicate.key!r} is given twice", _key_position(text, duplicate.key, 2), source,
                         "give each input once") from None
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
    isfinite = math.isfinite
    # One pass in a comprehension (a values file can hold millions of keys); bool is not float.
    wrong = [key for key, value in document.items() if type(value) is not float or not isfinite(value)]
    if wrong:
        raise _not_finite(wrong[0], document[wrong[0]], source)
    if underflows:
        shown = ", ".join(underflows[:5]) + (f" and {len(underflows) - 5:,} more" if len(underflows) > 5 else "")
        verb = "is" if len(underflows) == 1 else "are"
        warn([f"{source.name}: {shown} {verb} smaller than the smallest float (about 5e-324), so taken as 0"])
    return document, source


def _not_finite(key: str, value: Any, source: Source) -> InputError:
    """The error for a value that is not a finite number, quoting it as the file writes it."""
    import json

    where, written = _where_written(source.text, key, value)
    if written is None:  # the text search could not find it: the value as JSON reads it
        written = json.dumps(value, allow_nan=True)
    if _JSON_NUMBER.match(written):  # a number that float() takes to inf: 1e999, or 400 digits
        return InputError(f"the value of {key!r} is too large for a float: {written}", where, source,
                          "a float holds numbers up to about 1.8e308 in size: give a smaller value")
    shown = f"{written[:40]}{'...' if len(written) > 40 else ''}"
    return InputError(f"the value of {key!r} is not a finite number: {shown}", where, source,
                      'every value must be a finite number, e.g. {"a": 2.5}')


# A JSON number, as the values file writes it (JSON has no '+', no '.5', no 'inf').
_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?\Z")


def _where_written(text: str, key: str, value: Any) -> tuple[Position, str | None]:
    """Where ``"key":`` is written with ``value`` after it, and the value's text there (``1e999``,
    ``[1]``).  Of the places the text search finds, the one whose value reads as ``value`` is it:
    the others are inside strings.  None for the text if no place is."""
    import json

    shown = json.dumps(value, allow_nan=True)  # compared as text: nan is not equal to itself
    for found in _key_matches(text, key):
        start = found.end()
        while start < len(text) and text[start] in " \t\r\n":  # JSON's white space
            start += 1
        try:
            read, end = json.JSONDecoder(parse_int=float).raw_decode(text, start)
        except ValueError:
            continue
        if json.dumps(read, allow_nan=True) == shown:
            return _match_position(text, found), text[start:end]
    return _key_position(text, key), None


class DuplicateKey(Exception):
    """A JSON object names ``key`` twice (raised by ``object_without_duplicates``)."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def object_without_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json.loads``'s ``object_pairs_hook`` that refuses a key written twice (JSON allows it;
    the last would silently win)."""
    document = dict(pairs)
    if len(document) != len(pairs):  # the slow search only when there is a duplicate
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKey(key)
            seen.add(key)
    return document


def _key_position(text: str, key: str, occurrence: int = 1) -> Position:
    """Where ``"key":`` is written for the given time (JSON keeps no positions; a text search
    finds them, and can only be fooled by the same text inside a string value)."""
    found = _key_match(text, key, occurrence)
    return Position(1, 1) if found is None else _match_position(text, found)


def _match_position(text: str, found: re.Match[str]) -> Position:
    """The position of a ``"key":`` that ``_key_matches`` found, as wide as the key is written."""
    line = text.count("\n", 0, found.start()) + 1
    column = found.start() - (text.rfind("\n", 0, found.start()) + 1) + 1
    return Position(line, column, len(found.group().rstrip(" \t\r\n:")))


def _key_match(text: str, key: str, occurrence: int = 1) -> re.Match[str] | None:
    """The given time ``"key":`` is written in ``text``, in the first spelling written that often."""
    for spelling in _key_spellings(key):
        matches = list(re.finditer(re.escape(spelling) + r"\s*:", text))
        if len(matches) >= occurrence:
            return matches[occurrence - 1]
    return None


def _key_matches(text: str, key: str) -> Iterator[re.Match[str]]:
    """Every place ``"key":`` is written in ``text``, in each spelling."""
    for spelling in _key_spellings(key):
        yield from re.finditer(re.escape(spelling) + r"\s*:", text)


def _key_spellings(key: str) -> list[str]:
    """A key as JSON may write it: with non-ASCII characters escaped, or not."""
    import json

    return list(dict.fromkeys((json.dumps(key), json.dumps(key, ensure_ascii=False))))


class FiniteFloat(click.FloatRange):
    """A float option that refuses nan and the infinities as well as values out of range.

    click.FloatRange lets nan through (every comparison with it is false) and takes inf.
    ``meaning`` is added to the error, e.g. "0 for no limit".
    """

    def __init__(self, min: float | None = None, max: float | None = None, meaning: str = "") -> None:
        super().__init__(min=min, max=max)
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
                     help="Give an input a value (repeatable); overrides defaults and --values."),
        click.option("--values", "values_file", metavar="FILE.json", shell_complete=complete_file_name,
                     help="Read input values from a JSON object ('-' for stdin)."),
        click.option("--output", "output", metavar="NAME",
                     help="The variable to differentiate (default: the last statement)."),
    ]
    for decorator in reversed(decorators):
        command = decorator(command)
    return command


def text_options(command: Callable[..., None]) -> Callable[..., None]:
    """--precision (significant digits) and --no-color: shared by eval, explain and check."""
    command = click.option("--no-color", is_flag=True, help="No colour (also when NO_COLOR is set).")(command)
    return click.option("--precision", type=click.IntRange(1, 17), metavar="N",
                        help="Significant digits of the numbers shown [default: all, round-trip].")(command)


def load_inputs(
    source: str | None, expr: str | None, file: str | None, assignments: dict[str, float],
    values_file: str | None,
) -> tuple[Program, dict[str, float]]:
    """The parsed program and the input values (--values, then --set on top).

    A value for a name the program computes is an error said against where it was given:
    the values file (at its key) or --set.
    """
    program, values, _ = load_inputs_and_values_source(source, expr, file, assignments, values_file)
    return program, values


def load_inputs_and_values_source(
    source: str | None, expr: str | None, file: str | None, assignments: dict[str, float],
    values_file: str | None,
) -> tuple[Program, dict[str, float], Source | None]:
    """``load_inputs``, and the text of the values file as it was read (None without --values),
    for a command that writes the values back (``fit``: see ``value_literals``)."""
    _stdin_once(source, expr, file, values_file)
    program_source = read_program(source, expr, file)
    program = _parse_source(source, program_source)
    _warn_about_tiny_numbers(program_source)
    values: dict[str, float] = {}
    values_source = None
    if values_file:
        values, values_source = _values_and_source(values_file)
        _refuse_computed(program, values, values_source)
    _refuse_computed(program, assignments, None)
    values.update(assignments)
    return program, values, values_source


def _warn_about_tiny_numbers(program_source: Source) -> None:
    from ..language.compiler import tiny_numbers

    warn([f"{printable(program_source.name)}:{line}:{column}: {literal} is smaller than the smallest float "
          "(about 5e-324), so it is taken as 0" for line, column, literal in tiny_numbers(program_source.text)])


def value_literals(values_source: Source | None) -> dict[str, str]:
    """Each number of a values file as it is written there (``"n": 3`` -> ``'3'``, not ``3.0``), so
    that a value written back unchanged keeps its text, digits beyond a float's included.
    ``values_source`` is a values file that ``load_inputs_and_values_source`` has accepted."""
    import json

    if values_source is None:
        return {}
    return json.loads(values_source.text, parse_int=str, parse_float=str)  # type: ignore[no-any-return]


def _refuse_computed(program: Program, values: dict[str, float], values_source: Source | None) -> None:
    from ..language.program import INPUT

    variables = program.variables
    for name in values:
        variable = variables.get(name)
        if variable is None or variable.kind == INPUT:
            continue
        assigned = f"{printable(program.source.name)}:{variable.position.line}:{variable.position.column}"
        if values_source is None:
            raise InputError(f"'{name}' is computed by the program, so --set cannot give it a value",
                             variable.position, program.source,
                             f"'{name}' is assigned on line {variable.position.line}; "
                             f"set one of its inputs instead{_inputs_of(program, name)}")
        raise InputError(
            f"'{name}' is computed by the program, so the values file cannot set it",
            _key_position(values_source.text, name), values_source,
            f"remove '{name}' from the values file, or give a value to one of its inputs"
            f"{_inputs_of(program, name)}",
            [f"'{name}' is assigned at {assigned}"],
        )


def _inputs_of(program: Program, name: str) -> str:
    """' (a, b)': the inputs ``name`` depends on, the first few, for a hint."""
    needed = program.dependencies(name)
    names = [v.name for v in program.inputs if needed[v.register]]
    if not names:
        return ""
    shown = ", ".join(names[:5]) + (f" and {len(names) - 5:,} more" if len(names) > 5 else "")
    return f" ({shown})"


# How many warnings a command prints, and how long one may be, before the rest is counted.
WARNINGS_SHOWN = 20
WARNING_LENGTH = 500


def warn(messages: list[str]) -> None:
    """Each message on stderr as ``warning: ...``: escaped, at most ``WARNINGS_SHOWN`` of them,
    each cut to ``WARNING_LENGTH`` characters, with what was left out counted."""
    for message in messages[:WARNINGS_SHOWN]:
        text = printable(shorten(message))
        if len(text) > WARNING_LENGTH:
            text = f"{text[:WARNING_LENGTH - 60]}... ({len(text):,} characters in all)"
        click.echo(f"warning: {text}", err=True)
    if len(messages) > WARNINGS_SHOWN:
        click.echo(f"warning: ... and {len(messages) - WARNINGS_SHOWN:,} more warnings", err=True)


def program_title(source: Source, limit: int = 80) -> str:
    """A title for a picture of the program: its file name, or its text when it came as text."""
    if not source.name.startswith("<"):
        return source.name
    text = " ".join(source.text.split())  # <expr>, <stdin>: the program itself says more
    return text if len(text) <= limit else text[: limit - 3] + "..."
