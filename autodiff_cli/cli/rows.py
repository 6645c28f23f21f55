"""Rows in and out for ``autodiff batch``: CSV, TSV and JSON Lines, streamed in chunks.

Reading.  The bytes come in blocks (``os.read`` on the descriptor, so that ``select``
can tell when a pipe has nothing more for now), are decoded incrementally as UTF-8
and cut into complete lines.  ``RowReader.chunks`` hands out a chunk of lines at a
time: either a fixed number (``wait``: the chunks, and so any sums over them, are
the same however the bytes arrive) or as many as have arrived, so that output can
start while a slow producer is still writing.  The first line names the columns
(CSV, TSV) or the first object's keys do (JSON Lines).

CSV and TSV numbers are parsed by ``numpy.loadtxt`` a chunk at a time.  A chunk it
cannot take as it is (a blank line, a quoted or malformed cell, a column to pass
through as text) goes through the ``csv`` module row by row instead, which finds
the line, the column and the text of any bad cell.  Both accept the same numbers:
what ``float`` reads without digit-group underscores or non-ASCII digits, ``nan`` and
``inf`` included (a row holding one then fails, like a row where an op fails).  A number
a float cannot hold is read as ``float`` reads it, 0 (1e-400) or inf (1e400), and one
warning at the end counts such cells and places the first (``Underflows``, ``Overflows``).

A quoted CSV or TSV cell may hold line breaks (RFC 4180, as the ``csv`` module,
pandas and spreadsheets write them), so a row may go on past the lines of a chunk:
the chunk then ends before that row and gives its lines back to be read again with
the next lines (``_Lines.give_back``).  Line ends are still decided first, on the
text: a lone CR ends a line inside quotes too (classic Mac files).  Rows keep the
number of the line they start on.

Writing.  Numbers are written with ``%r`` (the shortest text that reads back as the
same float, as everywhere else in the tool) or ``%.Ng``, a chunk at a time with one
``%`` over a row template, which is several times faster than formatting cell by
cell; JSON Lines write non-finite numbers as the strings "NaN", "Infinity" and
"-Infinity", as ``eval --format json`` does.  A text cell holding a line break is
quoted and written over several lines, which the reader takes back; one holding a CR
without an LF is refused in CSV and TSV, since the reader would take it as a line end.
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import math
import os
import re
import stat
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import IO, Any

import numpy as np

from ..errors import InputError, OutputError, Position, Source
from ..render.numbers import json_number
from .common import (
    DuplicateKey,
    LineSource,
    _underflows,
    float_noting_underflows,
    not_utf8,
    object_without_duplicates,
    say_when_waiting_at_terminal,
)

__all__ = ["FORMATS", "Chunk", "ParquetReader", "ParquetWriter", "RowReader", "RowWriter", "format_for", "opened",
           "progress", "reader_for", "writer_for"]

FORMATS = ("csv", "tsv", "jsonl", "parquet")
EXTENSIONS = {".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".jsonl": "jsonl", ".ndjson": "jsonl",
              ".parquet": "parquet", ".pq": "parquet"}
SEPARATORS = {"csv": ",", "tsv": "\t"}

BLOCK_BYTES = 1 << 20
CHUNK_LINES = 16_384


def format_for(path: str | None, given: str | None) -> str:
    """The format: ``given`` (--from/--to), else the file's extension, else CSV."""
    if given:
        return given
    if path and path != "-":
        return EXTENSIONS.get(os.path.splitext(path)[1].lower(), "csv")
    return "csv"


def sniffs(path: str | None, given: str | None) -> bool:
    """Whether rows read from ``path`` are told apart by their first character (CSV, or JSON Lines
    when it is '{'): stdin and names whose extension says nothing, when --from is not given."""
    if given:
        return False
    return not path or path == "-" or os.path.splitext(path)[1].lower() not in EXTENSIONS


def data_error(name: str, line: int, message: str, hint: str, text: str | None = None,
               column: int = 1, width: int = 1) -> InputError:
    """An error in the rows: ``FILE:LINE:COLUMN: error: ...`` with the line and a caret under the cell."""
    source = LineSource(name, line, text.rstrip("\r\n")) if text is not None else Source(name, "")
    return InputError(message, Position(line, column, max(1, width)), source, hint)


@dataclass
class Chunk:
    """Some rows: the program inputs' columns as numbers, the columns passed through as they
    were written (text for CSV/TSV, JSON values for JSON Lines), and each row's line."""

    numbers: dict[str, np.ndarray]
    passed: dict[str, list[Any]]
    lines: np.ndarray
    consumed: int = 0  # bytes read so far, for progress
    unit: str = "line"  # what ``lines`` counts: lines of text, or rows of a Parquet file

    @property
    def size(self) -> int:
        return len(self.lines)


# --- lines from bytes ------------------------------------------------------------------------


_LONE_CR = re.compile(r"\r(?!\n)")
_LOADTXT_SPACE = re.compile(r"[\x1c-\x1f]")  # white space to loadtxt, not to the csv module's cells
_PARQUET_MAGIC = b"PAR1"  # the first four bytes of every Parquet file


