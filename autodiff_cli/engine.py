"""Scalar reverse-mode autodiff engine (standard library only).

A micrograd-compatible ``Value``: every operation computes its result *and* the
local derivative of that result with respect to each operand, side by side, and
stores the partials on the new node (``_local``).  Backpropagation is then one
uniform loop over a topological order: ``child.grad += local * out.grad``.
Storing the partials up front means the backward pass, forward mode, the
explainer and the graph renderer all read the same numbers, and no closure is
allocated per node.

Every traversal uses an explicit stack, so graphs millions of nodes deep work.
Nothing here prints, parses or knows about the command line.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator

__all__ = ["Value", "DomainError", "FUNCTIONS", "DERIVATIVE_RULES", "topological_order"]


class DomainError(ArithmeticError):
    """An operation was applied outside its domain (log of 0, division by 0, overflow...)."""

    def __init__(self, op: str, message: str, overflow: bool = False) -> None:
        super().__init__(message)
        self.op = op
        self.message = message
        self.overflow = overflow  # the result exists but is too large for a float


def _check_real_power(base: float, exponent: float) -> float:
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


def short_number(x: float) -> str:
    """The shortest text that reads back as x, as a program would write it: 2.0 -> '2', 0.1 -> '0.1'.

    -0.0 is '0' (its sign says nothing to a reader); NaN and infinities are 'nan', 'inf', '-inf'.
    """
    return str(int(x)) if x.is_integer() and abs(x) < 1e16 else repr(float(x))


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


_new = object.__new__


def _node(data: float, op: str, a: Value, da: float, b: Value | None = None, db: float = 0.0) -> Value:
    """A result node: its value, its operands and d result / d operand for each."""
    out = _new(Value)
    out.data = data
    out.grad = 0.0
    out._op = op
    out.label = ""
    out._a = a
    out._da = da
    out._b = b
    out._db = db
    return out


def _constant(data: float) -> Value:
    out = _new(Value)
    out.data = data
    out.grad = 0.0
    out._op = ""
    out.label = ""
    out._a = None
    out._da = 0.0
    out._b = None
    out._db = 0.0
    return out


class Value:
    """A scalar in a computation graph: its data, its gradient and how it was made.

    Operands live in two slots (``_a``, ``_b``) with their local derivatives
    (``_da``, ``_db``) rather than in per-node tuples: one allocation per node
    keeps both building and garbage collection cheap.  ``_prev`` and ``_local``
    give the micrograd-style tuple views.
    """

    __slots__ = ("data", "grad", "label", "_op", "_a", "_da", "_b", "_db", "_exponent")

    def __init__(
        self, data: float, _children: tuple[Value, ...] = (), _op: str = "", label: str = ""
    ) -> None:
        self.data = data
        self.grad = 0.0
        self._op = _op
        self.label = label
        self._a = self._b = None
        self._da = self._db = 0.0
        if _children:
            self._adopt(_children)

    def _adopt(self, children: tuple[Value, ...]) -> None:
        # A node built by hand has no recorded local derivatives: NaN makes that visible.
        if len(children) > 2:
            raise ValueError("a Value has at most two operands")
        self._a, self._da = children[0], math.nan
        if len(children) == 2:
            self._b, self._db = children[1], math.nan

    @property
    def _prev(self) -> tuple[Value, ...]:
        """The operands, in order."""
        if self._a is None:
            return ()
        return (self._a,) if self._b is None else (self._a, self._b)

    @property
    def _local(self) -> tuple[float, ...]:
        """d self / d operand, for each operand in ``_prev`` order."""
        if self._a is None:
            return ()
        return (self._da,) if self._b is None else (self._da, self._db)

    @property
    def exponent(self) -> float | None:
        """The constant exponent of an ``x ** c`` node, else None."""
        return getattr(self, "_exponent", None)

    def __repr__(self) -> str:
        label = f", label={self.label!r}" if self.label else ""
        return f"Value(data={self.data!r}, grad={self.grad!r}{label})"

    # --- arithmetic: value and local derivatives side by side -------------------------------

    def __add__(self, other: Value | float) -> Value:
        if not isinstance(other, Value):
            other = _constant(float(other))
        return _node(self.data + other.data, "+", self, 1.0, other, 1.0)

    def __sub__(self, other: Value | float) -> Value:
        if not isinstance(other, Value):
            other = _constant(float(other))
        return _node(self.data - other.data, "-", self, 1.0, other, -1.0)

    def __mul__(self, other: Value | float) -> Value:
        if not isinstance(other, Value):
            other = _constant(float(other))
        return _node(self.data * other.data, "*", self, other.data, other, self.data)

    def __truediv__(self, other: Value | float) -> Value:
        if not isinstance(other, Value):
            other = _constant(float(other))
        y = other.data
        if y == 0.0:
            raise DomainError("/", "division by zero")
        out = self.data / y
        return _node(out, "/", self, 1.0 / y, other, -out / y)

    def __neg__(self) -> Value:
        return _node(-self.data, "neg", self, -1.0)

    def __pos__(self) -> Value:
        return self

    def __pow__(self, other: Value | float) -> Value:
        x = self.data
        if isinstance(other, Value):
            y = other.data
            out = _check_real_power(x, y)
            return _node(out, "**", self, _power_slope(x, y), other, _exponent_slope(x, out))
        c = float(other)
        node = _node(_check_real_power(x, c), "**" + short_number(c), self, _power_slope(x, c))
        node._exponent = c
        return node

    def __radd__(self, other: float) -> Value:
        return _constant(float(other)) + self

    def __rsub__(self, other: float) -> Value:
        return _constant(float(other)) - self

    def __rmul__(self, other: float) -> Value:
        return _constant(float(other)) * self

    def __rtruediv__(self, other: float) -> Value:
        return _constant(float(other)) / self

    def __rpow__(self, other: float) -> Value:
        return _constant(float(other)) ** self

    # --- functions ---------------------------------------------------------------------------

    def tanh(self) -> Value:
        t = math.tanh(self.data)  # saturates to +-1 instead of overflowing
        return _node(t, "tanh", self, 1.0 - t * t)

    def exp(self) -> Value:
        try:
            e = math.exp(self.data)
        except OverflowError:
            raise DomainError("exp", f"exp({self.data:g}) overflows a float", overflow=True) from None
        return _node(e, "exp", self, e)

    def log(self) -> Value:
        x = self.data
        if x <= 0.0:
            raise DomainError("log", f"log of {x:g} is undefined (log needs a positive argument)")
        return _node(math.log(x), "log", self, 1.0 / x)

    def sqrt(self) -> Value:
        x = self.data
        if x < 0.0:
            raise DomainError("sqrt", f"sqrt of {x:g} is undefined (sqrt needs a non-negative argument)")
        s = math.sqrt(x)
        return _node(s, "sqrt", self, 0.5 / s if s else math.inf)

    def relu(self) -> Value:
        x = self.data
        return _node(x if x > 0.0 else 0.0, "relu", self, 1.0 if x > 0.0 else 0.0)

    def sigmoid(self) -> Value:
        x = self.data
        if x >= 0.0:
            s = 1.0 / (1.0 + math.exp(-x))
        else:  # the same value, written so that exp cannot overflow
            e = math.exp(x)
            s = e / (1.0 + e)
        return _node(s, "sigmoid", self, s * (1.0 - s))

    def sin(self) -> Value:
        x = self.data
        return _node(math.sin(x), "sin", self, math.cos(x))

    def cos(self) -> Value:
        x = self.data
        return _node(math.cos(x), "cos", self, -math.sin(x))

    def abs(self) -> Value:
        x = self.data
        return _node(abs(x), "abs", self, 1.0 if x > 0.0 else (-1.0 if x < 0.0 else 0.0))

    __abs__ = abs

    def identity(self) -> Value:
        """A new node equal to this one (``b = a`` in the language gives ``b`` its own node)."""
        return _node(self.data, "=", self, 1.0)

    # --- backpropagation ---------------------------------------------------------------------

    def _backward(self) -> None:
        """Push this node's gradient one step to its operands (micrograd's per-node step)."""
        g = self.grad
        if self._a is not None:
            self._a.grad += self._da * g
        if self._b is not None:
            self._b.grad += self._db * g

    def backward(self) -> None:
        """Accumulate d self / d node into ``grad`` of every node this one depends on.

        Like micrograd and PyTorch, gradients accumulate across calls: call
        ``zero_grad`` before a second backward pass over the same graph.
        """
        order = topological_order(self)
        self.grad = 1.0
        for node in reversed(order):
            a = node._a
            if a is not None:
                g = node.grad
                a.grad += node._da * g
                b = node._b
                if b is not None:
                    b.grad += node._db * g

    def zero_grad(self) -> None:
        """Set ``grad`` to 0 on this node and everything it depends on."""
        for node in topological_order(self):
            node.grad = 0.0


def topological_order(root: Value) -> list[Value]:
    """Nodes reachable from ``root``, every operand before its results, ``root`` last.

    Iterative depth-first search (no recursion limit); operands are visited in
    order, so the order, and any numbering taken from it, is the same every run.
    """
    order: list[Value] = []
    done: set[Value] = set()
    stack = [root]
    emit, mark, push, pop = order.append, done.add, stack.append, stack.pop
    while stack:
        node = stack[-1]
        if node in done:
            pop()
            continue
        a, b = node._a, node._b
        pending = False
        if b is not None and b not in done:
            push(b)  # pushed first so that a is finished first
            pending = True
        if a is not None and a not in done:
            push(a)
            pending = True
        if not pending:
            mark(node)
            emit(node)
            pop()
    return order


def iter_edges(order: Iterable[Value]) -> Iterator[tuple[Value, Value, float]]:
    """(child, parent, d parent / d child) for every edge, in the given node order."""
    for node in order:
        if node._a is not None:
            yield node._a, node, node._da
        if node._b is not None:
            yield node._b, node, node._db


# The language's functions, by name: each is the Value method above.
FUNCTIONS = {
    "tanh": Value.tanh,
    "exp": Value.exp,
    "log": Value.log,
    "sqrt": Value.sqrt,
    "relu": Value.relu,
    "sigmoid": Value.sigmoid,
    "sin": Value.sin,
    "cos": Value.cos,
    "abs": Value.abs,
}

# The local derivative of each op with respect to each operand, as people write it.
# x and y are the operands, out the result.  Read by the explainer and the docs.
DERIVATIVE_RULES: dict[str, tuple[str, ...]] = {
    "+": ("1", "1"),
    "-": ("1", "-1"),
    "*": ("y", "x"),
    "/": ("1/y", "-x/y**2"),
    "neg": ("-1",),
    "**": ("y * x**(y-1)", "x**y * ln(x)"),
    "**c": ("c * x**(c-1)",),
    "tanh": ("1 - tanh(x)**2",),
    "exp": ("exp(x)",),
    "log": ("1/x",),
    "sqrt": ("1 / (2*sqrt(x))",),
    "relu": ("1 if x > 0 else 0",),
    "sigmoid": ("sigmoid(x) * (1 - sigmoid(x))",),
    "sin": ("cos(x)",),
    "cos": ("-sin(x)",),
    "abs": ("sign(x)",),
    "=": ("1",),
}
