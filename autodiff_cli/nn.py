"""Neural networks of Values, micrograd-compatible: ``from autodiff_cli.nn import MLP``.

A facade over ``autodiff_cli.engine.nn`` (the classes) and ``engine.grad_mode``
(``no_grad``); see those modules for the details.
"""

from .engine.grad_mode import is_grad_enabled, no_grad
from .engine.nn import MLP, Layer, Module, Neuron
from .engine.value import Value

__all__ = ["MLP", "Layer", "Module", "Neuron", "Value", "is_grad_enabled", "no_grad"]
