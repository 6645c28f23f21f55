"""What a Value combines with: other Values and real numbers (Python's and NumPy's), nothing else."""

from __future__ import annotations

import operator
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

from autodiff_cli.engine import Value

OPERATORS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv, "**": operator.pow}


@pytest.mark.parametrize("symbol", list(OPERATORS), ids=list(OPERATORS))
@pytest.mark.parametrize("other", ["3", " 3 ", "nan", b"3", None, [3.0], {"x": 3}, 1j, np.complex64(1 + 2j)],
                         ids=["str", "padded-str", "nan-str", "bytes", "None", "list", "dict", "complex",
                              "numpy-complex64"])
def test_anything_but_a_number_is_a_type_error_on_either_side(symbol: str, other: object) -> None:
    # micrograd and PyTorch raise TypeError here; float() would have read the strings.
    apply = OPERATORS[symbol]
    with pytest.raises(TypeError):
        apply(Value(2.0), other)
    with pytest.raises(TypeError):
        apply(other, Value(2.0))


@pytest.mark.parametrize("symbol", list(OPERATORS), ids=list(OPERATORS))
@pytest.mark.parametrize("other", [3, 3.0, True, np.float64(3.0), np.float32(3.0), np.int64(3), Fraction(3, 1),
                                   Decimal("3")],
                         ids=["int", "float", "bool", "float64", "float32", "int64", "fraction", "decimal"])
def test_real_numbers_are_constants_on_either_side(symbol: str, other: object) -> None:
    apply = OPERATORS[symbol]
    number = float(other)  # type: ignore[arg-type]
    assert apply(Value(2.0), other).data == apply(2.0, number)
    assert apply(other, Value(2.0)).data == apply(number, 2.0)


def test_a_numpy_array_operand_gets_its_turn() -> None:
    # NotImplemented from Value lets the array apply the operation element by element.
    result = Value(2.0) * np.array([1.0, 3.0])
    assert [node.data for node in result] == [2.0, 6.0]


def test_a_new_operation_is_a_node_with_its_local_derivatives() -> None:
    # d/dx of x * exp(x) at x = 1 is exp(1) + exp(1), by hand.
    import math

    x = Value(1.0)
    e = math.exp(x.data)
    y = x * Value(e, (x,), "exp", local=(e,))
    y.backward()
    assert x.grad == 2 * math.e


def test_two_operands_take_two_local_derivatives() -> None:
    a, b = Value(2.0), Value(5.0)
    c = Value(a.data * b.data, (a, b), "mul", local=(b.data, a.data))
    c.backward()
    assert (a.grad, b.grad) == (5.0, 2.0)
    with pytest.raises(ValueError, match="local gives 1 derivatives for 2 operands"):
        Value(1.0, (a, b), "mul", local=(1.0,))


def test_setting_a_micrograd_backward_closure_says_what_to_do_instead() -> None:
    node = Value(1.0) * 2.0
    with pytest.raises(AttributeError, match=r"local=\(d data / d x,\)"):
        node._backward = lambda: None  # type: ignore[method-assign, assignment]
    node.grad = 1.0
    node._backward()  # micrograd's per-node step still works
    assert node._a.grad == 2.0


@pytest.mark.parametrize(("children", "local", "message"), [
    ((), (), None),  # a leaf, said the long way
    ((), (1.0,), "local gives 1 derivatives for 0 operands"),
    ((Value(1.0),), (), "local gives 0 derivatives for 1 operands"),
], ids=["leaf", "derivative-without-operand", "operand-without-derivative"])
def test_local_must_match_the_operands(children: tuple[Value, ...], local: tuple[float, ...],
                                       message: str | None) -> None:
    if message is None:
        node = Value(2.0, children, "", local=local)
        assert node._prev == () and node._local == ()
    else:
        with pytest.raises(ValueError, match=message):
            Value(2.0, children, "op", local=local)


@pytest.mark.parametrize("data", ["1", b"1", None, 1j, np.complex128(1.0), np.complex64(1 + 2j), [1.0]],
                         ids=["str", "bytes", "None", "complex", "numpy-complex", "numpy-complex64", "list"])
def test_a_value_of_anything_but_a_real_number_is_a_type_error(data: object) -> None:
    # Value("1") + Value("2") was Value('12'): a forgotten float() on text read from a file.
    with pytest.raises(TypeError, match=f"a Value holds a real number, not {type(data).__name__}"):
        Value(data)  # type: ignore[arg-type]


@pytest.mark.parametrize("data, kept", [
    (3, 3.0), (2.5, 2.5), (True, 1.0), (np.float64(1.5), 1.5),
    (np.int64(3), 3.0), (Fraction(1, 4), 0.25), (Decimal("1.5"), 1.5),
], ids=["int", "float", "bool", "float64", "int64", "fraction", "decimal"])
def test_a_value_holds_every_real_number_as_a_float(data: object, kept: float) -> None:
    # A float in both builds of the engine (the compiled one stores a C double).
    value = Value(data)  # type: ignore[arg-type]
    assert value.data == kept and type(value.data) is float
    assert (value * 2).data == 2 * float(kept)  # type: ignore[arg-type]
