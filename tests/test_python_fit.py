"""``autodiff_cli.fit``: training from Python, its learned values against plain NumPy gradient
descent, and its notebook display (the training report in a frame)."""

from __future__ import annotations

import csv
import html
import re
from pathlib import Path

import numpy as np
import pytest

from autodiff_cli import fit
from autodiff_cli.errors import InputError

SAMPLES = Path(__file__).resolve().parent.parent / "samples"


def columns(path: Path) -> dict[str, list[float]]:
    with path.open() as file:
        rows = list(csv.DictReader(file))
    return {name: [float(row[name]) for row in rows] for name in rows[0]}


def test_the_line_is_learned_as_plain_gradient_descent_learns_it() -> None:
    data = columns(SAMPLES / "line.csv")
    train = {name: values[:150] for name, values in data.items()}
    held = {name: values[150:] for name, values in data.items()}
    run = fit(str(SAMPLES / "line.ad"), train, validation=held, lr=0.1, steps=50, metrics=["mae:prediction:y"])
    x, y = np.array(train["x"]), np.array(train["y"])
    w = b = 0.0
    for _ in range(50):  # SGD on the mean of (w x + b - y)^2, every row at every step
        residual = w * x + b - y
        w, b = w - 0.1 * np.mean(2 * residual * x), b - 0.1 * np.mean(2 * residual)
    assert run.values["w"] == pytest.approx(w, rel=1e-12)
    assert run.values["b"] == pytest.approx(b, rel=1e-12)
    hx, hy = np.array(held["x"]), np.array(held["y"])
    measured = run.result.measurement
    assert measured.validation["mae"] == pytest.approx(np.mean(np.abs(w * hx + b - hy)), rel=1e-12)


def test_a_tensor_program_gives_nested_values_and_its_report() -> None:
    data = columns(SAMPLES / "moons_xy.csv")
    run = fit(str(SAMPLES / "moons_mlp.ad"), data, lr=0.5, steps=20, seed=3, metrics=["accuracy:score:y"])
    assert np.shape(run.values["W1"]) == (16, 2) and np.shape(run.values["b3"]) == (1,)
    assert isinstance(run.diagnoses, list)
    frame = run._repr_html_()
    assert frame.startswith('<iframe title="training report" sandbox="allow-scripts"')
    page = html.unescape(re.search(r'srcdoc="(.*)"', frame, re.S).group(1))
    assert page.startswith("<!DOCTYPE html>") and "</html>" in page
    assert not re.search(r"""(src|href)=["']https?:""", page)  # offline: nothing fetched


def test_the_same_seed_gives_the_same_report() -> None:
    data = columns(SAMPLES / "moons_xy.csv")
    first = fit(str(SAMPLES / "moons_mlp.ad"), data, lr=0.5, steps=10, seed=1).report().html()
    second = fit(str(SAMPLES / "moons_mlp.ad"), data, lr=0.5, steps=10, seed=1).report().html()
    assert first == second


def test_a_column_the_program_does_not_read_is_an_error() -> None:
    with pytest.raises(InputError, match="z"):
        fit("w = 0\nL = (w*x - y)**2", {"x": [1.0], "y": [2.0], "z": [3.0]}, steps=1)


def test_validation_columns_missing_an_entry_are_named() -> None:
    # without x[1], the validation rows' x would be a 1-vector, broadcast against w: another model
    program = "w = [0.1, 0.2]\nloss = (sum(w * x) - y)**2\n"
    with pytest.raises(InputError, match=r"the validation rows have no column for x\[1\], which the data gives"):
        fit(program, {"x[0]": [1.0, 2.0], "x[1]": [0.0, 1.0], "y": [1.0, 2.0]},
            validation={"x[0]": [1.0], "y": [1.0]}, steps=1)


def test_inputs_drawn_from_the_seed_are_in_the_values() -> None:
    """W1 and W2 are not learned (--params W3,b3) but drawn from seed 7: without them the values
    are another model's (eval draws from seed 0)."""
    data = columns(SAMPLES / "moons_xy.csv")
    run = fit(str(SAMPLES / "moons_mlp.ad"), data, params=["W3", "b3"], lr=0.3, steps=2, seed=7)
    assert list(run.values) == ["W1", "W2", "W3", "b3"]
    draws = np.random.default_rng(7)
    np.testing.assert_array_equal(run.values["W1"], draws.uniform(-1, 1, (16, 2)))
    np.testing.assert_array_equal(run.values["W2"], draws.uniform(-1, 1, (16, 16)))


TENSOR_PROGRAM = "W = [[0.5, -1], [1, 0.25]]\nx = [a, b]\nL = sum((W @ x - [b, a])**2)\n"


def test_a_run_resumes_from_its_own_tensor_values() -> None:
    """Plain gradient descent keeps no state, so 5 steps and 5 more from the values they learned
    are 10 steps; the values come back as nested lists (Training.values) or as an array."""
    a = np.linspace(-1, 1, 20)
    data = {"a": a, "b": a**2}
    whole = fit(TENSOR_PROGRAM, data, lr=0.05, steps=10).values["W"]
    first = fit(TENSOR_PROGRAM, data, lr=0.05, steps=5).values
    for given in (first, {"W": np.array(first["W"])}):
        resumed = fit(TENSOR_PROGRAM, data, values=given, lr=0.05, steps=5).values["W"]
        np.testing.assert_allclose(resumed, whole, rtol=1e-12)


def test_a_value_that_is_no_number_or_tensor_is_refused_by_name() -> None:
    a = np.linspace(-1, 1, 20)
    with pytest.raises(InputError, match=r"values\['W'\] is 'x', not a number or a tensor"):
        fit(TENSOR_PROGRAM, {"a": a, "b": a**2}, values={"W": "x"}, steps=1)
    with pytest.raises(InputError, match=r"values\['W'\] is not a tensor: the rows differ"):
        fit(TENSOR_PROGRAM, {"a": a, "b": a**2}, values={"W": [[1, 2], [3]]}, steps=1)
