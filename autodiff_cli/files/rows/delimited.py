"""CSV and TSV lines to chunks of rows.

CSV and TSV numbers are parsed by ``numpy.loadtxt`` a chunk at a time.  A chunk it
cannot take as it is (a blank line, a quoted or malformed cell, a column to pass
through as text) goes through the ``csv`` module row by row instead, which finds
the line, the column and the text of any bad cell.  Both accept the same numbers:
what ``float`` reads without digit-group underscores or non-ASCII digits, ``nan`` and
``inf`` included (a row holding one then fails, like a row where an op fails).  A number
a float cannot hold is read as ``float`` reads it, 0 (1e-400) or inf (1e400), and one
warning at the end counts such cells and places the first (``Underflows``, ``Overflows``).
"""

from __future__ import annotations

import csv
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ...errors import InputError
from ..text import underflows as is_underflow
from .lines import (Cells, Chunk, MisreadCells, Overflows, Underflows, beyond_precision, beyond_precision_text,
                    cell_at, may_overflow, may_underflow, row_error, scan_cells, written_finite)

SEPARATORS = {"csv": ",", "tsv": "\t"}


_LOADTXT_SPACE = re.compile(r"[\x1c-\x1f]")  # white space to loadtxt, not to the csv module's cells


def _csv_problem(error: csv.Error) -> str:
    """The csv module's message without its advice about universal-newline mode (we read that way)."""
    return str(error).split(" - do you need", 1)[0]


_NUMBER_HINT = "write numbers such as 2, -0.5 or 1e-3 (nan marks a value to fail the row on)"


def _strict_float(text: str) -> float:
    """``float`` without what ``numpy.loadtxt`` refuses: digit-group underscores, non-ASCII digits."""
    if "_" in text or not text.isascii():
        raise ValueError(text)
    return float(text)


