"""CSV and TSV rows through pyarrow, when it is installed: parsing and number formatting in C.

Reading.  After the first line (read by ``RowReader`` as always), the bytes are cut into
blocks of whole lines, ``CHUNK_LINES`` at a time as ``Lines.take`` cuts them (so ``--reduce``
adds up the same chunks, and every row's line number is its place in the block), and each
block is parsed by pyarrow's CSV parser.  Not ``pyarrow.csv.open_csv``: its batches do not
say which lines they came from, and a block it cannot read has to be read again from its
first line.  A block takes Arrow's path only when it has nothing Arrow reads differently
from the ``csv`` module: no quote (a quoted cell may span lines), no carriage return (the
line ends are rewritten), UTF-8 throughout, no cell longer than ``csv.field_size_limit()``.
Such a block with a blank line, a bad cell, a row of the wrong length, a number read as
0 or inf that may be written otherwise (1e-400, 1e400), or a number the run's precision
cannot hold (1e40 in float32), is read again by ``DelimitedChunks``,
which names the line, the column and the cell as it always has, or skips the blank lines;
any other block hands the rest of the stream, from its first line, back to ``Lines``.
Arrow accepts a subset of what ``float`` accepts and reads it to the same float (both
round correctly), but for one form, C's ``nan(...)``: a block with a NaN and a parenthesis
goes the old way too.  Anything else Arrow cannot convert goes the old way anyway.

Writing.  Arrow formats a float64 column as the shortest text that reads back as the same
float, as ``repr`` does, but lays it out differently: ``1`` for 1.0, ``0.00001`` for
1e-05, ``1e+10`` for 10000000000.0, ``1e-7`` for 1e-07.  Which layout a number gets
depends only on its magnitude, so ``arrow_text`` adds ``.0`` to the whole numbers below
1e10, and ``repr`` writes the few in [1e-9, 1e-4) and [1e10, 1e16), spliced into Arrow's
CSV; the text is then the one ``%r`` writes, byte for byte.

``AUTODIFF_ROWS_ARROW=0`` in the environment (read at each call) keeps both on the
pure-Python path, as when pyarrow is not installed.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from .delimited import DelimitedChunks
from ...errors import InputError
from .lines import MAX_LINE, Chunk, Lines, beyond_precision, may_overflow, may_underflow, rows_before

SWITCH = "AUTODIFF_ROWS_ARROW"


def arrow_csv() -> Any:
    """pyarrow's ``csv`` module, or None when it is not installed or turned off (``SWITCH``)."""
    if os.environ.get(SWITCH, "1") == "0":
        return None
    try:
        import pyarrow.compute  # noqa: F401
        import pyarrow.csv
    except ImportError:
        return None
    return pyarrow.csv


