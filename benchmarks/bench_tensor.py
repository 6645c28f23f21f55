"""Tensor programs against NumPy written by hand, PyTorch, and the scalar language, as ratios
measured in one run (issue 22, "Performance").

Four sub-benchmarks (all by default; ``--step``, ``--sizes``, ``--moons``, ``--batch`` pick some):

* ``--step``: one training step of an MLP 64-128-10 at batch 256 (forward, softmax
  cross-entropy, backward, an Adam step; float64).  Ours is the program written per row
  (``h = relu(W1 @ x + b1)``, ``z = W2 @ h + b2``, ``L = cross_entropy(z, label)``) through
  ``TensorObjective.loss_and_grad`` and ``AdamRule.update`` on the flat parameter vector,
  what ``fit`` does per step; also ``fit``'s whole ``train()`` loop, and the eager
  ``autodiff_cli.Tensor`` / ``autodiff_cli.nn`` / ``autodiff_cli.optim`` version.  Baselines:
  a hand-written NumPy step (goal: ours <= 1.3x) and PyTorch on the CPU in float64 with as
  many threads as OpenBLAS has (goal: no slower).  The same data and starting weights for
  all; the losses of the first steps must agree (the first to 1e-12 relative) or nothing is
  timed.
* ``--sizes``: the training step (objective, then ``AdamRule``) at 2-16-16-1 (tanh, squared
  error), 64-128-10, 784-256-10 and 784-1024-1024-10 (relu, cross-entropy), batch 256, and
  at batch 2 (where the difference from hand-written NumPy is the fixed cost of a step),
  against the same step written with NumPy by hand and with PyTorch (where installed), in
  float64 and then float32 (``--dtype`` picks one; ours gets ``dtype="float32"``, the others
  their float32 arrays and modules); the first three losses must agree to the precision.
  Median and best round of each (the best is the round least disturbed by other processes).
  Targets (issue 34): <= 1.10x NumPy at every size, fixed cost <= 50 us.  JAX is not in
  this table.
* ``--moons``: micrograd's moons demo, 100 full-batch steps with the header's settings
  (lr 1, linear schedule to 0.1): the tensor program ``samples/moons_mlp.ad`` against the
  scalar ``samples/moons.ad``, as the training loop in this process (``train()`` with each
  objective) and as whole ``autodiff fit`` processes.  Goal: tensor >= 10x faster.
* ``--batch``: ``--rows`` rows (1e6) of a per-row 2-16-1 tanh MLP with a squared error, every
  row's L and its gradient with respect to every input (per row, what ``autodiff batch``
  writes), then with ``--reduce mean``: ``BatchEvaluator.evaluate`` over chunks of
  ``CHUNK_LINES`` (16,384) rows given as entry columns ``x[0]``, ``x[1]``, ``y``, as ``batch``
  feeds it, against the same forward and reverse sweeps written with NumPy over the whole
  arrays (goal: <= 1.5x).  Results are compared first.  Then the peak of traced memory
  (tracemalloc, which sees NumPy's buffers) of each, to show no Python object per element.

Contenders take turns round after round (wall time), and medians are reported.  BLAS
threading: run as the environment has it (the header says what OpenBLAS runs with), and
``--blas-threads 1`` sets OPENBLAS_NUM_THREADS=1 before NumPy loads (and PyTorch's threads
to match), to see how much of a ratio is OpenBLAS threads fighting other processes for
the two cores.

    python benchmarks/bench_tensor.py                       # everything: 40-90 s on the 2-core VM
    python benchmarks/bench_tensor.py --step --rounds 30    # just the training step
    python benchmarks/bench_tensor.py --sizes --blas-threads 1   # the step at four sizes and batch 2
    python benchmarks/bench_tensor.py --batch --rows 100000
    python benchmarks/bench_tensor.py --blas-threads 1
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "samples"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("\n", " "),
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    parser.add_argument("--step", action="store_true", help="the MLP 64-128-10 training step")
    parser.add_argument("--sizes", action="store_true",
                        help="a training step at 2-16-16-1, 64-128-10, 784-256-10, 784-1024-1024-10, and batch 2")
    parser.add_argument("--size-rounds", type=int, default=7, help="interleaved rounds per size (default 7)")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="--sizes' clock: wall time, or this thread's CPU time (steadier on a loaded machine)")
    parser.add_argument("--dtype", choices=("float64", "float32", "both"), default="both",
                        help="the precision of --sizes' table (default: both, float64 first)")
    parser.add_argument("--moons", action="store_true", help="moons_mlp.ad against moons.ad, 100 steps")
    parser.add_argument("--batch", action="store_true", help="batch over --rows rows, and its memory")
    parser.add_argument("--batch-inputs", action="store_true",
                        help="issue 34's batch: a 4-16-1 net, L and dL/dx a row, against NumPy over the same chunks")
    parser.add_argument("--rounds", type=int, default=15, help="interleaved rounds of the step (default 15)")
    parser.add_argument("--steps-per-round", type=int, default=20, help="training steps per round (default 20)")
    parser.add_argument("--moons-rounds", type=int, default=3, help="rounds of the moons demo (default 3)")
    parser.add_argument("--batch-rounds", type=int, default=3, help="rounds of batch (default 3)")
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows of --batch (default 1e6)")
    parser.add_argument("--blas-threads", type=int, default=None,
                        help="set OPENBLAS_NUM_THREADS to this before NumPy loads (default: the environment's)")
    args = parser.parse_args()
    if not (args.step or args.moons or args.batch or args.sizes or args.batch_inputs):
        args.step = args.moons = args.batch = args.sizes = args.batch_inputs = True
    return args


ARGS = parse_args() if __name__ == "__main__" else None
if ARGS is not None and ARGS.blas_threads is not None:
    os.environ["OPENBLAS_NUM_THREADS"] = str(ARGS.blas_threads)

import numpy as np  # noqa: E402  (after OPENBLAS_NUM_THREADS is set)
from bench_batch import interleaved  # noqa: E402  (the same interleaved medians as the batch benchmark)

# --- the machine ----------------------------------------------------------------------------------


def openblas() -> tuple[str, int]:
    """The OpenBLAS kernel NumPy runs (e.g. 'Haswell') and its thread count, where it can be asked."""
    import ctypes
    import glob

    here = os.path.dirname(np.__file__)
    for path in glob.glob(os.path.join(here, "..", "numpy.libs", "*openblas*")) + \
            glob.glob(os.path.join(here, ".libs", "*openblas*")):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix, suffix in (("scipy_openblas", "64_"), ("openblas", "64_"), ("openblas", ""), ("scipy_openblas", "")):
            core = getattr(lib, f"{prefix}_get_corename{suffix}", None)
            threads = getattr(lib, f"{prefix}_get_num_threads{suffix}", None)
            if core is not None and threads is not None:
                core.restype = ctypes.c_char_p
                return core().decode(), int(threads())
    return "unknown", os.cpu_count() or 1


def header() -> int:
    core, threads = openblas()
    shown = {k: v for k, v in os.environ.items() if k.startswith(("OPENBLAS_", "OMP_", "MKL_"))}
    print(f"bench_tensor.py: Python {sys.version.split()[0]}, NumPy {np.__version__}, {os.cpu_count()} cores, "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"  OpenBLAS kernel {core}, {threads} thread(s); environment: "
          + (", ".join(f"{k}={v}" for k, v in sorted(shown.items())) or "no OPENBLAS_/OMP_/MKL_ variable set"))
    try:
        import torch
        torch.set_num_threads(threads)
        print(f"  PyTorch {torch.__version__}, set_num_threads({threads})")
    except ImportError:
        print("  PyTorch not installed: its rows are skipped")
    try:
        import jax  # noqa: F401
        print("  (JAX is installed but not compared here)")
    except ImportError:
        print("  JAX not installed: not compared")
    return threads


# --- 1. the training step --------------------------------------------------------------------------

N, D, HIDDEN, CLASSES = 256, 64, 128, 10
LR = 1e-3
MLP_PROGRAM = f"""\
x = zeros([{D}])
label = 0
W1 = zeros([{HIDDEN}, {D}])
b1 = zeros([{HIDDEN}])
W2 = zeros([{CLASSES}, {HIDDEN}])
b2 = zeros([{CLASSES}])
h = relu(W1 @ x + b1)
z = W2 @ h + b2
L = cross_entropy(z, label)
"""


def step_data(seed: int = 0) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((N, D))
    labels = rng.integers(0, CLASSES, N).astype(np.float64)
    weights = {"W1": rng.normal(0.0, (2.0 / D) ** 0.5, (HIDDEN, D)), "b1": rng.normal(0.0, 0.1, HIDDEN),
               "W2": rng.normal(0.0, (2.0 / HIDDEN) ** 0.5, (CLASSES, HIDDEN)), "b2": rng.normal(0.0, 0.1, CLASSES)}
    return x, labels, weights


class OursStep:
    """What ``fit`` does per step: the program's objective, then Adam on the flat vector (the
    64-128-10 program by default, or ``program`` with ``inputs`` entries of x)."""

    def __init__(self, x: np.ndarray, labels: np.ndarray, weights: dict[str, np.ndarray],
                 program_text: str = MLP_PROGRAM, inputs: int = D, dtype: str = "float64") -> None:
        from autodiff_cli.engine.optim import AdamRule
        from autodiff_cli.execute.fit import plan_fit
        from autodiff_cli.execute.objective import TensorObjective, starting_parameters
        from autodiff_cli.language import parse

        program = parse(program_text, "mlp.ad")
        plan = plan_fit(program, [f"x[{i}]" for i in range(inputs)] + ["label"], {})
        precision = () if dtype == "float64" else (dtype,)  # (so that float64 also times code from before dtype)
        layout, self.params = starting_parameters(program, plan.parameters, weights, "normal", 0, *precision)
        self.objective = TensorObjective(program, plan.output, layout, plan.fixed, {"x": x, "label": labels})
        self.rule, self.state, self.count = AdamRule(), None, 0
        self.spare = None  # the step before's parameters, written over by the next update (as train() does)

    def step(self) -> float:
        loss, grad = self.objective.loss_and_grad(self.params, None)
        self.count += 1
        made, self.state = self.rule.update(self.params, grad, self.state, self.count, LR, out=self.spare)
        self.spare, self.params = self.params, made
        return loss


class OursTrain:
    """``fit``'s ``train()`` loop for k steps (it also checks the gradient's norm and the new
    parameters every step, and measures the loss once more at the end)."""

    def __init__(self, x: np.ndarray, labels: np.ndarray, weights: dict[str, np.ndarray]) -> None:
        self.inner = OursStep(x, labels, weights)

    def steps(self, k: int) -> list[float]:
        from autodiff_cli.execute.fit import FitSettings, train

        result = train(self.inner.objective, self.inner.params, FitSettings(optimizer="adam", lr=LR, steps=k))
        self.inner.params = result.params  # (Adam's state starts again each call: the same work)
        return [record.loss for record in result.history]


class EagerStep:
    """``autodiff_cli.nn`` and ``autodiff_cli.optim`` as a PyTorch user writes them."""

    def __init__(self, x: np.ndarray, labels: np.ndarray, weights: dict[str, np.ndarray]) -> None:
        from autodiff_cli import Tensor, nn, optim

        self.model = nn.Sequential(nn.Linear(D, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, CLASSES))
        for layer, (w, b) in ((self.model[0], ("W1", "b1")), (self.model[2], ("W2", "b2"))):
            layer.weight.data[...] = weights[w]
            layer.bias.data[...] = weights[b]
        self.x, self.labels = Tensor(x), Tensor(labels)
        self.loss_fn = nn.cross_entropy
        self.optimizer = optim.Adam(self.model.parameters(), lr=LR)

    def step(self) -> float:
        loss = self.loss_fn(self.model(self.x), self.labels)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return loss.item()


class NumpyStep:
    """The step written out by hand: forward, softmax cross-entropy, backward, Adam in place."""

    def __init__(self, x: np.ndarray, labels: np.ndarray, weights: dict[str, np.ndarray]) -> None:
        self.x, self.labels = x, labels.astype(np.intp)
        self.p = {name: w.copy() for name, w in weights.items()}
        self.m = {name: np.zeros_like(w) for name, w in weights.items()}
        self.v = {name: np.zeros_like(w) for name, w in weights.items()}
        self.t = 0
        self.rows = np.arange(N)

    def step(self) -> float:
        p, x, labels, rows = self.p, self.x, self.labels, self.rows
        a = x @ p["W1"].T + p["b1"]
        h = np.maximum(a, 0.0)
        z = h @ p["W2"].T + p["b2"]
        top = z.max(axis=1, keepdims=True)
        e = np.exp(z - top)
        total = e.sum(axis=1, keepdims=True)
        loss = float(np.mean(np.log(total[:, 0]) + top[:, 0] - z[rows, labels]))
        dz = e / total
        dz[rows, labels] -= 1.0
        dz /= N
        grads = {"W2": dz.T @ h, "b2": dz.sum(axis=0)}
        da = dz @ p["W2"]
        da *= a > 0
        grads["W1"], grads["b1"] = da.T @ x, da.sum(axis=0)
        self.t += 1
        c1, c2 = 1.0 - 0.9 ** self.t, (1.0 - 0.999 ** self.t) ** 0.5
        for name, g in grads.items():
            m, v = self.m[name], self.v[name]
            m += 0.1 * (g - m)
            v *= 0.999
            v += 0.001 * g * g
            p[name] -= (LR / c1) * m / (np.sqrt(v) / c2 + 1e-8)
        return loss


class TorchStep:
    """PyTorch on the CPU in float64: nn.Linear, F.cross_entropy, torch.optim.Adam."""

    def __init__(self, x: np.ndarray, labels: np.ndarray, weights: dict[str, np.ndarray]) -> None:
        import torch

        self.torch = torch
        self.model = torch.nn.Sequential(torch.nn.Linear(D, HIDDEN, dtype=torch.float64), torch.nn.ReLU(),
                                         torch.nn.Linear(HIDDEN, CLASSES, dtype=torch.float64))
        with torch.no_grad():
            for layer, (w, b) in ((self.model[0], ("W1", "b1")), (self.model[2], ("W2", "b2"))):
                layer.weight.copy_(torch.from_numpy(weights[w]))
                layer.bias.copy_(torch.from_numpy(weights[b]))
        self.x, self.labels = torch.from_numpy(x.copy()), torch.from_numpy(labels.astype(np.int64))
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=LR)

    def step(self) -> float:
        loss = self.torch.nn.functional.cross_entropy(self.model(self.x), self.labels)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return loss.item()


def run_step(rounds: int, per_round: int) -> None:
    x, labels, weights = step_data()
    kinds: dict[str, Any] = {"ours (objective + AdamRule)": OursStep, "ours, fit's train() loop": OursTrain,
                             "eager Tensor / nn / optim": EagerStep, "hand-written NumPy": NumpyStep}
    try:
        import torch  # noqa: F401
        kinds["PyTorch CPU float64"] = TorchStep
    except ImportError:
        pass
    print(f"\n1. training step: MLP {D}-{HIDDEN}-{CLASSES}, batch {N}, softmax cross-entropy, Adam (lr {LR}), "
          f"float64; {rounds} rounds of {per_round} steps, median per step")
    # the same computation? the losses of the first three steps, from fresh copies
    first: dict[str, list[float]] = {}
    for name, kind in kinds.items():
        trainer = kind(x, labels, weights)
        first[name] = trainer.steps(3) if name.endswith("train() loop") else [trainer.step() for _ in range(3)]
    reference = first["hand-written NumPy"]
    worst = 0.0
    for name, losses in first.items():
        for k, (got, want) in enumerate(zip(losses, reference)):
            error = abs(got - want) / abs(want)
            worst = max(worst, error)
            if error > (1e-12 if k == 0 else 1e-9):
                sys.exit(f"error: step {k + 1}'s loss differs: {name} {got!r}, NumPy {want!r}; not timing")
    print(f"  the first 3 losses agree (first {reference[0]:.15f}; largest relative difference {worst:.1e})")
    trainers = {name: kind(x, labels, weights) for name, kind in kinds.items()}
    functions: dict[str, Callable[[], Any]] = {}
    for name, trainer in trainers.items():
        if name.endswith("train() loop"):
            functions[name] = lambda t=trainer: t.steps(per_round)
        else:
            functions[name] = lambda t=trainer: [t.step() for _ in range(per_round)]
    for function in functions.values():  # warm up (first BLAS calls, PyTorch's allocator)
        function()
    medians = {name: seconds / per_round for name, seconds in interleaved(functions, rounds).items()}
    ours = medians["ours (objective + AdamRule)"]
    for name, seconds in medians.items():
        print(f"  {name:30} {seconds * 1e3:8.3f} ms/step   this / NumPy {seconds / medians['hand-written NumPy']:5.2f}x")
    print(f"  ours / hand-written NumPy: {ours / medians['hand-written NumPy']:.2f}x   (target <= 1.3x)")
    if "PyTorch CPU float64" in medians:
        print(f"  ours / PyTorch:            {ours / medians['PyTorch CPU float64']:.2f}x   (target <= 1x)")
        print(f"  eager Tensor / PyTorch:    "
              f"{medians['eager Tensor / nn / optim'] / medians['PyTorch CPU float64']:.2f}x")
    else:
        print("  PyTorch: not installed, skipped")


# --- 1b. the training step at several sizes, and its fixed cost -----------------------------------

# (layer widths, batch): tanh and a squared error for one output, relu and cross-entropy for more
SIZES = [((2, 16, 16, 1), 256), ((64, 128, 10), 256), ((784, 256, 10), 256), ((784, 1024, 1024, 10), 256),
         ((2, 16, 16, 1), 2), ((64, 128, 10), 2)]


def mlp_program(widths: tuple[int, ...]) -> str:
    """The per-row program of an MLP: hidden layers W @ h + b through tanh (one output) or relu."""
    regression = widths[-1] == 1
    act = "tanh" if regression else "relu"
    lines = [f"x = zeros([{widths[0]}])", "label = 0"]
    for k, (n_in, n_out) in enumerate(pairwise(widths), 1):
        if regression and k == len(widths) - 1:
            lines += [f"W{k} = zeros([{n_in}])", f"b{k} = 0"]
        else:
            lines += [f"W{k} = zeros([{n_out}, {n_in}])", f"b{k} = zeros([{n_out}])"]
    h = "x"
    for k in range(1, len(widths) - 1):
        lines.append(f"h{k} = {act}(W{k} @ {h} + b{k})")
        h = f"h{k}"
    last = len(widths) - 1
    lines.append(f"z = W{last} @ {h} + b{last}")
    lines.append("L = (z - label)**2" if regression else "L = cross_entropy(z, label)")
    return "\n".join(lines) + "\n"


def mlp_data(widths: tuple[int, ...], batch: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, widths[0]))
    regression = widths[-1] == 1
    labels = rng.standard_normal(batch) if regression else rng.integers(0, widths[-1], batch).astype(np.float64)
    weights = {}
    for k, (n_in, n_out) in enumerate(pairwise(widths), 1):
        shape = (n_in,) if regression and k == len(widths) - 1 else (n_out, n_in)
        weights[f"W{k}"] = rng.normal(0.0, (2.0 / n_in) ** 0.5, shape)
        weights[f"b{k}"] = rng.normal(0.0, 0.1, shape[:-1])
    return x, labels, weights


def ours_sized_step(widths: tuple[int, ...], x: np.ndarray, labels: np.ndarray,
                    weights: dict[str, np.ndarray], dtype: str = "float64") -> OursStep:
    """``OursStep`` for any ``mlp_program``: the objective's loss and gradient, then ``AdamRule``."""
    return OursStep(x, labels, weights, mlp_program(widths), widths[0], dtype)


