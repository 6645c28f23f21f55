"""The op table: every operation of the engine and the language, defined once.

One ``Op`` per operation holds, side by side:

* ``name`` and ``arity``: the key used everywhere (program instructions, graph nodes,
  explain's rules) and how many operands it takes;
* ``written``: how the operation is written with its operands' names filled in,
  e.g. ``"{x} + {y}"`` or ``"tanh({x})"`` (``{c}`` is a power's constant exponent);
* ``scalar``: the kernel on floats, returning the result *and* its local derivative
  with respect to each operand, ``(out, d out/d x[, d out/d y])``; it raises
  ``DomainError`` outside the op's domain.  ``Value`` builds its arithmetic and its
  functions from these kernels, so the scalar engine has no maths of its own;
* ``rule``: each local derivative as people write it (``x`` and ``y`` are the
  operands, ``c`` a constant exponent), read by ``explain`` and the docs;
* ``domain`` and ``hint``: where the op is defined, and how to fix a domain error;
  ``overflow_hint`` when the result can exceed the float range;
* ``symbolic``: each local derivative as an expression *in the language itself*, read
  by the symbolic differentiator (``execute/symbolic.py``), which parses it once and
  instantiates it on the operands: ``x`` and ``y`` are the operands, ``c`` a constant
  exponent and ``out`` the op's own result (so ``tanh``'s is ``1 - out**2`` and shares
  the node already computed).  Where the kernel has a convention the language cannot
  write (``x**y``'s slope at a zero base), the difference is documented in the README
  and tested;
* ``vector``: room for a NumPy rule (the vectorized executor), filled in by its issue.

Adding a function to the language is one row here (plus tests): the grammar accepts
any name followed by ``(``, the compiler looks names up in ``FUNCTIONS``, ``Value``
gains a method of the same name, and explain, the graph and the docs read the row.

Standard library only; nothing here knows about ``Value``, parsing or printing.
"""

from __future__ import annotations

import math
from collections import namedtuple

__all__ = ["DERIVATIVE_RULES", "FUNCTIONS", "OPS", "DomainError", "Op", "op_key", "short_number"]


class DomainError(ArithmeticError):
    """An operation was applied outside its domain (log of 0, division by 0, overflow...)."""

    def __init__(self, op: str, message: str, overflow: bool = False) -> None:
        super().__init__(message)
        self.op = op
        self.message = message
        self.overflow = overflow  # the result exists but is too large for a float


class Op(namedtuple("Op", "name arity written scalar rule domain hint overflow_hint vector symbolic",
                    defaults=(None, None, None, None, None))):
    """One operation: how it is written, its value and local derivatives, and their rules.

    Fields: ``name`` (str), ``arity`` (int), ``written`` (str template), ``scalar`` (the
    float kernel), ``rule`` (tuple of str, one per operand), and the optional ``domain``,
    ``hint``, ``overflow_hint`` (str), ``vector`` (the NumPy rule) and ``symbolic`` (tuple
    of str, each local derivative in the language's own syntax).  A plain namedtuple:
    ``typing.NamedTuple`` compiles each annotation, which every start-up of the command
    would pay for.
    """

    __slots__ = ()

    @property
    def is_function(self) -> bool:
        """Written as a call, ``name(x)``: a function of the language and a method of ``Value``."""
        return self.written == f"{self.name}({{x}})"


def short_number(x: float) -> str:
    """The shortest text that reads back as x, as a program would write it: 2.0 -> '2', 0.1 -> '0.1'.

    -0.0 is '0' (its sign says nothing to a reader); NaN and infinities are 'nan', 'inf', '-inf'.
    """
    return str(int(x)) if x.is_integer() and abs(x) < 1e16 else repr(float(x))


OVERFLOW_HINT = "rescale the inputs, or rewrite the expression so intermediates stay below 1e308"

# --- arithmetic ------------------------------------------------------------------------------


def _add(x: float, y: float) -> tuple[float, float, float]:
    return x + y, 1.0, 1.0


def _sub(x: float, y: float) -> tuple[float, float, float]:
    return x - y, 1.0, -1.0


def _mul(x: float, y: float) -> tuple[float, float, float]:
    return x * y, y, x


def _div(x: float, y: float) -> tuple[float, float, float]:
    if y == 0.0:
        raise DomainError("/", "division by zero")
    out = x / y
    return out, 1.0 / y, -out / y


def _neg(x: float) -> tuple[float, float]:
    return -x, -1.0


