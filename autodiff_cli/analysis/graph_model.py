"""The graph of a program as a picture shows it, in two forms chosen by the shapes of the run.

**A box per value** (``GraphModel``): the graph of one root as flat lists by topological position
(the engine's ``Tape``) plus what a picture needs: each node's kind (which sets its colour), its
display name (``t1``, ``t2``... for unnamed results) and the program's variables that the root
does not depend on, which a picture leaves out.  Built once per command; no renderer walks the
graph again.  This is the form of a program whose every value is a number (0-d): the compiled
engine's ``Value`` graph, a million values and more.

**A box per statement, or per tensor operation** (``LayerGraph``, ``layer_graph``): read off the
NumPy interpreter's run.  At the level of **layers** every input and every statement the output
depends on is a node (``h1 = relu(W1 @ x + b1)`` is one, its expression as written); at the level
of **ops** every tensor operation is (``W1 @ x``, ``· + b1``, ``relu(·)``).  Each carries its
name, its shape, its value and, after one reverse sweep, the gradient of the output with respect
to it; inputs that are parameters carry their count of entries.  Edges run from each operand to
the node that reads it, with the shape that flows.  A large scalar program is drawn in this form
too (a box per statement).

A **statement** is the run of registers the compiler emits for one assignment: its unnamed
sub-expressions and constants, closed by the named register.  ``expand`` opens one into the first
form for one row (``execute.unroll.layer_view``), to be drawn in place of its node or nodes.

Both forms share the kinds of node (``KINDS``, ``kind_of``) and the names of what is left out.
Data only: nothing here draws; ``render.dot`` and ``render.page`` do.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, NamedTuple

from ..engine.graph import Tape, topological_order
from ..engine.ops import short_number
from ..errors import InputError

if TYPE_CHECKING:
    from ..engine.value import Value
    from ..execute.interpreter import TensorRun
    from ..execute.scalar import Evaluation
    from ..execute.unroll import ScalarView
    from ..language.program import Program

__all__ = ["KINDS", "LEVELS", "Expansion", "GraphModel", "LayerGraph", "LayerNode", "LongEdges", "NonFinite",
           "expand", "kind_of", "layer_graph", "node_names", "non_finite_origin", "numbered_groups", "operand_text",
           "parameters_of", "statement_text", "with_ancestors"]

# The kinds of value nodes: the three that ``Evaluation.kind`` reports, plus "result"
# (an unnamed intermediate, a sub-expression) and "constant" (a number written in the program).
KINDS = ("input", "intermediate", "output", "result", "constant")


class GraphModel:
    """The graph of ``root``: ``tape`` (order, operand positions, local derivatives), ``kinds``,
    ``names`` and the ``omitted`` variable names, all by topological position."""

    def __init__(
        self,
        root: Value,
        kinds: Mapping[Value, str] | None = None,
        *,
        output: str | None = None,
        omitted: Sequence[str] = (),
        has_values: bool = True,
    ) -> None:
        self.tape = Tape(topological_order(root))
        self.root = root
        self.output = output or root.label
        self.omitted = list(omitted)
        self.has_values = has_values
        self.kinds = _kinds_by_structure(self.tape.order)
        if kinds:
            unknown = set(kinds.values()) - set(KINDS)
            if unknown:
                raise ValueError(f"unknown node kinds {sorted(unknown)}; the kinds are {', '.join(KINDS)}")
            index = self.tape.index
            for node, kind in kinds.items():
                position = index.get(node)
                if position is not None:
                    self.kinds[position] = kind

    @classmethod
    def of(cls, evaluation: Evaluation) -> GraphModel:
        """The graph of an evaluation's output, with the program's kinds and names."""
        kinds = {node: evaluation.kind(name) for name, node in evaluation.nodes.items()}
        model = cls(evaluation.root, kinds, output=evaluation.output, has_values=evaluation.has_values)
        drawn = model.tape.index
        model.omitted = [name for name, node in evaluation.nodes.items() if node not in drawn]
        return model

    @property
    def order(self) -> list[Value]:
        return self.tape.order  # type: ignore[return-value]

    @property
    def size(self) -> int:
        """The number of values (each drawn as a box; op nodes are not counted)."""
        return self.tape.size

    @cached_property
    def long_edges(self) -> LongEdges:
        """How far the picture's edges reach across its columns (``LongEdges``)."""
        return _long_edges(self.tape.a, self.tape.b)

    def side_by_side(self, groups: Sequence[Sequence[Value]]) -> list[list[int]]:
        """The positions of each group's computed nodes (a layer's units: ``h1[0]``, ``h1[1]``...)
        that have as many ops before them, in the group's order, for the picture to keep in that
        order; nodes not drawn, leaves (whose place their uses decide) and nodes of an earlier
        group are left out, and so are groups of fewer than two."""
        tape = self.tape
        depth = [0] * tape.size
        for i in range(tape.size):  # operands first
            if tape.a[i] >= 0:
                depth[i] = 1 + max(depth[j] for j in (tape.a[i], tape.b[i]) if j >= 0)
        placed: set[int] = set()
        rows = []
        for group in groups:
            by_depth: dict[int, list[int]] = {}
            for node in group:
                position = tape.index.get(node)
                if position is not None and tape.a[position] >= 0 and position not in placed:
                    placed.add(position)
                    by_depth.setdefault(depth[position], []).append(position)
            rows.extend(row for row in by_depth.values() if len(row) > 1)
        return rows

    @cached_property
    def names(self) -> list[str]:
        """Each node's name for explain and the page (``t1``... for unnamed results)."""
        names = node_names(self.tape.order)
        if names and self.output:
            names[-1] = self.output  # the same unless the root was built without a label
        return names


