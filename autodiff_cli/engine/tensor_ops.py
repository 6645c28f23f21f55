"""The registry entries of the ops that are not elementwise, their forward, VJP and JVP side by
side, and what tensors need around the elementwise ones.

The elementwise ops (``+ - * / ** **c neg =`` and the functions) have their maths in ``ops.py``
(the float kernel and the NumPy kernel, ``Op.vector``); this module adds what tensors need
around it: NumPy's broadcasting rule with shape errors people can read (``broadcast_shape``),
the batch axis lined up (``align``), and the gradient summed back over broadcast axes
(``unbroadcast``, one helper for every elementwise op, as in minigrad); and it fills in the
fields every entry has from those kernels (``elementwise_entry``).

Every other op is one entry in ``ROWS`` (``ops.Op``, made by ``_structural``), with the same
fields (``registry.ENTRIES`` holds them all):

* ``shape(shapes, param)``: per-row shapes in, per-row shape out, or ``ShapeMismatch`` whose
  message starts with the operand shapes (``[4, 3] @ [2, 1]: the inner sizes 3 and 2 differ``)
  and whose hint says how to fix it.  The language layer puts the expression and line:column
  in front;
* ``forward(np, args, leads, param)``, ``vjp(np, g, out, args, leads, param)`` and
  ``jvp(np, tangents, out, args, leads, param)``, next to each other.  The VJPs of binary ops
  also take ``needs`` (one bool per operand; the executor passes it), and give None for an
  operand whose gradient nobody wants: ``@`` then skips a matrix product.  A forward may have a
  ``saving`` form that also returns what its VJP's ``from_saved`` form needs (cross_entropy's
  softmax, an elementwise op's local derivatives); a forward checks the shapes, a saving form
  only where it says so (``checks_shapes``: cross_entropy's leaves them to the executor);
* ``rule`` (the VJP in matrix form, for explain), ``numpy``, ``latex``.

The batch axis: the program executor runs a program over N rows at once, so an operand may
carry one extra leading axis of size N (``leads[i] == 1``); the result has it if any operand
does.  Every op here works on a whole batch with NumPy calls over whole arrays (per-row axis
``k >= 0`` is array axis ``k + lead``; negative axes count from the end, where the batch axis
never is).  An unbatched operand of a batched result gets its gradient summed over the batch.

NumPy is passed in as ``np``, as in ``ops.py``: this module imports the standard library only.
Arrays are float64, or float32 where the operands are (the eager Tensor's float32; NumPy's
promotion rules otherwise); gradients and tangents are fresh arrays (never read-only views)
unless noted, while forward values may be views of their operands (``transpose``, ``index``):
the executors never write into a value.
"""

from __future__ import annotations

import math
from collections import namedtuple
from typing import TYPE_CHECKING

from .ops import OPS, DomainError, Op, short_number

if TYPE_CHECKING:
    from typing import Any

    Array = Any
    Shape = tuple[int, ...]

__all__ = [
    "ROWS",
    "VARIADIC",
    "WRITES_NO_TERM",
    "Argument",
    "Arguments",
    "ShapeMismatch",
    "align",
    "argument_values",
    "broadcast_shape",
    "elementwise_entry",
    "elementwise_forward",
    "elementwise_jvp",
    "elementwise_vjp",
    "format_shape",
    "index_adjoint",
    "keep_axis",
    "pack_arguments",
    "row_shape",
    "unbroadcast",
]


VARIADIC = -1  # the arity of an op of any number of operands (1 or more: stack, concat)


class ShapeMismatch(Exception):
    """Operand shapes an op cannot take; ``message`` starts with the shapes, ``hint`` says what to do."""

    def __init__(self, message: str, hint: str) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __reduce__(self) -> tuple[type, tuple[str, str]]:
        return type(self), (self.message, self.hint)  # pickled whole, as DomainError


class Argument(namedtuple("Argument", "name kind default numpy")):
    """One constant argument a call takes after its operands, as the compiler reads it and every
    form writes it.  ``kind`` is ``axis`` (a whole number; negative counts from the end), ``count``
    (a whole number, 0 or more), ``word`` (a bare word, ``keepdim``: given or not; True or False)
    or ``shape`` (a list of whole numbers, ``[32, -1]``).  ``default`` is its value when it is
    left out (None: required, or an axis meaning every element); ``numpy`` the keyword NumPy
    calls it by (``axis``, ``keepdims``), or "" for an argument NumPy takes by position."""

    __slots__ = ()


class Arguments(tuple):
    """The values of every argument of a call (in the order of the op's ``arguments``) when
    more than its first differs from its default; an op's ``param`` is otherwise the first
    argument's value alone (``sum(x, 1)``: 1), or None when that too is its default."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"Arguments{tuple(self)!r}"


def argument_values(schema: Any, param: Any) -> tuple[Any, ...]:
    """Every argument's value of a call whose param is ``param``, defaults filled in."""
    if isinstance(param, Arguments):
        return tuple(param)
    if not schema:
        return ()
    first = schema[0].default if param is None else param
    return (first,) + tuple(a.default for a in schema[1:])


def pack_arguments(schema: Any, values: Any) -> Any:
    """The ``param`` of a call with these argument values (``argument_values`` undone)."""
    values = tuple(values)
    if not values:
        return None
    if all(v == a.default for v, a in zip(values[1:], schema[1:])):
        return None if values[0] == schema[0].default else values[0]
    return Arguments(values)


def _structural(name: str, arity: int, written: str, shape: Any, forward: Any, vjp: Any, jvp: Any, rule: Any,
                numpy: str | None, latex: str, written_param: str | None = None, **fields: Any) -> Op:
    """The registry entry (``ops.Op``) of an op that is not elementwise (fields as in the module
    docstring).  ``written`` is the form without arguments (``sum({x})``); ``arguments`` the
    constant arguments a call takes after its operands (``Argument`` rows: ``sum(x, 1,
    keepdim)``), which the compiler reads by this schema and packs into the instruction's param
    (``argument_values`` unpacks it); ``written_param`` is indexing's form (``{x}[{index}]``).
    ``registry.write``, ``numpy_form`` and ``latex_form`` fill in the operands and arguments.  An
    op of no operands (``arange``) is a constant the compiler makes from its arguments (``shape``
    and ``forward`` with np None).  ``numpy`` is the call ``diff --format python`` writes
    (``{axis}`` stands for ``, axis=k`` or nothing, each argument by its name), None for an
    operator laid out by precedence (``@``, indexing); ``numpy_helpers`` the ``(name, source)`` of
    each function of the generated module it calls, computing what ``forward`` computes (tested
    against it).  ``exact``: the result only copies or moves entries, so it adds no rounding
    error (``check`` reads it).  ``language_vjp``: the VJP written in the language's own ops,
    which ``diff`` writes; ``unroll`` and ``reads``: the op on one row's scalars, and the entries
    of its operands that some entries of its result read (the sections above the table say how
    each is called).  ``indices``: the operands read as whole numbers (gather's index tensor,
    one_hot's and cross_entropy's labels), which have no derivative and which ``check`` does not
    move.  ``rule_n(operand, shapes, out_shape)``: for a rule that divides by n, what n is for
    these shapes (explain notes it), or None."""
    return Op(name, arity, written, rule=rule, numpy=numpy, latex=latex, shape=shape, forward=forward, vjp=vjp,
              jvp=jvp, written_param=written_param, **fields)


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
    """x as an array of floats: float32 stays float32, anything else is float64 (no copy for
    float64 arrays)."""
    if x.__class__ is np.ndarray and x.dtype.char in "df":  # the usual case, decided without a call into NumPy
        return x
    return x if getattr(x, "dtype", None) == np.float32 else np.asarray(x, dtype=np.float64)


def _float_type(np: Any, x: Any) -> Any:
    """The precision of results made from x: float32 for float32 arrays, else float64."""
    return np.float32 if getattr(x, "dtype", None) == np.float32 else np.float64


def _zeros_like(np: Any, like: Array) -> Array:
    """New zeros of ``like``'s shape, in its precision (a zero gradient or tangent of a float32
    value is float32, or it would turn the sweep's sums into float64)."""
    return np.zeros(np.shape(like), dtype=_float_type(np, like))


def _fresh(np: Any, value: Array, shape: Shape) -> Array:
    """A new writable array of ``shape`` holding ``value`` broadcast (one pass): float64, or
    float32 when ``value`` is a float32 array."""
    out = np.empty(shape, dtype=_float_type(np, value))
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
    g_shape = g.shape if g.__class__ is np.ndarray else np.shape(g)
    if g_shape == shape:
        return g
    extra = len(g_shape) - len(shape)
    added = tuple(range(lead, lead + extra))  # after a batched operand's batch axis, else in front
    stretched = tuple(i + extra for i in range(lead, len(shape)) if shape[i] == 1 and g_shape[i + extra] != 1)
    return np.add.reduce(g, axis=added + stretched).reshape(shape)


def _rows(np: Any, args: Any, leads: Any) -> list[Shape]:
    return [row_shape(np, a, lead) for a, lead in zip(args, leads)]


def elementwise_forward(np: Any, name: str, args: Any, leads: Any, param: Any = None) -> tuple[Array, Any]:
    """``OPS[name].vector`` on broadcast operands: (out, slopes), ``slopes()`` the local derivatives."""
    rows = _rows(np, args, leads)
    if len(rows) == 2 and rows[0] != rows[1]:  # per-row shapes that broadcast (or clash)
        shape = broadcast_shape(rows)  # ShapeMismatch here, not a NumPy traceback
        if any(leads):
            args = [align(np, a, lead, r, len(shape)) for a, lead, r in zip(args, leads, rows)]
    # (equal per-row shapes: NumPy lines a batch axis up with the other operand's missing one)
    vector = OPS[name].vector
    if name == "**c":
        return vector(np, args[0], param)
    return vector(np, *args)


def elementwise_vjp(np: Any, name: str, g: Array, slopes: Any, args: Any, leads: Any,
                    needs: Any = None, reached: Any = None) -> tuple[Array | None, ...]:
    """dL/darg = dL/dout * slope, summed back over what broadcasting stretched (each the shape of its arg);
    None for an operand that ``needs`` says no gradient is wanted of.  ``reached`` (a boolean
    array shaped like the result, or None: all) marks the entries the sweep's seed reaches: the
    others add nothing, even through an infinite slope, where 0 * inf would make a NaN."""
    # A slope of exactly 1 (+, -, =) passes g on as it is, so two operands may share one array:
    # the executors never write into a gradient (the eager Tensor copies what it accumulates).
    needs = needs or (True,) * len(args)
    if reached is not None and not reached.all():
        return tuple(unbroadcast(np, np.where(reached, g * s, 0.0), np.shape(a), lead) if need else None
                     for s, a, lead, need in zip(slopes(), args, leads, needs))
    grads = []
    for s, a, lead, need in zip(slopes(), args, leads, needs):
        if not need:
            grads.append(None)
            continue
        shape = a.shape if a.__class__ is np.ndarray else np.shape(a)
        grads.append(unbroadcast(np, g if s.__class__ is float and s == 1.0 else g * s, shape, lead))
    return tuple(grads)


def elementwise_jvp(np: Any, name: str, tangents: Any, slopes: Any, args: Any, leads: Any,
                    reached: Any = None) -> Array:
    """d out = sum of slope * d arg over the operands whose tangent is not None, shaped like out.
    ``reached`` (one boolean array or None per operand) marks the entries a seed reaches: an
    entry it does not reach adds nothing, even through an infinite slope (sqrt at 0), where
    0 * inf would make a NaN, as the scalar engine's forward mode does."""
    rows = _rows(np, args, leads)
    shape = _batch(np, args, leads) + broadcast_shape(rows)
    total = None
    for k, (t, s, lead, r) in enumerate(zip(tangents, slopes(), leads, rows)):
        if t is not None:
            ndim = len(shape) - bool(any(leads))
            term = s * align(np, t, lead, r, ndim)
            mask = None if reached is None else reached[k]
            if mask is not None and not mask.all():
                term = np.where(align(np, mask, lead, r, ndim), term, 0.0)
            total = term if total is None else total + term
    if total is None or np.shape(total) != shape:  # a tangent only of the smaller operand
        return _fresh(np, _float_type(np, args[0])(0) if total is None else total, shape)
    return total


# --- an elementwise op's entry: the fields every entry has, filled in from its kernels ------------------


def _broadcast_rule(shapes: Any, param: Any) -> Shape:
    return broadcast_shape(shapes)


def _elementwise_language_vjp(b: Any, g: Any, args: Any, out: Any, shapes: Any, out_shape: Shape, param: Any,
                              needs: Any) -> tuple[Any, ...]:
    """g times the entry's local derivative (its ``symbolic`` rule, which the builder writes in
    terms of the operands), summed back over what broadcasting stretched."""
    grads = []
    for k, (x, shape, need) in enumerate(zip(args, shapes, needs)):
        slope = b.local_derivative(k, args, out, param) if need else None  # None: 0, no term
        grads.append(None if slope is None else b.sum_to(b.apply("*", g, slope), out_shape, x, shape))
    return tuple(grads)


def _elementwise_reads(np: Any, param: Any, mask: Any, shapes: Any) -> list[Any]:
    return [unbroadcast_mask(np, mask, shape) for shape in shapes]  # each entry reads its broadcast operands'


def elementwise_entry(op: Op) -> Op:
    """An elementwise op's row (``ops.OPS``) as a registry entry: the fields every entry has
    (shape rule, forward, VJP, JVP, the VJP in the language's ops, the unrolling, the entries
    read) filled in from its kernels and broadcasting, so a consumer calls ``entry.forward``
    or ``entry.vjp`` of any entry alike.  ``forward.saving`` and ``vjp.from_saved`` keep the
    local derivatives of a forward for its VJP, as the executors and the eager Tensor do."""
    name = op.name

    def saving(np: Any, args: Any, leads: Any, param: Any) -> tuple[Array, Any]:
        return elementwise_forward(np, name, args, leads, param)

    def forward(np: Any, args: Any, leads: Any, param: Any) -> Array:
        return elementwise_forward(np, name, args, leads, param)[0]

    def from_saved(np: Any, g: Array, slopes: Any, args: Any, leads: Any, param: Any,
                   needs: Any = None) -> tuple[Array | None, ...]:
        return elementwise_vjp(np, name, g, slopes, args, leads, needs)

    def vjp(np: Any, g: Array, out: Array, args: Any, leads: Any, param: Any,
            needs: Any = None) -> tuple[Array | None, ...]:
        return from_saved(np, g, saving(np, args, leads, param)[1], args, leads, param, needs)

    def jvp(np: Any, tangents: Any, out: Array, args: Any, leads: Any, param: Any) -> Array:
        return elementwise_jvp(np, name, tangents, saving(np, args, leads, param)[1], args, leads)

    def unroll(np: Any, emitter: Any, run: Any, ids: Any, first: int, second: int, param: Any, where: Any,
               mask: Any = None) -> Any:
        operands = np.broadcast_arrays(*(np.asarray(ids[r]) for r in (first, second)[:op.arity]))
        out = np.full(operands[0].shape, -1, dtype=np.int64)
        for index in emitter.indices(out.shape, mask):
            out[index] = emitter.emit(name, tuple(int(a[index]) for a in operands), param, where)
        return out

    forward.saving = saving  # type: ignore[attr-defined]
    saving.checks_shapes = True  # type: ignore[attr-defined]  # (broadcasting's clashes, as forward)
    vjp.from_saved = from_saved  # type: ignore[attr-defined]
    return op._replace(elementwise=True, shape=_broadcast_rule, forward=forward, vjp=vjp, jvp=jvp,
                       language_vjp=_elementwise_language_vjp, unroll=unroll, reads=_elementwise_reads)


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
    s = x.shape
    if len(s) - lead != 1:
        return x
    return x.reshape(s[:lead] + ((1, s[-1]) if left else (s[-1], 1)))


def _rowwise(np: Any, p: Array, q: Array, lead_p: int, lead_q: int) -> Array:
    """Each row's ``p @ q`` for per-row matrices, where at most one carries the batch axis, as one
    matrix product: np.matmul of a stack against one matrix would make a small product per row."""
    if lead_p and not lead_q:  # (N, n, k) @ (k, m): the rows of every p_N, stacked
        n_rows, n, k = p.shape
        return np.matmul(p.reshape(n_rows * n, k), q).reshape(n_rows, n, q.shape[-1])
    if lead_q and not lead_p:  # (n, k) @ (N, k, m), as (q_N^T @ p^T)^T with the q_N^T stacked
        n_rows, k, m = q.shape
        stacked = q.swapaxes(1, 2).reshape(n_rows * m, k)
        return np.matmul(stacked, p.swapaxes(-1, -2)).reshape(n_rows, m, p.shape[0]).swapaxes(1, 2)
    return np.matmul(p, q)


