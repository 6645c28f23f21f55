"""DOT text -> SVG, PNG or PDF bytes, by the system Graphviz or the bundled one.

Two backends run Graphviz's layout:

* ``system``: the Graphviz ``dot`` program, when it is on PATH (any format, PDF included);
* ``bundled``: ``graphviz-pure``, a self-contained port of ``dot`` installed from PyPI with
  this package, so a plain ``pip install`` renders SVG and PNG.  It cannot write PDF.

``auto`` prefers the system one.  Either runs as a subprocess with a timeout; every
failure is a ``RenderError`` saying what to do, never a traceback.  Nothing here prints
or writes files: the CLI decides where the bytes go.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import AutodiffError

__all__ = [
    "DEFAULT_TIMEOUT",
    "FORMATS",
    "RENDERERS",
    "RenderError",
    "RenderTimeout",
    "Renderer",
    "bundled_program",
    "choose_renderer",
    "render",
    "system_program",
]

FORMATS = ("svg", "png", "pdf")  # what a renderer produces; DOT text needs no renderer
RENDERERS = ("auto", "system", "bundled")
BUNDLED_FORMATS = ("svg", "png")  # graphviz-pure 0.2 has no PDF output
DEFAULT_TIMEOUT = 120.0  # seconds; far above any graph under the default node limit
SYSTEM_PROGRAM = "dot"
BUNDLED_PROGRAM = "graphviz-pure"

INSTALL_GRAPHVIZ = (
    "install Graphviz: 'apt-get install graphviz' (Debian, Ubuntu), 'dnf install graphviz' "
    "(Fedora), 'brew install graphviz' (macOS), 'winget install graphviz' (Windows)"
)


class RenderError(AutodiffError):
    """The graph could not be drawn: no renderer for the format, or the renderer failed."""


class RenderTimeout(RenderError):
    """The renderer was stopped because it ran past its time limit."""


@dataclass(frozen=True)
class Renderer:
    """A program that lays out DOT text: which backend it is and where it lives."""

    name: str  # "system" or "bundled"
    program: str

    @property
    def formats(self) -> tuple[str, ...]:
        return FORMATS if self.name == "system" else BUNDLED_FORMATS


def system_program() -> str | None:
    """The path of Graphviz's ``dot`` on PATH, or None."""
    return shutil.which(SYSTEM_PROGRAM)


def bundled_program() -> str | None:
    """The path of ``graphviz-pure``, or None when it is not installed.

    The environment this Python runs in is searched first (pip puts the program next to
    ``sys.executable``, in ``bin`` or ``Scripts``), so a virtual environment that is not
    activated still finds its own copy; then PATH (a ``pip install --user``, ``pipx``).
    """
    executable = BUNDLED_PROGRAM + (".exe" if os.name == "nt" else "")
    # sys.executable is not resolved: in a venv it is a symlink whose own directory is bin/.
    directories = [Path(sys.executable).parent if sys.executable else None]
    scripts = sysconfig.get_path("scripts")
    directories.append(Path(scripts) if scripts else None)
    for directory in directories:
        if directory is None:
            continue
        candidate = directory / executable
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which(BUNDLED_PROGRAM)


def choose_renderer(fmt: str, choice: str = "auto") -> Renderer:
    """The backend that will draw ``fmt`` for ``--renderer choice``, or a RenderError saying why none can."""
    if fmt not in FORMATS:
        raise RenderError(f"cannot render the format {fmt!r}", hint=f"the formats are: {', '.join(FORMATS)}")
    if choice not in RENDERERS:
        raise RenderError(f"unknown renderer {choice!r}", hint=f"choose one of: {', '.join(RENDERERS)}")
    if choice in ("auto", "system"):
        program = system_program()
        if program is not None:
            return Renderer("system", program)
        if choice == "system":
            raise RenderError(
                "--renderer system: Graphviz's 'dot' program is not on PATH",
                hint=f"{INSTALL_GRAPHVIZ}; or use --renderer bundled (SVG and PNG only)",
            )
        if fmt not in BUNDLED_FORMATS:
            raise RenderError(
                f"{fmt.upper()} output needs the system Graphviz, and its 'dot' program is not on PATH",
                hint=f"{INSTALL_GRAPHVIZ}; or write SVG or PNG (--format svg|png), which need no install",
            )
    if fmt not in BUNDLED_FORMATS:
        raise RenderError(
            f"the bundled renderer ({BUNDLED_PROGRAM}) cannot write {fmt.upper()}",
            hint=f"write SVG or PNG instead, or {INSTALL_GRAPHVIZ} and use --renderer system",
        )
    program = bundled_program()
    if program is None:
        raise RenderError(
            f"the bundled renderer ({BUNDLED_PROGRAM}) is not installed",
            hint=f"reinstall it with 'pip install {BUNDLED_PROGRAM}' in this environment, "
            f"or {INSTALL_GRAPHVIZ}",
        )
    return Renderer("bundled", program)