class DelimitedChunks:
    """CSV or TSV lines to a Chunk: ``numpy.loadtxt`` when it can, the ``csv`` module when not."""

    def __init__(self, name: str, separator: str, columns: Sequence[str], numeric: Sequence[str],
                 passed: Sequence[str], underflows: Underflows | None = None, source: Any = None,
                 overflows: Overflows | None = None, dtype: Any = None) -> None:
        self.name, self.separator, self.columns = name, separator, list(columns)
        self.dtype = dtype  # the precision the numbers run in (float32): a cell it cannot hold is a bad cell
        self.underflows = underflows or Underflows(name)
        self.overflows = overflows or Overflows(name)
        self.source = source  # the Lines, whose ``tiny`` says whether to look for underflows at all
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
        # A line longer than a cell may be goes through the csv module, which places the cell.
        if (self.all_numeric and "" not in lines and "\r" not in lines and not lines[-1].count('"') & 1
                and max(map(len, lines)) <= csv.field_size_limit() and self._loadtxt_reads_as_csv("\n".join(lines))):
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
        inf are looked at: when there are none, this is two passes over the numbers.  A number the
        run's ``dtype`` cannot hold (1e40 in float32) is a bad cell: an error at it."""
        # may_underflow: one search of the chunk's text, nearly always the end of it.
        if (self.source is None or self.source.tiny) and (table == 0).any() and may_underflow(texts):
            self._place(table == 0, indices, texts, line_numbers, lambda cell: is_underflow(cell, 0.0),
                        self.underflows)
        infinite = np.isinf(table)
        if infinite.any() and may_overflow(texts):
            self._place(infinite, indices, texts, line_numbers, written_finite, self.overflows)
        beyond = beyond_precision(table, self.dtype)
        if beyond is not None:
            row, j = beyond
            text = texts[row].rstrip("\r")
            name = self.columns[indices[j]]
            message, hint = beyond_precision_text(name, float(table[row, j]), self.dtype)
            raise row_error(self.name, line_numbers[row], text, *cell_at(text, self.separator, indices[j]),
                            message, hint)

    def _place(self, suspect: np.ndarray, indices: Sequence[int], texts: list[str], line_numbers: Sequence[int],
               misread: Callable[[str], bool], found: MisreadCells) -> None:
        """Add to ``found`` each cell ``suspect`` marks whose text is ``misread``, at its line and column."""
        for row in np.flatnonzero(suspect.any(axis=1)).tolist():
            text = texts[row].rstrip("\r")
            found_cells = scan_cells(text, self.separator)
            cells = read_cells(self.name, line_numbers[row], text, self.separator, found_cells)
            spans = found_cells.spans
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
                found = scan_cells(text, self.separator)
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
                raise row_error(self.name, line, text, len(text), 1, f"{what} {len(cells)} "
                                 f"cell{'s' * (len(cells) != 1)}, but the first line names {count} "
                                 f"column{'s' * (count != 1)}", "give every row one cell per column")
            for j, name in zip(self.numeric_index, self.numeric):
                cell = cells[j]
                try:
                    values.append(_strict_float(cell))
                except ValueError:
                    found_text = "is empty" if not cell.strip() else f"holds {cell[:40]!r}, not a number"
                    raise row_error(self.name, line, text, *cell_at(text, self.separator, j),
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

    def _not_valid(self, error: csv.Error, first_line: int, text: str, found: Cells) -> InputError:
        """The csv module's error about a row, at the quote or character it is about."""
        return not_valid(self.name, self.separator, error, first_line, text, found)


def read_cells(name: str, first_line: int, text: str, separator: str, found: Cells | None = None,
               what: str = "line") -> list[str]:
    """The cells of one row's ``text`` (its lines joined by '\\n', the first being ``first_line``)
    as the csv module reads them; its error (a cell longer than ``csv.field_size_limit()``) as an
    InputError at the cell.  ``what`` the row is, in the messages: "line", or "first line"."""
    try:
        return next(csv.reader([text + "\n"], delimiter=separator))
    except csv.Error as error:
        raise not_valid(name, separator, error, first_line, text, found or scan_cells(text, separator),
                        what) from None


def not_valid(name: str, separator: str, error: csv.Error, first_line: int, text: str, found: Cells,
              what: str = "line") -> InputError:
    """The csv module's error about a row, at the quote or character it is about.  ``what`` the
    row is: "line", or "first line" (the column names)."""
    kind = "CSV" if separator == "," else "TSV"
    problem = _csv_problem(error)
    limit = csv.field_size_limit()
    header = what == "first line"
    if problem.startswith("field larger than field limit"):
        if found.unclosed is not None:
            return row_error(name, first_line, text, found.unclosed, 1, f"this {what} is not valid {kind}: "
                              f"the quote here is not closed within {limit:,} characters",
                              f'close the quoted cell ("..."), or remove the quote (a cell holds at most '
                              f'{limit:,} characters)')
        start = next((start for start, end in found.spans if end - start > limit), 0)
        cell = "column name" if header else "cell"
        return row_error(name, first_line, text, start, 1, f"this {cell} is longer than {limit:,} "
                          f"characters, the most a {cell} may hold",
                          "shorten the name" if header else "split the text, or leave the column out")
    if found.unclosed is not None:
        return row_error(name, first_line, text, found.unclosed, 1, f"this {what} is not valid {kind}: "
                          "the quote here is never closed", 'close the quoted cell ("..."), or remove the quote')
    if found.stray is not None:
        error = row_error(name, first_line, text, found.stray, 1, f"this {what} is not valid {kind}: "
                           f"{problem}", 'quote a cell as a whole ("..."), with any quote in it doubled ("")')
        opened = found.spans[-1][0]
        if "\n" in text[opened:found.stray]:  # the quote that opened the cell may be the mistake
            begin = text.rfind("\n", 0, opened) + 1
            error.notes.append(f"the quoted cell this quote closes opened on line "
                               f"{first_line + text.count(chr(10), 0, opened)}, column {opened - begin + 1}")
        return error
    return row_error(name, first_line, text, 0, 1, f"this {what} is not valid {kind}: {problem}",
                      'quote a cell as a whole ("..."), with any quote in it doubled ("")')