class _Lines:
    """Complete lines of UTF-8 text from a binary stream, taken a chunk at a time."""

    def __init__(self, stream: IO[bytes], name: str) -> None:
        self.stream = stream
        self.name = name
        try:
            self.fd: int | None = stream.fileno()
        except (AttributeError, OSError, io.UnsupportedOperation):
            self.fd = None  # an in-memory stream (tests, embedding programs)
        self.decoder = codecs.getincrementaldecoder("utf-8-sig")()
        self.tail = ""
        self.pending: list[str] = []
        self.eof = False
        self.taken = 0  # lines handed out so far
        self.tiny = False  # whether a number too small for a float may have been read (1e-400)
        self.consumed = 0  # bytes read so far

    def _read(self) -> bytes:
        if self.fd is not None:
            return os.read(self.fd, BLOCK_BYTES)
        read1 = getattr(self.stream, "read1", None)
        return read1(BLOCK_BYTES) if read1 is not None else self.stream.read(BLOCK_BYTES)

    def _more_now(self) -> bool:
        """Whether a read would return at once (always true of files and unknown streams)."""
        if self.fd is None:
            return True
        import select

        try:
            return bool(select.select([self.fd], [], [], 0)[0])
        except (OSError, ValueError):  # no select on this kind of descriptor (Windows pipes)
            return True

    def _fill(self) -> None:
        data = self._read()
        self.consumed += len(data)
        try:
            text = self.decoder.decode(data, final=not data)
        except UnicodeDecodeError as error:
            raise self._not_utf8(error, not data) from None
        if not data:
            self.eof = True
            if self.tail:
                self.pending.append(self.tail)
                self.tail = ""
            return
        text = self.tail + text  # the tail too: a number may be cut between two blocks
        if not self.tiny and _may_underflow(text):
            self.tiny = True  # from here on, chunks look for numbers read as 0 that are not 0
        if "\r" in text:  # universal newlines: classic Mac's lone CR ends a line too
            held = text.endswith("\r")  # perhaps half of a CRLF: the next block says
            body = text[:-1] if held else text
            if _LONE_CR.search(body):  # not just CRLF, which the parsers take as it is
                text = body.replace("\r\n", "\n").replace("\r", "\n") + ("\r" if held else "")
        parts = text.split("\n")
        self.tail = parts.pop()
        self.pending.extend(parts)

    def _not_utf8(self, error: UnicodeDecodeError, at_end: bool) -> InputError:
        """The error for a byte that is not UTF-8, at its line and column, with the line shown."""
        # The tail is the text of the line so far; error.object the bytes the decoder was given
        # after it (with any it held back from the last block, and without a byte order mark).
        before = self.tail.encode("utf-8")
        data = before + error.object
        if not before and not self.taken and not self.pending and data.startswith(_PARQUET_MAGIC):
            return self._parquet_error()
        start = len(before) + error.start
        if not at_end and not re.search(rb"[\r\n]", data[start:]) and self._more_now():
            data += self._read()  # the rest of the line, to show it (whatever has come: no waiting)
        return not_utf8(data, start, self.name, "rows", self.taken + len(self.pending) + 1, cr_ends_lines=True)

    def _parquet_error(self) -> InputError:
        if self.name == "<stdin>":
            return InputError("the rows on standard input are Parquet, which cannot be read from there (its "
                              "index is at the end of the file)", hint="name the Parquet file as ROWS instead")
        return InputError(f"{self.name} holds Parquet, not text rows", source=Source(self.name, ""),
                          hint="name it .parquet, or give --from parquet")

    @property
    def finished(self) -> bool:
        """Whether every line has been taken."""
        return self.eof and not self.pending

    def give_back(self, lines: list[str]) -> None:
        """The last ``lines`` taken, not used yet: the next ``take`` hands them out again."""
        self.pending[:0] = lines
        self.taken -= len(lines)

    def take(self, count: int, wait: bool) -> list[str]:
        """Up to ``count`` lines; fewer at the end, or (``wait`` False) when no more have come yet."""
        while len(self.pending) < count and not self.eof:
            if not wait and self.pending and not self._more_now():
                break
            self._fill()
        lines = self.pending[:count]
        del self.pending[:count]
        self.taken += len(lines)
        return lines


# --- reading ---------------------------------------------------------------------------------