class LongEdges(NamedTuple):
    """What makes a layout slow besides its size: Graphviz's dot gives an edge a point in every
    column (rank) it crosses, so a value used by operations far apart (an input reused all
    through a long chain) costs points by the thousand.  ``points``: all of them; ``widest``:
    the position of the value whose edges cross the most columns, ``uses``: how many operations
    it feeds (None, 0 for a graph without long edges)."""

    points: int
    widest: int | None
    uses: int


_NUMBERED = re.compile(r"(.*\D)(\d+)")


def numbered_groups(names: Iterable[str]) -> list[list[str]]:
    """Names that differ only in a number at the end (``h1_1``, ``h1_2`` ... ``h1_16``: a layer
    written out a unit at a time), each group in natural order (``h1_2`` before ``h1_11``);
    groups of two or more."""
    groups: dict[str, list[tuple[int, str]]] = {}
    for name in names:
        match = _NUMBERED.fullmatch(name)
        if match:
            groups.setdefault(match.group(1), []).append((int(match.group(2)), name))
    return [[name for _, name in sorted(group)] for group in groups.values() if len(group) > 1]


def _long_edges(first: Sequence[int], second: Sequence[int]) -> LongEdges:
    """Columns as dot ranks them from left to right: a result one column after its op node,
    which is one after its operands' latest; an input one column before its first use."""
    size = len(first)
    op_column = [0] * size
    column = [0] * size
    for i in range(size):  # topological order: operands first
        if first[i] >= 0:
            latest = max((column[j] for j in (first[i], second[i]) if j >= 0 and first[j] >= 0), default=0)
            op_column[i] = latest + 1
            column[i] = latest + 2
    uses = [0] * size
    for i in range(size):
        for j in (first[i], second[i]):
            if j >= 0 and first[j] < 0:
                column[j] = op_column[i] - 1 if uses[j] == 0 else min(column[j], op_column[i] - 1)
                uses[j] += 1
    crossed = [0] * size
    for i in range(size):
        for j in (first[i], second[i]):
            if j >= 0:
                crossed[j] += op_column[i] - column[j] - 1
    points = sum(crossed)
    if not points:
        return LongEdges(0, None, 0)
    widest = max(range(size), key=crossed.__getitem__)
    count = sum((first[i] == widest) + (second[i] == widest) for i in range(size))
    return LongEdges(points, widest, count)


