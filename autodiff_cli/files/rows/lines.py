"""Complete lines of text from a stream of bytes, and what every text format of rows shares.

Reading.  The bytes come in blocks (``os.read`` on the descriptor, so that ``select``
can tell when a pipe has nothing more for now), are decoded incrementally as UTF-8
and cut into complete lines.  ``RowReader.chunks`` hands out a chunk of lines at a
time: either a fixed number (``wait``: the chunks, and so any sums over them, are
the same however the bytes arrive) or as many as have arrived, so that output can
start while a slow producer is still writing.  The first line names the columns
(CSV, TSV) or the first object's keys do (JSON Lines).  A line not ended yet is kept
as the pieces it came in, joined once when it ends (so a long line costs time in
proportion to its length), and may not pass ``MAX_LINE`` characters (``/dev/zero``
is an error, not a process that grows until it is killed).  A regular file that
ends before the size it had when reading began was cut short meanwhile: an error,
not a silent prefix whose last number may be cut.

A quoted CSV or TSV cell may hold line breaks (RFC 4180, as the ``csv`` module,
pandas and spreadsheets write them), so a row may go on past the lines of a chunk:
the chunk then ends before that row and gives its lines back to be read again with
the next lines (``Lines.give_back``).  Line ends are still decided first, on the
text: a lone CR ends a line inside quotes too (classic Mac files).  Rows keep the
number of the line they start on.
"""

from __future__ import annotations

import codecs
import io
import json
import os
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import IO, Any

import numpy as np

from ...errors import InputError, Position, Source
from ..text import LineSource, not_utf8

BLOCK_BYTES = 1 << 20
CHUNK_LINES = 16_384
MAX_LINE = 1 << 26  # characters in one line of rows (64 Mi): memory stays bounded on a file with no line breaks
SHOWN = 60  # characters of such a line the error shows
RECENT = 1024  # characters of a line cut between blocks looked at again for a number read as 0


def _size_to_read(fd: int | None) -> int | None:
    """The bytes left to read from ``fd`` when it is a regular file, else None."""
    import stat

    if fd is None:
        return None
    try:
        status = os.fstat(fd)
        return status.st_size - os.lseek(fd, 0, os.SEEK_CUR) if stat.S_ISREG(status.st_mode) else None
    except OSError:
        return None


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


LONE_CR = re.compile(r"\r(?!\n)")


PARQUET_MAGIC = b"PAR1"  # the first four bytes of every Parquet file


