"""GraphModel's estimate of how far a picture's edges reach across dot's columns (ranks)."""

from __future__ import annotations

import pytest

from autodiff_cli.analysis.graph_model import GraphModel, LongEdges
from autodiff_cli.execute import evaluate
from autodiff_cli.language import parse


def _reusing_chain(statements: int) -> str:
    return "\n".join(["x = 0.5", "y0 = x", *(f"y{i} = y{i - 1}*x + x" for i in range(1, statements + 1))])


@pytest.mark.parametrize(("source", "expected", "widest"), [
    # Columns by hand: y1's op node 1, y1 2; y2's op 3, y2 4; y3's op 5, y3 6; x one before its
    # first use, 0.  x -> op 1 twice crosses nothing, x -> op 3 crosses 2 columns, x -> op 5 4.
    ("x = 1\ny1 = x*x\ny2 = y1*x\ny3 = y2*x", (6, 4), "x"),
    # A chain whose inputs each feed one operation next to them: no long edge.
    ("x = 1\ny = tanh(x)\nz = exp(y)", (0, 0), None),
    # y0 = x copies x (op 1, y0 2); statement i has a product (op 4i - 1, value 4i) and a sum
    # (op 4i + 1, value 4i + 2), both using x: x crosses 4i - 2 and 4i columns, so 8i - 2 in
    # statement i, and 8 * 40 * 41 / 2 - 2 * 40 = 6,480 for 40 statements.
    (_reusing_chain(40), (6480, 81), "x"),
    (_reusing_chain(120), (8 * 120 * 121 // 2 - 2 * 120, 241), "x"),
], ids=["powers-of-x", "no-reuse", "chain-40", "chain-120"])
def test_long_edges_by_hand(source: str, expected: tuple[int, int], widest: str | None) -> None:
    model = GraphModel.of(evaluate(parse(source)))
    found = model.long_edges
    assert (found.points, found.uses) == expected
    assert (None if found.widest is None else model.names[found.widest]) == widest
    assert isinstance(found, LongEdges)
