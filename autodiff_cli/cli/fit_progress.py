"""What ``autodiff fit`` shows while it trains, and how it is stopped: the progress on stderr
(a bar at a terminal, a line every N steps otherwise), and Ctrl-C and SIGTERM.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from ..files.streams import stderr_is_terminal
from .console import Progress

if TYPE_CHECKING:
    from ..execute.fit import Measurement, Step

__all__ = ["Interrupts", "Reporter", "bar_parts", "fitted", "stderr_columns", "wrapped"]


class Interrupts:
    """Ctrl-C during training: the first asks it to stop after the current step (and says so),
    a second interrupts the step.  SIGTERM interrupts the step at once (a scheduler's time
    limit: there may be no time for another).  While the results are written, a first Ctrl-C
    waits for them (and says so); a second, or a SIGTERM, abandons them, so that a write that
    cannot go on (a named pipe no one reads) does not hold the process for ever.  Each file is
    written whole or not at all, so an abandoned one is left as it was."""

    NOTICE = "stopping after this step (Ctrl-C again to stop now)"
    WRITING_NOTICE = "writing the results (Ctrl-C again to abandon them)"

    def __init__(self) -> None:
        self.count = 0
        self.terminated = False
        self.ignoring = False
        self.notify: Callable[[str], None] = lambda message: None
        self.previous: dict[int, Any] = {}

    def __enter__(self) -> Interrupts:
        import signal  # here: its import is not free, and only fit needs it

        for signum in (signal.SIGINT, signal.SIGTERM):
            try:
                self.previous[signum] = signal.signal(signum, self._handle)
            except ValueError:  # not the main thread, where signals are not delivered anyway
                break
        return self

    def __exit__(self, *exc_info: object) -> None:
        import signal

        for signum, handler in self.previous.items():
            signal.signal(signum, handler)

    def _handle(self, signum: int, frame: object) -> None:
        import signal

        if signum == signal.SIGTERM:
            self.terminated = True
        else:
            self.count += 1
        if self.terminated or self.count > 1:
            raise KeyboardInterrupt
        self.notify(self.WRITING_NOTICE if self.ignoring else self.NOTICE)

    def requested(self) -> bool:
        return self.count > 0 or self.terminated

    def writing(self) -> None:
        """Training is over and the results are being written."""
        self.ignoring = True

    @property
    def status(self) -> int:
        """The exit status of an interrupted run: 143 after SIGTERM, else 130."""
        return 128 + 15 if self.terminated else 128 + 2


class Reporter:
    """Progress on stderr: at a terminal, a bar once training has taken a second (``Progress``:
    short runs stay silent), showing the latest measurement; otherwise a plain line every
    ``every`` steps, or (``every`` None) at each step measured, and at the first and the last.
    A plain line shows the validation loss and the metrics measured at its own step, and none
    at a step not measured: never an earlier step's.  Both keep to the width
    (``stderr_columns``): the bar shows the numbers that fit, each whole; a plain line goes on,
    indented, on the next."""

    def __init__(self, steps: int, quiet: bool, every: int | None, held_out: bool = False,
                 metrics: list[str] | None = None) -> None:
        self.steps = steps
        self.quiet = quiet
        self.every = every
        self.held_out = held_out
        self.metrics = metrics or []
        self.latest: Measurement | None = None
        self.width = stderr_columns()
        self.description = "fitting"
        count = f"step {steps:,}/{steps:,}"
        # The bar gets what the widest numbers leave of the width, between BAR_WIDTHS.
        self.fixed = len(self.description) + len(count) + TIME_WIDTH + COLUMN_GAPS
        self.bar_width = max(BAR_WIDTHS[0], min(BAR_WIDTHS[1], self.width - self.fixed - NUMBERS_WIDTH))
        self.bar = Progress(self.description, enabled=not quiet and stderr_is_terminal(),
                            count_text="step {task.completed:,}/{task.total:,}",
                            fields_text="{task.fields[numbers]}", fields={"numbers": "loss -  grad norm -"},
                            every=0.1, bar_width=self.bar_width)

    def __enter__(self) -> Reporter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.bar.__exit__()

    def notice(self, message: str) -> None:
        """Say something at once, from a signal handler: on the bar, or as a raw line (a buffered
        write could be the one the handler interrupted)."""
        if self.quiet:
            return
        if self.bar.say(message):
            self.fixed += max(0, len(message) - len(self.description))  # the numbers make room for it
            self.description = message
            return
        try:
            os.write(2, f"{message}\n".encode())
        except OSError:
            pass

    def measured(self, measurement: Measurement) -> None:
        self.latest = measurement

    def step(self, record: Step) -> None:
        if self.quiet:
            return
        if self.bar.enabled:
            parts = [f"loss {record.loss:.6g}", f"grad norm {record.grad_norm:.3g}"]
            if self.latest is not None:
                parts += bar_parts(self.latest)
            # Narrow: the loss, then the first measured number (validation loss), then the gradient norm.
            priority = [0, *range(2, len(parts)), 1] if len(parts) > 2 else None
            self.bar(record.step, self.steps,
                     numbers=fitted(parts, self.width - self.fixed - self.bar_width, priority))
        elif self._line_due(record.step):
            click.echo(wrapped(self._line_parts(record), self.width), err=True)

    def _measured_at(self, step: int) -> bool:
        return self.latest is not None and self.latest.step == step

    def _line_due(self, step: int) -> bool:
        if step in (1, self.steps):
            return True
        return self._measured_at(step) if self.every is None else step % self.every == 0

    def _line_parts(self, record: Step) -> list[str]:
        """The parts of a plain progress line: the step, loss, gradient norm, learning rate, and
        what was measured at this step, if anything was."""
        from ..execute.training_text import measured_text

        parts = [f"step {record.step}/{self.steps}", f"loss {record.loss:.6g}", f"grad norm {record.grad_norm:.3g}",
                 f"lr {record.lr:.6g}"]
        if self._measured_at(record.step):
            assert self.latest is not None
            measured = measured_text(self.latest, PART_SEPARATOR)
            parts += measured.split(PART_SEPARATOR) if measured else []
        return parts


PART_SEPARATOR = "  "  # between the numbers of a progress line, and of the bar
# What the bar's line holds beside its numbers: the time left ('0:00:01', '10:00:00'), the gaps
# between its five columns, and the bar itself, at least 10 columns and at most 40 (Rich's width).
TIME_WIDTH = 8
COLUMN_GAPS = 4
BAR_WIDTHS = (10, 40)
# The numbers' width the bar leaves room for before it grows: loss, grad norm, val loss, a metric.
NUMBERS_WIDTH = 70


def stderr_columns() -> int:
    """The width progress is written to: stderr's terminal's, else $COLUMNS, else 80."""
    try:
        return os.get_terminal_size(2).columns
    except OSError:
        pass
    columns = os.environ.get("COLUMNS", "")
    return int(columns) if columns.isdigit() and int(columns) > 0 else 80


def wrapped(parts: list[str], width: int) -> str:
    """``parts`` joined by two spaces into lines of at most ``width`` columns, each line after
    the first indented by two; a part is never split (one wider than the width has its own line)."""
    lines = [parts[0]]
    for part in parts[1:]:
        joined = f"{lines[-1]}{PART_SEPARATOR}{part}"
        if len(joined) <= width:
            lines[-1] = joined
        else:
            lines.append(f"  {part}")
    return "\n".join(lines)


def fitted(parts: list[str], width: int, priority: list[int] | None = None) -> str:
    """Those of ``parts`` that fit in ``width`` columns, joined by two spaces in their order: taken
    in the order of ``priority`` (indices; default: as they come) while they fit, and the first
    of them whatever its width.  A number is left out whole, never cut."""
    shown: set[int] = set()
    used = -len(PART_SEPARATOR)
    for index in priority if priority is not None else range(len(parts)):
        needed = len(PART_SEPARATOR) + len(parts[index])
        if shown and used + needed > width:
            continue
        shown.add(index)
        used += needed
    return PART_SEPARATOR.join(part for index, part in enumerate(parts) if index in shown)


def bar_parts(measurement: Measurement) -> list[str]:
    """A measurement on the progress bar, short: ['val loss 0.1074', 'accuracy 0.9957/0.9652']
    (training/validation)."""
    parts = [] if measurement.validation_loss is None else [f"val loss {measurement.validation_loss:.4g}"]
    for name, value in measurement.training.items():
        held = measurement.validation.get(name)
        parts.append(f"{name} {value:.4g}" + ("" if held is None else f"/{held:.4g}"))
    return parts
