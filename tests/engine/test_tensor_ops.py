"""Every tensor op of engine/tensor_ops.py against HIPS autograd, finite differences and loops.

* value and VJP of each op on several shapes (1-D and 2-D matmul in every pairing, negative
  axes, negative indices, slices with steps, large logits) against autograd in float64, to
  1e-12 relative (absolute 1e-12 times the largest expected magnitude, for entries near 0);
* JVP against autograd's jacobian, against central finite differences of the forward, and
  against our own VJP through <J v, u> = <v, J^T u>;
* the batch axis: every op with every pattern of batched operands equals a Python loop over
  the rows of the unbatched op, for forward, VJP (an unbatched operand's gradient is the sum
  over the rows) and JVP.

Ties of max/min are chosen away here (random floats); test_tensor_ops_edges.py checks the
even split at ties by hand.  The expected values never come from the module under test,
except in the batch tests, which hold the batched op to the unbatched one already checked.
"""

import itertools
import zlib

import autograd.numpy as anp
import numpy as np
import pytest
from autograd import grad, jacobian
from autograd.tracer import getval

from autodiff_cli.engine.registry import ENTRIES
from autodiff_cli.engine.tensor_ops import VARIADIC, Arguments

STRUCTURAL = {name: op for name, op in ENTRIES.items() if not op.elementwise}  # the ops that are not elementwise

REL = 1e-12


def assert_close(got, want, rel=REL):
    want = np.asarray(want, dtype=np.float64)
    got = np.asarray(got)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == np.float64
    scale = max(1.0, float(np.max(np.abs(want)))) if want.size else 1.0
    np.testing.assert_allclose(got, want, rtol=rel, atol=rel * scale)


# --- references written with autograd.numpy ---------------------------------------------------------


def a_logsumexp(x, keepdims=False, axis=-1):
    m = np.max(getval(x), axis=axis, keepdims=True)  # a constant shift, as people write it
    m = np.where(np.isfinite(m), m, 0.0)
    out = m + anp.log(anp.sum(anp.exp(x - m), axis=axis, keepdims=True))
    return out if keepdims else anp.squeeze(out, axis)


def a_log_softmax(x, axis=-1):
    return x - a_logsumexp(x, keepdims=True, axis=axis)


COMPARED = {"<": "less", "<=": "less_equal", ">": "greater", ">=": "greater_equal", "==": "equal",
            "!=": "not_equal"}


def reference(name, param, labels=None):
    """The op as autograd code: a function of the differentiable operands."""
    if name == "@":
        return lambda x, y: anp.matmul(x, y)
    if name in ("sum", "mean", "max", "min"):
        fn = getattr(anp, name)
        axis, keepdims = param if isinstance(param, Arguments) else (param, False)
        return lambda x: fn(x, axis=axis, keepdims=keepdims)
    if name == "transpose":
        return lambda x: anp.transpose(x)
    if name == "reshape":
        return lambda x: anp.reshape(x, param)
    if name == "ones_like":
        return lambda x: np.ones(np.shape(x))
    if name == "zeros_like":
        return lambda x: np.zeros(np.shape(x))
    if name == "argmax":
        axis, keepdims = param if isinstance(param, Arguments) else (param, False)
        return lambda x: np.argmax(getval(x), axis=axis, keepdims=keepdims).astype(np.float64)
    if name == "one_hot":
        return lambda y: (np.asarray(getval(y))[..., None] == np.arange(param)).astype(np.float64)
    if name in ("var", "std"):
        axis, keepdims, correction = (tuple(param) if isinstance(param, Arguments) else (param, False, 1))
        fn = getattr(anp, name)
        return lambda x: fn(x, axis=axis, ddof=correction, keepdims=keepdims)
    axis = -1 if param is None else param
    if name == "softmax":
        return lambda x: anp.exp(a_log_softmax(x, axis))
    if name == "log_softmax":
        return lambda x: a_log_softmax(x, axis)
    if name == "logsumexp":
        return lambda x: a_logsumexp(x, axis=axis)
    if name == "cumsum":
        return lambda x: anp.cumsum(x, axis=axis)
    if name == "index":
        return lambda x: x[param]
    if name == "mse":
        return lambda x, y: anp.mean((x - y) ** 2)
    if name in COMPARED:
        return lambda x, y: getattr(np, COMPARED[name])(getval(x), getval(y)).astype(np.float64)
    if name == "where":  # autograd's where does not sum its gradient back over broadcasting: ones do
        def where(c, a, b):
            ones = np.ones(np.broadcast_shapes(*(np.shape(getval(v)) for v in (c, a, b))))
            return anp.where(getval(c) != 0, a * ones, b * ones)

        return where
    if name == "clip":
        return lambda x, lo, hi: anp.minimum(anp.maximum(x, lo), hi)
    if name == "stack":
        return lambda *xs: anp.stack(list(xs), axis=param or 0)
    if name == "concat":
        return lambda *xs: anp.concatenate(list(xs), axis=param or 0)
    if name == "gather":
        return lambda x: x[np.asarray(labels, dtype=np.intp)]
    if name == "pick":
        def pick(x):
            j = np.asarray(labels, dtype=np.intp)
            return x[tuple(np.indices(j.shape)) + (j,)]  # x[p, j[p]] for every position p

        return pick
    if name == "scatter":
        def scatter(g):
            i = np.asarray(labels, dtype=np.intp) % param
            rest = np.ndim(getval(g)) - i.ndim
            onehot = (np.arange(param) == i[..., None]).astype(np.float64).reshape(i.shape + (param,) + (1,) * rest)
            return onehot * anp.expand_dims(g, i.ndim)

        return scatter
    if name == "cross_entropy":
        def ce(x):
            classes = np.shape(getval(x))[-1]
            onehot = (np.arange(classes) == np.asarray(labels)[..., None]).astype(np.float64)
            return -anp.mean(anp.sum(onehot * a_log_softmax(x), axis=-1))

        return ce
    raise AssertionError(name)


