"""``autodiff fit`` against the loops people would write instead, as ratios measured in one run.

Two workloads (``--workload`` picks one):

* **moons**: micrograd's demo, 100 full-batch steps of MLP(2, [16, 16, 1]) on samples/moons.csv
  with the hinge loss plus L2 and the linearly falling learning rate.  Ours: the
  ``autodiff fit`` command as a whole process, and its training loop alone in this process.
  Baselines: micrograd's scalar training loop (the notebook's code) on the same data and
  starting weights, and PyTorch on the CPU in float64 where it is installed.
* **line**: linear regression on ``--rows`` rows (default 1e6), 100 full-batch steps of SGD
  (lr 0.1).  The step: ours is the training loop over the program samples/line.ad, the
  baseline a hand-written NumPy gradient-descent loop computing the same two gradients
  (target <= 1.5x).  The process: ``autodiff fit samples/line.ad --data line.csv`` against a
  NumPy script that reads the same CSV (``numpy.loadtxt``), runs the same 100 steps and writes
  the two numbers as JSON (target <= 1.5x); the CSV is written once, to a temporary directory,
  with ``repr`` of each number.  Which CSV reader ``fit`` used (Arrow's when pyarrow is
  installed, see files/rows/arrow_csv.py) is printed with it.

Runs are interleaved (ours, baseline, ours, ...) and medians reported.  micrograd takes
seconds per step, so it runs ``--micrograd-steps`` steps and its time is scaled to 100 (its
steps all build the same graph, so each costs the same); the first step's loss is checked
against ours, so both really train the same model on the same data.

    python benchmarks/bench_fit.py [--repeat 3] [--micrograd-steps 3] [--rows 1000000] [--workload line]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
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


def numpy_line(x: np.ndarray, y: np.ndarray, steps: int, lr: float) -> tuple[tuple[float, float], np.ndarray]:
    """Hand-written full-batch gradient descent on mean((w x + b - y)^2): (wall, CPU) seconds, parameters."""
    w = b = 0.0
    began, cpu = time.perf_counter(), time.process_time()
    for _ in range(steps):
        residual = w * x + b - y
        grad_w = 2.0 * np.mean(residual * x)
        grad_b = 2.0 * np.mean(residual)
        w, b = w - lr * grad_w, b - lr * grad_b
    return (time.perf_counter() - began, time.process_time() - cpu), np.array([w, b])


def ours_line(x: np.ndarray, y: np.ndarray, steps: int, lr: float) -> tuple[tuple[float, float], np.ndarray]:
    """``train`` over samples/line.ad: (wall, CPU) seconds, parameters."""
    from autodiff_cli.execute.fit import FitSettings, plan_fit, train
    from autodiff_cli.execute.objective import ProgramObjective
    from autodiff_cli.language import parse

    program = parse((SAMPLES / "line.ad").read_text(), "line.ad")
    columns = {"x": x, "y": y}
    plan = plan_fit(program, list(columns), {})
    objective = ProgramObjective(program, plan, columns)
    began, cpu = time.perf_counter(), time.process_time()
    result = train(objective, np.zeros(2), FitSettings(lr=lr, steps=steps))
    return (time.perf_counter() - began, time.process_time() - cpu), result.params


# The NumPy script of the process comparison: read the CSV, train, write the parameters.
NUMPY_SCRIPT = """
import json, sys
import numpy as np
data = np.loadtxt(sys.argv[1], delimiter=",", skiprows=1, ndmin=2)
x, y = data[:, 0], data[:, 1]
w = b = 0.0
for _ in range(100):
    residual = w * x + b - y
    grad_w = 2.0 * np.mean(residual * x)
    grad_b = 2.0 * np.mean(residual)
    w, b = w - 0.1 * grad_w, b - 0.1 * grad_b
with open(sys.argv[2], "w") as handle:
    json.dump({"w": w, "b": b}, handle)
