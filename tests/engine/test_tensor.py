"""The eager Tensor (engine/tensor.py) against HIPS autograd and against hand-derived numbers.

Composite expressions (broadcasting, matrix products, indexing, reductions, the softmax
family, every function of the op table) are written once as a Python function of its
inputs and run twice: on our Tensors and on autograd's boxes over ``autograd.numpy``.
Values and gradients must agree to 1e-12 relative in float64 (the two libraries use
different but equal formulas, e.g. tanh' = 1 - tanh**2 against 1/cosh**2, a few ulps apart).
"""

from __future__ import annotations

import math
import warnings

import autograd
import autograd.numpy as anp
import numpy as np
import pytest

from autodiff_cli.engine import FUNCTIONS, DomainError, Value
from autodiff_cli.engine.grad_mode import is_grad_enabled, no_grad
from autodiff_cli.engine.ops import DivisionByZero
from autodiff_cli.engine.tensor import (
    DEFAULT_SEED,
    ShapeMismatch,
    Tensor,
    default_generator,
    manual_seed,
    normal,
    ones,
    randn,
    tensor,
    zeros,
)

REL = 1e-12


def assert_close(got, want, rel=REL):
    got, want = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    assert got.shape == want.shape, (got.shape, want.shape)
    scale = np.maximum(np.abs(want), 1e-300)
    bad = np.abs(got - want) > rel * scale + 1e-300
    assert not bad.any(), f"got {got[bad]} want {want[bad]}"


def against_autograd(fn, *arrays, rel=REL):
    """Run ``fn`` on Tensors and on autograd: the value and every gradient must agree."""
    leaves = [Tensor(a, requires_grad=True) for a in arrays]
    out = fn(*leaves)
    assert out.shape == ()
    out.backward()
    xs = [np.asarray(a, dtype=float) for a in arrays]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want_value = fn(*xs)
        want_grads = [autograd.grad(fn, i)(*xs) for i in range(len(xs))]
    assert_close(out.data, want_value, rel)
    for leaf, want in zip(leaves, want_grads):
        assert leaf.grad is not None
        assert_close(leaf.grad, want, rel)
    return out, leaves


RNG = np.random.default_rng(20261127)
A = RNG.normal(size=(3, 4))
B = RNG.normal(size=(4, 2))
COL = RNG.normal(size=(3, 1))
ROW = RNG.normal(size=(4,))
POS = RNG.uniform(0.5, 2.0, size=(3, 4))


# The textbook formulas (no shift: the inputs here are small, so nothing overflows).
def _softmax(x):
    e = anp.exp(x)
    return e / anp.sum(e, axis=-1, keepdims=True)


def _logsumexp(x, keepdims=False):
    return anp.log(anp.sum(anp.exp(x), axis=-1, keepdims=keepdims))


def _log_softmax(x):
    return x - _logsumexp(x, keepdims=True)


# Each: (function on Tensors or autograd boxes, inputs).  Tensor methods and autograd's
# functions differ in name, so the functions take a namespace ``m`` chosen by the type.
def ns(x):
    return TensorNS if isinstance(x, Tensor) else AutogradNS


class TensorNS:
    tanh = staticmethod(lambda x: x.tanh())
    exp = staticmethod(lambda x: x.exp())
    log = staticmethod(lambda x: x.log())
    sqrt = staticmethod(lambda x: x.sqrt())
    sigmoid = staticmethod(lambda x: x.sigmoid())
    relu = staticmethod(lambda x: x.relu())
    sin = staticmethod(lambda x: x.sin())
    cos = staticmethod(lambda x: x.cos())
    abs = staticmethod(lambda x: abs(x))
    sum = staticmethod(lambda x, axis=None: x.sum(axis))
    mean = staticmethod(lambda x, axis=None: x.mean(axis))
    max = staticmethod(lambda x, axis=None: x.max() if axis is None else x.max(axis).values)
    min = staticmethod(lambda x, axis=None: x.min() if axis is None else x.min(axis).values)
    T = staticmethod(lambda x: x.T)
    softmax = staticmethod(lambda x: x.softmax())
    log_softmax = staticmethod(lambda x: x.log_softmax())
    logsumexp = staticmethod(lambda x: x.logsumexp())


