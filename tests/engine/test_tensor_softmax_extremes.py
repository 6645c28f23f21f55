"""The softmax family at extreme logits, against mpmath at 400 digits.

softmax, log_softmax, logsumexp and cross_entropy: value, VJP and JVP, one row at a time and
as rows of a batch (``leads`` 1, as the executor runs them over rows), at +-1e308, +-1e16,
equal and very unequal entries.  The reference is the definition itself, in mpmath's
arbitrary precision and exponent range, rounded to a float at the end: a true value beyond
the floats (-2e308) is an infinity, one below them 0.  400 digits hold 1 + e^-700 and
1e308 + log 2 apart from 1 and 1e308; the row's max is taken out first (exactly: a shift
changes no softmax), so that no exp is of a number beyond the floats.

Each entry must agree to a few units in the last place of the true value, so a loss of
relative precision shows: cross_entropy([1e16, 1e16], 0) was 0 (the answer is log 2), the
gradient of logsumexp at [1e16, 1e16] was [1, 1] (it is softmax, [1/2, 1/2]), and
log_softmax([0, -30])[0] is -9.36e-14, which log(1 + 9.36e-14) in floats gets only to 3 digits.
"""

import math
import warnings

import mpmath
import numpy as np
import pytest

from autodiff_cli.engine.registry import ENTRIES

mpmath.mp.dps = 400

ROWS = [
    [1e308, 1e308],
    [-1e308, -1e308],
    [1e308, -1e308],
    [-1e308, 1e308, 0.0],
    [1e16, 1e16],
    [-1e16, -1e16],
    [1e16, -1e16],
    [1e16, 1e16 + 2.0, 1e16],
    [5.0, 5.0, 5.0],
    [0.0, -30.0],
    [-30.0, 0.0, -35.0],
    [0.0, -700.0],
    [0.0, -40.0, -80.0],
    [700.0, 0.0],
    [1.0],
    [-1e308],
]

REL = 1e-13  # a few units in the last place, for rows of up to three entries


def exact_softmax(row):
    """(logsumexp, softmax, log_softmax) of a row, exactly (to 400 digits)."""
    m = mpmath.mpf(max(row))
    shifted = [mpmath.mpf(v) - m for v in row]  # exact: 1e308 - -1e308 is 2e308 in mpmath
    log_total = mpmath.log(mpmath.fsum(mpmath.exp(d) for d in shifted))
    return m + log_total, [mpmath.exp(d - log_total) for d in shifted], [d - log_total for d in shifted]


def as_float(values):
    return np.array([float(v) for v in values]) if isinstance(values, list) else float(values)


def agree(got, want):
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape, (got.shape, want.shape)
    for g, w in zip(got.ravel(), want.ravel()):
        if math.isinf(w) or w == 0.0:
            assert g == w, (got, want)
        else:
            assert abs(g - w) <= REL * abs(w), (got, want)


def run(name, rows, leads, g=None, t=None):
    """The op's value, VJP (with cotangent g) and JVP (with tangent t), no NumPy warning."""
    op = ENTRIES[name]
    x = np.array(rows)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = op.forward(np, [x], [leads], None)
        vjp = None if g is None else op.vjp(np, np.array(g), out, [x], [leads], None)[0]
        jvp = None if t is None else op.jvp(np, [np.array(t)], out, [x], [leads], None)
    return out, vjp, jvp


def one_hot(n, k):
    return [1.0 if i == k else 0.0 for i in range(n)]


@pytest.mark.parametrize("row", ROWS, ids=str)
def test_values_agree_with_mpmath(row):
    lse, p, logp = exact_softmax(row)
    agree(run("logsumexp", row, 0)[0], float(lse))
    agree(run("softmax", row, 0)[0], as_float(p))
    agree(run("log_softmax", row, 0)[0], as_float(logp))
    for label in range(len(row)):
        ce = run_ce([row], [float(label)], 0)[0]
        agree(ce, float(-logp[label]))


