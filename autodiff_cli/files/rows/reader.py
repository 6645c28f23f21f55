"""Opening the rows, and reading them: the first line names the columns, then chunks follow."""

from __future__ import annotations

import csv
import os
import stat
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import IO, Any

from ...errors import InputError
from ..streams import waiting_notice
from .arrow_csv import ArrowBlocks, arrow_csv
from .delimited import SEPARATORS, DelimitedChunks, read_cells
from ...execute.columns import split_column
from .jsonl import JsonChunks, json_columns, parse_json_line
from .lines import (CHUNK_LINES, Chunk, Lines, Overflows, Underflows, cell_at, data_error, key_span, row_error,
                    rows_before, scan_cells)
from .parquet import ParquetReader

class RowReader:
    """The rows of one CSV, TSV or JSON Lines stream: ``columns`` from its first line, then chunks."""

    def __init__(self, stream: IO[bytes], name: str, fmt: str, sniff: bool = False) -> None:
        self.name = name
        self.format = fmt
        self.lines = Lines(stream, name)
        self.header_text = ""
        self.header_line = 1  # where the column names are (JSON Lines: the first object)
        self.underflows = Underflows(name)
        self.overflows = Overflows(name)
        self.columns = self._header(sniff)

    def _header(self, sniff: bool) -> list[str]:
        first = self.lines.take(1, wait=True)
        while first and not first[0].strip():  # blank lines are skipped, before the first row too
            first = self.lines.take(1, wait=True)
        if sniff and first and first[0].lstrip().startswith("{"):
            self.format = "jsonl"  # stdin, or a name with no known extension, holding JSON objects
        if not first:
            what = "a JSON object" if self.format == "jsonl" else "the column names"
            why = "every line is blank" if self.lines.taken else "the input is empty"
            raise data_error(self.name, max(1, self.lines.taken), f"there are no rows: {why}",
                             f"the first line that is not blank must hold {what}")
        self.header_text = first[0]
        line = self.header_line = self.lines.taken  # after any blank lines
        if self.format == "jsonl":
            self._first_object = parse_json_line(self.name, line, first[0])
            self._first_line = line
            return json_columns(self._first_object)
        separator = SEPARATORS[self.format]
        text = first[0].rstrip("\r")
        while (opened := scan_cells(text, separator).unclosed) is not None:  # a quoted name goes on to the next line
            more = self.lines.take(1, wait=True)
            if not more or len(text) > csv.field_size_limit():
                kind = "CSV" if separator == "," else "TSV"
                raise row_error(self.name, line, text, opened, 1, f"the first line is not valid {kind}: the quote "
                                 "here is never closed", 'close the quoted name ("..."), or remove the quote')
            text += "\n" + more[0].rstrip("\r")
        self.header_text = text
        names = [name.strip() for name in read_cells(self.name, line, text, separator, what="first line")]
        seen: dict[str, int] = {}
        for index, name in enumerate(names):
            if not name:
                raise row_error(self.name, line, text, *cell_at(text, separator, index),
                                 f"column {index + 1} has no name", "name every column in the first line")
            if name in seen:
                raise row_error(self.name, line, text, *cell_at(text, separator, index),
                                 f"the column '{name}' appears twice (columns {seen[name] + 1} and {index + 1})",
                                 "rename or drop one of them")
            seen[name] = index
        return names

    def column_error(self, name: str, message: str, hint: str) -> InputError:
        """An error about a column, pointing at its name in the first line."""
        if self.format == "jsonl":
            entry = split_column(name)
            key = entry[0] if entry is not None and name not in self._first_object else name
            column, width = key_span(self.header_text, key)
            return data_error(self.name, self.header_line, message, hint, self.header_text, column, width)
        offset, width = cell_at(self.header_text, SEPARATORS[self.format], self.columns.index(name))
        return row_error(self.name, self.header_line, self.header_text, offset, width, message, hint)


    def check_numeric(self, numeric: Sequence[str]) -> None:
        """The data errors the first line already shows for the ``numeric`` columns (JSON Lines: an
        array that is no tensor, a string), said at that line before anything is planned from it."""
        if self.format == "jsonl":
            JsonChunks(self.name, self.columns, numeric, [], first=self._first_object).check_first(
                self.header_text, self._first_line, self._first_object)

    @property
    def consumed(self) -> int:
        return self.lines.consumed

    def chunks(self, numeric: Sequence[str], passed: Sequence[str], *, wait: bool,
               size: int = CHUNK_LINES, dtype: Any = None) -> Iterator[Chunk]:
        """The rows, ``numeric`` columns as float64 arrays and ``passed`` ones as written.  ``dtype``:
        the precision the rows are run in (float32), a number it cannot hold being a bad cell."""
        if self.format != "jsonl":
            yield from self._delimited_chunks(numeric, passed, wait, size, dtype)
            return
        parse = JsonChunks(self.name, self.columns, numeric, passed, self.underflows, self.lines, self.overflows,
                           self._first_object, dtype)
        first = parse([self.header_text], self._first_line, [self._first_object])
        first.consumed = self.lines.consumed
        yield first
        while True:
            start = self.lines.taken + 1
            lines = self.lines.take(size, wait)
            if not lines:
                return
            try:
                chunk = parse(lines, start)
            except InputError as error:
                yield from rows_before(error, lines, start, lambda before: parse(before, start),
                                        self.lines.consumed)
                raise
            chunk.consumed = self.lines.consumed
            if chunk.size:
                yield chunk

    def _delimited_chunks(self, numeric: Sequence[str], passed: Sequence[str], wait: bool,
                          size: int, dtype: Any) -> Iterator[Chunk]:
        """CSV or TSV rows.  A quoted cell may hold line breaks, so a row may go on past the lines
        taken: the chunk ends before that row, whose lines are given back for the next one, or
        (when it is the chunk's only row) takes more lines until it ends.  Its cells are at most
        ``csv.field_size_limit()`` characters, so memory stays bounded by a quote never closed.
        With pyarrow, Arrow reads the blocks it reads as the ``csv`` module does (``arrow_csv``),
        and these lines go on from the first block it cannot."""
        parse = DelimitedChunks(self.name, SEPARATORS[self.format], self.columns, numeric, passed,
                                 self.underflows, self.lines, self.overflows, dtype)
        pa_csv = arrow_csv()
        if pa_csv is not None:  # then on from wherever Arrow stops (the end, or a block it cannot read)
            yield from ArrowBlocks(self.lines, parse, pa_csv).chunks(size, wait)
        limit = csv.field_size_limit()
        while True:
            start = self.lines.taken + 1
            lines = self.lines.take(size, wait)
            if not lines:
                return
            try:
                chunk, unfinished = parse(lines, start, self.lines.finished)
            except InputError as error:
                yield from rows_before(error, lines, start, lambda before: parse(before, start, True)[0],
                                        self.lines.consumed)
                raise
            held = sum(map(len, lines)) if unfinished == len(lines) else 0
            while unfinished == len(lines):  # no row ends in these lines: a quoted cell goes on past them
                more = self.lines.take(size, wait)
                lines += more
                held += sum(map(len, more))
                if more and held <= limit and not any('"' in line for line in more):
                    unfinished = len(lines)  # only a quote can end the cell
                    continue
                chunk, unfinished = parse(lines, start, self.lines.finished)
            if unfinished:
                self.lines.give_back(lines[-unfinished:])
            chunk.consumed = self.lines.consumed
            if chunk.size:
                yield chunk


