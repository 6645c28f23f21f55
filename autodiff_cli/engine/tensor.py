"""An eager, PyTorch-like ``Tensor`` over float64 (or float32) NumPy arrays, made from the op tables.

``Tensor(data, requires_grad=False, dtype=None)`` holds a float64 array (``.data``), or a
float32 one (``dtype="float32"``, or float32 NumPy data: kept as it is, as ``torch.tensor``
keeps its input's dtype); operations on
Tensors compute their result at once and, when an operand requires a gradient, record
the node (its op, its operands and what the op's vector-Jacobian product needs).
``backward()`` then walks the recorded graph once, in reverse topological order, and
accumulates into ``.grad`` of every leaf that requires a gradient (PyTorch's semantics:
``.grad`` is None until a backward pass reaches it, and adds up over passes; results
other than leaves keep no ``.grad`` unless ``retain_grad()`` asked for it).

No maths is written here, and no list of ops: every operator (``+ - * / ** @``, negation,
indexing, ``< <= > >=``) calls its entry of ``registry.ENTRIES``, and every entry written as a
call of its name is a function of this module and, with a fixed number of operands, a method
(``x.var(dim=0, keepdim=True)``, ``x.clip(0, 1)``, ``where(c, x, y)``), made from the entry at
import with PyTorch's argument names (``dim``, ``keepdim``).  Each call runs the entry: its shape rule, ``forward`` and ``vjp`` (an elementwise entry's
read the scalar table's NumPy kernels and undo broadcasting).  Every call passes leads of 0:
an eager Tensor has no batch axis.

Shapes are checked before NumPy runs, by the tables' own shape rules: a mismatch raises
``tensor_ops.ShapeMismatch`` (``.message``, ``.hint``), its message the op written with
``x`` and ``y`` and then both shapes (``x @ y: [4, 3] @ [2, 1]: the inner sizes 3 and 2
differ``), never a NumPy traceback or a silently broadcast answer.

Domain errors: the scalar engine refuses non-finite results, and so does this one, per
element.  An operation whose result has a NaN or an infinity at an element whose operands
are all finite there (``log`` of a negative entry, ``1/0``, ``exp(1000)``, a sum that
overflows) raises ``ops.DomainError`` naming the op and the first such element in C order
(``at index [1, 0]: log of -1 is undefined ...``, the message of the scalar kernel at that
element where it has one).  Non-finite values a user puts in a Tensor are carried along
as NumPy would, not refused.  Gradients are not checked (PyTorch's infinite slope of
``sqrt`` at 0 stays infinite).

The backward walk is iterative (an explicit stack: a chain of 100,000 ops is tested) and its
order is fixed: depth first, operands in order, so gradients add up in the same order on
every run.  Unlike PyTorch, the graph is kept after ``backward()`` (as micrograd keeps
it): a second ``backward()`` adds the same gradients again.

``engine.grad_mode.no_grad()`` covers Tensors: inside it no operation records anything,
and every result is a leaf with ``requires_grad`` False.  Tensors read the mode
(``is_grad_enabled()``) once per operation rather than having methods swapped as ``Value``
does: one call is nothing next to an operation on arrays.

In-place ``+= -= *= /=`` write the result into ``.data`` (the same array, in its precision),
as PyTorch's do, where nothing is recorded: inside ``no_grad()`` (``p -= lr * p.grad``) or
when no operand requires a gradient.  With grad enabled a leaf that requires a gradient is
refused (PyTorch's error), and so is a recorded result (PyTorch would rewrite its graph;
``y = y + 1`` does it here).  A ``backward()`` through a graph recorded before an in-place
update of an array it saved is refused, as PyTorch's version counters refuse it (it would
give the gradient at values the arrays no longer hold): compute the loss again after an
update, as a training loop does.

Not here (the tables have no such op): reductions over several axes, and indexing by
booleans (PyTorch's masks, a comparison's result among them), ``None`` or ``...`` (a
TypeError; a Tensor, an array or a list of row numbers takes those rows, the ``gather`` op).

Random numbers come from ``default_generator``, a ``numpy.random.Generator`` (PCG64)
seeded with ``DEFAULT_SEED`` at import, so a program draws the same numbers on every
run, as PyTorch's default generator does; ``manual_seed(seed)`` reseeds it in place.
``randn`` and ``normal`` (and ``nn.Linear``'s initialisation) draw from it, or from the
``generator`` they are given.
"""

from __future__ import annotations

import math
from collections import namedtuple
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import numpy

from .grad_mode import is_grad_enabled
from .ops import DomainError, short_number
from .registry import ENTRIES, passes_no_gradient, write
from .tensor_ops import GATHER, VARIADIC, ShapeMismatch, pack_arguments
from .value import _is_number

__all__ = [
    "DEFAULT_SEED", "ShapeMismatch", "Tensor", "default_generator", "manual_seed", "normal", "ones", "randn",
    "tensor", "zeros",
]

_FLOAT = numpy.float64
_new = object.__new__


_DTYPES = {"float64": numpy.float64, "float32": numpy.float32}


def _dtype(dtype: Any) -> Any:
    """A dtype a Tensor may hold (``"float32"``, ``numpy.float32``, ``"float64"``...), as NumPy's type."""
    try:
        name = numpy.dtype(dtype).name
    except TypeError:
        name = None
    if isinstance(dtype, bool) or name not in _DTYPES:
        raise TypeError(f"a Tensor holds float32 or float64, not {dtype!r}")
    return _DTYPES[name]


