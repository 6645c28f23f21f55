"""Every op of the engine against HIPS autograd (an independent reverse-mode AD), in float64.

* each op at several in-domain points: value and gradient(s) to rel 1e-12;
* edge points (0, saturation, negative bases...) with the expected numbers reasoned
  out by hand, following PyTorch's conventions;
* the textual derivative rules (``DERIVATIVE_RULES``) evaluated and compared with
  the derivatives the engine actually stores;
* random expression trees: one tree description, built once as ``Value`` nodes and
  once as autograd code, compared at rel 1e-11 over 500 seeds.

Tolerances: the engine and autograd evaluate each op with different but
mathematically equal formulas (e.g. tanh' = 1 - tanh**2 vs 1/cosh**2, d(x/y)/dy =
-(x/y)/y vs -x/y**2), which differ by a few ulps.  The in-domain points are chosen
where that is well below 1e-12 relative (e.g. |x| <= 3 for tanh and sigmoid, whose
derivative formulas lose relative accuracy as they saturate).
"""

import math
import random
import warnings

import autograd
import autograd.numpy as anp
import numpy as np
import pytest
from _shared import close, engine_result

from autodiff_cli.engine import DERIVATIVE_RULES, FUNCTIONS, Value, iter_edges, topological_order


def oracle(fn, *args):
    """Value and gradient w.r.t. every argument, computed by autograd in float64."""
    xs = [np.float64(a) for a in args]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "output seems independent of input" for constants
        value = float(fn(*xs))
        grads = [float(autograd.grad(fn, i)(*xs)) for i in range(len(xs))]
    return value, grads


def _ag_sigmoid(x):
    return 1.0 / (1.0 + anp.exp(-x))


