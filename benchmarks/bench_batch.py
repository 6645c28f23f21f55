"""``autodiff batch`` and its executor against hand-written NumPy, the I/O floor, a loop of
``autodiff eval``, and PyTorch / JAX where installed.  Ratios are measured in one run.

The program is a 2-4-1 tanh network with a squared-error loss: 20 inputs (columns
x1, x2, y; 17 parameters, one number each), 30 ops, 50 registers in all:

    h_i = tanh(w_i1*x1 + w_i2*x2 + b_i)     i = 1..4
    p   = v1*h1 + v2*h2 + v3*h3 + v4*h4 + c
    L   = (p - y)**2

Every mode computes, for every row, L and its gradient with respect to all 20 inputs.

* ``compute``: in one process, over 1e6-row columns: ``evaluate_batch`` against the
  forward and reverse sweeps written out by hand with NumPy over whole columns (the
  goal: within 1.5x), and against PyTorch's ``vmap(grad)`` and JAX's where installed.
  Rounds alternate; medians.  Results are compared first.
* ``cli``: whole processes on a 1e6-row CSV: ``autodiff batch model.ad rows.csv -o
  out.csv`` (24 columns out) against the I/O floor, this script reading and writing
  the same CSV (24 columns) with the same reader and writer and no computing (the
  goal: within 2x); and against running ``autodiff eval`` once per row, timed on a
  sample of rows and extrapolated.
* ``parquet``: the same 1e6 rows as a Parquet file, in and out (needs pyarrow): no text
  to parse or format.
* ``memory``: peak RSS of ``autodiff batch`` at 1e5, 1e6 and 1e7 rows (written to
  /dev/null; the goal: flat).
* ``backends``: this program of numbers on the two executors ``BatchEvaluator`` can run it on,
  over the same 1e6 rows in the chunks ``batch`` reads (16,384 lines): the column sweep
  (``vectorized.py``, what it runs) against the interpreter with the rows as its batch axis;
  per row (L and every gradient) and as ``--reduce mean`` (the gradient of every input).  The
  results are compared bit for bit first.  Why a program of numbers keeps the sweep.

    python benchmarks/bench_batch.py compute [--rows 1000000] [--rounds 7]
    python benchmarks/bench_batch.py cli [--rows 1000000] [--rounds 5] [--eval-sample 200]
    python benchmarks/bench_batch.py parquet [--rows 1000000] [--rounds 5]
    python benchmarks/bench_batch.py memory [--sizes 100000 1000000 10000000]
    python benchmarks/bench_batch.py backends [--rows 1000000] [--rounds 7]
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
from collections.abc import Callable
from pathlib import Path

import numpy as np

from autodiff_cli.execute.batch_evaluator import evaluate_batch

HIDDEN = 4
PROGRAM = "\n".join(
    [f"h{i} = tanh(w{i}1*x1 + w{i}2*x2 + b{i})" for i in range(1, HIDDEN + 1)]
    + ["p = " + " + ".join(f"v{i}*h{i}" for i in range(1, HIDDEN + 1)) + " + c", "L = (p - y)**2"]
)
COLUMNS = ("x1", "x2", "y")


def parameters(seed: int = 1) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    values: dict[str, float] = {}
    for i in range(1, HIDDEN + 1):
        values[f"w{i}1"], values[f"w{i}2"], values[f"b{i}"], values[f"v{i}"] = (
            float(v) for v in rng.standard_normal(4) * 0.5)
    values["c"] = 0.1
    return values


def make_inputs(rows: int, seed: int = 1) -> dict[str, object]:
    rng = np.random.default_rng(seed + 1)
    inputs: dict[str, object] = {name: rng.standard_normal(rows) for name in COLUMNS}
    inputs.update(parameters(seed))
    return inputs


def handwritten(inputs: dict[str, object]) -> dict[str, np.ndarray]:
    """L and dL/d(every input) per row, written out by hand over whole columns."""
    x1, x2, y = inputs["x1"], inputs["x2"], inputs["y"]
    w = inputs
    h = {}
    for i in range(1, HIDDEN + 1):
        h[i] = np.tanh(w[f"w{i}1"] * x1 + w[f"w{i}2"] * x2 + w[f"b{i}"])
    p = w["c"]
    for i in range(1, HIDDEN + 1):
        p = w[f"v{i}"] * h[i] + p
    d = p - y
    out = {"L": d * d}
    gp = 2.0 * d
    out["dL/dy"] = -gp
    out["dL/dc"] = gp
    gx1 = gx2 = 0.0
    for i in range(1, HIDDEN + 1):
        out[f"dL/dv{i}"] = gp * h[i]
        gz = (gp * w[f"v{i}"]) * (1.0 - h[i] * h[i])
        out[f"dL/dw{i}1"] = gz * x1
        out[f"dL/dw{i}2"] = gz * x2
        out[f"dL/db{i}"] = gz
        gx1 = gx1 + gz * w[f"w{i}1"]
        gx2 = gx2 + gz * w[f"w{i}2"]
    out["dL/dx1"], out["dL/dx2"] = gx1, gx2
    return out


def executor(inputs: dict[str, object]) -> dict[str, np.ndarray]:
    return evaluate_batch(PROGRAM, inputs).columns()


def torch_vmap_grad() -> Callable[[dict[str, object]], dict[str, np.ndarray]] | None:
    try:
        import torch
        from torch.func import grad, vmap
    except ImportError:
        return None
    names = list(make_inputs(1))

    def loss(*args):  # type: ignore[no-untyped-def]
        v = dict(zip(names, args))
        p = v["c"]
        for i in range(1, HIDDEN + 1):
            p = p + v[f"v{i}"] * torch.tanh(v[f"w{i}1"] * v["x1"] + v[f"w{i}2"] * v["x2"] + v[f"b{i}"])
        return (p - v["y"]) ** 2

    per_row = vmap(grad(loss, argnums=tuple(range(len(names)))),
                   in_dims=tuple(0 if name in COLUMNS else None for name in names))
    value = vmap(loss, in_dims=tuple(0 if name in COLUMNS else None for name in names))

    def run(inputs: dict[str, object]) -> dict[str, np.ndarray]:
        args = [torch.from_numpy(inputs[n]) if n in COLUMNS else torch.tensor(inputs[n], dtype=torch.float64)
                for n in names]
        grads = per_row(*args)
        out = {"L": value(*args).numpy()}
        out.update((f"dL/d{n}", g.numpy()) for n, g in zip(names, grads))
        return out

    return run


def jax_vmap_grad() -> Callable[[dict[str, object]], dict[str, np.ndarray]] | None:
    try:
        import jax
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    names = list(make_inputs(1))

    def loss(*args):  # type: ignore[no-untyped-def]
        v = dict(zip(names, args))
        p = v["c"]
        for i in range(1, HIDDEN + 1):
            p = p + v[f"v{i}"] * jnp.tanh(v[f"w{i}1"] * v["x1"] + v[f"w{i}2"] * v["x2"] + v[f"b{i}"])
        return (p - v["y"]) ** 2

    axes = tuple(0 if name in COLUMNS else None for name in names)
    both = jax.jit(jax.vmap(jax.value_and_grad(loss, argnums=tuple(range(len(names)))), in_axes=axes))

    def run(inputs: dict[str, object]) -> dict[str, np.ndarray]:
        value, grads = both(*[inputs[n] for n in names])
        out = {"L": np.asarray(value)}
        out.update((f"dL/d{n}", np.asarray(g)) for n, g in zip(names, grads))
        return out

    return run


def compare(ours: dict[str, np.ndarray], theirs: dict[str, np.ndarray]) -> float:
    """The largest difference in units of the largest value of each column."""
    worst = 0.0
    for name, want in theirs.items():
        want = np.broadcast_to(want, np.shape(ours["L"]))
        got = np.broadcast_to(ours[name], want.shape)
        worst = max(worst, float(np.max(np.abs(got - want)) / max(1e-300, float(np.max(np.abs(want))))))
    return worst


def interleaved(functions: dict[str, Callable[[], object]], rounds: int) -> dict[str, float]:
    """Median seconds of each function, the functions taking turns round after round."""
    times: dict[str, list[float]] = {name: [] for name in functions}
    for _ in range(rounds):
        for name, function in functions.items():
            start = time.perf_counter()
            function()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in times.items()}


def run_compute(rows: int, rounds: int) -> None:
    inputs = make_inputs(rows)
    contenders: dict[str, Callable[[dict[str, object]], dict[str, np.ndarray]]] = {
        "hand-written NumPy": handwritten, "executor": executor}
    for name, make in (("PyTorch vmap(grad)", torch_vmap_grad), ("JAX jit(vmap(grad))", jax_vmap_grad)):
        function = make()
        if function is None:
            print(f"  ({name}: not installed)")
        else:
            contenders[name] = function
    reference = handwritten(inputs)
    print(f"compute only, in one process: {rows:,} rows, L and 20 gradient columns, median of {rounds}")
    for name, function in contenders.items():
        error = compare(function(inputs), reference)
        if error > 1e-12:
            sys.exit(f"{name} disagrees with the hand-written code ({error:.1e}); not timing")
    medians = interleaved({name: (lambda f=f: f(inputs)) for name, f in contenders.items()}, rounds)
    ours = medians["executor"]
    for name, median in medians.items():
        print(f"  {name:22} {median * 1e3:8.1f} ms  {rows / median / 1e6:6.2f} M rows/s"
              f"  executor / this: {ours / median:5.2f}x")
    print(f"  goal: executor within 1.5x of hand-written NumPy: {ours / medians['hand-written NumPy']:.2f}x")


# --- whole processes ---------------------------------------------------------------------------


def model_text() -> str:
    return "\n".join(f"{name} = {value!r}" for name, value in parameters().items()) + "\n" + PROGRAM + "\n"


def write_rows(path: Path, rows: int, seed: int = 3) -> None:
    """A CSV of x1, x2, y in full precision (repr), written a block at a time."""
    rng = np.random.default_rng(seed)
    with open(path, "w") as handle:
        handle.write(",".join(COLUMNS) + "\n")
        for start in range(0, rows, 100_000):
            block = rng.standard_normal((min(100_000, rows - start), len(COLUMNS)))
            handle.write(("%r,%r,%r\n" * len(block)) % tuple(block.ravel().tolist()))


def io_floor(rows_path: str, out_path: str) -> None:
    """Read the rows and write 24 columns with the reader and writer ``autodiff batch`` uses,
    computing nothing: the 21 result columns are copies of the input columns."""
    from autodiff_cli.files.atomic import StreamedFile
    from autodiff_cli.files.rows import RowReader, RowWriter, opened

    names = list(COLUMNS) + ["L"] + [f"dL/d{n}" for n in make_inputs(1)]
    with opened(rows_path, lambda notice: None) as (stream, name, _size):
        reader = RowReader(stream, name, "csv")
        target = StreamedFile(out_path)
        writer = RowWriter(target, "csv", names, exact=set(COLUMNS))
        writer.header()
        for chunk in reader.chunks(list(COLUMNS), [], wait=False):
            columns = {n: chunk.numbers[COLUMNS[i % 3]] for i, n in enumerate(names)}
            writer.write(columns, chunk.size)
        target.commit()


def timed_process(command: list[str]) -> tuple[float, int]:
    """Wall seconds and peak RSS (KiB) of one process."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _pid, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - start
    error = process.stderr.read().decode() if process.stderr else ""
    process.stderr.close() if process.stderr else None
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{' '.join(command)} failed: {error}")
    return elapsed, usage.ru_maxrss


