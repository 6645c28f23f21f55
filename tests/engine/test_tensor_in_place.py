"""In-place ``+= -= *= /=`` on Tensors, with PyTorch's rules, and float32 domain errors.

A manual SGD loop written the PyTorch way (``with no_grad(): p -= lr * p.grad``) must move the
model's own parameters, step for step as PyTorch's does; a leaf that requires a gradient is
refused with grad enabled, as PyTorch refuses it.
"""

import operator

import numpy as np
import pytest

from autodiff_cli import nn, no_grad, tensor
from autodiff_cli.engine.ops import DomainError

torch = pytest.importorskip("torch")


def test_manual_sgd_under_no_grad_moves_parameters_as_pytorch_does():
    rng = np.random.default_rng(3)
    X, Y = rng.normal(size=(8, 3)), rng.normal(size=(8, 1))
    lin = nn.Linear(3, 1)
    ref = torch.nn.Linear(3, 1).double()
    with torch.no_grad():
        ref.weight.copy_(torch.tensor(lin.weight.data))
        ref.bias.copy_(torch.tensor(lin.bias.data))
    weight_array = lin.weight.data
    for _ in range(3):
        nn.mse_loss(lin(X), Y).backward()
        torch.nn.functional.mse_loss(ref(torch.tensor(X)), torch.tensor(Y)).backward()
        with no_grad():
            for p in lin.parameters():
                p -= 0.1 * p.grad
                p.grad = None
        with torch.no_grad():
            for p in ref.parameters():
                p -= 0.1 * p.grad
                p.grad = None
    assert lin.weight.data is weight_array  # the same array, written in place
    np.testing.assert_allclose(lin.weight.data, ref.weight.detach().numpy(), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(lin.bias.data, ref.bias.detach().numpy(), rtol=1e-12, atol=1e-15)
    assert lin.weight.is_leaf and lin.weight.requires_grad


@pytest.mark.parametrize("update, expected", [
    (operator.iadd, [3.0, 6.0, 12.0]), (operator.isub, [-1.0, -2.0, -4.0]),
    (operator.imul, [2.0, 8.0, 32.0]), (operator.itruediv, [0.5, 0.5, 0.5]),
], ids=["+=", "-=", "*=", "/="])
def test_each_in_place_operator_writes_the_same_object(update, expected):
    x = tensor([1.0, 2.0, 4.0])
    array = x.data
    assert update(x, tensor([2.0, 4.0, 8.0])) is x
    assert x.data is array and x.tolist() == expected


def test_leaf_that_requires_grad_is_refused_in_place_as_in_pytorch():
    w = tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        w += 1
    assert w.tolist() == [1.0, 2.0] and w.is_leaf


def test_recorded_result_in_place_is_refused_not_silently_rebound():
    w = tensor([1.0, 2.0], requires_grad=True)
    y = w * 2
    with pytest.raises(RuntimeError, match="write x = x \\+ y"):
        y += 1
    buffer = tensor([0.0, 0.0])
    with pytest.raises(RuntimeError, match="recorded for backward"):
        buffer += w


def test_in_place_keeps_the_precision_of_the_target_and_its_shape():
    x = tensor([1.0, 1.0], dtype="float32")
    x -= np.array([0.1, 0.1])  # a float64 operand: rounded into float32, as PyTorch's x -= does
    assert x.dtype == np.float32
    assert x.tolist() == [np.float32(0.9), np.float32(0.9)]
    with pytest.raises(Exception, match="not x's shape"):
        x += np.ones((2, 2))
    assert x.shape == (2,)


def test_float32_power_overflow_is_a_domain_error_in_float32_words():
    x = tensor([1e20], dtype="float32", requires_grad=True)
    for make, written in ((lambda: x**2, "1e+20**2"), (lambda: x**3, "1e+20**3"), (lambda: x * x, "1e+20 * 1e+20")):
        with pytest.raises(DomainError) as caught:
            make()
        assert caught.value.message == f"at index [0]: {written} is beyond float32's range (about 3.4e38)"
        assert caught.value.overflow


def test_float32_domain_error_shows_float32_digits():
    with pytest.raises(DomainError, match=r"log of -0\.1 is undefined"):
        tensor([-0.1], dtype="float32").log()
    with pytest.raises(DomainError, match=r"1e\+200 \*\* 2 overflows a float"):  # float64 unchanged
        tensor([1e200]) ** 2


# --- precision of a float32 model (F13/F14): PyTorch refuses float32 @ float64 rather than promote


def test_float32_linear_refuses_float64_input_as_pytorch_does():
    lin = nn.Linear(2, 3, dtype="float32")
    ref = torch.nn.Linear(2, 3)  # PyTorch's float32 layer refuses float64 data the same way
    with pytest.raises(RuntimeError):
        ref(torch.tensor([[1.0, 2.0]], dtype=torch.float64))
    for data in ([[1.0, 2.0]], np.array([[1.0, 2.0]])):
        with pytest.raises(RuntimeError, match='holds float32 weights but its input is float64.*dtype="float32"'):
            lin(data)
    out = lin(tensor([[1.0, 2.0]], dtype="float32"))
    assert out.dtype == np.float32
    assert nn.mse_loss(out, [[0.0, 0.0, 0.0]]).dtype == np.float32  # a list target takes the input's precision


def test_matmul_of_two_precisions_is_refused():
    with pytest.raises(RuntimeError, match="x is float64 and y is float32"):
        tensor(np.ones((2, 2))) @ tensor([[1.0], [2.0]], dtype="float32")
    with pytest.raises(RuntimeError):
        torch.ones(2, 2, dtype=torch.float64) @ torch.ones(2, 1)


def test_repr_shows_a_dtype_that_is_not_the_default():
    assert repr(tensor([1.0, 2.0], dtype="float32")) == "tensor([1., 2.], dtype=float32)"
    assert repr(tensor([1.0, 2.0], dtype="float32", requires_grad=True)) == \
        "tensor([1., 2.], dtype=float32, requires_grad=True)"
    assert repr(tensor([1.0, 2.0])) == "tensor([1., 2.])"  # float64 is this API's default, as float32 is PyTorch's


def test_backward_through_a_graph_recorded_before_an_in_place_update_is_refused():
    w = tensor([1.0, 2.0], requires_grad=True)
    loss = (w * w).sum()
    with no_grad():
        w -= 0.5  # loss's graph saved w's old values: its gradient would be 2 * new w, silently
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        loss.backward()
    ref = torch.tensor([1.0, 2.0], requires_grad=True)
    ref_loss = (ref * ref).sum()
    with torch.no_grad():
        ref -= 0.5
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        ref_loss.backward()
    (w * w).sum().backward()  # computed again after the update: 2 * w
    assert w.grad.tolist() == [1.0, 3.0]


def test_an_update_through_a_view_counts_for_the_array_it_views():
    w = tensor([[1.0, 2.0]], requires_grad=True)
    loss = (w.T * 3.0).sum() + (w * w).sum()
    with no_grad():
        view = w.detach()  # shares w's array
        view += 1.0
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        loss.backward()


def test_an_optimizer_step_counts_as_an_in_place_write():
    from autodiff_cli.optim import SGD

    w = tensor([1.0, 2.0], requires_grad=True)
    optimizer = SGD([w], lr=0.1)
    (w * w).sum().backward()
    stale = w.sin().sum()  # sin saves its operand, in both
    before = w._version
    optimizer.step()
    assert w._version == before + 1
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        stale.backward()
    ref = torch.tensor([1.0, 2.0], requires_grad=True)
    ref_optimizer = torch.optim.SGD([ref], lr=0.1)
    (ref * ref).sum().backward()
    ref_stale = ref.sin().sum()
    ref_optimizer.step()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        ref_stale.backward()
