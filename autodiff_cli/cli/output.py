"""Where results go: standard output (text, bytes, Rich renderables) and files written whole.

Only the CLI writes: renderers return text, bytes or a renderable, and the commands
hand them to ``emit``, ``print_rich`` or ``write_atomic``.  A failure to write is an
``OutputError`` (exit 1) with a hint; a closed pipe (``| head``) is left to Click,
which ends quietly.
"""

from __future__ import annotations

import errno
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click

from ..errors import OutputError

__all__ = ["Progress", "StdoutBytes", "StreamedFile", "check_writable", "collector_off_until_exit", "colour_disabled", "descriptor_of",
           "emit", "exit_now", "write_whole",
           "is_stream", "is_terminal", "keep_until_exit", "print_rich", "stdout_is_terminal", "write_atomic"]


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
def _writing_stdout() -> Iterator[None]:
    """A failure to write standard output as an OutputError; a closed pipe (``| head``) stays
    BrokenPipeError, which ``cli.main`` turns into a quiet exit 0."""
    try:
        yield
    except BrokenPipeError:
        raise
    except OSError as error:
        raise _output_failed(error) from None


class StdoutBytes:
    """Standard output as a binary stream for writers that write piece by piece: every write
    whole (``write_whole``), every failure an OutputError (a closed pipe stays BrokenPipeError)."""

    def __init__(self) -> None:
        self.buffer = _stdout().buffer

    def write(self, data: bytes) -> None:
        with _writing_stdout():
            write_whole(self.buffer, data)

    def flush(self) -> None:
        with _writing_stdout():
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
    stream = _stdout()
    with _writing_stdout():
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


def colour_disabled(no_color: bool) -> bool:
    """--no-color, or NO_COLOR set to anything but the empty string (no-color.org)."""
    return no_color or bool(os.environ.get("NO_COLOR"))


# Spaces before the end of a line, possibly followed by style codes: Rich pads titles and
# wrapped text to the width, which leaves trailing spaces in files and diffs.
_TRAILING_SPACES = re.compile(r"[ \t]+((?:\x1b\[[0-9;]*m)*)$", re.MULTILINE)


def print_rich(renderable: Any, no_color: bool) -> None:
    """Print a Rich renderable to stdout, never cutting it to the terminal's width.

    The Console is built here, at the edge: colour and terminal detection are fixed
    when it is created.  Rich crops lines to the console width (80 when piped); a
    table whose number columns cannot shrink is given the width it needs instead,
    since a line the terminal wraps is untidy but a cut-off number is wrong.
    Without colour (``--no-color`` or NO_COLOR) there is no styling at all: Rich's own
    NO_COLOR support keeps bold and italics.  Lines carry no trailing spaces.
    """
    from rich.console import Console
    from rich.measure import Measurement

    stream = _stdout()
    plain = colour_disabled(no_color)
    console = Console(file=stream, no_color=plain or None, highlight=False,
                      **({"color_system": None} if plain else {}))
    needed = Measurement.get(console, console.options.update_width(1 << 16), renderable).minimum
    console.width = max(console.width, needed)
    with _writing_stdout(), console.capture() as captured:  # Rich may still write to the file as it ends
        console.print(renderable)
    emit(_TRAILING_SPACES.sub(r"\1", captured.get()))


# --- leaving quickly ---------------------------------------------------------------------

_KEPT: list[object] = []
EXIT_FAST = False  # set by cli.main.run(), which ends the process with os._exit


def keep_until_exit(*objects: object) -> None:
    """Leave ``objects`` to the process's end instead of freeing them as the command returns.

    A million-statement program is ~10 million objects, and freeing them one by one takes
    ~1.5 s after the output is written, for nothing: ``run()`` ends the process without
    tearing its memory down.  Only there; a program calling ``main`` keeps its memory.
    """
    if EXIT_FAST:
        _KEPT.extend(objects)


def collector_off_until_exit() -> None:
    """Turn the cycle collector off for the rest of a process that ends with ``os._exit``.

    For commands that build their data once and write it out (eval, graph, explain,
    check): what they build has no cycles, and lives until the end, yet the collector's
    first pass after each build rescans all of it, ~0.5 s of a million-statement eval.
    Only under ``run()``; a program calling ``main`` keeps its collector.
    """
    if EXIT_FAST:
        import gc

        gc.disable()