def _as_array(data: Any, dtype: Any = None) -> numpy.ndarray:
    """``data`` as a new array of its own (a copy, as ``torch.tensor`` makes): of ``dtype``,
    else float32 for float32 data (a NumPy array or a Tensor) and float64 for anything else."""
    if dtype is None:
        dtype = numpy.float32 if getattr(data, "dtype", None) == numpy.float32 else _FLOAT
    if isinstance(data, Tensor):
        return data.data.astype(dtype)  # a copy
    if isinstance(data, (str, bytes, complex)):
        raise TypeError(f"a Tensor holds real numbers, not {type(data).__name__} ({data!r:.40})")
    return numpy.array(data, dtype=dtype)


def _floats(out: Any) -> numpy.ndarray:
    """An op's result as an array: float32 stays float32 (float32 operands), the rest float64."""
    out = numpy.asarray(out)
    return out if out.dtype == numpy.float32 else numpy.asarray(out, dtype=_FLOAT)


class Tensor:
    """A float64 (or float32) array with an optional gradient, like ``torch.Tensor``.

    ``Tensor([[1, 2], [3, 4]], requires_grad=True)``; ``dtype="float32"`` (or a float32
    NumPy array) holds float32, and operations on float32 Tensors and numbers stay float32
    (a float64 operand of an elementwise op makes the result float64; ``@`` refuses two
    precisions, as PyTorch does).  Operators ``+ - * / ** @`` (with numbers and arrays on
    either side, NumPy broadcasting for the elementwise ones), in place ``+= -= *= /=``, unary
    ``-``, ``< <= > >=`` (0 or 1), indexing with ints and slices or by a Tensor of row numbers,
    ``.T``, and a method for every op of the registry written as a call (``sum``, ``var``,
    ``reshape``, ``softmax``, ``clip``, ``maximum``, ``tanh``...; see the module's end).
    """

    __slots__ = ("data", "grad", "_requires_grad", "_op", "_parents", "_saved", "_retains_grad", "_writes_before", "_is_mask")
    # NumPy gives way to our reflected operators (ndarray + Tensor is Tensor.__radd__).
    __array_ufunc__ = None

    data: numpy.ndarray
    grad: numpy.ndarray | None

    def __init__(self, data: Any, requires_grad: bool = False, dtype: Any = None) -> None:
        self.data = _as_array(data, None if dtype is None else _dtype(dtype))
        self.grad = None
        self._requires_grad = bool(requires_grad)
        self._op = ""
        self._parents: tuple[Tensor, ...] = ()
        self._saved: Any = None
        self._retains_grad = False
        self._writes_before = 0
        self._is_mask = False  # made by a comparison: 0 and 1 that PyTorch would read as a mask

    # --- what it is -----------------------------------------------------------------------

    @property
    def requires_grad(self) -> bool:
        """Whether operations on this Tensor are recorded for ``backward()``."""
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        if not self.is_leaf:
            raise RuntimeError("you can only change requires_grad flags of leaf variables")
        self._requires_grad = bool(value)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Set ``requires_grad`` (a leaf only) and return this Tensor, as PyTorch's method does."""
        self.requires_grad = requires_grad
        return self

    @property
    def is_leaf(self) -> bool:
        """True unless this Tensor is the recorded result of an operation."""
        return not self._op

    @property
    def grad_fn(self) -> str | None:
        """The name of the op that made this Tensor, if it was recorded, else None."""
        return self._op or None

    @property
    def shape(self) -> tuple[int, ...]:
        return self.data.shape  # type: ignore[no-any-return]

    @property
    def ndim(self) -> int:
        return self.data.ndim  # type: ignore[no-any-return]

    @property
    def dtype(self) -> Any:
        return self.data.dtype

    def size(self, dim: int | None = None) -> Any:
        """The shape, or the size of one axis (PyTorch's ``size()``)."""
        return self.shape if dim is None else self.shape[dim]

    def numel(self) -> int:
        return self.data.size  # type: ignore[no-any-return]

    def dim(self) -> int:
        return self.ndim

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __iter__(self) -> Iterator[Tensor]:
        for i in range(len(self)):
            yield self[i]

    def numpy(self) -> numpy.ndarray:
        """The data, the same array (not a copy), as ``Tensor.numpy()`` shares its storage."""
        return self.data

    def tolist(self) -> Any:
        return self.data.tolist()

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> numpy.ndarray:
        if dtype is not None and dtype != self.data.dtype:
            return self.data.astype(dtype)
        return self.data.copy() if copy else self.data

    def item(self) -> float:
        """The value of a one-element Tensor, as a float."""
        if self.data.size != 1:
            raise ValueError(f"a Tensor with {self.data.size} elements cannot be converted to a number")
        return float(self.data.reshape(()))

    def __float__(self) -> float:
        return self.item()

    def __bool__(self) -> bool:
        if self.data.size != 1:
            raise RuntimeError(f"Boolean value of Tensor with {self.data.size} values is ambiguous")
        return bool(self.item())

    def detach(self) -> Tensor:
        """A leaf that shares this Tensor's data and records nothing."""
        out = _leaf(self.data)
        return out

    def retain_grad(self) -> None:
        """Keep this result's gradient in ``.grad`` when ``backward()`` passes (leaves always do)."""
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        self._retains_grad = True

    def __repr__(self) -> str:
        body = numpy.array2string(self.data, separator=", ", prefix="tensor(")
        if self._op:
            extra = f", grad_fn=<{self._op}>"
        elif self._requires_grad:
            extra = ", requires_grad=True"
        else:
            extra = ""
        if self.data.dtype != _FLOAT:  # the dtype shown where it is not the default, as PyTorch shows it
            extra = f", dtype={self.data.dtype.name}" + extra
        return f"tensor({body}{extra})"

    # --- arithmetic (elementwise, from the scalar op table's NumPy kernels) -------------------

    def __add__(self, other: Any) -> Tensor:
        return _binary("+", self, other)

    def __radd__(self, other: Any) -> Tensor:
        return _binary("+", other, self)

    def __sub__(self, other: Any) -> Tensor:
        return _binary("-", self, other)

    def __rsub__(self, other: Any) -> Tensor:
        return _binary("-", other, self)

    def __mul__(self, other: Any) -> Tensor:
        return _binary("*", self, other)

    def __rmul__(self, other: Any) -> Tensor:
        return _binary("*", other, self)

    def __truediv__(self, other: Any) -> Tensor:
        return _binary("/", self, other)

    def __rtruediv__(self, other: Any) -> Tensor:
        return _binary("/", other, self)

    def __pow__(self, other: Any) -> Tensor:
        """``self ** c`` for a number c is the one-operand op ``**c`` (c a constant of the op,
        as ``x**2`` is for Values); a Tensor or an array exponent is the two-operand ``**``."""
        if _is_number(other):
            return _apply("**c", (self,), float(other))
        return _binary("**", self, other)

    def __rpow__(self, other: Any) -> Tensor:
        return _binary("**", other, self)

    def __neg__(self) -> Tensor:
        return _apply("neg", (self,))

    def __pos__(self) -> Tensor:
        return self

    # --- in place (``p -= lr * p.grad`` under ``no_grad()``: PyTorch's manual update) ----------

    def __iadd__(self, other: Any) -> Tensor:  # noqa: PYI034 (no typing.Self in 3.10)
        return self if _in_place("+", self, other) else NotImplemented

    def __isub__(self, other: Any) -> Tensor:  # noqa: PYI034 (no typing.Self in 3.10)
        return self if _in_place("-", self, other) else NotImplemented

    def __imul__(self, other: Any) -> Tensor:  # noqa: PYI034 (no typing.Self in 3.10)
        return self if _in_place("*", self, other) else NotImplemented

    def __itruediv__(self, other: Any) -> Tensor:  # noqa: PYI034 (no typing.Self in 3.10)
        return self if _in_place("/", self, other) else NotImplemented

    def __abs__(self) -> Tensor:
        return self.abs()  # type: ignore[attr-defined,no-any-return]

    # --- structural ops (the tensor op table) -------------------------------------------------

    def __matmul__(self, other: Any) -> Tensor:
        operand = _operand(other)
        return NotImplemented if operand is None else _matmul(self, operand)

    def __rmatmul__(self, other: Any) -> Tensor:
        operand = _operand(other)
        return NotImplemented if operand is None else _matmul(operand, self)

    def __getitem__(self, index: Any) -> Tensor:
        """``x[i]``, ``x[i, j]``, ``x[1:3]``, ``x[:, 0]``: ints (negative ones count from the
        end) and slices, one per leading axis; the ``index`` op of the tensor table.  A Tensor, an
        array or a list of whole numbers takes those rows (``x[t]``, PyTorch's and the language's
        ``C[i]``: the ``gather`` op)."""
        if isinstance(index, (Tensor, numpy.ndarray, list)):
            if index._is_mask if isinstance(index, Tensor) else numpy.asarray(index).dtype == numpy.bool_:
                raise TypeError("a Tensor is not indexed by booleans (PyTorch's mask): take rows by number, "
                                "or keep entries with where(mask, x, 0)")
            return _apply(GATHER, _operands((self, index)))
        return _apply("index", (self,), _index_items(index))

    @property
    def T(self) -> Tensor:  # noqa: N802 - PyTorch's name
        """The transpose of a matrix (a 2-D Tensor)."""
        return _apply("transpose", (self,))

    def transpose(self, *dims: int) -> Tensor:
        """The transpose of a matrix: ``x.transpose()`` or PyTorch's ``x.transpose(0, 1)``."""
        # dims must name the matrix's two axes (0 and 1, or -2 and -1), in either order; a
        # Tensor that is not a matrix gets the table's shape error whatever the dims.
        axes = {d % 2 for d in dims if isinstance(d, int) and -2 <= d < 2}
        if dims and self.ndim == 2 and (len(dims) != 2 or axes != {0, 1}):
            raise ValueError(f"transpose swaps the two axes of a matrix; got dims {dims}")
        return _apply("transpose", (self,))

    def t(self) -> Tensor:
        return self.transpose()

    def max(self, dim: int | None = None, keepdim: bool = False, *, axis: int | None = None) -> Any:
        """The largest element; along ``dim``, PyTorch's pair ``(values, indices)`` (the max op's
        values, whose gradient ties share, and argmax's indices, first of ties, as floats)."""
        return _extreme("max", self, dim, keepdim, axis)

    def min(self, dim: int | None = None, keepdim: bool = False, *, axis: int | None = None) -> Any:
        """The smallest element; along ``dim``, PyTorch's pair ``(values, indices)``."""
        return _extreme("min", self, dim, keepdim, axis)

    @property
    def _version(self) -> int:
        """How many times this Tensor's array has been written in place (PyTorch's ``_version``)."""
        return _IN_PLACE_WRITES.get(id(_owner(self.data)), 0)

    def _bump_version(self) -> None:
        """Count a write into ``.data`` made in place outside an operator (an optimiser's step)."""
        _note_written(self)

    def where(self, condition: Any, other: Any) -> Tensor:
        """PyTorch's ``x.where(condition, other)``: ``where(condition, x, other)``, x where the
        condition is not 0, else other."""
        return _call("where", (condition, self, other), (), {})

    # --- backpropagation ------------------------------------------------------------------------

    def backward(self, gradient: Any = None) -> None:
        """Accumulate d self / d leaf into ``.grad`` of every leaf that requires a gradient.

        ``self`` must hold one element, or ``gradient`` (its shape) gives the vector of the
        vector-Jacobian product.  Gradients add up across calls; ``zero_grad()`` (of a module
        or an optimizer) clears them.
        """
        if not self._requires_grad:
            raise RuntimeError("element 0 of tensors does not require grad and does not have a grad_fn")
        if gradient is None:
            if self.data.size != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            seed = numpy.ones(self.shape, dtype=self.dtype)
        else:
            seed = numpy.array(gradient.data if isinstance(gradient, Tensor) else gradient, dtype=self.dtype)
            if seed.shape != self.shape:
                raise RuntimeError(f"the gradient has shape {list(seed.shape)} but the output has shape "
                                   f"{list(self.shape)}: they must be the same")
        backpropagate(self, seed)

    if TYPE_CHECKING:  # every function of the op table is a method, made from it at the end of this module;
        # type checkers see them all through this one signature, so no list here repeats the table
        def __getattr__(self, name: str) -> Callable[..., Tensor]: ...


