"""Hand-derived seed examples for the engine.

Every expected number here is either derived by hand (the derivation is in the
comments) or published by an independent source (micrograd's own test file,
where the numbers were produced with PyTorch), and the latter are re-checked
against HIPS autograd.  None is copied from this engine's output.
"""

import math

import autograd
import autograd.numpy as anp
import numpy as np
import pytest
from _shared import karpathy_graph

from autodiff_cli.engine import Value

# ---------------------------------------------------------------------------------------------
# Karpathy's first graph: L = (a*b + c) * f
#   e = a*b = -6, d = e + c = 4, L = d*f = -8
#   dL/dd = f = -2, dL/df = d = 4
#   dL/de = dL/dd * 1 = -2, dL/dc = dL/dd * 1 = -2
#   dL/da = dL/de * b = -2 * -3 = 6, dL/db = dL/de * a = -2 * 2 = -4
# All of these are small integers, exactly representable: compare with ==.
# ---------------------------------------------------------------------------------------------


_karpathy_graph = karpathy_graph


KARPATHY_GRADS = {"a": 6.0, "b": -4.0, "c": -2.0, "f": 4.0, "e": -2.0, "d": -2.0, "L": 1.0}
KARPATHY_DATA = {"a": 2.0, "b": -3.0, "c": 10.0, "f": -2.0, "e": -6.0, "d": 4.0, "L": -8.0}


@pytest.mark.parametrize("name", list(KARPATHY_GRADS), ids=[f"dL/d{n}" for n in KARPATHY_GRADS])
def test_karpathy_graph_gradients(name):
    nodes = _karpathy_graph()
    nodes["L"].backward()
    assert nodes[name].grad == KARPATHY_GRADS[name]


@pytest.mark.parametrize("name", list(KARPATHY_DATA), ids=[f"data_{n}" for n in KARPATHY_DATA])
def test_karpathy_graph_values(name):
    nodes = _karpathy_graph()
    assert nodes[name].data == KARPATHY_DATA[name]


# ---------------------------------------------------------------------------------------------
# The tanh neuron from the video.
#   n = x1*w1 + x2*w2 + b = -6 + 0 + 6.8813735870195432 = 0.8813735870195432 ~= ln(1 + sqrt 2)
#   tanh(ln(1 + sqrt 2)) = ((1+sqrt2) - 1/(1+sqrt2)) / ((1+sqrt2) + 1/(1+sqrt2)) = 1/sqrt 2
#   do/dn = 1 - tanh(n)**2 = 1 - 1/2 = 1/2
#   do/dx1 = w1/2 = -1.5, do/dw1 = x1/2 = 1, do/dx2 = w2/2 = 0.5, do/dw2 = x2/2 = 0, do/db = 0.5
# b is ln(1+sqrt2) rounded to 17 digits, so everything holds to ~1e-15; we allow 1e-9.
# ---------------------------------------------------------------------------------------------

NEURON_GRADS = {"x1": -1.5, "w1": 1.0, "x2": 0.5, "w2": 0.0, "b": 0.5, "n": 0.5}
INV_SQRT2 = 1.0 / math.sqrt(2.0)


def _neuron_inputs():
    return {
        "x1": Value(2.0, label="x1"),
        "x2": Value(0.0, label="x2"),
        "w1": Value(-3.0, label="w1"),
        "w2": Value(1.0, label="w2"),
        "b": Value(6.8813735870195432, label="b"),
    }


def _tanh_direct(n):
    return n.tanh()


def _tanh_via_exp(n):
    e = (2 * n).exp()
    return (e - 1) / (e + 1)


@pytest.mark.parametrize("activation", [_tanh_direct, _tanh_via_exp], ids=["tanh", "tanh_as_exp_ratio"])
@pytest.mark.parametrize("name", list(NEURON_GRADS), ids=list(NEURON_GRADS))
def test_tanh_neuron(activation, name):
    v = _neuron_inputs()
    x1w1 = v["x1"] * v["w1"]
    x2w2 = v["x2"] * v["w2"]
    n = x1w1 + x2w2 + v["b"]
    v["n"] = n
    o = activation(n)
    o.backward()
    assert math.isclose(n.data, math.log(1.0 + math.sqrt(2.0)), rel_tol=0, abs_tol=1e-9)
    assert math.isclose(o.data, INV_SQRT2, rel_tol=0, abs_tol=1e-9)
    assert o.grad == 1.0
    assert math.isclose(v[name].grad, NEURON_GRADS[name], rel_tol=0, abs_tol=1e-9)


