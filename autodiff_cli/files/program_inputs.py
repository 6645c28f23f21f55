"""A command's program and its input values: the program from SOURCE, ``-e`` or ``-f`` (a file,
standard input or the text itself), parsed; the values from ``--values`` with ``--set`` on top,
each refused where it was given when the program computes that name or wants another shape.

Nothing here prints: warnings go to ``warn``, the notice for a terminal read as stdin to
``notify``, and the parse's progress to a bar made by ``progress``.  A misuse of the command line
(the program given twice, or not at all) is a ``UsageMistake``, which the CLI shows as a usage
error (exit 2); everything else is an ``AutodiffError``.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from ..errors import InputError, Source, listed, printable
from .set_values import set_value_in_precision
from .streams import names_stdin, stdin_is_piped
from .text import read_file, read_stdin, smallest_float
from .values import key_position, read_values, values_in_precision

if TYPE_CHECKING:
    from ..language.program import Program

__all__ = ["UsageMistake", "load_program_and_values", "read_program"]

Warn = Callable[[list[str]], None]
Notify = Callable[[str], None]
# A progress bar for one piece of work, by its description: a context giving a function told
# (done, total) as the work advances.
ProgressBar = Callable[[str], AbstractContextManager[Callable[[int, int], None]]]


class UsageMistake(ValueError):
    """The command line itself is wrong (the program given twice, or not at all)."""


_LOOKS_LIKE_PATH = re.compile(r"^[^\s()*+=;#^,]*(/|\\|\.[A-Za-z][A-Za-z0-9]*$)")
_BARE_NAME = re.compile(r"\s*[A-Za-z_][A-Za-z0-9_]*\s*\Z")


def load_program_and_values(
    source: str | None, expr: str | None, file: str | None, assignments: dict[str, Any], values_file: str | None,
    *, warn: Warn, notify: Notify, progress: ProgressBar, dtype: str = "float64",
) -> tuple[Program, dict[str, Any], Source | None]:
    """The parsed program, the input values (--values, then --set on top), and the text of the
    values file as it was read (None without --values), for a command that writes the values
    back.  A value for a name the program computes, or of another shape than its input's
    default, is an error said against where it was given: the values file (at its key) or --set.
    So is a number too large for ``dtype``, the precision the run takes the values in (a
    ``set_values.BadValue`` for --set); a number ``dtype`` takes as 0 is warned about, there
    and in the program, as float64's are."""
    _stdin_once(source, expr, file, values_file)
    program_source = read_program(source, expr, file, notify)
    program = _parse_source(source, program_source, warn, progress)
    _warn_about_tiny_numbers(program_source, warn, dtype)
    values: dict[str, Any] = {}
    values_source = None
    if values_file:
        values, values_source, warnings = read_values(values_file, notify)
        warn(warnings)
        _refuse_computed(program, values, values_source)
        from_file = {name: values[name] for name in values if name not in assignments}
        _refuse_other_shapes(program, from_file, values_source)
        warn(values_in_precision(from_file, values_source, dtype))
    _refuse_computed(program, assignments, None)
    _refuse_other_shapes(program, assignments, None)
    for name, value in assignments.items():
        set_value_in_precision(name, value, dtype, warn)
    values.update(assignments)
    return program, values, values_source


def read_program(source: str | None, expr: str | None, file: str | None, notify: Notify) -> Source:
    """The program text and its display name, from SOURCE, -e or -f.

    SOURCE is read as a file when something of that name exists (pipes such as
    ``<(...)`` and ``/dev/stdin`` included), as stdin when it is ``-``, and as
    program text otherwise.
    """
    given = [x for x in (source, expr, file) if x is not None]
    if len(given) > 1:
        raise UsageMistake("give the program once: as SOURCE, with -e/--expr or with -f/--file")
    if expr is not None:
        return Source("<expr>", expr)
    if file is not None:
        return _program_from(file, notify)
    if source is None:
        if not stdin_is_piped():
            raise UsageMistake("no program given: pass an expression, a file, or '-' for stdin")
        return Source("<stdin>", read_stdin("program", notify))
    if source == "-" or ("\n" not in source and os.path.exists(source)):
        return _program_from(source, notify)
    return Source("<expr>", source)


def _program_from(path: str, notify: Notify) -> Source:
    if path == "-":
        return Source("<stdin>", read_stdin("program", notify))
    return Source(path, read_file(path, "program"))


def _could_be_a_path(source: str | None) -> bool:
    """SOURCE text that names no file but looks like a file name: 'x/2', 'model.ad', 'model'."""
    if source is None or source == "-" or "\n" in source:
        return False
    return bool(_LOOKS_LIKE_PATH.match(source) or _BARE_NAME.match(source)) and not os.path.exists(source)


def _parse_source(source: str | None, program_source: Source, warn: Warn, progress: ProgressBar) -> Program:
    """Parse the program; for SOURCE text that looks like a missing file, say which reading won.

    The rule: a SOURCE that names an existing file is that file.  Otherwise it is program
    text, and when that text could also be a file name ('x/2', 'model'), it is run if it
    parses, with a warning that no such file exists; if it does not parse either, the error
    is the missing file (with the parse error as a note), since that is the likelier intent.
    """
    from ..errors import ParseError
    from ..language import parse

    if not _could_be_a_path(source):
        with progress("parsing") as advance:  # a bar only at a terminal, and after a second
            return parse(program_source.text, program_source.name, progress=advance)
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
        raise UsageMistake("standard input can carry the program or the --values, not both: "
                           "name a file for one of them")


def _warn_about_tiny_numbers(program_source: Source, warn: Warn, dtype: str = "float64") -> None:
    from ..language.compiler import tiny_numbers

    warn([f"{printable(program_source.name)}:{line}:{column}: {literal} is smaller than the smallest "
          f"{smallest_float(dtype)}, so it is taken as 0" for line, column, literal in tiny_numbers(program_source.text,
                                                                                                    dtype)])


def _refuse_computed(program: Program, values: dict[str, Any], values_source: Source | None) -> None:
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
