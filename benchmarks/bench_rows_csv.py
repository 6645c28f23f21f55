"""``autodiff batch`` CSV -> CSV against pandas + NumPy and pyarrow + NumPy, in one run.

The program is bench_batch.py's 2-4-1 tanh network with a squared-error loss (columns x1,
x2, y in; x1, x2, y, L and 20 gradient columns out, 24 in all).  Each contender is a
whole process, timed by wall clock, with its peak RSS from ``wait4``:

* ``autodiff batch``: with pyarrow installed, CSV is read and written through Arrow
  (``files/rows/arrow_csv.py``);
* ``autodiff batch, pure Python``: the same with ``AUTODIFF_ROWS_ARROW=0``: the csv module,
  ``numpy.loadtxt`` and ``%r``, as without pyarrow;
* ``pandas + NumPy``: ``pandas.read_csv`` of the whole file, the sweeps written by hand in
  NumPy (bench_batch.handwritten), ``DataFrame.to_csv`` (which writes round-trip ``repr``
  text, as batch does);
* ``pyarrow + NumPy``: ``pyarrow.csv.read_csv`` of the whole file, the same NumPy,
  ``pyarrow.csv.write_csv`` (shortest round-trip text, laid out its own way: ``1`` for 1.0).

CPU time (user + system, from ``wait4``) is printed beside wall time: on a shared, loaded
machine it is the steadier of the two (Arrow's threads make it a little larger than the
wall time of an idle machine would be).  Every contender writes the same 24 columns; up to --file-max-rows rows to a file in a
temporary directory, past that to /dev/null (1e7 rows of output are about 5 GB).  Rounds
alternate between the contenders; medians.  The goals (issue 28): batch no slower than
pyarrow + NumPy at 1e6 rows, with peak memory under 200 MB, flat at 1e7.

    python benchmarks/bench_rows_csv.py                      # 1e5 and 1e6 rows
    python benchmarks/bench_rows_csv.py --sizes 10000000 --rounds 1 --only pyarrow

The baselines' processes import this script, and through it bench_batch.py (for the
hand-written sweeps), which imports part of autodiff_cli: about 0.1 s of CPU they would
not need otherwise.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench_batch import COLUMNS, autodiff_command, handwritten, model_text, parameters, write_rows


def timed_process(command: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds (user and system) and peak RSS (KiB) of one process."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _pid, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - start
    assert process.stderr is not None
    error = process.stderr.read().decode()
    process.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{' '.join(command)} failed: {error}")
    return elapsed, usage.ru_utime + usage.ru_stime, usage.ru_maxrss


def _results(table: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The inputs, then L and its 20 gradient columns (batch's 24 columns; the order matters not)."""
    inputs: dict[str, object] = {name: table[name] for name in COLUMNS}
    inputs.update(parameters())
    rows = len(table["x1"])
    computed = handwritten(inputs)
    return {**{name: table[name] for name in COLUMNS},
            **{name: np.broadcast_to(values, (rows,)) for name, values in computed.items()}}


def pandas_numpy(rows_path: str, out_path: str) -> None:
    import pandas as pd

    frame = pd.read_csv(rows_path, dtype="float64")
    results = _results({name: frame[name].to_numpy() for name in COLUMNS})
    pd.DataFrame(results).to_csv(out_path, index=False)


def pyarrow_numpy(rows_path: str, out_path: str) -> None:
    import pyarrow as pa
    import pyarrow.csv as pa_csv

    table = pa_csv.read_csv(rows_path)
    results = _results({name: table.column(name).to_numpy() for name in COLUMNS})
    pa_csv.write_csv(pa.table({name: np.ascontiguousarray(values) for name, values in results.items()}), out_path)


BASELINES = {"pandas": pandas_numpy, "pyarrow": pyarrow_numpy}


def run(sizes: list[int], rounds: int, file_max_rows: int, only: list[str] | None) -> None:
    python = sys.executable
    print(f"batch CSV -> CSV, whole processes, 24 columns out, median of {rounds}; load average "
          f"{os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as directory:
        folder = Path(directory)
        model = folder / "model.ad"
        model.write_text(model_text())
        for rows in sizes:
            data = folder / "rows.csv"
            write_rows(data, rows)
            out = str(folder / "out.csv") if rows <= file_max_rows else os.devnull
            commands = {
                "autodiff batch": ([*autodiff_command(), "batch", str(model), str(data), "-o", out], {}),
                "autodiff batch, pure Python": ([*autodiff_command(), "batch", str(model), str(data), "-o", out],
                                                {"AUTODIFF_ROWS_ARROW": "0"}),
                "pandas + NumPy": ([python, __file__, "pandas", str(data), out], {}),
                "pyarrow + NumPy": ([python, __file__, "pyarrow", str(data), out], {}),
            }
            commands = {name: command for name, command in commands.items()
                        if only is None or name in only or name == "autodiff batch"}
            times: dict[str, list[float]] = {name: [] for name in commands}
            cpu: dict[str, list[float]] = {name: [] for name in commands}
            peaks: dict[str, int] = {name: 0 for name in commands}
            for _ in range(rounds):
                for name, (command, env) in commands.items():
                    seconds, cpu_seconds, peak = timed_process(command, {**os.environ, **env})
                    times[name].append(seconds)
                    cpu[name].append(cpu_seconds)
                    peaks[name] = max(peaks[name], peak)
            wall = {name: statistics.median(values) for name, values in times.items()}
            used = {name: statistics.median(values) for name, values in cpu.items()}
            where = "a file" if out != os.devnull else "/dev/null"
            print(f"\n{rows:,} rows ({data.stat().st_size / 1e6:.0f} MB in), written to {where}; "
                  f"load average {os.getloadavg()[0]:.2f}")
            print(f"  {'':28} {'wall':>8}   {'CPU':>8}   {'peak RSS':>8}   batch / this (wall, CPU)")
            for name in commands:
                print(f"  {name:28} {wall[name]:7.2f}s  {used[name]:7.2f}s  {peaks[name] / 1024:6.0f} MB   "
                      f"{wall['autodiff batch'] / wall[name]:5.2f}x  {used['autodiff batch'] / used[name]:5.2f}x")
            if "pyarrow + NumPy" in commands:
                print(f"  goal: batch no slower than pyarrow + NumPy: "
                      f"{wall['autodiff batch'] / wall['pyarrow + NumPy']:.2f}x wall, "
                      f"{used['autodiff batch'] / used['pyarrow + NumPy']:.2f}x CPU; "
                      f"peak {peaks['autodiff batch'] / 1024:.0f} MB (goal < 200 MB)")
            data.unlink()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", nargs="?", default="run", choices=["run", *BASELINES])
    parser.add_argument("paths", nargs="*", help=argparse.SUPPRESS)  # a baseline's rows and output
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--file-max-rows", type=int, default=1_000_000)
    parser.add_argument("--only", nargs="+", metavar="NAME", choices=["pure", "pandas", "pyarrow"],
                        help="run batch and only these others (pure: batch without Arrow)")
    args = parser.parse_args()
    if args.what == "run":
        names = {"pure": "autodiff batch, pure Python", "pandas": "pandas + NumPy", "pyarrow": "pyarrow + NumPy"}
        run(args.sizes, args.rounds, args.file_max_rows, [names[n] for n in args.only] if args.only else None)
    else:
        BASELINES[args.what](*args.paths)


if __name__ == "__main__":
    main()
