"""Compare autodiff_cli.engine.Value with micrograd's Value on the same graphs.

Both engines are driven only through their public API (``+``, ``*``, ``.relu()``,
``.tanh()``, ``.exp()``, ``.backward()``), on five graph shapes of about ``--nodes``
nodes each:

* wide:     x0*x0 + x1*x1 + ... over separate leaf Values
* deep:     x = (x*0.999 + 0.001).relu(), repeated
* mlp:      a small multi-layer perceptron of relu neurons written out with Values
* reuse:    t = t*x[i % 16] + x[7i % 16]: sixteen leaves, each used by thousands of nodes
* tanh_exp: x = ((x*0.9 + 0.1).tanh()).exp()*0.5, repeated

micrograd 0.1.0 has no tanh or exp; they are added to it here as its author writes them
in the lecture the package comes from (a closure per node), so both engines build the
same graph.  For each engine we time, per node, building the graph (which computes the
forward values), the backward pass, and the teardown (dropping the graph until its
memory is reclaimed), with the garbage collector on (as users run) and off (pure
compute).  The two engines run alternately and medians are reported.

Then micrograd's own demo loop, as users write it: 6 full-batch steps of MLP(2, [16, 16, 1])
on 100 moons-like points (hinge loss, L2), ours with the collector on and off and micrograd's
with it on, interleaved, medians: the collector must cost ours at most 1.3x.  Run:

    python benchmarks/bench_engine.py [--nodes 10000 100000 1000000] [--gc on off] [--repeat N] [--loop-only]
"""

from __future__ import annotations

import argparse
import gc
import math
import platform
import random
import statistics
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


