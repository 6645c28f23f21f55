"""What the person at the terminal sees: Rich output on stdout, warnings and notices on stderr,
and progress bars.

Only the CLI prints: renderers return text, bytes or a renderable, and the commands hand
them to ``files.stdout.emit``, ``print_rich`` or ``files.atomic.write_atomic``.  Readers below
this layer return their warnings and take a callback for notices (``notify``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import click

from ..errors import printable, shorten
from ..files.stdout import emit, stdout_guarded, stdout_stream
from ..files.streams import stderr_is_terminal, stdout_is_terminal

__all__ = ["PROGRESS_AFTER", "Progress", "colour_disabled", "notify", "print_rich", "reading_progress", "warn"]


# How many warnings a command prints, and how long one may be, before the rest is counted.
WARNINGS_SHOWN = 20
WARNING_LENGTH = 500


def warn(messages: list[str]) -> None:
    """Each message on stderr as ``warning: ...``: escaped, at most ``WARNINGS_SHOWN`` of them,
    each cut to ``WARNING_LENGTH`` characters, with what was left out counted."""
    for message in messages[:WARNINGS_SHOWN]:
        text = printable(shorten(message))
        if len(text) > WARNING_LENGTH:
            text = f"{text[:WARNING_LENGTH - 60]}... ({len(text):,} characters in all)"
        click.echo(f"warning: {text}", err=True)
    if len(messages) > WARNINGS_SHOWN:
        click.echo(f"warning: ... and {len(messages) - WARNINGS_SHOWN:,} more warnings", err=True)


def notify(message: str) -> None:
    """A notice on stderr for the person at the terminal (what a command waits for)."""
    click.echo(message, err=True)


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

    stream = stdout_stream()
    plain = colour_disabled(no_color)
    console = Console(file=stream, no_color=plain or None, highlight=False,
                      **({"color_system": None} if plain else {}))
    needed = Measurement.get(console, console.options.update_width(1 << 16), renderable).minimum
    console.width = max(console.width, needed)
    with stdout_guarded(), console.capture() as captured:  # Rich may still write to the file as it ends
        console.print(renderable)
    emit(_TRAILING_SPACES.sub(r"\1", captured.get()))


# Rows above which a Rich table is not the default at a terminal: Rich lays a table out as a whole,
# which took 7.6 s for 10,000 variables and minutes for 100,000 (plain text: about 2 s).
RICH_ROWS = 2_000


def layout_for(chosen: str | None, rich: str, rows: int) -> str:
    """The layout to write: the one asked for, else ``rich`` at a terminal (plain in a pipe); a
    default Rich layout of more than ``RICH_ROWS`` rows becomes plain, with a note saying why."""
    if chosen is not None:
        return chosen
    if not stdout_is_terminal():
        return "plain"
    if rows > RICH_ROWS:
        notify(f"note: {rows:,} rows are written in the plain layout, which is fast at this size "
               f"(--format {rich} asks for the {rich} one)")
        return "plain"
    return rich


# --- progress ------------------------------------------------------------------------------


# Work shorter than this shows no progress bar at all.
PROGRESS_AFTER = 1.0


class Progress:
    """A progress bar on stderr for long work, at a terminal only.

    Call it with (done, total) as the work advances, and any ``fields`` its ``fields_text``
    shows.  Nothing is shown until ``PROGRESS_AFTER`` seconds have passed (short work stays
    silent), nor when stderr is not a terminal (pipes, logs, CI); the bar is removed when the
    work ends.  Rich is imported only once a bar is shown.  The count is items done of all
    (``5/10``), MB of a file read (``in_bytes``) or ``count_text``; ``every`` is the least time
    between two redraws (the last is always drawn); ``bar_width`` the bar's columns.
    """

    def __init__(self, description: str, *, enabled: bool | None = None, in_bytes: bool = False,
                 count_text: str | None = None, fields_text: str | None = None,
                 fields: dict[str, str] | None = None, every: float = 0.0, bar_width: int = 40) -> None:
        import time

        self.description = description
        self.in_bytes = in_bytes  # counts bytes (of a file read): shown as MB
        self.count_text = count_text
        self.fields_text = fields_text
        self.fields = fields or {}
        self.every = every
        self.bar_width = bar_width
        self.enabled = stderr_is_terminal() if enabled is None else enabled
        self._clock = time.monotonic
        self._started = self._clock()
        self._drawn = -float("inf")
        self._bar: Any = None
        self._task: Any = None

    def __call__(self, done: int, total: int, **fields: str) -> None:
        if not self.enabled:
            return
        now = self._clock()
        if self._bar is None:
            if now - self._started < PROGRESS_AFTER:
                return
            self._start(total)
        elif now - self._drawn < self.every and done != total:
            return
        self._drawn = now
        self._bar.update(self._task, completed=done, total=total, **fields)

    def _start(self, total: int) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            MofNCompleteColumn,
            TextColumn,
            TimeRemainingColumn,
        )
        from rich.progress import Progress as RichProgress

        if self.count_text is not None:
            columns: list[Any] = [TextColumn("{task.description}"), TextColumn(self.count_text),
                                  BarColumn(bar_width=self.bar_width)]
        else:
            count = DownloadColumn() if self.in_bytes else MofNCompleteColumn()
            columns = [TextColumn("{task.description}"), BarColumn(bar_width=self.bar_width), count]
        if self.fields_text is not None:
            columns.append(TextColumn(self.fields_text))
        self._bar = RichProgress(*columns, TimeRemainingColumn(), console=Console(stderr=True), transient=True)
        self._bar.start()
        self._task = self._bar.add_task(self.description, total=total, **self.fields)

    def say(self, message: str) -> bool:
        """Show ``message`` in place of the description, if a bar is shown (else False)."""
        if self._bar is None:
            return False
        self._bar.update(self._task, description=message)
        return True

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()


@contextmanager
def reading_progress(size: int | None, quiet: bool, name: str) -> Iterator[Callable[[int], None]]:
    """``Progress`` over the bytes of a rows file: at a terminal, for a file of known size, after
    the first second; never with --quiet."""
    if quiet or not size:
        yield lambda consumed: None
        return
    with Progress(f"reading {os.path.basename(name)}", in_bytes=True) as bar:
        yield lambda consumed: bar(min(consumed, size), size)