class Lines:
    """Complete lines of UTF-8 text from a binary stream, taken a chunk at a time."""

    def __init__(self, stream: IO[bytes], name: str) -> None:
        self.stream = stream
        self.name = name
        try:
            self.fd: int | None = stream.fileno()
        except (AttributeError, OSError, io.UnsupportedOperation):
            self.fd = None  # an in-memory stream (tests, embedding programs)
        self.decoder = codecs.getincrementaldecoder("utf-8-sig")()
        self.pieces: list[str] = []  # the line not ended yet, as it came: joined once it ends
        self.held = 0  # its length in characters
        self.size = _size_to_read(self.fd)  # a regular file's bytes, to notice it shrinking
        self.pending: list[str] = []
        self.eof = False
        self.taken = 0  # lines handed out so far
        self.tiny = False  # whether a number too small for a float may have been read (1e-400)
        self.consumed = 0  # bytes read so far
        self.resumed = b""  # see ``resume``

    def _read(self) -> bytes:
        if self.resumed:  # bytes handed back by ``resume``, read before the stream's next ones
            data, self.resumed = self.resumed, b""
            return data
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

    @property
    def tail(self) -> str:
        """The text of the line not ended yet."""
        return "".join(self.pieces)

    def _fill(self) -> None:
        data = self._read()
        self.consumed += len(data)
        try:
            text = self.decoder.decode(data, final=not data)
        except UnicodeDecodeError as error:
            raise self._not_utf8(error, not data) from None
        if not data:
            self._check_size()
            self.eof = True
            if self.pieces:
                self.pending.append(self.tail)
                self.pieces, self.held = [], 0
            return
        if not self.tiny and may_underflow(self._recent() + text):  # a number may be cut between two blocks
            self.tiny = True  # from here on, chunks look for numbers read as 0 that are not 0
        if "\n" not in text and "\r" not in text and not (self.pieces and self.pieces[-1].endswith("\r")):
            self._hold(text)  # the line goes on: kept as a piece, so a long line is not copied block after block
            return
        text = self.tail + text
        if "\r" in text:  # universal newlines: classic Mac's lone CR ends a line too
            held = text.endswith("\r")  # perhaps half of a CRLF: the next block says
            body = text[:-1] if held else text
            if LONE_CR.search(body):  # not just CRLF, which the parsers take as it is
                text = body.replace("\r\n", "\n").replace("\r", "\n") + ("\r" if held else "")
        parts = text.split("\n")
        tail = parts.pop()
        if len(text) > MAX_LINE:  # a line may have ended past the limit (the limit is far above a block)
            for number, line in enumerate(parts, self.taken + len(self.pending) + 1):
                if len(line) > MAX_LINE:
                    raise self._too_long(number, line[:SHOWN], True)
        self.pending.extend(parts)
        self.pieces, self.held = [], 0
        if tail:
            self._hold(tail)

    def _recent(self) -> str:
        """The end of the line not ended yet, enough to hold a number cut between blocks."""
        recent: list[str] = []
        size = 0
        for piece in reversed(self.pieces):
            recent.append(piece[-(RECENT - size):])
            size += len(recent[-1])
            if size >= RECENT:
                break
        return "".join(reversed(recent))

    def _hold(self, text: str) -> None:
        self.pieces.append(text)
        self.held += len(text)
        if self.held > MAX_LINE:
            start = "".join(self.pieces[:SHOWN])[:SHOWN]  # the same however the line came in
            raise self._too_long(self.taken + len(self.pending) + 1, start, self.held > len(start))

    def _too_long(self, line: int, start: str, cut: bool) -> InputError:
        return data_error(self.name, line, f"line {line:,} is longer than {MAX_LINE:,} characters, the most a "
                          "line of rows may hold", "check that this is a file of rows, with a line break after "
                          "each row", start + ("..." if cut else ""))

    def _check_size(self) -> None:
        """At the end of a regular file: fail if it ended before the size it had when reading began
        (something truncated it meanwhile), rather than hand out its first part as if it were all."""
        if self.size is not None and self.consumed < self.size:
            line = self.taken + len(self.pending) + (1 if self.pieces else 0)
            raise InputError(f"{self.name} shrank while it was read: it held {self.size:,} bytes when reading "
                             f"began, and ended after {self.consumed:,} (in line {max(line, 1):,})",
                             source=Source(self.name, ""),
                             hint="something truncated or rewrote it meanwhile: read it again once nothing "
                                  "writes to it, or read a copy")

    def _not_utf8(self, error: UnicodeDecodeError, at_end: bool) -> InputError:
        """The error for a byte that is not UTF-8, at its line and column, with the line shown."""
        # The tail is the text of the line so far; error.object the bytes the decoder was given
        # after it (with any it held back from the last block, and without a byte order mark).
        before = self.tail.encode("utf-8")
        data = before + error.object
        if not before and not self.taken and not self.pending and data.startswith(PARQUET_MAGIC):
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

    def read_raw(self) -> bytes:
        """The stream's next bytes as they come (b"" at its end, once checked for shrinking), for a
        reader that cuts lines itself (``arrow_csv``) after ``detach``."""
        data = self._read()
        self.consumed += len(data)
        if not data:
            self._check_size()
        return data

    def more_now(self) -> bool:
        """Whether a read would return at once (always true of files and unknown streams)."""
        return bool(self.resumed) or self._more_now()

    def detach(self) -> bytes | None:
        """The bytes not handed out as lines yet, exactly as the stream held them, so that another
        reader can go on from here with ``read_raw``; None (and nothing changes) when the text
        read so far has a carriage return, whose lines this class has rewritten."""
        state, _flag = self.decoder.getstate()
        if any("\r" in line for line in self.pending) or any("\r" in piece for piece in self.pieces):
            return None
        text = "".join(line + "\n" for line in self.pending) + self.tail
        self.pending, self.pieces, self.held = [], [], 0
        return text.encode("utf-8") + state

    def resume(self, data: bytes, taken: int) -> None:
        """Go on cutting lines after ``detach``: from ``data`` (the stream's bytes after line
        ``taken``, already read), then from the stream's next bytes."""
        self.resumed = data
        self.consumed -= len(data)  # counted again when _read hands them out
        self.taken = taken
        self.pending, self.pieces, self.held = [], [], 0
        self.decoder = codecs.getincrementaldecoder("utf-8")()  # the byte order mark is long gone
        self.eof = False
        self.tiny = True  # look for numbers read as 0 in every chunk from here

    def end(self) -> None:
        """The stream has ended, read to its end by another reader since ``detach``."""
        self.eof = True
        self.pending, self.pieces, self.held = [], [], 0

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


@dataclass
class Cells:
    """Where the cells of a CSV or TSV row are in its text (its lines joined by '\\n'): ``spans``,
    each cell's start and end offset; ``unclosed``, the offset of a quote never closed; ``stray``,
    that of the first character after a closing quote that is not the separator."""

    spans: list[tuple[int, int]]
    unclosed: int | None = None
    stray: int | None = None


def scan_cells(text: str, separator: str) -> Cells:
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
                    return Cells(spans, unclosed=start)
                if not text.startswith('"', close + 1):
                    break
                close += 1  # '""': a quote inside the cell
            at = close + 1
            if at < size and not text.startswith(separator, at):
                stop = text.find(separator, at)
                spans.append((start, size if stop < 0 else stop))
                return Cells(spans, stray=at)
        stop = text.find(separator, at)
        if stop < 0:
            spans.append((start, size))
            return Cells(spans)
        spans.append((start, stop))
        at = stop + 1


