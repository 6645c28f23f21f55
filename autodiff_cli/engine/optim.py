"""Optimisers with PyTorch's update equations and defaults (standard library only).

The equations are written once, in the update rules ``SGDRule`` and ``AdamRule``, on
numbers that support ``+ - * /`` and ``** 0.5``: a float, or a NumPy array of every
parameter at once.  ``SGD`` and ``Adam`` apply them to parameters one by one (the
``torch.optim`` API: ``step()``, ``zero_grad()``): to a ``Value``'s float, and to a
``Tensor``'s array, whose data is then overwritten in place (as PyTorch updates a
parameter, so views of it and ``.data`` taken earlier see the new values); ``autodiff fit``
applies the same rules to the array of all its parameters.  This module imports no NumPy: a
Tensor is recognised once ``engine.tensor`` is loaded (``nn.is_tensor``).  Arithmetic is done in PyTorch's order (its
single-tensor CPU code), so in float64 the two agree to the last bit or nearly.

Learning-rate schedules (``scheduled_lr``) are here too: ``constant``, ``linear`` (PyTorch's
``LinearLR`` from 1 to ``final/lr``) and ``cosine`` (``CosineAnnealingLR`` down to ``final``).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from .nn import clear_grad, is_tensor
from .value import Value

__all__ = ["SCHEDULES", "SGD", "Adam", "AdamRule", "Optimizer", "SGDRule", "scheduled_lr"]

# A float, or an array of them (anything with float arithmetic and ``** 0.5``).
Number = Any
# A Value or a Tensor (not imported here: it would import NumPy).
Parameter = Any


class SGDRule(NamedTuple):
    """Stochastic gradient descent, with optional momentum, Nesterov momentum and L2 weight decay.

    With ``g = grad + weight_decay * param`` and, when ``momentum`` is not 0,
    ``buffer = g`` on the first step and ``momentum * buffer + (1 - dampening) * g`` after,
    ``g = buffer`` (or ``g + momentum * buffer`` with ``nesterov``); then
    ``param = param - lr * g``.  The state is the momentum buffer (None before the first step).
    """

    momentum: float = 0.0
    dampening: float = 0.0
    weight_decay: float = 0.0
    nesterov: bool = False

    def check(self) -> None:
        """ValueError for hyper-parameters PyTorch would refuse."""
        _at_least_zero("momentum", self.momentum)
        _finite("dampening", self.dampening)
        _at_least_zero("weight_decay", self.weight_decay)
        if self.nesterov and (self.momentum <= 0 or self.dampening != 0):
            raise ValueError("Nesterov momentum needs a momentum above 0 and a dampening of 0")

    def update(self, param: Number, grad: Number, state: Any, step: int, lr: float,
               out: Number | None = None) -> tuple[Number, Any]:
        """The parameter after one step (``step`` counts from 1), and the new state.  ``out``:
        an array of ``param``'s shape and type, neither ``param`` nor ``grad``, to write the new
        parameter into (``train`` passes the array of an earlier step that nothing keeps)."""
        g = grad
        if self.weight_decay != 0:
            g = g + self.weight_decay * param
        buffer = state
        if self.momentum != 0:
            buffer = g if buffer is None else buffer * self.momentum + (1 - self.dampening) * g
            g = g + self.momentum * buffer if self.nesterov else buffer
        if out is not None and _is_array(param):  # lr * g then param minus it, as below: the same bits
            np = sys.modules["numpy"]
            np.multiply(lr, g, out=out)
            return np.subtract(param, out, out=out), buffer
        return param - lr * g, buffer


class AdamRule(NamedTuple):
    """Adam (Kingma and Ba), with optional L2 weight decay added to the gradient.

    With ``g = grad + weight_decay * param``: ``m = beta1 * m + (1 - beta1) * g`` and
    ``v = beta2 * v + (1 - beta2) * g * g`` (both start at 0); then
    ``param = param - lr / (1 - beta1**t) * m / (sqrt(v) / sqrt(1 - beta2**t) + eps)``.
    The state is ``(m, v)`` (None before the first step).
    """

    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8
    weight_decay: float = 0.0

    def check(self) -> None:
        _at_least_zero("eps", self.eps)
        for index, beta in enumerate((self.beta1, self.beta2)):
            if not 0.0 <= beta < 1.0:
                raise ValueError(f"Invalid beta parameter at index {index}: {beta} (it must be in [0, 1))")
        _at_least_zero("weight_decay", self.weight_decay)

    def update(self, param: Number, grad: Number, state: Any, step: int, lr: float,
               out: Number | None = None) -> tuple[Number, Any]:
        """The parameter after one step (``step`` counts from 1), and the new state.  ``out``:
        as in ``SGDRule.update``; m and v are updated in place after the first step."""
        beta1, beta2 = self.beta1, self.beta2
        g = grad
        if self.weight_decay != 0:
            g = g + self.weight_decay * param
        if state is None:
            # The first step from m = v = 0, written so that it rounds exactly as the general one.
            m, v = (1 - beta1) * g, (1 - beta2) * g * g
        elif _is_array(state[0]):
            return self._update_arrays(param, g, state, step, lr, out)
        else:
            m, v = state
            # PyTorch updates m with lerp(m, g, 1 - beta1), which is m + (1 - beta1) * (g - m).
            m = m + (1 - beta1) * (g - m)
            v = v * beta2 + (1 - beta2) * g * g
        step_size = lr / (1 - beta1**step)
        denominator = _sqrt(v) / (1 - beta2**step) ** 0.5 + self.eps
        try:
            ratio = m / denominator
        except ZeroDivisionError:  # eps = 0 and a gradient that has been 0: 0/0, NaN as in PyTorch
            ratio = math.nan
        if out is not None and _is_array(param):
            return sys.modules["numpy"].subtract(param, step_size * ratio, out=out), (m, v)
        return param - step_size * ratio, (m, v)

    def _update_arrays(self, param: Number, g: Number, state: Any, step: int, lr: float,
                       out: Number | None = None) -> tuple[Number, Any]:
        """``update`` after the first step on NumPy arrays: m and v updated in place and one
        scratch array (``out`` when given: it becomes the new parameter), the same operations in
        the same order (so the same bits) as the general equations, without the six fresh
        arrays they would make."""
        np = sys.modules["numpy"]
        m, v = state
        chunk = _CHUNK_BYTES // param.itemsize
        if param.size > chunk and _chunkable(param, g, m, v, out):
            # a chunk at a time through all the passes: the five arrays' chunks stay in the core's
            # cache from one pass to the next (each entry's operations are the same, so the same bits)
            made = np.empty_like(param) if out is None else out
            flat = [a.reshape(-1) for a in (param, g, m, v, made)]  # (views: every array is C-contiguous)
            for start in range(0, param.size, chunk):
                p_, g_, m_, v_, out_ = (a[start:start + chunk] for a in flat)
                self._update_arrays(p_, g_, (m_, v_), step, lr, out_)
            return made, (m, v)
        beta1, beta2 = self.beta1, self.beta2
        scratch = np.subtract(g, m, out=out)
        scratch *= 1 - beta1
        m += scratch  # m + (1 - beta1) * (g - m)
        v *= beta2
        np.multiply(g, 1 - beta2, out=scratch)
        scratch *= g
        v += scratch  # v * beta2 + (1 - beta2) * g * g
        np.sqrt(v, out=scratch)
        scratch /= (1 - beta2**step) ** 0.5
        scratch += self.eps
        np.divide(m, scratch, out=scratch)  # m / denominator
        scratch *= lr / (1 - beta1**step)
        return np.subtract(param, scratch, out=scratch), (m, v)


_CHUNK_BYTES = 1 << 17  # of each array, a chunk of Adam's update on a long parameter vector (128 KB)


def _chunkable(param: Any, g: Any, m: Any, v: Any, out: Any) -> bool:
    """Whether Adam's arrays can be updated a chunk at a time through flat views: all of one
    type and C-contiguous (anything else is updated whole)."""
    arrays = (param, g, m, v) if out is None else (param, g, m, v, out)
    dtype = param.dtype
    return all(a.dtype == dtype and a.flags.c_contiguous and a.shape == param.shape for a in arrays)


def _is_array(x: Any) -> bool:
    """Whether x is a NumPy array with axes (updated in place), not a number."""
    np = sys.modules.get("numpy")
    return np is not None and isinstance(x, np.ndarray) and x.ndim > 0


class Optimizer:
    """Moves ``Value`` and ``Tensor`` parameters by their ``grad``, one update rule for all of them.

    ``lr`` may be changed between steps (a schedule: ``scheduled_lr``).  Gradients
    accumulate across ``backward()`` calls, so call ``zero_grad()`` before each one.
    As in PyTorch, a Tensor whose ``grad`` is None is left as it is by a step, and its
    own count of steps (Adam's bias correction) does not advance.
    """

    def __init__(self, params: Iterable[Parameter], lr: float, rule: SGDRule | AdamRule) -> None:
        self.params = list(params)
        if not self.params:
            raise ValueError("the optimizer got an empty parameter list")
        for p in self.params:
            if is_tensor(p):
                if not p.is_leaf:
                    raise ValueError("can't optimize a non-leaf Tensor (the result of an operation): "
                                     "optimize the Tensors it was computed from")
            elif not isinstance(p, Value):
                raise TypeError(f"the optimizer takes Values, got {type(p).__name__} (or Tensors)")
        if len({id(p) for p in self.params}) != len(self.params):
            raise ValueError("a parameter is given more than once; each would be stepped twice")
        _at_least_zero("learning rate", lr)
        rule.check()
        self.lr = lr
        self.rule = rule
        self.steps = 0  # updates made so far
        self.state: list[Any] = [None] * len(self.params)
        self.param_steps = [0] * len(self.params)  # each parameter's updates (a Tensor without grad skips)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Set every Value's ``grad`` to 0, and every Tensor's to None (``set_to_none=False``:
        to zeros), as ``torch.optim`` does."""
        for p in self.params:
            clear_grad(p, set_to_none)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Update every parameter once from its ``grad``; ``closure`` (optional) recomputes the loss first."""
        loss = closure() if closure is not None else None
        update, lr, state, counts = self.rule.update, self.lr, self.state, self.param_steps
        # Every update is worked out before any is made: an error leaves the step undone, not half done.
        updates = [None if p.grad is None else update(p.data, p.grad, state[i], counts[i] + 1, lr)
                   for i, p in enumerate(self.params)]
        for i, (p, made) in enumerate(zip(self.params, updates)):
            if made is None:
                continue  # a Tensor that no backward pass has reached
            data, state[i] = made
            if isinstance(p, Value):
                p.data = float(data)  # a float, as the compiled Value stores it
            else:
                p.data[...] = data  # in place, in the Tensor's own array
                if is_tensor(p):  # a graph recorded before the step can no longer be differentiated
                    p._bump_version()
            counts[i] += 1
        self.steps += 1
        return loss

    def __repr__(self) -> str:
        settings = ", ".join(f"{k}={v!r}" for k, v in self.rule._asdict().items())
        return f"{type(self).__name__}(lr={self.lr!r}, {settings})"


class SGD(Optimizer):
    """``torch.optim.SGD`` over Values and Tensors: ``SGD(model.parameters(), lr=0.1, momentum=0.9)``."""

    def __init__(self, params: Iterable[Parameter], lr: float = 1e-3, momentum: float = 0.0,
                 dampening: float = 0.0, weight_decay: float = 0.0, nesterov: bool = False) -> None:
        super().__init__(params, lr, SGDRule(momentum, dampening, weight_decay, nesterov))


class Adam(Optimizer):
    """``torch.optim.Adam`` over Values and Tensors: ``Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.999))``."""

    def __init__(self, params: Iterable[Parameter], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0) -> None:
        beta1, beta2 = betas
        super().__init__(params, lr, AdamRule(beta1, beta2, eps, weight_decay))


def _sqrt(x: Number) -> Number:
    # math.sqrt is correctly rounded where float ** 0.5 (the C library's pow) is not always;
    # NumPy computes an array's ** 0.5 with its sqrt.
    return math.sqrt(x) if isinstance(x, float) else x**0.5


def _finite(name: str, value: float) -> None:
    if not math.isfinite(value):
        raise ValueError(f"Invalid {name}: {value} (it must be a finite number)")


def _at_least_zero(name: str, value: float) -> None:
    _finite(name, value)
    if value < 0.0:
        raise ValueError(f"Invalid {name}: {value} (it must be 0 or more)")


# --- learning-rate schedules -----------------------------------------------------------------

SCHEDULES = ("constant", "linear", "cosine")


def scheduled_lr(schedule: str, lr: float, final_lr: float, step: int, steps: int) -> float:
    """The learning rate of step ``step`` (from 0) of ``steps``, going from ``lr`` towards ``final_lr``.

    ``linear``: ``lr - (lr - final_lr) * step / steps`` (PyTorch's ``LinearLR``; micrograd's
    demo is ``lr=1, final_lr=0.1, steps=100``).  ``cosine``: ``final_lr + (lr - final_lr) *
    (1 + cos(pi * step / steps)) / 2`` (``CosineAnnealingLR``).  Both reach ``final_lr``
    only at ``step == steps``, after the last step; ``constant`` is ``lr`` throughout.
    """
    if schedule not in SCHEDULES:
        raise ValueError(f"unknown schedule {schedule!r}: choose one of {', '.join(SCHEDULES)}")
    if schedule == "constant" or steps <= 0:
        return lr
    step = min(step, steps)
    if schedule == "linear":
        return lr - (lr - final_lr) * step / steps
    return final_lr + (lr - final_lr) * (1 + math.cos(math.pi * step / steps)) / 2
