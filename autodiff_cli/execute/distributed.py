"""Past one machine: work mapped over partitions of rows on a Dask cluster, in a fixed order.

``Cluster`` connects to a scheduler (``tcp://host:8786``) or starts a local cluster of worker
processes (``local[:N]``); ``InProcess`` runs the same work here, one partition after another.
Both ``map`` a function over partitions and hand back the results in partition order, so
whatever combines them (sums, part files) does so in the same order for any number of
workers.  A remote failure comes back as one of our ``AutodiffError`` classes, never a
traceback: our own errors pickle and are raised as they are; a worker that died running a
partition (Dask retries it elsewhere first) and any other exception become an
``EvaluationError`` naming the partition.  Ctrl-C cancels the cluster's work before it goes on.

``DistributedObjective`` is ``execute.fit``'s ``Objective`` over partitions held in the
workers' memory: each step scatters the parameters, maps the loss and gradient of each
partition's own objective (``ProgramObjective`` or ``TensorObjective``) and combines them,
weighted by rows, in partition order.

What a partition is (a file, its rows) is the caller's: functions that read one are handed in,
so this layer knows nothing of files.  Dask is imported only when a cluster is used.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import AutodiffError, EvaluationError, InputError, Source, listed

if TYPE_CHECKING:
    import numpy as np

    from ..language.program import Program
    from .fit import FitPlan, Objective

__all__ = ["Cluster", "DistributedObjective", "InProcess", "PartitionObjective", "PartitionRows", "cluster_or_here",
           "parse_scheduler", "partition_labels"]

# Tries of a partition whose worker dies under it (Dask's allowed-failures, then it gives up).
RETRIES = 3
# Parameters of at least this many bytes are scattered to the workers once per step; fewer go
# in each task's message.
SCATTERED_BYTES = 64 * 1024


# A local cluster's workers: at most this many per core, each with at least this much memory free.
WORKERS_PER_CORE = 4
WORKER_MEMORY = 256 << 20


def most_local_workers() -> int:
    """How many worker processes a local cluster may start here: a few per core, and no more than
    the free memory holds (each worker process starts at about 100 MiB)."""
    most = WORKERS_PER_CORE * (os.cpu_count() or 1)
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            free = next(int(line.split()[1]) << 10 for line in meminfo if line.startswith("MemAvailable:"))
        most = min(most, free // WORKER_MEMORY)
    except (OSError, StopIteration, ValueError, IndexError):  # not Linux: the cores are the bound
        pass
    return max(1, most)


def parse_scheduler(scheduler: str) -> tuple[str, int | None]:
    """('local', N) or ('address', None) for a --dask value; N is None for one worker per core.

    Raises ``ValueError`` with the reason for anything else.
    """
    if scheduler == "local" or scheduler.startswith("local:"):
        count = scheduler[len("local:"):]
        if not count:
            return "local", None
        if not count.isdigit() or int(count) < 1:
            raise ValueError(f"'{count}' is not a number of workers: write local:2")
        most = most_local_workers()
        if int(count) > most:
            raise ValueError(f"local:{count} is more worker processes than this machine can hold: at most "
                             f"{most} here ({WORKERS_PER_CORE} per core, {WORKER_MEMORY >> 20} MiB of free "
                             f"memory each); for more, start workers on other hosts and give the scheduler's "
                             f"address")
        return "local", int(count)
    if "://" in scheduler or (":" in scheduler and scheduler.rsplit(":", 1)[1].isdigit()):
        return scheduler, None
    raise ValueError(f"'{scheduler}' is neither a scheduler address (tcp://host:8786) nor local[:N]")


@dataclass
class PartitionRows:
    """One partition's rows in memory: numeric columns, and where each row came from."""

    name: str  # the file, as reported
    columns: dict[str, Any]  # float64 arrays, one per column
    lines: Any  # the line (or Parquet row) of each row
    unit: str = "line"

    @property
    def rows(self) -> int:
        return len(self.lines)

    def label(self, index: int) -> str:
        """Where row ``index`` (from 0) of the partition is: 'line 12 of rows/part-3.csv'."""
        return f"{self.unit} {int(self.lines[index])} of {self.name}"


