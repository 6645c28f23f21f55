"""The source of the compiled engine: ``Value`` written out from the op table, for mypyc.

``value.py``'s ``Value`` makes its methods from the op table at import time, which mypyc
cannot compile.  This module writes the same class as plain source that it can: one
method per op, calling the op's scalar kernel, and the kernels themselves (their source
read from ``ops.py``, with the helpers they call), so that the whole path from ``a * b``
to the new node runs as C.  The build (``setup.py``) compiles the result as
``autodiff_cli.engine._native``; ``value.py`` uses it when it is there and compiled, and
is itself the fallback.  Nothing here is imported at run time.

The maths stays in one place: this file holds no kernel, only the shape of a method.
The generated module is never committed (it would be a second copy of the table).
"""

from __future__ import annotations

import hashlib
import inspect
import types
from collections.abc import Callable

from . import ops

__all__ = ["MODULE", "native_module_source", "source_digest"]

MODULE = "autodiff_cli.engine._native"
"""The compiled module's name; its file is ``autodiff_cli/engine/_native.py`` during the build."""

_REFLECTED = {"+": "__radd__", "-": "__rsub__", "*": "__rmul__", "/": "__rtruediv__", "**": "__rpow__"}

_HEADER = '''\
"""Generated from the op table by autodiff_cli/engine/native_source.py when the package is
built, and compiled with mypyc.  Do not edit: change ops.py, value.py or native_source.py."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Callable, List, Optional

from autodiff_cli.engine.ops import DivisionByZero, DomainError
from autodiff_cli.engine.value import (
    NO_BACKWARD_CLOSURE,
    NO_CHILDREN,
    _is_number,
    _real,
    check_subclass,
    label_text,
    operands,
    reduce_node,
    set_extra_state,
)

if TYPE_CHECKING:
    from typing import Final

try:  # mypyc reads the decorator at build time; at run time mypy need not be installed
    from mypy_extensions import mypyc_attr
except ImportError:
    def mypyc_attr(*args: object, **kwargs: object) -> Callable[[type], type]:  # type: ignore[misc]
        return lambda cls: cls


class _Mode:
    """Whether operations record a graph; ``grad_mode.no_grad`` turns it off.  (The Python
    engine swaps its methods instead; a compiled class cannot be changed, and reading one
    attribute of an object held in a C static costs a few nanoseconds.)"""

    recording: bool

    def __init__(self) -> None:
        self.recording = True


MODE: Final = _Mode()


class _Walks:
    """How many walks have run: a walk marks each node it reaches with its own number
    (``Value._autodiff_walk``, which no subclass may redefine), where the Python engine keeps a
    set of the nodes: no set to fill or free."""

    count: int

    def __init__(self) -> None:
        self.count = 0


WALKS: Final = _Walks()
_NO_CHILDREN: Final = NO_CHILDREN  # held in a C static: read on every node, a global would be looked up


def _keep_tracked(node: object) -> None:
    """Where the collector helper was not built: the nodes stay tracked (slower, same results)."""


try:  # built beside this module by setup.py (engine/_collector.c says why)
    from autodiff_cli.engine._collector import untrack as _untrack_found
except ImportError:
    _untrack_found = _keep_tracked
_UNTRACK: Final = _untrack_found
'''

