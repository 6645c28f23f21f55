"""``autodiff fit`` against the loops people would write instead, as ratios measured in one run.

Two workloads:

* **moons**: micrograd's demo, 100 full-batch steps of MLP(2, [16, 16, 1]) on samples/moons.csv
  with the hinge loss plus L2 and the linearly falling learning rate.  Ours: the
  ``autodiff fit`` command as a whole process, and its training loop alone in this process.
  Baselines: micrograd's scalar training loop (the notebook's code) on the same data and
  starting weights, and PyTorch on the CPU in float64 where it is installed.
* **line**: linear regression on ``--rows`` rows (default 1e6), 100 full-batch steps of SGD.
  Ours: the training loop over the program samples/line.ad.  Baseline: a hand-written
  NumPy gradient-descent loop computing the same two gradients.

Runs are interleaved (ours, baseline, ours, ...) and medians reported.  micrograd takes
seconds per step, so it runs ``--micrograd-steps`` steps and its time is scaled to 100 (its
steps all build the same graph, so each costs the same); the first step's loss is checked
against ours, so both really train the same model on the same data.

    python benchmarks/bench_fit.py [--repeat 3] [--micrograd-steps 3] [--rows 1000000]
"""

from __future__ import annotations

import argparse
import csv
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "samples"
MOONS_ARGS = ["--lr", "1", "--lr-schedule", "linear", "--steps", "100"]
ALPHA = 1e-4


def read_moons() -> tuple[list[list[float]], list[float]]:
    with open(SAMPLES / "moons.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    return [[float(r["x1"]), float(r["x2"])] for r in rows], [float(r["y"]) for r in rows]


# --- moons: ours -------------------------------------------------------------------------------


def ours_cli_moons() -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "autodiff_cli", "fit", str(SAMPLES / "moons.ad"), "--data", str(SAMPLES / "moons.csv"),
                    *MOONS_ARGS, "-q", "-o", "/dev/null"], check=True)
    return time.perf_counter() - start


def ours_train_moons() -> tuple[float, float]:
    """The training loop alone (program parsed and data read beforehand); and the first loss."""
    from autodiff_cli.execute.fit import FitSettings, plan_fit, train
    from autodiff_cli.execute.objective import ProgramObjective
    from autodiff_cli.language import parse

    program = parse((SAMPLES / "moons.ad").read_text(), "moons.ad")
    data = np.loadtxt(SAMPLES / "moons.csv", delimiter=",", skiprows=1)
    columns = {"x1": data[:, 0], "x2": data[:, 1], "y": data[:, 2]}
    plan = plan_fit(program, list(columns), {})
    objective = ProgramObjective(program, plan, columns)
    start = np.array([plan.start[name] for name in plan.parameters])
    settings = FitSettings(lr=1.0, lr_schedule="linear", final_lr=0.1, steps=100)
    began = time.perf_counter()
    result = train(objective, start, settings)
    return time.perf_counter() - began, result.history[0].loss


# --- moons: micrograd and PyTorch ------------------------------------------------------------------


def micrograd_moons(steps: int) -> tuple[float, float]:
    """micrograd's notebook loop for ``steps`` steps: seconds, and the first step's loss."""
    from micrograd.engine import Value
    from micrograd.nn import MLP

    points, labels = read_moons()
    random.seed(1337)
    model = MLP(2, [16, 16, 1])
    first = None
    began = time.perf_counter()
    for k in range(steps):
        inputs = [list(map(Value, p)) for p in points]
        scores = list(map(model, inputs))
        losses = [(1 + -y * s).relu() for y, s in zip(labels, scores)]
        data_loss = sum(losses) * (1.0 / len(losses))
        reg_loss = ALPHA * sum(p * p for p in model.parameters())
        total = data_loss + reg_loss
        model.zero_grad()
        total.backward()
        learning_rate = 1.0 - 0.9 * k / 100
        for p in model.parameters():
            p.data -= learning_rate * p.grad
        if first is None:
            first = total.data
    return time.perf_counter() - began, float(first)


def torch_moons() -> tuple[float, float] | None:
    """The same model, loss and schedule in PyTorch (CPU, float64): seconds for 100 steps, first loss."""
    try:
        import torch
    except ImportError:
        return None
    from micrograd.nn import MLP

    points, labels = read_moons()
    random.seed(1337)
    reference = MLP(2, [16, 16, 1])  # only for its starting weights
    layers = []
    for layer in reference.layers:
        linear = torch.nn.Linear(len(layer.neurons[0].w), len(layer.neurons), dtype=torch.float64)
        with torch.no_grad():
            linear.weight.copy_(torch.tensor([[w.data for w in n.w] for n in layer.neurons], dtype=torch.float64))
            linear.bias.zero_()
        layers.append(linear)
    model = torch.nn.Sequential(layers[0], torch.nn.ReLU(), layers[1], torch.nn.ReLU(), layers[2])
    x = torch.tensor(points, dtype=torch.float64)
    y = torch.tensor(labels, dtype=torch.float64)
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    scheduler = torch.optim.lr_scheduler.LinearLR(optimizer, 1.0, 0.1, total_iters=100)
    first = None
    began = time.perf_counter()
    for _ in range(100):
        scores = model(x).squeeze(1)
        loss = torch.relu(1 - y * scores).mean() + ALPHA * sum((p * p).sum() for p in model.parameters())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        if first is None:
            first = loss.item()
    return time.perf_counter() - began, float(first)