def cell_at(text: str, separator: str, index: int) -> tuple[int, int]:
    """Offset and width of cell ``index`` of a row's text (the row's end if it has fewer cells)."""
    spans = scan_cells(text, separator).spans
    if index >= len(spans):
        return len(text), 1
    start, end = spans[index]
    return start, end - start


def row_error(name: str, first_line: int, text: str, offset: int, width: int, message: str,
               hint: str) -> InputError:
    """``data_error`` at ``offset`` of a row's text, whose lines (joined by '\\n') start at ``first_line``:
    the line and column of that offset, and that line shown."""
    begin = text.rfind("\n", 0, offset) + 1
    end = text.find("\n", offset)
    shown = text[begin:] if end < 0 else text[begin:end]
    column = offset - begin + 1
    return data_error(name, first_line + text.count("\n", 0, offset), message, hint, shown, column,
                      max(1, min(width, len(shown) - column + 1)))


def key_span(line: str, key: str) -> tuple[int, int]:
    spelled = json.dumps(key, ensure_ascii=False)
    found = line.find(spelled)
    return (found + 1, len(spelled)) if found >= 0 else (1, 1)


class MisreadCells:
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


class Underflows(MisreadCells):
    """Cells whose number is too small for a float, read as 0 (1e-400).  Only cells that read as 0
    are looked at, and only on lines that have an exponent or are long enough to hold 324 zeros."""

    happened = "is smaller than the smallest float (about 5e-324), so taken as 0"


class Overflows(MisreadCells):
    """Cells whose number is too large for a float, read as inf (1e400); an input must be finite,
    so its row fails.  Only cells that read as inf are looked at; ``inf`` written is not one."""

    happened = "is too large for a float, so read as inf"
    then = ", and its row fails"


def written_finite(cell: str) -> bool:
    """Whether a cell that reads as inf is written as a number (1e400), not as inf or infinity."""
    return "inf" not in cell.lower()


# A number too small for a float has an exponent of -100 or below, or is written with 300 zeros.
# Each pattern starts with a literal, which the regex engine looks for as a plain substring.
_TINY = (re.compile(r"e-0*[1-9][0-9]{2}"), re.compile(r"E-0*[1-9][0-9]{2}"))
_ZEROS = "0" * 300


def may_underflow(texts: Sequence[str] | str) -> bool:
    """Whether ``texts`` could hold a number that reads as 0 but is not written as 0."""
    joined = texts if isinstance(texts, str) else "\n".join(texts)
    return any(pattern.search(joined) for pattern in _TINY) or _ZEROS in joined


# A number written in full that reads as inf has an exponent of 100 or more, or 200 digits in a row.
_HUGE = (re.compile(r"e\+?0*[1-9][0-9]{2}"), re.compile(r"E\+?0*[1-9][0-9]{2}"), re.compile(r"[0-9]{200}"))


def may_overflow(texts: Sequence[str]) -> bool:
    """Whether ``texts`` could hold a number written in full that reads as inf (1e400), so that
    rows whose infinities are all written ``inf`` are not looked at one by one."""
    joined = "\n".join(texts)
    return any(pattern.search(joined) for pattern in _HUGE)


def beyond_precision(table: np.ndarray, dtype: Any) -> tuple[int, int] | None:
    """(row, column) of the first number of a 2-D ``table`` (row by row) that is finite but that
    ``dtype`` cannot hold (1e40 in float32, which would become an infinity), or None; None too
    when ``dtype`` is None (float64: every number read is one)."""
    if dtype is None or np.dtype(dtype).itemsize >= 8 or not table.size:
        return None
    with np.errstate(over="ignore"):  # the cell is said where it is written, not as NumPy's warning
        lost = np.isinf(table.astype(dtype))
    if not lost.any():
        return None
    lost &= np.isfinite(table)
    if not lost.any():
        return None
    row, column = divmod(int(np.argmax(lost)), table.shape[1])
    return row, column


def beyond_precision_text(name: str, value: float, dtype: Any, where: str = "") -> tuple[str, str]:
    """The message and hint for the column ``name``'s number ``value`` beyond ``dtype``'s range,
    ``where`` (e.g. " in row 3") said after the number when no caret shows the cell."""
    from ...execute.interpreter import beyond_range

    shown, reason, hint = beyond_range(value, dtype)
    return f"the column '{name}' holds {shown}{where}, {reason}", hint


def rows_before(error: InputError, lines: list[str], start: int, parse: Callable[[list[str]], Chunk],
                 consumed: int) -> Iterator[Chunk]:
    """The rows of ``lines`` (the first is line ``start``) before the line of a data ``error``, so
    that every row before a bad one is computed and written, wherever the chunk happened to begin:
    the same partial output however the rows arrived.  Nothing where those lines do not parse on
    their own (the error is inside a row that began on an earlier line)."""
    if error.position is None:
        return
    before = error.position.line - start
    if not 0 < before <= len(lines):
        return
    try:
        chunk = parse(lines[:before])
    except InputError:
        return
    chunk.consumed = consumed
    if chunk.size:
        yield chunk