# ---------------------------------------------------------------------------------------------
# micrograd's test_sanity_check, derived by hand:
#   x = -4;  z = 2x + 2 + x = 3x + 2 = -10
#   q = relu(z) + z*x = 0 + 40 = 40;  h = relu(z*z) = 100
#   y = h + q + q*x = 100 + 40 - 160 = -20
#   dz/dx = 3;  relu'(z = -10) = 0
#   dq/dx = d(z*x)/dx = 3x + z = -12 - 10 = -22
#   dh/dx = 2 z dz/dx = 2 * -10 * 3 = -60       (z*z = 100 > 0, relu passes it)
#   dy/dx = dh/dx + dq/dx (1 + x) + q = -60 + (-22)(-3) + 40 = 46
# ---------------------------------------------------------------------------------------------


def test_micrograd_sanity_check():
    x = Value(-4.0)
    z = 2 * x + 2 + x
    q = z.relu() + z * x
    h = (z * z).relu()
    y = h + q + q * x
    y.backward()
    assert (z.data, q.data, h.data) == (-10.0, 40.0, 100.0)
    assert y.data == -20.0
    assert x.grad == 46.0


# ---------------------------------------------------------------------------------------------
# micrograd's test_more_ops.  Expected numbers as published in micrograd's test/test_engine.py
# (computed there with PyTorch); below they are also recomputed with HIPS autograd.
# ---------------------------------------------------------------------------------------------

MORE_OPS_PUBLISHED = {"g": 24.70408163265306, "a.grad": 138.83381924198252, "b.grad": 645.5772594752186}


def _more_ops(a, b, relu):
    c = a + b
    d = a * b + b**3
    c = c + (c + 1)
    c = c + (1 + c + (-a))
    d = d + (d * 2 + relu(b + a))
    d = d + (3 * d + relu(b - a))
    e = c - d
    f = e**2
    g = f / 2.0
    g = g + 10.0 / f
    return g


def _engine_more_ops():
    a = Value(-4.0)
    b = Value(2.0)
    g = _more_ops(a, b, lambda v: v.relu())
    g.backward()
    return {"g": g.data, "a.grad": a.grad, "b.grad": b.grad}


def _autograd_more_ops():
    def fn(a, b):
        return _more_ops(a, b, lambda v: anp.where(v > 0, v, 0.0))

    a, b = np.float64(-4.0), np.float64(2.0)
    return {
        "g": float(fn(a, b)),
        "a.grad": float(autograd.grad(fn, 0)(a, b)),
        "b.grad": float(autograd.grad(fn, 1)(a, b)),
    }


@pytest.mark.parametrize("key", list(MORE_OPS_PUBLISHED), ids=list(MORE_OPS_PUBLISHED))
def test_micrograd_more_ops_matches_published_numbers(key):
    got = _engine_more_ops()[key]
    assert math.isclose(got, MORE_OPS_PUBLISHED[key], rel_tol=1e-12)


@pytest.mark.parametrize("key", list(MORE_OPS_PUBLISHED), ids=list(MORE_OPS_PUBLISHED))
def test_micrograd_more_ops_matches_autograd(key):
    oracle = _autograd_more_ops()
    # The oracle and the published numbers agree with each other first ...
    assert math.isclose(oracle[key], MORE_OPS_PUBLISHED[key], rel_tol=1e-12)
    # ... and the engine agrees with the oracle.
    assert math.isclose(_engine_more_ops()[key], oracle[key], rel_tol=1e-12)


# ---------------------------------------------------------------------------------------------
# Gradient accumulation: a node used more than once receives every contribution.
# ---------------------------------------------------------------------------------------------


def test_a_plus_a_accumulates():
    a = Value(3.0, label="a")
    b = a + a
    b.backward()
    assert b.data == 6.0
    assert a.grad == 2.0


def test_a_times_a_accumulates_both_factors():
    # d(a*a)/da = a + a = 2a = 6
    a = Value(3.0)
    (a * a).backward()
    assert a.grad == 6.0


def test_value_used_in_many_places_accumulates_all_contributions():
    # y = a*b + a*c + exp(a) - a/2 + a
    # dy/da = b + c + exp(a) - 1/2 + 1;   dy/db = a;   dy/dc = a
    a, b, c = Value(0.5), Value(-2.0), Value(7.0)
    y = a * b + a * c + a.exp() - a / 2 + a
    y.backward()
    assert math.isclose(a.grad, -2.0 + 7.0 + math.exp(0.5) - 0.5 + 1.0, rel_tol=1e-15)
    assert b.grad == 0.5
    assert c.grad == 0.5


def test_diamond_graph_accumulates_through_shared_intermediate():
    # m = x*x (shared), y = m + 3*m + m*m;  dy/dm = 1 + 3 + 2m;  dm/dx = 2x
    # x = 1.5: m = 2.25, dy/dm = 8.5, dy/dx = 8.5 * 3 = 25.5
    x = Value(1.5)
    m = x * x
    y = m + 3 * m + m * m
    y.backward()
    assert m.grad == 8.5
    assert x.grad == 25.5
