"""Compare autodiff_cli.engine.Value with micrograd's Value on the same graphs.

Both engines are driven only through their public API (``+``, ``*``, ``.relu()``,
``.backward()``), on three graph shapes of about ``--nodes`` nodes each:

* wide:  x0*x0 + x1*x1 + ... over separate leaf Values
* deep:  x = (x*0.999 + 0.001).relu(), repeated
* mlp:   a small multi-layer perceptron of relu neurons written out with Values

For each engine we time, per node, building the graph (which computes the
forward values), the backward pass, and the teardown (dropping the graph until
its memory is reclaimed).  Run:

    python benchmarks/bench_engine.py [--nodes 100000] [--repeat 7]
"""

from __future__ import annotations

import argparse
import gc
import math
import platform
import random
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, NamedTuple

# micrograd's backward() collects its topological order with a recursive helper,
# one Python frame per level of the graph, so the deep chain needs a recursion
# limit well above the default 1000 and, to be safe, a big thread stack.  This
# only helps the baseline: our engine traverses with an explicit stack.
THREAD_STACK_BYTES = 512 * 1024 * 1024
RELATIVE_TOLERANCE = 1e-9
SEED = 20240601

Value = Any  # either engine's Value; the benchmark only uses what both provide
ValueClass = Callable[[float], Value]


@dataclass(frozen=True)
class Engine:
    name: str
    value: ValueClass


class Graph(NamedTuple):
    root: Value  # the output that backward() starts from
    probe: Value  # a leaf whose gradient is compared across engines


@dataclass(frozen=True)
class Shape:
    name: str
    make_data: Callable[[int, random.Random], Any]  # plain floats, made outside timing
    build: Callable[[ValueClass, Any], Graph]  # builds and evaluates the graph (timed)


@dataclass
class Measurement:
    build_forward: float  # seconds, best of the repeats
    backward: float
    teardown: float
    nodes: int
    output: float
    probe_grad: float

    @property
    def without_teardown(self) -> float:
        return self.build_forward + self.backward

    @property
    def total(self) -> float:
        return self.build_forward + self.backward + self.teardown


# --- the three graph shapes -------------------------------------------------------------------
# Each make_data returns only floats and sizes, so random numbers are drawn once per
# shape and both engines build exactly the same arithmetic from them.


