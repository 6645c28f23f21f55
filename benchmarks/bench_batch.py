"""The vectorized executor against hand-written NumPy, in one process (compute only).

The program is a 2-4-1 tanh network with a squared-error loss: 20 inputs (columns
x1, x2, y; 17 parameters, one number each), 30 ops, 50 registers in all:

    h_i = tanh(w_i1*x1 + w_i2*x2 + b_i)     i = 1..4
    p   = v1*h1 + v2*h2 + v3*h3 + v4*h4 + c
    L   = (p - y)**2

Both sides compute, for every row, L and its gradient with respect to all 20 inputs
(20 per-row gradient columns), over whole 1e6-row columns:

* ``handwritten``: the forward and reverse sweeps written out with NumPy operators
  over the whole columns, as one would by hand;
* ``executor``: ``evaluate_batch`` on the same columns (chunked internally).

Rounds alternate the two, and the medians and their ratio are printed.  The results
are compared first (they agree to a few ulps; tanh is the only op that differs).

    python benchmarks/bench_batch.py compute [--rows 1000000] [--rounds 7]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

from autodiff_cli.execute.vectorized import evaluate_batch

HIDDEN = 4
PROGRAM = "\n".join(
    [f"h{i} = tanh(w{i}1*x1 + w{i}2*x2 + b{i})" for i in range(1, HIDDEN + 1)]
    + ["p = " + " + ".join(f"v{i}*h{i}" for i in range(1, HIDDEN + 1)) + " + c", "L = (p - y)**2"]
)


def make_inputs(rows: int, seed: int = 1) -> dict[str, object]:
    rng = np.random.default_rng(seed)
    inputs: dict[str, object] = {"x1": rng.standard_normal(rows), "x2": rng.standard_normal(rows),
                                 "y": rng.standard_normal(rows)}
    for i in range(1, HIDDEN + 1):
        inputs[f"w{i}1"], inputs[f"w{i}2"], inputs[f"b{i}"], inputs[f"v{i}"] = (
            float(v) for v in rng.standard_normal(4) * 0.5)
    inputs["c"] = 0.1
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


def compare(ours: dict[str, np.ndarray], theirs: dict[str, np.ndarray]) -> float:
    """The largest difference in units of the largest value of each column."""
    worst = 0.0
    for name, want in theirs.items():
        got = np.broadcast_to(ours[name], want.shape)
        worst = max(worst, float(np.max(np.abs(got - want)) / max(1e-300, float(np.max(np.abs(want))))))
    return worst


def run_compute(rows: int, rounds: int) -> None:
    inputs = make_inputs(rows)
    ours, theirs = executor(inputs), handwritten(inputs)
    error = compare(ours, theirs)
    print(f"compute only: {rows:,} rows, {len(ours)} result columns; largest difference "
          f"{error:.1e} of a column's scale")
    if error > 1e-12:
        sys.exit(f"the executor and the hand-written code disagree ({error:.1e}); not timing")
    times: dict[str, list[float]] = {"handwritten": [], "executor": []}
    for _ in range(rounds):
        for name, function in (("handwritten", handwritten), ("executor", executor)):
            start = time.perf_counter()
            function(inputs)
            times[name].append(time.perf_counter() - start)
    hand, ours_median = statistics.median(times["handwritten"]), statistics.median(times["executor"])
    for name, median in (("hand-written NumPy", hand), ("executor", ours_median)):
        print(f"  {name:20} median {median * 1e3:8.1f} ms  ({rows / median / 1e6:6.2f} M rows/s)")
    print(f"  executor / hand-written: {ours_median / hand:.2f}x  (goal: at most 1.5x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["compute"], nargs="?", default="compute")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    run_compute(args.rows, args.rounds)


if __name__ == "__main__":
    main()
