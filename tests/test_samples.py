"""The generated samples: reproducible byte for byte, and moons.ad is micrograd's demo network."""

from __future__ import annotations

import math
import random
import subprocess
import sys
from pathlib import Path

import micrograd.nn
import pytest

from autodiff_cli.execute import evaluate
from autodiff_cli.language import parse

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
GENERATED = ["line.csv", "logistic.csv", "decay.csv", "moons.csv", "moons.ad", "line_ones.csv", "moons_xy.csv"]


def test_generator_reproduces_every_committed_file(tmp_path: Path) -> None:
    subprocess.run([sys.executable, str(SAMPLES / "generate.py"), "--out", str(tmp_path)], check=True,
                   capture_output=True)
    for name in GENERATED:
        assert (tmp_path / name).read_bytes() == (SAMPLES / name).read_bytes(), name


def _rows(name: str) -> list[list[float]]:
    lines = (SAMPLES / name).read_text().splitlines()
    return [[float(x) for x in line.split(",")] for line in lines[1:]]


@pytest.mark.parametrize("name, columns, count", [("line.csv", 2, 200), ("logistic.csv", 3, 200),
                                                  ("decay.csv", 2, 60), ("moons.csv", 3, 100)],
                         ids=["line", "logistic", "decay", "moons"])
def test_data_files_have_their_documented_shape(name: str, columns: int, count: int) -> None:
    rows = _rows(name)
    assert len(rows) == count and all(len(r) == columns and all(map(math.isfinite, r)) for r in rows)


def test_moons_are_balanced_and_labelled_minus_one_or_one() -> None:
    labels = [row[2] for row in _rows("moons.csv")]
    assert labels.count(-1.0) == labels.count(1.0) == 50


def test_moons_program_is_micrograds_network_at_its_starting_point() -> None:
    program = parse((SAMPLES / "moons.ad").read_text(), "moons.ad")
    data = ["x1", "x2", "y"]  # they default to the first row of moons.csv
    parameters = [v for v in program.inputs if v.name not in data]
    assert len(parameters) == 337
    assert [v.default for v in program.inputs if v.name in data] == _rows("moons.csv")[0]
    random.seed(1337)
    model = micrograd.nn.MLP(2, [16, 16, 1])
    assert [v.default for v in parameters] == [p.data for p in model.parameters()]
    for x1, x2, label in _rows("moons.csv")[:5]:
        nodes = evaluate(program, {"x1": x1, "x2": x2, "y": label}, backward=False).nodes
        score = model([x1, x2])
        # the same sums in the same order: the same bits
        assert nodes["score"].data == score.data
        hinge = (1 + -label * score).relu()
        reg = 1e-4 * sum(p * p for p in model.parameters())
        assert nodes["loss"].data == (hinge + reg).data
