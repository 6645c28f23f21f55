"""autodiff-cli: differentiate expressions and see how backpropagation flows through them.

The engine is importable on its own and runs micrograd code unchanged::

    from autodiff_cli import Value, draw_dot
    a, b = Value(2.0, label="a"), Value(-3.0, label="b")
    L = a * b
    L.backward()   # a.grad == -3.0, b.grad == 2.0
    draw_dot(L)    # a graphviz.Digraph; a notebook shows it inline
"""

from typing import Any

from .engine import DomainError, Value

__all__ = ["Value", "DomainError", "draw_dot"]


def __getattr__(name: str) -> Any:
    # draw_dot is loaded on first use: the command line imports this package on every start.
    if name == "draw_dot":
        from .render.dot import draw_dot

        return draw_dot
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
