"""Rows in and out for ``batch`` and ``fit``: CSV, TSV, JSON Lines and Parquet, streamed in chunks.

``reader`` opens the rows and reads their first line (``RowReader``, ``reader_for``); ``lines``
cuts bytes into lines and holds what every text format shares (``Chunk``, positions, numbers
read as 0 or inf); ``delimited`` and ``jsonl`` turn lines into chunks; ``arrow_csv`` reads and
writes CSV and TSV through pyarrow when it is installed, to the same rows and text; ``parquet``
reads and writes Parquet (pyarrow); ``writers`` writes text rows (``RowWriter``, ``writer_for``).

These modules import NumPy: import them where rows are read, not at start-up.
"""

from __future__ import annotations

from .lines import Chunk
from .parquet import ParquetReader, ParquetWriter
from .reader import RowReader, misread_warnings, opened, reader_for
from .writers import RowWriter, writer_for

__all__ = ["Chunk", "ParquetReader", "ParquetWriter", "RowReader", "RowWriter", "misread_warnings", "opened",
           "reader_for", "writer_for"]
