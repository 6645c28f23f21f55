"""Helpers the engine tests share (the leading underscore keeps pytest from collecting it)."""

import math

from autodiff_cli.engine import Value

REL = 1e-12


def close(got, want, rel=REL):
    """float64 comparison that also accepts matching infinities and NaNs."""
    got, want = float(got), float(want)
    if math.isnan(want):
        return math.isnan(got)
    if math.isinf(want):
        return got == want
    return math.isclose(got, want, rel_tol=rel, abs_tol=1e-300)


def engine_result(fn, *args):
    """Value and gradient w.r.t. every argument, from our engine."""
    leaves = [Value(float(a)) for a in args]
    out = fn(*leaves)
    out.backward()
    return out.data, [leaf.grad for leaf in leaves]


def karpathy_graph() -> dict[str, Value]:
    """L = (a*b + c) * f with a=2, b=-3, c=10, f=-2, every node labelled; built fresh on each call."""
    a, b, c, f = Value(2.0, label="a"), Value(-3.0, label="b"), Value(10.0, label="c"), Value(-2.0, label="f")
    e = a * b
    e.label = "e"
    d = e + c
    d.label = "d"
    L = d * f
    L.label = "L"
    return {"a": a, "b": b, "c": c, "f": f, "e": e, "d": d, "L": L}
