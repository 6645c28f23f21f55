"""How long `autodiff check` takes as the number of inputs grows, three ways, in one run.

* ``evaluate``: the baseline, every moved output recomputed by the scalar interpreter
  (``execute.evaluate``, a ``Value`` per instruction), as the check did before;
* ``floats``: the full check on the float interpreter (``execute.floats``), which
  recomputes only the instructions that depend on the moved input (the default below
  64 inputs);
* ``batch``: the full check with the points of all inputs computed together by the
  vectorized executor, a few rounds of one NumPy evaluation each (the default from 64
  inputs on);
* ``fast``: ``check --fast``, two random directions, whatever the number of inputs.

Two shapes of program with ``--inputs`` inputs each: ``wide`` (a tanh term per input,
summed: each input's cone is its term plus the rest of the sum) and ``layer`` (a dense
tanh layer, k*k weights and k inputs: each weight feeds one unit).  Runs are
interleaved and the median of ``--repeat`` is reported, with the ratios to the baseline.

    python benchmarks/bench_check.py [--inputs 500] [--repeat 3]
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from collections.abc import Callable

from autodiff_cli.analysis import check as ck
from autodiff_cli.execute import evaluate
from autodiff_cli.language import parse


def wide(n: int) -> str:
    lines = [f"x{i} = {((i * 37) % 101 - 50) / 60!r}" for i in range(n)]
    lines += [f"t{i} = tanh(x{i}*x{(i * 7) % n} + 0.3)" for i in range(n)]
    lines.append("y = " + " + ".join(f"t{i}" for i in range(n)))
    return "\n".join(lines) + "\n"


def layer(n: int) -> str:
    k = max(2, int(math.sqrt(n)))
    lines = [f"x{j} = {((j * 13) % 29 - 14) / 20!r}" for j in range(k)]
    lines += [f"w{i}_{j} = {((i * 31 + j * 17) % 41 - 20) / 50!r}" for i in range(k) for j in range(k)]
    lines += [f"h{i} = tanh(" + " + ".join(f"w{i}_{j}*x{j}" for j in range(k)) + ")" for i in range(k)]
    lines.append("y = " + " + ".join(f"h{i}*h{i}" for i in range(k)))
    return "\n".join(lines) + "\n"


def baseline_check(evaluation):  # type: ignore[no-untyped-def]
    """The check with each moved output from evaluate(), as before the float interpreter."""
    program = evaluation.program
    point = {v.name: evaluation.nodes[v.name].data for v in program.inputs}

    class EvaluatePoint(ck.FloatPoint):
        def output_with(self, name: str, value: float) -> float:
            return evaluate(program, {**point, name: value}, evaluation.output, backward=False).root.data

    original = ck.FloatPoint
    ck.FloatPoint = EvaluatePoint  # type: ignore[misc]
    try:
        return ck.check_gradients(evaluation, batch=False)
    finally:
        ck.FloatPoint = original  # type: ignore[misc]


WAYS: dict[str, Callable] = {  # type: ignore[type-arg]
    "evaluate": baseline_check,
    "floats": lambda evaluation: ck.check_gradients(evaluation, batch=False),
    "batch": lambda evaluation: ck.check_gradients(evaluation, batch=True),
    "fast": lambda evaluation: ck.check_evaluation(evaluation, fast=True),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    for shape, make in (("wide", wide), ("layer", layer)):
        evaluation = evaluate(parse(make(args.inputs)), {})
        inputs = len(evaluation.program.inputs)
        times: dict[str, list[float]] = {way: [] for way in WAYS}
        verdicts = set()
        for _ in range(args.repeat):
            for way, run in WAYS.items():
                start = time.perf_counter()
                result = run(evaluation)
                times[way].append(time.perf_counter() - start)
                verdicts.add((way, result.verdict))
        medians = {way: statistics.median(t) for way, t in times.items()}
        print(f"{shape}: {inputs} inputs, {len(evaluation.program)} instructions; "
              f"verdicts {sorted(verdicts)}")
        for way, seconds in medians.items():
            print(f"  {way:9} {seconds:8.3f} s   {medians['evaluate'] / seconds:6.1f}x the baseline")


if __name__ == "__main__":
    main()
