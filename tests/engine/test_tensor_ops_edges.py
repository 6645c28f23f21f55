"""Edge points of the tensor ops, the elementwise helpers, and how the module is built.

* max/min at ties: the gradient split evenly among the tied elements, expected values worked
  out by hand (autograd's own convention is not the reference here);
* softmax, log_softmax, logsumexp and cross_entropy at huge logits and on rows of -inf, by
  hand (pytest turns any NumPy warning into an error, so "no warning" is checked too);
* broadcast helpers by hand, and the elementwise ops (every op of the scalar table's NumPy
  kernels) with broadcasting against autograd, and batched against a loop over rows;
* "@" costs one np.matmul forward and one per operand backward, in every batch pattern;
* the module imports only the standard library and .ops; gradients are writable float64.
"""

import ast
import itertools
import math
import sys
import warnings
from pathlib import Path

import autograd.numpy as anp
import numpy as np
import pytest
from autograd import grad

import autodiff_cli.engine.tensor_ops as tensor_ops
from autodiff_cli.engine.registry import ENTRIES, write
from autodiff_cli.engine.tensor_ops import (
    VARIADIC,
    align,
    elementwise_forward,
    elementwise_jvp,
    elementwise_vjp,
    unbroadcast,
)

STRUCTURAL = {name: op for name, op in ENTRIES.items() if not op.elementwise}  # the ops that are not elementwise

E = math.e


def close(got, want, rel=1e-12):
    want = np.asarray(want, dtype=np.float64)
    assert np.shape(got) == want.shape, (np.shape(got), want.shape)
    np.testing.assert_allclose(got, want, rtol=rel, atol=rel * max(1.0, float(np.max(np.abs(want), initial=0.0))))


def vjp(name, g, args, leads, param=None):
    op = ENTRIES[name]
    out = op.forward(np, args, leads, param)
    return op.vjp(np, np.asarray(g, dtype=np.float64), out, args, leads, param)


def jvp(name, tangents, args, leads, param=None):
    op = ENTRIES[name]
    out = op.forward(np, args, leads, param)
    return op.jvp(np, tangents, out, args, leads, param)


# --- a mean whose sum overflows -----------------------------------------------------------------------


@pytest.mark.parametrize("x, axis, leads, want", [
    ([1e308, 1e308], None, 0, 1e308),
    ([1e308, 1e308, -1e308], None, 0, 1e308 / 3),
    ([[1e308, 1.0], [1e308, 2.0]], 0, 0, [1e308, 1.5]),
    ([[1e308, 1e308], [1.0, 3.0]], None, 1, [1e308, 2.0]),  # per row of a batch
])
def test_a_mean_is_finite_where_only_its_sum_overflows(x, axis, leads, want):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow warning escapes either
        got = ENTRIES["mean"].forward(np, [np.array(x)], [leads], axis)
    close(got, want)


def test_a_mean_of_an_infinity_stays_infinite():
    assert ENTRIES["mean"].forward(np, [np.array([np.inf, 1.0])], [0], None) == np.inf


# --- max and min at ties ----------------------------------------------------------------------------


def test_max_tie_of_two_splits_the_gradient_in_half():
    x = np.array([1.0, 3.0, 3.0, 2.0])
    assert ENTRIES["max"].forward(np, [x], [0], None) == 3.0
    (g,) = vjp("max", 1.0, [x], [0])
    close(g, [0.0, 0.5, 0.5, 0.0])
    # the JVP is the mean of the tied elements' tangents: (20 + 40) / 2
    close(jvp("max", [np.array([10.0, 20.0, 40.0, 80.0])], [x], [0]), 30.0)


def test_min_tie_of_three_splits_in_thirds():
    x = np.array([2.0, 2.0, 2.0])
    (g,) = vjp("min", 3.0, [x], [0])
    close(g, [1.0, 1.0, 1.0])
    close(jvp("min", [np.array([1.0, 2.0, 6.0])], [x], [0]), 3.0)