def _kinds_by_structure(order: Sequence[Value]) -> list[str]:
    """The kind of each node read off the graph: for hand-built Values (``draw_dot``).

    A labelled leaf is an input, an unlabelled leaf a constant; a labelled result a named
    intermediate, an unlabelled one a sub-expression; the root is the output.  This agrees
    with what the language reports, since it labels exactly its named variables.
    """
    kinds = [kind_of(node._a is not None, bool(node.label), False) for node in order]
    if kinds:
        kinds[-1] = "output"
    return kinds


def kind_of(computed: bool, named: bool, is_output: bool) -> str:
    """A node's kind in either form: the output; a leaf with a name an input, without one a
    number written in the program; a computed node with a name a named intermediate, without
    one a sub-expression."""
    if is_output:
        return "output"
    if not computed:
        return "input" if named else "constant"
    return "intermediate" if named else "result"


def operand_text(x: float) -> str:
    """A constant as an operand in a formula: negative numbers in parentheses."""
    text = short_number(x)
    return f"({text})" if text.startswith("-") else text


def node_names(order: Sequence[Value]) -> list[str]:
    """A name for every node of ``order``, by position.

    Labelled nodes (the program's variables) keep their label; constants are their
    number; other nodes are t1, t2, ... in topological order.  The prefix gets
    underscores added until no label looks like a temporary, so names never clash.
    """
    labels = {node.label for node in order if node.label}
    prefix = "t"
    while any(re.fullmatch(re.escape(prefix) + r"\d+", label) for label in labels):
        prefix += "_"
    names = []
    append = names.append
    count = 0
    for node in order:
        if node.label:
            append(node.label)
        elif node._a is None:
            append(operand_text(node.data))
        else:
            count += 1
            append(f"{prefix}{count}")
    return names


class NonFinite(NamedTuple):
    """Where a gradient stopped being finite: ``node``'s local derivative with respect to its
    operand number ``operand`` is ``local`` (or is finite, but times ``node``'s finite gradient
    it overflows); ``statement`` is the nearest named node that uses it (itself if named)."""

    node: Value
    operand: int
    local: float
    statement: Value | None


def non_finite_origin(root: Value) -> NonFinite | None:
    """The node nearest ``root`` whose gradient is finite but passes a non-finite one to an
    operand (the ``sqrt`` of ``y = sqrt(x)`` at 0), after ``root.backward()``; None when every
    gradient is finite.  One pass over the graph."""
    import math

    order = topological_order(root)
    user: dict[int, Value] = {}  # id of a node -> the first node (nearest the root) that uses it
    found: NonFinite | None = None
    for node in reversed(order):
        for operand in (node._a, node._b):
            if operand is not None and id(operand) not in user:
                user[id(operand)] = node
        if found is not None or not math.isfinite(node.grad):
            continue
        for index, (operand, local) in enumerate(((node._a, node._da), (node._b, node._db))):
            if operand is not None and not math.isfinite(operand.grad) and not math.isfinite(local * node.grad):
                found = NonFinite(node, index, local, None)
                break
    if found is None:
        return None
    statement: Value | None = found.node
    while statement is not None and not statement.label:
        statement = user.get(id(statement))
    return found._replace(statement=statement)


# --- a box per statement or per tensor operation ------------------------------------------------

OPERAND = "\u00b7"  # how an operand without a name is written in an expression: relu(·)


@dataclass(frozen=True)
class LayerNode:
    """One register as a picture shows it.

    ``kind`` is one of ``KINDS`` (input, intermediate, output, result, constant),
    so the layer graph uses the scalar graph's colours; ``expression`` is the op written with
    its operands' names (empty for inputs and constants); ``parameters`` is the number of
    entries of a parameter (None for anything else); ``grad`` is None when the graph is drawn
    without gradients."""

    register: int
    name: str | None
    kind: str
    op: str
    expression: str
    shape: tuple[int, ...]
    value: Any
    grad: Any
    parameters: int | None
    operands: tuple[int, ...]

    @property
    def title(self) -> str:
        """The node's name, else its expression (an unnamed result), else its value's text."""
        return self.name or self.expression