class NumpySizedStep:
    """The step of any ``mlp_program`` by hand: forward, loss, backward, Adam in place."""

    def __init__(self, widths: tuple[int, ...], x: np.ndarray, labels: np.ndarray, weights: dict[str, np.ndarray],
                 dtype: str = "float64") -> None:
        self.widths, self.x = widths, x.astype(dtype)
        self.regression = widths[-1] == 1
        self.labels = labels.astype(dtype) if self.regression else labels.astype(np.intp)
        self.p = {name: w.astype(dtype) for name, w in weights.items()}
        self.m = {name: np.zeros_like(w) for name, w in self.p.items()}
        self.v = {name: np.zeros_like(w) for name, w in self.p.items()}
        self.t = 0
        self.rows = np.arange(len(x))

    def step(self) -> float:
        p, n, layers = self.p, len(self.x), len(self.widths) - 1
        hs, pre = [self.x], []
        for k in range(1, layers):
            a = hs[-1] @ p[f"W{k}"].T + p[f"b{k}"]
            pre.append(a)
            hs.append(np.tanh(a) if self.regression else np.maximum(a, 0.0))
        w_last = p[f"W{layers}"]
        grads = {}
        if self.regression:
            z = hs[-1] @ w_last + p[f"b{layers}"]
            d = z - self.labels
            loss = float(np.mean(d * d))
            dz = d * (2.0 / n)
            grads[f"W{layers}"], grads[f"b{layers}"] = dz @ hs[-1], dz.sum()
            dh = np.outer(dz, w_last)
        else:
            z = hs[-1] @ w_last.T + p[f"b{layers}"]
            top = z.max(axis=1, keepdims=True)
            e = np.exp(z - top)
            total = e.sum(axis=1, keepdims=True)
            loss = float(np.mean(np.log(total[:, 0]) + top[:, 0] - z[self.rows, self.labels]))
            dz = e / total
            dz[self.rows, self.labels] -= 1.0
            dz /= n
            grads[f"W{layers}"], grads[f"b{layers}"] = dz.T @ hs[-1], dz.sum(axis=0)
            dh = dz @ w_last
        for k in range(layers - 1, 0, -1):
            if self.regression:
                dh *= 1.0 - hs[k] * hs[k]
            else:
                dh *= pre[k - 1] > 0
            grads[f"W{k}"], grads[f"b{k}"] = dh.T @ hs[k - 1], dh.sum(axis=0)
            if k > 1:
                dh = dh @ p[f"W{k}"]
        self.t += 1
        c1, c2 = 1.0 - 0.9 ** self.t, (1.0 - 0.999 ** self.t) ** 0.5
        for name, g in grads.items():
            m, v = self.m[name], self.v[name]
            m += 0.1 * (g - m)
            v *= 0.999
            v += 0.001 * g * g
            p[name] -= (LR / c1) * m / (np.sqrt(v) / c2 + 1e-8)
        return loss


