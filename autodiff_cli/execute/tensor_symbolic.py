"""The symbolic differentiator of tensor programs: a ``Program`` -> a program of its gradients.

Reverse mode over the instructions, written out instead of run: each instruction's VJP is its
registry entry's ``language_vjp`` (``vjp_rule``; an elementwise entry's writes its symbolic
local derivatives) that builds the adjoints of its operands as expressions of the
language (``Term`` trees), from the adjoint of its result ``g``, its operands and its result.  An elementwise op's local derivative is the op table's own
``symbolic`` rule (``expressions.rule_program``), so the maths of ``tanh`` is still written
once; what the tensor rules add is the shapes: an operand that broadcasting stretched gets its
adjoint summed back (``sum(g, 0)``...), and a reduction's adjoint is spread back over the
axes it removed.

The language has no ``broadcast_to`` or one-hot, so the rules write
them with forms it has (every value of a run is finite, so ``0*x`` is exactly 0 and these are
exact):

* ``g + 0*x`` spreads ``g`` to the shape of ``x`` when NumPy's right-aligned broadcasting
  already lines them up (a total, or a sum over axis 0); where the expression around it
  broadcasts ``g`` anyway (``g / 8 * (2 * t1)``) it is just ``g``;
* ``transpose(g + 0*transpose(x))`` spreads a vector ``g`` of a matrix's rows along its
  columns (a sum over axis 1, softmax's row totals, the outer product of ``W @ x``'s VJP);
* one-hot rows are ``1 - step(abs(labels - [0, 1, ..., C-1]))``, and indexing's scatter is a
  product with constant one-hot vectors and selection matrices.

These cover vectors and matrices, all the shapes ``@`` and ``transpose`` take.  On a tensor of
3 or more axes a reduction's adjoint along an inner axis puts that axis back with size 1
(``tensor_ops.keep_axis``) before it broadcasts, indexing's adjoint puts ``g`` back axis by axis
or through the flattened tensor, and ``sum_to`` sums an inner size-1 axis with keepdim.

Every adjoint of a named variable is a statement ``dL_dW = ...``; an intermediate adjoint is
named too when a rule uses it more than once or it nests deeply, and a forward value a rule
reads is named (``t1 = ...``, numbered in the order written) when the program left it
unnamed.  So the result grows linearly with the program.  The output's statement is written
last (``eval`` shows the variables up to its output, so it then shows every gradient).

``--order 2`` differentiates the derivative program again: the gradient of
``dL_v = sum(dL_dW * v_W) + ...`` (the derivative of L along v) with respect to the same
variables is the Hessian-vector product ``Hv_W`` (reverse over reverse), for a direction given
as inputs ``v_W`` shaped like the variables (ones by default).
"""

from __future__ import annotations

import math
from collections import namedtuple
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..engine.registry import ENTRIES
from ..engine.tensor_ops import ShapeMismatch, keep_axis, pack_arguments
from ..errors import ProgramError, ShapeError
from ..language.program import CONST, INPUT, POWER_CONST, ArrayLiteral, Initializer, Program, output_name
from ..language.shapes import infer
from .expressions import rule_program
from .symbolic import ShapeNeeded

__all__ = [
    "HESSIAN_ENTRIES",
    "LITERAL",
    "MAX_ORDER",
    "NAME",
    "NUMBER",
    "TensorDerivatives",
    "Term",
    "differentiate_tensors",
    "fold_term",
    "full_hessian",
    "input_shapes",
    "refuse_unsized_tensors",
    "vjp_rule",
]

Shape = tuple[int, ...]
MAX_ORDER = 2  # the gradient, and the Hessian-vector product

# Leaves of a Term: a variable, a number, a constant tensor (``ArrayLiteral``).
NAME, NUMBER, LITERAL = "name", "number", "literal"
_FORWARD = "register"  # a forward value, named when the sweep is done
_ADJOINT = "adjoint"  # the adjoint being propagated, a placeholder while a rule runs
_SPREAD = "spread"  # (g, x): g broadcast to x's shape, written g + 0*x where nothing else gives that shape
_INLINE_DEPTH = 6  # an adjoint nested deeper than this is named rather than written inline


class Term(namedtuple("Term", "op args param")):
    """An expression: ``op`` is a leaf kind (``NAME``, ``NUMBER``, ``LITERAL``) or an op of
    ``registry.ENTRIES`` (``**c`` too); ``args`` its operand Terms; ``param`` the name, the
    number, the literal, the exponent of ``**c``, or the tensor op's axis or index."""

    __slots__ = ()


def name(text: str) -> Term:
    return Term(NAME, (), text)


def number(value: float) -> Term:
    return Term(NUMBER, (), float(value))


def literal(shape: Shape, values: Iterable[float]) -> Term:
    return Term(LITERAL, (), ArrayLiteral(tuple(shape), tuple(float(v) for v in values)))