"""


def write_line_csv(path: Path, x: np.ndarray, y: np.ndarray) -> None:
    with open(path, "w") as handle:
        handle.write("x,y\n")
        for start in range(0, len(x), 100_000):
            handle.writelines(f"{a!r},{b!r}\n" for a, b in zip(x[start:start + 100_000].tolist(),
                                                            y[start:start + 100_000].tolist()))


def timed_process(command: list[str]) -> tuple[float, float]:
    """Wall-clock and CPU seconds (user + system) of a child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def csv_reader_used() -> str:
    try:
        from autodiff_cli.files.rows.arrow_csv import arrow_csv
    except ImportError:
        return "the csv module (this tree has no Arrow reader)"
    if arrow_csv() is None:
        return "the csv module (pyarrow not installed, or AUTODIFF_ROWS_ARROW=0)"
    import pyarrow

    return f"pyarrow {pyarrow.__version__} (files/rows/arrow_csv.py)"


def line_step(x: np.ndarray, y: np.ndarray, repeat: int) -> int:
    print(f"\nline, the step: {len(x):,} rows, 100 full-batch SGD steps (lr 0.1)")
    ours, theirs = [], []
    for _ in range(repeat):
        seconds, params = ours_line(x, y, 100, 0.1)
        ours.append(seconds)
        seconds, want = numpy_line(x, y, 100, 0.1)
        theirs.append(seconds)
        if not np.allclose(params, want, rtol=1e-9):
            print(f"error: different results: ours {params}, NumPy {want}", file=sys.stderr)
            return 1
    for what, index in (("wall-clock", 0), ("CPU", 1)):
        mine, numpy_time = (statistics.median(t[index] for t in ours) / 100,
                            statistics.median(t[index] for t in theirs) / 100)
        print(f"  {what:10} training loop over line.ad {mine * 1e3:6.2f} ms/step, hand-written NumPy loop "
              f"{numpy_time * 1e3:6.2f} ms/step: {mine / numpy_time:.2f}x   (target <= 1.5x)")
    return 0


def line_process(x: np.ndarray, y: np.ndarray, repeat: int) -> int:
    print(f"\nline, the process: {len(x):,} rows from a CSV, 100 full-batch SGD steps, parameters to JSON")
    print(f"  fit reads the CSV with {csv_reader_used()}")
    with tempfile.TemporaryDirectory() as folder:
        data, ours_json, numpy_json = Path(folder, "line.csv"), Path(folder, "ours.json"), Path(folder, "numpy.json")
        write_line_csv(data, x, y)
        print(f"  line.csv: {data.stat().st_size / 1e6:.1f} MB")
        ours_command = [sys.executable, "-m", "autodiff_cli", "fit", str(SAMPLES / "line.ad"), "--data", str(data),
                        "--lr", "0.1", "--steps", "100", "-q", "-o", str(ours_json)]
        numpy_command = [sys.executable, "-c", NUMPY_SCRIPT, str(data), str(numpy_json)]
        ours, theirs = [], []
        for _ in range(repeat):
            ours.append(timed_process(ours_command))
            theirs.append(timed_process(numpy_command))
        learned, want = json.loads(ours_json.read_text()), json.loads(numpy_json.read_text())
    if not np.allclose([learned["w"], learned["b"]], [want["w"], want["b"]], rtol=1e-9):
        print(f"error: different results: ours {learned}, NumPy {want}", file=sys.stderr)
        return 1
    for what, index in (("wall-clock", 0), ("CPU (user + system)", 1)):
        mine, numpy_time = statistics.median(t[index] for t in ours), statistics.median(t[index] for t in theirs)
        print(f"  {what:20} autodiff fit {mine:6.2f} s, NumPy script {numpy_time:6.2f} s: "
              f"{mine / numpy_time:.2f}x   (target <= 1.5x)")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="interleaved runs of each (default 3)")
    parser.add_argument("--micrograd-steps", type=int, default=3, help="micrograd steps timed (default 3)")
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows of the line workload (default 1e6)")
    parser.add_argument("--workload", choices=("all", "moons", "line"), default="all",
                        help="which workload to run (default all)")
    args = parser.parse_args()
    print(f"load average {' '.join(f'{load:.2f}' for load in os.getloadavg())}")
    if args.workload in ("all", "moons") and moons(args) != 0:
        return 1
    if args.workload in ("all", "line"):
        x, y = line_data(args.rows)
        if line_step(x, y, args.repeat) != 0 or line_process(x, y, args.repeat) != 0:
            return 1
    return 0


def moons(args: argparse.Namespace) -> int:
    """The moons workload: the process, the training loop, micrograd, PyTorch where installed."""
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

    return 0


if __name__ == "__main__":
    sys.exit(main())
