"""``batch`` over rows in many files: each file a partition, here or on a Dask cluster.

``PartitionedBatch`` plans the job from the first partition's first line (``batch_rows``),
then ``run`` maps it over the partitions (``distributed``'s ``Cluster`` or ``InProcess``),
each partition checked to have the first one's columns.  Per-row output is a directory of
parts, one per partition, put in place whole once every part is written; ``--reduce``'s sums
come back per partition and are added in partition order, so the numbers are the same for
any number of workers.

Files are the caller's: a ``files`` object (``files.partitions.PartitionFiles``) opens a
partition's reader, writes a part, says which cells were misread and makes the directory of
parts.  It and the job are pickled to the workers.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import InputError, Source
from .batch_rows import BatchJob, BatchOptions, Failures, Sums, plan_batch, plan_rows, sum_rows, write_rows

if TYPE_CHECKING:
    from ..language.program import Program

__all__ = ["PartitionedBatch"]


@dataclass(frozen=True)
class _Part:
    """One partition: its file, and the name of its part of the output."""

    path: str
    output: str


class PartitionedBatch:
    """``batch`` of the files ``paths`` (sorted: the order of everything), planned from the first."""

    def __init__(self, program: Program, values: dict[str, Any], paths: Sequence[str], options: BatchOptions,
                 files: Any) -> None:
        from .distributed import partition_labels

        self.files = files
        with files.open(paths[0]) as reader:
            self.job = plan_batch(program, values, reader, options)
        self.parts = [_Part(path, files.part_name(index, len(paths))) for index, path in enumerate(paths)]
        self.labels = partition_labels(paths)
        self.sizes = [_size_of(path) for path in paths]

    @property
    def notes(self) -> list[str]:
        """What to say before the run: values given that the program does not use."""
        return self.job.notes

    def run(self, scheduler: str | None, out: str | None, replace: bool,
            done: Callable[[int], None]) -> Failures | Sums:
        """Every partition's rows written to a part of the directory ``out`` (replacing one only if
        ``replace``), or with --reduce summed; ``done(index)`` as each partition finishes.  Per-row
        output gives the rows that failed, --reduce the sums; both in partition order."""
        from .distributed import cluster_or_here

        if self.job.options.reduce is not None:
            with cluster_or_here(scheduler) as cluster:
                summed = cluster.map(_partition_sums, self.parts, self.job, self.files, done=done, labels=self.labels)
            return _in_order(summed)
        directory = self.files.parts_directory(out, replace)  # refuses an existing one before a worker starts
        # The cluster stops before the directory is removed: no worker still writes into it then.
        with directory, cluster_or_here(scheduler) as cluster:
            counted = cluster.map(_partition_rows, self.parts, self.job, self.files, directory.temporary,
                                  done=done, labels=self.labels)
            directory.publish([part.output for part in self.parts])
        failures = _in_order(counted)
        failures.misread = [said for part in counted for said in part.misread]
        return failures


def _in_order(results: list[Any]) -> Any:
    """The first partition's failures or sums, with every later one's added in partition order."""
    total = results[0]
    for later in results[1:]:
        total.then(later)
    return total


def _size_of(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0  # reading it says what is wrong, with the partition's name


def _no_progress(consumed: int) -> None:
    """A partition's progress is its whole file, counted on the client when it is done."""


def _checked_plan(reader: Any, job: BatchJob) -> Any:
    """The partition's column plan, once its columns are known to be the first partition's (an
    error otherwise, at its first line)."""
    plan = plan_rows(job.program, job.values, reader, job.options)
    if set(reader.columns) != set(job.plan.columns):
        other = sorted(set(reader.columns) ^ set(job.plan.columns))
        raise InputError(f"the columns of {reader.name} are not those of {job.first}: "
                         f"{', '.join(other[:10])} {'is' if len(other) == 1 else 'are'} in one and not the other",
                         source=Source(reader.name, ""), hint="give every file of the rows the same columns")
    return plan


def _partition_sums(part: _Part, job: BatchJob, files: Any) -> Sums:
    """On a worker (or here): --reduce's sums over one partition."""
    with files.open(part.path) as reader:
        summed = sum_rows(reader, _checked_plan(reader, job), job, _no_progress)
        summed.misread = files.misread(reader)
    return summed


def _partition_rows(part: _Part, job: BatchJob, files: Any, directory: str) -> Failures:
    """On a worker (or here): one partition's rows written to its part of the output directory,
    whole or not at all."""
    with files.open(part.path) as reader:
        plan = _checked_plan(reader, job)

        def run(writer: Any, target: Any) -> Failures:
            return write_rows(reader, plan, job, writer, target, _no_progress)

        failures: Failures = files.write_part(os.path.join(directory, part.output), job.names, plan,
                                              job.options, run)
        failures.misread = files.misread(reader)
    return failures
