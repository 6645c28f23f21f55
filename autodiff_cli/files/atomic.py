"""Files written whole or not at all: ``write_atomic`` for bytes in memory, ``StreamedFile`` for
output written as it is produced, and ``check_writable`` to fail before a long run, not after it.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from ..errors import OutputError
from .stdout import emit, write_whole
from .streams import descriptor_of

__all__ = ["StreamedFile", "check_writable", "overwritten_input", "write_atomic"]


def overwritten_input(path: str | None, reads: dict[str, str | None]) -> str | None:
    """What ``path`` is of the files this run reads, if it is one: ``reads`` maps what each is
    ("the program", "the --values file") to its path, or to program text that names no file.
    Writing the output there would destroy what it was made from."""
    if path is None or path == "-" or descriptor_of(path) is not None or not os.path.isfile(path):
        return None
    for what, read in reads.items():
        if read is None or read == "-" or not os.path.isfile(read):
            continue
        try:
            same = os.path.samefile(path, read)
        except OSError:
            continue
        if same:
            return what
    return None


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
