"""micrograd's moons demo through autodiff_cli's Python API: an MLP learns to separate two moons.

    python samples/moons.py            # 100 steps, about 10 s; prints the loss and accuracy
    python samples/moons.py --steps 20

The model, loss and schedule are the notebook's: MLP(2, [16, 16, 1]) started from
random.seed(1337), the max-margin (hinge) loss plus 1e-4 times the squared parameters,
and full-batch SGD with the learning rate falling linearly from 1.0 to 0.1 over 100
steps.  It ends at 100% training accuracy.  The same training from the command line:

    autodiff fit samples/moons.ad --data samples/moons.csv --lr 1 --lr-schedule linear --steps 100
"""

from __future__ import annotations

import argparse
import csv
import random
from pathlib import Path

from autodiff_cli.nn import MLP, Value, no_grad
from autodiff_cli.optim import SGD, scheduled_lr

DATA = Path(__file__).resolve().parent / "moons.csv"
ALPHA = 1e-4


def read_moons(path: Path = DATA) -> tuple[list[list[float]], list[int]]:
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    return [[float(r["x1"]), float(r["x2"])] for r in rows], [int(r["y"]) for r in rows]


def loss_and_accuracy(model: MLP, points: list[list[float]], labels: list[int]) -> tuple[Value, float]:
    scores = [model(point) for point in points]
    hinges = [(1 - label * score).relu() for label, score in zip(labels, scores)]
    data_loss = sum(hinges) * (1.0 / len(hinges))
    reg_loss = ALPHA * sum(p * p for p in model.parameters())
    correct = sum((label > 0) == (score.data > 0) for label, score in zip(labels, scores))
    return data_loss + reg_loss, correct / len(labels)


def train(steps: int = 100, seed: int = 1337, report_every: int = 10) -> tuple[MLP, float]:
    """Train the demo model; returns it and its final training accuracy."""
    points, labels = read_moons()
    random.seed(seed)
    model = MLP(2, [16, 16, 1])
    optimizer = SGD(model.parameters(), lr=1.0)
    for step in range(steps):
        optimizer.lr = scheduled_lr("linear", 1.0, 0.1, step, steps)
        loss, accuracy = loss_and_accuracy(model, points, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if report_every and (step % report_every == 0 or step == steps - 1):
            print(f"step {step:3d}  loss {loss.data:.6f}  accuracy {accuracy:.0%}")
    with no_grad():  # only the scores are needed now: no graph is kept
        final_loss, final_accuracy = loss_and_accuracy(model, points, labels)
    print(f"after {steps} steps: loss {final_loss.data:.6f}, training accuracy {final_accuracy:.0%}")
    return model, final_accuracy


def main() -> None:
    parser = argparse.ArgumentParser(description="Train micrograd's moons demo with autodiff_cli.nn.")
    parser.add_argument("--steps", type=int, default=100)
    args = parser.parse_args()
    train(args.steps)


if __name__ == "__main__":
    main()
