"""The vectorized executor against the scalar engine, row by row, on random programs.

Each random program (``_generator.py``) runs once through ``evaluate_batch`` over a
batch of rows and once per row through the scalar ``evaluate``; every row must agree:
the same rows fail, at the same instruction, with the same message; elsewhere every
named variable's value and the gradient of the output with respect to every named
variable (inputs and intermediates) agree.  Each input is, at random, a column, one
number broadcast to every row, or left to its default in the program.

Two tiers, because two kinds of difference are possible:

* **Exact ops** (+ - * / neg sqrt abs relu sign step and copies): both interpreters do
  the same IEEE operations, the vectorized reverse sweep adds each gradient's
  contributions in ``Value.backward``'s order, so results must be *bit-identical*
  (the sign of zero, infinities and NaNs included).  The rows here are not guarded:
  random values, zeros of both signs, subnormals, 1e200 (whose square overflows),
  1e-200 (whose square is 0, where sqrt's slope is infinite): kinks, domain edges,
  non-finite gradients and failing rows all occur.
* **Every op**: exp, log, sin, cos, tanh and powers come from NumPy's routines where
  the scalar engine calls the C library; on this kind of machine they differ in
  the last bit or two (measured: exp and log 1 ulp, tanh up to 3, powers 1; sin and
  cos agree).  A difference of a few ulps in one node reaches the output multiplied
  by the derivatives along the way, so the bound is the one test_differential.py
  argues for: a few ulps times the "absolute gradient" A (sum over paths of |product
  of local derivatives|) for gradients, and V = sum over nodes of A(node) * |node|
  for values.  The conditioning of the derivative formulas multiplies those ulps:
  tanh's slope 1 - t**2 turns tanh's 3-ulp difference into ~300 ulps of the slope at
  |u| = 3, the edge of the generator's guarded range.  Hence

      |vectorized - scalar| <= 1e-13 * max(scale, |scalar|) + 1e-300

  (1e-13 is 450 ulps; the largest seen over 3,000 programs is 97 ulps, in exactly
  that slope; against autograd, whose formulas differ too, the bound is 1e-12).  Rows
  are the generator's guarded inputs and perturbations of them by up to 1e-6
  (relative), which keep the conditioning the guards give; kinks and domain edges
  of these ops are tested one op at a time in tests/execute/test_vectorized_ops.py.

Examples: 1000 exact-op programs and 1500 mixed ones, plus 60 per op forced at the
output, 32 rows each (about 130,000 rows); derandomized.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from _generator import OPS, SETTINGS, Seeded, absolute_gradients, build_case, cases, close
from hypothesis import given, settings
from hypothesis import strategies as st

from autodiff_cli.errors import EvaluationError
from autodiff_cli.execute import evaluate
from autodiff_cli.execute.batch_evaluator import evaluate_batch
from autodiff_cli.language import parse

EXACT_OPS = ("+", "-", "*", "/", "neg", "sqrt", "relu", "abs", "sign", "step", "=")
REL = 1e-13
ROWS = 32
SPECIAL = (0.0, -0.0, 5e-324, -5e-324, 1e-200, -1e-200, 1e200, -1e200, 1.0, -1.0, 0.5, -0.25, 2.0, 3.0)


def same(got: float, want: float) -> bool:
    """Bit-identical as a reader sees it: equal with the same sign of zero, or both NaN."""
    if math.isnan(want):
        return math.isnan(got)
    return got == want and math.copysign(1.0, got) == math.copysign(1.0, want)


def draw_rows(rng: np.random.Generator, base: float, wild: bool) -> np.ndarray:
    """ROWS values for one input: the base value first, then perturbations of it, and
    (``wild``) uniform values and special ones in equal shares."""
    rows = base * (1.0 + rng.uniform(-1e-6, 1e-6, ROWS))
    rows[0] = base
    if wild:
        kind = rng.integers(0, 3, ROWS)
        rows = np.where(kind == 1, rng.uniform(-3.0, 3.0, ROWS), rows)
        rows = np.where(kind == 2, rng.choice(SPECIAL, ROWS), rows)
    return rows


def batch_inputs(program, case, rng: np.random.Generator, wild: bool) -> dict[str, object]:  # type: ignore[no-untyped-def]
    """Each input as a column, a broadcast number, or (when it has one) left to its default."""
    given: dict[str, object] = {}
    for variable in program.inputs:
        base = case.inputs[int(variable.name[1:])]
        mode = rng.integers(0, 3 if variable.default is not None else 2)
        if mode == 0:
            given[variable.name] = draw_rows(rng, base, wild)
        elif mode == 1:
            given[variable.name] = float(draw_rows(rng, base, wild)[rng.integers(0, ROWS)])
    return given


def row_of(given: dict[str, object], row: int) -> dict[str, float]:
    return {name: float(column[row]) if np.ndim(column) else float(column) for name, column in given.items()}


def value_scale(node) -> float:  # type: ignore[no-untyped-def]
    """V for ``node``: sum over the nodes it depends on of A(node) * |value|."""
    return sum(a * abs(n.data) for n, a in absolute_gradients(node).items())


def check_rows(text: str, given: dict[str, object], exact: bool) -> None:
    program = parse(text, "<generated>")
    names = list(program.variables)
    result = evaluate_batch(program, given, wrt=names, values_of=names, on_error="nan")
    assert result.rows == ROWS or not any(np.ndim(c) for c in given.values())
    for row in range(result.rows):
        try:
            evaluation = evaluate(program, row_of(given, row))
        except EvaluationError as error:
            assert result.failed[row], (text, row, error.message)
            mine = result.error(row)
            assert (mine.message, mine.position) == (error.message, error.position), (text, row)
            assert all(math.isnan(column[row]) for column in result.columns().values())
            continue
        assert not result.failed[row], (text, row, str(result.error(row)))
        absolute = None if exact else absolute_gradients(evaluation.root)
        for name in names:
            node = evaluation.nodes[name]
            value, grad = result.values[name][row], result.grads[name][row]
            if exact or not math.isfinite(node.data) or not math.isfinite(node.grad):
                assert same(value, node.data), (text, row, name, value, node.data)
                assert same(grad, node.grad), (text, row, name, grad, node.grad)
            else:
                assert close(value, node.data, value_scale(node), REL), (text, row, name, value, node.data)
                assert close(grad, node.grad, absolute.get(node, 0.0), REL), (text, row, name, grad, node.grad)


@st.composite
def exact_cases(draw):  # type: ignore[no-untyped-def]
    return build_case(Seeded(draw(st.integers(0, 2**32 - 1))), ops=EXACT_OPS)


@settings(max_examples=1000, **SETTINGS)
@given(exact_cases(), st.integers(0, 2**32 - 1))
def test_exact_ops_are_bit_identical_on_wild_rows(case, seed: int) -> None:  # type: ignore[no-untyped-def]
    program = parse(case.text)
    check_rows(case.text, batch_inputs(program, case, np.random.default_rng(seed), wild=True), exact=True)


@settings(max_examples=1500, **SETTINGS)
@given(cases(), st.integers(0, 2**32 - 1))
def test_every_op_agrees_within_a_few_ulps(case, seed: int) -> None:  # type: ignore[no-untyped-def]
    program = parse(case.text)
    check_rows(case.text, batch_inputs(program, case, np.random.default_rng(seed), wild=False), exact=False)


@pytest.mark.parametrize("op", OPS, ids=lambda op: f"root={op}")
def test_every_op_at_the_output(op: str) -> None:
    @settings(max_examples=60, **SETTINGS)
    @given(cases(root_op=op), st.integers(0, 2**32 - 1))
    def run(case, seed: int) -> None:  # type: ignore[no-untyped-def]
        program = parse(case.text)
        check_rows(case.text, batch_inputs(program, case, np.random.default_rng(seed), wild=False), exact=False)

    run()


def test_the_reverse_sweep_adds_in_the_scalar_engines_order() -> None:
    # x's gradient is the sum of six contributions.  Value.backward adds them in its
    # depth-first order (a*x, a, b*x, b, c*x, c), not in program order (a*x, b*x, c*x,
    # c, b, a): summed in program order, about 30% of these rows differ in the last bit.
    text = "a = x*0.3\nb = x*0.5\nc = x*0.7\ny = c*x + (b*x + a*x)"
    xs = np.random.default_rng(7).uniform(-3, 3, 2000)
    result = evaluate_batch(text, {"x": xs})
    program = parse(text)
    for row, x in enumerate(xs):
        assert same(result.grads["x"][row], evaluate(program, {"x": float(x)}).nodes["x"].grad), row
