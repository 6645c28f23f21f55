"""PyTorch-style neural networks over Tensors: ``Parameter``, ``Linear``, activations,
``Sequential`` and the losses ``mse_loss`` and ``cross_entropy``.

The base class is ``nn.Module``, the same one micrograd's classes use (see ``engine/nn.py``):
a module here defines ``forward``, calling it runs ``forward``, and its parameters are found
among its attributes (``parameters()``, ``named_parameters()``, ``zero_grad()``).

``Linear(in_features, out_features, bias=True)`` has PyTorch's layout (``weight`` is
``(out_features, in_features)``, the output ``x @ weight.T + bias``) and PyTorch's default
initialisation: kaiming-uniform with ``a = sqrt(5)``, which is ``U(-1/sqrt(in_features),
1/sqrt(in_features))`` for the weight, and the same bounds for the bias, drawn weight first
from ``tensor.default_generator`` (seed it with ``manual_seed``), or from a ``generator``
given to the constructor.

The losses are the tensor table's ``mse`` and ``cross_entropy`` ops for ``reduction="mean"``
(PyTorch's default); ``"sum"`` is composed from them.  No maths is written here.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from .nn import Module
from .tensor import Tensor, _apply, _operand, default_generator

__all__ = ["Linear", "Module", "Parameter", "ReLU", "Sequential", "Sigmoid", "Tanh", "cross_entropy", "mse_loss"]


class Parameter(Tensor):
    """A Tensor that is a module's parameter: it requires a gradient unless told otherwise,
    and a ``Module`` holding it as an attribute lists it in ``parameters()``."""

    __slots__ = ()

    def __init__(self, data: Any, requires_grad: bool = True, dtype: Any = None) -> None:
        super().__init__(data, requires_grad=requires_grad, dtype=dtype)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()


class Linear(Module):
    """``y = x @ weight.T + bias``: ``weight`` is ``(out_features, in_features)``, ``bias``
    ``(out_features,)``, both drawn from ``U(-1/sqrt(in_features), 1/sqrt(in_features))``,
    float64 or ``dtype="float32"``."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, *,
                 generator: Any = None, dtype: Any = "float64") -> None:
        for name, n in (("in_features", in_features), ("out_features", out_features)):
            if isinstance(n, bool) or not isinstance(n, int) or n < 0:
                raise ValueError(f"{name} is a number of features (an int >= 0), not {n!r}")
        self.in_features = in_features
        self.out_features = out_features
        rng = default_generator if generator is None else generator
        # kaiming_uniform_(a=sqrt(5)): gain sqrt(2 / (1 + 5)), bound gain * sqrt(3 / fan_in) = 1/sqrt(fan_in);
        # PyTorch's bias bound is 1/sqrt(fan_in) too, and 0 for fan_in = 0.
        bound = 1.0 / math.sqrt(in_features) if in_features > 0 else 0.0
        # drawn in float64 and rounded to dtype: the same draws in either precision
        self.weight = Parameter(rng.uniform(-bound, bound, (out_features, in_features)), dtype=dtype)
        self.bias = Parameter(rng.uniform(-bound, bound, (out_features,)), dtype=dtype) if bias else None

    def forward(self, x: Any) -> Tensor:
        x = _tensor(x)
        if x.dtype != self.weight.dtype:  # PyTorch refuses it too; promoting would run a float32 model in float64
            raise RuntimeError(f"{self!r} holds {self.weight.dtype.name} weights but its input is {x.dtype.name} "
                               f"(a list or a float64 array makes a float64 Tensor): give it "
                               f"tensor(x, dtype=\"{self.weight.dtype.name}\")")
        out = x @ self.weight.T
        return out if self.bias is None else out + self.bias

    def __repr__(self) -> str:
        return (f"Linear(in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None})")


class ReLU(Module):
    """``relu(x)`` elementwise."""

    def forward(self, x: Any) -> Tensor:
        return _tensor(x).relu()

    def __repr__(self) -> str:
        return "ReLU()"