class _Done:
    """A result computed at once: what ``InProcess.submit`` hands back for a future."""

    def __init__(self, value: Any) -> None:
        self.value = value


def _computed(arg: Any) -> Any:
    """An argument with results in place of ``_Done`` ones, also in a list (as Dask does for futures)."""
    if isinstance(arg, list):
        return [item.value if isinstance(item, _Done) else item for item in arg]
    return arg.value if isinstance(arg, _Done) else arg


class InProcess:
    """The single-machine run of partitioned work: each partition here, in order.  It has
    ``Cluster``'s ``submit``, ``scatter`` and ``gather``, computing at once."""

    def submit(self, function: Callable[..., Any], *args: Any, spread: int | None = None) -> _Done:
        return _Done(function(*map(_computed, args)))

    def scatter(self, value: Any) -> Any:
        return value

    def worker_count(self) -> int:
        return 1

    def gather(self, handles: list[_Done], done: Callable[[int], None] | None, labels: Sequence[str]) -> list[Any]:
        return [handle.value for handle in handles]

    def map(self, function: Callable[..., Any], items: Sequence[Any], *shared: Any,
            done: Callable[[int], None] | None = None, labels: Sequence[str] | None = None) -> list[Any]:
        """``function(item, *shared)`` for every item, in order (``labels`` are the cluster's business)."""
        results = []
        for index, item in enumerate(items):
            results.append(function(item, *shared))
            if done is not None:
                done(index)
        return results