# --- the cases: (op, per-row operand shapes, param) ---------------------------------------------------

S = slice
CASES = [
    ("@", [(3,), (3,)], None),
    ("@", [(3,), (3, 4)], None),
    ("@", [(2, 3), (3,)], None),
    ("@", [(2, 3), (3, 4)], None),
    ("@", [(1, 1), (1, 5)], None),
    ("@", [(4, 1), (1,)], None),
    ("reshape", [(3, 4)], (2, -1)),
    ("reshape", [(3, 4)], (-1,)),
    ("reshape", [(2, 3, 4)], (4, 1, -1, 3)),
    ("reshape", [(2, 3, 1, 4)], (6, 4)),
    ("reshape", [()], (1, 1)),
    ("reshape", [(1,)], (-1, 1)),
    ("transpose", [(3, 4)], None),
    ("transpose", [(1, 5)], None),
    ("softmax", [(5,)], None),
    ("softmax", [(3, 4)], None),
    ("softmax", [(2, 3, 4)], None),
    ("softmax", [(1,)], None),
    ("log_softmax", [(5,)], None),
    ("log_softmax", [(3, 4)], None),
    ("log_softmax", [(2, 3, 4)], None),
    ("logsumexp", [(5,)], None),
    ("logsumexp", [(3, 4)], None),
    ("logsumexp", [(2, 3, 4)], None),
]
for _name in ("softmax", "log_softmax", "logsumexp"):
    CASES += [
        (_name, [(3, 4)], 0),
        (_name, [(3, 4)], -2),
        (_name, [(3, 4)], 1),
        (_name, [(2, 3, 4, 5)], 1),
        (_name, [(2, 3, 4, 5)], -3),
        (_name, [(2, 3, 4, 5)], 0),
        (_name, [(2, 1, 4)], 1),
        (_name, [(5,)], 0),
    ]