def _matmul_forward(np: Any, args: Any, leads: Any, param: Any) -> Array:
    x, y = _f64(np, args[0]), _f64(np, args[1])
    lead_x, lead_y = leads
    if lead_y and not lead_x and x.ndim == 2 and y.ndim == 2 and x.shape[1] == y.shape[1]:
        return np.matmul(y, x.T)  # W @ x per row: (N, k) @ W^T, one product
    if lead_y and not lead_x and x.ndim == 1 and y.ndim == 2 and x.shape[0] == y.shape[1]:
        # w @ h per row, a number a row: the general path's own product (the same operands, so the
        # same bits), without its bookkeeping
        n_rows, k = y.shape
        stacked = y.reshape(n_rows, k, 1).swapaxes(1, 2).reshape(n_rows, k)
        return np.matmul(stacked, x.reshape(1, k).swapaxes(-1, -2)).reshape(n_rows)
    shape = _batch(np, args, leads) + _matmul_shape(_rows(np, args, leads), None)
    # one matrix product; the axes _lift added are then dropped by the reshape
    product = _rowwise(np, _lift(np, x, lead_x, True), _lift(np, y, lead_y, False), lead_x, lead_y)
    return product.reshape(shape)


def _swap(np: Any, m: Array) -> Array:
    return m.swapaxes(-1, -2)


def _matmul_vjp(np: Any, g: Array, out: Array, args: Any, leads: Any, param: Any,
                needs: Any = (True, True), into: Any = None) -> tuple[Array | None, Array | None]:
    """``into``: an array (or None) per operand that its share may be written into (fit's flat
    gradient), where the product is made in one piece; the share returned is then that array."""
    x, y = _f64(np, args[0]), _f64(np, args[1])
    if leads[1] and not leads[0] and x.ndim == 2 and y.ndim == 2:  # W @ x per row: out (N, n) = y @ W^T
        to = into[0] if into is not None else None
        return (None if not needs[0] else np.matmul(g.T, y) if to is None else np.matmul(g.T, y, out=to),
                None if not needs[1] else np.matmul(g, x))  # dW = sum_N g_N y_N^T; dy_N = W^T g_N
    if leads[1] and not leads[0] and x.ndim == 1 and y.ndim == 2:  # w @ h per row: g (N,)
        # the general path's own products (the same operands, so the same bits), without its bookkeeping
        n_rows, k = y.shape
        gm = g.reshape(n_rows, 1, 1)
        return (None if not needs[0] else
                np.matmul(_swap(np, gm.reshape(n_rows, 1)), y.reshape(n_rows, k, 1).reshape(n_rows, k)).reshape(k),
                None if not needs[1] else
                np.matmul(gm.swapaxes(1, 2).reshape(n_rows, 1), x.reshape(1, k)).reshape(n_rows, k))
    a, b = _lift(np, x, leads[0], True), _lift(np, y, leads[1], False)  # (n, k) and (k, m) per row
    batched = leads[0] or leads[1]
    g_shape = g.shape
    gm = g.reshape(g_shape[:1] * bool(batched) + (a.shape[-2], b.shape[-1]))  # (n, m) per row
    n_rows = g_shape[0] if batched else 0
    # dL/dx = dL/dout @ y^T.  An unbatched x of a batched result sums sum_N g_N y_N^T, which is
    # one product with the batch folded into the contracted axis: (n, N*m) @ (N*m, k).
    if not needs[0]:
        gx = None
    elif batched and not leads[0]:
        n, m, k = gm.shape[1], gm.shape[2], b.shape[-2]
        if m == 1:  # y a vector per row (W @ x): (n, N) @ (N, k) as a transposed view, not a copy of g
            gx = np.matmul(_swap(np, gm.reshape(n_rows, n)), b.reshape(n_rows, k))
        else:
            gx = np.matmul(gm.swapaxes(0, 1).reshape(n, n_rows * m), _swap(np, b).reshape(n_rows * m, k))
    else:
        gx = _rowwise(np, gm, _swap(np, b), bool(batched), leads[1])
    # dL/dy = x^T @ dL/dout; for an unbatched y, (k, N*n) @ (N*n, m).
    if not needs[1]:
        gy = None
    elif batched and not leads[1]:
        n, m, k = gm.shape[1], gm.shape[2], a.shape[-1]
        gy = np.matmul(_swap(np, a.reshape(n_rows * n, k)), gm.reshape(n_rows * n, m))
    else:
        gy = _rowwise(np, _swap(np, a), gm, leads[0], bool(batched))
    return (None if gx is None else gx.reshape(x.shape),
            None if gy is None else gy.reshape(y.shape))


_matmul_vjp.takes_out = True  # type: ignore[attr-defined]  # read by the executor: ``into=``


def _matmul_jvp(np: Any, tangents: Any, out: Array, args: Any, leads: Any, param: Any) -> Array:
    # d(x @ y) = dx @ y + x @ dy: the product is linear in each operand
    tx, ty = tangents
    total = None
    if tx is not None:
        total = _matmul_forward(np, (tx, args[1]), leads, None)
    if ty is not None:
        term = _matmul_forward(np, (args[0], ty), leads, None)
        total = term if total is None else total + term
    return _zeros_like(np, out) if total is None else total


# --- reductions: sum, mean, max, min --------------------------------------------------------------

_AXIS = Argument("axis", "axis", None, "axis")
_KEEPDIM = Argument("keepdim", "word", False, "keepdims")
_REDUCTION_ARGUMENTS = (_AXIS, _KEEPDIM)


def _reduction(param: Any) -> tuple[Any, bool]:
    """A reduction's axis (None: every element) and whether it keeps the axes it reduces, as
    size 1 (``sum(x, 1, keepdim)``, NumPy's keepdims=True, PyTorch's keepdim=True)."""
    axis, keepdim = argument_values(_REDUCTION_ARGUMENTS, param)
    return axis, bool(keepdim)


def _reduce_shape(name: str) -> Any:
    def shape(shapes: Any, param: Any) -> Shape:
        (s,) = (tuple(s) for s in shapes)
        axis, keepdim = _reduction(param)
        if axis is None:
            if name != "sum" and math.prod(s) == 0:  # the sum of nothing is 0; its mean, max, min none
                raise ShapeMismatch(f"{format_shape(s)}: {name} of no elements has no value",
                                    f"{name} needs at least one element")
            return (1,) * len(s) if keepdim else ()
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
        return s[:axis % r] + ((1,) if keepdim else ()) + s[axis % r + 1:]

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


def _sum_forward(np: Any, args: Any, leads: Any, param: Any) -> Array:
    x = _f64(np, args[0])
    _reduce_shape("sum")(_rows(np, args, leads), param)
    axis, keepdim = _reduction(param)
    return np.sum(x, axis=_axes(np.ndim(x), leads[0], axis), keepdims=keepdim)


def _spread_back(np: Any, g: Array, x: Array, lead: int, param: Any) -> Array:
    """A reduction's result (or its gradient) with its reduced axes back as size 1, to
    broadcast against x: as it is when the reduction kept them."""
    axis, keepdim = _reduction(param)
    return g if keepdim else _keep(np, g, _axes(np.ndim(x), lead, axis))


def _sum_vjp(np: Any, g: Array, out: Array, args: Any, leads: Any, param: Any) -> tuple[Array]:
    # every element of x adds 1 * itself to its total: each gets its total's gradient
    x = args[0]
    return (_fresh(np, _spread_back(np, g, x, leads[0], param), np.shape(x)),)


def _sum_jvp(np: Any, tangents: Any, out: Array, args: Any, leads: Any, param: Any) -> Array:
    (t,) = tangents
    return _zeros_like(np, out) if t is None else _sum_forward(np, (t,), leads, param)


def _mean_forward(np: Any, args: Any, leads: Any, param: Any) -> Array:
    x = _f64(np, args[0])
    _reduce_shape("mean")(_rows(np, args, leads), param)
    axis, keepdim = _reduction(param)
    axes = _axes(np.ndim(x), leads[0], axis)
    with np.errstate(over="ignore"):  # looked for here: an overflowed sum is redone
        out = np.mean(x, axis=axes, keepdims=keepdim)
        if not np.all(np.isfinite(out)) and np.all(np.isfinite(x)):
            # the sum overflowed though the mean does not (mean([1e308, 1e308])): divide first
            out = np.sum(x / _count(np, x, leads[0], axis), axis=axes, keepdims=keepdim)
    return out


def _mean_vjp(np: Any, g: Array, out: Array, args: Any, leads: Any, param: Any) -> tuple[Array]:
    # a mean of n elements is their sum / n: each gets dL/dout / n
    x = args[0]
    n = _count(np, x, leads[0], _reduction(param)[0])
    return (_fresh(np, _spread_back(np, g, x, leads[0], param) / n, np.shape(x)),)


def _mean_jvp(np: Any, tangents: Any, out: Array, args: Any, leads: Any, param: Any) -> Array:
    (t,) = tangents
    return _zeros_like(np, out) if t is None else _mean_forward(np, (t,), leads, param)


def _extreme(name: str) -> tuple[Any, Any, Any]:
    """max or min: forward, VJP and JVP.  At a tie the gradient is split evenly among the
    elements equal to the extreme (k of them get 1/k each), as jnp.max and torch.amax do: the
    mean of the one-sided derivatives, and a sum of the gradients that stays 1."""
    reduce = "max" if name == "max" else "min"

    def forward(np: Any, args: Any, leads: Any, param: Any) -> Array:
        x = _f64(np, args[0])
        _reduce_shape(name)(_rows(np, args, leads), param)
        axis, keepdim = _reduction(param)
        return getattr(np, reduce)(x, axis=_axes(np.ndim(x), leads[0], axis), keepdims=keepdim)

    def share(np: Any, out: Array, x: Array, lead: int, param: Any) -> Array:
        """Each element's share of its extreme: 1/k where it ties with k-1 others, else 0."""
        axes = _axes(np.ndim(x), lead, _reduction(param)[0])
        hit = x == _spread_back(np, out, x, lead, param)
        with np.errstate(invalid="ignore", divide="ignore"):  # a NaN row has no hit: 0/0 -> NaN
            return (hit / np.sum(hit, axis=axes, keepdims=True)).astype(_float_type(np, x), copy=False)

    def vjp(np: Any, g: Array, out: Array, args: Any, leads: Any, param: Any) -> tuple[Array]:
        x = _f64(np, args[0])
        return (share(np, out, x, leads[0], param) * _spread_back(np, g, x, leads[0], param),)

    def jvp(np: Any, tangents: Any, out: Array, args: Any, leads: Any, param: Any) -> Array:
        (t,) = tangents
        if t is None:
            return _zeros_like(np, out)
        x = _f64(np, args[0])
        axis, keepdim = _reduction(param)
        # the mean of the tied elements' tangents
        return np.sum(share(np, out, x, leads[0], param) * t, axis=_axes(np.ndim(x), leads[0], axis),
                      keepdims=keepdim)

    return forward, vjp, jvp


# --- var and std: the spread about the mean, with a correction ----------------------------------------
# correction c divides the sum of squares by n - c: 1 (the default) is Bessel's n - 1, as
# PyTorch's default and the makemore batch norm; 0 divides by n, as NumPy's default.

_VARIANCE_ARGUMENTS = (_AXIS, _KEEPDIM, Argument("correction", "count", 1, ""))


def _variance(param: Any) -> tuple[Any, bool, int, Any]:
    """axis, keepdim, correction, and the same reduction as a ``sum``'s or ``mean``'s param."""
    axis, keepdim, correction = argument_values(_VARIANCE_ARGUMENTS, param)
    return axis, bool(keepdim), correction, pack_arguments(_REDUCTION_ARGUMENTS, (axis, keepdim))


def _variance_shape(name: str) -> Any:
    def shape(shapes: Any, param: Any) -> Shape:
        axis, _, correction, reduction = _variance(param)
        out = _reduce_shape(name)(shapes, reduction)
        s = tuple(shapes[0])
        n = math.prod(s) if axis is None else s[axis]
        if n - correction <= 0:
            where = "of all" if axis is None else f"along axis {axis} of"
            raise ShapeMismatch(f"{format_shape(s)}: {name} {where} {n} entr{'y' if n == 1 else 'ies'} with correction "
                                f"{correction} divides by n - {correction} = {n - correction}",
                                f"the correction must be smaller than the number of entries: write {name}(x, axis, 0) "
                                f"to divide by n, or give it more entries")
        return out

    return shape


def _variance_parts(np: Any, x: Array, lead: int, param: Any) -> tuple[Array, Any, int, Any]:
    """x - mean(x) along the reduction (the mean kept as size-1 axes), the NumPy axes, and
    n - correction."""
    axis, _, correction, _ = _variance(param)
    axes = _axes(np.ndim(x), lead, axis)
    d = x - np.mean(x, axis=axes, keepdims=True)
    return d, axes, _count(np, x, lead, axis) - correction


def _variance_ops(name: str) -> tuple[Any, Any, Any]:
    """var or std: forward (NumPy's own, so diff's NumPy form is the same bits), VJP and JVP."""
    root = name == "std"

    def forward(np: Any, args: Any, leads: Any, param: Any) -> Array:
        x = _f64(np, args[0])
        _variance_shape(name)(_rows(np, args, leads), param)
        axis, keepdim, correction, _ = _variance(param)
        return getattr(np, name)(x, axis=_axes(np.ndim(x), leads[0], axis), ddof=correction, keepdims=keepdim)

    def slope(np: Any, out: Array, x: Array, lead: int, param: Any) -> Array:
        """d out / d x: 2 (x - mean) / (n - c) for var; for std that over 2 std, and 0 where
        std is 0 (every entry equal: PyTorch's choice, where the one-sided slopes disagree)."""
        d, axes, divisor = _variance_parts(np, x, lead, param)
        if not root:
            return d * (2.0 / divisor)
        kept = _spread_back(np, out, x, lead, _variance(param)[3])
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(kept == 0.0, 0.0, d / (kept * divisor))

    def vjp(np: Any, g: Array, out: Array, args: Any, leads: Any, param: Any) -> tuple[Array]:
        x = _f64(np, args[0])
        return (slope(np, out, x, leads[0], param) * _spread_back(np, g, x, leads[0], _variance(param)[3]),)

    def jvp(np: Any, tangents: Any, out: Array, args: Any, leads: Any, param: Any) -> Array:
        (t,) = tangents
        if t is None:
            return _zeros_like(np, out)
        x = _f64(np, args[0])
        axis, keepdim, _, _ = _variance(param)
        total = np.sum(slope(np, out, x, leads[0], param) * t, axis=_axes(np.ndim(x), leads[0], axis), keepdims=keepdim)
        return _fresh(np, total, np.shape(out))

    return forward, vjp, jvp


# --- values that carry no gradient: ones_like, zeros_like, argmax, one_hot ---------------------------
# Their results are constant where they are defined (a shape's ones, an index, a class's row), so
# the derivative is 0: the VJP gives zeros, the JVP zeros, and diff writes no term for them.


def _no_gradient(np: Any, g: Array, out: Array, args: Any, leads: Any, param: Any) -> tuple[Array]:
    return (np.zeros(np.shape(args[0]), dtype=_float_type(np, args[0])),)


def _no_tangent(np: Any, tangents: Any, out: Array, args: Any, leads: Any, param: Any) -> Array:
    return _zeros_like(np, out)


def _no_language_vjp(b: Any, g: Any, args: Any, out: Any, shapes: Any, out_shape: Shape, param: Any,
                     needs: Any) -> tuple[Any, ...]:
    return (None,)


def _same_shape(shapes: Any, param: Any) -> Shape:
    return tuple(shapes[0])


def _filled_like(value: float) -> Any:
    def forward(np: Any, args: Any, leads: Any, param: Any) -> Array:
        return np.full(np.shape(args[0]), value, dtype=_float_type(np, args[0]))

    return forward


def _constant_unroll(values: Any) -> Any:
    """An op whose entries are constants worked out from its operand's values (read as numbers,
    not unrolled): one constant register per entry."""

    def unroll(np: Any, emitter: Any, run: Any, ids: Any, first: int, second: int, param: Any, where: Any,
               mask: Any = None) -> Any:
        numbers = values(np, np.asarray(run.values[first]), param)
        out = np.full(np.shape(numbers), -1, dtype=np.int64)
        for index in emitter.indices(out.shape, mask):
            out[index] = emitter.const(float(numbers[index]), where)
        return out

    return unroll


def _reads_nothing(np: Any, param: Any, mask: Any, shapes: Any) -> list[Any]:
    return [np.zeros(shapes[0], dtype=bool)]  # the operand's values are read as numbers, not unrolled


def _argmax_forward(np: Any, args: Any, leads: Any, param: Any) -> Array:
    x = _f64(np, args[0])
    _reduce_shape("argmax")(_rows(np, args, leads), param)
    axis, keepdim = _reduction(param)
    lead = leads[0]
    if axis is None and lead:  # the flat index within each row
        flat = np.argmax(np.reshape(x, (np.shape(x)[0], -1)), axis=1)
        index = np.reshape(flat, (-1,) + (1,) * (np.ndim(x) - 1)) if keepdim else flat
    else:
        index = np.argmax(x, axis=_axes(np.ndim(x), lead, axis), keepdims=keepdim)
    return np.asarray(index, dtype=_float_type(np, x))  # the first index of a tie, as NumPy and PyTorch