class AutogradNS:
    tanh = staticmethod(anp.tanh)
    exp = staticmethod(anp.exp)
    log = staticmethod(anp.log)
    sqrt = staticmethod(anp.sqrt)
    sigmoid = staticmethod(lambda x: 1.0 / (1.0 + anp.exp(-x)))
    relu = staticmethod(lambda x: anp.maximum(x, 0.0))
    sin = staticmethod(anp.sin)
    cos = staticmethod(anp.cos)
    abs = staticmethod(anp.abs)
    sum = staticmethod(lambda x, axis=None: anp.sum(x, axis=axis))
    mean = staticmethod(lambda x, axis=None: anp.mean(x, axis=axis))
    max = staticmethod(lambda x, axis=None: anp.max(x, axis=axis))
    min = staticmethod(lambda x, axis=None: anp.min(x, axis=axis))
    T = staticmethod(lambda x: anp.transpose(x))
    softmax = staticmethod(_softmax)
    log_softmax = staticmethod(_log_softmax)
    logsumexp = staticmethod(_logsumexp)


def _mlp(x, w1, b1, w2, b2):
    m = ns(w1)
    h = m.tanh(x @ m.T(w1) + b1)
    logits = h @ m.T(w2) + b2
    return -m.mean(m.sum(m.log_softmax(logits) * ONE_HOT, -1))


ONE_HOT = np.eye(3)[[0, 2, 1, 1, 0]]

COMPOSITES = {
    "broadcast-arith": (lambda a, c, r: ns(a).sum((a * c + r) / (1.0 + c * c) - a ** 2 / 3.0), (A, COL, ROW)),
    "broadcast-functions": (
        lambda a, c, r: ns(a).mean(ns(a).tanh(a * r) * ns(a).exp(c) + ns(a).sigmoid(a - c) * ns(a).sin(r)), (A, COL, ROW)),
    "reflected": (lambda a, r: ns(a).sum(2.0 - a / (3.0 + r * r) + 1.5 * a - 2.0 ** r), (A, ROW)),
    "power-of-tensor": (lambda p, a: ns(p).sum(p ** (a / 4.0) + p ** 2.5), (POS, A)),
    "log-sqrt": (lambda p: ns(p).sum(ns(p).log(p) * ns(p).sqrt(p)), (POS,)),
    "matmul-2d": (lambda a, b: ns(a).sum(ns(a).tanh(a @ b)), (A, B)),
    "matmul-1d-2d": (lambda r, b: ns(r).sum((r @ b) ** 2), (ROW, B)),
    "matmul-2d-1d": (lambda a, r: ns(a).sum(ns(a).sin(a @ r)), (A, ROW)),
    "dot": (lambda r, s: (r @ s) * (r @ r), (ROW, ROW[::-1].copy())),
    "transpose": (lambda a, b: ns(a).sum(ns(a).T(a) * b[:, :1]), (A, B)),
    "indexing": (lambda a: a[1, 2] * a[-1, 0] + ns(a).sum(a[0] * a[:, 1][0]) + ns(a).sum(a[1:, ::2] ** 2)
                 + ns(a).sum(a[::-1, -2:]), (A,)),
    "reductions-axis": (lambda a: ns(a).sum(ns(a).sum(a, 0) * ns(a).mean(a, 1)[0]) + ns(a).sum(ns(a).max(a, -1) ** 2)
                        + ns(a).sum(ns(a).min(a, 0) * 3.0), (A,)),
    "reductions-all": (lambda a: ns(a).max(a) - ns(a).min(a) + ns(a).mean(a) * ns(a).sum(a), (A,)),
    "softmax-family": (lambda a: ns(a).sum(ns(a).softmax(a) * a) + ns(a).sum(ns(a).log_softmax(a)[:, 1])
                       + ns(a).sum(ns(a).logsumexp(a) ** 2), (A,)),
    "softmax-vector": (lambda r: ns(r).logsumexp(r) + ns(r).softmax(r)[2], (ROW,)),
    "relu-abs": (lambda a: ns(a).sum(ns(a).relu(a) * 2.0 + ns(a).abs(a - 0.1) + ns(a).cos(a)), (A,)),
    "mlp-cross-entropy": (_mlp, (RNG.normal(size=(5, 2)), RNG.normal(size=(4, 2)), RNG.normal(size=(4,)),
                                 RNG.normal(size=(3, 4)), RNG.normal(size=(3,)))),
}


