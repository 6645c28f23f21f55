"""How long `autodiff graph` takes to draw graphs of 100, 1,000 and 10,000 values.

For each size and graph shape, a program is generated in the language, evaluated, turned
into DOT text (timed) and laid out to SVG by every backend available (timed): the system
Graphviz ``dot`` when it is on PATH, and the bundled ``graphviz-pure``.  The numbers chose
the default of ``autodiff graph --max-nodes``.

Shapes (the layout cost depends on the shape as much as on the size):

* chain: ``y_i = tanh(y_{i-1} * w_i + 0.1)`` repeated, a deep graph with no crossings;
* mlp:   layers of tanh neurons, each fed by every unit of the layer before (``--width``
         units per layer), so edges cross between layers as in any neural network.

Run from the repository root:

    python benchmarks/bench_render.py                    # 100, 1000, 10000 values
    python benchmarks/bench_render.py --sizes 100 1000   # quicker
    python benchmarks/bench_render.py --timeout 60       # give up on a layout sooner

A layout that exceeds ``--timeout`` is shown as ``> Ns``.
"""

from __future__ import annotations

import argparse
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial

from autodiff_cli.execute import evaluate
from autodiff_cli.language import parse
from autodiff_cli.render.backends import Renderer, RenderError, bundled_program, render, system_program
from autodiff_cli.render.dot import graph_size, to_dot

DEFAULT_SIZES = (100, 1_000, 10_000)
SHAPES = ("chain", "mlp")


def chain_program(values: int) -> str:
    """About ``values`` values: 5 per step (w_i, *, the constant 0.1, +, tanh)."""
    lines = ["y0 = 0.5"]
    for i in range(1, max(1, (values - 1) // 5) + 1):
        lines.append(f"w{i} = 0.9")
        lines.append(f"y{i} = tanh(y{i - 1}*w{i} + 0.1)")
    return "\n".join(lines) + "\n"


def mlp_program(values: int, width: int) -> str:
    """Layers of ``width`` neurons, each tanh(sum of w*x over the layer before + b), then a sum.

    A neuron has ``width`` weights, ``width`` products, ``width - 1`` sums, a bias, the
    bias sum and the tanh: 3*width + 2 values, so a layer has width * (3*width + 2).
    """
    per_layer = width * (3 * width + 2)
    layers = max(1, round((values - width) / per_layer))
    lines = [f"x{j} = {0.1 * (j + 1):.1f}" for j in range(width)]
    previous = [f"x{j}" for j in range(width)]
    for layer in range(layers):
        current = []
        for unit in range(width):
            name = f"h{layer}_{unit}"
            for j in range(width):
                lines.append(f"w{layer}_{unit}_{j} = {0.05 * ((unit + j) % 7 - 3):.2f}")
            lines.append(f"b{layer}_{unit} = 0.01")
            terms = " + ".join(f"w{layer}_{unit}_{j}*{previous[j]}" for j in range(width))
            lines.append(f"{name} = tanh({terms} + b{layer}_{unit})")
            current.append(name)
        previous = current
    lines.append("out = " + " + ".join(previous))
    return "\n".join(lines) + "\n"


def make_program(shape: str, values: int, width: int) -> str:
    return chain_program(values) if shape == "chain" else mlp_program(values, width)


def timed(action: Callable[[], object]) -> tuple[float, object]:
    start = time.perf_counter()
    result = action()
    return time.perf_counter() - start, result


def backends() -> list[Renderer]:
    found = []
    system = system_program()
    if system is not None:
        found.append(Renderer("system", system))
    bundled = bundled_program()
    if bundled is not None:
        found.append(Renderer("bundled", bundled))
    return found


def version(renderer: Renderer) -> str:
    completed = subprocess.run([renderer.program, "-V"], capture_output=True, timeout=30, check=False)
    return (completed.stderr or completed.stdout).decode("utf-8", "replace").strip()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(DEFAULT_SIZES), metavar="N",
                        help="graph sizes in values (default: 100 1000 10000)")
    parser.add_argument("--shapes", nargs="+", choices=SHAPES, default=list(SHAPES))
    parser.add_argument("--width", type=int, default=6, help="units per mlp layer (default: 6)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per layout (default: 600)")
    arguments = parser.parse_args()

    renderers = backends()
    if not renderers:
        print("no renderer found: install graphviz-pure (pip) or Graphviz (system)", file=sys.stderr)
        return 2
    print(f"Python {platform.python_version()} on {platform.platform()}")
    for renderer in renderers:
        print(f"{renderer.name:8} {renderer.program}: {version(renderer)}")
    print()
    columns = ["shape", "values", "DOT build", *(f"{r.name} SVG" for r in renderers)]
    print("  ".join(f"{c:>12}" for c in columns))
    for size in arguments.sizes:
        for shape in arguments.shapes:
            program = parse(make_program(shape, size, arguments.width), f"<{shape}>")
            evaluation = evaluate(program)
            nodes = graph_size(evaluation.root)
            build, source = timed(partial(to_dot, evaluation))
            cells = [shape, f"{nodes:,}", f"{build:.3f}s"]
            for renderer in renderers:
                try:
                    seconds, _ = timed(partial(render, source, "svg", renderer, timeout=arguments.timeout))
                    cells.append(f"{seconds:.2f}s")
                except RenderError as error:
                    timed_out = "did not finish" in error.message
                    cells.append(f"> {arguments.timeout:g}s" if timed_out else "failed")
            print("  ".join(f"{c:>12}" for c in cells), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