class Cluster:
    """A Dask client: on the scheduler at an address, or on a local cluster it starts (and stops)."""

    def __init__(self, scheduler: str) -> None:
        self.where, self.workers = parse_scheduler(scheduler)
        self.scheduler = scheduler
        self.client: Any = None
        self._local: Any = None
        self._config: Any = None
        self._known_workers: list[str] = []
        self._holders: tuple[tuple[str, ...], dict[str, list[int]]] | None = None
        self._runners: dict[str, Any] = {}  # a worker's address -> its _Runner actor

    def __enter__(self) -> Cluster:
        try:
            self._start()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _start(self) -> None:
        try:
            import dask
            from dask import distributed
        except ImportError as error:
            raise InputError(f"a Dask cluster needs Dask, which is not installed ({error})",
                             hint="pip install 'autodiff-cli[dask]', or run without --dask") from None

        _quiet_dask()
        import multiprocessing

        forks = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
        self._config = dask.config.set({"distributed.scheduler.allowed-failures": RETRIES - 1,
                                        # local workers forked ignoring Ctrl-C: see _quiet_workers
                                        "distributed.worker.multiprocessing-method": forks,
                                        # local workers ignore Ctrl-C (dask_setup below): the client cancels
                                        "distributed.worker.preload": [__name__],
                                        # Dask's default adds MALLOC_TRIM_THRESHOLD_ (see _columns_in_the_heap)
                                        "distributed.nanny.pre-spawn-environ": {
                                            name: 1 for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS",
                                                                 "OPENBLAS_NUM_THREADS")}})
        self._config.__enter__()
        try:
            if self.where == "local":
                workers = self.workers or min(os.cpu_count() or 1, most_local_workers())
                with _quiet_workers():
                    self._local = distributed.LocalCluster(n_workers=workers, threads_per_worker=1,
                                                           processes=True, dashboard_address=":0")
                self.client = distributed.Client(self._local)
            else:
                self.client = distributed.Client(self.where, timeout="10s")
        except BaseException as error:
            self.__exit__(None, None, None)
            if not isinstance(error, Exception):
                raise  # Ctrl-C while the cluster started: stopped again, then the command's 130
            if self.where == "local":
                cause = error.__cause__ or error.__context__
                why = f"{error}" + (f" ({type(cause).__name__}: {cause})" if cause is not None else "")
                raise InputError(f"cannot start a local Dask cluster ({self.scheduler}): {why}",
                                 hint="run without --dask, or on a scheduler's address") from None
            raise InputError(f"cannot reach the Dask scheduler at {self.scheduler}: {error}",
                             hint="start one with `dask scheduler` and workers with `dask worker ADDRESS`, "
                                  "or run here with --dask local:2") from None

    def __exit__(self, *exc: object) -> None:
        """Close the client and stop a local cluster; a scheduler already gone is no error here (what
        failed was said by the error that brought the run here)."""
        for closing in ("client", "_local"):
            part = getattr(self, closing)
            setattr(self, closing, None)
            if part is not None:
                try:
                    part.close()
                except Exception:
                    pass
        if self._config is not None:
            self._config.__exit__(None, None, None)
            self._config = None

    def submit(self, function: Callable[..., Any], *args: Any, spread: int | None = None) -> Any:
        """A future of ``function(*args)`` on a worker (futures among ``args`` are their results there).

        ``spread``: the task's number among tasks to deal out to the workers in turn (Dask
        would give many to the first worker that asks), on that worker unless it is gone."""
        workers = self._workers() if spread is not None else []
        if not workers:
            return self.client.submit(_on_worker, function, *args, pure=False)
        return self.client.submit(_on_worker, function, *args, pure=False, workers=[workers[spread % len(workers)]],
                                  allow_other_workers=True)

    def _workers(self) -> list[str]:
        """The workers' addresses, asked of the scheduler once (the client's own list lags behind
        it); a task dealt to a worker that has gone since runs on another."""
        if not self._known_workers:
            self._known_workers = sorted(self.client.nthreads())
        return self._known_workers

    def worker_count(self) -> int:
        """How many workers the scheduler has now."""
        return max(1, len(self._workers()))

    def scatter(self, value: Any) -> Any:
        """``value`` sent once to every worker, a future that tasks take as an argument; a small
        array is sent in each task's message instead (the scatter's own round trip to the
        scheduler costs more than those bytes)."""
        if getattr(value, "nbytes", SCATTERED_BYTES) < SCATTERED_BYTES:
            return value
        return self.client.scatter(value, broadcast=True, hash=False)

    def run_where_held(self, futures: Sequence[Any], chosen: Mapping[int, Any], function: Callable[..., Any],
                       params: Any) -> dict[int, Any] | None:
        """``function(value, params, chosen[index])`` for each chosen future's value, on the worker
        that holds it, without a task: a message straight to each worker's ``_Runner`` actor and
        back (a task costs the scheduler's bookkeeping, several milliseconds, each step).  None
        when it cannot (a worker gone, a value moved or lost): the caller then uses tasks, which
        Dask recovers from.  Our own errors (a row that fails) are raised as they are."""
        try:
            holders = self._holders_of(futures)
            if holders is None:
                return None
            calls = []
            for address, indices in holders.items():
                mine = {index: chosen[index] for index in indices if index in chosen}
                if mine:
                    pairs = [(index, futures[index].key) for index in mine]
                    calls.append(self._runner(address).run(pairs, function, params, mine))
            results: dict[int, Any] = {}
            for call in calls:
                results.update(call.result())
        except AutodiffError:
            raise
        except Exception:
            self._holders = None
            self._runners = {}
            return None
        return results

    def _runner(self, address: str) -> Any:
        """The ``_Runner`` actor on the worker at ``address``, started on first use."""
        if address not in self._runners:
            self._runners[address] = self.client.submit(_Runner, actor=True, workers=[address],
                                                        allow_other_workers=False).result()
        return self._runners[address]

    def _holders_of(self, futures: Sequence[Any]) -> dict[str, list[int]] | None:
        """Which worker holds each future's value (one of them, where several do), asked once."""
        keys = tuple(future.key for future in futures)
        if self._holders is None or self._holders[0] != keys:
            who = self.client.who_has(list(futures))
            holders: dict[str, list[int]] = {}
            for index, key in enumerate(keys):
                addresses = sorted(who.get(key) or ())
                if not addresses:
                    return None
                holders.setdefault(addresses[0], []).append(index)
            self._holders = (keys, holders)
        return self._holders[1]

    def map(self, function: Callable[..., Any], items: Sequence[Any], *shared: Any,
            done: Callable[[int], None] | None = None, labels: Sequence[str] | None = None) -> list[Any]:
        """``function(item, *shared)`` for every item on the cluster, the results in the items' order."""
        futures = [self.submit(function, item, *shared) for item in items]
        return self.gather(futures, done, labels or [f"partition {i + 1}" for i in range(len(items))])

    def gather(self, futures: list[Any], done: Callable[[int], None] | None, labels: Sequence[str]) -> list[Any]:
        """The futures' results in order.  The first failure (the lowest partition of those that
        fail before the rest are cancelled) is raised as our error; Ctrl-C cancels them all."""
        from dask.distributed import as_completed, wait

        index_of = {future.key: index for index, future in enumerate(futures)}
        results: list[Any] = [None] * len(futures)
        try:
            if done is None:  # no progress to show: one wait and one gather, not a message per future
                wait(futures)
                failed = next((i for i, future in enumerate(futures) if future.status == "error"), None)
                if failed is not None:
                    self._raise_first_failure(futures, failed, labels)
                return list(self.client.gather(futures))
            for future in as_completed(futures):
                index = index_of[future.key]
                if future.status == "error":
                    self._raise_first_failure(futures, index, labels)
                results[index] = future.result()
                done(index)
        except BaseException as error:
            try:
                self.client.cancel(futures)
            except Exception:  # the scheduler is gone: there is nothing left to cancel
                pass
            if isinstance(error, Exception) and not isinstance(error, AutodiffError):
                raise remote_error(error, "the run") from None  # the cluster itself failed (a lost scheduler)
            raise
        return results

    def _raise_first_failure(self, futures: list[Any], failed: int, labels: Sequence[str]) -> None:
        from dask.distributed import wait

        self.client.cancel(futures[failed + 1:])
        wait(futures[:failed])  # a partition before this one may fail too: the first is reported
        first = next(i for i, future in enumerate(futures) if i == failed or future.status == "error")
        error = futures[first].exception()
        if _killed_worker(error):
            # Dask counts a death against every task its worker held, the one that killed it and
            # any queued behind it: name each partition it gave up on, not the first as the culprit
            died = [labels[i] for i, future in enumerate(futures[:failed + 1])
                    if future.status == "error" and _killed_worker(future.exception())]
            raise remote_error(error, " or ".join(died))
        raise remote_error(error, labels[first])