@dataclass
class LayerGraph:
    """The layer graph of ``output``: ``nodes`` in register order (operands before their uses),
    ``omitted`` the program's variables the output does not depend on (not drawn)."""

    program: Program
    run: TensorRun
    output: str
    nodes: list[LayerNode]
    omitted: list[str]
    has_grad: bool
    given: Mapping[str, Any] = field(default_factory=dict)  # the values it was run on, for expansions
    seed: int | None = 0
    index: dict[int, int] = field(default_factory=dict)  # register -> position in nodes
    # (operand, node) where the node reads the operand's entries as whole numbers, an index (gather's
    # Xb in C[Xb]): no gradient flows along such an edge
    index_reads: set[tuple[int, int]] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.index = {node.register: i for i, node in enumerate(self.nodes)}

    @property
    def size(self) -> int:
        return len(self.nodes)

    def edges(self) -> list[tuple[int, int, tuple[int, ...]]]:
        """(operand register, register, the operand's shape) for every use, in order; an op
        using one register twice (``x * x``) has two edges from it.  A number written in the
        program is no node (its uses write it: ``1 - ·``), so it has no edge."""
        shapes = self.run.shapes
        return [(operand, node.register, shapes[operand]) for node in self.nodes for operand in node.operands]

    def node(self, register: int) -> LayerNode:
        return self.nodes[self.index[register]]

    def statement(self, name: str) -> list[int]:
        """The registers of the statement that computes ``name``, in order (its drawn ones): the
        unnamed sub-expressions and constants the compiler emitted for it, then ``name``'s own.
        An input is a statement of one register.  InputError for a name the program lacks."""
        variable = self.program.variables.get(name)
        if variable is None:
            from ..errors import variables_hint

            raise InputError(f"--expand {name}: the program has no variable '{name}'",
                             hint=variables_hint(list(self.program.variables), [name]))
        last = variable.register
        if last not in self.index:
            raise InputError(f"--expand {name}: '{name}' does not affect {self.output}, so it is not drawn",
                             hint=f"expand a variable {self.output} depends on, or draw another output "
                                  "(--output)")
        if self.node(last).kind == "input":
            return [last]
        from ..execute.unroll import statement_start

        rows = self.run.rows
        return [r for r in range(statement_start(self.program, last), last + 1)
                if r in self.index and rows[r][0] != "input"]

    def empty_tensor(self, registers: Collection[int] | None = None) -> str | None:
        """How to name the first tensor with no entries (``zeros([0, 3])``, ``x[2:1]``) that the
        statements closed by ``registers`` (default: the whole graph) compute or read, else None:
        such a tensor has no scalar graph."""
        from ..execute.unroll import statement_start
        from ..language.shapes import shape_text

        closing = sorted(self.index) if registers is None else sorted(registers)
        rows, shapes, names = self.run.rows, self.run.shapes, self.program.names_by_register()
        for last in closing:
            start = last if rows[last][0] == "input" else statement_start(self.program, last)
            for register in range(start, last + 1):
                operands = [r for r in rows[register][1:3] if r >= 0]
                for r in (*operands, register):
                    if 0 in shapes[r]:
                        what = names.get(r) or f"a part of {self.statement_name(r) or 'the program'}"
                        return f"{what} (shape {shape_text(shapes[r])})"
        return None

    def statement_name(self, register: int) -> str | None:
        """The name of the statement a register belongs to (``execute.unroll.statement_names``)."""
        from ..execute.unroll import statement_names

        return statement_names(self.program).get(register)


