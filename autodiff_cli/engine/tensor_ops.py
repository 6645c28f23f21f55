"""The tensor op table: every op on vectors and matrices, its forward, VJP and JVP side by side.

The elementwise ops (``+ - * / ** **c neg =`` and the functions) are not here: their maths is
the scalar table's NumPy kernel (``ops.OPS[name].vector``), and this module only adds what
tensors need around it: NumPy's broadcasting rule with shape errors people can read
(``broadcast_shape``), the batch axis lined up (``align``), and the gradient summed back over
broadcast axes (``unbroadcast``, one helper for every elementwise op, as in minigrad).

Everything else is one ``TensorOp`` row in ``TENSOR_OPS``:

* ``shape(shapes, param)``: per-row shapes in, per-row shape out, or ``ShapeMismatch`` whose
  message starts with the operand shapes (``[4, 3] @ [2, 1]: the inner sizes 3 and 2 differ``)
  and whose hint says how to fix it.  The language layer puts the expression and line:column
  in front;
* ``forward(np, args, leads, param)``, ``vjp(np, g, out, args, leads, param)`` and
  ``jvp(np, tangents, out, args, leads, param)``, next to each other.  The VJPs of binary ops
  also take ``needs`` (one bool per operand; the executor passes it), and give None for an
  operand whose gradient nobody wants: ``@`` then skips a matrix product;
* ``rule`` (the VJP in matrix form, for explain), ``numpy``, ``latex``, ``summary``.

The batch axis: the program executor runs a program over N rows at once, so an operand may
carry one extra leading axis of size N (``leads[i] == 1``); the result has it if any operand
does.  Every op here works on a whole batch with NumPy calls over whole arrays (per-row axis
``k >= 0`` is array axis ``k + lead``; negative axes count from the end, where the batch axis
never is).  An unbatched operand of a batched result gets its gradient summed over the batch.

NumPy is passed in as ``np``, as in ``ops.py``: this module imports the standard library only.
Arrays are float64 throughout; gradients and tangents are fresh arrays (never read-only views)
unless noted, while forward values may be views of their operands (``transpose``, ``index``):
the executors never write into a value.
"""

from __future__ import annotations

import math
from collections import namedtuple
from typing import TYPE_CHECKING

from .ops import OPS, DomainError, short_number

if TYPE_CHECKING:
    from typing import Any

    Array = Any
    Shape = tuple[int, ...]

__all__ = [
    "TENSOR_OPS",
    "ShapeMismatch",
    "TensorOp",
    "align",
    "broadcast_shape",
    "elementwise_forward",
    "elementwise_jvp",
    "elementwise_vjp",
    "format_shape",
    "row_shape",
    "unbroadcast",
    "write",
]


class ShapeMismatch(Exception):
    """Operand shapes an op cannot take; ``message`` starts with the shapes, ``hint`` says what to do."""

    def __init__(self, message: str, hint: str) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __reduce__(self) -> tuple[type, tuple[str, str]]:
        return type(self), (self.message, self.hint)  # pickled whole, as DomainError


class TensorOp(namedtuple("TensorOp", "name arity written shape forward vjp jvp rule numpy latex summary "
                                      "written_param", defaults=(None,))):
    """One tensor op (fields as in the module docstring).  ``written`` is the form without a
    parameter (``sum({x})``); ``written_param`` the form with one (``sum({x}, {axis})``,
    ``{x}[{index}]``), None for ops without.  ``write`` fills in either."""

    __slots__ = ()


def format_shape(shape: Shape) -> str:
    """A shape as people write it: (4, 3) -> '[4, 3]', a scalar's () -> '[]'."""
    return "[" + ", ".join(str(n) for n in shape) + "]"


def row_shape(np: Any, arg: Array, lead: int) -> Shape:
    """The per-row shape of an operand: its array shape without the batch axis."""
    return tuple(np.shape(arg)[lead:])


def _batch(np: Any, args: Any, leads: Any) -> Shape:
    """(N,) if some operand is batched (N read off it), else ()."""
    for arg, lead in zip(args, leads):
        if lead:
            return (np.shape(arg)[0],)
    return ()


def _f64(np: Any, x: Array) -> Array:
    return np.asarray(x, dtype=np.float64)  # no copy for float64 arrays


def _fresh(np: Any, value: Array, shape: Shape) -> Array:
    """A new writable float64 array of ``shape`` holding ``value`` broadcast (one pass)."""
    out = np.empty(shape, dtype=np.float64)
    out[...] = value
    return out


# --- elementwise ops: broadcasting around the scalar table's NumPy kernels ------------------------


def broadcast_shape(shapes: Any) -> Shape:
    """NumPy's broadcasting rule on per-row shapes, or ShapeMismatch naming the sizes that clash."""
    shapes = [tuple(s) for s in shapes]
    rank = max((len(s) for s in shapes), default=0)
    out = []
    for k in range(1, rank + 1):  # axes line up from the right
        size = 1
        for s in shapes:
            n = s[-k] if k <= len(s) else 1
            if n != 1:
                if size != 1 and n != size:
                    raise ShapeMismatch(
                        " and ".join(format_shape(s) for s in shapes) + f": sizes {size} and {n} cannot broadcast",
                        "broadcasting lines the axes up from the right, and the two sizes there must be equal "
                        "or one of them 1; transpose(...) or index one operand to make them fit",
                    )
                size = n
        out.append(size)
    return tuple(reversed(out))


def align(np: Any, arg: Array, lead: int, shape: Shape, out_ndim: int) -> Array:
    """A batched operand, array shape (N,) + shape, as (N,) + (1,) * (out_ndim - len(shape)) + shape,
    so that NumPy lines its per-row axes up from the right and its batch axis with the result's.
    An unbatched operand is returned as it is: NumPy's own alignment is already right for it."""
    if not lead:
        return arg
    return np.reshape(arg, np.shape(arg)[:1] + (1,) * (out_ndim - len(shape)) + tuple(shape))


