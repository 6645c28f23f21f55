"""``autodiff fit``: learn a program's parameters from rows of data by gradient descent.

A thin Click layer over the library: it checks the options, reads the rows
(``files.training_rows``), asks ``execute.training`` for the training (``plan_training``) and
runs it (``run_training``) while showing progress on stderr (``cli.fit_progress``), then writes
the learned values, the history, the plot and the report whole or not at all, whatever way
training ended (``files.training_outputs``), and says how it ended (``execute.training_text``).
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any

import click

from ..errors import InputError
from ..files.atomic import check_writable, write_atomic
from ..files.formats import ROW_FORMATS, format_by_extension
from ..files.streams import is_stream, names_stdin, names_stdout
from .console import notify, reading_progress, warn
from .fit_progress import Interrupts as _Interrupts
from .fit_progress import Reporter
from .options import (
    CONTEXT_SETTINGS,
    NPY_FILES_READ,
    Command,
    FiniteFloat,
    Unranged,
    complete_file_name,
    dtype_option,
    finite_number,
    load_inputs_and_values_source,
    name_list,
    program_options,
    reporting_errors,
    set_advice,
)

if TYPE_CHECKING:
    from ..execute.fit import FitResult, FitSettings
    from ..execute.metrics import Metric
    from ..language.program import Program

__all__ = ["fit_command"]

FIT_EXIT_HELP = """\b
Exit status:
  0    success
  1    an error in the program, its inputs or training (a NaN loss)
  2    command-line usage error (unknown option, malformed --set, ...)
  130  Ctrl-C (143: SIGTERM); both still write the best values so far"""

PLOT_FORMATS = {".svg": "svg", ".png": "png", ".pdf": "pdf"}
RESUMABLE = "the --values file"  # what -o may name: training goes on from it and updates it


@click.command("fit", cls=Command, context_settings=CONTEXT_SETTINGS, epilog=FIT_EXIT_HELP,
               short_help="Learn a program's parameters from rows of data.")
@program_options
@click.option("--data", "data", required=True, metavar="ROWS", shell_complete=complete_file_name,
              help="The rows to learn from ('-' for stdin).")
@click.option("-o", "--out", "out", metavar="FILE", shell_complete=complete_file_name,
              help="Write the values here [default: stdout].")
@click.option("--optimizer", type=click.Choice(["sgd", "momentum", "adam"]), default="sgd", show_default=True,
              metavar="NAME", help="sgd, momentum or adam (PyTorch's).")
@click.option("--lr", **finite_number(0.01, above=True), help="Learning rate.")
@click.option("--steps", type=click.IntRange(min=1), default=1000, show_default=True, metavar="N", cls=Unranged,
              help="Steps to take.")
@click.option("--batch-size", type=click.IntRange(min=1), metavar="N", cls=Unranged,
              help="Rows per step, shuffled each epoch [default: all].")
@click.option("--validation", "validation_fraction", type=FiniteFloat(0, 1, min_open=True, max_open=True),
              metavar="FRACTION", cls=Unranged, help="The fraction of rows held out to validate on.")
@click.option("--metric", "metric_texts", multiple=True, metavar="METRIC",
              help="accuracy:PRED:TARGET, mse:..., mae:... or NAME.")
@click.option("--report", metavar="FILE.html", shell_complete=complete_file_name,
              help="An HTML report of the run, rewritten as it runs.")
@click.option("--history", metavar="FILE.csv", shell_complete=complete_file_name,
              help="Each step's loss, grad_norm and lr as CSV.")
@click.option("--plot", metavar="FILE", shell_complete=complete_file_name,
              help="Draw the loss curve (.svg, .png or .pdf).")
@click.option("-q", "--quiet", is_flag=True, help="No progress and no summary (errors still show).")
@click.option("--from", "data_format", type=click.Choice(ROW_FORMATS), metavar="FORMAT",
              help=f"{', '.join(ROW_FORMATS[:-1])} or {ROW_FORMATS[-1]} [default: by extension].")
@click.option("--dask", "scheduler", metavar="SCHEDULER",
              help="Train on Dask: tcp://host:8786 or local[:N].")
@click.option("--feed", "feeds", multiple=True, metavar="NAME=COLUMN",
              help="Read input NAME from COLUMN (or COLUMN[0], ...).")
@click.option("--params", "params", multiple=True, metavar="NAMES",
              help="Inputs to learn [default: those no column feeds].")
@click.option("--init", type=click.Choice(["normal", "uniform"]), metavar="normal|uniform",
              help="Draw parameters with no starting value at random.")
@click.option("--seed", type=click.IntRange(0, 2**32 - 1), default=0, show_default=True, metavar="N",
              cls=Unranged, help="Seed of random starts and batches.")
@click.option("--lr-schedule", type=click.Choice(["constant", "linear", "cosine"]), default="constant",
              show_default=True, metavar="NAME", help="linear or cosine to --final-lr.")
@click.option("--final-lr", **finite_number(metavar="LR"), help="Where a schedule ends [default: --lr / 10].")
@click.option("--momentum", **finite_number(metavar="M"), help="Of --optimizer momentum [default: 0.9].")
@click.option("--weight-decay", **finite_number(0.0), help="L2 penalty added to the gradient.")
@click.option("--tol", **finite_number(0.0), help="Stop when 5 steps (or epochs) improve the loss by less "
                                            "than TOL of itself; 0: never.")
@click.option("--validation-data", metavar="ROWS", shell_complete=complete_file_name,
              help="Validate on these rows instead.")
@click.option("--eval-every", type=click.IntRange(min=1), metavar="N", cls=Unranged,
              help="Measure every N steps [default: every epoch].")
@click.option("--watch", type=click.Choice(["training", "validation"]), metavar="LOSS",
              help="The loss --tol watches, training or validation [default: validation, if any].")
@click.option("--keep", type=click.Choice(["best-validation"]), metavar="best-validation",
              help="Write the values of the lowest validation loss.")
@click.option("--report-every", type=click.IntRange(min=1), metavar="N", cls=Unranged,
              help="--report records every N steps [default: 30 in all].")
@click.option("--progress-every", type=click.IntRange(min=1), metavar="N", cls=Unranged,
              help="Progress every N steps [default: about 10 lines].")
@dtype_option
@reporting_errors
def fit_command(
    source: str | None, expr: str | None, file: str | None, assignments: dict[str, float],
    values_file: str | None, output: str | None, data: str, data_format: str | None, scheduler: str | None,
    params: tuple[str, ...], feeds: tuple[str, ...],
    init: str | None, seed: int, optimizer: str, lr: float, lr_schedule: str, final_lr: float | None,
    momentum: float | None, steps: int, batch_size: int | None, weight_decay: float, tol: float,
    validation_fraction: float | None, validation_data: str | None, metric_texts: tuple[str, ...],
    eval_every: int | None, watch: str | None, keep: str | None,
    out: str | None, history: str | None, plot: str | None, report: str | None, report_every: int | None,
    progress_every: int | None, quiet: bool, dtype: str,
) -> None:
    """Learn a program's parameters from rows of data by gradient descent.

    fit minimises the mean of the program's output over the --data rows.  Each
    column feeds the input of its name; the inputs no column feeds are learned,
    but one that looks like data (a label y, an index) is an error unless
    --params names it.  Every option in detail: docs/fit.md.

    \b
    Examples:
      autodiff fit samples/line.ad --data samples/line.csv -o params.json
      autodiff eval samples/line.ad --values params.json --set x=3
      autodiff fit samples/line.ad --data samples/line.csv --report run.html
    """
    from ..execute.fit import FitSettings
    from ..execute.training import batch_settings, plan_training, run_training
    from ..files.training_outputs import ReportWriter, recorder_for, training_outputs, write_outputs
    from ..files.training_rows import read_partitioned_rows, read_training_rows

    if momentum is not None and optimizer != "momentum":
        raise click.UsageError("--momentum applies to --optimizer momentum only")
    if final_lr is not None and lr_schedule == "constant":
        raise click.UsageError("--final-lr needs --lr-schedule linear or cosine")
    plot_format = _plot_format(plot)
    _check_destinations(out, history, plot, {"the --data file": data, "the program file": file or source,
                                             RESUMABLE: values_file, "the --validation-data file": validation_data},
                        report)
    held_out = validation_fraction is not None or validation_data is not None
    _check_validation_options(validation_fraction, validation_data, metric_texts, eval_every, watch, keep, report,
                              report_every)
    settings = FitSettings(optimizer=optimizer, lr=lr, lr_schedule=lr_schedule, final_lr=final_lr,
                           momentum=0.9 if momentum is None else momentum, weight_decay=weight_decay,
                           steps=steps, batch_size=batch_size, tol=tol, seed=seed, measure_every=eval_every,
                           watch_validation=held_out if watch is None else watch == "validation",
                           keep_best_validation=keep == "best-validation")
    _check_stdin(source, expr, file, values_file, data, validation_data)
    partitioned = _partitioned_data(scheduler, data, held_out, metric_texts, report, dtype)
    if partitioned and feeds:
        raise click.UsageError("--feed renames the columns of one file of rows: it does not go with --dask")
    program, values, values_source = load_inputs_and_values_source(source, expr, file, assignments, values_file)
    feed = _feeds(program, feeds)
    metrics = _metrics(program, metric_texts)
    with _cluster(scheduler, partitioned) as cluster:  # partitions stay on the cluster until training ends
        if partitioned:
            partitions, data_set = read_partitioned_rows(cluster, data, data_format, program, values, notify)
            validation_set = None
        else:
            partitions = None
            data_set, validation_set = read_training_rows(
                data, validation_data, validation_fraction, data_format, program, values, seed, notify=notify,
                progress=lambda size, name: reading_progress(size, quiet, name), warn=warn, feed=feed)
        training = plan_training(program, data_set, values, validation=validation_set,
                                 params=name_list(params) or None, init=init, seed=seed, output=output,
                                 metrics=metrics, advice=_advice, partitions=partitions, warn=warn, dtype=dtype)
        settings = batch_settings(training, settings)  # a program of a whole batch: its batch size
        measurer = training.measurer
        # A line every N steps, or, when something is measured, a line where it is (a line shows
        # only what was measured at its own step).
        every = progress_every or (None if measurer is not None else max(1, settings.steps // 10))
        reporter = Reporter(settings.steps, quiet, every, held_out, measurer.names if measurer is not None else [])
        recorder = None if report is None else recorder_for(training, settings, report_every, _command_line())
        report_writer = ReportWriter(recorder, report, write_atomic, warn)
        started = time.perf_counter()
        with _Interrupts() as interrupts:
            interrupts.notify = reporter.notice
            with reporter:
                result = run_training(training, settings, on_step=reporter.step, stop_requested=interrupts.requested,
                                      on_measured=reporter.measured, recorder=recorder,
                                      on_recorded=report_writer.recorded)
            elapsed = time.perf_counter() - started
            interrupts.writing()  # from here on a first Ctrl-C does not cut the results short
            recording = None
            try:
                if recorder is not None:
                    recorder.finish(result)
                    recording = recorder.recording()
                outputs = training_outputs(result, training, values_source, out, history, plot, plot_format,
                                           recording, report, held_out, reporter.metrics)
                write_outputs(outputs, write_atomic, learned_first=result.params is not None)
            except KeyboardInterrupt:  # a second Ctrl-C or a SIGTERM while a write was stuck (a pipe no one reads)
                stopped = "stopped by SIGTERM" if interrupts.terminated else "interrupted"
                click.echo(f"{stopped} while writing the results: each file not written whole was left as it was",
                           err=True)
                raise click.exceptions.Exit(interrupts.status) from None
            _conclude(result, settings, out, quiet, interrupts, training.measured_rows, elapsed,
                      recording.diagnoses if recording is not None else [], report)


# --- before training -------------------------------------------------------------------------


def _check_stdin(source: str | None, expr: str | None, file: str | None, values_file: str | None, data: str,
                 validation_data: str | None) -> None:
    """Standard input carries one thing at most: the program, the values, or one set of rows."""
    readers = [path for path in (source, file, values_file) if names_stdin(path)]
    if source is None and expr is None and file is None:
        readers.append("-")  # the program from stdin
    if names_stdin(data) and names_stdin(validation_data):
        raise click.UsageError("standard input can carry the --data rows or the --validation-data rows, not both: "
                               "name a file for one of them")
    if sum(map(names_stdin, (data, validation_data))) + (1 if readers else 0) > 1:
        raise click.UsageError("standard input can carry the rows or the program (or --values), not both: "
                               "name a file for the others")


def _plot_format(plot: str | None) -> str | None:
    if plot is None:
        return None
    implied = format_by_extension(plot, PLOT_FORMATS)
    if is_stream(plot):  # /dev/stdout, >(cmd): SVG, as graph -o and plot -o write there
        implied = "svg"
    elif implied is None:
        raise click.BadParameter(f"{plot!r} should end in .svg, .png or .pdf", param_hint="--plot")
    from ..render.loss_plot import require_matplotlib

    require_matplotlib()
    return implied


def _check_destinations(out: str | None, history: str | None, plot: str | None,
                        inputs: dict[str, str | None], report: str | None = None) -> None:
    """Fail before training, not after it, when a result could not be written, or would be
    written over another result or over a file this run reads (the data, the program)."""
    on_stdout = [option for option, path in (("the parameters", out or "-"), ("--history", history),
                                             ("--plot", plot), ("--report", report))
                 if path is not None and names_stdout(path)]
    if len(on_stdout) > 1:
        both, which = ("both", "one of them") if len(on_stdout) == 2 else ("all", "all but one")
        raise click.UsageError(f"{', '.join(on_stdout[:-1])} and {on_stdout[-1]} cannot {both} go to stdout: "
                               f"name a file for {which}")
    files = [(option, path) for option, path in (("-o", out), ("--history", history), ("--plot", plot),
                                                 ("--report", report))
             if path is not None and path != "-"]
    context = click.get_current_context(silent=True)
    if context is not None:  # --set W=w.npy reads w.npy too
        inputs = {**inputs, **context.meta.get(NPY_FILES_READ, {})}
    read = {os.path.realpath(path): what for what, path in inputs.items()
            if path is not None and path != "-" and os.path.isfile(path)}
    seen: dict[str, str] = {}
    for option, path in files:
        real = os.path.realpath(path)
        # -o over the --values file is a resume: the values were read before training, and they
        # are written back whole, every one kept, with the parameters' updated (values_json).
        if real in read and not (option == "-o" and read[real] == RESUMABLE):
            raise click.UsageError(f"{option} {path} is {read[real]} this run reads: writing it would destroy it")
        if real in seen:
            raise click.UsageError(f"{seen[real]} and {option} name the same file, {path}")
        seen[real] = option
        check_writable(path)


def _check_validation_options(fraction: float | None, validation_data: str | None, metric_texts: tuple[str, ...],
                              eval_every: int | None, watch: str | None, keep: str | None, report: str | None,
                              report_every: int | None) -> None:
    """The options of validation, metrics and the report that do not go together."""
    if fraction is not None and validation_data is not None:
        raise click.UsageError("--validation and --validation-data both choose the validation rows: give one of them")
    held_out = fraction is not None or validation_data is not None
    if eval_every is not None and not metric_texts and not held_out:
        raise click.UsageError("--eval-every needs something to measure: --metric, --validation or --validation-data")
    for option, used in (("--watch validation", watch == "validation"), ("--keep best-validation", keep is not None)):
        if used and not held_out:
            raise click.UsageError(f"{option} needs validation rows: add --validation 0.2 or --validation-data FILE")
    if report_every is not None and report is None:
        raise click.UsageError("--report-every applies to --report only")
    if report is not None and (report == "-" or is_stream(report)):
        raise click.UsageError(f"--report {report}: the report is rewritten as training runs, so it goes to a "
                               "file, not a stream: name a file such as run.html")


def _feeds(program: Program, texts: tuple[str, ...]) -> dict[str, str]:
    """The --feed options, input -> column; a malformed one is a usage error (exit 2), an input
    the program lacks an error in its input (1)."""
    from ..files.training_rows import check_feeds, parse_feeds

    try:
        feed = parse_feeds(texts)
    except InputError as error:
        raise click.UsageError(f"{error.message}: {error.hint}") from None
    return check_feeds(program, feed)


def _metrics(program: Program, texts: tuple[str, ...]) -> list[Metric]:
    """The --metric options, each checked against the program's variables; a text that is no
    metric at all is a usage error (exit 2), a name the program lacks an error in its input (1)."""
    from ..execute.metrics import check_metrics, parse_metric

    try:
        metrics = [parse_metric(text) for text in texts]
    except InputError as error:
        raise click.UsageError(f"{error.message}: {error.hint}") from None
    return check_metrics(program, metrics)


def _partitioned_data(scheduler: str | None, data: str, held_out: bool, metric_texts: tuple[str, ...],
                      report: str | None, dtype: str = "float64") -> bool:
    """Whether --data is read as partitions (--dask, or a glob or directory), checking what goes
    with that before anything is read."""
    from ..files.partitions import is_partitioned

    partitioned = scheduler is not None or is_partitioned(data)
    if partitioned and (held_out or metric_texts or report is not None):
        raise click.UsageError("--dask (or --data naming many files) trains on the partitions only: --validation, "
                               "--validation-data, --metric and --report do not go with it")
    if partitioned and dtype != "float64":
        raise click.UsageError(f"--dtype {dtype} does not go with --dask (or --data naming many files): training "
                               "over partitions runs in float64 only; leave out --dtype")
    if scheduler is not None:
        from ..execute.distributed import parse_scheduler

        try:
            parse_scheduler(scheduler)
        except ValueError as error:
            raise click.BadParameter(str(error), param_hint="--dask") from None
    if partitioned and names_stdin(data):
        raise click.UsageError("--dask reads --data on the workers: name the files (a glob or a directory)")
    return partitioned


def _cluster(scheduler: str | None, partitioned: bool) -> Any:
    """The cluster the partitions are trained on (in this process without --dask); nothing for
    one file of rows."""
    import contextlib

    if not partitioned:
        return contextlib.nullcontext()
    from ..execute.distributed import cluster_or_here

    return cluster_or_here(scheduler)


def _command_line() -> str:
    """This run's command line, as a shell would take it back."""
    import shlex
    import sys

    return shlex.join(["autodiff", *sys.argv[1:]])


