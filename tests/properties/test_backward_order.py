"""evaluate's backward pass gives exactly Value.backward's gradients, on random programs.

evaluate works out the backward order with marks in the new graph's gradients (engine.graph.new_graph_order)
instead of walking the nodes; the order, and so every sum and every last bit, must be the same.
"""

from __future__ import annotations

import pytest
from _generator import random_case

from autodiff_cli.execute import evaluate
from autodiff_cli.language import parse


@pytest.mark.parametrize("seed", range(150))
def test_evaluate_differentiates_exactly_as_value_backward(seed: int) -> None:
    case = random_case(seed, n_ops=4 + seed % 20)
    program = parse(case.text)
    ours = evaluate(program, case.values)
    theirs = evaluate(program, case.values, backward=False)
    theirs.root.backward()
    assert [node.grad for node in ours.nodes.values()] == [node.grad for node in theirs.nodes.values()]