class ArrowBlocks:
    """The rows after the first line as Arrow reads them, a block of lines at a time, while every
    block is one Arrow reads as the ``csv`` module does; then the rest goes back to ``lines``."""

    def __init__(self, lines: Lines, parse: DelimitedChunks, pa_csv: Any) -> None:
        import pyarrow as pa

        self.lines, self.parse, self.pa = lines, parse, pa
        columns = parse.columns
        names = [f"c{index}" for index in range(len(columns))]  # the file's names may be any text
        types = {names[j]: pa.float64() for j in parse.numeric_index}
        types.update({names[j]: pa.string() for j in parse.passed_index})
        self.wanted = [names[j] for j in parse.numeric_index] + [names[j] for j in parse.passed_index]
        self.options = (
            pa_csv.ReadOptions(column_names=names, use_threads=False),
            pa_csv.ParseOptions(delimiter=parse.separator, quote_char=False, double_quote=False,
                                newlines_in_values=False, ignore_empty_lines=False),
            pa_csv.ConvertOptions(column_types=types, include_columns=list(dict.fromkeys(self.wanted)),
                                  null_values=[], strings_can_be_null=False, quoted_strings_can_be_null=False,
                                  check_utf8=True))
        self.pa_csv = pa_csv

    def _read(self, block: bytes) -> Any:
        """``block`` as an Arrow table: the numbers as float64, the passed columns as text."""
        read_options, parse_options, convert_options = self.options
        return self.pa_csv.read_csv(self.pa.py_buffer(block), read_options=read_options,
                                    parse_options=parse_options, convert_options=convert_options,
                                    memory_pool=memory_pool())

    def chunks(self, size: int, wait: bool) -> Iterator[Chunk]:
        """Chunks of rows until the stream ends, or until a block Arrow cannot be trusted with:
        ``lines`` then goes on from that block's first line."""
        held = self.lines.detach()
        if held is None:
            return
        held_back, ended = held, False
        while True:
            # Bytes up to ``size`` line breaks (fewer at the end, or when no more have come and
            # ``wait`` is False), gathered as pieces and joined once: a long line is not copied
            # read after read.  ``tail``: the length of the line not ended yet, at most MAX_LINE.
            pieces = [held_back]
            count = held_back.count(b"\n")
            tail = len(held_back) - held_back.rfind(b"\n") - 1
            while count < size and not ended and tail <= MAX_LINE:
                if not wait and count and not self.lines.more_now():
                    break  # what has come so far goes out now
                data = self.lines.read_raw()
                ended = not data
                pieces.append(data)
                breaks = data.count(b"\n")
                count += breaks
                tail = len(data) - data.rfind(b"\n") - 1 if breaks else tail + len(data)
            buffer = b"".join(pieces)
            if count >= size:
                cut = _after_line(buffer, size)
            else:  # the end, or a line longer than Lines allows (it says so), or what has come
                cut = len(buffer) if ended else buffer.rfind(b"\n") + 1
            block, held_back = buffer[:cut], buffer[cut:]
            start = self.lines.taken + 1
            if not block:
                if ended:
                    self.lines.end()
                    return
                self.lines.resume(buffer, self.lines.taken)  # a line longer than Lines allows
                return
            try:
                chunk = self._block(block, start)
            except InputError as error:  # a bad cell: the rows before it first, as without Arrow
                lines = block.decode("utf-8").split("\n")
                yield from rows_before(error, lines, start, lambda before: self.parse(before, start, True)[0],
                                       self.lines.consumed)
                raise
            if chunk is None:
                self.lines.resume(buffer, start - 1)
                return
            self.lines.taken = start - 1 + chunk_lines(block)
            chunk.consumed = self.lines.consumed
            if chunk.size:
                yield chunk

    def _block(self, block: bytes, start: int) -> Chunk | None:
        """The rows of ``block`` (whole lines, the first being line ``start``); None when the
        ``csv`` module must read it with what follows it."""
        if b'"' in block or b"\r" in block:
            return None
        if not block.isascii():
            try:
                block.decode("utf-8")
            except UnicodeDecodeError:
                return None
        if _longest_line(block) > csv.field_size_limit():
            return None
        if b"\n\n" in block or block.startswith(b"\n"):
            return self._by_csv_module(block, start)  # blank lines: skipped there
        try:
            table = self._read(block)
        except (self.pa.ArrowException, ValueError):
            return self._by_csv_module(block, start)  # a bad cell or row, said there
        count = chunk_lines(block)
        if table.num_rows != count:
            return self._by_csv_module(block, start)
        parse = self.parse
        numbers = {}
        for name, column in zip(parse.numeric, self.wanted):
            numbers[name] = _copied(table.column(column))
        if numbers and (self._may_be_misread(numbers, block) or (b"(" in block and _any_nan(numbers))
                        or _any_beyond(numbers, parse.dtype)):
            # 1e-400 to count; nan(1), Arrow's NaN but no number; 1e40 in float32, a bad cell said there
            return self._by_csv_module(block, start)
        passed = {name: table.column(column).to_pylist()
                  for name, column in zip(parse.passed, self.wanted[len(parse.numeric):])}
        return Chunk(numbers, passed, np.arange(start, start + count))

    @staticmethod
    def _may_be_misread(numbers: dict[str, np.ndarray], block: bytes) -> bool:
        """Whether a number read as 0 or inf may be written as one a float cannot hold (1e-400,
        1e400), which ``DelimitedChunks`` counts for the warning."""
        zero = infinite = False
        for values in numbers.values():
            zero = zero or bool((values == 0).any())
            infinite = infinite or bool(np.isinf(values).any())
        if not zero and not infinite:
            return False
        text = block.decode("utf-8")
        return (zero and may_underflow(text)) or (infinite and may_overflow([text]))

    def _by_csv_module(self, block: bytes, start: int) -> Chunk:
        self.lines.tiny = True  # Lines has not seen these bytes: the parser is to look for 1e-400 itself
        lines = block.decode("utf-8").split("\n")
        if block.endswith(b"\n"):
            lines.pop()
        chunk, _unfinished = self.parse(lines, start, True)  # no quote, so every row ends in the block
        return chunk