# name -> (engine function, autograd function, points).  Operators (+ - * / ** and
# reflected forms) are the same Python lambda for both sides: they dispatch to Value's
# dunders on one side and to autograd's ArrayBox on the other.
CASES = {
    # binary, both operands are Values
    "a+b": (lambda a, b: a + b, None, [(1.5, -2.25), (0.0, 3.0), (-1e10, 7.5)]),
    "a-b": (lambda a, b: a - b, None, [(1.5, -2.25), (0.0, 3.0), (1e-8, 3e-8)]),
    "a*b": (lambda a, b: a * b, None, [(1.5, -2.25), (0.0, 3.0), (-7.25, -0.125)]),
    "a/b": (lambda a, b: a / b, None, [(1.5, -2.25), (0.0, 3.0), (-7.0, 0.1), (1e-3, 1e4)]),
    "a**b": (
        lambda a, b: a**b,
        None,
        [(2.0, 3.0), (0.5, -1.5), (3.7, 0.25), (1.0, 5.0), (10.0, 2.5), (2.0, 0.0), (0.2, 7.3)],
    ),
    # constant exponents (the "**c" node), positive and, for integer c, negative bases
    "a**2": (lambda a: a**2, None, [(3.0,), (-1.5,), (0.1,)]),
    "a**3": (lambda a: a**3, None, [(3.0,), (-1.5,), (0.1,)]),
    "a**-1": (lambda a: a**-1, None, [(3.0,), (-1.5,), (0.1,)]),
    "a**-2": (lambda a: a**-2, None, [(3.0,), (-1.5,), (0.1,)]),
    "a**0.5": (lambda a: a**0.5, None, [(3.0,), (0.01,), (1e6,)]),
    "a**1.5": (lambda a: a**1.5, None, [(3.0,), (0.01,), (1e6,)]),
    "a**-2.5": (lambda a: a**-2.5, None, [(3.0,), (0.01,), (1e6,)]),
    "a**0": (lambda a: a**0, None, [(3.0,), (-1.5,)]),
    "a**1": (lambda a: a**1, None, [(3.0,), (-1.5,)]),
    # a Value combined with a plain number, in both positions
    "a+2": (lambda a: a + 2, None, [(1.25,), (-3.0,)]),
    "2+a": (lambda a: 2 + a, None, [(1.25,), (-3.0,)]),
    "a-1": (lambda a: a - 1, None, [(1.25,), (-3.0,)]),
    "1-a": (lambda a: 1 - a, None, [(1.25,), (-3.0,)]),
    "a*2": (lambda a: a * 2, None, [(1.25,), (-3.0,)]),
    "2*a": (lambda a: 2 * a, None, [(1.25,), (-3.0,)]),
    "a/3": (lambda a: a / 3, None, [(1.25,), (-3.0,)]),
    "3/a": (lambda a: 3 / a, None, [(1.25,), (-3.0,), (0.01,)]),
    "2**a": (lambda a: 2**a, None, [(1.25,), (-3.0,), (0.0,), (10.5,)]),
    "0.5**a": (lambda a: 0.5**a, None, [(1.25,), (-3.0,)]),
    # unary
    "-a": (lambda a: -a, None, [(1.25,), (-3.0,), (0.0,)]),
    "identity": (lambda a: a.identity(), lambda a: a, [(1.25,), (-3.0,)]),
    "tanh": (lambda a: a.tanh(), anp.tanh, [(-2.5,), (-0.7,), (0.0,), (0.3,), (1.9,), (3.0,)]),
    "exp": (lambda a: a.exp(), anp.exp, [(-3.0,), (0.0,), (0.5,), (4.2,), (300.0,)]),
    "log": (lambda a: a.log(), anp.log, [(1e-3,), (0.5,), (1.0,), (2.7,), (1e5,)]),
    "sqrt": (lambda a: a.sqrt(), anp.sqrt, [(1e-4,), (0.25,), (2.0,), (1e6,)]),
    "relu": (lambda a: a.relu(), lambda a: anp.maximum(a, 0.0), [(-1.5,), (-1e-3,), (1e-3,), (2.0,)]),
    "sigmoid": (lambda a: a.sigmoid(), _ag_sigmoid, [(-3.0,), (-0.5,), (0.0,), (0.5,), (2.5,)]),
    "softplus": (lambda a: a.softplus(), lambda a: anp.logaddexp(0.0, a),
                 [(-30.0,), (-2.5,), (-1e-9,), (0.0,), (0.7,), (4.0,), (40.0,)]),
    "sin": (lambda a: a.sin(), anp.sin, [(-2.0,), (0.0,), (0.5,), (3.1,), (10.0,)]),
    "cos": (lambda a: a.cos(), anp.cos, [(-2.0,), (0.0,), (0.5,), (3.1,), (10.0,)]),
    "abs": (lambda a: a.abs(), anp.abs, [(-2.5,), (-1e-9,), (1e-9,), (3.0,)]),
    "abs()": (lambda a: abs(a), anp.abs, [(-2.5,), (3.0,)]),
    # flat on each side of the jump: derivative 0 (autograd's sign has a zero gradient too)
    "sign": (lambda a: a.sign(), anp.sign, [(-2.5,), (-1e-9,), (1e-9,), (3.0,)]),
    "step": (lambda a: a.step(), lambda a: anp.where(a > 0, 1.0, 0.0) + 0.0 * a, [(-2.5,), (-1e-9,), (1e-9,), (3.0,)]),
    # of two operands, away from ties (ties: EDGE_CASES, where the two share the slope)
    "maximum": (lambda a, b: a.maximum(b), anp.maximum, [(1.5, -2.25), (-3.0, 1e-9), (2.0, 7.0)]),
    "minimum": (lambda a, b: a.minimum(b), anp.minimum, [(1.5, -2.25), (-3.0, 1e-9), (2.0, 7.0)]),
}


def _params():
    for name, (eng, ag, points) in CASES.items():
        for point in points:
            yield pytest.param(eng, ag or eng, point, id=f"{name}@{','.join(repr(p) for p in point)}")


