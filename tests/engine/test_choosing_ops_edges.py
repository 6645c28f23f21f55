"""The comparisons, where and clip at the points random values never meet, by hand.

* clip at its bounds: the gradient goes to x (PyTorch's clamp; autograd's np.clip gives 0
  there, so it is not the reference); with lo above hi the result is hi and only hi learns;
* where: any number but 0 is true (NaN too, as NumPy's truthiness); the branch not chosen gets
  an exact 0, even where it is infinite;
* comparisons: NaN compares false except with !=; ties both ways; the VJP is zeros, fresh arrays;
* the batch axis: a batched condition with unbatched branches, summed over rows.
"""

import numpy as np
import pytest

from autodiff_cli.engine.registry import ENTRIES


def forward(name, args, leads=None):
    return ENTRIES[name].forward(np, args, leads or [0] * len(args), None)


def vjp(name, g, args, leads=None):
    leads = leads or [0] * len(args)
    out = forward(name, args, leads)
    return ENTRIES[name].vjp(np, np.asarray(g, dtype=float), out, args, leads, None)


def jvp(name, tangents, args, leads=None):
    leads = leads or [0] * len(args)
    out = forward(name, args, leads)
    return ENTRIES[name].jvp(np, tangents, out, args, leads, None)


def arrays(*values):
    return [np.asarray(v, dtype=float) for v in values]


def test_clip_passes_the_gradient_to_x_at_either_bound():
    x, lo, hi = arrays([-1.0, 0.5, 2.0, -3.0, 5.0], -1.0, 2.0)
    assert forward("clip", [x, lo, hi]).tolist() == [-1.0, 0.5, 2.0, -1.0, 2.0]
    gx, glo, ghi = vjp("clip", [1.0, 2.0, 3.0, 4.0, 5.0], [x, lo, hi])
    assert gx.tolist() == [1.0, 2.0, 3.0, 0.0, 0.0]  # at -1 and at 2 (the bounds) x keeps its gradient
    assert float(glo) == 4.0  # only the entry below lo
    assert float(ghi) == 5.0  # only the entry above hi


def test_clip_with_lo_above_hi_is_hi_and_only_hi_learns():
    x, lo, hi = arrays([-5.0, 0.0, 5.0], 1.0, -1.0)
    assert forward("clip", [x, lo, hi]).tolist() == [-1.0, -1.0, -1.0]  # min(max(x, 1), -1), as NumPy
    gx, glo, ghi = vjp("clip", [1.0, 1.0, 1.0], [x, lo, hi])
    assert gx.tolist() == [0.0, 0.0, 0.0] and float(glo) == 0.0 and float(ghi) == 3.0


def test_clip_jvp_follows_the_same_choice():
    x, lo, hi = arrays([-1.0, 0.5, 3.0], [-1.0, -1.0, -1.0], [2.0, 2.0, 2.0])
    tangent = jvp("clip", arrays([10.0, 20.0, 30.0], [1.0, 2.0, 3.0], [100.0, 200.0, 300.0]), [x, lo, hi])
    assert tangent.tolist() == [10.0, 20.0, 300.0]


def test_where_takes_any_nonzero_number_as_true():
    condition, a, b = arrays([0.0, -0.0, 1.0, -2.0, 0.5, np.nan], [1, 2, 3, 4, 5, 6], [-1, -2, -3, -4, -5, -6])
    assert forward("where", [condition, a, b]).tolist() == [-1.0, -2.0, 3.0, 4.0, 5.0, 6.0]


def test_where_gives_the_branch_not_chosen_an_exact_zero_even_where_it_is_infinite():
    condition, a, b = arrays([1.0, 0.0], [1.0, np.inf], [np.nan, 2.0])
    assert forward("where", [condition, a, b]).tolist() == [1.0, 2.0]
    gc, ga, gb = vjp("where", [3.0, 4.0], [condition, a, b])
    assert gc.tolist() == [0.0, 0.0] and ga.tolist() == [3.0, 0.0] and gb.tolist() == [0.0, 4.0]


def test_where_sums_a_broadcast_branch_back():
    condition, a, b = arrays([[1.0, 0.0, 1.0], [0.0, 0.0, 1.0]], 10.0, [1.0, 2.0, 3.0])
    assert forward("where", [condition, a, b]).tolist() == [[10.0, 2.0, 10.0], [1.0, 2.0, 10.0]]
    _, ga, gb = vjp("where", np.ones((2, 3)), [condition, a, b])
    assert float(ga) == 3.0 and gb.tolist() == [1.0, 2.0, 0.0]


@pytest.mark.parametrize("name, want", [("<", [0, 1, 0, 0, 0]), ("<=", [1, 1, 0, 0, 0]), (">", [0, 0, 1, 0, 0]),
                                        (">=", [1, 0, 1, 0, 0]), ("==", [1, 0, 0, 0, 0]), ("!=", [0, 1, 1, 1, 1])])
def test_comparisons_at_ties_and_nan(name, want):
    x, y = arrays([1.0, -0.0, 2.0, np.nan, np.nan], [1.0, 0.5, 0.0, 0.0, np.nan])
    assert forward(name, [x, y]).tolist() == want
    gx, gy = vjp(name, np.ones(5), [x, y])
    assert gx.tolist() == [0.0] * 5 and gy.tolist() == [0.0] * 5
    gx[0] = 7.0  # fresh arrays: the executors may add into them
    assert gy[0] == 0.0


def test_zero_and_minus_zero_are_equal():
    assert forward("==", arrays(0.0, -0.0)).tolist() == 1.0


def test_a_batched_condition_with_unbatched_branches_sums_over_rows():
    condition = np.array([[1.0, 0.0], [0.0, 0.0], [1.0, 1.0]])  # three rows of a [2] condition
    a, b = arrays([1.0, 2.0], [5.0, 6.0])
    out = forward("where", [condition, a, b], [1, 0, 0])
    assert out.tolist() == [[1.0, 6.0], [5.0, 6.0], [1.0, 2.0]]
    _, ga, gb = vjp("where", np.ones((3, 2)), [condition, a, b], [1, 0, 0])
    assert ga.tolist() == [2.0, 1.0] and gb.tolist() == [1.0, 2.0]