def _any_nan(numbers: dict[str, np.ndarray]) -> bool:
    return any(bool(np.isnan(values).any()) for values in numbers.values())


def _any_beyond(numbers: dict[str, np.ndarray], dtype: Any) -> bool:
    """Whether a number is one the run's ``dtype`` cannot hold (1e40 in float32)."""
    return dtype is not None and any(beyond_precision(values.reshape(-1, 1), dtype) is not None
                                     for values in numbers.values())


def _copied(column: Any) -> np.ndarray:
    """A float64 column without nulls as a NumPy array of its own, read from Arrow's buffers
    (``to_numpy`` would import pandas, which costs more than the whole block)."""
    return np.concatenate([np.frombuffer(part.buffers()[1], dtype=np.float64, count=len(part),
                                         offset=part.offset * 8) for part in column.chunks])


def chunk_lines(block: bytes) -> int:
    """The lines in ``block``: its line breaks, and one more if it does not end with one."""
    return block.count(b"\n") + (not block.endswith(b"\n"))


def _after_line(buffer: bytes, count: int) -> int:
    """The offset just after line break number ``count`` of ``buffer`` (it has at least that many)."""
    breaks = np.flatnonzero(np.frombuffer(buffer, dtype=np.uint8) == 10)
    return int(breaks[count - 1]) + 1


def _longest_line(block: bytes) -> int:
    breaks = np.flatnonzero(np.frombuffer(block, dtype=np.uint8) == 10)
    ends = np.append(breaks, len(block))
    return int(np.diff(ends, prepend=-1).max()) - 1


# --- writing ---------------------------------------------------------------------------------

# Magnitudes where Arrow's layout of the shortest digits differs from repr's by more than '.0'.
_REPR_BANDS = ((1e-9, 1e-4), (1e10, 1e16))