Extremes = namedtuple("Extremes", "values indices")
"""``x.max(dim)``'s result, as PyTorch's ``torch.return_types.max``: ``values, indices = x.max(1)``."""


def _extreme(name: str, x: Tensor, dim: Any, keepdim: Any, axis: Any) -> Any:
    if dim is not None and axis is not None:
        raise TypeError(f"{name} takes dim or axis, not both")
    chosen = axis if dim is None else dim
    if chosen is None:
        if keepdim:
            raise TypeError(f"{name} keeps a dim only along one: give dim")
        return _call(name, (x,), (), {})
    arguments = {"axis": chosen, "keepdim": keepdim}
    ranked = x.detach() if name == "max" else -x.detach()  # the first of ties, as NumPy's and PyTorch's
    return Extremes(_call(name, (x,), (), arguments), _call("argmax", (ranked,), (), arguments))


def _leaf(data: numpy.ndarray, requires_grad: bool = False) -> Tensor:
    """A Tensor of ``data`` as it is (no copy, no conversion)."""
    out = _new(Tensor)
    out.data = data
    out.grad = None
    out._requires_grad = requires_grad
    out._op = ""
    out._parents = ()
    out._saved = None
    out._retains_grad = False
    out._writes_before = 0
    out._is_mask = False
    return out


