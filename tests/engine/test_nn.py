"""autodiff_cli.nn against micrograd's nn (a test dependency) and against hand-derived networks.

micrograd's classes are the specification: same constructor arguments, same random
draws, same reprs, same numbers.  The demo notebook's training loop is run on both
libraries with only the import changed.
"""

from __future__ import annotations

import math
import random
from pathlib import Path

import micrograd.engine
import micrograd.nn
import numpy as np
import pytest

from autodiff_cli import nn
from autodiff_cli.engine import Value

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


def test_mlp_of_the_demo_has_337_parameters() -> None:
    # 2 -> 16: 16 neurons of 2 weights + 1 bias = 48; 16 -> 16: 16 * 17 = 272; 16 -> 1: 17.
    assert len(nn.MLP(2, [16, 16, 1]).parameters()) == 48 + 272 + 17


def test_parameters_are_values_in_micrograds_order() -> None:
    neuron = nn.Neuron(3)
    assert neuron.parameters() == neuron.w + [neuron.b]
    layer = nn.Layer(3, 2)
    assert layer.parameters() == layer.neurons[0].parameters() + layer.neurons[1].parameters()
    assert all(isinstance(p, Value) for p in nn.MLP(3, [4, 1]).parameters())


@pytest.mark.parametrize("nin, nouts", [(2, [16, 16, 1]), (3, [4, 4, 1]), (1, [2]), (4, [3, 2])],
                         ids=["demo", "3-4-4-1", "1-2", "4-3-2"])
def test_same_seed_gives_micrograds_starting_weights(nin: int, nouts: list[int]) -> None:
    random.seed(7)
    theirs = [p.data for p in micrograd.nn.MLP(nin, nouts).parameters()]
    random.seed(7)
    ours = [p.data for p in nn.MLP(nin, nouts).parameters()]
    assert ours == theirs


@pytest.mark.parametrize("make", [lambda m: m.Neuron(3), lambda m: m.Neuron(3, nonlin=False),
                                  lambda m: m.Layer(2, 3), lambda m: m.MLP(2, [3, 1])],
                         ids=["neuron", "linear-neuron", "layer", "mlp"])
def test_repr_is_micrograds(make) -> None:
    assert repr(make(nn)) == repr(make(micrograd.nn))


def test_neuron_by_hand() -> None:
    neuron = nn.Neuron(2)
    neuron.w[0].data, neuron.w[1].data, neuron.b.data = 2.0, -3.0, 0.5
    # relu(0.5 + 2*1.5 + (-3)*0.25) = relu(2.75) = 2.75; d/dw = x, d/db = 1
    out = neuron([1.5, 0.25])
    out.backward()
    assert out.data == 2.75
    assert [neuron.w[0].grad, neuron.w[1].grad, neuron.b.grad] == [1.5, 0.25, 1.0]
    # With x = (-1, 0): 0.5 - 2 = -1.5 < 0, so relu gives 0 and every gradient is 0.
    neuron.zero_grad()
    out = neuron([-1.0, 0.0])
    out.backward()
    assert out.data == 0.0 and [p.grad for p in neuron.parameters()] == [0.0, 0.0, 0.0]
    neuron.nonlin = False
    assert neuron([-1.0, 0.0]).data == -1.5


def test_layer_of_one_neuron_returns_a_value_and_of_several_a_list() -> None:
    assert isinstance(nn.Layer(2, 1)([1.0, 2.0]), Value)
    out = nn.Layer(2, 3)([1.0, 2.0])
    assert isinstance(out, list) and len(out) == 3


def test_inputs_may_be_numbers_values_or_an_iterator() -> None:
    random.seed(3)
    model = nn.MLP(3, [4, 1])
    points = [1.0, -2.0, 0.5]
    from_numbers = model(points).data
    assert model([Value(x) for x in points]).data == from_numbers
    assert model(iter(points)).data == from_numbers
    assert model(np.array(points)).data == from_numbers


