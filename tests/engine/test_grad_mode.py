"""no_grad(): values without a graph, and recording exactly as before once it ends."""

from __future__ import annotations

import math

import pytest

from autodiff_cli.engine import FUNCTIONS, DomainError, Value
from autodiff_cli.nn import MLP, is_grad_enabled, no_grad

# Every way of making a node from Values, with the value it must have (by hand).
OPERATIONS = {
    "a+b": (lambda a, b: a + b, 2.0 + -0.5),
    "a-b": (lambda a, b: a - b, 2.5),
    "a*b": (lambda a, b: a * b, -1.0),
    "a/b": (lambda a, b: a / b, -4.0),
    "a**b": (lambda a, b: a**b, 2.0**-0.5),
    "a**3": (lambda a, b: a**3, 8.0),
    "-a": (lambda a, b: -a, -2.0),
    "1+a": (lambda a, b: 1 + a, 3.0),
    "1-a": (lambda a, b: 1 - a, -1.0),
    "3*a": (lambda a, b: 3 * a, 6.0),
    "1/a": (lambda a, b: 1 / a, 0.5),
    "2**b": (lambda a, b: 2**b, 2.0**-0.5),
    "abs(b)": (lambda a, b: abs(b), 0.5),
    "identity": (lambda a, b: a.identity(), 2.0),
}


@pytest.mark.parametrize("name", OPERATIONS)
def test_inside_no_grad_results_are_leaves_with_the_right_value(name: str) -> None:
    operation, expected = OPERATIONS[name]
    a, b = Value(2.0), Value(-0.5)
    with no_grad():
        out = operation(a, b)
    assert out.data == pytest.approx(expected, rel=1e-15)
    assert out._prev == () and out._op == ""
    out.backward()
    assert a.grad == 0.0 and b.grad == 0.0  # nothing was recorded for backward to reach


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_every_function_gives_the_recorded_value_without_the_graph(name: str) -> None:
    x = Value(0.7)
    recorded = getattr(x, name)()
    with no_grad():
        leaf = getattr(x, name)()
    assert leaf.data == recorded.data and leaf._prev == () and recorded._prev == (x,)


def test_recording_resumes_after_the_block_even_after_an_error() -> None:
    a = Value(3.0)
    with pytest.raises(DomainError), no_grad():
        (a - 3.0).log()  # domain errors are still raised inside the block
    assert is_grad_enabled()
    out = a * a
    out.backward()
    assert out._prev == (a, a) and a.grad == 6.0


def test_blocks_nest_and_work_as_a_decorator() -> None:
    @no_grad()
    def score(x: Value) -> Value:
        return x * 2.0

    a = Value(1.5)
    with no_grad():
        with no_grad():
            assert not is_grad_enabled()
        assert not is_grad_enabled()  # still inside the outer block
        assert (a + a)._prev == ()
    assert is_grad_enabled()
    assert score(a)._prev == () and is_grad_enabled()
    assert (a + a)._prev == (a, a)


def test_scoring_a_model_keeps_no_graph() -> None:
    model = MLP(2, [8, 8, 1])
    with no_grad():
        out = model([0.5, -1.0])
    assert out._prev == ()
    assert out.data == pytest.approx(model([0.5, -1.0]).data, rel=0.0, abs=0.0)


def test_the_language_interpreter_records_regardless() -> None:
    # execute.scalar builds graphs from the METHODS table: gradients stay correct inside no_grad.
    from autodiff_cli.execute import evaluate
    from autodiff_cli.language import parse

    with no_grad():
        evaluation = evaluate(parse("y = x*x + 3*x", "<test>"), {"x": 2.0})
    assert evaluation.grads()["x"] == 2 * 2.0 + 3  # dy/dx = 2x + 3
    assert math.isfinite(evaluation.values()["y"])