@dataclass
class Expansion:
    """One statement of a layer graph opened into its scalar graph for one row.

    ``registers`` are the layer graph's nodes it takes the place of; ``model`` is the scalar
    graph (``GraphModel`` of ``execute.unroll.layer_view``'s program), whose
    output is the sum of the statement's entries weighted by the tensor program's gradient, so
    each box's grad is its share of d output for this row; ``anchors`` maps each register the
    statement reads to the position of its first entry's box, where edges from it attach.
    Only the statement's entries and what they are computed from are ``shown``: the weighting
    that makes the root (the gradient times each entry, summed) is how the grads are found,
    not a part of the layer.  ``entries`` are the statement's entries' positions in row-major
    order (``W1[0, 0]``, ``W1[0, 1]``, ``W1[1, 0]``...); ``exit`` is the last one."""

    name: str
    title: str
    registers: list[int]
    view: ScalarView
    model: GraphModel
    anchors: dict[int, int]
    shown: set[int]  # positions of the model drawn: the entries and what they are computed from
    entries: list[int]  # positions of the statement's entries, in row-major order
    of_input: bool = False  # the expanded name is an input: nothing leads into its entries

    @property
    def exit(self) -> int:
        """The position edges to the statement's uses leave from: its last entry."""
        return max(self.entries)

    @property
    def leaves(self) -> bool:
        """No entry is computed in the view: an input's entries, those a gather picks, a
        comparison's (constants to the gradient)."""
        tape = self.model.tape
        return all(tape.a[entry] < 0 for entry in self.entries)

    @property
    def size(self) -> int:
        """The number of scalar values drawn."""
        return len(self.shown)


def expand(graph: LayerGraph, name: str, row: int = 0, *, limit: int | None = None) -> Expansion:
    """The statement computing ``name`` (or the input ``name``) in ``graph``, entry by entry, for
    row ``row`` of a matrix (a vector or a number is shown whole).  ``limit`` caps the scalar
    operations (``execute.unroll.TooLarge`` beyond it)."""
    import numpy as np

    from ..execute.scalar import evaluate
    from ..execute.unroll import DEFAULT_LIMIT, layer_view

    registers = graph.statement(name)
    own = graph.node(registers[-1])
    empty = graph.empty_tensor(registers)
    if empty is not None:
        raise InputError(f"--expand {name}: {empty} has no entries, so there is no scalar to draw",
                         hint=f"draw the layer graph without --expand {name}")
    upstream = None
    if graph.has_grad and own.grad is not None:
        upstream = own.grad[row] if own.grad.ndim >= 2 and row < own.grad.shape[0] else own.grad
    view = layer_view(graph.program, graph.given, name, row=row, upstream=upstream, seed=graph.seed,
                      limit=limit or DEFAULT_LIMIT)
    evaluation = evaluate(view.program, view.values, view.output, backward=graph.has_grad)
    model = GraphModel.of(evaluation)
    entries = [model.tape.index[evaluation.nodes[view.names[int(r)]]] for r in np.ravel(view.entries[name])]
    shown = with_ancestors(model, entries)
    names = model.names
    anchors: dict[int, int] = {}
    read = {operand for register in registers for operand in graph.node(register).operands} - set(registers)
    for operand in sorted(read):
        operand_name = graph.node(operand).name
        for position, text in enumerate(names):
            entry_of_operand = text == operand_name or text.startswith(f"{operand_name}[")
            if position in shown and operand_name and entry_of_operand:
                anchors[operand] = position
                break
    if view.row is not None:
        which = f"row {view.row}"
    else:
        which = "its only entry" if not own.shape else f"all {int(np.prod(own.shape)):,} entries"
    text = f"{name}: its entries" if own.kind == "input" else f"{name} = {statement_text(graph.program, name)}"
    return Expansion(name, f"{text}   ({which}, scalar by scalar)", registers, view, model, anchors, shown,
                     entries, own.kind == "input")


def with_ancestors(model: GraphModel, positions: Collection[int]) -> set[int]:
    """``positions`` and every position they are computed from (a stack, not recursion)."""
    tape = model.tape
    seen = set(positions)
    stack = list(positions)
    while stack:
        position = stack.pop()
        for operand in (tape.a[position], tape.b[position]):
            if operand >= 0 and operand not in seen:
                seen.add(operand)
                stack.append(operand)
    return seen