def fold_term(term: Term, leaf: Callable[[Term], Any], combine: Callable[[Term, list[Any]], Any]) -> Any:
    """A value of ``term`` built bottom up, without recursion, once for a sub-term it shares:
    ``leaf`` of a term without operands (a name, a number, a literal, a forward value), and
    ``combine`` of an op with its operands' values.  Operands are visited last first, so the
    order of ``leaf`` and ``combine`` calls is fixed for a term."""
    done: dict[int, Any] = {}
    stack = [(term, False)]
    while stack:
        node, ready = stack.pop()
        if id(node) in done:
            continue
        if not node.args:
            done[id(node)] = leaf(node)
        elif not ready:
            stack.append((node, True))
            stack.extend((a, False) for a in node.args)
        else:
            done[id(node)] = combine(node, [done[id(a)] for a in node.args])
    return done[id(term)]


def _is(term: Term, value: float) -> bool:
    return term.op == NUMBER and term.param == value


def apply(op: str, *args: Term, param: Any = None) -> Term:
    """``op`` of ``args``, with the simplifications that keep every shape: numbers folded,
    ``1*x``, ``x/1``, ``--x``, and a number exponent written ``x**c``."""
    if op in ("+", "-", "*", "/", "neg") and all(a.op == NUMBER for a in args):
        x = args[0].param
        y = args[1].param if len(args) > 1 else 0.0
        if not (op == "/" and y == 0.0):
            return number({"+": x + y, "-": x - y, "*": x * y, "/": x / (y or 1.0), "neg": -x}[op])
    if op == "*" and _is(args[0], 1.0):
        return args[1]
    if op in ("*", "/") and _is(args[1], 1.0):
        return args[0]
    if op == "*" and _is(args[0], -1.0):
        return apply("neg", args[1])
    if op == "*" and _is(args[1], -1.0):
        return apply("neg", args[0])
    if op == "neg" and args[0].op == "neg":
        return args[0].args[0]
    if op == "**" and args[1].op == NUMBER:
        return args[0] if args[1].param == 1.0 else Term(POWER_CONST, (args[0],), args[1].param)
    return Term(op, tuple(args), param)


def _zeros_like(x: Term) -> Term:
    return apply("*", number(0.0), x)


def _computed(term: Term) -> Term:
    """A statement's term: ``d = 2`` would read back as an input, ``2 + 0`` stays computed."""
    return Term("+", (term, number(0.0)), None) if term.op == NUMBER else term


def _walk(term: Term) -> Iterable[Term]:
    """Every node of a term, without recursion."""
    stack = [term]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(node.args)


