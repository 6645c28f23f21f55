"""SGD and Adam over Tensor parameters: PyTorch's update equations written out by hand here,
updates made in place, PyTorch's treatment of parameters without a gradient, and the same
bits as the same rules over Values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from autodiff_cli import nn
from autodiff_cli.engine import Value
from autodiff_cli.engine.tensor import Tensor
from autodiff_cli.optim import SGD, Adam

START = np.array([[0.5, -1.25], [2.0, 0.125]])
GRADS = [np.array([[0.3, -0.2], [1.5, 0.0]]),
         np.array([[-0.7, 0.4], [0.25, 2.0]]),
         np.array([[0.1, 0.1], [-3.0, 0.5]])]


def run(optimizer_class, grads=GRADS, **settings) -> list[np.ndarray]:
    p = nn.Parameter(START)
    optimizer = optimizer_class([p], **settings)
    seen = []
    for g in grads:
        optimizer.zero_grad()
        p.grad = g.copy()
        optimizer.step()
        seen.append(p.data.copy())
    return seen


def sgd_by_hand(lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False) -> list[np.ndarray]:
    # torch.optim.SGD's documented algorithm:
    #   g = g + weight_decay * p;  b = g (first step) else momentum * b + (1 - dampening) * g
    #   g = g + momentum * b (nesterov) else b;  p = p - lr * g
    p, b, seen = START.copy(), None, []
    for grad in GRADS:
        g = grad + weight_decay * p
        if momentum:
            b = g if b is None else momentum * b + (1 - dampening) * g
            g = g + momentum * b if nesterov else b
        p = p - lr * g
        seen.append(p)
    return seen


def adam_by_hand(lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, grads=GRADS) -> list[np.ndarray]:
    # torch.optim.Adam's documented algorithm (amsgrad off):
    #   g = g + weight_decay * p;  m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
    #   m_hat = m / (1 - b1^t);  v_hat = v / (1 - b2^t);  p = p - lr m_hat / (sqrt(v_hat) + eps)
    b1, b2 = betas
    p, m, v, seen = START.copy(), 0.0, 0.0, []
    for t, grad in enumerate(grads, start=1):
        g = grad + weight_decay * p
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        p = p - lr * (m / (1 - b1**t)) / (np.sqrt(v / (1 - b2**t)) + eps)
        seen.append(p)
    return seen


SGD_SETTINGS = [
    {"lr": 0.1},
    {"lr": 0.1, "momentum": 0.9},
    {"lr": 0.05, "momentum": 0.9, "dampening": 0.3, "weight_decay": 0.01},
    {"lr": 0.05, "momentum": 0.8, "nesterov": True, "weight_decay": 0.1},
]


@pytest.mark.parametrize("settings", SGD_SETTINGS, ids=["plain", "momentum", "dampening-decay", "nesterov"])
def test_sgd_on_a_tensor_follows_pytorchs_equations(settings) -> None:
    for got, want in zip(run(SGD, **settings), sgd_by_hand(**settings)):
        np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-16)


ADAM_SETTINGS = [
    {"lr": 0.01},
    {"lr": 0.1, "betas": (0.8, 0.99), "eps": 1e-6, "weight_decay": 0.05},
]


@pytest.mark.parametrize("settings", ADAM_SETTINGS, ids=["defaults", "all"])
def test_adam_on_a_tensor_follows_pytorchs_equations(settings) -> None:
    # PyTorch orders the arithmetic a little differently (sqrt(v)/sqrt(1 - b2^t)): a few ulps.
    for got, want in zip(run(Adam, **settings), adam_by_hand(**settings)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)


def test_the_update_is_made_in_place() -> None:
    p = nn.Parameter([1.0, 2.0])
    array = p.data
    view = p.detach()
    p.grad = np.array([1.0, -1.0])
    SGD([p], lr=0.5).step()
    assert p.data is array and array.tolist() == [0.5, 2.5] and view.data.tolist() == [0.5, 2.5]


def test_a_tensor_without_a_gradient_is_skipped_and_keeps_its_own_step_count() -> None:
    # PyTorch skips parameters whose grad is None; Adam's bias correction counts each
    # parameter's own steps, so q's first update (on the optimizer's third step) is a first step.
    p, q = nn.Parameter(START), nn.Parameter(START)
    adam = Adam([p, q], lr=0.01)
    for i, g in enumerate(GRADS):
        adam.zero_grad()
        p.grad = g.copy()
        if i == 2:
            q.grad = g.copy()
        adam.step()
        if i < 2:
            assert q.data.tolist() == START.tolist()
    assert adam.steps == 3
    np.testing.assert_allclose(q.data, adam_by_hand(0.01, grads=GRADS[2:])[0], rtol=1e-12)
    np.testing.assert_allclose(p.data, adam_by_hand(0.01)[-1], rtol=1e-12)


def test_zero_grad_sets_none_or_fresh_zeros() -> None:
    p = nn.Parameter([1.0, 2.0])
    optimizer = SGD([p], lr=0.1, momentum=0.9)
    p.grad = np.array([1.0, 1.0])
    optimizer.step()
    held = p.grad
    optimizer.zero_grad(set_to_none=False)
    assert p.grad.tolist() == [0.0, 0.0]
    assert held.tolist() == [1.0, 1.0]  # a new array: the momentum buffer that holds the old one is intact
    optimizer.zero_grad()
    assert p.grad is None


def test_tensors_give_the_same_bits_as_values_under_the_same_rule() -> None:
    for optimizer_class, settings in [(SGD, {"lr": 0.1, "momentum": 0.9, "nesterov": True}),
                                      (Adam, {"lr": 0.01, "weight_decay": 0.1})]:
        p = nn.Parameter(START)
        values = [Value(x) for x in START.flat]
        ours, theirs = optimizer_class([p], **settings), optimizer_class(values, **settings)
        for g in GRADS:
            p.grad = g.copy()
            for value, gi in zip(values, g.flat):
                value.grad = float(gi)
            ours.step()
            theirs.step()
        assert p.data.flatten().tolist() == [v.data for v in values]


def test_values_and_tensors_in_one_optimizer() -> None:
    v, t = Value(1.0), nn.Parameter([1.0])
    optimizer = SGD([v, t], lr=0.5)
    (v * 2.0).backward()
    (t * 2.0).sum().backward()
    optimizer.step()
    assert v.data == 0.0 and t.data.tolist() == [0.0]
    optimizer.zero_grad()
    assert v.grad == 0.0 and t.grad is None


def test_non_leaf_tensors_and_other_objects_are_refused() -> None:
    p = nn.Parameter([1.0])
    with pytest.raises(ValueError, match="non-leaf"):
        SGD([p * 2.0], lr=0.1)
    with pytest.raises(TypeError, match="got list"):
        Adam([[1.0]], lr=0.1)


def test_a_training_step_of_a_module() -> None:
    model = nn.Sequential(nn.Linear(2, 3), nn.Tanh(), nn.Linear(3, 1))
    optimizer = Adam(model.parameters(), lr=0.1)
    x, y = np.array([[1.0, 2.0], [0.5, -1.0]]), np.array([[1.0], [0.0]])
    losses = []
    for _ in range(20):
        optimizer.zero_grad()
        loss = nn.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.1 * losses[0]
    assert all(math.isfinite(p.data.sum()) for p in model.parameters())
    assert isinstance(model.parameters()[0], Tensor)
