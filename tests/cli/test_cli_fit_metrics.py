"""`autodiff fit --metric`: accuracy (by sign, or by the argmax of a vector), mse, mae and any
variable's mean, on the training and the validation rows, in the progress line, the history
and the final line, for scalar programs and tensor programs.

Expected values are computed here in NumPy: logistic regression's gradient descent by hand, and
the tensor samples' networks run forward on the parameters fit wrote.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import numpy as np
import pytest

from autodiff_cli.cli import main

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
LOGISTIC = np.loadtxt(SAMPLES / "logistic.csv", delimiter=",", skiprows=1)


@pytest.fixture
def fit(runner):
    def invoke(*args):
        return runner.invoke(main, ["fit", *map(str, args)], catch_exceptions=False)

    return invoke


def history_rows(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(path.read_text())))


def final_number(stderr: str, what: str) -> float:
    return float(re.search(rf"(?:^|[:,] ){what} ([-0-9.e+]+)", stderr.splitlines()[-1]).group(1))


def logistic_path(steps: int, lr: float) -> list[np.ndarray]:
    """(w1, w2, b) where each step starts, then after the last: gradient descent on the mean
    cross-entropy of sigmoid(w1*x1 + w2*x2 + b) over logistic.csv."""
    x, y = LOGISTIC[:, :2], LOGISTIC[:, 2]
    params, path = np.zeros(3), []
    for _ in range(steps):
        path.append(params)
        p = 1 / (1 + np.exp(-(x @ params[:2] + params[2])))
        params = params - lr * np.append(x.T @ (p - y), np.sum(p - y)) / len(y)
    return path + [params]


def logistic_metrics(params: np.ndarray) -> dict[str, float]:
    x, y = LOGISTIC[:, :2], LOGISTIC[:, 2]
    z = x @ params[:2] + params[2]
    p = 1 / (1 + np.exp(-z))
    return {"accuracy": np.mean((z > 0) == (y > 0)), "p": np.mean(p), "mae": np.mean(np.abs(p - y)),
            "mse": np.mean((p - y) ** 2)}


def test_metrics_of_a_scalar_program_in_the_history_and_the_final_line(fit, tmp_path) -> None:
    result = fit(SAMPLES / "logistic.ad", "--data", SAMPLES / "logistic.csv", "--lr", 0.5, "--steps", 6,
                 "--metric", "accuracy:z:y", "--metric", "p", "--metric", "mae:p:y", "--metric", "mse:p:y",
                 "--history", tmp_path / "h.csv", "--progress-every", 3)
    assert result.exit_code == 0, result.stderr
    path = logistic_path(6, 0.5)
    history = history_rows(tmp_path / "h.csv")
    assert list(history[0]) == ["step", "loss", "grad_norm", "lr", "accuracy", "p", "mae", "mse"]
    for row, params in zip(history, path):
        expected = logistic_metrics(params)
        for name, value in expected.items():
            assert float(row[name]) == pytest.approx(value, rel=1e-12), (row["step"], name)
    written = json.loads(result.stdout)
    np.testing.assert_allclose([written["w1"], written["w2"], written["b"]], path[-1], rtol=1e-12)
    lines = result.stderr.replace("\n  ", "  ").splitlines()  # a progress line wrapped at 80 columns, unwrapped
    first = logistic_metrics(path[0])
    assert lines[0] == (f"step 1/6  loss {np.log(2):.6g}  grad norm {lines[0].split('grad norm ')[1].split()[0]}  "
                        f"lr 0.5  accuracy {first['accuracy']:.6g}  p 0.5  mae 0.5  mse 0.25")
    assert lines[1].startswith("step 3/6") and "(at step" not in lines[1]  # measured every step
    last = logistic_metrics(path[-1])
    for name, value in last.items():
        assert final_number(result.stderr, name) == pytest.approx(value, rel=1e-5), name


def test_metrics_on_validation_rows_have_their_own_columns(fit, tmp_path) -> None:
    training, held = LOGISTIC[:150], LOGISTIC[150:]
    header = "x1,x2,y\n"
    for name, rows in (("train.csv", training), ("held.csv", held)):
        (tmp_path / name).write_text(header + "".join(",".join(repr(float(v)) for v in row) + "\n" for row in rows))
    result = fit(SAMPLES / "logistic.ad", "--data", tmp_path / "train.csv", "--validation-data", tmp_path / "held.csv",
                 "--steps", 3, "--metric", "accuracy:z:y", "--history", tmp_path / "h.csv", "-q")
    assert result.exit_code == 0, result.stderr
    history = history_rows(tmp_path / "h.csv")
    assert list(history[0]) == ["step", "loss", "grad_norm", "lr", "validation_loss", "accuracy",
                                "validation_accuracy"]
    # at the start every z is 0, classified negative: the accuracy is the share of y = 0
    assert float(history[0]["accuracy"]) == np.mean(training[:, 2] == 0)
    assert float(history[0]["validation_accuracy"]) == np.mean(held[:, 2] == 0)
    assert float(history[0]["validation_loss"]) == pytest.approx(np.log(2), rel=1e-14)


def test_measured_once_an_epoch_with_mini_batches_and_empty_cells_between(fit, tmp_path) -> None:
    result = fit(SAMPLES / "logistic.ad", "--data", SAMPLES / "logistic.csv", "--steps", 9, "--batch-size", 50,
                 "--metric", "p", "--history", tmp_path / "h.csv", "--progress-every", 2)
    assert result.exit_code == 0, result.stderr
    measured = [row["step"] for row in history_rows(tmp_path / "h.csv") if row["p"] != ""]
    assert measured == ["1", "4", "8"]  # 200 rows in batches of 50: each 4th step ends an epoch
    line_of_step_2 = result.stderr.splitlines()[1]
    assert line_of_step_2.startswith("step 2/9") and " p " not in line_of_step_2  # not measured: no stale value
    result = fit(SAMPLES / "logistic.ad", "--data", SAMPLES / "logistic.csv", "--steps", 9, "--batch-size", 50,
                 "--metric", "p", "--eval-every", 3, "--history", tmp_path / "h.csv", "-q")
    assert [row["step"] for row in history_rows(tmp_path / "h.csv") if row["p"] != ""] == ["1", "3", "6", "9"]


def forward_moons(params: dict, x: np.ndarray) -> np.ndarray:
    relu = lambda a: np.maximum(a, 0)  # noqa: E731
    h1 = relu(x @ np.array(params["W1"]).T + params["b1"])
    h2 = relu(h1 @ np.array(params["W2"]).T + params["b2"])
    return (h2 @ np.array(params["W3"]).T + params["b3"])[:, 0]


def test_accuracy_by_sign_of_a_tensor_program(fit, tmp_path) -> None:
    result = fit(SAMPLES / "moons_mlp.ad", "--data", SAMPLES / "moons_xy.csv", "--lr", 0.5, "--steps", 5,
                 "--metric", "accuracy:score:y", "--metric", "hinge", "-o", tmp_path / "p.json")
    assert result.exit_code == 0, result.stderr
    rows = np.loadtxt(SAMPLES / "moons_xy.csv", delimiter=",", skiprows=1)
    score = forward_moons(json.loads((tmp_path / "p.json").read_text()), rows[:, :2])
    y = rows[:, 2]
    assert final_number(result.stderr, "accuracy") == pytest.approx(np.mean((score > 0) == (y > 0)), rel=1e-5)
    assert final_number(result.stderr, "hinge") == pytest.approx(np.mean(np.maximum(1 - y * score, 0)), rel=1e-5)


def test_accuracy_by_argmax_of_a_vector_against_a_class_number(fit, tmp_path) -> None:
    result = fit(SAMPLES / "digits.ad", "--data", SAMPLES / "digits_train.csv", "--validation-data",
                 SAMPLES / "digits_test.csv", "--optimizer", "adam", "--steps", 4, "--batch-size", 256,
                 "--metric", "accuracy:z:label", "--metric", "correct", "-o", tmp_path / "p.json", "-q")
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    result = fit(SAMPLES / "digits.ad", "--data", SAMPLES / "digits_train.csv", "--validation-data",
                 SAMPLES / "digits_test.csv", "--optimizer", "adam", "--steps", 4, "--batch-size", 256,
                 "--metric", "accuracy:z:label", "-o", tmp_path / "p.json")
    params = json.loads((tmp_path / "p.json").read_text())
    test = np.loadtxt(SAMPLES / "digits_test.csv", delimiter=",", skiprows=1)
    x, label = test[:, :64], test[:, 64]
    h = np.maximum((x / 16) @ np.array(params["W1"]).T + params["b1"], 0)
    z = h @ np.array(params["W2"]).T + params["b2"]
    expected = np.mean(np.argmax(z, axis=1) == label)
    assert final_number(result.stderr, "validation accuracy") == pytest.approx(expected, rel=1e-5)


def test_a_metric_named_as_a_history_column_is_named_mean(fit, tmp_path) -> None:
    result = fit(SAMPLES / "line.ad", "--data", SAMPLES / "line.csv", "--steps", 2, "--metric", "loss",
                 "--history", tmp_path / "h.csv", "-q")
    assert result.exit_code == 0
    first = history_rows(tmp_path / "h.csv")[0]
    assert list(first) == ["step", "loss", "grad_norm", "lr", "mean:loss"]
    assert first["mean:loss"] == first["loss"]  # the mean loss over every row, by two routes


@pytest.mark.parametrize("metric, code, message", [
    ("accuracy", 2, "--metric accuracy needs the prediction and the target it compares: write --metric "
                    "accuracy:PRED:TARGET"),
    ("f1:z:y", 2, "--metric f1:z:y is not a metric"),
    ("accuracy:zz:y", 1, "--metric accuracy:zz:y names 'zz', which the program does not define"),
    ("mean_p", 1, "--metric mean_p names 'mean_p', which the program does not define"),
], ids=["bare-accuracy", "unknown-kind", "unknown-prediction", "unknown-variable"])
def test_a_metric_that_cannot_be_measured_is_refused_before_training(fit, metric, code, message) -> None:
    result = fit(SAMPLES / "logistic.ad", "--data", SAMPLES / "logistic.csv", "--metric", metric)
    assert result.exit_code == code, result.stderr
    assert message in result.stderr
    assert result.stdout == ""


def test_a_label_that_is_not_a_class_is_named_by_its_line(fit, tmp_path) -> None:
    (tmp_path / "rows.csv").write_text("x[0],x[1],label\n1,0,0\n0,1,2\n1,1,1.5\n")
    program = "x = [0, 0]\nlabel = 0\nW = [[1, 0], [0, 1], [1, 1]]\nz = W @ x\nloss = sum(z**2) + label\n"
    result = fit("-e", program, "--data", tmp_path / "rows.csv", "--steps", 2, "--metric", "accuracy:z:label")
    assert result.exit_code == 1
    assert "--metric accuracy:z:label: 'label' is 1.5 in line 4 of" in result.stderr
    assert "from 0 to 2" in result.stderr


def test_the_mean_of_a_vector_is_refused(fit) -> None:
    result = fit(SAMPLES / "digits.ad", "--data", SAMPLES / "digits_test.csv", "--steps", 2, "--metric", "z")
    assert result.exit_code == 1
    assert "--metric z needs a number per row, and 'z' has shape [10]" in result.stderr


def test_the_bar_shows_measurements_short() -> None:
    from autodiff_cli.cli.fit_progress import bar_parts
    from autodiff_cli.execute.fit import Measurement

    measured = Measurement(3, 0.126449, {"accuracy": 0.995652, "hinge": 0.5}, {"accuracy": 0.972125, "hinge": 0.25})
    assert bar_parts(measured) == ["val loss 0.1264", "accuracy 0.9957/0.9721", "hinge 0.5/0.25"]
    assert bar_parts(Measurement(3, None, {"accuracy": 0.5}, {})) == ["accuracy 0.5"]