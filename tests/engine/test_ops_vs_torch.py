"""Every op against PyTorch in float64 (the conventions the engine says it follows).

Skipped when torch is not installed.
"""

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed: the PyTorch comparison is skipped")

from _shared import close, engine_result


def torch_result(fn, *args):
    ts = [torch.tensor(float(a), dtype=torch.float64, requires_grad=True) for a in args]
    out = fn(*ts)
    out.backward()
    return out.item(), [t.grad.item() if t.grad is not None else 0.0 for t in ts]


# name -> (engine fn, torch fn or None when the same operator lambda works for both, points)
CASES = {
    "a+b": (lambda a, b: a + b, None, [(1.5, -2.25), (0.0, 3.0)]),
    "a-b": (lambda a, b: a - b, None, [(1.5, -2.25), (0.0, 3.0)]),
    "a*b": (lambda a, b: a * b, None, [(1.5, -2.25), (0.0, 3.0)]),
    "a/b": (lambda a, b: a / b, None, [(1.5, -2.25), (0.0, 3.0), (-7.0, 0.1)]),
    "a**b": (lambda a, b: a**b, None, [(2.0, 3.0), (0.5, -1.5), (3.7, 0.25), (2.0, 0.0)]),
    "a**2": (lambda a: a**2, None, [(3.0,), (-1.5,)]),
    "a**3": (lambda a: a**3, None, [(3.0,), (-1.5,)]),
    "a**-1": (lambda a: a**-1, None, [(3.0,), (-1.5,)]),
    "a**0.5": (lambda a: a**0.5, None, [(3.0,), (0.01,)]),
    "a**-2.5": (lambda a: a**-2.5, None, [(3.0,), (0.01,)]),
    "a**0": (lambda a: a**0, None, [(3.0,), (-1.5,)]),
    "2+a": (lambda a: 2 + a, None, [(1.25,)]),
    "1-a": (lambda a: 1 - a, None, [(1.25,)]),
    "2*a": (lambda a: 2 * a, None, [(1.25,)]),
    "3/a": (lambda a: 3 / a, None, [(1.25,), (-0.5,)]),
    "2**a": (lambda a: 2**a, None, [(1.25,), (-3.0,)]),
    "-a": (lambda a: -a, None, [(1.25,), (0.0,)]),
    "tanh": (lambda a: a.tanh(), torch.tanh, [(-2.5,), (0.0,), (0.3,), (1.9,)]),
    "exp": (lambda a: a.exp(), torch.exp, [(-3.0,), (0.0,), (4.2,)]),
    "log": (lambda a: a.log(), torch.log, [(1e-3,), (1.0,), (2.7,)]),
    "sqrt": (lambda a: a.sqrt(), torch.sqrt, [(1e-4,), (2.0,)]),
    "relu": (lambda a: a.relu(), torch.relu, [(-1.5,), (2.0,)]),
    "sigmoid": (lambda a: a.sigmoid(), torch.sigmoid, [(-3.0,), (0.0,), (2.5,)]),
    "softplus": (lambda a: a.softplus(), torch.nn.functional.softplus, [(-30.0,), (-3.0,), (0.0,), (2.5,), (30.0,)]),
    "sin": (lambda a: a.sin(), torch.sin, [(-2.0,), (0.5,), (3.1,)]),
    "cos": (lambda a: a.cos(), torch.cos, [(-2.0,), (0.5,), (3.1,)]),
    "abs": (lambda a: a.abs(), torch.abs, [(-2.5,), (3.0,)]),
    # edge points: PyTorch's own conventions
    "relu@0": (lambda a: a.relu(), torch.relu, [(0.0,)]),
    "abs@0": (lambda a: a.abs(), torch.abs, [(0.0,)]),
    "sqrt@0": (lambda a: a.sqrt(), torch.sqrt, [(0.0,)]),
    "x**0.5@0": (lambda a: a**0.5, None, [(0.0,)]),
    "x**0@0": (lambda a: a**0, None, [(0.0,)]),
    "x**y@0,2": (lambda a, b: a**b, None, [(0.0, 2.0)]),
    "x**y@0,0.5": (lambda a, b: a**b, None, [(0.0, 0.5)]),
    "x**y@negative_base": (lambda a, b: a**b, None, [(-2.0, 3.0)]),
    "tanh@+-1000": (lambda a: a.tanh(), torch.tanh, [(1000.0,), (-1000.0,)]),
    "sigmoid@+-1000": (lambda a: a.sigmoid(), torch.sigmoid, [(1000.0,), (-1000.0,)]),
}


def _params():
    for name, (eng, ref, points) in CASES.items():
        for point in points:
            yield pytest.param(eng, ref or eng, point, id=f"{name}@{','.join(map(repr, point))}")


@pytest.mark.parametrize("eng, ref, point", list(_params()))
def test_op_matches_torch(eng, ref, point):
    want_value, want_grads = torch_result(ref, *point)
    got_value, got_grads = engine_result(eng, *point)
    assert close(got_value, want_value), (got_value, want_value)
    for g, w in zip(got_grads, want_grads):
        assert close(g, w), (got_grads, want_grads)