def autodiff_command() -> list[str]:
    found = shutil.which("autodiff")
    return [found] if found else [sys.executable, "-m", "autodiff_cli"]


def run_cli(rows: int, rounds: int, eval_sample: int) -> None:
    with tempfile.TemporaryDirectory() as directory:
        folder = Path(directory)
        model, data, out = folder / "model.ad", folder / "rows.csv", folder / "out.csv"
        model.write_text(model_text())
        write_rows(data, rows)
        batch = [*autodiff_command(), "batch", str(model), str(data), "-o", str(out)]
        floor = [sys.executable, __file__, "floor", str(data), str(out)]
        print(f"end to end, whole processes: {rows:,}-row CSV ({data.stat().st_size / 1e6:.0f} MB) in, "
              f"24 columns out to a file, median of {rounds}")
        times: dict[str, list[float]] = {"autodiff batch": [], "I/O floor": []}
        for _ in range(rounds):
            for name, command in (("I/O floor", floor), ("autodiff batch", batch)):
                times[name].append(timed_process(command)[0])
        size = out.stat().st_size
        medians = {name: statistics.median(values) for name, values in times.items()}
        for name, median in medians.items():
            print(f"  {name:16} {median:7.2f} s  {rows / median:10,.0f} rows/s")
        print(f"  output {size / 1e6:.0f} MB; goal: batch within 2x of the I/O floor: "
              f"{medians['autodiff batch'] / medians['I/O floor']:.2f}x")
        run_eval_loop(model, data, eval_sample, rows, medians["autodiff batch"])


