"""The digits sample: the converter's files as documented, and the MLP of digits.ad trained with the
settings its header gives reaching >= 95% held-out accuracy, measured by an independent NumPy
forward pass and argmax as well as by the program's own `correct`."""

from __future__ import annotations

import csv
import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from autodiff_cli.execute.fit import FitSettings, train
from autodiff_cli.execute.interpreter import run_forward
from autodiff_cli.execute.objective import TensorObjective, starting_parameters
from autodiff_cli.language import parse

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
HEADER = [f"x[{i}]" for i in range(64)] + ["label"]
PARAMETERS = ["W1", "b1", "W2", "b2"]
BATCHED = frozenset({"x", "label"})
SOURCE = (SAMPLES / "digits.ad").read_text()


def _rows(name: str) -> tuple[list[str], list[list[str]]]:
    with open(SAMPLES / name, newline="", encoding="utf-8") as file:
        header, *rows = csv.reader(file)
    return header, rows


def _data(name: str) -> dict[str, Any]:
    _, rows = _rows(name)
    table = np.array(rows, dtype=float)
    return {"x": table[:, :64], "label": table[:, 64]}


def _converter() -> ModuleType:
    spec = importlib.util.spec_from_file_location("digits_converter", SAMPLES / "digits.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --- the files ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name, count", [("digits_train.csv", 1437), ("digits_test.csv", 360)], ids=["train", "test"])
def test_the_files_have_their_documented_shape(name: str, count: int) -> None:
    header, rows = _rows(name)
    assert header == HEADER
    assert len(rows) == count and all(len(row) == 65 for row in rows)
    for row in rows:
        # integers written as such (no "3.0"), pixels 0..16 unscaled, labels 0..9
        assert all(re.fullmatch(r"0|[1-9][0-9]?", cell) for cell in row), row
        assert all(0 <= int(cell) <= 16 for cell in row[:64])
        assert 0 <= int(row[64]) <= 9
    assert max(int(cell) for row in rows for cell in row[:64]) == 16  # not scaled


def test_every_digit_is_in_both_splits_in_about_the_same_share() -> None:
    train = [int(row[64]) for row in _rows("digits_train.csv")[1]]
    test = [int(row[64]) for row in _rows("digits_test.csv")[1]]
    assert len(train) + len(test) == 1797  # scikit-learn's copy of the UCI test set, all of it
    for digit in range(10):
        held_out, total = test.count(digit), train.count(digit) + test.count(digit)
        assert 170 <= total <= 185
        assert abs(held_out - total * 360 / 1797) < 1  # stratified: 20% of each digit, rounded


def test_the_split_is_seeded_stratified_and_adds_up() -> None:
    split = _converter().split
    labels = [i * 7 % 10 for i in range(1797)]
    train, test = split(labels)
    assert (train, test) == split(labels)  # the same on every run
    assert len(test) == 360 and sorted(train + test) == list(range(1797))
    assert train == sorted(train) and test == sorted(test)  # the data set's order is kept
    assert {labels[i] for i in test} == set(range(10))
    assert split(labels, seed=1) != (train, test)


def test_the_converter_rewrites_the_same_bytes(tmp_path: Path) -> None:
    pytest.importorskip("sklearn", reason="the converter reads scikit-learn's copy of the data")
    subprocess.run([sys.executable, str(SAMPLES / "digits.py"), "--out", str(tmp_path)], check=True,
                   capture_output=True)
    for name in ("digits_train.csv", "digits_test.csv"):
        assert (tmp_path / name).read_bytes() == (SAMPLES / name).read_bytes(), name


def test_the_licence_note_names_the_source_and_cc_by() -> None:
    note = (SAMPLES / "DIGITS-LICENSE.md").read_text()
    assert "CC BY 4.0" in note and "Alpaydin" in note and "Kaynak" in note and "10.24432/C50P49" in note
    docstring = _converter().__doc__
    assert docstring is not None and "CC BY 4.0" in docstring and "Alpaydin" in docstring


# --- the program ---------------------------------------------------------------------------------------


def _documented_settings() -> FitSettings:
    """The settings of the fit command in digits.ad's header, so that the header cannot drift."""
    command = next(line for line in SOURCE.splitlines() if "autodiff fit samples/digits.ad" in line)
    assert "--data samples/digits_train.csv" in command

    def option(name: str) -> str:
        found = re.search(rf"--{name} (\S+)", command)
        assert found, name
        return found.group(1)

    return FitSettings(optimizer=option("optimizer"), lr=float(option("lr")), steps=int(option("steps")),
                       batch_size=int(option("batch-size")), seed=int(option("seed")))


def test_the_program_minimises_L_over_its_four_weights() -> None:
    program = parse(SOURCE, "digits.ad")
    assert program.result == "L"  # fit's default output
    assert [v.name for v in program.inputs] == ["x", "label", *PARAMETERS]
    assert _documented_settings().optimizer == "adam"


def _numpy_logits(params: dict[str, Any], x: Any) -> Any:
    """The network, written again in NumPy: relu(W1 x/16 + b1), then W2 h + b2, for each row."""
    h = np.maximum(x / 16 @ params["W1"].T + params["b1"], 0.0)
    return h @ params["W2"].T + params["b2"]


@pytest.fixture(scope="module")
def trained() -> dict[str, Any]:
    program = parse(SOURCE, "digits.ad")
    settings = _documented_settings()
    layout, start = starting_parameters(program, PARAMETERS, {}, "normal", settings.seed)
    result = train(TensorObjective(program, "L", layout, {}, _data("digits_train.csv")), start, settings)
    assert result.reason == "steps" and result.params is not None
    return {"program": program, "params": {k: np.array(v) for k, v in layout.unpack(result.params).items()}}


@pytest.mark.parametrize("name, least", [("digits_train.csv", 0.99), ("digits_test.csv", 0.95)],
                         ids=["train", "held-out"])
def test_training_as_documented_reaches_the_accuracy(trained: dict[str, Any], name: str, least: float) -> None:
    data = _data(name)
    run = run_forward(trained["program"], {**trained["params"], **data}, batched=BATCHED)
    logits = _numpy_logits(trained["params"], data["x"])
    np.testing.assert_allclose(run.value("z"), logits, rtol=1e-9, atol=1e-9)
    top = np.sort(logits, axis=1)
    assert np.all(top[:, -1] - top[:, -2] > 1e-6)  # no ties: argmax's choice among them cannot matter
    right = np.argmax(logits, axis=1) == data["label"]
    accuracy = float(np.mean(right))
    assert accuracy >= least
    correct = run.value("correct")
    assert correct.shape == (len(right),)
    assert np.array_equal(correct, right.astype(float))  # row by row, so the means agree exactly
    assert float(np.mean(correct)) == accuracy


def test_correct_counts_a_tie_for_the_top_as_right() -> None:
    # W2 = 0 makes the logits b2 exactly: classes 1 and 2 tie for the top
    program = parse(SOURCE, "digits.ad")
    logits = np.array([0.0, 3.0, 3.0, 1.0, -2.0, 0.5, 2.999999, 0.0, 0.0, 0.0])
    inputs = {"x": np.zeros((10, 64)), "label": np.arange(10.0), "W1": np.zeros((32, 64)), "b1": np.zeros(32),
              "W2": np.zeros((10, 32)), "b2": logits}
    run = run_forward(program, inputs, batched=BATCHED)
    assert run.value("correct").tolist() == [0, 1, 1, 0, 0, 0, 0, 0, 0, 0]
