"""What `autodiff plot` spends its time on, against evaluating the points one by one.

For a sample program and a number of points, in one process, interleaved, medians of
``--runs``:

* baseline: the scalar engine once per point (``execute.evaluate`` and its backward pass),
  what plotting cost before the vectorized executor;
* ``sample_curves``: the points through the vectorized executor, order 1 and order 2 (which
  evaluates the derivative at four more points around each);
* drawing: ``render.plot.to_image`` as SVG and PNG, and ``to_text``.

    python benchmarks/bench_plot.py                          # mlp, 1001 and 100001 points
    python benchmarks/bench_plot.py --sample neuron --points 1001 --runs 3
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np

from autodiff_cli.analysis.curves import sample_curves
from autodiff_cli.execute import evaluate
from autodiff_cli.language import parse
from autodiff_cli.render import plot

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
VARIABLES = {"mlp": "x1", "neuron": "x1", "softmax_xent": "z2", "karpathy": "a"}


def scalar_points(program, variable: str, xs: np.ndarray) -> None:  # type: ignore[no-untyped-def]
    for x in xs:
        evaluation = evaluate(program, {variable: float(x)})
        evaluation.nodes[variable].grad  # noqa: B018 - what the plot reads


def median_seconds(action: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sample", choices=sorted(VARIABLES), default="mlp")
    parser.add_argument("--points", type=int, nargs="+", default=[1001, 100_001])
    parser.add_argument("--runs", type=int, default=5)
    arguments = parser.parse_args()
    program = parse((SAMPLES / f"{arguments.sample}.ad").read_text(), arguments.sample)
    variable = VARIABLES[arguments.sample]
    print(f"samples/{arguments.sample}.ad along {variable} in -2..2; medians of {arguments.runs} runs\n")
    print(f"{'points':>8} {'scalar loop':>12} {'order 1':>9} {'speed-up':>9} {'order 2':>9} "
          f"{'SVG':>7} {'PNG':>7} {'text':>7}")
    for points in arguments.points:
        xs = np.linspace(-2.0, 2.0, points)
        timings: dict[str, list[float]] = {"scalar": [], "order1": [], "order2": []}
        actions = {
            "scalar": partial(scalar_points, program, variable, xs),
            "order1": partial(sample_curves, program, {}, variable, -2.0, 2.0, points=points),
            "order2": partial(sample_curves, program, {}, variable, -2.0, 2.0, points=points, order=2),
        }
        for _ in range(arguments.runs):  # interleaved: machine noise hits all three alike
            for name, action in actions.items():
                timings[name].append(median_seconds(action, 1))
        scalar, first, second = (statistics.median(timings[k]) for k in ("scalar", "order1", "order2"))
        curves = sample_curves(program, {}, variable, -2.0, 2.0, points=points, tangents_at=[0.5])
        svg = median_seconds(partial(plot.to_image, curves, "svg", title="bench"), arguments.runs)
        png = median_seconds(partial(plot.to_image, curves, "png", title="bench"), arguments.runs)
        text = median_seconds(partial(plot.to_text, curves, title="bench"), arguments.runs)
        print(f"{points:>8,} {scalar:>11.3f}s {first:>8.4f}s {scalar / first:>8.0f}x {second:>8.4f}s "
              f"{svg:>6.2f}s {png:>6.2f}s {text:>6.3f}s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