CASES += [
    ("index", [(5,)], (2,)),
    ("index", [(5,)], (-1,)),
    ("index", [(5,)], (S(1, 4),)),
    ("index", [(5,)], (S(None, None, 2),)),
    ("index", [(5,)], (S(None, None, -1),)),
    ("index", [(5,)], (S(4, 0, -2),)),
    ("index", [(3, 4)], (1,)),
    ("index", [(3, 4)], (-2, 3)),
    ("index", [(3, 4)], (S(None), 1)),
    ("index", [(3, 4)], (S(None, None, 2), S(1, None))),
    ("index", [(3, 4)], (1, S(None, None, -1))),
    ("index", [(2, 3, 4)], (1, -1)),
    ("index", [(2, 3, 4)], (S(None), 0, S(1, 3))),
    ("index", [(2, 3, 4)], ()),
    ("mse", [(5,), (5,)], None),
    ("mse", [(3, 4), (3, 4)], None),
    ("mse", [(), ()], None),
    ("cross_entropy", [(4,), ()], None),
    ("cross_entropy", [(5, 3), (5,)], None),
    ("cross_entropy", [(2, 3, 4), (2, 3)], None),
    ("gather", [(5,), (3,)], None),
    ("gather", [(4, 3), (2, 3)], None),
    ("gather", [(4, 3), ()], None),
    ("gather", [(3, 2, 2, 2), (2, 1, 2)], None),
    ("pick", [(4, 3), (4,)], None),
    ("pick", [(5,), ()], None),
    ("pick", [(2, 3, 4, 2), (2, 3)], None),
    ("scatter", [(4,), (4,)], 3),
    ("scatter", [(2, 3, 5), (2,)], 4),
    ("scatter", [(), ()], 2),
]
for _name in COMPARED:
    CASES += [(_name, [(5,), (5,)], None), (_name, [(3, 4), (4,)], None), (_name, [(), (2, 3)], None)]
for _name in ("where", "clip"):
    CASES += [
        (_name, [(5,), (5,), (5,)], None),
        (_name, [(3, 4), (4,), ()], None),
        (_name, [(3, 1), (), (1, 4)], None),
        (_name, [(), (), ()], None),
        (_name, [(2, 1, 3), (4, 1), (2, 4, 3)], None),
    ]
CASES += [
    ("stack", [(3,), (3,)], None),
    ("stack", [(3,), (3,), (3,)], 1),
    ("stack", [(), (), (), ()], 0),
    ("stack", [(2, 3)], -1),
    ("stack", [(2, 3), (2, 3)], 1),
    ("concat", [(3,), (2,)], None),
    ("concat", [(2, 3), (1, 3), (4, 3)], 0),
    ("concat", [(2, 3), (2, 1)], -1),
    ("concat", [(1, 2, 3), (1, 2, 2)], 2),
]
for _name in ("sum", "mean", "max", "min"):
    CASES += [
        (_name, [()], None),
        (_name, [(5,)], None),
        (_name, [(5,)], 0),
        (_name, [(5,)], -1),
        (_name, [(3, 4)], None),
        (_name, [(3, 4)], 0),
        (_name, [(3, 4)], 1),
        (_name, [(3, 4)], -1),
        (_name, [(3, 4)], -2),
        (_name, [(2, 3, 4)], 1),
        (_name, [(2, 3, 4)], -3),
        (_name, [(2, 3, 4, 5)], 2),
        (_name, [(2, 3, 4, 5)], -3),
        (_name, [(3, 4)], Arguments((1, True))),
        (_name, [(3, 4)], Arguments((-2, True))),
        (_name, [(2, 3, 1, 5)], Arguments((2, True))),
        (_name, [(2, 3, 4, 5)], Arguments((1, True))),
        (_name, [(2, 3, 4, 5)], Arguments((-1, True))),
        (_name, [(3, 4)], Arguments((None, True))),
        (_name, [(5,)], Arguments((None, True))),
    ]

for _name in ("var", "std"):
    CASES += [
        (_name, [(5,)], None),
        (_name, [(3, 4)], None),
        (_name, [(3, 4)], 0),
        (_name, [(3, 4)], -1),
        (_name, [(2, 3, 4, 5)], 2),
        (_name, [(2, 3, 4, 5)], -3),
        (_name, [(3, 4)], Arguments((1, True, 1))),
        (_name, [(3, 4)], Arguments((0, False, 0))),
        (_name, [(3, 4)], Arguments((-1, True, 2))),
        (_name, [(2, 1, 4)], Arguments((2, True, 0))),
        (_name, [(1, 4)], Arguments((0, False, 0))),  # one entry, divided by n = 1: var 0, std 0
        (_name, [(2, 3, 4, 5)], Arguments((1, True, 0))),
    ]

