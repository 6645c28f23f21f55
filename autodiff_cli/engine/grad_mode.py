"""``no_grad()``: compute with Values without recording a graph (standard library only).

Inside ``with no_grad():`` every operation on Values still computes its result (domain
errors included) but returns a new leaf: no operands, no local derivatives.  Nothing
is kept alive by the result, so evaluating a trained model on many points uses the
memory of one point at a time, and ``backward()`` from such a result reaches nothing.

How: entering the outermost ``no_grad`` swaps ``Value``'s recording methods for
non-recording ones built from the same op kernels, and leaving it swaps them back.
The recording methods are therefore exactly what they would be without this module: a
flag tested inside every operation would tax each node of every graph, and graphs are
built far more often than they are not.  The price is that the mode is process-wide
rather than per thread (PyTorch keeps it per thread): a thread that builds a graph
while another is inside ``no_grad`` gets leaves too.  Interpreters that call the
``METHODS`` table directly (``execute.scalar``) always record.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from contextlib import ContextDecorator
from typing import Any

from .ops import FUNCTIONS, OPS, Op
from .value import COMPILED, PythonValue, Value, _is_number

__all__ = ["is_grad_enabled", "no_grad"]


def _leaf_binary(op: Op) -> Callable[[Value, Any], Value]:
    kernel = op.scalar

    def method(self: Value, other: Any) -> Value:
        if isinstance(other, PythonValue):
            return PythonValue(kernel(self.data, other.data)[0])
        if not _is_number(other):  # as when recording: '3' is not an operand
            return NotImplemented
        return PythonValue(kernel(self.data, float(other))[0])

    return method


def _leaf_unary(op: Op) -> Callable[[Value], Value]:
    kernel = op.scalar

    def method(self: Value) -> Value:
        return PythonValue(kernel(self.data)[0])

    return method


_POWER, _POWER_CONST = OPS["**"].scalar, OPS["**c"].scalar


def _leaf_pow(self: Value, other: Any) -> Value:
    if isinstance(other, PythonValue):
        return PythonValue(_POWER(self.data, other.data)[0])
    if not _is_number(other):
        return NotImplemented
    return PythonValue(_POWER_CONST(self.data, float(other))[0])


# Every Value method that makes a node from its operands; the reflected operators
# (__radd__...) and abs() go through these, so they need no leaf version of their own.
_LEAF_METHODS: dict[str, Callable[..., Value]] = {
    **{op.method: (_leaf_binary if op.arity == 2 else _leaf_unary)(op) for op in OPS.values()
       if op.method not in (None, "__pow__")},  # the operators, by their entries' methods
    "__pow__": _leaf_pow,
    **{name: _leaf_unary(op) for name, op in FUNCTIONS.items()},
}
_RECORDING_METHODS: dict[str, Callable[..., Value]] = {name: getattr(PythonValue, name) for name in _LEAF_METHODS}

_lock = threading.Lock()
_depth = 0  # how many no_grad blocks are open; the methods are swapped while it is above 0


def is_grad_enabled() -> bool:
    """False inside ``no_grad()``: operations on Values then return leaves."""
    return _depth == 0


class no_grad(ContextDecorator):
    """Operations on Values inside this block record no graph: each result is a new leaf.

    Use it when only values are wanted, e.g. scoring a trained model on test points::

        with no_grad():
            scores = [model(x) for x in points]

    Blocks nest, and it works as a decorator (``@no_grad()``).  It applies to the whole
    process, not one thread; see the module docstring for why.
    """

    def __enter__(self) -> no_grad:  # noqa: PYI034 - typing.Self needs Python 3.11
        global _depth
        with _lock:
            if _depth == 0:
                _install(_LEAF_METHODS)
            _depth += 1
        return self

    def __exit__(self, *exc_info: object) -> None:
        global _depth
        with _lock:
            _depth -= 1
            if _depth == 0:
                _install(_RECORDING_METHODS)


def _install(methods: dict[str, Callable[..., Value]]) -> None:
    for name, method in methods.items():
        setattr(PythonValue, name, method)
    if COMPILED:  # a compiled class cannot change its methods: they read this flag instead
        importlib.import_module(f"{__package__}._native").MODE.recording = methods is _RECORDING_METHODS