class _Runner:
    """A Dask actor, one per worker: runs a function of values the worker holds (partitions'
    objectives) when the client asks, with no task and no scheduler in between."""

    def __init__(self) -> None:
        from dask.distributed import get_worker

        self.worker = get_worker()

    def run(self, pairs: list[tuple[int, str]], function: Callable[..., Any], params: Any,
            chosen: Mapping[int, Any]) -> dict[int, Any]:
        _columns_in_the_heap()
        data = self.worker.data
        return {index: function(data[key], params, chosen[index]) for index, key in pairs}


def _on_worker(function: Callable[..., Any], *args: Any) -> Any:
    _columns_in_the_heap()
    return function(*args)


_HEAP_TUNED = False


def _columns_in_the_heap() -> None:
    """Once per worker process: glibc's malloc keeps blocks below 32 MiB in its heap.

    Dask's nannies start workers with MALLOC_TRIM_THRESHOLD_ set, which also freezes the
    threshold above which malloc maps memory from the system at its 128 KiB start; every
    column of a chunk (16,384 rows: 128 KiB) and every temporary NumPy makes of it is then
    mapped, faulted in page by page and unmapped: the executor ran 15 to 30 times slower on
    a worker than in a process of its own.  A threshold of 32 MiB (glibc's largest) restores
    its speed; the trim threshold is set twice that, as glibc's own adjustment would."""
    global _HEAP_TUNED
    if _HEAP_TUNED:
        return
    _HEAP_TUNED = True
    import ctypes
    import ctypes.util
    import sys

    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc (musl has no mallopt): nothing to tune
        return
    m_trim_threshold, m_mmap_threshold = -1, -3
    mallopt(m_mmap_threshold, 32 << 20)
    mallopt(m_trim_threshold, 64 << 20)