_CLASS = '''

def _node(data: float, op: str, a: Value, da: float, b: Optional[Value], db: float) -> Value:
    out = Value(data)
    out._op = op
    out._a = a
    out._da = da
    out._b = b
    out._db = db
    _UNTRACK(out)  # a node refers only to its operands: never in a cycle (engine/_collector.c)
    return out


def _operand(other: object) -> Optional[Value]:
    """``other`` as an operand: itself if a Value, a constant node for a real number, else None."""
    if isinstance(other, Value):
        return other
    if isinstance(other, float) or _is_number(other):
        constant = Value(float(other))  # type: ignore[arg-type]
        _UNTRACK(constant)
        return constant
    return None


@mypyc_attr(allow_interpreted_subclasses=True)
class Value:
    """A scalar in a computation graph (the compiled build of ``value.Value``; see its docstrings)."""

    data: float
    grad: float
    label: str
    _op: str
    _a: Optional[Value]
    _da: float
    _b: Optional[Value]
    _db: float
    _autodiff_walk: int = 0  # a class default: set on every new object, those pickle makes too

    def __init__(self, data: object, _children: object = _NO_CHILDREN, _op: str = "", label: object = "",
                 *, local: object = None) -> None:
        if isinstance(data, float):
            self.data = data
        else:
            self.data = _real(data)
        self.grad = 0.0
        self._op = _op
        self.label = label if isinstance(label, str) else label_text(label)
        self._a = None
        self._b = None
        self._da = 0.0
        self._db = 0.0
        if _children is not _NO_CHILDREN or local is not None:
            a, da, b, db = operands(_children, local, Value)
            self._a = a
            self._da = da
            self._b = b
            self._db = db

    def __init_subclass__(cls) -> None:
        check_subclass(cls)

    def __reduce__(self) -> tuple:
        return reduce_node(self)

    def __setstate__(self, state: object) -> None:
        set_extra_state(self, state)

    @property
    def _prev(self) -> tuple:
        a = self._a
        if a is None:
            return ()
        b = self._b
        return (a,) if b is None else (a, b)

    @property
    def _local(self) -> tuple:
        if self._a is None:
            return ()
        return (self._da,) if self._b is None else (self._da, self._db)

    @property
    def exponent(self) -> Optional[float]:
        op = self._op
        if op.startswith("**") and op != "**" and self._b is None:
            return float(op[2:])
        return None

    def __repr__(self) -> str:
        label = f", label={{self.label!r}}" if self.label else ""
        return f"Value(data={{self.data!r}}, grad={{self.grad!r}}{{label}})"

    def __pos__(self) -> Value:
        return self

    def __abs__(self) -> Value:
        return self.abs()

    def __pow__(self, other: object) -> object:
        if MODE.recording:
            return {record_pow}(self, other)
        if isinstance(other, Value):
            return Value({pow_kernel}(self.data, other.data)[0])
        if not (isinstance(other, float) or _is_number(other)):
            return NotImplemented
        return Value({pow_const_kernel}(self.data, float(other))[0])  # type: ignore[arg-type]
{methods}
    def _push_grad(self) -> None:
        g = self.grad
        a = self._a
        if a is not None:
            a.grad += self._da * g
        b = self._b
        if b is not None:
            b.grad += self._db * g

    @property
    def _backward(self) -> Callable[[], None]:
        return self._push_grad

    @_backward.setter
    def _backward(self, function: Callable[[], None]) -> None:
        raise AttributeError(NO_BACKWARD_CLOSURE)

    def backward(self) -> None:
        order = topological_order(self)
        order[len(order) - 1].grad = 1.0
        backpropagate_slice(order, 0, len(order))

    def zero_grad(self) -> None:
        for node in topological_order(self):
            node.grad = 0.0


def backpropagate_slice(order: List[Value], start: int, stop: int) -> None:
    """``graph.backpropagate``'s loop over ``order[start:stop]``, the last node first, compiled."""
    for i in range(stop - 1, start - 1, -1):
        node = order[i]
        a = node._a
        if a is not None:
            g = node.grad
            a.grad += node._da * g
            b = node._b
            if b is not None:
                b.grad += node._db * g


def topological_order(root: Value) -> List[Value]:
    """``graph.topological_order``, compiled: the same order."""
    WALKS.count += 1
    walk = WALKS.count
    order: List[Value] = []
    stack: List[Value] = [root]
    while stack:
        node = stack[len(stack) - 1]
        a = node._a
        if a is not None and a._autodiff_walk != walk:
            if a._a is None:
                a._autodiff_walk = walk
                order.append(a)
            else:
                stack.append(a)
                continue
        b = node._b
        if b is not None and b._autodiff_walk != walk:
            if b._a is None:
                b._autodiff_walk = walk
                order.append(b)
            else:
                stack.append(b)
                continue
        stack.pop()
        if node._autodiff_walk != walk:
            node._autodiff_walk = walk
            order.append(node)
    return order
'''

_BINARY = '''
    def {method}(self, other: object) -> object:
        if MODE.recording:
            return {record}(self, other)  # which takes a number, or gives NotImplemented
        o = _operand(other)
        if o is None:
            return NotImplemented
        return Value({kernel}(self.data, o.data)[0])
'''