def unbroadcast(np: Any, g: Array, shape: Shape, lead: int) -> Array:
    """The gradient g of a (broadcast) result summed back to an operand's ARRAY shape ``shape``
    (batch axis included when ``lead`` is 1): over the axes broadcasting added in front of the
    operand's per-row axes, and over its size-1 axes that were stretched.  For an unbatched
    operand of a batched result the batch axis is one of the added axes, so it is summed too.
    Returns g itself when it already has the shape."""
    shape = tuple(shape)
    g_shape = np.shape(g)
    if g_shape == shape:
        return g
    extra = len(g_shape) - len(shape)
    added = tuple(range(lead, lead + extra))  # after a batched operand's batch axis, else in front
    stretched = tuple(i + extra for i in range(lead, len(shape)) if shape[i] == 1 and g_shape[i + extra] != 1)
    return np.reshape(np.sum(g, axis=added + stretched), shape)


def _rows(np: Any, args: Any, leads: Any) -> list[Shape]:
    return [row_shape(np, a, lead) for a, lead in zip(args, leads)]


def elementwise_forward(np: Any, name: str, args: Any, leads: Any, param: Any = None) -> tuple[Array, Any]:
    """``OPS[name].vector`` on broadcast operands: (out, slopes), ``slopes()`` the local derivatives."""
    shape = broadcast_shape(_rows(np, args, leads))  # ShapeMismatch here, not a NumPy traceback
    if any(leads):
        args = [align(np, a, lead, r, len(shape)) for a, lead, r in zip(args, leads, _rows(np, args, leads))]
    vector = OPS[name].vector
    if name == "**c":
        return vector(np, args[0], param)
    return vector(np, *args)


def elementwise_vjp(np: Any, name: str, g: Array, slopes: Any, args: Any, leads: Any,
                    needs: Any = None) -> tuple[Array | None, ...]:
    """dL/darg = dL/dout * slope, summed back over what broadcasting stretched (each the shape of its arg);
    None for an operand that ``needs`` says no gradient is wanted of."""
    # A slope of exactly 1 (+, -, =) passes g on as it is, so two operands may share one array:
    # the executors never write into a gradient (the eager Tensor copies what it accumulates).
    needs = needs or (True,) * len(args)
    return tuple(unbroadcast(np, g if s.__class__ is float and s == 1.0 else g * s, np.shape(a), lead)
                 if need else None for s, a, lead, need in zip(slopes(), args, leads, needs))


def elementwise_jvp(np: Any, name: str, tangents: Any, slopes: Any, args: Any, leads: Any) -> Array:
    """d out = sum of slope * d arg over the operands whose tangent is not None, shaped like out."""
    rows = _rows(np, args, leads)
    shape = _batch(np, args, leads) + broadcast_shape(rows)
    total = None
    for t, s, lead, r in zip(tangents, slopes(), leads, rows):
        if t is not None:
            term = s * align(np, t, lead, r, len(shape) - bool(any(leads)))
            total = term if total is None else total + term
    if total is None or np.shape(total) != shape:  # a tangent only of the smaller operand
        return _fresh(np, 0.0 if total is None else total, shape)
    return total


# --- @: the matrix product ------------------------------------------------------------------------


def _matmul_shape(shapes: Any, param: Any) -> Shape:
    a, b = (tuple(s) for s in shapes)
    if 1 <= len(a) <= 2 and 1 <= len(b) <= 2 and a[-1] == b[0]:  # the usual case: no message to write
        return a[:-1] + b[1:]
    written = f"{format_shape(a)} @ {format_shape(b)}"
    for side, s in (("left", a), ("right", b)):
        if not s:
            raise ShapeMismatch(f"{written}: @ takes vectors and matrices, and the {side} operand is a scalar",
                                "use * to multiply by a scalar")
        if len(s) > 2:
            raise ShapeMismatch(f"{written}: @ takes vectors and matrices, and the {side} operand has {len(s)} axes",
                                "index or reduce the extra axes first (e.g. x[0] or sum(x, 0))")
    if a[-1] != b[0]:  # the right operand's rows: b[0] for a vector and for a matrix alike
        hint = ("a dot product takes two vectors of the same length" if len(a) == len(b) == 1 else
                "the columns of the left operand must match the rows of the right one; transpose(...) one of them?")
        raise ShapeMismatch(f"{written}: the inner sizes {a[-1]} and {b[0]} differ", hint)
    return a[:-1] + b[1:]


def _lift(np: Any, x: Array, lead: int, left: bool) -> Array:
    """A per-row vector as a one-row (left) or one-column (right) matrix, so that every case of
    np.matmul is the matrix one and a batch axis is never mistaken for a matrix axis."""
    s = np.shape(x)
    if len(s) - lead != 1:
        return x
    return np.reshape(x, s[:lead] + ((1, s[-1]) if left else (s[-1], 1)))


def _rowwise(np: Any, p: Array, q: Array, lead_p: int, lead_q: int) -> Array:
    """Each row's ``p @ q`` for per-row matrices, where at most one carries the batch axis, as one
    matrix product: np.matmul of a stack against one matrix would make a small product per row."""
    if lead_p and not lead_q:  # (N, n, k) @ (k, m): the rows of every p_N, stacked
        n_rows, n, k = np.shape(p)
        return np.reshape(np.matmul(np.reshape(p, (n_rows * n, k)), q), (n_rows, n, np.shape(q)[-1]))
    if lead_q and not lead_p:  # (n, k) @ (N, k, m), as (q_N^T @ p^T)^T with the q_N^T stacked
        n_rows, k, m = np.shape(q)
        stacked = np.reshape(np.swapaxes(q, 1, 2), (n_rows * m, k))
        return np.swapaxes(np.reshape(np.matmul(stacked, _swap(np, p)), (n_rows, m, np.shape(p)[0])), 1, 2)
    return np.matmul(p, q)


