"""``batch``'s work on a stream of rows: which columns feed which inputs, the evaluator, the rows
written chunk by chunk or summed, and the rows that failed.

``plan_batch`` reads a reader's first line (its ``columns``) and ``BatchOptions`` (the command's
options, as values) and makes a ``BatchJob``: the column plan, the evaluator
(``batch_evaluator``), each variable's shape on a row, the values every row shares and the
output's columns.  ``write_rows`` runs a reader's rows through the job into a writer;
``sum_rows`` adds them up for ``--reduce`` and ``reduce_sums`` turns the sums into the report's
numbers.  A reader is anything with the ``files.rows`` readers' ``name``, ``columns``,
``column_error`` and ``chunks``; a writer has ``header``, ``write`` and ``finish``, and a target
``flush``: this layer opens no file.

Nothing here prints: what is to be said at the end (rows skipped, gradients not finite, a
value not used) comes back as notes for the command to show.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import EvaluationError, InputError, Source, variables_hint

if TYPE_CHECKING:
    from ..language.program import Program
    from .batch_evaluator import Advice, BatchEvaluator, BatchResult, RowError
    from .columns import ColumnPlan

__all__ = ["BatchJob", "BatchOptions", "Failures", "Reduction", "Sums", "plan_batch", "reduce_sums", "sum_rows",
           "write_rows"]

# --on-error's choices, as the executors name them.
ON_ERROR = {"fail": "raise", "skip": "skip", "nan": "nan"}


@dataclass(frozen=True)
class BatchOptions:
    """What ``batch`` is asked to compute and write, whatever reads and writes the rows."""

    output: str | None = None  # the output variable (None: the program's last)
    wrt: tuple[str, ...] | None = None  # gradient columns for these (None: every input)
    keep: tuple[str, ...] | None = None  # the columns copied to the output (None: all)
    values_of: tuple[str, ...] = ()  # variables whose values are written too
    reduce: str | None = None  # 'sum' or 'mean': one report instead of rows
    on_error: str = "fail"  # 'fail', 'skip' or 'nan'
    precision: int | None = None  # significant digits of text output
    written: str = "csv"  # the format of the rows written
    advice: Advice | None = None  # hints in the command's terms
    dtype: str | None = None  # 'float32' runs the rows in single precision (tensor executor); None: float64


@dataclass
class BatchJob:
    """What every chunk (and every partition) of the rows is run with: the column plan and the
    evaluator from the first line of the rows, and the columns of the output."""

    program: Program
    values: dict[str, Any]
    options: BatchOptions
    plan: ColumnPlan
    evaluator: BatchEvaluator
    shapes: dict[str, Any]  # each variable's shape on a row: () for a number
    broadcast: dict[str, Any]
    names: list[str]  # the output's columns (per-row output only)
    first: str  # the rows' name, whose columns every other partition must have
    notes: list[str] = field(default_factory=list)  # to say before the rows run

    @property
    def on_error(self) -> str:
        return ON_ERROR[self.options.on_error]


def plan_batch(program: Program, values: dict[str, Any], reader: Any, options: BatchOptions) -> BatchJob:
    """The job for rows whose first line ``reader`` has read."""
    plan = plan_rows(program, values, reader, options)
    reader.check_numeric(plan.numeric)  # the data's own errors first (files/rows), before its shapes are read
    evaluator, shapes, broadcast, notes = _evaluator(program, plan, values, options)
    names = _output_names(plan, evaluator, shapes, reader) if options.reduce is None else []
    return BatchJob(program, values, options, plan, evaluator, shapes, broadcast, names, reader.name, notes)


def plan_rows(program: Program, values: dict[str, Any], reader: Any, options: BatchOptions) -> ColumnPlan:
    """What each column of the rows is for: a program input, or text to pass through (--keep)."""
    from .columns import plan_columns

    chosen = None if options.keep is None else list(options.keep)  # may name a column no input has
    for name in chosen or []:
        if name not in reader.columns:
            raise InputError(f"--keep names '{name}', which is not a column of {reader.name}",
                             hint=variables_hint(reader.columns, [name]).replace("the variables are",
                                                                                 "the columns are"))
    way_out = ("remove it (--reduce writes no rows to keep it in)" if options.reduce is not None else
               "pass the column through to the output with --keep {name},..., or remove it")
    plan = plan_columns(program, reader.columns, values, data_name=reader.name, locate=reader.column_error,
                        keep=chosen, unknown_advice=way_out)
    if plan.missing:
        raise plan.missing_error(program, reader.name, getattr(reader, "header_line", None))
    return plan


def _evaluator(program: Program, plan: ColumnPlan, values: dict[str, Any],
               options: BatchOptions) -> tuple[BatchEvaluator, dict[str, Any], dict[str, Any], list[str]]:
    """The evaluator of the rows, with its output checked before a line is written; each variable's
    shape on a row; the values every row shares; the notes about values unused."""
    import numpy as np

    from .batch_evaluator import PYTHON_ADVICE, BatchEvaluator

    listed = _values_of(options, program)
    # --reduce's report gives each variable it lists a gradient: the --values-of ones too.
    differentiated = listed if options.reduce is not None else _wrt(options.wrt, program)
    notes = [f"'{name}' is not used by the program; its value is ignored" for name in plan.unused]
    broadcast = {name: value for name, value in values.items() if name not in plan.unused}
    evaluator = BatchEvaluator(program, output=options.output, wrt=differentiated, values_of=listed,
                               advice=options.advice or PYTHON_ADVICE, dtype=options.dtype)
    one_row = {**{name: np.zeros(1) for name in plan.numeric}, **broadcast}  # enough to work out every shape
    shapes = evaluator.shapes(one_row)
    evaluator.check_output(shapes, options.reduce)
    return evaluator, shapes, broadcast, notes


def _defined(names: list[str], program: Program, option: str) -> list[str]:
    unknown = [name for name in names if name not in program.variables]
    if unknown:
        raise InputError(f"{option} names {', '.join(unknown)}, which the program does not define",
                         source=Source(program.source.name, ""),
                         hint=variables_hint(list(program.variables), unknown))
    return names


def _wrt(wrt: tuple[str, ...] | None, program: Program) -> list[str]:
    return _defined(list(wrt), program, "--wrt") if wrt is not None else [v.name for v in program.inputs]


def _values_of(options: BatchOptions, program: Program) -> list[str]:
    names = _defined(list(options.values_of), program, "--values-of")
    if options.reduce is not None:  # the report gives every variable it lists a value and a gradient
        names = list(dict.fromkeys(_wrt(options.wrt, program) + names))
    return names


def _output_names(plan: ColumnPlan, evaluator: BatchEvaluator, shapes: dict[str, Any], reader: Any) -> list[str]:
    names = list(plan.kept)
    taken = set(names)
    computed = evaluator.column_names(shapes)  # a tensor's columns are its entries'
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


# --- per-row output --------------------------------------------------------------------------


def write_rows(reader: Any, plan: ColumnPlan, job: BatchJob, writer: Any, target: Any,
               advance: Callable[[int], None]) -> Failures:
    """Every row of ``reader`` through the job's evaluator into ``writer``, flushed chunk by chunk."""
    failures = Failures(job.options.on_error, reader.name)
    writer.header()
    target.flush()
    for chunk in reader.chunks(plan.numeric, plan.passed, wait=False, dtype=_narrower(job)):
        try:
            result = _evaluate(job, chunk, None, reader)
        except _FailedRow as failed:
            _write_chunk(plan, job, _first_rows(chunk, failed.row), reader, failures, writer, target)
            raise failed.error from None
        _write_chunk(plan, job, chunk, reader, failures, writer, target, result)
        advance(chunk.consumed)
    writer.finish()
    target.flush()
    return failures


