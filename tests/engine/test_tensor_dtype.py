"""float32 in the Python API: Tensor(..., dtype="float32"), float32 NumPy data kept, nn.Linear and
the optimisers working in the parameters' precision.  Each float32 result is held against the
same computation in float64 at float32's precision (and against PyTorch's float32 where it is
installed); float64 stays the default."""

from __future__ import annotations

import numpy as np
import pytest

from autodiff_cli import Tensor, nn, optim
from autodiff_cli.engine.tensor import ones, randn, tensor, zeros

F32_RTOL = 2e-5  # a few float32 roundings over a small network, relative to the largest entry


def close(got: np.ndarray, want: np.ndarray, rtol: float = F32_RTOL) -> None:
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    scale = max(1.0, float(np.max(np.abs(want))))
    assert np.max(np.abs(got - want)) <= rtol * scale, (got, want)


def test_float64_stays_the_default() -> None:
    assert Tensor([1, 2]).dtype == np.float64
    assert Tensor(np.arange(3)).dtype == np.float64
    assert zeros(2).dtype == ones(2).dtype == randn(2).dtype == np.float64
    assert nn.Linear(2, 3).weight.dtype == np.float64


def test_float32_data_and_dtype_are_kept() -> None:
    assert Tensor(np.ones(3, dtype=np.float32)).dtype == np.float32
    assert Tensor([1, 2], dtype="float32").dtype == np.float32
    assert tensor([1.5], dtype=np.float32).dtype == np.float32
    assert Tensor(Tensor([1.0], dtype="float32")).dtype == np.float32
    assert Tensor(np.ones(2, dtype=np.float32), dtype="float64").dtype == np.float64
    assert zeros(2, dtype="float32").dtype == ones(2, dtype="float32").dtype == np.float32


@pytest.mark.parametrize("dtype", ["int32", "float16", "complex64", True])
def test_other_dtypes_are_refused(dtype: object) -> None:
    with pytest.raises(TypeError, match="float32 or float64"):
        Tensor([1.0], dtype=dtype)


def test_numbers_take_the_tensors_precision() -> None:
    x = Tensor([1.0, 2.0], dtype="float32")
    for result in (x + 1, 1 + x, x * 2.5, 2.5 / x, x ** 2, 2 ** x, -x, x - 0.1):
        assert result.dtype == np.float32
    assert (x + Tensor([1.0, 1.0])).dtype == np.float64  # a float64 Tensor: NumPy's promotion


def mlp_loss(dtype: str, x: np.ndarray, labels: list[int]) -> tuple[float, list[np.ndarray]]:
    """An MLP's cross-entropy and its parameters' gradients, from the same float64 draws."""
    generator = np.random.default_rng(5)
    model = nn.Sequential(nn.Linear(4, 8, generator=generator, dtype=dtype), nn.Tanh(),
                          nn.Linear(8, 8, generator=generator, dtype=dtype), nn.ReLU(),
                          nn.Linear(8, 3, generator=generator, dtype=dtype))
    out = model(Tensor(x, dtype=dtype))
    loss = nn.cross_entropy(out, labels) + nn.mse_loss(out.softmax().sum(-1), [1.0] * len(labels)) \
        + out.log_softmax().mean() * 0.1 + out.logsumexp().max() * 0.01 + out[0, 1] * out.T[2, 0]
    loss.backward()
    assert loss.dtype == np.dtype(dtype)
    grads = [p.grad for p in model.parameters()]
    assert all(g.dtype == np.dtype(dtype) for g in grads)
    return loss.item(), grads


def test_float32_network_matches_float64_to_float32_precision() -> None:
    x = np.random.default_rng(0).standard_normal((6, 4))
    labels = [0, 1, 2, 2, 1, 0]
    loss32, grads32 = mlp_loss("float32", x.astype(np.float32), labels)
    loss64, grads64 = mlp_loss("float64", x, labels)
    close(loss32, loss64)
    for g32, g64 in zip(grads32, grads64):
        close(g32, g64)


def adam_steps(dtype: str, steps: int) -> list[np.ndarray]:
    generator = np.random.default_rng(1)
    model = nn.Sequential(nn.Linear(3, 5, generator=generator, dtype=dtype), nn.Tanh(),
                          nn.Linear(5, 1, generator=generator, dtype=dtype))
    x = Tensor(np.random.default_rng(2).standard_normal((10, 3)), dtype=dtype)
    y = Tensor(np.linspace(-1, 1, 10), dtype=dtype)
    opt = optim.Adam(model.parameters(), lr=0.01)
    for _ in range(steps):
        opt.zero_grad()
        nn.mse_loss(model(x).sum(-1), y).backward()
        opt.step()
    params = [p.data for p in model.parameters()]
    assert all(p.dtype == np.dtype(dtype) for p in params)
    assert all(s.dtype == np.dtype(dtype) for state in opt.state for s in state)
    return params


def test_adam_keeps_float32_and_follows_float64() -> None:
    for p32, p64 in zip(adam_steps("float32", 20), adam_steps("float64", 20)):
        close(p32, p64, rtol=1e-4)  # 20 steps of lr 0.01: float32's roundings add up a little


def test_sgd_keeps_float32() -> None:
    w = Tensor([1.0, -2.0], dtype="float32", requires_grad=True)
    opt = optim.SGD([w], lr=0.1, momentum=0.9)
    for _ in range(3):
        opt.zero_grad()
        (w * w).sum().backward()
        opt.step()
    assert w.data.dtype == np.float32
    # by hand: g = 2w; buffer = g, then 0.9 * buffer + g; w -= 0.1 * buffer
    want, buffer = np.array([1.0, -2.0]), None
    for _ in range(3):
        g = 2 * want
        buffer = g if buffer is None else 0.9 * buffer + g
        want = want - 0.1 * buffer
    close(w.data, want, rtol=1e-6)


def test_against_pytorch_float32() -> None:
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(3).standard_normal((5, 4)).astype(np.float32)
    w = np.random.default_rng(4).standard_normal((3, 4)).astype(np.float32)
    labels = [0, 2, 1, 1, 0]
    ours_w = Tensor(w, requires_grad=True)
    ours = nn.cross_entropy(Tensor(x) @ ours_w.T, labels)
    ours.backward()
    theirs_w = torch.tensor(w, requires_grad=True)
    theirs = torch.nn.functional.cross_entropy(torch.tensor(x) @ theirs_w.T, torch.tensor(labels))
    theirs.backward()
    assert ours.dtype == np.float32
    close(ours.item(), theirs.item(), rtol=1e-6)
    close(ours_w.grad, theirs_w.grad.numpy(), rtol=1e-6)