def _result(data: Any, op: str, operands: tuple[Tensor, ...], saved: Any) -> Tensor:
    """The Tensor of an op's result: recorded when an operand requires a gradient and no
    ``no_grad()`` block is open, else a leaf that keeps nothing alive."""
    out = _leaf(data)
    if is_grad_enabled() and op not in _NO_GRADIENT and any(t._requires_grad for t in operands):
        out._requires_grad = True
        out._op = op
        out._parents = operands
        out._saved = saved
        out._writes_before = _writes_made  # one int: a backward() after no write since checks nothing more
    return out


# In-place writes, as PyTorch's version counters: each write is numbered, and the array that
# owns the memory (a view's writes are its owner's) keeps the number of its last write and its
# count.  A recorded node keeps the number of writes made before it (``_writes_before``), and
# backward() refuses a node whose saved arrays were written since, instead of giving the
# gradient of values the graph no longer holds.  (An array a graph saved stays alive, so no
# other array takes its id in between.)
_writes_made = 0
_LAST_WRITE: dict[int, int] = {}  # id of an owning array -> the number of its last in-place write
_IN_PLACE_WRITES: dict[int, int] = {}  # id of an owning array -> how many in-place writes it has had


def _owner(a: numpy.ndarray) -> numpy.ndarray:
    while isinstance(a.base, numpy.ndarray):
        a = a.base
    return a


def _note_written(target: Tensor) -> None:
    global _writes_made
    _writes_made += 1
    key = id(_owner(target.data))
    _IN_PLACE_WRITES[key] = _IN_PLACE_WRITES.get(key, 0) + 1
    _LAST_WRITE[key] = _writes_made


def _check_versions(node: Tensor) -> None:
    arrays = (*node._saved[0], node.data)  # what its VJP reads: its operands' arrays and its own
    if any(_LAST_WRITE.get(id(_owner(a)), 0) > node._writes_before for a in arrays):
        raise RuntimeError(f"one of the Tensors the result of {node._op} was computed from has been modified by "
                           "an in-place operation since: compute the result again after the update "
                           "(a training loop computes its loss anew each step)")


def _operand(x: Any) -> Tensor | None:
    """``x`` as an operand: a Tensor as it is, a number or an array-like as a constant
    Tensor; None for anything else (the operator then returns NotImplemented)."""
    if isinstance(x, Tensor):
        return x
    if _is_number(x):
        return _leaf(numpy.asarray(float(x)))
    if isinstance(x, (numpy.ndarray, list, tuple)):
        return _leaf(_as_array(x))
    return None


def _binary(name: str, x: Any, y: Any) -> Tensor:
    a, b = _operand(x), _operand(y)
    if a is None or b is None:
        return NotImplemented  # type: ignore[no-any-return]
    if a.data.dtype != b.data.dtype:  # a number takes the Tensor's precision, as in PyTorch
        if not isinstance(x, Tensor) and _is_number(x):
            a = _leaf(a.data.astype(b.data.dtype))
        elif not isinstance(y, Tensor) and _is_number(y):
            b = _leaf(b.data.astype(a.data.dtype))
    return _apply(name, (a, b))