def exit_now(code: object) -> None:
    """End the process at once with ``code`` (as ``sys.exit`` reads it), the standard streams
    flushed: the command has written and closed everything else."""
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:  # sys.exit("message") prints the message and exits with 1
        print(code, file=sys.stderr)
        status = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except BrokenPipeError:  # the reader has gone (| head): nothing more can reach it
            pass
        except OSError as error:  # a full disk: what was written is not all there
            if stream is sys.stdout and status == 0:
                status = 1
                _say_on_stderr(f"error: {_output_failed(error).message}")
        except ValueError:  # a closed stream
            pass
    os._exit(status)


def _say_on_stderr(line: str) -> None:
    try:
        os.write(2, f"{line}\n".encode(errors="backslashreplace"))
    except OSError:
        pass


# --- progress ------------------------------------------------------------------------------


# Work shorter than this shows no progress bar at all.
PROGRESS_AFTER = 1.0


class Progress:
    """A progress bar on stderr for long work, at a terminal only.

    Call it with (done, total) as the work advances.  Nothing is shown until
    ``PROGRESS_AFTER`` seconds have passed (short work stays silent), nor when stderr is
    not a terminal (pipes, logs, CI); the bar is removed when the work ends.  Rich is
    imported only once a bar is shown.
    """

    def __init__(self, description: str, *, enabled: bool | None = None, in_bytes: bool = False) -> None:
        import time

        self.description = description
        self.in_bytes = in_bytes  # counts bytes (of a file read): shown as MB
        self.enabled = _stderr_is_terminal() if enabled is None else enabled
        self._clock = time.monotonic
        self._started = self._clock()
        self._bar: Any = None
        self._task: Any = None

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        if self._bar is None:
            if self._clock() - self._started < PROGRESS_AFTER:
                return
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                DownloadColumn,
                MofNCompleteColumn,
                TextColumn,
                TimeRemainingColumn,
            )
            from rich.progress import Progress as RichProgress

            count = DownloadColumn() if self.in_bytes else MofNCompleteColumn()
            self._bar = RichProgress(TextColumn("{task.description}"), BarColumn(), count,
                                     TimeRemainingColumn(), console=Console(stderr=True), transient=True)
            self._bar.start()
            self._task = self._bar.add_task(self.description, total=total)
        self._bar.update(self._task, completed=done, total=total)

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()


def _stderr_is_terminal() -> bool:
    try:
        return sys.stderr is not None and sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


# --- writing files -------------------------------------------------------------------------

# Names of a descriptor this process already has open: /dev/stdout, /dev/fd/3, /proc/self/fd/3
# (bash's >(cmd) passes /dev/fd/63).  Opening such a name again would reopen the file behind it,
# truncating it, and renaming a new file over it would throw away what the shell put there.
_DESCRIPTOR_NAME = re.compile(
    r"/dev/(?:fd/(?P<fd>\d+)|(?P<std>stdin|stdout|stderr))"
    r"|/proc/(?:self|thread-self|(?P<pid>\d+))/fd/(?P<proc_fd>\d+)"
)
_STANDARD = {"stdin": 0, "stdout": 1, "stderr": 2}


def descriptor_of(path: str | os.PathLike[str]) -> int | None:
    """The open descriptor ``path`` names (following symbolic links), or None for any other path."""
    current = os.path.abspath(os.fspath(path))
    for _ in range(40):  # the kernel's own limit on a chain of links
        found = _DESCRIPTOR_NAME.fullmatch(current)
        if found is not None:
            if found["std"]:
                return _STANDARD[found["std"]]
            if found["pid"] and int(found["pid"]) != os.getpid():
                return None  # another process's descriptor: an ordinary path to us
            return int(found["fd"] or found["proc_fd"])
        try:
            link = os.readlink(current)
        except OSError:  # not a link (or gone): an ordinary path
            return None
        current = os.path.normpath(os.path.join(os.path.dirname(current), link))
    return None


