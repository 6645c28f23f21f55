"""The NumPy forms ``diff --format python`` writes for a tensor program, held to the kernels they
stand for: every op entry's ``numpy`` form, run with its ``numpy_helpers`` as the generated module
defines them, gives the bits the executor's kernel gives, tails included (|x| up to 700, where
exp over- and underflows), so the two cannot drift apart again (sigmoid once did, by 1e-18 at -40)."""

from __future__ import annotations

import numpy as np
import pytest

from autodiff_cli.engine.ops import OPS
from autodiff_cli.engine.registry import ENTRIES
from autodiff_cli.engine.registry import numpy_form as written_call
from autodiff_cli.engine.tensor_ops import VARIADIC, Arguments

STRUCTURAL = {name: op for name, op in ENTRIES.items() if not op.elementwise}  # the ops that are not elementwise

FUNCTIONS = sorted(name for name, op in OPS.items() if op.is_function)
NUMPY_TENSOR_OPS = sorted(name for name, op in STRUCTURAL.items() if op.numpy is not None and op.arity)


def numpy_form(entry, operands=("x", "y", "z"), param=None):
    """A function computing the entry's NumPy form with its arguments (``param``, as the
    compiler makes it), with the helpers it calls defined as the generated module defines them."""
    namespace = {"np": np}
    for _, source in entry.numpy_helpers:
        exec(compile(source, "<helper>", "exec"), namespace)  # noqa: S102 - the registry's own text
    call = written_call(entry.name, operands if entry.arity == VARIADIC else operands[:entry.arity], param)
    return lambda **values: eval(call, namespace, values)  # noqa: S307


def tails() -> np.ndarray:
    grid = np.concatenate([np.linspace(-700.0, 700.0, 14001), np.linspace(-40.0, 40.0, 8001),
                           [0.0, -0.0, 5e-324, -5e-324, 1e-300, -1e-300, 709.78, -745.2, 1e308, -1e308]])
    return grid


def same_bits(got, want) -> None:
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape
    differ = ~((got == want) | (np.isnan(got) & np.isnan(want)))
    assert not differ.any(), f"{int(differ.sum())} entries differ, first at {np.flatnonzero(differ)[:3]}"


def test_every_function_has_a_numpy_form() -> None:
    assert FUNCTIONS and all(OPS[name].numpy for name in FUNCTIONS)


@pytest.mark.parametrize("name", FUNCTIONS)
def test_a_functions_numpy_form_gives_its_kernels_bits(name: str) -> None:
    x = tails()
    with np.errstate(all="ignore"):  # log and sqrt of negatives, exp's overflow: NaN and inf in both
        want, _ = OPS[name].vector(np, x)
        got = numpy_form(OPS[name])(x=x)
    same_bits(got, want)


@pytest.mark.parametrize("name", ["maximum", "minimum"])
def test_the_two_operand_calls_numpy_forms_give_their_kernels_bits(name: str) -> None:
    x = tails()
    y = np.roll(x, 7)
    y[::5] = x[::5]  # ties
    y[3] = np.nan
    want, _ = OPS[name].vector(np, x, y)
    same_bits(numpy_form(OPS[name])(x=x, y=y), want)


def test_sigmoid_keeps_its_smallest_values() -> None:
    """The drift that was: 0.5 * (1 + tanh(x/2)) is 0.0 at -40, where sigmoid is 4.25e-18."""
    got = numpy_form(OPS["sigmoid"])(x=np.array([-40.0, -700.0]))
    assert got[0] == pytest.approx(1.0 / (1.0 + np.exp(40.0)), rel=1e-15)
    assert 0.0 < got[1] < 1e-300


def _forward(name: str, args, param=None):
    return ENTRIES[name].forward(np, args, (0,) * len(args), param)


@pytest.mark.parametrize("name", ["sum", "mean", "max", "min"])
@pytest.mark.parametrize("axis", [None, 0, 1, -1, Arguments((1, True)), Arguments((None, True)),
                                  Arguments((-2, True))])
def test_a_reductions_numpy_form_gives_its_kernels_bits(name: str, axis) -> None:
    x = np.random.default_rng(4).normal(0.0, 3.0, (5, 7))
    if isinstance(axis, Arguments):  # keepdim: the reduced axis stays, of size 1
        want_shape = np.sum(x, axis=axis[0], keepdims=True).shape
        assert numpy_form(ENTRIES[name], param=axis)(x=x).shape == want_shape
    same_bits(numpy_form(ENTRIES[name], param=axis)(x=x), _forward(name, [x], axis))


