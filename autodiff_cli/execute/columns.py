"""Which columns of rows feed which inputs of a program: the plan ``batch`` and ``fit`` share.

A column named after an input gives it a value on every row.  A tensor input takes one
column per entry, named by the rule of ``entry_column``: ``x[0]``, ``x[1]`` for a vector,
``W[0, 1]`` for an entry of a matrix (results are written out by the same rule).  A column may not name a
variable the program computes, nor an input also given by ``--set``/``--values``; a column
that names nothing in the program is an error unless it is passed through to the output
(``batch --keep``).  An input that no column, value or default gives is missing.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import InputError, Source, listed, variables_hint

if TYPE_CHECKING:
    from ..language.program import Program, Variable

__all__ = ["ColumnPlan", "entry_column", "entry_columns", "feeds_tensors", "input_rows", "plan_columns",
           "split_column"]

_ENTRY = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\[\s*([0-9]+(?:\s*,\s*[0-9]+)*)\s*\]\Z")


def entry_column(name: str, index: Sequence[int]) -> str:
    """The name of one entry of a tensor, as its column of rows is named and as the scalar view,
    messages and reports write it: ``x[0]``, ``W[1, 2]``; a number's is its name."""
    return f"{name}[{', '.join(map(str, index))}]" if len(index) else name


def entry_columns(name: str, shape: Sequence[int]) -> list[str]:
    """Every entry of a variable of ``shape`` as a column name, in row-major order."""
    return [entry_column(name, index) for index in itertools.product(*map(range, shape))]


def split_column(column: str) -> tuple[str, tuple[int, ...]] | None:
    """``'W[0, 1]'`` -> ``('W', (0, 1))``: the variable and entry a column names; None for a
    column that names no entry."""
    found = _ENTRY.match(column)
    if found is None:
        return None
    return found.group(1), tuple(int(i) for i in found.group(2).split(","))


def input_rows(program: Program, columns: Mapping[str, Any],
               row_shapes: Mapping[str, tuple[int, ...]] | None = None) -> dict[str, Any]:
    """The inputs that columns of rows give, each as ``(rows, *shape)``: a column named after an
    input gives it as it is; the entry columns of a tensor input (``x[0]``, ``x[1]``) are stacked,
    and must cover its shape.  ``row_shapes``: the shape of each input on one row, for a program
    that declares its inputs with a whole batch of rows in front (its declarations then say nothing
    of a row's shape, and a column named after an input is one of its rows' entries)."""
    import numpy as np

    from ..language.shapes import refuse_other_column_shapes

    by_input: dict[str, dict[tuple[int, ...], Any]] = {}
    rows: dict[str, Any] = {}
    for column, value in columns.items():
        entry = split_column(column)
        if column not in program.variables and entry is not None and entry[0] in program.variables:
            by_input.setdefault(entry[0], {})[entry[1]] = np.asarray(value, dtype=float)
        else:
            rows[column] = np.asarray(value, dtype=float)
    if row_shapes is None:
        refuse_other_column_shapes(program, rows)
    for name, entries in by_input.items():
        rows[name] = _stacked(program, name, entries, None if row_shapes is None else row_shapes[name])
    return rows