@pytest.mark.parametrize("eng, ag, point", list(_params()))
def test_op_matches_autograd(eng, ag, point):
    want_value, want_grads = oracle(ag, *point)
    got_value, got_grads = engine_result(eng, *point)
    assert close(got_value, want_value), (got_value, want_value)
    for i, (g, w) in enumerate(zip(got_grads, want_grads)):
        assert close(g, w), f"d/d(arg {i}): engine {g!r}, autograd {w!r}"


def test_every_function_and_op_is_covered():
    names = set(CASES)
    for fn in FUNCTIONS:
        assert fn in names, f"function {fn} has no autograd comparison"
    # every op in the derivative table has a case here (the "**c" family included)
    ops = {
        "+": "a+b",
        "-": "a-b",
        "*": "a*b",
        "/": "a/b",
        "**": "a**b",
        "**c": "a**2",
        "neg": "-a",
        "=": "identity",
    }
    for op in DERIVATIVE_RULES:
        assert ops.get(op, op) in names, f"op {op} has no autograd comparison"


@pytest.mark.parametrize("name", sorted(FUNCTIONS), ids=sorted(FUNCTIONS))
def test_functions_table_is_the_methods(name):
    # Value's method for each function is made from the op table's kernel: same value, same
    # local derivative, and the node carries the op's name.
    value, local = FUNCTIONS[name].scalar(0.75)
    node = getattr(Value(0.75), name)()
    assert (node.data, node._local, node._op) == (value, (local,), name)


# ---------------------------------------------------------------------------------------------
# Edge points, expected values reasoned out by hand (PyTorch's conventions).
#   each entry: (engine fn, inputs, expected value, expected grads)
# ---------------------------------------------------------------------------------------------

INF, NAN = math.inf, math.nan

