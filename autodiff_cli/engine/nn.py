"""Neural networks of Values, compatible with micrograd's ``nn`` (standard library only).

``Module``, ``Neuron``, ``Layer`` and ``MLP`` take micrograd's constructor arguments and
behave as its classes do, so code written for micrograd runs with only its import
changed: ``MLP(2, [16, 16, 1])`` is a network with two inputs, two relu layers of 16
and one linear output; calling it on a list of numbers or Values returns a Value (or a
list of them for a layer of several neurons).  Weights are drawn from Python's
``random.uniform(-1, 1)`` in micrograd's order and biases start at 0, so after the same
``random.seed`` both libraries start from the same network.

One difference, on purpose: an input of the wrong length is a ``ValueError`` here,
where micrograd's ``zip`` would silently ignore the extra numbers or the extra weights.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence

from .value import Value

__all__ = ["MLP", "Layer", "Module", "Neuron"]

Number = int | float
Inputs = Iterable[Value | Number]


class Module:
    """Something with parameters: ``parameters()`` lists them, ``zero_grad()`` clears their grads."""

    def zero_grad(self) -> None:
        for p in self.parameters():
            p.grad = 0.0

    def parameters(self) -> list[Value]:
        return []


def _as_sequence(x: Inputs, expected: int) -> Sequence[Value | Number]:
    values = x if isinstance(x, Sequence) else list(x)
    if len(values) != expected:
        raise ValueError(f"expected {expected} input{'s' if expected != 1 else ''}, got {len(values)}")
    return values


class Neuron(Module):
    """``relu(b + w . x)`` (or without the relu, ``nonlin=False``) over ``nin`` inputs."""

    def __init__(self, nin: int, nonlin: bool = True) -> None:
        self.w = [Value(random.uniform(-1, 1)) for _ in range(nin)]
        self.b = Value(0.0)
        self.nonlin = nonlin

    def __call__(self, x: Inputs) -> Value:
        act = self.b
        # Summed from the bias, term by term, as micrograd's sum(..., self.b) does, so
        # both libraries round the same way.
        for wi, xi in zip(self.w, _as_sequence(x, len(self.w))):
            act = act + wi * xi
        return act.relu() if self.nonlin else act  # type: ignore[attr-defined, no-any-return]

    def parameters(self) -> list[Value]:
        return self.w + [self.b]

    def __repr__(self) -> str:
        return f"{'ReLU' if self.nonlin else 'Linear'}Neuron({len(self.w)})"


class Layer(Module):
    """``nout`` neurons over the same ``nin`` inputs; extra keywords go to each ``Neuron``."""

    def __init__(self, nin: int, nout: int, **kwargs: bool) -> None:
        self.neurons = [Neuron(nin, **kwargs) for _ in range(nout)]

    def __call__(self, x: Inputs) -> Value | list[Value]:
        x = list(x)  # read once: every neuron sees the same inputs, even from an iterator
        out = [n(x) for n in self.neurons]
        return out[0] if len(out) == 1 else out

    def parameters(self) -> list[Value]:
        return [p for n in self.neurons for p in n.parameters()]

    def __repr__(self) -> str:
        return f"Layer of [{', '.join(str(n) for n in self.neurons)}]"


class MLP(Module):
    """Layers of sizes ``nouts`` after ``nin`` inputs: relu everywhere but the last layer."""

    def __init__(self, nin: int, nouts: list[int]) -> None:
        sizes = [nin] + list(nouts)
        self.layers = [Layer(sizes[i], sizes[i + 1], nonlin=i != len(nouts) - 1) for i in range(len(nouts))]

    def __call__(self, x: Inputs) -> Value | list[Value]:
        out: Value | list[Value] = list(x)
        for layer in self.layers:
            out = layer(out if isinstance(out, list) else [out])
        return out

    def parameters(self) -> list[Value]:
        return [p for layer in self.layers for p in layer.parameters()]

    def __repr__(self) -> str:
        return f"MLP of [{', '.join(str(layer) for layer in self.layers)}]"