CASES += [  # cumsum: the last axis unless given; negative axes, and axes of one entry
    ("cumsum", [(5,)], None),
    ("cumsum", [(5,)], 0),
    ("cumsum", [(1,)], None),
    ("cumsum", [(3, 4)], None),
    ("cumsum", [(3, 4)], 0),
    ("cumsum", [(3, 4)], -2),
    ("cumsum", [(3, 1)], -1),
    ("cumsum", [(1, 4)], 0),
    ("cumsum", [(2, 3, 4)], 1),
    ("cumsum", [(2, 3, 4)], -3),
]
CASES += [
    ("ones_like", [(3, 4)], None),
    ("ones_like", [()], None),
    ("zeros_like", [(2, 3, 4, 5)], None),
    ("argmax", [(5,)], None),
    ("argmax", [(3, 4)], None),
    ("argmax", [(3, 4)], 1),
    ("argmax", [(3, 4)], -2),
    ("argmax", [(2, 3, 4, 5)], 2),
    ("argmax", [(2, 3, 4, 5)], Arguments((-1, True))),
    ("argmax", [(3, 4)], Arguments((None, True))),
    ("one_hot", [(5,)], 4),
    ("one_hot", [(2, 3)], 6),
    ("one_hot", [()], 4),
    ("one_hot", [(2, 1, 3, 2)], 5),
]

# Every op of the table has cases (a new op fails here until it has some); an op of no operands
# is a constant the compiler makes (arange), tested in test_tensor_ops_edges.py.
assert {name for name, _, _ in CASES} == {name for name, op in STRUCTURAL.items() if op.arity}


def case_id(case):
    name, shapes, param = case
    return f"{name}-{'x'.join(str(list(s)) for s in shapes)}-{param}"


def seed_of(text):
    return zlib.crc32(text.encode())  # the same on every run (hash() of a str is not)


def make_args(name, shapes, rng, batch=(), param=None):
    """Random operands of the given per-row shapes (with a batch axis of size N when batch=(N,))."""
    args = []
    for i, shape in enumerate(shapes):
        if name == "cross_entropy" and i == 1:
            classes = shapes[0][-1]
            args.append(rng.integers(0, classes, size=batch + tuple(shape)).astype(np.float64))
        elif name == "where" and i == 0:  # a condition: 0 is false, any other number true
            args.append(rng.choice([0.0, 1.0, 0.5, -2.0], size=batch + tuple(shape)))
        elif name in COMPARED:  # few values, so that some entries tie and each comparison goes both ways
            args.append(rng.choice([-1.0, 0.0, 0.5, 1.0], size=batch + tuple(shape)))
        elif name in INDEXED and i == 1:  # whole numbers of the axis indexed, negative ones too
            size = INDEXED[name](shapes, param)
            args.append(rng.integers(-size, size, size=batch + tuple(shape)).astype(np.float64))
        elif name == "one_hot":
            args.append(rng.integers(0, 4, size=batch + tuple(shape)).astype(np.float64))
        else:
            args.append(rng.normal(size=batch + tuple(shape)))
    return args


# The size of the axis each op's index operand indexes.
INDEXED = {"gather": lambda shapes, param: shapes[0][0],
           "pick": lambda shapes, param: shapes[0][len(shapes[1])],
           "scatter": lambda shapes, param: param}
WHOLE = {"cross_entropy", *INDEXED}  # ops whose second operand is whole numbers, not differentiated


NO_GRADIENT = {"ones_like", "zeros_like", "argmax", "one_hot"}  # constant where defined: zeros, checked as labels


def differentiable(name, count):
    if name in COMPARED or name in NO_GRADIENT:
        return []  # flat wherever defined: the VJP is zeros, checked below
    if name == "where":
        return [1, 2]
    return [0] if name in WHOLE else list(range(count))


def ref_fn(name, param, args):
    return reference(name, param, labels=args[1] if name in WHOLE else None)


def call_ref(name, param, args):
    fn = ref_fn(name, param, args)
    return fn(args[0]) if name in WHOLE else fn(*args)


def ref_vjp(name, param, args, g):
    """Each differentiable operand's VJP with cotangent g, by autograd: grad of <f(args), g>."""
    fn = ref_fn(name, param, args)
    ops = differentiable(name, len(args))

    def loss(*xs):
        full = list(args)
        for i, x in zip(ops, xs):
            full[i] = x
        out = fn(full[0]) if name in WHOLE else fn(*full)
        return anp.sum(out * g)

    xs = [args[i] for i in ops]
    return [grad(loss, k)(*xs) for k in range(len(ops))]


