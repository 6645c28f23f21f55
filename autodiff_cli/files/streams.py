"""What a path or a standard stream is: an open descriptor, a pipe or a device, a terminal.

Every "is this a terminal" question of the tool is answered here, by ``is_a_terminal``.
"""

from __future__ import annotations

import os
import re
import stat
import sys
from typing import Any

__all__ = ["descriptor_of", "is_a_terminal", "is_stream", "is_terminal", "names_stdin", "names_stdout",
           "stderr_is_terminal", "stdin_is_piped", "stdin_is_terminal", "stdout_is_terminal", "waiting_notice"]


def is_a_terminal(stream: Any) -> bool:
    """Whether ``stream`` is a terminal; a closed, missing (None) or unusual stream is not."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def stdout_is_terminal() -> bool:
    return is_a_terminal(sys.stdout)


def stderr_is_terminal() -> bool:
    return is_a_terminal(sys.stderr)


def stdin_is_terminal() -> bool:
    return is_a_terminal(sys.stdin)


def waiting_notice(what: str, it: str = "it") -> str | None:
    """Reading stdin at a terminal: what the command waits for, and how to finish (otherwise it
    seems to hang).  None when stdin is not a terminal."""
    if sys.stdin is None or not stdin_is_terminal():
        return None
    end = "Ctrl-Z then Enter" if os.name == "nt" else "Ctrl-D"
    return f"reading {what} from the terminal; end {it} with {end} (Ctrl-C cancels)"


def stdin_is_piped() -> bool:
    """Whether standard input has something to read when no argument names it: a pipe or a file
    redirected to it does.  A terminal does not, nor /dev/null, which cron and CI jobs give a
    command (a character device that is not a terminal): a forgotten argument is then a usage
    error, not an empty program or no rows."""
    if sys.stdin is None or stdin_is_terminal():
        return False
    try:
        return not stat.S_ISCHR(os.fstat(sys.stdin.fileno()).st_mode)
    except (AttributeError, OSError, ValueError):  # a stream with no descriptor (an embedding program's)
        return True


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


def names_stdin(path: str | None) -> bool:
    """'-', /dev/stdin, /dev/fd/0, /proc/self/fd/0: standard input however it is spelled."""
    return path is not None and (path == "-" or descriptor_of(path) == 0)


def names_stdout(path: str) -> bool:
    """'-', /dev/stdout, /dev/fd/1...: standard output however it is spelled."""
    return path == "-" or descriptor_of(path) == 1


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
