"""Which columns of rows feed which inputs of a program: the plan ``batch`` and ``fit`` share.

A column named after an input gives it a value on every row.  A column may not name a
variable the program computes, nor an input also given by ``--set``/``--values``; a column
that names nothing in the program is an error unless it is passed through to the output
(``batch --keep``).  An input that no column, value or default gives is missing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import InputError, Source, listed, variables_hint

if TYPE_CHECKING:
    from ..language.program import Program, Variable

__all__ = ["ColumnPlan", "plan_columns"]

# An error about a column: (column, message, hint) -> the error, pointing where the column is named.
Locate = Callable[[str, str, str], InputError]


@dataclass
class ColumnPlan:
    """What each column of the rows is for."""

    columns: list[str]  # as the rows name them, in order
    numeric: list[str]  # the columns that give an input its value, row by row
    passed: list[str]  # columns written out as they were read (no input of the program)
    kept: list[str]  # the columns copied to the output, in order
    missing: list[Variable]  # inputs that no column, value or default gives
    unused: list[str]  # names given a value (--set, --values) that the program does not use

    def missing_error(self, program: Program, data_name: str) -> InputError:
        """The error for ``missing`` inputs, when every input needs a value on every row."""
        missing = self.missing
        first = missing[0].name
        plural = "s" * (len(missing) > 1)
        return InputError(
            f"no value for input{plural} {listed([v.name for v in missing], 10)}: {data_name} has no such "
            f"column{plural}, and no --set or default gives {'them' if plural else 'it'} one",
            missing[0].position, program.source,
            f"add a column {first} to the rows, give one value for every row with --set {first}=VALUE, or "
            f"declare a default in the program ('{first} = 1.0')",
            [f"the columns of {data_name} are: {', '.join(self.columns[:20])}"
             + (" ..." if len(self.columns) > 20 else "")])


def plan_columns(program: Program, columns: Sequence[str], values: Mapping[str, float], *, data_name: str,
                 locate: Locate | None = None, keep: list[str] | None = None,
                 unknown_advice: str = "remove the column, or use it in the program") -> ColumnPlan:
    """The plan for rows whose first line names ``columns``, with ``values`` given for every row.

    ``keep``: the columns to copy to the output (None: all), those that are no input passed
    through as they were written.  ``locate`` makes an error about a column point where the
    rows name it (the program's file otherwise).  ``unknown_advice`` says what to do with a
    column that is no input ('{name}' stands for its name).  Raises ``InputError`` for a column
    that is also given a value, names a computed variable, or names nothing and is not kept.
    """
    if locate is None:
        def locate(name: str, message: str, hint: str) -> InputError:
            return InputError(message, source=Source(program.source.name, ""), hint=hint)

    inputs = {v.name for v in program.inputs}
    kept = list(columns) if keep is None else keep
    for name in columns:
        variable = program.variables.get(name)
        if name in inputs:
            if name in values:
                raise locate(name, f"'{name}' is both a column of {data_name} and given by --set/--values",
                             f"give it one way: drop the column, or the --set {name}=... (or the key in --values)")
        elif variable is not None:
            raise locate(name, f"the column '{name}' names a variable the program computes, so it cannot be "
                         f"given", f"'{name}' is assigned on line {variable.position.line}; rename or drop the column")
        elif keep is None or name not in keep:
            hint = variables_hint(sorted(inputs), [name]).replace("the variables are", "its inputs are")
            raise locate(name, f"the column '{name}' is not an input of the program",
                         f"{hint}; {unknown_advice.replace('{name}', name)}")
    missing = [v for v in program.inputs if v.name not in columns and v.name not in values and v.default is None]
    return ColumnPlan(
        columns=list(columns),
        numeric=[name for name in columns if name in inputs],
        passed=[name for name in kept if name not in inputs],
        kept=kept,
        missing=missing,
        unused=[name for name in values if name not in program.variables],
    )