class RowReader:
    """The rows of one CSV, TSV or JSON Lines stream: ``columns`` from its first line, then chunks."""

    def __init__(self, stream: IO[bytes], name: str, fmt: str, sniff: bool = False) -> None:
        self.name = name
        self.format = fmt
        self.lines = _Lines(stream, name)
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
            self._first_object = _parse_json_line(self.name, line, first[0])
            self._first_line = line
            return list(self._first_object)
        separator = SEPARATORS[self.format]
        text = first[0].rstrip("\r")
        while (opened := _scan_cells(text, separator).unclosed) is not None:  # a quoted name goes on to the next line
            more = self.lines.take(1, wait=True)
            if not more or len(text) > csv.field_size_limit():
                kind = "CSV" if separator == "," else "TSV"
                raise _row_error(self.name, line, text, opened, 1, f"the first line is not valid {kind}: the quote "
                                 "here is never closed", 'close the quoted name ("..."), or remove the quote')
            text += "\n" + more[0].rstrip("\r")
        self.header_text = text
        names = [name.strip() for name in next(csv.reader([text + "\n"], delimiter=separator))]
        seen: dict[str, int] = {}
        for index, name in enumerate(names):
            if not name:
                raise _row_error(self.name, line, text, *_cell_at(text, separator, index),
                                 f"column {index + 1} has no name", "name every column in the first line")
            if name in seen:
                raise _row_error(self.name, line, text, *_cell_at(text, separator, index),
                                 f"the column '{name}' appears twice (columns {seen[name] + 1} and {index + 1})",
                                 "rename or drop one of them")
            seen[name] = index
        return names

    def column_error(self, name: str, message: str, hint: str) -> InputError:
        """An error about a column, pointing at its name in the first line."""
        if self.format == "jsonl":
            column, width = _key_span(self.header_text, name)
            return data_error(self.name, self.header_line, message, hint, self.header_text, column, width)
        offset, width = _cell_at(self.header_text, SEPARATORS[self.format], self.columns.index(name))
        return _row_error(self.name, self.header_line, self.header_text, offset, width, message, hint)


    @property
    def consumed(self) -> int:
        return self.lines.consumed

    def chunks(self, numeric: Sequence[str], passed: Sequence[str], *, wait: bool,
               size: int = CHUNK_LINES) -> Iterator[Chunk]:
        """The rows, ``numeric`` columns as float64 arrays and ``passed`` ones as written."""
        if self.format != "jsonl":
            yield from self._delimited_chunks(numeric, passed, wait, size)
            return
        parse = _JsonChunks(self.name, self.columns, numeric, passed, self.underflows, self.lines, self.overflows)
        first = parse([self.header_text], self._first_line, [self._first_object])
        first.consumed = self.lines.consumed
        yield first
        while True:
            start = self.lines.taken + 1
            lines = self.lines.take(size, wait)
            if not lines:
                return
            chunk = parse(lines, start)
            chunk.consumed = self.lines.consumed
            if chunk.size:
                yield chunk

    def _delimited_chunks(self, numeric: Sequence[str], passed: Sequence[str], wait: bool,
                          size: int) -> Iterator[Chunk]:
        """CSV or TSV rows.  A quoted cell may hold line breaks, so a row may go on past the lines
        taken: the chunk ends before that row, whose lines are given back for the next one, or
        (when it is the chunk's only row) takes more lines until it ends.  Its cells are at most
        ``csv.field_size_limit()`` characters, so memory stays bounded by a quote never closed."""
        parse = _DelimitedChunks(self.name, SEPARATORS[self.format], self.columns, numeric, passed,
                                 self.underflows, self.lines, self.overflows)
        limit = csv.field_size_limit()
        while True:
            start = self.lines.taken + 1
            lines = self.lines.take(size, wait)
            if not lines:
                return
            chunk, unfinished = parse(lines, start, self.lines.finished)
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


@dataclass
class _Cells:
    """Where the cells of a CSV or TSV row are in its text (its lines joined by '\\n'): ``spans``,
    each cell's start and end offset; ``unclosed``, the offset of a quote never closed; ``stray``,
    that of the first character after a closing quote that is not the separator."""

    spans: list[tuple[int, int]]
    unclosed: int | None = None
    stray: int | None = None


def _scan_cells(text: str, separator: str) -> _Cells:
    """The cells of ``text`` as the csv module reads them: a quote opens a quoted cell only as
    the cell's first character, and '""' inside one stands for a quote."""
    spans: list[tuple[int, int]] = []
    at, size = 0, len(text)
    while True:
        start = at
        if text.startswith('"', at):
            close = at
            while True:
                close = text.find('"', close + 1)
                if close < 0:
                    spans.append((start, size))
                    return _Cells(spans, unclosed=start)
                if not text.startswith('"', close + 1):
                    break
                close += 1  # '""': a quote inside the cell
            at = close + 1
            if at < size and not text.startswith(separator, at):
                stop = text.find(separator, at)
                spans.append((start, size if stop < 0 else stop))
                return _Cells(spans, stray=at)
        stop = text.find(separator, at)
        if stop < 0:
            spans.append((start, size))
            return _Cells(spans)
        spans.append((start, stop))
        at = stop + 1


def _cell_at(text: str, separator: str, index: int) -> tuple[int, int]:
    """Offset and width of cell ``index`` of a row's text (the row's end if it has fewer cells)."""
    spans = _scan_cells(text, separator).spans
    if index >= len(spans):
        return len(text), 1
    start, end = spans[index]
    return start, end - start