_REFLECTED_METHOD = '''
    def {method}(self, other: object) -> object:
        if not (isinstance(other, float) or _is_number(other)):
            return NotImplemented
        return Value(float(other)).{forward}(self)  # type: ignore[arg-type]
'''

_UNARY = '''
    def {method}(self) -> Value:
        if MODE.recording:
            return {record}(self)
        return Value({kernel}(self.data)[0])
'''

# The recording form of each op, a function: the methods call it unless no_grad is on, and
# the language's interpreter calls it always (``value.METHODS``), as it must record in no_grad.
_RECORD_BINARY = '''
def {record}(a: Value, b: object) -> object:
    o = _operand(b)  # a number too, as the Python engine's method takes it
    if o is None:
        return NotImplemented
    out, da, db = {kernel}(a.data, o.data)
    return _node(out, "{name}", a, da, o, db)
'''

_RECORD_POWER = '''
def {record}(a: Value, b: object) -> object:
    if isinstance(b, Value):
        out, da, db = {kernel}(a.data, b.data)
        return _node(out, "**", a, da, b, db)
    if isinstance(b, float) or _is_number(b):
        return {record_const}(a, float(b))  # type: ignore[arg-type]
    return NotImplemented
'''

_RECORD_UNARY = '''
def {record}(a: Value) -> Value:
    out, da = {kernel}(a.data)
    return _node(out, "{name}", a, da, None, 0.0)
'''

_RECORD_POWER_CONST = '''
def {record}(a: Value, c: float) -> Value:
    out, da = {kernel}(a.data, c)
    return _node(out, "**" + short_number(c), a, da, None, 0.0)
'''


def _helpers(function: Callable[..., object], seen: dict[str, str]) -> None:
    """``function``'s source and, first, that of every function of ``ops`` it calls."""
    for name in function.__code__.co_names:  # type: ignore[attr-defined]
        helper = vars(ops).get(name)
        if isinstance(helper, types.FunctionType) and name not in seen:
            _helpers(helper, seen)
    seen.setdefault(function.__name__, inspect.getsource(function))


def _record_name(op: ops.Op) -> str:
    return "_record_" + op.scalar.__name__.lstrip("_")


def native_module_source() -> str:
    """The compiled module's source, ending with ``SOURCE_DIGEST`` (``source_digest()``): a test
    compares it with today's, so that a build older than the op table cannot pass for current."""
    return _body() + f'\nSOURCE_DIGEST: Final = "{source_digest()}"\n'


def source_digest() -> str:
    """SHA-256 of the compiled module's source before its digest line."""
    return hashlib.sha256(_body().encode()).hexdigest()


def _body() -> str:
    """The kernels of every op, a recording function per op, ``Value`` with a method per op, and
    ``RECORDING`` (op name -> recording function)."""
    kernels: dict[str, str] = {}
    _helpers(ops.short_number, kernels)
    for op in ops.OPS.values():
        _helpers(op.scalar, kernels)
    records, methods = [], []
    for op in ops.OPS.values():
        fields = {"kernel": op.scalar.__name__, "name": op.name, "record": _record_name(op)}
        if op.name == "**c":
            records.append(_RECORD_POWER_CONST.format(**fields))
            continue
        if op.name == "**":
            records.append(_RECORD_POWER.format(record_const=_record_name(ops.OPS["**c"]), **fields))
        else:
            records.append((_RECORD_BINARY if op.arity == 2 else _RECORD_UNARY).format(**fields))
        if op.name != "**":  # __pow__, for both powers, is written out in the class
            template = _BINARY if op.arity == 2 else _UNARY
            methods.append(template.format(method=op.method or op.name, **fields))
    for name, method in _REFLECTED.items():
        forward = ops.OPS[name].method
        methods.append(_REFLECTED_METHOD.format(method=method, forward=forward))
    body = _CLASS.format(record_pow=_record_name(ops.OPS["**"]), pow_kernel=ops.OPS["**"].scalar.__name__,
                         pow_const_kernel=ops.OPS["**c"].scalar.__name__, methods="".join(methods))
    table = "".join(f"    {op.name!r}: {_record_name(op)},\n" for op in ops.OPS.values())
    return (_HEADER + "\n\n" + "\n\n".join(kernels.values()) + body + "\n" + "\n".join(records)
            + f"\n\nRECORDING: Final = {{\n{table}}}\n")
