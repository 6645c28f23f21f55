"""Shape rules: every ShapeMismatch message and hint, word for word, and the result shapes.

The message starts with the operand shapes ("[4, 3] @ [2, 1]: ..."); the language layer puts
the expression and its line:column in front.  Each error is raised by the op's ``shape`` and
by its ``forward`` alike (never a NumPy traceback), and cross_entropy's bad labels are a
DomainError naming the label.
"""

import numpy as np
import pytest

from autodiff_cli.engine.ops import DomainError
from autodiff_cli.engine.registry import ENTRIES
from autodiff_cli.engine.tensor_ops import ShapeMismatch, broadcast_shape, elementwise_forward, format_shape

S = slice

SHAPE_HINT_MATMUL = "the columns of the left operand must match the rows of the right one; transpose(...) one of them?"
BROADCAST_HINT = ("broadcasting lines the axes up from the right, and the two sizes there must be equal "
                  "or one of them 1; transpose(...) or index one operand to make them fit")

# (op, per-row shapes, param, message, hint)
ERRORS = [
    # @
    ("@", [(4, 3), (2, 1)], None, "[4, 3] @ [2, 1]: the inner sizes 3 and 2 differ", SHAPE_HINT_MATMUL),
    ("@", [(2, 3), (2,)], None, "[2, 3] @ [2]: the inner sizes 3 and 2 differ", SHAPE_HINT_MATMUL),
    ("@", [(3,), (4, 2)], None, "[3] @ [4, 2]: the inner sizes 3 and 4 differ", SHAPE_HINT_MATMUL),
    ("@", [(3,), (4,)], None, "[3] @ [4]: the inner sizes 3 and 4 differ",
     "a dot product takes two vectors of the same length"),
    ("@", [(), (3,)], None, "[] @ [3]: @ takes vectors and matrices, and the left operand is a scalar",
     "use * to multiply by a scalar"),
    ("@", [(3, 2), ()], None, "[3, 2] @ []: @ takes vectors and matrices, and the right operand is a scalar",
     "use * to multiply by a scalar"),
    ("@", [(2, 3, 4), (4,)], None, "[2, 3, 4] @ [4]: @ takes vectors and matrices, and the left operand has 3 axes",
     "index or reduce the extra axes first (e.g. x[0] or sum(x, 0))"),
    ("@", [(4,), (1, 4, 2)], None, "[4] @ [1, 4, 2]: @ takes vectors and matrices, and the right operand has 3 axes",
     "index or reduce the extra axes first (e.g. x[0] or sum(x, 0))"),
    # transpose
    ("transpose", [()], None, "[]: transpose takes a matrix (2 axes), not a scalar",
     "a scalar is its own transpose; drop transpose(...)"),
    ("transpose", [(3,)], None, "[3]: transpose takes a matrix (2 axes), not a vector",
     "a vector has no orientation: use it as it is on either side of @ (v @ W or W @ v)"),
    ("transpose", [(2, 3, 4)], None, "[2, 3, 4]: transpose takes a matrix (2 axes), not a tensor of 3 axes",
     "index the extra axes away first (e.g. x[0])"),
    # softmax family
    ("softmax", [()], None, "[]: softmax works along the last axis, and a scalar has none",
     "give softmax a vector (or a matrix, one softmax per row)"),
    ("log_softmax", [()], None, "[]: log_softmax works along the last axis, and a scalar has none",
     "give log_softmax a vector (or a matrix, one log_softmax per row)"),
    ("logsumexp", [()], None, "[]: logsumexp works along the last axis, and a scalar has none",
     "give logsumexp a vector (or a matrix, one logsumexp per row)"),
    # index
    ("index", [(3,)], (5,), "[3]: index 5 is out of range for an axis of size 3",
     "indices of an axis of size 3 run from 0 to 2, or from -3 to -1 counting from the end"),
    ("index", [(3,)], (-4,), "[3]: index -4 is out of range for an axis of size 3",
     "indices of an axis of size 3 run from 0 to 2, or from -3 to -1 counting from the end"),
    ("index", [(3, 4)], (0, 4), "[3, 4]: index 4 is out of range for an axis of size 4",
     "indices of an axis of size 4 run from 0 to 3, or from -4 to -1 counting from the end"),
    ("index", [(3, 4)], (S(None), -5), "[3, 4]: index -5 is out of range for an axis of size 4",
     "indices of an axis of size 4 run from 0 to 3, or from -4 to -1 counting from the end"),
    ("index", [(0,)], (0,), "[0]: index 0 is out of range for an axis of size 0",
     "the axis is empty: it has no element to take"),
    ("index", [(3,)], (0, 0), "[3]: 2 indices for 1 axis", "index each axis at most once: a shape [3] takes up to 1 index"),
    ("index", [(3, 4)], (0, 1, 2), "[3, 4]: 3 indices for 2 axes",
     "index each axis at most once: a shape [3, 4] takes up to 2 indices"),
    ("index", [()], (0,), "[]: a scalar has no axes to index", "drop the [...]: a scalar is already one number"),
    ("index", [(5,)], (S(None, None, 0),), "[5]: a slice step cannot be 0",
     "use a positive step (x[::2]) or a negative one (x[::-1])"),
    # mse
    ("mse", [(4, 1), (4,)], None, "[4, 1] and [4]: mse needs two tensors of the same shape",
     "mse does not broadcast: here it would compare every pair; take the left operand's column as a vector with [:, 0]"),
    ("mse", [(4,), (4, 1)], None, "[4] and [4, 1]: mse needs two tensors of the same shape",
     "mse does not broadcast: here it would compare every pair; take the right operand's column as a vector with [:, 0]"),
    ("mse", [(3,), (4,)], None, "[3] and [4]: mse needs two tensors of the same shape",
     "mse compares element by element and never broadcasts; give both operands the same shape"),
    ("mse", [(), (3,)], None, "[] and [3]: mse needs two tensors of the same shape",
     "mse compares element by element and never broadcasts; give both operands the same shape"),
    ("mse", [(2, 3), (3, 2)], None, "[2, 3] and [3, 2]: mse needs two tensors of the same shape",
     "mse compares element by element and never broadcasts; give both operands the same shape"),
    # cross_entropy
    ("cross_entropy", [(), ()], None, "[] and []: the logits are a scalar; cross_entropy needs a class axis (the last)",
     "give the logits as a vector of C class scores, or a matrix [N, C] with one row per example"),
    ("cross_entropy", [(5, 3), (3,)], None, "[5, 3] and [3]: logits [5, 3] need labels of shape [5]",
     "one integer class label per row of logits: logits [N, C] take labels [N], logits [C] one label []"),
    ("cross_entropy", [(3,), (1,)], None, "[3] and [1]: logits [3] need labels of shape []",
     "one integer class label per row of logits: logits [N, C] take labels [N], logits [C] one label []"),
    ("cross_entropy", [(5, 3), (5, 3)], None, "[5, 3] and [5, 3]: logits [5, 3] need labels of shape [5]",
     "the labels are class numbers 0 to C-1, one per row of logits, not one-hot rows; "
     "for one-hot targets Y write -mean(sum(Y * log_softmax(X), -1))"),
]
for _name in ("sum", "mean", "max", "min"):
    ERRORS += [
        (_name, [(4, 3)], 2, "[4, 3]: axis 2 is out of range for 2 axes",
         "the axes of [4, 3] are 0 to 1, or -2 to -1 counting from the end"),
        (_name, [(4, 3)], -3, "[4, 3]: axis -3 is out of range for 2 axes",
         "the axes of [4, 3] are 0 to 1, or -2 to -1 counting from the end"),
        (_name, [(5,)], 1, "[5]: axis 1 is out of range for 1 axis",
         "the axes of [5] are 0 to 0, or -1 to -1 counting from the end"),
        (_name, [()], 0, "[]: axis 0 is out of range: a scalar has no axes",
         f"{_name}(x) without an axis reduces all elements; a scalar needs no {_name}"),
    ]
