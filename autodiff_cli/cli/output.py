"""Where results go: standard output (text, bytes, Rich renderables) and files written whole.

Only the CLI writes: renderers return text, bytes or a renderable, and the commands
hand them to ``emit``, ``print_rich`` or ``write_atomic``.  A failure to write is an
``OutputError`` (exit 1) with a hint; a closed pipe (``| head``) is left to Click,
which ends quietly.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from ..errors import OutputError

__all__ = ["StreamedFile", "check_writable", "emit", "print_rich", "stdout_is_terminal", "write_atomic"]


def stdout_is_terminal() -> bool:
    stream = sys.stdout
    try:
        return stream is not None and stream.isatty()
    except (AttributeError, ValueError):  # a closed or unusual stream is not a terminal
        return False


def _stdout() -> Any:
    if sys.stdout is None:
        raise OutputError("standard output is closed, so there is nowhere to write the result",
                          hint="run the command with its output open, e.g. redirected to a file")
    return sys.stdout


def _output_failed(error: OSError) -> OutputError:
    return OutputError(f"cannot write to standard output: {error.strerror or error}",
                       hint="check that the disk is not full, or write somewhere else")


def emit(data: str | bytes) -> None:
    """Write ``data`` to stdout and flush it, so that a full disk is an error, not a lost result.

    A closed pipe (``| head``) raises BrokenPipeError, which Click turns into a quiet exit.
    """
    stream = _stdout()
    try:
        if isinstance(data, str):
            stream.write(data)
        else:
            stream.flush()  # anything written as text goes first
            buffer = getattr(stream, "buffer", None)
            if buffer is None:  # a text-only stream (an embedding program)
                try:
                    stream.write(data.decode("utf-8"))
                except UnicodeDecodeError:
                    raise OutputError("standard output takes only text here, and this is binary",
                                      hint="write it to a file with -o FILE") from None
            else:
                buffer.write(data)
                buffer.flush()
        stream.flush()
    except BrokenPipeError:
        raise
    except OSError as error:
        raise _output_failed(error) from None


def print_rich(renderable: Any, no_color: bool) -> None:
    """Print a Rich renderable to stdout, never cutting it to the terminal's width.

    The Console is built here, at the edge: colour and terminal detection are fixed
    when it is created.  Rich crops lines to the console width (80 when piped); a
    table whose number columns cannot shrink is given the width it needs instead,
    since a line the terminal wraps is untidy but a cut-off number is wrong.
    """
    from rich.console import Console
    from rich.measure import Measurement

    stream = _stdout()
    console = Console(file=stream, no_color=no_color or None, highlight=False)
    needed = Measurement.get(console, console.options.update_width(1 << 16), renderable).minimum
    console.width = max(console.width, needed)
    try:
        console.print(renderable)
        stream.flush()
    except BrokenPipeError:
        raise
    except OSError as error:
        raise _output_failed(error) from None


# --- writing files -------------------------------------------------------------------------


def check_writable(path: str) -> None:
    """Fail early, before a long render, if ``path`` clearly cannot be written."""
    from pathlib import Path  # here, not at the top: every command's start-up would pay for it

    target = Path(path)
    if target.is_dir():
        raise OutputError(f"cannot write {path}: it is a directory",
                          hint="give a file name, e.g. -o graph.svg")
    if target.exists() and not os.access(target, os.W_OK):
        raise OutputError(f"cannot write {path}: the file is read-only",
                          hint="make it writable (chmod u+w), or write somewhere else")
    parent = target.resolve().parent
    if not parent.is_dir():
        raise OutputError(f"cannot write {path}: the directory {parent} does not exist",
                          hint="create it first, or write somewhere else")


def write_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` all at once: readers see the old file or the new one, never a part.

    The bytes go to a temporary file in the same directory (a rename is atomic only within
    one file system), which then replaces the target.  On any failure the temporary file is
    removed and an existing target is left as it was.  A symbolic link is followed, so the
    file it points to is replaced, not the link.  A target that is not a regular file (a
    pipe, /dev/stdout, a device) is written to directly: replacing it would destroy it.
    A read-only file is refused, as the shell's ``>`` would refuse it.
    """
    import stat

    target = os.path.realpath(os.fspath(path))
    try:
        status = os.stat(target)
    except OSError:
        status = None  # a new file: os.open below applies the umask, as for any new file
    if status is not None and not stat.S_ISREG(status.st_mode):
        _write_in_place(path, target, data)
        return
    if status is not None and not os.access(target, os.W_OK):
        raise OutputError(f"cannot write {os.fspath(path)}: the file is read-only",
                          hint="make it writable (chmod u+w), or write somewhere else")
    directory, base = os.path.split(target)
    temporary = None
    try:
        descriptor, temporary = _create_temporary(directory, base)
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())  # the data is on disk before the name points at it
        if status is not None:
            os.chmod(temporary, stat.S_IMODE(status.st_mode))
        os.replace(temporary, target)
        temporary = None
    except OSError as error:
        raise OutputError(f"cannot write {os.fspath(path)}: {error.strerror or error}",
                          hint="check the path and its permissions, and that the disk is not full") from None
    finally:
        if temporary is not None:
            try:
                os.unlink(temporary)
            except OSError:
                pass