def _row_error(name: str, first_line: int, text: str, offset: int, width: int, message: str,
               hint: str) -> InputError:
    """``data_error`` at ``offset`` of a row's text, whose lines (joined by '\\n') start at ``first_line``:
    the line and column of that offset, and that line shown."""
    begin = text.rfind("\n", 0, offset) + 1
    end = text.find("\n", offset)
    shown = text[begin:] if end < 0 else text[begin:end]
    column = offset - begin + 1
    return data_error(name, first_line + text.count("\n", 0, offset), message, hint, shown, column,
                      max(1, min(width, len(shown) - column + 1)))


def _key_span(line: str, key: str) -> tuple[int, int]:
    spelled = json.dumps(key, ensure_ascii=False)
    found = line.find(spelled)
    return (found + 1, len(spelled)) if found >= 0 else (1, 1)


class _MisreadCells:
    """Cells whose number a float cannot hold, so read as another: counted, and the first placed,
    for one warning at the end.  ``happened`` says what became of such a cell, and ``then`` what
    follows from that, said in the warning only."""

    happened = ""
    then = ""

    def __init__(self, name: str) -> None:
        self.name = name
        self.count = 0
        self.first = ""
        self.first_line = 0

    def add(self, line: int, column: int, text: str) -> None:
        if not self.count:
            # The whole text: a number cut short could be one a float holds; warn() shortens it.
            self.first = f"{self.name}:{line}:{column}: {text}"
            self.first_line = line
        self.count += 1

    def first_said(self) -> str:
        """'rows.csv:2:1: 1e400 is too large for a float, so read as inf', of the first cell."""
        return f"{self.first} {self.happened}"

    def warning(self) -> str | None:
        """``first_said`` and ``then``, and how many such cells there were."""
        if not self.count:
            return None
        more = f" ({self.count:,} such cells in all)" if self.count > 1 else ""
        return f"{self.first_said()}{self.then}{more}"


class Underflows(_MisreadCells):
    """Cells whose number is too small for a float, read as 0 (1e-400).  Only cells that read as 0
    are looked at, and only on lines that have an exponent or are long enough to hold 324 zeros."""

    happened = "is smaller than the smallest float (about 5e-324), so taken as 0"


class Overflows(_MisreadCells):
    """Cells whose number is too large for a float, read as inf (1e400); an input must be finite,
    so its row fails.  Only cells that read as inf are looked at; ``inf`` written is not one."""

    happened = "is too large for a float, so read as inf"
    then = ", and its row fails"


def misread_warnings(reader: RowReader | ParquetReader) -> list[str]:
    """The warnings about cells read as a number other than the one written (0, inf)."""
    return [said for said in (reader.underflows.warning(), reader.overflows.warning()) if said]


def _written_finite(cell: str) -> bool:
    """Whether a cell that reads as inf is written as a number (1e400), not as inf or infinity."""
    return "inf" not in cell.lower()


# A number too small for a float has an exponent of -100 or below, or is written with 300 zeros.
# Each pattern starts with a literal, which the regex engine looks for as a plain substring.
_TINY = (re.compile(r"e-0*[1-9][0-9]{2}"), re.compile(r"E-0*[1-9][0-9]{2}"))
_ZEROS = "0" * 300


def _may_underflow(texts: Sequence[str] | str) -> bool:
    """Whether ``texts`` could hold a number that reads as 0 but is not written as 0."""
    joined = texts if isinstance(texts, str) else "\n".join(texts)
    return any(pattern.search(joined) for pattern in _TINY) or _ZEROS in joined


# A number written in full that reads as inf has an exponent of 100 or more, or 200 digits in a row.
_HUGE = (re.compile(r"e\+?0*[1-9][0-9]{2}"), re.compile(r"E\+?0*[1-9][0-9]{2}"), re.compile(r"[0-9]{200}"))


def _may_overflow(texts: Sequence[str]) -> bool:
    """Whether ``texts`` could hold a number written in full that reads as inf (1e400), so that
    rows whose infinities are all written ``inf`` are not looked at one by one."""
    joined = "\n".join(texts)
    return any(pattern.search(joined) for pattern in _HUGE)


def _csv_problem(error: csv.Error) -> str:
    """The csv module's message without its advice about universal-newline mode (we read that way)."""
    return str(error).split(" - do you need", 1)[0]


_NUMBER_HINT = "write numbers such as 2, -0.5 or 1e-3 (nan marks a value to fail the row on)"


def _strict_float(text: str) -> float:
    """``float`` without what ``numpy.loadtxt`` refuses: digit-group underscores, non-ASCII digits."""
    if "_" in text or not text.isascii():
        raise ValueError(text)
    return float(text)


