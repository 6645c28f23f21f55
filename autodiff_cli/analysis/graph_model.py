"""One walk over a graph, shared by everything that shows it: the DOT writer, explain, the page.

``GraphModel`` is the graph of one root as flat lists by topological position (the
engine's ``Tape``) plus what a picture needs: each node's kind (which sets its colour),
its display name (``t1``, ``t2``... for unnamed results) and the program's variables
that the root does not depend on, which a picture leaves out.  Built once per command;
no renderer walks the graph again.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, NamedTuple

from ..engine.graph import Tape, topological_order
from ..engine.ops import short_number

if TYPE_CHECKING:
    from ..engine.value import Value
    from ..execute.scalar import Evaluation

__all__ = ["KINDS", "GraphModel", "LongEdges", "NonFinite", "node_names", "non_finite_origin", "operand_text"]

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
    kinds = []
    for node in order:
        if node._a is None:
            kinds.append("input" if node.label else "constant")
        else:
            kinds.append("intermediate" if node.label else "result")
    if kinds:
        kinds[-1] = "output"
    return kinds


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