@pytest.mark.parametrize("name", COMPOSITES)
def test_composite_against_autograd(name: str) -> None:
    fn, inputs = COMPOSITES[name]
    against_autograd(fn, *inputs)


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_every_function_of_the_op_table_is_a_method_with_its_derivative(name: str) -> None:
    # Points away from kinks and domain edges; the scalar Value is the reference for each element.
    x = np.array([[0.3, 1.7], [2.2, 0.9]])
    t = Tensor(x, requires_grad=True)
    out = getattr(t, name)()
    (out * np.array([[1.0, -2.0], [0.5, 3.0]])).sum().backward()
    for index in np.ndindex(x.shape):
        v = Value(x[index])
        w = getattr(v, name)()
        w.backward()
        assert out.data[index] == w.data
        assert t.grad[index] == pytest.approx(v.grad * [[1.0, -2.0], [0.5, 3.0]][index[0]][index[1]], rel=1e-15)


def test_minigrad_post_linear_regression_gradient() -> None:
    # X is N x 2 with a column of ones, W is 2 x 1, P = X @ W, L = mean((P - Y)**2):
    # dL/dW = (2/N) X^T (P - Y), computed here with NumPy alone.
    rng = np.random.default_rng(5)
    N = 40
    x = rng.uniform(-3, 3, size=(N, 1))
    X = np.hstack([np.ones((N, 1)), x])
    Y = 1.5 + 0.7 * x + rng.normal(scale=0.1, size=(N, 1))
    W0 = np.array([[0.2], [-0.4]])
    W = Tensor(W0, requires_grad=True)
    P = tensor(X) @ W
    L = ((P - Y) ** 2).mean()
    L.backward()
    P_np = X @ W0
    assert_close(P.data, P_np)
    assert_close(L.data, np.mean((P_np - Y) ** 2))
    assert_close(W.grad, (2.0 / N) * X.T @ (P_np - Y))


def test_broadcast_gradients_are_summed_to_the_operands_shape() -> None:
    a = Tensor(np.ones((3, 1)), requires_grad=True)
    b = Tensor(np.arange(4.0), requires_grad=True)
    (a * b).sum().backward()
    assert a.grad.shape == (3, 1) and b.grad.shape == (4,)
    assert a.grad.tolist() == [[6.0], [6.0], [6.0]]  # 0 + 1 + 2 + 3
    assert b.grad.tolist() == [3.0, 3.0, 3.0, 3.0]


def test_max_and_min_split_the_gradient_among_ties() -> None:
    x = Tensor([[1.0, 3.0, 3.0], [2.0, 0.0, 2.0]], requires_grad=True)
    (x.max(1).values.sum() + x.min()).backward()
    # row maxima: 3 tied twice (1/2 each), 2 tied twice (1/2 each); the global min 0 once
    assert x.grad.tolist() == [[0.0, 0.5, 0.5], [0.5, 1.0, 0.5]]


# --- backward semantics (PyTorch's) -----------------------------------------------------------