EDGE_CASES = {
    # a tie of maximum or minimum: each operand gets half (PyTorch: where(self == other, grad / 2, grad))
    "maximum(2, 2)": (lambda a, b: a.maximum(b), (2.0, 2.0), 2.0, (0.5, 0.5)),
    "minimum(-1, -1)": (lambda a, b: a.minimum(b), (-1.0, -1.0), -1.0, (0.5, 0.5)),
    "maximum(nan, 1)": (lambda a, b: a.maximum(b), (NAN, 1.0), NAN, (0.5, 0.5)),
    # relu'(0) = 0 (PyTorch: grad * (x > 0))
    "relu(0)": (lambda a: a.relu(), (0.0,), 0.0, (0.0,)),
    # abs'(0) = sign(0) = 0, also at -0 (no negative zero gradient)
    "abs(0)": (lambda a: a.abs(), (0.0,), 0.0, (0.0,)),
    "abs(-0)": (lambda a: a.abs(), (-0.0,), 0.0, (0.0,)),
    # the jumps: sign(0) = 0 and step(0) = 0 (so relu' = step and abs' = sign everywhere), slope 0
    "sign(0)": (lambda a: a.sign(), (0.0,), 0.0, (0.0,)),
    "step(0)": (lambda a: a.step(), (0.0,), 0.0, (0.0,)),
    # NaN in, NaN out (never a silent 0)
    "sign(nan)": (lambda a: a.sign(), (NAN,), NAN, (0.0,)),
    "step(nan)": (lambda a: a.step(), (NAN,), NAN, (0.0,)),
    # sqrt(0) = 0, d/dx sqrt(x) = 1/(2 sqrt x) -> +inf
    "sqrt(0)": (lambda a: a.sqrt(), (0.0,), 0.0, (INF,)),
    # x**0.5 at 0: 0.5 * 0**-0.5 = +inf
    "0**0.5": (lambda a: a**0.5, (0.0,), 0.0, (INF,)),
    # x**c for 0 < c < 1 at 0: vertical slope
    "0**0.25": (lambda a: a**0.25, (0.0,), 0.0, (INF,)),
    # x**1.5 at 0: 1.5 * 0**0.5 = 0
    "0**1.5": (lambda a: a**1.5, (0.0,), 0.0, (0.0,)),
    # x**1 at 0: slope 1
    "0**1": (lambda a: a**1, (0.0,), 0.0, (1.0,)),
    # x**2 at 0: slope 0
    "0**2": (lambda a: a**2, (0.0,), 0.0, (0.0,)),
    # x**0 is the constant 1: slope 0 everywhere, including at 0 (PyTorch masks exponent == 0)
    "0**0": (lambda a: a**0, (0.0,), 1.0, (0.0,)),
    "3**0": (lambda a: a**0, (3.0,), 1.0, (0.0,)),
    "(-2)**0": (lambda a: a**0, (-2.0,), 1.0, (0.0,)),
    # Value exponent at base 0, y = 2: d/dx = 2*0 = 0; d/dy = 0**2 * ln 0 -> PyTorch defines 0
    "0**y(y=2)": (lambda a, b: a**b, (0.0, 2.0), 0.0, (0.0, 0.0)),
    # base 0, y = 0.5: d/dx = +inf, d/dy = 0
    "0**y(y=0.5)": (lambda a, b: a**b, (0.0, 0.5), 0.0, (INF, 0.0)),
    # base 0, y = 0: value 1, d/dx = 0 (exponent 0), d/dy = 0
    "0**y(y=0)": (lambda a, b: a**b, (0.0, 0.0), 1.0, (0.0, 0.0)),
    # negative base, integer Value exponent: (-2)**3 = -8, d/dx = 3 * 4 = 12, d/dy = -8 ln(-2) = NaN
    "(-2)**y(y=3)": (lambda a, b: a**b, (-2.0, 3.0), -8.0, (12.0, NAN)),
    # (-3)**2 = 9, d/dx = 2 * -3 = -6, d/dy NaN
    "(-3)**y(y=2)": (lambda a, b: a**b, (-3.0, 2.0), 9.0, (-6.0, NAN)),
    # x > 0, Value exponent 0: value 1, d/dx = 0, d/dy = 1 * ln 5
    "5**y(y=0)": (lambda a, b: a**b, (5.0, 0.0), 1.0, (0.0, math.log(5.0))),
    # saturation: no overflow, values exactly +-1 / 1 / 0, gradients exactly 0 and finite
    "tanh(1000)": (lambda a: a.tanh(), (1000.0,), 1.0, (0.0,)),
    "tanh(-1000)": (lambda a: a.tanh(), (-1000.0,), -1.0, (0.0,)),
    "sigmoid(1000)": (lambda a: a.sigmoid(), (1000.0,), 1.0, (0.0,)),
    "sigmoid(-1000)": (lambda a: a.sigmoid(), (-1000.0,), 0.0, (0.0,)),
    # softplus: log 2 and slope 1/2 at 0; far above 0 the value is x and the slope exactly 1,
    # far below both are e**x, which underflows to 0 quietly
    "softplus(0)": (lambda a: a.softplus(), (0.0,), math.log(2.0), (0.5,)),
    "softplus(1000)": (lambda a: a.softplus(), (1000.0,), 1000.0, (1.0,)),
    "softplus(-1000)": (lambda a: a.softplus(), (-1000.0,), 0.0, (0.0,)),
    "softplus(-710)": (lambda a: a.softplus(), (-710.0,), math.exp(-710.0), (math.exp(-710.0),)),
    # exp underflows to 0 quietly (only overflow is an error)
    "exp(-1000)": (lambda a: a.exp(), (-1000.0,), 0.0, (0.0,)),
    # sigmoid(0) = 1/2, sigmoid' = 1/4; tanh(0) = 0, tanh' = 1
    "sigmoid(0)": (lambda a: a.sigmoid(), (0.0,), 0.5, (0.25,)),
    "tanh(0)": (lambda a: a.tanh(), (0.0,), 0.0, (1.0,)),
    # log(1) = 0, log' = 1; exp(0) = 1, exp' = 1
    "log(1)": (lambda a: a.log(), (1.0,), 0.0, (1.0,)),
    "exp(0)": (lambda a: a.exp(), (0.0,), 1.0, (1.0,)),
    # 0 / y: value 0, d/dx = 1/y, d/dy = -0/y**2 = 0
    "0/4": (lambda a, b: a / b, (0.0, 4.0), 0.0, (0.25, 0.0)),
}


