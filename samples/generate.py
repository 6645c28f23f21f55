"""Write the data files of the `autodiff fit` samples, and the moons network as a program.

    python samples/generate.py            # rewrites the files next to this script
    python samples/generate.py --out DIR  # writes them somewhere else (the tests compare)

Everything is drawn from seeded generators of Python's standard library (normal
numbers by the Box-Muller transform of ``random()``, whose sequence Python keeps the
same across versions) and printed with ``repr``, so the files are the same bytes on
every machine.  No scikit-learn and no NumPy needed.

Files:

* ``line.csv``      x, y: y = 2.5 x - 1.25 plus normal noise (sd 0.3), 200 rows;
* ``logistic.csv``  x1, x2, y: two overlapping normal clouds labelled 0 and 1, 200 rows;
* ``decay.csv``     t, y: y = 3 exp(-0.8 t) + 0.5 plus noise (sd 0.02), 60 rows;
* ``moons.csv``     x1, x2, y: the two-moons set of micrograd's demo, 100 rows, y = -1 or 1;
* ``moons.ad``      micrograd's demo network, MLP(2, [16, 16, 1]), with its hinge loss
  plus L2: 337 parameters, each declared with the starting value micrograd's MLP
  draws after ``random.seed(1337)``;
* ``line_ones.csv`` the rows of ``line.csv`` for tensor programs: the vector input
  ``x = [x, 1]`` (columns ``x[0]``, ``x[1]``; a column of ones, as in the minigrad post)
  and ``y``;
* ``moons_xy.csv``  the rows of ``moons.csv`` with the point as the vector ``x``
  (columns ``x[0]``, ``x[1]``) and the label ``y``.
"""

from __future__ import annotations

import argparse
import math
import random
from collections.abc import Iterator, Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent

# The seed of micrograd's demo notebook, used for the network's starting weights.
MICROGRAD_SEED = 1337
MOONS_SIZES = (2, 16, 16, 1)
L2_ALPHA = 1e-4


def normal(rng: random.Random, sd: float = 1.0) -> float:
    """One normal number from two uniform ones (Box-Muller): the same on every Python version."""
    u1 = 1.0 - rng.random()  # in (0, 1]: log(u1) is finite
    u2 = rng.random()
    return sd * math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)


def csv_text(header: Sequence[str], rows: list[Sequence[float]]) -> str:
    lines = [",".join(header)] + [",".join(_number(x) for x in row) for row in rows]
    return "\n".join(lines) + "\n"