def _write_chunk(plan: ColumnPlan, job: BatchJob, chunk: Any, reader: Any, failures: Failures, writer: Any,
                 target: Any, result: BatchResult | None = None) -> None:
    if result is None:
        if not chunk.size:
            return
        result = _evaluate(job, chunk, None, reader)
    failures.add(result, chunk)
    writer.write(_row_columns(plan, chunk, result), result.count)
    target.flush()  # rows go out as soon as they are computed


def _first_rows(chunk: Any, count: int) -> Any:
    """The chunk's first ``count`` rows: those before a row that stops the run are written, so
    that what a pipe receives does not depend on where the chunks of a stream happened to end."""
    import dataclasses

    return dataclasses.replace(chunk, numbers={name: column[:count] for name, column in chunk.numbers.items()},
                               passed={name: cells[:count] for name, cells in chunk.passed.items()},
                               lines=chunk.lines[:count])


def _row_columns(plan: ColumnPlan, chunk: Any, result: BatchResult) -> dict[str, Any]:
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


def _evaluate(job: BatchJob, chunk: Any, reduce: str | None, reader: Any) -> BatchResult:
    from .batch_evaluator import RowError

    try:
        # float64_sums: the chunks' float32 rows are added up in float64, chunk by chunk and then the chunks
        return job.evaluator.evaluate({**chunk.numbers, **job.broadcast}, reduce=reduce,  # type: ignore[no-any-return]
                                      on_error=job.on_error, float64_sums=True)
    except RowError as error:
        line = int(chunk.lines[error.row])
        located = _located(error, f"{chunk.unit} {line}", reader.name)
        # The run stops before the warnings at its end: an inf the file writes as 1e400 is said
        # here.  Rows fail in order, so the row of the first such cell is the one that fails.
        if reader.overflows.first_line == line:
            located.notes.insert(-1, reader.overflows.first_said())
        raise _FailedRow(located, error.row) from None


