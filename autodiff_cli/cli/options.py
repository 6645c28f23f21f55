"""What every ``autodiff`` subcommand shares: the common options and their parsing, reading the
program and its inputs (through ``files``), and the conversion of library errors.

Library errors (``AutodiffError``) become a compiler-style message on stderr and
exit status 1 here, at the CLI edge; Click reports misuse of the command line
with status 2.
"""

from __future__ import annotations

import functools
import math
import os
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from ..errors import AutodiffError, InputError, Source, format_error, listed, printable
from ..files import atomic
from ..files.formats import format_by_extension
from ..files.streams import names_stdin, stdin_is_piped
from ..files.text import read_file, read_stdin, underflows
from ..files.values import key_position, read_values
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

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


class Command(click.Command):
    """A subcommand whose single-valued options may be given once: Click's default, the last
    one wins, would let ``--output y1 --output y2`` silently answer for y2.  Options that take
    several values (``--set``, ``--wrt``) and plain flags (``-q``) may repeat; a flag pair
    (``--grad``/``--no-grad``) may not, since its two halves disagree."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not ctx.resilient_parsing:
            refuse_repeated_options(self, ctx, args)
        return super().parse_args(ctx, args)


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
        return Source("<stdin>", read_stdin("program", notify))
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
        return Source("<stdin>", read_stdin("program", notify))
    return Source(path, read_file(path, "program"))


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


def _parse_number(text: str, what: str, name: str | None = None) -> float:
    """``text`` as a number; ``name``, the input it is for, lets the error show the JSON form of a
    tensor written as a comma-separated list (``--set x=0.5,-0.3``)."""
    if not _NUMBER.match(text):
        raise click.BadParameter(f"{what}: {text!r} is not a number (write it as 2, -0.5 or 1e-3)"
                                 f"{_tensor_advice(text, name)}")
    value = float(text)
    if not math.isfinite(value):
        raise click.BadParameter(f"{what}: {text!r} is too large for a float")
    if underflows(text, value):
        warn([f"{what}: {text} is smaller than the smallest float (about 5e-324), so it is taken as 0"])
    return value


def _tensor_advice(text: str, name: str | None) -> str:
    """'; for a tensor, write it as JSON: x='[0.5, -0.3]'' when ``text`` is numbers separated by
    commas (or spaces), the way a tensor is easily mistyped; '' otherwise."""
    parts = [part for part in re.split(r"[,\s]+", text.strip("()[] ")) if part]
    if name is None or len(parts) < 2 or not all(_NUMBER.match(part) for part in parts):
        return ""
    return f"; for a tensor, write it as JSON: {name}='[{', '.join(parts)}]'"


# The numbers of the language (its NUMBER terminal, kept equal by a test), with a sign:
# float() alone would also take '1_000', 'inf' and digits of other scripts.
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


# Where parse_assignments notes the .npy files it read, for refuse_overwriting_inputs.
NPY_FILES_READ = "autodiff_cli.npy_files_read"  # the .npy files --set read, for the overwrite checks


def parse_assignments(ctx: click.Context, param: click.Parameter, items: tuple[str, ...]) -> dict[str, Any]:
    """``--set a=2 --set b=-3`` -> {'a': 2.0, 'b': -3.0}; a later --set for a name wins.  A tensor is
    JSON's nested arrays (``--set W='[[1, 2], [3, 4]]'``) or a ``.npy`` file (``--set W=w.npy``)."""
    values: dict[str, float] = {}
    for item in items:
        name, sep, text = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise click.BadParameter(f"expected NAME=VALUE (e.g. a=2.5), got {item!r}", ctx, param)
        if not _NAME.match(name):  # in NAME=VALUE form, but no program can have that name: '1x', 'é'
            raise click.BadParameter(f"{name!r} is not a name of the language, whose names are ASCII letters, "
                                     f"digits and _, and start with a letter or _ (got {item!r})", ctx, param)
        text = text.strip()
        if text.startswith("["):
            values[name] = _parse_tensor(text, f"value of {name}")
        elif text.endswith(".npy"):
            values[name] = _load_npy(text, f"value of {name}")
            ctx.meta.setdefault(NPY_FILES_READ, {})[f"the .npy file of --set {name}"] = text
        else:
            values[name] = _parse_number(text, f"value of {name}", name)
    return values


