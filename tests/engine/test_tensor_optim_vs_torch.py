"""The same model, losses and optimiser steps in PyTorch (float64), where it is installed.

Skipped without PyTorch (not a CI dependency): the equations are also held by hand in
test_tensor_optim.py and by autograd in test_tensor_nn.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from autodiff_cli import nn, optim
from autodiff_cli.engine.tensor import manual_seed

torch = pytest.importorskip("torch", reason="PyTorch is not installed: the comparison with it is skipped")


def _torch_copy(model):
    layers = []
    for module in model:
        if isinstance(module, nn.Linear):
            layer = torch.nn.Linear(module.in_features, module.out_features, dtype=torch.float64)
            with torch.no_grad():
                layer.weight.copy_(torch.from_numpy(module.weight.data.copy()))
                layer.bias.copy_(torch.from_numpy(module.bias.data.copy()))
            layers.append(layer)
        else:
            layers.append({"ReLU": torch.nn.ReLU, "Tanh": torch.nn.Tanh, "Sigmoid": torch.nn.Sigmoid}[type(module).__name__]())
    return torch.nn.Sequential(*layers)


@pytest.mark.parametrize("optimizer, settings", [
    ("SGD", {"lr": 0.05, "momentum": 0.9}),
    ("SGD", {"lr": 0.05, "momentum": 0.8, "nesterov": True, "weight_decay": 0.01}),
    ("Adam", {"lr": 0.01}),
    ("Adam", {"lr": 0.02, "betas": (0.8, 0.99), "eps": 1e-6, "weight_decay": 0.05}),
], ids=["sgd-momentum", "sgd-nesterov", "adam", "adam-all"])
@pytest.mark.parametrize("loss", ["cross_entropy", "mse_loss"])
def test_twenty_training_steps_equal_pytorchs(optimizer: str, settings: dict, loss: str) -> None:
    manual_seed(0)
    outputs = 3 if loss == "cross_entropy" else 1
    ours = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, outputs))
    theirs = _torch_copy(ours)
    rng = np.random.default_rng(1)
    x = rng.normal(size=(16, 4))
    y = rng.integers(0, 3, size=16).astype(float) if loss == "cross_entropy" else rng.normal(size=(16, 1))
    tx = torch.from_numpy(x)
    ty = torch.from_numpy(y).long() if loss == "cross_entropy" else torch.from_numpy(y)
    our_optimizer = getattr(optim, optimizer)(ours.parameters(), **settings)
    their_optimizer = getattr(torch.optim, optimizer)(theirs.parameters(), **settings)
    for _ in range(20):
        our_optimizer.zero_grad()
        our_loss = getattr(nn, loss)(ours(x), y)
        our_loss.backward()
        our_optimizer.step()
        their_optimizer.zero_grad()
        their_loss = getattr(torch.nn.functional, loss)(theirs(tx), ty)
        their_loss.backward()
        their_optimizer.step()
        assert our_loss.item() == pytest.approx(their_loss.item(), rel=1e-10)
    for p, q in zip(ours.parameters(), theirs.parameters()):
        np.testing.assert_allclose(p.data, q.detach().numpy(), rtol=1e-9, atol=1e-12)
