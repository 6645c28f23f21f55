"""autodiff-cli: differentiate expressions and see how backpropagation flows through them.

The engine is importable on its own and runs micrograd code unchanged::

    from autodiff_cli import Value
    a, b = Value(2.0, label="a"), Value(-3.0, label="b")
    L = a * b
    L.backward()   # a.grad == -3.0, b.grad == 2.0
"""

from .engine import DomainError, Value

__all__ = ["Value", "DomainError"]
