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

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .graph import Tape

if TYPE_CHECKING:
    from .value import Value

__all__ = ["ForwardResult", "forward_derivative", "forward_gradients", "tangent_along", "tangent_at_root"]


@dataclass(frozen=True)
class ForwardResult:
    """Gradients found by forward mode, and the work it took compared with reverse mode.

    ``grads`` maps each differentiated variable to d output / d variable, in the order
    asked.  ``node_visits`` counts node tangents computed, summed over the passes;
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


def tangent_at_root(tape: Tape, seed: int, *, textbook: bool = True) -> float:
    """One forward pass with the tangent of node ``seed`` set to 1; the tangent of the last node.

    ``textbook=False`` starts the pass at the seed, since no node before it can depend on
    it: the same tangent, for less work than the full pass that the work counts describe
    (the textbook pass still visits the nodes before the seed).
    """
    return _propagate(tape, {seed: 1.0}, 0 if textbook else seed)


def tangent_along(tape: Tape, seeds: Mapping[int, float]) -> float:
    """One forward pass with several tangents seeded at once (node index -> tangent): the
    tangent of the last node is the directional derivative sum(d root / d node * seed)."""
    if not seeds or not tape.size:
        return 0.0
    return _propagate(tape, seeds, min(seeds))


def _propagate(tape: Tape, seeds: Mapping[int, float], start: int) -> float:
    """Carry the seeded tangents forward from node ``start``; the tangent of the last node."""
    size = tape.size
    tangent = [0.0] * size
    # Whether a node depends on a seed at all.  Only edges from such nodes carry a
    # tangent: a node no seed reaches contributes nothing even through an infinite
    # local derivative (sqrt at 0), where 0 * inf would make a NaN.  Edges on a path
    # from a seed are all multiplied, zero tangents included, exactly as the backward
    # pass multiplies them (sqrt(x*x) at 0 is NaN both ways, as in PyTorch).
    reached = [False] * size
    for index, value in seeds.items():
        tangent[index] = value
        reached[index] = True
    a_of, da_of, b_of, db_of = tape.a, tape.da, tape.b, tape.db
    for i in range(start, size):
        a = a_of[i]
        if a < 0 or i in seeds:
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
    return tangent[-1] if size else 0.0


def forward_derivative(root: Value, wrt: Value) -> float:
    """d root / d wrt by one forward pass over the graph of ``root`` (0 if root does not depend on it)."""
    tape = Tape.of(root)
    seed = tape.index.get(wrt)
    return 0.0 if seed is None else tangent_at_root(tape, seed)


def forward_gradients(
    root: Value, wrt: Mapping[str, Value], *, output: str = "", wrt_inputs_only: bool = True
) -> ForwardResult:
    """d root / d node for every named node of ``wrt``, one forward pass each.

    ``output`` names the root in the result; ``wrt_inputs_only`` says whether every
    node differentiated is an input (the work summary then speaks of inputs).
    """
    tape = Tape.of(root)
    grads = {}
    for name, node in wrt.items():
        seed = tape.index.get(node)
        # A variable the output does not depend on still costs its pass: every seed is
        # propagated through the whole graph before its tangent at the output is known.
        grads[name] = 0.0 if seed is None else tangent_at_root(tape, seed)
    passes = len(grads)
    return ForwardResult(output, grads, passes, passes * tape.size, tape.size, wrt_inputs_only)