def _matmul_forward(np: Any, args: Any, leads: Any, param: Any) -> Array:
    x, y = (_f64(np, a) for a in args)
    shape = _batch(np, args, leads) + _matmul_shape(_rows(np, args, leads), None)
    # one matrix product; the axes _lift added are then dropped by the reshape
    product = _rowwise(np, _lift(np, x, leads[0], True), _lift(np, y, leads[1], False), leads[0], leads[1])
    return np.reshape(product, shape)


def _swap(np: Any, m: Array) -> Array:
    return np.swapaxes(m, -1, -2)


def _matmul_vjp(np: Any, g: Array, out: Array, args: Any, leads: Any, param: Any,
                needs: Any = (True, True)) -> tuple[Array | None, Array | None]:
    x, y = (_f64(np, a) for a in args)
    a, b = _lift(np, x, leads[0], True), _lift(np, y, leads[1], False)  # (n, k) and (k, m) per row
    batched = leads[0] or leads[1]
    gm = np.reshape(g, np.shape(g)[:1] * bool(batched) + (np.shape(a)[-2], np.shape(b)[-1]))  # (n, m) per row
    n_rows = np.shape(g)[0] if batched else 0
    # dL/dx = dL/dout @ y^T.  An unbatched x of a batched result sums sum_N g_N y_N^T, which is
    # one product with the batch folded into the contracted axis: (n, N*m) @ (N*m, k).
    if not needs[0]:
        gx = None
    elif batched and not leads[0]:
        n, m, k = np.shape(gm)[1], np.shape(gm)[2], np.shape(b)[-2]
        if m == 1:  # y a vector per row (W @ x): (n, N) @ (N, k) as a transposed view, not a copy of g
            gx = np.matmul(_swap(np, np.reshape(gm, (n_rows, n))), np.reshape(b, (n_rows, k)))
        else:
            gx = np.matmul(np.reshape(np.swapaxes(gm, 0, 1), (n, n_rows * m)), np.reshape(_swap(np, b), (n_rows * m, k)))
    else:
        gx = _rowwise(np, gm, _swap(np, b), bool(batched), leads[1])
    # dL/dy = x^T @ dL/dout; for an unbatched y, (k, N*n) @ (N*n, m).
    if not needs[1]:
        gy = None
    elif batched and not leads[1]:
        n, m, k = np.shape(gm)[1], np.shape(gm)[2], np.shape(a)[-1]
        gy = np.matmul(_swap(np, np.reshape(a, (n_rows * n, k))), np.reshape(gm, (n_rows * n, m)))
    else:
        gy = _rowwise(np, _swap(np, a), gm, leads[0], bool(batched))
    return (None if gx is None else np.reshape(gx, np.shape(x)),
            None if gy is None else np.reshape(gy, np.shape(y)))


def _matmul_jvp(np: Any, tangents: Any, out: Array, args: Any, leads: Any, param: Any) -> Array:
    # d(x @ y) = dx @ y + x @ dy: the product is linear in each operand
    tx, ty = tangents
    total = None
    if tx is not None:
        total = _matmul_forward(np, (tx, args[1]), leads, None)
    if ty is not None:
        term = _matmul_forward(np, (args[0], ty), leads, None)
        total = term if total is None else total + term
    return _fresh(np, 0.0, np.shape(out)) if total is None else total


# --- reductions: sum, mean, max, min --------------------------------------------------------------


def _reduce_shape(name: str) -> Any:
    def shape(shapes: Any, axis: Any) -> Shape:
        (s,) = (tuple(s) for s in shapes)
        if axis is None:
            if name != "sum" and math.prod(s) == 0:  # the sum of nothing is 0; its mean, max, min none
                raise ShapeMismatch(f"{format_shape(s)}: {name} of no elements has no value",
                                    f"{name} needs at least one element")
            return ()
        r = len(s)
        if not s:
            raise ShapeMismatch(f"[]: axis {axis} is out of range: a scalar has no axes",
                                f"{name}(x) without an axis reduces all elements; a scalar needs no {name}")
        if not -r <= axis < r:
            raise ShapeMismatch(f"{format_shape(s)}: axis {axis} is out of range for {r} {'axis' if r == 1 else 'axes'}",
                                f"the axes of {format_shape(s)} are 0 to {r - 1}, or -{r} to -1 counting from the end")
        if name != "sum" and s[axis] == 0:
            raise ShapeMismatch(f"{format_shape(s)}: {name} along axis {axis} of size 0 has no value",
                                f"{name} needs at least one element along the axis")
        return s[:axis % r] + s[axis % r + 1:]

    return shape


def _axes(ndim: int, lead: int, axis: Any) -> Any:
    """The array axes a reduction over per-row ``axis`` (None: all) reduces."""
    if axis is None:
        return None if not lead else tuple(range(lead, ndim))
    return axis + lead if axis >= 0 else axis  # negative axes count from the end: no shift


def _count(np: Any, x: Array, lead: int, axis: Any) -> int:
    """How many elements of a row each reduced value covers (mean divides by it)."""
    row = np.shape(x)[lead:]
    return math.prod(row) if axis is None else row[axis]


def _keep(np: Any, g: Array, axes: Any) -> Array:
    """A reduced array with its reduced axes put back as size 1 (keepdims), to broadcast against x."""
    return g if axes is None else np.expand_dims(g, axes)


def _sum_forward(np: Any, args: Any, leads: Any, axis: Any) -> Array:
    x = _f64(np, args[0])
    _reduce_shape("sum")(_rows(np, args, leads), axis)
    return np.sum(x, axis=_axes(np.ndim(x), leads[0], axis))