def arrow_text(values: np.ndarray) -> tuple[Any, np.ndarray]:
    """Arrow's text of float64 ``values`` (a pyarrow string array) with ``.0`` added to the whole
    numbers below 1e10, as ``repr`` writes them; and where the text still differs from
    ``repr``'s, the numbers in ``_REPR_BANDS`` (a mask), for the caller to write with ``repr``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    pool = memory_pool()
    text = pc.cast(_arrow(values), pa.string(), memory_pool=pool)
    size = np.abs(values)
    with np.errstate(invalid="ignore"):  # trunc of a NaN
        whole = (values == np.trunc(values)) & (size < _REPR_BANDS[1][0])  # 1 -> 1.0, -0 -> -0.0
    if whole.any():
        point, nothing = _texts([".0", ""])
        with_point = pc.binary_join_element_wise(pc.take(text, _arrow(np.flatnonzero(whole)), memory_pool=pool),
                                                 point, nothing, memory_pool=pool)
        mask = pa.Array.from_buffers(pa.bool_(), len(whole), [None, pa.py_buffer(np.packbits(whole, bitorder="little"))])
        text = pc.replace_with_mask(text, mask, with_point, memory_pool=pool)
    odd = np.zeros(len(values), dtype=bool)
    for low, high in _REPR_BANDS:
        odd |= (size >= low) & (size < high)
    return text, odd


def _arrow(values: np.ndarray) -> Any:
    """A NumPy array of numbers as an Arrow array over the same memory (``pyarrow.array`` of a
    NumPy array imports pandas, to look for its types: longer than formatting a chunk)."""
    import pyarrow as pa

    values = np.ascontiguousarray(values)
    return pa.Array.from_buffers(pa.from_numpy_dtype(values.dtype), len(values), [None, pa.py_buffer(values)])


def _texts(texts: list[str]) -> Any:
    """ASCII strings as an Arrow string array, made from its buffers (as ``_arrow``)."""
    import pyarrow as pa

    offsets = np.zeros(len(texts) + 1, dtype=np.int32)
    np.cumsum([len(text) for text in texts], out=offsets[1:])
    data = "".join(texts).encode("ascii")
    return pa.Array.from_buffers(pa.string(), len(texts), [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def delimited_bytes(columns: dict[str, Any], names: list[str], separator: str, size: int,
                    pa_csv: Any) -> list[memoryview]:
    """Rows of number columns (float64 arrays, or one number for every row) as CSV or TSV lines,
    each number written as ``%r`` writes it: the text of consecutive runs of rows, in order."""
    import pyarrow as pa

    block = np.empty((len(names), size))  # a line per column: each column's numbers side by side
    for line, name in enumerate(names):
        block[line] = columns[name]
    pool, workers = _pool()
    bounds = np.linspace(0, size, min(workers, size) + 1).astype(int).tolist()
    options = pa_csv.WriteOptions(include_header=False, delimiter=separator, quoting_style="none")
    labels = [f"c{index}" for index in range(len(names))]

    def written(start: int, stop: int) -> memoryview:
        """The lines of rows ``start`` to ``stop``: every column formatted by one call to Arrow."""
        count = stop - start
        values = np.ascontiguousarray(block[:, start:stop]).ravel()
        text, odd = arrow_text(values)
        table = pa.Table.from_arrays([text.slice(line * count, count) for line in range(len(names))], names=labels)
        sink = pa.BufferOutputStream(memory_pool())
        pa_csv.write_csv(table, sink, write_options=options)
        data = memoryview(sink.getvalue())  # Arrow's buffer itself, not a copy
        return _with_repr(data, text, values, odd, len(names)) if odd.any() else data

    # Arrow formats and writes without the GIL: runs of rows side by side, one per core.
    return list(pool.map(written, bounds[:-1], bounds[1:]))


def _with_repr(data: memoryview, text: Any, values: np.ndarray, odd: np.ndarray, columns: int) -> memoryview:
    """``data``, Arrow's CSV of ``text`` (the cells column after column, ``columns`` of them, each
    followed by a separator or a line break), with the cells ``odd`` marks written by ``repr``
    instead: the few are spliced in where the lengths of the cells place them, so the text is
    copied once, not rebuilt column by column."""
    rows = len(values) // columns
    offsets = np.frombuffer(text.buffers()[1], dtype=np.int32, count=len(text) + 1, offset=text.offset * 4)
    widths = (np.diff(offsets).reshape(columns, rows) + 1).T.ravel()  # row after row, as written
    ends = np.cumsum(widths)  # where each cell's separator or line break ends
    column, row = np.divmod(np.flatnonzero(odd), rows)
    cells = np.sort(row * columns + column)  # in the order written
    stops = (ends[cells] - 1).tolist()
    starts = (ends[cells] - widths[cells]).tolist()
    shown = [repr(value) for value in values[(cells % columns) * rows + cells // columns].tolist()]
    parts: list[Any] = []
    done = 0
    for start, stop, number in zip(starts, stops, shown):
        parts += [data[done:start], number.encode("ascii")]
        done = stop
    parts.append(data[done:])
    return memoryview(b"".join(parts))


def memory_pool() -> Any:
    """The allocator of Arrow's buffers here: jemalloc where pyarrow has it, else the system's.
    Not pyarrow's default, mimalloc, which keeps more memory: 40 MB more at the peak of a
    million-row batch (200 MB instead of 160)."""
    import pyarrow as pa

    try:
        return pa.jemalloc_memory_pool()
    except NotImplementedError:  # a build of pyarrow without it
        return pa.system_memory_pool()


_POOL: list[tuple[ThreadPoolExecutor, int]] = []


def _pool() -> tuple[ThreadPoolExecutor, int]:
    """Threads that format rows, one per core (at most 4), made once; and how many."""
    if not _POOL:
        workers = max(1, min(4, os.cpu_count() or 1))
        _POOL.append((ThreadPoolExecutor(max_workers=workers, thread_name_prefix="autodiff-format"), workers))
    return _POOL[0]