def _parse_tensor(text: str, what: str) -> Any:
    """``--set W='[[0.1, 0.2], [0.3, 0.4]]'``: a tensor as JSON's nested arrays of numbers."""
    import json

    from ..files.text import float_noting_underflows
    from ..language.program import ArrayLiteral

    tiny: list[str] = []
    try:
        value = ArrayLiteral.from_nested(json.loads(text, parse_int=float, parse_float=float_noting_underflows(tiny)))
    except json.JSONDecodeError as error:
        raise click.BadParameter(f"{what}: {text!r} is not a JSON array of numbers ({error.msg} at character "
                                 f"{error.pos + 1}); write it as [1, 2] or [[1, 2], [3, 4]]") from None
    except (ValueError, RecursionError) as error:
        raise click.BadParameter(f"{what}: {error}; write it as [1, 2] or [[1, 2], [3, 4]]") from None
    if tiny:
        warn([f"{what}: {listed(tiny, 5)} {'is' if len(tiny) == 1 else 'are'} smaller than the smallest float "
              "(about 5e-324), so taken as 0"])
    return value


_NPY_MAGIC = b"\x93NUMPY"  # how every .npy file begins (NumPy's format, any version)
_NPY_ADVICE = "save the array with NumPy: np.save(path, array.astype(float))"


def _load_npy(path: str, what: str) -> Any:
    """``--set W=weights.npy``: a tensor saved by NumPy (numbers only; never pickled objects).

    The file is checked to begin as a .npy file before NumPy reads it: NumPy takes anything
    else for a pickle, and would say that of an empty file, a text file or /dev/zero."""
    import io

    import numpy as np

    from ..language.program import MAX_AXES, ArrayLiteral

    try:
        with open(path, "rb") as handle:
            head = handle.read(len(_NPY_MAGIC))
            if not head:
                raise click.BadParameter(f"{what}: {path!r} is empty, not a .npy file; {_NPY_ADVICE}")
            if head != _NPY_MAGIC:
                raise click.BadParameter(f"{what}: {path!r} is not a .npy file: it does not begin with NumPy's "
                                         f"header (\\x93NUMPY) but with {head!r}; {_NPY_ADVICE}")
            if handle.seekable():
                handle.seek(0)
                array = np.load(handle, allow_pickle=False)
            else:  # a pipe, <(...): NumPy reads the header twice
                array = np.load(io.BytesIO(head + handle.read()), allow_pickle=False)
    except click.BadParameter:
        raise
    except ValueError as error:
        if "allow_pickle" in str(error):
            raise click.BadParameter(f"{what}: {path!r} holds Python objects, which are never loaded (unpickling "
                                     f"can run code); {_NPY_ADVICE}") from None
        raise click.BadParameter(f"{what}: {path!r} is a damaged .npy file: {error}; {_NPY_ADVICE}") from None
    except EOFError as error:
        raise click.BadParameter(f"{what}: {path!r} is a .npy file cut short ({error}); {_NPY_ADVICE}") from None
    except OSError as error:
        raise click.BadParameter(f"{what}: cannot read {path!r} as a .npy file: {error.strerror or error}") from None
    except Exception as error:  # noqa: BLE001  # a damaged header: NumPy parses it as Python text (SyntaxError, ...)
        raise click.BadParameter(f"{what}: {path!r} is a damaged .npy file: its header cannot be read "
                                 f"({type(error).__name__}); {_NPY_ADVICE}") from None
    if array.ndim > MAX_AXES:
        raise click.BadParameter(f"{what}: {path!r} holds an array of {array.ndim} axes, more than a tensor may "
                                 f"have ({MAX_AXES}); save one of at most {MAX_AXES} axes")
    if array.dtype.kind in "iuf" and array.size and not np.isfinite(array).all():
        index = tuple(int(i) for i in np.argwhere(~np.isfinite(array))[0])
        raise click.BadParameter(f"{what}: {path!r} holds {float(array[index])} at entry {list(index)}, not a finite "
                                 "number; every entry of a value must be finite")
    if array.dtype.kind not in "iuf" or array.size == 0:
        held = "booleans" if array.dtype.kind == "b" else f"{array.dtype}"
        raise click.BadParameter(f"{what}: {path!r} must hold a non-empty array of finite real numbers "
                                 f"(it holds {held} of shape {list(array.shape)}); "
                                 "save numbers: np.save(path, array.astype(float))")
    if array.ndim == 0:
        return float(array)  # a number saved alone is a number
    return ArrayLiteral(tuple(array.shape), tuple(array.astype(float).ravel().tolist()))