def logits(scale: float) -> np.ndarray:
    x = np.random.default_rng(5).normal(0.0, scale, (8, 4))
    x[0] = 0.0  # a row of ties
    x[1] = [1e16, 1e16, 1e16 - 4.0, -1e16]  # close together and enormous: log 2 must survive
    x[2] = [1e308, 1e308, -1e308, 0.0]  # the float range's ends
    x[3] = [-1e308, -1e308, -1e308, -1e308]
    return x


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "logsumexp"])
@pytest.mark.parametrize("scale", [1.0, 30.0, 700.0])
def test_the_softmax_familys_numpy_forms_give_their_kernels_bits(name: str, scale: float) -> None:
    x = logits(scale)
    with np.errstate(over="ignore"):  # -1e308 - 1e308 is -inf in both, whose exp is the right 0
        got, want = numpy_form(ENTRIES[name])(x=x), _forward(name, [x])
    same_bits(got, want)


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "logsumexp"])
@pytest.mark.parametrize("axis", [0, -2, 1])
def test_the_softmax_familys_numpy_forms_along_an_axis_give_their_kernels_bits(name: str, axis: int) -> None:
    x = np.concatenate([logits(30.0), logits(700.0)]).T.reshape(2, 4, 8)  # the rows of ties run along axis 1
    with np.errstate(over="ignore"):
        got, want = numpy_form(ENTRIES[name], param=axis)(x=x), _forward(name, [x], axis)
    same_bits(got, want)


@pytest.mark.parametrize("axis", [None, 0, 1, -1, -2])
def test_cumsums_numpy_form_gives_its_kernels_bits(axis) -> None:
    x = np.random.default_rng(32).normal(0.0, 1e300, (5, 7))  # large: some totals overflow, in both
    x[2] = [1e308, 1e308, -1e308, 1.0, -1e308, 0.0, 5e-324]
    with np.errstate(over="ignore", invalid="ignore"):
        got, want = numpy_form(ENTRIES["cumsum"], param=axis)(x=x), _forward("cumsum", [x], axis)
    assert got.shape == x.shape  # never flattened, as np.cumsum without an axis would
    same_bits(got, want)


def test_the_losses_numpy_forms_give_their_kernels_bits() -> None:
    rng = np.random.default_rng(6)
    x, y = rng.normal(0.0, 5.0, (8, 3)), rng.normal(0.0, 5.0, (8, 3))
    same_bits(numpy_form(ENTRIES["mse"])(x=x, y=y), _forward("mse", [x, y]))
    x = logits(5.0)
    labels = np.array([0, 1, 0, 3, 2, 1, 0, 3], dtype=np.float64)
    with np.errstate(over="ignore"):
        same_bits(numpy_form(ENTRIES["cross_entropy"])(x=x, y=labels), _forward("cross_entropy", [x, labels]))


def test_transpose_numpy_form() -> None:
    x = np.arange(6.0).reshape(2, 3)
    same_bits(numpy_form(ENTRIES["transpose"])(x=x), _forward("transpose", [x]))


COMPARISONS = ["<", "<=", ">", ">=", "==", "!="]


def edge_values() -> np.ndarray:
    """Ties, signed zeros, NaN, infinities and the tails, for the choosing ops."""
    return np.concatenate([tails()[::50], [0.0, -0.0, np.nan, np.inf, -np.inf, 1.0, 1.0, -1.0]])


@pytest.mark.parametrize("name", COMPARISONS)
def test_a_comparisons_numpy_form_gives_its_kernels_bits(name: str) -> None:
    x = edge_values()
    y = np.roll(x, 3)
    y[::4] = x[::4]  # every fourth entry a tie (NaN against NaN compares as NumPy says)
    same_bits(numpy_form(ENTRIES[name])(x=x, y=y), _forward(name, [x, y]))
    same_bits(numpy_form(ENTRIES[name])(x=1.5, y=x), _forward(name, [np.float64(1.5), x]))


def test_the_choosing_ops_numpy_forms_give_their_kernels_bits() -> None:
    x = edge_values()
    rng = np.random.default_rng(7)
    lo, hi = rng.normal(0.0, 3.0, x.shape), rng.normal(0.0, 3.0, x.shape)
    lo[:10], hi[:10] = x[:10], x[:10]  # ties with each bound
    with np.errstate(invalid="ignore"):
        same_bits(numpy_form(ENTRIES["clip"])(x=x, y=lo, z=hi), _forward("clip", [x, lo, hi]))
        same_bits(numpy_form(ENTRIES["clip"])(x=x, y=-1.0, z=2.0), _forward("clip", [x, np.float64(-1.0), np.float64(2.0)]))
    condition = rng.choice([0.0, -0.0, 1.0, np.nan, 0.5], x.shape)
    same_bits(numpy_form(ENTRIES["where"])(x=condition, y=x, z=lo), _forward("where", [condition, x, lo]))