@pytest.mark.parametrize(
    "fn, inputs, value, grads",
    [pytest.param(*case, id=name) for name, case in EDGE_CASES.items()],
)
def test_edge_point(fn, inputs, value, grads):
    got_value, got_grads = engine_result(fn, *inputs)
    assert close(got_value, value), (got_value, value)
    for g, w in zip(got_grads, grads):
        assert close(g, w), (got_grads, grads)
        if not math.isnan(w) and not math.isinf(w):
            assert math.isfinite(g)


# For x << 0, sigmoid(x) = e^x / (1 + e^x) rounds to e^x, and so does its slope s(1 - s);
# e^-710 ~ 4.5e-309 is still a (subnormal) float, e^-1000 is 0.
SATURATION = [
    ("tanh", 1000.0, 1.0, 0.0),
    ("tanh", -1000.0, -1.0, 0.0),
    ("tanh", 710.0, 1.0, 0.0),
    ("tanh", -710.0, -1.0, 0.0),
    ("tanh", 1e308, 1.0, 0.0),
    ("tanh", -1e308, -1.0, 0.0),
    ("sigmoid", 1000.0, 1.0, 0.0),
    ("sigmoid", -1000.0, 0.0, 0.0),
    ("sigmoid", 710.0, 1.0, 0.0),
    ("sigmoid", -710.0, math.exp(-710.0), math.exp(-710.0)),
    ("sigmoid", 1e308, 1.0, 0.0),
    ("sigmoid", -1e308, 0.0, 0.0),
]


@pytest.mark.parametrize(
    "fn, x, value, grad", [pytest.param(*case, id=f"{case[0]}({case[1]:g})") for case in SATURATION]
)
def test_saturating_functions_never_overflow(fn, x, value, grad):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        v = Value(x)
        out = getattr(v, fn)()
        out.backward()
    assert math.isfinite(out.data) and math.isfinite(v.grad)
    assert out.data == value
    assert v.grad == grad


# The slope of x**c where x**(c-1) overflows although x**c does not: x = -1e-103, c = -2.
#   x**-2 = 1e206 (finite);  d/dx = -2 * x**-3 = -2 * (-1e309) = +2e309 -> +inf
# (numpy/autograd: -2.0 * np.power(-1e-103, -3.0) = -2 * -inf = +inf): the sign of the
# overflowed power counts, not only the sign of c.
@pytest.mark.parametrize(
    "fn",
    [lambda a: a**-2, lambda a: a ** Value(-2.0)],
    ids=["constant_exponent", "value_exponent"],
)
def test_power_slope_overflow_keeps_the_sign(fn):
    x = Value(-1e-103)
    out = fn(x)
    out.backward()
    assert math.isclose(out.data, 1e206, rel_tol=1e-12)
    assert x.grad == math.inf


def test_power_slope_overflow_positive_base():
    # x = 1e-103 > 0: d/dx x**-2 = -2 * 1e309 -> -inf, and the engine's fallback sign is right here.
    x = Value(1e-103)
    (x**-2).backward()
    assert x.grad == -math.inf


# ---------------------------------------------------------------------------------------------
# DERIVATIVE_RULES: the rules as written for people must agree with the stored derivatives.
# ---------------------------------------------------------------------------------------------


def _rule_namespace(x, y=None, c=None):
    return {
        "x": x,
        "y": y,
        "c": c,
        "ln": math.log,
        "exp": math.exp,
        "sqrt": math.sqrt,
        "sin": math.sin,
        "cos": math.cos,
        "tanh": math.tanh,
        "sigmoid": lambda t: 1.0 / (1.0 + math.exp(-t)),
        "sign": lambda t: (t > 0) - (t < 0),
    }


