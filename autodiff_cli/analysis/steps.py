"""The backward pass written out as chain-rule steps.

``explain`` walks the graph of an evaluation in reverse topological order and,
for every edge child -> parent, records the local derivative (its formula from
``DERIVATIVE_RULES`` with the operands' names put in, and its value), the
upstream gradient d output / d parent, and their product, e.g.

    dL/dc = ∂d/∂c * dL/dd = 1 * -2 = -2          [∂d/∂c = 1]

(the wording is ``render/explain.py``'s: ∂ marks the local derivative, d the gradient)

A node that feeds several others receives one contribution per edge; the second
and later ones are written ``+=`` and, once the last one is in, a total line
shows the sum.  Overwriting instead of summing is the classic backprop bug.

Names: variables keep their program names; unnamed intermediate results are
called t1, t2, ... numbered in topological order (the forward-pass listing says
what each one is); numbers written in the program appear as themselves and,
having nothing to learn, get no steps of their own.

The walk computes its own gradients from the stored local derivatives, so it
needs only the values of an evaluation.  Traversals are iterative; the walk is a
generator, and the renderers show at most ``max_steps`` lines per pass (the rest
is counted, not dropped silently), so a graph a million nodes deep is fine.
The steps are data; ``render/explain.py`` writes them as text, Markdown or Rich tables.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice
from typing import TYPE_CHECKING, NamedTuple

from ..engine.graph import paused_cycle_collector
from ..engine.ops import OPS, op_key
from .graph_model import GraphModel, node_names, operand_text

if TYPE_CHECKING:
    from ..engine.value import Value
    from ..execute.scalar import Evaluation

__all__ = [
    "DEFAULT_MAX_STEPS",
    "Definition",
    "Explanation",
    "Place",
    "Seed",
    "Step",
    "Total",
    "Walkthrough",
    "backward_steps",
    "definitions",
    "explain",
    "node_names",
    "rule_key",
    "walkthrough",
]

DEFAULT_MAX_STEPS = 500

# How many contributions a total line spells out before it writes "..." and a count.
SHOWN_TERMS = 6


class Definition(NamedTuple):
    """One line of the forward pass: ``name = expression``, and its value ("" for an input)."""

    name: str
    expression: str
    value: float


class Seed(NamedTuple):
    """The start of the backward pass: d output / d output = 1."""

    output: str


class Step(NamedTuple):
    """One edge of the backward pass: grad(child) (+)= local * upstream.

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


class Total(NamedTuple):
    """A node that received several contributions: their sum, now final.

    ``terms`` holds the first ``SHOWN_TERMS`` contributions; ``count`` is how many there were.
    """

    output: str
    name: str
    terms: tuple[float, ...]
    count: int
    total: float


Item = Seed | Step | Total


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


# --- naming --------------------------------------------------------------------------------


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


# --- the walk ------------------------------------------------------------------------------


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


# --- collected for rendering ---------------------------------------------------------------


@dataclass
class Explanation:
    """What the renderers show: the output, both passes (capped) and the final input gradients."""

    output: str
    value: float
    definitions: list[Definition]
    definitions_omitted: int
    steps: list[Item]
    steps_omitted: int
    gradients: list[tuple[str, float]]
    max_steps: int


def explain(evaluation: Evaluation, max_steps: int = DEFAULT_MAX_STEPS) -> Explanation:
    """Walk both passes of ``evaluation`` and keep the first ``max_steps`` lines of each (0 = all).

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
        _input_gradients(evaluation, graph, grads), max_steps,
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
        _input_gradients(evaluation, graph, grads), 0,
    )
    return Walkthrough(model, explanation, definition_places, step_places, grads)