def _narrower(job: BatchJob) -> str | None:
    """The precision the rows run in when it is narrower than float64 (the readers refuse a cell it
    cannot hold, 1e40 in float32, as a bad cell at its line and column), else None."""
    return job.options.dtype if job.options.dtype not in (None, "float64") else None


class _FailedRow(Exception):
    """A row stopped the run (--on-error fail): the error to report, and the row in its chunk."""

    def __init__(self, error: EvaluationError, row: int) -> None:
        super().__init__(error.message)
        self.error, self.row = error, row


def _located(error: RowError, where: str, rows_name: str) -> EvaluationError:
    """The executor's error for a failed row, with the row's line in the input instead of its index."""
    notes = [note for note in error.notes if not note.startswith("in row ")]
    shown = ", ".join(f"{name}={value!r}" for name, value in list(error.inputs.items())[:20])
    notes.append(f"in {rows_name} {where}: {shown}")
    notes.append("--on-error skip leaves out the rows where the program fails; --on-error nan writes NaN")
    return EvaluationError(error.message, error.position, error.source, error.hint, notes)


class Failures:
    """Rows skipped or set to NaN: counted, and the first one explained, in ``notes`` at the end."""

    def __init__(self, on_error: str, rows_name: str) -> None:
        self.on_error = on_error
        self.rows_name = rows_name
        self.count = 0
        self.rows = 0
        self.first: str | None = None

        self.infinite = 0  # rows that did not fail but have a gradient that is inf or NaN
        self.first_infinite: str | None = None
        self.misread: list[str] = []  # a partition's cells read as 0 or inf, said by the client

    def add(self, result: BatchResult, chunk: Any) -> None:
        self.rows += result.rows
        failures = result.failures
        if failures and self.first is None:
            row = int(result.failed.argmax())
            self.first = f"{self.rows_name} {chunk.unit} {int(chunk.lines[row])}: {result.error(row).message}"
        self.count += failures
        if result.reduce is None:
            self._look_for_infinite_gradients(result, chunk)

    def _look_for_infinite_gradients(self, result: BatchResult, chunk: Any) -> None:
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

    def then(self, later: Failures) -> None:
        """Count the rows of ``later`` (the next partition's) too; the first failures stay first."""
        self.rows += later.rows
        self.count += later.count
        self.infinite += later.infinite
        self.first = self.first or later.first
        self.first_infinite = self.first_infinite or later.first_infinite

    def notes(self) -> list[str]:
        """What to say at the end of the run: the rows skipped or made NaN, the gradients not finite."""
        notes = []
        if self.count:
            did = "skipped" if self.on_error == "skip" else "wrote NaN for"
            notes.append(f"{did} {self.count:,} of {self.rows:,} rows where the program failed; the first, "
                         f"{self.first}")
        if self.infinite:
            notes.append(f"{self.infinite:,} of {self.rows:,} rows have a gradient that is inf or NaN (a derivative "
                         f"that does not exist there, e.g. sqrt at 0); the first, {self.first_infinite}")
        return notes


# --- --reduce --------------------------------------------------------------------------------


class Sums:
    """What --reduce adds up: each chunk's sums, in the order the chunks were read (a list per
    name, added exactly at the end), the rows counted, the rows that failed and the cells misread."""

    def __init__(self, failures: Failures) -> None:
        self.values: dict[str, list[float]] = {}
        self.grads: dict[str, list[float]] = {}
        self.count = 0
        self.failures = failures
        self.misread: list[str] = []

    def then(self, later: Sums) -> None:
        """Add the sums of the rows after these (the next partition's)."""
        for mine, theirs in ((self.values, later.values), (self.grads, later.grads)):
            for name, parts in theirs.items():
                mine.setdefault(name, []).extend(parts)
        self.count += later.count
        self.failures.then(later.failures)
        self.misread += later.misread


