"""The op registry: one entry type, one table, every field of every entry checked at import.

An elementwise entry carries the same fields as any other (its shape rule, forward, VJP and
JVP filled in from its kernels), so a consumer calls them without asking which kind it holds:
here they are held to autograd, broadcasting included, and to the saving forms the executors use.
"""

from __future__ import annotations

import autograd.numpy as anp
import numpy as np
import pytest
from autograd import grad

from autodiff_cli.engine import ops, tensor_ops
from autodiff_cli.engine.registry import ENTRIES, check_entry, write
from autodiff_cli.engine.tensor_ops import ShapeMismatch


def test_one_table_of_one_type_holds_every_op_once() -> None:
    assert all(isinstance(entry, ops.Op) and entry.name == name for name, entry in ENTRIES.items())
    assert {n for n, e in ENTRIES.items() if e.elementwise} == set(ops.OPS)
    assert {n for n, e in ENTRIES.items() if not e.elementwise} == {op.name for op in tensor_ops.ROWS}
    assert not hasattr(tensor_ops, "TENSOR_OPS")  # no second table by another name


@pytest.mark.parametrize("name", sorted(n for n, e in ENTRIES.items() if e.arity))
def test_every_entry_has_the_fields_every_consumer_calls(name: str) -> None:
    entry = ENTRIES[name]
    for field in ("shape", "forward", "vjp", "jvp", "language_vjp", "unroll", "reads"):
        assert callable(getattr(entry, field)), field


# f(x, y) as autograd writes it, for the elementwise entries held to it below
AUTOGRAD = {"+": lambda x, y: x + y, "-": lambda x, y: x - y, "*": lambda x, y: x * y, "/": lambda x, y: x / y,
            "maximum": lambda x, y: anp.maximum(x, y), "tanh": anp.tanh, "exp": anp.exp, "sin": anp.sin}


@pytest.mark.parametrize("name", sorted(AUTOGRAD))
@pytest.mark.parametrize("shapes", [((3, 4), (3, 4)), ((3, 4), (4,)), ((3, 1), (1, 4)), ((), (2, 3))])
def test_an_elementwise_entrys_forward_vjp_and_jvp_against_autograd(name: str, shapes) -> None:
    entry = ENTRIES[name]
    rng = np.random.default_rng(32)
    args = [rng.uniform(0.5, 2.0, size=s) for s in shapes[:entry.arity]]
    leads = (0,) * entry.arity
    fn = AUTOGRAD[name]
    out = entry.forward(np, args, leads, None)
    np.testing.assert_allclose(out, fn(*args), rtol=1e-15, atol=0)
    assert np.shape(out) == entry.shape([np.shape(a) for a in args], None)
    g = rng.normal(size=np.shape(out))
    grads = entry.vjp(np, g, out, args, leads, None)
    for k, got in enumerate(grads):  # summed back over what broadcasting stretched
        want = grad(lambda *xs, k=k: anp.sum(fn(*xs) * g), k)(*args)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
        assert np.shape(got) == np.shape(args[k])
    # the JVP through the VJP just held to autograd: <J t, g> = <t, J^T g> for every g
    tangents = [rng.normal(size=np.shape(a)) for a in args]
    jvp = entry.jvp(np, tangents, out, args, leads, None)
    assert np.shape(jvp) == np.shape(out)
    assert np.isclose(np.sum(jvp * g), sum(np.sum(t * gr) for t, gr in zip(tangents, grads)), rtol=1e-12)


@pytest.mark.parametrize("name", ["*", "tanh", "**c"])
def test_the_saving_forward_keeps_what_the_vjp_needs_and_gives_the_same_bits(name: str) -> None:
    entry = ENTRIES[name]
    rng = np.random.default_rng(7)
    args = [rng.normal(size=(5, 3)), rng.normal(size=(3,))][:entry.arity]
    leads, param = (0,) * entry.arity, (2.0 if name == "**c" else None)
    out, saved = entry.forward.saving(np, args, leads, param)
    assert np.array_equal(out, entry.forward(np, args, leads, param))
    g = rng.normal(size=out.shape)
    for a, b in zip(entry.vjp.from_saved(np, g, saved, args, leads, param), entry.vjp(np, g, out, args, leads, param)):
        assert np.array_equal(a, b)


def test_an_elementwise_shape_rule_refuses_what_cannot_broadcast() -> None:
    with pytest.raises(ShapeMismatch, match="sizes 3 and 2 cannot broadcast"):
        ENTRIES["+"].shape([(3,), (2,)], None)


def test_write_fills_in_any_entry() -> None:
    assert write("+", ["a", "b"]) == "a + b"
    assert write("**c", ["x"], 2.0) == "x**2"
    assert write("tanh", ["h"]) == "tanh(h)"
    assert write("cumsum", ["x"], 0) == "cumsum(x, 0)" and write("cumsum", ["x"]) == "cumsum(x)"


def test_registration_refuses_an_entry_missing_a_field() -> None:
    with pytest.raises(TypeError, match="a shape rule, forward, VJP, JVP"):
        check_entry(ENTRIES["cumsum"]._replace(vjp=None))
    with pytest.raises(TypeError, match="an operator names Value's method"):
        check_entry(ENTRIES["neg"]._replace(method=None))
    with pytest.raises(TypeError, match="rule_n is None or a function"):
        check_entry(ENTRIES["mean"]._replace(rule_n=3))
    with pytest.raises(TypeError, match="a float kernel"):
        check_entry(ENTRIES["tanh"]._replace(scalar=None))


def test_the_eager_tensor_checks_shapes_before_a_saving_forward_that_does_not() -> None:
    """cross_entropy's saving forward leaves the shapes to its caller (the executor infers them):
    the eager Tensor, which calls it to keep the softmax for backward, asks the shape rule first."""
    from autodiff_cli.engine.tensor import Tensor
    from autodiff_cli.engine.tensor_nn import cross_entropy

    assert not getattr(ENTRIES["cross_entropy"].forward.saving, "checks_shapes", False)
    with pytest.raises(ShapeMismatch, match=r"logits \[4, 3\] need labels of shape \[4\]"):
        cross_entropy(Tensor(np.ones((4, 3)), requires_grad=True), Tensor(np.zeros(5)))
    logits = Tensor(np.array([[0.0, np.log(3.0)]]), requires_grad=True)
    loss = cross_entropy(logits, Tensor(np.array([1.0])))  # p = [1/4, 3/4]: -log(3/4)
    loss.backward()
    np.testing.assert_allclose(loss.data, -np.log(0.75), rtol=1e-15)
    np.testing.assert_allclose(logits.grad, [[0.25, -0.25]], rtol=1e-15)  # softmax - one_hot