def load_values(path: str) -> dict[str, float]:
    """A JSON object mapping input names to numbers ('-' reads it from stdin)."""
    document, _, warnings = read_values(path, notify)
    warn(warnings)
    return document


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
                     help="Give an input a value (repeatable); overrides defaults and --values.  A tensor "
                          "is written as JSON, W='[[1, 2], [3, 4]]', or read from a .npy file."),
        click.option("--values", "values_file", metavar="FILE.json", shell_complete=complete_file_name,
                     help="Read input values from a JSON object of numbers and nested arrays ('-' for stdin)."),
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
        values, values_source, warnings = read_values(values_file, notify)
        warn(warnings)
        _refuse_computed(program, values, values_source)
        _refuse_other_shapes(program, {name: values[name] for name in values if name not in assignments},
                             values_source)
    _refuse_computed(program, assignments, None)
    _refuse_other_shapes(program, assignments, None)
    values.update(assignments)
    return program, values, values_source


def _warn_about_tiny_numbers(program_source: Source) -> None:
    from ..language.compiler import tiny_numbers

    warn([f"{printable(program_source.name)}:{line}:{column}: {literal} is smaller than the smallest float "
          "(about 5e-324), so it is taken as 0" for line, column, literal in tiny_numbers(program_source.text)])


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
            key_position(values_source.text, name), values_source,
            f"remove '{name}' from the values file, or give a value to one of its inputs"
            f"{_inputs_of(program, name)}",
            [f"'{name}' is assigned at {assigned}"],
        )


def _refuse_other_shapes(program: Program, values: dict[str, Any], values_source: Source | None) -> None:
    """An error for a value whose shape differs from its input's default's (``language.shapes``),
    said at the values file's key, or at the input in the program for --set, with the fix."""
    from ..language.program import ArrayLiteral
    from ..language.shapes import declared_at, declared_shape, example_of, given_shape_mismatch

    for name, value in values.items():
        entries = value.values if isinstance(value, ArrayLiteral) else (value,)
        shape = value.shape if isinstance(value, ArrayLiteral) else ()
        found = given_shape_mismatch(program, name, shape, " by --set" if values_source is None else "")
        if found is None:
            continue
        message, hint = found
        declared = declared_shape(program, name)
        assert declared is not None
        example = example_of(entries, declared)  # the same numbers in the right shape
        default = program.variables[name].default
        form = example or (example_of(default.values, declared) if isinstance(default, ArrayLiteral) else None)
        if values_source is not None:
            if form:
                hint = f'write it as "{name}": {example}' if example else f'{hint}, e.g. "{name}": {form}'
            raise InputError(message, key_position(values_source.text, name), values_source, hint,
                             [declared_at(program, name)])
        if example:
            hint = f"write it as --set {name}='{example}'"
        elif form:
            hint += f", e.g. --set {name}='{form}'"
        elif len(entries) == math.prod(declared):  # a .npy file of the right numbers, the wrong shape
            hint += f" (in NumPy: np.save(path, array.reshape({', '.join(map(str, declared))})))"
        raise InputError(message, program.variables[name].position, program.source, hint)


def _inputs_of(program: Program, name: str) -> str:
    """' (a, b)': the inputs ``name`` depends on, the first few, for a hint."""
    needed = program.dependencies(name)
    names = [v.name for v in program.inputs if needed[v.register]]
    return f" ({listed(names, 5)})" if names else ""


def program_title(source: Source, limit: int = 80) -> str:
    """A title for a picture of the program: its file name, or its text when it came as text."""
    if not source.name.startswith("<"):
        return source.name
    text = " ".join(source.text.split())  # <expr>, <stdin>: the program itself says more
    return text if len(text) <= limit else text[: limit - 3] + "..."


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