class _DelimitedChunks:
    """CSV or TSV lines to a Chunk: ``numpy.loadtxt`` when it can, the ``csv`` module when not."""

    def __init__(self, name: str, separator: str, columns: Sequence[str], numeric: Sequence[str],
                 passed: Sequence[str], underflows: Underflows | None = None, source: Any = None,
                 overflows: Overflows | None = None) -> None:
        self.name, self.separator, self.columns = name, separator, list(columns)
        self.underflows = underflows or Underflows(name)
        self.overflows = overflows or Overflows(name)
        self.source = source  # the _Lines, whose ``tiny`` says whether to look for underflows at all
        self.numeric = list(numeric)
        self.numeric_index = [self.columns.index(n) for n in numeric]
        self.passed = list(passed)
        self.passed_index = [self.columns.index(n) for n in passed]
        # loadtxt checks that every line has as many cells as the first only when it reads
        # every column; the csv module is needed anyway for text to pass through.
        self.all_numeric = not passed and len(numeric) == len(columns)
        sep = re.escape(separator)  # a cell quoted from its start to its end, the only quotes loadtxt reads right
        self.whole_quoted_cells = re.compile(f'(?:^|(?<={sep}))"[^"\n]*"(?={sep}|$)', re.MULTILINE)

    def __call__(self, lines: list[str], first_line: int, final: bool = True) -> tuple[Chunk, int]:
        """The rows of ``lines`` (the first is line ``first_line``), and how many of the last lines
        hold a row that goes on past them (none when ``final``: there are no more lines)."""
        # loadtxt joins a quoted cell's lines with nothing between them, so a row over several
        # lines leaves it fewer rows than lines; and it takes a quote left open on the last line
        # to that line's end.
        if (self.all_numeric and "" not in lines and "\r" not in lines and not lines[-1].count('"') & 1
                and self._loadtxt_reads_as_csv("\n".join(lines))):
            try:
                table = np.loadtxt(lines, delimiter=self.separator, comments=None, quotechar='"', ndmin=2,
                                   dtype=np.float64)
            except ValueError:
                table = None
            if table is not None and table.shape == (len(lines), len(self.columns)):
                self._look_for_misread(table, range(len(self.columns)), lines,
                                       range(first_line, first_line + len(lines)))
                numbers = {name: np.ascontiguousarray(table[:, j]) for j, name in enumerate(self.columns)}
                return Chunk(numbers, {}, np.arange(first_line, first_line + len(lines))), 0
        return self._slow(lines, first_line, final)

    def _loadtxt_reads_as_csv(self, text: str) -> bool:
        """Whether loadtxt would read ``text`` as the csv module does.  It is laxer in two ways: it
        takes a cell such as ``"1"2`` as 12, and it takes the characters \\x1c-\\x1f and non-ASCII
        spaces around a number as white space (``float`` takes the non-ASCII ones too)."""
        if not text.isascii() or _LOADTXT_SPACE.search(text):
            return False
        if '"' not in text:
            return True
        return '"' not in self.whole_quoted_cells.sub("", text)

    def _look_for_misread(self, table: np.ndarray, indices: Sequence[int], texts: list[str],
                          line_numbers: Sequence[int]) -> None:
        """Count the cells read as a number other than the one written: 0 for 1e-400, inf for 1e400.
        ``table``: a row per text (each row's lines joined by '\\n', the first being
        ``line_numbers``'), a column per cell index of ``indices``.  Only cells that read as 0 or
        inf are looked at: when there are none, this is two passes over the numbers."""
        # _may_underflow: one search of the chunk's text, nearly always the end of it.
        if (self.source is None or self.source.tiny) and (table == 0).any() and _may_underflow(texts):
            self._place(table == 0, indices, texts, line_numbers, lambda cell: _underflows(cell, 0.0),
                        self.underflows)
        infinite = np.isinf(table)
        if infinite.any() and _may_overflow(texts):
            self._place(infinite, indices, texts, line_numbers, _written_finite, self.overflows)

    def _place(self, suspect: np.ndarray, indices: Sequence[int], texts: list[str], line_numbers: Sequence[int],
               misread: Callable[[str], bool], found: _MisreadCells) -> None:
        """Add to ``found`` each cell ``suspect`` marks whose text is ``misread``, at its line and column."""
        for row in np.flatnonzero(suspect.any(axis=1)).tolist():
            text = texts[row].rstrip("\r")
            cells = next(csv.reader([text + "\n"], delimiter=self.separator))
            spans = _scan_cells(text, self.separator).spans
            for j in np.flatnonzero(suspect[row]).tolist():
                column = indices[j]
                cell = cells[column].strip()
                if misread(cell):
                    offset = spans[column][0]
                    line = line_numbers[row] + text.count("\n", 0, offset)
                    found.add(line, offset - text.rfind("\n", 0, offset), cell)

    def _slow(self, lines: list[str], first_line: int, final: bool) -> tuple[Chunk, int]:
        """The rows one by one with the csv module, which finds the line, the column and the text of
        any bad cell; a quoted cell may go on over several lines."""
        values: list[float] = []
        passed: list[list[str]] = [[] for _ in self.passed]
        numbers_of_lines: list[int] = []
        texts: list[str] = []
        count = len(self.columns)
        records = csv.reader([line + "\n" for line in lines], delimiter=self.separator, strict=True)
        done = 0  # the lines read into whole rows
        unfinished = 0
        while True:
            try:
                cells = next(records)
            except StopIteration:
                break
            except csv.Error as error:
                end = records.line_num
                text = "\n".join(lines[done:end]).rstrip("\r")
                found = _scan_cells(text, self.separator)
                if found.unclosed is not None and end == len(lines) and not final:
                    unfinished = len(lines) - done  # the row goes on past these lines
                    break
                raise self._not_valid(error, first_line + done, text, found) from None
            line, end = first_line + done, records.line_num
            if end == done + 1:
                text = lines[done]
                done = end
                if not text.strip():
                    continue  # a blank line holds no row
                text = text.rstrip("\r")
                what = "this line has"
            else:
                text = "\n".join(lines[done:end]).rstrip("\r")
                what = f"this row (lines {line}-{first_line + end - 1}) has"
                done = end
            if len(cells) != count:
                raise _row_error(self.name, line, text, len(text), 1, f"{what} {len(cells)} "
                                 f"cell{'s' * (len(cells) != 1)}, but the first line names {count} "
                                 f"column{'s' * (count != 1)}", "give every row one cell per column")
            for j, name in zip(self.numeric_index, self.numeric):
                cell = cells[j]
                try:
                    values.append(_strict_float(cell))
                except ValueError:
                    found_text = "is empty" if not cell.strip() else f"holds {cell[:40]!r}, not a number"
                    raise _row_error(self.name, line, text, *_cell_at(text, self.separator, j),
                                     f"the column '{name}' {found_text}", _NUMBER_HINT) from None
            for target, j in zip(passed, self.passed_index):
                target.append(cells[j])
            numbers_of_lines.append(line)
            texts.append(text)
        table = np.array(values, dtype=np.float64).reshape(len(numbers_of_lines), len(self.numeric))
        if table.size:
            self._look_for_misread(table, self.numeric_index, texts, numbers_of_lines)
        numbers = {name: np.ascontiguousarray(table[:, j]) for j, name in enumerate(self.numeric)}
        chunk = Chunk(numbers, dict(zip(self.passed, passed)), np.array(numbers_of_lines, dtype=np.int64))
        return chunk, unfinished

    def _not_valid(self, error: csv.Error, first_line: int, text: str, found: _Cells) -> InputError:
        """The csv module's error about a row, at the quote or character it is about."""
        kind = "CSV" if self.separator == "," else "TSV"
        problem = _csv_problem(error)
        limit = csv.field_size_limit()
        if problem.startswith("field larger than field limit"):
            if found.unclosed is not None:
                return _row_error(self.name, first_line, text, found.unclosed, 1, f"this line is not valid {kind}: "
                                  f"the quote here is not closed within {limit:,} characters",
                                  f'close the quoted cell ("..."), or remove the quote (a cell holds at most '
                                  f'{limit:,} characters)')
            start = next((start for start, end in found.spans if end - start > limit), 0)
            return _row_error(self.name, first_line, text, start, 1, f"this cell is longer than {limit:,} "
                              "characters, the most a cell may hold", "split the text, or leave the column out")
        if found.unclosed is not None:
            return _row_error(self.name, first_line, text, found.unclosed, 1, f"this line is not valid {kind}: "
                              "the quote here is never closed", 'close the quoted cell ("..."), or remove the quote')
        if found.stray is not None:
            error = _row_error(self.name, first_line, text, found.stray, 1, f"this line is not valid {kind}: "
                               f"{problem}", 'quote a cell as a whole ("..."), with any quote in it doubled ("")')
            opened = found.spans[-1][0]
            if "\n" in text[opened:found.stray]:  # the quote that opened the cell may be the mistake
                begin = text.rfind("\n", 0, opened) + 1
                error.notes.append(f"the quoted cell this quote closes opened on line "
                                   f"{first_line + text.count(chr(10), 0, opened)}, column {opened - begin + 1}")
            return error
        return _row_error(self.name, first_line, text, 0, 1, f"this line is not valid {kind}: {problem}",
                          'quote a cell as a whole ("..."), with any quote in it doubled ("")')


