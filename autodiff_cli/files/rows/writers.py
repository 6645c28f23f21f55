"""Writing rows as CSV, TSV or JSON Lines (and choosing the writer, Parquet's included).

Writing.  Numbers are written with ``%r`` (the shortest text that reads back as the
same float, as everywhere else in the tool) or ``%.Ng``, a chunk at a time with one
``%`` over a row template, which is several times faster than formatting cell by
cell; JSON Lines write non-finite numbers as the strings "NaN", "Infinity" and
"-Infinity", as ``eval --format json`` does.  With pyarrow, CSV and TSV rows of numbers
only, written in full, are formatted by Arrow to the same text (``arrow_csv.delimited_bytes``).
A text cell holding a line break is quoted and written over several lines, which the reader
takes back; one holding a CR without an LF is refused in CSV and TSV, since the reader would
take it as a line end.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from typing import IO, Any

import numpy as np

from ...errors import OutputError
from ...render.numbers import json_number
from .arrow_csv import arrow_csv, delimited_bytes
from .delimited import SEPARATORS
from .lines import LONE_CR
from .parquet import ParquetWriter

@dataclass
class RowWriter:
    """Writes a header, then chunks of rows, in one format; ``number`` is the cell format."""

    stream: IO[bytes]
    fmt: str
    names: list[str]
    passed: set[str] = field(default_factory=set)  # columns written as they were read
    precision: int | None = None
    exact: set[str] = field(default_factory=set)  # number columns always written in full (the inputs)
    rows: int = field(default=0, init=False)  # rows written so far

    def __post_init__(self) -> None:
        number = "%r" if self.precision is None else f"%.{self.precision}g"
        self.formats = ["%s" if name in self.passed else "%r" if name in self.exact else number
                        for name in self.names]

    def header(self) -> None:
        if self.fmt == "jsonl":
            return
        for name in self.names:
            if LONE_CR.search(name):
                raise self._lone_cr(f"the column name {name[:40]!r}")
        buffer = io.StringIO()
        csv.writer(buffer, delimiter=SEPARATORS[self.fmt], lineterminator="\n").writerow(self.names)
        self.stream.write(buffer.getvalue().encode("utf-8"))

    def finish(self) -> None:
        """Nothing more to write: text has no footer."""

    def write(self, columns: dict[str, Any], size: int) -> None:
        """``columns``: name -> float64 array (or one number for every row) or a list of passed cells."""
        if not size:
            return
        columns = {name: _as_written(column, self.precision) for name, column in columns.items()}
        pa_csv = arrow_csv() if self.fmt != "jsonl" and not self.passed and self.precision is None else None
        if pa_csv is not None:  # every cell a number written with %r: Arrow formats them
            for text in delimited_bytes(columns, self.names, SEPARATORS[self.fmt], size, pa_csv):
                self.stream.write(text)
        elif self.fmt == "jsonl":
            self.stream.write(self._jsonl(columns, size).encode("utf-8"))
        else:
            self.stream.write(self._delimited(columns, size).encode("utf-8"))
        self.rows += size

    def _numbers(self, columns: dict[str, Any], size: int) -> tuple[list[float], bool]:
        """The number columns, row after row, as Python floats (what %r prints round-trip),
        and whether they are all finite."""
        block = np.empty((size, sum(name not in self.passed for name in self.names)))
        j = 0
        for name in self.names:
            if name not in self.passed:
                block[:, j] = columns[name]
                j += 1
        return block.ravel().tolist(), bool(np.isfinite(block).all())

    def _cells(self, columns: dict[str, Any], size: int, passed_cell: Any) -> tuple[tuple[Any, ...], bool]:
        numbers, finite = self._numbers(columns, size)
        if not self.passed:
            return tuple(numbers), finite
        per_row = [[passed_cell(v) for v in columns[name]] if name in self.passed else None for name in self.names]
        flat: list[Any] = []
        feed = iter(numbers)
        for row in range(size):
            for column in per_row:
                flat.append(next(feed) if column is None else column[row])
        return tuple(flat), finite

    def _delimited(self, columns: dict[str, Any], size: int) -> str:
        separator = SEPARATORS[self.fmt]
        template = separator.join(self.formats) + "\n"
        try:
            cells, _finite = self._cells(columns, size, lambda v: _quoted(v, separator))
        except _LoneCR:
            raise self._lone_cr(self._first_lone_cr(columns)) from None
        return (template * size) % cells

    def _first_lone_cr(self, columns: dict[str, Any]) -> str:
        """Which cell of these rows holds a lone carriage return, the first in the order written."""
        found = []
        for index, name in enumerate(self.names):
            if name in self.passed:
                cells = columns[name]
                row = next((row for row, v in enumerate(cells) if isinstance(v, str) and LONE_CR.search(v)), None)
                if row is not None:
                    found.append((row, index, name, cells[row]))
        row, _index, name, text = min(found)
        return f"the '{name}' cell of output row {self.rows + row + 1:,}, {text[:40]!r},"

    def _lone_cr(self, what: str) -> OutputError:
        """A carriage return not followed by a line feed cannot be written as CSV or TSV that reads
        back the same: the reader takes it as a line end (classic Mac files), inside quotes too."""
        kind = "CSV" if self.fmt == "csv" else "TSV"
        return OutputError(f"cannot write {what} as {kind}: it holds a carriage return without a line feed, "
                           "which would read back as a line end",
                           hint="write JSON Lines (--to jsonl) or Parquet (--to parquet), which keep it, or "
                                "remove it from the input",
                           notes=[(f"batch and fit read a lone carriage return in {kind} as a line end "
                                   "(classic Mac files), inside quotes too")])

    def _jsonl(self, columns: dict[str, Any], size: int) -> str:
        cells, finite = self._cells(columns, size, lambda v: json.dumps(v, ensure_ascii=False))
        formats = self.formats
        if not finite:  # JSON has no NaN or infinity: "NaN", "Infinity", "-Infinity" instead
            width = len(formats)
            cells = tuple(_json_cell(v, formats[i % width]) if type(v) is float else v for i, v in enumerate(cells))
            formats = ["%s"] * width
        template = "{" + ", ".join(f"{json.dumps(name, ensure_ascii=False)}: {cell}"
                                   for name, cell in zip(self.names, formats)) + "}\n"
        return (template * size) % cells


class _LoneCR(Exception):
    """A text cell holds a carriage return not followed by a line feed (see ``RowWriter._lone_cr``)."""


def _quoted(value: Any, separator: str) -> str:
    """A cell as CSV or TSV: quoted when it holds the separator, a quote or a line break, which
    stays inside the quotes (RFC 4180: the reader takes a quoted cell over several lines)."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if any(c in text for c in (separator, '"', "\n", "\r")):
        if "\r" in text and LONE_CR.search(text):
            raise _LoneCR
        return '"' + text.replace('"', '""') + '"'
    return text


def _json_cell(value: float, number: str) -> str:
    shown = json_number(value)
    return json.dumps(shown) if isinstance(shown, str) else number % value


def writer_for(stream: IO[bytes], fmt: str, names: list[str], passed: set[str], precision: int | None,
               exact: set[str]) -> RowWriter | ParquetWriter:
    if fmt == "parquet":
        return ParquetWriter(stream, names, passed)
    return RowWriter(stream, fmt, names, passed, precision, exact)


def _as_written(column: Any, precision: int | None = None) -> Any:
    """A float32 column (``batch --dtype float32``) as the float64 numbers of its shortest float32
    text, so that a cell shows the digits float32 holds (0.33, not 0.33000001311302185); with
    ``--precision`` digits asked for, as its exact values, whose digits those are (padding the
    shortest text out to 17 digits would show the decimal's, 0.33000000000000002).  Any other
    column as it is."""
    if getattr(column, "dtype", None) != np.float32:
        return column
    return column.astype(np.float64) if precision is not None else column.astype(str).astype(np.float64)