@pytest.mark.parametrize("name, axis", [("stack", None), ("stack", 1), ("stack", -1), ("concat", None),
                                        ("concat", 1)])
def test_the_joining_ops_numpy_forms_give_their_kernels_bits(name: str, axis) -> None:
    x, y, z = np.random.default_rng(8).normal(0.0, 3.0, (3, 2, 4))
    same_bits(numpy_form(ENTRIES[name], param=axis)(x=x, y=y, z=z), _forward(name, [x, y, z], axis))


@pytest.mark.parametrize("index_shape", [(4,), (2, 3), (), (0,)])
def test_the_index_tensor_ops_numpy_forms_give_their_kernels_bits(index_shape) -> None:
    """gather, pick and scatter at random whole-number indices, negative ones and repeats among them."""
    rng = np.random.default_rng(7)
    table = rng.normal(0.0, 3.0, (5, 2, 3))
    index = rng.integers(-5, 5, size=index_shape).astype(np.float64)
    same_bits(numpy_form(ENTRIES["gather"])(x=table, y=index), _forward("gather", [table, index]))
    values = rng.normal(0.0, 3.0, index_shape + (5, 2))
    same_bits(numpy_form(ENTRIES["pick"])(x=values, y=index), _forward("pick", [values, index]))
    g = rng.normal(0.0, 3.0, index_shape + (2,))
    same_bits(numpy_form(ENTRIES["scatter"], param=5)(x=g, y=index), _forward("scatter", [g, index], 5))


@pytest.mark.parametrize("shape", [(3, -1), (-1,), (2, 1, 2, 3), (12, 1)])
def test_reshape_numpy_form(shape) -> None:
    x = np.random.default_rng(7).normal(0.0, 3.0, (4, 3))
    got = numpy_form(ENTRIES["reshape"], param=shape)(x=x)
    assert got.shape == np.reshape(x, shape).shape
    same_bits(got, _forward("reshape", [x], shape))


@pytest.mark.parametrize("name", ["var", "std"])
@pytest.mark.parametrize("param", [None, 0, -1, Arguments((1, True, 1)), Arguments((0, False, 0)),
                                   Arguments((None, True, 2))])
def test_the_spreads_numpy_forms_give_their_kernels_bits(name: str, param) -> None:
    x = np.random.default_rng(8).normal(0.0, 3.0, (5, 7))
    x[0] *= 1e150  # large enough for the squares to overflow in one row: inf in both
    with np.errstate(over="ignore", invalid="ignore"):
        same_bits(numpy_form(ENTRIES[name], param=param)(x=x), _forward(name, [x], param))


def test_the_no_gradient_ops_numpy_forms_give_their_kernels_bits() -> None:
    x = np.random.default_rng(9).normal(0.0, 3.0, (4, 5))
    x[1, 3] = x[1, 0] = 50.0  # a tie: the first index
    for name in ("ones_like", "zeros_like"):
        same_bits(numpy_form(ENTRIES[name])(x=x), _forward(name, [x]))
    for param in (None, 0, 1, -1, Arguments((1, True)), Arguments((None, True))):
        same_bits(numpy_form(ENTRIES["argmax"], param=param)(x=x), _forward("argmax", [x], param))
    labels = np.array([[0.0, 3.0, 2.0], [1.0, 1.0, 0.0]])
    same_bits(numpy_form(ENTRIES["one_hot"], param=4)(x=labels), _forward("one_hot", [labels], 4))


def test_every_tensor_op_with_a_numpy_form_is_tested_here() -> None:
    tested = {"sum", "mean", "max", "min", "softmax", "log_softmax", "logsumexp", "mse", "cross_entropy", "transpose",
              "where", "clip", *COMPARISONS, "stack", "concat", "gather", "pick", "scatter",
              "reshape", "var", "std", "ones_like", "zeros_like", "argmax", "one_hot", "cumsum"}
    assert set(NUMPY_TENSOR_OPS) <= tested, sorted(set(NUMPY_TENSOR_OPS) - tested)