def _write_in_place(path: str | os.PathLike[str], target: str, data: bytes) -> None:
    try:
        with open(target, "wb") as handle:
            handle.write(data)
    except OSError as error:
        raise OutputError(f"cannot write {os.fspath(path)}: {error.strerror or error}",
                          hint="check that something reads the pipe or device, or write to a file") from None


def _create_temporary(directory: str, base: str) -> tuple[int, str]:
    """A new, empty, hidden file next to the target, opened for writing."""
    import secrets
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    for _ in range(100):
        name = os.path.join(directory, f".{base}.{secrets.token_hex(4)}.tmp")
        try:
            return os.open(name, flags, 0o666), name
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary file name in {directory}")


# --- writing a file as it is produced ----------------------------------------------------


class StreamedFile:
    """A file written piece by piece that appears whole or not at all (``write_atomic``'s rule).

    The pieces go to a hidden temporary file next to the target; ``commit`` flushes it to
    disk and renames it over the target.  ``discard`` (also on leaving a ``with`` block
    by an exception, Ctrl-C included) removes it and leaves an existing target as it
    was.  A target that is not a regular file (a pipe, /dev/stdout) is written directly.
    """

    def __init__(self, path: str) -> None:
        import stat

        self.path = path
        self.target = os.path.realpath(path)
        try:
            status = os.stat(self.target)
        except OSError:
            status = None
        self.mode = None if status is None else stat.S_IMODE(status.st_mode)
        self.temporary: str | None = None
        try:
            if status is not None and not stat.S_ISREG(status.st_mode):
                self.handle = open(self.target, "wb")  # noqa: SIM115 - closed by commit or discard
                return
            if status is not None and not os.access(self.target, os.W_OK):
                raise OutputError(f"cannot write {path}: the file is read-only",
                                  hint="make it writable (chmod u+w), or write somewhere else")
            descriptor, self.temporary = _create_temporary(*os.path.split(self.target))
            self.handle = os.fdopen(descriptor, "wb")
        except OSError as error:
            raise OutputError(f"cannot write {path}: {error.strerror or error}",
                              hint="check the path and its permissions") from None

    def write(self, data: bytes) -> None:
        try:
            self.handle.write(data)
        except OSError as error:
            raise OutputError(f"cannot write {self.path}: {error.strerror or error}",
                              hint="check that the disk is not full, or write somewhere else") from None

    def flush(self) -> None:
        """Nothing to do until ``commit``: the file only appears whole."""

    def commit(self) -> None:
        try:
            self.handle.flush()
            if self.temporary is not None:
                os.fsync(self.handle.fileno())  # the data is on disk before the name points at it
            self.handle.close()
            if self.temporary is not None:
                if self.mode is not None:
                    os.chmod(self.temporary, self.mode)
                os.replace(self.temporary, self.target)
                self.temporary = None
        except OSError as error:
            self.discard()
            raise OutputError(f"cannot write {self.path}: {error.strerror or error}",
                              hint="check that the disk is not full, or write somewhere else") from None

    def discard(self) -> None:
        try:
            self.handle.close()
        except OSError:
            pass
        if self.temporary is not None:
            try:
                os.unlink(self.temporary)
            except OSError:
                pass
            self.temporary = None

    def __enter__(self) -> StreamedFile:
        return self

    def __exit__(self, kind: object, value: object, traceback: object) -> None:
        if kind is not None or not self.handle.closed:  # not committed: leave no trace
            self.discard()
