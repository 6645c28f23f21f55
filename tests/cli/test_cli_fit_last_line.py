"""What `autodiff fit` says while and after it trains, as a newcomer read it: the last line's
starting loss says what it is (the loss before training, over which rows), and a progress line
shows only what was measured at its own step.

Expected losses are computed here in NumPy from samples/line.csv (the loss of samples/line.ad is
(w*x + b - y)**2, w = b = 0 at the start) and samples/logistic.csv.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from autodiff_cli.cli import main

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
LINE = [str(SAMPLES / "line.ad"), "--data", str(SAMPLES / "line.csv")]


def _line_rows() -> tuple[np.ndarray, np.ndarray]:
    x, y = np.loadtxt(SAMPLES / "line.csv", delimiter=",", skiprows=1).T
    return x, y


def test_the_last_line_says_the_starting_loss_is_before_training_over_the_training_rows(runner) -> None:
    _, y = _line_rows()
    result = runner.invoke(main, ["fit", *LINE, "--steps", "3", "--lr", "0.1", "-o", "/dev/null"])
    assert result.exit_code == 0, result.stderr
    last = result.stderr.splitlines()[-1]
    start = float(np.mean(y**2))  # w = b = 0: every prediction is 0
    assert f"({start:.6g} before training; each the mean over the {len(y)} training rows)" in last
    assert "at the start" not in last and "(from " not in last


def test_with_mini_batches_the_starting_loss_is_over_every_row_not_the_first_batch(runner) -> None:
    _, y = _line_rows()
    result = runner.invoke(main, ["fit", *LINE, "--steps", "3", "--batch-size", "8", "-o", "/dev/null"])
    assert result.exit_code == 0, result.stderr
    first_batch = float(re.search(r"^step 1/3  loss (\S+)", result.stderr, re.MULTILINE).group(1))
    start = float(np.mean(y**2))
    assert f"({start:.6g} before training; each the mean over the 200 training rows)" \
        in result.stderr.splitlines()[-1]
    assert f"{first_batch:.6g}" != f"{start:.6g}"  # the old line gave the first batch's loss as the start


def test_a_plateau_line_says_it_too(runner) -> None:
    _, y = _line_rows()
    result = runner.invoke(main, ["fit", *LINE, "--lr", "0.2", "--tol", "1e-12", "-o", "/dev/null"])
    assert result.exit_code == 0, result.stderr
    last = result.stderr.splitlines()[-1]
    assert last.startswith("stopped at step ")
    assert f"({float(np.mean(y**2)):.6g} before training; each the mean over the 200 training rows)" in last


def test_held_out_rows_are_not_counted_as_training_rows(runner) -> None:
    result = runner.invoke(main, ["fit", str(SAMPLES / "logistic.ad"), "--data", str(SAMPLES / "logistic.csv"),
                                  "--steps", "2", "--validation", "0.2", "-o", "/dev/null"])
    assert result.exit_code == 0, result.stderr
    rows = len((SAMPLES / "logistic.csv").read_text().splitlines()) - 1
    # at w1 = w2 = b = 0 every p is 1/2: the cross-entropy of every row is log 2
    assert (f"({np.log(2):.6g} before training; each the mean over the {rows - round(0.2 * rows)} training rows)"
            in result.stderr.splitlines()[-1])


# --- progress lines show what was measured at their own step ----------------------------------


def _logistic_history(tmp_path: Path, *options: str) -> tuple[list[str], dict[int, dict[str, str]]]:
    """The progress lines (each unwrapped onto one line) and the history's rows by step."""
    from click.testing import CliRunner

    result = CliRunner().invoke(main, ["fit", str(SAMPLES / "logistic.ad"), "--data", str(SAMPLES / "logistic.csv"),
                                       "--lr", "0.5", "--steps", "30", "--validation", "0.2", "--metric",
                                       "accuracy:z:y", "--history", str(tmp_path / "h.csv"), "-o", "/dev/null",
                                       *options])
    assert result.exit_code == 0, result.stderr
    lines = [line for line in result.stderr.replace("\n  ", "  ").splitlines() if line.startswith("step ")]
    rows = (tmp_path / "h.csv").read_text().splitlines()
    header = rows[0].split(",")
    history = {int(row.split(",")[0]): dict(zip(header, row.split(","))) for row in rows[1:]}
    return lines, history


def _number_after(line: str, name: str) -> str | None:
    found = re.search(rf"(?:^|  ){name} (\S+)", line)
    return None if found is None else found.group(1)


def test_by_default_a_line_comes_at_each_measured_step_with_that_steps_numbers(tmp_path) -> None:
    lines, history = _logistic_history(tmp_path)
    measured = [step for step, row in history.items() if row["validation_loss"] != ""]
    shown = [int(line.split()[1].split("/")[0]) for line in lines]
    assert shown == sorted({*measured, 30})  # each measured step, and the last
    for line, step in zip(lines, shown):
        row = history[step]
        if row["validation_loss"] == "":
            assert "validation" not in line and "accuracy" not in line, line
            continue
        assert float(_number_after(line, "validation loss")) == pytest.approx(float(row["validation_loss"]),
                                                                             rel=1e-5)
        assert float(_number_after(line, "accuracy")) == pytest.approx(float(row["accuracy"]), rel=1e-5)


def test_with_progress_every_a_line_at_a_step_not_measured_shows_no_measurement(tmp_path) -> None:
    lines, history = _logistic_history(tmp_path, "--progress-every", "10")
    assert [line.split()[1] for line in lines] == ["1/30", "10/30", "20/30", "30/30"]
    for line in lines:
        step = int(line.split()[1].split("/")[0])
        has_measurement = history[step]["validation_loss"] != ""
        assert ("validation loss" in line) == has_measurement, (line, has_measurement)
        assert "(at step" not in line
    assert history[1]["validation_loss"] != "" and history[10]["validation_loss"] == ""  # 30 steps: every 4th