def _parse_json_line(name: str, line: int, text: str) -> dict[str, Any]:
    try:
        document = _json_object(text)
    except DuplicateKey as duplicate:
        raise data_error(name, line, f"the key {duplicate.key!r} appears twice in this object", "give each key "
                         "once", text, *_key_span(text, duplicate.key)) from None
    except json.JSONDecodeError as error:
        raise data_error(name, line, f"not valid JSON: {error.msg}", "write one JSON object per line, "
                         'e.g. {"x": 1.5, "y": -2}', text, error.colno) from None
    except RecursionError:
        raise data_error(name, line, "not valid JSON here: nested too deeply", "write one flat JSON object "
                         "per line", text) from None
    if not isinstance(document, dict):
        kind = {list: "an array", str: "a string", bool: "a boolean", int: "a number", float: "a number"}.get(
            type(document), "null")
        raise data_error(name, line, f"expected a JSON object, got {kind}", 'write one JSON object per line, '
                         'e.g. {"x": 1.5, "y": -2}', text)
    return document


def _json_object(text: str) -> Any:
    """``json.loads``, refusing a key given twice; an integer longer than ``int`` takes (4,300
    digits: ``sys.get_int_max_str_digits``) is read as ``float`` reads it, as inf."""
    try:
        return json.loads(text, object_pairs_hook=object_without_duplicates)
    except json.JSONDecodeError:
        raise
    except ValueError:  # an integer too long for int(): json's only ValueError that is not a JSONDecodeError
        return json.loads(text, object_pairs_hook=object_without_duplicates, parse_int=_integer)


