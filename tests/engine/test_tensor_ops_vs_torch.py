"""The tensor ops against PyTorch (float64, CPU) where it is installed: values and VJPs.

PyTorch is optional; without it this file is skipped.  Its max/min over all elements
(torch.amax/amin) splits the gradient evenly at ties, the convention documented in the
table, so ties are compared too.
"""

import numpy as np
import pytest

from autodiff_cli.engine.registry import ENTRIES

torch = pytest.importorskip("torch")

S = slice


def t_reduce(fn):
    def apply(x, axis):
        return fn(x) if axis is None else fn(x, dim=axis)

    return apply


TORCH = {
    "@": lambda x, y, p: torch.matmul(x, y),
    "sum": lambda x, p: t_reduce(torch.sum)(x, p),
    "mean": lambda x, p: t_reduce(torch.mean)(x, p),
    "max": lambda x, p: t_reduce(torch.amax)(x, p),
    "min": lambda x, p: t_reduce(torch.amin)(x, p),
    "transpose": lambda x, p: x.transpose(-1, -2),
    "softmax": lambda x, p: torch.softmax(x, dim=-1),
    "log_softmax": lambda x, p: torch.log_softmax(x, dim=-1),
    "logsumexp": lambda x, p: torch.logsumexp(x, dim=-1),
    "index": lambda x, p: x[p],  # torch slices take positive steps only
    "mse": lambda x, y, p: torch.nn.functional.mse_loss(x, y),
    "cumsum": lambda x, p: torch.cumsum(x, dim=-1 if p is None else p),
}

CASES = [
    ("@", [(3,), (3,)], None), ("@", [(3,), (3, 4)], None), ("@", [(2, 3), (3,)], None), ("@", [(2, 3), (3, 4)], None),
    ("sum", [(3, 4)], None), ("sum", [(3, 4)], -1), ("mean", [(2, 3, 4)], 1), ("max", [(3, 4)], 0), ("min", [(3, 4)], -1),
    ("max", [(5,)], None), ("transpose", [(3, 4)], None), ("softmax", [(3, 4)], None), ("log_softmax", [(3, 4)], None),
    ("logsumexp", [(3, 4)], None), ("index", [(3, 4)], (-1, S(1, None, 2))), ("index", [(3, 4)], (S(None), 2)),
    ("mse", [(3, 4), (3, 4)], None),
    ("cumsum", [(5,)], None), ("cumsum", [(1,)], None), ("cumsum", [(3, 4)], 0), ("cumsum", [(3, 4)], -1),
    ("cumsum", [(4, 1)], -1), ("cumsum", [(2, 3, 4)], 1), ("cumsum", [(2, 3, 4)], -3),
]


def compare(name, args, param, g):
    op = ENTRIES[name]
    out = op.forward(np, args, [0] * len(args), param)
    grads = op.vjp(np, g, out, args, [0] * len(args), param)
    ts = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in args]
    t_out = TORCH[name](*ts, param)
    (t_out * torch.tensor(g, dtype=torch.float64)).sum().backward()
    np.testing.assert_allclose(out, t_out.detach().numpy(), rtol=1e-12, atol=1e-12)
    for got, t in zip(grads, ts):
        np.testing.assert_allclose(got, t.grad.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}")
def test_value_and_vjp_against_torch(case):
    name, shapes, param = case
    rng = np.random.default_rng(21)
    args = [rng.normal(size=s) for s in shapes]
    out = ENTRIES[name].forward(np, args, [0] * len(args), param)
    compare(name, args, param, rng.normal(size=np.shape(out)))


def test_max_and_min_ties_against_torch():
    x = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])
    compare("max", [x], None, np.float64(1.0))
    compare("max", [x], 1, np.array([1.0, 3.0]))
    compare("min", [x], 0, np.array([1.0, 2.0, 4.0]))


def test_cross_entropy_against_torch():
    rng = np.random.default_rng(22)
    x = rng.normal(size=(6, 4)) * 50.0
    y = rng.integers(0, 4, size=6)
    op = ENTRIES["cross_entropy"]
    out = op.forward(np, [x, y.astype(np.float64)], [0, 0], None)
    gx, gy = op.vjp(np, np.float64(2.0), out, [x, y.astype(np.float64)], [0, 0], None)
    tx = torch.tensor(x, requires_grad=True)
    loss = torch.nn.functional.cross_entropy(tx, torch.tensor(y))
    (2.0 * loss).backward()
    np.testing.assert_allclose(out, loss.item(), rtol=1e-12)
    np.testing.assert_allclose(gx, tx.grad.numpy(), rtol=1e-12, atol=1e-12)
    assert not gy.any()


# --- the ops of issue 33: reshape, keepdim, var/std, softmax along an axis, argmax, one_hot, maximum ---

from autodiff_cli.engine.ops import OPS  # noqa: E402
from autodiff_cli.engine.tensor_ops import Arguments, elementwise_forward, elementwise_vjp  # noqa: E402