for _name in ("max", "min"):
    ERRORS += [
        (_name, [(0,)], None, "[0]: %s of no elements has no value" % _name, f"{_name} needs at least one element"),
        (_name, [(2, 0)], 1, f"[2, 0]: {_name} along axis 1 of size 0 has no value",
         f"{_name} needs at least one element along the axis"),
        (_name, [(2, 0)], -1, f"[2, 0]: {_name} along axis -1 of size 0 has no value",
         f"{_name} needs at least one element along the axis"),
    ]


def error_id(case):
    name, shapes, param, _, _ = case
    return f"{name}-{'x'.join(str(list(s)) for s in shapes)}-{param}"


@pytest.mark.parametrize("case", ERRORS, ids=error_id)
def test_shape_error_message_and_hint(case):
    name, shapes, param, message, hint = case
    with pytest.raises(ShapeMismatch) as caught:
        ENTRIES[name].shape(shapes, param)
    assert caught.value.message == message
    assert str(caught.value) == message
    assert caught.value.hint == hint


def operands(name, shapes, batch=()):
    args = [np.ones(batch + tuple(s)) for s in shapes]
    if name == "cross_entropy":
        args[1] = np.zeros(np.shape(args[1]))
    return args


@pytest.mark.parametrize("batched", [False, True])
@pytest.mark.parametrize("case", ERRORS, ids=error_id)
def test_forward_raises_the_same_error(case, batched):
    """Forward checks per-row shapes too, batched or not: never a NumPy error or a silent broadcast."""
    name, shapes, param, message, hint = case
    args = operands(name, shapes, (2,) if batched else ())
    with pytest.raises(ShapeMismatch) as caught:
        ENTRIES[name].forward(np, args, [int(batched)] * len(args), param)
    assert (caught.value.message, caught.value.hint) == (message, hint)


