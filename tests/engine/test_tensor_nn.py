"""PyTorch-style modules over Tensors (engine/tensor_nn.py, through the public autodiff_cli.nn).

Layouts and initialisation are PyTorch's, as its documentation states them; forward passes
and gradients are checked against NumPy by hand and against HIPS autograd; the losses against
their textbook formulas in autograd.  A training loop fits the minigrad post's regression.
"""

from __future__ import annotations

import math
import random
import warnings

import autograd
import autograd.numpy as anp
import numpy as np
import pytest

from autodiff_cli import nn, optim
from autodiff_cli.engine import DomainError, Value
from autodiff_cli.engine.tensor import ShapeMismatch, Tensor, manual_seed, tensor

REL = 1e-12


def assert_close(got, want, rel=REL):
    got, want = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert np.all(np.abs(got - want) <= rel * np.abs(want) + 1e-300), (got, want)


def quiet_grad(fn, i, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return autograd.grad(fn, i)(*args)


# --- Linear: layout, initialisation, determinism ------------------------------------------------


def test_linear_has_pytorchs_layout() -> None:
    layer = nn.Linear(3, 2)
    assert layer.weight.shape == (2, 3) and layer.bias.shape == (2,)
    assert isinstance(layer.weight, nn.Parameter) and layer.weight.requires_grad
    x = np.array([[1.0, -2.0, 0.5], [0.0, 1.0, 3.0]])
    want = x @ layer.weight.data.T + layer.bias.data
    assert_close(layer(x).data, want)
    assert_close(layer(Tensor(x[0])).data, want[0])  # one sample, a vector
    assert nn.Linear(3, 2, bias=False).bias is None
    assert repr(layer) == "Linear(in_features=3, out_features=2, bias=True)"


@pytest.mark.parametrize("fan_in, fan_out", [(400, 100), (3, 500), (1, 1000)])
def test_linear_init_is_uniform_within_one_over_sqrt_fan_in(fan_in: int, fan_out: int) -> None:
    manual_seed(0)
    layer = nn.Linear(fan_in, fan_out)
    bound = 1.0 / math.sqrt(fan_in)
    for p in (layer.weight.data, layer.bias.data):
        assert np.all(np.abs(p) <= bound)
    w = layer.weight.data
    # U(-b, b): the extremes come near b, the mean near 0, the variance near b**2 / 3.
    assert w.max() > 0.95 * bound and w.min() < -0.95 * bound
    assert abs(w.mean()) < 0.05 * bound
    assert w.var() == pytest.approx(bound**2 / 3, rel=0.1)
    assert layer.bias.data.max() > 0.9 * bound


def test_linear_init_is_deterministic_under_a_seed_weight_then_bias() -> None:
    manual_seed(123)
    first = nn.Linear(4, 3)
    manual_seed(123)
    second = nn.Linear(4, 3)
    assert first.weight.data.tolist() == second.weight.data.tolist()
    assert first.bias.data.tolist() == second.bias.data.tolist()
    third = nn.Linear(4, 3)  # the generator moved on
    assert third.weight.data.tolist() != first.weight.data.tolist()
    # The documented draws: numpy's PCG64(seed).uniform, the weight first.
    reference = np.random.Generator(np.random.PCG64(123))
    assert first.weight.data.tolist() == reference.uniform(-0.5, 0.5, (3, 4)).tolist()
    assert first.bias.data.tolist() == reference.uniform(-0.5, 0.5, (3,)).tolist()


def test_linear_takes_a_generator() -> None:
    a = nn.Linear(2, 2, generator=np.random.default_rng(9))
    b = nn.Linear(2, 2, generator=np.random.default_rng(9))
    assert a.weight.data.tolist() == b.weight.data.tolist()


# --- an MLP's gradients against autograd ---------------------------------------------------------


def test_mlp_forward_and_cross_entropy_gradients_against_autograd() -> None:
    manual_seed(1)
    model = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 4))
    rng = np.random.default_rng(2)
    x = rng.normal(size=(6, 3))
    labels = np.array([0, 3, 1, 2, 2, 1])
    loss = nn.cross_entropy(model(x), labels)
    loss.backward()
    params = [p.data.copy() for p in model.parameters()]

    def reference(w1, b1, w2, b2, w3, b3):
        h = anp.tanh(x @ w1.T + b1)
        h = anp.maximum(h @ w2.T + b2, 0.0)
        logits = h @ w3.T + b3
        log_p = logits - anp.log(anp.sum(anp.exp(logits), axis=1, keepdims=True))
        return -anp.mean(log_p[np.arange(6), labels])

    assert_close(loss.data, reference(*params))
    for i, p in enumerate(model.parameters()):
        assert_close(p.grad, quiet_grad(reference, i, *params))


