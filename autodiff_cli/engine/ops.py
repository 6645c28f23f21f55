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
* ``vector``: the same maths on float64 NumPy columns, for the vectorized executor
  (``execute/vectorized.py``): ``vector(np, x[, y])`` (``**c``: ``vector(np, x, c)``)
  returns ``(out, slopes)``, where ``slopes()`` computes the local derivatives only when
  a gradient needs them.  NumPy is passed in as ``np``, so this module never imports
  it.  Operands are arrays (one row per element) or NumPy scalars (the same value on
  every row).  There are no domain checks here: outside its domain every op gives a
  non-finite result (NaN or an infinity), and the executor turns non-finite values into
  the same per-row errors the scalar kernels raise;
* ``symbolic``: each local derivative as an expression *in the language itself*, read
  by the symbolic differentiator (``execute/symbolic.py``), which parses it once and
  instantiates it on the operands: ``x`` and ``y`` are the operands, ``c`` a constant
  exponent and ``out`` the op's own result (so ``tanh``'s is ``1 - out**2`` and shares
  the node already computed).  Where the kernel has a convention the language cannot
  write (``x**y``'s slope at a zero base), the difference is documented in the README
  and tested;
* ``python``, ``python_helper`` and ``latex`` (functions only): how ``autodiff diff``
  writes a call in Python and in LaTeX (``render/formulas.py``), a template where ``{x}``
  stands for the operand (filled in by text replacement, so LaTeX's own braces are
  written as they are: ``\\sqrt{{x}}``).  A Python form that needs more than ``math``
  names a function of the generated module, ``python_helper`` its source, which must
  compute what ``scalar`` computes (a test checks it at kinks and extremes).  The
  operators (``+ - * / neg ** **c =``) have no such fields: their layout in every
  syntax depends on precedence, which the formulas lay out themselves.

Adding a function to the language is one row here (plus tests): the grammar accepts
any name followed by ``(``, the compiler looks names up in ``FUNCTIONS``, ``Value``
gains a method of the same name, and explain, the graph, the docs and ``diff``'s
formats read the row.

Standard library only; nothing here knows about ``Value``, parsing or printing.
"""

from __future__ import annotations

import math
import sys
from collections import namedtuple
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    # The vector kernels' operands: a float64 ndarray (one element per row) or a NumPy
    # float64 scalar (the same on every row); their local derivatives, made on demand.
    Column = Any
    Slopes = Callable[[], tuple[Any, ...]]

__all__ = ["CALLS", "DERIVATIVE_RULES", "FUNCTIONS", "OPS", "DivisionByZero", "DomainError", "Op", "op_key", "short_number"]


class DomainError(ArithmeticError):
    """An operation was applied outside its domain (log of 0, division by 0, overflow...)."""

    def __init__(self, op: str, message: str, overflow: bool = False) -> None:
        super().__init__(message)
        self.op = op
        self.message = message
        self.overflow = overflow  # the result exists but is too large for a float

    def __reduce__(self) -> tuple[type, tuple[str, str, bool]]:
        # Made again from all three (args holds the message only): a worker process's
        # error reaches its caller (ProcessPoolExecutor pickles it).
        return type(self), (self.op, self.message, self.overflow)


class DivisionByZero(DomainError, ZeroDivisionError):
    """A division by zero (``x/0``, ``0 ** -1``): also a ZeroDivisionError, which is what
    micrograd raises there, so code written for micrograd that catches it still does."""


class Op(namedtuple("Op", "name arity written scalar rule domain hint overflow_hint vector symbolic "
                          "python python_helper latex exact parity sign numpy numpy_helpers activation "
                          "kink where_positive power propagates latex_aliases "
                          "elementwise shape forward vjp jvp written_param language_vjp unroll reads indices arguments rule_n "
                          "method",
                    defaults=(None, (), None, None, None, None, None, None, None, None, False, None, None, None, (),
                              None, False, None, None, (), (),
                              False, None, None, None, None, None, None, None, None, (), (), None, None))):
    """One op of the language, elementwise or not: the one entry type of the registry
    (``engine/registry.py``, whose ``ENTRIES`` holds every op by name).

    The fields below are those of an elementwise op, the rows of this module; the fields every
    entry has (``elementwise``, ``shape``, ``forward``, ``vjp``, ``jvp``, ``language_vjp``,
    ``unroll``, ``reads``, ``indices``, ``arguments``, ``written_param``, ``rule_n``) are described in
    ``tensor_ops.py``, which writes them for the other ops and fills them in for these from
    their kernels (``elementwise_entry``).  ``rule`` is, for an elementwise op, its local
    derivative per operand (``1/y``); for any other, its VJP per operand in matrix form
    (``dL/dx = dL/dout @ transpose(y)``).

    Fields: ``name`` (str), ``arity`` (int), ``written`` (str template), ``scalar`` (the
    float kernel), ``rule`` (tuple of str, one per operand), and the optional ``domain``,
    ``hint``, ``overflow_hint`` (str: a template, ``overflow_advice``), ``vector`` (the NumPy kernel), ``symbolic`` (tuple
    of str, each local derivative in the language's own syntax), and for functions
    ``python``, ``python_helper`` and ``latex`` (str: the call in Python, the source of a
    function it needs, the call in LaTeX).  Facts the simplifier and ``check`` read:
    ``exact`` (bool: the result is the operand's value, its negation or a constant, so it
    needs no rounding), ``parity`` (``"even"``: f(-x) = f(x); ``"odd"``: f(-x) = -f(x)) and
    ``sign`` (what is known of the result's sign in float64: ``"nonnegative"``, or
    ``"operand"``: positive where the operand is positive, else non-negative).  For functions,
    ``numpy`` is the call in NumPy Python (``np.tanh({x})``), and ``numpy_helpers`` the
    ``(name, source)`` of each function of the generated module it calls, computing what
    ``vector`` computes bit for bit (a test holds them equal out to |x| = 700).  ``activation``:
    for a function a layer applies to its units, the limits ``(low, high)`` where its gradient
    vanishes (``high`` None: a unit held at ``low`` is dead, as relu's at 0), which fit's report
    reads to find dead or saturated units.
    ``kink``: the derivative jumps where the operand is 0, or for two operands where they are
    equal (a claim or a check that lands there cannot be judged by slopes).  ``where_positive``: what the function is for a positive operand,
    ``"operand"`` (also at 0) or ``"one"``, so the simplifier drops it where the operand's sign is
    known.  ``power``: the function is ``x**power`` where it is defined (``sqrt``: 0.5).
    ``propagates``: the operands whose non-finite value always makes the result non-finite.
    ``latex_aliases``: other LaTeX commands read as the function in a claim (``\\ln`` for log).
    ``method``: for an operator, the name of ``Value``'s method that applies it (``__add__``,
    ``__neg__``, ``identity``; ``**`` and ``**c`` both ``__pow__``); None for a call, whose
    method is its name.
    A plain namedtuple:
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


# An op's ``overflow_hint`` names the limits of the precision it ran in: {largest} (the largest
# float, about) and {log_largest} (the largest float's log, where exp overflows), filled in by
# ``overflow_advice`` from these, so that a float32 run is told float32's limits.
_FLOAT_LIMITS = {"float64": (sys.float_info.max, "1e308"), "float32": ((2 - 2**-23) * 2.0**127, "3.4e38")}
_RESCALE = "rescale the inputs, or rewrite the expression so intermediates stay below {largest}"


def overflow_advice(op: Op | None, precision: str = "float64") -> str:
    """How to fix an overflow of ``op`` (its ``overflow_hint``, else the general advice), with the
    limits of ``precision`` ('float64' or 'float32')."""
    largest, written = _FLOAT_LIMITS[precision]
    template = (op.overflow_hint if op is not None else None) or _RESCALE
    return template.format(largest=written, log_largest=f"{math.log(largest):.2f}")


OVERFLOW_HINT = _RESCALE.format(largest=_FLOAT_LIMITS["float64"][1])  # float64's, for the float64 executors


# Constant local derivatives, shared by the vector kernels of + - neg = sign step and x**0, x**1.
def _one() -> tuple[float]:
    return (1.0,)


def _minus_one() -> tuple[float]:
    return (-1.0,)


def _zero() -> tuple[float]:
    return (0.0,)


def _one_one() -> tuple[float, float]:
    return (1.0, 1.0)


def _one_minus_one() -> tuple[float, float]:
    return (1.0, -1.0)


# --- arithmetic ------------------------------------------------------------------------------


def _add(x: float, y: float) -> tuple[float, float, float]:
    return x + y, 1.0, 1.0


def _add_vector(np: Any, x: Column, y: Column) -> tuple[Column, Slopes]:
    return x + y, _one_one


def _sub(x: float, y: float) -> tuple[float, float, float]:
    return x - y, 1.0, -1.0


def _sub_vector(np: Any, x: Column, y: Column) -> tuple[Column, Slopes]:
    return x - y, _one_minus_one


def _mul(x: float, y: float) -> tuple[float, float, float]:
    return x * y, y, x


def _mul_vector(np: Any, x: Column, y: Column) -> tuple[Column, Slopes]:
    return x * y, lambda: (y, x)


def _div(x: float, y: float) -> tuple[float, float, float]:
    if y == 0.0:
        raise DivisionByZero("/", "division by zero")
    out = x / y
    return out, 1.0 / y, -out / y


def _div_vector(np: Any, x: Column, y: Column) -> tuple[Column, Slopes]:
    out = x / y  # inf or NaN where y == 0
    return out, lambda: (1.0 / y, -out / y)


def _neg(x: float) -> tuple[float, float]:
    return -x, -1.0


def _neg_vector(np: Any, x: Column) -> tuple[Column, Slopes]:
    return -x, _minus_one


def _identity(x: float) -> tuple[float, float]:
    return x, 1.0


def _identity_vector(np: Any, x: Column) -> tuple[Column, Slopes]:
    return x, _one  # the same array: the executor never writes into a register's values


# --- powers ----------------------------------------------------------------------------------


def _real_power(base: float, exponent: float) -> float:
    """base ** exponent as a finite real, or DomainError saying why not (numbers in full: a
    base of 1.0000001 shown as '1' would make '1 ** 1e+308 overflows' read as nonsense)."""
    if base == 0.0 and exponent < 0.0:
        raise DivisionByZero("**", f"0 raised to the negative power {short_number(float(exponent))} is a division by zero")
    if base < 0.0 and not float(exponent).is_integer():
        raise DomainError(
            "**", f"negative base {short_number(float(base))} to the non-integer power {short_number(float(exponent))} is not a real number"
        )
    try:
        # In floats: with integer data (micrograd style) an int power never overflows, it
        # just grows, and the overflow would surface later as a bare OverflowError.
        result = float(base) ** float(exponent)
    except OverflowError:
        raise DomainError("**", f"{short_number(float(base))} ** {short_number(float(exponent))} overflows a float", overflow=True) from None
    if math.isinf(result) and math.isfinite(base) and math.isfinite(exponent):  # inf ** 0.5 is inf, as sqrt
        raise DomainError("**", f"{short_number(float(base))} ** {short_number(float(exponent))} overflows a float", overflow=True)
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


def _pow_vector(np: Any, x: Column, y: Column) -> tuple[Column, Slopes]:
    out = np.power(x, y)  # NaN for a negative base and a fractional exponent, inf for 0 ** negative

    def slopes() -> tuple[Column, Column]:
        # _power_slope: 0 where y == 0 (the formula would give 0 * inf at x == 0, and -0.0
        # for a negative x); +inf at a zero base for y < 1 (the formula gives -inf for
        # x = -0.0 when y - 1 rounds to -1, an odd power); elsewhere the formula.
        dx = np.where(y == 0.0, 0.0, np.where((x == 0.0) & (y < 1.0), np.inf, y * np.power(x, y - 1.0)))
        # _exponent_slope: out * ln(x) for x > 0, 0 where x == 0, NaN for a negative base.
        dy = np.where(x > 0.0, out * np.log(x), np.where(x == 0.0, 0.0, np.nan))
        return dx, dy.astype(np.result_type(out), copy=False)  # the constants alone are float64

    return out, slopes


def _pow_const(x: float, c: float) -> tuple[float, float]:
    """x ** c for a constant c: one operand, the exponent is part of the op."""
    return _real_power(x, c), _power_slope(x, c)


def _pow_const_vector(np: Any, x: Column, c: float) -> tuple[Column, Slopes]:
    out = np.power(x, c)
    # c * x**(c-1) as _power_slope computes it; the constant exponents need no power at all.
    if c == 0.0:
        return out, _zero
    if c == 1.0:
        return out, _one
    if c == 2.0:
        return out, lambda: (2.0 * x,)
    if c < 1.0:  # +inf at a zero base, as for x**y (below 0 the row has failed anyway)
        return out, lambda: (np.where(x == 0.0, np.inf, c * np.power(x, c - 1.0)),)
    return out, lambda: (c * np.power(x, c - 1.0),)


# --- functions -------------------------------------------------------------------------------


def _tanh(x: float) -> tuple[float, float]:
    t = math.tanh(x)  # saturates to +-1 instead of overflowing
    return t, 1.0 - t * t


def _tanh_vector(np: Any, x: Column) -> tuple[Column, Slopes]:
    t = np.tanh(x)
    return t, lambda: (1.0 - t * t,)


def _exp(x: float) -> tuple[float, float]:
    try:
        e = math.exp(x)
    except OverflowError:
        raise DomainError("exp", f"exp({x:g}) overflows a float", overflow=True) from None
    return e, e


def _exp_vector(np: Any, x: Column) -> tuple[Column, Slopes]:
    e = np.exp(x)  # inf where it overflows
    return e, lambda: (e,)


def _log(x: float) -> tuple[float, float]:
    if x <= 0.0:
        raise DomainError("log", f"log of {x:g} is undefined (log needs a positive argument)")
    return math.log(x), 1.0 / x


def _log_vector(np: Any, x: Column) -> tuple[Column, Slopes]:
    return np.log(x), lambda: (1.0 / x,)  # -inf at 0, NaN below


def _sqrt(x: float) -> tuple[float, float]:
    if x < 0.0:
        raise DomainError("sqrt", f"sqrt of {x:g} is undefined (sqrt needs a non-negative argument)")
    s = math.sqrt(x)
    return s, 0.5 / s if s else math.inf


def _sqrt_vector(np: Any, x: Column) -> tuple[Column, Slopes]:
    s = np.sqrt(x)  # NaN below 0
    # abs: sqrt(-0.0) is -0.0, whose slope is +inf, as at 0 (0.5 / 0 is inf).
    return s, lambda: (0.5 / np.abs(s),)


def _relu(x: float) -> tuple[float, float]:
    if x > 0.0:
        return x, 1.0
    if x <= 0.0:
        return 0.0, 0.0  # relu'(0) = step(0) = 0, as in PyTorch
    return x, x  # NaN stays NaN, value and slope (step(NaN) is NaN), as in micrograd and PyTorch


def _relu_vector(np: Any, x: Column) -> tuple[Column, Slopes]:
    # + 0.0 turns the -0.0 that maximum may keep for x = -0.0 into 0.0, the scalar's result.
    # The slope is a boolean column: multiplying by it multiplies by 1.0 or 0.0.
    out = np.maximum(x, 0.0)
    out += 0.0  # (in place: one array of the activation's size, not two)
    return out, lambda: (x > 0.0,)


def _sigmoid(x: float) -> tuple[float, float]:
    if x >= 0.0:
        s = 1.0 / (1.0 + math.exp(-x))
    else:  # the same value, written so that exp cannot overflow
        e = math.exp(x)
        s = e / (1.0 + e)
    return s, s * (1.0 - s)


def _sigmoid_vector(np: Any, x: Column) -> tuple[Column, Slopes]:
    # The scalar kernel's two forms at once: e = exp(-|x|) <= 1 never overflows, and the
    # numerator max(e, x >= 0) is 1 for x >= 0 (1/(1+exp(-x))) and e below (e/(1+e)).
    e = np.exp(-np.abs(x))
    s = np.maximum(e, x >= 0.0) / (1.0 + e)
    return s, lambda: (s * (1.0 - s),)


def _softplus(x: float) -> tuple[float, float]:
    # log(1 + e**x) as max(x, 0) + log1p(e**-|x|): exp never overflows, and far below 0 the
    # value is e**x itself rather than log(1 + tiny) rounded to 0 too early.  Its slope is sigmoid.
    e = math.exp(-abs(x))
    slope = 1.0 / (1.0 + e) if x >= 0.0 else e / (1.0 + e)
    return max(x, 0.0) + math.log1p(e), slope


def _softplus_vector(np: Any, x: Column) -> tuple[Column, Slopes]:
    e = np.exp(-np.abs(x))
    return np.maximum(x, 0.0) + np.log1p(e), lambda: (np.maximum(e, x >= 0.0) / (1.0 + e),)


def _periodic_at(op: str, x: float) -> DomainError:
    return DomainError(op, f"{op} of {short_number(x)} is undefined")


def _sin(x: float) -> tuple[float, float]:
    if math.isinf(x):
        raise _periodic_at("sin", x)  # math.sin raises a bare ValueError
    return math.sin(x), math.cos(x)


def _sin_vector(np: Any, x: Column) -> tuple[Column, Slopes]:
    return np.sin(x), lambda: (np.cos(x),)


def _cos(x: float) -> tuple[float, float]:
    if math.isinf(x):
        raise _periodic_at("cos", x)
    return math.cos(x), -math.sin(x)


def _cos_vector(np: Any, x: Column) -> tuple[Column, Slopes]:
    return np.cos(x), lambda: (-np.sin(x),)


def _sign(x: float) -> float:
    """-1, 0 or 1 (NaN for NaN): abs'(x) and the sign function of the language."""
    if x > 0.0:
        return 1.0
    if x < 0.0:
        return -1.0
    return 0.0 if x == 0.0 else x  # 0 for 0 and -0, NaN for NaN


def _abs(x: float) -> tuple[float, float]:
    return abs(x), _sign(x)  # abs'(0) = sign(0) = 0, as in PyTorch


def _abs_vector(np: Any, x: Column) -> tuple[Column, Slopes]:
    return np.abs(x), lambda: (np.sign(x),)  # np.sign gives 0.0 at both zeros, NaN for NaN


def _sign_op(x: float) -> tuple[float, float]:
    return _sign(x), 0.0  # flat on each side; at the jump the convention is 0, as in PyTorch


def _sign_vector(np: Any, x: Column) -> tuple[Column, Slopes]:
    return np.sign(x), _zero


def _step(x: float) -> tuple[float, float]:
    """Heaviside's step with step(0) = 0, so that relu'(x) = step(x) at every x, 0 included."""
    if x > 0.0:
        return 1.0, 0.0
    return (0.0 if x <= 0.0 else x), 0.0  # NaN stays NaN


def _step_vector(np: Any, x: Column) -> tuple[Column, Slopes]:
    # NaN gives 0 here (the scalar keeps NaN), but a row holding a NaN has already failed.
    return (x > 0.0).astype(np.result_type(x, 0.0)), _zero  # float32 stays float32


# --- maximum and minimum: elementwise, of two operands --------------------------------------------
# At a tie each operand gets half the slope, as PyTorch (where(self == other, grad / 2, grad)) and
# JAX do: the mean of the one-sided derivatives, and the two slopes still add up to 1.


def _maximum(x: float, y: float) -> tuple[float, float, float]:
    if x > y:
        return x, 1.0, 0.0
    if x < y:
        return y, 0.0, 1.0
    return (x if x == y else math.nan), 0.5, 0.5  # a tie; NaN (a NaN operand) stays NaN, as np.maximum


def _maximum_vector(np: Any, x: Column, y: Column) -> tuple[Column, Slopes]:
    def slopes() -> tuple[Column, Column]:
        dx = np.where(x > y, 1.0, np.where(x < y, 0.0, 0.5)).astype(np.result_type(x, y), copy=False)
        return dx, 1.0 - dx

    return np.where(x == y, x, np.maximum(x, y)), slopes  # at a tie x, as the scalar kernel (0 vs -0)


def _minimum(x: float, y: float) -> tuple[float, float, float]:
    if x < y:
        return x, 1.0, 0.0
    if x > y:
        return y, 0.0, 1.0
    return (x if x == y else math.nan), 0.5, 0.5


def _minimum_vector(np: Any, x: Column, y: Column) -> tuple[Column, Slopes]:
    def slopes() -> tuple[Column, Column]:
        dx = np.where(x < y, 1.0, np.where(x > y, 0.0, 0.5)).astype(np.result_type(x, y), copy=False)
        return dx, 1.0 - dx

    return np.where(x == y, x, np.minimum(x, y)), slopes


# --- Python helpers for diff --format python ---------------------------------------------------
# The generated module imports only math; these functions of it compute what the kernels
# above compute, conventions included (sign(0) = step(0) = 0; sigmoid without overflow).

_SIGMOID_PY = (
    "def _sigmoid(v):\n"
    "    if v >= 0:\n"
    "        return 1.0 / (1.0 + math.exp(-v))\n"
    "    e = math.exp(v)\n"
    "    return e / (1.0 + e)\n"
)
_SOFTPLUS_PY = "def _softplus(v):\n    return max(v, 0.0) + math.log1p(math.exp(-abs(v)))\n"
_STEP_PY = "def _step(v):\n    return 1.0 if v > 0 else 0.0 if v <= 0 else v\n"
_RELU_PY = "def _relu(v):\n    return v if v > 0 else 0.0 if v <= 0 else v\n"  # NaN stays NaN, as the kernel
_MAXIMUM_NP = ("_maximum", "def _maximum(x, y):\n    return np.where(x == y, x, np.maximum(x, y))\n")
_MINIMUM_NP = ("_minimum", "def _minimum(x, y):\n    return np.where(x == y, x, np.minimum(x, y))\n")
_MAXIMUM_PY = ("def _maximum(a, b):\n"
               "    return a if a > b else b if a < b else a if a == b else math.nan\n")
_MINIMUM_PY = ("def _minimum(a, b):\n"
               "    return a if a < b else b if a > b else a if a == b else math.nan\n")
_SIGN_PY = "def _sign(v):\n    return 1.0 if v > 0 else -1.0 if v < 0 else 0.0 if v == 0 else v\n"

# The same for diff --format python of a tensor program, on NumPy arrays: each the vector kernel's
# own expression, so the two give the same bits (sigmoid's overflow-free form included).
_RELU_NP = ("_relu", "def _relu(x):\n    return np.maximum(x, 0.0) + 0.0\n")
_STEP_NP = ("_step", "def _step(x):\n    return (x > 0.0).astype(np.float64)\n")
_SIGMOID_NP = ("_sigmoid", ("def _sigmoid(x):\n    e = np.exp(-np.abs(x))\n"
                           "    return np.maximum(e, x >= 0.0) / (1.0 + e)\n"))

_SOFTPLUS_NP = ("_softplus", "def _softplus(x):\n    return np.maximum(x, 0.0) + np.log1p(np.exp(-np.abs(x)))\n")


# --- the table -------------------------------------------------------------------------------

_ROWS = (  # registry.check_entry checks every field of each at import
    Op("+", 2, "{x} + {y}", _add, ("1", "1"), vector=_add_vector, symbolic=("1", "1"),
       propagates=(0, 1), method="__add__"),
    Op("-", 2, "{x} - {y}", _sub, ("1", "-1"), vector=_sub_vector, symbolic=("1", "-1"),
       propagates=(0, 1), method="__sub__"),
    Op("*", 2, "{x} * {y}", _mul, ("y", "x"), vector=_mul_vector, symbolic=("y", "x"),
       propagates=(0, 1), method="__mul__"),
    Op("/", 2, "{x} / {y}", _div, ("1/y", "-x/y**2"), domain="y != 0",
       hint="the divisor is 0 for these inputs; choose other values or guard it (e.g. x / (y*y + 1))",
       vector=_div_vector, symbolic=("1/y", "-x/y**2"),
       propagates=(0,), method="__truediv__"),
    Op("neg", 1, "-{x}", _neg, ("-1",), vector=_neg_vector, symbolic=("-1",), exact=True,
       propagates=(0,), method="__neg__"),
    Op("**", 2, "{x} ** {y}", _pow, ("y * x**(y-1)", "x**y * ln(x)"),
       domain="x > 0, or x = 0 and y >= 0, or x < 0 and y an integer",
       hint="a negative base needs an integer exponent, and 0 needs a non-negative one",
       vector=_pow_vector, symbolic=("y*x**(y - 1)", "out*log(x)"), method="__pow__"),
    Op("**c", 1, "{x}**{c}", _pow_const, ("c * x**(c-1)",),
       domain="x > 0, or x = 0 and c >= 0, or x < 0 and c an integer",
       hint="a negative base needs an integer exponent, and 0 needs a non-negative one",
       vector=_pow_const_vector, symbolic=("c*x**(c - 1)",), method="__pow__"),
    Op("tanh", 1, "tanh({x})", _tanh, ("1 - tanh(x)**2",), vector=_tanh_vector, symbolic=("1 - out**2",),
       python="math.tanh({x})", latex=r"\tanh\left({x}\right)", parity="odd", activation=(-1.0, 1.0),
       numpy="np.tanh({x})"),
    Op("exp", 1, "exp({x})", _exp, ("exp(x)",),
       overflow_hint="exp overflows above about {log_largest}; " + _RESCALE, vector=_exp_vector,
       symbolic=("out",), python="math.exp({x})", latex=r"\exp\left({x}\right)", sign="nonnegative",
       numpy="np.exp({x})"),
    Op("log", 1, "log({x})", _log, ("1/x",), domain="x > 0",
       hint="keep its argument above 0 for these inputs: maximum(p, 1e-12) for a probability, or log_softmax or "
            "cross_entropy of the logits, which never take log 0", vector=_log_vector,
       symbolic=("1/x",), python="math.log({x})", latex=r"\log\left({x}\right)", latex_aliases=("ln",),
       numpy="np.log({x})",
       propagates=(0,)),
    Op("sqrt", 1, "sqrt({x})", _sqrt, ("1 / (2*sqrt(x))",), domain="x >= 0",
       hint="keep its argument at 0 or above for these inputs: sqrt(x**2 + 1e-12) for a length (its slope stays "
            "finite), maximum(v, 0) for a variance rounded below 0",
       vector=_sqrt_vector, symbolic=("1/(2*out)",), python="math.sqrt({x})", latex=r"\sqrt{{x}}", sign="operand",
       numpy="np.sqrt({x})",
       propagates=(0,), power=0.5),
    Op("relu", 1, "relu({x})", _relu, ("1 if x > 0 else 0",), vector=_relu_vector, symbolic=("step(x)",),
       python="_relu({x})", python_helper=_RELU_PY,
       latex=r"\operatorname{relu}\left({x}\right)", exact=True, sign="nonnegative",
       numpy="_relu({x})", numpy_helpers=(_RELU_NP,), activation=(0.0, None),
       kink=True, where_positive="operand"),
    Op("sigmoid", 1, "sigmoid({x})", _sigmoid, ("sigmoid(x) * (1 - sigmoid(x))",), vector=_sigmoid_vector,
       symbolic=("out*(1 - out)",), python="_sigmoid({x})", python_helper=_SIGMOID_PY,
       latex=r"\sigma\left({x}\right)", sign="nonnegative",
       numpy="_sigmoid({x})", numpy_helpers=(_SIGMOID_NP,), activation=(0.0, 1.0)),
    Op("softplus", 1, "softplus({x})", _softplus, ("sigmoid(x)",), vector=_softplus_vector,
       symbolic=("sigmoid(x)",), python="_softplus({x})", python_helper=_SOFTPLUS_PY,
       latex=r"\operatorname{softplus}\left({x}\right)", sign="nonnegative",
       numpy="_softplus({x})", numpy_helpers=(_SOFTPLUS_NP,), activation=(0.0, None)),
    Op("sin", 1, "sin({x})", _sin, ("cos(x)",), vector=_sin_vector, symbolic=("cos(x)",),
       python="math.sin({x})", latex=r"\sin\left({x}\right)", parity="odd",
       numpy="np.sin({x})",
       propagates=(0,)),
    Op("cos", 1, "cos({x})", _cos, ("-sin(x)",), vector=_cos_vector, symbolic=("-sin(x)",),
       python="math.cos({x})", latex=r"\cos\left({x}\right)", parity="even",
       numpy="np.cos({x})",
       propagates=(0,)),
    Op("abs", 1, "abs({x})", _abs, ("sign(x)",), vector=_abs_vector, symbolic=("sign(x)",),
       python="abs({x})", latex=r"\left|{x}\right|", exact=True, parity="even", sign="operand",
       numpy="np.abs({x})",
       propagates=(0,), kink=True, where_positive="operand"),
    Op("sign", 1, "sign({x})", _sign_op, ("0",), vector=_sign_vector, symbolic=("0",),
       python="_sign({x})", python_helper=_SIGN_PY, latex=r"\operatorname{sign}\left({x}\right)",
       exact=True, parity="odd",
       numpy="np.sign({x})",
       kink=True, where_positive="one"),
    Op("step", 1, "step({x})", _step, ("0",), vector=_step_vector, symbolic=("0",),
       python="_step({x})", python_helper=_STEP_PY, latex=r"\operatorname{step}\left({x}\right)",
       exact=True, sign="nonnegative",
       numpy="_step({x})", numpy_helpers=(_STEP_NP,),
       kink=True, where_positive="one"),
    Op("maximum", 2, "maximum({x}, {y})", _maximum, ("1 if x > y, 1/2 if x = y, else 0", "1 if y > x, 1/2 if x = y, else 0"),
       vector=_maximum_vector, symbolic=("(1 + sign(x - y))/2", "(1 - sign(x - y))/2"),
       python="_maximum({x}, {y})", python_helper=_MAXIMUM_PY, latex=r"\max\left({x}, {y}\right)",
       numpy="_maximum({x}, {y})", numpy_helpers=(_MAXIMUM_NP,), exact=True, kink=True),
    Op("minimum", 2, "minimum({x}, {y})", _minimum, ("1 if x < y, 1/2 if x = y, else 0", "1 if y < x, 1/2 if x = y, else 0"),
       vector=_minimum_vector, symbolic=("(1 - sign(x - y))/2", "(1 + sign(x - y))/2"),
       python="_minimum({x}, {y})", python_helper=_MINIMUM_PY, latex=r"\min\left({x}, {y}\right)",
       numpy="_minimum({x}, {y})", numpy_helpers=(_MINIMUM_NP,), exact=True, kink=True),
    # `b = a`: b gets a node of its own
    Op("=", 1, "{x}", _identity, ("1",), vector=_identity_vector, symbolic=("1",), exact=True,
       propagates=(0,), method="identity"),
)


OPS: dict[str, Op] = {op.name: op for op in _ROWS}
"""Every op by name; the names are also the ``_op`` of graph nodes (``**c`` nodes show
their exponent, ``**2``)."""

FUNCTIONS: dict[str, Op] = {op.name: op for op in _ROWS if op.is_function}
"""The language's functions (``tanh(x)``...), in the order the docs list them."""

CALLS: dict[str, Op] = {op.name: op for op in _ROWS if op.written.startswith(op.name + "(")}
"""Every op written as a call: the functions, and those of two operands (``maximum(x, y)``)."""

DERIVATIVE_RULES: dict[str, tuple[str, ...]] = {op.name: op.rule for op in _ROWS}
"""The local derivative of each op with respect to each operand, as people write it."""


def op_key(node_op: str) -> str:
    """The ``OPS`` key of a graph node's ``_op``: ``'**2'`` -> ``'**c'``, others unchanged."""
    if node_op.startswith("**") and node_op != "**":
        return "**c"
    return node_op