def is_stream(path: str) -> bool:
    """Whether ``path`` is a stream rather than a file: an open descriptor, a pipe or a device.

    Such a target has no extension to name a format, and is written into, not replaced.
    """
    import stat

    if descriptor_of(path) is not None:
        return True
    try:
        return not stat.S_ISREG(os.stat(path).st_mode) and not stat.S_ISDIR(os.stat(path).st_mode)
    except OSError:
        return False


def is_terminal(path: str) -> bool:
    """Whether writing to ``path`` would write to a terminal (/dev/stdout at a terminal, /dev/tty)."""
    import stat

    fd = descriptor_of(path)
    if fd == 1:
        return stdout_is_terminal()
    if fd is not None:
        try:
            return os.isatty(fd)
        except OSError:
            return False
    try:
        if not stat.S_ISCHR(os.stat(path).st_mode):
            return False
        probe = os.open(path, os.O_WRONLY | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return False
    try:
        return os.isatty(probe)
    finally:
        os.close(probe)


def _descriptor_is_open(path: str | os.PathLike[str], fd: int) -> None:
    try:
        os.fstat(fd)
    except OSError:
        raise OutputError(f"cannot write {os.fspath(path)}: descriptor {fd} is not open in this process",
                          hint="open it in the shell (e.g. 3>file) or name a file") from None


def _write_descriptor(path: str | os.PathLike[str], fd: int, data: bytes) -> None:
    """Write into an open descriptor at its offset, keeping its flags (O_APPEND) and its file."""
    if fd == 1:
        emit(data)  # standard output itself: the same descriptor, through Python's buffers
        return
    _descriptor_is_open(path, fd)
    if fd == 2 and sys.stderr is not None:
        sys.stderr.flush()  # warnings written before go first
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(fd, view):]
    except BrokenPipeError:
        raise
    except OSError as error:
        raise OutputError(f"cannot write {os.fspath(path)}: {error.strerror or error}",
                          hint="check that the descriptor is open for writing") from None


def _read_only(path: str | os.PathLike[str], status: os.stat_result) -> OutputError:
    getuid = getattr(os, "geteuid", None)
    if getuid is not None and status.st_uid != getuid():
        # chmod would fail: only the owner (or root) can change the file's mode.
        return OutputError(f"cannot write {os.fspath(path)}: the file is read-only and belongs to another user",
                           hint="write somewhere else, or ask its owner to make it writable for you")
    return OutputError(f"cannot write {os.fspath(path)}: the file is read-only",
                       hint="make it writable (chmod u+w), or write somewhere else")


def refuse_overwriting_inputs(option: str, path: str | None, reads: dict[str, str | None]) -> None:
    """A usage error when ``path`` is a file this run reads: ``reads`` maps what each is ("the
    program", "the --values file") to its path, or to program text that names no file.  Writing
    the output there would destroy what it was made from."""
    if path is None or path == "-" or descriptor_of(path) is not None or not os.path.isfile(path):
        return
    for what, read in reads.items():
        if read is None or read == "-" or not os.path.isfile(read):
            continue
        try:
            same = os.path.samefile(path, read)
        except OSError:
            continue
        if same:
            raise click.UsageError(f"{option} {path} is {what} this run reads: writing it would destroy it; "
                                   "write the output somewhere else")


def check_writable(path: str, example: str | None = None) -> None:
    """Fail early, before a long render, if ``path`` clearly cannot be written.

    ``example``, a file name such as ``rows.csv``, is what the hint suggests in place of a directory.
    """
    from pathlib import Path  # here, not at the top: every command's start-up would pay for it

    fd = descriptor_of(path)
    if fd is not None:
        _descriptor_is_open(path, fd)
        return
    try:
        _check_path_writable(Path(path), path, example)
    except OSError as error:  # a directory on the way that cannot be searched
        raise OutputError(f"cannot write {path}: {error.strerror or error}",
                          hint="check the permissions of the directories on the way") from None


def _check_path_writable(target: Any, path: str, example: str | None = None) -> None:
    if target.is_dir():
        raise OutputError(f"cannot write {path}: it is a directory",
                          hint=f"name a file in it, e.g. {os.path.join(path, example)}" if example
                          else "name the file itself, not its directory")
    if target.exists() and not os.access(target, os.W_OK):
        raise _read_only(path, target.stat())
    parent = target.resolve().parent
    if not parent.is_dir():
        raise OutputError(f"cannot write {path}: the directory {parent} does not exist",
                          hint="create it first, or write somewhere else")
    if not target.exists() and not os.access(parent, os.W_OK | os.X_OK):
        raise _cannot_create(path, str(parent))


