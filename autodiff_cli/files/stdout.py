"""Standard output, written so that nothing is lost without an error: every write whole, flushed,
and a failure an ``OutputError`` with a hint.  A closed pipe (``| head``) stays BrokenPipeError,
which the command line turns into a quiet exit 0."""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..errors import OutputError

__all__ = ["StdoutBytes", "emit", "output_failed", "stdout_closed", "stdout_guarded", "stdout_stream", "write_whole"]

def stdout_stream() -> Any:
    if sys.stdout is None:
        raise OutputError("standard output is closed, so there is nowhere to write the result",
                          hint="run the command with its output open, e.g. redirected to a file")
    return sys.stdout


def output_failed(error: OSError) -> OutputError:
    return OutputError(f"cannot write to standard output: {error.strerror or error}",
                       hint="check that the disk is not full, or write somewhere else")


def write_whole(handle: Any, data: bytes) -> None:
    """Write all of ``data`` to a binary file.  Its ``write`` may take only part (a disk filling
    up in the middle of a large write returns a short count, not an error); writing the rest
    then raises the error, which a single call would never see."""
    view = memoryview(data)
    while view:
        written = handle.write(view)
        if not written:  # None from a non-blocking stream, or 0: it takes nothing more
            raise OSError(errno.EAGAIN, "the output takes no more data")
        view = view[written:]


@contextmanager
def stdout_guarded() -> Iterator[None]:
    """A failure to write standard output as an OutputError; a closed pipe (``| head``) stays
    BrokenPipeError, which ``cli.main`` turns into a quiet exit 0."""
    try:
        yield
    except BrokenPipeError:
        raise
    except OSError as error:
        raise output_failed(error) from None


class StdoutBytes:
    """Standard output as a binary stream for writers that write piece by piece: every write
    whole (``write_whole``), every failure an OutputError (a closed pipe stays BrokenPipeError)."""

    def __init__(self) -> None:
        self.buffer = stdout_stream().buffer

    def write(self, data: bytes) -> None:
        with stdout_guarded():
            write_whole(self.buffer, data)

    def flush(self) -> None:
        with stdout_guarded():
            self.buffer.flush()


def _encoded(stream: Any, text: str) -> bytes | None:
    """``text`` as ``stream`` would encode it, or None where it also translates line ends
    (Windows), which only its own ``write`` does."""
    if os.linesep != "\n" or getattr(stream, "buffer", None) is None:
        return None
    return text.encode(stream.encoding or "utf-8", stream.errors or "strict")


def emit(data: str | bytes) -> None:
    """Write ``data`` to stdout and flush it, so that a full disk is an error, not a lost result.

    A closed pipe (``| head``) raises BrokenPipeError, which ``cli.main`` turns into a quiet exit 0.
    """
    stream = stdout_stream()
    with stdout_guarded():
        stream.flush()  # anything written before goes first
        if isinstance(data, str):
            encoded = _encoded(stream, data)
            if encoded is None:
                stream.write(data)
            else:
                data = encoded
        if isinstance(data, bytes):
            buffer = getattr(stream, "buffer", None)
            if buffer is None:  # a text-only stream (an embedding program)
                try:
                    stream.write(data.decode("utf-8"))
                except UnicodeDecodeError:
                    raise OutputError("standard output takes only text here, and this is binary",
                                      hint="write it to a file with -o FILE") from None
            else:
                write_whole(buffer, data)
                buffer.flush()
        stream.flush()


def stdout_closed() -> None:
    """The reader of stdout has gone (``| head``): the command stops quietly and exits 0.  The
    descriptor is pointed at /dev/null so that the last flush of what is buffered cannot fail too."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # no real descriptor (a test's captured stdout)
        pass