def test_grad_is_none_until_backward_reaches_it_then_accumulates() -> None:
    x = Tensor([1.0, 2.0], requires_grad=True)
    unused = Tensor([5.0], requires_grad=True)
    constant = Tensor([3.0, 4.0])
    assert x.grad is None
    y = (x * constant).sum()
    y.backward()
    assert x.grad.tolist() == [3.0, 4.0]
    assert unused.grad is None and constant.grad is None
    y.backward()  # the graph is kept: a second pass adds the same again
    assert x.grad.tolist() == [6.0, 8.0]


def test_results_keep_no_grad_unless_retained() -> None:
    x = Tensor([1.0, -2.0], requires_grad=True)
    h = x * 3.0
    h.retain_grad()
    k = h * 2.0
    (k.sum()).backward()
    assert k.grad is None and k.grad_fn == "*" and not k.is_leaf
    assert h.grad.tolist() == [2.0, 2.0] and x.grad.tolist() == [6.0, 6.0]


def test_an_operand_used_twice_gets_both_contributions() -> None:
    x = Tensor(3.0, requires_grad=True)
    (x * x + x).backward()
    assert x.grad == 7.0 and x.grad.shape == ()


def test_two_leaves_do_not_share_one_gradient_array() -> None:
    a, b = Tensor([1.0], requires_grad=True), Tensor([2.0], requires_grad=True)
    (a + b).sum().backward()
    a.grad[0] = 100.0
    assert b.grad.tolist() == [1.0]


def test_non_scalar_backward_needs_a_gradient() -> None:
    x = Tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * x
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        y.backward()
    y.backward(np.array([1.0, 0.5, -1.0]))  # a vector-Jacobian product: v * 2x
    assert x.grad.tolist() == [2.0, 2.0, -6.0]
    with pytest.raises(RuntimeError, match="shape"):
        y.backward(np.ones(2))


def test_backward_of_a_tensor_without_grad_is_an_error() -> None:
    with pytest.raises(RuntimeError, match="does not require grad"):
        (Tensor([1.0]) * 2.0).sum().backward()


def test_a_one_element_non_scalar_output_needs_no_gradient() -> None:
    x = Tensor([[2.0]], requires_grad=True)
    (x * x).backward()
    assert x.grad.tolist() == [[4.0]]


def test_detach_shares_the_data_and_records_nothing() -> None:
    x = Tensor([1.0, 2.0], requires_grad=True)
    d = (x * 2.0).detach()
    assert not d.requires_grad and d.is_leaf
    e = x.detach()
    assert e.data is x.data and np.shares_memory(e.numpy(), x.numpy())
    assert not (e * 3.0).requires_grad


def test_requires_grad_can_only_change_on_leaves() -> None:
    x = Tensor([1.0])
    x.requires_grad = True
    y = x * 2.0
    with pytest.raises(RuntimeError, match="leaf"):
        y.requires_grad = False


def test_gradients_add_up_in_the_same_order_every_run() -> None:
    rng = np.random.default_rng(1)
    inputs = [rng.normal(size=(6, 6)) for _ in range(3)]

    def run():
        a, b, c = (Tensor(v, requires_grad=True) for v in inputs)
        h = (a @ b).tanh() + (b @ c).sigmoid() * a
        ((h @ h.T).sum() + (h * c).mean()).backward()
        return [t.grad.tobytes() for t in (a, b, c)]

    assert run() == run()


# --- operands: numbers, arrays, lists --------------------------------------------------------


def test_reflected_operators_with_numbers_and_arrays() -> None:
    x = Tensor([1.0, 2.0], requires_grad=True)
    arr = np.array([10.0, 20.0])
    results = {
        "2 - x": (2 - x, [1.0, 0.0]),
        "arr - x": (arr - x, [9.0, 18.0]),
        "arr * x": (arr * x, [10.0, 40.0]),
        "np.float64 * x": (np.float64(3.0) * x, [3.0, 6.0]),
        "1 / x": (1 / x, [1.0, 0.5]),
        "2 ** x": (2 ** x, [2.0, 4.0]),
        "arr + x": (arr + x, [11.0, 22.0]),
        "[1, 1] + x": ([1.0, 1.0] + x, [2.0, 3.0]),
        "x ** 2": (x ** 2, [1.0, 4.0]),
        "-x": (-x, [-1.0, -2.0]),
    }
    for name, (out, want) in results.items():
        assert isinstance(out, Tensor), name
        assert out.data.tolist() == want, name
        assert out.requires_grad, name
    m = np.array([[1.0, 0.0], [0.0, 2.0]]) @ x
    assert isinstance(m, Tensor) and m.data.tolist() == [1.0, 4.0]