def _identity(x: float) -> tuple[float, float]:
    return x, 1.0


# --- powers ----------------------------------------------------------------------------------


def _real_power(base: float, exponent: float) -> float:
    """base ** exponent as a finite real, or DomainError saying why not."""
    if base == 0.0 and exponent < 0.0:
        raise DomainError("**", f"0 raised to the negative power {exponent:g} is a division by zero")
    if base < 0.0 and not float(exponent).is_integer():
        raise DomainError(
            "**", f"negative base {base:g} to the non-integer power {exponent:g} is not a real number"
        )
    try:
        # In floats: with integer data (micrograd style) an int power never overflows, it
        # just grows, and the overflow would surface later as a bare OverflowError.
        result = float(base) ** float(exponent)
    except OverflowError:
        raise DomainError("**", f"{base:g} ** {exponent:g} overflows a float", overflow=True) from None
    if math.isinf(result):
        raise DomainError("**", f"{base:g} ** {exponent:g} overflows a float", overflow=True)
    return result


def _power_slope(base: float, exponent: float) -> float:
    """d/dbase base**exponent = exponent * base**(exponent-1), with PyTorch's conventions."""
    if exponent == 0.0:
        return 0.0
    if base == 0.0 and exponent < 1.0:
        return math.inf  # the slope of x**0.5 at 0 is vertical
    try:
        return exponent * float(base) ** (exponent - 1.0)
    except OverflowError:
        # |base ** (exponent-1)| is infinite; its sign is negative only for a negative base
        # and an odd integer power (a non-integer one never gets here: DomainError first).
        odd = base < 0.0 and (exponent - 1.0) % 2.0 == 1.0
        return math.copysign(math.inf, -exponent if odd else exponent)


def _exponent_slope(base: float, out: float) -> float:
    """d/dexponent base**exponent = base**exponent * ln(base), as PyTorch defines it."""
    if base > 0.0:
        return out * math.log(base)
    if base == 0.0:
        return 0.0  # PyTorch: zero where the base is 0 (exponent >= 0 here, else DomainError)
    return math.nan  # ln of a negative base: no real derivative


def _pow(x: float, y: float) -> tuple[float, float, float]:
    out = _real_power(x, y)
    return out, _power_slope(x, y), _exponent_slope(x, out)


def _pow_const(x: float, c: float) -> tuple[float, float]:
    """x ** c for a constant c: one operand, the exponent is part of the op."""
    return _real_power(x, c), _power_slope(x, c)


# --- functions -------------------------------------------------------------------------------


def _tanh(x: float) -> tuple[float, float]:
    t = math.tanh(x)  # saturates to +-1 instead of overflowing
    return t, 1.0 - t * t


def _exp(x: float) -> tuple[float, float]:
    try:
        e = math.exp(x)
    except OverflowError:
        raise DomainError("exp", f"exp({x:g}) overflows a float", overflow=True) from None
    return e, e


def _log(x: float) -> tuple[float, float]:
    if x <= 0.0:
        raise DomainError("log", f"log of {x:g} is undefined (log needs a positive argument)")
    return math.log(x), 1.0 / x


def _sqrt(x: float) -> tuple[float, float]:
    if x < 0.0:
        raise DomainError("sqrt", f"sqrt of {x:g} is undefined (sqrt needs a non-negative argument)")
    s = math.sqrt(x)
    return s, 0.5 / s if s else math.inf


def _relu(x: float) -> tuple[float, float]:
    return (x, 1.0) if x > 0.0 else (0.0, 0.0)  # relu'(0) = step(0) = 0, as in PyTorch


def _sigmoid(x: float) -> tuple[float, float]:
    if x >= 0.0:
        s = 1.0 / (1.0 + math.exp(-x))
    else:  # the same value, written so that exp cannot overflow
        e = math.exp(x)
        s = e / (1.0 + e)
    return s, s * (1.0 - s)


def _sin(x: float) -> tuple[float, float]:
    return math.sin(x), math.cos(x)


def _cos(x: float) -> tuple[float, float]:
    return math.cos(x), -math.sin(x)


def _sign(x: float) -> float:
    """-1, 0 or 1 (NaN for NaN): abs'(x) and the sign function of the language."""
    if x > 0.0:
        return 1.0
    if x < 0.0:
        return -1.0
    return 0.0 if x == 0.0 else x  # 0 for 0 and -0, NaN for NaN


def _abs(x: float) -> tuple[float, float]:
    return abs(x), _sign(x)  # abs'(0) = sign(0) = 0, as in PyTorch