def test_the_classic_silent_bug_is_caught_batched():
    """mse of a batched [N, 1] column against a batched [N] vector: per-row [1] against []."""
    with pytest.raises(ShapeMismatch) as caught:
        ENTRIES["mse"].forward(np, [np.ones((5, 1)), np.ones(5)], [1, 1], None)
    assert caught.value.message == "[1] and []: mse needs two tensors of the same shape"
    assert caught.value.hint == ("mse does not broadcast: here it would compare every pair; "
                                 "take the left operand's column as a vector with [0]")


# (op, per-row shapes, param, expected per-row shape), reasoned out by hand
SHAPES = [
    ("@", [(3,), (3,)], None, ()),
    ("@", [(3,), (3, 4)], None, (4,)),
    ("@", [(2, 3), (3,)], None, (2,)),
    ("@", [(2, 3), (3, 4)], None, (2, 4)),
    ("sum", [(2, 3, 4)], None, ()),
    ("sum", [(2, 3, 4)], 1, (2, 4)),
    ("mean", [(2, 3, 4)], -1, (2, 3)),
    ("max", [(2, 3, 4)], -3, (3, 4)),
    ("min", [(5,)], 0, ()),
    ("sum", [()], None, ()),
    ("transpose", [(2, 5)], None, (5, 2)),
    ("softmax", [(2, 5)], None, (2, 5)),
    ("log_softmax", [(5,)], None, (5,)),
    ("logsumexp", [(2, 5)], None, (2,)),
    ("logsumexp", [(5,)], None, ()),
    ("index", [(5,)], (S(None, None, 2),), (3,)),
    ("index", [(5,)], (S(4, 0, -2),), (2,)),
    ("index", [(5,)], (S(10, 20),), (0,)),
    ("index", [(3, 4)], (-1,), (4,)),
    ("index", [(3, 4)], (S(None), 2), (3,)),
    ("index", [(3, 4)], (1, 2), ()),
    ("index", [(2, 3, 4)], (S(None, None, -1), 0), (2, 4)),
    ("mse", [(3, 4), (3, 4)], None, ()),
    ("cross_entropy", [(5, 3), (5,)], None, ()),
    ("cross_entropy", [(3,), ()], None, ()),
]