def _cannot_create(path: str | os.PathLike[str], directory: str) -> OutputError:
    return OutputError(f"cannot write {os.fspath(path)}: cannot create a file in {directory or '.'} "
                       "(permission denied)",
                       hint="the directory is not writable: write somewhere else, or make the directory "
                            "writable")


def write_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` all at once: readers see the old file or the new one, never a part.

    The bytes go to a temporary file in the same directory (a rename is atomic only within
    one file system), which then replaces the target.  On any failure the temporary file is
    removed and an existing target is left as it was.  A symbolic link is followed, so the
    file it points to is replaced, not the link.

    Exceptions, each because replacing would destroy something:

    * a descriptor already open (/dev/stdout, /dev/fd/N, bash's ``>(cmd)``) is written
      into at its offset, so ``>> log`` appends and the file keeps what it had;
    * a target that is not a regular file (a named pipe, a device) is written directly;
    * an existing writable file in a directory where no temporary file can be made is
      overwritten in place, with its size reserved first so that a full disk leaves it as
      it was.

    A read-only file is refused, as the shell's ``>`` would refuse it.
    """
    import stat

    fd = descriptor_of(path)
    if fd is not None:
        _write_descriptor(path, fd, data)
        return
    target = os.path.realpath(os.fspath(path))
    try:
        status = os.stat(target)
    except OSError:
        status = None  # a new file: os.open below applies the umask, as for any new file
    if status is not None and not stat.S_ISREG(status.st_mode):
        _write_in_place(path, target, data)
        return
    if status is not None and not os.access(target, os.W_OK):
        raise _read_only(path, status)
    directory, base = os.path.split(target)
    temporary = None
    try:
        try:
            descriptor, temporary = _create_temporary(directory, base)
        except PermissionError:
            if status is None:
                raise _cannot_create(path, directory) from None
            _overwrite_in_place(path, target, data)
            return
        with os.fdopen(descriptor, "wb") as handle:
            write_whole(handle, data)
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


def _overwrite_in_place(path: str | os.PathLike[str], target: str, data: bytes) -> None:
    """Replace a file's content through the file itself (the shell's ``>`` does the same).

    Used when the directory takes no temporary file but the file is writable.  The new size
    is reserved before a byte changes, so a full disk fails with the old content intact;
    only an interruption in the middle of the write itself could leave a part.
    """
    descriptor = os.open(target, os.O_WRONLY | getattr(os, "O_BINARY", 0))  # not O_TRUNC: not yet
    try:
        reserve = getattr(os, "posix_fallocate", None)
        if reserve is not None and data:
            try:
                reserve(descriptor, 0, len(data))
            except OSError as error:
                import errno

                if error.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
                    raise  # ENOSPC, EFBIG, EIO: nothing was changed
        view = memoryview(data)
        offset = 0
        while offset < len(data):
            offset += os.pwrite(descriptor, view[offset:], offset)
        os.ftruncate(descriptor, len(data))
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _write_in_place(path: str | os.PathLike[str], target: str, data: bytes) -> None:
    try:
        with open(target, "wb") as handle:
            write_whole(handle, data)
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
    """A file written piece by piece that appears whole or not at all: ``write_atomic``'s
    rules for output too large to hold in memory.

    The pieces go to a hidden temporary file next to the target; ``commit`` flushes it to
    disk and renames it over the target.  ``discard`` (also on leaving a ``with`` block
    without committing: an error, Ctrl-C, SIGTERM) removes it and leaves an existing
    target as it was.  As for ``write_atomic``: an open descriptor (/dev/stdout, /dev/fd/N)
    and a target that is not a regular file (a pipe, a device) are written into directly;
    a read-only file is refused; an existing file in a directory that takes no temporary
    file is filled from a temporary file elsewhere at ``commit``, its size reserved first.
    ``handle`` is the binary file the pieces go to, for writers that need a real file.
    """

    def __init__(self, path: str) -> None:
        import stat

        self.path = path
        self.temporary: str | None = None
        self.in_place: str | None = None  # the target to fill at commit (its directory takes no file)
        self.mode: int | None = None
        self.closes = True
        fd = descriptor_of(path)
        try:
            if fd is not None:
                _descriptor_is_open(path, fd)
                self.handle: Any = sys.stdout.buffer if fd == 1 and sys.stdout is not None else \
                    os.fdopen(fd, "wb", closefd=False)
                self.closes = fd != 1
                return
            self.target = os.path.realpath(path)
            try:
                status: os.stat_result | None = os.stat(self.target)
            except OSError:
                status = None
            if status is not None and not stat.S_ISREG(status.st_mode):
                self.handle = open(self.target, "wb")
                return
            if status is not None and not os.access(self.target, os.W_OK):
                raise _read_only(path, status)
            self.mode = None if status is None else stat.S_IMODE(status.st_mode)
            directory, base = os.path.split(self.target)
            try:
                descriptor, self.temporary = _create_temporary(directory, base)
            except PermissionError:
                if status is None:
                    raise _cannot_create(path, directory) from None
                import tempfile

                self.in_place = self.target
                descriptor, self.temporary = _create_temporary(tempfile.gettempdir(), base)
            self.handle = os.fdopen(descriptor, "wb")
        except OSError as error:
            raise OutputError(f"cannot write {path}: {error.strerror or error}",
                              hint="check the path and its permissions") from None

    def write(self, data: bytes) -> None:
        try:
            write_whole(self.handle, data)
        except BrokenPipeError:
            raise
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
            if self.closes:
                self.handle.close()
            if self.in_place is not None and self.temporary is not None:
                _copy_in_place(self.temporary, self.in_place)
                os.unlink(self.temporary)
                self.temporary = None
            elif self.temporary is not None:
                if self.mode is not None:
                    os.chmod(self.temporary, self.mode)
                os.replace(self.temporary, self.target)
                self.temporary = None
        except OSError as error:
            self.discard()
            raise OutputError(f"cannot write {self.path}: {error.strerror or error}",
                              hint="check that the disk is not full, or write somewhere else") from None
        self.closes = False

    def discard(self) -> None:
        if self.closes:
            try:
                self.handle.close()
            except OSError:
                pass
            self.closes = False
        if self.temporary is not None:
            try:
                os.unlink(self.temporary)
            except OSError:
                pass
            self.temporary = None

    def __enter__(self) -> StreamedFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.discard()  # after commit there is nothing left to discard


def _copy_in_place(source: str, target: str) -> None:
    """Fill ``target`` with ``source``'s bytes through the file itself, its size reserved first
    (``_overwrite_in_place`` for a file on disk rather than bytes in memory)."""
    size = os.path.getsize(source)
    descriptor = os.open(target, os.O_WRONLY | getattr(os, "O_BINARY", 0))
    try:
        reserve = getattr(os, "posix_fallocate", None)
        if reserve is not None and size:
            try:
                reserve(descriptor, 0, size)
            except OSError as error:
                import errno

                if error.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
                    raise  # ENOSPC, EFBIG, EIO: nothing was changed
        offset = 0
        with open(source, "rb") as handle:
            while block := handle.read(1 << 20):
                view = memoryview(block)
                while view:
                    written = os.pwrite(descriptor, view, offset)
                    offset += written
                    view = view[written:]
        os.ftruncate(descriptor, size)
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def format_of_file(path: str, given: str | None, extensions: dict[str, str], formats: str) -> str:
    """The format to write ``path`` in: ``given`` (``--format``), else the one its extension implies.

    A name whose extension says nothing is a usage error listing ``extensions`` and the
    ``formats`` of ``--format``; a ``--format`` that disagrees with the extension wins, with a warning.
    """
    from .common import warn

    implied = extensions.get(os.path.splitext(path)[1].lower())
    if given is None:
        if implied is None:
            raise click.UsageError(
                f"cannot tell the format from the file name {path!r}: use one of the extensions "
                f"{' '.join(extensions)}, or give --format {formats}"
            )
        return implied
    if implied is not None and implied != given:
        warn([f"writing {given.upper()} to {path}, whose extension says {implied.upper()}"])
    return given
