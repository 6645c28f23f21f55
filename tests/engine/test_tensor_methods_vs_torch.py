"""Tensor's methods and functions, made from the registry, against PyTorch's of the same call.

Each case is one call written once and run on both (``t.var(dim=0, keepdim=True)``,
``ns.where(t > 0, t, u)`` with ``ns`` this module or ``torch``): values and gradients in
float64 to 1e-12.  A last test holds that every op of the registry is reachable from a Tensor,
so a new entry cannot be forgotten here.
"""

import numpy as np
import pytest

from autodiff_cli import tensor
from autodiff_cli.engine import tensor as ours
from autodiff_cli.engine.registry import ENTRIES

torch = pytest.importorskip("torch")

CASES = {
    "clip": lambda ns, t, u: t.clip(-0.5, 0.5),
    "maximum": lambda ns, t, u: t.maximum(u),
    "minimum": lambda ns, t, u: t.minimum(u),
    "maximum-function": lambda ns, t, u: ns.maximum(t, u),
    "var": lambda ns, t, u: t.var(),
    "var-dim": lambda ns, t, u: t.var(dim=0),
    "var-keepdim": lambda ns, t, u: t.var(dim=1, keepdim=True),
    "var-correction": lambda ns, t, u: t.var(dim=1, correction=0),
    "std": lambda ns, t, u: t.std(),
    "std-dim": lambda ns, t, u: t.std(-1, keepdim=True),
    "reshape": lambda ns, t, u: t.reshape(4, 3) * u.reshape((4, 3)),
    "reshape-minus-one": lambda ns, t, u: t.reshape(-1).tanh(),
    "where-method": lambda ns, t, u: t.where(t > 0, u),
    "where-function": lambda ns, t, u: ns.where(t > u, t, u * 2),
    "cumsum": lambda ns, t, u: t.cumsum(dim=0),
    "cumsum-last": lambda ns, t, u: t.cumsum(1),
    "softmax-dim0": lambda ns, t, u: t.softmax(dim=0),
    "log_softmax-dim0": lambda ns, t, u: t.log_softmax(0),
    "logsumexp-dim0": lambda ns, t, u: t.logsumexp(dim=0),
    "sum-keepdim": lambda ns, t, u: t.sum(dim=1, keepdim=True) * u,
    "mean-keepdim": lambda ns, t, u: t.mean(dim=0, keepdim=True) * u,
    "max-all": lambda ns, t, u: t.max(),
    "max-dim": lambda ns, t, u: t.max(dim=1).values * t.max(1, True)[0].sum(),
    "min-dim": lambda ns, t, u: t.min(0, keepdim=True).values,
    "stack": lambda ns, t, u: ns.stack([t, u], dim=1),
    "concat": lambda ns, t, u: ns.concat([t, u], dim=0),
    "sigmoid-function": lambda ns, t, u: ns.sigmoid(t),
}


def run(case, ns, arrays, weights):
    made = [(torch.tensor if ns is torch else tensor)(a, requires_grad=True) for a in arrays]
    out = CASES[case](ns, *made)
    (out * (torch.tensor(weights) if ns is torch else tensor(weights))).sum().backward()
    return np.asarray(out.detach().numpy()), [None if m.grad is None else np.asarray(m.grad) for m in made]