RULE_CASES = (
    [
        ("+", lambda a, b: a + b, (1.5, -2.0)),
        ("-", lambda a, b: a - b, (1.5, -2.0)),
        ("*", lambda a, b: a * b, (1.5, -2.0)),
        ("/", lambda a, b: a / b, (1.5, -2.0)),
        ("**", lambda a, b: a**b, (1.5, -2.0)),
        ("**", lambda a, b: a**b, (2.5, 0.5)),
        ("**c", lambda a: a**3, (1.5,)),
        ("**c", lambda a: a**-0.5, (2.5,)),
        ("neg", lambda a: -a, (1.5,)),
        ("=", lambda a: a.identity(), (1.5,)),
    ]
    + [
        (name, getattr(Value, name), (x,))
        for name in FUNCTIONS
        for x in (0.7, -1.3)
        if name not in ("log", "sqrt")
    ]
    + [
        ("log", Value.log, (0.7,)),
        ("sqrt", Value.sqrt, (0.7,)),
    ]
)


@pytest.mark.parametrize(
    "op, fn, inputs",
    [pytest.param(op, fn, inp, id=f"{op}@{','.join(map(repr, inp))}") for op, fn, inp in RULE_CASES],
)
def test_derivative_rules_text_matches_stored_locals(op, fn, inputs):
    leaves = [Value(v) for v in inputs]
    out = fn(*leaves)
    c = out.exponent
    if op == "**c":
        assert out._op == f"**{c:g}"
    else:
        assert out._op == op
    ns = _rule_namespace(*inputs, c=c) if len(inputs) == 1 else _rule_namespace(*inputs)
    rules = DERIVATIVE_RULES[op]
    assert len(rules) == len(out._prev) == len(out._local)
    for text, local in zip(rules, out._local):
        assert close(eval(text, ns), local), (op, text, local)


# ---------------------------------------------------------------------------------------------
# Random expression trees: the same tree description built as Value nodes and as autograd code.
# Guards keep every op in its domain and magnitudes moderate:
#   log(t*t + 1), sqrt(abs(t) + 0.1), l / (r*r + 1), c / (t*t + 1),
#   (l*l + 0.5) ** sin(r), c ** sin(t), exp(2 sin t), tanh(3 sin t), sigmoid(4 sin t)
#   (tanh/sigmoid arguments bounded so their derivative formulas keep full relative accuracy),
#   t**2, t**3 (any sign), (abs(t) + 0.5) ** c for fractional or negative c.
# Leaves are drawn from [-2, 2]; trees are 3..7 levels deep (up to ~140 nodes).
# ---------------------------------------------------------------------------------------------

VARS = ("x", "y", "z")
UNARY_KINDS = (
    "neg",
    "identity",
    "tanh",
    "exp",
    "log",
    "sqrt",
    "relu",
    "sigmoid",
    "sin",
    "cos",
    "abs",
    "sign",
    "step",
    "powc",
    "radd",
    "rsub",
    "rmul",
    "rdiv",
    "rpow",
    "addc",
    "subc",
    "mulc",
    "divc",
)
BINARY_KINDS = ("add", "sub", "mul", "div", "pow")
CONST_KINDS = ("radd", "rsub", "rmul", "rdiv", "rpow", "addc", "subc", "mulc", "divc")
INT_EXPONENTS = (2.0, 3.0)
OTHER_EXPONENTS = (0.5, 1.5, -1.0, -1.5, 2.5, 0.0)