@pytest.mark.parametrize("row", ROWS, ids=str)
def test_derivatives_along_each_axis_agree_with_mpmath(row):
    """Cotangents and tangents one-hot: each entry of the Jacobian, where 1 - p must keep its digits."""
    lse, p, logp = exact_softmax(row)
    n = len(row)
    for k in range(n):
        e = one_hot(n, k)
        # logsumexp: gradient p, directional derivative p_k
        agree(run("logsumexp", row, 0, g=1.0)[1], as_float(p))
        agree(run("logsumexp", row, 0, t=e)[2], float(p[k]))
        # softmax: J = diag(p) - p p^T (symmetric), column k
        column = [(p[i] if i == k else 0) - p[i] * p[k] for i in range(n)]
        agree(run("softmax", row, 0, g=e)[1], as_float(column))
        agree(run("softmax", row, 0, t=e)[2], as_float(column))
        # log_softmax: d out_i / d x_j = [i = j] - p_j
        agree(run("log_softmax", row, 0, g=e)[1], as_float([(1 if j == k else 0) - p[j] for j in range(n)]))
        agree(run("log_softmax", row, 0, t=e)[2], as_float([(1 if i == k else 0) - p[k] for i in range(n)]))
        # cross_entropy with label k: softmax - onehot
        agree(run_ce([row], [float(k)], 0, g=1.0)[1], [as_float([p[j] - (1 if j == k else 0) for j in range(n)])])
        agree(run_ce([row], [float(k)], 0, t=[e])[2], float(p[k] - 1))


def run_ce(logits, labels, leads, g=None, t=None):
    op = ENTRIES["cross_entropy"]
    x, y = np.array(logits), np.array(labels)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = op.forward(np, [x, y], [leads, leads], None)
        vjp = None if g is None else op.vjp(np, np.array(g), out, [x, y], [leads, leads], None)[0]
        jvp = None if t is None else op.jvp(np, [np.array(t), None], out, [x, y], [leads, leads], None)
    return out, vjp, jvp


def test_cross_entropy_of_equal_huge_logits_is_log_2():
    assert run_ce([1e16, 1e16], 0.0, 0)[0] == pytest.approx(math.log(2.0), rel=1e-15)
    assert run_ce([1e15, 1e15], 0.0, 0)[0] == pytest.approx(math.log(2.0), rel=1e-15)


def test_the_gradient_of_logsumexp_at_huge_equal_logits_is_one_half():
    for big in (1e16, 1e308, -1e308):
        assert list(run("logsumexp", [big, big], 0, g=1.0)[1]) == [0.5, 0.5]


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "logsumexp"])
def test_rows_of_a_batch_agree_with_mpmath(name):
    """The same rows, of one length, as the rows of a batch (leads 1): each row on its own."""
    rows = [row for row in ROWS if len(row) == 2]
    g = [[1.0, 0.0] for _ in rows] if name != "logsumexp" else [1.0] * len(rows)
    t = [[0.0, 1.0] for _ in rows]
    out, vjp, jvp = run(name, rows, 1, g=g, t=t)
    for i, row in enumerate(rows):
        lse, p, logp = exact_softmax(row)
        if name == "logsumexp":
            agree(out[i], float(lse))
            agree(vjp[i], as_float(p))
            agree(jvp[i], float(p[1]))
        elif name == "softmax":
            agree(out[i], as_float(p))
            agree(vjp[i], as_float([p[0] - p[0] * p[0], -p[1] * p[0]]))
            agree(jvp[i], as_float([-p[0] * p[1], p[1] - p[1] * p[1]]))
        else:
            agree(out[i], as_float(logp))
            agree(vjp[i], as_float([1 - p[0], -p[1]]))
            agree(jvp[i], as_float([-p[1], 1 - p[1]]))


def test_cross_entropy_over_a_batch_agrees_with_mpmath():
    """Logits [2, 2] per row (two examples a row), over a batch of rows; the mean per row."""
    rows = [[[1e16, 1e16], [0.0, -30.0]], [[1e308, -1e308], [-1e308, -1e308]], [[0.0, -700.0], [1e16, -1e16]]]
    labels = [[0.0, 0.0], [0.0, 0.0], [0.0, 1.0]]  # (label 1 of [1e308, -1e308] would lose 2e308: an overflow)
    out, vjp, _ = run_ce(rows, labels, 1, g=[1.0, 1.0, 1.0])
    for i, (examples, ys) in enumerate(zip(rows, labels)):
        losses, grads = [], []
        for row, y in zip(examples, ys):
            _, p, logp = exact_softmax(row)
            losses.append(-logp[int(y)])
            grads.append(as_float([(p[j] - (1 if j == int(y) else 0)) / 2 for j in range(2)]))
        agree(out[i], float((losses[0] + losses[1]) / 2))
        agree(vjp[i], grads)