def test_unsupported_operands_are_a_type_error() -> None:
    x = Tensor([1.0])
    with pytest.raises(TypeError):
        x + "1"
    with pytest.raises(TypeError):
        x * object()
    with pytest.raises(TypeError):
        x[1.5]
    with pytest.raises(TypeError):
        x["0"]


def test_data_is_float64_and_copied() -> None:
    source = np.array([[1, 2]])
    x = Tensor(source)
    assert x.data.dtype == np.float64 and x.shape == (1, 2) and x.ndim == 2
    source[0, 0] = 9
    assert x.data[0, 0] == 1.0
    assert tensor(3).item() == 3.0 and isinstance(tensor(3).item(), float)
    with pytest.raises(ValueError, match="2 elements"):
        Tensor([1.0, 2.0]).item()


def test_repr_reads_like_pytorch() -> None:
    assert repr(Tensor([[1.0, 2.0]], requires_grad=True)) == "tensor([[1., 2.]], requires_grad=True)"
    assert repr(Tensor(3.0)) == "tensor(3.)"
    assert repr(Tensor([1.0, 2.0], requires_grad=True) * 2) == "tensor([2., 4.], grad_fn=<*>)"
    assert repr(Tensor([[1.0, 2.0], [3.0, 4.5]])) == "tensor([[1. , 2. ],\n        [3. , 4.5]])"


def test_transpose_spellings() -> None:
    x = Tensor([[1.0, 2.0, 3.0]], requires_grad=True)
    assert x.T.shape == x.transpose().shape == x.transpose(0, 1).shape == x.t().shape == (3, 1)
    with pytest.raises(ShapeMismatch, match="transpose"):
        Tensor([1.0, 2.0]).T
    with pytest.raises(ValueError):
        x.transpose(0, 2)


def test_softmax_takes_any_axis_as_dim() -> None:
    x = Tensor([[0.0, 1.0, 2.0], [0.0, 0.0, 0.0]])
    assert x.softmax(dim=1).shape == (2, 3) and x.log_softmax(-1).shape == (2, 3)
    assert x.softmax(dim=0).data[:, 0].tolist() == [0.5, 0.5]  # one softmax per column


def test_reduction_axis_may_be_given_as_dim() -> None:
    x = Tensor([[1.0, 2.0], [3.0, 4.0]])
    assert x.sum(dim=0).data.tolist() == [4.0, 6.0] and x.mean(axis=-1).data.tolist() == [1.5, 3.5]
    assert x.max().item() == 4.0 and x.min(1).values.data.tolist() == [1.0, 3.0]
    values, indices = x.max(dim=0)  # PyTorch's pair along a dim
    assert values.tolist() == [3.0, 4.0] and indices.tolist() == [1.0, 1.0]


# --- shapes are checked before NumPy runs --------------------------------------------------------


@pytest.mark.parametrize("make, text", [
    (lambda: Tensor(np.ones((4, 3))) @ Tensor(np.ones((2, 1))), "[4, 3] @ [2, 1]: the inner sizes 3 and 2 differ"),
    (lambda: Tensor(np.ones(3)) + Tensor(np.ones(4)), "[3] and [4]: sizes 3 and 4 cannot broadcast"),
    (lambda: Tensor(np.ones(3))[5], "index 5 is out of range for an axis of size 3"),
    (lambda: Tensor(np.ones((2, 2))).sum(2), "axis 2 is out of range"),
    (lambda: Tensor(np.ones(3))[0, 0], "2 indices for 1 axis"),
], ids=["matmul", "broadcast", "index", "axis", "too-many-indices"])
def test_shape_errors_name_both_shapes(make, text) -> None:
    with pytest.raises(ShapeMismatch) as caught:
        make()
    assert text in str(caught.value) and caught.value.hint


