"""Rows in many files, read as partitions, and output written as a directory of parts.

``partition_paths`` turns ROWS (a glob such as ``'rows/*.parquet'``, a directory of row files,
or one file) into the list of files it names, sorted, one partition each: the order every
run combines them in.  ``read_partition`` reads one whole (``fit`` keeps it in a worker's
memory); ``batch`` reads one a chunk at a time with the ordinary readers (``files.rows``).

``PartsDirectory`` is a directory written whole or not at all: the parts go into a temporary
sibling directory (``.out.partial-…``), which is renamed to its name once every part is in.
An existing directory is replaced only when asked (``replace``): it is first renamed aside,
the new one renamed in, then the old one removed, so the name holds the old parts or the new
ones, never a mix.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import InputError, OutputError, Source
from .formats import ROW_EXTENSIONS, extension_of, row_format, sniffs

if TYPE_CHECKING:
    from ..execute.batch_rows import BatchOptions
    from ..execute.columns import ColumnPlan
    from .rows import ParquetReader, RowReader

T = TypeVar("T")

__all__ = ["PartitionFiles", "PartsDirectory", "PartitionReader", "is_partitioned", "part_name", "partition_paths"]

GLOB_CHARACTERS = frozenset("*?[")


def is_partitioned(rows: str | None) -> bool:
    """Whether ROWS names many files: a glob pattern, or a directory."""
    return rows is not None and rows != "-" and (bool(GLOB_CHARACTERS & set(rows)) or os.path.isdir(rows))


def partition_paths(rows: str) -> list[str]:
    """The files ROWS names, sorted: a glob's matches, a directory's row files (by extension;
    names starting with '.' or '_', such as _SUCCESS, are not rows), or the one file."""
    if os.path.isdir(rows):
        names = sorted(name for name in os.listdir(rows) if not name.startswith((".", "_"))
                       and extension_of(name) in ROW_EXTENSIONS)
        paths = [os.path.join(rows, name) for name in names]
        if not paths:
            raise InputError(f"the directory {rows} holds no files of rows",
                             source=Source(rows, ""),
                             hint=f"name files of rows ({', '.join(sorted(ROW_EXTENSIONS))}), or a glob")
        return paths
    if GLOB_CHARACTERS & set(rows):
        import glob

        paths = sorted(path for path in glob.glob(rows) if os.path.isfile(path))
        if not paths:
            raise InputError(f"no file matches {rows}", source=Source(rows, ""),
                             hint="check the pattern; quote it ('rows/*.parquet') so that the shell passes it on")
        return paths
    return [rows]


@dataclass(frozen=True)
class PartitionReader:
    """Reads a partition's rows whole, as ``fit`` needs them; picklable, to run on a worker.

    ``given`` is --from (None: by each file's extension, as for one file).
    """

    given: str | None = None

    def __call__(self, path: str) -> object:
        import numpy as np

        from ..execute.distributed import PartitionRows
        from .rows import opened, reader_for

        with opened(path, _no_notice) as (stream, name, _size):
            reader = reader_for(stream, name, row_format(path, self.given), sniffs(path, self.given))
            chunks = list(reader.chunks(reader.columns, [], wait=True))
        if not chunks:
            raise InputError(f"{name} has no rows below its first line", source=Source(name, ""),
                             hint="give every file of rows at least one row, or leave the empty one out")
        columns = {column: np.concatenate([chunk.numbers[column] for chunk in chunks]) for column in reader.columns}
        return PartitionRows(name, columns, np.concatenate([chunk.lines for chunk in chunks]), chunks[0].unit)


@dataclass(frozen=True)
class PartitionFiles:
    """How ``execute.partitioned`` reads partitions and writes parts: picklable, to run on a worker.

    ``given`` is --from (None: by each file's extension); ``written`` the parts' format.
    """

    given: str | None = None
    written: str = "csv"

    @contextmanager
    def open(self, path: str) -> Iterator[RowReader | ParquetReader]:
        """The reader of a partition, its first line read."""
        from .rows import opened, reader_for

        with opened(path, _no_notice) as (stream, name, _size):
            yield reader_for(stream, name, row_format(path, self.given), sniffs(path, self.given))

    def misread(self, reader: RowReader | ParquetReader) -> list[str]:
        from .rows import misread_warnings

        return misread_warnings(reader)

    def part_name(self, index: int, count: int) -> str:
        return part_name(index, count, self.written)

    def parts_directory(self, target: str, replace: bool) -> PartsDirectory:
        return PartsDirectory(target, replace)

    def write_part(self, path: str, names: list[str], plan: ColumnPlan, options: BatchOptions,
                   run: Callable[[Any, Any], T]) -> T:
        """``run(writer, target)`` writing the part ``path`` whole, or nothing of it."""
        from .atomic import StreamedFile
        from .rows import writer_for

        target = StreamedFile(path)
        stream = target if self.written != "parquet" else target.handle
        writer = writer_for(stream, self.written, names, set(plan.passed), options.precision,
                            set(plan.kept) - set(plan.passed))
        try:
            result = run(writer, target)
            target.commit()
        except OSError as error:
            raise OutputError(f"cannot write {path}: {error.strerror or error}",
                              hint="check that the disk is not full, or write somewhere else") from None
        finally:
            target.discard()
        return result


def _umask() -> int:
    mask = os.umask(0o022)  # reading it means setting it: put it back at once
    os.umask(mask)
    return mask


def _no_notice(notice: str) -> None:
    """Partitions are files, never a terminal: there is no notice to show."""


def part_name(index: int, count: int, fmt: str) -> str:
    """'part-00017.parquet': the name of the part written from partition ``index``, numbered
    from 0 with enough digits (at least 5) that the names sort in partition order."""
    extension = {"csv": ".csv", "tsv": ".tsv", "jsonl": ".jsonl", "parquet": ".parquet"}[fmt]
    return f"part-{index:0{max(5, len(str(count - 1)))}d}{extension}"


class PartsDirectory:
    """A directory of parts, written whole or not at all (see the module docstring).

    Use as a context manager: ``path_of(name)`` is where a part goes while it is written;
    ``publish()`` puts the directory in place; leaving without publishing removes it all.
    """

    def __init__(self, target: str, replace: bool) -> None:
        self.target = os.path.normpath(target)
        self.replace = replace
        self.temporary: str | None = None
        if os.path.lexists(self.target) and not replace:
            raise OutputError(f"{target} already exists; a run writes a directory of parts whole, "
                              "so it does not write into one", source=Source(target, ""),
                              hint="give --force to replace it, or name a new directory")

    def __enter__(self) -> PartsDirectory:
        import tempfile

        parent = os.path.dirname(os.path.abspath(self.target))
        try:
            self.temporary = tempfile.mkdtemp(prefix=f".{os.path.basename(self.target)}.partial-", dir=parent)
        except OSError as error:
            raise OutputError(f"cannot write {self.target}: {error.strerror or error}",
                              source=Source(self.target, ""),
                              hint="check that its directory exists and is writable") from None
        os.chmod(self.temporary, 0o777 & ~_umask())  # mkdtemp's is private; the directory is the user's
        return self

    def __exit__(self, *exc: object) -> None:
        """Remove the unpublished parts.  The directory is first renamed out of the way: a worker
        that is still writing a part (its task cancelled too late to stop it) then finds no
        directory to put it in, where removing in place could lose the race and leave it
        holding that part.  A Ctrl-C or SIGTERM lands once the removal is done."""
        import secrets
        import shutil

        from .atomic import _signals_held

        if self.temporary is None:
            return
        doomed, self.temporary = self.temporary, None
        with _signals_held():
            moved = f"{doomed}.removing-{secrets.token_hex(4)}"
            try:
                os.rename(doomed, moved)
                doomed = moved
            except OSError:  # removed where it is
                pass
            shutil.rmtree(doomed, ignore_errors=True)

    def path_of(self, name: str) -> str:
        assert self.temporary is not None
        return os.path.join(self.temporary, name)

    def publish(self, names: Sequence[str]) -> None:
        """Keep only the parts ``names`` (a worker that died mid-part may have left a temporary
        file), then rename the directory into place."""
        import shutil
        import tempfile

        assert self.temporary is not None
        wanted = set(names)
        for name in os.listdir(self.temporary):
            if name not in wanted:
                path = os.path.join(self.temporary, name)
                shutil.rmtree(path) if os.path.isdir(path) and not os.path.islink(path) else os.remove(path)
        missing = [name for name in names if not os.path.exists(os.path.join(self.temporary, name))]
        if missing:
            raise OutputError(f"the part {missing[0]} of {self.target} was not written", source=Source(self.target, ""),
                              hint="the workers must write to the same directory as this machine: a file "
                                   "system they all share, at the same path")
        old = None
        try:
            if os.path.lexists(self.target):
                old = tempfile.mkdtemp(prefix=f".{os.path.basename(self.target)}.replaced-",
                                       dir=os.path.dirname(os.path.abspath(self.target)))
                os.rename(self.target, os.path.join(old, "old"))
            os.rename(self.temporary, self.target)
        except OSError as error:
            if old is not None and not os.path.lexists(self.target):
                os.rename(os.path.join(old, "old"), self.target)  # put the old one back
            raise OutputError(f"cannot write {self.target}: {error.strerror or error}",
                              source=Source(self.target, ""), hint="write somewhere else") from None
        finally:
            if old is not None:
                shutil.rmtree(old, ignore_errors=True)
        self.temporary = None