def ref_jvp(name, param, args, tangents):
    """sum_i J_i t_i, J_i autograd's jacobian with respect to operand i."""
    fn = ref_fn(name, param, args)
    total = np.zeros(np.shape(call_ref(name, param, args)))
    for i in differentiable(name, len(args)):
        def f(x, i=i):
            full = list(args)
            full[i] = x
            return fn(full[0]) if name in WHOLE else fn(*full)

        J = jacobian(f)(args[i])
        total = total + np.tensordot(J, tangents[i], axes=np.ndim(tangents[i]))
    return total


def run_forward(name, args, leads, param):
    return ENTRIES[name].forward(np, args, leads, param)


# --- value and VJP against autograd ----------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_value_and_shape_against_autograd(case):
    name, shapes, param = case
    rng = np.random.default_rng(seed_of(case_id(case)))
    args = make_args(name, shapes, rng, param=param)
    out = run_forward(name, args, [0] * len(args), param)
    assert np.shape(out) == ENTRIES[name].shape(shapes, param)
    assert_close(out, call_ref(name, param, args))


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_vjp_against_autograd(case):
    name, shapes, param = case
    rng = np.random.default_rng(1 + seed_of(case_id(case)))
    args = make_args(name, shapes, rng, param=param)
    leads = [0] * len(args)
    out = run_forward(name, args, leads, param)
    g = rng.normal(size=np.shape(out))
    grads = ENTRIES[name].vjp(np, g, out, args, leads, param)
    assert len(grads) == len(args)
    want = ref_vjp(name, param, args, g)
    for i, w in zip(differentiable(name, len(args)), want):
        assert_close(grads[i], w)
    for i in set(range(len(args))) - set(differentiable(name, len(args))):
        assert_close(grads[i], np.zeros(np.shape(args[i])))  # labels: zeros