class Tanh(Module):
    """``tanh(x)`` elementwise."""

    def forward(self, x: Any) -> Tensor:
        return _tensor(x).tanh()

    def __repr__(self) -> str:
        return "Tanh()"


class Sigmoid(Module):
    """``sigmoid(x)`` elementwise."""

    def forward(self, x: Any) -> Tensor:
        return _tensor(x).sigmoid()

    def __repr__(self) -> str:
        return "Sigmoid()"


class Sequential(Module):
    """Modules applied one after the other: ``Sequential(Linear(2, 16), ReLU(), Linear(16, 1))``.
    They are attributes ``"0"``, ``"1"``... so parameters are named ``"0.weight"``, as in PyTorch."""

    def __init__(self, *modules: Module) -> None:
        for i, module in enumerate(modules):
            if not isinstance(module, Module):
                raise TypeError(f"Sequential takes modules; argument {i} is a {type(module).__name__}")
            setattr(self, str(i), module)

    def _modules(self) -> list[Module]:
        return [m for key, m in vars(self).items() if key.isdigit()]

    def forward(self, x: Any) -> Any:
        for module in self._modules():
            x = module(x)
        return x

    def __getitem__(self, i: int) -> Module:
        return self._modules()[i]

    def __len__(self) -> int:
        return len(self._modules())

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules())

    def __repr__(self) -> str:
        lines = [f"  ({i}): " + repr(m).replace("\n", "\n  ") for i, m in enumerate(self._modules())]
        return "Sequential(\n" + "\n".join(lines) + "\n)" if lines else "Sequential()"


def _tensor(x: Any, like: Tensor | None = None) -> Tensor:
    """x as a Tensor; numbers and lists made into one here take the precision of ``like``."""
    operand = _operand(x)
    if operand is None:
        raise TypeError(f"expected a Tensor, an array or a number, not {type(x).__name__}")
    if like is not None and isinstance(x, (int, float, list, tuple)) and operand.dtype != like.dtype:
        return Tensor(operand.data, dtype=like.dtype)
    return operand


_REDUCTIONS = ("mean", "sum")


def _reduction(reduction: str) -> None:
    if reduction not in _REDUCTIONS:
        raise ValueError(f"reduction is 'mean' or 'sum', not {reduction!r}")


def mse_loss(input: Any, target: Any, reduction: str = "mean") -> Tensor:  # noqa: A002 - PyTorch's names
    """Mean squared error, ``mean((input - target)**2)`` (the ``mse`` op), or its ``"sum"``.

    The shapes must be equal: ``[N, 1]`` against ``[N]`` would broadcast to ``[N, N]`` and give
    a wrong answer silently (PyTorch warns; this is an error with a hint)."""
    _reduction(reduction)
    x = _tensor(input)
    y = _tensor(target, like=x)  # a list of targets in the input's precision
    loss = _apply("mse", (x, y))
    # sum = mean * n: the mse op's result times its number of elements
    return loss if reduction == "mean" else loss * float(x.data.size)


def cross_entropy(input: Any, target: Any, reduction: str = "mean") -> Tensor:  # noqa: A002
    """Softmax cross-entropy of logits ``input`` ``[N, C]`` (or ``[C]``) against integer class
    labels ``target`` ``[N]`` (or ``[]``): the mean over rows of ``-log_softmax(input)[label]``
    (the ``cross_entropy`` op), or its ``"sum"``.  A label that is not a class (not an integer,
    or outside 0..C-1) raises ``DomainError``."""
    _reduction(reduction)
    x, y = _tensor(input), _tensor(target)
    loss = _apply("cross_entropy", (x, y))
    if reduction == "mean":
        return loss
    rows = x.data.size // x.shape[-1] if x.ndim and x.shape[-1] else 0
    return loss * float(rows)

