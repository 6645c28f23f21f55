"""Parquet rows in and out, a record batch at a time (an optional extra: pyarrow)."""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterator, Sequence
from typing import IO, Any

import numpy as np

from ...errors import InputError, Source
from .lines import CHUNK_LINES, Chunk, Overflows, Underflows, beyond_precision, beyond_precision_text

def _pyarrow(what: str) -> Any:
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise InputError(f"{what} Parquet needs pyarrow, which is not installed",
                         hint="pip install 'autodiff-cli[parquet]', or use CSV, TSV or JSON Lines") from None
    return pyarrow


class ParquetReader:
    """The rows of a Parquet file, a record batch at a time: no text to parse at all."""

    format = "parquet"

    def __init__(self, stream: IO[bytes], name: str) -> None:
        pa = _pyarrow("reading")
        self.name = name
        try:
            self.file = pa.parquet.ParquetFile(stream)
        except (pa.ArrowException, OSError) as error:
            raise InputError(f"cannot read {name} as Parquet: {error}",
                             hint="check the file, or give its format with --from") from None
        self.columns = list(self.file.schema_arrow.names)
        seen: set[str] = set()
        for column in self.columns:
            if column in seen:
                raise InputError(f"the column '{column}' appears twice in {name}", source=Source(name, ""),
                                 hint="rename or drop one of them")
            seen.add(column)
        self.rows = self.file.metadata.num_rows
        self.underflows = Underflows(name)  # none: Parquet holds floats, not text
        self.overflows = Overflows(name)
        self.size = max(1, stream.seek(0, os.SEEK_END))
        self.consumed = 0

    def column_error(self, name: str, message: str, hint: str) -> InputError:
        return InputError(message, source=Source(self.name, ""), hint=hint)

    def check_numeric(self, numeric: Sequence[str]) -> None:
        """An error for a ``numeric`` column whose type holds no numbers (a list, a struct), from the
        schema, before any row is read."""
        schema = self.file.schema_arrow
        for name in numeric:
            self._check_type(name, schema.field(name).type)

    def _check_type(self, name: str, kind: Any) -> None:
        pa = _pyarrow("reading")
        if pa.types.is_floating(kind) or pa.types.is_integer(kind) or pa.types.is_decimal(kind):
            return
        nested = pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind) \
            or pa.types.is_struct(kind)
        hint = (f"give a tensor input one numeric column per entry ({name}[0], {name}[1], ...; "
                f"{name}[0, 1] for a matrix), not a column of {'lists' if not pa.types.is_struct(kind) else 'structs'}"
                if nested else "give the program's inputs numeric columns (a missing value, null, fails its row)")
        raise InputError(f"the column '{name}' of {self.name} holds {kind} values, not numbers",
                         source=Source(self.name, ""), hint=hint)

    def chunks(self, numeric: Sequence[str], passed: Sequence[str], *, wait: bool,
               size: int = 0, dtype: Any = None) -> Iterator[Chunk]:
        """The rows a record batch at a time; ``dtype``: the precision they run in (float32), a number
        it cannot hold an error naming its row and column, after the rows before it."""
        pa = _pyarrow("reading")
        done = 0
        wanted = list(dict.fromkeys([*numeric, *passed]))
        for batch in self.file.iter_batches(batch_size=size or CHUNK_LINES, columns=wanted):
            numbers = {}
            for name in numeric:
                column = batch.column(name)
                self._check_type(name, column.type)
                # Not "safe": an integer past 2**53 is rounded to the nearest float, as the same
                # number read from CSV is, where the safe cast refuses it.
                numbers[name] = column.cast(pa.float64(), safe=False).to_numpy(zero_copy_only=False)
            kept = {name: batch.column(name).to_pylist() for name in passed}
            rows = np.arange(done + 1, done + batch.num_rows + 1)
            done += batch.num_rows
            self.consumed = self.size * done // max(1, self.rows)
            chunk = Chunk(numbers, kept, rows, self.consumed, unit="row")
            if dtype is not None:
                yield from self._refuse_beyond_precision(chunk, dtype)
            yield chunk

    def _refuse_beyond_precision(self, chunk: Chunk, dtype: Any) -> Iterator[Chunk]:
        """The rows before the chunk's first number ``dtype`` cannot hold, then an error naming it."""
        found = [(place[0], index, name) for index, (name, column) in enumerate(chunk.numbers.items())
                 if (place := beyond_precision(column.reshape(-1, 1), dtype)) is not None]
        if not found:
            return
        row, _, name = min(found)
        message, hint = beyond_precision_text(name, float(chunk.numbers[name][row]), dtype,
                                              f" in row {int(chunk.lines[row])}")
        if row:
            yield dataclasses.replace(chunk, numbers={key: column[:row] for key, column in chunk.numbers.items()},
                                      passed={key: cells[:row] for key, cells in chunk.passed.items()},
                                      lines=chunk.lines[:row])
        raise InputError(message, source=Source(self.name, ""), hint=hint)


class ParquetWriter:
    """Writes row chunks as Parquet row groups: float64 columns (float32 for the results of a
    float32 run), passed columns as Arrow infers them."""

    def __init__(self, stream: IO[bytes], names: list[str], passed: set[str]) -> None:
        self.pa = _pyarrow("writing")
        self.stream, self.names, self.passed = stream, names, passed
        self.writer: Any = None

    def header(self) -> None:
        """Nothing yet: the schema is known when the first rows are."""

    def write(self, columns: dict[str, Any], size: int) -> None:
        pa = self.pa
        arrays = []
        for name in self.names:
            if name in self.passed:
                try:
                    arrays.append(pa.array(columns[name]))
                except (pa.ArrowException, TypeError, ValueError):  # mixed JSON values: keep their text
                    arrays.append(pa.array([json.dumps(v, ensure_ascii=False) for v in columns[name]]))
            else:  # a float32 run's results stay float32 (its digits, half the bytes); the rest float64
                column = np.asarray(columns[name])
                kind = np.float32 if column.dtype == np.float32 else np.float64
                arrays.append(pa.array(np.broadcast_to(column.astype(kind, copy=False), (size,))))
        table = pa.Table.from_arrays(arrays, names=self.names)
        if self.writer is None:
            self.writer = pa.parquet.ParquetWriter(self.stream, table.schema)
        elif table.schema != self.writer.schema:
            table = table.cast(self.writer.schema)
        self.writer.write_table(table)

    def finish(self) -> None:
        if self.writer is None:  # no rows: an empty file with the columns
            self.write({name: [] if name in self.passed else np.empty(0) for name in self.names}, 0)
        self.writer.close()