def _number(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


# --- the data sets -----------------------------------------------------------------------


def line_rows(n: int = 200, seed: int = 1) -> list[tuple[float, float]]:
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        x = rng.uniform(-2.0, 2.0)
        rows.append((x, 2.5 * x - 1.25 + normal(rng, 0.3)))
    return rows


def logistic_rows(n: int = 200, seed: int = 2) -> list[tuple[float, float, int]]:
    """Two normal clouds (sd 1) centred at (-1, -0.5) and (1, 0.5): they overlap, so the
    maximum-likelihood weights are finite."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        label = i % 2
        centre = (1.0, 0.5) if label else (-1.0, -0.5)
        rows.append((centre[0] + normal(rng), centre[1] + normal(rng), label))
    return rows


def decay_rows(n: int = 60, seed: int = 3) -> list[tuple[float, float]]:
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        t = 5.0 * i / (n - 1)
        rows.append((t, 3.0 * math.exp(-0.8 * t) + 0.5 + normal(rng, 0.02)))
    return rows


def moons_rows(n: int = 100, noise: float = 0.1, seed: int = 0) -> list[tuple[float, float, int]]:
    """Two interleaving half circles, as scikit-learn's make_moons defines them, labels -1 and 1.

    The upper moon is the half circle (cos s, sin s) for s in [0, pi], the lower one
    (1 - cos s, 0.5 - sin s); points are spread evenly along each, shuffled, and moved
    by normal noise of standard deviation ``noise``.
    """
    rng = random.Random(seed)
    upper = n // 2
    lower = n - upper
    points = [(math.cos(math.pi * i / (upper - 1)), math.sin(math.pi * i / (upper - 1)), -1)
              for i in range(upper)]
    points += [(1.0 - math.cos(math.pi * i / (lower - 1)), 0.5 - math.sin(math.pi * i / (lower - 1)), 1)
               for i in range(lower)]
    rng.shuffle(points)
    return [(x + normal(rng, noise), y + normal(rng, noise), label) for x, y, label in points]


# --- micrograd's demo network as a program -------------------------------------------------


def mlp_program(sizes: Sequence[int] = MOONS_SIZES, seed: int = MICROGRAD_SEED, alpha: float = L2_ALPHA) -> str:
    """The program of micrograd's moons demo: one row's hinge loss plus alpha times the squared weights.

    Weights are drawn as micrograd's ``MLP(2, [16, 16, 1])`` draws them after
    ``random.seed(seed)`` (``uniform(-1, 1)`` per weight, neuron by neuron, layer by
    layer; biases 0), and every sum is written in micrograd's order, bias first, so the
    program computes what the notebook computes.  Names: ``w2_3_1`` is layer 2,
    neuron 3, input 1; ``b2_3`` its bias; ``h2_3`` its output.
    """
    rng = random.Random(seed)
    layers = len(sizes) - 1
    declarations: list[str] = []
    statements: list[str] = []
    parameters: list[str] = []
    inputs = [f"x{i + 1}" for i in range(sizes[0])]
    for layer in range(1, layers + 1):
        outputs = []
        last = layer == layers
        for neuron in range(1, sizes[layer] + 1):
            weights = [f"w{layer}_{neuron}_{i}" for i in range(1, len(inputs) + 1)]
            bias = f"b{layer}_{neuron}"
            declarations.append("; ".join(f"{w} = {rng.uniform(-1, 1)!r}" for w in weights) + f"; {bias} = 0")
            parameters += weights + [bias]
            total = " + ".join([bias] + [f"{w}*{x}" for w, x in zip(weights, inputs)])
            name = "score" if last and sizes[layer] == 1 else f"h{layer}_{neuron}"
            statements.append(f"{name} = {total}" if last else f"{name} = relu({total})")
            outputs.append(name)
        inputs = outputs
    squares = " + ".join(f"{p}*{p}" for p in parameters)
    header = [
        "# micrograd's moons demo as a program: MLP(2, [16, 16, 1]) with relu hidden layers,",
        "# one row's hinge loss plus L2 regularisation.  Written by samples/generate.py; do not edit.",
        "#",
        "#   autodiff fit samples/moons.ad --data samples/moons.csv --lr 1 --lr-schedule linear --steps 100",
        "#",
        f"# Inputs x1, x2 and the label y (-1 or 1) come from the data; the {len(parameters)} parameters",
        f"# start where micrograd's MLP starts after random.seed({seed}).",
        "",
        "# x1, x2 and y default to the first row of moons.csv, so that eval and graph show data",
        "x1 = {}; x2 = {}; y = {}".format(*(_number(v) for v in moons_rows()[0])),
        "",
        "# parameters: w<layer>_<neuron>_<input> and b<layer>_<neuron>",
    ]
    body = ["", "# the network"] + statements + [
        "",
        "# max-margin loss for this row, plus alpha times the sum of squared parameters",
        "hinge = relu(1 - y*score)",
        f"loss = hinge + {alpha!r}*({squares})",
    ]
    return "\n".join(header + declarations + body) + "\n"


def files() -> Iterator[tuple[str, str]]:
    yield "line.csv", csv_text(["x", "y"], line_rows())
    yield "logistic.csv", csv_text(["x1", "x2", "y"], logistic_rows())
    yield "decay.csv", csv_text(["t", "y"], decay_rows())
    yield "moons.csv", csv_text(["x1", "x2", "y"], moons_rows())
    yield "moons.ad", mlp_program()
    yield "line_ones.csv", csv_text(["x[0]", "x[1]", "y"], [(x, 1, y) for x, y in line_rows()])
    yield "moons_xy.csv", csv_text(["x[0]", "x[1]", "y"], moons_rows())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=HERE, help="directory to write to (default: samples/)")
    args = parser.parse_args()
    for name, text in files():
        (args.out / name).write_text(text, encoding="utf-8", newline="\n")
        print(f"wrote {args.out / name}")


if __name__ == "__main__":
    main()