def _killed_worker(error: BaseException | None) -> bool:
    """Whether Dask gave up on a task because the workers running it kept dying."""
    return type(error).__name__ == "KilledWorker"


def remote_error(error: BaseException, where: str) -> AutodiffError:
    """A cluster's exception as ours: our errors as they are, a dead worker or a surprise explained."""
    if isinstance(error, AutodiffError):
        return error
    if _killed_worker(error):
        return EvaluationError(f"the Dask workers running {where} died {RETRIES} times, so the run stopped",
                               hint="a worker that runs out of memory dies: give the workers more memory "
                                    "(dask worker --memory-limit) or split the rows into smaller files")
    return EvaluationError(f"{where} failed on the cluster: {type(error).__name__}: {error}",
                           hint="check that every worker has the same autodiff-cli and can read the files")


@contextmanager
def _quiet_workers() -> Iterator[None]:
    """Worker processes started here log only what is critical: a task's failure comes back to
    the client as an error, and is said once, by the command (they read the setting from the
    environment when they start).  And they never see Ctrl-C: a Ctrl-C at the terminal reaches
    every process of the group, and it is the client's to cancel the work and stop them, with
    no traceback from each (one that is still starting up prints a fatal error).

    So the workers are forked by multiprocessing's fork server, started here with SIGINT
    ignored: the server keeps that for the processes it forks, from their first instant.  (An
    ignored signal is the one thing a new process inherits; a mask blocking it is lost in
    Dask's threads.)  The window is the server's start, milliseconds; the preload below
    covers a platform without a fork server."""
    import multiprocessing
    import signal

    name = "DASK_LOGGING__DISTRIBUTED"
    before = os.environ.get(name)
    os.environ[name] = "critical"
    if "forkserver" in multiprocessing.get_all_start_methods():
        from multiprocessing import forkserver

        handler = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            with _stderr_to_devnull():
                forkserver.ensure_running()
        finally:
            signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        if before is None:
            del os.environ[name]
        else:
            os.environ[name] = before


