"""The tensor interpreter: a program over NumPy arrays, forward, reverse and forward mode.

Every register holds a float64 array (float32 when asked: ``dtype=``) of the shape
``language.shapes.infer`` gave it, so shapes are checked before this module runs anything.  The maths of each op is read
from the tables: elementwise ops from ``engine.ops`` (their ``vector`` kernels, through
``engine.tensor_ops``'s broadcasting helpers), the others from their registry entry's own.

**Rows.**  ``batch`` and ``fit`` run a program over many rows at once: the inputs read
from rows carry a leading batch axis in front of the shape the program sees, and so
does every register computed from them (``TensorRun.leads``).  Parameters, constants
and inputs with one value for all rows have no batch axis, and their gradients are
summed over the rows.  With no input read from rows this is plain ``eval``.

**Errors.**  The scalar engine refuses non-finite values; so does this one.  After each
op, one sum says whether every entry is finite (a finite sum has finite terms); where
one is not, the first such entry is named with the op's line and column, its row when
the program runs over rows, and the operands' values there; in the op's own words where its
float kernel refuses them (log of 0 is undefined, not an overflow).  An input that is inf or
NaN is named as that input, at its statement, as the engine names it: nothing overflowed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any

import numpy as np

from ..engine.ops import OPS, DomainError, overflow_advice
from ..engine.registry import ENTRIES
from ..engine.tensor_ops import align, elementwise_forward, elementwise_jvp, elementwise_vjp, unbroadcast
from ..errors import EvaluationError, InputError, ProgramError
from ..language.program import CONST, INPUT, ArrayLiteral, Initializer, Program
from ..language.shapes import Shape, infer, shape_text

__all__ = ["FLOAT_TYPES", "TensorRun", "as_array", "covered_registers", "draw_initializers", "float_type", "input_arrays",
           "pass_unit", "run_forward"]


@dataclass
class TensorRun:
    """One forward pass: every register's value, its shape (per row) and whether it carries
    the batch axis; ``slopes`` holds the elementwise ops' local derivatives, made on demand."""

    program: Program
    values: list[Any]
    shapes: list[Shape]
    leads: list[int]
    slopes: dict[int, Any] = field(default_factory=dict)
    rows: list[Any] = field(default_factory=list)
    saved: dict[int, Any] = field(default_factory=dict)  # what a tensor op's forward kept for its VJP
    plans: dict[Any, Any] = field(default_factory=dict)  # reverse sweeps worked out (run_forward's shapes_cache)

    def register(self, name: str) -> int:
        return self.program.variables[name].register

    def value(self, name: str) -> Any:
        return self.values[self.register(name)]

    def gradients(self, output: str, wrt: Sequence[str], seed: Any = None, seed_nonzero: bool = False,
                  into: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """d output / d each of ``wrt`` (inputs or intermediates): arrays of their own shapes (one
        without the batch axis gets the sum over rows).  ``seed`` is d(something)/d output; by
        default 1 everywhere, the gradient of the output (of each row's, over rows).
        ``seed_nonzero``: the caller knows no entry of ``seed`` is 0 (fit's 1 / rows), so the
        sweep need not look for a partial one.  ``into``: an array of its shape for some of ``wrt``,
        which the sweep writes that gradient into where it can (the name's only share, made by a
        kernel that takes ``out=``): that gradient is then the very array; copy the others."""
        key = (_GRADIENTS, output, tuple(wrt))
        found = self.plans.get(key)
        if found is None:
            registers = {name: self.register(name) for name in wrt}
            found = self.plans[key] = (registers, frozenset(registers.values()))
        registers, wanted = found
        targets = None if not into else {r: into[name] for name, r in registers.items() if name in into}
        adjoints = self.adjoints(output, wanted, seed, seed_nonzero, targets)
        values = self.values
        return {name: np.zeros_like(values[r]) if adjoints.get(r) is None else adjoints[r]
                for name, r in registers.items()}

    def adjoints(self, output: str, wanted: AbstractSet[int] | None = None, seed: Any = None,
                 seed_nonzero: bool = False, targets: Mapping[int, Any] | None = None,
                 record: list[tuple[int, tuple[Any, ...]]] | None = None) -> dict[int, Any]:
        """The reverse sweep from ``output``: d output / d register for every register on a path
        from one of ``wanted`` (default: every register) to it.  ``targets``: arrays to write some
        registers' adjoints into (``gradients``' ``into``), where a register has one share only.
        ``record``, when given, receives each instruction's register and VJPs (one per operand) in
        the sweep's order: explain's steps read them instead of sweeping again."""
        out = self.register(output)
        # (the shapes' list lives in the cache as long as the plan does, so its id names it)
        key = (_SWEEP, out, None if wanted is None else frozenset(wanted), id(self.shapes), id(self.leads))
        plan = self.plans.get(key)
        if plan is None:  # the same for every run of the program: kept with its shapes (fit's steps)
            plan = self.plans[key] = _sweep_plan(self.program, self.rows, out, wanted, self.shapes, self.leads)
        adjoints: dict[int, Any] = {out: np.ones_like(self.values[out]) if seed is None else seed}
        if seed is not None and not seed_nonzero and not (np.asarray(seed) != 0.0).all():  # a Jacobian's row
            with np.errstate(all="ignore"):
                return self._partial_sweep(plan, adjoints, out)
        vjp = self._vjp
        slots = self._target_slots(key, plan, targets) if targets else repeat(None)
        with np.errstate(all="ignore"):  # a derivative that does not exist (sqrt at 0) is an inf, said by callers
            for step, slot in zip(plan, slots):
                register, operands = step[0], step[1]
                g = adjoints.get(register)
                if g is None:
                    continue
                outs = None if slot is None else tuple([None if r is None else targets[r] for r in slot])  # type: ignore[index]
                grads = vjp(step, g, outs)
                if record is not None:
                    record.append((register, grads))
                for r, grad in zip(operands, grads):
                    if grad is not None:
                        adjoints[r] = grad if r not in adjoints else adjoints[r] + grad
        return adjoints

    def _target_slots(self, key: Any, plan: Sequence[Any], targets: Mapping[int, Any]) -> list[Any]:
        """For each step of ``plan``, which of its operands' adjoints are written into ``targets``
        (the register where this step makes the operand's only share and it has a target, else
        None), or None for a step with no such operand: worked out once per plan and targets."""
        slots_key = (key, tuple(targets))
        slots = self.plans.get(slots_key)
        if slots is None:
            slots = []
            for step in plan:
                which = tuple(r if alone and r in targets else None for r, alone in zip(step[1], step[7]))
                slots.append(None if which.count(None) == len(which) else which)
            self.plans[slots_key] = slots
        return slots

    def _partial_sweep(self, plan: Any, adjoints: dict[int, Any], out: int) -> dict[int, Any]:
        """The reverse sweep from a seed that is 0 on some entries of the output (one row of a
        Jacobian), carrying which entries of each adjoint the seed reaches: an entry it does not
        reach adds nothing through an infinite slope (sqrt at 0), as in forward mode.  Elementwise
        ops carry it entry by entry; any other op's operands are reached wholly where its result is
        reached at all (conservatively)."""
        values, leads = self.values, self.leads
        reached: dict[int, Any] = {out: np.asarray(adjoints[out]) != 0.0}
        for register, operands, needs, *_ in plan:
            g = adjoints.get(register)
            if g is None:
                continue
            mask = reached[register]
            op = self.rows[register][0]
            if _structural(op) is not None:
                grads = self.vjp(register, g, needs)
                shares = [np.full(np.shape(values[r]), bool(mask.any())) for r in operands]
            else:
                args = [values[r] for r in operands]
                arg_leads = [leads[r] for r in operands]
                grads = elementwise_vjp(np, op, g, self._slopes(register), args, arg_leads, needs, mask)
                shares = [unbroadcast(np, mask.astype(np.float64), np.shape(a), lead) > 0.0
                          for a, lead in zip(args, arg_leads)]
            for r, grad, share in zip(operands, grads, shares):
                if grad is not None:
                    adjoints[r] = grad if r not in adjoints else adjoints[r] + grad
                    reached[r] = share if r not in reached else reached[r] | share
        return adjoints

    def jvp(self, output: str, tangents: Mapping[str, Any]) -> Any:
        """The directional derivative of ``output`` along ``tangents`` (arrays shaped like the
        inputs' values): forward mode over the same program."""
        with np.errstate(all="ignore"):  # as in the reverse sweep: an inf says itself
            return self._sweep_forward(output, tangents)

    def _sweep_forward(self, output: str, tangents: Mapping[str, Any]) -> Any:
        """Forward mode.  Beside each tangent, which of its entries a seed reaches (a non-zero
        entry of a given tangent, and what depends on one): an entry no seed reaches adds nothing
        through an infinite local slope (sqrt at 0), as in the scalar engine.  Elementwise ops
        carry it entry by entry; any other op's result is reached wherever it depends on a
        reached entry at all (a whole result, conservatively)."""
        values, leads = self.values, self.leads
        dots: list[Any] = [None] * len(values)
        reached: list[Any] = [None] * len(values)
        for name, tangent in tangents.items():
            register = self.register(name)
            dots[register] = np.asarray(tangent, dtype=np.result_type(values[register]))
            reached[register] = dots[register] != 0.0
        for register, (op, first, second, param, _) in enumerate(self.rows):
            if first < 0 or dots[register] is not None:
                continue
            operands = self.program.operands(register, first, second)
            if all(dots[r] is None for r in operands):
                continue
            args = [values[r] for r in operands]
            arg_leads = [leads[r] for r in operands]
            dot = [dots[r] for r in operands]
            masks = [reached[r] for r in operands]
            if _structural(op) is not None:
                made = ENTRIES[op].jvp(np, dot, values[register], args, arg_leads, param)
                # (a JVP of zeros is made in float64: a float32 run keeps its precision)
                dots[register] = made.astype(values[register].dtype, copy=False)
                anywhere = any(m is not None and m.any() for m in masks)
                reached[register] = np.full(np.shape(dots[register]), anywhere)
            else:
                dots[register] = elementwise_jvp(np, op, dot, self._slopes(register), args, arg_leads, masks)
                reached[register] = self._reached_elementwise(masks, args, arg_leads, np.shape(dots[register]))
        out = dots[self.register(output)]
        return np.zeros_like(values[self.register(output)]) if out is None else out

    @staticmethod
    def _reached_elementwise(masks: list[Any], args: list[Any], leads: list[int], shape: Any) -> Any:
        """The entries of an elementwise result that a seed reaches: those of any operand's."""
        rows = [tuple(np.shape(a)[lead:]) for a, lead in zip(args, leads)]
        ndim = len(shape) - bool(any(leads))
        out = np.zeros(shape, dtype=bool)
        for mask, lead, row in zip(masks, leads, rows):
            if mask is not None:
                out |= align(np, mask, lead, row, ndim)
        return out

    def vjp(self, register: int, g: Any, needs: tuple[bool, ...] | None = None) -> tuple[Any, ...]:
        """Each operand's share of ``g`` (d something / d register): one array per operand of the
        register's op, each the operand's shape; None for an operand ``needs`` leaves out."""
        op, first, second, param, _ = self.rows[register]
        operands = self.program.operands(register, first, second)
        step = (register, operands, needs or (True,) * len(operands), op, param, _structural(op), None, None, None)
        return self._vjp(step, g)

    def _vjp(self, step: tuple[Any, ...], g: Any, outs: tuple[Any, ...] | None = None) -> tuple[Any, ...]:
        """``vjp`` of a step of a sweep's plan (``_sweep_plan``: the register, its operands, which
        of them are needed, its op, parameter and tensor op, for an elementwise op the axes each
        operand's share is summed over, which shares are their operand's only one, and a tensor
        op's VJP bound to its calling convention, worked out once).  ``outs``: an array per operand
        (or None) to write its share into where it can."""
        bound = step[8]  # a tensor op's VJP with its calling convention bound in (``_bound_vjp``)
        if bound is not None:
            return bound(self, g, outs)
        register, operands, needs, op, param, tensor_op, sums = step[:7]
        values = self.values
        if sums is not None:  # elementwise: g times each slope, summed back where broadcasting stretched
            grads = []
            made = self.slopes[register]  # (``_slopes``, without its calls when kept already)
            made = made[0]() if made.__class__ is tuple else self._slopes(register)()
            for k, (slope, r, need, axes) in enumerate(zip(made, operands, needs, sums)):
                if not need:
                    grads.append(None)
                    continue
                # (a slope of exactly 1, of + - =, passes g on: the executors never write into a gradient)
                share = g if slope.__class__ is float and slope == 1.0 else g * slope
                if axes is None:
                    grads.append(share)
                    continue
                out = None if outs is None else outs[k]
                if out is not None and share.ndim - len(axes) == out.ndim:  # (no size-1 axis summed away)
                    grads.append(np.add.reduce(share, axis=axes, out=out))
                else:
                    grads.append(np.add.reduce(share, axis=axes).reshape(values[r].shape))
            return tuple(grads)
        args = list(map(values.__getitem__, operands))  # (no comprehension's frame: a step runs a few of these)
        arg_leads = list(map(self.leads.__getitem__, operands))
        if tensor_op is None:
            return elementwise_vjp(np, op, g, self._slopes(register), args, arg_leads, needs)
        if register in self.saved:
            return tensor_op.vjp.from_saved(np, g, self.saved[register], args, arg_leads, param, needs)
        if len(operands) == 1:
            return tensor_op.vjp(np, g, values[register], args, arg_leads, param)
        if outs is not None and getattr(tensor_op.vjp, "takes_out", False):  # (``into=``: its ``out=``)
            return tensor_op.vjp(np, g, values[register], args, arg_leads, param, needs, into=outs)
        return tensor_op.vjp(np, g, values[register], args, arg_leads, param, needs)

    def _slopes(self, register: int) -> Any:
        """The op's local derivatives as the kernels give them (a function that makes them),
        made once on first use and kept: a Jacobian runs several reverse sweeps."""
        slopes = self.slopes[register]
        if not isinstance(slopes, tuple):  # (kept as a function that gives them, as the kernels' is)
            made = slopes()
            slopes = self.slopes[register] = (lambda: made,)
        return slopes[0]


_SWEEP = "sweep"  # the first item of a sweep plan's key in ``TensorRun.plans``
_GRADIENTS = "gradients"  # ... and of the registers of the names ``gradients`` is asked for



def _structural(op: str) -> Any:
    """The registry entry of an op that brings its own forward, VJP and JVP (``@``, reductions,
    indexing, ...); None for an elementwise op, whose NumPy kernel the interpreter broadcasts
    itself, and for an input or a constant."""
    entry = ENTRIES.get(op)
    return None if entry is None or entry.elementwise else entry

def _sweep_plan(program: Program, rows: Sequence[Any], out: int, wanted: AbstractSet[int] | None,
                shapes: Sequence[Shape], leads: Sequence[int]) -> list[tuple[Any, ...]]:
    """The steps of a reverse sweep from register ``out``, last register first: each op register
    with its operands, which of them lead back to one of ``wanted`` (every register when None),
    its op, parameter and tensor op (None for an elementwise op), and for an elementwise op the
    axes each operand's share is summed over (``_summed_axes``), and for each operand whether
    this step makes its only share (its adjoint may then be written where the caller wants it);
    registers with no such operand are left out."""
    reaches = [True] * (out + 1)  # whether a register depends on a wanted one
    if wanted is not None:
        for register in range(out + 1):
            _, first, second, _, _ = rows[register]
            reaches[register] = register in wanted or any(reaches[r] for r in program.operands(register, first, second))
    plan: list[tuple[Any, ...]] = []
    shares = [0] * (out + 1)  # how many shares each register's adjoint sums
    for register in range(out, -1, -1):
        op, first, second, param, _ = rows[register]
        if first < 0:
            continue
        operands = program.operands(register, first, second)
        needs = tuple(reaches[r] for r in operands)
        if any(needs):
            tensor_op = _structural(op)
            sums = None if tensor_op is not None else \
                tuple(_summed_axes(shapes[register], leads[register], shapes[r], leads[r]) for r in operands)
            plan.append((register, operands, needs, op, param, tensor_op, sums))
            for r, need in zip(operands, needs):
                shares[r] += need
    return [(*step, tuple(shares[r] == 1 and r != out for r in step[1]), _bound_vjp(step, leads)) for step in plan]


def _bound_vjp(step: tuple[Any, ...], leads: Sequence[int]) -> Any:
    """A tensor op's step of a sweep as one function, ``bound(run, g, outs) -> shares``: what
    ``TensorRun._vjp`` does for it, with the operands' leads and the way its VJP is called
    worked out once with the plan.  None for an elementwise op (``_vjp`` runs it)."""
    register, operands, needs, _, param, tensor_op, sums = step
    if tensor_op is None or sums is not None:
        return None
    arg_leads = [leads[r] for r in operands]
    vjp = tensor_op.vjp
    from_saved = getattr(vjp, "from_saved", None)
    into = len(operands) > 1 and getattr(vjp, "takes_out", False)

    def bound(run: TensorRun, g: Any, outs: tuple[Any, ...] | None) -> tuple[Any, ...]:
        values = run.values
        args = [values[r] for r in operands]
        if register in run.saved:  # what the forward kept for the VJP (cross_entropy's softmax)
            return from_saved(np, g, run.saved[register], args, arg_leads, param, needs)
        if len(operands) == 1:
            return vjp(np, g, values[register], args, arg_leads, param)
        if outs is not None and into:
            return vjp(np, g, values[register], args, arg_leads, param, needs, into=outs)
        return vjp(np, g, values[register], args, arg_leads, param, needs)
    return bound


def _summed_axes(out_row: Shape, out_lead: int, row: Shape, lead: int) -> tuple[int, ...] | None:
    """The axes of an elementwise result's gradient that ``unbroadcast`` sums to give an operand's
    share (per-row shapes ``out_row`` and ``row``, each with its batch axis when its lead is 1),
    worked out from the shapes alone; None when the gradient has the operand's shape already."""
    if out_lead == lead and tuple(out_row) == tuple(row):
        return None
    extra = out_lead + len(out_row) - lead - len(row)
    added = tuple(range(lead, lead + extra))  # after a batched operand's batch axis, else in front
    stretched = tuple(i + extra for i in range(lead, lead + len(row))
                      if row[i - lead] == 1 and out_row[i + extra - out_lead] != 1)
    return added + stretched


# --- inputs ----------------------------------------------------------------------------------


def as_array(value: Any, dtype: Any = None) -> Any:
    """A value given for an input as a float64 array, or one of ``dtype`` (a number stays 0-d).
    A finite number too large for ``dtype`` becomes an infinity here: callers that take values
    from the user convert with ``in_precision``, which says which one."""
    wide = np.asarray(value.values, dtype=float).reshape(value.shape) if isinstance(value, ArrayLiteral) \
        else np.asarray(value, dtype=float)
    return wide if dtype is None else narrowed(wide, dtype)[0]


def narrowed(array: Any, dtype: Any) -> tuple[Any, int | None]:
    """``array`` (float64) in ``dtype``, and the flat index of its first finite entry too large
    for ``dtype`` (it became an infinity), or None.  No copy when ``array`` is of ``dtype``."""
    made = np.asarray(array)
    if made.dtype == dtype:
        return made, None
    with np.errstate(over="ignore"):  # said by the caller, at the value's place, not as NumPy's warning
        made = made.astype(dtype)
    if made.dtype.itemsize >= 8 or made.dtype.kind != "f":
        return made, None
    lost = np.isinf(made)
    if not lost.any():
        return made, None
    lost &= np.isfinite(array)
    return made, (int(np.argmax(lost)) if lost.any() else None)


def beyond_range(value: float, dtype: Any) -> tuple[str, str, str]:
    """What to say of a finite ``value`` too large for ``dtype``: the value as a program writes
    it ('1e40'), the reason ("beyond float32's range (about 3.4e38)") and the hint."""
    name = np.dtype(dtype).name
    largest = _exponent_text(f"{float(np.finfo(dtype).max):.2g}")
    hint = (f"{name} holds numbers up to about {largest} in size: scale the value down, or run in float64 "
            "(leave out --dtype)")
    return _exponent_text(repr(float(value))), f"beyond {name}'s range (about {largest})", hint


def _exponent_text(number: str) -> str:
    """Python's '1e+40' written as a program would write it, '1e40'."""
    return number.replace("e+", "e")


def in_precision(value: Any, dtype: Any, name: str, position: Any = None, source: Any = None,
                 given: bool = False) -> Any:
    """The value of the input ``name`` as an array of ``dtype``; InputError at ``position`` when a
    finite entry is too large for it (``given``: the value came from --set or --values)."""
    wide = as_array(value)
    made, lost = narrowed(wide, dtype)
    if lost is None:
        return made
    shown, reason, hint = beyond_range(wide.flat[lost], dtype)
    entry = "" if wide.ndim == 0 else f"[{', '.join(map(str, np.unravel_index(lost, wide.shape)))}]"
    notes = [f"it is {name}{entry}" + (", as --set or --values gives it" if given else "")]
    raise InputError(f"{shown} is {reason}", position, source, hint, notes)


def in_precision_columns(columns: Mapping[str, Any], dtype: Any, row_label: Any) -> dict[str, Any]:
    """Data columns (a row per leading index) in ``dtype``; InputError naming the column and the
    row (``row_label(index)``: 'line 3 of data.csv') of the first number too large for it."""
    made = {}
    for name, column in columns.items():
        wide = np.asarray(column, dtype=float)
        made[name], lost = narrowed(wide, dtype)
        if lost is not None:
            row = lost // max(1, int(np.prod(wide.shape[1:])))
            shown, reason, hint = beyond_range(wide.flat[lost], dtype)
            raise InputError(f"the column '{name}' holds {shown}, {reason}", hint=hint, notes=[f"in {row_label(row)}"])
    return made


FLOAT_TYPES = ("float64", "float32")  # the precisions a program runs in (``dtype=``), the default first


def float_type(dtype: Any) -> Any:
    """``dtype`` (None, a name in ``FLOAT_TYPES`` or a NumPy type) as a NumPy dtype: float64
    when None; ValueError for any other type (an integer program has no derivatives)."""
    if dtype is None:
        return np.dtype(np.float64)
    try:
        made = np.dtype(dtype)
    except TypeError:
        made = None
    if made is None or made.name not in FLOAT_TYPES:
        raise ValueError(f"a program runs in {' or '.join(FLOAT_TYPES)}, not {dtype!r}")
    return made


def draw_initializers(program: Program, seed: int | None) -> dict[str, Any]:
    """The starting value of every input declared with an initializer (``normal([16, 2], 0.5)``),
    drawn in the order they are written from one generator seeded with ``seed``."""
    generator = np.random.default_rng(seed)
    drawn = {}
    for variable in program.inputs:
        default = variable.default
        if isinstance(default, Initializer):
            drawn[variable.name] = _draw(generator, default)
    return drawn


def _draw(generator: Any, init: Initializer) -> Any:
    if init.kind == "normal":
        return generator.normal(0.0, init.arguments[0], init.shape)
    if init.kind == "uniform":
        low, high = init.arguments
        return generator.uniform(low, high, init.shape)
    return np.zeros(init.shape)


def input_arrays(program: Program, given: Mapping[str, Any], seed: int | None = 0, dtype: Any = None
                 ) -> dict[str, Any]:
    """Every input's value as an array: the one given, else its default (initializers drawn
    from ``seed``).  An input with neither is left out (the caller says which are missing).
    ``dtype``: float64 (None) or float32; draws are made in float64 and rounded, so a float32
    run starts from the float64 run's values, rounded."""
    drawn = None
    arrays = {}
    for variable in program.inputs:
        if variable.name in given:
            arrays[variable.name] = as_array(given[variable.name]) if dtype is None else \
                in_precision(given[variable.name], dtype, variable.name, source=program.source, given=True)
        elif isinstance(variable.default, Initializer):
            if drawn is None:
                drawn = draw_initializers(program, seed)
            arrays[variable.name] = as_array(drawn[variable.name]) if dtype is None else \
                in_precision(drawn[variable.name], dtype, variable.name, variable.position, program.source)
        elif variable.default is not None:
            arrays[variable.name] = as_array(variable.default) if dtype is None else \
                in_precision(variable.default, dtype, variable.name, variable.position, program.source)
    return arrays


# --- forward -----------------------------------------------------------------------------------


def run_forward(program: Program, inputs: Mapping[str, Any], batched: frozenset[str] = frozenset(),
                first_row: int = 0, check: bool = True, shapes_cache: dict[Any, Any] | None = None,
                check_every: bool = False, dtype: Any = None) -> TensorRun:
    """Run ``program`` on ``inputs`` (an array for every input; those named in ``batched`` carry a
    leading batch axis).  Shapes are inferred and checked first (``ShapeError``); every result
    must be finite (``EvaluationError`` at the first op that is not, unless ``check`` is off: the
    caller then looks at the rows itself, ``check_register``).

    ``shapes_cache``: a dict the caller keeps for one program, which runs it many times (``fit``'s
    steps, ``batch``'s chunks): the shapes inferred are kept there by the inputs' per-row shapes,
    and inferred again only for new ones (the inference depends on nothing else); so are the
    program's rows and the reverse sweeps' plans (``TensorRun.adjoints``), which depend on the
    program alone.  With a cache, a register whose NaN or infinity would reach a later register
    through an op that always passes it on (``+``, ``*``, ``tanh``... : ``propagates`` in the op
    table) is not checked itself: that register's check covers it, and a run where a check fails
    runs again with every register checked (``check_every``), so the error is the one the first
    bad register gives.

    ``dtype``: the precision of the program's constants, float64 (None) or float32; the inputs
    are given in it (``input_arrays``), and every register is then of it."""
    bound_key = None if shapes_cache is None else \
        (_BOUND, tuple([(name, value.shape[1:] if name in batched else value.shape) for name, value in inputs.items()]),
         batched, dtype)
    bound = None if bound_key is None else shapes_cache.get(bound_key)  # type: ignore[union-attr]
    if bound is None:
        bound = _bound(program, inputs, batched, shapes_cache, dtype)
        if bound_key is not None:  # (one look-up a run: fit's steps, batch's chunks)
            shapes_cache[bound_key] = bound  # type: ignore[index]
    shapes, rows, plan = bound
    covered = None if shapes_cache is None or check_every or not check else shapes_cache[_COVERED]
    try:
        return _run(program, inputs, first_row, check, shapes, rows, plan, covered, shapes_cache)
    except EvaluationError:
        if covered is None:
            raise
    # a check or a kernel failed where some register went unchecked: find the first that fails
    return _run(program, inputs, first_row, check, shapes, rows, plan, None, shapes_cache)


_BOUND = "bound"  # the first item of the key of what ``_bound`` gave, in the shapes cache


def _bound(program: Program, inputs: Mapping[str, Any], batched: frozenset[str], shapes_cache: dict[Any, Any] | None,
           dtype: Any) -> tuple[list[Shape], list[Any], tuple[list[int], list[Any]]]:
    """The shapes of ``program``'s registers for the inputs' shapes, its rows and its step plan
    (``_bind_kernels``), each kept in ``shapes_cache`` when there is one."""
    input_shapes = {name: value.shape[1:] if name in batched else value.shape for name, value in inputs.items()}
    if shapes_cache is None:
        shapes = infer(program, input_shapes)
        rows = list(program.rows())
    else:
        key = tuple(input_shapes.items())
        shapes = shapes_cache.get(key)  # type: ignore[assignment]
        if shapes is None:
            shapes = shapes_cache[key] = infer(program, input_shapes)
        rows = shapes_cache.get(_ROWS)  # type: ignore[assignment]
        if rows is None:  # the program's rows do not change from run to run either
            rows = shapes_cache[_ROWS] = list(program.rows())
            shapes_cache[_COVERED] = _covered(rows)
    dtype = np.float64 if dtype is None else np.dtype(dtype).type
    # (the shapes' list lives in the cache as long as the plan does, so its id names it)
    plan_key = None if shapes_cache is None else (_KERNELS, id(shapes), batched, dtype)
    plan = None if plan_key is None else shapes_cache.get(plan_key)  # type: ignore[union-attr]
    if plan is None:  # bound once per program, batched inputs and shapes: fit's steps, batch's chunks
        plan = _bind_kernels(program, rows, shapes, batched, dtype)
        if plan_key is not None:
            shapes_cache[plan_key] = plan  # type: ignore[index]
    return shapes, rows, plan


def _constant(program: Program, param: Any, dtype: Any, where: Any) -> Any:
    """A constant of the program in ``dtype``; ProgramError at it when too large for ``dtype``."""
    wide = as_array(param)
    made, lost = narrowed(wide, dtype)
    if lost is not None:
        shown, reason, hint = beyond_range(wide.flat[lost], dtype)
        raise ProgramError(f"the constant {shown} is {reason}", where, program.source, hint)
    return made if isinstance(param, ArrayLiteral) else made[()]


_KERNELS = "kernels"  # the first item of a bound plan's key in the shapes cache (``_bind_kernels``)


def _bind_kernels(program: Program, rows: Sequence[Any], shapes: Sequence[Shape], batched: AbstractSet[str], dtype: Any
                  ) -> tuple[list[int], list[Any]]:
    """What a run of the program works out the same way every time, given which inputs carry
    the batch axis and every register's shape: each register's lead (1 where it carries the
    batch axis) and its step: for an op, a function of the values so far that gives the
    register's value (and keeps its slopes, or what its VJP needs), with its operands, kernel
    and the way it is called bound in (``_step``); a constant's value, in ``dtype``; None for
    an input.  A run is then one call per register (the compiled step plan of issue 34)."""
    leads: list[int] = []
    steps: list[Any] = []
    for register, (op, first, second, param, _) in enumerate(rows):
        if op == INPUT or op == CONST:
            leads.append(1 if op == INPUT and param in batched else 0)
            steps.append(None if op == INPUT else _constant(program, param, dtype, rows[register][4]))
            continue
        operands = program.operands(register, first, second)
        leads.append(max(leads[r] for r in operands))
        steps.append(_step(register, op, operands, param, shapes, leads))
    return leads, steps


def _step(register: int, op: str, operands: tuple[int, ...], param: Any, shapes: Sequence[Shape],
          leads: Sequence[int]) -> Any:
    """One register's step, ``step(values, slopes, saved) -> value``: an elementwise op's kernel
    straight on its operands unless a batched operand has fewer axes than the result and must be
    lined up first, or the op takes a parameter (then through ``elementwise_forward``); a tensor
    op's forward, or the one that keeps what its VJP needs (cross_entropy's softmax, computed once)."""
    arg_leads = [leads[r] for r in operands]
    tensor_op = _structural(op)
    if tensor_op is not None:
        saving = getattr(tensor_op.forward, "saving", None)
        if saving is not None:
            def saving_step(values: list[Any], slopes: Any, saved: Any) -> Any:
                out, saved[register] = saving(np, [values[r] for r in operands], arg_leads, param)
                return out
            return saving_step
        forward = tensor_op.forward

        def tensor_step(values: list[Any], slopes: Any, saved: Any) -> Any:
            return forward(np, [values[r] for r in operands], arg_leads, param)
        return tensor_step
    rank = len(shapes[register])
    if param is not None or not all(not leads[r] or len(shapes[r]) == rank for r in operands):
        def aligned_step(values: list[Any], slopes: Any, saved: Any) -> Any:
            out, slopes[register] = elementwise_forward(np, op, [values[r] for r in operands], arg_leads, param)
            return out
        return aligned_step
    kernel = OPS[op].vector
    if len(operands) == 1:
        (a,) = operands

        def unary_step(values: list[Any], slopes: Any, saved: Any) -> Any:
            out, slopes[register] = kernel(np, values[a])
            return out
        return unary_step
    if len(operands) == 2:
        a, b = operands

        def binary_step(values: list[Any], slopes: Any, saved: Any) -> Any:
            out, slopes[register] = kernel(np, values[a], values[b])
            return out
        return binary_step

    def direct_step(values: list[Any], slopes: Any, saved: Any) -> Any:  # where(c, a, b), clip(x, lo, hi)...
        out, slopes[register] = kernel(np, *[values[r] for r in operands])
        return out
    return direct_step


def _run(program: Program, inputs: Mapping[str, Any], first_row: int, check: bool, shapes: list[Shape],
         rows: list[Any], plan: tuple[list[int], list[Any]], covered: list[bool] | None,
         shapes_cache: dict[Any, Any] | None) -> TensorRun:
    leads, steps = plan
    values: list[Any] = [None] * len(rows)
    run = TensorRun(program, values, shapes, leads, rows=rows, plans={} if shapes_cache is None else shapes_cache)
    slopes, saved = run.slopes, run.saved
    add_reduce = np.add.reduce
    # A run made once (eval, a failed row run again alone) looks at its inputs too; one of many
    # (fit's steps, batch's chunks: a shapes cache) only when a result is not finite (check_register)
    check_inputs = check and shapes_cache is None
    with np.errstate(all="ignore"):  # once for the whole run: non-finite results are looked for below
        for register, step in enumerate(steps):
            if step.__class__ is not _FUNCTION:
                # an input, or a constant (never written into, so one array serves every run)
                value = values[register] = inputs[rows[register][3]] if step is None else step
                if check_inputs and step is None:
                    total = add_reduce(value, axis=None)
                    if total - total != 0.0:
                        check_register(run, register, first_row)
                continue
            try:
                out = values[register] = step(values, slopes, saved)
            except DomainError as error:
                raise EvaluationError(error.message, rows[register][4], program.source) from None
            if check and (covered is None or not covered[register]):
                # a finite sum has finite terms: one reduction says the register is finite (the
                # whole check runs only when it is not)
                total = add_reduce(out, axis=None)
                if total - total != 0.0:
                    check_register(run, register, first_row)
    return run


_FUNCTION: Any = type(_run)  # (a step of the plan is a function; an input's None and a constant's array are not)


_ROWS = "rows"  # the key under which shapes_cache keeps the program's rows (the shapes' keys are tuples)
_COVERED = "covered"  # ... and which registers a later register's check covers (``_covered``)


def _covered(rows: Sequence[Any]) -> list[bool]:
    """For each register, whether an elementwise op that always passes a NaN or an infinity on
    (``propagates`` in the op table) takes it as an operand: the later register is then not
    finite wherever this one is not, so checking the later one checks this one too."""
    covered = [False] * len(rows)
    for op, first, second, _, _ in rows:
        entry = None if first < 0 or _structural(op) is not None else OPS.get(op)
        if entry is not None:
            for position in entry.propagates:
                covered[(first, second)[position]] = True
    return covered


def covered_registers(run: TensorRun) -> list[bool]:
    """``_covered`` of the run's program: kept in its shapes cache when it has one."""
    covered = run.plans.get(_COVERED)
    return _covered(run.rows) if covered is None else covered


def check_register(run: TensorRun, register: int, first_row: int = 0) -> None:
    """Raise the ``EvaluationError`` of a register whose value is not finite everywhere: the op,
    its line and column, the first bad entry and the operands' values there.  Where an input
    it is computed from is not finite (on the same row), the error names that input instead, as
    the engine does: nothing overflowed, the value given was inf or NaN."""
    out = run.values[register]
    total = float(np.sum(out)) if out.size else 0.0
    if math.isfinite(total) or np.isfinite(out).all():  # a finite sum has finite terms
        return
    bad = tuple(int(i) for i in np.argwhere(~np.isfinite(out))[0])
    _check_inputs_of(run, register, bad, first_row)
    op, first, second, param, _ = run.rows[register]
    operands = run.program.operands(register, first, second)
    program = run.program
    where = program.instructions[register].position
    lead = run.leads[register]
    entry = bad[lead:]
    at = f" at entry [{', '.join(map(str, entry))}]" if entry else ""
    named = _operand_entries(run, register, operands, bad)
    described = ", where " + " and ".join(text for text, _ in named) if named else ""
    value = float(out[bad])
    from .scalar import _shown_op  # the name an overflow message gives an op (x ** 2: power)

    name = op if _structural(op) is not None else _shown_op(OPS[op].name)
    table_op = OPS.get(op)
    domain = table_op.domain if table_op is not None else None
    kernel_says = None if math.isnan(value) or table_op is None else \
        _kernel_domain_error(table_op, [number for _, number in named], param)
    if kernel_says is not None:  # log of 0: no overflow, but outside the op's domain, in its own words
        message = f"{kernel_says}{at}{described}"
    elif math.isnan(value) and domain:
        message = f"{name} is undefined{at}{described} (its domain: {domain})"
    elif math.isnan(value):
        message = f"the result of {name} is not a number{at}{described}"
    elif op == "/" and described.endswith(" 0"):
        message = f"division by zero{at}{described}"
    else:
        message = f"{name} overflows{at}{described}"
    if table_op is None:
        hint = None
    elif math.isnan(value) or kernel_says is not None:
        hint = table_op.hint
    else:  # in the limits of the precision the program ran in
        hint = table_op.overflow_hint and overflow_advice(table_op, out.dtype.name)
    error = EvaluationError(message, where, program.source, hint or "check the inputs' values")
    error.row = first_row + bad[0] if lead else None  # type: ignore[attr-defined]  # the caller names the row
    raise error


def _kernel_domain_error(op: Any, operands: list[float], param: Any) -> str | None:
    """What the op's float kernel (the engine's) says of ``operands``, when it refuses them for
    a reason other than an overflow (log of 0, 0 to a negative power); None when it computes
    them, or overflows (float32's range is not float64's: exp(100) overflows in float32 only)."""
    if len(operands) != op.arity:  # (a broadcast operand left unnamed: nothing to ask the kernel)
        return None
    try:
        op.scalar(*operands, *(() if param is None else (float(param),)))
    except DomainError as error:
        return None if error.overflow else error.message
    except (ArithmeticError, ValueError):
        return None
    return None


def _check_inputs_of(run: TensorRun, register: int, bad: tuple[int, ...], first_row: int) -> None:
    """Raise the error of an input that ``register`` is computed from (or is) and that is not
    finite: on the row of ``bad`` when both carry the batch axis, anywhere in it otherwise."""
    program, rows, leads = run.program, run.rows, run.leads
    feeding, stack = set(), [register]
    while stack:  # every register ``register`` reads, however far back
        r = stack.pop()
        if r not in feeding:
            feeding.add(r)
            _, first, second, _, _ = rows[r]
            if first >= 0:
                stack.extend(program.operands(r, first, second))
    for r in sorted(feeding):
        if rows[r][0] != INPUT:
            continue
        value = np.asarray(run.values[r])
        same_row = bool(leads[r]) and bool(leads[register])
        part = value[bad[0]] if same_row else value
        if np.isfinite(part).all():
            continue
        index = tuple(int(i) for i in np.argwhere(~np.isfinite(part))[0])
        name = rows[r][3]
        at = f" at entry [{', '.join(map(str, index))}]" if index else ""
        error = EvaluationError(f"the input '{name}' is {float(np.asarray(part)[index])!r}{at}, not a finite number",
                                program.variables[name].position, program.source,
                                "every input must be a finite number: drop or fill the missing values")
        error.row = first_row + bad[0] if same_row else None  # type: ignore[attr-defined]
        raise error


def _operand_entries(run: TensorRun, register: int, operands: tuple[int, ...], bad: tuple[int, ...]
                     ) -> list[tuple[str, float]]:
    """For an elementwise op, each operand's entry at the bad place, and its text ('x = -1'), by
    name, or as 'the operand is -1' ('the left operand', 'the right operand') where it has none;
    nothing for any other op."""
    if _structural(run.rows[register][0]) is not None:
        return []
    names = run.program.names_by_register()
    out = run.values[register]
    lead = run.leads[register]
    labels = ["the operand"] if len(operands) == 1 else ["the left operand", "the right operand"]
    parts = []
    for label, r in zip(labels, operands):
        value = run.values[r]
        if run.leads[r]:  # its per-row axes lined up with the result's, as the op saw them
            value = align(np, value, 1, np.shape(value)[1:], np.ndim(out) - lead)
        entry = float(np.broadcast_to(value, np.shape(out))[bad])
        index = bad[lead:] if np.shape(run.values[r])[run.leads[r]:] == np.shape(out)[lead:] else ()
        named = names[r] + (f"[{', '.join(map(str, index))}]" if index else "") if r in names else None
        parts.append((f"{named} = {entry:g}" if named else f"{label} is {entry:g}", entry))
    return parts


def check_scalar_output(run: TensorRun, output: str) -> None:
    """The gradient is of a number: a vector output gives a Jacobian; anything larger is refused."""
    shape = run.shapes[run.register(output)]
    if len(shape) > 1:
        raise InputError(f"'{output}' is a matrix ({shape_text(shape)}); a gradient is of a number, and a "
                         f"Jacobian of a vector", hint=f"differentiate sum({output}), mean({output}) or an "
                         f"entry such as {output}[0, 0]")


def number_output_error(program: Program, output: str, shape: Shape, hint: str) -> InputError:
    """A command that follows the gradient of a number, asked for that of ``output`` of ``shape``:
    the error, at the statement that makes ``output``, with the command's ``hint``."""
    return InputError(f"'{output}' has shape {shape_text(shape)}, and a gradient is of a number",
                      program.variables[output].position, program.source, hint)


# --- eval ----------------------------------------------------------------------------------------


@dataclass
class TensorEvaluation:
    """``eval`` of a tensor program: every variable's value and shape, and the derivative of
    ``output``: its gradient (a number output) or its Jacobian (a vector output), with respect
    to every named variable (``derivatives``: each the variable's shape, or ``(m, *shape)`` for
    a Jacobian of an output of m entries)."""

    program: Program
    run: TensorRun
    output: str
    derivatives: dict[str, Any]
    jacobian: bool
    # forward mode: the variables differentiated (the inputs, or the --wrt names, in program order);
    # each before the output got a JVP pass per entry, seeded at its register
    forward_names: tuple[str, ...] | None = None

    @property
    def names(self) -> list[str]:
        return list(self.program.variables)

    def kind(self, name: str) -> str:
        return "output" if name == self.output else self.program.variables[name].kind

    def shape(self, name: str) -> Shape:
        return self.run.shapes[self.run.register(name)]


def forward_run(program: Program, given: Mapping[str, Any], output: str | None, seed: int | None,
                dtype: Any) -> tuple[str, Any, TensorRun]:
    """The forward run of ``program`` on ``given`` (every input given or defaulted, else the
    missing-inputs error): the output's name, the precision and the run."""
    from ..language.program import missing_inputs, missing_inputs_error, output_name

    missing = missing_inputs(program, given)
    if missing:
        raise missing_inputs_error(program, missing)
    dtype = float_type(dtype)
    return output_name(program, output), dtype, run_forward(program, input_arrays(program, given, seed, dtype),
                                                             dtype=dtype)


def evaluate_tensors(program: Program, given: Mapping[str, Any], output: str | None = None,
                     seed: int | None = 0, forward: bool = False, wrt: Sequence[str] | None = None,
                     dtype: Any = None) -> TensorEvaluation:
    """Run ``program`` once on ``given`` values (numbers or nested lists; the other inputs take
    their defaults, initializers drawn from ``seed``) and differentiate ``output`` (default: the
    result) with respect to every named variable it depends on or that comes before it.

    Reverse mode sweeps back once per entry of the output; ``forward`` mode (those of ``wrt`` when
    it is given, else the inputs) runs one JVP per entry of each variable instead, seeded at its
    register, and gives the same numbers: for a computed variable, d output / d it with what it is
    computed from held, as its reverse-mode gradient is.  ``dtype``: float64 (None, the default) or
    float32 (``FLOAT_TYPES``), the precision of every value and derivative (ValueError for another)."""
    output, dtype, run = forward_run(program, given, output, seed, dtype)
    check_scalar_output(run, output)
    names = [name for name, v in program.variables.items() if v.register <= run.register(output)]
    out_value = run.value(output)
    if forward:
        return _forward_evaluation(run, output, wrt)
    if out_value.ndim == 0:
        derivatives = run.gradients(output, names)
        return TensorEvaluation(program, run, output, _with_later(run, output, derivatives, ()), jacobian=False)
    later = [name for name, v in program.variables.items() if v.register > run.register(output)]
    if wrt is not None:  # a Jacobian of the names shown only: the others may not fit
        names = [name for name in names if name in wrt or name == output]  # d out / d out is shown
        later = [name for name in later if name in wrt]
    _check_jacobian_size(run, output, names + later)
    derivatives = {name: np.zeros(out_value.shape + np.shape(run.value(name)), dtype) for name in names}
    for entry in range(out_value.shape[0]):  # one reverse sweep per entry of the output
        seed_vector = np.zeros_like(out_value)
        seed_vector[entry] = 1.0
        for name, grad in run.gradients(output, names, seed_vector).items():
            derivatives[name][entry] = grad
    for name in later:  # the output cannot depend on them
        derivatives[name] = np.zeros(out_value.shape + np.shape(run.value(name)), dtype)
    return TensorEvaluation(program, run, output, derivatives, jacobian=True)


def _forward_evaluation(run: TensorRun, output: str, wrt: Sequence[str] | None) -> TensorEvaluation:
    """Forward mode's derivatives of ``output`` with respect to the names of ``wrt`` (default: the
    inputs it depends on or that come before it), in program order: a JVP per entry of each one
    computed before the output, and zeros for one computed after it (the output cannot depend on
    it).  d output / d output is the identity, with or without a pass."""
    program = run.program
    last = run.register(output)
    if wrt is None:
        names = [v.name for v in program.inputs if v.register <= last]
    else:
        wanted = set(wrt)
        names = [name for name in program.variables if name in wanted]
    earlier = [name for name in names if run.register(name) <= last]
    _check_jacobian_size(run, output, earlier + [output], forward=True)  # d output / d output too
    derivatives = _forward_derivatives(run, output, earlier)
    out_value = run.value(output)
    for name in names:
        if name not in derivatives:
            derivatives[name] = np.zeros(out_value.shape + np.shape(run.value(name)), out_value.dtype)
    identity = np.eye(out_value.size, dtype=out_value.dtype).reshape(out_value.shape * 2)
    derivatives.setdefault(output, identity)
    return TensorEvaluation(program, run, output, derivatives, jacobian=out_value.ndim > 0,
                            forward_names=tuple(names))


JACOBIAN_LIMIT = 10_000_000  # numbers a Jacobian may hold (80 MB), and reverse sweeps it may take


def _check_jacobian_size(run: TensorRun, output: str, names: Sequence[str], forward: bool = False) -> None:
    """Refuse derivatives too large to be worth computing and printing, before any is made: one
    number per entry of output and variable, and one sweep per entry of the output (reverse
    mode) or of the inputs (forward mode: as many JVPs as input entries, even for a number)."""
    entries = int(run.value(output).size)
    size = entries * sum(int(np.size(run.value(name))) for name in names)
    if size <= JACOBIAN_LIMIT:
        return
    narrow = "inputs" if forward else "variables"
    if entries == 1:  # only forward mode gets here: its passes are the limit, not the numbers
        passes = size - 1  # one per entry differentiated (the 1 is d output / d output)
        unit = pass_unit(run.program, names[:-1])
        raise InputError(f"forward mode would run {passes:,} passes for the gradient of '{output}' (one per "
                         f"{unit}), over the limit of {JACOBIAN_LIMIT:,}", hint="reverse mode (the default) gives "
                         f"the gradient of a number in one pass; --wrt NAMES narrows the {narrow}",
                         source=run.program.source)
    raise InputError(f"the Jacobian of '{output}' ({entries:,} entries) would hold {size:,} numbers, over the "
                     f"limit of {JACOBIAN_LIMIT:,}", hint=f"differentiate a number: sum({output}), mean({output}) "
                     f"or an entry such as {output}[0]; --wrt NAMES narrows the {narrow}",
                     source=run.program.source)


def pass_unit(program: Program, names: Sequence[str]) -> str:
    """What forward mode runs a pass per, differentiating ``names``: 'input entry', or 'variable
    entry' when one of them is computed."""
    inputs = {variable.name for variable in program.inputs}
    return "input entry" if all(name in inputs for name in names) else "variable entry"


def _with_later(run: TensorRun, output: str, derivatives: dict[str, Any], out_shape: Shape) -> dict[str, Any]:
    """The derivatives, and zeros for the variables computed after the output (it cannot depend on them)."""
    last = run.register(output)
    for name, variable in run.program.variables.items():
        if variable.register > last:
            value = run.values[variable.register]
            derivatives[name] = np.zeros(out_shape + np.shape(value), np.result_type(value))
    return derivatives


def _forward_derivatives(run: TensorRun, output: str, names: Sequence[str]) -> dict[str, Any]:
    """d output / d each of ``names`` (inputs or computed variables) by forward mode: one JVP along
    each entry of each, seeded at its register, laid out as reverse mode lays them out (the
    output's axes first for a Jacobian)."""
    out_shape = np.shape(run.value(output))
    derivatives = {}
    for name in names:
        value = run.value(name)
        columns = []
        for index in np.ndindex(np.shape(value)):
            tangent = np.zeros_like(value)
            tangent[index] = 1.0
            columns.append(np.ravel(run.jvp(output, {name: tangent})))
        table = np.stack(columns, axis=-1) if columns else np.zeros((int(np.prod(out_shape)), 0), value.dtype)
        derivatives[name] = table.reshape(out_shape + np.shape(value))
    return derivatives


# --- derivatives that are not finite ---------------------------------------------------------------

_SHOWN = 5  # gradients named in the warning; the others are counted


def non_finite_gradient_warnings(evaluation: TensorEvaluation, names: Sequence[str] | None = None) -> list[str]:
    """One warning when a derivative is inf or NaN somewhere (``sum(sqrt(x))`` at an x of 0), as
    for scalar programs: the first such entry of each variable (``dy/dx[0] = inf``), and the op
    whose local derivative made it so, its operand there and the statement it is in."""
    output = evaluation.output
    out_shape = np.shape(evaluation.run.value(output))
    said = []
    for name in names if names is not None else evaluation.names:
        derivative = evaluation.derivatives.get(name)
        if derivative is None or name == output:
            continue
        derivative = np.asarray(derivative)
        if np.isfinite(derivative).all():
            continue
        index = tuple(int(i) for i in np.argwhere(~np.isfinite(derivative))[0])
        split = len(out_shape) if evaluation.jacobian else 0
        said.append(f"d{_entry(output, index[:split])}/d{_entry(name, index[split:])} = {float(derivative[index])}")
    if not said:
        return []
    more = f" and {len(said) - _SHOWN:,} more" if len(said) > _SHOWN else ""
    return [f"a gradient is not finite: {', '.join(said[:_SHOWN])}{more}{_origin(evaluation.run, output)}"]


def _entry(name: str, index: tuple[int, ...]) -> str:
    return f"{name}[{', '.join(map(str, index))}]" if index else name


def _origin(run: TensorRun, output: str) -> str:
    """'; the derivative of 'sqrt' at 0 is inf (in the statement of y, f.ad:2:1)': the op nearest
    the output whose gradient in is finite and whose gradient out is not, or '' if none is."""
    out = run.register(output)
    with np.errstate(all="ignore"):
        adjoints = run.adjoints(output)
        for register in range(out, -1, -1):
            g = adjoints.get(register)
            op, first, second, param, _ = run.rows[register]
            if g is None or first < 0 or not np.isfinite(g).all():
                continue
            operands = run.program.operands(register, first, second)
            for k, grad in enumerate(run.vjp(register, g)):
                if grad is not None and not np.isfinite(grad).all():
                    return _said_origin(run, register, operands, k, grad)
    return ""


def _said_origin(run: TensorRun, register: int, operands: tuple[int, ...], k: int, grad: Any) -> str:
    op, _, _, param, _ = run.rows[register]
    index = tuple(int(i) for i in np.argwhere(~np.isfinite(grad))[0])
    if _structural(op) is not None:
        said = f"; the derivative of {op} is not finite"
    else:
        from ..engine.ops import short_number

        written = f"x**{short_number(float(param))}" if op == "**c" else OPS[op].name
        values = [run.values[r] for r in operands]
        slope = np.asarray(run._slopes(register)()[k])
        if all(np.shape(v) == np.shape(grad) for v in values) and np.shape(slope) == np.shape(grad):
            at = [short_number(float(v[index])) for v in values]
            point = at[0] if len(at) == 1 else f"({', '.join(at)})"
            said = f"; the derivative of '{written}' at {point} is {float(slope[index])}"
        else:  # broadcast operands: their entries there would take more words than they are worth
            said = f"; the derivative of '{written}' is not finite"
    program = run.program
    statement = min((v for v in program.variables.values() if v.register >= register),
                    key=lambda v: v.register, default=None)
    if statement is not None:
        position = statement.position
        said += f" (in the statement of {statement.name}, {program.source.name}:{position.line}:{position.column})"
    return said
