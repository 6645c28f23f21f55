"""The backward pass written out as steps, for a program of any shape.

``explain_program`` is the one entry: it runs the program and picks the form by the run's shapes.

**Scalar form** (every value a number: the compiled ``Value`` engine runs it).  The walk goes
through the graph in reverse topological order and, for every edge child -> parent, records the
local derivative (its formula from the op table with the operands' names put in, and its value),
the upstream gradient d output / d parent, and their product, e.g.

    dL/dc = ∂d/∂c * dL/dd = 1 * -2 = -2          [∂d/∂c = 1]

(the wording is ``render/explain.py``'s: ∂ marks the local derivative, d the gradient).  The walk
sums its own gradients from the stored local derivatives, so it needs only the forward values.

**Matrix form** (a program with tensors: the NumPy interpreter runs it).  For every operand of
every instruction, one vector-Jacobian product: the rule as the op tables write it, with the
operands' names put in, the shapes it works on and the share of the gradient the operand gets,
e.g.

    dL/dW = transpose(X) @ dL/dP        [2, 8] @ [8, 1] -> [2, 1]

A structural op's rule is its registry entry's ``rule`` (``dL/dy = transpose(x) @ dL/dout``), an
elementwise op's is ``dL/dout *`` its local derivative from ``OPS[op].rule``, entry by entry.
Where an elementwise op broadcast an operand (a bias added to every row), the step says so and
sums the gradient back over what was stretched.  The numbers are read from the record of the
interpreter's one reverse sweep (``TensorRun.adjoints``), so each total is the gradient ``eval``
reports.  Each step belongs to a statement (the named variable it computes, a "layer"):
``shares`` holds, per statement, what each variable it reads receives through it; with
``scalar`` one row of each statement is opened into scalars (``execute.unroll.layer_view``) and
explained in the scalar form.

In both forms a node used twice receives a ``+=`` step per use and then a total line with the
sum (overwriting instead of summing is the classic backprop bug); unnamed results are t1, t2, ...
in order; constants get no steps.  Traversals are iterative, and at most ``max_steps`` lines of
each pass are kept (the rest counted, not dropped silently), so a graph a million nodes deep is
fine.  The steps are data; ``render/explain.py`` writes them as text, Markdown or Rich tables and
``render/explain_json.py`` as JSON.  NumPy is imported only for the matrix form.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import TYPE_CHECKING, Any, NamedTuple

from ..engine.graph import paused_cycle_collector
from ..engine.ops import OPS, op_key
from ..engine.registry import ENTRIES, write
from ..engine.tensor_ops import format_shape
from ..errors import InputError
from .graph_model import GraphModel, node_names, operand_text

if TYPE_CHECKING:
    from ..engine.value import Value
    from ..execute.interpreter import TensorRun
    from ..execute.scalar import Evaluation
    from ..language.program import Program

__all__ = [
    "DEFAULT_MAX_STEPS",
    "MATRIX",
    "SCALAR",
    "Broadcast",
    "Definition",
    "Explanation",
    "LayerSteps",
    "MatrixStep",
    "OptionConflict",
    "Place",
    "Seed",
    "Step",
    "Total",
    "Walkthrough",
    "backward_steps",
    "definitions",
    "explain",
    "explain_program",
    "gradient_name",
    "node_names",
    "rule_key",
    "statement_registers",
    "walkthrough",
]

DEFAULT_MAX_STEPS = 500

# How many contributions a scalar total line spells out before it writes "..." and a count.
SHOWN_TERMS = 6

Shape = tuple[int, ...]


def gradient_name(output: str, name: str) -> str:
    """The gradient of ``output`` with respect to ``name``, as explain writes it: ``dL/dW``."""
    return f"d{output}/d{name}"


# --- the lines of both passes, in either form --------------------------------------------------


class Definition(NamedTuple):
    """One line of the forward pass: ``name = expression`` ("" for an input) and its value; in
    matrix form also its ``shape`` and the computation with the operands' shapes put in
    (``shapes``: ``[8, 2] @ [2, 1] -> [8, 1]``)."""

    name: str
    expression: str
    value: Any
    shape: Shape = ()
    shapes: str = ""


class Seed(NamedTuple):
    """The start of the backward pass: d output / d output = 1."""

    output: str


class Step(NamedTuple):
    """One edge of the backward pass in scalar form: grad(child) (+)= local * upstream.

    ``rule`` is the local derivative d parent / d child as a formula in the operands'
    names (``"b"`` for ``e = a * b`` and child ``a``); ``local`` is its value,
    ``upstream`` is d output / d parent, and ``product`` their product.
    ``accumulate`` is true for the second and later contributions to ``child``;
    ``total`` is the child's gradient after this contribution.
    """

    output: str
    child: str
    parent: str
    rule: str
    local: float
    upstream: float
    product: float
    accumulate: bool
    total: float


@dataclass(frozen=True)
class Broadcast:
    """An operand an elementwise op stretched to the result's shape, and the gradient summed
    back: ``axes`` of the result summed, ``unit``, what each copy was (``row``, ``column``,
    ``entry``), ``verb`` how the operand took part (``added to``), ``inner`` the gradient before
    the sum (``dL/dZ``)."""

    axes: tuple[int, ...]
    unit: str
    units: str
    verb: str
    inner: str = ""


@dataclass(frozen=True)
class MatrixStep:
    """One operand of one tensor instruction in the backward pass: ``child`` receives
    ``product``, its share of d output / d child through the instruction computing ``parent``.

    ``formula`` is the right-hand side of the rule with the names put in
    (``transpose(X) @ dL/dP``), before any sum over broadcast axes (``broadcast``);
    ``computation`` the shapes it works on (``[2, 8] @ [8, 1] -> [2, 1]``); ``notes`` what the
    rule's other letters stand for here (``n = 8``).  ``accumulate`` is true for the second and
    later contributions to ``child``, ``total`` its gradient after this one.  ``statement`` is
    the named variable whose statement holds the instruction."""

    output: str
    child: str
    parent: str
    op: str
    operand: int
    formula: str
    computation: str
    product: Any
    accumulate: bool
    total: Any
    statement: str
    broadcast: Broadcast | None = None
    notes: tuple[str, ...] = ()


class Total(NamedTuple):
    """A node that received several contributions: their sum, now final.

    ``terms`` holds the first ``SHOWN_TERMS`` contributions in scalar form (none in matrix form);
    ``count`` is how many there were.
    """

    output: str
    name: str
    terms: tuple[Any, ...]
    count: int
    total: Any


Item = Seed | Step | MatrixStep | Total


class Place(NamedTuple):
    """Where in the graph an item happens, by topological position (``GraphModel.order``).

    ``node`` is the node defined (a Definition), the root (the Seed), the node receiving a
    contribution (a Step's child) or the node summed (a Total); a Step also has the
    ``parent`` it comes from and which ``operand`` of the parent the child is (0 or 1: in
    ``x*x`` the same child is both).  Names alone cannot tell these apart.
    """

    node: int
    parent: int = -1
    operand: int = -1


SCALAR = "scalar"  # a step per edge of the graph of numbers
MATRIX = "matrix"  # a step per operand of each tensor instruction


@dataclass
class Explanation:
    """What the renderers show: the output, both passes (capped at ``max_steps`` lines each, the
    rest counted) and every input's gradient, in the ``form`` the run's shapes chose.

    The matrix form also has, per statement, what each variable it reads receives through it
    (``shares``, statements in backward order), every named variable's gradient (``adjoints``: the
    upstream gradient of its statement) and, when asked for, one row of each statement in scalars
    (``layers``).  ``warnings`` are the run's, for the caller to show; ``run`` is what was run (an
    ``Evaluation`` or a ``TensorRun``), kept so that the caller decides when to free it.
    """

    output: str
    value: Any
    definitions: list[Definition]
    definitions_omitted: int
    steps: list[Item]
    steps_omitted: int
    gradients: list[tuple[str, Any]]
    max_steps: int
    form: str = SCALAR
    shares: dict[str, dict[str, Any]] = field(default_factory=dict)
    adjoints: dict[str, Any] = field(default_factory=dict)
    layers: list[LayerSteps] | None = None
    warnings: list[str] = field(default_factory=list)
    run: Any = None


@dataclass
class LayerSteps:
    """One statement ("layer") at two zoom levels: its matrix-form ``steps``, and the scalar chain
    rule of one ``row`` of it (``scalar``: the scalar-form explanation of the scalar view whose
    output weighs the row's entries by ``upstream``, the row of d output / d ``name``)."""

    name: str
    row: int | None
    upstream: Any
    steps: list[MatrixStep]
    scalar: Explanation


class OptionConflict(ValueError):
    """An option that does not fit the program's shapes (``--scalar`` of a program of numbers);
    the command reports it as a usage error."""


# --- the one entry -------------------------------------------------------------------------------


def explain_program(program: Program, given: Mapping[str, Any], output: str | None = None, *,
                    max_steps: int = DEFAULT_MAX_STEPS, scalar: bool = False, row: int | None = None,
                    seed: int | None = 0, progress: Callable[[int, int], None] | None = None) -> Explanation:
    """Both passes of ``program`` on ``given`` values, the first ``max_steps`` lines of each (0 = all).

    The run's shapes pick the form: a program of numbers runs on the compiled engine and is
    explained edge by edge (``progress`` is told how its graph building goes); one with tensors
    runs on the NumPy interpreter and is explained in matrix form, with ``scalar`` also row
    ``row`` (default 0) of each statement in scalars.  ``scalar`` or ``row`` for a program of
    numbers, or ``row`` without ``scalar``, is an ``OptionConflict``.
    """
    from ..execute.run import runs_on_engine

    if not runs_on_engine(program, given):
        if row is not None and not scalar:
            raise OptionConflict("--row chooses the row --scalar shows; add --scalar")
        return _explain_matrix(program, given, output, seed, max_steps, scalar, row)
    if scalar or row is not None:
        raise OptionConflict(f"{'--scalar' if scalar else '--row'} shows one row of a tensor program in "
                             "scalars, and this program is already scalar; drop it")
    from ..execute import evaluate

    # The walk sums the gradients itself, step by step; the engine's backward pass is not needed.
    evaluation = evaluate(program, given, output, backward=False, progress=progress)
    explanation = explain(evaluation, max_steps)
    explanation.warnings = list(evaluation.warnings)
    return explanation


# --- scalar form: names -------------------------------------------------------------------------


def rule_key(node: Value) -> str:
    """The op-table key of a node's op ('**2' -> '**c')."""
    return op_key(node._op)


def _template(rule: str) -> str:
    """A rule as a str.format template: 'c * x**(c-1)' -> '{c} * {x}**({c}-1)'."""
    escaped = rule.replace("{", "{{").replace("}", "}}")
    return re.sub(r"\b(x|y|c|out)\b", r"{\1}", escaped)


# Formatting a template is several times faster than a regex substitution per step,
# which matters on graphs of a million edges.
_TEMPLATES = {key: tuple(_template(rule) for rule in op.rule) for key, op in OPS.items()}


def _rule_text(node: Value, operand: int, names: list[str], graph: _Graph, i: int) -> str:
    templates = _TEMPLATES.get(rule_key(node))
    if templates is None or operand >= len(templates):
        return "?"  # a hand-built node with no recorded op; its local value is shown regardless
    a, b = graph.a[i], graph.b[i]
    exponent = node.exponent
    return templates[operand].format(
        x=names[a] if a >= 0 else "x",
        y=names[b] if b >= 0 else "y",
        c=operand_text(exponent) if exponent is not None else "c",
        out=names[i],
    )


def _expression(node: Value, a: str, b: str | None) -> str:
    """The node's operation written with its operands' names (one level, never nested)."""
    op = OPS.get(rule_key(node))
    if op is None:  # a hand-built node with an op of its own naming
        return f"{a} {node._op} {b}" if b is not None else f"{node._op}({a})"
    exponent = node.exponent
    return op.written.format(x=a, y=b, c=operand_text(exponent) if exponent is not None else "c")


class _Graph:
    """The graph model's lists that both walks read, and which nodes receive steps."""

    def __init__(self, model: GraphModel) -> None:
        tape = model.tape
        self.order = tape.order
        self.index = tape.index
        self.a = tape.a
        self.b = tape.b
        self.names = model.names
        # Constants receive no gradient steps: nothing depends on their gradient.
        self.learns = [node._a is not None or bool(node.label) for node in tape.order]


# --- scalar form: the walk ----------------------------------------------------------------------


def definitions(root: Value) -> Iterator[Definition]:
    """The forward pass of ``root`` in topological order: inputs, then each operation and its value."""
    return _definitions(_Graph(GraphModel(root)))


def _definitions(graph: _Graph, where: list[Place] | None = None) -> Iterator[Definition]:
    """The forward pass; ``where``, when given, receives the place of each definition in turn."""
    names = graph.names
    for i, node in enumerate(graph.order):
        a = graph.a[i]
        if a >= 0:
            b = graph.b[i]
            if where is not None:
                where.append(Place(i))
            yield Definition(names[i], _expression(node, names[a], names[b] if b >= 0 else None), node.data)
        elif graph.learns[i]:
            if where is not None:
                where.append(Place(i))
            yield Definition(names[i], "", node.data)


def backward_steps(root: Value) -> Iterator[Item]:
    """The backward pass from ``root``: a Seed, then Steps and Totals in reverse topological order.

    The gradients are summed here, in the same order as ``Value.backward``, so the
    totals equal the engine's ``grad`` exactly; the nodes' own ``grad`` is not read.
    """
    return _steps(_Graph(GraphModel(root)))


def _steps(graph: _Graph, where: list[Place] | None = None) -> Iterator[Item]:
    """The backward pass; ``where``, when given, receives the place of each item in turn."""
    order, names, learns = graph.order, graph.names, graph.learns
    size = len(order)
    grads = [0.0] * size
    counts = [0] * size
    terms: dict[int, list[float]] = {}  # the first contributions of each node, for its total line
    output = names[-1]
    grads[-1] = 1.0
    if where is not None:
        where.append(Place(size - 1))
    yield Seed(output)
    for i in range(size - 1, -1, -1):
        if counts[i] > 1:
            # Reverse topological order: every node that uses this one is done, so the sum is final.
            if where is not None:
                where.append(Place(i))
            yield Total(output, names[i], tuple(terms[i]), counts[i], grads[i])
        terms.pop(i, None)
        a = graph.a[i]
        if a < 0:
            continue
        node = order[i]
        upstream = grads[i]
        for position, j, local in ((0, a, node._da), (1, graph.b[i], node._db)):
            if j < 0 or not learns[j]:
                continue
            product = local * upstream
            grads[j] += product
            counts[j] += 1
            shown = terms.setdefault(j, [])
            if len(shown) < SHOWN_TERMS:
                shown.append(product)
            if where is not None:
                where.append(Place(j, i, position))
            yield Step(
                output, names[j], names[i], _rule_text(node, position, names, graph, i),
                local, upstream, product, counts[j] > 1, grads[j],
            )


def _totals(graph: _Graph) -> tuple[list[float], int]:
    """Every node's gradient and the number of items ``_steps`` yields, without building them.

    The same sums in the same order as ``_steps``, so the numbers are identical; used
    when only the first few steps are shown, to finish the walk at a fraction of the cost.
    """
    order, learns, a_of, b_of = graph.order, graph.learns, graph.a, graph.b
    size = len(order)
    grads = [0.0] * size
    counts = [0] * size
    grads[-1] = 1.0
    items = 1  # the seed
    for i in range(size - 1, -1, -1):
        if counts[i] > 1:
            items += 1
        a = a_of[i]
        if a < 0:
            continue
        node = order[i]
        g = grads[i]
        if learns[a]:
            grads[a] += node._da * g
            counts[a] += 1
            items += 1
        b = b_of[i]
        if b >= 0 and learns[b]:
            grads[b] += node._db * g
            counts[b] += 1
            items += 1
    return grads, items



# --- scalar form: collected for rendering --------------------------------------------------------


def explain(evaluation: Evaluation, max_steps: int = DEFAULT_MAX_STEPS) -> Explanation:
    """The scalar form of ``evaluation``'s two passes: the first ``max_steps`` lines of each (0 = all).

    ``gradients`` are d output / d input for every input of the program, in program order.
    Only the lines shown are built; the rest are counted.
    """
    # The steps are acyclic data, millions of tuples for a big graph: with the cycle collector
    # rescanning them (and the graph) as they pile up, the walk would take quadratic time.
    with paused_cycle_collector():
        graph = _Graph(GraphModel(evaluation.root, output=evaluation.output))
        limit = max_steps or None
        shown_definitions = list(islice(_definitions(graph), limit))
        total_definitions = sum(graph.learns)  # every node but the constants
        shown_steps = list(islice(_steps(graph), limit))
        grads, total_steps = _totals(graph)
    return Explanation(
        evaluation.output, evaluation.root.data, shown_definitions,
        total_definitions - len(shown_definitions), shown_steps, total_steps - len(shown_steps),
        _input_gradients(evaluation, graph, grads), max_steps, run=evaluation,
    )


def _input_gradients(evaluation: Evaluation, graph: _Graph, grads: list[float]) -> list[tuple[str, float]]:
    gradients = []
    for variable in evaluation.program.inputs:
        i = graph.index.get(evaluation.nodes[variable.name])
        # An input the output does not depend on has gradient 0, as eval reports it.
        gradients.append((variable.name, 0.0 if i is None else grads[i]))
    return gradients


@dataclass
class Walkthrough:
    """Both passes in full, each line with its place in the graph: what the step-through page shows.

    ``explanation`` is ``explain``'s with no cap; ``definition_places[k]`` is where
    ``explanation.definitions[k]`` happens and ``step_places[k]`` where ``explanation.steps[k]``
    does.  ``grads`` holds every node's final gradient by topological position (0 for a constant,
    which receives no steps).
    """

    model: GraphModel
    explanation: Explanation
    definition_places: list[Place]
    step_places: list[Place]
    grads: list[float]


def walkthrough(evaluation: Evaluation, model: GraphModel | None = None) -> Walkthrough:
    """Every line of both passes of ``evaluation`` with its place in ``model`` (its graph model)."""
    model = model or GraphModel.of(evaluation)
    graph = _Graph(model)
    definition_places: list[Place] = []
    step_places: list[Place] = []
    shown_definitions = list(_definitions(graph, definition_places))
    shown_steps = list(_steps(graph, step_places))
    grads, _ = _totals(graph)
    explanation = Explanation(
        model.output, evaluation.root.data, shown_definitions, 0, shown_steps, 0,
        _input_gradients(evaluation, graph, grads), 0, run=evaluation,
    )
    return Walkthrough(model, explanation, definition_places, step_places, grads)


# --- matrix form: names --------------------------------------------------------------------------


def _register_names(program: Program) -> list[str]:
    """A name for every register: variables keep theirs, constants are their number, other results
    are t1, t2, ... in program order (the prefix grows underscores while it could clash)."""
    from ..language.program import CONST

    named = program.names_by_register()
    prefix = "t"
    while any(re.fullmatch(re.escape(prefix) + r"\d+", name) for name in named.values()):
        prefix += "_"
    names = []
    count = 0
    for register, (op, _, _, param, _) in enumerate(program.rows()):
        if register in named:
            names.append(named[register])
        elif op == CONST:
            names.append(_constant_text(param))
        else:
            count += 1
            names.append(f"{prefix}{count}")
    return names


def _constant_text(param: Any) -> str:
    from ..language.program import ArrayLiteral

    if isinstance(param, ArrayLiteral):
        return str(param.nested()) if len(param.values) <= 4 else f"constant {format_shape(param.shape)}"
    if isinstance(param, (int, float)):
        return operand_text(float(param))
    return "constant"  # a random draw written inline


def _instruction_text(op: str, operands: Sequence[str], param: Any) -> str:
    """The instruction written with its operands' names, one level (``X @ W``, ``t1**2``)."""
    if not ENTRIES[op].elementwise:
        return write(op, operands, param)
    return OPS[op].written.format(x=operands[0], y=operands[1] if len(operands) > 1 else "",
                                  c=operand_text(param) if param is not None else "c")


def statement_registers(program: Program) -> dict[int, str]:
    """The statement (the named variable it computes) of every register an instruction writes, as
    ``execute.unroll.layer_view`` takes a statement."""
    from ..execute.unroll import statement_names
    from ..language.program import INPUT

    return {register: name for register, name in statement_names(program).items()
            if program.variables[name].kind != INPUT}


# --- matrix form: rules --------------------------------------------------------------------------

_TENSOR_WORDS = re.compile(r"dL/dout|\bx\[index\]|\b(?:x|y|z|out|i)\b")
_SCALAR_WORDS = re.compile(r"\b(?:x|y|c|out)\b")
_SIMPLE = re.compile(r"-?[A-Za-z0-9_.]+(\[[0-9, ]*\])?")  # needs no parentheses after '*'


def _tensor_formula(op: str, operand: int, output: str, parent: str, operands: Sequence[str], param: Any) -> str:
    """The table's rule for one operand, names put in: ``dL/dy = transpose(x) @ dL/dout`` -> the
    right-hand side ``transpose(X) @ dL/dP``."""
    rules = ENTRIES[op].rule
    right = rules[min(operand, len(rules) - 1)].split(" = ", 1)[1]  # one rule for every entry of stack
    words = {"dL/dout": gradient_name(output, parent), "x": operands[0],
             "y": operands[1] if len(operands) > 1 else "y", "z": operands[2] if len(operands) > 2 else "z",
             "out": parent, "i": str(operand),
             "x[index]": ""}
    if "x[index]" in right:  # indexing's rule names the entries it took, written as the program does
        words["x[index]"] = write(op, operands, param)
    return _TENSOR_WORDS.sub(lambda found: words[found.group(0)], right)


def _elementwise_formula(op: str, operand: int, output: str, parent: str, operands: Sequence[str],
                         param: Any) -> str:
    """dL/dout times the op's local derivative (``OPS[op].rule``), names put in; a local
    derivative of 1 or -1 is written as the sign it is."""
    local = OPS[op].rule[operand]
    words = {"x": operands[0], "y": operands[1] if len(operands) > 1 else "y", "out": parent,
             "c": operand_text(param) if param is not None else "c"}
    local = _SCALAR_WORDS.sub(lambda found: words[found.group(0)], local)
    upstream = gradient_name(output, parent)
    if local == "1":
        return upstream
    if local == "-1":
        return f"-{upstream}"
    return f"{upstream} * {local if _SIMPLE.fullmatch(local) else f'({local})'}"


def _notes(op: str, operand: int, shapes: Sequence[Shape], out_shape: Shape) -> tuple[str, ...]:
    """What the letters of a rule that are not operands stand for here: n, the count a mean
    divides by (its entry's ``rule_n``)."""
    rule_n = ENTRIES[op].rule_n
    n = None if rule_n is None else rule_n(operand, shapes, out_shape)
    return () if n is None else (f"n = {n}",)


def _matmul_computation(operand: int, shapes: Sequence[Shape]) -> str:
    """The shapes of ``@``'s VJP, vectors taken as a row (left) and a column (right) as the
    product does: dL/dx = dL/dout @ transpose(y), dL/dy = transpose(x) @ dL/dout."""
    x, y = shapes
    a = (1, x[0]) if len(x) == 1 else x
    b = (y[0], 1) if len(y) == 1 else y
    g = (a[0], b[1])
    if operand == 0:
        return f"{format_shape(g)} @ {format_shape((b[1], b[0]))} -> {format_shape(x)}"
    return f"{format_shape((a[1], a[0]))} @ {format_shape(g)} -> {format_shape(y)}"


def _matmul_notes(shapes: Sequence[Shape], operands: Sequence[str]) -> tuple[str, ...]:
    """How ``@`` takes a vector: as a one-row matrix on the left, a one-column one on the right."""
    (x, y), notes = shapes, []
    if len(x) == 1:
        notes.append(f"{operands[0]} {format_shape(x)} as a row {format_shape((1, x[0]))}")
    if len(y) == 1:
        notes.append(f"{operands[1]} {format_shape(y)} as a column {format_shape((y[0], 1))}")
    return tuple(notes)


_VERBS = {("+", 0): "added to", ("+", 1): "added to", ("-", 0): "used in", ("-", 1): "subtracted from",
          ("*", 0): "multiplied into", ("*", 1): "multiplied into", ("/", 1): "divided into"}


def _broadcast(op: str, operand: int, shape: Shape, out_shape: Shape, inner: str) -> Broadcast | None:
    """How an elementwise op stretched an operand of ``shape`` to ``out_shape``, or None."""
    if tuple(shape) == tuple(out_shape):
        return None
    extra = len(out_shape) - len(shape)
    axes = tuple(range(extra)) + tuple(i + extra for i, n in enumerate(shape) if n == 1 and out_shape[i + extra] != 1)
    if not shape:
        unit, units = "entry", "entries"
    elif len(out_shape) == 2 and axes == (0,):
        unit, units = "row", "rows"
    elif len(out_shape) == 2 and axes == (1,):
        unit, units = "column", "columns"
    else:
        listed = ", ".join(map(str, axes))
        unit, units = f"slice along axis {listed}", f"axis {listed}" if len(axes) == 1 else f"axes {listed}"
    return Broadcast(axes, unit, units, _VERBS.get((op, operand), "used in"), inner)


def _summed(broadcast: Broadcast, shape: Shape, out_shape: Shape) -> str:
    """The gradient of a broadcast operand as the language would write the sum: ``sum(dL/dZ, 0)``,
    ``sum(dL/dZ)`` for a scalar; in words where a kept size-1 axis needs no language form."""
    inner = broadcast.inner
    if not shape:
        return f"sum({inner})"
    if len(broadcast.axes) == 1 and len(out_shape) == len(shape) + 1:
        return f"sum({inner}, {broadcast.axes[0]})"
    return f"{inner} summed over the {broadcast.units} to {format_shape(shape)}"


# --- matrix form: the run and its one reverse sweep ----------------------------------------------


def _explain_matrix(program: Program, given: Mapping[str, Any], output: str | None, seed: int | None,
                    max_steps: int, scalar: bool, row: int | None) -> Explanation:
    """The matrix form: one forward run, one reverse sweep whose record of every instruction's VJPs
    the steps read; with ``scalar``, row ``row`` (default 0) of each statement in scalars."""
    import numpy as np

    from ..execute.interpreter import check_scalar_output, input_arrays, number_output_error, run_forward
    from ..language.program import CONST, check_inputs, missing_inputs, missing_inputs_error, output_name

    missing = missing_inputs(program, given)
    if missing:
        raise missing_inputs_error(program, missing)
    output = output_name(program, output)
    run = run_forward(program, input_arrays(program, given, seed))
    check_scalar_output(run, output)
    if run.shapes[run.register(output)]:
        raise number_output_error(program, output, run.shapes[run.register(output)],
                                  f"explain sum({output}) or an entry such as {output}[0] (--output names another "
                                  "variable)")
    # Constants learn nothing: the sweep leaves them out, as the steps do.
    learning = frozenset(register for register, instruction in enumerate(run.rows) if instruction[0] != CONST)
    record: list[tuple[int, tuple[Any, ...]]] = []
    adjoints = run.adjoints(output, learning, record=record)
    names = _register_names(program)
    definitions = _matrix_definitions(run, names, run.register(output))
    items, shares = _matrix_steps(run, names, output, dict(record), adjoints)
    gradients = [(v.name, adjoints[v.register] if v.register in adjoints else np.zeros_like(run.value(v.name)))
                 for v in program.inputs]
    limit = max_steps or None
    explanation = Explanation(
        output, run.value(output), definitions[:limit], len(definitions) - len(definitions[:limit]),
        items[:limit], len(items) - len(items[:limit]), gradients, max_steps, MATRIX, shares,
        {v.name: adjoints[v.register] for v in program.variables.values() if v.register in adjoints},
        run=run)
    explanation.warnings = check_inputs(program, given)  # a value for a name the program does not use: a typo?
    if scalar:
        explanation.layers = _scalar_layers(program, given, explanation, row or 0, seed, max_steps)
        if explanation.layers and row is not None and all(layer.row is None for layer in explanation.layers):
            explanation.warnings.append(f"--row {row} is not used: no statement's value has rows (two or more "
                                        "axes), so each is shown whole")
    return explanation


def _matrix_definitions(run: TensorRun, names: list[str], out: int) -> list[Definition]:
    """The forward pass up to the output: inputs, then each instruction (constants are written in place)."""
    from ..language.program import CONST, INPUT

    definitions = []
    for register, (op, first, second, param, _) in enumerate(run.rows[:out + 1]):
        if op == CONST:
            continue
        shape = run.shapes[register]
        if op == INPUT:
            definitions.append(Definition(names[register], "", run.values[register], shape, format_shape(shape)))
            continue
        operands = run.program.operands(register, first, second)
        typed = _instruction_text(op, [format_shape(run.shapes[r]) for r in operands], param)
        definitions.append(Definition(names[register], _instruction_text(op, [names[r] for r in operands], param),
                                      run.values[register], shape, f"{typed} -> {format_shape(shape)}"))
    return definitions


def _matrix_steps(run: TensorRun, names: list[str], output: str, record: dict[int, tuple[Any, ...]],
                  adjoints: dict[int, Any]) -> tuple[list[Item], dict[str, dict[str, Any]]]:
    """The seed, then every operand's step and every total, in the order of the interpreter's
    reverse sweep, read from its ``record`` (each instruction's VJPs); each statement's shares.
    The running totals are summed in the sweep's order, so the last of each is its adjoint."""
    import numpy as np

    out = run.register(output)
    statements = statement_registers(run.program)
    variables = {v.register for v in run.program.variables.values()}
    totals: dict[int, Any] = {out: adjoints[out]}
    counts = [0] * (out + 1)
    items: list[Item] = [Seed(output)]
    shares: dict[str, dict[str, Any]] = {}
    with np.errstate(all="ignore"):  # a derivative that does not exist shows as inf, as eval's does
        for register in range(out, -1, -1):
            if counts[register] > 1:  # every use is done: the sum is final
                items.append(Total(output, names[register], (), counts[register], totals[register]))
            products = record.get(register)
            if products is None:
                continue
            _, first, second, _, _ = run.rows[register]
            operands = run.program.operands(register, first, second)
            statement = statements.get(register, names[register])
            for position, (child, product) in enumerate(zip(operands, products)):
                if product is None:
                    continue
                totals[child] = product if child not in totals else totals[child] + product
                counts[child] += 1
                if child in variables:
                    into = shares.setdefault(statement, {})
                    name = names[child]
                    into[name] = product if name not in into else into[name] + product
                items.append(_matrix_step(run, names, output, register, position, operands, product,
                                          counts[child] > 1, totals[child], statement))
    return items, shares


def _matrix_step(run: TensorRun, names: list[str], output: str, register: int, position: int,
                 operands: tuple[int, ...], product: Any, accumulate: bool, total: Any, statement: str) -> MatrixStep:
    op, _, _, param, _ = run.rows[register]
    shapes = [run.shapes[r] for r in operands]
    out_shape = run.shapes[register]
    operand_names = [names[r] for r in operands]
    child_shape = shapes[position]
    broadcast = None
    notes = _notes(op, position, shapes, out_shape)
    computation = f"{format_shape(out_shape)} -> {format_shape(child_shape)}"
    if not ENTRIES[op].elementwise:
        formula = _tensor_formula(op, position, output, names[register], operand_names, param)
        if op == "@":
            computation = _matmul_computation(position, shapes)
            notes += _matmul_notes(shapes, operand_names)
    else:
        formula = _elementwise_formula(op, position, output, names[register], operand_names, param)
        broadcast = _broadcast(op, position, child_shape, out_shape, formula)
        if broadcast is not None:
            formula = _summed(broadcast, child_shape, out_shape)
    return MatrixStep(output, names[operands[position]], names[register], op, position, formula, computation,
                      product, accumulate, total, statement, broadcast, notes)


# --- matrix form: one row of each statement, in scalars ------------------------------------------


def _scalar_layers(program: Program, given: Mapping[str, Any], explanation: Explanation, row: int,
                   seed: int | None, max_steps: int) -> list[LayerSteps]:
    """Every statement of ``explanation``'s backward pass, in its order, with row ``row`` of it in
    scalars (a statement whose variable has fewer than two axes is shown whole)."""
    import numpy as np

    from ..execute import evaluate
    from ..execute.unroll import TooLarge, layer_view

    layers = []
    for name in explanation.shares:
        adjoint = np.asarray(explanation.adjoints[name])
        chosen = row if adjoint.ndim >= 2 else None
        if chosen is not None and adjoint.shape[0] == 1:
            chosen = 0  # one row (a keepdim statistic over the rows) is what every row reads: it is shown
        if chosen is not None and not chosen < adjoint.shape[0]:
            raise InputError(f"--row {row}: {name} has {adjoint.shape[0]} rows (0 to {adjoint.shape[0] - 1})",
                             program.variables[name].position, program.source,
                             f"choose a row from 0 to {adjoint.shape[0] - 1}")
        upstream = adjoint[chosen] if chosen is not None else adjoint
        try:
            view = layer_view(program, given, name, row=chosen, upstream=upstream,
                              label=f"{explanation.output}_via_{name}", seed=seed)
        except TooLarge as error:  # its hint names graph's options; explain's way out is another
            raise InputError(f"--scalar: statement {name} is too large to write out in scalars: {error.message}",
                             program.variables[name].position, program.source,
                             "--scalar is for small examples: explain fewer rows, or the matrix form alone "
                             "(without --scalar)") from None
        evaluation = evaluate(view.program, view.values, view.output, backward=False)
        steps = [item for item in explanation.steps if isinstance(item, MatrixStep) and item.statement == name]
        layers.append(LayerSteps(name, chosen, upstream, steps, explain(evaluation, max_steps)))
    return layers