def _stacked(program: Program, name: str, entries: Mapping[tuple[int, ...], Any], shape: tuple[int, ...] | None
             ) -> Any:
    """An input's rows ``(N, *shape)`` from its entry columns, which must cover its shape: ``shape``
    when given, else the shape of its default when the program declares one (``x = [0, 0]``), else
    the one the columns span."""
    import numpy as np

    from ..language.program import TensorConstant
    from ..language.shapes import shape_text

    rank = {len(index) for index in entries}
    default = program.variables[name].default
    declared = default.shape if shape is None and isinstance(default, TensorConstant) else None
    read = "an input" if shape is None else f"a row of '{name}'"  # (a batch program's inputs hold many)
    if shape is None:
        shape = declared if declared is not None else tuple(max(index[axis] for index in entries) + 1
                                                            for axis in range(max(rank)))
    wanted = set(itertools.product(*map(range, shape)))
    if len(rank) > 1 or set(entries) != wanted:
        absent = sorted(wanted - set(entries))
        extra = sorted(set(entries) - wanted)
        problem = (f"the column {entry_column(name, absent[0])} is missing" if absent else
                   f"there is a column {entry_column(name, extra[0])}" if extra else "they mix numbers of indices")
        said = f" (the program declares '{name}' of shape {shape_text(shape)})" if declared is not None else ""
        raise InputError(f"the columns of input '{name}' do not make a tensor{said}: {problem}",
                         program.variables[name].position, program.source,
                         f"{read} of shape {shape_text(shape)} is read from the columns "
                         f"{', '.join(entry_column(name, index) for index in sorted(wanted)[:3])}"
                         f"{' ...' if len(wanted) > 3 else ''}"
                         f"{' ' + entry_column(name, max(wanted)) if len(wanted) > 3 else ''}")
    rows = len(next(iter(entries.values())))
    stacked = np.empty((rows, *shape))
    for index, column in entries.items():
        stacked[(slice(None), *index)] = column  # type: ignore[index]
    return stacked

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

    entries: dict[str, str] = field(default_factory=dict)  # an entry's column -> its tensor input
    header_line: int | None = None  # the line of a text file's header, once read (None: Parquet's schema, or unknown)

    @property
    def inputs_given(self) -> list[str]:
        """The inputs the columns give: by name, or entry by entry (``x[0]``, ``x[1]`` give ``x``)."""
        return list(dict.fromkeys(self.entries.get(column, column) for column in self.numeric))

    def missing_error(self, program: Program, data_name: str, header_line: int | None = None) -> InputError:
        """The error for ``missing`` inputs, when every input needs a value on every row; it points
        at the program's use of the first one, and says where the rows name their columns
        (``header_line``: the line of a text file's header; None for Parquet's schema)."""
        missing = self.missing
        first = missing[0].name
        plural = "s" * (len(missing) > 1)
        return InputError(
            f"no value for input{plural} {listed([v.name for v in missing], 10)}: {data_name} has no such "
            f"column{plural}, and no --set or default gives {'them' if plural else 'it'} one",
            missing[0].position, program.source,
            f"add a column {first} to the rows, give one value for every row with --set {first}=VALUE, or "
            f"declare a default in the program ('{first} = 1.0')",
            [(f"the columns of {data_name} are: " if header_line is None else
              f"{data_name} line {header_line}, its header, names the columns: ") + ', '.join(self.columns[:20])
             + (" ..." if len(self.columns) > 20 else "")])


def feeds_tensors(program: Program, plan: ColumnPlan) -> bool:
    """Whether a column of the plan gives an entry of a tensor input (``x[0]``): then the input is
    a tensor on every row, whatever the program declares."""
    return bool(plan.entries)


def _refuse_columns_naming_one_value(columns: Sequence[str], fed: Mapping[str, str],
                                     entries: Mapping[str, tuple[str, tuple[int, ...]] | None], data_name: str,
                                     locate: Locate) -> None:
    """Two columns for one value (``x[0]`` and ``x[00]``, ``W[1,1]`` and ``W[1, 1]``), or a whole
    input's column beside its entries' (``x`` and ``x[0]``): which one holds the value is
    ambiguous, so neither is read.  The error points at the later column and names both."""
    first_of: dict[object, str] = {}
    whole = {name for name in columns if name not in fed}
    for column in columns:
        key: object = entries[column] if column in fed else column
        earlier = first_of.setdefault(key, column)
        if earlier != column:
            raise locate(column, f"the columns '{earlier}' and '{column}' of {data_name} name the same entry",
                         "keep one of them: a column is named once")
        if column in fed and fed[column] in whole:
            name = fed[column]
            raise locate(column, f"'{name}' is given both whole, by the column '{name}', and entry by entry, "
                         f"by '{column}' and its like, in {data_name}",
                         f"keep one of them: the column '{name}' or the columns {name}[...]")


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
    entries = {column: split_column(column) for column in columns if column not in program.variables}
    fed = {column: entry[0] for column, entry in entries.items() if entry is not None and entry[0] in inputs}
    _refuse_columns_naming_one_value(columns, fed, entries, data_name, locate)
    for name in columns:
        variable = program.variables.get(name)
        if name in fed:
            column, name = name, fed[name]  # an entry of a tensor input: the input is what is given
            if name in values:
                raise locate(column, f"'{name}' is both given by columns of {data_name} and by --set/--values",
                             f"give it one way: drop its columns, or the --set {name}=... (or the key in --values)")
        elif name in inputs:
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
    given = set(columns) | set(fed.values())
    missing = [v for v in program.inputs if v.name not in given and v.name not in values and v.default is None]
    return ColumnPlan(
        columns=list(columns),
        numeric=[name for name in columns if name in inputs or name in fed],
        passed=[name for name in kept if name not in inputs and name not in fed],
        kept=kept,
        missing=missing,
        unused=[name for name in values if name not in program.variables],
        entries=fed,
    )