def random_tree(rng, depth):
    if depth == 0 or rng.random() < 0.15:
        if rng.random() < 0.8:
            return ("var", rng.choice(VARS))
        return ("const", rng.choice((0.5, 1.5, 2.0, -1.0, 3.0, -0.25)))
    if rng.random() < 0.45:
        return (rng.choice(BINARY_KINDS), random_tree(rng, depth - 1), random_tree(rng, depth - 1))
    kind = rng.choice(UNARY_KINDS)
    if kind == "powc":
        c = rng.choice(INT_EXPONENTS + OTHER_EXPONENTS)
        return ("powc", c, random_tree(rng, depth - 1))
    if kind in CONST_KINDS:
        c = rng.choice((0.5, 2.0, 3.0)) if kind == "rpow" else rng.choice((0.5, -2.0, 3.0, 1.25))
        return (kind, c, random_tree(rng, depth - 1))
    return (kind, random_tree(rng, depth - 1))


class EngineFns:
    tanh = staticmethod(lambda t: t.tanh())
    exp = staticmethod(lambda t: t.exp())
    log = staticmethod(lambda t: t.log())
    sqrt = staticmethod(lambda t: t.sqrt())
    relu = staticmethod(lambda t: t.relu())
    sigmoid = staticmethod(lambda t: t.sigmoid())
    sin = staticmethod(lambda t: t.sin())
    cos = staticmethod(lambda t: t.cos())
    abs = staticmethod(lambda t: t.abs())
    sign = staticmethod(lambda t: t.sign())
    step = staticmethod(lambda t: t.step())
    identity = staticmethod(lambda t: t.identity())


class AutogradFns:
    tanh = staticmethod(anp.tanh)
    exp = staticmethod(anp.exp)
    log = staticmethod(anp.log)
    sqrt = staticmethod(anp.sqrt)
    relu = staticmethod(lambda t: anp.where(t > 0, t, 0.0))  # PyTorch convention: relu'(0) = 0
    sigmoid = staticmethod(_ag_sigmoid)
    sin = staticmethod(anp.sin)
    cos = staticmethod(anp.cos)
    abs = staticmethod(anp.abs)
    sign = staticmethod(anp.sign)
    step = staticmethod(lambda t: anp.where(t > 0, 1.0, 0.0) + 0.0 * t)  # 0 * t: a zero gradient
    identity = staticmethod(lambda t: t)


class MathFns:
    """Plain floats (a function of constants only): folded with the math module on both sides."""

    tanh = staticmethod(math.tanh)
    exp = staticmethod(math.exp)
    log = staticmethod(math.log)
    sqrt = staticmethod(math.sqrt)
    relu = staticmethod(lambda t: max(t, 0.0))
    sigmoid = staticmethod(lambda t: 1.0 / (1.0 + math.exp(-t)))
    sin = staticmethod(math.sin)
    cos = staticmethod(math.cos)
    abs = staticmethod(abs)
    sign = staticmethod(lambda t: math.copysign(1.0, t) if t else 0.0)
    step = staticmethod(lambda t: 1.0 if t > 0 else 0.0)
    identity = staticmethod(lambda t: t)


def build(tree, env, F):
    """Evaluate a tree description with the backend F.

    Arithmetic operators dispatch on the operands (Value dunders on one side, autograd's
    ArrayBox on the other); a "const" leaf is a plain float, so the Value-with-number forms
    (2*a, a+2, 3/a, 2**a...) are exercised too.
    """
    kind = tree[0]
    if kind == "var":
        return env[tree[1]]
    if kind == "const":
        return tree[1]
    if kind in BINARY_KINDS:
        left, right = build(tree[1], env, F), build(tree[2], env, F)
        if kind == "add":
            return left + right
        if kind == "sub":
            return left - right
        if kind == "mul":
            return left * right
        if kind == "div":
            return left / (right * right + 1.0)
        return (left * left + 0.5) ** _fns(right, F).sin(right)
    if kind == "powc":
        c, t = tree[1], build(tree[2], env, F)
        return t**c if c in INT_EXPONENTS else (_fns(t, F).abs(t) + 0.5) ** c
    if kind in CONST_KINDS:
        c, t = tree[1], build(tree[2], env, F)
        if kind == "radd":
            return c + t
        if kind == "rsub":
            return c - t
        if kind == "rmul":
            return c * t
        if kind == "rdiv":
            return c / (t * t + 1.0)
        if kind == "rpow":
            return c ** _fns(t, F).sin(t)
        if kind == "addc":
            return t + c
        if kind == "subc":
            return t - c
        if kind == "mulc":
            return t * c
        return t / c
    t = build(tree[1], env, F)
    G = _fns(t, F)
    if kind == "neg":
        return -t
    if kind == "log":
        return G.log(t * t + 1.0)
    if kind == "sqrt":
        return G.sqrt(G.abs(t) + 0.1)
    if kind == "exp":
        return G.exp(2.0 * G.sin(t))
    if kind == "tanh":
        return G.tanh(3.0 * G.sin(t))
    if kind == "sigmoid":
        return G.sigmoid(4.0 * G.sin(t))
    return getattr(G, kind)(t)