@pytest.mark.parametrize("case", SHAPES, ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}")
def test_result_shapes(case):
    name, shapes, param, want = case
    assert ENTRIES[name].shape(shapes, param) == want
    out = ENTRIES[name].forward(np, operands(name, shapes), [0] * len(shapes), param)
    assert np.shape(out) == want
    out = ENTRIES[name].forward(np, operands(name, shapes, (4,)), [1] * len(shapes), param)
    assert np.shape(out) == (4,) + want


def test_format_shape():
    assert format_shape(()) == "[]"
    assert format_shape((4,)) == "[4]"
    assert format_shape((4, 3)) == "[4, 3]"


def test_broadcast_shape_follows_numpy():
    assert broadcast_shape([(2, 3), (3,)]) == (2, 3)
    assert broadcast_shape([(4, 1), (4,)]) == (4, 4)  # NumPy's rule; mse is the op that refuses it
    assert broadcast_shape([(), (2, 3)]) == (2, 3)
    assert broadcast_shape([(1, 3), (2, 1)]) == (2, 3)
    assert broadcast_shape([(5,)]) == (5,)
    assert broadcast_shape([(), ()]) == ()


def test_broadcast_shape_errors():
    with pytest.raises(ShapeMismatch) as caught:
        broadcast_shape([(3,), (4,)])
    assert caught.value.message == "[3] and [4]: sizes 3 and 4 cannot broadcast"
    assert caught.value.hint == BROADCAST_HINT
    with pytest.raises(ShapeMismatch) as caught:
        broadcast_shape([(2, 3), (4, 1)])
    assert caught.value.message == "[2, 3] and [4, 1]: sizes 2 and 4 cannot broadcast"
    with pytest.raises(ShapeMismatch) as caught:  # batched operands: per-row shapes are what clash
        elementwise_forward(np, "+", [np.ones((6, 3)), np.ones((6, 4))], [1, 1], None)
    assert caught.value.message == "[3] and [4]: sizes 3 and 4 cannot broadcast"


def test_shape_mismatch_pickles_whole():
    import pickle

    error = pickle.loads(pickle.dumps(ShapeMismatch("[3] and [4]: sizes 3 and 4 cannot broadcast", "a hint")))
    assert (error.message, error.hint) == ("[3] and [4]: sizes 3 and 4 cannot broadcast", "a hint")


# --- cross_entropy's labels: values, not shapes --------------------------------------------------------

LABEL_ERRORS = [
    (3.0, "label 3 is not a class: the logits have 3 classes, so a label is an integer from 0 to 2"),
    (-1.0, "label -1 is not a class: the logits have 3 classes, so a label is an integer from 0 to 2"),
    (1.5, "label 1.5 is not a class: the logits have 3 classes, so a label is an integer from 0 to 2"),
    (np.nan, "label nan is not a class: the logits have 3 classes, so a label is an integer from 0 to 2"),
    (np.inf, "label inf is not a class: the logits have 3 classes, so a label is an integer from 0 to 2"),
]


@pytest.mark.parametrize("label,message", LABEL_ERRORS)
def test_a_bad_label_is_a_domain_error(label, message):
    ce = ENTRIES["cross_entropy"]
    with pytest.raises(DomainError) as caught:  # a single example: logits [3], label []
        ce.forward(np, [np.zeros(3), np.float64(label)], [0, 0], None)
    assert (caught.value.op, caught.value.message) == ("cross_entropy", message)
    with pytest.raises(DomainError) as caught:  # the first bad one of a batch is named
        ce.forward(np, [np.zeros((4, 3)), np.array([0.0, 2.0, label, 1.0])], [0, 0], None)
    assert caught.value.message == message
    with pytest.raises(DomainError) as caught:
        ce.forward(np, [np.zeros((4, 3)), np.array([0.0, 2.0, label, 1.0])], [1, 1], None)
    assert caught.value.message == message
