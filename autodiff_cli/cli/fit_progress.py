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

__all__ = ["Interrupts", "Reporter", "bar_text"]


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
    short runs stay silent); otherwise a plain line every N steps.  The validation loss and
    the metrics shown are the latest measured."""

    def __init__(self, steps: int, quiet: bool, every: int, held_out: bool = False,
                 metrics: list[str] | None = None) -> None:
        self.steps = steps
        self.quiet = quiet
        self.every = every
        self.held_out = held_out
        self.metrics = metrics or []
        self.latest: Measurement | None = None
        fields_text = "loss {task.fields[loss]}  grad norm {task.fields[grad_norm]}"
        if held_out or self.metrics:
            fields_text += "  {task.fields[measured]}"
        self.bar = Progress("fitting", enabled=not quiet and stderr_is_terminal(),
                            count_text="step {task.completed:,}/{task.total:,}", fields_text=fields_text,
                            fields={"loss": "-", "grad_norm": "-", "measured": ""}, every=0.1)
        self.width = _stderr_columns() if self.bar.enabled else 0

    def __enter__(self) -> Reporter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.bar.__exit__()

    def notice(self, message: str) -> None:
        """Say something at once, from a signal handler: on the bar, or as a raw line (a buffered
        write could be the one the handler interrupted)."""
        if self.quiet or self.bar.say(message):
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
            measured = "" if self.latest is None else bar_text(self.latest, self.width)
            self.bar(record.step, self.steps, loss=f"{record.loss:.6g}", grad_norm=f"{record.grad_norm:.3g}",
                     measured=measured)
        elif record.step % self.every == 0 or record.step == 1:
            from ..execute.training_text import measured_text

            measured = ""
            if self.latest is not None and self.latest.step <= record.step:
                measured = measured_text(self.latest)
                if measured and self.latest.step != record.step:  # measured once an epoch, or every --eval-every
                    measured += f" (at step {self.latest.step:,})"
            click.echo(f"step {record.step}/{self.steps}  loss {record.loss:.6g}  "
                       f"grad norm {record.grad_norm:.3g}  lr {record.lr:.6g}{'  ' if measured else ''}{measured}",
                       err=True)


# Terminals narrower than this show one measured number on the bar (the validation loss, or
# the first metric): the bar, its counts and the training loss take some 70 columns.
WIDE_TERMINAL = 130


def _stderr_columns() -> int:
    """The width of the terminal stderr is (the bar's), 80 when it cannot be told."""
    try:
        return os.get_terminal_size(2).columns
    except OSError:
        return 80


def bar_text(measurement: Measurement, width: int) -> str:
    """A measurement on the progress bar, short: 'val loss 0.1074  accuracy 0.9957/0.9652'
    (training/validation), or its first number only on a terminal narrower than ``WIDE_TERMINAL``."""
    parts = [] if measurement.validation_loss is None else [f"val loss {measurement.validation_loss:.4g}"]
    for name, value in measurement.training.items():
        held = measurement.validation.get(name)
        parts.append(f"{name} {value:.4g}" + ("" if held is None else f"/{held:.4g}"))
    return "  ".join(parts if width >= WIDE_TERMINAL else parts[:1])
