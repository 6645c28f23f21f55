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

``Module`` is also the base of the PyTorch-style modules over Tensors (``tensor_nn``): one
class, so ``isinstance(model, nn.Module)`` holds for both kinds and a model may mix them.
What it adds for them (``forward``, found parameters, ``train``/``eval``) changes nothing for
micrograd's classes, which list their own parameters; it only knows of Tensors once
``engine.tensor`` is loaded, so this module still imports the standard library only.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Iterable, Sequence
from typing import Any

from .value import PythonValue, Value

__all__ = ["MLP", "Layer", "Module", "Neuron", "clear_grad", "is_tensor"]

Number = int | float
Inputs = Iterable[Value | Number]


class Module:
    """Something with parameters: ``parameters()`` lists them, ``zero_grad()`` clears their grads.

    One base for both kinds of model.  micrograd's classes (``Neuron``, ``Layer``, ``MLP``, and
    code written for micrograd) define ``__call__`` and list their own ``parameters()``;
    ``zero_grad()`` sets a Value's ``grad`` to 0, as micrograd does.  PyTorch-style modules
    (``tensor_nn``: ``Linear``, ``Sequential``...) define ``forward``, which calling the module
    runs, and their parameters are found: every ``Parameter``, ``Value`` and sub-``Module``
    among the attributes (also in lists and tuples), in the order they were set, each once
    (``named_parameters()`` names them ``"0.weight"``, as PyTorch does).  ``zero_grad()`` sets
    a Tensor's ``grad`` to None (PyTorch's default), or to zeros with ``set_to_none=False``.
    """

    training = True

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.forward(*args, **kwargs)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} has no forward(): define it to call the module")

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.parameters():
            clear_grad(p, set_to_none)

    def parameters(self) -> list[Any]:
        return [p for _, p in self.named_parameters()]

    def named_parameters(self, prefix: str = "") -> list[tuple[str, Any]]:
        """``(name, parameter)`` of every parameter, each once, in the order they were set."""
        found: list[tuple[str, Any]] = []
        seen: set[int] = set()
        # An explicit stack rather than recursion; each entry is (name prefix, object).
        stack: list[tuple[str, Any]] = [(prefix, self)]
        parameter_types = _parameter_types()
        while stack:
            name, item = stack.pop()
            if isinstance(item, parameter_types):
                if id(item) not in seen:
                    seen.add(id(item))
                    found.append((name, item))
                continue
            if isinstance(item, Module) and type(item).parameters is not Module.parameters:
                children = [(str(i), p) for i, p in enumerate(item.parameters())]  # it lists its own
            elif isinstance(item, Module):
                children = [(key, value) for key, value in getattr(item, "__dict__", {}).items() if not key.startswith("__")]
            elif isinstance(item, (list, tuple)):
                children = [(str(i), value) for i, value in enumerate(item)]
            else:
                continue
            for key, value in reversed(children):  # popped in order
                stack.append((f"{name}.{key}" if name else key, value))
        return found

    def children(self) -> list[Module]:
        """The modules among the attributes (also in lists and tuples), in order."""
        out: list[Module] = []
        for value in getattr(self, "__dict__", {}).values():
            items = value if isinstance(value, (list, tuple)) else (value,)
            out.extend(item for item in items if isinstance(item, Module))
        return out

    def train(self, mode: bool = True) -> Module:
        """Set ``training`` here and in every sub-module (no layer here behaves differently)."""
        stack: list[Module] = [self]
        while stack:
            module = stack.pop()
            module.training = mode
            stack.extend(module.children())
        return self

    def eval(self) -> Module:
        return self.train(False)


def _parameter_types() -> tuple[type, ...]:
    """Values, and ``tensor_nn.Parameter`` once that module is loaded (no Parameter exists before,
    and this module must not import NumPy for micrograd's classes)."""
    tensor_nn = sys.modules.get(f"{__package__}.tensor_nn")
    return (Value, PythonValue) if tensor_nn is None else (Value, PythonValue, tensor_nn.Parameter)


def is_tensor(x: object) -> bool:
    """Whether ``x`` is a ``tensor.Tensor`` (without importing NumPy: no Tensor exists before
    ``engine.tensor`` is loaded)."""
    tensor = sys.modules.get(f"{__package__}.tensor")
    return tensor is not None and isinstance(x, tensor.Tensor)


def clear_grad(p: Any, set_to_none: bool = True) -> None:
    """A parameter's gradient cleared: None for a Tensor (zeros, a new array, with
    ``set_to_none=False``), 0 for a Value or anything else with a float ``grad``."""
    if not is_tensor(p):
        p.grad = 0.0
    elif set_to_none or p.grad is None:
        p.grad = None
    else:
        zeros = p.grad.copy()  # a new array: an optimizer's state may hold the old one
        zeros.fill(0.0)
        p.grad = zeros


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
