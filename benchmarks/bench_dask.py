"""``batch --dask local:2`` and ``DistributedObjective`` against the single-process run of the
same partitions, on this machine.  Ratios are measured in one run; rounds alternate; medians.

* ``batch``: ROWS rows of x1, x2, y as PARTS Parquet files; whole processes of
  ``autodiff batch model.ad DIR --reduce mean`` (bench_batch's 2-4-1 tanh network, 20
  gradients per row) without and with ``--dask local:2``.  The cluster's start is part of
  the ``--dask`` time, so it is also timed alone (a run on one tiny partition), and the
  scheduling overhead per task is measured on the started cluster: a map of a function that
  does nothing over 200 tasks, divided by 200.
* ``fit``: the line's squared error (``samples/regression.ad``) over ROWS rows in PARTS
  partitions, held in memory; time per step (loss and gradient) of ``DistributedObjective``
  on ``local:2`` against ``InProcess`` (the same partition sums in this process), each step
  as a task per worker (before issue 34) and straight to the workers' actors (now), in
  interleaved rounds; and the per-step cost: the same steps over partitions of one row each,
  less those steps in process, beside the floor of a no-op message to each worker and back.

    python benchmarks/bench_dask.py batch [--rows 10000000] [--parts 20] [--rounds 3]
    python benchmarks/bench_dask.py fit [--rows 10000000] [--parts 20] [--steps 20]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench_batch import model_text  # the 2-4-1 tanh network with its squared error, its parameters set

REPO = Path(__file__).resolve().parent.parent
LINE = (REPO / "samples" / "regression.ad").read_text()  # w = 0.5, b = 0, L = (w*x + b - y)**2


def write_parts(directory: Path, rows: int, parts: int, columns: tuple[str, ...]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(26)
    for index, count in enumerate(np.diff(np.linspace(0, rows, parts + 1).astype(int))):
        table = {name: rng.standard_normal(count) for name in columns}
        pq.write_table(pa.table(table), directory / f"part-{index:05d}.parquet")


def timed(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def per_task_overhead(tasks: int = 200) -> float:
    from autodiff_cli.execute.distributed import Cluster

    with Cluster("local:2") as cluster:
        cluster.map(len, [[1]] * 20)  # workers warm
        started = time.perf_counter()
        cluster.map(len, [[1]] * tasks)
        return (time.perf_counter() - started) / tasks


def bench_batch(rows: int, parts: int, rounds: int) -> None:
    work = Path(tempfile.mkdtemp(prefix="bench_dask_"))
    try:
        (work / "model.ad").write_text(model_text())
        write_parts(work / "rows", rows, parts, ("x1", "x2", "y"))
        write_parts(work / "tiny", 10, 1, ("x1", "x2", "y"))
        base = [sys.executable, "-m", "autodiff_cli", "batch", str(work / "model.ad")]
        common = ["--reduce", "mean", "--format", "json", "-q"]
        outputs = {}
        for name, extra in (("single", []), ("dask", ["--dask", "local:2"])):
            outputs[name] = subprocess.run(base + [str(work / "rows"), *common, *extra], check=True,
                                           capture_output=True).stdout
        assert outputs["single"] == outputs["dask"], "the reports differ"
        single, spread, start = [], [], []
        for _ in range(rounds):
            single.append(timed(base + [str(work / "rows"), *common]))
            spread.append(timed(base + [str(work / "rows"), *common, "--dask", "local:2"]))
            start.append(timed(base + [str(work / "tiny"), *common, "--dask", "local:2"]))
        one, two, up = statistics.median(single), statistics.median(spread), statistics.median(start)
        print(f"batch --reduce mean, {rows:,} rows in {parts} Parquet files, {rounds} rounds (medians):")
        print(f"  single process          {one:8.2f} s")
        print(f"  --dask local:2          {two:8.2f} s   ratio {one / two:.2f}x (above 1: faster)")
        print(f"  cluster start and stop  {up:8.2f} s   (--dask local:2 on 10 rows)")
        print(f"  --dask without them     {two - up:8.2f} s   ratio {one / (two - up):.2f}x")
        print(f"  scheduling overhead     {per_task_overhead() * 1e3:8.2f} ms per task (a map of 200 no-op tasks)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


class _Echo:
    """An actor that answers at once: the floor of a message to a worker and back."""

    def echo(self, value: int) -> int:
        return value


def round_trip(cluster: object, steps: int) -> float:
    client = cluster.client  # type: ignore[attr-defined]
    echoes = [client.submit(_Echo, actor=True, workers=[address]).result() for address in sorted(client.nthreads())]
    times = []
    for _ in range(steps):
        started = time.perf_counter()
        for call in [echo.echo(1) for echo in echoes]:
            call.result()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def bench_fit(rows: int, parts: int, steps: int) -> None:
    from autodiff_cli.execute.distributed import Cluster, DistributedObjective, InProcess, PartitionObjective
    from autodiff_cli.execute.fit import plan_fit
    from autodiff_cli.files.partitions import PartitionReader, partition_paths
    from autodiff_cli.language import parse

    work = Path(tempfile.mkdtemp(prefix="bench_dask_"))
    try:
        write_parts(work / "rows", rows, parts, ("x", "y"))
        write_parts(work / "ones", parts, parts, ("x", "y"))  # one row per partition
        program = parse(LINE, "regression.ad")
        plan = plan_fit(program, ["x", "y"], {})
        make = PartitionObjective(program, plan, ["x", "y"])
        params = np.array([0.5, 0.0])

        def per_step(cluster: Cluster | InProcess, directory: Path, direct: bool = True) -> float:
            objective = DistributedObjective(cluster, partition_paths(str(directory)), PartitionReader(), make)
            objective.direct = direct
            objective.loss_and_grad(params, None)  # warm (and the workers' runners started)
            times = []
            for _ in range(steps):
                started = time.perf_counter()
                objective.loss_and_grad(params, None)
                times.append(time.perf_counter() - started)
            return statistics.median(times)

        here = per_step(InProcess(), work / "rows")
        here_ones = per_step(InProcess(), work / "ones")
        with Cluster("local:2") as cluster:
            tasks, direct, tasks_ones, direct_ones = [], [], [], []
            for _ in range(3):  # interleaved rounds: the machine's load moves
                tasks.append(per_step(cluster, work / "rows", direct=False))
                direct.append(per_step(cluster, work / "rows"))
                tasks_ones.append(per_step(cluster, work / "ones", direct=False))
                direct_ones.append(per_step(cluster, work / "ones"))
            floor = round_trip(cluster, steps)
        spread, before = statistics.median(direct), statistics.median(tasks)
        ones, ones_before = statistics.median(direct_ones), statistics.median(tasks_ones)
        print(f"fit, the line's squared error, {rows:,} rows in {parts} partitions, median of {steps} steps:")
        print(f"  in process (InProcess)         {here * 1e3:9.2f} ms per step")
        print(f"  local:2, a task per worker     {before * 1e3:9.2f} ms per step   ratio {here / before:.2f}x")
        print(f"  local:2, straight to workers   {spread * 1e3:9.2f} ms per step   ratio {here / spread:.2f}x")
        print(f"  the per-step cost on local:2 (one row per partition, less the same steps in process):")
        print(f"    a task per worker            {(ones_before - here_ones) * 1e3:9.2f} ms")
        print(f"    straight to workers          {(ones - here_ones) * 1e3:9.2f} ms")
        print(f"    a no-op message to each worker and back: {floor * 1e3:.2f} ms")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=["batch", "fit"])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--parts", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the start")
    if args.mode == "batch":
        bench_batch(args.rows, args.parts, args.rounds)
    else:
        bench_fit(args.rows, args.parts, args.steps)


if __name__ == "__main__":  # the local cluster's worker processes import this module again
    main()