def render(dot_source: str, fmt: str, renderer: str | Renderer = "auto", *,
           timeout: float | None = DEFAULT_TIMEOUT) -> bytes:
    """Lay out ``dot_source`` and return the picture as ``fmt`` (svg, png or pdf) bytes.

    ``timeout`` is in seconds (None: wait as long as it takes); the renderer is stopped
    when it runs out.
    """
    import subprocess

    backend = renderer if isinstance(renderer, Renderer) else choose_renderer(fmt, renderer)
    if fmt not in backend.formats:
        raise RenderError(f"the {backend.name} renderer cannot write {fmt.upper()}",
                          hint=f"it writes: {', '.join(backend.formats)}")
    command = [backend.program, f"-T{fmt}"]
    try:
        completed = _run_to_completion(command, dot_source.encode("utf-8"), timeout)
    except subprocess.TimeoutExpired:
        raise RenderTimeout(
            f"{_describe(backend)} did not finish within {timeout:g} seconds, so it was stopped",
            hint="draw a smaller graph (--output NAME draws the graph of one variable), or write "
            "--format dot, which needs no layout, and lay it out separately",
        ) from None
    except OSError as error:
        raise RenderError(
            f"cannot run {_describe(backend)}: {error.strerror or error}",
            hint=_fix_for(backend),
        ) from None
    if completed.returncode != 0 or not completed.stdout:
        detail = completed.stderr.decode("utf-8", "replace").strip()
        if completed.returncode < 0:
            detail = f"killed by signal {-completed.returncode}"
        elif not detail:
            detail = f"exit status {completed.returncode}" if completed.returncode else "no output"
        lines = detail.splitlines()
        notes = lines[1:6] + ([f"... ({len(lines) - 6} more lines)"] if len(lines) > 6 else [])
        raise RenderError(
            f"{_describe(backend)} failed to render {fmt.upper()}: {lines[0]}",
            notes=notes,
            hint=_fix_for(backend),
        )
    return _reproducible(completed.stdout) if fmt == "pdf" else completed.stdout


def _run_to_completion(command: list[str], data: bytes, timeout: float | None) -> Any:
    """``subprocess.run`` for the renderer, with the signals that stop us held back while it starts.

    A SIGTERM or Ctrl-C that lands between the fork and ``Popen`` returning would unwind
    before anything knows the child exists, leaving the layout running as an orphan (and,
    where nothing reaps orphans, a zombie).  Held back until the child is in hand, the
    signal is let through inside the block that kills and reaps it.
    """
    import signal
    import subprocess

    held = {signal.SIGINT, signal.SIGTERM}
    can_hold = hasattr(signal, "pthread_sigmask")
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, held) if can_hold else None
    try:
        # In UTC, cairo's PDF date ends in "Z" wherever we run, not in the local offset ("+09'00").
        process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, env={**os.environ, "TZ": "UTC"},
                                   preexec_fn=_tied_to_us(timeout))
    except BaseException:
        if can_hold:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)
        raise
    with process:
        try:
            if can_hold:
                signal.pthread_sigmask(signal.SIG_SETMASK, previous)  # a pending signal lands here
            stdout, stderr = process.communicate(data, timeout=timeout)
        except BaseException:  # the time limit, Ctrl-C, SIGTERM: the layout must not outlive us
            process.kill()
            process.communicate()
            raise
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


def _tied_to_us(timeout: float | None) -> Any:
    """What the renderer's child runs before the layout program: it dies with us and within its
    time.  On Linux the kernel sends it SIGKILL when we die, whatever kills us (even SIGKILL,
    which no handler sees, so the ``kill`` in ``_run_to_completion`` never runs); and everywhere
    a limit on its CPU time ends a layout that the timeout could not stop (we were stopped).
    None where there is nothing to set (Windows)."""
    if os.name != "posix":
        return None
    import resource

    prctl = _prctl()
    parent = os.getpid()
    seconds = None if timeout is None else int(timeout) + 5  # the timeout acts first when we are alive

    def in_the_child() -> None:  # after fork, before exec: system calls only, nothing that allocates much
        if prctl is not None:
            prctl(PR_SET_PDEATHSIG, 9)  # SIGKILL when the thread that forked us ends
            if os.getppid() != parent:  # we died before that was set: nothing would send it now
                os._exit(1)
        if seconds is not None:
            try:
                _, hard = resource.getrlimit(resource.RLIMIT_CPU)
                if hard == resource.RLIM_INFINITY or hard > seconds:
                    resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds + 5))
            except (OSError, ValueError):
                pass

    return in_the_child


PR_SET_PDEATHSIG = 1


def _prctl() -> Any:
    """Linux's ``prctl``, loaded before the fork (loading a library in the child is not safe)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        function = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    function.restype = ctypes.c_int
    function.argtypes = [ctypes.c_int, ctypes.c_ulong]
    return function


# cairo writes the time of the run into every PDF: /CreationDate (D:YYYYMMDDHHmmSS...).
_LAST_FOUR_DIGIT_YEAR = 253402300799  # 9999-12-31 23:59:59 UTC
_PDF_DATE = re.compile(rb"(/CreationDate\s*\(D:)(\d{14})")


def _reproducible(pdf: bytes) -> bytes:
    """The PDF with its creation date fixed, so the same graph gives the same bytes.

    The date becomes SOURCE_DATE_EPOCH (the reproducible-builds convention) or, without
    it, 1970-01-01.  It is replaced digit for digit, so the byte offsets of the PDF's
    cross-reference table stay right.
    """
    import time

    try:
        epoch = int(os.environ.get("SOURCE_DATE_EPOCH", "0"))
    except ValueError:
        epoch = 0
    # Clamped to the years 1970-9999: a date of another length would move every offset after it.
    stamp = time.strftime("%Y%m%d%H%M%S", time.gmtime(min(max(0, epoch), _LAST_FOUR_DIGIT_YEAR))).encode("ascii")
    return _PDF_DATE.sub(lambda found: found.group(1) + stamp, pdf, count=1)


def _describe(backend: Renderer) -> str:
    kind = "the system Graphviz" if backend.name == "system" else "the bundled renderer"
    return f"{kind} ({backend.program})"


def _fix_for(backend: Renderer) -> str:
    if backend.name == "system":
        return "try --renderer bundled for SVG or PNG, or reinstall Graphviz"
    return f"try --renderer system, or reinstall it with 'pip install --force-reinstall {BUNDLED_PROGRAM}'"