def interleaved_times(functions: dict[str, Callable[[], Any]], rounds: int) -> dict[str, list[float]]:
    """Every round's seconds of each function, the functions taking turns (the best of them is
    the one least disturbed by the other processes on a loaded machine).  ``--clock cpu`` counts
    this thread's CPU time instead of the wall's: on a machine shared with busy processes it
    leaves out the time others held the core (with one BLAS thread, all the work is this one's)."""
    clock = time.thread_time if ARGS is not None and ARGS.clock == "cpu" else time.perf_counter
    times: dict[str, list[float]] = {name: [] for name in functions}
    for _ in range(rounds):
        for name, function in functions.items():
            began = clock()
            function()
            times[name].append(clock() - began)
    return times


class TorchSizedStep:
    """The step of any ``mlp_program`` in PyTorch on the CPU: nn.Linear layers, tanh or relu,
    a squared error or F.cross_entropy, torch.optim.Adam; in float64 or float32."""

    def __init__(self, widths: tuple[int, ...], x: np.ndarray, labels: np.ndarray, weights: dict[str, np.ndarray],
                 dtype: str = "float64") -> None:
        import torch

        self.torch, self.regression = torch, widths[-1] == 1
        kind = getattr(torch, dtype)
        layers: list[Any] = []
        for k, (n_in, n_out) in enumerate(pairwise(widths), 1):
            linear = torch.nn.Linear(n_in, n_out, dtype=kind)
            with torch.no_grad():
                linear.weight.copy_(torch.from_numpy(weights[f"W{k}"].reshape(n_out, n_in).astype(dtype)))
                linear.bias.copy_(torch.from_numpy(np.reshape(weights[f"b{k}"], (n_out,)).astype(dtype)))
            layers.append(linear)
            if k < len(widths) - 1:
                layers.append(torch.nn.Tanh() if self.regression else torch.nn.ReLU())
        self.model = torch.nn.Sequential(*layers)
        self.x = torch.from_numpy(x.astype(dtype))
        self.labels = torch.from_numpy(labels.astype(dtype) if self.regression else labels.astype(np.int64))
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=LR)

    def step(self) -> float:
        z = self.model(self.x)
        if self.regression:
            loss = ((z[:, 0] - self.labels) ** 2).mean()
        else:
            loss = self.torch.nn.functional.cross_entropy(z, self.labels)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return loss.item()


