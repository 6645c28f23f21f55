"""The one reverse sweep over an ``Expressions`` graph (``reverse_sweep``), which ``diff`` runs for
its derivatives and ``check --claim`` runs again with one step changed to name a slip.

Every expected adjoint is derived by hand and checked twice: as the node the graph builds for the
hand-written formula (the graph is hash-consed, so an equal expression is the same node), and as a
number against the formula evaluated with ``math``.
"""

from __future__ import annotations

import math

import pytest

from autodiff_cli.execute.expressions import Expressions, reverse_sweep

AT = {"x": 0.3, "y": 2.0}


def value(graph: Expressions, node: int) -> float:
    """A node evaluated at AT with ``math`` (these tests' few ops only)."""
    op, args, param = graph.ops[node], graph.args[node], graph.params[node]
    if op == "input":
        return AT[param]  # type: ignore[index]
    if op == "const":
        return param  # type: ignore[return-value]
    operands = [value(graph, a) for a in args]
    functions = {
        "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b, "/": lambda a, b: a / b,
        "neg": lambda a: -a, "sin": math.sin, "cos": math.cos, "copy": lambda a: a,
        "step": lambda a: float(a > 0),
    }
    return functions[op](*operands)


@pytest.fixture
def sum_of_uses() -> tuple[Expressions, dict[str, int]]:
    """f = x*y + sin(x): x is used twice, first by x*y."""
    graph = Expressions()
    x, y = graph.input("x"), graph.input("y")
    xy = graph.mul(x, y)
    sin = graph.call("sin", x)
    return graph, {"x": x, "y": y, "xy": xy, "sin": sin, "f": graph.add(xy, sin)}


def test_an_adjoint_sums_the_uses_in_the_order_of_the_users(sum_of_uses) -> None:
    graph, n = sum_of_uses
    swept = reverse_sweep(graph, n["f"], [n["x"], n["y"]])
    # df/dx = y + cos(x) (x*y first), df/dy = x
    assert swept.adjoint(n["x"]) == graph.add(n["y"], graph.call("cos", n["x"]))
    assert value(graph, swept.adjoint(n["x"])) == pytest.approx(2.0 + math.cos(0.3), rel=1e-15)
    assert swept.adjoint(n["y"]) == n["x"]
    assert swept.contribution((n["xy"], 0)) == n["y"]
    assert swept.contribution((n["sin"], 0)) == graph.call("cos", n["x"])


def test_uses_lists_each_edge_on_a_path_earliest_user_first(sum_of_uses) -> None:
    graph, n = sum_of_uses
    swept = reverse_sweep(graph, n["f"], [n["x"]])
    # y is on no path from x to f (it does not depend on x), so its use is not listed
    assert swept.uses() == {
        n["x"]: [(n["xy"], 0), (n["sin"], 0)],
        n["xy"]: [(n["f"], 0)],
        n["sin"]: [(n["f"], 1)],
    }


def test_again_changes_one_step_as_a_slip_would(sum_of_uses) -> None:
    graph, n = sum_of_uses
    swept = reverse_sweep(graph, n["f"], [n["x"]])
    x, sin_edge = n["x"], (n["sin"], 0)
    # the use by sin(x) forgotten: y; subtracted: y - cos(x); d sin(x)/dx taken as sin(x): y + sin(x)
    assert swept.again(dropped=sin_edge).adjoint(x) == n["y"]
    assert value(graph, swept.again(flipped=sin_edge).adjoint(x)) == pytest.approx(2.0 - math.cos(0.3), rel=1e-15)
    assert swept.again(local={sin_edge: n["sin"]}).adjoint(x) == graph.add(n["y"], n["sin"])
    assert swept.adjoint(x) == graph.add(n["y"], graph.call("cos", x))  # the sweep itself is unchanged


def test_a_contribution_of_zero_is_left_out_but_the_use_is_still_a_use() -> None:
    # f = step(x)*y + x: step passes nothing back (its derivative is 0), so df/dx = 1
    graph = Expressions()
    x, y = graph.input("x"), graph.input("y")
    step = graph.call("step", x)
    f = graph.add(graph.mul(step, y), x)
    swept = reverse_sweep(graph, f, [x])
    assert graph.value(swept.adjoint(x)) == 1.0
    assert (step, 0) not in swept.contributions
    assert graph.value(swept.contribution((step, 0))) == 0.0
    assert (step, 0) in swept.uses()[x]


def test_a_target_passes_its_adjoint_on_to_a_target_below_it() -> None:
    # e = x*y kept apart (--wrt e,x), f = e*x: df/de = x; df/dx = y*x (through e) + e = 2xy
    graph = Expressions()
    x, y = graph.input("x"), graph.input("y")
    e = graph.copy(graph.mul(x, y), "e")
    f = graph.mul(e, x)
    swept = reverse_sweep(graph, f, [e, x])
    assert swept.adjoint(e) == x
    assert value(graph, swept.adjoint(x)) == pytest.approx(2 * 0.3 * 2.0, rel=1e-15)
    assert reverse_sweep(graph, f, [e]).adjoint(e) == x


def test_a_node_off_every_path_has_adjoint_zero(sum_of_uses) -> None:
    graph, n = sum_of_uses
    other = graph.input("z")
    swept = reverse_sweep(graph, n["f"], [other])
    assert graph.value(swept.adjoint(other)) == 0.0
    assert swept.uses() == {}