def wide_data(nodes: int, rng: random.Random) -> list[float]:
    # Every term after the first adds three nodes: a leaf, its square and a sum.
    terms = max(1, (nodes + 1) // 3)
    return [rng.uniform(-1.0, 1.0) for _ in range(terms)]


def build_wide(value: ValueClass, xs: list[float]) -> Graph:
    leaves = [value(x) for x in xs]
    total = leaves[0] * leaves[0]
    for leaf in leaves[1:]:
        total = total + leaf * leaf
    return Graph(total, leaves[0])


def deep_data(nodes: int, rng: random.Random) -> int:
    # Every step adds five nodes: two constants, a product, a sum and a relu.
    return max(1, nodes // 5)


def build_deep(value: ValueClass, steps: int) -> Graph:
    start = value(0.5)
    x = start
    for _ in range(steps):
        x = (x * 0.999 + 0.001).relu()
    return Graph(x, start)


class MlpData(NamedTuple):
    inputs: list[float]
    layers: list[list[tuple[list[float], float]]]  # per layer, per neuron: (weights, bias)


def mlp_width(nodes: int) -> int:
    """The width h for which an h-input, h-h-1 network has about ``nodes`` nodes.

    A neuron with k inputs makes k weights, k products, k-1 sums, a bias, one more sum
    and (hidden layers only) a relu: 3k + 2 nodes.  With the h inputs that is
    6h**2 + 8h + 1 nodes in all.
    """
    return max(1, round((-8 + math.sqrt(64 + 24 * max(nodes - 1, 0))) / 12))


def mlp_data(nodes: int, rng: random.Random) -> MlpData:
    width = mlp_width(nodes)
    sizes = [width, width, width, 1]

    def neuron(fan_in: int) -> tuple[list[float], float]:
        # Scaled so that activations stay of order 1 through the layers.
        scale = 1.0 / math.sqrt(fan_in)
        return [rng.uniform(-scale, scale) for _ in range(fan_in)], rng.uniform(-0.1, 0.1)

    layers = [[neuron(fan_in) for _ in range(fan_out)] for fan_in, fan_out in zip(sizes, sizes[1:])]
    return MlpData([rng.uniform(-1.0, 1.0) for _ in range(width)], layers)


def build_mlp(value: ValueClass, data: MlpData) -> Graph:
    inputs = [value(x) for x in data.inputs]
    activations = inputs
    last = len(data.layers) - 1
    for index, layer in enumerate(data.layers):
        outputs = []
        for weights, bias in layer:
            weighted = [value(w) * a for w, a in zip(weights, activations)]
            total = weighted[0]
            for term in weighted[1:]:
                total = total + term
            total = total + value(bias)
            # Hidden layers are relu; the output neuron stays linear, as in micrograd's MLP.
            outputs.append(total.relu() if index < last else total)
        activations = outputs
    return Graph(activations[0], inputs[0])


SHAPES = [
    Shape("wide", wide_data, build_wide),
    Shape("deep", deep_data, build_deep),
    Shape("mlp", mlp_data, build_mlp),
]


# --- measuring ---------------------------------------------------------------------------------


def count_nodes(root: Value) -> int:
    """Nodes reachable from root through ``_prev``, which both engines provide.

    Iterative, so the deep chain needs no recursion; identities are kept rather
    than the nodes so that no reference outlives the call.
    """
    seen = {id(root)}
    stack = [root]
    while stack:
        for child in stack.pop()._prev:
            if id(child) not in seen:
                seen.add(id(child))
                stack.append(child)
    return len(seen)


def measure_once(engine: Engine, shape: Shape, data: Any) -> Measurement:
    """Build, differentiate and drop one graph, timing each phase with the collector on."""
    # Collect before each phase, outside timing, so that garbage left by earlier work
    # (micrograd's closures form reference cycles) is not collected inside the next timing.
    gc.collect()
    start = time.perf_counter()
    graph = shape.build(engine.value, data)
    build_forward = time.perf_counter() - start

    gc.collect()
    start = time.perf_counter()
    graph.root.backward()
    backward = time.perf_counter() - start

    nodes = count_nodes(graph.root)
    output, probe_grad = float(graph.root.data), float(graph.probe.grad)

    gc.collect()
    start = time.perf_counter()
    del graph  # the last references: our nodes are freed here, by reference counting
    gc.collect()  # micrograd's nodes sit in cycles and are freed only here
    # Both engines are timed the same way; for ours the collection finds nothing
    # and costs only a pass over the interpreter's other objects (printed in the header).
    teardown = time.perf_counter() - start
    return Measurement(build_forward, backward, teardown, nodes, output, probe_grad)


def measure(engine: Engine, shape: Shape, data: Any, repeat: int) -> Measurement:
    """Best (minimum) time of each phase over ``repeat`` runs, after one untimed run.

    The untimed run lets the interpreter's allocator grow its arenas for a graph of
    this size; otherwise whichever engine runs first pays for that alone.
    """
    measure_once(engine, shape, data)
    runs = [measure_once(engine, shape, data) for _ in range(repeat)]
    first = runs[0]
    return Measurement(
        build_forward=min(run.build_forward for run in runs),
        backward=min(run.backward for run in runs),
        teardown=min(run.teardown for run in runs),
        nodes=first.nodes,
        output=first.output,
        probe_grad=first.probe_grad,
    )


class MismatchError(Exception):
    """The two engines did not build the same graph."""


def check_same_graph(shape: Shape, ours: Measurement, theirs: Measurement) -> None:
    problems = []
    if ours.nodes != theirs.nodes:
        problems.append(f"node counts differ: ours {ours.nodes}, micrograd {theirs.nodes}")
    if not math.isclose(ours.output, theirs.output, rel_tol=RELATIVE_TOLERANCE):
        problems.append(f"outputs differ: ours {ours.output!r}, micrograd {theirs.output!r}")
    if not math.isclose(ours.probe_grad, theirs.probe_grad, rel_tol=RELATIVE_TOLERANCE):
        problems.append(
            f"leaf gradients differ: ours {ours.probe_grad!r}, micrograd {theirs.probe_grad!r}"
        )
    if problems:
        details = "; ".join(problems)
        raise MismatchError(f"{shape.name}: the engines did not build the same graph ({details})")


# --- reporting ---------------------------------------------------------------------------------


def per_node_ns(seconds: float, nodes: int) -> str:
    return f"{seconds * 1e9 / nodes:.0f}"


def table_row(shape: str, engine: str, m: Measurement) -> str:
    cells = [m.build_forward, m.backward, m.teardown, m.without_teardown, m.total]
    times = "".join(f"{per_node_ns(seconds, m.nodes):>12}" for seconds in cells)
    return f"{shape:<6}{engine:<11}{m.nodes:>8}{times}"


def empty_collect_seconds() -> float:
    """What a gc.collect() costs with no graph alive: a fixed part of every teardown."""
    gc.collect()
    timings = []
    for _ in range(5):
        start = time.perf_counter()
        gc.collect()
        timings.append(time.perf_counter() - start)
    return min(timings)


def print_header(nodes: int, repeat: int, micrograd_version: str) -> None:
    print(f"autodiff_cli.engine vs micrograd {micrograd_version} "
          f"(Python {platform.python_version()}, --nodes {nodes}, best of {repeat})")
    print("times in ns per node; garbage collector enabled while timing; "
          "teardown = drop the graph + gc.collect()")
    # Shown because at small --nodes this fixed cost dominates both teardown columns.
    print(f"(a gc.collect() with no graph alive takes {empty_collect_seconds() * 1e3:.2f} ms here)")
    print()
    headings = ["build+fwd", "backward", "teardown", "b+f+b", "total"]
    print(f"{'shape':<6}{'engine':<11}{'nodes':>8}" + "".join(f"{h:>12}" for h in headings))


def summary_line(shape: str, ours: Measurement, theirs: Measurement) -> str:
    # Same node count in both (checked), so ratios of totals equal ratios per node.
    return (f"{shape}: {theirs.without_teardown / ours.without_teardown:.1f}x micrograd "
            f"(build+forward+backward), {theirs.total / ours.total:.1f}x including teardown")


# --- driver ------------------------------------------------------------------------------------


def installed_version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:  # importable from a checkout, not installed
        return "(unknown version)"


def import_our_value() -> ValueClass:
    """Our Value, from the installed package or else from this checkout."""
    try:
        from autodiff_cli.engine import Value
    except ImportError:
        # Run as a script, Python puts benchmarks/ on the path, not the repository root.
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
        from autodiff_cli.engine import Value
    return Value


def run(nodes: int, repeat: int, our_value: ValueClass, micrograd_value: ValueClass) -> None:
    ours = Engine("ours", our_value)
    theirs = Engine("micrograd", micrograd_value)
    print_header(nodes, repeat, installed_version("micrograd"))
    summaries = []
    for shape in SHAPES:
        data = shape.make_data(nodes, random.Random(SEED))
        our_result = measure(ours, shape, data, repeat)
        their_result = measure(theirs, shape, data, repeat)
        check_same_graph(shape, our_result, their_result)
        print(table_row(shape.name, ours.name, our_result))
        print(table_row(shape.name, theirs.name, their_result), flush=True)
        summaries.append(summary_line(shape.name, our_result, their_result))
    print()
    print("\n".join(summaries))


def run_in_big_thread(target: Callable[[], None]) -> BaseException | None:
    """Run target on a thread with a large stack (for micrograd's recursion); return its error."""
    errors: list[BaseException] = []

    def guarded() -> None:
        try:
            target()
        except BaseException as error:  # re-raised on the main thread by the caller
            errors.append(error)

    threading.stack_size(THREAD_STACK_BYTES)
    worker = threading.Thread(target=guarded, name="bench_engine")
    worker.start()
    worker.join()
    return errors[0] if errors else None


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=100_000, help="approximate nodes per graph")
    parser.add_argument(
        "--repeat", type=int, default=7, help="runs per measurement; the best of each phase counts"
    )
    args = parser.parse_args(argv)
    if args.nodes < 1 or args.repeat < 1:
        parser.error("--nodes and --repeat must be positive")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    our_value = import_our_value()
    try:
        from micrograd.engine import Value as micrograd_value
    except ImportError:
        print("micrograd is not installed; this benchmark compares against it.\n"
              "Install it with:  pip install micrograd", file=sys.stderr)
        return 2
    # The deep chain is about 3/5 * nodes levels deep; micrograd recurses once per level.
    sys.setrecursionlimit(max(sys.getrecursionlimit(), args.nodes + 10_000))
    error = run_in_big_thread(lambda: run(args.nodes, args.repeat, our_value, micrograd_value))
    if isinstance(error, MismatchError):
        print(f"error: {error}", file=sys.stderr)
        return 1
    if error is not None:
        raise error
    return 0


if __name__ == "__main__":
    sys.exit(main())