def run_sizes(rounds: int, dtypes: tuple[str, ...] = ("float64", "float32")) -> None:
    try:
        import torch  # noqa: F401
        with_torch = True
    except ImportError:
        with_torch = False
    for dtype in dtypes:
        run_sizes_in(rounds, dtype, with_torch)


def run_sizes_in(rounds: int, dtype: str, with_torch: bool) -> None:
    """The table of ``--sizes`` in one precision: ours, hand NumPy and PyTorch (where installed) in
    ``dtype``, taking turns; the first three losses must agree (to that precision) first."""
    first_tol, later_tol = (1e-12, 1e-9) if dtype == "float64" else (2e-6, 1e-4)
    clock = "CPU time of this thread" if ARGS is not None and ARGS.clock == "cpu" else "wall time"
    print(f"\n1b. training step by size (Adam, lr {LR}, {dtype}; 2-16-16-1 tanh and a squared error, the others "
          f"relu and cross-entropy); {rounds} rounds, median per step, {clock}")
    torch_head = f" {'torch ms':>9} {'ours/torch':>10}" if with_torch else ""
    print(f"  {'MLP':18} {'batch':>5} {'ours ms':>9} {'NumPy ms':>9} {'ours/NumPy':>10} {'ours-NumPy us':>14}"
          f"{torch_head}")
    for widths, batch in SIZES:
        x, labels, weights = mlp_data(widths, batch)
        steps = {"ours": ours_sized_step(widths, x, labels, weights, dtype),
                 "hand": NumpySizedStep(widths, x, labels, weights, dtype)}
        if with_torch:
            steps["torch"] = TorchSizedStep(widths, x, labels, weights, dtype)
        for k in range(3):
            losses = {name: step.step() for name, step in steps.items()}
            want = losses["hand"]
            for name, got in losses.items():
                if abs(got - want) > (first_tol if k == 0 else later_tol) * abs(want):
                    sys.exit(f"error: {widths} {dtype} step {k + 1}'s loss differs: {name} {got!r}, NumPy {want!r}; "
                             "not timing")
        per = max(2, min(400, int(4e6 / (batch * sum(a * b for a, b in pairwise(widths))) + 1)))
        times = interleaved_times({name: lambda o=step, k=per: [o.step() for _ in range(k)]
                                   for name, step in steps.items()}, rounds)
        median = {name: statistics.median(seconds) / per for name, seconds in times.items()}
        best = {name: min(seconds) / per for name, seconds in times.items()}
        o, h = median["ours"], median["hand"]
        name = "-".join(map(str, widths))
        torch_cells = f" {median['torch'] * 1e3:9.3f} {o / median['torch']:9.2f}x" if with_torch else ""
        print(f"  {name:18} {batch:5} {o * 1e3:9.3f} {h * 1e3:9.3f} {o / h:9.2f}x {(o - h) * 1e6:13.0f}{torch_cells}"
              f"   best of {rounds}: {best['ours'] * 1e3:.3f} / {best['hand'] * 1e3:.3f} ms = "
              f"{best['ours'] / best['hand']:.2f}x, {(best['ours'] - best['hand']) * 1e6:.0f} us")
    print("  (the ours-NumPy column at batch 2 is the fixed cost a step: target <= 50 us; ratio target <= 1.10x)")