def _in_place(name: str, target: Tensor, other: Any) -> bool:
    """``target op= other``: the result written into ``target.data`` (the same array, so a module
    holding ``target`` sees it), in ``target``'s precision, as PyTorch's in-place ops write it;
    False for an ``other`` that is no operand.

    Only where nothing is recorded: inside ``no_grad()``, or when neither operand requires a
    gradient.  PyTorch refuses a leaf that requires a gradient (its gradient would describe a
    value it no longer holds); a recorded result is refused here too, where PyTorch would
    rewrite its graph: ``y = y + 1`` makes a new Tensor and keeps the graph right."""
    operand = _operand(other)
    if operand is None:
        return False  # not an operand: the operator returns NotImplemented
    if is_grad_enabled() and (target._requires_grad or operand._requires_grad):
        if target.is_leaf and target._requires_grad:
            raise RuntimeError(f"a leaf Variable that requires grad is being used in an in-place operation "
                               f"(x {name}= y): update it inside `with no_grad():`, or write x = x {name} y "
                               "for a new Tensor")
        raise RuntimeError(f"an in-place x {name}= y on a Tensor recorded for backward() is not supported: "
                           f"write x = x {name} y (a new Tensor), or update it inside `with no_grad():`")
    out = _binary(name, target, other).data  # recorded by nothing: no operand requires a gradient here
    if out.shape != target.shape:
        raise ShapeMismatch(f"x {name}= y: the result has shape {list(out.shape)}, not x's shape {list(target.shape)}",
                            "in place, y must broadcast to x's shape: x = x " + name + " y makes a new Tensor")
    if not target.data.flags.writeable:
        raise RuntimeError("this Tensor's data is read-only: write x = x " + name + " y for a new Tensor")
    target.data[...] = out  # rounded to target's precision, as PyTorch's in-place ops are
    _note_written(target)
    return True


def _matmul(a: Tensor, b: Tensor) -> Tensor:
    """``a @ b`` of one precision: PyTorch refuses float32 @ float64 rather than promote, so a
    float32 model fed float64 data (a list, a float64 array) says so instead of running in float64."""
    if a.dtype != b.dtype:
        raise RuntimeError(f"x @ y: x is {a.dtype.name} and y is {b.dtype.name}; the operands of @ must have "
                           "one precision (as in PyTorch): make the data the model's, e.g. "
                           "tensor(data, dtype=\"float32\")")
    return _apply("@", (a, b))


def _apply(name: str, operands: tuple[Tensor, ...], param: Any = None) -> Tensor:
    """One op of the registry on whole arrays (``+``, ``**c``, ``tanh``, ``@``, ``sum``...): the
    shapes checked by its shape rule, then its forward, keeping what its VJP needs where the
    entry says (``forward.saving``: an elementwise op's local derivatives)."""
    entry = ENTRIES[name]
    args = tuple(t.data for t in operands)
    leads = (0,) * len(args)  # no batch axis, ever
    saving = getattr(entry.forward, "saving", None)
    try:
        if saving is not None and not getattr(saving, "checks_shapes", False):
            entry.shape([a.shape for a in args], param)  # (a forward checks them itself, before NumPy runs)
        with numpy.errstate(all="ignore"):
            out, saved = (entry.forward(numpy, args, leads, param), None) if saving is None else \
                saving(numpy, args, leads, param)
    except ShapeMismatch as error:
        raise ShapeMismatch(f"{write(name, ('x', 'y'), param)}: {error.message}", error.hint) from None
    out = _floats(out)
    if not _all_finite(out):
        _check_domain(name, out, args, param)
    return _result(out, name, operands, (args, leads, param, out, saved))


def _all_finite(a: numpy.ndarray) -> bool:
    """Whether every element is finite: one sum (finite unless some element is not, or the
    sum overflows), and a full check only when the sum is not finite."""
    with numpy.errstate(all="ignore"):
        if math.isfinite(a.sum()):
            return True
    return bool(numpy.isfinite(a).all())


def _where(index: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(int(i)) for i in index) + "]"


def _number_text(value: float, dtype: Any) -> str:
    """A number with the digits its precision holds: float32's shortest (``1e+20``), else float64's."""
    if dtype != numpy.float32 or not math.isfinite(value) or (value.is_integer() and abs(value) < 1e16):
        return short_number(value)
    return str(numpy.float32(value))


def _non_finite(value: float, dtype: Any) -> str:
    """What a result that is not finite is, in the words of its precision."""
    if math.isnan(value):
        return "is not a number"
    return "is beyond float32's range (about 3.4e38)" if dtype == numpy.float32 else "overflows a float"


def _check_domain(name: str, out: numpy.ndarray, args: tuple[numpy.ndarray, ...], param: Any) -> None:
    """Raise DomainError if ``out`` has a non-finite element where the operands are finite.

    For an elementwise op, "the operands there" are its operands' elements (broadcast) at that
    element, and the scalar kernel on them gives the message of a value outside the op's domain;
    for a structural op, all of its operands (a sum that overflows, a product of huge matrices).
    A float32 result is told in float32's digits and range: the kernel is given each operand
    as its shortest float32 text reads in float64, and an overflow is worded here."""
    bad = ~numpy.isfinite(out)
    op = ENTRIES[name]
    dtype = out.dtype
    if op.elementwise:
        spread = [numpy.broadcast_to(a, out.shape) for a in args]
        for a in spread:
            bad &= numpy.isfinite(a)
        if not bad.any():
            return  # every non-finite result comes from a non-finite operand: carried along
        index = numpy.unravel_index(int(numpy.argmax(bad)), out.shape)
        at = f"at index {_where(index)}: " if out.ndim else ""
        texts = [_number_text(float(a[index]), dtype) for a in spread]
        value = float(out[index])
        try:
            op.scalar(*(float(t) for t in texts), *([param] if param is not None else []))
        except DomainError as error:
            if not (error.overflow and dtype == numpy.float32):
                raise type(error)(error.op, at + error.message, error.overflow) from None
        # the scalar kernel takes it (1e300 * 1e300 is inf for floats too; float32 overflows sooner)
        raise DomainError(name, f"{at}{write(name, texts, param)} {_non_finite(value, dtype)}", math.isinf(value))
    if not all(_all_finite(a) for a in args):
        return  # a non-finite operand: its non-finite results are carried along
    index = numpy.unravel_index(int(numpy.argmax(bad)), out.shape)
    at = f"at index {_where(index)}: " if out.ndim else ""
    value = float(out[index])
    raise DomainError(name, f"{at}{write(name, ('x', 'y'), param)} {_non_finite(value, dtype)}, "
                            "though its operands are finite", math.isinf(value))