def _sum_vjp(np: Any, g: Array, out: Array, args: Any, leads: Any, axis: Any) -> tuple[Array]:
    # every element of x adds 1 * itself to its total: each gets its total's gradient
    x = args[0]
    return (_fresh(np, _keep(np, g, _axes(np.ndim(x), leads[0], axis)), np.shape(x)),)


def _sum_jvp(np: Any, tangents: Any, out: Array, args: Any, leads: Any, axis: Any) -> Array:
    (t,) = tangents
    return _fresh(np, 0.0, np.shape(out)) if t is None else _sum_forward(np, (t,), leads, axis)


def _mean_forward(np: Any, args: Any, leads: Any, axis: Any) -> Array:
    x = _f64(np, args[0])
    _reduce_shape("mean")(_rows(np, args, leads), axis)
    axes = _axes(np.ndim(x), leads[0], axis)
    with np.errstate(over="ignore"):  # looked for here: an overflowed sum is redone
        out = np.mean(x, axis=axes)
        if not np.all(np.isfinite(out)) and np.all(np.isfinite(x)):
            # the sum overflowed though the mean does not (mean([1e308, 1e308])): divide first
            out = np.sum(x / _count(np, x, leads[0], axis), axis=axes)
    return out


def _mean_vjp(np: Any, g: Array, out: Array, args: Any, leads: Any, axis: Any) -> tuple[Array]:
    # a mean of n elements is their sum / n: each gets dL/dout / n
    x = args[0]
    n = _count(np, x, leads[0], axis)
    return (_fresh(np, _keep(np, g, _axes(np.ndim(x), leads[0], axis)) / n, np.shape(x)),)


def _mean_jvp(np: Any, tangents: Any, out: Array, args: Any, leads: Any, axis: Any) -> Array:
    (t,) = tangents
    return _fresh(np, 0.0, np.shape(out)) if t is None else _mean_forward(np, (t,), leads, axis)


def _extreme(name: str) -> tuple[Any, Any, Any]:
    """max or min: forward, VJP and JVP.  At a tie the gradient is split evenly among the
    elements equal to the extreme (k of them get 1/k each), as jnp.max and torch.amax do: the
    mean of the one-sided derivatives, and a sum of the gradients that stays 1."""
    reduce = "max" if name == "max" else "min"

    def forward(np: Any, args: Any, leads: Any, axis: Any) -> Array:
        x = _f64(np, args[0])
        _reduce_shape(name)(_rows(np, args, leads), axis)
        return getattr(np, reduce)(x, axis=_axes(np.ndim(x), leads[0], axis))

    def share(np: Any, out: Array, x: Array, lead: int, axis: Any) -> tuple[Array, Any]:
        """Each element's share of its extreme: 1/k where it ties with k-1 others, else 0."""
        axes = _axes(np.ndim(x), lead, axis)
        hit = x == _keep(np, out, axes)
        with np.errstate(invalid="ignore", divide="ignore"):  # a NaN row has no hit: 0/0 -> NaN
            return hit / np.sum(hit, axis=axes, keepdims=True), axes

    def vjp(np: Any, g: Array, out: Array, args: Any, leads: Any, axis: Any) -> tuple[Array]:
        x = _f64(np, args[0])
        w, axes = share(np, out, x, leads[0], axis)
        return (w * _keep(np, g, axes),)

    def jvp(np: Any, tangents: Any, out: Array, args: Any, leads: Any, axis: Any) -> Array:
        (t,) = tangents
        if t is None:
            return _fresh(np, 0.0, np.shape(out))
        x = _f64(np, args[0])
        w, axes = share(np, out, x, leads[0], axis)
        return np.sum(w * t, axis=axes)  # the mean of the tied elements' tangents

    return forward, vjp, jvp


# --- transpose ------------------------------------------------------------------------------------


def _transpose_shape(shapes: Any, param: Any) -> Shape:
    (s,) = (tuple(s) for s in shapes)
    if len(s) == 2:
        return (s[1], s[0])
    if not s:
        raise ShapeMismatch("[]: transpose takes a matrix (2 axes), not a scalar",
                            "a scalar is its own transpose; drop transpose(...)")
    if len(s) == 1:
        raise ShapeMismatch(f"{format_shape(s)}: transpose takes a matrix (2 axes), not a vector",
                            "a vector has no orientation: use it as it is on either side of @ (v @ W or W @ v)")
    raise ShapeMismatch(f"{format_shape(s)}: transpose takes a matrix (2 axes), not a tensor of {len(s)} axes",
                        "index the extra axes away first (e.g. x[0])")


def _transpose_forward(np: Any, args: Any, leads: Any, param: Any) -> Array:
    _transpose_shape(_rows(np, args, leads), None)
    return np.swapaxes(_f64(np, args[0]), -1, -2)  # the last two axes: a batch axis stays in front


def _transpose_vjp(np: Any, g: Array, out: Array, args: Any, leads: Any, param: Any) -> tuple[Array]:
    return (np.array(np.swapaxes(g, -1, -2)),)  # a permutation: its transpose is its inverse


def _transpose_jvp(np: Any, tangents: Any, out: Array, args: Any, leads: Any, param: Any) -> Array:
    (t,) = tangents
    return _fresh(np, 0.0, np.shape(out)) if t is None else np.array(np.swapaxes(t, -1, -2))


# --- softmax, log_softmax, logsumexp: along the last per-row axis ---------------------------------


