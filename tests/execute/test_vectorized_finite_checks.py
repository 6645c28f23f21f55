"""The vectorized executor's finiteness checks and run sums, as made cheap for `fit`.

Values whose non-finite rows would make the output non-finite are not checked one by one: the
output's check stands for them, and a chunk where it fails is swept again checking each value.
These tests pin that this changes nothing a caller sees: which rows fail, at which instruction
(the scalar engine's message), and every bit of the sums (runs of ``SUM_ROWS`` rows, added
exactly, whatever the chunk size).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from autodiff_cli.engine.ops import OPS
from autodiff_cli.errors import EvaluationError
from autodiff_cli.execute import evaluate, vectorized
from autodiff_cli.execute.batch_evaluator import BatchEvaluator, RowError, evaluate_batch
from autodiff_cli.language import parse

NOT_FINITE = (math.inf, -math.inf, math.nan)
ANY = (0.0, -0.0, 1.0, -1.0, 2.5, -1e-310, 1e308, -1e308, *NOT_FINITE)


def _value(op: str, *operands: float) -> float:
    kernel = OPS[op].vector
    with np.errstate(all="ignore"):
        value, _slopes = kernel(np, *(np.array([x]) for x in operands))
    return float(np.asarray(value)[0])


_PROPAGATING = {name: op.propagates for name, op in OPS.items() if op.propagates}


@pytest.mark.parametrize("op", sorted(_PROPAGATING))
def test_a_propagating_operand_that_is_not_finite_gives_a_result_that_is_not(op: str) -> None:
    arity = OPS[op].arity
    for position in _PROPAGATING[op]:
        for bad in NOT_FINITE:
            for other in ANY if arity == 2 else (None,):
                operands = [bad] if arity == 1 else [other, other]
                operands[position] = bad
                assert not math.isfinite(_value(op, *operands)), (op, operands)


@pytest.mark.parametrize("exponent", [1e-3, 0.5, 1.0, 2.0, 3.0, 7.5, 1e300])
def test_a_positive_constant_power_propagates(exponent: float) -> None:
    for bad in NOT_FINITE:
        with np.errstate(all="ignore"):
            value, _slopes = OPS["**c"].vector(np, np.array([bad]), exponent)
        assert not math.isfinite(value[0]), (bad, exponent)


# Each op left out of _PROPAGATING, with operands where one is not finite and the result is.
FINITE_AT_AN_INFINITY = {
    "tanh": (math.inf,), "exp": (-math.inf,), "relu": (-math.inf,), "sigmoid": (math.inf,),
    "softplus": (-math.inf,),
    "sign": (math.inf,), "step": (math.inf,), "**": (1.0, math.nan),
    "maximum": (-math.inf, 1.0), "minimum": (math.inf, 1.0),  # the other operand wins
}


def test_every_op_is_classified() -> None:
    # A new op must be judged: listed as propagating, or shown here not to be.
    for op in OPS:
        if op == "**c":
            continue  # propagates for a positive exponent only: x ** 0 is 1
        if op in _PROPAGATING:
            if OPS[op].arity == 2 and len(_PROPAGATING[op]) == 1:
                assert _value(op, 1.0, math.inf) == 0.0  # a divisor: 1 / inf is 0
            continue
        assert op in FINITE_AT_AN_INFINITY, f"{op} is not classified"
        assert math.isfinite(_value(op, *FINITE_AT_AN_INFINITY[op]))
    with np.errstate(all="ignore"):
        assert OPS["**c"].vector(np, np.array([math.inf]), 0.0)[0][0] == 1.0


OVERFLOWS = "a = x*1e200\nb = a*1e200\nL = (b - t)**2"


def _scalar_error(text: str, inputs: dict[str, float]) -> EvaluationError:
    with pytest.raises(EvaluationError) as raised:
        evaluate(parse(text, "<program>"), inputs)
    return raised.value


def test_rows_fail_at_their_first_failing_instruction_though_only_the_output_is_summed() -> None:
    # Row 1 overflows at a (line 1), row 2 only at b (line 2), row 3 has a NaN input: all three
    # reach the output, whose check finds them; each is named where the scalar engine fails.
    xs = [1e-250, 1e110, 1e10, math.nan, 2e-250]
    result = evaluate_batch(OVERFLOWS, {"x": xs, "t": 0.5}, on_error="nan", values_of=["a", "b"])
    assert result.failed.tolist() == [False, True, True, True, False]
    for row in (1, 2):
        expected = _scalar_error(OVERFLOWS, {"x": xs[row], "t": 0.5})
        assert (result.error(row).message, result.error(row).position) == (expected.message, expected.position)
    assert [result.error(row).position.line for row in (1, 2)] == [1, 2]
    assert result.error(3).message == "the input 'x' is nan, not a finite number"
    # The rows that did not fail: (x * 1e200 * 1e200 - 0.5) ** 2 by hand.
    for row in (0, 4):
        assert result.value[row] == (xs[row] * 1e200 * 1e200 - 0.5) ** 2
    assert np.isnan(result.values["a"][1:4]).all() and result.values["b"][0] == xs[0] * 1e200 * 1e200


def test_raise_names_the_first_failing_row_of_a_later_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vectorized, "SUM_ROWS", 4)
    monkeypatch.setattr(vectorized, "CHUNK_SUMS", 2)
    xs = np.full(30, 1e-250)
    xs[[19, 22]] = [1e10, 1e110]  # row 19 fails at b, row 22 at a: 19 comes first
    evaluator = BatchEvaluator(OVERFLOWS)
    assert evaluator._sweep.plan.chunk_rows == 8
    with pytest.raises(RowError) as raised:
        evaluator.evaluate({"x": xs, "t": 0.5}, reduce="mean")
    expected = _scalar_error(OVERFLOWS, {"x": 1e10, "t": 0.5})
    assert raised.value.row == 19 and raised.value.message == expected.message
    assert raised.value.position.line == 2
    skipped = evaluator.evaluate({"x": xs, "t": 0.5}, on_error="skip")
    assert skipped.kept.tolist() == [row for row in range(30) if row not in (19, 22)]
    assert skipped.error(22).position.line == 1


def _run_sums_by_hand(column: np.ndarray, size: int) -> float:
    return math.fsum(float(np.add.reduce(column[start:start + size])) for start in range(0, len(column), size))


@pytest.mark.parametrize("chunk_sums", [1, 3, 64])
def test_sums_are_exact_sums_of_runs_whatever_the_chunk(monkeypatch: pytest.MonkeyPatch, chunk_sums: int) -> None:
    monkeypatch.setattr(vectorized, "CHUNK_SUMS", chunk_sums)
    rng = np.random.default_rng(7)
    rows = 3 * vectorized.SUM_ROWS + 1234
    table = rng.standard_normal((rows, 2)) * rng.uniform(0, 1e6, (rows, 1))
    x, t = table[:, 0], table[:, 1]  # strided columns, as a DataFrame's can be
    w, b = 0.75, -0.125
    result = evaluate_batch("L = (w*x + b - t)**2", {"x": x, "t": t, "w": w, "b": b}, reduce="sum",
                            values_of=["x"])
    residual = w * x + b - t
    size = vectorized.SUM_ROWS
    assert result.value == _run_sums_by_hand(residual**2, size)
    assert result.grads["w"] == _run_sums_by_hand(x * (2.0 * residual), size)
    assert result.grads["b"] == _run_sums_by_hand(2.0 * residual, size)
    assert result.grads["t"] == _run_sums_by_hand(-(2.0 * residual), size)
    assert result.values["x"] == _run_sums_by_hand(x, size)
    mean = evaluate_batch("L = (w*x + b - t)**2", {"x": x, "t": t, "w": w, "b": b}, reduce="mean")
    assert mean.value == result.value / rows


@pytest.mark.parametrize("chunk_sums", [1, 4])
def test_skipped_rows_leave_their_runs(monkeypatch: pytest.MonkeyPatch, chunk_sums: int) -> None:
    monkeypatch.setattr(vectorized, "CHUNK_SUMS", chunk_sums)
    rows = 2 * vectorized.SUM_ROWS + 10
    x = np.linspace(0.1, 3.0, rows)
    x[[5, vectorized.SUM_ROWS + 3, rows - 1]] = -1.0  # log fails there
    result = evaluate_batch("y = log(x)*3", {"x": x}, reduce="sum", on_error="skip")
    with np.errstate(invalid="ignore"):
        value = np.log(x) * 3
    size = vectorized.SUM_ROWS
    expected = math.fsum(float(np.add.reduce(value[start:start + size][x[start:start + size] > 0]))
                         for start in range(0, rows, size))
    assert result.count == rows - 3 and result.value == expected
    assert math.isnan(evaluate_batch("y = log(x)*3", {"x": x}, reduce="sum", on_error="nan").value)


def test_sums_beyond_the_float_range_are_infinite_or_nan_not_an_exception() -> None:
    # Each run of 16,384 rows sums to a finite 1.6e308; three runs add up beyond the float range.
    rows = 3 * vectorized.SUM_ROWS
    big = np.full(rows, 1e304)
    assert evaluate_batch("y = x", {"x": big}, reduce="sum").value == math.inf
    assert evaluate_batch("y = -x", {"x": big}, reduce="sum").value == -math.inf
    # The mean fits: it is found from the sums scaled by a power of two, so it is exact.
    assert evaluate_batch("y = x", {"x": big}, reduce="mean").value == 1e304
    # Runs whose own sums overflow, to +inf and to -inf: no total to give.
    halves = np.concatenate([np.full(20_000, 1e308), np.full(20_000, -1e308)])
    assert math.isnan(evaluate_batch("y = x/2", {"x": halves}, reduce="sum").value)
