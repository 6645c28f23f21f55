"""The scalar reverse-mode engine: a micrograd-compatible ``Value`` (standard library only).

Every operation computes its result *and* the local derivative of that result with
respect to each operand, side by side, and stores the partials on the new node
(``_local``).  Backpropagation is then one uniform loop over a topological order:
``child.grad += local * out.grad``.  Storing the partials up front means the backward
pass, forward mode, the explainer and the graph renderer all read the same numbers,
and no closure is allocated per node.

The maths is not written here: each arithmetic method and each function is made from
the op's kernel in the op table (``ops.py``), so ``Value`` is one interpreter of that
table among others.  Every traversal uses an explicit stack (``graph.py``), so graphs
millions of nodes deep work.  Nothing here prints, parses or knows about the command line.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
import os
import warnings
from collections.abc import Callable, Iterable
from numbers import Complex, Number, Real
from typing import TYPE_CHECKING, Any

from . import graph
from .graph import backpropagate, topological_order
from .ops import CALLS, FUNCTIONS, OPS, Op, short_number

__all__ = ["COMPILED", "METHODS", "PythonValue", "Value"]

_new = object.__new__


def _node(data: float, op: str, a: Value, da: float, b: Value | None = None, db: float = 0.0) -> Value:
    """A result node: its value, its operands and d result / d operand for each."""
    out = _new(PythonValue)
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
    out = _new(PythonValue)
    out.data = data
    out.grad = 0.0
    out._op = ""
    out.label = ""
    out._a = None
    out._da = 0.0
    out._b = None
    out._db = 0.0
    return out


def _is_number(other: object) -> bool:
    """Whether ``other`` may be an operand or a Value's data: a real number (int, float, NumPy's,
    Fraction, Decimal).  Not a string, though ``float()`` would read it, nor a complex number
    (``float()`` of NumPy's complex64 drops the imaginary part with only a warning); for an
    operand, anything else gets NotImplemented, so that its own reflected method (a NumPy
    array's) has its turn, and else Python raises TypeError."""
    # Decimal is a Number but not a Real (it does not mix with floats); it is taken, converted.
    return isinstance(other, (float, int, Real)) or (isinstance(other, Number) and not isinstance(other, Complex))


NO_BACKWARD_CLOSURE = (
    "a Value keeps the local derivatives of each node, not a _backward closure: make a new "
    "operation's node with them, Value(data, (x,), 'op', local=(d data / d x,)), or build it "
    "from the existing operations")
"""Why ``node._backward = f`` is refused (both builds of the engine say it)."""


NO_CHILDREN: tuple[Value, ...] = ()
"""``Value``'s default operands: compared by identity, so that any iterable given is checked."""


def operands(children: Iterable[Value], local: Iterable[float] | None,
             node_class: type) -> tuple[Value | None, float, Value | None, float]:
    """``(a, da, b, db)`` for ``Value(data, children, op, local=local)``: up to two operands, each
    a ``node_class``, and a derivative for each (NaN without ``local``, so that gradients through
    the node show that they are missing).  Shared by both builds of the engine."""
    children = tuple(children)
    if len(children) > 2:
        raise ValueError("a Value has at most two operands")
    for child in children:
        if not isinstance(child, node_class):
            raise TypeError(f"an operand of a Value is a Value, not {type(child).__name__}")
    slopes = (math.nan,) * len(children) if local is None else tuple(local)
    if len(slopes) != len(children):
        raise ValueError(f"local gives {len(slopes)} derivatives for {len(children)} operands: one each")
    a, da = (children[0], float(slopes[0])) if children else (None, 0.0)
    b, db = (children[1], float(slopes[1])) if len(children) == 2 else (None, 0.0)
    return a, da, b, db


def label_text(label: object) -> str:
    """A label as a Value holds it: a str (None is no label, "")."""
    if isinstance(label, str):
        return label
    if label is None:
        return ""
    raise TypeError(f"a Value's label is a str, not {type(label).__name__}")


NODE_FIELDS = ("data", "grad", "label", "_op", "_a", "_da", "_b", "_db", "_autodiff_walk")
"""What a node is made of: the compiled engine reads these directly, never through a subclass's
property, so no subclass may redefine them (``_autodiff_walk`` is the compiled walks' mark)."""


def check_subclass(cls: type) -> None:
    """A subclass of Value keeps the node's fields as they are, in both builds."""
    redefined = [name for name in NODE_FIELDS if name in vars(cls)]
    if redefined:
        raise TypeError(f"{cls.__name__} redefines {', '.join(redefined)} of Value: the engine reads a "
                        "node's fields directly, so a subclass may add attributes and methods but not "
                        "replace these")


def reduce_node(node: Any) -> tuple[Any, ...]:
    """How pickle and copy take a node apart, in either build: a call of ``restore_node`` with its
    fields, and a subclass's own attributes.  The engine's own class is named as None, so that a
    graph saved under one build loads into the other."""
    cls = type(node)
    own = None if cls is Value or cls is PythonValue else cls
    fields = (own, node.data, node.grad, node.label, node._op, node._a, node._da, node._b, node._db)
    extra = _extra_state(node, cls)
    return (restore_node, fields) if extra is None else (restore_node, fields, extra)


def restore_node(cls: type | None, data: float, grad: float, label: str, op: str,
                 a: Any, da: float, b: Any, db: float) -> Any:
    """A node from ``reduce_node``'s fields, made by the engine in use (or the subclass named)."""
    cls = cls or Value
    node = cls.__new__(cls)  # type: ignore[call-overload]
    node.data, node.grad, node.label, node._op = float(data), float(grad), label, op
    node._a, node._da, node._b, node._db = a, float(da), b, float(db)
    return node


def _extra_state(node: Any, cls: type) -> dict[str, Any] | None:
    """A subclass's own attributes: its ``__dict__`` and the slots it adds."""
    state = dict(getattr(node, "__dict__", None) or {})
    for klass in cls.__mro__:
        if klass is Value or klass is PythonValue:
            break
        slots = klass.__dict__.get("__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if name not in ("__dict__", "__weakref__") and hasattr(node, name):
                state[name] = getattr(node, name)
    return state or None


def set_extra_state(node: Any, state: dict[str, Any] | tuple[dict[str, Any] | None, ...]) -> None:
    """Sets what ``reduce_node`` kept, or the state of a pickle made before it existed: Python's
    default for a class with slots, ``(__dict__ or None, {slot: value})``, fields included."""
    if isinstance(state, tuple):
        state = {name: value for part in state if part for name, value in part.items()}
    for name, value in state.items():
        setattr(node, name, value)


def _real(data: object) -> float:
    """``data`` as a Value holds it: a float (an int, a bool, NumPy's numbers, Fraction and Decimal
    become one, so that both builds of the engine hold the same).  A string, a complex number or
    None is a TypeError here rather than a wrong answer later ('1' + '2' is '12')."""
    if _is_number(data):
        return float(data)  # type: ignore[arg-type]
    raise TypeError(f"a Value holds a real number, not {type(data).__name__} ({data!r:.40}): "
                    "convert it to a float first")


def _binary(op: Op) -> Callable[[Value, Value | float], Value]:
    """``self <op> other`` from the op's kernel; a number operand becomes a constant node."""
    kernel, name = op.scalar, op.name

    def method(self: Value, other: Value | float) -> Value:
        if not isinstance(other, PythonValue):
            if other.__class__ is not float and not _is_number(other):  # the common case first
                return NotImplemented
            other = _constant(float(other))
        # The node is filled in here rather than by _node(): one call per op, the kernel's.
        out = _new(PythonValue)
        out.data, out._da, out._db = kernel(self.data, other.data)
        out.grad = 0.0
        out._op = name
        out.label = ""
        out._a = self
        out._b = other
        return out

    method.__doc__ = f"``{op.written.format(x='self', y='other')}``, a node with its two local derivatives."
    return method


def _unary(op: Op, method_name: str | None = None) -> Callable[[Value], Value]:
    """``op(self)`` from the op's kernel."""
    kernel, name = op.scalar, op.name

    def method(self: Value) -> Value:
        out = _new(PythonValue)
        out.data, out._da = kernel(self.data)
        out.grad = 0.0
        out._op = name
        out.label = ""
        out._a = self
        out._b = None
        out._db = 0.0
        return out

    method.__name__ = method.__qualname__ = method_name or op.name
    method.__doc__ = f"``{op.written.format(x='self')}``, a node with its local derivative {op.rule[0]}."
    return method


class Value:
    """A scalar in a computation graph: its data, its gradient and how it was made.

    Operands live in two slots (``_a``, ``_b``) with their local derivatives
    (``_da``, ``_db``) rather than in per-node tuples: one allocation per node
    keeps both building and garbage collection cheap.  ``_prev`` and ``_local``
    give the micrograd-style tuple views.

    Besides the operators, every function of the op table (``ops.FUNCTIONS``: ``tanh``,
    ``exp``, ``relu``...) is a method, and ``identity()`` makes a new node equal to this
    one (``b = a`` in the language).
    """

    # Eight slots: with the object header that is 96 bytes, a multiple of the allocator's
    # 16, where a ninth slot would cost 16 more per node (a million-node graph is ~200 MB).
    __slots__ = ("data", "grad", "label", "_op", "_a", "_da", "_b", "_db")
    data: float
    grad: float
    label: str
    _op: str
    _a: Value | None
    _da: float
    _b: Value | None
    _db: float

    def __init__(
        self, data: float, _children: Iterable[Value] = NO_CHILDREN, _op: str = "", label: str = "",
        *, local: Iterable[float] | None = None,
    ) -> None:
        """``Value(2.0)``, or a node of a new operation made by hand: its operands
        (``_children``) and ``local``, the derivative of ``data`` with respect to each
        (``Value(e, (x,), "exp", local=(e,))`` with ``e = math.exp(x.data)``)."""
        if data.__class__ is not float:  # the common case first
            data = _real(data)
        self.data = data
        self.grad = 0.0
        self._op = _op
        self.label = label if label.__class__ is str else label_text(label)
        self._a = self._b = None
        self._da = self._db = 0.0
        if _children is not NO_CHILDREN or local is not None:
            self._a, self._da, self._b, self._db = operands(_children, local, PythonValue)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        check_subclass(cls)

    def __reduce__(self) -> tuple[Any, ...]:
        return reduce_node(self)

    def __setstate__(self, state: dict[str, Any]) -> None:
        set_extra_state(self, state)

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
        """The constant exponent of an ``x ** c`` node, else None.

        Read back from the op, ``"**" + short_number(c)``, which gives ``c`` exactly (only
        the sign of a zero exponent is lost, and ``x**0`` and ``x**-0`` are the same node).
        """
        op = self._op
        if op.startswith("**") and op != "**" and self._b is None:
            return float(op[2:])
        return None

    def __repr__(self) -> str:
        label = f", label={self.label!r}" if self.label else ""
        return f"Value(data={self.data!r}, grad={self.grad!r}{label})"

    # --- arithmetic, from the op table -----------------------------------------------------

    __add__ = _binary(OPS["+"])
    __sub__ = _binary(OPS["-"])
    __mul__ = _binary(OPS["*"])
    __truediv__ = _binary(OPS["/"])
    __neg__ = _unary(OPS["neg"], "__neg__")
    identity = _unary(OPS["="], "identity")

    def __pos__(self) -> Value:
        return self

    def __pow__(self, other: Value | float) -> Value:
        """``self ** other``: a ``**`` node for a Value exponent, a ``**c`` node (shown as
        ``**2``) for a number, which is a constant of the op rather than an operand."""
        if isinstance(other, PythonValue):
            out, da, db = _POW(self.data, other.data)
            return _node(out, "**", self, da, other, db)
        if not _is_number(other):
            return NotImplemented
        c = float(other)
        out, da = _POW_CONST(self.data, c)
        return _node(out, "**" + short_number(c), self, da)

    def __radd__(self, other: float) -> Value:
        return _constant(float(other)) + self if _is_number(other) else NotImplemented

    def __rsub__(self, other: float) -> Value:
        return _constant(float(other)) - self if _is_number(other) else NotImplemented

    def __rmul__(self, other: float) -> Value:
        return _constant(float(other)) * self if _is_number(other) else NotImplemented

    def __rtruediv__(self, other: float) -> Value:
        return _constant(float(other)) / self if _is_number(other) else NotImplemented

    def __rpow__(self, other: float) -> Value:
        return _constant(float(other)) ** self if _is_number(other) else NotImplemented

    def __abs__(self) -> Value:
        return self.abs()

    if TYPE_CHECKING:  # every function of the op table is a method, made from it at the end of this module;
        # type checkers see them all through this one signature, so no list here repeats the table
        def __getattr__(self, name: str) -> Callable[[], Value]: ...

    # --- backpropagation ---------------------------------------------------------------------

    def _push_grad(self) -> None:
        """Push this node's gradient one step to its operands (micrograd's per-node step)."""
        g = self.grad
        if self._a is not None:
            self._a.grad += self._da * g
        if self._b is not None:
            self._b.grad += self._db * g

    @property
    def _backward(self) -> Callable[[], None]:
        """micrograd's per-node step, ``node._backward()``: here made from ``_local``."""
        return self._push_grad

    @_backward.setter
    def _backward(self, function: Callable[[], None]) -> None:
        raise AttributeError(NO_BACKWARD_CLOSURE)

    def backward(self) -> None:
        """Accumulate d self / d node into ``grad`` of every node this one depends on.

        Like micrograd and PyTorch, gradients accumulate across calls: call
        ``zero_grad`` before a second backward pass over the same graph.
        """
        backpropagate(topological_order(self))

    def zero_grad(self) -> None:
        """Set ``grad`` to 0 on this node and everything it depends on."""
        for node in topological_order(self):
            node.grad = 0.0


PythonValue = Value
"""The engine in pure Python, always there; ``Value`` is the compiled build of it when installed.
(Its own code names it ``PythonValue``, so that it stays whole when ``Value`` is the other.)"""

_POW = OPS["**"].scalar
_POW_CONST = OPS["**c"].scalar

# Every function of the language is a method: adding a row to the op table adds one.
for _op in FUNCTIONS.values():
    setattr(Value, _op.name, _unary(_op))
for _op in CALLS.values():  # maximum(x, y): a method of two operands, x.maximum(y)
    if _op.arity == 2:
        setattr(Value, _op.name, _binary(_op))



def _compiled_value() -> type[Value] | None:
    """The compiled ``Value`` (``_native``, made by ``native_source.py`` at build time), unless
    the build has none or ``AUTODIFF_ENGINE=python`` asks for the pure-Python engine."""
    if os.environ.get("AUTODIFF_ENGINE", "") == "python":
        return None
    name = f"{__package__}._native"
    spec = importlib.util.find_spec(name)
    # None: built without a C compiler, or run from a checkout, so the fallback.  A .py file is
    # the generated source left by a build, not compiled: slower than this module, so not used.
    if spec is None or (spec.origin or "").endswith(".py"):
        return None
    try:
        native = importlib.import_module(name)
    except ImportError as error:  # a part of the build is missing or was built for another Python
        warnings.warn(f"the compiled engine could not be loaded ({error}); using the pure-Python engine, "
                      "which gives the same results, slower: reinstall the package to rebuild it",
                      RuntimeWarning, stacklevel=2)
        return None
    missing = sorted(set(CALLS) - set(native.RECORDING))
    if missing:  # built before these ops joined the table: it would fail on the first one a program uses
        warnings.warn(f"the compiled engine is older than the op table (it lacks {', '.join(missing)}); using "
                      "the pure-Python engine, which gives the same results, slower: reinstall the package, or "
                      "run python setup.py build_ext --inplace in a checkout", RuntimeWarning, stacklevel=2)
        return None
    return native.Value  # type: ignore[no-any-return]


Value = _compiled_value() or PythonValue  # type: ignore[misc]
COMPILED = Value is not PythonValue
"""Whether ``Value`` is the compiled build."""
if COMPILED:  # pickle finds a class by its module and name: the pure one is PythonValue here
    PythonValue.__qualname__ = PythonValue.__name__ = "PythonValue"
    graph._compiled = importlib.import_module(f"{__package__}._native")


def _recording_methods() -> dict[str, Callable[..., Value]]:
    """The function that applies each op and records it, by op name (``**c``: ``x ** c`` for a
    number ``c``), for interpreters: unlike the operators, they record inside ``no_grad``."""
    if COMPILED:
        return dict(importlib.import_module(f"{__package__}._native").RECORDING)
    methods = {name: getattr(PythonValue, op.method) for name, op in OPS.items() if op.method is not None}
    methods.update((name, getattr(PythonValue, name)) for name in CALLS)
    return methods


METHODS = _recording_methods()
"""The function that applies each op and records it, by op name, for interpreters."""