def _advice(data_name: str) -> Any:
    """Hints from the executor in fit's terms: it trains on every row and has no --on-error."""
    from ..execute.batch_evaluator import Advice

    def give(names: list[str]) -> str:
        return f"add a column to {data_name}, or give {set_advice(names)} or --values FILE.json"

    return Advice(f" in {data_name} (fit trains on every row; it has no --on-error skip)", give)


def _conclude(result: FitResult, settings: FitSettings, out: str | None, quiet: bool,
              interrupts: _Interrupts, rows: int, elapsed: float | None = None,
              diagnoses: list[str] | None = None, report: str | None = None) -> None:
    """The last line: what was learned, why training stopped, where the report is, the time a
    step took and what the report's recording found wrong (``diagnoses``); and the exit status
    that goes with it."""
    from ..execute.fit import StopReason
    from ..execute.training_text import conclusion, divergence_error, interrupted_line, pace

    where = f" to {out}" if out not in (None, "-") else ""
    if result.reason == StopReason.DIVERGED:
        error = divergence_error(result, settings, where)
        error.notes += [f"the report is in {report}"] if report is not None else []
        raise error
    pace_text = (f"; the report is in {report}" if report is not None else "") + pace(result, elapsed)
    pace_text += "".join(f"; {diagnosis}" for diagnosis in diagnoses or [])
    if result.measure_error is not None and not quiet:
        warn([f"the parameters written could not be measured: {result.measure_error.message}"])
    if result.reason == StopReason.INTERRUPTED:
        click.echo(interrupted_line(result, settings, where, rows, pace_text, interrupts.terminated), err=True)
        raise click.exceptions.Exit(interrupts.status)
    if not quiet:
        click.echo(conclusion(result, settings, where, rows, pace_text), err=True)