@pytest.mark.parametrize("case", sorted(CASES))
def test_method_value_and_gradient_against_torch(case):
    rng = np.random.default_rng(5)
    arrays = [rng.normal(size=(3, 4)), rng.normal(size=(3, 4))]
    weights = rng.normal(size=CASES[case](ours, *map(tensor, arrays)).shape)  # a vector for the VJP
    out_ours, grads_ours = run(case, ours, arrays, weights)
    out_torch, grads_torch = run(case, torch, arrays, weights)
    np.testing.assert_allclose(out_ours, out_torch, rtol=1e-12, atol=1e-12)
    for got, want in zip(grads_ours, grads_torch):
        assert (got is None) == (want is None)  # an operand the call does not use gets no gradient in both
        if want is not None:
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_argmax_and_comparisons_against_torch_and_record_nothing():
    x = np.array([[1.0, 5.0, 2.0], [7.0, 0.0, 7.5]])
    t, ref = tensor(x, requires_grad=True), torch.tensor(x)
    assert t.argmax(dim=1).tolist() == ref.argmax(dim=1).tolist()
    assert t.argmax(dim=0, keepdim=True).tolist() == ref.argmax(dim=0, keepdim=True).tolist()
    assert t.argmax().item() == ref.argmax().item()
    for ours_result, torch_result in ((t > 2, ref > 2), (t <= 5, ref <= 5), (t.eq(7), ref.eq(7)), (t.ne(7), ref.ne(7)),
                                      (t.lt(1.5), ref.lt(1.5)), (t.ge(x[0]), ref.ge(torch.tensor(x[0])))):
        assert ours_result.tolist() == torch_result.double().tolist()
        assert not ours_result.requires_grad  # as PyTorch's: no gradient passes a comparison
    assert not t.argmax().requires_grad
    for dim in (0, 1, -1):
        for keepdim in (False, True):
            for name in ("max", "min"):
                values, indices = getattr(t, name)(dim, keepdim)
                ref_values, ref_indices = getattr(ref, name)(dim, keepdim)
                assert values.tolist() == ref_values.tolist() and indices.tolist() == ref_indices.double().tolist()


def test_arguments_are_checked_and_named():
    x = tensor(np.ones((2, 3)))
    with pytest.raises(TypeError, match="one argument by position, then keepdim, correction by name"):
        x.var(0, True)  # PyTorch's old var(dim, unbiased): refused, never read as keepdim
    with pytest.raises(TypeError, match="no argument 'dims'"):
        x.sum(dims=0)
    with pytest.raises(TypeError, match="keepdim is True or False"):
        x.sum(dim=0, keepdim=1)
    with pytest.raises(TypeError, match="needs its argument shape"):
        x.reshape()
    with pytest.raises(TypeError, match="takes 2 operands besides this Tensor"):
        x.clip(0)


def test_every_op_of_the_registry_is_reachable_from_a_tensor():
    operators = {"+": "__add__", "-": "__sub__", "*": "__mul__", "/": "__truediv__", "neg": "__neg__",
                 "**": "__pow__", "**c": "__pow__", "@": "__matmul__", "index": "__getitem__",
                 "gather": "__getitem__", "=": "__pos__"}
    for name in ENTRIES:
        reachable = (name in ours.OP_FUNCTIONS or hasattr(ours.Tensor, name)
                     or hasattr(ours.Tensor, operators.get(name, ours._PYTHON_COMPARISONS.get(name, "-"))))
        assert reachable, name


def test_the_functions_are_the_package_s_too():
    import autodiff_cli
    from autodiff_cli import concat, stack, where  # as torch.where, torch.stack

    assert where is ours.OP_FUNCTIONS["where"] and stack is ours.OP_FUNCTIONS["stack"]
    assert concat([tensor([1.0]), tensor([2.0])]).tolist() == [1.0, 2.0]
    with pytest.raises(AttributeError):
        getattr(autodiff_cli, "index")  # indexing is x[i], not a function  # noqa: B009
    with pytest.raises(AttributeError):
        getattr(autodiff_cli, "no_such_name")  # noqa: B009


def test_indexing_by_a_tensor_of_row_numbers_gathers_rows_as_pytorch():
    x = np.arange(6.0).reshape(3, 2)
    rows = [2, 0, 2]
    t, ref = tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    weights = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    (t[tensor(rows)] * tensor(weights)).sum().backward()
    (ref[torch.tensor(rows)] * torch.tensor(weights)).sum().backward()
    assert t[rows].tolist() == ref[rows].tolist() == t[np.array(rows)].tolist()
    np.testing.assert_array_equal(t.grad, ref.grad.numpy())  # row 2 taken twice gets both
    with pytest.raises(TypeError, match="not indexed by booleans"):
        t[[True, False, True]]  # PyTorch's mask: refused, never read as rows 1, 0, 1
    with pytest.raises(TypeError, match="not indexed by booleans"):
        t[t[:, 0] > 1]  # a comparison's 0 and 1 too: x[x > 0] is a mask in PyTorch