def run_eval_loop(model: Path, data: Path, sample: int, rows: int, batch_seconds: float) -> None:
    """``autodiff eval`` once per row on the first ``sample`` rows, extrapolated to ``rows``."""
    with open(data) as handle:
        handle.readline()
        points = [line.strip().split(",") for _, line in zip(range(sample), handle)]
    start = time.perf_counter()
    for x1, x2, y in points:
        subprocess.run([*autodiff_command(), "eval", str(model), "--set", f"x1={x1}", "--set", f"x2={x2}",
                        "--set", f"y={y}", "--format", "csv"], check=True, capture_output=True)
    per_row = (time.perf_counter() - start) / len(points)
    total = per_row * rows
    print(f"  a loop of `autodiff eval` per row: {per_row * 1e3:.0f} ms per row (timed on {len(points)} rows), "
          f"so about {total / 3600:.1f} hours for {rows:,} rows: {total / batch_seconds:,.0f}x batch's time")


def run_parquet(rows: int, rounds: int) -> None:
    """The same rows as Parquet, in and out: no text to parse or format (needs pyarrow)."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        print("parquet: pyarrow is not installed (pip install 'autodiff-cli[parquet]')")
        return
    with tempfile.TemporaryDirectory() as directory:
        folder = Path(directory)
        model, data, out = folder / "model.ad", folder / "rows.parquet", folder / "out.parquet"
        model.write_text(model_text())
        block = np.random.default_rng(3).standard_normal((rows, len(COLUMNS)))
        pq.write_table(pa.table({name: block[:, j] for j, name in enumerate(COLUMNS)}), data)
        command = [*autodiff_command(), "batch", str(model), str(data), "-o", str(out)]
        seconds = statistics.median(timed_process(command)[0] for _ in range(rounds))
        print(f"Parquet in and out, whole process: {rows:,} rows, 24 columns out, median of {rounds}: "
              f"{seconds:.2f} s, {rows / seconds:,.0f} rows/s")


def run_memory(sizes: list[int]) -> None:
    print("peak RSS of `autodiff batch model.ad rows.csv -o /dev/null` (24 columns out)")
    with tempfile.TemporaryDirectory() as directory:
        folder = Path(directory)
        model = folder / "model.ad"
        model.write_text(model_text())
        for rows in sizes:
            data = folder / f"rows{rows}.csv"
            write_rows(data, rows)
            seconds, peak = timed_process([*autodiff_command(), "batch", str(model), str(data), "-o", os.devnull])
            print(f"  {rows:>12,} rows  {data.stat().st_size / 1e6:8.0f} MB in  peak RSS {peak / 1024:6.0f} MB"
                  f"  {seconds:7.1f} s  {rows / seconds:10,.0f} rows/s")
            data.unlink()


def run_backends(rows: int, rounds: int) -> None:
    from autodiff_cli.execute.batch_evaluator import BatchEvaluator
    from autodiff_cli.files.rows.lines import CHUNK_LINES

    inputs = make_inputs(rows)
    chunks = [{name: value[start:start + CHUNK_LINES] if isinstance(value, np.ndarray) else value
               for name, value in inputs.items()} for start in range(0, rows, CHUNK_LINES)]
    evaluator = BatchEvaluator(PROGRAM)
    assert evaluator._sweep is not None  # what evaluate runs for this program

    def sweep(reduce: str | None) -> list[dict[str, object]]:
        return [evaluator.evaluate(chunk, reduce=reduce).columns() for chunk in chunks]

    def interpreter(reduce: str | None) -> list[dict[str, object]]:
        rows_on_axis = evaluator._interpreting()  # the executor of every program that is not of numbers
        return [rows_on_axis.evaluate(chunk, reduce, "raise").columns() for chunk in chunks]

    print(f"one program of numbers on both executors: {rows:,} rows in chunks of {CHUNK_LINES:,}, median of {rounds}")
    for reduce in (None, "mean"):
        ours, theirs = sweep(reduce), interpreter(reduce)
        differing = sum(int(np.count_nonzero(np.asarray(mine[name]) != np.asarray(other[name])))
                        for mine, other in zip(ours, theirs) for name in mine)
        medians = interleaved({"sweep": lambda how=reduce: sweep(how), "interpreter": lambda how=reduce: interpreter(how)},
                              rounds)
        what = "per row" if reduce is None else "--reduce mean"
        print(f"  {what:14} column sweep {medians['sweep'] * 1e3:8.1f} ms   interpreter "
              f"{medians['interpreter'] * 1e3:8.1f} ms   ({medians['interpreter'] / medians['sweep']:.2f}x)   "
              f"{differing:,} numbers differ")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["compute", "cli", "parquet", "memory", "backends", "floor"])
    parser.add_argument("paths", nargs="*", help=argparse.SUPPRESS)  # floor's rows and output
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--eval-sample", type=int, default=200)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000, 10_000_000])
    args = parser.parse_args()
    if args.what == "compute":
        run_compute(args.rows, args.rounds or 7)
    elif args.what == "cli":
        run_cli(args.rows, args.rounds or 5, args.eval_sample)
    elif args.what == "parquet":
        run_parquet(args.rows, args.rounds or 5)
    elif args.what == "memory":
        run_memory(args.sizes)
    elif args.what == "backends":
        run_backends(args.rows, args.rounds or 7)
    else:
        io_floor(*args.paths)


if __name__ == "__main__":
    main()