def _sign_op(x: float) -> tuple[float, float]:
    return _sign(x), 0.0  # flat on each side; at the jump the convention is 0, as in PyTorch


def _step(x: float) -> tuple[float, float]:
    """Heaviside's step with step(0) = 0, so that relu'(x) = step(x) at every x, 0 included."""
    if x > 0.0:
        return 1.0, 0.0
    return (0.0 if x <= 0.0 else x), 0.0  # NaN stays NaN


# --- the table -------------------------------------------------------------------------------

_ROWS = (
    Op("+", 2, "{x} + {y}", _add, ("1", "1"), symbolic=("1", "1")),
    Op("-", 2, "{x} - {y}", _sub, ("1", "-1"), symbolic=("1", "-1")),
    Op("*", 2, "{x} * {y}", _mul, ("y", "x"), symbolic=("y", "x")),
    Op("/", 2, "{x} / {y}", _div, ("1/y", "-x/y**2"), domain="y != 0",
       hint="the divisor is 0 for these inputs; choose other values or guard it (e.g. x / (y*y + 1))",
       symbolic=("1/y", "-x/y**2")),
    Op("neg", 1, "-{x}", _neg, ("-1",), symbolic=("-1",)),
    Op("**", 2, "{x} ** {y}", _pow, ("y * x**(y-1)", "x**y * ln(x)"),
       domain="x > 0, or x = 0 and y >= 0, or x < 0 and y an integer",
       hint="a negative base needs an integer exponent, and 0 needs a non-negative one",
       symbolic=("y*x**(y - 1)", "out*log(x)")),
    Op("**c", 1, "{x}**{c}", _pow_const, ("c * x**(c-1)",),
       domain="x > 0, or x = 0 and c >= 0, or x < 0 and c an integer",
       hint="a negative base needs an integer exponent, and 0 needs a non-negative one",
       symbolic=("c*x**(c - 1)",)),
    Op("tanh", 1, "tanh({x})", _tanh, ("1 - tanh(x)**2",), symbolic=("1 - out**2",)),
    Op("exp", 1, "exp({x})", _exp, ("exp(x)",),
       overflow_hint="exp overflows above about 709.78; " + OVERFLOW_HINT, symbolic=("out",)),
    Op("log", 1, "log({x})", _log, ("1/x",), domain="x > 0",
       hint="log needs a positive argument; check the inputs that feed it", symbolic=("1/x",)),
    Op("sqrt", 1, "sqrt({x})", _sqrt, ("1 / (2*sqrt(x))",), domain="x >= 0",
       hint="sqrt needs a non-negative argument; check the inputs that feed it", symbolic=("1/(2*out)",)),
    Op("relu", 1, "relu({x})", _relu, ("1 if x > 0 else 0",), symbolic=("step(x)",)),
    Op("sigmoid", 1, "sigmoid({x})", _sigmoid, ("sigmoid(x) * (1 - sigmoid(x))",),
       symbolic=("out*(1 - out)",)),
    Op("sin", 1, "sin({x})", _sin, ("cos(x)",), symbolic=("cos(x)",)),
    Op("cos", 1, "cos({x})", _cos, ("-sin(x)",), symbolic=("-sin(x)",)),
    Op("abs", 1, "abs({x})", _abs, ("sign(x)",), symbolic=("sign(x)",)),
    Op("sign", 1, "sign({x})", _sign_op, ("0",), symbolic=("0",)),
    Op("step", 1, "step({x})", _step, ("0",), symbolic=("0",)),
    Op("=", 1, "{x}", _identity, ("1",), symbolic=("1",)),  # `b = a`: b gets a node of its own
)

OPS: dict[str, Op] = {op.name: op for op in _ROWS}
"""Every op by name; the names are also the ``_op`` of graph nodes (``**c`` nodes show
their exponent, ``**2``)."""

FUNCTIONS: dict[str, Op] = {op.name: op for op in _ROWS if op.is_function}
"""The language's functions (``tanh(x)``...), in the order the docs list them."""

DERIVATIVE_RULES: dict[str, tuple[str, ...]] = {op.name: op.rule for op in _ROWS}
"""The local derivative of each op with respect to each operand, as people write it."""


def op_key(node_op: str) -> str:
    """The ``OPS`` key of a graph node's ``_op``: ``'**2'`` -> ``'**c'``, others unchanged."""
    if node_op.startswith("**") and node_op != "**":
        return "**c"
    return node_op
