"""Evaluating programs: inputs, overrides, domain errors with positions, structure-only graphs."""

import math

import pytest

from autodiff_cli.errors import EvaluationError, InputError
from autodiff_cli.execute import evaluate
from autodiff_cli.language import parse


def test_karpathy_example_hand_derived() -> None:
    # L = (a*b + c)*f: dL/da = b*f, dL/db = a*f, dL/dc = f, dL/df = a*b + c.
    program = parse("e = a*b\nd = e + c\nL = d*f")
    evaluation = evaluate(program, {"a": 2, "b": -3, "c": 10, "f": -2})
    assert evaluation.output == "L"
    assert evaluation.root.data == -8.0
    assert evaluation.grads() == {"a": 6.0, "b": -4.0, "e": -2.0, "c": -2.0, "d": -2.0, "f": 4.0, "L": 1.0}
    assert [evaluation.kind(n) for n in evaluation.nodes] == [
        "input", "input", "intermediate", "input", "intermediate", "input", "output"]


def test_set_overrides_a_declared_default() -> None:
    program = parse("a = 1\ny = a*a")
    assert evaluate(program).root.data == 1.0
    assert evaluate(program, {"a": 3.0}).root.data == 9.0


def test_unused_set_is_a_warning() -> None:
    evaluation = evaluate(parse("y = 2*x"), {"x": 1.0, "zz": 5.0})
    assert evaluation.warnings == ["'zz' is not used by the program; its value is ignored"]


def test_setting_a_computed_name_is_an_error_that_says_where() -> None:
    with pytest.raises(InputError) as raised:
        evaluate(parse("a = 1\ne = a*b\ny = e+1", "m.ad"), {"b": 2.0, "e": 5.0})
    assert raised.value.message == "'e' is computed by the program, so it cannot be set"
    assert (raised.value.position.line, raised.value.position.column) == (2, 1)


def test_missing_inputs_are_listed_at_once() -> None:
    with pytest.raises(InputError) as raised:
        evaluate(parse("y = a*b + c*d", "m.ad"), {"b": 1.0})
    error = raised.value
    assert error.message == "no value for inputs a, c, d"
    assert "--set a=VALUE --set c=VALUE --set d=VALUE" in error.hint
    assert (error.position.line, error.position.column) == (1, 5)


def test_thousands_of_missing_inputs_are_counted_not_listed() -> None:
    program = parse("y = " + " + ".join(f"x{i}" for i in range(5000)))
    with pytest.raises(InputError) as raised:
        evaluate(program)
    error = raised.value
    assert error.message == "no value for inputs x0, x1, x2, x3, x4, x5, x6, x7, x8, x9 and 4,990 more"
    assert len(error.notes) == 9
    assert "--set x0=VALUE --set x1=VALUE --set x2=VALUE ..." in error.hint


def test_output_selects_another_variable() -> None:
    evaluation = evaluate(parse("a = 2; b = a*a; c = b*a"), output="b")
    assert evaluation.root.data == 4.0
    assert evaluation.grads()["a"] == 4.0
    assert evaluation.grads()["c"] == 0.0  # c does not feed b


def test_unknown_output_is_an_error() -> None:
    with pytest.raises(InputError, match="--output 'q' is not a variable"):
        evaluate(parse("a = 2; b = a*a"), output="q")


@pytest.mark.parametrize(
    "text, inputs, op, column",
    [
        ("y = log(x)", {"x": -1.0}, "log", 5),
        ("y = log(x)", {"x": 0.0}, "log", 5),
        ("y = sqrt(x)", {"x": -4.0}, "sqrt", 5),
        ("y = 1 / x", {"x": 0.0}, "/", 7),
        ("y = x ** 0.5", {"x": -2.0}, "**", 7),
        ("y = x ** p", {"x": -2.0, "p": 0.5}, "**", 7),
        ("y = x ** -1", {"x": 0.0}, "**", 7),
        ("y = exp(x)", {"x": 1000.0}, "exp", 5),
        ("y = x * x", {"x": 1e200}, "*", 7),
        ("y = x + x", {"x": 1e308}, "+", 7),
    ],
    ids=["log-negative", "log-zero", "sqrt-negative", "divide-by-zero", "negative-base-fractional-power",
         "negative-base-value-exponent", "zero-negative-power", "exp-overflow", "mul-overflow",
         "add-overflow"],
)
def test_domain_errors_name_the_operation_and_position(text, inputs, op, column) -> None:
    with pytest.raises(EvaluationError) as raised:
        evaluate(parse(text, "m.ad"), inputs)
    error = raised.value
    assert f"'{op}'" in error.message
    assert (error.position.line, error.position.column) == (1, column)
    assert str(error).startswith(f"m.ad:1:{column}: error: ")


def test_structure_only_when_inputs_are_missing_and_allowed() -> None:
    evaluation = evaluate(parse("y = log(a) / b"), allow_missing=True)
    assert not evaluation.has_values
    assert math.isnan(evaluation.root.data)
    assert evaluation.root._op == "/"


def test_negative_base_to_integer_value_exponent_has_nan_exponent_gradient() -> None:
    # d/dp x**p = x**p * ln(x): no real value for x < 0 (PyTorch gives NaN too).
    evaluation = evaluate(parse("y = x ** p"), {"x": -2.0, "p": 3.0})
    assert evaluation.root.data == -8.0
    assert evaluation.grads()["x"] == 12.0
    assert math.isnan(evaluation.grads()["p"])


@pytest.mark.parametrize(
    ("program", "message", "hint"),
    [
        ("y = 10**400", "10 ** 400 overflows a float (in '**')", "rescale the inputs"),
        ("y = exp(1000)", "exp(1000) overflows a float (in 'exp')", "exp overflows above about 709.78"),
        ("y = (-2)**0.5", "negative base -2 to the non-integer power 0.5", "a negative base needs an integer"),
        ("y = 0**-1", "0 raised to the negative power -1", "a negative base needs an integer exponent, and 0"),
    ],
    ids=["power_overflow", "exp_overflow", "negative_base", "zero_to_negative"],
)
def test_domain_errors_get_the_hint_for_their_cause(program: str, message: str, hint: str) -> None:
    with pytest.raises(EvaluationError) as raised:
        evaluate(parse(program))
    assert raised.value.message.startswith(message)
    assert raised.value.hint.startswith(hint)


# --- the backward pass of evaluate: Value.backward's numbers, with progress -------------------


def test_evaluate_reports_progress_up_to_the_total() -> None:
    program = parse("\n".join(f"v{i} = tanh(v{i - 1}) * 0.5" if i else "v0 = 1" for i in range(70_000)))
    seen: list[tuple[int, int]] = []
    evaluation = evaluate(program, progress=lambda done, total: seen.append((done, total)))
    total = 2 * len(program.instructions)
    assert seen[-1] == (total, total)
    assert [done for done, _ in seen] == sorted(done for done, _ in seen)  # never backwards
    assert all(every == total for _, every in seen)
    assert len(seen) >= 4  # building and differentiating, in slices
    plain = evaluate(program)
    assert [n.grad for n in evaluation.nodes.values()] == [n.grad for n in plain.nodes.values()]