def _argmax_values(np: Any, x: Array, param: Any) -> Array:
    return _argmax_forward(np, (x,), (0,), param)


def _one_hot_shape(shapes: Any, classes: Any) -> Shape:
    (s,) = (tuple(x) for x in shapes)
    if classes < 1:
        raise ShapeMismatch(f"{format_shape(s)}: one_hot of {classes} classes has no class to mark",
                            "give the number of classes, 1 or more: one_hot(y, 27)")
    return s + (classes,)


def _one_hot_forward(np: Any, args: Any, leads: Any, classes: Any) -> Array:
    _one_hot_shape(_rows(np, args, leads), classes)
    y = _f64(np, args[0])
    with np.errstate(invalid="ignore"):
        ok = (y == np.floor(y)) & (y >= 0.0) & (y < classes)  # False for NaN and infinities
    if not np.all(ok):
        where = tuple(int(i) for i in np.argwhere(~np.asarray(ok))[0]) if np.ndim(y) else ()
        entry = (f"row {where[0]}, entry {list(where[1:])}" if leads[0] and len(where) > 1 else f"row {where[0]}"
                 if leads[0] else f"entry {list(where)}" if where else "the label")
        bad = float(np.asarray(y)[where])
        raise DomainError("one_hot", f"{entry} is {short_number(bad)}, not a class: with {classes} classes a class "
                                     f"is a whole number from 0 to {classes - 1}")
    return (y[..., None] == np.arange(classes)).astype(_float_type(np, y))


def _one_hot_values(np: Any, y: Array, classes: Any) -> Array:
    return _one_hot_forward(np, (y,), (0,), classes)


_ONE_HOT_NP = ("_one_hot", "def _one_hot(y, classes):\n"
                           "    return (np.asarray(y)[..., None] == np.arange(classes)).astype(np.float64)\n")


# --- arange: a constant made when the program is compiled ------------------------------------------
# An op of no operands: the compiler writes its value into the program as a constant (a list
# literal), so no executor, differentiator or picture ever meets it; ``forward`` with np None
# gives the entries as a tuple of floats.

MAX_MADE = 10_000_000  # entries arange writes into a program: as a list literal, each a Python float


def _arange_shape(shapes: Any, count: Any) -> Shape:
    if count > MAX_MADE:
        raise ShapeMismatch(f"arange({count}): {count:,} entries are more than a program holds as a constant "
                            f"({MAX_MADE:,})", "give such a range as data (a column, or --set with a .npy file)")
    return (count,)


def _arange_forward(np: Any, args: Any, leads: Any, count: Any) -> Any:
    entries = tuple(float(i) for i in range(count))
    return entries if np is None else np.asarray(entries)


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
    return _zeros_like(np, out) if t is None else np.array(np.swapaxes(t, -1, -2))


# --- reshape -------------------------------------------------------------------------------------


