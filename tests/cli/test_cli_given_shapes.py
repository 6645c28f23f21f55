"""A value given for an input whose default has a shape must fit that shape (issue 35): one that
broadcasts differently (fewer axes, or a size-1 axis where the default's is not) is refused, at
the place it was given, naming both shapes and the fix; --set, --values, .npy, columns of rows,
and fit."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from autodiff_cli.cli import main

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
MATRIX = str(SAMPLES / "regression_matrix.ad")
MOONS = str(SAMPLES / "moons_mlp.ad")


def run(runner, *args):
    return runner.invoke(main, [str(arg) for arg in args])


def error_of(result) -> str:
    assert result.exit_code == 1 and "Traceback" not in result.stderr, (result.stderr, result.exception)
    return result.stderr


def regression_loss(W: np.ndarray) -> float:
    """L of samples/regression_matrix.ad, by NumPy from the sample's own X and Y."""
    text = (SAMPLES / "regression_matrix.ad").read_text()
    namespace: dict = {}
    for name in ("X", "Y"):
        start = text.index(f"\n{name} = ") + len(name) + 4
        end = text.index("]]", start) + 2
        namespace[name] = np.array(json.loads(text[start:end]))
    return float(np.mean((namespace["X"] @ W - namespace["Y"]) ** 2))


def test_a_vector_for_a_column_is_refused_with_the_column_written_out(runner) -> None:
    said = error_of(run(runner, "eval", MATRIX, "--set", "W=[1, 2]"))
    assert said.startswith(f"{MATRIX}:23:1: error: the value given for W by --set has shape [2], but W's default "
                           "has shape [2, 1]")
    assert "hint: write it as --set W='[[1], [2]]'" in said
    # The fix gives the loss NumPy computes (15.08), not the broadcast 22.70.
    fixed = run(runner, "eval", MATRIX, "--set", "W=[[1], [2]]", "--format", "json")
    assert fixed.exit_code == 0, fixed.stderr
    assert json.loads(fixed.stdout)["value"] == pytest.approx(regression_loss(np.array([[1.0], [2.0]])), rel=1e-12)
    assert regression_loss(np.array([[1.0], [2.0]])) == pytest.approx(15.08, abs=0.01)


def test_one_row_for_sixteen_is_refused(runner) -> None:
    said = error_of(run(runner, "eval", MOONS, "--set", "W1=[[1, 2]]"))
    assert "the value given for W1 by --set has shape [1, 2], but W1's default has shape [16, 2] (axis 0 of size 1 " \
           "where it has 16" in said
    line = next(n for n, text in enumerate(Path(MOONS).read_text().splitlines(), 1) if text.startswith("W1 ="))
    assert f"{MOONS}:{line}:1:" in said and "hint: give W1 a value of shape [16, 2]" in said


def test_a_number_for_a_vector_is_refused_with_an_example(runner) -> None:
    said = error_of(run(runner, "eval", MOONS, "--set", "x=1"))
    assert "the value given for x by --set has shape [], but x's default has shape [2]" in said
    assert "hint: give x a value of shape [2], e.g. --set x='[" in said  # the default's own numbers


def test_other_sizes_that_broadcasting_does_not_stretch_are_still_taken(runner, tmp_path) -> None:
    # 3 data rows where the default has 8: the program's own shape rules decide.
    X = np.array([[1.0, 1.0], [2.0, 1.0], [3.0, 1.0]])
    Y = np.array([[2.0], [3.0], [5.0]])
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "Y.npy", Y)
    result = run(runner, "eval", MATRIX, "--set", f"X={tmp_path / 'X.npy'}", "--set", f"Y={tmp_path / 'Y.npy'}",
                 "--set", "W=[[1], [0.5]]", "--format", "json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["value"] == pytest.approx(float(np.mean((X @ [[1], [0.5]] - Y) ** 2)))


def test_a_npy_file_of_the_right_numbers_in_the_wrong_shape_says_how_to_reshape(runner, tmp_path) -> None:
    np.save(tmp_path / "w1.npy", np.arange(32.0))
    said = error_of(run(runner, "eval", MOONS, "--set", f"W1={tmp_path / 'w1.npy'}"))
    assert "has shape [32], but W1's default has shape [16, 2]" in said
    assert "np.save(path, array.reshape(16, 2))" in said


def test_a_values_file_is_refused_at_its_key(runner, tmp_path) -> None:
    values = tmp_path / "v.json"
    values.write_text('{\n  "W": [1, 2]\n}\n')
    said = error_of(run(runner, "eval", MATRIX, "--values", values))
    assert said.startswith(f"{values}:2:3: error: the value given for W has shape [2], but W's default has "
                           "shape [2, 1]")
    assert f"note: W is declared at {MATRIX}:23:1: W = [[1], [-1]]" in said
    assert 'hint: write it as "W": [[1], [2]]' in said
    # --set for the same name replaces the file's value, and is the one checked.
    assert run(runner, "eval", MATRIX, "--values", values, "--set", "W=[[1], [2]]").exit_code == 0


def test_fit_refuses_a_starting_value_of_the_wrong_shape(runner, tmp_path) -> None:
    said = error_of(run(runner, "fit", MOONS, "--data", SAMPLES / "moons_xy.csv", "--steps", "1",
                        "--set", "W3=[1, 2]", "-q"))
    assert "the value given for W3 by --set has shape [2], but W3's default has shape [1, 16]" in said


@pytest.mark.parametrize("command", ["batch", "fit"])
def test_a_column_of_numbers_for_a_vector_input_is_refused(runner, tmp_path, command) -> None:
    rows = tmp_path / "rows.csv"
    rows.write_text("x,y\n0.5,1\n-0.5,-1\n")
    args = ["--steps", "1", "-q"] if command == "fit" else []
    said = error_of(run(runner, command, MOONS, *(["--data", rows] if command == "fit" else [rows]), *args))
    assert "error: the column x holds one number a row, but x's default has shape [2]" in said
    assert "hint: give x by one column per entry: x[0], x[1]" in said
