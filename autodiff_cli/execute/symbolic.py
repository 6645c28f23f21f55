"""The symbolic differentiator: a ``Program`` -> the ``Program`` of its derivatives, any order.

Source transformation in reverse mode, the way backpropagation works by hand:

1. The program is read into an ``Expressions`` graph, one node per operation, simplified
   and hash-consed as it goes (``expressions.py``).
2. One reverse sweep from the output (``expressions.reverse_sweep``, the one that
   ``check --claim`` also runs) gives every adjoint: a node's adjoint is the sum,
   over the nodes that use it, of (local derivative) * (that user's adjoint), the local
   derivative being the op table's ``symbolic`` rule.  Each adjoint is one node that
   refers to the primal nodes and the users' adjoints, so the derivatives of a program
   of n operations take O(n) nodes, never the exponential tree of a naive expansion.
   Terms are summed in program order and written (local) * (adjoint), so the results
   read like the hand derivations: ``6*x + y``, ``b*f``.
3. ``order`` > 1 differentiates the derivatives again, one sweep per derivative, with
   respect to the same variables; of the mixed derivatives only one per set of
   variables is kept (d2f/dx dy, not also d2f/dy dx: they are equal).
4. The nodes the derivatives use become a ``Program``: a node is a statement of its own
   when it is shared and either holds one of the program's variables or would copy more
   than two operations into its uses, or when it grows too large to read in one line;
   everything else is written inline.  Statements keep the program's names where they hold the value of
   one of its variables (``h1``), adjoints of named variables are ``dL_dh1``, and the
   rest are ``t1``, ``t2``...  Inputs keep their defaults.

Differentiating with respect to a variable the program computes (``e = a*b``) gives the
same partial derivative as ``eval``'s gradient column: the output's sensitivity to a
change of ``e`` alone.  Internally ``e`` becomes a ``COPY`` node, which the sweep
passes through for the inputs below it and stops at for ``e`` itself.

Nothing recurses: graphs, sweeps and emission are loops over node numbers.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import combinations_with_replacement
from typing import Any

from ..engine.ops import OPS, OVERFLOW_HINT, DomainError
from ..errors import EvaluationError, InputError, ProgramError, Source, variables_hint
from ..language.program import (
    CONST,
    INPUT,
    INTERMEDIATE,
    Instruction,
    Program,
    Variable,
    output_name,
)
from .expressions import COPY, Expressions, GraphTooLarge, reverse_sweep
from .scalar import _domain_error as domain_error
from .scalar import _shown_op as shown_op

__all__ = [
    "MAX_DERIVATIVES",
    "MAX_NODES",
    "Derivative",
    "DerivativeProgram",
    "DiffRequest",
    "RequestTooLarge",
    "ShapeNeeded",
    "derivative_count",
    "differentiate",
    "plan_diff",
    "read_into_graph",
    "sweep_count",
    "unused_variables",
    "wrt_names",
]

# A shared value is written inline in each place that uses it while that copies at most
# this many operations in all; beyond it the value gets a statement of its own.  A shared
# value that is one of the program's variables always gets its statement, under its name.
SHARE_BUDGET = 2
# An expression longer than this many operations is cut into statements.
INLINE_LIMIT = 24
# The graph may not grow past this many nodes (a high order of a large program).
MAX_NODES = 1_000_000
# How many derivatives one request may ask for (--order 2 over 140 variables is 9,870).
MAX_DERIVATIVES = 10_000
# The graph grows by a roughly steady factor per order (5-7 for exp and tanh chains, a
# slowly falling one): once the orders done project the order asked for past
# MAX_NODES times this margin, the work stops there instead of minutes later at the limit
# (the projections of samples/neuron_exp.ad's orders are within 0.3-3.5x of the sizes).
PROJECTION_MARGIN = 4.0
# Within the last order the graph grows about evenly per sweep: once a tenth of its sweeps
# project it past MAX_NODES times this margin, the work stops.
SWEEP_MARGIN = 1.5


class TooLargeForOrder(GraphTooLarge):
    """The orders done so far project the order asked for past the limit: ``estimate`` nodes,
    and ``fits`` the highest order projected to fit (0 when none)."""

    def __init__(self, estimate: float, fits: int) -> None:
        super().__init__(estimate)
        self.estimate, self.fits = estimate, fits


def projected_sizes(sizes: Sequence[int], order: int) -> dict[int, float]:
    """The graph's size after each order from ``len(sizes) + 1`` to ``order``, projected from
    ``sizes`` (its size after orders 1, 2, ...): each order multiplies it by the last factor,
    which falls as it last fell (it never rises, and never goes below 1)."""
    if len(sizes) < 2 or sizes[-2] <= 0:
        return {}
    ratio = sizes[-1] / sizes[-2]
    before = sizes[-2] / sizes[-3] if len(sizes) >= 3 and sizes[-3] > 0 else ratio
    falling = min(1.0, ratio / before) if before > 0 else 1.0
    size = float(sizes[-1])
    found: dict[int, float] = {}
    for level in range(len(sizes) + 1, order + 1):
        ratio = max(1.0, ratio * falling)
        size *= ratio
        found[level] = size
    return found


@dataclass(frozen=True)
class Derivative:
    """One derivative: ``name`` is its variable in the derivative program (``df_dx``),
    the derivative of ``of`` with respect to ``wrt`` in order (one name per order)."""

    name: str
    of: str
    wrt: tuple[str, ...]

    @property
    def order(self) -> int:
        return len(self.wrt)

    @property
    def label(self) -> str:
        """How people write it: ``df/dx``, ``d^2f/dx^2``, ``d^2f/dx dy``, ``d^3f/dx^2 dy``."""
        if self.order == 1:
            return f"d{self.of}/d{self.wrt[0]}"
        powers = _runs(self.wrt)
        below = " ".join(f"d{name}" + (f"^{count}" if count > 1 else "") for name, count in powers)
        return f"d^{self.order}{self.of}/{below}"


@dataclass
class DerivativeProgram:
    """The derivatives of one variable as a program, and which of its variables are which."""

    program: Program
    of: str
    wrt: list[str]
    order: int
    derivatives: list[Derivative]

    @property
    def intermediates(self) -> list[str]:
        """The statements that are neither inputs nor derivatives, in program order."""
        outputs = {d.name for d in self.derivatives}
        return [
            v.name
            for v in self.program.variables.values()
            if v.kind == INTERMEDIATE and v.name not in outputs
        ]


def _runs(names: Sequence[str]) -> list[tuple[str, int]]:
    runs: list[tuple[str, int]] = []
    for name in names:
        if runs and runs[-1][0] == name:
            runs[-1] = (name, runs[-1][1] + 1)
        else:
            runs.append((name, 1))
    return runs


def derivative_count(variables: int, order: int) -> int:
    """How many derivatives ``order`` gives for ``variables`` variables, each symmetric set once."""
    return math.comb(variables + order - 1, order)


def sweep_count(variables: int, order: int) -> int:
    """How many reverse sweeps ``order`` takes: one, then one per derivative of each lower order."""
    return 1 + sum(derivative_count(variables, level) for level in range(1, order))


# --- choosing what to differentiate ----------------------------------------------------------


def wrt_names(program: Program, output: str | None = None, wrt: Iterable[str] | None = None) -> list[str]:
    """The variables to differentiate ``output`` with respect to: ``wrt`` checked (unknown
    names are an InputError), or by default every input the output depends on."""
    output = output_name(program, output)
    if wrt is None:
        needed = program.dependencies(output)
        names = [v.name for v in program.inputs if needed[v.register]]
        if not names:
            raise InputError(
                f"'{output}' depends on no input, so there is nothing to differentiate",
                program.variables[output].position,
                program.source,
                "name variables with --wrt to see that their derivatives are 0",
            )
        return names
    names = list(dict.fromkeys(wrt))
    unknown = [name for name in names if name not in program.variables]
    if unknown:
        raise InputError(
            f"--wrt names {', '.join(unknown)}, which the program does not define",
            source=Source(program.source.name, ""),
            hint=variables_hint(list(program.variables), unknown),
        )
    if not names:
        raise InputError(
            "--wrt names no variable",
            source=Source(program.source.name, ""),
            hint="give names separated by commas, e.g. --wrt x,y",
        )
    return names


def unused_variables(program: Program, output: str | None, names: Iterable[str]) -> list[tuple[str, str]]:
    """(output, name) for each name the output does not depend on: its derivatives are 0."""
    output = output_name(program, output)
    needed = program.dependencies(output)
    return [(output, name) for name in names if not needed[program.variables[name].register]]


# --- the transformation ----------------------------------------------------------------------


def differentiate(
    program: Program,
    wrt: Iterable[str] | None = None,
    order: int = 1,
    output: str | None = None,
    *,
    max_nodes: int | None = MAX_NODES,
    progress: Callable[[int, int], None] | None = None,
) -> DerivativeProgram:
    """The derivatives of ``output`` (default: the result) w.r.t. ``wrt`` (default: the
    inputs it depends on) up to ``order``, as a program.

    ``progress(done, total)`` is called after each reverse sweep (one for the first
    order, one per derivative of each order after that).  Raises InputError for
    unknown names or an output that depends on nothing, and ProgramError when the
    derivatives would exceed ``max_nodes`` operations.
    """
    if order < 1:
        raise ValueError(f"order must be at least 1, not {order}")
    output = output_name(program, output)
    names = wrt_names(program, output, wrt)
    graph = Expressions(max_nodes)
    try:
        registers, hints = read_into_graph(program, graph, set(names))
        targets = {name: registers[program.variables[name].register] for name in names}
        root = registers[program.variables[output].register]
        derivatives = _derivatives(graph, root, targets, names, order, output, hints, progress)
    except TooLargeForOrder as large:
        fits = (f"--order {large.fits} is estimated to fit; or differentiate with respect to fewer "
                "variables (--wrt)") if large.fits else "differentiate with respect to fewer variables (--wrt)"
        raise ProgramError(
            f"the derivatives would take more than {max_nodes:,} operations (about "
            f"{_rounded(large.estimate)} at --order {order}, projected from the orders below it)",
            program.variables[output].position,
            program.source,
            fits,
        ) from None
    except GraphTooLarge:
        raise ProgramError(
            f"the derivatives would take more than {max_nodes:,} operations",
            program.variables[output].position,
            program.source,
            "differentiate with respect to fewer variables (--wrt) or to a lower --order",
        ) from None
    return _emit(program, graph, output, names, order, derivatives, hints)


def read_into_graph(program: Program, graph: Expressions, wrt: set[str]) -> tuple[list[int], dict[int, str]]:
    """The program's nodes by register, and the names of the variables they hold (``check
    --claim`` reads the program with it too).

    A computed variable in ``wrt`` becomes a COPY node, so that it can be told apart
    from the inputs below it.  A constant that overflows is refused as ``eval`` refuses it.
    """
    cut = {v.register: v.name for v in program.variables.values() if v.name in wrt and v.kind != INPUT}
    registers: list[int] = []
    constants: list[float | None] = []  # each register's value where it is computed from constants only
    for register, (op, args, param, position) in enumerate(program.instructions):
        graph.position = position
        if op == INPUT:
            node = graph.input(param)  # type: ignore[arg-type]
            constants.append(None)
        elif op == CONST:
            node = graph.const(param)  # type: ignore[arg-type]
            constants.append(param)  # type: ignore[arg-type]
        else:
            constants.append(_constant(program, op, [constants[a] for a in args], param, position))
            node = graph.apply(op, [registers[a] for a in args], param)
        if register in cut:
            node = graph.copy(node, cut[register])
        registers.append(node)
    hints: dict[int, str] = {}
    for variable in program.variables.values():
        node = registers[variable.register]
        if variable.kind != INPUT and not graph.is_leaf(node):
            hints.setdefault(node, variable.name)
    return registers, hints


def _constant(program: Program, op: str, operands: list[float | None], param: object,
              position: object) -> float | None:
    """The value of ``op`` on constant ``operands`` (None if any is not constant).  Where it
    overflows, the program fails for every input, and ``eval`` refuses it: so does ``diff``,
    with the same error at the same place, rather than write an infinity (``inf`` reads back
    as a variable).  Other failures (``log(0)``) are kept as written, to fail where they run."""
    if None in operands or op == COPY:
        return None
    kernel = OPS.get(op)
    if kernel is None:
        return None
    try:
        value = kernel.scalar(*operands, *(() if param is None else (param,)))[0]
    except DomainError as error:
        if error.overflow:
            raise domain_error(error, position, program) from None
        return None
    except (ArithmeticError, ValueError):
        return None
    if not math.isfinite(value):
        raise EvaluationError(f"the result of '{shown_op(op)}' overflows a float ({value})",
                              position, program.source, OVERFLOW_HINT)  # type: ignore[arg-type]
    return value


def _derivatives(
    graph: Expressions,
    root: int,
    targets: dict[str, int],
    names: list[str],
    order: int,
    output: str,
    hints: dict[int, str],
    progress: Callable[[int, int], None] | None = None,
) -> dict[tuple[str, ...], int]:
    """Every derivative up to ``order`` as a node, by the (sorted, in ``names`` order) variables."""
    index = {name: i for i, name in enumerate(names)}
    total = sweep_count(len(names), order)
    first = reverse_sweep(graph, root, list(targets.values()))
    done = 1
    if progress is not None:
        progress(done, total)
    for node, name in reversed(list(hints.items())):  # nearest the output first: do_dn, not do_dx1w1
        adjoint = first.adjoint(node)
        if not graph.is_leaf(adjoint) and adjoint not in hints:
            hints[adjoint] = f"d{output}_d{name}"
    level = {(name,): first.adjoint(targets[name]) for name in names}
    sizes = [len(graph)]  # after each order
    for done_order in range(1, order):
        if graph.max_nodes is not None:
            projected = projected_sizes(sizes, order)
            if projected and projected[order] > graph.max_nodes * PROJECTION_MARGIN:
                fits = max((k for k, size in projected.items() if size <= graph.max_nodes), default=done_order)
                raise TooLargeForOrder(projected[order], fits)
        following: dict[tuple[str, ...], int] = {}
        start, last = len(graph), done_order == order - 1
        for swept, (key, node) in enumerate(level.items(), 1):
            later = names[index[key[-1]] :]  # each set of variables once: x<=y<=z in names order
            found = reverse_sweep(graph, node, [targets[name] for name in later])
            for name in later:
                following[key + (name,)] = found.adjoint(targets[name])
            done += 1
            if progress is not None:
                progress(done, total)
            if last and graph.max_nodes is not None and swept * 10 >= len(level) and swept < len(level):
                estimate = start + (len(graph) - start) * len(level) / swept
                if estimate > graph.max_nodes * SWEEP_MARGIN:
                    raise TooLargeForOrder(estimate, order - 1)
        level = following
        sizes.append(len(graph))
    return level


def _rounded(count: float) -> str:
    """A projected count as people say it: 3,400,000 -> '3.4 million', 27,000 -> '27,000'."""
    if count >= 1e9:
        return f"{count / 1e9:.2g} billion" if count < 1e12 else f"{count:.1e}"
    if count >= 1e6:
        return f"{count / 1e6:.2g} million"
    return f"{round(count, -3):,.0f}"


# --- from the graph to a program --------------------------------------------------------------


def _emit(
    program: Program,
    graph: Expressions,
    output: str,
    names: list[str],
    order: int,
    found: dict[tuple[str, ...], int],
    hints: dict[int, str],
) -> DerivativeProgram:
    keys = list(combinations_with_replacement(names, order))
    reserved = set(program.variables)
    derivatives = []
    for key in keys:
        derivative = Derivative(_unique(_derivative_name(output, key), reserved), output, key)
        reserved.add(derivative.name)
        derivatives.append(derivative)
    roots = [found[key] for key in keys]
    own = {node for node, name in hints.items() if name in program.variables}
    named, reachable = _statements(graph, roots, own)
    graph.max_nodes = None  # writing out may regroup products into nodes of their own
    emitter = _Emitter(program, graph, named)
    for variable in program.inputs:
        node = graph.find_input(variable.name)
        if node is not None and node < len(reachable) and reachable[node]:
            emitter.declare_input(variable, node)
    for node, name in _names(graph, named, hints, program, reserved).items():
        emitter.statement(name, node)
    for derivative, node in zip(derivatives, roots):
        emitter.output(derivative.name, node)
    result = Program(program.source, emitter.instructions, emitter.variables, derivatives[-1].name)
    return DerivativeProgram(result, output, names, order, derivatives)


def _derivative_name(output: str, wrt: tuple[str, ...]) -> str:
    if len(wrt) == 1:
        return f"d{output}_d{wrt[0]}"
    return f"d{len(wrt)}{output}_" + "_".join(f"d{name}" for name in wrt)


def _unique(name: str, taken: set[str]) -> str:
    while name in taken:
        name += "_"
    return name


def _statements(graph: Expressions, roots: list[int], own: set[int]) -> tuple[set[int], bytearray]:
    """The nodes that become statements of their own (see the module docstring, step 4),
    and which nodes the roots use.  ``own`` are the nodes that hold a variable of the program."""
    ops, args = graph.ops, graph.args
    top = max(roots)
    uses = [0] * (top + 1)
    reachable = bytearray(top + 1)
    for root in roots:
        uses[root] += 1
        reachable[root] = 1
    for node in range(top, -1, -1):
        if reachable[node]:
            for operand in args[node]:
                reachable[operand] = 1
                uses[operand] += 1
    size = [0] * (top + 1)  # operations written when the node is written inline
    named: set[int] = set()
    for node in range(top + 1):
        if not reachable[node] or ops[node] in (INPUT, CONST):
            continue
        size[node] = (ops[node] != COPY) + sum(size[a] for a in args[node])
        shared = uses[node] - 1
        budget = 0 if node in own else SHARE_BUDGET
        if (shared > 0 and size[node] * shared > budget) or size[node] > INLINE_LIMIT:
            named.add(node)
            size[node] = 0  # its users write its name
    return named, reachable


def _names(
    graph: Expressions,
    named: set[int],
    hints: dict[int, str],
    program: Program,
    reserved: set[str],
) -> dict[int, str]:
    """A name for each statement, in node order: the program's own name for a node that
    holds a variable's value, an adjoint's ``dL_dv``, or ``t1``, ``t2``..."""
    taken = set(reserved)
    names: dict[int, str] = {}
    counter = 0
    for node in sorted(named):
        hint = hints.get(node)
        if hint is None and graph.ops[node] == COPY:
            hint = graph.params[node]  # type: ignore[assignment]
        if hint is not None and hint in program.variables:
            name = hint  # each of the program's names holds one node, so it is free
        elif hint is not None:
            name = _unique(hint, taken)
        else:
            counter += 1
            while f"t{counter}" in taken:
                counter += 1
            name = f"t{counter}"
        taken.add(name)
        names[node] = name
    return names


class _Emitter:
    """Writes graph nodes as program instructions, inlining those without a statement."""

    def __init__(self, program: Program, graph: Expressions, named: set[int]) -> None:
        self.graph = graph
        self.named = named
        self.instructions: list[Instruction] = []
        self.variables: dict[str, Variable] = {}
        self.registers: dict[int, int] = {}  # node -> register, for inputs and statements
        self.named_registers: set[int] = set()
        self.fallback = program.variables[program.result].position

    def _add(self, op: str, args: tuple[int, ...], param: float | str | None, node: int) -> int:
        position = self.graph.positions[node] if node < len(self.graph.positions) else None
        self.instructions.append(Instruction(op, args, param, position or self.fallback))
        return len(self.instructions) - 1

    def declare_input(self, variable: Variable, node: int) -> None:
        register = self._add(INPUT, (), variable.name, node)
        self.registers[node] = register
        self.named_registers.add(register)
        self.variables[variable.name] = Variable(
            variable.name, INPUT, variable.position, register, variable.default
        )

    def statement(self, name: str, node: int) -> None:
        register = self._expression(node)
        if register in self.named_registers or self.instructions[register].op == CONST:
            register = self._add("=", (register,), None, node)  # b = a: a node of its own
        self.registers[node] = register
        self.named_registers.add(register)
        self.variables[name] = Variable(name, INTERMEDIATE, self.instructions[register].position, register)

    def output(self, name: str, node: int) -> None:
        node = self._resolve(node)
        if self.graph.ops[node] == CONST:
            # A computed value, even when it is a constant: `b = a` of the number, never an
            # input (program_text writes it so that the language reads it back as computed).
            register = self._add("=", (self._expression(node),), None, node)
        elif node in self.registers:
            register = self._add("=", (self.registers[node],), None, node)
        else:
            register = self._expression(node)
        self.named_registers.add(register)
        self.variables[name] = Variable(name, INTERMEDIATE, self.instructions[register].position, register)

    def _resolve(self, node: int) -> int:
        """An unnamed COPY is written as the value it copies."""
        graph = self.graph
        while graph.ops[node] == COPY and node not in self.named:
            node = graph.args[node][0]
        return node

    def _expression(self, root: int) -> int:
        """Instructions for ``root``, written inline down to inputs and other statements."""
        graph = self.graph
        results: list[int] = []
        stack: list[tuple[int, bool]] = [(root, False)]
        while stack:
            node, expanded = stack.pop()
            if not expanded:
                node = self._resolve(node)
                if node in self.registers:
                    results.append(self.registers[node])
                    continue
                op = graph.ops[node]
                if op == CONST:
                    results.append(self._add(CONST, (), graph.params[node], node))
                    continue
                if op == COPY:  # the named copy being defined: it is the value it copies
                    stack.append((graph.args[node][0], False))
                    continue
                node = self._regrouped(node)
                stack.append((node, True))
                stack.extend((operand, False) for operand in reversed(graph.args[node]))
                continue
            count = len(graph.args[node])
            registers = tuple(results[len(results) - count :])
            del results[len(results) - count :]
            results.append(self._add(graph.ops[node], registers, graph.params[node], node))
        return results[-1]

    def _regrouped(self, node: int) -> int:
        """``a*(b*c)`` as ``a*b*c`` and ``a*(b/c)`` as ``a*b/c``, when ``b*c`` is written inline.

        The graph keeps constant factors in front, where it can collect them, and reverse
        mode builds (local) * (adjoint) with the adjoint a product itself; written out,
        the grouping people use reads better.  The values differ by rounding only.
        """
        graph = self.graph
        ops, args = graph.ops, graph.args
        while ops[node] == "*":  # each turn moves one factor left: ends within the product's size
            inner = self._resolve(args[node][1])
            if ops[inner] not in ("*", "/") or inner in self.registers:
                break
            left, right = args[inner]
            node = graph.written(ops[inner], (graph.written("*", (args[node][0], left)), right))
        return node


# --- one entry for every shape ------------------------------------------------------------------


class RequestTooLarge(InputError):
    """What was asked cannot be written as asked (an order, a number of derivatives, a whole
    Hessian): the request must change, not the program, so it has no place in the program."""


class ShapeNeeded(InputError):
    """An input with neither a value nor a shape is used as a tensor (indexed, multiplied by
    ``@``, reduced): what its derivatives are depends on its shape, which cannot be guessed."""


@dataclass
class DiffRequest:
    """A differentiation checked and ready to run: ``warnings`` are for the user before it runs,
    ``tensors`` says which differentiator runs it (chosen by the shapes of the inputs)."""

    program: Program
    output: str
    wrt: list[str]
    order: int
    hessian: bool
    shapes: dict[str, tuple[int, ...]]
    tensors: bool
    warnings: list[str]

    def run(self, progress: Callable[[int, int], None] | None = None) -> Any:
        """The derivatives: a ``DerivativeProgram`` of a program of numbers, a
        ``TensorDerivatives`` of one of tensors (``render.formulas`` writes either)."""
        if not self.tensors:
            return differentiate(self.program, self.wrt, self.order, self.output, progress=progress)
        from ..errors import ShapeError
        from .tensor_symbolic import differentiate_tensors, full_hessian

        try:
            result = differentiate_tensors(self.program, self.wrt, self.output, 1 if self.hessian else self.order,
                                           self.shapes)
        except ShapeError as error:
            unsized = [v.name for v in self.program.inputs if v.default is None and v.name not in self.shapes]
            if unsized:
                error.notes.append(
                    f"diff takes the inputs' shapes from their values (in the program, --set or --values) "
                    f"or from --shapes; {', '.join(unsized)} "
                    f"{'has' if len(unsized) == 1 else 'have'} none, so "
                    f"{'it is a number' if len(unsized) == 1 else 'they are numbers'} "
                    f"here: give one a value (--set X='[[1, 2], [3, 4]]') or a shape (--shapes X=2,2)")
            raise
        if self.hessian:
            try:
                result = full_hessian(result)
            except ValueError as error:  # too many entries for a whole Hessian
                raise RequestTooLarge(str(error)) from None
        return result


def plan_diff(program: Program, output: str | None = None, wrt: Iterable[str] | None = None, order: int = 1,
              shapes: dict[str, tuple[int, ...]] | None = None, hessian: bool = False) -> DiffRequest:
    """``diff``'s request checked: the variables (``wrt_names``), the differentiator the inputs'
    shapes call for (a tensor given as a value or a default, or a shape in ``shapes``, makes it
    the tensor one), and the limits of each (RequestTooLarge)."""
    from ..language.program import runs_as_tensors

    shapes = dict(shapes or {})
    if hessian and order not in (1, 2):
        raise RequestTooLarge(f"--hessian is the second derivative; leave out --order {order}")
    order = 2 if hessian else order
    output = output_name(program, output)
    chosen = wrt_names(program, output, wrt)
    defaults = {v.name: v.default for v in program.inputs}
    tensors = runs_as_tensors(program, defaults) or any(shapes.values())
    unused = unused_variables(program, output, chosen)
    if tensors:
        from .tensor_symbolic import MAX_ORDER as MAX_TENSOR_ORDER

        if order > MAX_TENSOR_ORDER:
            raise RequestTooLarge(
                f"--order {order} on a tensor program: diff writes its gradient (--order 1) and its "
                "Hessian-vector product (--order 2); differentiate the --order 2 program again for more")
        warnings = [f"'{result}' does not depend on '{name}': its gradient with respect to it is 0"
                    for result, name in unused]
    else:
        count = derivative_count(len(chosen), order)
        if count > MAX_DERIVATIVES:
            raise RequestTooLarge(
                f"--order {order} with respect to {len(chosen)} variables gives {count:,} derivatives "
                f"(at most {MAX_DERIVATIVES:,}); name fewer variables with --wrt or lower --order")
        warnings = [f"'{result}' does not depend on '{name}': its derivatives with respect to it are 0"
                    for result, name in unused]
    return DiffRequest(program, output, chosen, order, hessian, shapes, tensors, warnings)