def _index_items(index: Any) -> tuple[int | slice, ...]:
    items = index if isinstance(index, tuple) else (index,)
    checked: list[int | slice] = []
    for item in items:
        if isinstance(item, slice):
            for part in (item.start, item.stop, item.step):
                if part is not None and (isinstance(part, bool) or not isinstance(part, (int, numpy.integer))):
                    raise TypeError(f"a slice of a Tensor has int bounds, not {type(part).__name__}")
            checked.append(slice(*(None if p is None else int(p) for p in (item.start, item.stop, item.step))))
        elif isinstance(item, (int, numpy.integer)) and not isinstance(item, (bool, numpy.bool_)):
            checked.append(int(item))
        else:
            raise TypeError(f"a Tensor is indexed by ints and slices, not {type(item).__name__}"
                            + (" (a bool is not an index)" if isinstance(item, (bool, numpy.bool_)) else ""))
    return tuple(checked)


# --- the backward walk ----------------------------------------------------------------------


def topological_order(root: Tensor) -> list[Tensor]:
    """The recorded Tensors ``root`` depends on, each after its operands, ``root`` last.

    Depth first, operands in order, with an explicit stack: the same order on every run,
    and no recursion limit.  Only Tensors that require a gradient are visited.
    """
    order: list[Tensor] = []
    seen = {id(root)}
    stack: list[tuple[Tensor, Iterator[Tensor]]] = [(root, iter(root._parents))]
    while stack:
        node, operands = stack[-1]
        for operand in operands:
            if operand._requires_grad and id(operand) not in seen:
                seen.add(id(operand))
                stack.append((operand, iter(operand._parents)))
                break
        else:
            stack.pop()
            order.append(node)
    return order


def backpropagate(root: Tensor, seed: numpy.ndarray) -> None:
    """The backward pass from ``root`` with d root / d root = ``seed``: every recorded node,
    root first, gives each operand its vector-Jacobian product, and leaves add theirs up."""
    order = topological_order(root)
    grads: dict[int, Any] = {id(root): seed}
    with numpy.errstate(all="ignore"):  # an infinite slope times 0 is NaN, quietly, as in PyTorch
        for node in reversed(order):
            g = grads.pop(id(node), None)
            if g is None:
                continue
            if not node._op or node._retains_grad:
                _accumulate(node, g)
            if not node._op:
                continue
            if node._writes_before != _writes_made:
                _check_versions(node)
            operand_grads = _vjp(node, g)
            for operand, operand_grad in zip(node._parents, operand_grads):
                if operand_grad is not None and operand._requires_grad:
                    key = id(operand)
                    previous = grads.get(key)
                    grads[key] = operand_grad if previous is None else previous + operand_grad


def _vjp(node: Tensor, g: Any) -> tuple[Any, ...]:
    """The node's op's vector-Jacobian product: a gradient per operand (None for an operand of a
    binary op that requires none: the entries' binary VJPs skip those, ``@`` a whole product)."""
    parents = node._parents
    args, leads, param, out, saved = node._saved
    vjp = ENTRIES[node._op].vjp
    needs = (parents[0]._requires_grad, parents[1]._requires_grad) if len(parents) == 2 else None
    if saved is not None:
        return vjp.from_saved(numpy, g, saved, args, leads, param, needs)  # type: ignore[no-any-return]
    if needs is not None:
        return vjp(numpy, g, out, args, leads, param, needs)  # type: ignore[no-any-return]
    return vjp(numpy, g, out, args, leads, param)  # type: ignore[no-any-return]


def _accumulate(node: Tensor, g: Any) -> None:
    """``node.grad += g``, with a new array of ``node``'s shape (never one shared with another
    Tensor's gradient: ``a + b`` gives both the same array)."""
    g = numpy.array(g, dtype=node.data.dtype)  # a copy, in the Tensor's precision
    if g.shape != node.shape:
        g = numpy.broadcast_to(g, node.shape).copy()
    node.grad = g if node.grad is None else node.grad + g


# --- methods and functions, from the registry -------------------------------------------------
#
# Every op of the registry written as a call of its name (``tanh(x)``, ``maximum(x, y)``,
# ``sum(x, 1, keepdim)``, ``where(c, x, y)``, ``concat([a, b], 0)``, ``arange(5)``) is a function
# of this module (``OP_FUNCTIONS``, and ``tensor.where``...), and, when it has a fixed number of
# operands, a method of Tensor with ``self`` as its first operand (``x.sum(dim=1)``,
# ``x.clip(0, 1)``): a new entry needs no change here.  The operators are Tensor's operators.
# A method defined in the class above is kept where PyTorch's method means something else
# (``transpose(0, 1)``; ``x.where(condition, other)`` is ``where(condition, x, other)``).

_ARGUMENT_ALIASES = {"axis": ("dim",), "keepdim": ("keepdims",), "classes": ("num_classes",), "count": ("end",)}
"""PyTorch's (and NumPy's) names for the registry's arguments: ``x.sum(dim=0, keepdim=True)``."""