def _reshape_target(s: Shape, wanted: Any) -> Shape:
    """The shape ``reshape`` gives an operand of shape ``s``: ``wanted`` with its one -1 worked
    out, or ShapeMismatch saying why it cannot hold the same entries."""
    wanted = tuple(wanted)
    written = f"{format_shape(s)} to {format_shape(wanted)}"
    example = "e.g. reshape(x, [32, -1]) keeps the first axis at 32 and puts the rest in the second"
    if sum(n == -1 for n in wanted) > 1:
        raise ShapeMismatch(f"{written}: only one size may be -1 (the one worked out)", example)
    if any(n < -1 for n in wanted):
        bad = next(n for n in wanted if n < -1)
        raise ShapeMismatch(f"{written}: a size cannot be {bad}", "sizes are 0 or more, or -1 for the one worked out")
    total, known = math.prod(s), math.prod(n for n in wanted if n != -1)
    if -1 in wanted:
        if known == 0 or total % known:
            raise ShapeMismatch(f"{written}: {total} entries are not a whole multiple of {known}",
                                f"the sizes other than -1 must multiply to a divisor of {total}")
        return tuple(total // known if n == -1 else n for n in wanted)
    if known != total:
        raise ShapeMismatch(f"{written}: {total} entries cannot fill {known}",
                            f"the sizes must multiply to {total}, the number of entries; "
                            "write -1 for one size to have it worked out")
    return wanted


def _reshape_shape(shapes: Any, wanted: Any) -> Shape:
    (s,) = (tuple(x) for x in shapes)
    return _reshape_target(s, wanted)


def _reshape_forward(np: Any, args: Any, leads: Any, wanted: Any) -> Array:
    x = _f64(np, args[0])
    lead = leads[0]
    target = _reshape_target(np.shape(x)[lead:], wanted)
    return np.reshape(x, np.shape(x)[:lead] + target)  # row-major, as NumPy and PyTorch: a view where it can


def _reshape_vjp(np: Any, g: Array, out: Array, args: Any, leads: Any, wanted: Any) -> tuple[Array]:
    # a reshape moves no entry in row-major order: the gradient is reshaped back
    return (np.array(np.reshape(g, np.shape(args[0])), dtype=_float_type(np, g)),)


def _reshape_jvp(np: Any, tangents: Any, out: Array, args: Any, leads: Any, wanted: Any) -> Array:
    (t,) = tangents
    return _zeros_like(np, out) if t is None else np.array(np.reshape(t, np.shape(out)))


def _reshape_language_vjp(b: Any, g: Any, args: Any, out: Any, shapes: Any, out_shape: Shape, wanted: Any,
                          needs: Any) -> tuple[Any, ...]:
    if not shapes[0]:  # back to a scalar: [] cannot be written, and the sum of its one entry is it
        return (b.apply("sum", g),)
    return (b.apply("reshape", g, param=tuple(shapes[0])),)


def _reshape_unroll(np: Any, emitter: Any, run: Any, ids: Any, first: int, second: int, wanted: Any, where: Any,
                    mask: Any = None) -> Any:
    x = np.asarray(ids[first])
    return x.reshape(_reshape_target(x.shape, wanted))


def _reshape_reads(np: Any, wanted: Any, mask: Any, shapes: Any) -> list[Any]:
    return [np.reshape(mask, shapes[0])]


# --- softmax, log_softmax, logsumexp: along one per-row axis, the last unless given -------------------
# The kernels below work along the last array axis; ``_along_axis`` moves another axis there and
# back, so the default (the last axis) runs as it always has, to the bit.

_LAST_AXIS = Argument("axis", "axis", -1, "axis")


def _last_axis_shape(name: str, reduces: bool) -> Any:
    def shape(shapes: Any, param: Any) -> Shape:
        (s,) = (tuple(s) for s in shapes)
        axis = -1 if param is None else param
        if not s:
            along = "the last axis" if param is None else f"axis {axis}"
            raise ShapeMismatch(f"[]: {name} works along {along}, and a scalar has none",
                                f"give {name} a vector (or a matrix, one {name} per row)")
        r = len(s)
        if not -r <= axis < r:
            raise ShapeMismatch(f"{format_shape(s)}: axis {axis} is out of range for {r} {'axis' if r == 1 else 'axes'}",
                                f"the axes of {format_shape(s)} are 0 to {r - 1}, or -{r} to -1 counting from the end")
        if s[axis] == 0:  # as max of nothing: refused before anything runs, not a NumPy error
            what = "has no value" if reduces else "has nothing to normalize"
            last = axis % r == r - 1
            raise ShapeMismatch(f"{format_shape(s)}: {name} along {'a last axis' if last else f'axis {axis}'} of size 0 "
                                f"{what}", f"{name} needs at least one element along the {'last ' if last else ''}axis; "
                                "check the slice or shape that left it empty")
        k = axis % r
        return s[:k] + s[k + 1:] if reduces else s

    return shape


def _moved_axis(np: Any, x: Array, lead: int, param: Any) -> Any:
    """The array axis a softmax-like op works along, or None when it is the last (no move)."""
    axis = -1 if param is None else param
    k = axis + lead if axis >= 0 else np.ndim(x) + axis
    return None if k == np.ndim(x) - 1 else k


def _along_axis(name: str, reduces: bool, forward: Any, vjp: Any, jvp: Any) -> tuple[Any, Any, Any]:
    """A last-axis kernel's forward, VJP and JVP along the axis a call gives: that axis moved to
    the end (a view), the kernel, and the result's axis moved back."""

    def to_end(np: Any, a: Array, k: int) -> Array:
        return np.moveaxis(a, k, -1)

    def back(np: Any, a: Array, k: int) -> Array:
        return np.moveaxis(a, -1, k)

    def along_forward(np: Any, args: Any, leads: Any, param: Any) -> Array:
        k = _moved_axis(np, args[0], leads[0], param)
        if k is None:
            return forward(np, args, leads, None)  # the last axis: the kernel checks the shape itself
        _last_axis_shape(name, reduces)(_rows(np, args, leads), param)
        out = forward(np, (to_end(np, _f64(np, args[0]), k),), leads, None)
        return out if reduces else back(np, out, k)

    def along_vjp(np: Any, g: Array, out: Array, args: Any, leads: Any, param: Any) -> tuple[Array]:
        k = _moved_axis(np, args[0], leads[0], param)
        if k is None:
            return vjp(np, g, out, args, leads, None)  # type: ignore[no-any-return]
        if not reduces:
            g, out = to_end(np, g, k), to_end(np, out, k)
        (gx,) = vjp(np, g, out, (to_end(np, _f64(np, args[0]), k),), leads, None)
        return (back(np, gx, k),)

    def along_jvp(np: Any, tangents: Any, out: Array, args: Any, leads: Any, param: Any) -> Array:
        k = _moved_axis(np, args[0], leads[0], param)
        (t,) = tangents
        if k is None or t is None:
            return jvp(np, tangents, out, args, leads, None)
        dout = jvp(np, (to_end(np, t, k),), out if reduces else to_end(np, out, k),
                   (to_end(np, _f64(np, args[0]), k),), leads, None)
        return dout if reduces else back(np, dout, k)

    return along_forward, along_vjp, along_jvp


_Softmax = namedtuple("_Softmax", "m d e total rest log_total top")


def _stable(np: Any, x: Array) -> _Softmax:
    """The pieces of a softmax along the last axis (per-row ones with keepdims): the shift m
    (the row's max), d = x - m (no exp overflows), e = exp(d), total = sum(e), rest = that sum
    without the largest element (``top``, its index; its e is 1 on a row with a finite max),
    and log(total) = log1p(rest) there: log(1 + 1e-14) in floats would keep only a digit or two
    of it.  d is exact for logits near each other, however large (1e16 + log 2 would not be).
    A row whose max is not finite is shifted by 0 (-inf - -inf would be NaN)."""
    m = np.maximum.reduce(x, axis=-1, keepdims=True)  # (x.max's own reduction, without its Python wrapper)
    # (one max per row, a small array: its sum would be quicker, but warns where +inf meets -inf)
    finite = bool(np.logical_and.reduce(np.isfinite(m), axis=None))  # (True for no rows, as for none bad)
    if not finite:
        m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(over="ignore"):  # -1e308 - 1e308 is -inf, whose exp is the right 0
        d = x - m
    e = np.exp(d)
    top = x.argmax(axis=-1)[..., None]  # a largest element (the first NaN of a row with one)
    if finite and e.flags.c_contiguous:  # every row's e_top is exp(x_top - x_top) = 1 exactly
        at = _last_positions(np, top, e.shape[-1])
        flat = e.reshape(-1)
        flat[at] = 0.0
        rest = np.add.reduce(e, axis=-1, keepdims=True)  # (e.sum's own reduction)
        flat[at] = 1.0
        return _Softmax(m, d, e, rest + 1.0, rest, np.log1p(rest), top)  # (where's choice below, e_top == 1)
    if e.flags.c_contiguous:  # e is ours: the others' sum, then e_top back, through one flat view
        at = _last_positions(np, top, e.shape[-1])
        flat = e.reshape(-1)
        e_top = flat[at].reshape(top.shape)
        flat[at] = 0.0
        rest = e.sum(axis=-1, keepdims=True)
        flat[at] = e_top.reshape(-1)
    else:  # laid out as x is (a transposed x): the same, without a flat view
        e_top = _take_last(np, e, top)
        _put_last(np, e, top, 0.0)
        rest = e.sum(axis=-1, keepdims=True)
        _put_last(np, e, top, e_top)
    total = e_top + rest
    with np.errstate(divide="ignore", invalid="ignore"):  # a row of -inf sums to 0: log(0) = -inf
        log_total = np.where(e_top == 1.0, np.log1p(rest), np.log(total))
    return _Softmax(m, d, e, total, rest, log_total, top)


def _last_positions(np: Any, index: Array, size: int) -> Array:
    """Where each row's entry ``index`` (one per row of the last axis, shaped ``a.shape[:-1] +
    (1,)``) lies in the flat C-ordered array ``a`` whose last axis has ``size`` entries."""
    flat = index.reshape(-1)
    key = (flat.size, size)
    starts = _ROW_STARTS.get(key)
    if starts is None:  # the same few shapes every step: made once
        if len(_ROW_STARTS) > 64:
            _ROW_STARTS.clear()
        starts = _ROW_STARTS[key] = np.arange(0, flat.size * size, size)
    return starts + flat


_ROW_STARTS: dict[tuple[int, int], Any] = {}  # where each row starts in a flat array, by (rows, row length)


def _take_last(np: Any, a: Array, index: Array) -> Array:
    """``np.take_along_axis(a, index, axis=-1)`` for one index per row of the last axis (``index``
    shaped ``a.shape[:-1] + (1,)``), as one fancy index of ``a`` seen flat: the same entries,
    without take_along_axis's index building (the most of a small step's time)."""
    return a.reshape(-1)[_last_positions(np, index, a.shape[-1])].reshape(index.shape)


def _put_last(np: Any, a: Array, index: Array, values: Any) -> None:
    """``np.put_along_axis(a, index, values, axis=-1)`` likewise, into a C-contiguous ``a`` (a
    fresh array of the kernel's own, so that the flat array seen is a view and takes the writes)."""
    if not a.flags.c_contiguous:
        np.put_along_axis(a, index, values, axis=-1)
        return
    if np.ndim(values):
        values = (values if values.shape == index.shape else np.broadcast_to(values, index.shape)).reshape(-1)
    a.reshape(-1)[_last_positions(np, index, a.shape[-1])] = values


def _probabilities(np: Any, x: Array) -> tuple[Array, Array]:
    """softmax(x) = p and 1 - p = q, both to full relative precision: q of the largest element
    is the others' share (rest / total), not 1 - p, which is 0 when p rounds to 1 (elsewhere
    p <= 1/2, and 1 - p keeps every digit)."""
    s = _stable(np, x)
    with np.errstate(invalid="ignore"):  # a row of -inf is 0/0: NaN, as in PyTorch
        p = s.e / s.total
        q = 1.0 - p
        _put_last(np, q, s.top, s.rest / s.total)
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
        return _zeros_like(np, out)
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
        return _zeros_like(np, out)
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
        return _zeros_like(np, out)
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
    grad = np.zeros(np.shape(args[0]), dtype=_float_type(np, args[0]))
    grad[_key(leads[0], items)] = g
    return (grad,)


def _index_jvp(np: Any, tangents: Any, out: Array, args: Any, leads: Any, items: Any) -> Array:
    (t,) = tangents
    return _zeros_like(np, out) if t is None else _fresh(np, t[_key(leads[0], items)], np.shape(out))


# --- gather, pick, scatter: indexing by integer tensors -----------------------------------------------
# ``x[i]`` with i a tensor of whole numbers (``gather``: the rows of x that i names, NumPy's and
# PyTorch's ``C[Xb]``), ``pick(y, j)`` (one entry per position along the axis after j's axes,
# NumPy's take_along_axis; ``x[i, j]`` is ``pick(x[i], j)``) and ``scatter(g, i, n)`` (g put at
# i along a new axis of n entries, zeros elsewhere: pick's adjoint, and gather's before a sum).
# Indices arrive as floats (values of --set, columns): each op checks its own when it runs.
# Negative indices count from the end, as in NumPy and PyTorch: -n .. n-1 are taken.

GATHER, PICK, SCATTER = "gather", "pick", "scatter"  # the names the compiler emits for subscripts
_MOST_ENTRIES = 1_000_000_000  # as the language's initializers: a tensor larger is no program's


def _whole_indices(np: Any, op: str, index: Array, lead: int, size: int) -> Array:
    """The entries of an index tensor as ``intp`` from 0 to size - 1 (negative ones counted from
    the end), or DomainError naming the first entry that is not a whole number from -size to
    size - 1: its place (without the batch axis) and its value."""
    index = np.asarray(index)
    with np.errstate(invalid="ignore"):  # NaN and infinities cast to some integer, which differs from them
        cast = index.astype(np.intp)
    ok = (cast == index) & (cast >= -size) & (cast < size)
    if ok.all():
        return np.where(cast < 0, cast + size, cast) if size and (cast < 0).any() else cast
    bad = tuple(int(i) for i in np.argwhere(~ok)[0]) if index.ndim else ()
    where = f"the index's entry [{', '.join(map(str, bad[lead:]))}]" if bad[lead:] else "the index"
    value = float(index[bad])
    whole = math.isfinite(value) and value == math.floor(value)
    what = f"out of range for an axis of {size}" if whole else "not a whole number"
    if not size:
        raise DomainError(op, f"{where} is {short_number(value)}, but the axis it indexes is empty: "
                              "there is no entry to take")
    raise DomainError(op, f"{where} is {short_number(value)}, {what}: indices of an axis of {size} "
                          f"are whole numbers from -{size} to {size - 1} (negative ones count from the end)")


def _gather_shape(shapes: Any, param: Any) -> Shape:
    x, i = (tuple(s) for s in shapes)
    if not x:
        raise ShapeMismatch(f"{format_shape(x)} indexed by {format_shape(i)}: a scalar has no axes to index",
                            "index a vector or a matrix: C[i] takes the rows of C that i names")
    return i + x[1:]


def _gather_key(np: Any, args: Any, leads: Any) -> tuple[Any, ...]:
    """The NumPy index that takes x's rows at i, for each pattern of batched operands."""
    x, index = args
    lead_x, lead_i = leads
    rows = _whole_indices(np, GATHER, index, lead_i, np.shape(x)[lead_x])
    if not lead_x:
        return (rows,)
    if not lead_i:
        return (slice(None), rows)  # every row of the batch takes the same entries
    n = np.shape(x)[0]
    return (np.arange(n).reshape((n,) + (1,) * (rows.ndim - 1)), rows)  # row r takes its own


def _gather_forward(np: Any, args: Any, leads: Any, param: Any) -> Array:
    _gather_shape(_rows(np, args, leads), param)
    return _f64(np, args[0])[_gather_key(np, args, leads)]


def _gather_vjp(np: Any, g: Array, out: Array, args: Any, leads: Any, param: Any,
                needs: Any = (True, True)) -> tuple[Array | None, Array | None]:
    # each row taken gets the gradient of every place it went to: a row taken twice gets both
    grad = None
    if needs[0]:
        grad = np.zeros(np.shape(args[0]), dtype=_float_type(np, args[0]))
        np.add.at(grad, _gather_key(np, args, leads), g)
    return grad, _no_index_gradient(np, args[1], needs)


def _no_index_gradient(np: Any, index: Array, needs: Any) -> Array | None:
    """An index operand's gradient: zeros (indices are whole numbers, not differentiated)."""
    return np.zeros(np.shape(index), dtype=_float_type(np, index)) if needs[1] else None


def _gather_jvp(np: Any, tangents: Any, out: Array, args: Any, leads: Any, param: Any) -> Array:
    t = tangents[0]
    return _zeros_like(np, out) if t is None else _f64(np, t)[_gather_key(np, args, leads)]


def _along_shape(name: str) -> Any:
    """pick's and scatter's rule: j's axes lead the other operand's (x[..., j[...], ...])."""

    def shape(shapes: Any, size: Any) -> Shape:
        y, j = (tuple(s) for s in shapes)
        written = f"{format_shape(y)} and {format_shape(j)}"
        if name == SCATTER:
            if size is None or size < 0:
                raise ShapeMismatch(f"{written}: scatter needs the size of the axis it puts g along",
                                    "write scatter(g, i, n): g put at i along a new axis of n entries")
            if y[:len(j)] != j:
                raise ShapeMismatch(f"{written}: g's leading axes must be the index's shape {format_shape(j)}",
                                    "scatter puts g[p, ...] at i[p]: give g the index's shape, then any axes")
            out = j + (size,) + y[len(j):]
            if math.prod(out) > _MOST_ENTRIES:
                raise ShapeMismatch(f"{written}: scatter along an axis of {size} would make {format_shape(out)}, "
                                    f"more than {_MOST_ENTRIES:,} entries",
                                    "the size is the number of places g may be put at: a table's rows, a class count")
            return out
        if len(y) <= len(j) or y[:len(j)] != j:
            raise ShapeMismatch(f"{written}: pick takes one entry per index along the axis after the index's axes, "
                                f"so x needs the shape {format_shape(j)} followed by that axis",
                                "in x[i, j] the two index tensors need the same shape: x[arange(n), y] picks "
                                "x[r, y[r]] for each row r")
        return j + y[len(j) + 1:]

    return shape


def _along_parts(np: Any, args: Any, leads: Any, size: int | None) -> tuple[Array, Array, int, Shape]:
    """The value operand broadcast to the batch, the indices (``intp``, one axis put in after
    theirs, then size-1 axes for the value's others: take_along_axis's form), the array axis
    they index, and the batch shape."""
    y, j = args
    batch = _batch(np, args, leads)
    j_row, y_row = row_shape(np, j, leads[1]), row_shape(np, y, leads[0])
    axis = len(batch) + len(j_row)
    n = y_row[len(j_row)] if size is None else size
    index = _whole_indices(np, PICK if size is None else SCATTER, j, leads[1], n)
    if batch and not leads[1]:
        index = np.broadcast_to(index, batch + j_row)
    rest = len(y_row) - len(j_row) - (size is None)
    index = index.reshape(index.shape + (1,) * (1 + rest))
    y = _f64(np, y)
    if batch and not leads[0]:
        y = np.broadcast_to(y, batch + y_row)
    return y, index, axis, batch


def _pick_forward(np: Any, args: Any, leads: Any, param: Any) -> Array:
    _along_shape(PICK)(_rows(np, args, leads), param)
    y, index, axis, _ = _along_parts(np, args, leads, None)
    return np.take_along_axis(y, index, axis=axis).squeeze(axis)


def _scatter_into(np: Any, g: Array, index: Array, axis: int, size: int) -> Array:
    """Zeros with an axis of ``size`` put in at ``axis``, holding g where the index says (each
    place once: a position along the other axes has one index)."""
    shape = np.shape(g)[:axis] + (size,) + np.shape(g)[axis:]
    out = np.zeros(shape, dtype=_float_type(np, g))
    np.put_along_axis(out, index, np.expand_dims(g, axis), axis=axis)
    return out


def _pick_vjp(np: Any, g: Array, out: Array, args: Any, leads: Any, param: Any,
              needs: Any = (True, True)) -> tuple[Array | None, Array | None]:
    if not needs[0]:
        return None, _no_index_gradient(np, args[1], needs)
    y, index, axis, batch = _along_parts(np, args, leads, None)
    grad = _scatter_into(np, _f64(np, g), index, axis, np.shape(y)[axis])
    if batch and not leads[0]:  # an unbatched x of a batched result: its rows' gradients add up
        grad = np.sum(grad, axis=0)
    return grad, _no_index_gradient(np, args[1], needs)


def _pick_jvp(np: Any, tangents: Any, out: Array, args: Any, leads: Any, param: Any) -> Array:
    t = tangents[0]
    return _zeros_like(np, out) if t is None else _pick_forward(np, (t, args[1]), leads, param)


def _scatter_forward(np: Any, args: Any, leads: Any, size: Any) -> Array:
    _along_shape(SCATTER)(_rows(np, args, leads), size)
    g, index, axis, _ = _along_parts(np, args, leads, size)
    return _scatter_into(np, g, index, axis, size)


def _scatter_vjp(np: Any, g: Array, out: Array, args: Any, leads: Any, size: Any,
                 needs: Any = (True, True)) -> tuple[Array | None, Array | None]:
    # the adjoint of putting g at i is taking it back from there
    if not needs[0]:
        return None, _no_index_gradient(np, args[1], needs)
    _, index, axis, batch = _along_parts(np, args, leads, size)
    grad = np.take_along_axis(_f64(np, g), index, axis=axis).squeeze(axis)
    if batch and not leads[0]:
        grad = np.sum(grad, axis=0)
    return grad, _no_index_gradient(np, args[1], needs)


def _scatter_jvp(np: Any, tangents: Any, out: Array, args: Any, leads: Any, size: Any) -> Array:
    t = tangents[0]
    return _zeros_like(np, out) if t is None else _scatter_forward(np, (t, args[1]), leads, size)


def _gather_language_vjp(b: Any, g: Any, args: Any, out: Any, shapes: Any, out_shape: Shape, param: Any,
                         needs: Any) -> tuple[Any, ...]:
    # dL/dx = the rows of g put at the rows i names, summed over i's axes: repeated rows add up
    (x_shape, i_shape) = shapes
    grad = b.apply(SCATTER, g, args[1], param=x_shape[0])
    for _ in i_shape:
        grad = b.apply("sum", grad, param=0)
    return grad, None


def _pick_language_vjp(b: Any, g: Any, args: Any, out: Any, shapes: Any, out_shape: Shape, param: Any,
                       needs: Any) -> tuple[Any, ...]:
    # dL/dx = g put back where it was picked from, zeros elsewhere
    return b.apply(SCATTER, g, args[1], param=shapes[0][len(shapes[1])]), None


def _scatter_language_vjp(b: Any, g: Any, args: Any, out: Any, shapes: Any, out_shape: Shape, param: Any,
                          needs: Any) -> tuple[Any, ...]:
    return b.apply(PICK, g, args[1]), None  # dL/dg = dL/dout taken back from where g was put


def _filled(b: Any, shape: Shape, values: Any) -> Any:
    """A constant index tensor of ``shape`` (a number for a scalar), each row along the last axis
    ``values`` (all of it one value when ``values`` is a number)."""
    if not shape:
        return b.number(float(values))
    if isinstance(values, (int, float)):
        return b.literal(shape, [float(values)] * math.prod(shape))
    return b.literal(shape, [float(v) for _ in range(math.prod(shape[:-1])) for v in values])


def keep_axis(b: Any, t: Any, shape: Shape, axis: int) -> Any:
    """``t`` (of ``shape``) with an axis of size 1 put in at ``axis``, as keepdims leaves a
    reduced axis, written in the language: t put at index 0 of an axis of 1 (``scatter``), so
    that broadcasting lines it up with the tensor it was reduced from."""
    return b.apply(SCATTER, t, _filled(b, shape[:axis], 0), param=1)


def index_adjoint(b: Any, g: Any, shape: Shape, items: Any, out_shape: Shape) -> Any:
    """The adjoint of ``x[items]`` for x of any ``shape``, written with scatter: zeros shaped
    like x holding g where the items took it.  Axis by axis: an index i puts g along a new axis
    at i; a slice taking positions r puts each of its entries t at r[t] along a new axis, and
    sums over t."""
    items = tuple(items) + (slice(None),) * (len(shape) - len(items))
    t, t_shape = g, tuple(out_shape)
    for axis, (item, n) in enumerate(zip(items, shape)):
        if not isinstance(item, slice):
            t = b.apply(SCATTER, t, _filled(b, t_shape[:axis], item % n), param=n)
        elif len(range(*item.indices(n))) != n or item.indices(n)[2] != 1:
            taken = range(*item.indices(n))
            placed = b.apply(SCATTER, t, _filled(b, t_shape[:axis + 1], taken), param=n)
            t = b.apply("sum", placed, param=axis)
        t_shape = t_shape[:axis] + (n,) + t_shape[axis + (isinstance(item, slice)):]
    return t


def _index_values(np: Any, run: Any, register: int, size: int, op: str) -> Array:
    return _whole_indices(np, op, run.values[register], 0, size)


def _gather_unroll(np: Any, emitter: Any, run: Any, ids: Any, first: int, second: int, param: Any, where: Any,
                   mask: Any = None) -> Any:
    x = np.asarray(ids[first])
    return x[_index_values(np, run, second, x.shape[0], GATHER)]  # the rows' own entries: no op


def _along_index(np: Any, run: Any, second: int, value_shape: Shape, size: int, op: str) -> tuple[Array, int]:
    index = _index_values(np, run, second, size, op)
    axis = index.ndim
    rest = len(value_shape) - axis - (op == PICK)
    return index.reshape(index.shape + (1,) * (1 + rest)), axis


def _pick_unroll(np: Any, emitter: Any, run: Any, ids: Any, first: int, second: int, param: Any, where: Any,
                 mask: Any = None) -> Any:
    y = np.asarray(ids[first])
    index, axis = _along_index(np, run, second, y.shape, y.shape[np.ndim(run.values[second])], PICK)
    return np.take_along_axis(y, index, axis=axis).squeeze(axis)


def _scatter_unroll(np: Any, emitter: Any, run: Any, ids: Any, first: int, second: int, size: Any, where: Any,
                    mask: Any = None) -> Any:
    g = np.asarray(ids[first])
    index, axis = _along_index(np, run, second, g.shape, size, SCATTER)
    out = _scatter_into(np, g.astype(np.float64), index, axis, size).astype(np.int64)  # g's registers, 0 elsewhere
    placed = _scatter_into(np, np.ones(g.shape), index, axis, size).astype(bool)
    for index in emitter.indices(out.shape, ~placed if mask is None else ~placed & mask):
        out[index] = emitter.const(0.0, where)  # an entry nothing is put at: a zero of its own, shown by its name
    return out


def _gather_reads(np: Any, param: Any, mask: Any, shapes: Any, values: Any) -> list[Any]:
    needed = np.zeros(shapes[0], dtype=bool)
    np.logical_or.at(needed, _whole_indices(np, GATHER, values[1], 0, shapes[0][0]), mask)
    return [needed, np.zeros(shapes[1], dtype=bool)]  # the indices are read as numbers, not unrolled


def _pick_reads(np: Any, param: Any, mask: Any, shapes: Any, values: Any) -> list[Any]:
    j = tuple(shapes[1])
    index = _whole_indices(np, PICK, values[1], 0, shapes[0][len(j)])
    index = index.reshape(index.shape + (1,) * (len(shapes[0]) - len(j)))
    needed = _scatter_into(np, np.asarray(mask, dtype=np.float64), index, len(j), shapes[0][len(j)])
    return [needed.astype(bool), np.zeros(j, dtype=bool)]


def _scatter_reads(np: Any, size: Any, mask: Any, shapes: Any, values: Any) -> list[Any]:
    j = tuple(shapes[1])
    index = _whole_indices(np, SCATTER, values[1], 0, size)
    index = index.reshape(index.shape + (1,) * (1 + len(shapes[0]) - len(j)))
    return [np.take_along_axis(np.asarray(mask), index, axis=len(j)).squeeze(len(j)), np.zeros(j, dtype=bool)]


for _reads in (_gather_reads, _pick_reads, _scatter_reads):
    _reads.takes_values = True  # type: ignore[attr-defined]  # the scalar view passes the operands' values


_PICK_NP = ("_pick", (
    "def _pick(x, j):\n"
    "    j = np.asarray(j, dtype=np.intp)\n"
    "    index = j.reshape(j.shape + (1,) * (np.ndim(x) - j.ndim))\n"
    "    return np.take_along_axis(x, index, axis=j.ndim).squeeze(j.ndim)\n"))
_SCATTER_NP = ("_scatter", (
    "def _scatter(g, i, n):\n"
    "    i = np.asarray(i, dtype=np.intp)\n"
    "    out = np.zeros(np.shape(g)[:i.ndim] + (n,) + np.shape(g)[i.ndim:])\n"
    "    index = i.reshape(i.shape + (1,) * (np.ndim(g) - i.ndim + 1))\n"
    "    np.put_along_axis(out, index, np.expand_dims(g, i.ndim), axis=i.ndim)\n"
    "    return out\n"))


def _mean_n(operand: int, shapes: Any, out_shape: Shape) -> int:
    return math.prod(shapes[0]) // max(1, math.prod(out_shape))  # the entries each mean averages


def _mse_n(operand: int, shapes: Any, out_shape: Shape) -> int:
    return math.prod(shapes[0])


def _cross_entropy_n(operand: int, shapes: Any, out_shape: Shape) -> int | None:
    return math.prod(shapes[0][:-1]) if operand == 0 else None  # the rows of logits; labels get no rule


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
        return _zeros_like(np, out)
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
    classes = x.shape[-1] if x.__class__ is np.ndarray else np.shape(x)[-1]
    y = _f64(np, y)  # (an array, or a NumPy number: either has ndim and size)
    if y.ndim and y.size:  # the usual case in one pass or so: whole numbers that are classes
        with np.errstate(invalid="ignore"):  # NaN and infinities cast to some integer, which differs from them
            indices = y.astype(np.intp)
        # seen unsigned, a negative index is larger than any class: one max says both bounds
        # (the ufuncs' reductions: no Python wrapper between, a training step calls this each time)
        if not np.logical_or.reduce(indices != y, axis=None) and \
                np.maximum.reduce(indices.view(np.uintp), axis=None) < classes:
            return indices
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
    labels = _labels(np, x, y)
    if labels.shape != full[:-1]:  # unbatched labels of batched logits
        labels = np.broadcast_to(labels, full[:-1])
    positions = math.prod(row[:-1])
    axes = tuple(range(len(batch), len(full) - 1))
    return x, labels, positions, axes


def _cross_entropy_forward(np: Any, args: Any, leads: Any, param: Any) -> Array:
    _cross_entropy_shape(_rows(np, args, leads), None)
    return _cross_entropy_saving(np, args, leads, param)[0]


def _cross_entropy_saving(np: Any, args: Any, leads: Any, param: Any) -> tuple[Array, Any]:
    """The forward, and what the VJP needs of it (the softmax's pieces and the labels as
    indices), so that a training step computes the softmax and checks the labels once.  The
    shapes are not checked here: the executor, which calls this, has inferred them first."""
    x, y = args
    if (leads[0] and leads[1] and x.__class__ is np.ndarray and y.__class__ is np.ndarray and x.ndim == 2
            and y.ndim == 1 and x.dtype.char in "df" and len(x) == len(y)):
        # a training step's logits [N, C] and labels [N]: one position a row, nothing to broadcast
        labels, positions, axes = _labels(np, x, y), 1, ()
    else:
        x, labels, positions, axes = _ce_parts(np, args, leads)
    s = _stable(np, x)
    d = s.d
    if d.flags.c_contiguous:  # the labels' places in d seen flat, found once: the VJP's slope is laid out as d
        at = _last_positions(np, labels[..., None], d.shape[-1])
        picked = d.reshape(-1)[at].reshape(labels.shape + (1,))
    else:
        at, picked = None, _take_last(np, d, labels[..., None])
    with np.errstate(invalid="ignore"):
        # -log_softmax(x)[label], from x - max: logsumexp(x) - x[label] loses log 2 at x = [1e16, 1e16]
        losses = (s.log_total - picked)[..., 0]
    saved = (s, labels, positions, at)
    if not axes and losses.ndim:  # one position a row: its loss is the mean (a sum over no axes and / 1 change no bit)
        return losses, saved
    return np.sum(losses, axis=axes) / positions, saved


_cross_entropy_forward.saving = _cross_entropy_saving  # type: ignore[attr-defined]  # read by the executor


def _ce_slope(np: Any, x: Array, labels: Array, s: Any = None, at: Any = None) -> Array:
    """d loss / d x at each position: softmax(x) - onehot(label), which is -(1 - p) = -q at the
    label: the others' share (rest / total) where the label is the largest entry, else 1 - p.
    ``s``: x's softmax pieces (``_stable``) when the forward kept them; ``at``: the labels' places
    in the flat slope (``_last_positions``), when the forward found them."""
    s = _stable(np, x) if s is None else s
    picked = labels[..., None]
    with np.errstate(invalid="ignore"):  # a row of -inf is 0/0: NaN, as in PyTorch
        p = s.e / s.total
        if at is not None and p.flags.c_contiguous:  # the same numbers, through one flat view of p
            flat = p.reshape(-1)
            shares = (s.rest / s.total).reshape(-1)
            flat[at] = -np.where(picked.reshape(-1) == s.top.reshape(-1), shares, 1.0 - flat[at])
            return p
        q = np.where(picked == s.top, s.rest / s.total, 1.0 - _take_last(np, p, picked))
    _put_last(np, p, picked, -q)  # p is a fresh array
    return p


def _cross_entropy_vjp(np: Any, g: Array, out: Array, args: Any, leads: Any, param: Any, needs: Any = None) -> tuple[Array, Array]:
    x, labels, positions, _ = _ce_parts(np, args, leads)
    return _cross_entropy_vjp_saved(np, g, (_stable(np, x), labels, positions, None), args, leads, param, needs)


def _cross_entropy_vjp_saved(np: Any, g: Array, saved: Any, args: Any, leads: Any, param: Any,
                             needs: Any = None) -> tuple[Array, Array]:
    """The VJP from what ``_cross_entropy_saving`` kept (the same numbers as ``_cross_entropy_vjp``)."""
    s, labels, positions, at = saved
    slope = _ce_slope(np, None, labels, s, at)  # a fresh array, scaled in place
    if g.__class__ is np.ndarray:  # (the sweep's g: its own reshape, without np.reshape's wrapper)
        g = g.reshape(g.shape + (1,) * (slope.ndim - g.ndim))
    else:
        g = np.reshape(g, np.shape(g) + (1,) * (slope.ndim - np.ndim(g)))
    slope *= g if positions == 1 else g / positions  # (g / 1 is g, to the bit)
    gx = unbroadcast(np, slope, np.shape(args[0]), leads[0])
    if needs is not None and not needs[1]:
        return gx, None
    return gx, np.zeros(np.shape(args[1]), dtype=_float_type(np, args[1]))  # labels are not differentiated


_cross_entropy_vjp.from_saved = _cross_entropy_vjp_saved  # type: ignore[attr-defined]


def _cross_entropy_jvp(np: Any, tangents: Any, out: Array, args: Any, leads: Any, param: Any) -> Array:
    tx = tangents[0]
    if tx is None:
        return _zeros_like(np, out)
    x, labels, positions, axes = _ce_parts(np, args, leads)
    per_position = np.sum(_ce_slope(np, x, labels) * tx, axis=-1)
    return _fresh(np, np.sum(per_position, axis=axes) / positions, np.shape(out))


# --- VJPs in the language's own ops: what `diff` writes -------------------------------------------------
# Each takes ``b`` (the symbolic differentiator's builder: ``b.apply(op, *terms, param=)``,
# ``b.number``, ``b.literal``, and ``let``, ``spread``, ``columns``, ``refuse`` for shapes the
# language has no words for), the adjoint ``g`` of the result, the operand terms, the result term,
# the operands' and the result's shapes, the op's parameter and which operands want a gradient;
# it gives one term (or None) per operand.


def _spread(b: Any, t: Any, x: Any, shape: Shape, axis: Any) -> Any:
    """``t``, a reduction of ``x`` (of ``shape``) along ``axis`` (None: all), repeated back to
    x's shape: as the builder writes it for vectors and matrices, and for an inner axis of a
    tensor of more axes, reshaped to put the axis back as size 1 and broadcast."""
    if len(shape) > 2 and axis is not None and axis % len(shape):
        kept = tuple(1 if k == axis % len(shape) else n for k, n in enumerate(shape))
        return b.broadcast(b.apply("reshape", t, param=kept), x)
    return b.spread(t, x, shape, axis)


def _axis_of(param: Any, shape: Shape) -> Any:
    return None if param is None else param % len(shape)


def _matmul_language_vjp(b: Any, g: Any, args: Any, out: Any, shapes: Any, out_shape: Shape, param: Any,
                         needs: Any) -> tuple[Any, ...]:
    (x, y), (xs, ys) = args, shapes
    if len(xs) == 2 and len(ys) == 2:  # dL/dx = g @ y^T, dL/dy = x^T @ g
        return (b.apply("@", g, b.apply("transpose", y)) if needs[0] else None,
                b.apply("@", b.apply("transpose", x), g) if needs[1] else None)
    if len(xs) == 2:  # W @ v: dL/dW = outer(g, v) = g as a column times v, dL/dv = W^T @ g
        return (b.apply("*", b.column(g), y) if needs[0] else None,
                b.apply("@", b.apply("transpose", x), g) if needs[1] else None)
    if len(ys) == 2:  # v @ W: dL/dv = W @ g, dL/dW = outer(v, g)
        return (b.apply("@", y, g) if needs[0] else None,
                b.apply("*", b.column(x), g) if needs[1] else None)
    return (b.apply("*", g, y) if needs[0] else None, b.apply("*", g, x) if needs[1] else None)  # a dot product


def _spread_rule(b: Any, t: Any, x: Any, shape: Shape, param: Any) -> Any:
    """A reduction's result (or adjoint) ``t`` repeated back to the shape of its operand ``x``:
    broadcast as it is when the reduction kept its axes."""
    axis, keepdim = _reduction(param)
    return b.broadcast(t, x) if keepdim and shape else _spread(b, t, x, shape, _axis_of(axis, shape))


def _sum_language_vjp(b: Any, g: Any, args: Any, out: Any, shapes: Any, out_shape: Shape, param: Any,
                      needs: Any) -> tuple[Any, ...]:
    return (_spread_rule(b, g, args[0], shapes[0], param),)


def _mean_language_vjp(b: Any, g: Any, args: Any, out: Any, shapes: Any, out_shape: Shape, param: Any,
                       needs: Any) -> tuple[Any, ...]:
    axis = _reduction(param)[0]
    count = math.prod(shapes[0]) if axis is None else shapes[0][axis]
    return (_spread_rule(b, b.apply("/", g, b.number(count)), args[0], shapes[0], param),)


def _extreme_language_vjp(sign: float) -> Any:
    """max (sign 1) or min (-1): the gradient split evenly among the elements that tie for it."""

    def rule(b: Any, g: Any, args: Any, out: Any, shapes: Any, out_shape: Shape, param: Any,
             needs: Any) -> tuple[Any, ...]:
        (x,), (shape,) = args, shapes
        gap = b.apply("-", _spread_rule(b, out, x, shape, param), x)  # >= 0 for max, <= 0 for min; 0 at a tie
        hit = b.let(b.apply("-", b.number(1.0), b.apply("step", gap if sign > 0 else b.apply("neg", gap))), "hit")
        count = _spread_rule(b, b.apply("sum", hit, param=param), x, shape, param)
        return (b.apply("/", b.apply("*", hit, _spread_rule(b, g, x, shape, param)), count),)

    return rule


def _variance_language_vjp(root: bool) -> Any:
    """var: dL/dx = (x - mean(x)) * g * 2 / (n - c); std: g / std in place of 2 g, with std's
    zeros taken as 1 there (std + 1 - step(std)), where x - mean(x) is 0: the kernel's 0."""

    def rule(b: Any, g: Any, args: Any, out: Any, shapes: Any, out_shape: Shape, param: Any,
             needs: Any) -> tuple[Any, ...]:
        (x,), (shape,) = args, shapes
        axis, _, correction, reduction = _variance(param)
        n = math.prod(shape) if axis is None else shape[axis]
        d = b.apply("-", x, b.apply("mean", x, param=pack_arguments(_REDUCTION_ARGUMENTS, (axis, True))))
        if root:
            g = b.apply("/", g, b.apply("+", out, b.apply("-", b.number(1.0), b.apply("step", out))))
        factor = (1.0 if root else 2.0) / (n - correction)
        return (b.apply("*", d, b.apply("*", _spread_rule(b, g, x, shape, reduction), b.number(factor))),)

    return rule


def _transpose_language_vjp(b: Any, g: Any, args: Any, out: Any, shapes: Any, out_shape: Shape, param: Any,
                            needs: Any) -> tuple[Any, ...]:
    return (b.apply("transpose", g),)


def _along(b: Any, t: Any, x: Any, shape: Shape, param: Any) -> Any:
    """A total along the op's axis (the last unless given), repeated back along it."""
    return _spread(b, t, x, shape, (-1 if param is None else param) % len(shape))


def _softmax_language_vjp(b: Any, g: Any, args: Any, out: Any, shapes: Any, out_shape: Shape, param: Any,
                          needs: Any) -> tuple[Any, ...]:
    # dL/dx = p * (g - sum(g * p, axis)), p the softmax
    total = b.apply("sum", b.apply("*", g, out), param=-1 if param is None else param)
    return (b.apply("*", out, b.apply("-", g, _along(b, total, out, out_shape, param))),)


def _log_softmax_language_vjp(b: Any, g: Any, args: Any, out: Any, shapes: Any, out_shape: Shape, param: Any,
                              needs: Any) -> tuple[Any, ...]:
    # dL/dx = g - softmax(x) * sum(g, axis), softmax(x) = exp(out)
    total = _along(b, b.apply("sum", g, param=-1 if param is None else param), out, out_shape, param)
    return (b.apply("-", g, b.apply("*", b.apply("exp", out), total)),)


def _logsumexp_language_vjp(b: Any, g: Any, args: Any, out: Any, shapes: Any, out_shape: Shape, param: Any,
                            needs: Any) -> tuple[Any, ...]:
    # dL/dx = softmax(x) * g, g repeated along the axis
    return (b.apply("*", b.apply("softmax", args[0], param=param), _along(b, g, args[0], shapes[0], param)),)


def _one_hot_literal(b: Any, n: int, at: int, column: bool = False) -> Any:
    return b.literal((n, 1) if column else (n,), (1.0 if i == at else 0.0 for i in range(n)))


def _selection_literal(b: Any, n: int, item: slice) -> Any:
    """The constant matrix S [k, n] with x[item] = S @ x along an axis of n."""
    taken = range(*item.indices(n))
    return b.literal((len(taken), n), (1.0 if j == i else 0.0 for i in taken for j in range(n)))


def _scatter_flat(b: Any, g: Any, shape: Shape, out_shape: Shape, items: Any) -> Any:
    """The adjoint of ``x[items]`` for x of any rank: g flattened, times the constant matrix S
    [k, n] that picks each taken entry's place among x's n, reshaped back to x's shape."""
    np_index = [range(n)[item] if isinstance(item, slice) else [item % n] for item, n in zip(items, shape)]
    np_index += [range(n) for n in shape[len(items):]]
    strides = [math.prod(shape[k + 1:]) for k in range(len(shape))]
    taken = [0]
    for positions, stride in zip(np_index, strides):  # row-major positions of the entries taken
        taken = [p + i * stride for p in taken for i in positions]
    n = math.prod(shape)
    pick = b.literal((len(taken), n), (1.0 if j == p else 0.0 for p in taken for j in range(n)))
    flat = b.apply("reshape", g, param=(len(taken),))
    return b.apply("reshape", b.apply("@", flat, pick), param=tuple(shape))


def _index_language_vjp(b: Any, g: Any, args: Any, out: Any, shapes: Any, out_shape: Shape, items: Any,
                        needs: Any) -> tuple[Any, ...]:
    # the elements taken get their gradient, scattered back with constant one-hot vectors and
    # selection matrices: x[i] = e_i . x, x[a:b] = S @ x
    (shape,) = shapes
    items = tuple(items or ())
    if len(shape) > 2:  # no matrices of selections to multiply by: put g back with scatter
        return (index_adjoint(b, g, shape, items, out_shape),)
    if shape == (1,) and len(items) == 1 and not isinstance(items[0], slice):  # x[0] of a [1]: [g], not g * [1]
        return (b.apply("stack", g),)
    items = items + (slice(None),) * (len(shape) - len(items))
    full = [isinstance(item, slice) and len(range(*item.indices(n))) == n and item.indices(n)[2] == 1
            for item, n in zip(items, shape)]
    ints = [None if isinstance(item, slice) else item % n for item, n in zip(items, shape)]

    def rows(v: Any, k: int) -> Any:  # v along axis k put back to its n entries: v @ S
        return v if full[k] else b.apply("@", v, _selection_literal(b, shape[k], items[k]))

    if len(shape) == 1:
        return (b.apply("*", g, _one_hot_literal(b, shape[0], ints[0])) if ints[0] is not None else rows(g, 0),)
    i, j = ints
    if i is None and j is None:
        t = g if full[1] else b.apply("@", g, _selection_literal(b, shape[1], items[1]))
        return (t if full[0] else b.apply("@", b.apply("transpose", _selection_literal(b, shape[0], items[0])), t),)
    if j is None:  # row i: the column e_i times the row's gradient
        return (b.apply("*", _one_hot_literal(b, shape[0], i, column=True), rows(g, 1)),)
    if i is None:  # column j
        return (b.apply("transpose", b.apply("*", _one_hot_literal(b, shape[1], j, column=True), rows(g, 0))),)
    return (b.apply("*", _one_hot_literal(b, shape[0], i, column=True),
                    b.apply("*", g, _one_hot_literal(b, shape[1], j))),)


def _mse_language_vjp(b: Any, g: Any, args: Any, out: Any, shapes: Any, out_shape: Shape, param: Any,
                      needs: Any) -> tuple[Any, ...]:
    # mean((x - y)**2) over n entries: dL/dx = g * 2 * (x - y) / n, dL/dy its negative
    n = math.prod(shapes[0])
    gx = b.apply("*", b.apply("-", args[0], args[1]), b.apply("*", g, b.number(2.0 / n)))
    if needs[0] and needs[1]:
        gx = b.let(gx, "dmse")
    return (gx if needs[0] else None, b.apply("neg", gx) if needs[1] else None)


def _cross_entropy_language_vjp(b: Any, g: Any, args: Any, out: Any, shapes: Any, out_shape: Shape, param: Any,
                                needs: Any) -> tuple[Any, ...]:
    # dL/dx = g * (softmax(x) - onehot(y)) / n; labels are not differentiated
    (x, labels), (shape, _) = args, shapes
    if len(shape) > 2:
        raise b.refuse(f"the adjoint of cross_entropy of logits of {len(shape)} axes")
    classes = shape[-1]
    rows = math.prod(shape[:-1])
    spread = labels if len(shape) == 1 else b.columns(labels, x, shape)
    distance = b.apply("abs", b.apply("-", spread, b.literal((classes,), range(classes))))
    one_hot = b.apply("-", b.number(1.0), b.apply("step", distance))
    return (b.apply("*", b.apply("-", b.apply("softmax", x), one_hot), b.apply("/", g, b.number(rows))), None)


# --- one row in scalars: how each op unrolls into scalar ops, and which entries it reads ----------------
# ``unroll(np, emitter, run, ids, first, second, param, where, mask)`` gives the scalar registers
# of a tensor instruction's entries (those ``mask`` marks, or all), emitting scalar ops through
# ``emitter`` (``emit``, ``const``, ``fold`` for a sum, ``indices`` of a shape under a mask);
# ``ids`` holds the registers of every earlier instruction's entries and ``run`` its values.
# ``reads(np, param, mask, shapes)`` gives, for each operand, the mask of the entries that the
# result's entries marked by ``mask`` read, so one row of a layer over many rows unrolls alone.


def unbroadcast_mask(np: Any, mask: Any, shape: Shape) -> Any:
    """The entries of an operand of ``shape`` that the ``mask`` of a broadcast result reads
    (every elementwise op's ``reads``)."""
    lead = mask.ndim - len(shape)
    mask = mask.any(axis=tuple(range(lead))) if lead else mask
    for axis, size in enumerate(shape):
        if size == 1 and mask.shape[axis] != 1:
            mask = mask.any(axis=axis, keepdims=True)
    return np.broadcast_to(mask, shape)


def _matmul_reads(np: Any, param: Any, mask: Any, shapes: Any) -> list[Any]:
    a_shape, b_shape = tuple(shapes[0]), tuple(shapes[1])
    vector_a, vector_b = len(a_shape) == 1, len(b_shape) == 1
    full = _as_matrix_mask(np, mask, vector_a, vector_b)  # batch + (n, m)
    rows, columns = full.any(axis=-1), full.any(axis=-2)
    a2 = (1,) + a_shape if vector_a else a_shape
    b2 = b_shape + (1,) if vector_b else b_shape
    a_mask = unbroadcast_mask(np, np.broadcast_to(rows[..., :, None], full.shape[:-2] + a2[-2:]), a2)
    b_mask = unbroadcast_mask(np, np.broadcast_to(columns[..., None, :], full.shape[:-2] + b2[-2:]), b2)
    return [a_mask.reshape(a_shape), b_mask.reshape(b_shape)]


def _reduction_reads(np: Any, param: Any, mask: Any, shapes: Any) -> list[Any]:
    axis, keepdim = _reduction(param)
    if axis is None:
        return [np.full(shapes[0], bool(mask.any()))]
    return [np.broadcast_to(mask if keepdim else np.expand_dims(mask, axis), shapes[0])]


def _transpose_reads(np: Any, param: Any, mask: Any, shapes: Any) -> list[Any]:
    return [np.swapaxes(mask, -1, -2)]


def _along_last_reads(np: Any, param: Any, mask: Any, shapes: Any) -> list[Any]:
    axis = -1 if param is None else param
    return [np.broadcast_to(mask.any(axis=axis, keepdims=True), shapes[0])]


def _logsumexp_reads(np: Any, param: Any, mask: Any, shapes: Any) -> list[Any]:
    axis = (-1 if param is None else param) % len(shapes[0])
    return [np.broadcast_to(np.expand_dims(mask, axis), shapes[0])]


def _index_reads(np: Any, items: Any, mask: Any, shapes: Any) -> list[Any]:
    needed = np.zeros(shapes[0], dtype=bool)
    needed[tuple(items)] = mask
    return [needed]


def _cross_entropy_reads(np: Any, param: Any, mask: Any, shapes: Any) -> list[Any]:
    # the labels are read as numbers, not unrolled
    return [np.full(shapes[0], bool(mask.any())), np.zeros(shapes[1], dtype=bool)]


def _mse_reads(np: Any, param: Any, mask: Any, shapes: Any) -> list[Any]:
    return [np.full(shape, bool(mask.any())) for shape in shapes]  # a number from every entry: all or nothing


def _matmul_unroll(np: Any, emitter: Any, run: Any, ids: Any, first: int, second: int, param: Any, where: Any,
            mask: Any = None) -> Any:
    a, b = np.asarray(ids[first]), np.asarray(ids[second])
    vector_a, vector_b = a.ndim == 1, b.ndim == 1
    a = a[None, :] if vector_a else a
    b = b[:, None] if vector_b else b
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = np.broadcast_to(a, batch + a.shape[-2:])
    b = np.broadcast_to(b, batch + b.shape[-2:])
    out = np.full(batch + (a.shape[-2], b.shape[-1]), -1, dtype=np.int64)
    for index in emitter.indices(out.shape, None if mask is None else _as_matrix_mask(np, mask, vector_a, vector_b)):
        *lead, i, j = index
        row, column = a[tuple(lead) + (i,)], b[tuple(lead) + (slice(None), j)]
        products = [emitter.emit("*", (int(x), int(y)), None, where) for x, y in zip(row, column)]
        out[index] = emitter.fold(np.asarray(products), where)
    if vector_b:
        out = out[..., 0]
    if vector_a:
        out = out[..., 0] if vector_b else out[..., 0, :]
    return out


def _as_matrix_mask(np: Any, mask: Any, vector_a: bool, vector_b: bool) -> Any:
    """A mask of ``@``'s result, with the axes a vector operand drops put back (size 1)."""
    mask = np.asarray(mask)
    if vector_a and vector_b:
        return mask.reshape(1, 1)
    if vector_a:
        return mask[..., None, :]
    if vector_b:
        return mask[..., None]
    return mask


def _kept(np: Any, out: Any, shape: Shape, param: Any) -> Any:
    """The registers of a reduction's result (the whole operand's first, when it reduced every
    element), with the reduced axes kept as size 1 where it keeps them."""
    axis, keepdim = _reduction(param)
    if axis is None:
        return np.reshape(out[0], (1,) * len(shape)) if keepdim else out[0]
    return np.expand_dims(out, axis) if keepdim else out


def _reduction_unroll(mean: bool) -> Any:
    def unroll(np: Any, emitter: Any, run: Any, ids: Any, first: int, second: int, param: Any, where: Any,
               mask: Any = None) -> Any:
        x = np.asarray(ids[first])
        axis = _reduction(param)[0]
        moved = x.reshape(1, -1) if axis is None else np.moveaxis(x, axis, -1)
        count = moved.shape[-1]
        out = np.full(moved.shape[:-1], -1, dtype=np.int64)
        wanted = None if mask is None else np.reshape(mask, out.shape)
        for index in emitter.indices(out.shape, wanted):
            total = emitter.fold(moved[index], where)
            if mean:
                total = emitter.emit("/", (total, emitter.const(count, where)), None, where)
            out[index] = total
        return _kept(np, out, x.shape, param)

    return unroll


def _extreme_unroll(largest: bool) -> Any:
    def unroll(np: Any, emitter: Any, run: Any, ids: Any, first: int, second: int, param: Any, where: Any,
               mask: Any = None) -> Any:
        x, value = np.asarray(ids[first]), np.asarray(run.values[first])
        shape = x.shape
        axis = _reduction(param)[0]
        if axis is None:
            x, value = x.reshape(1, -1), value.reshape(1, -1)
        else:
            x, value = np.moveaxis(x, axis, -1), np.moveaxis(value, axis, -1)
        top = np.max(value, axis=-1, keepdims=True) if largest else np.min(value, axis=-1, keepdims=True)
        out = np.full(x.shape[:-1], -1, dtype=np.int64)
        wanted = None if mask is None else np.reshape(mask, out.shape)
        for index in emitter.indices(out.shape, wanted):
            tied = x[index][value[index] == top[index][0]]
            if len(tied) == 1:
                out[index] = int(tied[0])
            else:  # a tie: their mean, the extreme's value, which shares the gradient as the tensor op does
                total = emitter.fold(tied, where)
                out[index] = emitter.emit("/", (total, emitter.const(len(tied), where)), None, where)
        return _kept(np, out, shape, param)

    return unroll


def _variance_unroll(root: bool) -> Any:
    def unroll(np: Any, emitter: Any, run: Any, ids: Any, first: int, second: int, param: Any, where: Any,
               mask: Any = None) -> Any:
        x = np.asarray(ids[first])
        axis, _, correction, reduction = _variance(param)
        moved = x.reshape(1, -1) if axis is None else np.moveaxis(x, axis, -1)
        n = moved.shape[-1]
        out = np.full(moved.shape[:-1], -1, dtype=np.int64)
        wanted = None if mask is None else np.reshape(mask, out.shape)
        for index in emitter.indices(out.shape, wanted):
            row = moved[index]
            mean = emitter.emit("/", (emitter.fold(row, where), emitter.const(n, where)), None, where)
            squares = [emitter.emit("**c", (emitter.emit("-", (int(r), mean), None, where),), 2.0, where) for r in row]
            total = emitter.emit("/", (emitter.fold(np.asarray(squares), where), emitter.const(n - correction, where)),
                                 None, where)
            out[index] = emitter.emit("sqrt", (total,), None, where) if root else total
        return _kept(np, out, x.shape, reduction)

    return unroll


def _variance_reads(np: Any, param: Any, mask: Any, shapes: Any) -> list[Any]:
    return _reduction_reads(np, _variance(param)[3], mask, shapes)


def _transpose_unroll(np: Any, emitter: Any, run: Any, ids: Any, first: int, second: int, param: Any, where: Any,
               mask: Any = None) -> Any:
    return np.swapaxes(np.asarray(ids[first]), -1, -2)


def _index_unroll(np: Any, emitter: Any, run: Any, ids: Any, first: int, second: int, items: Any, where: Any,
           mask: Any = None) -> Any:
    return np.asarray(ids[first])[tuple(items)]


def _shifted_exps(np: Any, emitter: Any, x: Any, values: Any, where: Any) -> tuple[int, list[int], int]:
    """For one row: the shift register m (its maximum, a constant), exp(x - m) for each entry
    and their sum."""
    top = float(np.max(values))
    shift = top if math.isfinite(top) else 0.0
    m = emitter.const(shift, where)
    exps = [emitter.emit("exp", (emitter.emit("-", (int(r), m), None, where),), None, where) for r in x]
    return m, exps, emitter.fold(np.asarray(exps), where)


def _logsumexp_row(np: Any, emitter: Any, x: Any, values: Any, where: Any) -> int:
    m, _, total = _shifted_exps(np, emitter, x, values, where)
    return emitter.emit("+", (m, emitter.emit("log", (total,), None, where)), None, where)


def _last_axis_unroll(kind: str) -> Any:
    def unroll(np: Any, emitter: Any, run: Any, ids: Any, first: int, second: int, param: Any, where: Any,
               mask: Any = None) -> Any:
        x, values = np.asarray(ids[first]), np.asarray(run.values[first])
        axis = (-1 if param is None else param) % x.ndim
        x, values = np.moveaxis(x, axis, -1), np.moveaxis(values, axis, -1)  # the op's axis last
        if mask is not None and kind != "logsumexp":
            mask = np.moveaxis(mask, axis, -1)
        out = np.full(x.shape[:-1] if kind == "logsumexp" else x.shape, -1, dtype=np.int64)
        rows = None if mask is None else (mask if kind == "logsumexp" else np.any(mask, axis=-1))
        for index in emitter.indices(x.shape[:-1], rows):
            row, row_values = x[index], values[index]
            if kind == "softmax":
                _, exps, total = _shifted_exps(np, emitter, row, row_values, where)
                out[index] = [emitter.emit("/", (e, total), None, where) for e in exps]
            elif kind == "log_softmax":
                lse = _logsumexp_row(np, emitter, row, row_values, where)
                out[index] = [emitter.emit("-", (int(r), lse), None, where) for r in row]
            else:
                out[index] = _logsumexp_row(np, emitter, row, row_values, where)
        return out if kind == "logsumexp" else np.moveaxis(out, -1, axis)

    return unroll


def _mse_unroll(np: Any, emitter: Any, run: Any, ids: Any, first: int, second: int, param: Any, where: Any,
         mask: Any = None) -> Any:
    x, y = np.broadcast_arrays(np.asarray(ids[first]), np.asarray(ids[second]))
    squares = []
    for a, b in zip(np.ravel(x), np.ravel(y)):
        difference = emitter.emit("-", (int(a), int(b)), None, where)
        squares.append(emitter.emit("**c", (difference,), 2.0, where))
    total = emitter.fold(np.asarray(squares), where)
    return np.asarray(emitter.emit("/", (total, emitter.const(len(squares), where)), None, where))


def _cross_entropy_unroll(np: Any, emitter: Any, run: Any, ids: Any, first: int, second: int, param: Any, where: Any,
                   mask: Any = None) -> Any:
    x, values = np.asarray(ids[first]), np.asarray(run.values[first])
    labels = np.broadcast_to(np.asarray(run.values[second]), x.shape[:-1])
    losses = []
    for index in np.ndindex(x.shape[:-1]):
        lse = _logsumexp_row(np, emitter, x[index], values[index], where)
        picked = int(x[index][int(labels[index])])
        losses.append(emitter.emit("-", (lse, picked), None, where))
    total = emitter.fold(np.asarray(losses), where)
    return np.asarray(emitter.emit("/", (total, emitter.const(len(losses), where)), None, where))


# --- NumPy forms for diff --format python: the kernels above, as the generated module defines them -----

# The generated module's softmax pieces, as _stable makes them: d = x - max, and log(sum(exp(d)))
# through log1p of the others' share where the largest entry's exp is 1.
_SOFTMAX_PARTS_NP = ("_softmax_parts", (
    "def _softmax_parts(x):\n"
    "    m = np.max(x, axis=-1, keepdims=True)\n"
    "    m = np.where(np.isfinite(m), m, 0.0)\n"
    "    d = x - m\n"
    "    e = np.exp(d)\n"
    "    top = np.argmax(x, axis=-1)[..., None]\n"
    "    e_top = np.take_along_axis(e, top, axis=-1)\n"
    "    rest = np.sum(np.where(np.arange(np.shape(x)[-1]) == top, 0.0, e), axis=-1, keepdims=True)\n"
    "    total = e_top + rest\n"
    "    log_total = np.where(e_top == 1.0, np.log1p(rest), np.log(total))\n"
    "    return m, d, e, total, log_total\n"))
_LOGSUMEXP_NP = ("_logsumexp", ("def _logsumexp(x, axis=-1):\n"
                                "    m, d, e, total, log_total = _softmax_parts(np.moveaxis(x, axis, -1))\n"
                                "    return (m + log_total)[..., 0]\n"))
_SOFTMAX_NP = ("_softmax", ("def _softmax(x, axis=-1):\n"
                            "    m, d, e, total, log_total = _softmax_parts(np.moveaxis(x, axis, -1))\n"
                            "    return np.moveaxis(e / total, -1, axis)\n"))
_LOG_SOFTMAX_NP = ("_log_softmax", ("def _log_softmax(x, axis=-1):\n"
                                    "    m, d, e, total, log_total = _softmax_parts(np.moveaxis(x, axis, -1))\n"
                                    "    return np.moveaxis(d - log_total, -1, axis)\n"))
_MSE_NP = ("_mse", "def _mse(x, y):\n    d = x - y\n    return np.mean(d * d)\n")
_CROSS_ENTROPY_NP = ("_cross_entropy", (
    "def _cross_entropy(x, y):\n    m, d, e, total, log_total = _softmax_parts(x)\n"
    "    picked = np.take_along_axis(d, np.asarray(y, dtype=np.intp)[..., None], axis=-1)\n"
    "    return np.mean((log_total - picked)[..., 0])\n"))



# --- choosing entries: comparisons, where, clip ------------------------------------------------------
# A comparison gives 1.0 where it holds and 0.0 elsewhere; it is flat wherever it is defined, so
# no gradient flows through it.  where(c, a, b) takes a's entry where c is not 0, else b's; clip(x,
# lo, hi) is min(max(x, lo), hi), as NumPy and PyTorch compute it.  All three broadcast.

_COMPARISONS = {"<": "less", "<=": "less_equal", ">": "greater", ">=": "greater_equal",
                "==": "equal", "!=": "not_equal"}


def _selection_shape(shapes: Any, param: Any) -> Shape:
    return broadcast_shape(shapes)


def _aligned(np: Any, args: Any, leads: Any) -> tuple[list[Array], int]:
    """The operands lined up for broadcasting (a batch axis in front of each batched one), and
    the number of per-row axes of the result."""
    rows = _rows(np, args, leads)
    ndim = len(broadcast_shape(rows))
    if any(leads):
        args = [align(np, a, lead, r, ndim) for a, lead, r in zip(args, leads, rows)]
    return list(args), ndim


def _comparison(symbol: str) -> tuple[Any, Any, Any]:
    ufunc = _COMPARISONS[symbol]

    def forward(np: Any, args: Any, leads: Any, param: Any) -> Array:
        (x, y), _ = _aligned(np, args, leads)
        return getattr(np, ufunc)(x, y).astype(_float_type(np, args[0]))

    def vjp(np: Any, g: Array, out: Array, args: Any, leads: Any, param: Any, needs: Any = None) -> tuple[Any, ...]:
        needs = needs or (True, True)
        return tuple(_zeros_like(np, a) if need else None for a, need in zip(args, needs))

    def jvp(np: Any, tangents: Any, out: Array, args: Any, leads: Any, param: Any) -> Array:
        return _zeros_like(np, out)

    return forward, vjp, jvp


# Each comparison's LaTeX relation.
_COMPARISON_FORMS = {"<": r"<", "<=": r"\le", ">": r">", ">=": r"\ge", "==": r"=", "!=": r"\ne"}


def _comparison_entry(symbol: str) -> Any:
    """The table's row of a comparison (built after the table's class, in ``_ROWS``)."""
    relation = _COMPARISON_FORMS[symbol]
    return _structural(symbol, 2, f"{{x}} {symbol} {{y}}", _selection_shape, *_comparison(symbol),
                       ("dL/dx = 0 (a comparison is flat where it is defined)", "dL/dy = 0"),
                       f"np.{_COMPARISONS[symbol]}({{x}}, {{y}}).astype(float)", rf"\left[{{x}} {relation} {{y}}\right]",
                       exact=True, language_vjp=_comparison_language_vjp, unroll=_comparison_unroll(symbol),
                       reads=_comparison_reads)


def _where_forward(np: Any, args: Any, leads: Any, param: Any) -> Array:
    (c, a, b), _ = _aligned(np, args, leads)
    return np.where(c != 0.0, _f64(np, a), _f64(np, b))


def _where_vjp(np: Any, g: Array, out: Array, args: Any, leads: Any, param: Any, needs: Any = None) -> tuple[Any, ...]:
    needs = needs or (True, True, True)
    (c, _, _), _ = _aligned(np, args, leads)
    chosen = c != 0.0
    return (_zeros_like(np, args[0]) if needs[0] else None,
            unbroadcast(np, np.where(chosen, g, 0.0), np.shape(args[1]), leads[1]) if needs[1] else None,
            unbroadcast(np, np.where(chosen, 0.0, g), np.shape(args[2]), leads[2]) if needs[2] else None)


def _where_jvp(np: Any, tangents: Any, out: Array, args: Any, leads: Any, param: Any) -> Array:
    (c, _, _), _ = _aligned(np, args, leads)
    ta, tb = (0.0 if t is None else align(np, t, lead, row_shape(np, t, lead), np.ndim(out) - bool(any(leads)))
              for t, lead in zip(tangents[1:], leads[1:]))
    return _fresh(np, np.where(c != 0.0, ta, tb), np.shape(out))


def _clip_masks(np: Any, args: Any, leads: Any) -> tuple[Array, Array, Array]:
    """Where the gradient goes, as min(max(x, lo), hi) passes it: to x where lo <= x and the max
    is at most hi, to lo where x < lo and lo <= hi, to hi where the max is above hi (ties go to
    x, as PyTorch's clamp)."""
    (x, lo, hi), _ = _aligned(np, args, leads)
    top = np.maximum(x, lo)
    kept = top <= hi
    return (x >= lo) & kept, (x < lo) & kept, top > hi


def _clip_forward(np: Any, args: Any, leads: Any, param: Any) -> Array:
    (x, lo, hi), _ = _aligned(np, args, leads)
    return np.minimum(np.maximum(_f64(np, x), lo), hi)


def _clip_vjp(np: Any, g: Array, out: Array, args: Any, leads: Any, param: Any, needs: Any = None) -> tuple[Any, ...]:
    needs = needs or (True, True, True)
    masks = _clip_masks(np, args, leads)
    return tuple(unbroadcast(np, np.where(mask, g, 0.0), np.shape(a), lead) if need else None
                 for mask, a, lead, need in zip(masks, args, leads, needs))


def _clip_jvp(np: Any, tangents: Any, out: Array, args: Any, leads: Any, param: Any) -> Array:
    total = _zeros_like(np, out)
    ndim = np.ndim(out) - bool(any(leads))
    for mask, t, lead in zip(_clip_masks(np, args, leads), tangents, leads):
        if t is not None:
            total += np.where(mask, align(np, t, lead, row_shape(np, t, lead), ndim), 0.0)
    return total


def _comparison_language_vjp(b: Any, g: Any, args: Any, out: Any, shapes: Any, out_shape: Shape, param: Any,
                             needs: Any) -> tuple[Any, ...]:
    return (None, None)  # flat wherever it is defined


def _where_language_vjp(b: Any, g: Any, args: Any, out: Any, shapes: Any, out_shape: Shape, param: Any,
                        needs: Any) -> tuple[Any, ...]:
    c, zero = args[0], b.number(0.0)
    return (None,
            b.sum_to(b.apply("where", c, g, zero), out_shape, args[1], shapes[1]) if needs[1] else None,
            b.sum_to(b.apply("where", c, zero, g), out_shape, args[2], shapes[2]) if needs[2] else None)


def _clip_language_vjp(b: Any, g: Any, args: Any, out: Any, shapes: Any, out_shape: Shape, param: Any,
                       needs: Any) -> tuple[Any, ...]:
    x, lo, hi = args
    zero = b.number(0.0)
    top = b.let(b.apply("where", b.apply(">=", x, lo), x, lo), "top")  # max(x, lo), ties to x
    kept = b.apply("<=", top, hi)
    masks = (b.apply("*", b.apply(">=", x, lo), kept), b.apply("*", b.apply("<", x, lo), kept), b.apply(">", top, hi))
    return tuple(b.sum_to(b.apply("where", mask, g, zero), out_shape, a, shape) if need else None
                 for mask, a, shape, need in zip(masks, args, shapes, needs))


def _selection_reads(np: Any, param: Any, mask: Any, shapes: Any) -> list[Any]:
    return [unbroadcast_mask(np, mask, tuple(shape)) for shape in shapes]


def _comparison_reads(np: Any, param: Any, mask: Any, shapes: Any) -> list[Any]:
    return [np.zeros(tuple(shape), dtype=bool) for shape in shapes]  # a row's result is a constant


def _comparison_unroll(symbol: str) -> Any:
    ufunc = _COMPARISONS[symbol]

    def unroll(np: Any, emitter: Any, run: Any, ids: Any, first: int, second: int, param: Any, where: Any,
               mask: Any = None) -> Any:
        held = getattr(np, ufunc)(np.asarray(run.values[first]), np.asarray(run.values[second]))
        out = np.full(np.shape(held), -1, dtype=np.int64)
        for index in emitter.indices(np.shape(held), mask):
            out[index] = emitter.const(float(held[index]), where)
        return out

    return unroll


def _chosen_unroll(np: Any, emitter: Any, choices: Any, registers: Any, mask: Any, where: Any) -> Any:
    """Each entry a copy (``=``) of the operand entry that ``choices`` (an index per entry) picks."""
    picked = np.broadcast_arrays(choices, *registers)
    out = np.full(np.shape(picked[0]), -1, dtype=np.int64)
    for index in emitter.indices(np.shape(picked[0]), mask):
        out[index] = emitter.emit("=", (int(picked[1 + int(picked[0][index])][index]),), None, where)
    return out


def _where_unroll(np: Any, emitter: Any, run: Any, ids: Any, first: int, second: int, param: Any, where: Any,
                  mask: Any = None, more: Any = ()) -> Any:
    choices = np.where(np.asarray(run.values[first]) != 0.0, 0, 1)
    return _chosen_unroll(np, emitter, choices, (np.asarray(ids[second]), np.asarray(ids[more[0]])), mask, where)


def _clip_unroll(np: Any, emitter: Any, run: Any, ids: Any, first: int, second: int, param: Any, where: Any,
                 mask: Any = None, more: Any = ()) -> Any:
    operands = (first, second, more[0])
    _, to_lo, to_hi = _clip_masks(np, [np.asarray(run.values[r]) for r in operands], (0, 0, 0))
    choices = np.where(to_hi, 2, np.where(to_lo, 1, 0))
    return _chosen_unroll(np, emitter, choices, [np.asarray(ids[r]) for r in operands], mask, where)


# --- cumsum: running totals along an axis, the last unless given -------------------------------------
# Its VJP is the running totals of the gradient taken from the end (each entry feeds every total
# after it); the language writes that with a reversing slice, g[..., ::-1], on either side.

_CUMSUM_AXIS = Argument("axis", "axis", -1, "")  # NumPy's cumsum without an axis would flatten: always written


def _cumsum_axis(param: Any) -> int:
    return -1 if param is None else param  # type: ignore[no-any-return]


def _cumsum_shape(shapes: Any, param: Any) -> Shape:
    (s,) = (tuple(x) for x in shapes)
    axis, r = _cumsum_axis(param), len(s)
    if not s:
        raise ShapeMismatch("[]: cumsum works along an axis, and a scalar has none",
                            "give cumsum a vector (or a matrix: one running total per row); a scalar is its own total")
    if not -r <= axis < r:
        raise ShapeMismatch(f"{format_shape(s)}: axis {axis} is out of range for {r} {'axis' if r == 1 else 'axes'}",
                            f"the axes of {format_shape(s)} are 0 to {r - 1}, or -{r} to -1 counting from the end")
    return s


def _cumsum_array_axis(np: Any, x: Array, lead: int, param: Any) -> int:
    axis = _cumsum_axis(param)
    return axis + lead if axis >= 0 else np.ndim(x) + axis


def _cumsum_forward(np: Any, args: Any, leads: Any, param: Any) -> Array:
    x = _f64(np, args[0])
    _cumsum_shape(_rows(np, args, leads), param)
    return np.cumsum(x, axis=_cumsum_array_axis(np, x, leads[0], param))


def _cumsum_vjp(np: Any, g: Array, out: Array, args: Any, leads: Any, param: Any) -> tuple[Array]:
    k = _cumsum_array_axis(np, args[0], leads[0], param)
    return (np.flip(np.cumsum(np.flip(g, k), axis=k), k).copy(),)  # totals from the end; a fresh array


def _cumsum_jvp(np: Any, tangents: Any, out: Array, args: Any, leads: Any, param: Any) -> Array:
    (t,) = tangents
    return _zeros_like(np, out) if t is None else _cumsum_forward(np, (t,), leads, param)


def _cumsum_language_vjp(b: Any, g: Any, args: Any, out: Any, shapes: Any, out_shape: Shape, param: Any,
                         needs: Any) -> tuple[Any, ...]:
    # dL/dx_i = sum over j >= i of g_j: the running totals of g taken from the end, g reversed along
    # the axis, summed and reversed back (not sum(g) - cumsum(g) + g, whose difference of two large
    # totals loses the small entries)
    axis = _cumsum_axis(param) % len(shapes[0])
    reversed_along = (slice(None),) * axis + (slice(None, None, -1),)
    return (b.apply("index", b.apply("cumsum", b.apply("index", g, param=reversed_along), param=param),
                    param=reversed_along),)


def _cumsum_reads(np: Any, param: Any, mask: Any, shapes: Any) -> list[Any]:
    axis = _cumsum_axis(param) % len(shapes[0])  # a total reads its entry and every one before it
    return [np.flip(np.logical_or.accumulate(np.flip(mask, axis), axis=axis), axis)]


def _cumsum_unroll(np: Any, emitter: Any, run: Any, ids: Any, first: int, second: int, param: Any, where: Any,
                   mask: Any = None) -> Any:
    """Each total as the one before it plus its entry, in NumPy's order (the same bits); a row
    only as far as its last needed total."""
    x = np.asarray(ids[first])
    axis = _cumsum_axis(param) % x.ndim
    x = np.moveaxis(x, axis, -1)
    needed = None if mask is None else np.moveaxis(mask, axis, -1)
    out = np.full(x.shape, -1, dtype=np.int64)
    rows = None if needed is None else np.any(needed, axis=-1)
    for index in emitter.indices(x.shape[:-1], rows):
        row, line = x[index], out[index]
        stop = len(row) if needed is None else int(np.flatnonzero(needed[index])[-1]) + 1
        total = int(row[0]) if stop else -1
        for k in range(stop):
            if k:
                total = emitter.emit("+", (total, int(row[k])), None, where)
            line[k] = total
    return np.moveaxis(out, -1, axis)


# --- stack and concat: tensors made of computed values ---------------------------------------------
# ``stack`` puts its operands (of one shape) side by side along a new axis; ``concat`` joins them
# along an existing one.  ``[a, b]`` with a computed entry is a stack along axis 0.  Both take
# any number of operands (``arity`` VARIADIC in the table), and their param is the axis.

def _stack_shape(shapes: Any, axis: Any) -> Shape:
    shapes, axis = [tuple(s) for s in shapes], axis or 0
    if any(s != shapes[0] for s in shapes):
        raise ShapeMismatch(" and ".join(format_shape(s) for s in shapes) + ": stack needs entries of one shape",
                            "every entry of a list, and every tensor stacked, must have the same shape; "
                            "concat joins tensors along an axis where their sizes differ")
    rank = len(shapes[0]) + 1
    if not -rank <= axis < rank:
        raise ShapeMismatch(f"{format_shape(shapes[0])}: stacking makes {rank} ax{'is' if rank == 1 else 'es'}, "
                            f"so axis {axis} does not exist",
                            f"the axis is from {-rank} to {rank - 1}")
    out = list(shapes[0])
    out.insert(axis % rank, len(shapes))
    return tuple(out)


def _concat_shape(shapes: Any, axis: Any) -> Shape:
    shapes, axis = [tuple(s) for s in shapes], axis or 0
    written = " and ".join(format_shape(s) for s in shapes)
    rank = len(shapes[0])
    if rank == 0 or any(len(s) != rank for s in shapes):
        raise ShapeMismatch(f"{written}: concat joins tensors of one number of axes, at least one",
                            "to put numbers or equal tensors side by side along a new axis, write stack([a, b], 0) "
                            "or [a, b]")
    if not -rank <= axis < rank:
        raise ShapeMismatch(f"{written}: axis {axis} does not exist", f"the axis is from {-rank} to {rank - 1}")
    k = axis % rank
    if any(s[:k] + s[k + 1:] != shapes[0][:k] + shapes[0][k + 1:] for s in shapes):
        raise ShapeMismatch(f"{written}: concat along axis {axis} needs the other axes' sizes equal",
                            "transpose an operand, or join along the axis where they differ")
    return shapes[0][:k] + (sum(s[k] for s in shapes),) + shapes[0][k + 1:]


def _batched_like(np: Any, args: Any, leads: Any) -> list[Array]:
    """The operands with the batch axis given to those without one, when some have it."""
    if not any(leads):
        return [_f64(np, a) for a in args]
    n = _batch(np, args, leads)
    return [_f64(np, a) if lead else np.broadcast_to(_f64(np, a), n + np.shape(a)) for a, lead in zip(args, leads)]


def _array_axis(axis: Any, rank: int, leads: Any) -> int:
    """The array axis of per-row ``axis`` (None: 0) of a result of ``rank`` per-row axes."""
    return (axis or 0) % rank + (1 if any(leads) else 0)


def _stack_forward(np: Any, args: Any, leads: Any, axis: Any) -> Array:
    rows = _rows(np, args, leads)
    _stack_shape(rows, axis)
    return np.stack(_batched_like(np, args, leads), axis=_array_axis(axis, len(rows[0]) + 1, leads))


def _stack_vjp(np: Any, g: Array, out: Array, args: Any, leads: Any, axis: Any, needs: Any = None) -> tuple[Any, ...]:
    needs = needs or (True,) * len(args)
    k = _array_axis(axis, np.ndim(out) - bool(any(leads)), leads)
    return tuple(unbroadcast(np, np.take(g, i, axis=k), np.shape(a), lead) if need else None
                 for i, (a, lead, need) in enumerate(zip(args, leads, needs)))


def _stack_jvp(np: Any, tangents: Any, out: Array, args: Any, leads: Any, axis: Any) -> Array:
    filled = [np.zeros(np.shape(a)) if t is None else t for a, t in zip(args, tangents)]
    return _fresh(np, _stack_forward(np, filled, leads, axis), np.shape(out))


def _concat_forward(np: Any, args: Any, leads: Any, axis: Any) -> Array:
    rows = _rows(np, args, leads)
    _concat_shape(rows, axis)
    return np.concatenate(_batched_like(np, args, leads), axis=_array_axis(axis, len(rows[0]), leads))


def _concat_vjp(np: Any, g: Array, out: Array, args: Any, leads: Any, axis: Any, needs: Any = None) -> tuple[Any, ...]:
    needs = needs or (True,) * len(args)
    rank = np.ndim(out) - bool(any(leads))
    k = _array_axis(axis, rank, leads)
    sizes = [row_shape(np, a, lead)[(axis or 0) % rank] for a, lead in zip(args, leads)]
    starts = [sum(sizes[:i]) for i in range(len(sizes))]
    grads = []
    for a, lead, need, start, size in zip(args, leads, needs, starts, sizes):
        part = np.take(g, range(start, start + size), axis=k)
        grads.append(unbroadcast(np, part, np.shape(a), lead) if need else None)
    return tuple(grads)


def _concat_jvp(np: Any, tangents: Any, out: Array, args: Any, leads: Any, axis: Any) -> Array:
    filled = [np.zeros(np.shape(a)) if t is None else t for a, t in zip(args, tangents)]
    return _fresh(np, _concat_forward(np, filled, leads, axis), np.shape(out))


def _taking(b: Any, g: Any, axis: int, item: Any) -> Any:
    """``g[:, ..., item]`` with ``item`` on ``axis``, in the language."""
    return b.apply("index", g, param=(slice(None),) * axis + (item,))


def _stack_language_vjp(b: Any, g: Any, args: Any, out: Any, shapes: Any, out_shape: Shape, axis: Any,
                        needs: Any) -> tuple[Any, ...]:
    k = (axis or 0) % len(out_shape)
    return tuple(_taking(b, g, k, i) if need else None for i, need in enumerate(needs))


def _concat_language_vjp(b: Any, g: Any, args: Any, out: Any, shapes: Any, out_shape: Shape, axis: Any,
                         needs: Any) -> tuple[Any, ...]:
    k = (axis or 0) % len(out_shape)
    sizes = [shape[k] for shape in shapes]
    return tuple(_taking(b, g, k, slice(sum(sizes[:i]), sum(sizes[:i + 1]))) if need else None
                 for i, need in enumerate(needs))


def _joined_reads(stacked: bool) -> Any:
    def reads(np: Any, axis: Any, mask: Any, shapes: Any) -> list[Any]:
        k = (axis or 0) % np.ndim(mask)
        if stacked:
            return [np.take(mask, i, axis=k) for i in range(len(shapes))]
        sizes = [tuple(shape)[k] for shape in shapes]
        return [np.take(mask, range(sum(sizes[:i]), sum(sizes[:i + 1])), axis=k) for i in range(len(shapes))]

    return reads


def _joined_unroll(stacked: bool) -> Any:
    def unroll(np: Any, emitter: Any, run: Any, ids: Any, first: int, second: int, axis: Any, where: Any,
               mask: Any = None, more: Any = ()) -> Any:
        operands = [first] + ([second] if second >= 0 else []) + list(more)
        parts = [np.asarray(ids[r]) for r in operands]
        return np.stack(parts, axis=axis or 0) if stacked else np.concatenate(parts, axis=axis or 0)

    return unroll


# --- the table --------------------------------------------------------------------------------------

_max = _extreme("max")
_min = _extreme("min")

_ROWS = (
    _structural("@", 2, "{x} @ {y}", _matmul_shape, _matmul_forward, _matmul_vjp, _matmul_jvp,
                ("dL/dx = dL/dout @ transpose(y)", "dL/dy = transpose(x) @ dL/dout"),
                None, "{x} {y}",
                language_vjp=_matmul_language_vjp,
                unroll=_matmul_unroll, reads=_matmul_reads),
    _structural("sum", 1, "sum({x})", _reduce_shape("sum"), _sum_forward, _sum_vjp, _sum_jvp,
                ("dL/dx = dL/dout copied to every element summed",),
                "np.sum({x}{axis}{keepdim})", r"\sum{axis} {x}",
                None,
                language_vjp=_sum_language_vjp,
                unroll=_reduction_unroll(mean=False), reads=_reduction_reads, arguments=_REDUCTION_ARGUMENTS),
    _structural("mean", 1, "mean({x})", _reduce_shape("mean"), _mean_forward, _mean_vjp, _mean_jvp,
                ("dL/dx = dL/dout / n copied to every element averaged (n of them)",),
                "np.mean({x}{axis}{keepdim})", r"\operatorname{mean}{axis} {x}",
                None,
                language_vjp=_mean_language_vjp,
                unroll=_reduction_unroll(mean=True), reads=_reduction_reads, arguments=_REDUCTION_ARGUMENTS,
                rule_n=_mean_n),
    _structural("max", 1, "max({x})", _reduce_shape("max"), *_max,
                ("dL/dx = dL/dout / k where x equals the max (k elements tie for it), 0 elsewhere",),
                "np.max({x}{axis}{keepdim})", r"\max{axis} {x}",
                None, exact=True,
                language_vjp=_extreme_language_vjp(1.0),
                unroll=_extreme_unroll(largest=True), reads=_reduction_reads, arguments=_REDUCTION_ARGUMENTS),
    _structural("min", 1, "min({x})", _reduce_shape("min"), *_min,
                ("dL/dx = dL/dout / k where x equals the min (k elements tie for it), 0 elsewhere",),
                "np.min({x}{axis}{keepdim})", r"\min{axis} {x}",
                None, exact=True,
                language_vjp=_extreme_language_vjp(-1.0),
                unroll=_extreme_unroll(largest=False), reads=_reduction_reads, arguments=_REDUCTION_ARGUMENTS),
    _structural("transpose", 1, "transpose({x})", _transpose_shape, _transpose_forward, _transpose_vjp,
                _transpose_jvp, ("dL/dx = transpose(dL/dout)",),
                "np.transpose({x})", "{x}^\\top", exact=True,
                language_vjp=_transpose_language_vjp,
                unroll=_transpose_unroll, reads=_transpose_reads),
    _structural("var", 1, "var({x})", _variance_shape("var"), *_variance_ops("var"),
                ("dL/dx = dL/dout * 2 * (x - mean(x)) / (n - correction), dL/dout repeated along the axis",),
                "np.var({x}{axis}{keepdim}, ddof={correction})", r"\operatorname{Var}{axis}{correction}\left({x}\right)",
                language_vjp=_variance_language_vjp(False), unroll=_variance_unroll(False),
                reads=_variance_reads, arguments=_VARIANCE_ARGUMENTS),
    _structural("std", 1, "std({x})", _variance_shape("std"), *_variance_ops("std"),
                ("dL/dx = dL/dout * (x - mean(x)) / ((n - correction) * out), 0 where out is 0",),
                "np.std({x}{axis}{keepdim}, ddof={correction})", r"\operatorname{std}{axis}{correction}\left({x}\right)",
                language_vjp=_variance_language_vjp(True), unroll=_variance_unroll(True),
                reads=_variance_reads, arguments=_VARIANCE_ARGUMENTS),
    _structural("ones_like", 1, "ones_like({x})", _same_shape, _filled_like(1.0), _no_gradient, _no_tangent,
                ("dL/dx = 0 (the result depends on its operand's shape only)",), "np.ones_like({x})",
                r"\mathbf{1}\left({x}\right)", exact=True,
                language_vjp=_no_language_vjp, unroll=_constant_unroll(lambda np, x, p: np.ones_like(x)),
                reads=_reads_nothing),
    _structural("zeros_like", 1, "zeros_like({x})", _same_shape, _filled_like(0.0), _no_gradient, _no_tangent,
                ("dL/dx = 0 (the result depends on its operand's shape only)",), "np.zeros_like({x})",
                r"\mathbf{0}\left({x}\right)", exact=True,
                language_vjp=_no_language_vjp, unroll=_constant_unroll(lambda np, x, p: np.zeros_like(x)),
                reads=_reads_nothing),
    _structural("argmax", 1, "argmax({x})", _reduce_shape("argmax"), _argmax_forward, _no_gradient, _no_tangent,
                ("dL/dx = 0 (an index: constant between ties, so not differentiated)",),
                "np.argmax({x}{axis}{keepdim}).astype(np.float64)", r"\operatorname{argmax}{axis}\left({x}\right)",
                exact=True, language_vjp=_no_language_vjp, unroll=_constant_unroll(_argmax_values),
                reads=_reads_nothing, arguments=_REDUCTION_ARGUMENTS),
    _structural("one_hot", 1, "one_hot({x})", _one_hot_shape, _one_hot_forward, _no_gradient, _no_tangent,
                ("dL/dy = 0 (class labels are not differentiated)",),
                "_one_hot({x}, {classes})", r"\operatorname{onehot}{classes}\left({x}\right)",
                numpy_helpers=(_ONE_HOT_NP,), exact=True, language_vjp=_no_language_vjp,
                unroll=_constant_unroll(_one_hot_values), reads=_reads_nothing, indices=(0,),
                arguments=(Argument("classes", "count", None, ""),)),
    _structural("arange", 0, "arange()", _arange_shape, _arange_forward, None, None, (),
                "np.arange({count}, dtype=np.float64)", r"\operatorname{arange}\left({count}\right)",
                exact=True, arguments=(Argument("count", "count", None, ""),)),
    _structural("reshape", 1, "reshape({x})", _reshape_shape, _reshape_forward, _reshape_vjp, _reshape_jvp,
                ("dL/dx = reshape(dL/dout, the shape of x)",),
                "np.reshape({x}, {shape})", r"\operatorname{reshape}{shape}\left({x}\right)",
                exact=True,
                language_vjp=_reshape_language_vjp, unroll=_reshape_unroll, reads=_reshape_reads,
                arguments=(Argument("shape", "shape", None, ""),)),
    _structural("softmax", 1, "softmax({x})", _last_axis_shape("softmax", False),
                *_along_axis("softmax", False, _softmax_forward, _softmax_vjp, _softmax_jvp),
                ("dL/dx = out * (dL/dout - sum(dL/dout * out, axis))",),
                "_softmax({x}{axis})", r"\operatorname{softmax}{axis}\left({x}\right)",
                numpy_helpers=(_SOFTMAX_PARTS_NP, _SOFTMAX_NP), language_vjp=_softmax_language_vjp,
                unroll=_last_axis_unroll("softmax"), reads=_along_last_reads, arguments=(_LAST_AXIS,)),
    _structural("log_softmax", 1, "log_softmax({x})", _last_axis_shape("log_softmax", False),
                *_along_axis("log_softmax", False, _log_softmax_forward, _log_softmax_vjp, _log_softmax_jvp),
                ("dL/dx = dL/dout - softmax(x) * sum(dL/dout, axis)",),
                "_log_softmax({x}{axis})", r"\log\operatorname{softmax}{axis}\left({x}\right)",
                numpy_helpers=(_SOFTMAX_PARTS_NP, _LOG_SOFTMAX_NP), language_vjp=_log_softmax_language_vjp,
                unroll=_last_axis_unroll("log_softmax"), reads=_along_last_reads, arguments=(_LAST_AXIS,)),
    _structural("logsumexp", 1, "logsumexp({x})", _last_axis_shape("logsumexp", True),
                *_along_axis("logsumexp", True, _logsumexp_forward, _logsumexp_vjp, _logsumexp_jvp),
                ("dL/dx = dL/dout * softmax(x), dL/dout repeated along the axis",),
                "_logsumexp({x}{axis})", r"\log\sum\exp{axis} {x}",
                numpy_helpers=(_SOFTMAX_PARTS_NP, _LOGSUMEXP_NP), language_vjp=_logsumexp_language_vjp,
                unroll=_last_axis_unroll("logsumexp"), reads=_logsumexp_reads, arguments=(_LAST_AXIS,)),
    _structural("cumsum", 1, "cumsum({x})", _cumsum_shape, _cumsum_forward, _cumsum_vjp, _cumsum_jvp,
                ("dL/dx = the running totals of dL/dout from the end: sum(dL/dout, axis) - cumsum(dL/dout, axis) "
                 "+ dL/dout",),
                "np.cumsum({x}, axis={axis})", r"\operatorname{cumsum}{axis}\left({x}\right)",
                language_vjp=_cumsum_language_vjp, unroll=_cumsum_unroll, reads=_cumsum_reads,
                arguments=(_CUMSUM_AXIS,)),
    _structural("index", 1, "{x}[{index}]", _index_shape, _index_forward, _index_vjp, _index_jvp,
                ("dL/dx = zeros shaped like x, with dL/dout at x[index]",),
                None, "{x}_{{index}}",
                "{x}[{index}]", exact=True,
                language_vjp=_index_language_vjp,
                unroll=_index_unroll, reads=_index_reads),
    _structural(GATHER, 2, "{x}[{y}]", _gather_shape, _gather_forward, _gather_vjp, _gather_jvp,
                ("dL/dx = zeros shaped like x, with dL/dout added at each row y names (a row named twice gets both)",
              "dL/dy = 0 (indices are whole numbers, not differentiated)"),
                "np.take({x}, np.asarray({y}, dtype=np.intp), axis=0)", r"{x}\left[{y}\right]",
                exact=True,
                language_vjp=_gather_language_vjp, unroll=_gather_unroll, reads=_gather_reads, indices=(1,)),
    _structural(PICK, 2, "pick({x}, {y})", _along_shape(PICK), _pick_forward, _pick_vjp, _pick_jvp,
                ("dL/dx = zeros shaped like x, with dL/dout at the entries y picks",
              "dL/dy = 0 (indices are whole numbers, not differentiated)"),
                "_pick({x}, {y})", r"\operatorname{pick}\left({x}, {y}\right)",
                numpy_helpers=(_PICK_NP,),
                exact=True, language_vjp=_pick_language_vjp, unroll=_pick_unroll, reads=_pick_reads, indices=(1,)),
    _structural(SCATTER, 2, "scatter({x}, {y})", _along_shape(SCATTER), _scatter_forward, _scatter_vjp, _scatter_jvp,
                ("dL/dx = pick(dL/dout, y): the gradient taken back from where x was put",
              "dL/dy = 0 (indices are whole numbers, not differentiated)"),
                "_scatter({x}, {y}, {n})", r"\operatorname{scatter}_{{param}}\left({x}, {y}\right)",
                numpy_helpers=(_SCATTER_NP,), exact=True, arguments=(Argument("n", "count", None, ""),),
                language_vjp=_scatter_language_vjp, unroll=_scatter_unroll, reads=_scatter_reads, indices=(1,)),
    _structural("mse", 2, "mse({x}, {y})", _mse_shape, _mse_forward, _mse_vjp, _mse_jvp,
                ("dL/dx = dL/dout * 2 * (x - y) / n", "dL/dy = -dL/dout * 2 * (x - y) / n"),
                "_mse({x}, {y})", r"\operatorname{MSE}\left({x}, {y}\right)",
                numpy_helpers=(_MSE_NP,),
                language_vjp=_mse_language_vjp,
                unroll=_mse_unroll, reads=_mse_reads, rule_n=_mse_n),
    _structural("cross_entropy", 2, "cross_entropy({x}, {y})", _cross_entropy_shape, _cross_entropy_forward,
                _cross_entropy_vjp, _cross_entropy_jvp,
                ("dL/dx = dL/dout * (softmax(x) - onehot(y)) / n, n the number of rows of x",
              "dL/dy = 0 (class labels are not differentiated)"),
                "_cross_entropy({x}, {y})",
                r"\operatorname{CE}\left({x}, {y}\right)",
                numpy_helpers=(_SOFTMAX_PARTS_NP, _CROSS_ENTROPY_NP),
                language_vjp=_cross_entropy_language_vjp,
                unroll=_cross_entropy_unroll, reads=_cross_entropy_reads, indices=(1,), rule_n=_cross_entropy_n),
    _structural("where", 3, "where({x}, {y}, {z})", _selection_shape, _where_forward, _where_vjp, _where_jvp,
                ("dL/dx = 0 (the condition is not differentiated)", "dL/dy = dL/dout where x is not 0, else 0",
              "dL/dz = dL/dout where x is 0, else 0"),
                "np.where({x} != 0, {y}, {z})", r"\operatorname{where}\left({x}, {y}, {z}\right)",
                language_vjp=_where_language_vjp, unroll=_where_unroll, reads=_selection_reads),
    _structural("clip", 3, "clip({x}, {y}, {z})", _selection_shape, _clip_forward, _clip_vjp, _clip_jvp,
                ("dL/dx = dL/dout where y <= x <= z, else 0", "dL/dy = dL/dout where x < y (and y <= z), else 0",
              "dL/dz = dL/dout where max(x, y) > z, else 0"),
                "np.minimum(np.maximum({x}, {y}), {z})", r"\operatorname{clip}\left({x}, {y}, {z}\right)",
                language_vjp=_clip_language_vjp, unroll=_clip_unroll, reads=_selection_reads),
    *(_comparison_entry(symbol) for symbol in _COMPARISONS),
    _structural("stack", VARIADIC, "[{operands}]", _stack_shape, _stack_forward, _stack_vjp, _stack_jvp,
                ("dL/d(entry i) = dL/dout's entry i along the axis",),
                "np.stack([{operands}]{axis})", r"\operatorname{stack}{axis}\left({operands}\right)",
                "stack([{operands}], {axis})", exact=True, arguments=(Argument("axis", "axis", None, "axis"),),
                language_vjp=_stack_language_vjp, unroll=_joined_unroll(True), reads=_joined_reads(True)),
    _structural("concat", VARIADIC, "concat([{operands}])", _concat_shape, _concat_forward, _concat_vjp, _concat_jvp,
                ("dL/d(operand i) = dL/dout's part for operand i along the axis",),
                "np.concatenate([{operands}]{axis})", r"\operatorname{concat}{axis}\left({operands}\right)",
                "concat([{operands}], {axis})", exact=True, arguments=(Argument("axis", "axis", None, "axis"),),
                language_vjp=_concat_language_vjp, unroll=_joined_unroll(False), reads=_joined_reads(False)),
)

ROWS: tuple[Op, ...] = _ROWS
"""The entries of every op that is not elementwise, in the order the docs list them
(``registry.ENTRIES`` holds them with the elementwise ones)."""

WRITES_NO_TERM = (_no_language_vjp, _comparison_language_vjp)
"""The VJPs in the language's ops that write no term: no gradient passes (``registry.passes_no_gradient``)."""

