"""The float interpreter agrees with the scalar one bit for bit, errors included, however an
input is moved: it recomputes only the instructions that depend on that input."""

import math
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autodiff_cli.errors import AutodiffError, EvaluationError
from autodiff_cli.execute import evaluate
from autodiff_cli.execute.floats import FloatPoint
from autodiff_cli.language import parse

# The random-program generator of the differential test (tests/ is not a package).
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "properties"))
from test_differential import cases


def scalar_output(program, values, output=None):
    try:
        return evaluate(program, values, output, backward=False).root.data, None
    except AutodiffError as error:
        return None, str(error)


def float_output(point, name, value):
    try:
        return point.output_with(name, value), None
    except AutodiffError as error:
        return None, str(error)


def same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return a == b or (math.isnan(a) and math.isnan(b))


MOVES = st.sampled_from([0.0, 1e-9, -1e-6, 0.5, -2.0, 3.7, -1e3, 1e300, -1e-300, 710.0])


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.data_too_large])
@given(cases(), st.lists(st.tuples(st.integers(min_value=0, max_value=50), MOVES), min_size=1, max_size=6))
def test_random_programs_agree_with_evaluate(case, moves) -> None:
    program = parse(case.text, "<generated>")
    point = FloatPoint(program, case.values)
    base = evaluate(program, case.values, backward=False)
    assert point.value == base.root.data or (math.isnan(point.value) and math.isnan(base.root.data))
    inputs = [variable.name for variable in program.inputs]
    if not inputs:
        return
    at = {name: base.nodes[name].data for name in inputs}
    for which, move in moves:
        name = inputs[which % len(inputs)]
        value = at[name] + move
        want, want_error = scalar_output(program, {**at, name: value})
        got, got_error = float_output(point, name, value)
        assert same(got, want) and got_error == want_error, (case.text, name, value, got, want, got_error)


@pytest.mark.parametrize(
    ("text", "values", "name", "value"),
    [
        ("z = log(x)\ny = 2*x", {"x": 1.0}, "x", -1.0),     # an error off the output's path still counts
        ("y = exp(x)", {"x": 1.0}, "x", 800.0),             # overflow
        ("y = x / (x - 2)", {"x": 1.0}, "x", 2.0),          # division by zero
        ("y = x**0 + x**2", {"x": 1.0}, "x", 0.0),          # a constant power of 0
        ("y = a*b + c", {"a": 1.0, "b": 2.0, "c": 3.0}, "b", 5.0),
        ("b = a\ny = b*b", {"a": 3.0}, "a", -4.0),          # a copy
        ("y = (x-1)**1.5", {"x": 2.0}, "x", 0.5),           # a negative base
    ],
    ids=["error_off_path", "overflow", "division_by_zero", "power_zero", "middle_input", "copy",
         "negative_base"],
)
def test_hand_picked_moves(text, values, name, value) -> None:
    program = parse(text)
    point = FloatPoint(program, values)
    want, want_error = scalar_output(program, {**values, name: value})
    got, got_error = float_output(point, name, value)
    assert same(got, want) and got_error == want_error
    # Moving it back gives the base point again; so does moving another input.
    assert point.output_with(name, values[name]) == evaluate(program, values, backward=False).root.data


def test_inputs_can_be_moved_in_turn() -> None:
    program = parse("y = a*b + c*c")
    point = FloatPoint(program, {"a": 1.0, "b": 2.0, "c": 3.0})
    assert point.output_with("a", 2.0) == 2 * 2 + 9
    assert point.output_with("c", 1.0) == 1 * 2 + 1  # a is back to 1
    assert point.output_with("b", -1.0) == -1 + 9
    assert point.value == 11.0


def test_only_the_cone_is_recomputed() -> None:
    # Moving x0 touches its own term and the sum after it, not the 999 other tanh terms.
    terms = " + ".join(f"tanh(x{i})" for i in range(1000))
    program = parse(f"y = {terms}", "<wide>")
    point = FloatPoint(program, {f"x{i}": 0.1 for i in range(1000)})
    point.output_with("x999", 0.2)
    assert len(point._cone) == 2  # tanh(x999) and the last +
    point.output_with("x0", 0.2)
    assert len(point._cone) == 1 + 999


def test_errors_are_evaluation_errors_with_positions() -> None:
    point = FloatPoint(parse("y = log(x)"), {"x": 1.0})
    with pytest.raises(EvaluationError) as raised:
        point.output_with("x", 0.0)
    assert raised.value.position.column == 5


def test_missing_inputs_are_refused_as_evaluate_refuses_them() -> None:
    with pytest.raises(AutodiffError, match="no value for input x"):
        FloatPoint(parse("y = x"), {})