def _integer(literal: str) -> int | float:
    """A JSON integer as ``int``, or as ``float`` (inf) when it is too long for ``int``."""
    try:
        return int(literal)
    except ValueError:
        return float(literal)


def _as_float(number: float) -> float:
    """``float``, but an integer beyond the float range is inf (float() raises), as its text reads."""
    try:
        return float(number)
    except OverflowError:
        return math.inf if number > 0 else -math.inf


_NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


class _JsonChunks:
    """JSON Lines to a Chunk: one ``json.loads`` over the whole chunk, line by line when it fails."""

    def __init__(self, name: str, columns: Sequence[str], numeric: Sequence[str], passed: Sequence[str],
                 underflows: Underflows | None = None, source: Any = None,
                 overflows: Overflows | None = None) -> None:
        self.name, self.columns, self.numeric, self.passed = name, list(columns), list(numeric), list(passed)
        self.keys = set(columns)
        self.underflows = underflows or Underflows(name)
        self.overflows = overflows or Overflows(name)
        self.source = source  # the _Lines, whose ``tiny`` says whether to look for underflows at all

    def __call__(self, lines: list[str], first_line: int, documents: list[dict[str, Any]] | None = None) -> Chunk:
        line_numbers = [first_line + offset for offset, text in enumerate(lines) if text.strip()]
        texts = [lines[n - first_line] for n in line_numbers]
        if documents is None:
            documents = self._parse(texts, line_numbers)
        keys = self.keys
        for document, line, text in zip(documents, line_numbers, texts):
            if document.keys() != keys:
                self._keys_error(document, line, text)
        numbers = {}
        for name in self.numeric:
            cells = [document[name] for document in documents]
            if not set(map(type, cells)) <= {float, int}:
                # "NaN", "Infinity" and "-Infinity" are how JSON output writes non-finite numbers
                # (batch's own and eval's), so they read back as the numbers they stand for.
                cells = [_NON_FINITE.get(cell, cell) if type(cell) is str else cell for cell in cells]
                if not set(map(type, cells)) <= {float, int}:
                    self._cell_error(name, cells, line_numbers, texts)
            try:
                numbers[name] = np.array(cells, dtype=np.float64)
            except OverflowError:  # an integer beyond the float range
                numbers[name] = np.array([_as_float(cell) for cell in cells], dtype=np.float64)
        if ((self.source is None or self.source.tiny) and any((column == 0).any() for column in numbers.values())
                and _may_underflow(texts)):
            self._look_for_underflows(numbers, line_numbers, texts)
        if any(np.isinf(column).any() for column in numbers.values()) and _may_overflow(texts):
            self._look_for_overflows(numbers, line_numbers, texts)
        passed = {name: [document[name] for document in documents] for name in self.passed}
        return Chunk(numbers, passed, np.array(line_numbers, dtype=np.int64))

    def _look_for_underflows(self, numbers: dict[str, np.ndarray], line_numbers: list[int],
                             texts: list[str]) -> None:
        zero = np.zeros(len(texts), dtype=bool)
        for column in numbers.values():
            zero |= column == 0
        rows = np.flatnonzero(zero).tolist()
        for row in rows:
            found: list[str] = []
            json.loads(texts[row], parse_float=float_noting_underflows(found))
            for literal in found:
                self.underflows.add(line_numbers[row], texts[row].find(literal) + 1, literal)

    def _look_for_overflows(self, numbers: dict[str, np.ndarray], line_numbers: list[int],
                            texts: list[str]) -> None:
        """Count the numbers written in full that read as inf (1e400), not the "Infinity" written."""
        infinite = np.zeros(len(texts), dtype=bool)
        for column in numbers.values():
            infinite |= np.isinf(column)
        for row in np.flatnonzero(infinite).tolist():
            text = texts[row]
            written = json.loads(text, parse_float=str, parse_int=str)  # each number as its text
            for name in numbers:
                literal = written[name]
                # A str here is a number's text, or one of the strings that stand for NaN and the
                # infinities; the constant Infinity reads as a float.
                if type(literal) is str and literal not in _NON_FINITE and math.isinf(float(literal)):
                    key, width = _key_span(text, name)
                    self.overflows.add(line_numbers[row], text.find(literal, key - 1 + width) + 1, literal)

    def _parse(self, texts: list[str], line_numbers: list[int]) -> list[dict[str, Any]]:
        try:
            documents = json.loads("[" + ",".join(texts) + "]", object_pairs_hook=object_without_duplicates)
            if len(documents) == len(texts) and all(type(d) is dict for d in documents):
                return documents
        except (ValueError, DuplicateKey, RecursionError):
            pass
        return [_parse_json_line(self.name, line, text) for line, text in zip(line_numbers, texts)]

    def _keys_error(self, document: dict[str, Any], line: int, text: str) -> None:
        missing = [key for key in self.columns if key not in document]
        if missing:
            raise data_error(self.name, line, f"this object has no {missing[0]!r}", "give every line the keys of "
                             f"the first: {', '.join(self.columns[:10])}", text)
        extra = next(key for key in document if key not in self.keys)
        raise data_error(self.name, line, f"this object has {extra!r}, which the first line does not",
                         f"give every line the keys of the first: {', '.join(self.columns[:10])}", text,
                         *_key_span(text, extra))

    def _cell_error(self, name: str, cells: list[Any], line_numbers: list[int], texts: list[str]) -> None:
        for cell, line, text in zip(cells, line_numbers, texts):
            if type(cell) not in (float, int):
                found = json.dumps(cell)
                raise data_error(self.name, line, f"the key {name!r} holds {found[:40]}, not a number",
                                 "give numbers, e.g. 1.5 or -2 (NaN marks a value to fail the row on)", text,
                                 *_key_span(text, name))