# --- domain errors ---------------------------------------------------------------------------


def test_log_of_a_negative_entry_names_the_op_and_the_first_bad_index() -> None:
    x = Tensor([[1.0, 2.0], [-1.0, -3.0]], requires_grad=True)
    with pytest.raises(DomainError) as caught:
        x.log()
    assert caught.value.op == "log"
    assert str(caught.value) == "at index [1, 0]: log of -1 is undefined (log needs a positive argument)"


@pytest.mark.parametrize("make, op, kind, where", [
    (lambda: Tensor([1.0, 2.0]) / Tensor([1.0, 0.0]), "/", DivisionByZero, "[1]"),
    (lambda: Tensor([1.0, 1000.0]).exp(), "exp", DomainError, "[1]"),
    (lambda: Tensor([[4.0], [-4.0]]).sqrt(), "sqrt", DomainError, "[1, 0]"),
    (lambda: Tensor([-8.0, 8.0]) ** 0.5, "**", DomainError, "[0]"),
    (lambda: Tensor([2.0, -2.0]) ** Tensor([0.5]), "**", DomainError, "[1]"),
    (lambda: 1.0 / Tensor([[3.0, 0.0]]), "/", DivisionByZero, "[0, 1]"),
    (lambda: Tensor([1e308, 1e308]).sum(), "sum", DomainError, ""),
    (lambda: Tensor([[1e200, 1e200]]) @ Tensor([[1e200], [1.0]]), "@", DomainError, "[0, 0]"),
], ids=["divide", "exp", "sqrt", "pow-const", "pow", "rdivide", "sum", "matmul"])
def test_non_finite_results_from_finite_operands_are_domain_errors(make, op, kind, where) -> None:
    with pytest.raises(kind) as caught:
        make()
    assert caught.value.op == op
    assert (f"at index {where}:" in str(caught.value)) if where else "at index" not in str(caught.value)


def test_an_overflow_the_scalar_kernel_does_not_raise_is_still_refused() -> None:
    # float multiplication gives inf without an error; the Tensor refuses it all the same
    with pytest.raises(DomainError) as caught:
        Tensor([1.0, 1e300]) * 1e300
    assert caught.value.op == "*" and caught.value.overflow
    assert str(caught.value) == "at index [1]: 1e+300 * 1e+300 overflows a float"


def test_division_by_zero_is_also_a_zero_division_error_and_exp_an_overflow() -> None:
    with pytest.raises(ZeroDivisionError):
        Tensor([0.0]) / 0.0
    with pytest.raises(DomainError) as caught:
        Tensor([800.0]).exp()
    assert caught.value.overflow


def test_non_finite_inputs_are_carried_along_not_refused() -> None:
    x = Tensor([math.inf, 1.0, math.nan])
    out = x.exp() + 1.0
    assert out.data[0] == math.inf and out.data[1] == pytest.approx(math.e + 1.0) and math.isnan(out.data[2])
    assert x.sum().item() == math.inf or math.isnan(x.sum().item())


def test_domain_errors_are_raised_inside_no_grad_too() -> None:
    with no_grad(), pytest.raises(DomainError):
        Tensor([-1.0]).log()
    assert is_grad_enabled()


# --- no_grad --------------------------------------------------------------------------------


def test_no_grad_records_nothing_for_tensors() -> None:
    w = Tensor([[1.0, 2.0]], requires_grad=True)
    x = Tensor([[3.0], [4.0]])
    with no_grad():
        y = (w @ x).tanh().sum() * 2.0 + w[0, 0]
        v = Value(2.0) * Value(3.0)
    assert not y.requires_grad and y.is_leaf and y.grad_fn is None
    assert v._prev == ()
    with pytest.raises(RuntimeError, match="does not require grad"):
        y.backward()
    z = (w @ x).sum()  # recording again after the block
    assert z.requires_grad and z.grad_fn == "sum"
    z.backward()
    assert w.grad.tolist() == [[3.0, 4.0]]