def sum_rows(reader: Any, plan: ColumnPlan, job: BatchJob, advance: Callable[[int], None]) -> Sums:
    """The sums of every row of ``reader`` (``misread`` is the caller's to fill in)."""
    summed = Sums(Failures(job.options.on_error, reader.name))
    for chunk in reader.chunks(plan.numeric, plan.passed, wait=True, dtype=_narrower(job)):  # fixed chunks: the same sums every run
        try:
            result = _evaluate(job, chunk, "sum", reader)
        except _FailedRow as failed:
            raise failed.error from None
        summed.failures.add(result, chunk)
        summed.count += result.count
        chunk_values, chunk_grads = result.entries()  # a tensor's entries, each a number
        for name, value in chunk_values.items():
            summed.values.setdefault(name, []).append(float(value))
        for name, value in chunk_grads.items():
            summed.grads.setdefault(name, []).append(float(value))
        advance(chunk.consumed)
    return summed


@dataclass
class Reduction:
    """--reduce's sums or means (``how``) over ``rows`` rows (``failed`` of them skipped or made
    NaN), and notes to say: what ``render.batch`` reports."""

    output: str
    how: str
    rows: int
    failed: int
    names: list[str]
    kinds: dict[str, str]
    values: dict[str, float]
    grads: dict[str, float]
    notes: list[str] = field(default_factory=list)
    dtype: str = "float64"  # the precision the rows ran in: in float32, each number is float32's

    @property
    def value(self) -> float:
        return self.values[self.output]


def reduce_sums(summed: Sums, rows_name: str, job: BatchJob, how: str) -> Reduction:
    """The sums (or means) of the output and of every listed variable, with their gradients."""
    from ..language.program import INPUT, OUTPUT
    from .columns import entry_columns

    evaluator, broadcast = job.evaluator, job.broadcast
    failures, count, sums, grads = summed.failures, summed.count, summed.values, summed.grads
    shapes = job.shapes
    if count == 0 and how == "mean":
        why = f" (every row failed; the first, {failures.first})" if failures.count else ""
        raise InputError(f"there are no rows to average in {rows_name}{why}",
                         hint="give at least one row the program can evaluate")
    divide = count if how == "mean" else 1

    def total(parts: list[float]) -> float:
        return (math.fsum(parts) + 0.0) / divide

    def entries(name: str) -> list[str]:
        return entry_columns(name, shapes[name])

    program = evaluator.program
    variables = list(dict.fromkeys([evaluator.output, *evaluator.values_of]))
    names = [entry for name in variables for entry in entries(name)]
    base = {entry: name for name in variables for entry in entries(name)}
    kinds = {name: OUTPUT if base[name] == evaluator.output else program.variables[base[name]].kind for name in names}
    values = {name: total(sums.get(name, [])) for name in names}
    # An input no column gives has one value on every row: its mean is that value and its sum
    # that value times the rows, rounded once (adding it up row by row would round each time).
    for name in names:
        variable = program.variables.get(name)
        if variable is None or variable.kind != INPUT or name in job.plan.numeric or not math.isfinite(values[name]):
            continue
        same = broadcast[name] if name in broadcast else variable.default
        if same is not None and count:
            values[name] = float(same) if how == "mean" else float(same) * count
    # Every listed name is differentiated; d output / d output is 1 on every row.
    gradient = {name: total(grads[name]) if name in grads else
                (1.0 if how == "mean" else float(count)) if name == evaluator.output else math.nan for name in names}
    infinite = [name for name in names if name in grads and not math.isfinite(gradient[name])
                and math.isfinite(values[name])]
    notes = []
    if infinite and not failures.count:
        notes.append(f"the {how} of {', '.join(f'd{evaluator.output}/d{name}' for name in infinite[:5])} is not "
                     f"finite: some row's gradient is inf or NaN (a derivative that does not exist there, e.g. "
                     f"sqrt at 0); without --reduce, batch names the first such row")
    dtype = job.options.dtype or "float64"
    if dtype != "float64":  # added up exactly in float64, then written as the run's precision holds it
        values, gradient = ({name: _held_in(number, dtype, job.options.precision) for name, number in table.items()}
                            for table in (values, gradient))
    return Reduction(evaluator.output, how, count, failures.count, names, kinds, values, gradient, notes, dtype)


def _held_in(number: float, dtype: str, precision: int | None = None) -> float:
    """``number`` rounded to ``dtype`` and back as the float64 nearest its shortest text there
    (2.0794415, not 2.079441547393799), so no digit float32 does not hold is shown; with
    ``precision`` digits asked for, the rounded number's exact value, whose digits those are."""
    import numpy as np

    with np.errstate(over="ignore"):  # a sum beyond float32's range is inf in float32, as the run would give
        held = np.dtype(dtype).type(number)
        return float(held) if precision is not None else float(str(held))