def _last_axis_shape(name: str, reduces: bool) -> Any:
    def shape(shapes: Any, param: Any) -> Shape:
        (s,) = (tuple(s) for s in shapes)
        if not s:
            raise ShapeMismatch(f"[]: {name} works along the last axis, and a scalar has none",
                                f"give {name} a vector (or a matrix, one {name} per row)")
        if s[-1] == 0:  # as max of nothing: refused before anything runs, not a NumPy error
            what = "has no value" if reduces else "has nothing to normalize"
            raise ShapeMismatch(f"{format_shape(s)}: {name} along a last axis of size 0 {what}",
                                f"{name} needs at least one element along the last axis; "
                                "check the slice or shape that left it empty")
        return s[:-1] if reduces else s

    return shape


_Softmax = namedtuple("_Softmax", "m d e total rest log_total top")


def _stable(np: Any, x: Array) -> _Softmax:
    """The pieces of a softmax along the last axis (per-row ones with keepdims): the shift m
    (the row's max), d = x - m (no exp overflows), e = exp(d), total = sum(e), rest = that sum
    without the largest element (``top``, its index; its e is 1 on a row with a finite max),
    and log(total) = log1p(rest) there: log(1 + 1e-14) in floats would keep only a digit or two
    of it.  d is exact for logits near each other, however large (1e16 + log 2 would not be).
    A row whose max is not finite is shifted by 0 (-inf - -inf would be NaN)."""
    m = np.max(x, axis=-1, keepdims=True)
    if not np.isfinite(m).all():
        m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(over="ignore"):  # -1e308 - 1e308 is -inf, whose exp is the right 0
        d = x - m
    e = np.exp(d)
    top = np.argmax(x, axis=-1)[..., None]  # a largest element (the first NaN of a row with one)
    e_top = np.take_along_axis(e, top, axis=-1)
    np.put_along_axis(e, top, 0.0, axis=-1)  # e is ours: the others' sum, then e_top back
    rest = np.sum(e, axis=-1, keepdims=True)
    np.put_along_axis(e, top, e_top, axis=-1)
    total = e_top + rest
    with np.errstate(divide="ignore", invalid="ignore"):  # a row of -inf sums to 0: log(0) = -inf
        log_total = np.where(e_top == 1.0, np.log1p(rest), np.log(total))
    return _Softmax(m, d, e, total, rest, log_total, top)


def _probabilities(np: Any, x: Array) -> tuple[Array, Array]:
    """softmax(x) = p and 1 - p = q, both to full relative precision: q of the largest element
    is the others' share (rest / total), not 1 - p, which is 0 when p rounds to 1 (elsewhere
    p <= 1/2, and 1 - p keeps every digit)."""
    s = _stable(np, x)
    with np.errstate(invalid="ignore"):  # a row of -inf is 0/0: NaN, as in PyTorch
        p = s.e / s.total
        q = 1.0 - p
        np.put_along_axis(q, s.top, s.rest / s.total, axis=-1)
    return p, q


def _minus_mean(np: Any, v: Array, p: Array, q: Array) -> Array:
    """v - sum(v * p) along the last axis, written v * q - (sum(v * p) - v * p) so that it keeps
    its digits where p is nearly 1 (v a one-hot row there: q itself, not 1 - p)."""
    vp = v * p
    return v * q - (np.sum(vp, axis=-1, keepdims=True) - vp)


def _softmax_forward(np: Any, args: Any, leads: Any, param: Any) -> Array:
    x = _f64(np, args[0])
    _last_axis_shape("softmax", False)(_rows(np, args, leads), None)
    return _probabilities(np, x)[0]


def _softmax_vjp(np: Any, g: Array, out: Array, args: Any, leads: Any, param: Any) -> tuple[Array]:
    # J = diag(p) - p p^T, symmetric: dL/dx = p * (g - <g, p>)
    p, q = _probabilities(np, _f64(np, args[0]))
    return (p * _minus_mean(np, g, p, q),)


def _softmax_jvp(np: Any, tangents: Any, out: Array, args: Any, leads: Any, param: Any) -> Array:
    (t,) = tangents
    if t is None:
        return _fresh(np, 0.0, np.shape(out))
    p, q = _probabilities(np, _f64(np, args[0]))
    return p * _minus_mean(np, t, p, q)


def _log_softmax_forward(np: Any, args: Any, leads: Any, param: Any) -> Array:
    x = _f64(np, args[0])
    _last_axis_shape("log_softmax", False)(_rows(np, args, leads), None)
    s = _stable(np, x)
    with np.errstate(invalid="ignore"):
        return s.d - s.log_total  # x - logsumexp(x), without forming exp(x) or adding the max back


def _from_logs(np: Any, out: Array) -> tuple[Array, Array]:
    """p and q = 1 - p from log p = log_softmax(x), which holds every digit of both: exp and
    -expm1 of it (two passes, where working them out from x again would take six)."""
    with np.errstate(invalid="ignore"):
        return np.exp(out), -np.expm1(out)


def _log_softmax_vjp(np: Any, g: Array, out: Array, args: Any, leads: Any, param: Any) -> tuple[Array]:
    # d out_i / d x_j = [i = j] - p_j: dL/dx = g - p * sum(g) = g * q - p * (sum(g) - g)
    p, q = _from_logs(np, out)
    return (g * q - p * (np.sum(g, axis=-1, keepdims=True) - g),)


def _log_softmax_jvp(np: Any, tangents: Any, out: Array, args: Any, leads: Any, param: Any) -> Array:
    (t,) = tangents
    if t is None:
        return _fresh(np, 0.0, np.shape(out))
    p, q = _from_logs(np, out)
    return _minus_mean(np, t, p, q)  # t - <p, t>


def _logsumexp_forward(np: Any, args: Any, leads: Any, param: Any) -> Array:
    x = _f64(np, args[0])
    _last_axis_shape("logsumexp", True)(_rows(np, args, leads), None)
    s = _stable(np, x)
    return (s.m + s.log_total)[..., 0]


