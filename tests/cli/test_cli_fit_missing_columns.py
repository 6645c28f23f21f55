"""`autodiff fit` when the data lacks a column the program's loss compares with: an input no column
gives is learned, so a missing label column used to make fit learn the label (y = prediction,
a loss of 0) and say nothing.  An input that looks like data is an error naming the input, the
data file and its columns; --params learns it (or holds it) when that is what is meant.

Expected parameters are plain SGD written here in NumPy on samples/line.csv.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from autodiff_cli.cli import main
from autodiff_cli.errors import InputError
from autodiff_cli.execute.fit import data_like_inputs, plan_fit
from autodiff_cli.language import parse

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


def _write_columns(source: Path, target: Path, keep: list[str]) -> None:
    """``source``'s CSV with only the columns ``keep``."""
    lines = source.read_text().splitlines()
    header = lines[0].split(",")
    chosen = [header.index(name) for name in keep]
    target.write_text("\n".join(",".join(line.split(",")[i] for i in chosen) for line in lines) + "\n")


def test_a_missing_label_column_is_an_error_naming_the_input_and_the_file(runner, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    _write_columns(SAMPLES / "line.csv", tmp_path / "x_only.csv", ["x"])
    result = runner.invoke(main, ["fit", str(SAMPLES / "line.ad"), "--data", "x_only.csv", "--steps", "5"])
    assert result.exit_code == 1, result.stderr
    assert result.stdout == ""  # nothing learned is written
    first = result.stderr.splitlines()[0]
    assert first == (f"{SAMPLES / 'line.ad'}:10:1: error: 'y' looks like data (its name is a label's), but "
                     "x_only.csv has no column y, so fit would learn it as a parameter")
    assert "  note: x_only.csv line 1, its header, names the columns: x\n" in result.stderr
    assert ("hint: add the column y to x_only.csv; or name what to learn: --params w,b,y learns it, "
            "--params w,b keeps it at its value") in result.stderr
    assert "Traceback" not in result.stderr


def test_params_holds_the_input_at_its_value_or_learns_it(runner, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    data = tmp_path / "x_only.csv"
    _write_columns(SAMPLES / "line.csv", data, ["x"])
    held = runner.invoke(main, ["fit", str(SAMPLES / "line.ad"), "--data", data.name, "--steps", "3", "-q",
                          "--params", "w,b"])
    assert held.exit_code == 0, held.stderr
    # y stays 0: three SGD steps on the mean of (w*x + b)**2 from w = b = 0 leave both at 0
    assert json.loads(held.stdout) == {"w": 0.0, "b": 0.0}
    learned = runner.invoke(main, ["fit", str(SAMPLES / "line.ad"), "--data", data.name, "--steps", "3", "-q",
                             "--params", "w,b,y"])
    assert learned.exit_code == 0, learned.stderr
    assert json.loads(learned.stdout) == {"w": 0.0, "b": 0.0, "y": 0.0}


def test_a_class_label_the_data_lacks_is_refused_and_not_offered_to_learn(runner, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    data = tmp_path / "contexts.csv"
    _write_columns(SAMPLES / "makemore" / "train.csv", data, ["x[0]", "x[1]", "x[2]"])
    result = runner.invoke(main, ["fit", str(SAMPLES / "makemore" / "mlp.ad"), "--data", data.name, "--steps", "2"])
    assert result.exit_code == 1, result.stderr
    assert ("error: 'y' looks like data (the program reads it as a class label or an index, a whole number no "
            "gradient moves), but contexts.csv has no column y") in result.stderr
    assert "names the columns: x[0], x[1], x[2]" in result.stderr
    assert "learns it" not in result.stderr  # a class number cannot be learned by gradient descent


def test_the_target_of_a_metric_is_data(runner, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    data = tmp_path / "points.csv"
    _write_columns(SAMPLES / "logistic.csv", data, ["x1", "x2"])
    program = tmp_path / "m.ad"  # logistic.ad with its label renamed, so that only the metric says it is data
    program.write_text((SAMPLES / "logistic.ad").read_text().replace("y", "c"))
    result = runner.invoke(main, ["fit", str(program), "--data", data.name, "--metric", "accuracy:z:c", "--steps", "2"])
    assert result.exit_code == 1, result.stderr
    assert "'c' looks like data (a --metric compares the prediction with it)" in result.stderr
    plain = runner.invoke(main, ["fit", str(program), "--data", data.name, "--steps", "2", "-q"])
    assert plain.exit_code == 0, plain.stderr  # without the metric nothing says c is data: it is learned


def test_a_written_out_value_among_initialized_parameters_is_data(runner, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    data = tmp_path / "labels.csv"
    _write_columns(SAMPLES / "moons_xy.csv", data, ["y"])
    result = runner.invoke(main, ["fit", str(SAMPLES / "moons_mlp.ad"), "--data", data.name, "--steps", "2"])
    assert result.exit_code == 1, result.stderr
    assert ("'x' looks like data (its value is written out, where the parameters start from initializers "
            "(normal, ...)), but labels.csv has no column x") in result.stderr


def test_what_looks_like_data_and_what_does_not() -> None:
    program = parse("W = normal([2, 2])\nb = [0, 0]\nx = [1, 2]\nlabel = 1\nk = 3\nscale = 2\n"
                    "loss = cross_entropy(W @ x * scale + b, k) + label", "m.ad")
    found = data_like_inputs(program, ["W", "b", "x", "label", "k", "scale"], compared=["scale"])
    assert found == {
        "x": "its value is written out, where the parameters start from initializers (normal, ...)",
        "label": "its name is a label's",
        "k": "the program reads it as a class label or an index, a whole number no gradient moves",
        "scale": "a --metric compares the prediction with it",
    }
    # a bias written as zeros beside initialized weights starts a parameter (bench_tensor's b3 = 0)
    biases = parse("W = normal([2, 2])\nb = [0, 0]\nc = 0\nx = [1, 2]\nloss = sum(W @ x + b) + c", "b.ad")
    assert data_like_inputs(biases, ["W", "b", "c"]) == {}
    scalar = parse("w = 0\nb = 0\nloss = (w*x + b - target)**2", "s.ad")
    assert data_like_inputs(scalar, ["w", "b", "target"]) == {"target": "its name is a label's"}


def test_plan_fit_learns_what_params_names_even_when_it_looks_like_data() -> None:
    program = parse("w = 0\ny = 0\nloss = (w*x - y)**2", "m.ad")
    with pytest.raises(InputError) as caught:
        plan_fit(program, ["x"], {})
    assert caught.value.notes == ["the columns of the data are: x"]
    assert plan_fit(program, ["x"], {}, parameters=["w", "y"]).parameters == ["w", "y"]
    assert plan_fit(program, ["x"], {}, parameters=["w"]).fixed == {"y": 0.0}


def test_with_the_label_column_fit_learns_as_before(runner) -> None:
    result = runner.invoke(main, ["fit", str(SAMPLES / "line.ad"), "--data", str(SAMPLES / "line.csv"), "--steps", "4",
                            "-q"])
    assert result.exit_code == 0, result.stderr
    x, y = np.loadtxt(SAMPLES / "line.csv", delimiter=",", skiprows=1).T
    w = b = 0.0
    for _ in range(4):
        residual = w * x + b - y
        w, b = w - 0.01 * np.mean(2 * residual * x), b - 0.01 * np.mean(2 * residual)
    assert json.loads(result.stdout) == pytest.approx({"w": w, "b": b}, rel=1e-12)