def _fns(t, F):
    return MathFns if isinstance(t, float) else F


def describe(tree):
    kind = tree[0]
    if kind in ("var", "const"):
        return str(tree[1])
    if kind in BINARY_KINDS:
        return f"{kind}({describe(tree[1])}, {describe(tree[2])})"
    if len(tree) == 3:
        return f"{kind}[{tree[1]}]({describe(tree[2])})"
    return f"{kind}({describe(tree[1])})"


def _has_var(tree):
    return tree[0] == "var" or any(isinstance(part, tuple) and _has_var(part) for part in tree[1:])


def _tree_case(seed):
    rng = random.Random(seed)
    while True:  # a tree that is not a bare leaf and depends on at least one variable
        tree = random_tree(rng, depth=rng.randint(3, 7))
        if tree[0] not in ("var", "const") and _has_var(tree):
            break
    point = {name: rng.uniform(-2.0, 2.0) for name in VARS}
    return tree, point


# Measured over 5,000 seeds (numpy 2.4, autograd 1.9.1): worst relative difference 3.4e-14.
# 1e-11 is tighter than the 1e-9 asked for and still leaves a margin of ~300x for other
# numpy builds whose transcendental functions differ from libm by an ulp or two.
TREE_REL = 1e-11
N_TREES = 500


@pytest.mark.parametrize("seed", range(N_TREES), ids=lambda s: f"seed{s}")
def test_random_expression_tree_matches_autograd(seed):
    tree, point = _tree_case(seed)

    leaves = {name: Value(v, label=name) for name, v in point.items()}
    out = build(tree, leaves, EngineFns)
    assert isinstance(out, Value)
    out.backward()

    def fn(v):
        return build(tree, dict(zip(VARS, (v[0], v[1], v[2]))), AutogradFns)

    xs = np.array([point[name] for name in VARS], dtype=np.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want_value = float(fn(xs))
        want_grads = autograd.grad(fn)(xs)

    where = describe(tree)
    assert close(out.data, want_value, TREE_REL), (
        f"value of {where} at {point}: {out.data!r} vs {want_value!r}"
    )
    for name, want in zip(VARS, want_grads):
        got = leaves[name].grad
        assert close(got, want, TREE_REL), f"d/d{name} of {where} at {point}: {got!r} vs {float(want)!r}"


def test_random_trees_exercise_every_kind():
    seen = set()

    def walk(t):
        seen.add(t[0])
        for part in t[1:]:
            if isinstance(part, tuple):
                walk(part)

    for seed in range(N_TREES):
        walk(_tree_case(seed)[0])
    assert seen >= set(UNARY_KINDS) | set(BINARY_KINDS) | {"var", "const"}


def test_random_tree_graph_is_well_formed():
    # every node after backward: the edges carry exactly the stored locals
    tree, point = _tree_case(7)
    leaves = {name: Value(v, label=name) for name, v in point.items()}
    out = build(tree, leaves, EngineFns)
    order = topological_order(out)
    edges = list(iter_edges(order))
    assert len(edges) == sum(len(n._prev) for n in order)
    for child, parent, local in edges:
        assert child in parent._prev
        assert local in parent._local or math.isnan(local)
