"""`autodiff fit` and the values it is given: names the program does not use are warned about as
every other command warns about them, and what -o writes reads back (--values) as the trained
model, so that -o over the --values file resumes training without losing anything in the file.

Expected parameters come from plain SGD written here in NumPy on samples/line.csv (the loss
of samples/line.ad is (w*x + b - y)**2); expected files are written out by hand.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from autodiff_cli.cli import main

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
LINE = [str(SAMPLES / "line.ad"), "--data", str(SAMPLES / "line.csv")]
LR = 0.01  # fit's default learning rate


def sgd(w: float, b: float, steps: int, learn: str = "wb") -> tuple[float, float]:
    """``steps`` full-batch SGD steps on the mean squared error of w*x + b over line.csv,
    moving only the parameters named in ``learn``."""
    x, y = np.loadtxt(SAMPLES / "line.csv", delimiter=",", skiprows=1).T
    for _ in range(steps):
        residual = w * x + b - y
        grad_w, grad_b = np.mean(2 * residual * x), np.mean(2 * residual)
        w, b = (w - LR * grad_w if "w" in learn else w), (b - LR * grad_b if "b" in learn else b)
    return float(w), float(b)


def pairs(text: str) -> list[tuple[str, float]]:
    """The keys of a JSON object in the order they are written, with their values."""
    return json.loads(text, object_pairs_hook=list)


def assert_values(text: str, expected: list[tuple[str, float]]) -> None:
    written = pairs(text)
    assert [name for name, _ in written] == [name for name, _ in expected]
    for (name, value), (_, wanted) in zip(written, expected):
        assert value == pytest.approx(wanted, rel=1e-12, abs=1e-15), name


# --- Bug A: a value for a name the program does not use ------------------------------------------


@pytest.mark.parametrize("values, sets, message", [
    (None, ["W=5"], "'W' is not used by the program; its value is ignored"),
    ('{"w": 1, "b": 0, "zz": 3}', [], "'zz' is not used by the program; its value is ignored"),
    ('{"w": 1, "zz": 3}', ["q=1"],
     "2 values are given for names the program does not use, so they are ignored: 'zz', 'q'"),
], ids=["set-typo", "values-stray-key", "both-counted-in-one-warning"])
def test_an_unused_name_is_warned_about(runner, tmp_path, values, sets, message) -> None:
    options = [arg for item in sets for arg in ("--set", item)]
    if values is not None:
        (tmp_path / "v.json").write_text(values)
        options += ["--values", str(tmp_path / "v.json")]
    result = runner.invoke(main, ["fit", *LINE, "--steps", "1", "-q", *options])
    assert result.exit_code == 0, result.stderr
    assert result.stderr.splitlines() == [f"warning: {message}"]


@pytest.mark.parametrize("command", [["eval", "--set", "x=1"], ["check", "--set", "x=1"]], ids=["eval", "check"])
def test_fit_warns_in_the_words_of_the_other_commands(runner, command) -> None:
    other = runner.invoke(main, [command[0], str(SAMPLES / "line.ad"), *command[1:], "--set", "W=5"])
    fitted = runner.invoke(main, ["fit", *LINE, "--steps", "1", "-q", "--set", "W=5"])
    warning = [line for line in other.stderr.splitlines() if line.startswith("warning:")]
    assert warning == ["warning: 'W' is not used by the program; its value is ignored"]
    assert fitted.stderr.splitlines() == warning