def test_sigmoid_module_and_mse_against_autograd() -> None:
    manual_seed(4)
    model = nn.Sequential(nn.Linear(2, 5), nn.Sigmoid(), nn.Linear(5, 1))
    x = np.random.default_rng(5).normal(size=(7, 2))
    y = np.random.default_rng(6).normal(size=(7, 1))
    loss = nn.mse_loss(model(x), y)
    loss.backward()
    params = [p.data.copy() for p in model.parameters()]

    def reference(w1, b1, w2, b2):
        h = 1.0 / (1.0 + anp.exp(-(x @ w1.T + b1)))
        return anp.mean((h @ w2.T + b2 - y) ** 2)

    assert_close(loss.data, reference(*params))
    for i, p in enumerate(model.parameters()):
        assert_close(p.grad, quiet_grad(reference, i, *params))


# --- losses --------------------------------------------------------------------------------------


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_mse_loss_against_autograd(reduction: str) -> None:
    rng = np.random.default_rng(7)
    a, b = rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
    x, y = Tensor(a, requires_grad=True), Tensor(b, requires_grad=True)
    loss = nn.mse_loss(x, y, reduction=reduction)
    loss.backward()

    def reference(p, q):
        return anp.mean((p - q) ** 2) if reduction == "mean" else anp.sum((p - q) ** 2)

    assert_close(loss.data, reference(a, b))
    assert_close(x.grad, quiet_grad(reference, 0, a, b))
    assert_close(y.grad, quiet_grad(reference, 1, a, b))


