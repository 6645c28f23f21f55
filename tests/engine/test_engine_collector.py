"""The compiled engine's nodes and the cycle collector (engine/_collector.c).

The nodes the engine makes refer only to their operands, so they can never be in a cycle: the
compiled engine takes them out of the collector's lists, and a training loop no longer pays for
full collections that walk every live node.  What must hold: the nodes it makes are untracked,
what users make (and subclass) is not, nothing leaks over a long loop, a deep chain is still
freed without recursion, and cycles through a user's subclass are still collected.  (How much
time this saves is measured by benchmarks/bench_engine.py's training loop, not here.)
"""

from __future__ import annotations

import gc
import math
import tracemalloc

import pytest

from autodiff_cli.engine import value
from autodiff_cli.engine.nn import MLP

Value = value.Value
compiled_only = pytest.mark.skipif(not value.COMPILED, reason="the compiled engine is not built here")


@compiled_only
def test_the_collector_helper_is_built_with_the_compiled_engine() -> None:
    from autodiff_cli.engine import _collector  # noqa: F401 - CI requires it wherever the engine is compiled


@compiled_only
def test_nodes_the_engine_makes_are_not_tracked_and_leaves_are() -> None:
    a, b = Value(2.0), Value(-3.0)
    nodes = [a * b, a + 1, (a * b).tanh(), a ** 2, a ** b, -a, 2 - a, a.relu()]
    assert gc.is_tracked(a) and gc.is_tracked(b)  # made by the user
    assert not any(gc.is_tracked(node) for node in nodes)
    constant = (a * 3)._prev[1]  # the 3 made into a node
    assert constant.data == 3.0 and not gc.is_tracked(constant)


@compiled_only
def test_untracked_nodes_still_give_micrograds_gradients() -> None:
    a, b = Value(2.0), Value(-3.0)
    out = (a * b + a ** 2).tanh()
    out.backward()
    t = (2.0 * -3.0 + 4.0)
    slope = 1.0 - math.tanh(t) ** 2
    assert a.grad == pytest.approx(slope * (-3.0 + 4.0), rel=1e-15)
    assert b.grad == pytest.approx(slope * 2.0, rel=1e-15)


def test_a_cycle_through_a_users_subclass_is_still_collected() -> None:
    class Node(Value):
        pass

    gc.collect()
    node = Node(1.0)
    node.partner = node  # a cycle through the instance's own attributes
    assert gc.is_tracked(node)
    del node
    assert gc.collect() >= 1


def test_dropping_graphs_leaves_nothing_for_the_collector() -> None:
    gc.collect()
    for _ in range(20):
        x = Value(0.3)
        y = x
        for _ in range(500):
            y = (y * 1.001 + x).tanh()
        y.backward()
        del x, y
    assert gc.collect() == 0


def test_a_million_deep_chain_is_freed_without_recursion() -> None:
    x = Value(1.0)
    y = x
    for _ in range(1_000_000):
        y = y + 1.0
    assert y.data == 1_000_001.0
    del y  # a recursive dealloc would overflow the C stack here


def test_a_ten_thousand_step_loop_stays_flat_in_memory() -> None:
    """Memory after 10,000 training steps is what it was after 100 (no node outlives its step)."""
    model = MLP(2, [4, 1])
    rows = [([0.5, -1.0], 1.0), ([-0.3, 0.8], -1.0), ([1.2, 0.1], 1.0)]

    def step() -> None:
        loss = sum(((model([Value(a), Value(b)]) - target) ** 2 for (a, b), target in rows), Value(0.0))
        for p in model.parameters():
            p.grad = 0.0
        loss.backward()
        for p in model.parameters():
            p.data -= 0.01 * p.grad

    tracemalloc.start()
    try:
        for _ in range(100):
            step()
        gc.collect()
        early, _ = tracemalloc.get_traced_memory()
        for _ in range(9_900):
            step()
        gc.collect()
        late, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert late - early < 64 * 1024, f"grew by {late - early} bytes over 9,900 steps"
