"""``autodiff batch``: a program and its gradients over every row of a CSV, TSV or JSON Lines file.

The program is compiled once and run over chunks of rows by ``execute.batch_rows``'s job
(its one ``BatchEvaluator`` picks the executor); rows stream in and results stream out, so
memory stays flat however long the input.  ``--reduce`` sums or averages over all rows instead and
prints one report, as ``eval`` does for one set of inputs.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from ..errors import InputError, OutputError
from ..files.atomic import StreamedFile, check_writable, write_atomic
from ..files.formats import ROW_EXTENSIONS, ROW_FORMATS, extension_of, format_by_extension, row_format, sniffs
from ..files.stdout import StdoutBytes, emit, stdout_closed
from ..files.streams import names_stdin, stdin_is_piped, stdout_is_terminal
from .console import notify, print_rich, reading_progress, warn
from .options import (
    Command,
    dtype_option,
    CONTEXT_SETTINGS,
    EXIT_CODES_HELP,
    complete_file_name,
    load_inputs,
    name_list,
    program_options,
    refuse_overwriting_inputs,
    reporting_errors,
    set_advice,
)

if TYPE_CHECKING:
    from ..execute.batch_rows import BatchJob, BatchOptions, Sums
    from ..files.rows import ParquetReader, RowReader
    from ..language.program import Program

__all__ = ["batch_command"]

REPORT_EXTENSIONS = {".json": "json", ".csv": "csv"}  # --reduce's report, when --format is not given


def _advice() -> Any:
    """Hints from the executor in this command's terms: its options, not Python's arguments."""
    from ..execute.batch_evaluator import Advice

    return Advice(", or leave out the rows that have them (--on-error skip)", _give_values_advice)


def _give_values_advice(names: list[str]) -> str:
    # A module's function, not a closure: the options travel to Dask's workers by plain pickle
    # (a closure took cloudpickle's path, whose clean-up once printed an error at exit).
    return (f"add a column to the rows, or give one value for every row with {set_advice(names)} or "
            "--values FILE.json")



@click.command("batch", cls=Command, context_settings=CONTEXT_SETTINGS, epilog=EXIT_CODES_HELP,
               short_help="Values and gradients on every row of a data file.")
@program_options
@click.argument("rows", metavar="[ROWS]", required=False, shell_complete=complete_file_name)
@click.option("-o", "--out", "out", metavar="FILE", shell_complete=complete_file_name,
              help="Write here, whole or not at all (partitioned ROWS: a directory).")
@click.option("--from", "input_format", type=click.Choice(ROW_FORMATS),
              help="Format of ROWS [default: by extension, or sniffed].")
@click.option("--to", "output_format", type=click.Choice(ROW_FORMATS),
              help="Format of the rows written [default: by -o's extension, or csv].")
@click.option("--wrt", multiple=True, metavar="NAMES",
              help="Gradient columns for these variables [default: every input].")
@click.option("--keep", multiple=True, metavar="COLS",
              help="Copy only these columns to the output ('' none) [default: all].")
@click.option("--values-of", "values_of", multiple=True, metavar="NAMES",
              help="Also write the values of these variables (intermediates).")
@click.option("--reduce", type=click.Choice(["sum", "mean"]),
              help="One report of the sum or mean over all rows instead of rows.")
@click.option("--format", "report_format", type=click.Choice(["table", "plain", "json", "csv"]),
              help="--reduce's report [default: by -o's extension, or table].")
@click.option("--on-error", "on_error", type=click.Choice(["fail", "skip", "nan"]), default="fail", show_default=True,
              help="A row where the program fails: stop, skip it, or write NaN.")
@click.option("--precision", type=click.IntRange(1, 17), metavar="N",
              help="Significant digits written [default: all, round-trip].")
@click.option("--dask", "scheduler", metavar="SCHEDULER",
              help="Run on Dask: tcp://host:8786, or local[:N] workers here.")
@click.option("--force", is_flag=True, help="Replace an existing -o directory of parts.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
@click.option("--no-color", is_flag=True, help="No colour in --reduce's table (also when NO_COLOR is set).")
@dtype_option
@reporting_errors
def batch_command(
    source: str | None, expr: str | None, file: str | None, assignments: dict[str, float],
    values_file: str | None, output: str | None, rows: str | None, out: str | None, input_format: str | None,
    output_format: str | None, wrt: tuple[str, ...], keep: tuple[str, ...], values_of: tuple[str, ...],
    reduce: str | None, report_format: str | None, on_error: str, precision: int | None, scheduler: str | None,
    force: bool, quiet: bool, no_color: bool, dtype: str,
) -> None:
    """Values and gradients of a program on every row of a data file.

    ROWS is a CSV, TSV, JSON Lines or Parquet file, '-' for stdin, or a glob
    or directory of files read as partitions.  A column named after an input
    gives it a value per row (x[0], x[1]: a vector's entries); other inputs
    take --set, --values or their defaults.  Each row written holds the input
    columns, the output L and one gradient column dL/da per input a.  More
    in docs/batch.md; partitions and clusters in docs/dask.md.

    \b
    Examples:
      autodiff batch model.ad rows.csv > out.csv
      cat rows.jsonl | autodiff batch model.ad - --to jsonl --wrt w,b
      autodiff batch model.ad rows.csv --reduce mean --format json
      autodiff batch samples/regression.ad samples/line.csv --keep x --to tsv
    """
    if expr is not None or file is not None:  # the one positional argument is then the rows
        if rows is not None and source is not None:
            raise click.UsageError("with -e/-f the program is given; pass only ROWS as an argument")
        rows, source = rows or source, None
    _check_options(reduce, report_format, output_format, keep, out)
    from ..execute.batch_rows import BatchOptions  # the library, imported when batch runs: not at start-up

    options = BatchOptions(output=output, wrt=tuple(name_list(wrt)) if wrt else None,
                           keep=tuple(name_list(keep)) if keep else None, values_of=tuple(name_list(values_of)),
                           reduce=reduce, on_error=on_error, precision=precision,
                           written=row_format(out, output_format), advice=_advice(), dtype=dtype)
    from ..files.partitions import is_partitioned

    if scheduler is not None or is_partitioned(rows):
        _check_partitioned(rows, scheduler, out, options, force)
        program, values = load_inputs(source, expr, file, assignments, values_file)
        _batch_partitions(program, values, rows, input_format, options, scheduler, out, force, report_format,
                          quiet, no_color)
        return
    if force:
        raise click.UsageError("--force replaces a directory of parts, written for rows in many files (a glob "
                               "or a directory) or with --dask; a single file of output is replaced anyway")
    rows_from_stdin = rows is None or names_stdin(rows)
    if rows_from_stdin and (sys.stdin is None or (rows is None and not stdin_is_piped())):
        raise click.UsageError("no rows given: name a CSV, TSV or JSON Lines file, or pipe the rows in")
    if rows_from_stdin and (names_stdin(source) or names_stdin(file) or names_stdin(values_file) or
                            (source is None and expr is None and file is None)):
        raise click.UsageError("standard input can carry the rows or the program (or --values), not both: "
                               "name a file for the others")
    if out is not None and out != "-":
        check_writable(out, "rows.csv")
        refuse_overwriting_inputs("-o", out, {"the program": file or source, "the --values file": values_file,
                                              "the ROWS file": None if rows_from_stdin else rows})

    program, values = load_inputs(source, expr, file, assignments, values_file)
    from ..files.rows import misread_warnings, opened, reader_for

    if reduce is None and options.written == "parquet":
        if precision is not None:
            raise click.UsageError("--precision rounds the numbers of text output; Parquet keeps every bit")
        if (out is None or out == "-") and stdout_is_terminal():
            raise click.UsageError("refusing to write binary Parquet to a terminal; write it to a file with "
                                   "-o rows.parquet, or redirect: ... > rows.parquet")
    with opened(rows, notify) as (stream, name, size):
        reader = reader_for(stream, name, row_format(rows, input_format), sniffs(rows, input_format))
        from ..execute.batch_rows import plan_batch, sum_rows

        job = plan_batch(program, values, reader, options)
        warn(job.notes)
        with reading_progress(size, quiet, name) as advance:
            if reduce is None:
                _write_rows(reader, job, out, advance)
            else:
                summed = sum_rows(reader, job.plan, job, advance)
                summed.misread = misread_warnings(reader)
                _report(summed, reader.name, job, out, report_format, no_color)


# The shared SOURCE argument is this command's PROGRAM (ROWS follows it).
next(param for param in batch_command.params if param.name == "source").metavar = "[PROGRAM]"


def _check_options(reduce: str | None, report_format: str | None, output_format: str | None,
                   keep: tuple[str, ...], out: str | None) -> None:
    if reduce is None and report_format is not None:
        raise click.UsageError("--format chooses --reduce's report; the rows' format is --to")
    if reduce is not None and output_format is not None:
        raise click.UsageError("--to chooses the rows' format; --reduce writes one report: use --format")
    if reduce is not None and keep:
        raise click.UsageError("--keep chooses the columns of per-row output; --reduce writes no rows")
    if reduce is not None and report_format is None and out is not None:
        extension = extension_of(out)
        if extension in ROW_EXTENSIONS and extension != ".csv":  # a file of rows; the report is not one
            raise click.UsageError(f"--reduce writes one report, as plain text, JSON or CSV, not "
                                   f"{extension}: name the file .txt, .json or .csv, or give --format")


# --- one file of rows ------------------------------------------------------------------------


def _write_rows(reader: RowReader | ParquetReader, job: BatchJob, out: str | None,
                advance: Callable[[int], None]) -> None:
    from ..execute.batch_rows import write_rows
    from ..files.rows import misread_warnings, writer_for

    options, plan = job.options, job.plan
    to_stdout = out is None or out == "-"
    if to_stdout and sys.stdout is None:
        raise InputError("standard output is closed, so there is nowhere to write the rows",
                         hint="write them to a file with -o FILE")
    target: Any = StdoutBytes() if to_stdout else StreamedFile(out)  # type: ignore[arg-type]
    # Parquet's writer needs a real file; the text formats write through the checks of target.
    stream = target if options.written != "parquet" else target.buffer if to_stdout else target.handle
    writer = writer_for(stream, options.written, job.names, set(plan.passed), options.precision,
                        set(plan.kept) - set(plan.passed))
    try:
        failures = write_rows(reader, plan, job, writer, target, advance)
        if not to_stdout:
            target.commit()
    except BrokenPipeError:
        stdout_closed()
        return
    except OSError as error:  # Parquet's writer writes to its file itself
        where = "to standard output" if to_stdout else out
        raise OutputError(f"cannot write {where}: {error.strerror or error}",
                          hint="check that the disk is not full, or write somewhere else") from None
    finally:
        if not to_stdout:
            target.discard()
    warn(misread_warnings(reader))
    warn(failures.notes())


def _report(summed: Sums, rows_name: str, job: BatchJob, out: str | None, report_format: str | None,
            no_color: bool) -> None:
    """--reduce's report of the sums, to stdout or -o, in the format asked for or implied."""
    from ..render import batch as render

    how, precision = job.options.reduce, job.options.precision
    assert how is not None
    from ..execute.batch_rows import reduce_sums

    reduction = reduce_sums(summed, rows_name, job, how)
    warn(reduction.notes)
    if report_format is None and out not in (None, "-"):  # report.json, report.csv
        report_format = format_by_extension(out, REPORT_EXTENSIONS)
    fmt = report_format or ("table" if out is None and stdout_is_terminal() else "plain")
    if fmt == "table" and out is None:
        print_rich(render.to_table(reduction, precision), no_color)
    else:
        text = {"json": lambda: render.to_json(reduction), "csv": lambda: render.to_csv(reduction),
                "plain": lambda: render.to_plain(reduction, precision),
                "table": lambda: render.title(reduction, precision) + "\n" + render.to_plain(reduction, precision)}
        data = text[fmt]()
        if out is None or out == "-":
            emit(data)
        else:
            write_atomic(out, data.encode("utf-8"))
    warn(summed.misread)
    warn(summed.failures.notes())


# --- partitioned rows: a glob or directory of files, here or on a Dask cluster -----------------


def _batch_partitions(program: Program, values: dict[str, Any], rows: str, input_format: str | None,
                      options: BatchOptions, scheduler: str | None, out: str | None, force: bool,
                      report_format: str | None, quiet: bool, no_color: bool) -> None:
    """Each file of ROWS is a partition (``execute.partitioned``); per-row output is a directory
    of parts, --reduce one report of the sums added in partition order."""
    import os

    from ..execute.partitioned import PartitionedBatch
    from ..files.partitions import PartitionFiles, partition_paths

    paths = partition_paths(rows)
    if options.reduce is None:
        _refuse_writing_over_rows(out, paths)  # type: ignore[arg-type]
    batch = PartitionedBatch(program, values, paths, options, PartitionFiles(input_format, options.written))
    warn(batch.notes)
    with reading_progress(sum(batch.sizes), quiet, rows) as advance:
        read = [0]

        def done(index: int) -> None:
            read[0] += batch.sizes[index]
            advance(read[0])

        result = batch.run(scheduler, out, force, done)
    from ..execute.batch_rows import Failures

    if isinstance(result, Failures):
        warn(result.misread)
        warn(result.notes())
        return
    name = os.path.basename(rows.rstrip("/")) if len(paths) > 1 else paths[0]
    _report(result, name, batch.job, out, report_format, no_color)


def _check_partitioned(rows: str | None, scheduler: str | None, out: str | None, options: BatchOptions,
                       force: bool) -> None:
    """The options that go with partitioned rows, checked before anything is read."""
    from ..execute.distributed import parse_scheduler

    if rows is None or names_stdin(rows):
        raise click.UsageError("--dask reads ROWS on the workers: name the files (a glob such as 'rows/*.parquet' "
                               "or a directory), not standard input")
    if scheduler is not None:
        try:
            parse_scheduler(scheduler)
        except ValueError as error:
            raise click.BadParameter(str(error), param_hint="--dask") from None
    if options.reduce is None:
        if out is None or out == "-":
            raise click.UsageError("per-row output of partitioned rows is a directory of parts, one per "
                                   "partition: give -o DIR (or --reduce for one report)")
        if options.written == "parquet" and options.precision is not None:
            raise click.UsageError("--precision rounds the numbers of text output; Parquet keeps every bit")
    elif force:
        raise click.UsageError("--force replaces a directory of parts; --reduce writes one report")
    elif out is not None and out != "-":
        check_writable(out, "report.json")


def _refuse_writing_over_rows(out: str, paths: list[str]) -> None:
    """-o DIR must not hold the rows read: replacing it would delete them."""
    import os

    directory = os.path.realpath(out)
    for path in paths:
        if os.path.commonpath([directory, os.path.realpath(path)]) == directory:
            raise click.UsageError(f"-o {out} holds the rows being read ({path}); replacing it would delete them: "
                                   "write the parts to another directory")
