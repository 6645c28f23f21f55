"""batch of a tensor program (the interpreter's rows) runs each chunk forward once, and still finds the
rows that fail."""

from __future__ import annotations

import numpy as np
import pytest

from autodiff_cli.errors import EvaluationError
from autodiff_cli.execute import interpreter
from autodiff_cli.execute.batch_evaluator import BatchEvaluator
from autodiff_cli.language import parse

PROGRAM = """\
x = [0, 0]
y = 0
W = [[0.5, -1], [2, 0.25], [1, 1]]
h = tanh(W @ x)
z = log(sum(exp(h)) * x[0])
L = (z - y)**2
"""


def columns(x0: list[float]) -> dict[str, np.ndarray]:
    return {"x[0]": np.array(x0), "x[1]": np.linspace(-1.0, 1.0, len(x0)), "y": np.arange(len(x0), dtype=float)}


def by_hand(x0: float, x1: float, y: float) -> tuple[float, float, float]:
    """L, dL/dx[0] and dL/dx[1] of one row, written out."""
    w = np.array([[0.5, -1.0], [2.0, 0.25], [1.0, 1.0]])
    h = np.tanh(w @ [x0, x1])
    s = np.exp(h).sum()
    z = np.log(s * x0)
    dz = 2.0 * (z - y)
    dh = dz * np.exp(h) / s * (1.0 - h * h)
    return (z - y) ** 2, dh @ w[:, 0] + dz / x0, dh @ w[:, 1]


def test_a_chunk_runs_forward_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = interpreter.run_forward
    monkeypatch.setattr(interpreter, "run_forward", lambda *a, **k: calls.append(1) or real(*a, **k))
    evaluator = BatchEvaluator(parse(PROGRAM, "f.ad"), wrt=["x"])
    data = columns([0.5, 1.0, 2.0, 3.0])
    result = evaluator.evaluate(data).columns()
    assert len(calls) == 1
    for row in range(4):
        want = by_hand(data["x[0]"][row], data["x[1]"][row], data["y"][row])
        got = (result["L"][row], result["dL/dx[0]"][row], result["dL/dx[1]"][row])
        assert np.allclose(got, want, rtol=1e-12)


def test_rows_whose_log_is_undefined_fail_and_the_others_do_not() -> None:
    """log of a negative x[0] is NaN on that row alone: the checks skipped for registers a later
    one covers still find it (through z, then L)."""
    evaluator = BatchEvaluator(parse(PROGRAM, "f.ad"), wrt=["x"])
    data = columns([0.5, -1.0, 2.0, -3.0])
    result = evaluator.evaluate(data, on_error="nan")
    assert result.failed.tolist() == [False, True, False, True]
    named = result.columns()
    assert np.isnan(named["L"][1]) and np.isnan(named["dL/dx[0]"][3])
    assert np.isclose(named["L"][2], by_hand(2.0, data["x[1]"][2], 2.0)[0], rtol=1e-12)
    with pytest.raises(EvaluationError, match="log is undefined"):
        evaluator.evaluate(data)