def _depth(term: Term) -> int:
    deepest, stack = 0, [(term, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        stack.extend((a, depth + 1) for a in node.args)
    return deepest


def _replace(term: Term, find: Callable[[Term], Term | None]) -> Term:
    """The term with every node for which ``find`` gives a Term replaced by it (post-order, no recursion)."""
    done: dict[int, Term] = {}
    stack = [(term, False)]
    while stack:
        node, ready = stack.pop()
        if id(node) in done:
            continue
        found = find(node)
        if found is not None:
            done[id(node)] = found
            continue
        if not node.args:
            done[id(node)] = node
            continue
        if not ready:
            stack.append((node, True))
            stack.extend((a, False) for a in node.args)
            continue
        args = tuple(done[id(a)] for a in node.args)
        unchanged = all(new is old for new, old in zip(args, node.args))  # kept as written (`2 + 0` too)
        done[id(node)] = node if unchanged else apply(node.op, *args, param=node.param)
    return done[id(term)]


# --- the rules' helpers: shapes the language has no words for ---------------------------------------


class Builder:
    """What a VJP rule may ask for: a named intermediate (``let``), spreading and summing over
    axes, and an error at the instruction being differentiated."""

    def __init__(self, sweep: _Sweep, register: int) -> None:
        self.sweep = sweep
        self.register = register

    # The term constructors, for the registry's rules (the engine cannot import this module).
    apply = staticmethod(apply)
    number = staticmethod(number)
    literal = staticmethod(literal)

    def let(self, term: Term, hint: str = "t") -> Term:
        """``term`` as a statement of its own, so that a rule can use it twice."""
        if term.op in (NAME, NUMBER, _FORWARD):
            return term
        title = self.sweep.fresh(hint)
        self.sweep.backward.append((title, term))  # written (g filled in) when the rule is done
        return name(title)

    def local_derivative(self, operand: int, args: Sequence[Term], out: Term, param: Any) -> Term | None:
        """The elementwise op's local derivative d out / d ``operand`` (its entry's ``symbolic``
        rule, its x, y, out and c filled in), or None where it is 0 (no term to write)."""
        op = self.sweep.program.instructions[self.register].op
        slope = _slope(op, operand, args, out, param)
        return None if _is(slope, 0.0) else slope

    def refuse(self, what: str) -> ProgramError:
        program = self.sweep.program
        where, source, notes = program.instructions[self.register].position, program.source, []
        if where is None and self.sweep.origin is not None:  # a statement diff wrote, differentiated again
            where, source = self.sweep.origin
            names = program.names_by_register()
            statement = names[min(r for r in names if r >= self.register)]
            notes.append(f"in {statement}, a statement diff writes for the first derivatives and "
                         f"differentiates again (--order 2, --hessian)")
        return ProgramError(f"diff cannot write {what} in the language", where, source,
                            "diff writes this adjoint for vectors and matrices only; eval --wrt gives the "
                            "gradient's numbers", notes)

    def broadcast(self, g: Term, x: Term) -> Term:
        """``g`` broadcast to ``x``'s shape: ``g + 0*x``, or just ``g`` where the expression
        around it broadcasts it anyway (decided when the statement is written)."""
        return Term(_SPREAD, (g, x), None)

    def spread(self, g: Term, x: Term, x_shape: Shape, axis: int | None) -> Term:
        """``g``, a reduction of ``x`` over ``axis`` (None: all), repeated back to ``x``'s shape."""
        if not x_shape:
            return g
        if axis is None or axis % len(x_shape) == 0:  # right-aligned broadcasting lines them up
            return self.broadcast(g, x)
        if len(x_shape) == 2:  # a vector of the rows, repeated along each row
            return apply("transpose", self.broadcast(g, apply("transpose", x)))
        axis %= len(x_shape)  # an inner axis of 3 or more: put it back with size 1, then broadcast
        return self.broadcast(keep_axis(self, g, x_shape[:axis] + x_shape[axis + 1:], axis), x)

    def column(self, v: Term) -> Term:
        """A vector v of n entries as an [n, 1] column, ``transpose([v])``: times a vector of k
        entries, the [n, k] outer product."""
        return apply("transpose", apply("stack", v))

    def columns(self, v: Term, like: Term, like_shape: Shape) -> Term:
        """A matrix shaped like ``like`` [n, k] whose row i repeats v[i] (v of n entries)."""
        return self.spread(v, like, like_shape, 1)

    def sum_to(self, t: Term, t_shape: Shape, x: Term, x_shape: Shape) -> Term:
        """``t`` summed back to ``x``'s shape over the axes broadcasting added or stretched
        (tensor_ops.unbroadcast, in the language)."""
        t_shape, x_shape = tuple(t_shape), tuple(x_shape)
        if t_shape == x_shape:
            return t
        if not x_shape:
            return apply("sum", t)
        rank = len(t_shape)
        for _ in range(rank - len(x_shape)):  # axes added in front
            t = apply("sum", t, param=0)
        t_shape = t_shape[rank - len(x_shape):]
        stretched = [k for k, (n, m) in enumerate(zip(x_shape, t_shape)) if n == 1 and m != 1]
        if not stretched:
            return t
        if len(stretched) == len(x_shape) or len(x_shape) == 1:
            return self.broadcast(apply("sum", t), x)
        if stretched == list(range(len(stretched))):  # leading axes: right-aligned broadcasting puts them back
            for _ in stretched:
                t = apply("sum", t, param=0)
            return self.broadcast(t, x)
        if len(x_shape) == 2:  # [n, 1]: the row totals, down the column
            return apply("transpose", self.broadcast(apply("sum", t, param=1), apply("transpose", x)))
        for k in stretched:  # an inner axis of size 1: summed along it, kept as size 1
            t = apply("sum", t, param=pack_arguments(ENTRIES["sum"].arguments, (k, True)))
        return t


# --- the VJP rules ----------------------------------------------------------------------------------

# A rule: (builder, g, operands, out, operand shapes, out shape, param, needs) -> one Term or None
# per operand (None: no gradient flows, or none is wanted).
Rule = Callable[[Builder, Term, tuple[Term, ...], Term, tuple[Shape, ...], Shape, Any, tuple[bool, ...]],
                tuple["Term | None", ...]]


def _slope(op: str, operand: int, args: Sequence[Term], out: Term, param: Any) -> Term:
    """The op table's symbolic rule d op / d operand, its x, y, out and c filled in."""
    rule = rule_program(op, operand)
    fill = {"x": args[0], "out": out, "c": number(param) if param is not None else None}
    if len(args) > 1:
        fill["y"] = args[1]
    terms: list[Term] = []
    for instruction in rule.instructions:
        kind, operands, value = instruction.op, instruction.args, instruction.param
        if kind == INPUT:
            terms.append(fill[value])
        elif kind == CONST:
            terms.append(number(value))
        elif kind == "=":
            terms.append(terms[operands[0]])
        else:
            terms.append(apply(kind, *(terms[a] for a in operands), param=value if kind == POWER_CONST else None))
    return terms[rule.variables[rule.result].register]


def vjp_rule(op: str) -> Rule:
    """The VJP of an op as a rule: its registry entry's ``language_vjp`` (an elementwise op's asks
    the builder for its symbolic local derivatives, ``Builder.local_derivative``)."""
    return ENTRIES[op].language_vjp  # type: ignore[no-any-return]


# --- the result ---------------------------------------------------------------------------------------


@dataclass
class TensorDerivatives:
    """A derivative program of a tensor program.

    ``statements`` are (name, Term) in order: the forward values the derivatives read, then the
    adjoints; ``inputs`` every input they use with its default (a number, an ``ArrayLiteral``, an
    ``Initializer``, or None for one to be given); ``shapes`` the shape of every input and
    statement.  ``derivatives`` maps each variable differentiated with respect to to the statement
    holding its gradient (order 1) or its Hessian-vector product (order 2); ``directions`` maps
    each to the input holding its part of ``v`` (order 2), and ``directional`` names the
    statement ``sum(dL_dW * v_W) + ...``.  ``first`` is the statement of each first derivative.
    With ``hessian`` (``full_hessian``), ``derivatives`` maps each pair ``"W,U"`` to the block of
    the whole Hessian d2L / dW dU instead, and there are no directions."""

    output: str
    wrt: tuple[str, ...]
    order: int
    inputs: list[tuple[str, Any]]
    statements: list[tuple[str, Term]]
    shapes: dict[str, Shape]
    derivatives: dict[str, str]
    first: dict[str, str] = field(default_factory=dict)
    directions: dict[str, str] = field(default_factory=dict)
    directional: str | None = None
    adjoints: set[str] = field(default_factory=set)
    labels: dict[str, tuple[str, str]] = field(default_factory=dict)
    hessian: bool = False  # order 2 as whole Hessian blocks ("W,U" -> H_W_U), not H v
    origin: tuple[Any, Any] | None = None  # (position, source) of the output, for errors of a second sweep

    @property
    def names(self) -> list[str]:
        return [n for n, _ in self.inputs] + [n for n, _ in self.statements]


def input_shapes(program: Program, given: Mapping[str, Shape] | None = None) -> dict[str, Shape]:
    """Each input's shape: from ``given`` (the shapes of values to be given), else from its
    default (a number, or an input without one: a scalar)."""
    given = given or {}
    return {v.name: tuple(given.get(v.name, getattr(v.default, "shape", ()))) for v in program.inputs}


def _elementwise_shape(entry: Any, count: int, param: Any) -> bool:
    """Whether an op's result takes its operands' shape, as an elementwise op's does (a
    comparison, ``where``, ``clip``): asked of its own shape rule, on numbers and on vectors."""
    try:
        return entry.shape(((),) * count, param) == () and entry.shape(((2,),) * count, param) == (2,)
    except ShapeMismatch:
        return False


def _reads_a_tensor(entry: Any, count: int, param: Any) -> bool:
    """Whether an op needs a tensor operand: its shape rule refuses numbers (indexing, ``@``,
    an axis), or it reduces them to one number (``sum``, ``mean``: of a number, pointless)."""
    try:
        return entry.shape(((),) * count, param) == () and not _elementwise_shape(entry, count, param)
    except ShapeMismatch:
        return True


def refuse_unsized_tensors(program: Program, shapes_given: Mapping[str, Shape] | None = None,
                           shapes: Sequence[Shape] | None = None) -> None:
    """A ``ShapeNeeded`` at the first op that reads as a tensor an input with no value and no
    given shape (through elementwise ops: ``sum(2 * x)``), rather than taking it for a number.
    With the ``shapes`` inferred for such inputs as numbers, an elementwise op with a tensor
    operand of known shape takes that shape, not the input's (``sum(W * b)``: b a number)."""
    given = shapes_given or {}
    unsized = {v.register: v.name for v in program.inputs if v.default is None and v.name not in given}
    if not unsized:
        return
    reaching: list[tuple[str, ...]] = []  # per register: the unsized inputs whose shape it takes
    for register, (op, first, second, param, where) in enumerate(program.rows()):
        operands = program.operands(register, first, second) if op not in (INPUT, CONST) else ()
        names = tuple(dict.fromkeys(n for a in operands for n in reaching[a]))
        if shapes is not None and any(shapes[a] and not reaching[a] for a in operands):
            names = ()  # a tensor of known shape gives the result its shape: the input may be a number
        entry = ENTRIES.get(op)
        if op == INPUT:
            names = (unsized[register],) if register in unsized else ()
        elif entry is not None and not entry.elementwise and names and entry.arity != 0:
            if _reads_a_tensor(entry, len(operands), param):
                listed = " and ".join(names)
                raise ShapeNeeded(
                    f"{listed} {'has' if len(names) == 1 else 'have'} neither a value nor a shape, and "
                    f"{'is' if len(names) == 1 else 'are'} used here as a tensor: diff needs "
                    f"{'its shape' if len(names) == 1 else 'their shapes'}, which it does not guess",
                    where, program.source,  # type: ignore[arg-type]
                    f"give {names[0]} a value (--set {names[0]}='[1, 2, 3]', or --values) or a shape "
                    f"(--shapes {names[0]}=3); --shapes {names[0]}= says it is a number")
            if not _elementwise_shape(entry, len(operands), param):
                names = ()  # the result has a shape of its own (a stack of numbers is a vector)
        reaching.append(names)


def differentiate_tensors(program: Program, wrt: Sequence[str], output: str | None = None,
                          order: int = 1, shapes_given: Mapping[str, Shape] | None = None) -> TensorDerivatives:
    """The program of the gradient of ``output`` (a number) with respect to ``wrt``, or with
    ``order`` 2 of the Hessian-vector product.  The shapes are those of the inputs' defaults,
    or of ``shapes_given`` for inputs given values when the program runs.  ShapeNeeded where
    an input with neither is used as a tensor."""
    output = output_name(program, output)
    try:
        shapes = infer(program, input_shapes(program, shapes_given))
    except ShapeError:  # an input taken for a number where a tensor is needed: its shape is what is missing
        refuse_unsized_tensors(program, shapes_given)
        raise
    refuse_unsized_tensors(program, shapes_given, shapes)
    out_shape = shapes[program.variables[output].register]
    if out_shape:
        variable = program.variables[output]
        raise ProgramError(f"'{output}' has shape {list(out_shape)}; diff writes the gradient of a number",
                           variable.position, program.source,
                           f"differentiate sum({output}) or mean({output}), or an entry such as "
                           f"{output}[{', '.join('0' * len(out_shape))}]")
    first = _Sweep(program, shapes, output, tuple(wrt), lambda w: f"d{output}_d{w}").run()
    first.origin = (program.variables[output].position, program.source)
    if order == 1:
        return first
    return _second_order(first)


def _second_order(first: TensorDerivatives) -> TensorDerivatives:
    """Reverse over reverse: the gradient of ``dL_v = sum(dL_dW * v_W) + ...`` is H v."""
    taken = set(first.names)
    directions: dict[str, str] = {}
    inputs = list(first.inputs)
    shapes = dict(first.shapes)
    total: Term | None = None
    for w in first.wrt:
        shape = first.shapes[w]
        if not math.prod(shape):  # no entries, no direction: its H v is empty whatever v is
            continue
        direction = _unique_name(f"v_{w}", taken)
        inputs.append((direction, ArrayLiteral(shape, (1.0,) * math.prod(shape)) if shape else 1.0))
        shapes[direction] = shape
        directions[w] = direction
        term = apply("*", name(first.first[w]), name(direction))
        term = apply("sum", term) if shape else term
        total = term if total is None else apply("+", total, term)
    directional = _unique_name(f"d{first.output}_v", taken)
    if total is None:  # every variable is empty: L does not change along any direction
        total = apply("sum", _zeros_like(name(first.first[first.wrt[0]])))
    statements = [*first.statements, (directional, total)]
    program = as_program(inputs, statements, directional)
    second = _Sweep(program, infer(program, {n: shapes[n] for n, _ in inputs}), directional, first.wrt,
                    lambda n: f"Hv_{n}" if n in first.wrt else f"d2_{n}", first.origin).run()
    second.order, second.first = 2, first.first
    second.output, second.directions, second.directional = first.output, directions, directional
    second.labels = {**first.labels, **second.labels}
    return second


HESSIAN_ENTRIES = 64  # the most entries the variables of a full Hessian may have in all


def full_hessian(first: TensorDerivatives) -> TensorDerivatives:
    """The whole Hessian, block by block: ``H_W_U`` holds d2L / dW dU, one row per entry of W (in
    row-major order, so [entries of W, *shape of U]; for a number W, U's shape).  It is the
    Hessian-vector product along each unit direction, stacked: the statements that read the
    direction are written once per entry, the others once.  ValueError when the variables have
    more than ``HESSIAN_ENTRIES`` entries in all (the program grows with their number)."""
    second = _second_order(first)
    sizes = {w: math.prod(first.shapes[w]) for w in first.wrt}
    if sum(sizes.values()) > HESSIAN_ENTRIES:
        raise ValueError(f"the full Hessian of {sum(sizes.values())} entries would repeat the Hessian-vector "
                         f"product that often (at most {HESSIAN_ENTRIES}); without --hessian, --order 2 gives H v")
    directions = set(second.directions.values())
    reads_direction = set(directions)
    for title, term in second.statements:
        if any(node.op == NAME and node.param in reads_direction for node in _walk(term)):
            reads_direction.add(title)
    statements = [(t, term) for t, term in second.statements if t not in reads_direction]
    taken = set(second.names)
    shapes = {n: shape for n, shape in second.shapes.items() if n not in directions}
    columns: dict[tuple[str, str], list[Term]] = {}
    for w in first.wrt:
        for u in first.wrt if not sizes[w] else ():  # W of no entries: a block of no rows
            columns[(w, u)] = []
        for k in range(sizes[w]):
            renamed: dict[str, Term] = {second.directions[u]: _unit(first.shapes[u], k if u == w else None)
                                        for u in first.wrt if u in second.directions}
            def substitute(node: Term, renamed: dict[str, Term] = renamed) -> Term | None:
                return renamed.get(node.param) if node.op == NAME else None

            for title, term in second.statements:
                if title in reads_direction and title != second.directional:  # H v does not read dL_v
                    new = _unique_name(f"{title}_{w}{k}", taken)
                    statements.append((new, _replace(term, substitute)))
                    shapes[new] = second.shapes[title]
                    renamed[title] = name(new)
            for u in first.wrt:
                held = second.derivatives[u]  # H v reads no direction where it is 0 whatever v is
                columns.setdefault((w, u), []).append(renamed.get(held, name(held)))
    derivatives: dict[str, str] = {}
    for (w, u), entries in columns.items():
        block = _unique_name(f"H_{w}" if len(first.wrt) == 1 else f"H_{w}_{u}", taken)
        if not entries:
            whole = literal((0, *first.shapes[u]), ())
        else:
            whole = apply("stack", *entries) if first.shapes[w] else entries[0]
        statements.append((block, whole))
        shapes[block] = ((sizes[w],) if first.shapes[w] else ()) + tuple(first.shapes[u])
        derivatives[f"{w},{u}"] = block
    last = _output_last(first, statements)
    statements = [(t, term) for t, term in statements if t != first.output] + last
    shapes.update((t, first.shapes[t]) for t, _ in last)
    read = {n for n, _ in second.inputs} | {node.param for _, term in last for node in _walk(term) if node.op == NAME}
    inputs = [(n, default) for n, default in first.inputs if n in read]  # in the first program's order
    shapes.update((n, first.shapes[n]) for n, _ in inputs)
    return TensorDerivatives(first.output, first.wrt, 2, inputs, statements, shapes, derivatives,
                             first=first.first, labels=first.labels, hessian=True)


def _output_last(first: TensorDerivatives, statements: list[tuple[str, Term]]) -> list[tuple[str, Term]]:
    """The output's statement and the first program's statements it reads that ``statements``
    lack, in order: the output comes last, so that eval of the program shows every block."""
    defined = {t for t, _ in statements} | {n for n, _ in first.inputs}
    by_name = dict(first.statements)
    wanted, stack = set(), [first.output] if first.output in by_name else []
    while stack:
        title = stack.pop()
        if title in wanted or (title in defined and title != first.output):
            continue
        wanted.add(title)
        stack.extend(node.param for node in _walk(by_name[title]) if node.op == NAME and node.param in by_name)
    return [(t, term) for t, term in first.statements if t in wanted]


def _unit(shape: Shape, k: int | None) -> Term:
    """The direction with 1 at entry k (row-major) and 0 elsewhere; all 0 for k None."""
    if not shape:
        return number(1.0 if k == 0 else 0.0)
    return literal(shape, (1.0 if i == k else 0.0 for i in range(math.prod(shape))))


def _unique_name(wanted: str, taken: set[str]) -> str:
    """``wanted``, or ``wanted_2``, ``wanted_3``... the first not in ``taken`` (which then holds it)."""
    candidate, n = wanted, 1
    while candidate in taken:
        n += 1
        candidate = f"{wanted}_{n}"
    taken.add(candidate)
    return candidate


def as_program(inputs: Sequence[tuple[str, Any]], statements: Sequence[tuple[str, Term]], result: str) -> Program:
    """Inputs and statements as a ``Program`` (inputs first, in order), as the compiler would
    make of their text: every interpreter, and a second sweep, can read it."""
    from ..errors import Source
    from ..language.program import INTERMEDIATE, Instruction, Variable

    instructions: list[Instruction] = []
    variables: dict[str, Variable] = {}
    registers: dict[str, int] = {}
    for title, default in inputs:
        registers[title] = len(instructions)
        variables[title] = Variable(title, INPUT, None, len(instructions), default)  # type: ignore[arg-type]
        instructions.append(Instruction(INPUT, (), title, None))
    def leaf(node: Term) -> int:
        if node.op == NAME:
            return registers[node.param]
        instructions.append(Instruction(CONST, (), node.param, None))  # a number or a literal
        return len(instructions) - 1

    def combine(node: Term, operands: list[int]) -> int:
        instructions.append(Instruction(node.op, tuple(operands), node.param, None))
        return len(instructions) - 1

    for title, term in statements:
        register = fold_term(term, leaf, combine)
        if term.op == NAME:  # `b = a`: a copy of its own
            instructions.append(Instruction("=", (register,), None, None))
            register = len(instructions) - 1
        registers[title] = register
        variables[title] = Variable(title, INTERMEDIATE, None, register)  # type: ignore[arg-type]
    return Program(Source("<derivative program>", ""), instructions, variables, result, True)


class _Sweep:
    """One reverse sweep over a program, writing statements."""

    def __init__(self, program: Program, shapes: list[Shape], output: str, wrt: tuple[str, ...],
                 adjoint_name: Callable[[str], str], origin: tuple[Any, Any] | None = None) -> None:
        self.program = program
        self.origin = origin  # (position, source) of the output differentiated, for errors in written statements
        self.shapes = shapes
        self.output = output
        self.wrt = wrt
        self.adjoint_name = adjoint_name
        self.taken = set(program.variables)
        self.rows = list(program.rows())
        self.names = program.names_by_register()
        self.backward: list[tuple[str, Term]] = []
        self.statement_shapes: dict[str, Shape] = {}
        self.temporaries = 0
        self.labels: dict[str, tuple[str, str]] = {}
        self.generated: dict[str, str] = {}  # name -> its hint, for names fresh() made

    def fresh(self, hint: str) -> str:
        """A new name for a value the program leaves unnamed (renumbered in order by ``_renumber``)."""
        while True:
            self.temporaries += 1
            candidate = f"{hint}{self.temporaries}"
            if candidate not in self.taken:
                self.taken.add(candidate)
                self.generated[candidate] = hint
                return candidate

    def unique(self, wanted: str) -> str:
        return _unique_name(wanted, self.taken)

    def statement(self, title: str, term: Term) -> Term:
        term = self.resolve(term)
        self.statement_shapes[title] = self.shape(term)
        self.backward.append((title, term))
        return name(title)

    def shape(self, term: Term) -> Shape:
        return _shape_of(term, self.statement_shapes, self.shapes)

    def resolve(self, term: Term) -> Term:
        """Each ``_SPREAD`` dropped where an elementwise op's other operand already has the
        result's shape, else written ``g + 0*x``."""
        def operand(node: Term, k: int) -> Term:
            arg = node.args[k]
            other = node.args[1 - k] if len(node.args) == 2 else arg
            elementwise = node.op in ENTRIES and ENTRIES[node.op].elementwise
            droppable = elementwise and other.op != _SPREAD and self.shape(other) == self.shape(node)
            while arg.op == _SPREAD:  # a spread of a spread: each is dropped or written
                if not droppable:
                    return apply("+", arg.args[0], _zeros_like(arg.args[1]))
                arg = arg.args[0]
            return arg

        def find(node: Term) -> Term | None:
            if not any(a.op == _SPREAD for a in node.args):
                return None
            return apply(node.op, *(_replace(operand(node, k), find) for k in range(len(node.args))),
                         param=node.param)

        if term.op == _SPREAD:
            term = apply("+", term.args[0], _zeros_like(term.args[1]))
        return _replace(term, find)

    def run(self) -> TensorDerivatives:
        program, rows = self.program, self.rows
        out_register = program.variables[self.output].register
        needed = program.dependencies(self.output)
        sources = {program.variables[w].register for w in self.wrt}
        varies = [False] * len(rows)
        for register, (op, first, second, _, _) in enumerate(rows):
            varies[register] = register in sources or any(varies[a] for a in program.operands(register, first, second))
        adjoints: dict[int, list[Term]] = {out_register: [number(1.0)]}
        derivative_of: dict[int, str] = {}
        lowest = min(sources) if sources else out_register + 1
        for register in range(out_register, lowest - 1, -1):
            parts = adjoints.pop(register, None)
            if not parts or not varies[register]:
                continue
            g = parts[0]
            for part in parts[1:]:
                g = apply("+", g, part)
            op, first, second, _, _ = rows[register]
            title = self.names.get(register)
            # a named value's adjoint is a statement of its own, unless it is a number (written inline)
            if register in sources or (title is not None and register != out_register and not self._a_number(g)):
                if register == out_register:  # d L / d L, shaped like L
                    g = apply("+", g, apply("*", number(0.0), Term(_FORWARD, (), register)))
                adjoint = self.unique(self.adjoint_name(self._title(register)))
                g = self.statement(adjoint, g)
                derivative_of[register] = adjoint
                self.labels[adjoint] = (self.output, self._title(register))
            if op in (INPUT, CONST) or not math.prod(self.shapes[register]):
                continue  # a value of no entries (x[2:2]) passes no gradient on
            operands = program.operands(register, first, second)
            needs = tuple(varies[a] and math.prod(self.shapes[a]) > 0 for a in operands)
            grads = self._vjp(register, g, operands, needs)
            for operand, grad in zip(operands, grads):
                if grad is not None:
                    adjoints.setdefault(operand, []).append(grad)
        derivatives: dict[str, str] = {}
        for w in self.wrt:
            register = program.variables[w].register
            if register not in derivative_of:  # no path from it to the output: zeros of its shape
                derivative_of[register] = self.unique(self.adjoint_name(w))
                self.labels[derivative_of[register]] = (self.output, w)
                self.statement(derivative_of[register], apply("*", number(0.0), Term(_FORWARD, (), register)))
            derivatives[w] = derivative_of[register]
        return self._finish(needed, derivatives, set(derivative_of.values()))

    def _a_number(self, term: Term) -> bool:
        """Whether a term is a number: written, or a number of the program (``0.0001`` in ``0.0001*t``)."""
        return term.op == NUMBER or (term.op == _FORWARD and self.rows[term.param][0] == CONST
                                     and not isinstance(self.rows[term.param][3], ArrayLiteral))

    def _vjp(self, register: int, g: Term, operands: tuple[int, ...], needs: tuple[bool, ...]) -> tuple[Term | None, ...]:
        op, _, _, param, _ = self.rows[register]
        placeholder = Term(_ADJOINT, (), register)
        args = tuple(Term(_FORWARD, (), a) for a in operands)
        out = Term(_FORWARD, (), register)
        start = len(self.backward)
        grads = vjp_rule(op)(Builder(self, register), placeholder, args, out,
                              tuple(self.shapes[a] for a in operands), self.shapes[register], param, needs)
        made = self.backward[start:]  # statements the rule wrote (``let``), which may read g
        del self.backward[start:]
        terms = [grad for grad in grads if grad is not None] + [term for _, term in made]
        uses = sum(1 for term in terms for node in _walk(term) if node is placeholder)
        if uses > 1 and g.op != NAME and not self._a_number(g) or _depth(g) > _INLINE_DEPTH:
            adjoint = self.unique(self.adjoint_name(self._title(register)))
            self.labels[adjoint] = (self.output, self._title(register))
            g = self.statement(adjoint, g)

        def fill(node: Term) -> Term | None:
            return g if node is placeholder else None

        for title, term in made:
            self.statement(title, _replace(term, fill))
        return tuple(None if grad is None else _replace(grad, fill) for grad in grads)

    def _title(self, register: int) -> str:
        if register not in self.names:
            self.names[register] = self.fresh("t")
        return self.names[register]

    def _finish(self, needed: list[bool], derivatives: dict[str, str], adjoints: set[str]) -> TensorDerivatives:
        """The forward statements the output and the adjoints read, then the adjoints."""
        program, rows = self.program, self.rows
        read = set()
        for _, term in self.backward:
            read.update(node.param for node in _walk(term) if node.op == _FORWARD)
        uses = [0] * len(rows)
        for register, (op, first, second, _, _) in enumerate(rows):
            if needed[register] or register in read:
                for a in program.operands(register, first, second):
                    uses[a] += 1
        wanted = [needed[r] or r in read for r in range(len(rows))]
        for register in range(len(rows) - 1, -1, -1):  # what the read registers are computed from
            if wanted[register]:
                for a in program.operands(register, *rows[register][1:3]):
                    wanted[a] = True
        out_register = program.variables[self.output].register
        later = any(wanted[out_register + 1:])  # a value after the output is read: it stays in place
        for variable in program.inputs:  # initializers are drawn in order: an unused one still takes its draw
            if isinstance(variable.default, Initializer):
                wanted[variable.register] = True
        last: tuple[str, Term] | None = None
        forward_terms: dict[int, Term] = {}
        statements: list[tuple[str, Term]] = []
        inputs: list[tuple[str, Any]] = []
        shapes: dict[str, Shape] = {}
        for register, (op, first, second, param, _) in enumerate(rows):
            if not wanted[register]:
                continue
            shape = self.shapes[register]
            if op == INPUT:
                inputs.append((param, program.variables[param].default))
                forward_terms[register] = name(param)
                shapes[param] = shape
                continue
            if op == CONST:
                term = literal(param.shape, param.values) if isinstance(param, ArrayLiteral) else number(param)
            else:
                operands = program.operands(register, first, second)
                term = apply(op, *(forward_terms[a] for a in operands), param=param)
                if op == POWER_CONST:
                    term = Term(POWER_CONST, term.args, param)
            named = self.names.get(register)
            if op != CONST and named is None and (register in read or uses[register] > 1
                                                  or _depth(term) > _INLINE_DEPTH):
                named = self._title(register)
            if op == CONST and register in read and isinstance(param, ArrayLiteral):
                named = self._title(register)
            if register == out_register and op != INPUT and not later:
                # the output is written last, so that eval of the derivative program shows every
                # value (it shows the variables up to its output); a rule that reads it reads a copy
                last = (self.output, term)
                shapes[self.output] = shape
                if register not in read:
                    forward_terms[register] = name(self.output)
                    continue
                named = self.fresh("t")
                last = (self.output, name(named))
            if named is not None and (op != CONST or register in read):
                statements.append((named, _computed(term)))
                shapes[named] = shape
                term = name(named)
            forward_terms[register] = term
        backward = [(title, _computed(_replace(term, lambda node: forward_terms[node.param]
                                               if node.op == _FORWARD else None)))
                    for title, term in self.backward]
        if last is not None:
            backward.append(last)
        shapes.update(self.statement_shapes)
        result = TensorDerivatives(self.output, self.wrt, 1, inputs, statements + backward, shapes, derivatives,
                                   first=dict(derivatives), adjoints=adjoints, labels=self.labels)
        return self._renumber(result)

    def _renumber(self, result: TensorDerivatives) -> TensorDerivatives:
        """The names made up during the sweep (``t7``, ``hit3``, and ``dL_dt7``), which were
        numbered as the backward sweep met them, numbered again in the order they are written."""
        adjoint_of = {adjoint: title for adjoint, (_, title) in self.labels.items() if title in self.generated}
        kept = set(self.program.variables) | {n for n, _ in result.statements
                                              if n not in self.generated and n not in adjoint_of}
        counts: dict[str, int] = {}
        renamed: dict[str, str] = {}

        def rename(old: str) -> None:
            hint = self.generated[old]
            while True:
                counts[hint] = counts.get(hint, 0) + 1
                new = f"{hint}{counts[hint]}"
                if new not in kept:
                    renamed[old] = new
                    kept.add(new)
                    return

        for title, _ in result.statements:
            if title in self.generated and title not in renamed:
                rename(title)
            elif title in adjoint_of and adjoint_of[title] not in renamed:
                rename(adjoint_of[title])
        for adjoint, title in adjoint_of.items():
            if title not in renamed:
                rename(title)
            new = self.adjoint_name(renamed[title])
            while new in kept:
                new += "_"
            renamed[adjoint] = new
            kept.add(new)

        def fix(node: Term) -> Term | None:
            return name(renamed[node.param]) if node.op == NAME and node.param in renamed else None

        def new(title: str) -> str:
            return renamed.get(title, title)

        result.statements = [(new(title), _replace(term, fix)) for title, term in result.statements]
        result.shapes = {new(n): shape for n, shape in result.shapes.items()}
        result.derivatives = {w: new(d) for w, d in result.derivatives.items()}
        result.first = dict(result.derivatives)
        result.adjoints = {new(a) for a in result.adjoints}
        result.labels = {new(a): (of, new(title)) for a, (of, title) in result.labels.items()}
        return result


def _shape_of(term: Term, names: dict[str, Shape], registers: Sequence[Shape]) -> Shape:
    """The shape of a term (the same rules as language.shapes): ``names`` holds the shapes of
    the statements it reads, ``registers`` those of the forward values."""
    from ..engine.tensor_ops import broadcast_shape

    def leaf(node: Term) -> Shape:
        if node.op == NAME:
            return names[node.param]
        if node.op == LITERAL:
            return node.param.shape  # type: ignore[no-any-return]
        return registers[node.param] if node.op == _FORWARD else ()

    def combine(node: Term, operands: list[Shape]) -> Shape:
        if node.op == _SPREAD:
            return broadcast_shape(operands)
        return ENTRIES[node.op].shape(tuple(operands), node.param)  # type: ignore[no-any-return]

    return fold_term(term, leaf, combine)  # type: ignore[no-any-return]