# --- linear regression on many rows --------------------------------------------------------------


def line_data(rows: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    x = rng.uniform(-2, 2, rows)
    return x, 2.5 * x - 1.25 + rng.normal(0, 0.3, rows)


def numpy_line(x: np.ndarray, y: np.ndarray, steps: int, lr: float) -> tuple[float, np.ndarray]:
    """Hand-written full-batch gradient descent on mean((w x + b - y)^2)."""
    w = b = 0.0
    began = time.perf_counter()
    for _ in range(steps):
        residual = w * x + b - y
        grad_w = 2.0 * np.mean(residual * x)
        grad_b = 2.0 * np.mean(residual)
        w, b = w - lr * grad_w, b - lr * grad_b
    return time.perf_counter() - began, np.array([w, b])


def ours_line(x: np.ndarray, y: np.ndarray, steps: int, lr: float) -> tuple[float, np.ndarray]:
    from autodiff_cli.execute.fit import FitSettings, plan_fit, train
    from autodiff_cli.execute.objective import ProgramObjective
    from autodiff_cli.language import parse

    program = parse((SAMPLES / "line.ad").read_text(), "line.ad")
    columns = {"x": x, "y": y}
    plan = plan_fit(program, list(columns), {})
    objective = ProgramObjective(program, plan, columns)
    began = time.perf_counter()
    result = train(objective, np.zeros(2), FitSettings(lr=lr, steps=steps))
    return time.perf_counter() - began, result.params


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="interleaved runs of each (default 3)")
    parser.add_argument("--micrograd-steps", type=int, default=3, help="micrograd steps timed (default 3)")
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows of the line workload (default 1e6)")
    args = parser.parse_args()

    print("moons: MLP(2, [16, 16, 1]), 100 rows, 100 full-batch SGD steps")
    cli, loop, micro, torch_times = [], [], [], []
    first_losses = {}
    for _ in range(args.repeat):
        cli.append(ours_cli_moons())
        seconds, first_losses["ours"] = ours_train_moons()
        loop.append(seconds)
        seconds, first_losses["micrograd"] = micrograd_moons(args.micrograd_steps)
        micro.append(seconds * 100 / args.micrograd_steps)
        measured = torch_moons()
        if measured is not None:
            torch_times.append(measured[0])
            first_losses["torch"] = measured[1]
    for name, loss in first_losses.items():
        if abs(loss - first_losses["ours"]) > 1e-9 * abs(loss):
            print(f"error: the first loss differs: ours {first_losses['ours']!r}, {name} {loss!r}", file=sys.stderr)
            return 1
    rows = [("autodiff fit (whole process)", statistics.median(cli)),
            ("autodiff fit's training loop", statistics.median(loop)),
            (f"micrograd (x100/{args.micrograd_steps} steps)", statistics.median(micro))]
    if torch_times:
        rows.append(("PyTorch CPU float64", statistics.median(torch_times)))
    for name, seconds in rows:
        print(f"  {name:38} {seconds:9.3f} s")
    print(f"  micrograd / autodiff fit (process): {statistics.median(micro) / statistics.median(cli):8.1f}x"
          "   (target >= 50x)")
    print(f"  micrograd / training loop:          {statistics.median(micro) / statistics.median(loop):8.1f}x")
    if torch_times:
        print(f"  PyTorch / training loop:            {statistics.median(torch_times) / statistics.median(loop):8.2f}x"
              "   (above 1: ours is faster)")
    else:
        print("  PyTorch: not installed, skipped")

    print(f"\nline: {args.rows:,} rows, 100 full-batch SGD steps (lr 0.1)")
    x, y = line_data(args.rows)
    ours, theirs = [], []
    for _ in range(args.repeat):
        seconds, params = ours_line(x, y, 100, 0.1)
        ours.append(seconds)
        seconds, want = numpy_line(x, y, 100, 0.1)
        theirs.append(seconds)
        if not np.allclose(params, want, rtol=1e-9):
            print(f"error: different results: ours {params}, NumPy {want}", file=sys.stderr)
            return 1
    per_step_ours, per_step_numpy = statistics.median(ours) / 100, statistics.median(theirs) / 100
    print(f"  training loop over line.ad: {per_step_ours * 1e3:8.2f} ms/step")
    print(f"  hand-written NumPy loop:    {per_step_numpy * 1e3:8.2f} ms/step")
    print(f"  ratio: {per_step_ours / per_step_numpy:.2f}x the NumPy loop's time   (target <= 2x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