# --- 2. the moons demo -----------------------------------------------------------------------------

MOONS_ARGS = ["--lr", "1", "--lr-schedule", "linear", "--steps", "100"]


def moons_objective(tensor: bool) -> tuple[Any, np.ndarray]:
    """The objective and start ``autodiff fit`` makes for moons_mlp.ad (tensor) or moons.ad."""
    from autodiff_cli.execute.columns import input_rows
    from autodiff_cli.execute.fit import plan_fit
    from autodiff_cli.execute.objective import ProgramObjective, TensorObjective, starting_parameters
    from autodiff_cli.language import parse

    name, data = ("moons_mlp.ad", "moons_xy.csv") if tensor else ("moons.ad", "moons.csv")
    program = parse((SAMPLES / name).read_text(), name)
    with open(SAMPLES / data) as handle:
        columns = handle.readline().strip().split(",")
    table = np.loadtxt(SAMPLES / data, delimiter=",", skiprows=1)
    values = {column: table[:, i] for i, column in enumerate(columns)}
    plan = plan_fit(program, columns, {})
    if not tensor:
        return ProgramObjective(program, plan, values), np.array([plan.start[p] for p in plan.parameters])
    layout, start = starting_parameters(program, plan.parameters, plan.start, "normal", 0)  # fit's --seed 0
    return TensorObjective(program, plan.output, layout, plan.fixed, input_rows(program, values)), start


