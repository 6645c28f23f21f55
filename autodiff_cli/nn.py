"""Neural networks: micrograd's classes over Values and PyTorch's over Tensors.

``from autodiff_cli.nn import MLP`` (micrograd's ``Neuron``, ``Layer``, ``MLP``), and
``from autodiff_cli.nn import Linear, ReLU, Sequential, mse_loss`` (PyTorch's ``Parameter``,
``Linear``, ``ReLU``, ``Tanh``, ``Sigmoid``, ``Sequential``, ``mse_loss``, ``cross_entropy``).
Both kinds derive from the one ``Module``.  A facade over ``autodiff_cli.engine.nn``,
``engine.tensor_nn`` and ``engine.grad_mode`` (``no_grad``, which covers both); see those
modules for the details.  The Tensor names are loaded on first use, so code that uses only
Values never imports NumPy.
"""

from typing import Any

from .engine.grad_mode import is_grad_enabled, no_grad
from .engine.nn import MLP, Layer, Module, Neuron
from .engine.value import Value

__all__ = [
    "MLP", "Layer", "Linear", "Module", "Neuron", "Parameter", "ReLU", "Sequential", "Sigmoid", "Tanh", "Tensor",
    "Value", "cross_entropy", "is_grad_enabled", "mse_loss", "no_grad",
]

_LAZY = {
    "Parameter": "tensor_nn", "Linear": "tensor_nn", "ReLU": "tensor_nn", "Tanh": "tensor_nn",
    "Sigmoid": "tensor_nn", "Sequential": "tensor_nn", "mse_loss": "tensor_nn", "cross_entropy": "tensor_nn",
    "Tensor": "tensor",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f".engine.{module}", __package__), name)