def parameters_of(program: Program, named: Collection[str] | None = None) -> set[str]:
    """The inputs counted as parameters: those ``named`` (checked), else those declared with an
    initializer (``W = uniform([16, 2], -1, 1)``), the weights a program draws."""
    from ..language.program import Initializer

    inputs = {v.name: v for v in program.inputs}
    if named is None:
        return {name for name, v in inputs.items() if isinstance(v.default, Initializer)}
    for name in named:
        if name not in inputs:
            kind = "computed by the program" if name in program.variables else "not a variable of the program"
            raise InputError(f"--params {name}: '{name}' is {kind}; parameters are inputs",
                             hint=f"the inputs are: {', '.join(inputs) or 'none'}")
    return set(named)


LEVELS = ("layers", "ops")


def layer_graph(program: Program, given: Mapping[str, Any], output: str | None = None, *,
                level: str = "layers", gradients: bool = True, parameters: Collection[str] | None = None,
                seed: int | None = 0) -> LayerGraph:
    """Run ``program`` on ``given`` values (the other inputs take their defaults, initializers drawn
    from ``seed``) and describe what ``output`` (default: the result) depends on.

    ``level`` "layers": a node per input and per statement (``h1 = relu(W1 @ x + b1)`` is one
    node, its expression as written, its value and gradient ``h1``'s); "ops": a node per tensor
    operation, but the numbers written in the program, which their uses' expressions show
    (``1 - ·``).  With ``gradients``, one reverse sweep gives d output / d register for every
    node; the output must then be a number (InputError otherwise, naming the ways out)."""
    import numpy as np

    from ..execute.interpreter import input_arrays, number_output_error, run_forward
    from ..language.program import missing_inputs, missing_inputs_error, output_name

    if level not in LEVELS:
        raise ValueError(f"level must be one of {', '.join(LEVELS)}, not {level!r}")
    missing = missing_inputs(program, given)
    if missing:
        raise missing_inputs_error(program, missing)
    output = output_name(program, output)
    run = run_forward(program, input_arrays(program, given, seed))
    out_register = run.register(output)
    out_shape = run.shapes[out_register]
    if gradients and out_shape:
        raise number_output_error(program, output, out_shape,
                                  f"draw it without gradients (--no-grad), or draw a number: --output another "
                                  f"variable, or write sum({output}) or mean({output}) in the program")
    needed = program.dependencies(output)
    adjoints = run.adjoints(output) if gradients else {}
    names = program.names_by_register()
    learned = parameters_of(program, parameters)
    nodes: list[LayerNode] = []
    constants: dict[int, str] = {}  # a number's register -> its text, to write it in its uses
    owner: dict[int, int] = {}  # layers: an unnamed register -> the named one closing its statement
    for register in range(out_register, -1, -1):
        if register in names:
            closing = register
        if needed[register] and register not in names and level == "layers":
            owner[register] = closing
    index_reads, only_indices = _index_reads(program, run.rows, needed, owner)
    for register, (op, first, second, param, _) in enumerate(run.rows):
        if not needed[register]:
            continue
        operands = program.operands(register, first, second)
        expression = _expression(op, operands, param, names, constants)
        if op == "const" and not run.shapes[register]:
            constants[register] = expression  # written in its uses (1 - ·), not drawn alone
            continue
        if register in owner:
            continue  # layers: a part of its statement's node
        name = names.get(register)
        if level == "layers" and op != "input":
            operands = _read_by_statement(program, register, owner, run.rows)
            expression = statement_text(program, name) if name else expression
        value = run.values[register]
        grad = None
        if gradients and register not in only_indices:  # an index has no derivative: no grad drawn
            grad = adjoints.get(register)
            grad = np.zeros_like(value) if grad is None else grad
        nodes.append(LayerNode(
            register=register, name=name, kind=_kind(op, name, register == out_register), op=op,
            expression=expression, shape=run.shapes[register], value=value, grad=grad,
            parameters=int(np.size(value)) if op == "input" and name in learned else None,
            operands=tuple(r for r in operands if r not in constants and r not in owner)))
    omitted = [name for name, v in program.variables.items() if not needed[v.register]]
    graph = LayerGraph(program, run, output, nodes, omitted, gradients, given, seed)
    graph.index_reads = {(operand, node) for operand, node in index_reads if node in graph.index}
    return graph