@pytest.mark.parametrize("size", [1, 3], ids=["too-short", "too-long"])
def test_wrong_number_of_inputs_is_an_error_not_a_silent_truncation(size: int) -> None:
    # micrograd's zip would quietly ignore the extra weights or numbers; we refuse.
    with pytest.raises(ValueError, match="expected 2 inputs, got"):
        nn.MLP(2, [3, 1])([0.5] * size)


def test_same_numbers_and_gradients_as_micrograd() -> None:
    random.seed(11)
    theirs = micrograd.nn.MLP(3, [5, 5, 1])
    random.seed(11)
    ours = nn.MLP(3, [5, 5, 1])
    x = [0.3, -1.2, 2.0]
    out_theirs, out_ours = theirs(x), ours(x)
    out_theirs.backward()
    out_ours.backward()
    assert math.isclose(out_ours.data, out_theirs.data, rel_tol=1e-12)
    for p, q in zip(ours.parameters(), theirs.parameters()):
        assert math.isclose(p.grad, q.grad, rel_tol=1e-12, abs_tol=1e-15)


def test_zero_grad_clears_every_parameter() -> None:
    model = nn.MLP(2, [3, 1])
    model([1.0, 1.0]).backward()
    model.zero_grad()
    assert all(p.grad == 0.0 for p in model.parameters())


# --- micrograd's demo notebook, with only the import changed ------------------------------------


def _moons() -> tuple[np.ndarray, np.ndarray]:
    data = np.loadtxt(SAMPLES / "moons.csv", delimiter=",", skiprows=1)
    return data[:, :2], data[:, 2].astype(int)


def run_demo(library, steps: int, batch_size: int | None) -> tuple[list[float], list[float]]:
    """The notebook's cells as written for micrograd, with ``Value`` and ``MLP`` from ``library``."""
    Value, MLP = library.Value, library.MLP
    X, y = _moons()
    np.random.seed(1337)
    random.seed(1337)
    model = MLP(2, [16, 16, 1])

    def loss(batch_size=None):
        if batch_size is None:
            Xb, yb = X, y
        else:
            ri = np.random.permutation(X.shape[0])[:batch_size]
            Xb, yb = X[ri], y[ri]
        inputs = [list(map(Value, xrow)) for xrow in Xb]
        scores = list(map(model, inputs))
        losses = [(1 + -yi * scorei).relu() for yi, scorei in zip(yb, scores)]
        data_loss = sum(losses) * (1.0 / len(losses))
        alpha = 1e-4
        reg_loss = alpha * sum(p * p for p in model.parameters())
        total_loss = data_loss + reg_loss
        accuracy = [(yi > 0) == (scorei.data > 0) for yi, scorei in zip(yb, scores)]
        return total_loss, sum(accuracy) / len(accuracy)

    losses = []
    for k in range(steps):
        total_loss, _ = loss(batch_size)
        model.zero_grad()
        total_loss.backward()
        learning_rate = 1.0 - 0.9 * k / 100
        for p in model.parameters():
            p.data -= learning_rate * p.grad
        losses.append(float(total_loss.data))
    return losses, [float(p.data) for p in model.parameters()]


class _Micrograd:
    Value, MLP = micrograd.engine.Value, micrograd.nn.MLP


def test_demo_notebook_loop_runs_on_our_classes_and_matches_micrograd() -> None:
    # Mini-batches of 10 (the notebook's loss(batch_size) path) keep micrograd's share short.
    ours = run_demo(nn, steps=6, batch_size=10)
    theirs = run_demo(_Micrograd, steps=6, batch_size=10)
    assert ours[0][0] > ours[0][-1]  # it learns
    for got, want in zip(ours[0] + ours[1], theirs[0] + theirs[1]):
        assert math.isclose(got, want, rel_tol=1e-12, abs_tol=1e-15)