# --- JVP ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_jvp_against_autograd_jacobian(case):
    name, shapes, param = case
    rng = np.random.default_rng(2 + seed_of(case_id(case)))
    args = make_args(name, shapes, rng, param=param)
    leads = [0] * len(args)
    tangents = [rng.normal(size=np.shape(a)) if i in differentiable(name, len(args)) else None for i, a in enumerate(args)]
    out = run_forward(name, args, leads, param)
    got = ENTRIES[name].jvp(np, tangents, out, args, leads, param)
    assert_close(got, ref_jvp(name, param, args, tangents))


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_jvp_against_finite_differences_and_the_vjp(case):
    name, shapes, param = case
    rng = np.random.default_rng(3 + seed_of(case_id(case)))
    args = make_args(name, shapes, rng, param=param)
    leads = [0] * len(args)
    op = ENTRIES[name]
    tangents = [rng.normal(size=np.shape(a)) if i in differentiable(name, len(args)) else None for i, a in enumerate(args)]
    out = run_forward(name, args, leads, param)
    jv = op.jvp(np, tangents, out, args, leads, param)
    # central differences of the forward (our forward is checked against autograd above)
    h = 1e-6
    moved = [[a + s * h * t if t is not None else a for a, t in zip(args, tangents)] for s in (1, -1)]
    fd = (run_forward(name, moved[0], leads, param) - run_forward(name, moved[1], leads, param)) / (2 * h)
    np.testing.assert_allclose(jv, fd, rtol=1e-6, atol=1e-7)
    # <J v, u> = <v, J^T u>: the JVP and the VJP are one linear map and its transpose
    u = rng.normal(size=np.shape(out))
    grads = op.vjp(np, u, out, args, leads, param)
    lhs = float(np.sum(jv * u))
    rhs = sum(float(np.sum(t * g)) for t, g in zip(tangents, grads) if t is not None)
    assert lhs == pytest.approx(rhs, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("case", [c for c in CASES if ENTRIES[c[0]].arity == 2], ids=case_id)
def test_jvp_with_a_zero_tangent(case):
    """A None tangent counts as zero: each operand's part alone, and zeros for none."""
    name, shapes, param = case
    rng = np.random.default_rng(4)
    args = make_args(name, shapes, rng, param=param)
    leads = [0, 0]
    op = ENTRIES[name]
    out = run_forward(name, args, leads, param)
    none = op.jvp(np, [None, None], out, args, leads, param)
    assert_close(none, np.zeros(np.shape(out)))
    for i in differentiable(name, len(args)):
        tangents = [None, None]
        tangents[i] = rng.normal(size=np.shape(args[i]))
        zeros = [np.zeros(np.shape(a)) for a in args]
        zeros[i] = tangents[i]
        assert_close(op.jvp(np, tangents, out, args, leads, param), ref_jvp(name, param, args, zeros))


# --- the batch axis ---------------------------------------------------------------------------------

N = 3


def lead_patterns(arity):
    return [p for p in itertools.product((0, 1), repeat=arity) if any(p)]


BATCH_CASES = [(c, p) for c in CASES for p in lead_patterns(len(c[1]) if ENTRIES[c[0]].arity == VARIADIC else ENTRIES[c[0]].arity)]


def batch_id(item):
    case, leads = item
    return f"{case_id(case)}-leads{''.join(map(str, leads))}"


def row(a, lead, r):
    return a[r] if lead else a


@pytest.mark.parametrize("item", BATCH_CASES, ids=batch_id)
def test_batched_equals_a_loop_over_rows(item):
    (name, shapes, param), leads = item
    op = ENTRIES[name]
    rng = np.random.default_rng(5 + seed_of(batch_id(item)))
    args = [make_args(name, shapes, rng, (N,) if lead else (), param)[i] for i, lead in enumerate(leads)]
    if name == "cross_entropy":  # labels must be classes of the logits on every row
        classes = shapes[0][-1]
        args[1] = rng.integers(0, classes, size=np.shape(args[1])).astype(np.float64)
    unbatched = [0] * len(args)
    rows = [[row(a, lead, r) for a, lead in zip(args, leads)] for r in range(N)]

    # forward
    out = op.forward(np, args, list(leads), param)
    want = np.stack([np.asarray(run_forward(name, rows[r], unbatched, param)) for r in range(N)])
    assert_close(out, want)

    # VJP: a batched operand's rows are the rows' VJPs; an unbatched one gets their sum
    g = rng.normal(size=np.shape(out))
    grads = op.vjp(np, g, out, args, list(leads), param)
    per_row = [op.vjp(np, g[r], want[r], rows[r], unbatched, param) for r in range(N)]
    for i, lead in enumerate(leads):
        parts = [per_row[r][i] for r in range(N)]
        assert_close(grads[i], np.stack(parts) if lead else np.sum(parts, axis=0))

    # JVP: tangents shaped like their operands
    tangents = [rng.normal(size=np.shape(a)) if i in differentiable(name, len(args)) else None for i, a in enumerate(args)]
    jv = op.jvp(np, tangents, out, args, list(leads), param)
    want_jv = np.stack([
        np.asarray(op.jvp(np, [None if t is None else row(t, lead, r) for t, lead in zip(tangents, leads)],
                          want[r], rows[r], unbatched, param))
        for r in range(N)
    ])
    assert_close(jv, want_jv)


def test_batched_shapes_by_hand():
    """A few batched results whose shapes are reasoned out by hand, not from a loop."""
    rng = np.random.default_rng(6)
    X = rng.normal(size=(7, 4, 3))
    assert ENTRIES["sum"].forward(np, [X], [1], 0).shape == (7, 3)  # per-row axis 0 is array axis 1
    assert ENTRIES["sum"].forward(np, [X], [1], -1).shape == (7, 4)
    assert ENTRIES["sum"].forward(np, [X], [1], None).shape == (7,)
    assert ENTRIES["index"].forward(np, [X], [1], (0,)).shape == (7, 3)  # the batch slice comes first
    assert ENTRIES["@"].forward(np, [rng.normal(size=(7, 3)), rng.normal(size=(7, 3))], [1, 1], None).shape == (7,)
    assert ENTRIES["transpose"].forward(np, [X], [1], None).shape == (7, 3, 4)
    assert ENTRIES["mse"].forward(np, [X, rng.normal(size=(4, 3))], [1, 0], None).shape == (7,)
