"""``autodiff batch``: a program and its gradients over every row of a CSV, TSV or JSON Lines file.

The program is compiled once and run over chunks of rows by the vectorized executor
(``execute/vectorized.py``); rows stream in and results stream out, so memory stays
flat however long the input.  ``--reduce`` sums or averages over all rows instead and
prints one report, as ``eval`` does for one set of inputs.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from ..errors import EvaluationError, InputError, OutputError, Source, variables_hint
from ..files.atomic import StreamedFile, check_writable, write_atomic
from ..files.formats import ROW_EXTENSIONS, ROW_FORMATS, extension_of, format_by_extension, row_format, sniffs
from ..files.stdout import StdoutBytes, emit, stdout_closed
from ..files.streams import names_stdin, stdin_is_piped, stdout_is_terminal
from .console import notify, print_rich, reading_progress, warn
from .options import (
    Command,
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
    from ..execute.vectorized import BatchEvaluator, BatchResult, RowError
    from ..language.program import Program
    from ..execute.columns import ColumnPlan
    from ..files.rows import Chunk, ParquetReader, RowReader

__all__ = ["batch_command"]

ON_ERROR = {"fail": "raise", "skip": "skip", "nan": "nan"}
REPORT_EXTENSIONS = {".json": "json", ".csv": "csv"}  # --reduce's report, when --format is not given


def _advice() -> Any:
    """Hints from the executor in this command's terms: its options, not Python's arguments."""
    from ..execute.vectorized import Advice

    def give(names: list[str]) -> str:
        return (f"add a column to the rows, or give one value for every row with {set_advice(names)} or "
                "--values FILE.json")

    return Advice(", or leave out the rows that have them (--on-error skip)", give)



@click.command("batch", cls=Command, context_settings=CONTEXT_SETTINGS, epilog=EXIT_CODES_HELP,
               short_help="Values and gradients on every row of a data file.")
@program_options
@click.argument("rows", metavar="[ROWS]", required=False, shell_complete=complete_file_name)
@click.option("-o", "--out", "out", metavar="FILE", shell_complete=complete_file_name,
              help="Write here instead of stdout; the file appears whole or not at all (for partitioned "
                   "ROWS: a directory of parts, likewise).")
@click.option("--from", "input_format", type=click.Choice(ROW_FORMATS),
              help="Format of ROWS [default: from its extension; else jsonl if it starts with '{', csv if not].")
@click.option("--to", "output_format", type=click.Choice(ROW_FORMATS),
              help="Format of the rows written [default: from -o's extension; csv for stdout].")
@click.option("--wrt", multiple=True, metavar="NAMES",
              help="Gradient columns for these variables (comma-separated, repeatable) [default: every input].")
@click.option("--keep", multiple=True, metavar="COLS",
              help="Copy only these input columns to the output; a column the program does not use is "
                   "passed through as written ('' keeps none) [default: every input column].")
@click.option("--values-of", "values_of", multiple=True, metavar="NAMES",
              help="Also write the values of these variables (e.g. intermediates), one column each.")
@click.option("--reduce", type=click.Choice(["sum", "mean"]),
              help="No per-row output: the sum or mean over all rows of the output and of every gradient, "
                   "as one report (batch backprop).")
@click.option("--format", "report_format", type=click.Choice(["table", "plain", "json", "csv"]),
              help="With --reduce: the report's format [default: from -o's extension (.json, .csv); else "
                   "table on a terminal, plain when piped].")
@click.option("--on-error", "on_error", type=click.Choice(list(ON_ERROR)), default="fail", show_default=True,
              help="A row where the program fails (log of a negative...): stop with exit status 1, skip "
                   "the row, or write NaN for its results.  skip and nan count the rows on stderr.")
@click.option("--precision", type=click.IntRange(1, 17), metavar="N",
              help="Significant digits of the numbers computed [default: all, round-trip].")
@click.option("--dask", "scheduler", metavar="SCHEDULER",
              help="Run on a Dask cluster: a scheduler's address (tcp://host:8786), or local[:N] to start N "
                   "worker processes here [N: one per core].  ROWS may then be a glob or a directory of files, "
                   "one partition each; per-row output is a directory of parts (-o DIR).  Needs "
                   "pip install 'autodiff-cli[dask]'.")
@click.option("--force", is_flag=True, help="Replace an existing -o directory of parts (partitioned rows).")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
@click.option("--no-color", is_flag=True, help="No colour in --reduce's table (also when NO_COLOR is set).")
@reporting_errors
def batch_command(
    source: str | None, expr: str | None, file: str | None, assignments: dict[str, float],
    values_file: str | None, output: str | None, rows: str | None, out: str | None, input_format: str | None,
    output_format: str | None, wrt: tuple[str, ...], keep: tuple[str, ...], values_of: tuple[str, ...],
    reduce: str | None, report_format: str | None, on_error: str, precision: int | None, scheduler: str | None,
    force: bool, quiet: bool, no_color: bool,
) -> None:
    """Evaluate a program and its gradients on every row of a CSV, TSV, JSON Lines or
    Parquet file.

    PROGRAM follows eval's SOURCE rules (a file, '-' for stdin, or the program
    text; or -e/-f).  ROWS is a file, or '-' for stdin (also read when ROWS is
    omitted and stdin is a pipe), or a glob or directory of files read as
    partitions in name order (with --dask, on a cluster: 'rows/*.parquet'
    --dask local:2 -o out/; see docs/dask.md).  The first line names the columns (JSON
    Lines: each line is an object).  A column gives an input a value per row;
    inputs no column gives take --set, --values or the program's defaults, the
    same on every row.  Parquet needs pyarrow (pip install 'autodiff-cli[parquet]').

    Each row of the output holds the input columns (or --keep's), the output
    (a column named after it, e.g. L), any --values-of variables, and one
    gradient column per input (or --wrt variable) named dL/da: the derivative
    of the output L with respect to a.  Numbers are written in full
    (round-trip) unless --precision is given.

    \b
    Examples:
      autodiff batch model.ad rows.csv > out.csv
      cat rows.jsonl | autodiff batch model.ad - --to jsonl --wrt w,b
      autodiff batch model.ad rows.csv --reduce mean --format json
      autodiff batch samples/regression.ad samples/regression.csv --keep x --to tsv
    """
    if expr is not None or file is not None:  # the one positional argument is then the rows
        if rows is not None and source is not None:
            raise click.UsageError("with -e/-f the program is given; pass only ROWS as an argument")
        rows, source = rows or source, None
    _check_options(reduce, report_format, output_format, keep, out)
    from ..files.partitions import is_partitioned

    if scheduler is not None or is_partitioned(rows):
        _batch_partitions(source, expr, file, assignments, values_file, output, rows, out, input_format,
                          output_format, wrt, keep, values_of, reduce, report_format, on_error, precision,
                          scheduler, force, quiet, no_color)
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
        refuse_overwriting_inputs("-o", out, {"the program": file or source, "the --values file": values_file})

    program, values = load_inputs(source, expr, file, assignments, values_file)
    from ..files.rows import opened, reader_for

    written = row_format(out, output_format)
    if reduce is None and written == "parquet":
        if precision is not None:
            raise click.UsageError("--precision rounds the numbers of text output; Parquet keeps every bit")
        if (out is None or out == "-") and stdout_is_terminal():
            raise click.UsageError("refusing to write binary Parquet to a terminal; write it to a file with "
                                   "-o rows.parquet, or redirect: ... > rows.parquet")
    with opened(rows, notify) as (stream, name, size):
        reader = reader_for(stream, name, row_format(rows, input_format), sniffs(rows, input_format))
        plan = _plan(program, reader, values, keep, reduce is not None)
        reader.check_numeric(plan.numeric)  # the data's own errors first: files/rows
        evaluator, broadcast = _evaluator(program, plan, values, output, wrt, values_of, reduce)
        with reading_progress(size, quiet, name) as advance:
            if reduce is None:
                _write_rows(reader, plan, evaluator, broadcast, out, written, precision, ON_ERROR[on_error],
                            advance)
            else:
                _report(reader, plan, evaluator, broadcast, reduce, out, report_format, precision,
                        ON_ERROR[on_error], no_color, advance)


# The shared SOURCE argument is this command's PROGRAM (ROWS follows it).
next(param for param in batch_command.params if param.name == "source").metavar = "[PROGRAM]"


def _entries(name: str, shape: tuple[int, ...]) -> list[str]:
    from ..execute.tensor_batch import entry_columns

    return entry_columns(name, shape)


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


def _plan(program: Program, reader: RowReader | ParquetReader, values: dict[str, float],
          keep: tuple[str, ...], reducing: bool) -> ColumnPlan:
    """What each column of the rows is for: a program input, or text to pass through (--keep)."""
    from ..execute.columns import plan_columns

    chosen = name_list(keep) if keep else None  # only --keep can name a column the program does not use
    for name in chosen or []:
        if name not in reader.columns:
            raise InputError(f"--keep names '{name}', which is not a column of {reader.name}",
                             hint=variables_hint(reader.columns, [name]).replace("the variables are",
                                                                                 "the columns are"))
    way_out = ("remove it (--reduce writes no rows to keep it in)" if reducing else
               "pass the column through to the output with --keep {name},..., or remove it")
    plan = plan_columns(program, reader.columns, values, data_name=reader.name, locate=reader.column_error,
                        keep=chosen, unknown_advice=way_out)
    if plan.missing:
        raise plan.missing_error(program, reader.name)
    return plan


def _runs_as_tensors(program: Program, plan: ColumnPlan, values: dict[str, Any]) -> bool:
    """A tensor program, a tensor given with --set/--values, or a tensor input read from entry
    columns (``x[0]``, ``x[1]``): the tensor executor runs it."""
    from ..execute.columns import feeds_tensors
    from ..language.program import runs_as_tensors

    return runs_as_tensors(program, values) or feeds_tensors(program, plan)


def _one_row(plan: ColumnPlan, broadcast: dict[str, Any]) -> dict[str, Any]:
    """Inputs as one row of zeros would give them: enough to work out every variable's shape."""
    import numpy as np

    return {**{name: np.zeros(1) for name in plan.numeric}, **broadcast}


def _broadcast(plan: ColumnPlan, values: dict[str, float]) -> dict[str, float]:
    """The values every row shares; those the program does not use are warned about and left out."""
    if plan.unused:
        warn([f"'{name}' is not used by the program; its value is ignored" for name in plan.unused])
    return {name: value for name, value in values.items() if name not in plan.unused}


def _defined(names: list[str], program: Program, option: str) -> list[str]:
    unknown = [name for name in names if name not in program.variables]
    if unknown:
        raise InputError(f"{option} names {', '.join(unknown)}, which the program does not define",
                         source=Source(program.source.name, ""),
                         hint=variables_hint(list(program.variables), unknown))
    return names


def _wrt(wrt: tuple[str, ...], program: Program) -> list[str]:
    return _defined(name_list(wrt), program, "--wrt") if wrt else [v.name for v in program.inputs]


def _values_of(values_of: tuple[str, ...], program: Program, wrt: tuple[str, ...], reduce: str | None) -> list[str]:
    names = _defined(name_list(values_of), program, "--values-of")
    if reduce is not None:  # the report gives every variable it lists a value and a gradient
        names = list(dict.fromkeys(_wrt(wrt, program) + names))
    return names


# --- partitioned rows: a glob or directory of files, here or on a Dask cluster -----------------


def _batch_partitions(
    source: str | None, expr: str | None, file: str | None, assignments: dict[str, float],
    values_file: str | None, output: str | None, rows: str | None, out: str | None, input_format: str | None,
    output_format: str | None, wrt: tuple[str, ...], keep: tuple[str, ...], values_of: tuple[str, ...],
    reduce: str | None, report_format: str | None, on_error: str, precision: int | None, scheduler: str | None,
    force: bool, quiet: bool, no_color: bool,
) -> None:
    """Each file of ROWS is a partition, run through the same steps as one file (on a cluster's
    workers with --dask); per-row output is a directory of parts, --reduce's sums are added in
    partition order, so the numbers are the same for any number of workers."""
    import os

    from ..execute.distributed import cluster_or_here, partition_labels
    from ..files.partitions import PartsDirectory, part_name, partition_paths

    written = row_format(out, output_format)
    _check_partitioned(rows, scheduler, out, written, reduce, precision, force)
    assert rows is not None
    paths = partition_paths(rows)
    if reduce is None:
        _refuse_writing_over_rows(out, paths)  # type: ignore[arg-type]
    program, values = load_inputs(source, expr, file, assignments, values_file)
    job = _plan_job(program, values, paths[0], input_format, output, wrt, keep, values_of, reduce, on_error,
                    precision, written)
    parts = [_Part(path, row_format(path, input_format), sniffs(path, input_format),
                   part_name(index, len(paths), written)) for index, path in enumerate(paths)]
    sizes = [_size_of(path) for path in paths]
    labels = partition_labels(paths)
    directory = PartsDirectory(out, force) if reduce is None else None  # refuses an existing one up front
    with reading_progress(sum(sizes), quiet, rows) as advance:
        read = [0]

        def done(index: int) -> None:
            read[0] += sizes[index]
            advance(read[0])

        with cluster_or_here(scheduler) as cluster:
            if directory is None:
                summed = cluster.map(_partition_sums, parts, job, done=done, labels=labels)
            else:
                with directory:
                    job.directory = directory.temporary
                    counted = cluster.map(_partition_rows, parts, job, done=done, labels=labels)
                    directory.publish([part.output for part in parts])
    if directory is not None:
        _report_failures(counted)
        return
    total = summed[0]
    for later in summed[1:]:
        total.then(later)
    name = os.path.basename(rows.rstrip("/")) if len(paths) > 1 else paths[0]
    _report_sums(total, name, job.plan, job.evaluator, job.broadcast, reduce, out, report_format, precision,
                 no_color)


def _check_partitioned(rows: str | None, scheduler: str | None, out: str | None, written: str,
                       reduce: str | None, precision: int | None, force: bool) -> None:
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
    if reduce is None:
        if out is None or out == "-":
            raise click.UsageError("per-row output of partitioned rows is a directory of parts, one per "
                                   "partition: give -o DIR (or --reduce for one report)")
        if written == "parquet" and precision is not None:
            raise click.UsageError("--precision rounds the numbers of text output; Parquet keeps every bit")
    elif force:
        raise click.UsageError("--force replaces a directory of parts; --reduce writes one report")
    elif out is not None and out != "-":
        check_writable(out, "report.json")


def _report_failures(counted: list[_Failures]) -> None:
    """The partitions' rows that failed or were misread, said once for the whole run."""
    failures = counted[0]
    for later in counted[1:]:
        failures.then(later)
    warn([said for part in counted for said in part.misread])
    failures.report()


def _refuse_writing_over_rows(out: str, paths: list[str]) -> None:
    """-o DIR must not hold the rows read: replacing it would delete them."""
    import os

    directory = os.path.realpath(out)
    for path in paths:
        if os.path.commonpath([directory, os.path.realpath(path)]) == directory:
            raise click.UsageError(f"-o {out} holds the rows being read ({path}); replacing it would delete them: "
                                   "write the parts to another directory")


class _Part:
    """One partition: its file, how to read it, and the name of its part of the output."""

    def __init__(self, path: str, fmt: str, sniff: bool, output: str) -> None:
        self.path, self.format, self.sniff, self.output = path, fmt, sniff, output


class _Job:
    """What every partition is run with: the evaluator and the columns planned from the first
    partition, and what each partition is checked against (its columns must be the same)."""

    def __init__(self, program: Program, values: dict[str, float], keep: tuple[str, ...], plan: ColumnPlan,
                 evaluator: Any, broadcast: dict[str, Any], names: list[str], reduce: str | None, on_error: str,
                 precision: int | None, written: str, first: str) -> None:
        self.program, self.values, self.keep, self.plan = program, values, keep, plan
        self.evaluator, self.broadcast, self.names = evaluator, broadcast, names
        self.reduce, self.on_error, self.precision, self.written = reduce, on_error, precision, written
        self.first = first  # the first partition's file, whose columns every other must have
        self.directory: str | None = None  # where the parts are written (the temporary directory)


def _plan_job(program: Program, values: dict[str, float], first: str, input_format: str | None, output: str | None,
              wrt: tuple[str, ...], keep: tuple[str, ...], values_of: tuple[str, ...], reduce: str | None,
              on_error: str, precision: int | None, written: str) -> _Job:
    """The evaluator and the output's columns, from the first partition's columns (its first line)."""
    from ..files.rows import opened, reader_for

    with opened(first, notify) as (stream, name, _size):
        reader = reader_for(stream, name, row_format(first, input_format), sniffs(first, input_format))
        plan = _plan(program, reader, values, keep, reduce is not None)
        reader.check_numeric(plan.numeric)  # the data's own errors first: files/rows
        evaluator, broadcast = _evaluator(program, plan, values, output, wrt, values_of, reduce)
        names = _output_names(plan, evaluator, reader) if reduce is None else []
    return _Job(program, values, keep, plan, evaluator, broadcast, names, reduce, ON_ERROR[on_error], precision,
                written, name)


def _evaluator(program: Program, plan: Any, values: dict[str, Any], output: str | None, wrt: tuple[str, ...],
               values_of: tuple[str, ...], reduce: str | None) -> tuple[Any, dict[str, Any]]:
    """The executor of the rows (the vectorized one, or the tensor one with its output checked
    before a line is written) and the values every row shares."""
    from ..execute.vectorized import BatchEvaluator

    listed = _values_of(values_of, program, wrt, reduce)
    # --reduce's report gives each variable it lists a gradient: the --values-of ones too.
    differentiated = listed if reduce is not None else _wrt(wrt, program)
    broadcast = _broadcast(plan, values)
    if not _runs_as_tensors(program, plan, values):
        return BatchEvaluator(program, output=output, wrt=differentiated, values_of=listed,
                              advice=_advice()), broadcast
    from ..execute.tensor_batch import TensorBatchEvaluator

    evaluator = TensorBatchEvaluator(program, output=output, wrt=differentiated, values_of=listed, advice=_advice())
    evaluator.shapes_of_rows = evaluator.shapes(_one_row(plan, broadcast))
    evaluator.check_output(evaluator.shapes_of_rows, reduce)
    return evaluator, broadcast


def _size_of(path: str) -> int:
    import os

    try:
        return os.path.getsize(path)
    except OSError:
        return 0  # reading it says what is wrong, with the partition's name


def _no_progress(consumed: int) -> None:
    """A partition's progress is its whole file, counted on the client when it is done."""


def _partition_reader(part: _Part, job: _Job, run: Callable[[Any, ColumnPlan], Any]) -> Any:
    """On a worker (or here): ``run(reader, plan)`` on the partition's rows, once its columns are
    known to be the first partition's (an error otherwise, at its first line)."""
    from ..files.rows import opened, reader_for

    with opened(part.path, _no_notice) as (stream, name, _size):
        reader = reader_for(stream, name, part.format, part.sniff)
        plan = _plan(job.program, reader, job.values, job.keep, job.reduce is not None)
        if plan.missing:
            raise plan.missing_error(job.program, reader.name)
        if set(reader.columns) != set(job.plan.columns):
            other = sorted(set(reader.columns) ^ set(job.plan.columns))
            raise InputError(f"the columns of {name} are not those of {job.first}: "
                             f"{', '.join(other[:10])} {'is' if len(other) == 1 else 'are'} in one and not the other",
                             source=Source(name, ""), hint="give every file of the rows the same columns")
        return run(reader, plan)


def _no_notice(notice: str) -> None:
    """Partitions are files, never a terminal: there is nothing to wait for."""


def _partition_sums(part: _Part, job: _Job) -> _Sums:
    """--reduce's sums over one partition."""
    return _partition_reader(part, job, lambda reader, plan: _sums(reader, plan, job.evaluator, job.broadcast,
                                                                    job.on_error, _no_progress))


def _partition_rows(part: _Part, job: _Job) -> _Failures:
    """One partition's rows written to its part of the output directory, whole or not at all."""
    import os

    from ..files.rows import misread_warnings, writer_for

    assert job.directory is not None
    path = os.path.join(job.directory, part.output)

    def run(reader: Any, plan: ColumnPlan) -> _Failures:
        target = StreamedFile(path)
        stream = target if job.written != "parquet" else target.handle
        writer = writer_for(stream, job.written, job.names, set(plan.passed), job.precision,
                            set(plan.kept) - set(plan.passed))
        try:
            failures = _stream_rows(reader, plan, job.evaluator, job.broadcast, writer, target, job.on_error,
                                    _no_progress)
            target.commit()
        except OSError as error:
            raise OutputError(f"cannot write {path}: {error.strerror or error}",
                              hint="check that the disk is not full, or write somewhere else") from None
        finally:
            target.discard()
        failures.misread = misread_warnings(reader)
        return failures

    return _partition_reader(part, job, run)


# --- per-row output --------------------------------------------------------------------------


def _output_names(plan: ColumnPlan, evaluator: BatchEvaluator, reader: RowReader | ParquetReader) -> list[str]:
    names = list(plan.kept)
    taken = set(names)
    shapes = getattr(evaluator, "shapes_of_rows", None)  # a tensor program's columns are its entries'
    computed = evaluator.column_names() if shapes is None else evaluator.column_names(shapes)
    for name in computed:  # the output, --values-of, then the gradients; an input column is not repeated
        if name in taken and name in plan.numeric:
            continue
        names.append(name)
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise reader.column_error(
                name, f"the output would have two columns named '{name}'",
                "rename the column passed through with --keep, or leave it out")
        seen.add(name)
    return names


def _write_rows(reader: RowReader | ParquetReader, plan: ColumnPlan, evaluator: BatchEvaluator,
                broadcast: dict[str, float], out: str | None, fmt: str, precision: int | None, on_error: str,
                advance: Callable[[int], None]) -> None:
    from ..files.rows import writer_for

    names = _output_names(plan, evaluator, reader)
    to_stdout = out is None or out == "-"
    if to_stdout and sys.stdout is None:
        raise InputError("standard output is closed, so there is nowhere to write the rows",
                         hint="write them to a file with -o FILE")
    target: Any = StdoutBytes() if to_stdout else StreamedFile(out)  # type: ignore[arg-type]
    # Parquet's writer needs a real file; the text formats write through the checks of target.
    stream = target if fmt != "parquet" else target.buffer if to_stdout else target.handle
    writer = writer_for(stream, fmt, names, set(plan.passed), precision, set(plan.kept) - set(plan.passed))
    try:
        failures = _stream_rows(reader, plan, evaluator, broadcast, writer, target, on_error, advance)
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
    _warn_misread(reader)
    failures.report()


def _stream_rows(reader: RowReader | ParquetReader, plan: ColumnPlan, evaluator: BatchEvaluator,
                 broadcast: dict[str, float], writer: Any, target: Any, on_error: str,
                 advance: Callable[[int], None]) -> _Failures:
    """Every row of ``reader`` through ``evaluator`` into ``writer``, flushed chunk by chunk."""
    failures = _Failures(on_error, reader.name)
    writer.header()
    target.flush()
    for chunk in reader.chunks(plan.numeric, plan.passed, wait=False):
        result = _evaluate(evaluator, chunk, broadcast, on_error, None, reader)
        failures.add(result, chunk)
        writer.write(_row_columns(plan, evaluator, chunk, result), result.count)
        target.flush()  # rows go out as soon as they are computed
        advance(chunk.consumed)
    writer.finish()
    target.flush()
    return failures


def _warn_misread(reader: RowReader | ParquetReader) -> None:
    """Cells such as 1e-400 were read as 0, or 1e400 as inf: say so once each, with the first one's place."""
    from ..files.rows import misread_warnings

    warn(misread_warnings(reader))


def _row_columns(plan: ColumnPlan, evaluator: BatchEvaluator, chunk: Chunk, result: BatchResult) -> dict[str, Any]:
    kept = result.kept
    columns: dict[str, Any] = {}
    for name in plan.kept:
        if name in chunk.numbers:
            columns[name] = chunk.numbers[name] if kept is None else chunk.numbers[name][kept]
        else:
            cells = chunk.passed[name]
            columns[name] = cells if kept is None else [cells[i] for i in kept]
    columns.update(result.columns())
    return columns


def _evaluate(evaluator: BatchEvaluator, chunk: Chunk, broadcast: dict[str, float], on_error: str,
              reduce: str | None, reader: RowReader | ParquetReader) -> BatchResult:
    from ..execute.vectorized import RowError

    try:
        return evaluator.evaluate({**chunk.numbers, **broadcast}, reduce=reduce, on_error=on_error)
    except RowError as error:
        line = int(chunk.lines[error.row])
        located = _located(error, f"{chunk.unit} {line}", reader.name)
        # The run stops before the warnings at its end: an inf the file writes as 1e400 is said
        # here.  Rows fail in order, so the row of the first such cell is the one that fails.
        if reader.overflows.first_line == line:
            located.notes.insert(-1, reader.overflows.first_said())
        raise located from None


def _located(error: RowError, where: str, rows_name: str) -> EvaluationError:
    """The executor's error for a failed row, with the row's line in the input instead of its index."""
    notes = [note for note in error.notes if not note.startswith("in row ")]
    shown = ", ".join(f"{name}={value!r}" for name, value in list(error.inputs.items())[:20])
    notes.append(f"in {rows_name} {where}: {shown}")
    notes.append("--on-error skip leaves out the rows where the program fails; --on-error nan writes NaN")
    return EvaluationError(error.message, error.position, error.source, error.hint, notes)


class _Failures:
    """Rows skipped or set to NaN: counted, and the first one explained, on stderr at the end."""

    def __init__(self, on_error: str, rows_name: str) -> None:
        self.on_error = on_error
        self.rows_name = rows_name
        self.count = 0
        self.rows = 0
        self.first: str | None = None

        self.infinite = 0  # rows that did not fail but have a gradient that is inf or NaN
        self.first_infinite: str | None = None
        self.misread: list[str] = []  # a partition's cells read as 0 or inf, said by the client

    def add(self, result: BatchResult, chunk: Chunk) -> None:
        self.rows += result.rows
        failures = result.failures
        if failures and self.first is None:
            row = int(result.failed.argmax())
            self.first = f"{self.rows_name} {chunk.unit} {int(chunk.lines[row])}: {result.error(row).message}"
        self.count += failures
        if result.reduce is None:
            self._look_for_infinite_gradients(result, chunk)

    def _look_for_infinite_gradients(self, result: BatchResult, chunk: Chunk) -> None:
        """Count the rows whose gradient is not finite though the row did not fail (sqrt at 0)."""
        import numpy as np

        rows = result.count
        if not result.grads or not rows:
            return
        bad = np.zeros(rows, dtype=bool)
        for grad in result.grads.values():
            grad = np.asarray(grad)
            if grad.ndim:
                bad |= ~np.isfinite(grad.reshape(rows, -1)).all(axis=1)
        if result.kept is None:
            bad &= ~result.failed  # a row that failed is counted as failed
        if not bad.any():
            return
        self.infinite += int(np.count_nonzero(bad))
        if self.first_infinite is None:
            row = int(np.argmax(bad))
            line = int(chunk.lines[row if result.kept is None else int(result.kept[row])])
            names = [name for name, grad in result.grads.items() if not np.isfinite(np.asarray(grad)[row]).all()]
            self.first_infinite = (f"{self.rows_name} {chunk.unit} {line}, where "
                                   f"{', '.join(f'd{result.output}/d{name}' for name in names[:5])} is not finite")

    def then(self, later: _Failures) -> None:
        """Count the rows of ``later`` (the next partition's) too; the first failures stay first."""
        self.rows += later.rows
        self.count += later.count
        self.infinite += later.infinite
        self.first = self.first or later.first
        self.first_infinite = self.first_infinite or later.first_infinite

    def report(self) -> None:
        notes = []
        if self.count:
            did = "skipped" if self.on_error == "skip" else "wrote NaN for"
            notes.append(f"{did} {self.count:,} of {self.rows:,} rows where the program failed; the first, "
                         f"{self.first}")
        if self.infinite:
            notes.append(f"{self.infinite:,} of {self.rows:,} rows have a gradient that is inf or NaN (a derivative "
                         f"that does not exist there, e.g. sqrt at 0); the first, {self.first_infinite}")
        warn(notes)


# --- --reduce --------------------------------------------------------------------------------


def _report(reader: RowReader | ParquetReader, plan: ColumnPlan, evaluator: BatchEvaluator,
            broadcast: dict[str, float], how: str, out: str | None, report_format: str | None,
            precision: int | None, on_error: str, no_color: bool, advance: Callable[[int], None]) -> None:
    summed = _sums(reader, plan, evaluator, broadcast, on_error, advance)
    _report_sums(summed, reader.name, plan, evaluator, broadcast, how, out, report_format, precision, no_color)


class _Sums:
    """What --reduce adds up: each chunk's sums, in the order the chunks were read (a list per
    name, added exactly at the end), the rows counted, the rows that failed and the cells misread."""

    def __init__(self, failures: _Failures) -> None:
        self.values: dict[str, list[float]] = {}
        self.grads: dict[str, list[float]] = {}
        self.count = 0
        self.failures = failures
        self.misread: list[str] = []

    def then(self, later: _Sums) -> None:
        """Add the sums of the rows after these (the next partition's)."""
        for mine, theirs in ((self.values, later.values), (self.grads, later.grads)):
            for name, parts in theirs.items():
                mine.setdefault(name, []).extend(parts)
        self.count += later.count
        self.failures.then(later.failures)
        self.misread += later.misread


def _sums(reader: RowReader | ParquetReader, plan: ColumnPlan, evaluator: BatchEvaluator,
          broadcast: dict[str, float], on_error: str, advance: Callable[[int], None]) -> _Sums:
    from ..files.rows import misread_warnings

    summed = _Sums(_Failures(on_error, reader.name))
    shapes = getattr(evaluator, "shapes_of_rows", None)  # a tensor program's report lists its entries
    for chunk in reader.chunks(plan.numeric, plan.passed, wait=True):  # fixed chunks: the same sums every run
        result = _evaluate(evaluator, chunk, broadcast, on_error, "sum", reader)
        summed.failures.add(result, chunk)
        summed.count += result.count
        chunk_values, chunk_grads = (result.values, result.grads) if shapes is None else result.entries()
        for name, value in chunk_values.items():
            summed.values.setdefault(name, []).append(float(value))
        for name, value in chunk_grads.items():
            summed.grads.setdefault(name, []).append(float(value))
        advance(chunk.consumed)
    summed.misread = misread_warnings(reader)
    return summed


def _report_sums(summed: _Sums, rows_name: str, plan: ColumnPlan, evaluator: BatchEvaluator,
                 broadcast: dict[str, float], how: str, out: str | None, report_format: str | None,
                 precision: int | None, no_color: bool) -> None:
    from ..language.program import INPUT, OUTPUT
    from ..render import batch as render

    failures, count, sums, grads = summed.failures, summed.count, summed.values, summed.grads
    shapes = getattr(evaluator, "shapes_of_rows", None)
    if count == 0 and how == "mean":
        why = f" (every row failed; the first, {failures.first})" if failures.count else ""
        raise InputError(f"there are no rows to average in {rows_name}{why}",
                         hint="give at least one row the program can evaluate")
    divide = count if how == "mean" else 1

    def total(parts: list[float]) -> float:
        return (math.fsum(parts) + 0.0) / divide

    program = evaluator.program
    variables = list(dict.fromkeys([evaluator.output, *evaluator.values_of]))
    names = variables if shapes is None else [entry for name in variables for entry in _entries(name, shapes[name])]
    base = {entry: name for name in variables for entry in ([name] if shapes is None else _entries(name, shapes[name]))}
    kinds = {name: OUTPUT if base[name] == evaluator.output else program.variables[base[name]].kind for name in names}
    values = {name: total(sums.get(name, [])) for name in names}
    # An input no column gives has one value on every row: its mean is that value and its sum
    # that value times the rows, rounded once (adding it up row by row would round each time).
    for name in names:
        variable = program.variables.get(name)
        if variable is None or variable.kind != INPUT or name in plan.numeric or not math.isfinite(values[name]):
            continue
        same = broadcast[name] if name in broadcast else variable.default
        if same is not None and count:
            values[name] = float(same) if how == "mean" else float(same) * count
    # Every listed name is differentiated; d output / d output is 1 on every row.
    gradient = {name: total(grads[name]) if name in grads else
                (1.0 if how == "mean" else float(count)) if name == evaluator.output else math.nan for name in names}
    if shapes is not None:  # the report lists each entry; a number input's row values are exact sums
        for name in names:
            values.setdefault(name, math.nan)
    infinite = [name for name in names if name in grads and not math.isfinite(gradient[name])
                and math.isfinite(values[name])]
    if infinite and not failures.count:
        warn([f"the {how} of {', '.join(f'd{evaluator.output}/d{name}' for name in infinite[:5])} is not finite: "
              f"some row's gradient is inf or NaN (a derivative that does not exist there, e.g. sqrt at 0); "
              f"without --reduce, batch names the first such row"])
    reduction = render.Reduction(evaluator.output, how, count, failures.count, names, kinds, values, gradient)
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
    failures.report()