def _logsumexp_vjp(np: Any, g: Array, out: Array, args: Any, leads: Any, param: Any) -> tuple[Array]:
    # d logsumexp / d x = softmax(x), made from x: exp(x - logsumexp(x)) is exp(0) = 1 at
    # x = [1e16, 1e16], whose logsumexp rounds to 1e16
    return (_probabilities(np, _f64(np, args[0]))[0] * np.asarray(g)[..., None],)


def _logsumexp_jvp(np: Any, tangents: Any, out: Array, args: Any, leads: Any, param: Any) -> Array:
    (t,) = tangents
    if t is None:
        return _fresh(np, 0.0, np.shape(out))
    return np.sum(_probabilities(np, _f64(np, args[0]))[0] * t, axis=-1)


# --- index: x[i], x[i, j], slices ---------------------------------------------------------------------


def _index_text(items: Any) -> str:
    def one(item: Any) -> str:
        if isinstance(item, slice):
            text = ("" if item.start is None else str(item.start)) + ":" + ("" if item.stop is None else str(item.stop))
            return text + ("" if item.step is None else f":{item.step}")
        return str(item)

    return ", ".join(one(item) for item in items)


def _index_shape(shapes: Any, items: Any) -> Shape:
    (s,) = (tuple(s) for s in shapes)
    items = tuple(items)
    if not s and items:
        raise ShapeMismatch("[]: a scalar has no axes to index", "drop the [...]: a scalar is already one number")
    if len(items) > len(s):
        raise ShapeMismatch(f"{format_shape(s)}: {len(items)} indices for {len(s)} {'axis' if len(s) == 1 else 'axes'}",
                            f"index each axis at most once: a shape {format_shape(s)} takes up to {len(s)} "
                            f"{'index' if len(s) == 1 else 'indices'}")
    out = []
    for item, n in zip(items, s):
        if isinstance(item, slice):
            if item.step == 0:
                raise ShapeMismatch(f"{format_shape(s)}: a slice step cannot be 0",
                                    "use a positive step (x[::2]) or a negative one (x[::-1])")
            out.append(len(range(*item.indices(n))))
        elif not -n <= item < n:
            raise ShapeMismatch(f"{format_shape(s)}: index {item} is out of range for an axis of size {n}",
                                f"indices of an axis of size {n} run from 0 to {n - 1}, or from -{n} to -1 "
                                "counting from the end" if n else "the axis is empty: it has no element to take")
    return tuple(out) + s[len(items):]


def _key(lead: int, items: Any) -> tuple[Any, ...]:
    return (slice(None),) * lead + tuple(items)  # every row of the batch, then the per-row index


def _index_forward(np: Any, args: Any, leads: Any, items: Any) -> Array:
    _index_shape(_rows(np, args, leads), items)
    return _f64(np, args[0])[_key(leads[0], items)]  # basic indexing: a view


def _index_vjp(np: Any, g: Array, out: Array, args: Any, leads: Any, items: Any) -> tuple[Array]:
    # the elements taken get their gradient; basic indexing takes each element at most once,
    # so assigning is adding
    grad = np.zeros(np.shape(args[0]), dtype=np.float64)
    grad[_key(leads[0], items)] = g
    return (grad,)


def _index_jvp(np: Any, tangents: Any, out: Array, args: Any, leads: Any, items: Any) -> Array:
    (t,) = tangents
    return _fresh(np, 0.0 if t is None else t[_key(leads[0], items)], np.shape(out))


# --- losses: mse, cross_entropy ---------------------------------------------------------------------


def _mse_shape(shapes: Any, param: Any) -> Shape:
    a, b = (tuple(s) for s in shapes)
    if a != b:
        written = f"{format_shape(a)} and {format_shape(b)}"
        longer, side = (a, "left") if len(a) > len(b) else (b, "right")
        if a[:-1] == b and a[-1:] == (1,) or b[:-1] == a and b[-1:] == (1,):
            index = ", ".join([":"] * (len(longer) - 1) + ["0"])
            hint = (f"mse does not broadcast: here it would compare every pair; take the {side} operand's "
                    f"column as a vector with [{index}]")
        else:
            hint = "mse compares element by element and never broadcasts; give both operands the same shape"
        raise ShapeMismatch(f"{written}: mse needs two tensors of the same shape", hint)
    if math.prod(a) == 0:  # the mean of no squares is 0 / 0
        raise ShapeMismatch(f"{format_shape(a)} and {format_shape(b)}: mse of no elements has no value",
                            "mse needs at least one element; check the slice or shape that left them empty")
    return ()


def _per_row(np: Any, a: Array, batched: bool) -> Any:
    """The axes of a whole row of a result-shaped array (None: all axes of an unbatched one)."""
    return tuple(range(1, np.ndim(a))) if batched else None


def _mse_forward(np: Any, args: Any, leads: Any, param: Any) -> Array:
    _mse_shape(_rows(np, args, leads), None)
    d = _f64(np, args[0]) - _f64(np, args[1])  # equal per-row shapes: a batch axis lines up in front
    return np.mean(d * d, axis=_per_row(np, d, any(leads)))


def _mse_vjp(np: Any, g: Array, out: Array, args: Any, leads: Any, param: Any, needs: Any = None) -> tuple[Array, Array]:
    # mean((x - y)^2) over n elements: d/dx = 2 (x - y) / n, d/dy its negative
    x, y = _f64(np, args[0]), _f64(np, args[1])
    d = x - y
    n = math.prod(row_shape(np, x, leads[0]))
    gd = d * (np.reshape(g, np.shape(g) + (1,) * (np.ndim(d) - np.ndim(g))) * (2.0 / n))
    return unbroadcast(np, gd, np.shape(x), leads[0]), unbroadcast(np, -gd, np.shape(y), leads[1])