def test_max_along_an_axis_splits_per_column():
    x = np.array([[1.0, 5.0], [1.0, 2.0], [0.0, 5.0]])
    (g,) = vjp("max", [2.0, 4.0], [x], [0], 0)  # column 0: rows 0 and 1 tie; column 1: rows 0 and 2
    close(g, [[1.0, 2.0], [1.0, 0.0], [0.0, 2.0]])
    (g,) = vjp("min", [6.0, 1.0, 3.0], [x], [0], -1)  # along rows: each min alone, in column 0
    close(g, [[6.0, 0.0], [1.0, 0.0], [3.0, 0.0]])


def test_min_along_a_negative_axis_with_ties():
    x = np.array([[[4.0, 4.0], [1.0, 9.0]], [[7.0, 7.0], [7.0, 0.0]]])  # [2, 2, 2]
    (g,) = vjp("min", [[1.0, 2.0], [3.0, 4.0]], [x], [0], -1)
    close(g, [[[0.5, 0.5], [2.0, 0.0]], [[1.5, 1.5], [0.0, 4.0]]])


def test_batched_ties_split_per_row():
    x = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])  # two rows of a batch, per-row shape [3]
    (g,) = vjp("max", [1.0, 3.0], [x], [1])
    close(g, [[0.0, 0.5, 0.5], [1.0, 1.0, 1.0]])
    close(jvp("max", [np.array([[5.0, 1.0, 2.0], [3.0, 6.0, 9.0]])], [x], [1]), [1.5, 6.0])


def test_ties_with_infinities():
    x = np.array([np.inf, 1.0, np.inf])
    (g,) = vjp("max", 1.0, [x], [0])
    close(g, [0.5, 0.0, 0.5])


# --- softmax family at extreme logits ---------------------------------------------------------------


def test_softmax_of_huge_logits_is_softmax_of_their_differences():
    denominator = 1.0 + E + E * E
    want = [1.0 / denominator, E / denominator, E * E / denominator]
    x = np.array([1000.0, 1001.0, 1002.0])
    close(ENTRIES["softmax"].forward(np, [x], [0], None), want)
    close(ENTRIES["softmax"].forward(np, [-x], [0], None), want[::-1])
    close(ENTRIES["log_softmax"].forward(np, [x], [0], None), np.log(want))
    close(ENTRIES["logsumexp"].forward(np, [x], [0], None), 1002.0 + math.log(denominator / (E * E)))


def test_logsumexp_of_equal_huge_and_tiny_logits():
    close(ENTRIES["logsumexp"].forward(np, [np.array([1000.0, 1000.0])], [0], None), 1000.0 + math.log(2.0))
    close(ENTRIES["logsumexp"].forward(np, [np.array([-1000.0, -1000.0])], [0], None), -1000.0 + math.log(2.0))
    (g,) = vjp("logsumexp", 4.0, [np.array([1000.0, 1000.0])], [0])
    close(g, [2.0, 2.0])


def test_huge_logits_against_autograd():
    rng = np.random.default_rng(7)
    x = rng.normal(size=(3, 4)) * 300.0 + 800.0
    g = rng.normal(size=(3, 4))

    def lse(v):
        m = np.max(x, axis=-1, keepdims=True)  # a constant shift
        return m + anp.log(anp.sum(anp.exp(v - m), axis=-1, keepdims=True))

    close(ENTRIES["log_softmax"].forward(np, [x], [0], None), x - lse(x))
    close(vjp("log_softmax", g, [x], [0])[0], grad(lambda v: anp.sum((v - lse(v)) * g))(x))
    close(vjp("softmax", g, [x], [0])[0], grad(lambda v: anp.sum(anp.exp(v - lse(v)) * g))(x))
    close(vjp("logsumexp", g[:, 0], [x], [0])[0], grad(lambda v: anp.sum(lse(v)[:, 0] * g[:, 0]))(x))