# --- writing ---------------------------------------------------------------------------------


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
            if _LONE_CR.search(name):
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
        if self.fmt == "jsonl":
            text = self._jsonl(columns, size)
        else:
            text = self._delimited(columns, size)
        self.stream.write(text.encode("utf-8"))
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
                row = next((row for row, v in enumerate(cells) if isinstance(v, str) and _LONE_CR.search(v)), None)
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
        if "\r" in text and _LONE_CR.search(text):
            raise _LoneCR
        return '"' + text.replace('"', '""') + '"'
    return text


def _json_cell(value: float, number: str) -> str:
    shown = json_number(value)
    return json.dumps(shown) if isinstance(shown, str) else number % value


# --- Parquet (an optional extra: pyarrow) ---------------------------------------------------


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

    def chunks(self, numeric: Sequence[str], passed: Sequence[str], *, wait: bool,
               size: int = 0) -> Iterator[Chunk]:
        pa = _pyarrow("reading")
        done = 0
        wanted = list(dict.fromkeys([*numeric, *passed]))
        for batch in self.file.iter_batches(batch_size=size or CHUNK_LINES, columns=wanted):
            numbers = {}
            for name in numeric:
                column = batch.column(name)
                kind = column.type
                if not (pa.types.is_floating(kind) or pa.types.is_integer(kind) or pa.types.is_decimal(kind)):
                    raise InputError(f"the column '{name}' of {self.name} holds {kind} values, not numbers",
                                     source=Source(self.name, ""), hint="give the program's inputs numeric "
                                     "columns (a missing value, null, fails its row)")
                # Not "safe": an integer past 2**53 is rounded to the nearest float, as the same
                # number read from CSV is, where the safe cast refuses it.
                numbers[name] = column.cast(pa.float64(), safe=False).to_numpy(zero_copy_only=False)
            kept = {name: batch.column(name).to_pylist() for name in passed}
            rows = np.arange(done + 1, done + batch.num_rows + 1)
            done += batch.num_rows
            self.consumed = self.size * done // max(1, self.rows)
            yield Chunk(numbers, kept, rows, self.consumed, unit="row")


class ParquetWriter:
    """Writes row chunks as Parquet row groups: float64 columns, passed columns as Arrow infers them."""

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
            else:
                arrays.append(pa.array(np.broadcast_to(np.asarray(columns[name], dtype=np.float64), (size,))))
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


def reader_for(stream: IO[bytes], name: str, fmt: str, sniff: bool = False) -> RowReader | ParquetReader:
    if fmt == "parquet":
        if name == "<stdin>":
            raise InputError("Parquet cannot be read from standard input (its index is at the end of the file)",
                             hint="name the Parquet file instead of piping it")
        return ParquetReader(stream, name)
    return RowReader(stream, name, fmt, sniff)


def writer_for(stream: IO[bytes], fmt: str, names: list[str], passed: set[str], precision: int | None,
               exact: set[str]) -> RowWriter | ParquetWriter:
    if fmt == "parquet":
        return ParquetWriter(stream, names, passed)
    return RowWriter(stream, fmt, names, passed, precision, exact)


# --- opening the rows, and progress through them ------------------------------------------


@contextmanager
def opened(rows: str | None) -> Iterator[tuple[IO[bytes], str, int | None]]:
    """The rows' binary stream, its name, and its size when it is a regular file."""
    if rows in (None, "-"):
        say_when_waiting_at_terminal("the rows", "them")
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


@contextmanager
def progress(size: int | None, quiet: bool, name: str) -> Iterator[Callable[[int], None]]:
    """``output.Progress`` over the bytes of the rows file: at a terminal, for a file of known
    size, after the first second; never with --quiet."""
    if quiet or not size:
        yield lambda consumed: None
        return
    from .output import Progress

    with Progress(f"reading {os.path.basename(name)}", in_bytes=True) as bar:
        yield lambda consumed: bar(min(consumed, size), size)