def _mse_jvp(np: Any, tangents: Any, out: Array, args: Any, leads: Any, param: Any) -> Array:
    tx, ty = tangents
    if tx is None and ty is None:
        return _fresh(np, 0.0, np.shape(out))
    x, y = _f64(np, args[0]), _f64(np, args[1])
    d = x - y
    dt = (0.0 if tx is None else tx) - (0.0 if ty is None else ty)
    n = math.prod(row_shape(np, x, leads[0]))
    total = np.sum(d * dt, axis=_per_row(np, d, any(leads))) * (2.0 / n)
    return _fresh(np, total, np.shape(out))  # a tangent only of an unbatched operand: one per row still


def _cross_entropy_shape(shapes: Any, param: Any) -> Shape:
    a, b = (tuple(s) for s in shapes)
    written = f"{format_shape(a)} and {format_shape(b)}"
    if not a:
        raise ShapeMismatch(f"{written}: the logits are a scalar; cross_entropy needs a class axis (the last)",
                            "give the logits as a vector of C class scores, or a matrix [N, C] with one row per example")
    if a[-1] == 0:
        raise ShapeMismatch(f"{written}: the logits have no classes (a last axis of size 0)",
                            "cross_entropy needs at least one class score per example; check the slice "
                            "or shape that left the last axis empty")
    if b != a[:-1]:
        if a == b:
            hint = ("the labels are class numbers 0 to C-1, one per row of logits, not one-hot rows; "
                    "for one-hot targets Y write -mean(sum(Y * log_softmax(X), -1))")
        else:
            hint = "one integer class label per row of logits: logits [N, C] take labels [N], logits [C] one label []"
        raise ShapeMismatch(f"{written}: logits {format_shape(a)} need labels of shape {format_shape(a[:-1])}", hint)
    if math.prod(a) == 0:  # the mean over no examples is 0 / 0
        raise ShapeMismatch(f"{written}: cross_entropy of no examples has no value",
                            "cross_entropy averages over the examples and needs at least one; check the "
                            "slice or shape that left them empty")
    return ()


def _labels(np: Any, x: Array, y: Array) -> Array:
    """The labels as integer indices, or DomainError naming the first that is not a class."""
    classes = np.shape(x)[-1]
    y = _f64(np, y)
    ok = (y == np.floor(y)) & (y >= 0.0) & (y < classes)  # False for NaN and infinities
    if not np.all(ok):
        bad = float(y[~ok].flat[0]) if np.ndim(y) else float(y)
        raise DomainError("cross_entropy", f"label {short_number(bad)} is not a class: the logits have {classes} "
                                           f"classes, so a label is an integer from 0 to {classes - 1}")
    return y.astype(np.intp)


def _ce_parts(np: Any, args: Any, leads: Any) -> tuple[Array, Array, int, Any]:
    """Logits and labels broadcast to the result's batch, the labels as indices, the number of
    positions per row (the mean divides by it) and the axes of a row's positions."""
    x, y = _f64(np, args[0]), args[1]
    batch = _batch(np, args, leads)
    row = row_shape(np, x, leads[0])
    full = batch + row
    if np.shape(x) != full:  # unbatched logits, batched labels
        x = np.broadcast_to(x, full)
    labels = np.broadcast_to(_labels(np, x, y), full[:-1])
    positions = math.prod(row[:-1])
    axes = tuple(range(len(batch), len(full) - 1))
    return x, labels, positions, axes


def _cross_entropy_forward(np: Any, args: Any, leads: Any, param: Any) -> Array:
    _cross_entropy_shape(_rows(np, args, leads), None)
    x, labels, positions, axes = _ce_parts(np, args, leads)
    s = _stable(np, x)
    picked = np.take_along_axis(s.d, labels[..., None], axis=-1)
    with np.errstate(invalid="ignore"):
        # -log_softmax(x)[label], from x - max: logsumexp(x) - x[label] loses log 2 at x = [1e16, 1e16]
        losses = (s.log_total - picked)[..., 0]
    return np.sum(losses, axis=axes) / positions


def _ce_slope(np: Any, x: Array, labels: Array) -> Array:
    """d loss / d x at each position: softmax(x) - onehot(label), which is -(1 - p) = -q at the
    label: the others' share (rest / total) where the label is the largest entry, else 1 - p."""
    s = _stable(np, x)
    picked = labels[..., None]
    with np.errstate(invalid="ignore"):  # a row of -inf is 0/0: NaN, as in PyTorch
        p = s.e / s.total
        q = np.where(picked == s.top, s.rest / s.total, 1.0 - np.take_along_axis(p, picked, axis=-1))
    np.put_along_axis(p, picked, -q, axis=-1)  # p is a fresh array
    return p


def _cross_entropy_vjp(np: Any, g: Array, out: Array, args: Any, leads: Any, param: Any, needs: Any = None) -> tuple[Array, Array]:
    x, labels, positions, axes = _ce_parts(np, args, leads)
    slope = _ce_slope(np, x, labels)
    g = np.reshape(g, np.shape(g) + (1,) * (np.ndim(slope) - np.ndim(g)))
    gx = unbroadcast(np, slope * (g / positions), np.shape(args[0]), leads[0])
    return gx, np.zeros(np.shape(args[1]), dtype=np.float64)  # labels are not differentiated


def _cross_entropy_jvp(np: Any, tangents: Any, out: Array, args: Any, leads: Any, param: Any) -> Array:
    tx = tangents[0]
    if tx is None:
        return _fresh(np, 0.0, np.shape(out))
    x, labels, positions, axes = _ce_parts(np, args, leads)
    per_position = np.sum(_ce_slope(np, x, labels) * tx, axis=-1)
    return _fresh(np, np.sum(per_position, axis=axes) / positions, np.shape(out))


# --- the table --------------------------------------------------------------------------------------