def _index_reads(program: Program, rows: Sequence[Any], needed: Sequence[bool], owner: Mapping[int, int]
                 ) -> tuple[set[tuple[int, int]], set[int]]:
    """Which registers are read as indices (the op registry's ``indices`` operands), by which node
    (the statement a register belongs to, at the level of layers), and those read as nothing else."""
    from ..engine.registry import ENTRIES

    as_index: set[tuple[int, int]] = set()
    as_value: set[int] = set()
    for register, (op, first, second, _, _) in enumerate(rows):
        if not needed[register]:
            continue
        positions = ENTRIES[op].indices if op in ENTRIES else ()
        for position, operand in enumerate(program.operands(register, first, second)):
            if position in positions:
                as_index.add((operand, owner.get(register, register)))
            else:
                as_value.add(operand)
    return as_index, {operand for operand, _ in as_index} - as_value


def _read_by_statement(program: Program, register: int, owner: Mapping[int, int], rows: Sequence[Any]
                       ) -> tuple[int, ...]:
    """The registers a statement reads from outside itself (inputs, other statements), in the
    order it first reads them, each once."""
    parts = [r for r, closing in owner.items() if closing == register] + [register]
    read: dict[int, None] = {}
    for part in sorted(parts):
        _, first, second, _, _ = rows[part]
        for operand in program.operands(part, first, second):
            if owner.get(operand) != register:
                read.setdefault(operand)
    return tuple(read)


def statement_text(program: Program, name: str) -> str:
    """The right-hand side of the statement that assigns ``name``, as written in the program
    (comments dropped, spaces collapsed): ``relu(W1 @ x + b1)``."""
    variable = program.variables[name]
    source = program.source
    position = variable.position
    lines = source.text.split("\n")
    offset = sum(len(line) + 1 for line in lines[:position.line - 1]) + position.column - 1
    text = source.text
    after = text[offset:]
    if after.startswith(name) and after[len(name):].lstrip(" \t").startswith("="):
        after = after[len(name):].lstrip(" \t")[1:]
    out: list[str] = []
    depth = 0
    comment = False
    for char in after:
        if comment:
            comment = char != "\n"
            if comment or depth == 0:
                if not comment:
                    break
                continue
        if char == "#":
            comment = True
            continue
        if depth == 0 and char in "\n;":
            break
        depth += char in "([{"
        depth -= char in ")]}"
        out.append(char)
    return " ".join("".join(out).split())


def _kind(op: str, name: str | None, is_output: bool) -> str:
    computed = op not in ("input", "const")
    return kind_of(computed, bool(name) if computed else op == "input", is_output)


def _expression(op: str, operands: Sequence[int], param: Any, names: Mapping[int, str],
                constants: Mapping[int, str]) -> str:
    """The op as written, its operands by name, a number written in the program by its text
    (``constants``), anything else as ``·``: ``W1 @ x``, ``relu(·)``, ``1 - ·``, ``·**2``; a
    constant is its value's text; an input has none."""
    from ..engine.ops import OPS, short_number
    from ..engine.registry import ENTRIES, write
    from ..language.program import POWER_CONST, ArrayLiteral

    if op == "input":
        return ""
    if op == "const":
        if isinstance(param, ArrayLiteral):
            return "[…]" if len(param.values) > 4 else repr(param.nested()).replace("'", "")
        return short_number(float(param)) if isinstance(param, (int, float)) else str(param)
    words = [names.get(r) or constants.get(r, OPERAND) for r in operands]
    if op == POWER_CONST:
        return f"{words[0]}**{short_number(float(param))}"
    if not ENTRIES[op].elementwise:
        return write(op, words, param)
    return OPS[op].written.format(x=words[0], y=words[1] if len(words) > 1 else "", c=param)