_PYTHON_COMPARISONS = {"<": "lt", "<=": "le", ">": "gt", ">=": "ge", "==": "eq", "!=": "ne"}
"""Python's names of its comparison operators (``operator.lt``...), PyTorch's method names too.
``<``, ``<=``, ``>``, ``>=`` are also Tensor's operators; ``==`` and ``!=`` stay identity (a
Tensor is a dict key and a member of lists of parameters): ``x.eq(y)`` compares entries."""

_NO_GRADIENT = frozenset(name for name in ENTRIES if passes_no_gradient(name))
"""Ops through which no gradient passes (argmax, comparisons, one_hot...): their results are
never recorded, as PyTorch's argmax and comparisons require no gradient."""


def _is_call(name: str) -> bool:
    entry = ENTRIES[name]
    return any(form is not None and form.startswith(name + "(") for form in (entry.written, entry.written_param))


def _checked_argument(op: str, argument: Any, value: Any) -> Any:
    """One argument of a call, as the registry's forward takes it, or TypeError saying what it is."""
    what = f"{op}'s {argument.name}"
    if argument.kind == "word":
        if not isinstance(value, (bool, numpy.bool_)):
            raise TypeError(f"{what} is True or False, not {value!r}")
        return bool(value)
    if argument.kind == "shape":
        sizes = tuple(value) if isinstance(value, (tuple, list)) else (value,)
        for n in sizes:
            if isinstance(n, bool) or not isinstance(n, (int, numpy.integer)):
                raise TypeError(f"{what} is ints (-1 for the one worked out), not {value!r}")
        return tuple(int(n) for n in sizes)
    if value is None and argument.kind == "axis" and argument.default is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, numpy.integer)):
        raise TypeError(f"{what} is an int, not {value!r}")
    if argument.kind == "count" and value < 0:
        raise TypeError(f"{what} is 0 or more, not {value}")
    return int(value)


def _param(name: str, given: tuple[Any, ...], keywords: dict[str, Any]) -> Any:
    """The param of a call of op ``name`` from the arguments after its operands: the first may
    be given by position (a shape as ``reshape(2, 3)`` or ``reshape((2, 3))``), the others by
    name, PyTorch's or the language's, so that no order differs silently from PyTorch's."""
    schema = ENTRIES[name].arguments
    if schema and schema[0].kind == "shape" and len(given) > 1:
        given = (given,)
    if len(given) > min(1, len(schema)):
        named = ", ".join(a.name for a in schema[1:])
        raise TypeError(f"{name} takes " + (f"one argument by position, then {named} by name" if schema
                                             else "only its operands"))
    values = dict(zip((a.name for a in schema), given))
    for key, value in keywords.items():
        found = [a.name for a in schema if key == a.name or key in _ARGUMENT_ALIASES.get(a.name, ())]
        if not found:
            names = ", ".join(a.name for a in schema) or "none"
            raise TypeError(f"{name} has no argument {key!r} (its arguments: {names})")
        if found[0] in values:
            raise TypeError(f"{name} got its argument {found[0]} twice")
        values[found[0]] = value
    chosen = []
    for argument in schema:
        if argument.name in values:
            chosen.append(_checked_argument(name, argument, values[argument.name]))
        elif argument.default is None and argument.kind != "axis":
            raise TypeError(f"{name} needs its argument {argument.name}")
        else:
            chosen.append(argument.default)
    return pack_arguments(schema, chosen)


def _operands(values: Any) -> tuple[Tensor, ...]:
    """The operands of a call as Tensors; a number takes the first Tensor's precision, as in PyTorch."""
    like = next((v.data.dtype for v in values if isinstance(v, Tensor)), _FLOAT)
    operands = []
    for i, value in enumerate(values):
        operand = _operand(value)
        if operand is None:
            raise TypeError(f"operand {i + 1} is a {type(value).__name__}, not a Tensor, an array or a number")
        if _is_number(value) and operand.data.dtype != like:
            operand = _leaf(operand.data.astype(like))
        operands.append(operand)
    return tuple(operands)


def _call(name: str, operands: Any, given: tuple[Any, ...], keywords: dict[str, Any]) -> Tensor:
    param = _param(name, given, keywords)
    if ENTRIES[name].arity == 0:  # a constant made from its arguments (arange)
        return _leaf(_floats(ENTRIES[name].forward(numpy, (), (), param)))
    return _apply(name, _operands(operands), param)


def _op_function(name: str) -> Callable[..., Tensor]:
    entry = ENTRIES[name]
    arity = entry.arity

    def function(*args: Any, **keywords: Any) -> Tensor:
        if arity == VARIADIC:
            if not args or not isinstance(args[0], (list, tuple)) or not args[0]:
                raise TypeError(f"{name} takes a list of Tensors first: {name}([a, b], 0)")
            return _call(name, args[0], args[1:], keywords)
        if len(args) < arity:
            raise TypeError(f"{name} takes {arity} operand{'s' if arity != 1 else ''}, got {len(args)}")
        return _call(name, args[:arity], args[arity:], keywords)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = _doc(name)
    return function


_NO_PLAIN_CALL = object()


def _op_method(name: str) -> Callable[..., Tensor]:
    entry = ENTRIES[name]
    try:  # the param of a call with no arguments: x.relu(), x.sum() (a network calls these often)
        plain = _param(name, (), {}) if entry.arity == 1 else _NO_PLAIN_CALL
    except TypeError:
        plain = _NO_PLAIN_CALL  # an argument is required: reshape

    def method(self: Tensor, *args: Any, **keywords: Any) -> Tensor:
        if not args and not keywords and plain is not _NO_PLAIN_CALL:
            return _apply(name, (self,), plain)
        others = entry.arity - 1
        if len(args) < others:
            raise TypeError(f"{method.__name__} takes {others} operand{'s' if others != 1 else ''} "
                            f"besides this Tensor, got {len(args)}")
        return _call(name, (self, *args[:others]), args[others:], keywords)

    method.__name__ = method.__qualname__ = _PYTHON_COMPARISONS.get(name, name)
    method.__doc__ = _doc(name)
    return method