def misread_warnings(reader: RowReader | ParquetReader) -> list[str]:
    """The warnings about cells read as a number other than the one written (0, inf)."""
    return [said for said in (reader.underflows.warning(), reader.overflows.warning()) if said]


def reader_for(stream: IO[bytes], name: str, fmt: str, sniff: bool = False) -> RowReader | ParquetReader:
    if fmt == "parquet":
        if name == "<stdin>":
            raise InputError("Parquet cannot be read from standard input (its index is at the end of the file)",
                             hint="name the Parquet file instead of piping it")
        return ParquetReader(stream, name)
    return RowReader(stream, name, fmt, sniff)


@contextmanager
def opened(rows: str | None, notify: Callable[[str], None]) -> Iterator[tuple[IO[bytes], str, int | None]]:
    """The rows' binary stream, its name, and its size when it is a regular file; ``notify`` is
    given the notice to show when they are read from a terminal."""
    if rows in (None, "-"):
        notice = waiting_notice("the rows", "them")
        if notice is not None:
            notify(notice)
        yield sys.stdin.buffer, "<stdin>", None
        return
    assert rows is not None
    if os.path.isdir(rows):
        raise InputError(f"cannot read {rows}: it is a directory", hint="name the rows file itself")
    try:
        stream = open(rows, "rb")
    except OSError as error:
        raise InputError(f"cannot read {rows}: {error.strerror or error}",
                         hint="check the path and its permissions") from None
    with stream:
        status = os.fstat(stream.fileno())
        yield stream, rows, status.st_size if stat.S_ISREG(status.st_mode) else None