TORCH.update({
    "reshape": lambda x, p: x.reshape(p),
    "var": lambda x, p: torch.var(x, dim=p[0], keepdim=p[1], correction=p[2]),
    "std": lambda x, p: torch.std(x, dim=p[0], keepdim=p[1], correction=p[2]),
})
NEW_CASES = [
    ("reshape", [(2, 3, 4)], (4, -1)), ("reshape", [(2, 3, 4, 5)], (6, 1, -1)),
    ("var", [(3, 4)], Arguments((1, True, 1))), ("var", [(2, 3, 4, 5)], Arguments((2, False, 0))),
    ("std", [(3, 4)], Arguments((0, True, 1))), ("std", [(2, 3, 4, 5)], Arguments((-1, False, 2))),
]


@pytest.mark.parametrize("case", NEW_CASES, ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}")
def test_new_ops_value_and_vjp_against_torch(case):
    test_value_and_vjp_against_torch(case)


@pytest.mark.parametrize("name", ["sum", "mean", "max", "min"])
def test_keepdim_against_torch(name):
    x = np.random.default_rng(23).normal(size=(2, 3, 4, 5))
    fn = {"sum": torch.sum, "mean": torch.mean, "max": torch.amax, "min": torch.amin}[name]
    op = ENTRIES[name]
    for axis in (1, -1):
        out = op.forward(np, [x], [0], Arguments((axis, True)))
        g = np.random.default_rng(24).normal(size=out.shape)
        (got,) = op.vjp(np, g, out, [x], [0], Arguments((axis, True)))
        t = torch.tensor(x, requires_grad=True)
        t_out = fn(t, dim=axis, keepdim=True)
        (t_out * torch.tensor(g)).sum().backward()
        np.testing.assert_allclose(out, t_out.detach().numpy(), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(got, t.grad.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "logsumexp"])
@pytest.mark.parametrize("axis", [0, 1, -3])
def test_softmax_family_along_an_axis_against_torch(name, axis):
    x = np.random.default_rng(25).normal(size=(3, 4, 5)) * 20.0
    op = ENTRIES[name]
    out = op.forward(np, [x], [0], axis)
    g = np.random.default_rng(26).normal(size=out.shape)
    (got,) = op.vjp(np, g, out, [x], [0], axis)
    t = torch.tensor(x, requires_grad=True)
    t_out = getattr(torch, name)(t, dim=axis)
    (t_out * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(out, t_out.detach().numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got, t.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_argmax_and_one_hot_against_torch():
    x = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0], [0.0, -1.0, 5.0]])  # ties: the first index
    got = ENTRIES["argmax"].forward(np, [x], [0], 1)
    np.testing.assert_array_equal(got, torch.argmax(torch.tensor(x), dim=1).numpy())
    assert ENTRIES["argmax"].forward(np, [x], [0], None) == torch.argmax(torch.tensor(x)).item()
    y = np.array([2.0, 0.0, 1.0])
    want = torch.nn.functional.one_hot(torch.tensor(y, dtype=torch.int64), 4).numpy()
    np.testing.assert_array_equal(ENTRIES["one_hot"].forward(np, [y], [0], 4), want)


@pytest.mark.parametrize("name", ["maximum", "minimum"])
def test_maximum_and_minimum_with_ties_against_torch(name):
    x = np.array([[1.0, 3.0, -2.0], [2.0, 2.0, 0.5]])
    y = np.array([3.0, 2.0, -2.0])  # ties at [0, 2], [1, 1]
    g = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    out, slopes = elementwise_forward(np, name, [x, y], [0, 0])
    gx, gy = elementwise_vjp(np, name, g, slopes, [x, y], [0, 0])
    tx, ty = torch.tensor(x, requires_grad=True), torch.tensor(y, requires_grad=True)
    t_out = getattr(torch, name)(tx, ty)
    (t_out * torch.tensor(g)).sum().backward()
    np.testing.assert_array_equal(out, t_out.detach().numpy())
    np.testing.assert_array_equal(gx, tx.grad.numpy())
    np.testing.assert_array_equal(gy, ty.grad.numpy())
    assert OPS[name].scalar(2.0, 2.0)[1:] == (0.5, 0.5)


@pytest.mark.parametrize("axis", [None, 0, 1, -1, -2])
def test_cumsum_over_batch_rows_against_torch(axis) -> None:
    """A batch of 5 rows of [3, 4] (leads 1: per-row axis k is array axis k + 1), values and
    gradients against torch.cumsum of the whole batch along the same array axis."""
    rng = np.random.default_rng(32)
    x, g = rng.normal(size=(5, 3, 4)), rng.normal(size=(5, 3, 4))
    op = ENTRIES["cumsum"]
    out = op.forward(np, [x], [1], axis)
    (got,) = op.vjp(np, g, out, [x], [1], axis)
    dim = -1 if axis is None else axis + 1 if axis >= 0 else axis
    t = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    t_out = torch.cumsum(t, dim=dim)
    (t_out * torch.tensor(g, dtype=torch.float64)).sum().backward()
    np.testing.assert_allclose(out, t_out.detach().numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got, t.grad.numpy(), rtol=1e-12, atol=1e-12)
    tangent = rng.normal(size=(5, 3, 4))  # linear: its JVP is cumsum of the tangent
    np.testing.assert_allclose(op.jvp(np, [tangent], out, [x], [1], axis), np.cumsum(tangent, axis=dim),
                               rtol=1e-12, atol=1e-12)