@contextmanager
def _stderr_to_devnull() -> Iterator[None]:
    """Standard error pointed at /dev/null while the fork server and multiprocessing's resource
    tracker start, so that the processes they make inherit that: a worker that a Ctrl-C stops
    while it is still being forked (its parent gone before it was told what to run) printed a
    traceback and a 'leaked semaphore' warning, long after the run said 'interrupted'.  What a
    worker has to say comes back to the client as an error, and is said once, by the command."""
    import sys

    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def dask_setup(worker: Any) -> None:
    """Run by each worker of a local cluster as it starts (a Dask preload of this module): it
    ignores Ctrl-C, where no fork server started it ignoring it (see ``_quiet_workers``)."""
    import signal
    import threading

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def _quiet_dask() -> None:
    """Dask's own log lines (a worker restarted, a connection closed) are not ours to print:
    what matters comes back as an error."""
    for name in ("distributed", "tornado"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


# --- training on a cluster ---------------------------------------------------------------------


def _objective_of(load: Callable[[Any], PartitionRows], make: Callable[[PartitionRows], Objective],
                  part: Any) -> tuple[Objective, dict[str, Any]]:
    """On a worker: the partition's rows read and its objective made, once; kept there.

    The rows' columns are handed back beside the objective, which holds them: Dask measures
    what a task keeps by its arrays, and an objective alone looks a few bytes big, so the
    scheduler would think nothing of moving it to another worker at every step."""
    rows = load(part)
    return make(rows), rows.columns


def _rows_of(held: tuple[Objective, Any]) -> int:
    return held[0].rows


def _weighted_loss_and_grad(held: tuple[Objective, Any], params: Any, rows: Any) -> tuple[float, Any, int]:
    """On a worker: the partition's loss and gradient summed over its rows (the mean times the rows)."""
    objective = held[0]
    count = objective.rows if rows is None else len(rows)
    loss, grad = objective.loss_and_grad(params, rows)
    return loss * count, grad * count, count


def _weighted_loss(held: tuple[Objective, Any], params: Any) -> float:
    return held[0].loss(params) * held[0].rows


class DistributedObjective:
    """The mean loss over every partition's rows, computed where the rows are.

    ``cluster`` is a ``Cluster``, or ``InProcess`` for the same sums on one machine.
    ``load(part)`` reads a partition (on a worker) and ``make(rows)`` makes its objective
    there; both run once per partition, and the objectives stay in the workers' memory for
    every step (should a worker die, Dask reads its partitions again elsewhere).  The
    partitions are dealt out to the workers in turn, and each step is one message straight
    to each worker that holds some (``Cluster.run_where_held``: no task, so no scheduling,
    which cost ~11 ms a step), or, when that cannot be (a worker died and Dask is reading its
    partitions again), one task per worker: it sends only the parameters and the step's row
    indices of each partition, and gets back a loss, a gradient and a count per partition,
    added up in partition order, so the numbers are the same for any number of workers.  Mini-batches index all rows,
    partition after partition, as a single-machine run indexes one file of the same rows.
    """

    direct = True  # each step straight to the workers (Cluster.run_where_held); False: tasks only
    layout: Any = None  # a tensor program's parameters laid out (``objective.laid_out``), as each partition's are
    start: Any = None  # their starting vector

    def __init__(self, cluster: Cluster | InProcess, parts: Sequence[Any], load: Callable[[Any], PartitionRows],
                 make: Callable[[PartitionRows], Objective], labels: Sequence[str] | None = None) -> None:
        import numpy as np

        self.cluster = cluster
        self.labels = list(labels or [f"partition {i + 1}" for i in range(len(parts))])
        self._objectives = [cluster.submit(_objective_of, load, make, part, spread=index)
                            for index, part in enumerate(parts)]
        workers = min(cluster.worker_count(), len(parts))
        self._groups = [list(range(first, len(parts), workers)) for first in range(workers)]
        counts = cluster.gather([cluster.submit(_rows_of, objective) for objective in self._objectives], None,
                                self.labels)
        self.counts = np.array(counts, dtype=np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(self.counts)])
        self.rows = int(self.offsets[-1])

    def loss_and_grad(self, params: np.ndarray, rows: np.ndarray | None) -> tuple[float, np.ndarray]:
        import numpy as np

        parts = self._each_partition(_weighted_loss_and_grad, params, rows)
        count = sum(part[2] for part in parts)
        loss = math.fsum(part[0] for part in parts) / count
        grad = np.zeros_like(np.asarray(params, dtype=np.float64))
        for part in parts:  # partition order: the same bits for any number of workers
            grad = grad + part[1]
        return loss, grad / count

    def loss(self, params: np.ndarray) -> float:
        return math.fsum(self._each_partition(_weighted_loss, params, None)) / self.rows

    def _each_partition(self, function: Callable[..., Any], params: np.ndarray, rows: np.ndarray | None) -> list[Any]:
        """``function(objective, params, rows)`` of every partition with rows in this step, in
        partition order: one task per worker, over the partitions dealt to it."""
        cluster = self.cluster
        if isinstance(cluster, Cluster) and self.direct:
            chosen = {index: local for index in range(len(self._objectives))
                      for local in [self._local_rows(index, rows)] if local is None or len(local)}
            direct = cluster.run_where_held(self._objectives, chosen, _with_rows, (function, params))
            if direct is not None:
                return [direct[index] for index in sorted(direct)]
        shared = cluster.scatter(params)
        futures, labels, order = [], [], []
        for worker, members in enumerate(self._groups):
            chosen = [(index, self._local_rows(index, rows)) for index in members]
            chosen = [(index, local) for index, local in chosen if local is None or len(local)]
            if not chosen:
                continue  # none of this mini-batch's rows are on this worker
            held = [self._objectives[index] for index, _ in chosen]
            futures.append(cluster.submit(_on_each, function, held, shared, [local for _, local in chosen],
                                          spread=worker))
            labels.append(" or ".join(self.labels[index] for index, _ in chosen[:3]) + (" ..." if len(chosen) > 3 else ""))
            order.append([index for index, _ in chosen])
        results = dict(zip((index for indices in order for index in indices),
                           (result for group in cluster.gather(futures, None, labels) for result in group)))
        return [results[index] for index in sorted(results)]

    def _local_rows(self, index: int, rows: np.ndarray | None) -> np.ndarray | None:
        """The step's rows that are in partition ``index``, counted from its first row."""
        if rows is None:
            return None
        start, end = self.offsets[index], self.offsets[index + 1]
        return rows[(rows >= start) & (rows < end)] - start