@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("shape", [(5, 3), (3,)], ids=["batch", "one-sample"])
def test_cross_entropy_against_autograd(reduction: str, shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(8)
    a = rng.normal(size=shape)
    labels = np.array([2, 0, 1, 1, 2]) if len(shape) == 2 else np.array(1)
    x = Tensor(a, requires_grad=True)
    loss = nn.cross_entropy(x, labels, reduction=reduction)
    loss.backward()

    def reference(logits):
        log_p = logits - anp.log(anp.sum(anp.exp(logits), axis=-1, keepdims=True))
        picked = log_p[np.arange(5), labels] if len(shape) == 2 else log_p[1]
        return -(anp.mean(picked) if reduction == "mean" else anp.sum(picked))

    assert_close(loss.data, reference(a))
    assert_close(x.grad, quiet_grad(reference, 0, a))


def test_mse_refuses_shapes_that_would_broadcast() -> None:
    with pytest.raises(ShapeMismatch, match=r"\[4, 1\] and \[4\]"):
        nn.mse_loss(Tensor(np.ones((4, 1))), Tensor(np.ones(4)))
    with pytest.raises(ShapeMismatch):
        nn.mse_loss(Tensor(np.ones((4, 1))), Tensor(np.ones(4)), reduction="sum")


def test_cross_entropy_refuses_a_label_that_is_not_a_class() -> None:
    with pytest.raises(DomainError, match="label 3 is not a class"):
        nn.cross_entropy(Tensor(np.zeros((2, 3))), [0, 3])
    with pytest.raises(DomainError, match="label 0.5"):
        nn.cross_entropy(Tensor(np.zeros((1, 3))), [0.5])


def test_an_unknown_reduction_is_refused() -> None:
    with pytest.raises(ValueError, match="reduction"):
        nn.mse_loss(Tensor([1.0]), Tensor([1.0]), reduction="none")


# --- Module: parameters, names, zero_grad, train/eval -------------------------------------------


class TwoLayer(nn.Module):
    """A PyTorch-style module written by a user: attributes and forward."""

    def __init__(self) -> None:
        self.first = nn.Linear(2, 3)
        self.scale = nn.Parameter([2.0])
        self.blocks = [nn.Linear(3, 3), nn.Tanh()]
        self.again = self.first  # shared: listed once
        self.not_a_parameter = Tensor([1.0], requires_grad=True)  # a plain Tensor, as in PyTorch

    def forward(self, x):
        h = self.first(x) * self.scale
        for block in self.blocks:
            h = block(h)
        return h


def test_a_users_module_finds_its_parameters_in_order_each_once() -> None:
    model = TwoLayer()
    names = [name for name, _ in model.named_parameters()]
    assert names == ["first.weight", "first.bias", "scale", "blocks.0.weight", "blocks.0.bias"]
    assert [id(p) for p in model.parameters()] == [
        id(model.first.weight), id(model.first.bias), id(model.scale),
        id(model.blocks[0].weight), id(model.blocks[0].bias)]
    assert model(np.ones((4, 2))).shape == (4, 3)


def test_sequential_names_indexes_and_repr() -> None:
    model = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    assert [n for n, _ in model.named_parameters()] == ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert len(model) == 3 and isinstance(model[1], nn.ReLU) and list(model)[2] is model[2]
    assert repr(model) == (
        "Sequential(\n"
        "  (0): Linear(in_features=2, out_features=3, bias=True)\n"
        "  (1): ReLU()\n"
        "  (2): Linear(in_features=3, out_features=1, bias=True)\n"
        ")")
    with pytest.raises(TypeError):
        nn.Sequential(nn.ReLU(), lambda x: x)


def test_zero_grad_sets_tensor_grads_to_none_or_zeros() -> None:
    model = nn.Sequential(nn.Linear(2, 2))
    model(np.ones((1, 2))).sum().backward()
    assert all(p.grad is not None for p in model.parameters())
    model.zero_grad(set_to_none=False)
    assert all(p.grad.tolist() == np.zeros(p.shape).tolist() for p in model.parameters())
    model.zero_grad()
    assert all(p.grad is None for p in model.parameters())


def test_one_module_base_for_values_and_tensors() -> None:
    random.seed(0)
    mlp = nn.MLP(2, [3, 1])  # micrograd's classes are Modules too, and keep their behaviour
    assert isinstance(mlp, nn.Module) and isinstance(nn.Linear(1, 1), nn.Module)
    out = mlp([1.0, 2.0])
    out.backward()
    mlp.zero_grad()
    assert all(isinstance(p, Value) and p.grad == 0.0 for p in mlp.parameters())
    assert [n for n, _ in mlp.named_parameters()] == [str(i) for i in range(len(mlp.parameters()))]

    class Mixed(nn.Module):
        def __init__(self) -> None:
            self.v = Value(1.0)
            self.lin = nn.Linear(1, 1)

    mixed = Mixed()
    mixed.v.grad = 5.0
    mixed.lin.weight.grad = np.ones((1, 1))
    mixed.zero_grad()
    assert mixed.v.grad == 0.0 and mixed.lin.weight.grad is None


def test_train_and_eval_set_the_flag_everywhere() -> None:
    model = TwoLayer()
    assert model.training
    assert model.eval() is model
    assert not model.training and not model.first.training and not model.blocks[1].training
    model.train()
    assert model.blocks[0].training


def test_a_module_without_forward_says_so() -> None:
    with pytest.raises(NotImplementedError, match="forward"):
        nn.Module()(1.0)


def test_evaluation_under_no_grad_records_nothing() -> None:
    model = nn.Sequential(nn.Linear(2, 4), nn.ReLU(), nn.Linear(4, 1))
    with nn.no_grad():
        out = model(np.ones((3, 2)))
    assert not out.requires_grad and out.is_leaf


# --- training: the minigrad post's regression, recovered -----------------------------------------


def _regression(n: int = 200):
    rng = np.random.default_rng(11)
    x = rng.uniform(-2, 2, size=(n, 1))
    X = np.hstack([np.ones((n, 1)), x])
    true_w = np.array([[0.8], [-1.7]])
    Y = X @ true_w + rng.normal(scale=0.05, size=(n, 1))
    return X, Y, true_w


def test_training_recovers_the_generating_weights_with_sgd() -> None:
    X, Y, true_w = _regression()
    W = nn.Parameter(np.zeros((2, 1)))
    optimizer = optim.SGD([W], lr=0.1)
    for _ in range(300):
        optimizer.zero_grad()
        loss = nn.mse_loss(tensor(X) @ W, tensor(Y))
        loss.backward()
        optimizer.step()
    least_squares = np.linalg.lstsq(X, Y, rcond=None)[0]
    assert_close(W.data, least_squares, rel=1e-8)  # converged to the minimiser
    assert np.all(np.abs(W.data - true_w) < 0.02)  # which is near the generating weights


def test_training_a_linear_layer_with_adam() -> None:
    X, Y, true_w = _regression()
    manual_seed(3)
    model = nn.Linear(1, 1)
    optimizer = optim.Adam(model.parameters(), lr=0.05)
    x = X[:, 1:]
    for _ in range(600):
        optimizer.zero_grad()
        loss = nn.mse_loss(model(x), Y)
        loss.backward()
        optimizer.step()
    assert abs(model.bias.item() - true_w[0, 0]) < 0.02
    assert abs(model.weight.item() - true_w[1, 0]) < 0.02