def test_a_row_of_minus_infinity_gives_no_warning():
    x = np.array([[-np.inf, -np.inf, -np.inf], [0.0, 1.0, 2.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lse = ENTRIES["logsumexp"].forward(np, [x], [0], None)
        assert lse[0] == -np.inf
        close(lse[1], math.log(1.0 + E + E * E))
        ENTRIES["softmax"].forward(np, [x], [0], None)
        ENTRIES["log_softmax"].forward(np, [x], [0], None)
        vjp("logsumexp", [1.0, 1.0], [x], [0])
        jvp("logsumexp", [np.ones_like(x)], [x], [0])
        # batched: the same rows as two rows of a batch
        assert ENTRIES["logsumexp"].forward(np, [x], [1], None)[0] == -np.inf


def test_minus_infinity_among_finite_logits():
    x = np.array([-np.inf, 0.0, 0.0])
    close(ENTRIES["softmax"].forward(np, [x], [0], None), [0.0, 0.5, 0.5])
    assert list(ENTRIES["log_softmax"].forward(np, [x], [0], None)) == [-np.inf, -math.log(2.0), -math.log(2.0)]
    close(ENTRIES["logsumexp"].forward(np, [x], [0], None), math.log(2.0))
    close(vjp("logsumexp", 2.0, [x], [0])[0], [0.0, 1.0, 1.0])
    # p * (g - <g, p>) with p = [0, 1/2, 1/2], <g, p> = 1.5
    close(vjp("softmax", [1.0, 3.0, 0.0], [x], [0])[0], [0.0, 0.75, -0.75])


def test_cross_entropy_of_huge_logits():
    ce = ENTRIES["cross_entropy"]
    x = np.array([[1000.0, 0.0], [0.0, 0.0]])
    y = np.array([1.0, 0.0])
    # -log_softmax: 1000 (the softmax is 1, 0 up to e^-1000) and log 2; their mean
    close(ce.forward(np, [x, y], [0, 0], None), (1000.0 + math.log(2.0)) / 2.0)
    gx, gy = vjp("cross_entropy", 1.0, [x, y], [0, 0])
    close(gx, [[0.5, -0.5], [-0.25, 0.25]])  # (softmax - onehot) / 2
    close(gy, [0.0, 0.0])


def test_cross_entropy_of_one_example_by_hand():
    # logits [0, log 3]: softmax [1/4, 3/4]; label 0: -log(1/4)
    x = np.array([0.0, math.log(3.0)])
    close(ENTRIES["cross_entropy"].forward(np, [x, np.float64(0.0)], [0, 0], None), math.log(4.0))
    close(vjp("cross_entropy", 2.0, [x, np.float64(0.0)], [0, 0])[0], [2.0 * (0.25 - 1.0), 2.0 * 0.75])


# --- the elementwise helpers ------------------------------------------------------------------------


def test_unbroadcast_by_hand():
    g = np.ones((2, 3))
    close(unbroadcast(np, g, (3,), 0), [2.0, 2.0, 2.0])
    close(unbroadcast(np, g, (1, 3), 0), [[2.0, 2.0, 2.0]])
    close(unbroadcast(np, g, (2, 1), 0), [[3.0], [3.0]])
    close(unbroadcast(np, g, (), 0), 6.0)
    close(unbroadcast(np, g, (2, 3), 0), g)
    gb = np.ones((4, 2, 3))  # a batched result, N = 4, per-row [2, 3]
    close(unbroadcast(np, gb, (4, 3), 1), np.full((4, 3), 2.0))  # batched [3]: keeps its rows
    close(unbroadcast(np, gb, (4, 1, 3), 1), np.full((4, 1, 3), 2.0))  # batched [1, 3]
    close(unbroadcast(np, gb, (4,), 1), np.full(4, 6.0))  # batched scalar
    close(unbroadcast(np, gb, (3,), 0), np.full(3, 8.0))  # unbatched [3]: summed over the batch too
    close(unbroadcast(np, gb, (2, 1), 0), np.full((2, 1), 12.0))
    close(unbroadcast(np, gb, (), 0), 24.0)
    one = np.ones((1, 2, 3))  # a batch of one row: its batch axis is not a size-1 axis to sum
    close(unbroadcast(np, one, (1, 1, 3), 1), np.full((1, 1, 3), 2.0))


def test_align_by_hand():
    assert align(np, np.ones((4, 3)), 1, (3,), 2).shape == (4, 1, 3)
    assert align(np, np.ones((4, 3)), 1, (3,), 1).shape == (4, 3)
    assert align(np, np.ones(4), 1, (), 2).shape == (4, 1, 1)
    assert align(np, np.ones((2, 3)), 0, (2, 3), 3).shape == (2, 3)  # unbatched: NumPy aligns it


def _relu(x):
    return anp.maximum(x, 0.0)


# name -> (autograd function, how to draw operands: "any" or "positive" or "divisor")
ELEMENTWISE = {
    "+": (lambda x, y: x + y, ("any", "any")),
    "-": (lambda x, y: x - y, ("any", "any")),
    "*": (lambda x, y: x * y, ("any", "any")),
    "/": (lambda x, y: x / y, ("any", "divisor")),
    "**": (lambda x, y: x**y, ("positive", "any")),
    "neg": (lambda x: -x, ("any",)),
    "=": (lambda x: x + 0.0, ("any",)),
    "tanh": (anp.tanh, ("any",)),
    "exp": (anp.exp, ("any",)),
    "log": (anp.log, ("positive",)),
    "sqrt": (anp.sqrt, ("positive",)),
    "relu": (_relu, ("any",)),
    "sigmoid": (lambda x: 1.0 / (1.0 + anp.exp(-x)), ("any",)),
    "softplus": (lambda x: anp.logaddexp(0.0, x), ("any",)),
    "sin": (anp.sin, ("any",)),
    "cos": (anp.cos, ("any",)),
    "abs": (anp.abs, ("any",)),
    "sign": (lambda x: anp.sign(x), ("any",)),
    "step": (lambda x: anp.where(x > 0.0, 1.0, 0.0) + 0.0 * x, ("any",)),
}
POWERS = [2.0, 3.0, 0.5, -1.0, 0.0, 1.0]
BINARY_SHAPES = [[(3,), (3,)], [(2, 3), (3,)], [(4, 1), (1, 5)], [(), (2, 3)], [(2, 1, 3), (4, 1)], [(), ()]]
UNARY_SHAPES = [[()], [(4,)], [(2, 3)]]


def draw(rng, kind, shape):
    x = rng.uniform(-2.0, 2.0, size=shape)
    if kind == "positive":
        return 0.5 + np.abs(x)
    if kind == "divisor":
        return np.sign(x) * (0.5 + np.abs(x)) + (x == 0)
    return x


def elementwise_cases():
    for name, (_, kinds) in ELEMENTWISE.items():
        for shapes in BINARY_SHAPES if len(kinds) == 2 else UNARY_SHAPES:
            yield name, shapes, None
    for c in POWERS:
        for shapes in UNARY_SHAPES:
            yield "**c", shapes, c


def reference(name, param):
    if name == "**c":
        return lambda x: x**param
    return ELEMENTWISE[name][0]


def kinds_of(name):
    return ("positive",) if name == "**c" else ELEMENTWISE[name][1]


@pytest.mark.parametrize("case", list(elementwise_cases()), ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}")
def test_elementwise_against_autograd(case):
    name, shapes, param = case
    rng = np.random.default_rng(11)
    args = [draw(rng, kind, shape) for kind, shape in zip(kinds_of(name), shapes)]
    leads = [0] * len(args)
    fn = reference(name, param)
    out, slopes = elementwise_forward(np, name, args, leads, param)
    close(out, fn(*args))
    g = rng.normal(size=np.shape(out))
    grads = elementwise_vjp(np, name, g, slopes, args, leads)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # autograd: "output seems independent of input" (sign, step)
        for i, got in enumerate(grads):
            close(got, grad(lambda *xs: anp.sum(fn(*xs) * g), i)(*args), rel=1e-11)
    tangents = [rng.normal(size=np.shape(a)) for a in args]
    # the JVP, through <J t, g> = <t, J^T g> with the VJP just checked against autograd
    jv = elementwise_jvp(np, name, tangents, slopes, args, leads)
    assert np.shape(jv) == np.shape(out)
    assert float(np.sum(jv * g)) == pytest.approx(sum(float(np.sum(t * gr)) for t, gr in zip(tangents, grads)),
                                                  rel=1e-12, abs=1e-12)
    if len(args) == 2:  # one operand's tangent alone still gives a tangent of out's shape
        only = elementwise_jvp(np, name, [tangents[0], None], slopes, args, leads)
        assert np.shape(only) == np.shape(out)
        assert float(np.sum(only * g)) == pytest.approx(float(np.sum(tangents[0] * grads[0])), rel=1e-12, abs=1e-12)
    close(elementwise_jvp(np, name, [None] * len(args), slopes, args, leads), np.zeros(np.shape(out)))


@pytest.mark.parametrize("case", list(elementwise_cases()), ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}")
def test_elementwise_batched_equals_a_loop(case):
    name, shapes, param = case
    rng = np.random.default_rng(12)
    n = 3
    for leads in (p for p in itertools.product((0, 1), repeat=len(shapes)) if any(p)):
        args = [draw(rng, kind, ((n,) if lead else ()) + shape) for kind, shape, lead in zip(kinds_of(name), shapes, leads)]
        rows = [[a[r] if lead else a for a, lead in zip(args, leads)] for r in range(n)]
        out, slopes = elementwise_forward(np, name, args, list(leads), param)
        per_row = [elementwise_forward(np, name, rows[r], [0] * len(args), param) for r in range(n)]
        close(out, np.stack([np.broadcast_to(o, np.shape(per_row[0][0])) for o, _ in per_row]))
        g = rng.normal(size=np.shape(out))
        grads = elementwise_vjp(np, name, g, slopes, args, list(leads))
        row_grads = [elementwise_vjp(np, name, g[r], s, rows[r], [0] * len(args)) for r, (_, s) in enumerate(per_row)]
        for i, lead in enumerate(leads):
            parts = [np.asarray(row_grads[r][i]) for r in range(n)]
            close(grads[i], np.stack(parts) if lead else np.sum(parts, axis=0))
        tangents = [rng.normal(size=np.shape(a)) for a in args]
        jv = elementwise_jvp(np, name, tangents, slopes, args, list(leads))
        want = [elementwise_jvp(np, name, [t[r] if lead else t for t, lead in zip(tangents, leads)], s, rows[r],
                                [0] * len(args)) for r, (_, s) in enumerate(per_row)]
        close(jv, np.stack(want))


# --- "@": one matmul each way ------------------------------------------------------------------------


class CountingNumPy:
    """NumPy with np.matmul counted (the ops take NumPy as an argument, so it can be swapped)."""

    def __init__(self):
        self.matmuls = 0

    def __getattr__(self, name):
        return getattr(np, name)

    def matmul(self, *args, **kwargs):
        self.matmuls += 1
        return np.matmul(*args, **kwargs)


@pytest.mark.parametrize("shapes", [[(3,), (3,)], [(3,), (3, 4)], [(2, 3), (3,)], [(2, 3), (3, 4)]])
@pytest.mark.parametrize("leads", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_matmul_is_one_product_forward_and_one_per_operand_backward(shapes, leads):
    rng = np.random.default_rng(13)
    args = [rng.normal(size=((5,) if lead else ()) + s) for s, lead in zip(shapes, leads)]
    op = ENTRIES["@"]
    counting = CountingNumPy()
    out = op.forward(counting, args, list(leads), None)
    assert counting.matmuls == 1
    counting.matmuls = 0
    op.vjp(counting, np.ones(np.shape(out)), out, args, list(leads), None)
    assert counting.matmuls == 2


def test_matmul_batched_gradient_by_hand():
    """The minigrad post's dL/dW = X^T dL/dP, with X's rows as the batch and W unbatched."""
    X = np.array([[1.0, 2.0], [1.0, -1.0], [1.0, 0.5]])  # 3 rows of [2]
    W = np.array([[0.5], [2.0]])
    G = np.array([[1.0], [-2.0], [3.0]])  # dL/dP per row, [1] each
    gx, gw = vjp("@", G, [X, W], [1, 0])
    close(gw, X.T @ G)
    close(gx, G @ W.T)


# --- the table and the module ---------------------------------------------------------------------------


def test_table_rows_are_complete():
    for name, op in STRUCTURAL.items():
        assert op.name == name
        if not op.arity:  # a constant the compiler makes (arange): its shape, entries and arguments
            assert op.arguments and op.rule == (), name
            continue
        assert len(op.rule) == (1 if op.arity == VARIADIC else op.arity), name  # any number: one rule for each
        assert all(r.startswith("dL/d") for r in op.rule), name
        first = "{operands}" if op.arity == VARIADIC else "{x}"
        assert first in op.written and first in op.latex and (op.numpy is None or first in op.numpy), name
        if op.arity >= 2:
            assert "{y}" in op.written and "{y}" in op.latex and (op.numpy is None or "{y}" in op.numpy), name
    assert "tie" in ENTRIES["max"].rule[0] and "tie" in ENTRIES["min"].rule[0]  # the convention, written down


def test_write():
    assert write("@", ["X", "W"]) == "X @ W"
    assert write("sum", ["x"]) == "sum(x)"
    assert write("sum", ["x"], -1) == "sum(x, -1)"
    assert write("mean", ["x"], 0) == "mean(x, 0)"
    assert write("index", ["x"], (0, slice(1, 3))) == "x[0, 1:3]"
    assert write("index", ["x"], (slice(None, None, 2),)) == "x[::2]"
    assert write("index", ["x"], (slice(None), -1)) == "x[:, -1]"
    assert write("index", ["x"], (slice(4, 0, -2),)) == "x[4:0:-2]"
    assert write("cross_entropy", ["logits", "y"]) == "cross_entropy(logits, y)"


def test_results_are_float64_and_gradients_writable():
    ints = np.arange(6).reshape(2, 3)
    cases = [("@", [ints, ints.T], None), ("sum", [ints], 1), ("mean", [ints], None), ("max", [ints], 0),
             ("transpose", [ints], None), ("softmax", [ints], None), ("logsumexp", [ints], None),
             ("index", [ints], (1,)), ("mse", [ints, ints + 1], None), ("cross_entropy", [ints, np.array([0, 2])], None)]
    for name, args, param in cases:
        op = ENTRIES[name]
        out = op.forward(np, args, [0] * len(args), param)
        assert np.asarray(out).dtype == np.float64, name
        for g in op.vjp(np, np.ones(np.shape(out)), out, args, [0] * len(args), param):
            assert g.dtype == np.float64 and g.flags.writeable, name


def test_the_module_imports_only_the_standard_library_and_ops():
    tree = ast.parse(Path(tensor_ops.__file__).read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            assert all(alias.name.split(".")[0] in sys.stdlib_module_names for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                assert node.module == "ops", node.module
            else:
                assert node.module.split(".")[0] in sys.stdlib_module_names, node.module


# --- var and std: the correction, and std where every entry is equal -----------------------------------


def test_var_divides_by_n_minus_the_correction_by_hand() -> None:
    from autodiff_cli.engine.tensor_ops import Arguments

    x = np.array([[1.0, 2.0, 6.0], [4.0, 4.0, 4.0]])
    # row 0: mean 3, squares 4 + 1 + 9 = 14; row 1: all 4, squares 0
    close(ENTRIES["var"].forward(np, [x], (0,), 1), [7.0, 0.0])  # n - 1 = 2: PyTorch's default
    close(ENTRIES["var"].forward(np, [x], (0,), Arguments((1, False, 0))), [14.0 / 3, 0.0])  # n: NumPy's
    (g,) = ENTRIES["var"].vjp(np, np.array([1.0, 1.0]), None, [x], (0,), 1)
    close(g, [[-2.0, -1.0, 3.0], [0.0, 0.0, 0.0]])  # 2 (x - mean) / (n - 1)


def test_std_where_every_entry_is_equal_has_gradient_zero_as_in_pytorch() -> None:
    """sqrt's slope is infinite at 0 and (x - mean) is 0 there: PyTorch takes the product as 0
    (std_backward masks it); so does the kernel, its JVP, and the rule diff writes."""
    x = np.array([[4.0, 4.0, 4.0], [1.0, 2.0, 6.0]])
    out = ENTRIES["std"].forward(np, [x], (0,), 1)
    close(out, [0.0, math.sqrt(7.0)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no division warning either
        (g,) = ENTRIES["std"].vjp(np, np.array([1.0, 1.0]), out, [x], (0,), 1)
        jvp = ENTRIES["std"].jvp(np, [np.ones_like(x)], out, [x], (0,), 1)
    close(g[0], [0.0, 0.0, 0.0])
    close(g[1], np.array([-2.0, -1.0, 3.0]) / (2 * math.sqrt(7.0)))  # (x - mean) / ((n - 1) std)
    close(jvp, [0.0, 0.0])  # a shift of every entry leaves std unchanged


# --- argmax and one_hot: ties and labels that are no class -------------------------------------------


def test_argmax_takes_the_first_of_a_tie_as_numpy_and_pytorch() -> None:
    x = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])
    close(ENTRIES["argmax"].forward(np, [x], (0,), 1), [1.0, 0.0])
    close(ENTRIES["argmax"].forward(np, [x], (0,), None), 1.0)  # the flat index of the first 3
    (g,) = ENTRIES["argmax"].vjp(np, np.ones(2), None, [x], (0,), 1)
    close(g, np.zeros((2, 3)))  # an index carries no gradient


@pytest.mark.parametrize(("labels", "leads", "named"), [
    ([0.0, 2.0, 4.0], (0,), "entry [2] is 4"),
    ([[0.0, 1.5]], (0,), "entry [0, 1] is 1.5"),
    ([0.0, -1.0], (0,), "entry [1] is -1"),
    ([[0.0], [float("nan")]], (1,), "row 1, entry [0] is nan"),
])
def test_one_hot_refuses_a_label_that_is_no_class_and_names_it(labels, leads, named) -> None:
    from autodiff_cli.engine.ops import DomainError

    with pytest.raises(DomainError) as caught:
        ENTRIES["one_hot"].forward(np, [np.array(labels)], leads, 4)
    assert named in str(caught.value)
    assert "from 0 to 3" in str(caught.value)


# --- arange: a constant made when the program is read -------------------------------------------------


def test_arange_is_the_list_literal_of_0_to_n_minus_1() -> None:
    from autodiff_cli.language import parse
    from autodiff_cli.language.program import ArrayLiteral

    program = parse("i = arange(4)\nx = [[1, 2, 3, 4]]\nL = sum(x * arange(4))")
    literal = program.variables["i"].default
    assert isinstance(literal, ArrayLiteral) and (literal.shape, literal.values) == ((4,), (0.0, 1.0, 2.0, 3.0))
    assert "arange" not in program.instructions.op_names  # no executor meets it
    assert ENTRIES["arange"].forward(np, (), (), 0).shape == (0,)


def test_registration_refuses_an_argument_the_numpy_form_leaves_out() -> None:
    from autodiff_cli.engine.registry import check_entry as _check_entry
    from autodiff_cli.engine.tensor_ops import Argument

    row = ENTRIES["softmax"]._replace(numpy="_softmax({x})")  # the axis would be dropped silently
    with pytest.raises(TypeError, match=r"the numpy form must hold the argument \{axis\}"):
        _check_entry(row)
    with pytest.raises(TypeError, match="must be an Argument of kind"):
        _check_entry(row._replace(numpy="_softmax({x}{axis})", arguments=(Argument("axis", "number", -1, "axis"),)))


def test_write_numpy_form_and_latex_form_fill_in_the_arguments() -> None:
    from autodiff_cli.engine.registry import latex_form, numpy_form
    from autodiff_cli.engine.tensor_ops import Arguments

    assert write("sum", ["x"], Arguments((1, True))) == "sum(x, 1, keepdim)"
    assert write("var", ["x"], Arguments((0, False, 0))) == "var(x, 0, 0)"
    assert write("reshape", ["x"], (2, -1)) == "reshape(x, [2, -1])"
    assert write("softmax", ["x"], 0) == "softmax(x, 0)" and write("softmax", ["x"]) == "softmax(x)"
    assert numpy_form("sum", ["x"], Arguments((1, True))) == "np.sum(x, axis=1, keepdims=True)"
    assert numpy_form("var", ["x"], None) == "np.var(x, ddof=1)"  # NumPy's default is 0: always written
    assert numpy_form("reshape", ["x"], (2, -1)) == "np.reshape(x, (2, -1))"
    assert latex_form("mean", 1) == r"\operatorname{mean}_{\text{axis } 1} {x}"