_max = _extreme("max")
_min = _extreme("min")

_ROWS = (
    TensorOp("@", 2, "{x} @ {y}", _matmul_shape, _matmul_forward, _matmul_vjp, _matmul_jvp,
             ("dL/dx = dL/dout @ transpose(y)", "dL/dy = transpose(x) @ dL/dout"),
             "np.matmul({x}, {y})", "{x} {y}",
             "matrix product (np.matmul) of vectors and matrices; vector @ vector is a dot product"),
    TensorOp("sum", 1, "sum({x})", _reduce_shape("sum"), _sum_forward, _sum_vjp, _sum_jvp,
             ("dL/dx = dL/dout copied to every element summed",),
             "np.sum({x}, axis={axis})", r"\sum {x}",
             "sum of all elements, or along one axis", "sum({x}, {axis})"),
    TensorOp("mean", 1, "mean({x})", _reduce_shape("mean"), _mean_forward, _mean_vjp, _mean_jvp,
             ("dL/dx = dL/dout / n copied to every element averaged (n of them)",),
             "np.mean({x}, axis={axis})", r"\operatorname{mean}\left({x}\right)",
             "mean of all elements, or along one axis", "mean({x}, {axis})"),
    TensorOp("max", 1, "max({x})", _reduce_shape("max"), *_max,
             ("dL/dx = dL/dout / k where x equals the max (k elements tie for it), 0 elsewhere",),
             "np.max({x}, axis={axis})", r"\max {x}",
             "largest element, or along one axis; ties share the gradient evenly", "max({x}, {axis})"),
    TensorOp("min", 1, "min({x})", _reduce_shape("min"), *_min,
             ("dL/dx = dL/dout / k where x equals the min (k elements tie for it), 0 elsewhere",),
             "np.min({x}, axis={axis})", r"\min {x}",
             "smallest element, or along one axis; ties share the gradient evenly", "min({x}, {axis})"),
    TensorOp("transpose", 1, "transpose({x})", _transpose_shape, _transpose_forward, _transpose_vjp,
             _transpose_jvp, ("dL/dx = transpose(dL/dout)",),
             "np.transpose({x})", "{x}^\\top", "a matrix with its rows and columns swapped"),
    TensorOp("softmax", 1, "softmax({x})", _last_axis_shape("softmax", False), _softmax_forward, _softmax_vjp,
             _softmax_jvp, ("dL/dx = out * (dL/dout - sum(dL/dout * out, -1))",),
             "scipy.special.softmax({x}, axis=-1)", r"\operatorname{softmax}\left({x}\right)",
             "exp(x) / sum(exp(x)) along the last axis, computed without overflow"),
    TensorOp("log_softmax", 1, "log_softmax({x})", _last_axis_shape("log_softmax", False), _log_softmax_forward,
             _log_softmax_vjp, _log_softmax_jvp, ("dL/dx = dL/dout - softmax(x) * sum(dL/dout, -1)",),
             "scipy.special.log_softmax({x}, axis=-1)", r"\log\operatorname{softmax}\left({x}\right)",
             "x - logsumexp(x) along the last axis: log-probabilities, computed without overflow"),
    TensorOp("logsumexp", 1, "logsumexp({x})", _last_axis_shape("logsumexp", True), _logsumexp_forward,
             _logsumexp_vjp, _logsumexp_jvp, ("dL/dx = dL/dout * softmax(x), dL/dout repeated along the last axis",),
             "scipy.special.logsumexp({x}, axis=-1)", r"\log\sum\exp {x}",
             "log(sum(exp(x))) along the last axis (which it removes), computed without overflow"),
    TensorOp("index", 1, "{x}[{index}]", _index_shape, _index_forward, _index_vjp, _index_jvp,
             ("dL/dx = zeros shaped like x, with dL/dout at x[index]",),
             "{x}[{index}]", "{x}_{{index}}",
             "elements, rows or slices of a tensor: x[i], x[i, j], x[a:b] (and x[a:b:step] from Python)", "{x}[{index}]"),
    TensorOp("mse", 2, "mse({x}, {y})", _mse_shape, _mse_forward, _mse_vjp, _mse_jvp,
             ("dL/dx = dL/dout * 2 * (x - y) / n", "dL/dy = -dL/dout * 2 * (x - y) / n"),
             "np.mean(({x} - {y}) ** 2)", r"\operatorname{MSE}\left({x}, {y}\right)",
             "mean squared error: mean((x - y)**2) over all elements; the shapes must be equal"),
    TensorOp("cross_entropy", 2, "cross_entropy({x}, {y})", _cross_entropy_shape, _cross_entropy_forward,
             _cross_entropy_vjp, _cross_entropy_jvp,
             ("dL/dx = dL/dout * (softmax(x) - onehot(y)) / n, n the number of rows of x",
              "dL/dy = 0 (class labels are not differentiated)"),
             "-np.mean(np.take_along_axis(scipy.special.log_softmax({x}, axis=-1), "
             "{y}.astype(int)[..., None], axis=-1))",
             r"\operatorname{CE}\left({x}, {y}\right)",
             "softmax cross-entropy of logits x [..., C] against integer class labels y [...], averaged"),
)

TENSOR_OPS: dict[str, TensorOp] = {op.name: op for op in _ROWS}
"""Every tensor op by name."""


def write(name: str, operands: Any, param: Any = None) -> str:
    """An op written with its operands (texts) and its parameter: ``sum(x)``, ``sum(x, -1)``,
    ``x[0, 1:3]``, ``x @ y``."""
    op = TENSOR_OPS[name]
    fields = dict(zip("xy", operands))
    if name == "index":
        return op.written_param.format(index=_index_text(param or ()), **fields)
    if param is None or op.written_param is None:
        return op.written.format(**fields)
    return op.written_param.format(axis=param, **fields)
