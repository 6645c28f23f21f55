"""The training step of this checkout against another's (an older commit, unpacked with ``git
archive`` and built with ``setup.py build_ext --inplace``), and both against hand-written NumPy,
taking turns round after round: a before/after measured in one run, as issue 34 asks.

Each checkout runs in a worker process of its own (the two cannot share one interpreter), made
from that checkout's ``benchmarks/bench_tensor.py`` (its ``ours_sized_step``, ``NumpySizedStep``
and sizes), with one BLAS thread.  Each round asks the other checkout, then hand NumPy, then this
one for k steps of a size and reads back the CPU time of that worker's thread, which on a machine
shared with busy processes leaves out the time others held the core.  Medians per step.

    git archive 5c464c2 | tar -x -C /tmp/base && (cd /tmp/base && python setup.py -q build_ext --inplace)
    python benchmarks/bench_step_against.py /tmp/base --rounds 7 --dtype float64,float32
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from itertools import pairwise
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
SIZES = [("2-16-16-1", 256), ("64-128-10", 256), ("784-256-10", 256), ("784-1024-1024-10", 256),
         ("2-16-16-1", 2), ("64-128-10", 2)]


def worker(tree: str) -> None:
    """Read 'kind widths batch dtype steps' lines; print the CPU seconds those steps took."""
    sys.path[:0] = [tree, os.path.join(tree, "benchmarks")]
    import bench_tensor

    steps = {}
    for line in sys.stdin:
        kind, widths_text, batch_text, dtype, count_text = line.split()
        widths, batch, count = tuple(map(int, widths_text.split("-"))), int(batch_text), int(count_text)
        key = (kind, widths, batch, dtype)
        if key not in steps:
            x, labels, weights = bench_tensor.mlp_data(widths, batch)
            made = bench_tensor.ours_sized_step(widths, x, labels, weights, dtype) if kind == "ours" else \
                bench_tensor.NumpySizedStep(widths, x, labels, weights, dtype)
            for _ in range(3):  # (first BLAS calls, the plans made on the first step)
                made.step()
            steps[key] = made
        step = steps[key]
        began = time.thread_time()
        for _ in range(count):
            step.step()
        print(time.thread_time() - began, flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("\n", " "))
    parser.add_argument("other", help="the other checkout (built in place)")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--dtype", default="float64", help="float64, float32 or float64,float32")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.other)
        return 0
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    env.pop("PYTHONPATH", None)
    workers = {name: subprocess.Popen([sys.executable, __file__, tree, "--worker"], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, text=True, env=env)
               for name, tree in (("before", args.other), ("after", str(HERE)))}

    def ask(name: str, line: str) -> float:
        process = workers[name]
        process.stdin.write(line + "\n")
        process.stdin.flush()
        return float(process.stdout.readline())

    print(f"bench_step_against.py: before = {args.other}, after = {HERE}; 1 BLAS thread, CPU time, "
          f"median of {args.rounds}; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for dtype in args.dtype.split(","):
        print(f"\n{dtype}: {'MLP':18} {'batch':>5} {'before us':>10} {'after us':>10} {'NumPy us':>10} "
              f"{'before/NumPy':>12} {'after/NumPy':>11} {'after-NumPy us':>14}")
        for widths, batch in SIZES:
            layers = list(map(int, widths.split("-")))
            count = max(2, min(400, int(4e6 / (batch * sum(a * b for a, b in pairwise(layers)))) + 1))
            times: dict[str, list[float]] = {"before": [], "hand": [], "after": []}
            for _ in range(args.rounds):
                times["before"].append(ask("before", f"ours {widths} {batch} {dtype} {count}") / count)
                times["hand"].append(ask("after", f"hand {widths} {batch} {dtype} {count}") / count)
                times["after"].append(ask("after", f"ours {widths} {batch} {dtype} {count}") / count)
            us = {name: statistics.median(seconds) * 1e6 for name, seconds in times.items()}
            print(f"{'':9}{widths:18} {batch:5} {us['before']:10.1f} {us['after']:10.1f} {us['hand']:10.1f} "
                  f"{us['before'] / us['hand']:11.2f}x {us['after'] / us['hand']:10.2f}x "
                  f"{us['after'] - us['hand']:14.1f}", flush=True)
    for process in workers.values():
        process.stdin.close()
        process.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
