"""What ``fit`` writes, whole or not at all: the learned values (``--values`` format), the
history CSV, the loss plot and the training report, and the report rewritten while training
runs.

Every file goes through the caller's ``write`` (``files.atomic.write_atomic``, or a stand-in
in tests); ``-`` and no path mean stdout.  Each file is tried even when one before it could
not be written, and learned values that could not be written are kept elsewhere, never lost.
Nothing here prints: a warning goes to the caller's ``warn``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import OutputError, Source
from .atomic import keep_elsewhere
from .stdout import emit
from .values import value_literals

if TYPE_CHECKING:
    from ..execute.fit import FitResult, FitSettings
    from ..execute.training import Training

__all__ = ["REPORT_PAUSE", "ReportWriter", "recorder_for", "report_html", "training_outputs", "write_outputs"]

Write = Callable[[str, bytes], None]
Output = tuple["str | None", Callable[[], bytes]]  # where, and what (made when written)


def training_outputs(result: FitResult, training: Training, values_source: Source | None, out: str | None,
                     history: str | None = None, plot: str | None = None, plot_format: str | None = None,
                     recording: Any = None, report: str | None = None, held_out: bool = False,
                     metrics: list[str] | None = None) -> list[Output]:
    """The files to write after training, the learned values first (none when no step was
    complete): the values given, the values file's as it wrote them (``values_source``), with
    each parameter's replaced by its learned value."""
    from ..execute.training import learned_values
    from ..execute.training_text import history_csv, read_literal, values_json

    outputs: list[Output] = []
    if result.params is not None:
        params = result.params

        def values() -> bytes:
            literals = value_literals(values_source)  # the values file's keys, each with its number's text
            kept = {name: read_literal(text) for name, text in literals.items()}
            return values_json(learned_values(training, params, kept), literals, params.dtype.name).encode()

        outputs.append((out, values))
    if history is not None:
        outputs.append((history, lambda: history_csv(result.history, result.measurements, held_out,
                                                     metrics, training.dtype).encode()))
    if plot is not None and plot_format is not None and result.history:
        def curve() -> bytes:
            from ..render.loss_plot import loss_curve

            return loss_curve([s.step for s in result.history], [s.loss for s in result.history], plot_format)

        outputs.append((plot, curve))
    if recording is not None and report is not None:
        outputs.append((report, lambda: report_html(recording, final=True)))
    return outputs


def write_outputs(outputs: list[Output], write: Write, learned_first: bool) -> None:
    """Write each output (``learned_first``: the first is the learned values), then raise the
    first failure; learned values that could not be written are kept elsewhere, and the error
    says where."""
    failed: OutputError | None = None
    for index, (path, make) in enumerate(outputs):
        data = make()
        try:
            if path is None or path == "-":
                emit(data.decode())
            else:
                write(path, data)
        except OutputError as error:
            if index == 0 and learned_first:
                error = _kept_elsewhere(error, path, data)
            failed = failed or error
    if failed is not None:
        raise failed


def _kept_elsewhere(error: OutputError, path: str | None, data: bytes) -> OutputError:
    """The learned parameters could not be written (a full disk): training may have taken hours,
    so they are written somewhere else, next to ``path`` or in the temporary directory, and the
    error says where."""
    place = keep_elsewhere(path, data)
    if place is None:
        return OutputError(f"{error.message}; nor could the learned parameters be kept anywhere else "
                           "(next to it, or in the temporary directory)", hint=error.hint, notes=error.notes)
    return OutputError(f"{error.message}; the learned parameters are kept in {place}",
                       hint=f"{error.hint + '; then ' if error.hint else ''}move {place} where it should go "
                            "(it is what -o would have held)", notes=error.notes)


def recorder_for(training: Training, settings: FitSettings, every: int | None, command: str,
                 shown_versions: dict[str, str] | None = None) -> Any:
    """The report's recorder (``analysis.training_record``), told the ``command`` line, the
    versions (``execute.training.versions`` unless given) and the settings; by default it
    records ``default_every`` steps."""
    from ..analysis.training_record import TrainingRecorder, default_every
    from ..errors import InputError, Source
    from ..execute.training import report_meta, versions

    batch = getattr(training.objective, "batch_rows", None)
    if batch is not None:  # the report runs the program row by row (its curves, boundary and activations)
        raise InputError(f"--report draws a program row by row, and this program takes {batch} rows at once",
                         source=Source(training.program.source.name, ""),
                         hint="leave --report out; --history and --plot record the loss of such a program")
    validation = training.validation
    return TrainingRecorder(training.program, training.plan, training.values, training.data.columns,
                            None if validation is None else validation.columns,
                            every=every or default_every(settings.steps),
                            meta=report_meta(training, settings, command, versions() if shown_versions is None else shown_versions), seed=settings.seed,
                            steps=settings.steps)


def report_html(recording: Any, final: bool = False) -> bytes:
    """The report page; the final one with the recorded row's graph, laid out once (a layout that
    fails or takes too long leaves the page without it, saying so)."""
    from ..render.backends import RenderError
    from ..render.training_report import row_graph_svg, training_report_html

    svg = None
    if final:
        try:
            svg = row_graph_svg(recording)
        except RenderError:
            svg = None
    return training_report_html(recording, graph_svg=svg)  # type: ignore[no-any-return]


# The least time between two rewrites of --report while training runs: a report takes a tenth
# of a second or so to render, which every recorded step would otherwise pay.
REPORT_PAUSE = 2.0


class ReportWriter:
    """Rewrites the report whole when a step is recorded, at most every ``REPORT_PAUSE``
    seconds (and at the end, with the other outputs).  A rewrite that fails (a full disk) is
    warned about once, and training goes on."""

    def __init__(self, recorder: Any, report: str | None, write: Write, warn: Callable[[list[str]], None]) -> None:
        self.recorder, self.report, self.write, self.warn = recorder, report, write, warn
        self.written = -math.inf  # when the report was last written (time.monotonic)
        self.failed = False  # a rewrite failed: no more until the end

    def recorded(self) -> None:
        if self.failed or time.monotonic() - self.written < REPORT_PAUSE:
            return
        assert self.report is not None
        try:
            self.write(self.report, report_html(self.recorder.recording()))
        except OutputError as error:  # training goes on: the parameters matter more than the report
            self.failed = True
            self.warn([f"{error.message}; training goes on, and the report is written again when it ends"])
        self.written = time.monotonic()
