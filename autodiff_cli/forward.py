"""Forward-mode differentiation over the graph that reverse mode uses.

Forward mode carries a tangent (the "dual" part of a dual number) alongside each
value: seed the tangent of one variable with 1 and every other leaf with 0, then
walk the nodes in topological order computing

    tangent(node) = sum over operands of  d node / d operand * tangent(operand)

and the tangent that reaches the output is d output / d seed.  One pass gives the
derivative with respect to one variable, so n inputs cost n passes, where reverse
mode gets every gradient from a single backward pass.  Making that difference in
work visible is the point of this module, so it counts passes and node visits.

The local derivatives are the ones each node stored when it was computed (the
same numbers the backward pass multiplies), so forward and reverse mode differ
only in the order the products are summed.  Standard library only, no recursion.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .engine import Value, topological_order

if TYPE_CHECKING:
    from .language import Evaluation

__all__ = [
    "ForwardResult",
    "apply_grads",
    "forward_derivative",
    "forward_gradients",
    "work_dict",
    "work_summary",
]


@dataclass(frozen=True)
class ForwardResult:
    """Gradients found by forward mode, and the work it took compared with reverse mode.

    ``grads`` maps each differentiated variable to d output / d variable, in program
    order.  ``node_visits`` counts node tangents computed, summed over the passes;
    ``graph_size`` is the number of nodes the output depends on, which is also what
    reverse mode's single backward pass visits.
    """

    output: str
    grads: dict[str, float]
    passes: int
    node_visits: int
    graph_size: int
    wrt_inputs_only: bool = True

    @property
    def reverse_passes(self) -> int:
        return 1

    @property
    def reverse_node_visits(self) -> int:
        return self.graph_size


class _Tape:
    """The graph as flat lists indexed by topological position, built once and reused by each pass.

    Index lookups instead of per-pass dictionaries keep a pass over a million
    nodes to a few list operations per node.
    """

    def __init__(self, order: Sequence[Value]) -> None:
        index = {node: i for i, node in enumerate(order)}
        self.index = index
        self.size = len(order)
        # (operand a, d/da, operand b, d/db) per node; -1 marks a missing operand.
        self.a: list[int] = []
        self.da: list[float] = []
        self.b: list[int] = []
        self.db: list[float] = []
        for node in order:
            self.a.append(-1 if node._a is None else index[node._a])
            self.da.append(node._da)
            self.b.append(-1 if node._b is None else index[node._b])
            self.db.append(node._db)

    def run(self, seed: int) -> float:
        """One forward pass with the tangent of node ``seed`` set to 1; the tangent of the last node."""
        tangent = [0.0] * self.size
        # Whether a node depends on the seed at all.  Only edges from such nodes carry a
        # tangent: a node the seed never reaches contributes nothing even through an
        # infinite local derivative (sqrt at 0), where 0 * inf would make a NaN.  Edges on
        # a path from the seed are all multiplied, zero tangents included, exactly as the
        # backward pass multiplies them (sqrt(x*x) at 0 is NaN both ways, as in PyTorch).
        reached = [False] * self.size
        a_of, da_of, b_of, db_of = self.a, self.da, self.b, self.db
        # Nodes before the seed cannot depend on it, but the pass still visits them:
        # the work counted is the textbook one, a full pass per seed.
        for i in range(self.size):
            if i == seed:
                tangent[i] = 1.0
                reached[i] = True
                continue
            a = a_of[i]
            if a < 0:
                continue
            total = 0.0
            depends = False
            if reached[a]:
                total = da_of[i] * tangent[a]
                depends = True
            b = b_of[i]
            if b >= 0 and reached[b]:
                total = total + db_of[i] * tangent[b] if depends else db_of[i] * tangent[b]
                depends = True
            if depends:
                tangent[i] = total
                reached[i] = True
        return tangent[-1] if self.size else 0.0


def forward_derivative(root: Value, wrt: Value) -> float:
    """d root / d wrt by one forward pass over the graph of ``root`` (0 if root does not depend on it)."""
    tape = _Tape(topological_order(root))
    seed = tape.index.get(wrt)
    return 0.0 if seed is None else tape.run(seed)


def forward_gradients(evaluation: Evaluation, wrt: Iterable[str] | None = None) -> ForwardResult:
    """d output / d variable by forward mode: one pass per variable in ``wrt``.

    ``wrt`` defaults to the program's inputs (the tutorials' comparison: one pass per
    input).  Naming an intermediate works too: its tangent is seeded with 1
    regardless of its operands, which gives the same partial derivative as its
    reverse-mode ``grad``.  Unknown names raise KeyError (the CLI checks them first).
    The evaluation needs values, not gradients: ``evaluate(..., backward=False)`` is enough.
    """
    nodes = evaluation.nodes
    if wrt is None:
        names = [variable.name for variable in evaluation.program.inputs]
        inputs_only = True
    else:
        wanted = set(wrt)
        missing = wanted - nodes.keys()
        if missing:
            raise KeyError(f"not variables of the program: {', '.join(sorted(missing))}")
        names = [name for name in nodes if name in wanted]  # program order, like the reports
        input_names = {variable.name for variable in evaluation.program.inputs}
        inputs_only = wanted <= input_names
    tape = _Tape(topological_order(evaluation.root))
    grads = {}
    for name in names:
        seed = tape.index.get(nodes[name])
        # A variable the output does not depend on still costs its pass: every seed is
        # propagated through the whole graph before its tangent at the output is known.
        grads[name] = 0.0 if seed is None else tape.run(seed)
    passes = len(names)
    return ForwardResult(evaluation.output, grads, passes, passes * tape.size, tape.size, inputs_only)


def apply_grads(evaluation: Evaluation, result: ForwardResult) -> None:
    """Store forward-mode gradients in the named nodes' ``grad``, so the eval reports show them.

    Only the variables in ``result.grads`` are set; report them with ``wrt=list(result.grads)``.
    """
    for name, grad in result.grads.items():
        evaluation.nodes[name].grad = grad


def _plural(count: int, word: str, plural: str | None = None) -> str:
    return f"{count} {word if count == 1 else (plural or word + 's')}"


def work_summary(result: ForwardResult) -> str:
    """One line comparing the work of forward and reverse mode for this graph (no newline).

    e.g. ``forward mode: 2 passes (one per input) x 11 nodes = 22 node visits;
    reverse mode: 1 backward pass x 11 nodes = 11 node visits``
    """
    per = "input" if result.wrt_inputs_only else "variable"
    return (
        f"forward mode: {_plural(result.passes, 'pass', 'passes')} (one per {per}) x "
        f"{_plural(result.graph_size, 'node')} = {_plural(result.node_visits, 'node visit')}; "
        f"reverse mode: 1 backward pass x {_plural(result.graph_size, 'node')} = "
        f"{_plural(result.reverse_node_visits, 'node visit')}"
    )


def work_dict(result: ForwardResult) -> dict[str, object]:
    """The same comparison as data, for JSON output."""
    return {
        "forward": {"passes": result.passes, "node_visits": result.node_visits},
        "reverse": {"passes": result.reverse_passes, "node_visits": result.reverse_node_visits},
        "graph_size": result.graph_size,
    }