def test_no_grad_as_a_decorator_for_tensors() -> None:
    @no_grad()
    def evaluate(t):
        return t * 2.0

    assert not evaluate(Tensor([1.0], requires_grad=True)).requires_grad


# --- a long chain: the walk is iterative ------------------------------------------------------


def test_a_chain_of_100000_ops_backpropagates() -> None:
    x = Tensor([0.5], requires_grad=True)
    y = x
    for _ in range(100_000):
        y = y.tanh()
    y.sum().backward()
    # d/dx of tanh iterated: the product of 1 - tanh(t)**2 along the iterates, by hand.
    t, want = 0.5, 1.0
    for _ in range(100_000):
        t = math.tanh(t)
        want *= 1.0 - t * t
    assert y.data[0] == pytest.approx(t, rel=1e-12)
    assert x.grad[0] == pytest.approx(want, rel=1e-9)
    del y  # and the chain is freed without a recursion error


# --- making tensors ---------------------------------------------------------------------------


def test_zeros_ones_and_their_size_spellings() -> None:
    assert zeros(2, 3).shape == zeros((2, 3)).shape == (2, 3) and zeros(2).data.tolist() == [0.0, 0.0]
    assert ones([3]).data.tolist() == [1.0, 1.0, 1.0] and ones(2, requires_grad=True).requires_grad
    with pytest.raises(TypeError):
        zeros(-1)


def test_randn_and_normal_draw_from_the_seeded_generator() -> None:
    manual_seed(42)
    a = randn(3, 2)
    b = normal(1.0, 0.5, (4,))
    reference = np.random.Generator(np.random.PCG64(42))
    assert a.data.tolist() == reference.standard_normal((3, 2)).tolist()
    assert b.data.tolist() == reference.normal(1.0, 0.5, (4,)).tolist()
    manual_seed(42)
    assert randn(3, 2).data.tolist() == a.data.tolist()
    manual_seed(43)
    assert randn(3, 2).data.tolist() != a.data.tolist()


def test_manual_seed_reseeds_the_same_generator_object() -> None:
    held = default_generator
    assert manual_seed(7) is held
    first = held.standard_normal()
    manual_seed(7)
    assert randn().item() == first


def test_the_default_seed_is_fixed() -> None:
    assert np.random.Generator(np.random.PCG64(DEFAULT_SEED)).standard_normal(3).tolist() == \
        np.random.Generator(np.random.PCG64(67280421310721)).standard_normal(3).tolist()


def test_a_given_generator_is_used_instead() -> None:
    g = np.random.default_rng(3)
    want = np.random.default_rng(3).standard_normal(2).tolist()
    assert randn(2, generator=g).data.tolist() == want


# --- the public face ---------------------------------------------------------------------------


def test_the_package_exports_tensors_lazily_without_numpy_at_start_up() -> None:
    import subprocess
    import sys

    code = ("import sys, autodiff_cli, autodiff_cli.nn, autodiff_cli.optim; "
            "assert 'numpy' not in sys.modules, 'numpy imported at start-up'; "
            "from autodiff_cli import Tensor, tensor, manual_seed, no_grad, zeros, ones, randn, normal; "
            "from autodiff_cli.nn import Linear; "
            "assert 'numpy' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)
    import autodiff_cli
    from autodiff_cli.engine import grad_mode, tensor as tensor_module

    assert autodiff_cli.Tensor is Tensor and autodiff_cli.tensor is tensor and autodiff_cli.manual_seed is manual_seed
    assert autodiff_cli.no_grad is grad_mode.no_grad and autodiff_cli.randn is tensor_module.randn
    assert {"Tensor", "tensor", "manual_seed", "no_grad"} <= set(autodiff_cli.__all__)
