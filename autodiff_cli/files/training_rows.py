"""The rows ``fit`` trains on, read into memory (``execute.training.DataSet``): from one file,
with validation rows from another file or held out of it, or as partitions for a cluster.

Rows are read as ``autodiff batch`` reads them (``files.rows``); every column must feed an
input of the program.  Nothing here prints: notices, the reading progress and warnings go to
the caller's callbacks.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from ..errors import InputError, Source
from .formats import row_format, sniffs

if TYPE_CHECKING:
    from ..execute.training import DataSet, Partitions
    from ..language.program import Program

__all__ = ["check_feeds", "fed_names", "parse_feeds", "read_partitioned_rows", "read_rows", "read_training_rows"]

# Reading progress: given a file's size (None: unknown) and name, a context giving a function
# told the bytes consumed after each chunk.
ReadingProgress = Callable[[int | None, str], AbstractContextManager[Callable[[int], None]]]


def read_training_rows(data: str, validation_data: str | None, fraction: float | None, data_format: str | None,
                       program: Program, values: dict[str, Any], seed: int, *, notify: Callable[[str], None],
                       progress: ReadingProgress, warn: Callable[[list[str]], None],
                       feed: Mapping[str, str] | None = None) -> tuple[DataSet, DataSet | None]:
    """The training rows and the validation rows (None without them): from their own file (whose
    columns ``execute.training.plan_training`` checks), or held out of the data (``fraction``,
    drawn with ``seed``).  ``feed``: inputs fed by columns of another name (``fed_names``)."""
    from ..execute.training import split_rows

    data_set = read_rows(data, data_format, program, values, notify=notify, progress=progress, warn=warn, feed=feed)
    if validation_data is not None:
        validation_set = read_rows(validation_data, data_format, program, values, notify=notify, progress=progress,
                                   warn=warn, feed=feed)
        return data_set, validation_set
    if fraction is not None:
        return split_rows(data_set, fraction, seed)
    return data_set, None


def parse_feeds(texts: Sequence[str]) -> dict[str, str]:
    """``--feed`` texts (``NAME=COLUMN``, comma-separated or repeated) as input -> column;
    ``InputError`` for one that is not of that form, or feeds an input or reads a column twice."""
    feed: dict[str, str] = {}
    for text in texts:
        for item in text.split(","):
            name, equals, column = (part.strip() for part in item.partition("="))
            if not (name and equals and column):
                raise InputError(f"--feed {item.strip()!r} is not NAME=COLUMN",
                                 hint="name an input and the column that feeds it, e.g. --feed Xb=x")
            if name in feed or column in feed.values():
                raise InputError(f"--feed {name}={column}: each input and each column is fed once",
                                 hint="give each input one column, and each column to one input")
            feed[name] = column
    return feed


def check_feeds(program: Program, feed: Mapping[str, str]) -> dict[str, str]:
    """``feed``, each of its names an input of ``program`` (``InputError`` if not)."""
    from ..errors import variables_hint

    inputs = [variable.name for variable in program.inputs]
    for name, column in feed.items():
        if name not in inputs:
            raise InputError(f"--feed {name}={column}: '{name}' is not an input of the program",
                             hint=variables_hint(inputs, [name]))
    return dict(feed)


def fed_names(columns: list[str], feed: Mapping[str, str], data_name: str,
              locate: Callable[[str, str, str], InputError]) -> list[str]:
    """The names ``columns`` take for the program: a column ``feed`` names (input -> column) is
    renamed after its input, entry columns with it (``--feed Xb=x``: ``x[0]`` feeds ``Xb[0]``).
    ``InputError`` at the first line when no column has a name ``feed`` gives."""
    from ..execute.columns import split_column

    by_column = {column: name for name, column in feed.items()}
    renamed = []
    for column in columns:
        entry = split_column(column)
        if column in by_column:
            renamed.append(by_column[column])
        elif entry is not None and entry[0] in by_column:
            renamed.append(by_column[entry[0]] + column[len(entry[0]):])
        else:
            renamed.append(column)
    stems = {column if split_column(column) is None else split_column(column)[0] for column in columns}  # type: ignore[index]
    for name, column in feed.items():
        if column not in stems:
            raise locate(columns[0], f"--feed {name}={column}: {data_name} has no column {column} or "
                         f"{column}[...]", f"name a column of its first line: {', '.join(columns[:10])}")
    return renamed


def read_rows(path: str, data_format: str | None, program: Program, values: dict[str, Any], *,
              notify: Callable[[str], None], progress: ReadingProgress, warn: Callable[[list[str]], None],
              feed: Mapping[str, str] | None = None) -> DataSet:
    """Every row of ``path`` by column (named for the program: ``feed``), with the line each came from."""
    import numpy as np

    from ..execute.columns import plan_columns
    from ..execute.training import DataSet
    from .rows import misread_warnings, opened, reader_for

    with opened(path, notify) as (stream, name, size):
        reader = reader_for(stream, name, row_format(path, data_format), sniffs(path, data_format))
        names = fed_names(reader.columns, feed, reader.name, reader.column_error) if feed else list(reader.columns)
        written = dict(zip(names, reader.columns))

        def locate(column: str, message: str, hint: str) -> InputError:
            return reader.column_error(written.get(column, column), message, hint)

        plan = plan_columns(program, names, values, data_name=reader.name, locate=locate,
                            unknown_advice="remove the column, use it in the program, or read an input from it "
                                           "with --feed NAME=COLUMN")
        plan.header_line = getattr(reader, "header_line", None)  # (Parquet's schema has no line)
        chunks = []
        with progress(size, name) as advance:
            for chunk in reader.chunks(reader.columns, [], wait=True):
                chunks.append(chunk)
                advance(chunk.consumed)
    warn(misread_warnings(reader))  # 1e-400 read as 0, 1e400 as inf
    if not chunks:
        raise InputError(f"{name} has no rows below its first line, so there is nothing to learn from",
                         source=Source(name, ""), hint="give at least one row of data")
    columns = {fed: np.concatenate([chunk.numbers[column] for chunk in chunks]) for fed, column in written.items()}
    lines = np.concatenate([chunk.lines for chunk in chunks])
    return DataSet(name, columns, lines, chunks[0].unit, plan)


def read_partitioned_rows(cluster: Any, data: str, data_format: str | None, program: Program,
                          values: dict[str, Any], notify: Callable[[str], None]) -> tuple[Partitions, DataSet]:
    """The files of ``data`` as partitions for ``cluster``, and the first one's column plan (from
    its first line) in a ``DataSet`` holding no rows."""
    import numpy as np

    from ..execute.columns import plan_columns
    from ..execute.training import DataSet, Partitions
    from .partitions import PartitionReader, partition_paths
    from .rows import opened, reader_for

    paths = partition_paths(data)
    with opened(paths[0], notify) as (stream, name, _size):
        reader = reader_for(stream, name, row_format(paths[0], data_format), sniffs(paths[0], data_format))
        column_plan = plan_columns(program, reader.columns, values, data_name=name, locate=reader.column_error)
        column_plan.header_line = getattr(reader, "header_line", None)
    partitions = Partitions(cluster, paths, PartitionReader(data_format))
    return partitions, DataSet(name, {}, np.empty(0), "line", column_plan)