def run_moons(rounds: int) -> None:
    from autodiff_cli.execute.fit import FitSettings, train

    settings = FitSettings(lr=1.0, lr_schedule="linear", final_lr=0.1, steps=100)
    objectives = {kind: moons_objective(kind == "tensor") for kind in ("tensor", "scalar")}
    results: dict[str, Any] = {}

    def loop(kind: str) -> None:
        objective, start = objectives[kind]
        results[kind] = train(objective, start, settings)

    def process(kind: str) -> None:
        name, data = ("moons_mlp.ad", "moons_xy.csv") if kind == "tensor" else ("moons.ad", "moons.csv")
        subprocess.run([sys.executable, "-m", "autodiff_cli", "fit", str(SAMPLES / name), "--data", str(SAMPLES / data),
                        *MOONS_ARGS, "-q", "-o", "/dev/null"], check=True, cwd=REPO)

    print(f"\n2. moons demo: MLP(2, [16, 16, 1]), 100 rows, 100 full-batch steps (lr 1 -> 0.1 linear); "
          f"median of {rounds}")
    loop("tensor")
    loop("scalar")
    for kind, result in results.items():
        print(f"  {kind}: final loss {result.loss:.6f} after {result.steps_done} steps")
    medians = interleaved({"tensor: train() loop": lambda: loop("tensor"), "scalar: train() loop": lambda: loop("scalar"),
                           "tensor: autodiff fit process": lambda: process("tensor"),
                           "scalar: autodiff fit process": lambda: process("scalar")}, rounds)
    for name, seconds in medians.items():
        print(f"  {name:30} {seconds * 1e3:9.1f} ms")
    in_process = medians["scalar: train() loop"] / medians["tensor: train() loop"]
    whole = medians["scalar: autodiff fit process"] / medians["tensor: autodiff fit process"]
    print(f"  scalar / tensor, training loop: {in_process:6.1f}x   (target >= 10x: {'met' if in_process >= 10 else 'MISSED'})")
    print(f"  scalar / tensor, whole process: {whole:6.1f}x   (target >= 10x: {'met' if whole >= 10 else 'MISSED'};"
          " start-up is shared)")


# --- 3. batch over many rows -----------------------------------------------------------------------

BATCH_HIDDEN = 16
BATCH_PROGRAM = f"""\
x = [0, 0]
y = 0
W1 = normal([{BATCH_HIDDEN}, 2], 0.7)
b1 = normal([{BATCH_HIDDEN}], 0.1)
w2 = normal([{BATCH_HIDDEN}], 0.25)
c = 0.1
h = tanh(W1 @ x + b1)
p = w2 @ h + c
L = (p - y)**2
"""