def _with_rows(held: Any, call: tuple[Callable[..., Any], Any], rows: Any) -> Any:
    """``function(held, params, rows)`` for ``call`` = (function, params); the loss alone takes no rows."""
    function, params = call
    return function(held, params) if function is _weighted_loss else function(held, params, rows)


def _on_each(function: Callable[..., Any], held: list[Any], params: Any, rows: list[Any]) -> list[Any]:
    """On a worker: ``function`` of each partition it holds, in order."""
    if function is _weighted_loss:
        return [function(one, params) for one in held]
    return [function(one, params, local) for one, local in zip(held, rows)]


class PartitionObjective:
    """Makes a partition's own objective from its rows, on the worker that holds them
    (``execute.objective.row_objective``): a ``ProgramObjective`` for a program of numbers, a
    ``TensorObjective`` when ``layout`` (the tensor parameters' layout, ``objective.laid_out``)
    is given, with the fixed inputs ``fixed`` as drawn.  ``columns`` are the data's columns that
    feed inputs.  Rows that fail are named by the partition's file and line."""

    def __init__(self, program: Program, plan: FitPlan, columns: Sequence[str], layout: Any = None,
                 fixed: Mapping[str, Any] | None = None, advice: Any = None) -> None:
        self.program, self.plan, self.columns = program, plan, list(columns)
        self.layout, self.fixed, self.advice = layout, dict(fixed or {}), advice

    def __call__(self, rows: PartitionRows) -> Objective:
        from .objective import row_objective

        self._check_columns(rows)
        return row_objective(self.program, self.plan, {name: rows.columns[name] for name in self.columns},
                             self.layout, self.fixed, rows.label, self.advice)

    def _check_columns(self, rows: PartitionRows) -> None:
        """Every partition has the first one's columns, no fewer (nothing to read an input from)
        and no more (a column the plan never saw would be left out without a word)."""
        lacks = [name for name in self.columns if name not in rows.columns]
        adds = [name for name in rows.columns if name not in self.columns]
        if not lacks and not adds:
            return
        said = ([f"lacks {listed(lacks, 10)}"] if lacks else []) + ([f"adds {listed(adds, 10)}"] if adds else [])
        raise InputError(f"the columns of {rows.name} are not the first partition's: it "
                         f"{' and '.join(said)}", source=Source(rows.name, ""),
                         hint="give every file of the rows the same columns on its first line (the first "
                              f"partition's: {', '.join(self.columns[:20])}{' ...' if len(self.columns) > 20 else ''})")


@contextmanager
def cluster_or_here(scheduler: str | None) -> Iterator[Cluster | InProcess]:
    """A ``Cluster`` on ``scheduler``, or ``InProcess`` when there is none."""
    if scheduler is None:
        yield InProcess()
        return
    with Cluster(scheduler) as cluster:
        yield cluster


def partition_labels(names: Sequence[str]) -> list[str]:
    """'partition 17 (rows/part-16.parquet)': how a failed partition is named."""
    return [f"partition {index + 1} ({name})" for index, name in enumerate(names)]