def reuse_data(nodes: int, rng: random.Random) -> tuple[list[float], int]:
    # Sixteen leaves in [0.3, 0.7] (so t stays below 0.7 / (1 - 0.7)), then a product and a
    # sum per step.
    return [rng.uniform(0.3, 0.7) for _ in range(16)], max(1, (nodes - 16) // 2)


def build_reuse(value: ValueClass, data: tuple[list[float], int]) -> Graph:
    xs, steps = data
    leaves = [value(x) for x in xs]
    t = leaves[0]
    for i in range(steps):
        t = t * leaves[i % 16] + leaves[(7 * i) % 16]
    return Graph(t, leaves[1])


def tanh_exp_data(nodes: int, rng: random.Random) -> int:
    # Every step adds eight nodes: three constants, two products, a sum, a tanh and an exp.
    return max(1, nodes // 8)


def build_tanh_exp(value: ValueClass, steps: int) -> Graph:
    start = value(0.3)
    x = start
    for _ in range(steps):
        x = (x * 0.9 + 0.1).tanh().exp() * 0.5
    return Graph(x, start)


SHAPES = [
    Shape("wide", wide_data, build_wide),
    Shape("deep", deep_data, build_deep),
    Shape("mlp", mlp_data, build_mlp),
    Shape("reuse", reuse_data, build_reuse),
    Shape("tanh_exp", tanh_exp_data, build_tanh_exp),
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


def measure_once(engine: Engine, shape: Shape, data: Any, collector: bool) -> Measurement:
    """Build, differentiate and drop one graph, timing each phase with the collector on or off.

    Time is CPU time of this process (``time.process_time``): on a shared machine it
    varies far less than wall time, and both engines are measured the same way.
    """
    # Collect before each phase, outside timing, so that garbage left by earlier work
    # (micrograd's closures form reference cycles) is not collected inside the next timing.
    gc.collect()
    if not collector:
        gc.disable()
    try:
        start = time.process_time()
        graph = shape.build(engine.value, data)
        build_forward = time.process_time() - start

        gc.collect()
        start = time.process_time()
        graph.root.backward()
        backward = time.process_time() - start

        nodes = count_nodes(graph.root)
        output, probe_grad = float(graph.root.data), float(graph.probe.grad)

        gc.collect()
        start = time.process_time()
        del graph  # the last references: our nodes are freed here, by reference counting
        gc.collect()  # micrograd's nodes sit in cycles and are freed only here (collector on or off)
        # Both engines are timed the same way; for ours the collection finds nothing
        # and costs only a pass over the interpreter's other objects (printed in the header).
        teardown = time.process_time() - start
    finally:
        gc.enable()
    return Measurement(build_forward, backward, teardown, nodes, output, probe_grad)


def measure_pair(ours: Engine, theirs: Engine, shape: Shape, data: Any, repeat: int,
                 collector: bool) -> tuple[Measurement, Measurement]:
    """Median of each phase over ``repeat`` runs of each engine, alternating, after one untimed
    run each (the allocator grows its arenas for a graph of this size; otherwise whichever
    engine runs first pays for that alone)."""
    runs: dict[str, list[Measurement]] = {ours.name: [], theirs.name: []}
    for engine in (ours, theirs):
        measure_once(engine, shape, data, collector)
    for _ in range(repeat):
        for engine in (ours, theirs):
            runs[engine.name].append(measure_once(engine, shape, data, collector))

    def median(measurements: list[Measurement]) -> Measurement:
        first = measurements[0]
        return Measurement(
            build_forward=statistics.median(m.build_forward for m in measurements),
            backward=statistics.median(m.backward for m in measurements),
            teardown=statistics.median(m.teardown for m in measurements),
            nodes=first.nodes,
            output=first.output,
            probe_grad=first.probe_grad,
        )

    return median(runs[ours.name]), median(runs[theirs.name])


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


def empty_collect_seconds() -> float:
    """What a gc.collect() costs with no graph alive: a fixed part of every teardown."""
    gc.collect()
    timings = []
    for _ in range(5):
        start = time.perf_counter()
        gc.collect()
        timings.append(time.perf_counter() - start)
    return min(timings)


def print_header(repeat: str, micrograd_version: str) -> None:
    print(f"autodiff_cli.engine ({engine_build()}) vs micrograd {micrograd_version} "
          f"(Python {platform.python_version()}, medians of {repeat} alternating runs, CPU time)")
    print("times in ns per node; teardown = drop the graph + gc.collect()")
    # Shown because at small --nodes this fixed cost dominates both teardown columns.
    print(f"(a gc.collect() with no graph alive takes {empty_collect_seconds() * 1e3:.2f} ms here)")


def print_table_heading(nodes: int, collector: bool) -> None:
    print(f"\n~{nodes:,} nodes, garbage collector {'on' if collector else 'off'}")
    headings = ["build+fwd", "backward", "teardown", "b+f+b", "total"]
    print(f"{'shape':<9}{'engine':<11}{'nodes':>8}" + "".join(f"{h:>12}" for h in headings))


def table_row(shape: str, engine: str, m: Measurement) -> str:
    cells = [m.build_forward, m.backward, m.teardown, m.without_teardown, m.total]
    times = "".join(f"{per_node_ns(seconds, m.nodes):>12}" for seconds in cells)
    return f"{shape:<9}{engine:<11}{m.nodes:>8}{times}"


class Ratio(NamedTuple):
    nodes: int
    collector: bool
    shape: str
    compute: float  # micrograd / ours, build+forward+backward
    total: float  # the same with teardown


# --- driver ------------------------------------------------------------------------------------


def engine_build() -> str:
    """Which build of our engine runs: the compiled one, or the pure-Python fallback."""
    try:
        from autodiff_cli.engine.value import COMPILED
    except ImportError:  # an engine from before there were two
        return "pure Python"
    return "compiled with mypyc" if COMPILED else "pure Python"


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


def with_tanh_and_exp(micrograd_value: Any) -> Any:
    """micrograd's Value given tanh and exp in its own style: the result, and a closure per node
    that pushes the gradient back (as its author writes them in the lecture the package comes
    from).  Added to the class itself, so its other operators are untouched."""

    def tanh(self: Any) -> Any:
        t = math.tanh(self.data)
        out = micrograd_value(t, (self,), "tanh")

        def _backward() -> None:
            self.grad += (1 - t * t) * out.grad

        out._backward = _backward
        return out

    def exp(self: Any) -> Any:
        out = micrograd_value(math.exp(self.data), (self,), "exp")

        def _backward() -> None:
            self.grad += out.data * out.grad

        out._backward = _backward
        return out

    if not hasattr(micrograd_value, "tanh"):
        micrograd_value.tanh = tanh
    if not hasattr(micrograd_value, "exp"):
        micrograd_value.exp = exp
    return micrograd_value


def repeats(nodes: int, asked: int | None) -> int:
    if asked is not None:
        return asked
    return 7 if nodes <= 20_000 else 5 if nodes <= 200_000 else 2


def run(sizes: list[int], collectors: list[bool], repeat: int | None, our_value: ValueClass,
        micrograd_value: ValueClass) -> list[Ratio]:
    ours = Engine("ours", our_value)
    theirs = Engine("micrograd", micrograd_value)
    print_header(str(repeat) if repeat else "7 (1e4), 5 (1e5), 2 (1e6)", installed_version("micrograd"))
    ratios = []
    for nodes in sizes:
        for collector in collectors:
            print_table_heading(nodes, collector)
            for shape in SHAPES:
                data = shape.make_data(nodes, random.Random(SEED))
                our_result, their_result = measure_pair(ours, theirs, shape, data, repeats(nodes, repeat),
                                                        collector)
                check_same_graph(shape, our_result, their_result)
                print(table_row(shape.name, ours.name, our_result))
                print(table_row(shape.name, theirs.name, their_result), flush=True)
                ratios.append(Ratio(nodes, collector, shape.name,
                                    their_result.without_teardown / our_result.without_teardown,
                                    their_result.total / our_result.total))
    print("\nspeed-up over micrograd (micrograd time / ours), build+forward+backward | with teardown")
    print(f"{'nodes':>9} {'GC':>4} " + "".join(f"{shape.name:>16}" for shape in SHAPES) + f"{'worst':>16}")
    for nodes in sizes:
        for collector in collectors:
            row = [r for r in ratios if r.nodes == nodes and r.collector == collector]
            cells = "".join(f"{r.compute:7.1f}x|{r.total:6.1f}x" for r in row)
            worst = f"{min(r.compute for r in row):7.1f}x|{min(r.total for r in row):6.1f}x"
            print(f"{nodes:>9,} {'on' if collector else 'off':>4} {cells}{worst}")
    print("targets: >= 5x with the collector on (goal 10x), >= 4x with it off")
    return ratios


def training_loop(value: ValueClass, mlp: Any, steps: int = 6) -> float:
    """Seconds for micrograd's demo loop: full-batch steps of MLP(2, [16, 16, 1]), hinge loss."""
    rng = random.Random(SEED)
    points = [(rng.uniform(-1.5, 2.5), rng.uniform(-1.0, 1.5)) for _ in range(100)]
    labels = [1.0 if a * a + b > 0.8 else -1.0 for a, b in points]
    random.seed(SEED)  # both nn modules draw their weights from random
    model = mlp(2, [16, 16, 1])
    start = time.perf_counter()
    for k in range(steps):
        scores = [model([value(a), value(b)]) for a, b in points]
        losses = [(1 + -y * score).relu() for y, score in zip(labels, scores)]
        loss = sum(losses) * (1.0 / len(losses)) + 1e-4 * sum(p * p for p in model.parameters())
        model.zero_grad()
        loss.backward()
        for p in model.parameters():
            p.data -= (1.0 - 0.9 * k / 100) * p.grad
    return time.perf_counter() - start


def run_training_loop(our_value: ValueClass, micrograd_value: ValueClass, repeat: int) -> float:
    """The demo loop, ours with the collector on and off and micrograd's on, interleaved."""
    from micrograd.nn import MLP as MicrogradMLP

    from autodiff_cli.engine.nn import MLP as OurMLP

    times: dict[str, list[float]] = {"ours, collector on": [], "ours, collector off": [], "micrograd, on": []}
    for _ in range(repeat):
        gc.collect()
        times["ours, collector on"].append(training_loop(our_value, OurMLP))
        gc.collect()
        gc.disable()
        try:
            times["ours, collector off"].append(training_loop(our_value, OurMLP))
        finally:
            gc.enable()
        gc.collect()
        times["micrograd, on"].append(training_loop(micrograd_value, MicrogradMLP))
    medians = {name: statistics.median(values) for name, values in times.items()}
    print(f"\nmicrograd's demo loop (6 steps, MLP(2, [16, 16, 1]), 100 points), medians of {repeat}:")
    for name, seconds in medians.items():
        print(f"  {name:<22} {seconds:8.3f} s")
    ratio = medians["ours, collector on"] / medians["ours, collector off"]
    print(f"  collector on / off: {ratio:.2f}x (target <= 1.3x); "
          f"micrograd / ours (on): {medians['micrograd, on'] / medians['ours, collector on']:.1f}x")
    return ratio


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
    parser.add_argument("--nodes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000],
                        help="approximate nodes per graph (several sizes may be given)")
    parser.add_argument("--gc", nargs="+", choices=["on", "off"], default=["on", "off"],
                        help="time with the garbage collector on, off, or both (the default)")
    parser.add_argument("--repeat", type=int, default=None,
                        help="runs of each engine per measurement, medians reported "
                             "(default: 7 up to 2e4 nodes, 5 up to 2e5, 2 above)")
    parser.add_argument("--loop-only", action="store_true", help="only micrograd's demo training loop")
    args = parser.parse_args(argv)
    if min(args.nodes) < 1 or (args.repeat is not None and args.repeat < 1):
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
    # The deep chains are up to ~3/5 * nodes levels deep; micrograd recurses once per level.
    sys.setrecursionlimit(max(sys.getrecursionlimit(), max(args.nodes) + 10_000))
    collectors = [mode == "on" for mode in dict.fromkeys(args.gc)]

    def everything() -> None:
        if not args.loop_only:
            run(args.nodes, collectors, args.repeat, our_value, with_tanh_and_exp(micrograd_value))
        run_training_loop(our_value, micrograd_value, args.repeat or 5)

    error = run_in_big_thread(everything)
    if isinstance(error, MismatchError):
        print(f"error: {error}", file=sys.stderr)
        return 1
    if error is not None:
        raise error
    return 0


if __name__ == "__main__":
    sys.exit(main())