def batch_columns(rows: int, seed: int = 3) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"x[0]": rng.standard_normal(rows), "x[1]": rng.standard_normal(rows), "y": rng.standard_normal(rows)}


def batch_params(program: Any) -> dict[str, np.ndarray]:
    from autodiff_cli.execute.interpreter import input_arrays

    arrays = input_arrays(program, {}, 0)
    return {name: arrays[name] for name in ("W1", "b1", "w2", "c")}


def hand_batch(columns: dict[str, np.ndarray], w: dict[str, np.ndarray], reduce: bool) -> dict[str, np.ndarray]:
    """L and dL/d(every input) per row (or their means), written by hand over whole arrays."""
    x = np.stack([columns["x[0]"], columns["x[1]"]], axis=1)  # (N, 2)
    y = columns["y"]
    h = np.tanh(x @ w["W1"].T + w["b1"])  # (N, 16)
    d = h @ w["w2"] + w["c"] - y
    gp = 2.0 * d
    gz = (gp[:, None] * w["w2"]) * (1.0 - h * h)  # (N, 16)
    if reduce:
        n = len(y)
        return {"L": np.mean(d * d), "dL/dW1": gz.T @ x / n, "dL/db1": gz.sum(axis=0) / n, "dL/dw2": gp @ h / n,
                "dL/dc": gp.sum() / n, "dL/dx": (gz @ w["W1"]).sum(axis=0) / n, "dL/dy": -gp.sum() / n}
    return {"L": d * d, "dL/dW1": gz[:, :, None] * x[:, None, :], "dL/db1": gz, "dL/dw2": gp[:, None] * h,
            "dL/dc": gp, "dL/dx": gz @ w["W1"], "dL/dy": -gp}


def ours_batch(evaluator: Any, columns: dict[str, np.ndarray], reduce: bool, chunk: int) -> list[Any]:
    """The evaluator over chunks of rows, as ``autodiff batch`` feeds it; the results kept only
    for checking (``batch`` writes each chunk and drops it)."""
    rows = len(columns["y"])
    kept = []
    for start in range(0, rows, chunk):
        part = {name: column[start:start + chunk] for name, column in columns.items()}
        result = evaluator.evaluate(part, reduce="sum" if reduce else None)
        kept.append(result.grads if reduce else result.columns())
    return kept


def check_batch(ours: list[Any], hand: dict[str, np.ndarray], reduce: bool, rows: int) -> float:
    worst = 0.0
    if reduce:
        for name in ("W1", "b1", "w2", "c", "x", "y"):
            got = sum(np.asarray(part[name]) for part in ours) / rows
            want = hand[f"dL/d{name}"]
            worst = max(worst, float(np.max(np.abs(got - want)) / max(1e-300, float(np.max(np.abs(want))))))
        return worst
    joined = {name: np.concatenate([part[name] for part in ours]) for name in ours[0]}
    for name, want in hand.items():
        flat = want.reshape(len(want), -1)
        for j in range(flat.shape[1]):
            if flat.shape[1] == 1:
                column = name
            else:
                index = np.unravel_index(j, want.shape[1:])
                column = f"{name}[{', '.join(map(str, index))}]"
            got = joined[column]
            worst = max(worst, float(np.max(np.abs(got - flat[:, j])) / max(1e-300, float(np.max(np.abs(flat[:, j]))))))
    return worst


def traced_peak(function: Callable[[], Any]) -> int:
    import gc
    import tracemalloc

    gc.collect()
    tracemalloc.start()
    try:
        function()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def run_batch(rows: int, rounds: int) -> None:
    from autodiff_cli.execute.batch_evaluator import BatchEvaluator
    from autodiff_cli.files.rows.lines import CHUNK_LINES
    from autodiff_cli.language import parse

    program = parse(BATCH_PROGRAM, "mlp_2_16_1.ad")
    weights = batch_params(program)
    columns = batch_columns(rows)
    print(f"\n3. batch: {rows:,} rows of a per-row 2-{BATCH_HIDDEN}-1 tanh MLP with a squared error, "
          f"chunks of {CHUNK_LINES:,} rows; median of {rounds}")
    for reduce in (False, True):
        evaluator = BatchEvaluator(program, values_of=["L"] if reduce else ())
        label = "--reduce mean: L and the mean gradient" if reduce else \
            "per row: L and dL/d(every input), 69 numbers a row"
        error = check_batch(ours_batch(evaluator, columns, reduce, CHUNK_LINES), hand_batch(columns, weights, reduce),
                            reduce, rows)
        if error > 1e-10:
            sys.exit(f"error: batch ({label}) disagrees with hand-written NumPy ({error:.1e}); not timing")
        medians = interleaved({"ours": lambda: ours_batch(evaluator, columns, reduce, CHUNK_LINES) and None,
                               "hand": lambda: hand_batch(columns, weights, reduce) and None}, rounds)
        ratio = medians["ours"] / medians["hand"]
        print(f"  {label} (results agree to {error:.0e})")
        print(f"    BatchEvaluator over chunks       {medians['ours'] * 1e3:8.1f} ms   "
              f"{rows / medians['ours'] / 1e6:5.2f} M rows/s")
        print(f"    hand-written NumPy, whole arrays {medians['hand'] * 1e3:8.1f} ms   "
              f"{rows / medians['hand'] / 1e6:5.2f} M rows/s")
        print(f"    ours / NumPy: {ratio:.2f}x   (target <= 1.5x)")
        if reduce:
            continue

        def chunks_dropped() -> None:  # as batch does: each chunk's results written and dropped
            for start in range(0, rows, CHUNK_LINES):
                part = {name: column[start:start + CHUNK_LINES] for name, column in columns.items()}
                evaluator.evaluate(part).columns()

        ours_peak = traced_peak(chunks_dropped)
        hand_peak = traced_peak(lambda: hand_batch(columns, weights, False))
        per_chunk = 69 * 8 * CHUNK_LINES
        print(f"    peak traced memory: ours {ours_peak / 2**20:7.1f} MiB over {rows:,} rows "
              f"({ours_peak / per_chunk:.1f}x one chunk's 69 result columns, {per_chunk / 2**20:.1f} MiB); "
              f"hand NumPy on whole arrays {hand_peak / 2**20:7.1f} MiB")
        print(f"    (a Python float per element of one chunk's results alone would be "
              f"{69 * 24 * CHUNK_LINES / 2**20:.1f} MiB more; the data columns, {3 * 8 * rows / 2**20:.1f} MiB, "
              f"are made before tracing)")