def _doc(name: str) -> str:
    """The docstring of an op's function and method, from its entry: its form, arguments and VJP."""
    entry = ENTRIES[name]
    arguments = ", ".join(f"{a.name}={a.default!r}" if a.default is not None or a.kind == "axis" else a.name
                          for a in entry.arguments)
    return (f"The language's ``{entry.written.format(x='x', y='y', z='z', operands='...')}``"
            + (f", arguments {arguments}" if arguments else "") + ". " + "; ".join(entry.rule))


OP_FUNCTIONS: dict[str, Callable[..., Tensor]] = {}
"""Every op written as a call of its name, as a function of Tensors, by name (``where``, ``clip``...)."""

def _comparison_method(name: str) -> Callable[..., Tensor]:
    compare = _op_method(name)

    def method(self: Tensor, other: Any) -> Tensor:
        out = compare(self, other)
        out._is_mask = True  # x[x > 0] is PyTorch's mask: refused, never read as rows 0 and 1
        return out

    method.__name__ = method.__qualname__ = compare.__name__
    method.__doc__ = compare.__doc__
    return method


for _name, _entry in ENTRIES.items():
    if _name in _PYTHON_COMPARISONS:
        setattr(Tensor, _PYTHON_COMPARISONS[_name], _comparison_method(_name))
        if _name not in ("==", "!="):
            setattr(Tensor, f"__{_PYTHON_COMPARISONS[_name]}__", _comparison_method(_name))
        continue
    if not _is_call(_name):
        continue  # an operator or indexing: Tensor's operators above
    OP_FUNCTIONS[_name] = _op_function(_name)
    if _entry.arity >= 1 and _name not in vars(Tensor):
        setattr(Tensor, _name, _op_method(_name))


def __getattr__(name: str) -> Any:
    """``tensor.where``, ``tensor.stack``...: the registry's ops as functions (module attributes
    looked up only from outside, so this module's own ``sum`` and ``max`` stay Python's)."""
    try:
        return OP_FUNCTIONS[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


# --- making Tensors -------------------------------------------------------------------------

DEFAULT_SEED = 67280421310721
"""The seed of ``default_generator`` at import (PyTorch's default seed, as a reminder that
both start from a fixed one)."""

default_generator = numpy.random.Generator(numpy.random.PCG64(DEFAULT_SEED))
"""The generator ``randn``, ``normal`` and ``nn.Linear`` draw from unless given another."""


def manual_seed(seed: int) -> numpy.random.Generator:
    """Reseed ``default_generator`` (in place: references to it stay valid) and return it."""
    if isinstance(seed, bool) or not isinstance(seed, (int, numpy.integer)):
        raise TypeError(f"a seed is an int, not {type(seed).__name__}")
    default_generator.bit_generator.state = numpy.random.PCG64(int(seed)).state
    return default_generator


def tensor(data: Any, requires_grad: bool = False, dtype: Any = None) -> Tensor:
    """``torch.tensor``: a new Tensor holding a copy of ``data`` (float64, or ``dtype``; float32
    data stays float32)."""
    return Tensor(data, requires_grad=requires_grad, dtype=dtype)


def _size(size: tuple[Any, ...]) -> tuple[int, ...]:
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    for n in size:
        if isinstance(n, bool) or not isinstance(n, (int, numpy.integer)) or n < 0:
            raise TypeError(f"a size is non-negative ints, got {size!r}")
    return tuple(int(n) for n in size)


def zeros(*size: Any, requires_grad: bool = False, dtype: Any = "float64") -> Tensor:
    """A Tensor of zeros: ``zeros(2, 3)`` or ``zeros((2, 3))``."""
    return _leaf(numpy.zeros(_size(size), dtype=_dtype(dtype)), requires_grad)


def ones(*size: Any, requires_grad: bool = False, dtype: Any = "float64") -> Tensor:
    """A Tensor of ones: ``ones(2, 3)`` or ``ones((2, 3))``."""
    return _leaf(numpy.ones(_size(size), dtype=_dtype(dtype)), requires_grad)


def randn(*size: Any, generator: numpy.random.Generator | None = None, requires_grad: bool = False,
          dtype: Any = "float64") -> Tensor:
    """Standard normal draws: ``randn(2, 3)``, from ``default_generator`` unless given one
    (drawn in float64, then rounded to ``dtype``: the same draws in either precision)."""
    rng = default_generator if generator is None else generator
    return _leaf(numpy.asarray(rng.standard_normal(_size(size)), dtype=_dtype(dtype)), requires_grad)


def normal(mean: float = 0.0, std: float = 1.0, size: Any = (), *,
           generator: numpy.random.Generator | None = None, requires_grad: bool = False,
           dtype: Any = "float64") -> Tensor:
    """Normal draws with a mean and a standard deviation, ``torch.normal(mean, std, size)``."""
    if not (math.isfinite(mean) and math.isfinite(std)) or std < 0:
        raise ValueError(f"normal needs a finite mean and a finite std >= 0, got mean={mean}, std={std}")
    rng = default_generator if generator is None else generator
    shape = _size((size,) if isinstance(size, (tuple, list)) else (size,))
    return _leaf(numpy.asarray(rng.normal(mean, std, shape), dtype=_dtype(dtype)), requires_grad)

