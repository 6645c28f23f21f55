"""Operations outside their domain raise DomainError naming the op; points just inside do not."""

import math

import pytest

from autodiff_cli.engine import DomainError, Value

V = Value

# name -> (thunk, expected .op)
ERRORS = {
    "log(0)": (lambda: V(0.0).log(), "log"),
    "log(-0.0)": (lambda: V(-0.0).log(), "log"),
    "log(-1)": (lambda: V(-1.0).log(), "log"),
    "log(-inf-ish)": (lambda: V(-1e308).log(), "log"),
    "sqrt(-1)": (lambda: V(-1.0).sqrt(), "sqrt"),
    "sqrt(-1e-300)": (lambda: V(-1e-300).sqrt(), "sqrt"),
    "a/0": (lambda: V(1.0) / V(0.0), "/"),
    "a/-0.0": (lambda: V(1.0) / V(-0.0), "/"),
    "0/0": (lambda: V(0.0) / V(0.0), "/"),
    "a/0(number)": (lambda: V(1.0) / 0, "/"),
    "3/a(a=0)": (lambda: 3 / V(0.0), "/"),
    "0**-1": (lambda: V(0.0) ** -1, "**"),
    "0**-0.5": (lambda: V(0.0) ** -0.5, "**"),
    "0**y(y=-1)": (lambda: V(0.0) ** V(-1.0), "**"),
    "0**a(a=-1,reflected)": (lambda: 0 ** V(-1.0), "**"),
    "(-8)**(1/3)": (lambda: V(-8.0) ** (1 / 3), "**"),
    "(-8)**y(y=1/3)": (lambda: V(-8.0) ** V(1 / 3), "**"),
    "(-8)**a(a=1/3,reflected)": (lambda: (-8.0) ** V(1 / 3), "**"),
    "(-2)**0.5": (lambda: V(-2.0) ** 0.5, "**"),
    "exp(1000)": (lambda: V(1000.0).exp(), "exp"),
    "exp(710)": (lambda: V(710.0).exp(), "exp"),
    "10.**y(y=400.)": (lambda: V(10.0) ** V(400.0), "**"),
    "10.**400": (lambda: V(10.0) ** 400, "**"),
    "10**a(a=400.,reflected)": (lambda: 10 ** V(400.0), "**"),
    "(-10.)**y(y=401.)": (lambda: V(-10.0) ** V(401.0), "**"),
    "(1e-200)**-2": (lambda: V(1e-200) ** -2, "**"),
    "sin(inf)": (lambda: V(math.inf).sin(), "sin"),  # math.sin raises a bare ValueError
    "cos(-inf)": (lambda: V(-math.inf).cos(), "cos"),
}


@pytest.mark.parametrize("thunk, op", [pytest.param(*case, id=name) for name, case in ERRORS.items()])
def test_domain_error_names_the_op(thunk, op):
    with pytest.raises(DomainError) as info:
        thunk()
    err = info.value
    assert err.op == op
    assert isinstance(err, ArithmeticError)
    assert err.message and str(err) == err.message


def test_domain_error_leaves_operands_usable():
    x = V(0.0, label="x")
    with pytest.raises(DomainError):
        x.log()
    y = x * 3 + 1
    y.backward()
    assert x.grad == 3.0
    assert x.data == 0.0


# Just inside the domain: no error, and the value is what the math says.
BOUNDARY = {
    "sqrt(0)": (lambda: V(0.0).sqrt(), 0.0),
    "log(5e-324)": (lambda: V(5e-324).log(), math.log(5e-324)),
    "exp(709)": (lambda: V(709.0).exp(), math.exp(709.0)),
    "exp(-1e308)": (lambda: V(-1e308).exp(), 0.0),
    "0**0": (lambda: V(0.0) ** 0, 1.0),
    "0**y(y=0)": (lambda: V(0.0) ** V(0.0), 1.0),
    "0**0.5": (lambda: V(0.0) ** 0.5, 0.0),
    "(-8)**3.": (lambda: V(-8.0) ** 3.0, -512.0),
    "(-8)**y(y=2.)": (lambda: V(-8.0) ** V(2.0), 64.0),
    "(-2)**-3": (lambda: V(-2.0) ** -3, -0.125),
    "0/5": (lambda: V(0.0) / V(5.0), 0.0),
    "10.**308": (lambda: V(10.0) ** 308, 1e308),
    "2**a(a=1023.)": (lambda: 2 ** V(1023.0), 2.0**1023),
}


@pytest.mark.parametrize("thunk, value", [pytest.param(*case, id=name) for name, case in BOUNDARY.items()])
def test_boundary_points_are_in_domain(thunk, value):
    out = thunk()
    assert math.isclose(out.data, value, rel_tol=1e-15, abs_tol=0.0)


# With integer data (micrograd style, Value(10) rather than Value(10.0)) and a Value exponent,
# 10 ** 400 as Python ints would be an exact int, not an overflow: the engine must compute in
# floats and raise DomainError('**'), not let a bare OverflowError out later.
def test_integer_data_power_overflow_is_a_domain_error():
    with pytest.raises(DomainError) as info:
        V(10) ** V(400)
    assert info.value.op == "**"


def test_integer_data_constant_exponent_overflow_is_a_domain_error():
    with pytest.raises(DomainError) as info:
        V(10) ** 400
    assert info.value.op == "**"


@pytest.mark.parametrize("divide", [
    lambda: Value(1.0) / Value(0.0), lambda: Value(1.0) / 0, lambda: 2 / Value(0.0), lambda: Value(0.0) ** -1,
], ids=["value-by-value", "value-by-number", "number-by-value", "zero-to-negative-power"])
def test_a_division_by_zero_is_also_the_zero_division_error_micrograd_raises(divide) -> None:
    with pytest.raises(ZeroDivisionError):
        divide()
    with pytest.raises(DomainError):
        divide()


@pytest.mark.parametrize(("thunk", "value", "slope"), [
    (lambda: V(math.nan).relu(), math.nan, math.nan),  # micrograd and PyTorch keep NaN too
    (lambda: V(math.inf) ** 0.5, math.inf, 0.0),  # as sqrt(inf): no overflow, the base is infinite
    (lambda: V(math.inf).sqrt(), math.inf, 0.0),
], ids=["relu(nan)", "inf**0.5", "sqrt(inf)"])
def test_infinite_and_nan_operands_propagate(thunk, value, slope) -> None:
    out = thunk()
    assert out.data == value or (math.isnan(value) and math.isnan(out.data))
    assert out._da == slope or (math.isnan(slope) and math.isnan(out._da))


@pytest.mark.parametrize("thunk", [lambda: V(-1.0).log(), lambda: V(1.0) / 0, lambda: V(10.0) ** 400],
                         ids=["domain", "division-by-zero", "overflow"])
def test_errors_survive_pickling(thunk) -> None:
    # A ProcessPoolExecutor pickles a worker's exception for its caller.
    import pickle

    with pytest.raises(DomainError) as raised:
        thunk()
    again = pickle.loads(pickle.dumps(raised.value))
    assert type(again) is type(raised.value)
    assert (again.op, again.message, again.overflow) == (raised.value.op, raised.value.message,
                                                         raised.value.overflow)
    assert str(again) == str(raised.value)