INPUTS_PROGRAM = """\
x = [0, 0, 0, 0]
y = 0
W1 = normal([16, 4], 0.5)
b1 = normal([16], 0.1)
w2 = normal([16], 0.25)
c = 0.1
h = tanh(W1 @ x + b1)
p = w2 @ h + c
L = (p - y)**2
"""


def hand_inputs_chunk(columns: list[np.ndarray], y: np.ndarray, w: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """L and dL/dx of each row of one chunk, by hand from its columns: the forward and the reverse sweep."""
    x = np.stack(columns, axis=1)
    h = np.tanh(x @ w["W1"].T + w["b1"])
    d = h @ w["w2"] + w["c"] - y
    gz = (2.0 * d)[:, None] * w["w2"] * (1.0 - h * h)
    return {"L": d * d, "dL/dx": gz @ w["W1"]}


def run_batch_inputs(rows: int, rounds: int) -> None:
    """Issue 34's in-process batch: ``BatchEvaluator`` (wrt x) over chunks of ``CHUNK_LINES``
    rows given as entry columns, as ``batch`` feeds it, against the same sweeps by hand over the
    same chunks (both stack x from its four columns, chunk by chunk)."""
    from autodiff_cli.execute.batch_evaluator import BatchEvaluator
    from autodiff_cli.execute.interpreter import input_arrays
    from autodiff_cli.files.rows.lines import CHUNK_LINES
    from autodiff_cli.language import parse

    program = parse(INPUTS_PROGRAM, "mlp_4_16_1.ad")
    arrays = input_arrays(program, {}, 0)
    weights = {name: arrays[name] for name in ("W1", "b1", "w2", "c")}
    rng = np.random.default_rng(5)
    x, y = rng.standard_normal((rows, 4)), rng.standard_normal(rows)
    columns = {**{f"x[{i}]": np.ascontiguousarray(x[:, i]) for i in range(4)}, "y": y}
    evaluator = BatchEvaluator(program, wrt=["x"])
    starts = range(0, rows, CHUNK_LINES)

    def ours() -> list[dict[str, Any]]:
        return [evaluator.evaluate({name: column[start:start + CHUNK_LINES] for name, column in columns.items()})
                .columns() for start in starts]

    def hand() -> list[dict[str, np.ndarray]]:
        return [hand_inputs_chunk([columns[f"x[{i}]"][start:start + CHUNK_LINES] for i in range(4)],
                                  y[start:start + CHUNK_LINES], weights) for start in starts]

    worst = 0.0
    for mine, theirs in zip(ours(), hand()):
        want = {"L": theirs["L"], **{f"dL/dx[{i}]": theirs["dL/dx"][:, i] for i in range(4)}}
        for name, column in want.items():
            worst = max(worst, float(np.max(np.abs(mine[name] - column) / np.maximum(1e-300, np.abs(column)))))
    if worst > 1e-10:
        sys.exit(f"error: the 4-16-1 batch disagrees with hand-written NumPy ({worst:.1e}); not timing")
    times = interleaved_times({"ours": ours, "hand": hand}, rounds)
    median = {name: statistics.median(seconds) for name, seconds in times.items()}
    print(f"\n3b. batch in process: {rows:,} rows of a 4-16-1 tanh net, L and dL/dx (5 numbers a row), chunks of "
          f"{CHUNK_LINES:,} rows; median of {rounds} (results agree to {worst:.0e})")
    print(f"    BatchEvaluator, entry columns        {median['ours'] * 1e3:8.1f} ms")
    print(f"    hand NumPy over the same chunks      {median['hand'] * 1e3:8.1f} ms")
    print(f"    ours / NumPy: {median['ours'] / median['hand']:.2f}x   (target <= 1.1x)")


def main() -> int:
    assert ARGS is not None
    header()
    began = time.perf_counter()
    if ARGS.step:
        run_step(ARGS.rounds, ARGS.steps_per_round)
    if ARGS.sizes:
        run_sizes(ARGS.size_rounds, ("float64", "float32") if ARGS.dtype == "both" else (ARGS.dtype,))
    if ARGS.moons:
        run_moons(ARGS.moons_rounds)
    if ARGS.batch:
        run_batch(ARGS.rows, ARGS.batch_rounds)
    if ARGS.batch_inputs:
        run_batch_inputs(ARGS.rows, ARGS.batch_rounds)
    print(f"\n(total {time.perf_counter() - began:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
