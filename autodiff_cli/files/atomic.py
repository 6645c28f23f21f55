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

__all__ = ["StreamedFile", "check_writable", "keep_elsewhere", "overwritten_input", "tell_with", "write_atomic"]


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
        raise OutputError(f"cannot write {_shown(path)}: descriptor {fd} is not open in this process",
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
        raise OutputError(f"cannot write {_shown(path)}: {error.strerror or error}",
                          hint="check that the descriptor is open for writing") from None


def _read_only(path: str | os.PathLike[str], status: os.stat_result) -> OutputError:
    if _on_read_only_mount(os.fspath(path)):
        # chmod cannot help: nothing on this file system can be written, whoever owns the file.
        return OutputError(f"cannot write {_shown(path)}: the file system it is on is mounted read-only",
                           hint="write somewhere else, on a file system that is writable")
    getuid = getattr(os, "geteuid", None)
    if getuid is not None and status.st_uid != getuid():
        # chmod would fail: only the owner (or root) can change the file's mode.
        return OutputError(f"cannot write {_shown(path)}: the file is read-only and belongs to another user",
                           hint="write somewhere else, or ask its owner to make it writable for you")
    return OutputError(f"cannot write {_shown(path)}: the file is read-only",
                       hint="make it writable (chmod u+w), or write somewhere else")


def _on_read_only_mount(path: str) -> bool:
    statvfs = getattr(os, "statvfs", None)
    if statvfs is None:
        return False
    try:
        return bool(statvfs(path).f_flag & getattr(os, "ST_RDONLY", 1))
    except OSError:
        return False


def _shown(path: str | os.PathLike[str]) -> str:
    """``path`` as a message shows it whole: error messages cut a long run of characters in the
    middle unless it has a slash, so a long name without one is shown as ``./name``."""
    text = os.fspath(path)
    return text if os.sep in text or "/" in text or len(text) <= 40 else os.path.join(".", text)


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
        raise OutputError(f"cannot write {_shown(path)}: {error.strerror or error}",
                          hint="check the permissions of the directories on the way") from None


def _check_path_writable(target: Any, path: str, example: str | None = None) -> None:
    if target.is_dir():
        raise OutputError(f"cannot write {_shown(path)}: it is a directory",
                          hint=f"name a file in it, e.g. {os.path.join(path, example)}" if example
                          else "name the file itself, not its directory")
    if target.exists() and not os.access(target, os.W_OK):
        raise _read_only(path, target.stat())
    parent = target.resolve().parent
    if not parent.is_dir():
        raise OutputError(f"cannot write {_shown(path)}: the directory {parent} does not exist",
                          hint="create it first, or write somewhere else")
    if not target.exists() and not os.access(parent, os.W_OK | os.X_OK):
        raise _cannot_create(path, str(parent))


def _cannot_create(path: str | os.PathLike[str], directory: str) -> OutputError:
    return OutputError(f"cannot write {_shown(path)}: cannot create a file in {directory or '.'} "
                       "(permission denied)",
                       hint="the directory is not writable: write somewhere else, or make the directory "
                            "writable")


def write_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` all at once: readers see the old file or the new one, never a part.

    The bytes go to a temporary file in the same directory (a rename is atomic only within
    one file system), which then replaces the target.  On any failure the temporary file is
    removed and an existing target is left as it was.  A symbolic link is followed, so the
    file it points to is replaced, not the link.  The target is replaced, not written into:
    another hard link to the old file keeps the old content.

    The temporary file is created mode 0600 and given the target's mode (or a new file's,
    after the umask) only when it is complete.  Where the system has ``O_TMPFILE`` it has no
    name until then, so a run killed with SIGKILL leaves nothing behind; elsewhere its name
    (``_temporary_name``) lets the next run remove it.

    Exceptions, each because replacing would destroy something:

    * a descriptor already open (/dev/stdout, /dev/fd/N, bash's ``>(cmd)``) is written
      into at its offset, so ``>> log`` appends and the file keeps what it had;
    * a target that is not a regular file (a named pipe, a device) is written directly;
    * an existing writable file in a directory where no temporary file can be made is
      overwritten in place (``_fill_in_place``): its old content copied first to a named file
      in the temporary directory (refused if it cannot be), the free space checked, Ctrl-C and
      SIGTERM held back until it is on disk, and the old content put back if the write fails.

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
        status = None  # a new file: it gets the mode the umask gives any new file
    if status is not None and not stat.S_ISREG(status.st_mode):
        _write_in_place(path, target, data)
        return
    if status is not None and not os.access(target, os.W_OK):
        raise _read_only(path, status)
    directory, base = os.path.split(target)
    try:
        try:
            descriptor, name = _create_temporary(directory, base)
        except PermissionError:
            if status is None:
                raise _cannot_create(path, directory) from None
            _overwrite_in_place(path, target, data)
            return
        temporary = _Temporary(descriptor, name, directory, base)
        try:
            with os.fdopen(descriptor, "wb", closefd=False) as handle:
                write_whole(handle, data)
                handle.flush()
            os.fsync(descriptor)  # the data is on disk before the name points at it
            temporary.publish(target, None if status is None else stat.S_IMODE(status.st_mode))
        finally:
            temporary.discard()
    except OSError as error:
        raise _failed(path, error, "check the path and its permissions, and that the disk is not full") from None


def _failed(path: str | os.PathLike[str], error: OSError, hint: str) -> OutputError:
    import errno

    if error.errno == errno.ENAMETOOLONG:
        return OutputError(f"cannot write {_shown(path)}: {error.strerror}",
                           hint="use a shorter file name (at most 255 bytes) or a shorter path")
    return OutputError(f"cannot write {_shown(path)}: {error.strerror or error}", hint=hint)


def _overwrite_in_place(path: str | os.PathLike[str], target: str, data: bytes) -> None:
    """Replace a file's content through the file itself (the shell's ``>`` does the same), for
    a directory that takes no temporary file but a file that is writable."""
    view = memoryview(data)

    def fill(descriptor: int) -> None:
        offset = 0
        while offset < len(data):
            offset += os.pwrite(descriptor, view[offset:], offset)

    try:
        _fill_in_place(target, len(data), fill)
    except OSError as error:
        raise _failed(path, error, "check that the disk is not full, or write somewhere else") from None


def _fill_in_place(target: str, size: int, fill: Any) -> None:
    """Give ``target`` new content, ``size`` bytes that ``fill(descriptor)`` writes, so that no
    interruption or failure loses the old content or leaves a file that looks complete and is not.

    The old content is first copied to a named file in the temporary directory (on disk before
    anything else happens), and ``tell_with``'s notice says where: a run killed with SIGKILL
    leaves that copy behind for the user.  No copy, no overwrite: the write is refused.  Then
    the free space is checked (a disk clearly too full fails here, with nothing changed), the
    file is emptied and the new content written from its start, so that at any moment it is
    the old content or a beginning of the new one, shorter than the whole: never zeros, never
    a mix.  From there until the new content is on disk Ctrl-C and SIGTERM are held back (they
    take effect once it is); a failure in between (a full disk, an I/O error) puts the old
    content back from the copy before the error is raised.  The copy is removed once it is not
    needed: after the new content is on disk, or the old content is back.
    """
    descriptor = os.open(target, os.O_RDWR | getattr(os, "O_BINARY", 0))  # not O_TRUNC: not yet
    try:
        backup = _Backup(target, descriptor)
        try:
            try:
                _check_room(descriptor, size)
            except BaseException:  # nothing changed: the copy is not needed
                backup.remove()
                raise
            _notify(f"{_shown(target)}: its directory takes no new file, so it is overwritten in place; its old "
                    f"content is kept in {backup.path} until the new content is whole (if this run is killed, "
                    f"copy it back from there)")
            with _signals_held():
                try:
                    os.ftruncate(descriptor, 0)
                    fill(descriptor)
                    os.fsync(descriptor)
                except BaseException:
                    if backup.restore(descriptor):
                        backup.remove()
                    raise
                backup.remove()
        finally:
            backup.close()
    finally:
        os.close(descriptor)


_NOTICES: list[Any] = []


def tell_with(notify: Any) -> None:
    """Where notices about the user's files go (the CLI's warnings): the path of a copy of an old
    file kept while the file is overwritten in place.  None by default: a library prints nothing."""
    _NOTICES[:] = [notify]


def _notify(message: str) -> None:
    for notify in _NOTICES:
        notify(message)


def _check_room(descriptor: int, size: int) -> None:
    """Raise ENOSPC when the file system clearly has no room for ``size`` bytes in the place of
    the file's own blocks.  (Reserving the space with ``posix_fallocate`` would make the file
    full-size, zeros included, for a moment.)  A quota it cannot see fails later, while writing,
    and the old content is put back then."""
    import errno

    fstatvfs = getattr(os, "fstatvfs", None)
    if fstatvfs is None:
        return
    try:
        room = fstatvfs(descriptor)
        held = os.fstat(descriptor).st_blocks * 512
    except (OSError, AttributeError):
        return
    if room.f_bavail * room.f_frsize + held < size:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


class _Backup:
    """A file's content before it is overwritten in place, in a named file of the temporary
    directory: to put back if the overwrite fails, and for the user if the run is killed."""

    def __init__(self, target: str, descriptor: int) -> None:
        import tempfile

        self.size = os.fstat(descriptor).st_size
        directory = _temporary_directory()
        stem, extension = os.path.splitext(os.path.basename(target))
        try:
            self.copy, self.path = tempfile.mkstemp(prefix=f"{stem[:150]}.old-", suffix=extension[:20],
                                                    dir=directory)  # mode 0600: the old content may be private
        except OSError as error:
            raise _NoBackup(target, directory, error) from None
        try:
            _copy_between(descriptor, self.copy, self.size)
            os.fsync(self.copy)  # on disk before the target is touched
        except BaseException as error:  # Ctrl-C too: the target is untouched, the copy not needed
            self.close()
            self.remove()
            if isinstance(error, OSError):
                raise _NoBackup(target, directory, error) from None
            raise

    def restore(self, descriptor: int) -> bool:
        """Put the old content back; False if that failed (the copy then stays for the user)."""
        try:
            os.ftruncate(descriptor, 0)
            _copy_between(self.copy, descriptor, self.size)
            os.fsync(descriptor)
            return True
        except OSError:
            return False  # the error that made us restore is the one to report

    def close(self) -> None:
        if self.copy >= 0:
            os.close(self.copy)
            self.copy = -1

    def remove(self) -> None:
        try:
            os.unlink(self.path)
        except OSError:
            pass


def _copy_between(source: int, target: int, size: int) -> None:
    """The first ``size`` bytes of descriptor ``source`` to the same offsets of ``target``."""
    offset = 0
    while offset < size:
        block = os.pread(source, min(1 << 20, size - offset), offset)
        if not block:
            raise OSError(5, "the file ended early")
        view = memoryview(block)
        while view:
            written = os.pwrite(target, view, offset)
            offset += written
            view = view[written:]


class _NoBackup(OutputError):
    """An in-place overwrite refused: no copy of the old content could be kept first."""

    def __init__(self, target: str, directory: str, error: OSError) -> None:
        super().__init__(f"cannot write {_shown(target)}: its directory takes no new file, so it would be "
                         f"overwritten in place, and no copy of its old content could be kept first in {directory} "
                         f"({error.strerror or error})",
                         hint="write somewhere else, or set TMPDIR to a directory with room for a copy of the file")


class _signals_held:
    """Ctrl-C and SIGTERM held back until the block ends, where they land.

    Their handlers are swapped for one that notes them, and the ones noted are raised again
    at the end.  (Blocking them in this thread would not do: the kernel gives a process's
    signal to any thread that does not block it, NumPy's among them, and Python then runs
    the handler in this thread all the same.)  Handlers can be set in the main thread only;
    elsewhere the block is not protected, as signals are not delivered there anyway.
    """

    def __enter__(self) -> None:
        import signal
        import threading

        self.caught: list[int] = []
        self.previous: dict[int, Any] = {}
        if threading.current_thread() is not threading.main_thread():
            return
        for signum in (signal.SIGINT, signal.SIGTERM):
            self.previous[signum] = signal.signal(signum, lambda caught, frame: self.caught.append(caught))

    def __exit__(self, *exc: object) -> None:
        import signal

        for signum, handler in self.previous.items():
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)
        for signum in dict.fromkeys(self.caught):
            signal.raise_signal(signum)  # now it takes effect, as it would have


def _write_in_place(path: str | os.PathLike[str], target: str, data: bytes) -> None:
    try:
        with open(target, "wb") as handle:
            write_whole(handle, data)
    except OSError as error:
        raise OutputError(f"cannot write {_shown(path)}: {error.strerror or error}",
                          hint="check that something reads the pipe or device, or write to a file") from None


# --- temporary files ------------------------------------------------------------------------

TEMPORARY_SUFFIX = ".autodiff.tmp"  # what a temporary file's name ends with: the next run may remove it


def _temporary_directory() -> str:
    import tempfile

    return tempfile.gettempdir()


_FLAGS = os.O_RDWR | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)


def _create_temporary(directory: str, base: str) -> tuple[int, str | None]:
    """A new, empty file in ``directory`` for the content of ``base``, open for reading and
    writing, mode 0600: unnamed (``O_TMPFILE``, its name None) where the system allows it,
    else hidden and named by ``_temporary_name``.  Raises PermissionError when the directory
    takes no new file."""
    descriptor = _without_name(directory)
    if descriptor is not None:
        return descriptor, None
    _remove_abandoned(directory, base)
    for _ in range(100):
        name = _temporary_name(directory, base)
        try:
            return os.open(name, _FLAGS | os.O_CREAT | os.O_EXCL, 0o600), name
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary file name in {directory}")


def _without_name(directory: str) -> int | None:
    """A new file in ``directory`` that has no name (``O_TMPFILE``), or None where the system or
    the file system has no such files, or ``publish`` could not name it (no /proc)."""
    import errno

    unnamed = getattr(os, "O_TMPFILE", None)
    if unnamed is None or not os.path.isdir("/proc/self/fd"):
        return None
    try:
        return os.open(directory or ".", _FLAGS | unnamed, 0o600)
    except OSError as error:
        if error.errno in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOENT):
            return None
        raise  # EACCES: the directory takes no file, named or not


def _unnamed_file(directory: str) -> int:
    """A file no one else can see, gone when closed (a backup)."""
    descriptor = _without_name(directory)
    if descriptor is not None:
        return descriptor
    import tempfile

    with tempfile.TemporaryFile(dir=directory, buffering=0) as handle:  # created 0600, unlinked at once
        return os.dup(handle.fileno())


def _temporary_name(directory: str, base: str) -> str:
    """``.BASE.PID-XXXXXXXX.autodiff.tmp`` in ``directory``: hidden, recognisable, with the
    writer's process id, and ``BASE`` cut short so that the name fits the file system's limit
    (a 255-byte target name must still get a temporary file)."""
    import secrets

    tail = f".{os.getpid()}-{secrets.token_hex(4)}{TEMPORARY_SUFFIX}"
    try:
        limit = os.pathconf(directory or ".", "PC_NAME_MAX")
    except (OSError, ValueError, AttributeError):
        limit = 255
    room = max(1, limit - 1 - len(tail.encode()))
    head = os.fsencode(base)[:room]
    return os.path.join(directory, "." + os.fsdecode(head) + tail)


def _remove_abandoned(directory: str, base: str) -> None:
    """Remove the temporary files of ``base`` that runs killed before they finished left in
    ``directory`` (their process is gone)."""
    prefix = os.path.basename(_temporary_name(directory, base)).rsplit(".", 3)[0] + "."
    try:
        entries = [entry.name for entry in os.scandir(directory or ".") if entry.name.startswith(prefix)]
    except OSError:
        return
    for entry in entries:
        writer = entry[len(prefix):].partition("-")[0]
        if not entry.endswith(TEMPORARY_SUFFIX) or not writer.isdigit() or _alive(int(writer)):
            continue
        try:
            os.unlink(os.path.join(directory, entry))
        except OSError:
            pass


def _alive(pid: int) -> bool:
    if pid == os.getpid() or os.name == "nt":  # Windows' os.kill would end the process, not ask about it
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError, ValueError):
        return True  # another user's process, or one we cannot ask about: keep its file
    return True


_NEW_FILE_MODE: list[int] = []


def _new_file_mode() -> int:
    """The mode a new file gets from ``open``: 0666 less the umask."""
    if not _NEW_FILE_MODE:
        umask = os.umask(0o022)
        os.umask(umask)
        _NEW_FILE_MODE.append(0o666 & ~umask)
    return _NEW_FILE_MODE[0]


class _Temporary:
    """A temporary file being written to take the place of a target in its directory."""

    def __init__(self, descriptor: int, name: str | None, directory: str, base: str) -> None:
        self.descriptor: int | None = descriptor
        self.name = name
        self.directory, self.base = directory, base

    def publish(self, target: str, mode: int | None) -> None:
        """Give it ``mode`` (the target's, or a new file's), then put it in the target's place."""
        assert self.descriptor is not None
        if hasattr(os, "fchmod"):
            os.fchmod(self.descriptor, _new_file_mode() if mode is None else mode)
        if self.name is None:  # unnamed: give it a name now, the only moment it has one of its own
            directory = os.open(self.directory or ".", os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
            try:
                for _ in range(100):
                    name = _temporary_name(self.directory, self.base)
                    try:
                        os.link(f"/proc/self/fd/{self.descriptor}", os.path.basename(name), dst_dir_fd=directory,
                                follow_symlinks=True)
                    except FileExistsError:
                        continue
                    self.name = name
                    break
                else:
                    raise FileExistsError(f"no free temporary file name in {self.directory}")
            finally:
                os.close(directory)
        elif not hasattr(os, "fchmod"):
            os.chmod(self.name, _new_file_mode() if mode is None else mode)
        os.replace(self.name, target)
        self.name = None

    def discard(self) -> None:
        """Close it, and remove it unless it has replaced its target."""
        if self.descriptor is not None:
            try:
                os.close(self.descriptor)
            except OSError:
                pass
            self.descriptor = None
        if self.name is not None:
            try:
                os.unlink(self.name)
            except OSError:
                pass
            self.name = None


class StreamedFile:
    """A file written piece by piece that appears whole or not at all: ``write_atomic``'s
    rules for output too large to hold in memory.

    The pieces go to a temporary file next to the target (unnamed where the system allows it,
    mode 0600); ``commit`` flushes it to disk and puts it in the target's place, with the
    target's mode.  ``discard`` (also on leaving a ``with`` block without committing: an
    error, Ctrl-C, SIGTERM) removes it and leaves an existing target as it was.  As for
    ``write_atomic``: an open descriptor (/dev/stdout, /dev/fd/N) and a target that is not a
    regular file (a pipe, a device) are written into directly; a read-only file is refused;
    an existing file in a directory that takes no temporary file is filled in place at
    ``commit`` (``_fill_in_place``) from a temporary file in the temporary directory.
    ``handle`` is the binary file the pieces go to, for writers that need a real file.
    """

    def __init__(self, path: str) -> None:
        import stat

        self.path = path
        self.temporary: _Temporary | None = None
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
                descriptor, name = _create_temporary(directory, base)
            except PermissionError:
                if status is None:
                    raise _cannot_create(path, directory) from None
                self.in_place = self.target
                directory = _temporary_directory()
                descriptor, name = _create_temporary(directory, base)
            self.temporary = _Temporary(descriptor, name, directory, base)
            self.handle = os.fdopen(descriptor, "wb", closefd=False)
        except OSError as error:
            raise _failed(path, error, "check the path and its permissions") from None

    def write(self, data: bytes) -> None:
        try:
            write_whole(self.handle, data)
        except BrokenPipeError:
            raise
        except OSError as error:
            raise OutputError(f"cannot write {_shown(self.path)}: {error.strerror or error}",
                              hint="check that the disk is not full, or write somewhere else") from None

    def flush(self) -> None:
        """Nothing to do until ``commit``: the file only appears whole."""

    def commit(self) -> None:
        try:
            self.handle.flush()
            temporary = self.temporary
            if temporary is not None and temporary.descriptor is not None:
                if self.in_place is not None:
                    source = temporary.descriptor
                    size = os.fstat(source).st_size
                    _fill_in_place(self.in_place, size, lambda target: _copy_between(source, target, size))
                    temporary.discard()
                else:
                    os.fsync(temporary.descriptor)  # the data is on disk before the name points at it
                    temporary.publish(self.target, self.mode)
            if self.closes:
                self.handle.close()
        except OSError as error:
            self.discard()
            raise _failed(self.path, error, "check that the disk is not full, or write somewhere else") from None
        finally:
            if self.temporary is not None and self.temporary.name is None:
                self.temporary.discard()  # published (or never named): only the descriptor to close
                self.temporary = None
        self.closes = False

    def discard(self) -> None:
        if self.closes:
            try:
                self.handle.close()
            except OSError:
                pass
            self.closes = False
        if self.temporary is not None:
            self.temporary.discard()
            self.temporary = None

    def __enter__(self) -> StreamedFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.discard()  # after commit there is nothing left to discard


def keep_elsewhere(near: str | None, data: bytes) -> str | None:
    """Write ``data`` to a new private file (mode 0600) next to ``near`` (a file that could not be
    written), else in the temporary directory, and return its path; None if neither takes it.
    For results too costly to lose, such as fit's parameters after hours of training."""
    import tempfile

    directories = []
    name = "autodiff-output"
    if near is not None and near != "-" and descriptor_of(near) is None:
        directory, name = os.path.split(os.path.realpath(near))
        directories.append(directory)
    directories.append(_temporary_directory())
    stem, extension = os.path.splitext(name)
    for directory in directories:
        try:
            descriptor, path = tempfile.mkstemp(prefix=f"{stem[:150]}.kept-", suffix=extension[:20], dir=directory)
        except OSError:
            continue
        try:
            with os.fdopen(descriptor, "wb") as handle:
                write_whole(handle, data)
                handle.flush()
                os.fsync(handle.fileno())
            return path
        except OSError:
            try:
                os.unlink(path)
            except OSError:
                pass
    return None
